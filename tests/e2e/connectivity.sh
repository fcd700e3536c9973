#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# connectivity.sh — real traffic through a 2-node weft lab: pod <-> pod on one
# node and across nodes over TCP and UDP with the source IP preserved, node
# <-> pod, pod -> outside through the node's masquerade (and never the other
# way), full-size TCP across the VXLAN overlay without one IP fragment on the
# underlay, and a deleted pod's IP that stops answering until a new pod gets
# it and is reachable from the other node.
#
#                            L-underlay: bridge br0, MTU 1500
#        +----------------------+---------------------------+---------------+
#     L-outside              L-node-1                    L-node-2        (L-ctrl)
#     eth0 .254              eth0 .11                    eth0 .12        192.168.200.0/24
#     peer server            peer server                 peer server
#     (no route to           weft_vxlan  <== VXLAN ==>   weft_vxlan
#      the pod network)      gateway GW1 (e.g. .0.1)     gateway GW2 (e.g. .0.9)
#                             |           |               |
#                         L-pod-blue-a L-pod-blue-b   L-pod-blue-c
#                         eth0 MTU 1450, a peer server in each pod
#                         (blue/b is deleted; blue/r1.. are added on
#                          node-1 until one gets b's IP back)
#
# Node subnets are /29 (--host-subnet-length 3: 5 pod IPs), so a freed IP
# comes back after a few adds.  The peer server (peer.py below) answers a
# TCP connection or a UDP datagram with the address it sees the client at;
# every check compares that with the address the client must be seen at.
# L is c<pid>, so other labs (a demo lab "weft", another test's) are not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=c$$
PORT=7000
lab() { src/lab/weft-lab --lab "$LAB" "$@"; }
ns() { local n=$1; shift; ip netns exec "$LAB-$n" "$@"; }	# ns node-1|outside|pod-blue-a CMD...

need_lab

trap lab_cleanup EXIT

PEER=$PWD/tests/tools/peer.py

# serve NETNS: start a peer server in NETNS (ns's names; not in a subshell,
# so that SERVER_PID and T_PIDS keep its PID); then poll `listening NETNS`
declare -A SERVER_PID
serve() {
	ip netns exec "$LAB-$1" python3 "$PEER" serve $PORT >>"$T_ROOT/server-$1.log" 2>&1 &
	SERVER_PID[$1]=$!
	T_PIDS+=("$!")
}
listening() { ns "$1" ss -Hltn "sport = :${2:-$PORT}" | grep -q .; }
server_up() {
	wait_for $SERVER_START_S listening "$1" && return 0
	echo "expected a peer server listening on :$PORT in $LAB-$1 within $SERVER_START_S s; seen none; its log: $(tail -n 3 "$T_ROOT/server-$1.log")"
	return 1
}
unserve() { kill "${SERVER_PID[$1]}" && wait "${SERVER_PID[$1]}" 2>/dev/null; true; }

