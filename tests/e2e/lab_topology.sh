#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# lab_topology.sh — weft-lab builds the cluster's namespaces as documented,
# refuses what it must refuse with a clear message, and `down` removes
# exactly what `up` made (also after an `up` that failed halfway); the root
# namespace's addresses, routes and ip_forward never change.
#
#                         L-underlay: bridge br0 (MTU 1500)
#        +---------------+----------------+----------------+
#        |               |                |                |
#     L-ctrl          L-outside        L-node-1         L-node-2
#     eth0 .2         eth0 .254        eth0 .11         eth0 .12        192.168.200.0/24
#     weft-controller (no route to     weft-agent       weft-agent
#     :8080           10.128.0.0/14)   ip_forward=1     ip_forward=1
#                                          |
#                                      L-pod-blue-a  (only when weft-agent is built)
#
# L is t<pid>, so a demo lab left running ("weft") is not touched.  Agent
# checks run only when $WEFT_BIN/weft-agent exists; otherwise the lab is
# built with --no-agents and the test says so.
cd "$(dirname "$0")/../.." && source tests/lib.sh

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$
BAD=t$$-x					# a second lab, for failures
STATE_DIR=/run/weft-lab/$LAB
lab() { src/lab/weft-lab --lab "$LAB" "$@"; }
in_ns() { local ns=$1; shift; ip netns exec "$LAB-$ns" "$@"; }	# in_ns node-1 CMD...
status_json() { lab status -o json; }
jq_status() { status_json | jq -e "$@" >/dev/null; }	# jq_status [--arg ..] FILTER: FILTER is true
# output_has WANT CMD...: CMD fails and its output contains WANT
fails_saying() {
	local want=$1 out; shift
	if out=$("$@" 2>&1); then echo "succeeded: $out"; return 1; fi
	grep -qF -- "$want" <<<"$out" || { echo "message was: $out"; return 1; }
}
lab_netns() { ip netns list | awk '{print $1}' | grep -E "^($LAB|$BAD)-" || true; }

root_state() { # what the root namespace looks like (lifetimes stripped)
	ip -br addr
	ip route show table all
	ip -6 route show table all | sed -E 's/expires [0-9]+sec//'
	sysctl -n net.ipv4.ip_forward
}

need_lab

lab_cleanup() {
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1
	src/lab/weft-lab --lab "$BAD" down >/dev/null 2>&1
	t_cleanup
}
trap lab_cleanup EXIT

agents=1	# need_lab: the agent and plugin are built
up_flags=(--nodes 2)

root_before=$(root_state)

# ---------------------------------------------------------------- refusals before anything exists
check "status of a lab that is not up fails, naming it" fails_saying "lab '$BAD' is not up" src/lab/weft-lab --lab "$BAD" status
check "up --nodes 0 is refused" fails_saying "--nodes '0'" src/lab/weft-lab --lab "$BAD" up --nodes 0 --no-agents
check "up --nodes abc is refused" fails_saying "--nodes 'abc'" src/lab/weft-lab --lab "$BAD" up --nodes abc --no-agents
check "up --mode bogus is refused" fails_saying "--mode 'bogus'" src/lab/weft-lab --lab "$BAD" up --nodes 1 --mode bogus --no-agents
check "a refused up made nothing" test ! -e "/run/weft-lab/$BAD"

# ---------------------------------------------------------------- up
up_out=$(lab up "${up_flags[@]}" 2>&1)
up_rc=$?
check "up ${up_flags[*]}" test $up_rc -eq 0
[ $up_rc -eq 0 ] || echo "$up_out" | tail -n 20
check "up prints progress (underlay, nodes, controller ready)" \
	grep -qE "underlay.*br0" <<<"$up_out"
check "up reports the controller ready" grep -qE "controller .*ready" <<<"$up_out"

for ns in underlay ctrl outside node-1 node-2; do
	check "netns $LAB-$ns exists" test -e "/run/netns/$LAB-$ns"
done
check "the underlay bridge has 4 ports" test "$(ip -n "$LAB-underlay" -o link show master br0 | wc -l)" -eq 4
check "ctrl has 192.168.200.2/24" grep -q "192.168.200.2/24" <<<"$(in_ns ctrl ip -4 -o addr show dev eth0)"
check "outside has 192.168.200.254/24" grep -q "192.168.200.254/24" <<<"$(in_ns outside ip -4 -o addr show dev eth0)"
for i in 1 2; do
	check "node-$i has 192.168.200.1$i/24" grep -q "192.168.200.1$i/24" <<<"$(in_ns node-$i ip -4 -o addr show dev eth0)"
	check "node-$i eth0 MTU 1500" grep -q "mtu 1500 " <<<"$(in_ns node-$i ip link show dev eth0)"
	check "node-$i ip_forward=1" test "$(in_ns node-$i sysctl -n net.ipv4.ip_forward)" = 1
