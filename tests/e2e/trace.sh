#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# trace.sh — weftctl trace against reality (docs/trace.md): each trace's
# verdict is checked against a real probe of the same flow.
#
#   a 2-node lab in multitenant mode (tenancy and NetworkPolicy both apply)
#
#   node-1: x/a (app=a), x/c (app=c)      node-2: x/b (app=b, peer.py on 80)
#                                                 y/d (peer.py on 80)
#   service x/web (app=b, 80 -> 80)
#
#   1. x/a -> x/b:80 across nodes: delivered (exit 0), the tunnel hop to
#      node-2 and the delivery to x/b said; a real connection works
#   2. x/a -> y/d:80: another tenant, dropped (exit 1, isolated) on node-2;
#      a real connection fails
#   3. x/a -> svc/x/web: the service step (frontend, backend, drawn among
#      1), delivered; a real connection to the cluster IP works
#   4. a NetworkPolicy admitting only app=a to x/b: x/c -> x/b dropped
#      (policy-denied-ingress), x/a -> x/b allowed by x/only-a (named);
#      real connections agree
#   5. x/a sending as 10.128.x.99 (--source): dropped as spoofed on node-1;
#      a real packet from that address, added to x/a's eth0, is dropped
#      too (its connection fails, node-1 counts a spoofed-ip drop)
#   6. a trace changes nothing: the drops the nodes count do not move
#      for the traces, the TraceRequests are deleted after; -o json holds
#      both hops; bad arguments exit 2 naming the input
#   7. from a node's own stack: node-1 -> x/b (behind x/only-a) agrees
#      with a real connection from node-1; node-2 -> x/b through its veth,
#      delivered (a node reaches its pods); node-1 -> svc/x/web through
#      the service device and the tunnel, node-1 -> y/d (echo) with VNI 0,
#      both delivered as real probes are
#   8. from outside (the lab's outside namespace): to node-1's NodePort
#      (backend on node-2), to svc/x/webnp arriving at node-2, to node-1's
#      port 22 (its own stack: refused there), to x/b's address forwarded
#      by node-2 (a route to it added in outside): each trace's verdict as
#      the real connection's; bad arguments of both kinds exit 2
#
# Lab t<pid>-tr, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

lab_names tr
need_lab
trap lab_cleanup EXIT

declare -A IP
trace() { lab weftctl trace "$@"; }
# traced EXPECT_EXIT OUTFILE ARGS...: the trace exits as expected
traced() {
	local want=$1 out=$2 rc=0
	shift 2
	trace "$@" >"$out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { echo "exit $rc, want $want:"; cat "$out"; return 1; }
}
# show OUTFILE: what a trace printed, indented, for whoever reads the log
show() { sed 's/^/        | /' "$1" | head -n 40; }
declare -A NODE_IP
# drops NODE: the node's drop counters, live (its /metrics reads the map)
drops() { ns "$1" curl -sf --max-time 5 "http://${NODE_IP[$1]}:9966/metrics" | grep '^weft_agent_drops_total{' | sort; }
drops_of() { drops "$1" | awk -v r="weft_agent_drops_total{reason=\"$2\"}" '$1 == r {print $2}'; }

lab_up_tenants
must lab pod add node-1 x a --label app=a
must lab pod add node-1 x c --label app=c
must lab pod add node-2 x b --label app=b --port http:80/TCP
must lab pod add node-2 y d --label app=d
while read -r t a; do IP[$t]=$a; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
for n in node-1 node-2; do NODE_IP[$n]=$(node_field "$n" ip); done
serve_http 80 x/b y/d
must lab weftctl apply -f - <<<'{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"x"},
 "spec":{"selector":{"app":"b"},"ports":[{"port":80,"targetPort":80}]}}'
cip=$(lab weftctl get svc web -n x -o json | jq -r .spec.clusterIP)
check "x/web has a cluster IP ($cip)" test -n "$cip" -a "$cip" != null
check "x/a reaches x/web's cluster IP (its endpoint programmed)" wait_for 10 connects x/a "$cip"

# 1. across nodes, delivered
o=$T_ROOT/t1
check "trace x/a -> x/b:80 exits 0 (delivered)" traced 0 "$o" x/a x/b:80
check "... first on node-1, tunnelled to node-2" grep -qE "^  tunnel +VNI [0-9]+, to node $(node_field node-2 ip)\$" "$o"
check "... which takes it from node-1" grep -qE "^  tunnel +VNI [0-9]+, from node $(node_field node-1 ip)\$" "$o"
check "... then on node-2, delivered to x/b (${IP[x/b]})" grep -qE "^  delivered +to x/b \(${IP[x/b]}\)" "$o"
check "... the tenants compared on node-2: allowed" grep -qE '^  tenant .*: allowed' "$o"
check "... and a real connection x/a -> x/b works" connects x/a "${IP[x/b]}"
show "$T_ROOT/t1"