# drops: the data plane's non-zero drop counters on both nodes (for failure messages)
drops() {
	local n pin out
	for n in node-1 node-2; do
		pin=$(node_field "$n" pinDir)
		out=$(bpftool -j map dump pinned "$pin/weft_drops" 2>/dev/null | jq -r '
			["none","malformed","not-ready","no-endpoint","ttl-exceeded","tunnel-key","unknown-node","arp","unsupported-l3"] as $names
			| map(.formatted // . | {r: ($names[.key] // "reason-\(.key)"), v: ([.values[].value] | add)}) | map(select(.v > 0))
			| map("\(.r)=\(.v)") | join(" ")')
		echo -n "[$n drops: ${out:-none}] "
	done
	echo
}

# sees WANT FROM PROTO IP: a client in FROM asks the peer server at IP over
# PROTO (tcp|udp); the server must answer and must have seen the client as WANT
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

# pings FROM [PING ARGS...] IP: one ICMP echo from FROM to IP is answered
pings() {
	local from=$1 out; shift
	out=$(ns "$from" ping -c1 -W1 "$@" 2>&1) && return 0
	echo "expected ${*: -1} to answer ping $* from $from; seen: $(grep -E 'received|nreachable|too long|connect' <<<"$out" | head -n 2 | tr '\n' ' ')"
	drops
	return 1
}

# silent FROM IP: IP answers neither a ping nor TCP nor UDP from FROM (the
# three probes run at once: each waits out its timeout when packets vanish)
silent() {
	local from=$1 ip=$2 d rc=0
	d=$(mktemp -d "$T_ROOT/silent.XXXXXX")
	ns "$from" ping -c1 -W1 "$ip" >"$d/ping" 2>&1 & local p1=$!
	ns "$from" python3 "$PEER" tcp "$ip" $PORT >"$d/tcp" 2>&1 & local p2=$!
	ns "$from" python3 "$PEER" udp "$ip" $PORT >"$d/udp" 2>&1 & local p3=$!
	if wait $p1; then echo "expected no answer from $ip to a ping from $from; seen: $(grep -E 'bytes from' "$d/ping")"; rc=1; fi
	if wait $p2; then echo "expected no TCP answer from $ip:$PORT to $from; a server answered: $(cat "$d/tcp")"; rc=1; fi
	if wait $p3; then echo "expected no UDP answer from $ip:$PORT to $from; a server answered: $(cat "$d/udp")"; rc=1; fi
	return $rc
}

first_host() { # first_host 10.128.0.8/29 -> 10.128.0.9
	local a b c d n
	IFS=. read -r a b c d <<<"${1%/*}"
	n=$(( (a << 24 | b << 16 | c << 8 | d) + 1 ))
	echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
}

# frag_counters NETNS: the IP fragmentation and reassembly counters of NETNS
frag_counters() {
	ns "$1" awk '/^Ip:/ { if (!h) { split($0, k); h = 1 } else { split($0, v)
		for (i = 2; i <= NF; i++) if (k[i] ~ /^(FragCreates|FragOKs|FragFails|ReasmReqds)$/) printf "%s=%s ", k[i], v[i] } }' /proc/net/snmp
}

mtu() { ns "$1" cat "/sys/class/net/$2/mtu"; }
is() { [ "$1" = "$2" ] || { echo "expected $3 $2; seen ${1:-nothing}"; return 1; }; }	# is SEEN WANT WHAT

# ---------------------------------------------------------------- the lab
must lab up --nodes 2 --host-subnet-length 3
must lab pod add node-1 blue a
must lab pod add node-1 blue b
must lab pod add node-2 blue c
A=$(pod_ip blue/a) B=$(pod_ip blue/b) C=$(pod_ip blue/c)
N1=$(node_field node-1 ip) N2=$(node_field node-2 ip)
GW1=$(first_host "$(node_field node-1 subnet)") GW2=$(first_host "$(node_field node-2 subnet)")
OUT=$(status_json | jq -r .outside.ip)
echo "  lab $LAB: node-1 $N1 (gateway $GW1), node-2 $N2 (gateway $GW2), outside $OUT; pods a=$A b=$B (node-1) c=$C (node-2)"
for n in pod-blue-a pod-blue-b pod-blue-c node-1 node-2 outside; do serve $n; done
for n in pod-blue-a pod-blue-b pod-blue-c node-1 node-2 outside; do must server_up $n; done

# ---------------------------------------------------------------- pod <-> pod, source preserved
for proto in tcp udp; do
	check "same node, $proto: a -> b, b sees $A" sees "$A" pod-blue-a $proto "$B"
	check "same node, $proto: b -> a, a sees $B" sees "$B" pod-blue-b $proto "$A"
	check "cross node, $proto: a -> c, c sees $A" sees "$A" pod-blue-a $proto "$C"
	check "cross node, $proto: c -> a, a sees $C" sees "$C" pod-blue-c $proto "$A"
	check "cross node, $proto: b -> c, c sees $B" sees "$B" pod-blue-b $proto "$C"
	check "cross node, $proto: c -> b, b sees $C" sees "$C" pod-blue-c $proto "$B"
done
check "ping a -> c (cross node)" pings pod-blue-a "$C"
check "ping c -> b (cross node)" pings pod-blue-c "$B"

