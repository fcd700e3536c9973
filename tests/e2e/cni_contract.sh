#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# cni_contract.sh — the real weft-cni binary, run exactly as a container
# runtime runs it, keeps the CNI contract (docs/cni.md):
# 100 parallel ADDs get 100 distinct valid addresses and well-formed
# results; a /29 node takes 5 pods, refuses the 6th cleanly naming the
# counts, and still answers STATUS ready; a released
# IP is not handed out again at once; DEL is idempotent and forgiving;
# CHECK notices a missing veth; a second ADD into an existing interface is
# refused without harming the first pod; VERSION, STATUS, GC; bad input is
# answered with the right error code.
#
#                         L-underlay: bridge br0
#                 +--------------+---------------+
#              L-ctrl         L-outside       L-node-1 (weft-agent, cni.sock)
#              controller                       |  weft<hash> veths (made by the agent)
#                                   +-----------+-----------+-----------+
#                                 L-p1 ...    L-p100       L-g1..g4    L-x*  (pod netns made here)
#
#                         S-underlay                        (S = L-s: a second lab)
#              S-ctrl ... S-node-1, node subnet /29 (--host-subnet-length 3)
#                                   +---- S-p1 .. S-p6
#
# Every call is `ip netns exec <node netns> env CNI_*=.. weft-cni` with the
# node conflist's first plugin (+ name, cniVersion) on stdin, as libcni
# does.  L is c<pid>.  The trap brings both labs down, deletes the pod
# namespaces this script added and kills the background jobs it started.
cd "$(dirname "$0")/../.." && source tests/lib.sh

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
WEFT_BIN=$(cd "$WEFT_BIN" && pwd)
LAB=c$$
SMALL=c$$-s
PODS=()					# pod netns this script added
BG=()					# background jobs still running
ERRF=$T_ROOT/stderr			# weft-cni's stderr of the last call

need_lab

lab() { src/lab/weft-lab --lab "$LAB" "$@"; }
small() { src/lab/weft-lab --lab "$SMALL" "$@"; }

contract_cleanup() {
	local p ns
	for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null || true; done
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1
	src/lab/weft-lab --lab "$SMALL" down >/dev/null 2>&1
	for ns in "${PODS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	t_cleanup
}
trap contract_cleanup EXIT

# pod_ns NAME: add the pod netns NAME (with lo up), remembered for the trap.
pod_ns() { ip netns add "$1" && PODS+=("$1") && ip -n "$1" link set lo up; }

