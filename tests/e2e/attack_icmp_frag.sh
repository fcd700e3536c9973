#!/usr/bin/env bash
# attack_icmp_frag.sh — what a pod of tenant blue can do with ICMP errors,
# IPv4 fragments and cluster addresses nobody owns, in a 2-node
# multitenant lab (docs: docs/multitenancy.md, "ICMP errors, fragments").
# The attacker crafts packets with scapy inside its pod.
#
#                     L-underlay: bridge, 192.168.200.0/24
#        +----------------+--------------------+--------------------+
#     L-ctrl          L-outside (OUT)      L-node-1 (N1)        L-node-2 (N2)
#                     udp sink :9998       red/r1 (the victim)  blue/b2 (attacker)
#                     udp echo :9996       blue/b1 (attacker)
#                                          default/d1
#
#   A. r1 holds a connected UDP socket N1:40000 (masqueraded, port kept)
#      -> OUT:9998.  b1 and b2 send "port unreachable" and "fragmentation
#      needed (MTU 552)" to N1 quoting that flow: r1's socket gets no
#      ECONNREFUSED and its route MTU stays; icmp-forged counts them on
#      node-1 and node-2.  Controls: a genuine port unreachable (OUT, a
#      closed port) reaches r1's second socket as ECONNREFUSED; a genuine
#      ICMP error of b1 about its own packet leaves node-1.
#   C. b1 floods N1 and node-1's gateway with later fragments that have
#      no first fragment: frag-orphan counts them, and d1's 3,000-byte UDP
#      exchange with OUT (fragmented both ways) still works 10/10, as it
#      did before the flood (the control).
#   D. b1 sends to 10.131.255.255 (cluster network, no node subnet): it
#      never appears on node-1's underlay device; no-subnet counts it.
#      Control: the same datagram to OUT does appear there.
#   E. b1 floods N1 with 5,000 first fragments whose datagrams never
#      complete: a pod holds at most 16 datagrams in flight, so frag-limit
#      counts all the others (`weftctl drops` shows it on node-1) and
#      node-1's reassembly holds no more queues than b1 could open while
#      it sent.  Control: b1's own 3,000-byte UDP exchange with OUT
#      (fragmented both ways) works before the flood, and again once the
#      flood's datagrams have expired (about 2 s).
#
# Lab t<pid>-ai, so a demo lab or another test's is not touched.
set -e
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-ai
L=$LAB
PY=/usr/bin/python3	# Debian's, with scapy

need_lab

# cleanup: after a pass, a failure or a signal (timeout sends TERM) alike,
# stop what this script started (the servers, r1's sockets, a sniffer still
# running), remove the lab, then the files.  Nothing here may end it early.
cleanup() {
	set +e
	exec 7>&- 8>&-
	stop_started
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1 || echo "  weft-lab --lab $LAB down failed" >&2
	t_cleanup
}
trap cleanup EXIT
trap 'exit 143' TERM INT

TOOL=$T_ROOT/attack.py
cat >"$TOOL" <<'PY'
# attack.py — the packets of this test.
#  attack.py udpclient SPORT DST DPORT   a connected UDP socket: sends one
#      datagram, then for each line on stdin: "check" prints ok|refused
#      (a pending socket error), "mtu" prints IP_MTU of the socket
#  attack.py icmp DST TYPE CODE QSRC QDST QSPORT QDPORT [MTU]   one ICMP
#      error quoting a UDP header (scapy)
#  attack.py orphans DST COUNT SRC   later fragments (offset 1480, no first)
#  attack.py firsts DST COUNT SRC    first fragments (offset 0, more
#      fragments), never the rest, IDs 1..COUNT; prints the seconds taken
#  attack.py sink PORT | echo PORT    UDP servers (echo sends the datagram back)
#  attack.py exchange DST PORT N SIZE   N request/answers of SIZE bytes,
#      prints "ok/N"
#  attack.py sniff IFACE MARK CONTROL   prints "ready" once listening, then
#      "seen" or "unseen" for MARK once CONTROL was seen on IFACE (exit 1
#      after 20 s without CONTROL)
#  attack.py udp DST PORT PAYLOAD
import errno, os, select, socket, struct, sys, time