done

# ---------------------------------------------------------------- underlay reachability
check "node-1 -> node-2 over the underlay" in_ns node-1 ping -c1 -W1 192.168.200.12
check "node-2 -> node-1 over the underlay" in_ns node-2 ping -c1 -W1 192.168.200.11
check "node-1 -> outside" in_ns node-1 ping -c1 -W1 192.168.200.254
check "node-2 -> outside" in_ns node-2 ping -c1 -W1 192.168.200.254
check "node-2 reaches the controller's /healthz" in_ns node-2 curl -sf -m 2 http://192.168.200.2:8080/healthz
check "outside has no route to the pod network" bash -c "! ip netns exec $LAB-outside ip route get 10.128.0.5"
check "lab exec outside -- CMD runs in the outside netns" grep -q "192.168.200.254/24" <<<"$(lab exec outside -- ip -4 -o addr)"

# ---------------------------------------------------------------- state, controller, status
check "a private bpffs is mounted at $STATE_DIR/bpf" test "$(findmnt -n -o FSTYPE "$STATE_DIR/bpf")" = bpf
check "pin dirs for node-1 and node-2" test -d "$STATE_DIR/bpf/node-1" -a -d "$STATE_DIR/bpf/node-2"
ctrl_pid=$(jq -r .controllerPid "$STATE_DIR/state.json")
check "the controller runs in $LAB-ctrl" test "$(ip netns identify "$ctrl_pid")" = "$LAB-ctrl"
check "the admin token exists, mode 600" test "$(stat -c %a "$STATE_DIR/ctrl/admin.token")" = 600
check "status -o json: name, mode, controller" jq_status --arg l "$LAB" \
	'.name == $l and .mode == "flat" and .controller.url == "http://192.168.200.2:8080"
	 and .controller.tokenFile == "/run/weft-lab/\($l)/ctrl/admin.token" and .controller.netns == "\($l)-ctrl"'
check "status -o json: outside" jq_status --arg l "$LAB" '.outside == {netns: "\($l)-outside", ip: "192.168.200.254"}'
check "status -o json: nodes" jq_status --arg l "$LAB" '
	(.nodes | length) == 2 and
	all(.nodes[]; (.name | test("^node-[12]$")) and .netns == "\($l)-\(.name)"
	    and .agentSocket == "/run/weft-lab/\($l)/\(.name)/cni.sock"
	    and .cniConfig == "/run/weft-lab/\($l)/\(.name)/cni/10-weft.conflist"
	    and .pinDir == "/run/weft-lab/\($l)/bpf/\(.name)"
	    and .stateDir == "/run/weft-lab/\($l)/\(.name)/state"
	    and has("subnet") and has("agentPid")) and
	.nodes[0].ip == "192.168.200.11" and .nodes[1].ip == "192.168.200.12"'
check "status -o json: exactly the documented keys" jq_status '
	(keys == ["controller","mode","name","nodes","outside","pods"]) and
	all(.nodes[]; keys == ["agentPid","agentSocket","cniConfig","ip","name","netns","pinDir","stateDir","subnet"])'
check "status -o json: no pods yet" jq_status '.pods == []'
check "the conflist is the weft + portmap chain" jq -e --arg s "$STATE_DIR/node-1/cni.sock" '
	.name == "weft" and (.cniVersion | test("^1\\.[01]\\.0$")) and (.plugins | length) == 2 and
	.plugins[0] == {type: "weft-cni", agentSocket: $s} and
	.plugins[1] == {type: "portmap", capabilities: {portMappings: true}, snat: true}' \
	"$STATE_DIR/node-1/cni/10-weft.conflist"
check "plain status lists the nodes" grep -qE "node-2 +$LAB-node-2 +192.168.200.12" <<<"$(lab status)"
check "lab weftctl talks to the lab's controller" grep -qw default <<<"$(lab weftctl get namespaces)"
# the controller's own default is multitenant: flat proves the lab's --config was applied
check "the controller runs in the lab's mode (flat)" jq -e '.mode == "flat"' <<<"$(lab weftctl get clusternetworks default -o json)"