# cni NODE_NETNS CONFIG VAR=VALUE...: weft-cni as a runtime runs it (only
# the given CNI_* set, CNI_PATH always); sets OUT (stdout) and RC.
cni() {
	local ns=$1 conf=$2; shift 2
	RC=0
	OUT=$(ip netns exec "$ns" env -u CNI_COMMAND -u CNI_CONTAINERID -u CNI_NETNS -u CNI_IFNAME \
		-u CNI_ARGS CNI_PATH="$WEFT_BIN:/usr/lib/cni" "$@" "$WEFT_BIN/weft-cni" \
		<<<"$conf" 2>"$ERRF") || RC=$?
}
args() { echo "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=cni-contract;K8S_POD_NAME=$1"; }
# add ID POD_NETNS / del ID [POD_NETNS] / chk ID POD_NETNS PREV_RESULT [VERSION]: on node-1 of $LAB
add() { cni "$NODE" "$CONF" CNI_COMMAND=ADD CNI_CONTAINERID="$1" CNI_NETNS="/run/netns/$2" CNI_IFNAME=eth0 "$(args "$1")"; }
del() {
	if [ $# -ge 2 ]; then
		cni "$NODE" "$CONF" CNI_COMMAND=DEL CNI_CONTAINERID="$1" CNI_NETNS="/run/netns/$2" CNI_IFNAME=eth0 "$(args "$1")"
	else
		cni "$NODE" "$CONF" CNI_COMMAND=DEL CNI_CONTAINERID="$1" CNI_IFNAME=eth0 "$(args "$1")"
	fi
}
chk() {
	local conf
	conf=$(jq -c --argjson prev "$3" --arg v "${4:-$VERSION}" '. + {cniVersion: $v, prevResult: $prev}' <<<"$CONF")
	cni "$NODE" "$conf" CNI_COMMAND=CHECK CNI_CONTAINERID="$1" CNI_NETNS="/run/netns/$2" CNI_IFNAME=eth0 "$(args "$1")"
}

# What the last call answered:
silent_ok() {
	if [ "$RC" -ne 0 ] || [ -n "$OUT" ]; then echo "exit $RC, stdout '$OUT', stderr $(cat "$ERRF")"; return 1; fi
}
# cni_error CODE [WORD]: exit non-zero, stdout a CNI error with CODE whose msg (or details) has WORD
cni_error() {
	if [ "$RC" -eq 0 ] || ! jq -e --argjson c "$1" --arg w "${2:-}" '
		.code == $c and (.cniVersion | type == "string") and (.msg | type == "string")
		and ((.msg + " " + (.details // "")) | contains($w))' <<<"$OUT" >/dev/null 2>&1; then
		echo "wanted code $1${2:+ naming '$2'}; exit $RC, stdout '$OUT'"
		return 1
	fi
}
# valid_result JSON NETNS: an ADD result as the spec has it, in $VERSION,
# one host interface (no sandbox), eth0 in NETNS, ips[].interface -> eth0.
valid_result() {
	jq -e --arg v "$VERSION" --arg sb "/run/netns/$2" --arg gw "$GATEWAY" '
		. as $r | .cniVersion == $v
		and (.interfaces | type == "array" and length == 2)
		and (.interfaces[0] | (has("sandbox") | not) and (.name | test("^weft")) and (.mac | test("^[0-9a-f:]{17}$")))
		and (.interfaces[1] | .name == "eth0" and .sandbox == $sb and (.mac | test("^[0-9a-f:]{17}$")))
		and ($v != "1.0.0" or all(.interfaces[]; has("mtu") | not))
		and (.ips | type == "array" and length == 1)
		and all(.ips[]; (.interface | type == "number") and $r.interfaces[.interface].sandbox == $sb
			and (.address | test("^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+/[0-9]+$")) and .gateway == $gw)
		and (.routes | type == "array" and any(.[]; .dst == "0.0.0.0/0" and .gw == $gw))' <<<"$1" >/dev/null
}
ip_of() { jq -r '.ips[0].address | split("/")[0]' <<<"$1"; }
hostif_of() { jq -r '.interfaces[0].name' <<<"$1"; }
# not_hosts_of CIDR IP...: prints each IP that is not a host address of CIDR
not_hosts_of() {
	python3 - "$@" <<'PY'
import ipaddress, sys
net = ipaddress.ip_network(sys.argv[1])
for a in sys.argv[2:]:
    if ipaddress.ip_address(a) not in list(net.hosts()):
        print(a)
PY
}
gateway_of() { python3 -c 'import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1])[1])' "$1"; }
weft_veths() { ip -n "$1" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep '^weft[0-9a-f]' | sort; }
leases() { find "$1/leases" -mindepth 1 -printf '%f\n' 2>/dev/null | sort; }
lease_count() { leases "$STATE" | grep -cE '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$'; }
has_lease() { test -e "$STATE/leases/$1"; }
host_link() { ip -n "$NODE" link show dev "$1" >/dev/null 2>&1; }
only_lo() { test "$(ip -n "$1" -o link show | awk -F': ' '{print $2}')" = lo; }
pod_has_ip() { ip -n "$1" -4 -o addr show dev eth0 | grep -q "inet $2/"; }
node_reaches() { ip netns exec "$NODE" ping -c1 -W1 "$1"; }

# ---------------------------------------------------------------- the lab
up_out=$(lab up --nodes 1 2>&1) || { fail "weft-lab up --nodes 1" "$(tail -n 5 <<<"$up_out")"; finish; exit; }
pass "weft-lab up --nodes 1"
status=$(lab status -o json)
NODE=$(jq -r '.nodes[0].netns' <<<"$status")
SUBNET=$(jq -r '.nodes[0].subnet' <<<"$status")
STATE=$(jq -r '.nodes[0].stateDir' <<<"$status")
CONFLIST=$(jq -r '.nodes[0].cniConfig' <<<"$status")
AGENT_LOG=/run/weft-lab/$LAB/node-1/agent.log
CONF=$(jq -c '.plugins[0] + {name: .name, cniVersion: .cniVersion}' "$CONFLIST")
VERSION=$(jq -r .cniVersion <<<"$CONF")
CONF11=$(jq -c '. + {cniVersion: "1.1.0"}' <<<"$CONF")
GATEWAY=$(gateway_of "$SUBNET")
check "node-1 has a subnet ($SUBNET), conflist version 1.x ($VERSION)" grep -qE '^1\.[01]\.0$' <<<"$VERSION"
# the pods' Kubernetes namespace, so the agent can record them
NS_JSON='{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"cni-contract"}}'
check "namespace cni-contract in the controller" bash -c "src/lab/weft-lab --lab $LAB weftctl apply -f - <<<'$NS_JSON'"

# ---------------------------------------------------------------- VERSION, STATUS
cni "$NODE" "$CONF" CNI_COMMAND=VERSION
check "VERSION: exit 0, cniVersion 1.1.0, supports 0.3.1 .. 1.1.0" jq -e --argjson rc "$RC" '
	$rc == 0 and .cniVersion == "1.1.0"
	and (.supportedVersions | index("0.3.1") and index("0.4.0") and index("1.0.0") and index("1.1.0"))' <<<"$OUT"
cni "$NODE" "$CONF11" CNI_COMMAND=STATUS
check "STATUS (1.1.0) on a ready agent: exit 0, no output" silent_ok

# ---------------------------------------------------------------- 100 parallel ADDs
leases_before=$(lease_count)
for i in $(seq 100); do pod_ns "$LAB-p$i" || break; done
dir=$(tmpdir)
for i in $(seq 100); do
	(ERRF=$dir/$i.err; add "$LAB-a$i" "$LAB-p$i"; printf '%s' "$OUT" >"$dir/$i.out"; echo "$RC" >"$dir/$i.rc") &
	BG+=($!)
done
for p in "${BG[@]}"; do wait "$p"; done
BG=()
ok=0 bad_out=
for i in $(seq 100); do
	if [ "$(cat "$dir/$i.rc")" = 0 ]; then ok=$((ok + 1)); else bad_out="pod $i: $(cat "$dir/$i.out") $(cat "$dir/$i.err")"; fi
done
if [ $ok -eq 100 ]; then pass "100 parallel ADDs: 100 succeed"; else fail "100 parallel ADDs: 100 succeed" "$ok succeeded; e.g. $bad_out"; fi
ips=$(for i in $(seq 100); do ip_of "$(cat "$dir/$i.out")" 2>/dev/null; done)
check "... 100 distinct IPs" test "$(sort -u <<<"$ips" | grep -c .)" -eq 100
# shellcheck disable=SC2086
outside=$(not_hosts_of "$SUBNET" $ips)
check "... all inside the node subnet $SUBNET" test -z "$outside"
check "... none is the gateway $GATEWAY" bash -c "! grep -qxF '$GATEWAY' <<<'$ips'"
invalid=$(for i in $(seq 100); do valid_result "$(cat "$dir/$i.out")" "$LAB-p$i" || echo "$i"; done)
check "... every result is spec JSON (interfaces, ips -> eth0 in the sandbox, routes; host side without sandbox)" \
	test -z "$invalid"
missing=$(for i in $(seq 100); do
	out=$(cat "$dir/$i.out")
	{ pod_has_ip "$LAB-p$i" "$(ip_of "$out")" && host_link "$(hostif_of "$out")"; } 2>/dev/null || echo "$i"
done)
check "... each pod has its IP on eth0 and its host veth exists" test -z "$missing"
check "... 100 leases taken" test "$(lease_count)" -eq $((leases_before + 100))
check "... the node reaches pod 1 and pod 100" bash -c "ip netns exec $NODE ping -c1 -W1 $(ip_of "$(cat "$dir/1.out")") >/dev/null &&
	ip netns exec $NODE ping -c1 -W1 $(ip_of "$(cat "$dir/100.out")") >/dev/null"
for i in $(seq 100); do
	(ERRF=$dir/$i.derr; del "$LAB-a$i" "$LAB-p$i"; printf '%s' "$OUT" >"$dir/$i.dout"; echo "$RC" >"$dir/$i.drc") &
	BG+=($!)
done
for p in "${BG[@]}"; do wait "$p"; done
BG=()
bad=$(for i in $(seq 100); do [ "$(cat "$dir/$i.drc")" = 0 ] && [ ! -s "$dir/$i.dout" ] || echo "$i"; done)
check "100 parallel DELs: all exit 0 with empty stdout" test -z "$bad"
check "... every lease is released" test "$(lease_count)" -eq "$leases_before"
check "... no weft veth is left on the node" test -z "$(weft_veths "$NODE")"
check "... no eth0 is left in the pods" bash -c "for i in \$(seq 100); do ! ip -n $LAB-p\$i link show eth0 >/dev/null 2>&1 || exit 1; done"
for i in $(seq 100); do ip netns del "$LAB-p$i"; done

# ---------------------------------------------------------------- ADD, DEL, ADD: round-robin
pod_ns "$LAB-x1"
add "$LAB-rr" "$LAB-x1"; first=$OUT
check "ADD x1" valid_result "$first" "$LAB-x1"
del "$LAB-rr" "$LAB-x1"
check "DEL x1" silent_ok
add "$LAB-rr" "$LAB-x1"; second=$OUT
check "ADD x1 again" valid_result "$second" "$LAB-x1"
check "... does not get the IP just released ($(ip_of "$first") -> $(ip_of "$second"))" \
	test "$(ip_of "$first")" != "$(ip_of "$second")"

# ---------------------------------------------------------------- DEL: twice, without ADD, netns gone, CNI_NETNS unset
del "$LAB-rr" "$LAB-x1"
check "DEL x1" silent_ok
del "$LAB-rr" "$LAB-x1"
check "DEL x1 twice: exit 0, empty stdout" silent_ok
check "... the lease is free" bash -c "! test -e '$STATE/leases/$(ip_of "$second")'"
del "$LAB-never" "$LAB-x1"
check "DEL of a container never added: exit 0, empty stdout" silent_ok

pod_ns "$LAB-x2"
add "$LAB-gone" "$LAB-x2"; gone=$OUT
check "ADD x2" valid_result "$gone" "$LAB-x2"
ip netns del "$LAB-x2"
del "$LAB-gone" "$LAB-x2"
check "DEL after the netns is gone: exit 0, empty stdout" silent_ok
check "... frees the lease $(ip_of "$gone")" bash -c "! test -e '$STATE/leases/$(ip_of "$gone")'"
check "... and no veth is left" bash -c "! ip -n $NODE link show dev $(hostif_of "$gone") >/dev/null 2>&1"

pod_ns "$LAB-x3"
add "$LAB-nons" "$LAB-x3"; nons=$OUT
check "ADD x3" valid_result "$nons" "$LAB-x3"
del "$LAB-nons"
check "DEL with CNI_NETNS unset: exit 0, empty stdout" silent_ok
check "... frees the lease $(ip_of "$nons")" bash -c "! test -e '$STATE/leases/$(ip_of "$nons")'"
check "... and removes the host veth" bash -c "! ip -n $NODE link show dev $(hostif_of "$nons") >/dev/null 2>&1"
del "$LAB-nons"
check "... and again" silent_ok

# ---------------------------------------------------------------- CHECK
pod_ns "$LAB-x4"
add "$LAB-chk" "$LAB-x4"; res=$OUT
check "ADD x4" valid_result "$res" "$LAB-x4"
chk "$LAB-chk" "$LAB-x4" "$res"
check "CHECK ($VERSION, prevResult = the ADD result) on a fresh pod: exit 0, no output" silent_ok
chk "$LAB-chk" "$LAB-x4" "$res" 0.3.1
check "CHECK with config version 0.3.1: code 1" cni_error 1
hostif=$(hostif_of "$res")
ip -n "$NODE" link del "$hostif"
chk "$LAB-chk" "$LAB-x4" "$res"
check "CHECK after the host veth $hostif was deleted out of band: fails with code 104" cni_error 104
del "$LAB-chk" "$LAB-x4"
check "DEL of that pod: exit 0, lease freed" bash -c "[ $RC -eq 0 ] && ! test -e '$STATE/leases/$(ip_of "$res")'"

# ---------------------------------------------------------------- the interface exists already
pod_ns "$LAB-x5"
add "$LAB-one" "$LAB-x5"; one=$OUT
check "ADD x5 (container one)" valid_result "$one" "$LAB-x5"
leases_one=$(leases "$STATE"); veths_one=$(weft_veths "$NODE")
add "$LAB-two" "$LAB-x5"
check "a second ADD (container two) of eth0 in the same netns: code 101" cni_error 101
check "... takes no lease" test "$(leases "$STATE")" = "$leases_one"
check "... leaves no veth" test "$(weft_veths "$NODE")" = "$veths_one"
del "$LAB-two" "$LAB-x5"
check "the runtime's DEL of container two: exit 0" silent_ok
check "... the first pod keeps its IP $(ip_of "$one") on eth0" pod_has_ip "$LAB-x5" "$(ip_of "$one")"
check "... its host veth and its lease" bash -c "ip -n $NODE link show dev $(hostif_of "$one") >/dev/null && test -e '$STATE/leases/$(ip_of "$one")'"
check "... the node still reaches it" node_reaches "$(ip_of "$one")"
chk "$LAB-one" "$LAB-x5" "$one"
check "... and CHECK of the first pod passes" silent_ok

# ---------------------------------------------------------------- GC
added=0
declare -A gcres
for g in 1 2 3 4; do
	pod_ns "$LAB-g$g"
	add "$LAB-gc$g" "$LAB-g$g"
	[ "$RC" = 0 ] && added=$((added + 1))
	gcres[$g]=$OUT
done
check "ADD g1..g4" test $added -eq 4
gcconf=$(jq -c --arg a "$LAB-gc1" --arg b "$LAB-gc2" '. + {"cni.dev/valid-attachments":
	[{containerID: $a, ifname: "eth0"}, {containerID: $b, ifname: "eth0"}]}' <<<"$CONF11")
cni "$NODE" "$gcconf" CNI_COMMAND=GC
check "GC with valid attachments g1, g2: exit 0, no output" silent_ok
for g in 3 4; do
	r=${gcres[$g]}
	check "... g$g's IP $(ip_of "$r") is free" bash -c "! test -e '$STATE/leases/$(ip_of "$r")'"
	check "... g$g's veth $(hostif_of "$r") is gone" bash -c "! ip -n $NODE link show dev $(hostif_of "$r") >/dev/null 2>&1"
done
for g in 1 2; do
	r=${gcres[$g]}
	check "... g$g keeps its lease $(ip_of "$r") and veth" bash -c "test -e '$STATE/leases/$(ip_of "$r")' &&
		ip -n $NODE link show dev $(hostif_of "$r") >/dev/null"
	chk "$LAB-gc$g" "$LAB-g$g" "$r"
	check "... and CHECK of g$g passes" silent_ok
done
check "... pod x5 (not listed) is collected too" bash -c "! test -e '$STATE/leases/$(ip_of "$one")'"

# ---------------------------------------------------------------- bad input
cni "$NODE" "$CONF" CNI_COMMAND=ADD CNI_NETNS="/run/netns/$LAB-x1" CNI_IFNAME=eth0 "$(args bad)"
check "ADD without CNI_CONTAINERID: code 4 naming it" cni_error 4 CNI_CONTAINERID
cni "$NODE" '{"cniVersion": "1.0.0", "name": ' CNI_COMMAND=ADD CNI_CONTAINERID="$LAB-bad" \
	CNI_NETNS="/run/netns/$LAB-x1" CNI_IFNAME=eth0 "$(args bad)"
check "ADD with bad JSON on stdin: code 6" cni_error 6
nosock=$(jq -c --arg s "/run/weft-lab/$LAB/node-1/no-such.sock" '.agentSocket = $s' <<<"$CONF")
cni "$NODE" "$nosock" CNI_COMMAND=ADD CNI_CONTAINERID="$LAB-bad" CNI_NETNS="/run/netns/$LAB-x1" CNI_IFNAME=eth0 "$(args bad)"
check "ADD with an agentSocket nobody listens on: code 11" cni_error 11
check "... none of them left an interface in x1" only_lo "$LAB-x1"

# ---------------------------------------------------------------- the controller down
# A pod whose labels the agent cannot learn, in a namespace with a
# NetworkPolicy, would start open whatever the policy says: its ADD waits
# (code 11) until the controller is back.  Without policies in its
# namespace a pod starts as before.
np_args() { echo "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=cni-contract-np;K8S_POD_NAME=$1"; }
np_add() { cni "$NODE" "$CONF" CNI_COMMAND=ADD CNI_CONTAINERID="$LAB-$1" CNI_NETNS="/run/netns/$LAB-$1" CNI_IFNAME=eth0 "$(np_args "$1")"; }
np_del() { cni "$NODE" "$CONF" CNI_COMMAND=DEL CNI_CONTAINERID="$LAB-$1" CNI_NETNS="/run/netns/$LAB-$1" CNI_IFNAME=eth0 "$(np_args "$1")"; }
np_applied() {
	src/lab/weft-lab --lab "$LAB" weftctl get nodes node-1 -o json | jq -e --argjson rv "$1" \
		'.metadata.annotations["weft.io/applied-revisions"] // "{}" | fromjson | (.networkpolicies // 0) >= $rv' >/dev/null
}
pod_ns "$LAB-np1"; pod_ns "$LAB-free1"
echo '{"apiVersion":"v1","kind":"List","items":[
	{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"cni-contract-np"}},
	{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"deny-all","namespace":"cni-contract-np"},"spec":{"podSelector":{}}}]}' \
	>"$T_ROOT/np.json"