# 2. another tenant
o=$T_ROOT/t2
check "trace x/a -> y/d:80 exits 1 (dropped)" traced 1 "$o" x/a y/d:80
check "... dropped on node-2 as isolated: the tenants' VNIDs differ" bash -c "grep -qE '^  tenant .*: isolated' '$o' && grep -qE '^  dropped +isolated' '$o'"
check "... and a real connection x/a -> y/d fails" bash -c "! connects x/a ${IP[y/d]}"
show "$T_ROOT/t2"

# 3. through the cluster IP
o=$T_ROOT/t3
check "trace x/a -> svc/x/web exits 0 (its only port)" traced 0 "$o" x/a svc/x/web
check "... the service step: $cip:80 -> ${IP[x/b]}:80, drawn among 1" \
	grep -qE "^  service +$cip:80 -> ${IP[x/b]}:80 \(backend [0-9]+: a new connection's, drawn at random among 1\)" "$o"
check "... delivered to x/b on node-2" grep -qE "^  delivered +to x/b" "$o"
check "... and a real connection x/a -> $cip:80 works" connects x/a "$cip"
show "$T_ROOT/t3"
o=$T_ROOT/t3b
check "trace x/a -> svc/x/web:81 exits 2" traced 2 "$o" x/a svc/x/web:81
check "... saying the service has no such port" grep -q 'service x/web has no such port' "$o"

