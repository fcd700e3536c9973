#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# multitenant.sh — project isolation in a 3-node lab in multitenant mode
# (docs: docs/multitenancy.md, docs/agent.md), measured with
# real traffic, and every refusal seen from both ends: the sender gets no
# answer AND the server listening in the destination logged nothing.
#
#                               L-underlay: bridge br0, 192.168.200.0/24
#     +------------+--------------+-----------------+-----------------+-----------------+
#   L-ctrl      L-outside      L-node-1 (.11)    L-node-2 (.12)    L-node-3 (.13)
#   controller  (.254) crafts  peer server       peer server       peer server
#   /metrics    VXLAN to .11   |   |   |         |    |            |    |
#                            red/r1 red/r3 blue/b1  red/r2 green/g1   blue/b2 default/d1
#                            (a peer server in every pod; VNIDs: default 0, the
#                             others their own until pod-network changes them)
#
#   1. red <-> red allowed (same node, across nodes); red <-> blue refused
#      both ways on one node (r1, b1) and across nodes (r2, b2); default <->
#      every project allowed; node <-> its pods, pod -> its node allowed
#   2. pod-network: join-projects --to=red blue (red <-> blue allowed, green
#      still refused), isolate-projects blue (refused again), make-projects-
#      global green (green <-> everyone); each applied on 3 nodes on return;
#      with node-3's agent stopped the CLI fails after --timeout naming it
#   3. anti-spoofing from r1 with raw frames (raw.py): another tenant's IP,
#      the gateway's, a node's as source; another pod's MAC; ARP claiming
#      another pod's IP; UDP to VXLAN port 4789 of nodes and gateways
#      carrying a frame for another tenant's pod: none delivered, each
#      counted (weft_drops) on the node that dropped it.  Controls: the same
#      crafted frames with r1's own addresses, and the same VXLAN packet
#      from node-2 (a trusted sender), are delivered.
#   4. trusted overlay: VXLAN from L-outside to node-1 is not decapsulated
#      to b1; unknown-node counted, shown by `weftctl drops node-1` and in
#      the controller's /metrics
#   5. a 2-node flat lab: different namespaces reach each other, and the
#      pod-network verbs are refused with a message naming the mode
#
# Labs t<pid>-mt and t<pid>-mf, so a demo lab ("weft") or another test's is
# not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-mt
FLAT=t$$-mf
L=$LAB		# the lab the helpers below work on
PORT=7000

need_lab

trap 'lab_cleanup "$FLAT"' EXIT

PEER=$PWD/tests/tools/peer.py

RAW=$T_ROOT/raw.py
cat >"$RAW" <<'PY'
# raw.py — packets a pod's kernel would not send for it.
#  raw.py udp IFACE SRC_MAC DST_MAC SRC_IP DST_IP DPORT PAYLOAD
#      one Ethernet + IPv4 + UDP frame out of IFACE (AF_PACKET), checksums right
#  raw.py arp IFACE ETH_SRC SENDER_MAC SENDER_IP TARGET_IP
#      an ARP request (broadcast); exit 0 and print the answer if a reply
#      "TARGET_IP is-at ..." addressed to SENDER_IP comes back within 1.5 s
#  raw.py vxlan DST_IP VNI INNER_SRC_IP INNER_DST_IP DPORT PAYLOAD
#      a VXLAN packet (a plain UDP socket to DST_IP:4789) around an
#      Ethernet + IPv4 + UDP frame from INNER_SRC_IP to INNER_DST_IP:DPORT
import os, socket, struct, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

def mac(s): return bytes.fromhex(s.replace(":", ""))
def ip4(s): return socket.inet_aton(s)

def ipv4_udp(src, dst, dport, payload):
    sport = 40000 + os.getpid() % 20000
    n = 8 + len(payload)
    udp = struct.pack("!HHHH", sport, dport, n, 0) + payload
    c = csum(ip4(src) + ip4(dst) + struct.pack("!BBH", 0, 17, n) + udp) or 0xffff
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + n, os.getpid() & 0xffff, 0x4000, 64, 17, 0,
                     ip4(src), ip4(dst))
    return ip[:10] + struct.pack("!H", csum(ip)) + ip[12:] + udp

def ether(dst, src, ethertype, payload): return dst + src + struct.pack("!H", ethertype) + payload

cmd = sys.argv[1]
if cmd == "udp":
    iface, smac, dmac, sip, dip, dport, payload = sys.argv[2:9]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    s.send(ether(mac(dmac), mac(smac), 0x0800, ipv4_udp(sip, dip, int(dport), payload.encode() + b"\n")))