check "namespace cni-contract-np with a NetworkPolicy deny-all" lab weftctl apply -f "$T_ROOT/np.json"
np_rv=$(lab weftctl get networkpolicy deny-all -n cni-contract-np -o json | jq -r '.metadata.resourceVersion')
check "... in force on node-1 (revision $np_rv) within 10 s" wait_for 10 np_applied "$np_rv"
check "controller stop" env WEFT_LAB_TIMEOUT=20 src/lab/weft-lab --lab "$LAB" controller stop
leases_before=$(lease_count)
np_add np1
check "controller down: ADD of cni-contract-np/np1 (policies in its namespace, its Pod unknown): code 11 naming the namespace" \
	cni_error 11 "NetworkPolicies of namespace cni-contract-np"
check "... nothing but lo in np1's netns" only_lo "$LAB-np1"
check "... no lease taken" test "$(lease_count)" = "$leases_before"
cni "$NODE" "$CONF" CNI_COMMAND=ADD CNI_CONTAINERID="$LAB-free1" CNI_NETNS="/run/netns/$LAB-free1" CNI_IFNAME=eth0 "$(args free1)"
check "controller down: ADD of cni-contract/free1 (no policy in its namespace) succeeds" test "$RC" = 0
cni "$NODE" "$CONF" CNI_COMMAND=DEL CNI_CONTAINERID="$LAB-free1" CNI_NETNS="/run/netns/$LAB-free1" CNI_IFNAME=eth0 "$(args free1)"
check "... and its DEL" silent_ok
np_del np1
check "controller down: the runtime's DEL after the refused ADD: exit 0, empty stdout" silent_ok
check "controller start" lab controller start
np_add np1
check "controller back: ADD of cni-contract-np/np1 succeeds" test "$RC" = 0
np_del np1
check "... and its DEL" silent_ok