# ---------------------------------------------------------------- refusals on a running lab
check "up on a lab that is up fails" fails_saying "lab '$LAB' is already up" lab up "${up_flags[@]}"
check "... and leaves it running" in_ns node-1 curl -sf -m 2 http://192.168.200.2:8080/healthz
check "pod add on an unknown node fails, naming it" fails_saying "unknown node 'node-9'" lab pod add node-9 blue a
check "pod add with a bad namespace fails, naming it" fails_saying "namespace 'Blue!'" lab pod add node-1 'Blue!' a
check "pod del of an unknown pod fails, naming it" fails_saying "pod blue/nope: no such pod" lab pod del blue/nope
check "exec on an unknown target fails, naming it" fails_saying "unknown target 'node-7'" lab exec node-7 -- true

# ---------------------------------------------------------------- agents and pods (needs weft-agent)
if [ $agents = 1 ]; then
	for i in 1 2; do
		pid=$(status_json | jq -r ".nodes[$((i - 1))].agentPid")
		check "the agent of node-$i runs in $LAB-node-$i" test "$(ip netns identify "$pid")" = "$LAB-node-$i"
	done
	check "both nodes have distinct subnets in 10.128.0.0/14" jq_status '
		[.nodes[].subnet] | (map(select(. != null and test("^10\\.1(2[89]|3[01])\\."))) | length) == 2 and (unique | length) == 2'
	check "pod add node-1 blue a" lab pod add node-1 blue a
	check "the pod netns exists" test -e "/run/netns/$LAB-pod-blue-a"
	check "status lists the pod with an IP and a 32-hex container ID" jq_status --arg l "$LAB" '
		.pods | length == 1 and .[0].namespace == "blue" and .[0].name == "a" and .[0].node == "node-1"
		and .[0].netns == "\($l)-pod-blue-a" and (.[0].ip | test("^10\\.")) and (.[0].containerID | test("^[0-9a-f]{32}$"))'
	pod_ip=$(status_json | jq -r '.pods[0].ip')
	check "the pod has its IP on eth0" grep -q "$pod_ip/" <<<"$(lab exec blue/a -- ip -4 -o addr show dev eth0)"
	check "the controller knows namespace blue" grep -qw blue <<<"$(lab weftctl get namespaces)"
	check "a second pod add blue/a fails" fails_saying "pod blue/a already exists" lab pod add node-2 blue a
	check "pod del blue/a" lab pod del blue/a
	check "the pod netns is gone" test ! -e "/run/netns/$LAB-pod-blue-a"
	check "status has no pods" jq_status '.pods == []'
	check "pod add node-2 red b (left for down to remove)" lab pod add node-2 red b
else
	check "pod add on a lab without agents fails, saying why" fails_saying "--no-agents" lab pod add node-1 blue a
fi

# ---------------------------------------------------------------- an up that fails halfway, then down
fake=$(tmpdir)
printf '#!/bin/sh\necho "fake controller: cannot start" >&2\nexit 3\n' >"$fake/weft-controller"
chmod +x "$fake/weft-controller"
ln -s "$(cd "$WEFT_BIN" && pwd)/weftctl" "$fake/weftctl"
check "an up whose controller dies fails, pointing at its log" \
	fails_saying "/run/weft-lab/$BAD/controller.log" env WEFT_BIN="$fake" src/lab/weft-lab --lab "$BAD" up --nodes 1 --no-agents
check "... and left its namespaces for down" test -e "/run/netns/$BAD-node-1"
check "down of the half-built lab" src/lab/weft-lab --lab "$BAD" down
check "... removed its namespaces" test -z "$(ip netns list | awk '{print $1}' | grep -E "^$BAD-")"
check "... its bpffs and its directory" bash -c "! findmnt /run/weft-lab/$BAD/bpf >/dev/null && test ! -e /run/weft-lab/$BAD"
check "... and not the running lab" in_ns node-1 ping -c1 -W1 192.168.200.12

# ---------------------------------------------------------------- the root namespace, then down
check "root namespace unchanged while the lab is up" test "$(root_state)" = "$root_before"
pids=$(jq -r '.procs[].pid' "$STATE_DIR/state.json")
check "down" lab down
check "down removed every namespace of the lab" test -z "$(lab_netns)"
check "down unmounted the bpffs" bash -c "! grep -q ' $STATE_DIR/bpf ' /proc/mounts"
check "down removed $STATE_DIR" test ! -e "$STATE_DIR"
alive=""
for p in $pids; do [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat")" != Z ] && alive+=" $p"; done
check "down stopped the controller and agents ($(tr "\n" " " <<<"$pids"))" test -z "$alive"
check "down again is a no-op" lab down
check "status after down fails" fails_saying "is not up" lab status
check "root namespace unchanged after down" test "$(root_state)" = "$root_before"
finish