elif cmd == "arp":
    iface, eth_src, sha, spa, tpa = sys.argv[2:7]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
    s.bind((iface, 0x0806))
    req = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac(sha), ip4(spa), b"\0" * 6, ip4(tpa))
    s.send(ether(b"\xff" * 6, mac(eth_src), 0x0806, req))
    deadline = time.time() + 1.5
    while time.time() < deadline:
        s.settimeout(max(0.01, deadline - time.time()))
        try:
            f = s.recv(2048)
        except socket.timeout:
            break
        if len(f) < 42:
            continue
        op, rsha, rspa, rtha, rtpa = struct.unpack("!6xH6s4s6s4s", f[14:42])
        if op == 2 and rspa == ip4(tpa) and rtpa == ip4(spa):
            print("%s is-at %s (answer to %s)" % (tpa, rsha.hex(":"), spa))
            sys.exit(0)
    print("no ARP reply for %s to %s in 1.5 s" % (tpa, spa))
    sys.exit(1)
elif cmd == "vxlan":
    dst, vni, isrc, idst, dport, payload = sys.argv[2:8]
    inner = ether(mac("02:00:00:00:00:01"), mac("02:00:00:00:00:02"), 0x0800,
                  ipv4_udp(isrc, idst, int(dport), payload.encode() + b"\n"))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(struct.pack("!BBHI", 0x08, 0, 0, int(vni) << 8) + inner, (dst, 4789))
else:
    sys.exit("raw.py: unknown command " + cmd)
PY

# ---------------------------------------------------------------- helpers
# serve TARGET: a peer server in TARGET, logging to $(server_log TARGET)
server_log() { echo "$T_ROOT/server-$L-${1//\//-}.log"; }
serve() {
	ip netns exec "$(netns "$1")" python3 "$PEER" serve $PORT >>"$(server_log "$1")" 2>&1 &
	T_PIDS+=("$!")	# ip netns exec execs python3: the PID is the server's
}
listening() { ns "$1" ss -Hltn "sport = :$PORT" | grep -q .; }
server_up() {
	wait_for $SERVER_START_S listening "$1" && return 0
	echo "expected a peer server listening on :$PORT in $L-$1 within $SERVER_START_S s; seen none; its log: $(tail -n 3 "$(server_log "$1")")"
	return 1
}
log_size() { stat -c %s "$(server_log "$1")"; }
log_since() { tail -c +$(($2 + 1)) "$(server_log "$1")"; }	# log_since TARGET OFFSET
log_has() { log_since "$1" "$2" | grep -qF -- "$3"; }		# log_has TARGET OFFSET STRING
marker() { echo "probe-$RANDOM$RANDOM"; }

# the address of a pod or a node (after `addresses`)
declare -A IP
addresses() {
	local json
	json=$(status_json)
	while read -r t a; do IP[$t]=$a; done < <(jq -r '(.pods[] | "\(.namespace)/\(.name) \(.ip)"), (.nodes[] | "\(.name) \(.ip)")' <<<"$json")
}

# sees WANT FROM PROTO IP: the server at IP answers FROM over PROTO and saw it as WANT
sees() {
	local want=$1 from=$2 proto=$3 ip=$4 got
	if ! got=$(ns "$from" python3 "$PEER" "$proto" "$ip" $PORT 2>&1); then
		echo "expected the server at $ip to answer $from over $proto (seeing $want); seen: $got"
		drops
		return 1
	fi
	[ "$got" = "$want" ] && return 0
	echo "expected the server at $ip to see the client ($from) as $want; it saw $got"
	return 1
}

# allowed A B: A reaches B over TCP and UDP, and B's server sees A's address
allowed() {
	local p
	for p in tcp udp; do sees "${IP[$1]}" "$1" $p "${IP[$2]}" || return 1; done
}
allowed_both() { allowed "$1" "$2" && allowed "$2" "$1"; }