# 4. NetworkPolicy
must lab weftctl apply -f - <<<'{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"only-a","namespace":"x"},
 "spec":{"podSelector":{"matchLabels":{"app":"b"}},"ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"a"}}}]}]}}'
refused() { ! connects x/c "${IP[x/b]}"; }
check "only-a: a real connection x/c -> x/b is refused within 10 s" wait_for 10 refused
o=$T_ROOT/t4
check "trace x/c -> x/b:80 exits 1" traced 1 "$o" x/c x/b:80
check "... dropped on node-2: policy-denied-ingress" grep -qE '^  dropped +policy-denied-ingress' "$o"
check "... the policy step says denied" grep -qE '^  policy +denied' "$o"
show "$T_ROOT/t4"
o=$T_ROOT/t5
check "trace x/a -> x/b:80 still exits 0" traced 0 "$o" x/a x/b:80
check "... allowed on node-2, ingress by x/only-a" grep -qE '^  policy +allowed.*ingress by .*x/only-a' "$o"
show "$T_ROOT/t5"
check "... and a real connection x/a -> x/b works" connects x/a "${IP[x/b]}"

# a trace counts no drop: node-2's counters of the reasons the traces
# meet, live, before and after three traces it drops (policy twice,
# tenancy once).  (Other reasons move on their own: the pods' IPv6
# solicitations are dropped as unsupported-l3 now and then.)
quiet() { drops node-2 | grep -E 'reason="(policy-denied-ingress|isolated)"'; }
quiet >"$T_ROOT/d0"
check "node-2's policy-denied-ingress and isolated counters read" test "$(wc -l <"$T_ROOT/d0")" = 2
for args in "x/c x/b:80" "x/c x/b:80 --source-port 50000" "x/a y/d:80"; do
	# shellcheck disable=SC2086  # the arguments split on purpose
	traced 1 "$T_ROOT/t-quiet" $args >/dev/null || fail "trace $args exits 1" "$(cat "$T_ROOT/t-quiet")"
done
check "... 3 dropping traces later, node-2 counted none of them" diff "$T_ROOT/d0" <(quiet)

# 5. a forged source
spoof=${IP[x/a]%.*}.99
o=$T_ROOT/t6
check "trace x/a -> x/b:80 --source $spoof exits 1" traced 1 "$o" x/a x/b:80 --source "$spoof"
check "... dropped on node-1 as spoofed-ip" grep -qE '^  dropped +spoofed-ip' "$o"
show "$T_ROOT/t6"
sp0=$(drops_of node-1 spoofed-ip)
check "... (and that trace counted no spoofed-ip drop on node-1: ${sp0:-none})" test -n "$sp0"
must ns x/a ip addr add "$spoof/32" dev eth0
check "a real connection from $spoof fails" bash -c "! ip netns exec $(netns x/a) timeout 2 curl -s --interface $spoof http://${IP[x/b]}/ >/dev/null"
check "... node-1 counted it as spoofed-ip (before $sp0, now $(drops_of node-1 spoofed-ip))" \
	test "$(drops_of node-1 spoofed-ip)" -gt "$sp0"
must ns x/a ip addr del "$spoof/32" dev eth0

# 6. what a trace leaves
check "the TraceRequests were deleted after each trace" test "$(lab weftctl get tracerequests -o json | jq '.items | length')" = 0
o=$T_ROOT/t7
check "trace -o json exits 0" traced 0 "$o" x/a x/b:80 -o json
check "... two hops, node-1 (Tunnel) then node-2 (Local), verdict delivered" jq -e '
	.verdict == "delivered" and (.hops | length) == 2 and .hops[0].node == "node-1" and .hops[0].status.action == "Tunnel"
	and .hops[1].node == "node-2" and .hops[1].status.action == "Local" and .hops[1].spec.from == "Tunnel"' "$o"
o=$T_ROOT/t8
check "trace --keep leaves its request, answered by node-1" traced 0 "$o" x/a x/b:80 --keep
left() { lab weftctl get tracerequests -o json | jq -r '.items[] | "\(.metadata.name) \(.spec.nodeName) \(.spec.from)"' | sort; }
KEPT=$(left)
check "... (weftctl get tracerequests: node-1's says Tunnel)" bash -c \
	"src/lab/weft-lab --lab $LAB weftctl get tracerequests | grep -qE '^trace-[0-9a-f]+ +node-1 +Pod +${IP[x/b]}:80/TCP +Tunnel '"
o=$T_ROOT/t9
check "trace of an unknown pod exits 2" traced 2 "$o" x/nosuch x/b:80
check "... naming it" grep -q 'pods "nosuch" not found' "$o"
check "trace with a port of 70000 exits 2" traced 2 "$o" x/a x/b:70000
check "... naming it" grep -q 'port "70000"' "$o"
check "trace from a service exits 2" traced 2 "$o" svc/x/web x/b:80
check "... saying a service only receives" grep -q 'a service only receives' "$o"

# agree EXPECT OUTFILE PROBE... -- TRACE ARGS: the trace exits EXPECT (0
# delivered, 1 dropped) and the real probe succeeds exactly when delivered
agree() {
	local want=$1 out=$2 rc=0 real=0 probe=()
	shift 2
	while [ "$1" != -- ]; do probe+=("$1"); shift; done
	shift
	trace "$@" >"$out" 2>&1 || rc=$?
	"${probe[@]}" || real=1
	[ "$rc" = "$want" ] && [ "$real" = "$want" ] || { echo "trace exit $rc, real probe $real, want $want"; return 1; }
}

# 7. from a node
o=$T_ROOT/n1
rc=0
trace node-1 x/b:80 >"$o" 2>&1 || rc=$?
real=0
connects node-1 "${IP[x/b]}" || real=1
show "$o"
check "trace node-1 -> x/b:80 (x/only-a on x/b) agrees with a real connection from node-1 (exit $rc, real $real)" \
	test "$rc" = "$real" -a "$rc" != 2
check "... node-1's route: through the VXLAN device, source node-1's gateway" \
	grep -qE "^  route +through the VXLAN device [^ ]+, source 10\.[0-9.]+\.1\$" "$o"
check "... then VNI 0 to node-2" grep -qE "^  tunnel +VNI 0, to node ${NODE_IP[node-2]}\$" "$o"
o=$T_ROOT/n2
check "trace node-2 -> x/b:80 delivered, and so is a real connection (a node reaches its own pods)" \
	agree 0 "$o" connects node-2 "${IP[x/b]}" -- node-2 x/b:80
show "$o"
check "... through x/b's veth" grep -qE "^  route +to the pod's veth " "$o"
check "... delivered to x/b" grep -qE "^  delivered +to x/b " "$o"
must lab weftctl delete networkpolicy only-a -n x
check "only-a deleted: x/c reaches x/b again" wait_for 10 connects x/c "${IP[x/b]}"
o=$T_ROOT/n3
check "trace node-1 -> svc/x/web delivered, and so is a real connection to $cip:80 from node-1" \
	agree 0 "$o" connects node-1 "$cip" -- node-1 svc/x/web
show "$o"
check "... the service device, the service's backend x/b, VNI 0 to node-2" bash -c "
	grep -qE '^  route +to the service device' '$o' && grep -qE '^  service +$cip:80 -> ${IP[x/b]}:80' '$o' &&
	grep -qE '^  tunnel +VNI 0, to node ${NODE_IP[node-2]}\$' '$o' && grep -qE '^  delivered +to x/b' '$o'"
o=$T_ROOT/n4
pings() { ns "$1" ping -c 1 -W 2 "$2" >/dev/null; }
check "trace node-1 -> y/d (echo) delivered, and a real ping gets its answer (VNI 0 is every tenant's)" \
	agree 0 "$o" pings node-1 "${IP[y/d]}" -- node-1 y/d
show "$o"
check "... the tenants compared on node-2: 0 -> y's, allowed" grep -qE '^  tenant +VNID 0 -> VNID [0-9]+: allowed' "$o"

# 8. from outside
must lab weftctl apply -f - <<<'{"apiVersion":"v1","kind":"Service","metadata":{"name":"webnp","namespace":"x"},
 "spec":{"type":"NodePort","selector":{"app":"b"},"ports":[{"port":80,"targetPort":80,"nodePort":30081}]}}'