def cmd_udpclient(sport, dst, dport):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(sport)))
    s.connect((dst, int(dport)))
    s.send(b"hello")
    print("sent", flush=True)
    for line in sys.stdin:
        if line.strip() == "check":
            try:
                s.send(b"again")
                s.setblocking(False)
                s.recv(100)
                print("ok", flush=True)
            except BlockingIOError:
                print("ok", flush=True)
            except ConnectionRefusedError:
                print("refused", flush=True)
            finally:
                s.setblocking(True)
        elif line.strip() == "mtu":
            print(s.getsockopt(socket.IPPROTO_IP, 14), flush=True)  # IP_MTU

def cmd_icmp(dst, typ, code, qsrc, qdst, qsport, qdport, mtu="0"):
    from scapy.all import IP, ICMP, UDP, send
    p = IP(dst=dst) / ICMP(type=int(typ), code=int(code), nexthopmtu=int(mtu)) / \
        IP(src=qsrc, dst=qdst, len=1400) / UDP(sport=int(qsport), dport=int(qdport), len=1380)
    send(p, verbose=False)

def cmd_orphans(dst, count, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src = socket.inet_aton(src)
    payload = b"x" * 1400
    for i in range(int(count)):
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), i & 0xffff,
                          0x2000 | 185, 64, 17, 0, src, socket.inet_aton(dst))
        s.sendto(hdr + payload, (dst, 0))

def cmd_firsts(dst, count, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src, daddr = socket.inet_aton(src), socket.inet_aton(dst)
    payload = struct.pack("!HHHH", 40000, 9999, 3008, 0) + b"y" * 1392
    start = time.time()
    for i in range(int(count)):
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), i + 1,
                          0x2000, 64, 17, 0, src, daddr)
        s.sendto(hdr + payload, (dst, 0))
    print("%.2f" % (time.time() - start))

def cmd_sink(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(port)))
    while True:
        s.recvfrom(65535)

def cmd_echo(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(port)))
    while True:
        d, a = s.recvfrom(65535)
        s.sendto(d, a)

def cmd_exchange(dst, port, n, size):
    ok = 0
    for i in range(int(n)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(2)
        msg = (b"%06d" % i) * (int(size) // 6)
        s.sendto(msg, (dst, int(port)))
        try:
            ok += s.recv(65535) == msg
        except socket.timeout:
            pass
        s.close()
    print("%d/%s" % (ok, n))

def cmd_sniff(iface, mark, control):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 0))
    print("ready", flush=True)
    seen, deadline = False, time.time() + 20
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], 0.2)
        if not r:
            continue
        f = s.recv(65535)
        seen = seen or mark.encode() in f
        if control.encode() in f:
            print("seen" if seen else "unseen")
            return
    sys.exit("control %s not seen on %s in 20 s" % (control, iface))

def cmd_udp(dst, port, payload):
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(payload.encode(), (dst, int(port)))

globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
PY