# refused FROM TO: a ping, a TCP connection and a UDP datagram (3 tries) from
# FROM to TO all go unanswered, and TO's server logged neither the
# connection nor the datagram (the three run at once: each waits out its
# timeout when packets vanish, and the server would have logged by then)
refused() {
	local from=$1 to=$2 d m off seen rc=0
	d=$(mktemp -d "$T_ROOT/refused.XXXXXX") m=$(marker) off=$(log_size "$to")
	ns "$from" ping -c1 -W1 "${IP[$to]}" >"$d/ping" 2>&1 & local p1=$!
	ns "$from" python3 "$PEER" tcp "${IP[$to]}" $PORT >"$d/tcp" 2>&1 & local p2=$!
	ns "$from" python3 "$PEER" udp "${IP[$to]}" $PORT "$m" >"$d/udp" 2>&1 & local p3=$!
	if wait $p1; then echo "$from -> $to: expected no answer to a ping; seen: $(grep -E 'bytes from' "$d/ping")"; rc=1; fi
	if wait $p2; then echo "$from -> $to: expected no TCP answer; the server answered: $(cat "$d/tcp")"; rc=1; fi
	if wait $p3; then echo "$from -> $to: expected no UDP answer; the server answered: $(cat "$d/udp")"; rc=1; fi
	seen=$(log_since "$to" "$off" | awk -v m="$m" -v t="tcp ${IP[$from]}" 'index($0, m) || $0 == t')
	if [ -n "$seen" ]; then echo "$from -> $to: $to's server received: $(tr '\n' ' ' <<<"$seen")"; rc=1; fi
	return $rc
}
# refused_both A B: refused A B and refused B A, at once
refused_both() {
	local d rc=0
	d=$(mktemp -d "$T_ROOT/both.XXXXXX")
	refused "$1" "$2" >"$d/ab" 2>&1 & local p1=$!
	refused "$2" "$1" >"$d/ba" 2>&1 & local p2=$!
	wait $p1 || rc=1
	wait $p2 || rc=1
	[ $rc -eq 0 ] || { cat "$d/ab" "$d/ba"; drops; }
	return $rc
}