# ---------------------------------------------------------------- a /29 node takes 5 pods
if ! up_out=$(small up --nodes 1 --host-subnet-length 3 2>&1); then
	fail "weft-lab up --nodes 1 --host-subnet-length 3" "$(tail -n 5 <<<"$up_out")"
else
	pass "weft-lab up --nodes 1 --host-subnet-length 3"
	s_status=$(small status -o json)
	s_node=$(jq -r '.nodes[0].netns' <<<"$s_status")
	s_subnet=$(jq -r '.nodes[0].subnet' <<<"$s_status")
	s_state=$(jq -r '.nodes[0].stateDir' <<<"$s_status")
	s_conf=$(jq -c '.plugins[0] + {name: .name, cniVersion: .cniVersion}' "$(jq -r '.nodes[0].cniConfig' <<<"$s_status")")
	check "the small node's subnet is a /29 ($s_subnet)" grep -q '/29$' <<<"$s_subnet"
	small weftctl apply -f - <<<"$NS_JSON" >/dev/null 2>&1
	s_add() { cni "$s_node" "$s_conf" CNI_COMMAND=ADD CNI_CONTAINERID="$SMALL-$1" CNI_NETNS="/run/netns/$SMALL-$1" CNI_IFNAME=eth0 "$(args "$1")"; }
	s_ips=
	for i in 1 2 3 4 5; do
		pod_ns "$SMALL-p$i"
		s_add "p$i"
		[ "$RC" = 0 ] && s_ips+="$(ip_of "$OUT") "
	done
	check "5 ADDs on the /29 succeed ($s_ips)" test "$(wc -w <<<"$s_ips")" -eq 5
	s_gw=$(gateway_of "$s_subnet")
	check "... 5 distinct addresses" test "$(tr ' ' '\n' <<<"$s_ips" | grep . | sort -u | wc -l)" -eq 5
	check "... none is the gateway $s_gw" bash -c "! grep -qw '$s_gw' <<<'$s_ips'"
	# shellcheck disable=SC2086
	bad=$(not_hosts_of "$s_subnet" $s_ips)
	check "... all inside $s_subnet" test -z "$bad"
	pod_ns "$SMALL-p6"
	veths_before=$(weft_veths "$s_node"); leases_before=$(leases "$s_state")
	s_add p6
	check "the 6th ADD fails: code 100 naming $s_subnet" cni_error 100 "$s_subnet"
	check "... and the counts: 5 leased, 0 quarantined, of 5" \
		cni_error 100 "subnet $s_subnet is exhausted (5 leased, 0 quarantined, of 5 addresses)"
	check "... no new weft veth in the node" test "$(weft_veths "$s_node")" = "$veths_before"
	check "... no lease file added" test "$(leases "$s_state")" = "$leases_before"
	check "... nothing but lo in the 6th pod's netns" only_lo "$SMALL-p6"
	cni "$s_node" "$(jq -c '. + {cniVersion: "1.1.0"}' <<<"$s_conf")" CNI_COMMAND=STATUS
	# CNI spec: STATUS is "ready to serve ADD/DEL in general"; a full
	# subnet is not unreadiness (ADD says exhausted, DEL works)
	check "STATUS on the full node: ready (exit 0, no output)" silent_ok
	cni "$s_node" "$s_conf" CNI_COMMAND=DEL CNI_CONTAINERID="$SMALL-p6" CNI_NETNS="/run/netns/$SMALL-p6" CNI_IFNAME=eth0 "$(args p6)"
	check "the runtime's DEL after the failed 6th ADD: exit 0, empty stdout" silent_ok
	check "... the 5 pods keep their leases" test "$(leases "$s_state")" = "$leases_before"
	check "down of the /29 lab (no sanitizer report)" small down
fi

check "the agent of node-1 is still running" kill -0 "$(jq -r '.nodes[0].agentPid' <<<"$status")"
check "no sanitizer report in the agent log" bash -c "! grep -E 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error' '$AGENT_LOG'"
check "down (no sanitizer report)" lab down
finish