# ---------------------------------------------------------------- node <-> pod
# a node reaches pods through its routes with "src <its gateway>" (docs/agent.md)
check "node-1 -> local pod a (tcp), a sees node-1's gateway $GW1" sees "$GW1" node-1 tcp "$A"
check "node-1 -> remote pod c (tcp), c sees node-1's gateway $GW1" sees "$GW1" node-1 tcp "$C"
check "node-2 -> local pod c (udp), c sees node-2's gateway $GW2" sees "$GW2" node-2 udp "$C"
check "node-2 -> remote pod a (udp), a sees node-2's gateway $GW2" sees "$GW2" node-2 udp "$A"
check "ping node-1 -> remote pod c" pings node-1 "$C"
check "ping node-2 -> remote pod b" pings node-2 "$B"
# to its own node a pod's address is kept; to another node it leaves the
# cluster networks and is masqueraded to its node's address
check "pod a -> own node $N1 (tcp), node-1 sees $A" sees "$A" pod-blue-a tcp "$N1"
check "pod c -> own node $N2 (tcp), node-2 sees $C" sees "$C" pod-blue-c tcp "$N2"
check "pod a -> other node $N2 (tcp), node-2 sees node-1 $N1" sees "$N1" pod-blue-a tcp "$N2"
check "pod c -> other node $N1 (udp), node-1 sees node-2 $N2" sees "$N2" pod-blue-c udp "$N1"

# ---------------------------------------------------------------- outside: masquerade, and no way in
check "pod a -> outside (tcp), outside sees node-1 $N1" sees "$N1" pod-blue-a tcp "$OUT"
check "pod a -> outside (udp), outside sees node-1 $N1" sees "$N1" pod-blue-a udp "$OUT"
check "pod c -> outside (tcp), outside sees node-2 $N2" sees "$N2" pod-blue-c tcp "$OUT"
check "ping pod b -> outside" pings pod-blue-b "$OUT"
check "outside has no route to pod a ($A)" silent outside "$A"
check "outside has no route to pod c ($C)" silent outside "$C"

# ---------------------------------------------------------------- MTU, and full-size TCP without fragments
underlay_mtu=$(mtu node-1 eth0)
check "node-1 underlay eth0 MTU is 1500" is "$underlay_mtu" 1500 "node-1 eth0 MTU"
for p in a b c; do
	check "pod $p eth0 MTU is $((underlay_mtu - 50)) (underlay - 50)" is "$(mtu pod-blue-$p eth0)" $((underlay_mtu - 50)) "pod $p eth0 MTU"
done
ip netns exec "$LAB-node-1" tcpdump -l -nn -i eth0 'ip[6:2] & 0x3fff != 0' >"$T_ROOT/frags.txt" 2>"$T_ROOT/tcpdump.err" &
tcpdump_pid=$!
T_PIDS+=("$tcpdump_pid")
frag_lines() { grep -c . "$T_ROOT/frags.txt" || true; }	# tcpdump ends its output with an empty line
frag_lines_at_least() { [ "$(frag_lines)" -ge "$1" ]; }
check "tcpdump for fragments on node-1 eth0 started" wait_for 5 grep -q "listening on" "$T_ROOT/tcpdump.err"
# a control: a 3000-byte ping between the nodes is fragmented on the underlay,
# and both the counters and tcpdump see it: request and reply, three fragments
# each (3008 bytes of ICMP in 1480-byte pieces), all six written out before the
# count the transfers are judged from is taken
control() {
	local before after
	before=$(frag_counters node-1)
	ns node-1 ping -c1 -W1 -s 3000 "$N2" >/dev/null || { echo "expected node-2 to answer a 3000-byte ping from node-1"; return 1; }
	after=$(frag_counters node-1)
	[ "$after" != "$before" ] || { echo "expected node-1's fragment counters to move; seen $after before and after"; return 1; }
	wait_for 3 frag_lines_at_least 6 || { echo "expected tcpdump to show the 6 fragments of request and reply; seen $(frag_lines)"; return 1; }
}
check "control: a 3000-byte ping node-1 -> node-2 is fragmented, counters and tcpdump see it" control
frag_lines_before=$(frag_lines)
frags_before_1=$(frag_counters node-1) frags_before_2=$(frag_counters node-2)
ip netns exec "$LAB-pod-blue-c" iperf3 -s >"$T_ROOT/iperf3-server.log" 2>&1 &
T_PIDS+=("$!")
check "iperf3 server in pod c started" wait_for $SERVER_START_S listening pod-blue-c 5201