# drop counters: weft_drops[reason] summed over CPUs; reasons named as in
# bpf/weft_bpf.h (WEFT_DROP_NAMES, in enum order)
mapfile -t DROP_NAMES < <(sed -n '/#define WEFT_DROP_NAMES/,/}/p' bpf/weft_bpf.h | grep -oE '"[a-z0-9-]+"' | tr -d '"')
declare -A PIN
drop_table() { # drop_table NODE: "REASON PACKETS" for every reason
	bpftool -j map dump pinned "${PIN[$L/$1]}/weft_drops" 2>/dev/null |
		jq -r --argjson names "$(printf '%s\n' "${DROP_NAMES[@]}" | jq -R . | jq -s .)" '
			map(.formatted // .) | .[] | "\($names[.key] // "reason-\(.key)") \([.values[].value] | add)"'
}
drop_count() { drop_table "$1" | awk -v r="$2" '$1 == r { n = $2 } END { print n + 0 }'; }
drops() { # the non-zero counters of every node (for failure messages)
	local n
	for n in "${NODES[@]}"; do echo -n "[$n drops: $(drop_table "$n" | awk '$2 > 0 { printf "%s=%s ", $1, $2 }')] "; done
	echo
}
# grew NODE REASON BEFORE: NODE's REASON counter is above BEFORE (within 3 s)
counter_above() { [ "$(drop_count "$1" "$2")" -gt "$3" ]; }
grew() {
	wait_for 3 counter_above "$1" "$2" "$3" && return 0
	echo "expected $1's $2 drop counter above $3; seen $(drop_count "$1" "$2"); $(drops)"
	return 1
}

# a pod's own MAC, and its gateway's (the answer to every ARP of the pod)
own_mac() { ns "$1" cat /sys/class/net/eth0/address; }
gw_mac() {
	ns "$1" ping -c1 -W1 "$2" >/dev/null 2>&1
	ns "$1" ip -j neigh show dev eth0 | jq -r --arg gw "$2" 'map(select(.dst == $gw and .lladdr)) | .[0].lladdr // empty'
}

# raw_delivered FROM TO SRC_MAC SRC_IP: a crafted UDP frame from FROM with
# these source addresses reaches TO's server
raw_delivered() {
	local from=$1 to=$2 m off
	m=$(marker) off=$(log_size "$to")
	ns "$from" python3 "$RAW" udp eth0 "$3" "${GWMAC[$from]}" "$4" "${IP[$to]}" $PORT "$m" || return 1
	wait_for 3 log_has "$to" "$off" "$m" && return 0
	echo "expected $to's server to receive the crafted datagram $m from $4 ($3); its log since: $(log_since "$to" "$off" | tail -n 3)"
	drops
	return 1
}
# spoof_blocked FROM TO SRC_MAC SRC_IP NODE REASON: a crafted UDP frame from
# FROM with these source addresses is counted as REASON on NODE, and TO's
# server never receives it
spoof_blocked() {
	local from=$1 to=$2 node=$5 reason=$6 m off before seen
	m=$(marker) off=$(log_size "$to") before=$(drop_count "$node" "$reason")
	ns "$from" python3 "$RAW" udp eth0 "$3" "${GWMAC[$from]}" "$4" "${IP[$to]}" $PORT "$m" || return 1
	grew "$node" "$reason" "$before" || return 1
	sleep 0.5	# the control (raw_delivered) arrives within milliseconds
	seen=$(log_since "$to" "$off" | grep -F "$m")
	[ -z "$seen" ] || { echo "$to's server received the forged datagram: $seen"; return 1; }
}

# inject_blocked FROM DST INNER_DST NODE REASON: VXLAN (VNI 0) sent from FROM
# to DST:4789, carrying a datagram for the pod INNER_DST, is counted as
# REASON on NODE, and INNER_DST's server never receives it
inject_blocked() {
	local from=$1 dst=$2 to=$3 node=$4 reason=$5 m off before seen src
	m=$(marker) off=$(log_size "$to") before=$(drop_count "$node" "$reason")
	src=${IP[$from]:-$OUT}
	ns "$from" python3 "$RAW" vxlan "$dst" 0 "$src" "${IP[$to]}" $PORT "$m" || return 1
	grew "$node" "$reason" "$before" || return 1
	sleep 0.5
	seen=$(log_since "$to" "$off" | grep -F "$m")
	[ -z "$seen" ] || { echo "$to's server received the injected datagram: $seen"; return 1; }
}
inject_delivered() { # inject_delivered FROM DST INNER_DST: the control
	local from=$1 dst=$2 to=$3 m off
	m=$(marker) off=$(log_size "$to")
	ns "$from" python3 "$RAW" vxlan "$dst" 0 "${IP[$from]}" "${IP[$to]}" $PORT "$m" || return 1
	wait_for 3 log_has "$to" "$off" "$m" && return 0
	echo "expected $to's server to receive $m through VXLAN from $from to $dst; its log since: $(log_since "$to" "$off" | tail -n 3)"
	drops
	return 1
}

# arp_answered POD ETH_SRC SENDER_MAC SENDER_IP TARGET_IP
arp_answered() { ns "$1" python3 "$RAW" arp eth0 "$2" "$3" "$4" "$5"; }
arp_unanswered() { # ... NODE REASON: no reply, and NODE's REASON counter grew
	local node=$6 reason=$7 before out
	before=$(drop_count "$node" "$reason")
	if out=$(arp_answered "$1" "$2" "$3" "$4" "$5"); then echo "expected no ARP reply; got $out"; return 1; fi
	grew "$node" "$reason" "$before"
}

first_host() { # first_host 10.128.0.0/23 -> 10.128.0.1
	local a b c d n
	IFS=. read -r a b c d <<<"${1%/*}"
	n=$(( (a << 24 | b << 16 | c << 8 | d) + 1 ))
	echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
}

netid() { lab weftctl get netnamespaces -o json | jq -r --arg n "$1" '.items[] | select(.metadata.name == $n) | .netid'; }
is() { [ "$1" = "$2" ] || { echo "expected $3 $2; seen ${1:-nothing}"; return 1; }; }	# is SEEN WANT WHAT

# pod_network VERB ARGS...: weftctl pod-network; exits 0, prints "applied on
# N node(s)" for all nodes, within 10 s; its output is left in $T_ROOT/podnet.out
pod_network() {
	local t0 t1 out rc=0
	t0=$(date +%s%N)
	out=$(lab weftctl pod-network "$@" 2>&1) || rc=$?
	t1=$(date +%s%N)
	echo "$out" >"$T_ROOT/podnet.out"
	[ $rc -eq 0 ] || { echo "pod-network $* exited $rc: $out"; return 1; }
	grep -q "^applied on ${#NODES[@]} node(s) in " <<<"$out" || { echo "expected \"applied on ${#NODES[@]} node(s) in ...\"; seen: $out"; return 1; }
	[ $(( (t1 - t0) / 1000000 )) -lt 10000 ] || { echo "took $(( (t1 - t0) / 1000000 )) ms: $out"; return 1; }
}
podnet_says() { grep -qxF "$1" "$T_ROOT/podnet.out" || { echo "expected the line \"$1\"; seen: $(cat "$T_ROOT/podnet.out")"; return 1; }; }

# ================================================================ the multitenant lab
NODES=(node-1 node-2 node-3)
PODS=(red/r1 red/r2 red/r3 blue/b1 blue/b2 green/g1 default/d1)
POD_NODES=(node-1 node-2 node-1 node-1 node-3 node-2 node-3)
must lab up --nodes 3 --mode multitenant
for i in "${!PODS[@]}"; do must lab pod add "${POD_NODES[$i]}" "${PODS[$i]%/*}" "${PODS[$i]#*/}"; done
addresses
declare -A GW GWMAC
for n in "${NODES[@]}"; do
	GW[$n]=$(first_host "$(node_field "$n" subnet)")
	PIN[$L/$n]=$(node_field "$n" pinDir)
done
for i in "${!PODS[@]}"; do GW[${PODS[$i]}]=${GW[${POD_NODES[$i]}]}; done
OUT=$(status_json | jq -r .outside.ip)
N1=${IP[node-1]} N2=${IP[node-2]} N3=${IP[node-3]}
echo "  lab $LAB: $(for p in "${PODS[@]}" "${NODES[@]}"; do echo -n "$p=${IP[$p]} "; done)gateways ${GW[node-1]} ${GW[node-2]} ${GW[node-3]}"
for t in "${PODS[@]}" "${NODES[@]}"; do serve "$t"; done
for t in "${PODS[@]}" "${NODES[@]}"; do must server_up "$t"; done

# ---------------------------------------------------------------- VNIDs
check "default has VNID 0" is "$(netid default)" 0 "VNID of default"
vnid_isolated() { # the projects' VNIDs: each its own, none global
	local r b g
	r=$(netid red) b=$(netid blue) g=$(netid green)
	[ "${r:-0}" -ne 0 ] && [ "${b:-0}" -ne 0 ] && [ "${g:-0}" -ne 0 ] && [ "$r" != "$b" ] && [ "$r" != "$g" ] && [ "$b" != "$g" ] && return 0
	echo "expected three distinct non-zero VNIDs; seen red=$r blue=$b green=$g"
	return 1
}
check "red, blue and green have distinct non-zero VNIDs" vnid_isolated

# ---------------------------------------------------------------- the isolation rule
check "red r1 <-> r3 allowed (same node, tcp+udp both ways)" allowed_both red/r1 red/r3
check "red r1 <-> r2 allowed (across nodes)" allowed_both red/r1 red/r2
check "blue b1 <-> b2 allowed (across nodes)" allowed_both blue/b1 blue/b2
check "red r1 <-> blue b1 refused both ways (same node), nothing reaches either server" refused_both red/r1 blue/b1
check "red r2 <-> blue b2 refused both ways (across nodes), nothing reaches either server" refused_both red/r2 blue/b2
check "green g1 <-> red r2 refused both ways (same node)" refused_both green/g1 red/r2
# isolated_at FROM TO NODE: refused, and counted "isolated" by NODE, where the
# rule is enforced: the sending node for a pod on the same node, the
# receiving node (vxlan_ingress) for one across nodes
isolated_at() {
	local before
	before=$(drop_count "$3" isolated)
	refused "$1" "$2" || return 1
	grew "$3" isolated "$before"
}
check "red r1 -> blue b1 (same node): counted isolated on node-1" isolated_at red/r1 blue/b1 node-1
check "red r2 -> blue b2 (node-2 -> node-3): counted isolated on node-3, the receiver" isolated_at red/r2 blue/b2 node-3
check "blue b2 -> red r2 (node-3 -> node-2): counted isolated on node-2, the receiver" isolated_at blue/b2 red/r2 node-2
check "green g1 <-> blue b1 refused both ways (across nodes)" refused_both green/g1 blue/b1
check "default d1 <-> red r1 allowed (across nodes)" allowed_both default/d1 red/r1
check "default d1 <-> blue b2 allowed (same node)" allowed_both default/d1 blue/b2
check "default d1 <-> green g1 allowed (across nodes)" allowed_both default/d1 green/g1
for i in "${!PODS[@]}"; do
	p=${PODS[$i]} n=${POD_NODES[$i]}
	check "$n -> its pod $p (tcp), seen as its gateway ${GW[$n]}" sees "${GW[$n]}" "$n" tcp "${IP[$p]}"
	check "$n -> its pod $p (udp)" sees "${GW[$n]}" "$n" udp "${IP[$p]}"
	check "$p -> its node $n ${IP[$n]} (tcp), seen as ${IP[$p]}" sees "${IP[$p]}" "$p" tcp "${IP[$n]}"
done
check "red r1 -> its gateway ${GW[node-1]} (udp)" sees "${IP[red/r1]}" red/r1 udp "${GW[node-1]}"
check "blue b2 -> its gateway ${GW[node-3]} (tcp)" sees "${IP[blue/b2]}" blue/b2 tcp "${GW[node-3]}"

# ---------------------------------------------------------------- pod-network verbs
check "join-projects --to=red blue: applied on 3 nodes within 10 s" pod_network join-projects --to=red blue
RED=$(netid red)
check "... prints netnamespace/blue netid $RED (red's)" podnet_says "netnamespace/blue netid $RED"
check "after join: red r1 <-> blue b1 allowed (same node)" allowed_both red/r1 blue/b1
check "after join: red r2 <-> blue b2 allowed (across nodes)" allowed_both red/r2 blue/b2
check "after join: green g1 <-> blue b2 still refused (across nodes)" refused_both green/g1 blue/b2
check "after join: green g1 <-> red r2 still refused (same node)" refused_both green/g1 red/r2

check "isolate-projects blue: applied on 3 nodes within 10 s" pod_network isolate-projects blue
BLUE=$(netid blue)
fresh() {
	[ "${BLUE:-0}" -ne 0 ] && [ "$BLUE" != "$RED" ] && [ "$BLUE" != "$(netid green)" ] && return 0
	echo "blue's VNID: $BLUE (red $RED, green $(netid green))"
	return 1
}
check "... blue has a fresh VNID ($BLUE)" fresh
check "after isolate: red r1 <-> blue b1 refused again (same node)" refused_both red/r1 blue/b1
check "after isolate: red r2 <-> blue b2 refused again (across nodes)" refused_both red/r2 blue/b2
check "after isolate: blue b1 <-> b2 still allowed" allowed_both blue/b1 blue/b2
check "after isolate: default d1 <-> blue b1 still allowed" allowed_both default/d1 blue/b1

check "make-projects-global green: applied on 3 nodes within 10 s" pod_network make-projects-global green
check "... prints netnamespace/green netid 0" podnet_says "netnamespace/green netid 0"
check "global green g1 <-> red r2 allowed (same node)" allowed_both green/g1 red/r2
check "global green g1 <-> red r1 allowed (across nodes)" allowed_both green/g1 red/r1
check "global green g1 <-> blue b1 allowed (across nodes)" allowed_both green/g1 blue/b1
check "global green g1 <-> blue b2 allowed (across nodes)" allowed_both green/g1 blue/b2
check "global green g1 <-> default d1 allowed" allowed_both green/g1 default/d1
check "red r3 <-> blue b1 still refused (same node)" refused_both red/r3 blue/b1
check_fails "isolate-projects default is refused" lab weftctl pod-network isolate-projects default
check "isolate-projects --timeout 0 does not wait" lab weftctl pod-network isolate-projects --timeout 0 green
check "... green is no longer global: g1 <-> red r2 refused" wait_for 10 refused_both green/g1 red/r2
# a node whose agent is away: the change is stored, the CLI says which node
# has not applied it and fails after --timeout; the agent catches up when back
late_node() {
	local out t0 t1
	t0=$(date +%s)
	if out=$(lab weftctl pod-network "$@" 2>&1); then echo "succeeded with node-3's agent stopped: $out"; return 1; fi
	t1=$(date +%s)
	grep -q "not applied within 2 s on: node-3" <<<"$out" && [ $((t1 - t0)) -le 6 ] && return 0
	echo "expected a failure after ~2 s naming node-3; after $((t1 - t0)) s: $out"
	return 1
}
check "agent stop node-3" lab agent stop node-3
check "join-projects --to=red blue --timeout 2 with node-3's agent stopped fails, naming node-3" \
	late_node join-projects --to=red blue --timeout 2
check "... the change is stored: blue has red's VNID" is "$(netid blue)" "$(netid red)" "blue's VNID"
check "agent start node-3" lab agent start node-3
check "... node-3 applies it: red r2 <-> blue b2 allowed (b2 is on node-3; within 10 s)" wait_for 10 allowed_both red/r2 blue/b2
check "isolate-projects blue with every agent up: applied on 3 nodes" pod_network isolate-projects blue
check "... red r2 <-> blue b2 refused again" refused_both red/r2 blue/b2

# ---------------------------------------------------------------- anti-spoofing (raw frames from red/r1 on node-1)
R1=red/r1 R1MAC=$(own_mac red/r1) B1MAC=$(own_mac blue/b1)
GWMAC[$R1]=$(gw_mac $R1 "${GW[node-1]}")
check "r1's gateway MAC is known (${GWMAC[$R1]:-none})" test -n "${GWMAC[$R1]}"
check "control: a crafted frame with r1's own IP and MAC reaches r3 (same node)" raw_delivered $R1 red/r3 "$R1MAC" "${IP[$R1]}"
check "control: a crafted frame with r1's own IP and MAC reaches r2 (across nodes)" raw_delivered $R1 red/r2 "$R1MAC" "${IP[$R1]}"
check "forged source IP of blue b2 -> blue b1 (same node): dropped, spoofed-ip on node-1" \
	spoof_blocked $R1 blue/b1 "$R1MAC" "${IP[blue/b2]}" node-1 spoofed-ip
check "forged source IP of blue b1 -> blue b2 (across nodes): dropped, spoofed-ip on node-1" \
	spoof_blocked $R1 blue/b2 "$R1MAC" "${IP[blue/b1]}" node-1 spoofed-ip
check "forged source IP of the gateway ${GW[node-1]} -> blue b1: dropped, spoofed-ip on node-1" \
	spoof_blocked $R1 blue/b1 "$R1MAC" "${GW[node-1]}" node-1 spoofed-ip
check "forged source IP of node-1 $N1 -> blue b1: dropped, spoofed-ip on node-1" \
	spoof_blocked $R1 blue/b1 "$R1MAC" "$N1" node-1 spoofed-ip
check "forged source IP of node-2 $N2 -> blue b2: dropped, spoofed-ip on node-1" \
	spoof_blocked $R1 blue/b2 "$R1MAC" "$N2" node-1 spoofed-ip
check "forged source MAC (b1's) with r1's IP -> red r3 (same node): dropped, spoofed-mac on node-1" \
	spoof_blocked $R1 red/r3 "$B1MAC" "${IP[$R1]}" node-1 spoofed-mac
check "forged source MAC (02:..) with r1's IP -> red r2 (across nodes): dropped, spoofed-mac on node-1" \
	spoof_blocked $R1 red/r2 02:de:ad:be:ef:01 "${IP[$R1]}" node-1 spoofed-mac
check "the servers still answer after the forgeries: default d1 -> blue b1" allowed default/d1 blue/b1

UNUSED=${IP[green/g1]}
check "control: ARP from r1 as itself is answered" arp_answered $R1 "$R1MAC" "$R1MAC" "${IP[$R1]}" "$UNUSED"
arp_drops() { echo $(( $(drop_count node-1 spoofed-ip) + $(drop_count node-1 arp) )); }
arp_drops_above() { [ "$(arp_drops)" -gt "$1" ]; }
arp_spoof_counted() { # ARP ARGS...: no reply, and arp or spoofed-ip grew on node-1
	local before out
	before=$(arp_drops)
	if out=$(arp_answered "$@"); then echo "expected no ARP reply; got $out"; return 1; fi
	wait_for 3 arp_drops_above "$before" && return 0
	echo "expected node-1's spoofed-ip + arp counters above $before; $(drops)"; return 1
}
check "ARP from r1 claiming blue b1's IP gets no reply, counted (spoofed-ip/arp) on node-1" \
	arp_spoof_counted $R1 "$R1MAC" "$R1MAC" "${IP[blue/b1]}" "$UNUSED"
check "ARP from r1 claiming the gateway's IP gets no reply, counted on node-1" \
	arp_spoof_counted $R1 "$R1MAC" "$R1MAC" "${GW[node-1]}" "$UNUSED"
check "ARP from r1 with its IP but b1's MAC gets no reply, spoofed-mac on node-1" \
	arp_unanswered $R1 "$B1MAC" "$B1MAC" "${IP[$R1]}" "$UNUSED" node-1 spoofed-mac

# tunnel injection: VXLAN, VNI 0 (global), around a datagram for a blue or green pod
check "control: node-2 sends that VXLAN to node-1:4789 and b1 receives the inner datagram" inject_delivered node-2 "$N1" blue/b1
check "r1 -> own node $N1:4789 (VXLAN for b1): tunnel-inject on node-1, b1 receives nothing" \
	inject_blocked $R1 "$N1" blue/b1 node-1 tunnel-inject
check "r1 -> own gateway ${GW[node-1]}:4789 (VXLAN for b1): tunnel-inject on node-1, nothing delivered" \
	inject_blocked $R1 "${GW[node-1]}" blue/b1 node-1 tunnel-inject
check "r1 -> node-2 $N2:4789 (VXLAN for g1): tunnel-inject on node-1, nothing delivered" \
	inject_blocked $R1 "$N2" green/g1 node-1 tunnel-inject
check "r1 -> node-3's gateway ${GW[node-3]}:4789 (VXLAN for b2): tunnel-inject on node-3, nothing delivered" \
	inject_blocked $R1 "${GW[node-3]}" blue/b2 node-3 tunnel-inject

# ---------------------------------------------------------------- trusted overlay
check "outside -> node-1 $N1:4789 (VXLAN, VNI 0, for b1): unknown-node on node-1, b1 receives nothing" \
	inject_blocked outside "$N1" blue/b1 node-1 unknown-node
check "outside -> node-3 $N3:4789 (VXLAN, VNI 0, for d1): unknown-node on node-3, d1 receives nothing" \
	inject_blocked outside "$N3" default/d1 node-3 unknown-node
drops_show() { lab weftctl drops "$1" | awk -v n="$1" -v r="$2" '$1 == n && $2 == r && $3 > 0 { ok = 1 } END { exit !ok }'; }
check "weftctl drops node-1 shows unknown-node (within 12 s)" wait_for 12 drops_show node-1 unknown-node
check "weftctl drops node-1 shows spoofed-ip" wait_for 12 drops_show node-1 spoofed-ip
check "weftctl drops node-1 shows tunnel-inject" wait_for 12 drops_show node-1 tunnel-inject
check "weftctl drops node-3 shows unknown-node" wait_for 12 drops_show node-3 unknown-node
# every row is the node's: the drops table and the conntrack table under it
# (each with its NODE header; a blank line between them)
only_node() { local out; out=$(lab weftctl drops "$1") || return 1; ! awk -v n="$1" 'NF && $1 != "NODE" && $1 != n' <<<"$out" | grep . ; }
check "weftctl drops node-1 lists only node-1" only_node node-1
check_fails "weftctl drops node-9 (no such node) fails" lab weftctl drops node-9
metrics() {
	local url tok ca
	url=$(status_json | jq -r .controller.url) tok=$(status_json | jq -r .controller.tokenFile)
	ca=$(status_json | jq -r .controller.caFile)
	ns ctrl curl -sf --cacert "$ca" -H "Authorization: Bearer $(cat "$tok")" "$url/metrics"
}
metric_positive() { metrics | awk -v m="$1" '$1 == m && $2 > 0 { ok = 1 } END { exit !ok }'; }
check "/metrics: weft_drops_total{node=\"node-1\",reason=\"unknown-node\"} > 0 (within 12 s)" \
	wait_for 12 metric_positive 'weft_drops_total{node="node-1",reason="unknown-node"}'
check "/metrics: weft_drops_total{node=\"node-1\",reason=\"isolated\"} > 0" \
	wait_for 12 metric_positive 'weft_drops_total{node="node-1",reason="isolated"}'

if [ "$T_FAILED" -gt 0 ]; then
	echo "  for the failures above: $(drops)"
	lab weftctl get netnamespaces 2>&1 | sed 's/^/    /'
	for n in "${NODES[@]}"; do
		echo "  --- /run/weft-lab/$LAB/$n/agent.log (last 10 lines)"
		tail -n 10 "/run/weft-lab/$LAB/$n/agent.log" | sed 's/^/    /'
	done
fi
stop_started
check "down $LAB (and no sanitizer report in the controller's or agents' logs)" lab down

# ================================================================ a flat lab
L=$FLAT
NODES=(node-1 node-2)
must lab up --nodes 2 --mode flat
must lab pod add node-1 x p
must lab pod add node-2 y q
must lab pod add node-1 y s
addresses
for n in "${NODES[@]}"; do PIN[$L/$n]=$(node_field "$n" pinDir); done
for t in x/p y/q y/s; do serve $t; done
for t in x/p y/q y/s; do must server_up $t; done
check "flat: x/p <-> y/q allowed (across nodes)" allowed_both x/p y/q
check "flat: x/p <-> y/s allowed (same node)" allowed_both x/p y/s
refused_naming_mode() {
	local out
	if out=$(lab weftctl pod-network "$@" 2>&1); then echo "succeeded: $out"; return 1; fi
	grep -q multitenant <<<"$out" && grep -q flat <<<"$out" && return 0
	echo "expected a message naming multitenant and flat mode; seen: $out"
	return 1
}
check "flat: isolate-projects x is refused, the message names the mode" refused_naming_mode isolate-projects x
check "flat: join-projects --to=x y is refused" refused_naming_mode join-projects --to=x y
check "flat: x/p <-> y/q still allowed" allowed_both x/p y/q
stop_started
check "down $FLAT" lab down
finish