OUT=$(status_json | jq -r .outside.ip)
check "x/webnp's NodePort answers on node-2 from outside" wait_for 10 connects outside "${NODE_IP[node-2]}" 30081
o=$T_ROOT/o1
check "trace $OUT -> node-1:30081 delivered (arriving at node-1), as a real connection is" \
	agree 0 "$o" connects outside "${NODE_IP[node-1]}" 30081 -- "$OUT" node-1:30081
show "$o"
check "... translated on node-1 to x/b, tunnelled to node-2, delivered" bash -c "
	grep -qE '^on node-1 ' '$o' && grep -qE '^  service +${NODE_IP[node-1]}:30081 -> ${IP[x/b]}:80' '$o' &&
	grep -qE '^then on node-2 ' '$o' && grep -qE '^  delivered +to x/b' '$o'"
o=$T_ROOT/o2
check "trace $OUT -> svc/x/webnp --node node-2: its NodePort on node-2, delivered as a real connection is" \
	agree 0 "$o" connects outside "${NODE_IP[node-2]}" 30081 -- "$OUT" svc/x/webnp --node node-2
show "$o"
check "... one hop, node-2's" bash -c "grep -qE '^on node-2 ' '$o' && ! grep -q '^then on' '$o'"
o=$T_ROOT/o3
refused_at() { ns outside curl -s --max-time 3 "http://$1:$2/" >/dev/null; test $? = 7; }
check "trace $OUT -> node-1:22 delivered to node-1's own stack, which refuses a real connection at once" \
	agree 0 "$o" refused_at "${NODE_IP[node-1]}" 22 -- "$OUT" node-1:22
show "$o"
check "... said so" grep -qE "^  route +an address of the node itself" "$o"
must ns outside ip route add "${IP[x/b]}/32" via "${NODE_IP[node-2]}"
o=$T_ROOT/o4
check "trace $OUT -> x/b:80 --node node-2: forwarded by node-2 to x/b, as a real connection (routed so) is" \
	agree 0 "$o" connects outside "${IP[x/b]}" -- "$OUT" x/b:80 --node node-2
show "$o"
check "... forwarded, to x/b's veth" grep -qE "^  route +forwarded by the node: to the pod's veth" "$o"
must ns outside ip route del "${IP[x/b]}/32" via "${NODE_IP[node-2]}"
o=$T_ROOT/o5
check "trace $OUT -> x/b:80 without --node exits 2" traced 2 "$o" "$OUT" x/b:80
check "... asking for the node" grep -q 'name it with --node NODE' "$o"
check "trace from a pod's address exits 2" traced 2 "$o" "${IP[x/a]}" x/b:80
check "... naming the pod subnet it is in" grep -qE "is in node node-1's pod subnet" "$o"
check "trace from a node with --source exits 2" traced 2 "$o" node-1 x/b:80 --source 10.1.2.3
check "trace from an unknown node exits 2" traced 2 "$o" nosuch-node x/b:80
check "... naming it" grep -q '"nosuch-node": no node has this name' "$o"
only_kept() { local l; l=$(left); [ "$l" = "$KEPT" ] || { echo "$l"; return 1; }; }
check "the TraceRequests of sections 7 and 8 were deleted after each (only --keep's two are left)" only_kept

check "down $LAB (and no sanitizer report in the agents' logs)" lab down
finish