# drop counters, read from the node's pinned weft_drops (names in enum order)
mapfile -t DROP_NAMES < <(sed -n '/#define WEFT_DROP_NAMES/,/}/p' bpf/weft_bpf.h | grep -oE '"[a-z0-9-]+"' | tr -d '"')
declare -A PIN
drop_count() { # drop_count NODE REASON
	bpftool -j map dump pinned "${PIN[$1]}/weft_drops" 2>/dev/null |
		jq -r --argjson names "$(printf '%s\n' "${DROP_NAMES[@]}" | jq -R . | jq -s .)" --arg r "$2" '
			map(.formatted // .) | map(select($names[.key] == $r)) | [.[].values[].value] | add // 0'
}
counter_above() { [ "$(drop_count "$1" "$2")" -ge "$3" ]; }
grew() { # grew NODE REASON AT_LEAST
	wait_for 10 counter_above "$1" "$2" "$3" && return 0
	echo "expected $1's $2 counter at least $3; seen $(drop_count "$1" "$2")"
	return 1
}

# ---------------------------------------------------------------- the lab
must lab up --nodes 2 --mode multitenant
for p in node-1:red/r1 node-1:blue/b1 node-2:blue/b2 node-1:default/d1; do
	must lab pod add "${p%%:*}" "$(dirname "${p#*:}")" "$(basename "${p#*:}")"
done
N1=$(node_field node-1 ip) N2=$(node_field node-2 ip)
PIN[node-1]=$(node_field node-1 pinDir) PIN[node-2]=$(node_field node-2 pinDir)
OUT=$(status_json | jq -r .outside.ip)
GW1=$($PY -c 'import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1])[1])' "$(node_field node-1 subnet)")
R1=$(pod_ip red/r1) B1=$(pod_ip blue/b1)
UNDERLAY=$(ns node-1 ip -j -4 addr show | jq -r --arg a "$N1" '.[] | select(.addr_info[].local == $a) | .ifname')
echo "  lab $LAB: node-1 $N1 ($UNDERLAY), node-2 $N2, outside $OUT, r1 $R1, b1 $B1"

# in the background through ip netns exec (which execs python3), not ns():
# $! is then the server's own PID, which cleanup stops
ip netns exec "$(netns outside)" $PY "$TOOL" sink 9998 & T_PIDS+=("$!")
ip netns exec "$(netns outside)" $PY "$TOOL" echo 9996 & T_PIDS+=("$!")
udp_bound() { ns outside ss -Hlun "sport = :$1" | grep -q .; }
must wait_for $SERVER_START_S udp_bound 9998
must wait_for $SERVER_START_S udp_bound 9996

# ---------------------------------------------------------------- A
mkfifo "$T_ROOT/victim.in" "$T_ROOT/control.in"
ip netns exec "$(netns red/r1)" $PY "$TOOL" udpclient 40000 "$OUT" 9998 <"$T_ROOT/victim.in" >"$T_ROOT/victim.out" 2>&1 & T_PIDS+=("$!")
exec 7>"$T_ROOT/victim.in"
ip netns exec "$(netns red/r1)" $PY "$TOOL" udpclient 40001 "$OUT" 9997 <"$T_ROOT/control.in" >"$T_ROOT/control.out" 2>&1 & T_PIDS+=("$!")
exec 8>"$T_ROOT/control.in"
lines() { [ "$(wc -l <"$1")" -ge "$2" ]; }
must wait_for 10 lines "$T_ROOT/victim.out" 1
must wait_for 10 lines "$T_ROOT/control.out" 1
asks() { # asks FD FILE LINE: write LINE, print the answer
	local n; n=$(wc -l <"$2"); echo "$3" >&"$1"
	wait_for 5 lines "$2" $((n + 1)) && tail -n 1 "$2"
}
is() { [ "$1" = "$2" ] || { echo "expected $3 $2; seen ${1:-nothing}"; return 1; }; }

check "control: a genuine port unreachable from OUT reaches r1 (ECONNREFUSED)" \
	is "$(asks 8 "$T_ROOT/control.out" check)" refused "r1's control socket:"
MTU0=$(asks 7 "$T_ROOT/victim.out" mtu)
forged_from() { # forged_from POD NODE: both forged errors counted on NODE, r1 unharmed
	local before; before=$(drop_count "$2" icmp-forged)
	ns "$1" $PY "$TOOL" icmp "$N1" 3 3 "$N1" "$OUT" 40000 9998
	ns "$1" $PY "$TOOL" icmp "$N1" 3 4 "$N1" "$OUT" 40000 9998 552
	grew "$2" icmp-forged $((before + 2)) || return 1
	is "$(asks 7 "$T_ROOT/victim.out" check)" ok "r1's socket after the forged errors:" || return 1
	is "$(asks 7 "$T_ROOT/victim.out" mtu)" "$MTU0" "r1's route MTU to $OUT:"
}
check "A: b1 (same node) forges unreachable + frag-needed about r1's flow: dropped, icmp-forged on node-1" forged_from blue/b1 node-1
check "A: b2 (other node) does the same: dropped, icmp-forged on node-2" forged_from blue/b2 node-2
genuine_error_leaves() { # b1's error about a packet it received from OUT is not refused
	local before; before=$(drop_count node-1 icmp-forged)
	ns blue/b1 $PY "$TOOL" icmp "$OUT" 3 3 "$OUT" "$B1" 9998 40000
	ns blue/b1 $PY "$TOOL" udp "$OUT" 9998 after-genuine	# a marker after it
	is "$(drop_count node-1 icmp-forged)" "$before" "icmp-forged on node-1 after a genuine error:"
}
check "A control: b1's ICMP error about its own packet is not counted as forged" genuine_error_leaves

# ---------------------------------------------------------------- C
exchange() { is "$(ns default/d1 $PY "$TOOL" exchange "$OUT" 9996 10 3000)" 10/10 "d1's 3000-byte exchanges:"; }
check "C control: d1 <-> OUT, 3000-byte UDP (fragmented), 10/10" exchange
flood() {
	local before; before=$(drop_count node-1 frag-orphan)
	ns blue/b1 $PY "$TOOL" orphans "$N1" 20000 "$B1"
	ns blue/b1 $PY "$TOOL" orphans "$GW1" 20000 "$B1"
	grew node-1 frag-orphan $((before + 40000))
}
check "C: b1 floods node-1 with 40,000 orphan later fragments: frag-orphan counts them all" flood
check "C: after the flood d1 <-> OUT still 10/10" exchange

# ---------------------------------------------------------------- D
# the sniffer runs in the background under timeout (it ends within 30 s
# whatever happens; --foreground keeps it in the test's process group, which
# a timeout of the whole run signals) with its answers in a file.  It must
# say "ready" (its socket bound) before b1 sends; every wait on it is polled
# and bounded, and it is stopped before the check returns.
sniff_lines() { [ "$(wc -l <"$T_ROOT/sniff.out")" -ge "$1" ]; }
probe() { # probe DST MARK CONTROL: b1 sends MARK to DST, then CONTROL to OUT
	local before
	before=$(drop_count node-1 no-subnet)
	wait_for 10 sniff_lines 1 && [ "$(head -n 1 "$T_ROOT/sniff.out")" = ready ] ||
		{ echo "the sniffer on $UNDERLAY is not listening: $(cat "$T_ROOT/sniff.out")"; return 1; }
	ns blue/b1 $PY "$TOOL" udp "$1" 9999 "$2"
	grew node-1 no-subnet $((before + 1)) || return 1
	ns blue/b1 $PY "$TOOL" udp "$OUT" 9999 "$3"	# the control: it does leave
	wait_for 25 sniff_lines 2 ||
		{ echo "the sniffer on $UNDERLAY never saw the control: $(cat "$T_ROOT/sniff.out")"; return 1; }
	is "$(sed -n 2p "$T_ROOT/sniff.out")" unseen "b1's datagram to $1 on node-1's underlay:"
}
unseen_on_underlay() { # unseen_on_underlay DST: b1's datagram to DST never on node-1's underlay
	local mark=leak-$RANDOM ctl=ctl-$RANDOM sniffer rc=0
	: >"$T_ROOT/sniff.out"
	timeout --foreground 30 ip netns exec "$(netns node-1)" $PY -u "$TOOL" sniff "$UNDERLAY" "$mark" "$ctl" \
		>"$T_ROOT/sniff.out" 2>&1 &
	sniffer=$!
	probe "$1" "$mark" "$ctl" || rc=$?
	kill "$sniffer" 2>/dev/null || true
	wait "$sniffer" 2>/dev/null || true
	return "$rc"
}
check "D: b1 -> 10.131.255.255 (no node subnet) never on the underlay, no-subnet counted" unseen_on_underlay 10.131.255.255

# ---------------------------------------------------------------- E
FIRSTS=5000
b1_exchange() { is "$(ns blue/b1 $PY "$TOOL" exchange "$OUT" 9996 "$1" 3000)" "$1/$1" "b1's 3000-byte exchanges:"; }
# reassembly queues of node-1's stack (conntrack defrag included)
reasm_queues() { ns node-1 awk '$1 == "FRAG:" { print $3 }' /proc/net/sockstat; }
check "E control: b1 <-> OUT, 3000-byte UDP (fragmented), 3/3" b1_exchange 3
first_flood() {
	local before secs open
	before=$(drop_count node-1 frag-limit)
	secs=$(ns blue/b1 $PY "$TOOL" firsts "$N1" "$FIRSTS" "$B1") || return 1
	# b1 opens 16 datagrams, and 16 more each time those expire (after
	# WEFT_FRAG_TICKS, more than 2 s): the most it can have let through
	open=$((16 * (2 + ${secs%.*} / 2)))
	echo "$FIRSTS first fragments in ${secs}s: at most $open let through"
	grew node-1 frag-limit $((before + FIRSTS - open)) || return 1
	[ "$(reasm_queues)" -le "$open" ] ||
		{ echo "expected at most $open reassembly queues on node-1; seen $(reasm_queues)"; return 1; }
	echo "$((FIRSTS - open))" >"$T_ROOT/frag_limit_min"
}
check "E: b1 floods N1 with $FIRSTS first fragments: frag-limit counts those over 16 open, node-1's reassembly bounded" first_flood
check "E: weftctl drops lists frag-limit on node-1" \
	wait_for 30 drops_reported node-1 frag-limit "$(cat "$T_ROOT/frag_limit_min" 2>/dev/null || echo 1)"
check "E control: after the flood b1 <-> OUT works again once its open datagrams expire" wait_for 20 b1_exchange 1

finish