# bulk BYTES [IPERF3 ARGS...]: iperf3 sends BYTES from pod a to pod c (c to a with -R), all of them
bulk() {
	local bytes=$1 out got; shift
	if ! out=$(ns pod-blue-a iperf3 -c "$C" -n "$bytes" -J "$@" 2>&1); then
		echo "expected iperf3 a -> $C $* to finish; seen: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || tail -n 2 <<<"$out")"
		drops
		return 1
	fi
	got=$(jq -r '.end.sum_sent.bytes' <<<"$out")
	[ "$got" -ge "$bytes" ] || { echo "expected $bytes bytes sent; seen $got"; return 1; }
}
check "full-size ping with DF a -> c: 1422 + 28 = 1450 bytes" pings pod-blue-a -Mdo -s 1422 "$C"
check "iperf3 32 MB a -> c across nodes" bulk 33554432
check "iperf3 32 MB c -> a across nodes (-R)" bulk 33554432 -R
frags_after_1=$(frag_counters node-1) frags_after_2=$(frag_counters node-2)
kill "$tcpdump_pid" 2>/dev/null; wait "$tcpdump_pid" 2>/dev/null
check "no IP fragment created or reassembled on node-1 during the transfers" \
	is "$frags_after_1" "$frags_before_1" "node-1's fragment counters unchanged:"
check "no IP fragment created or reassembled on node-2 during the transfers" \
	is "$frags_after_2" "$frags_before_2" "node-2's fragment counters unchanged:"
check "tcpdump saw no fragment on node-1 eth0 during the transfers" \
	is "$(($(frag_lines) - frag_lines_before))" 0 "new fragments on the underlay: $(sed -n "$((frag_lines_before + 1)),+1p" "$T_ROOT/frags.txt" | tr '\n' ' ')"

# ---------------------------------------------------------------- a deleted pod's IP, and the next pod to get it
check "b ($B) answers before it is deleted" sees "$A" pod-blue-a tcp "$B"
unserve pod-blue-b
check "pod del blue/b" lab pod del blue/b
check "b's IP $B is silent from node-2's pod c" silent pod-blue-c "$B"
check "b's IP $B is silent from node-1's pod a" silent pod-blue-a "$B"
check "b's IP $B is silent from node-2" silent node-2 "$B"

reused=""
for i in 1 2 3 4 5 6; do
	out=$(lab pod add node-1 blue "r$i" 2>&1) || { fail "pod add node-1 blue r$i" "$out"; break; }
	if [ "$(pod_ip "blue/r$i")" = "$B" ]; then reused=r$i; break; fi
done
check "a new pod on node-1 gets b's IP $B back (${reused:-none of r1..r$i})" test -n "$reused"
if [ -n "$reused" ]; then
	R=pod-blue-$reused
	serve $R
	check "blue/$reused serves on $B" server_up $R
	for proto in tcp udp; do
		check "new pod $reused ($B): c -> $reused over $proto, $reused sees $C" sees "$C" pod-blue-c $proto "$B"
		check "new pod $reused ($B): $reused -> c over $proto, c sees $B" sees "$B" $R $proto "$C"
	done
	check "new pod $reused ($B): a -> $reused (same node, tcp), $reused sees $A" sees "$A" pod-blue-a tcp "$B"
	check "new pod $reused ($B): ping from node-2" pings node-2 "$B"
	check "new pod $reused ($B): iperf3 4 MB $reused -> c across nodes" ns $R iperf3 -c "$C" -n 4194304
fi

# ---------------------------------------------------------------- down
if [ "$T_FAILED" -gt 0 ]; then
	echo "  for the failures above: $(drops)"
	for n in node-1 node-2; do
		echo "  --- /run/weft-lab/$LAB/$n/agent.log (last 15 lines)"
		tail -n 15 "/run/weft-lab/$LAB/$n/agent.log" | sed 's/^/    /'
	done
fi
stop_started
check "down (and no sanitizer report in the controller's or agents' logs)" lab down
finish
