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
#     :8080           10.128.0.0/14;   ip_forward=1     ip_forward=1
#                     VIPs 192.168.201.0/24 via .11 and .12, ECMP)
#                                          |
#                                      L-pod-blue-a, L-pod-web-w1 (labels, named ports) ...
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
VIP_NET=192.168.201.0/24
# vip_hops: the gateways of the outside netns' route to the VIP network, sorted, as JSON
vip_hops() {
	ip -n "$LAB-outside" -j route show "$VIP_NET" |
		jq -ce 'length == 1 and all(.[0] | (.nexthops // [.])[]; .dev == "eth0")' >/dev/null || { echo null; return; }
	ip -n "$LAB-outside" -j route show "$VIP_NET" | jq -c '[.[0] | (.nexthops // [.])[] | .gateway] | sort'
}
# api_code PATH: the controller's HTTP code for GET PATH (200, 404, ...)
api_code() {
	ip netns exec "$LAB-ctrl" curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$STATE_DIR/ctrl/pki/ca.crt" \
		-H "Authorization: Bearer $(cat "$STATE_DIR/ctrl/admin.token")" "https://192.168.200.2:8080$1"
}
pod_code() { api_code "/api/v1/namespaces/$1/pods/$2"; }	# pod_code NS NAME
pod_obj() { lab weftctl get pod "$2" -n "$1" -o json; }	# pod_obj NS NAME
# pod_reported NS NAME NODE: the agent's report is in the Pod (podIP = the lab's
# IP for it, nodeName) and the labels given at pod add are still there
pod_reported() {
	local ip; ip=$(pod_ip "$1/$2")
	[ -n "$ip" ] && pod_obj "$1" "$2" | jq -e --arg ip "$ip" --arg node "$3" \
		'.status.podIP == $ip and .spec.nodeName == $node and .metadata.labels.app == "web"' >/dev/null
}
# refused ARG-WORDS WANT: pod add node-1 bad b1 ARGS fails naming WANT and leaves nothing
refused() {
	local want=$1; shift
	fails_saying "$want" lab pod add node-1 bad b1 "$@" || return 1
	[ ! -e "/run/netns/$LAB-pod-bad-b1" ] || { echo "netns $LAB-pod-bad-b1 left behind"; return 1; }
	[ ! -e "$STATE_DIR/pods/bad.b1" ] || { echo "$STATE_DIR/pods/bad.b1 left behind"; return 1; }
	jq -e '.pods | all(.name != "b1")' "$STATE_DIR/state.json" >/dev/null || { echo "state.json still has bad/b1"; return 1; }
	[ "$(pod_code bad b1)" = 404 ] || { echo "the controller answers $(pod_code bad b1) for Pod bad/b1"; return 1; }
}

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
check "node-2 reaches the controller's /healthz over TLS, trusting the lab's CA" \
	in_ns node-2 curl -sf -m 2 --cacert "$STATE_DIR/ctrl/pki/ca.crt" https://192.168.200.2:8080/healthz
check "... and plain HTTP to it fails" bash -c "! ip netns exec $LAB-node-2 curl -sf -m 2 http://192.168.200.2:8080/healthz"
check "outside has no route to the pod network" bash -c "! ip netns exec $LAB-outside ip route get 10.128.0.5"
check "lab exec outside -- CMD runs in the outside netns" grep -q "192.168.200.254/24" <<<"$(lab exec outside -- ip -4 -o addr)"

# ---------------------------------------------------------------- state, controller, status
check "a private bpffs is mounted at $STATE_DIR/bpf" test "$(findmnt -n -o FSTYPE "$STATE_DIR/bpf")" = bpf
check "pin dirs for node-1 and node-2" test -d "$STATE_DIR/bpf/node-1" -a -d "$STATE_DIR/bpf/node-2"
ctrl_pid=$(jq -r .controllerPid "$STATE_DIR/state.json")
check "the controller runs in $LAB-ctrl" test "$(ip netns identify "$ctrl_pid")" = "$LAB-ctrl"
check "the admin token exists, mode 600" test "$(stat -c %a "$STATE_DIR/ctrl/admin.token")" = 600
check "status -o json: name, mode, controller" jq_status --arg l "$LAB" \
	'.name == $l and .mode == "flat" and .controller.url == "https://192.168.200.2:8080"
	 and .controller.tokenFile == "/run/weft-lab/\($l)/ctrl/admin.token" and .controller.netns == "\($l)-ctrl"
	 and .controller.caFile == "/run/weft-lab/\($l)/ctrl/pki/ca.crt"
	 and .controller.kubeconfig == "/run/weft-lab/\($l)/ctrl/admin.kubeconfig"
	 and .controller.local.kubeconfig == "/run/weft-lab/\($l)/kubeconfig"
	 and (.controller.local.url | test("^https://127\\.0\\.0\\.1:[0-9]+$"))'
check "the agents trust the lab's CA (--ca-file)" grep -q -- "--ca-file $STATE_DIR/ctrl/pki/ca.crt" \
	<<<"$(tr '\0' ' ' </proc/"$(jq -r '.nodes[0].agentPid' "$STATE_DIR/state.json")"/cmdline)"
agent_cmdline() { tr '\0' ' ' </proc/"$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .agentPid' "$STATE_DIR/state.json")"/cmdline; }
for n in node-1 node-2; do
	check "$n's agent holds its own credential ($n/node.token, mode 600), not the admin token" \
		bash -c "[ \"\$(stat -c %a '$STATE_DIR/$n/node.token')\" = 600 ] &&
			 grep -q -- '--token-file $STATE_DIR/$n/node.token ' <<<'$(agent_cmdline "$n")'"
done
check "the controller lists one credential per node" \
	test "$(lab weftctl node-credential list | awk 'NR > 1 { print $2 }' | sort | paste -sd' ')" = "node-1 node-2"
check "node-1's credential is refused a Secret (403)" \
	test "$(in_ns node-1 curl -s -o /dev/null -w '%{http_code}' --cacert "$STATE_DIR/ctrl/pki/ca.crt" \
		-H "Authorization: Bearer $(cat "$STATE_DIR/node-1/node.token")" https://192.168.200.2:8080/api/v1/secrets)" = 403
check "weft-lab kubeconfig prints the root namespace's kubeconfig" test "$(lab kubeconfig)" = "$STATE_DIR/kubeconfig"
check "... mode 600" test "$(stat -c %a "$STATE_DIR/kubeconfig")" = 600
check "KUBECONFIG=\$(weft-lab kubeconfig) weftctl get nodes works from the root namespace" \
	bash -c "KUBECONFIG=\$(src/lab/weft-lab --lab $LAB kubeconfig) '$WEFT_BIN/weftctl' get nodes | grep -q '^node-1 '"
if command -v kubectl >/dev/null; then
	check "... and kubectl get --raw /api/v1/nodes" \
		bash -c "KUBECONFIG=\$(src/lab/weft-lab --lab $LAB kubeconfig) kubectl get --raw /api/v1/nodes | jq -e '.items | length == 2'"
fi
check "status -o json: outside" jq_status --arg l "$LAB" '.outside == {netns: "\($l)-outside", ip: "192.168.200.254"}'
check "status -o json: vipNetwork $VIP_NET" jq_status --arg v "$VIP_NET" '.vipNetwork == $v'
check "plain status shows the VIP network" grep -qE "^vips +192\.168\.201\.0/24" <<<"$(lab status)"
check "outside routes $VIP_NET via eth0 with one next hop per node" \
	test "$(vip_hops)" = '["192.168.200.11","192.168.200.12"]'
check "outside hashes ECMP on L4 (fib_multipath_hash_policy=1)" \
	test "$(in_ns outside sysctl -n net.ipv4.fib_multipath_hash_policy)" = 1
check "outside picks a node IP for a VIP" grep -qE "via 192\.168\.200\.1[12] dev eth0" <<<"$(in_ns outside ip route get 192.168.201.7)"
for ns in ctrl node-1 node-2; do
	# (a node's agent routes it to its service device weft_svc, for the node's own clients)
	check "$ns has no route to $VIP_NET (only outside has; weft_svc's aside)" \
		bash -c "! ip -n $LAB-$ns route show | grep -v ' dev weft_svc ' | grep -q '^192\.168\.201\.'"
done
check "cluster.yaml lists vipNetworks [$VIP_NET]" grep -qx "vipNetworks: \[$VIP_NET\]" "$STATE_DIR/cluster.yaml"
check "the controller has vipNetworks [$VIP_NET]" jq -e --arg v "$VIP_NET" '.vipNetworks == [$v]' <<<"$(lab weftctl get clusternetworks default -o json)"
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
	(keys == ["controller","engines","lbVipNetwork","mode","name","nodes","outside","pods","vipNetwork"]) and
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
check "... and leaves it running" in_ns node-1 curl -sf -m 2 --cacert "$STATE_DIR/ctrl/pki/ca.crt" https://192.168.200.2:8080/healthz
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

	# ---- labels and named container ports on the Pod object, kept by the agent's report
	check "pod add with --label and --port" lab pod add node-1 web w1 --label app=web \
		--label=example.com/tier=front_1.a --label empty= --port http:8080/tcp --port=dns:53/UDP --port metrics:9090
	obj=$(pod_obj web w1)
	check "the Pod has exactly the labels given" \
		jq -e '.metadata.labels == {"app": "web", "example.com/tier": "front_1.a", "empty": ""}' <<<"$obj"
	check "the Pod has one container, named after the pod" jq -e '[.spec.containers[].name] == ["w1"]' <<<"$obj"
	check "its ports are exactly the ones given (protocol upper-case, TCP when left out)" jq -e '.spec.containers[0].ports ==
		[{name: "http", containerPort: 8080, protocol: "TCP"}, {name: "dns", containerPort: 53, protocol: "UDP"},
		 {name: "metrics", containerPort: 9090, protocol: "TCP"}]' <<<"$obj"
	check "the agent reported it (podIP, nodeName) and the labels survived" wait_for 10 pod_reported web w1 node-1
	check "... and the ports too" jq -e '.spec.containers[0].ports | map(.name) == ["http", "dns", "metrics"]' <<<"$(pod_obj web w1)"
	check "a pod whose name is no container name gets container 'main'" lab pod add node-2 web w.2 --port http:80
	check "... its Pod: container main, no labels" jq -e '.spec.containers == [{name: "main", ports: [{name: "http", containerPort: 80, protocol: "TCP"}]}]
		and (.metadata.labels // {}) == {}' <<<"$(pod_obj web w.2)"
	check "pod del web/w.2" lab pod del web/w.2
	check "... deleted its Pod object at once" test "$(pod_code web w.2)" = 404

	# bad --label / --port: refused, naming the argument, nothing made (no netns, record, Pod, Namespace)
	long=$(printf 'v%.0s' {1..64})
	check "--label without '=' is refused" refused "--label 'app'" --label app
	check "--label with an empty key is refused" refused "--label '=web'" --label =web
	check "--label with a space in the key is refused" refused "--label 'a b=x'" --label 'a b=x'
	check "--label with a bad prefix is refused" refused "--label 'Example.com/app=x'" --label Example.com/app=x
	check "--label with a value starting with '-' is refused" refused "--label 'app=-web'" --label app=-web
	check "--label with a 64-character value is refused" refused "--label 'app=$long'" --label "app=$long"
	check "--label given twice for one key is refused" refused "label key 'app' is given twice" --label app=a --label app=b
	check "--label without an argument is refused" refused "--label needs KEY=VALUE" --label
	check "--port without ':' is refused" refused "--port '8080/TCP'" --port 8080/TCP
	check "--port 0 is refused" refused "--port 'http:0/TCP'" --port http:0/TCP
	check "--port 65536 is refused" refused "--port 'http:65536/TCP'" --port http:65536/TCP
	check "--port with a leading zero is refused" refused "--port 'http:080'" --port http:080
	check "--port SCTP is refused" refused "--port 'http:80/SCTP'" --port http:80/SCTP
	check "--port with an upper-case name is refused" refused "--port 'HTTP:80/TCP'" --port HTTP:80/TCP
	check "--port with an all-digit name is refused" refused "--port '1234:80'" --port 1234:80
	check "--port with a 16-character name is refused" refused "--port 'toolongportname1:80'" --port toolongportname1:80
	check "--port with a name given twice is refused" refused "port name 'http' is given twice" --port http:80 --port http:81/UDP
	check "... and none of them created Namespace bad" test "$(api_code /api/v1/namespaces/bad)" = 404

	# the controller has a Pod of that name already: refused, the netns undone, that Pod untouched
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"taken","namespace":"web","labels":{"owner":"someone"}}}\n' >"$T_ROOT/taken.json"
	check "a Pod web/taken written by someone else" lab weftctl apply -f "$T_ROOT/taken.json"
	check "pod add --label of an existing Pod is refused, naming it" \
		fails_saying "a Pod web/taken already exists in the controller" lab pod add node-1 web taken --label app=web
	check "... its netns is removed" test ! -e "/run/netns/$LAB-pod-web-taken"
	check "... it is not a lab pod" jq -e '.pods | all(.name != "taken")' "$STATE_DIR/state.json"
	check "... and the Pod is as it was" jq -e '.metadata.labels == {owner: "someone"}' <<<"$(pod_obj web taken)"

	# a failed CNI ADD removes the Pod object it came with
	check "agent stop node-2" lab agent stop node-2
	check "pod add --label on node-2 without its agent fails" fails_saying "CNI ADD failed" lab pod add node-2 web w3 --label app=web
	check "... its netns is removed" test ! -e "/run/netns/$LAB-pod-web-w3"
	check "... and the Pod object it wrote" test "$(pod_code web w3)" = 404
	check "agent start node-2" lab agent start node-2

	# a reboot re-adds the pod: labels kept, the new IP reported; the VIP route stays
	check "pod add node-2 web w4 --label app=web --port http:80" lab pod add node-2 web w4 --label app=web --port http:80
	check "... reported" wait_for 10 pod_reported web w4 node-2
	check "node reboot node-2" lab node reboot node-2
	check "after the reboot the report has w4's IP and its labels" wait_for 15 pod_reported web w4 node-2
	check "... and its ports" jq -e '.spec.containers[0].ports == [{name: "http", containerPort: 80, protocol: "TCP"}]' <<<"$(pod_obj web w4)"
	check "after the reboot outside still routes $VIP_NET via both nodes" \
		test "$(vip_hops)" = '["192.168.200.11","192.168.200.12"]'

	check "pod del web/w1" lab pod del web/w1
	check "... deleted its Pod object" test "$(pod_code web w1)" = 404
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
# (polled: after node-2's reboot above its underlay address may answer
# from a new MAC, which node-1 learns within its neighbour probe time)
check "... and not the running lab" wait_for 10 in_ns node-1 ping -c1 -W1 192.168.200.12

# ---------------------------------------------------------------- the root namespace, then down
check "root namespace unchanged while the lab is up" test "$(root_state)" = "$root_before"
pids=$(jq -r '.procs[].pid' "$STATE_DIR/state.json")
local_port=$(jq -r '.localPort' "$STATE_DIR/state.json")
check "down" lab down
check "down removed every namespace of the lab" test -z "$(lab_netns)"
check "down unmounted the bpffs" bash -c "! grep -q ' $STATE_DIR/bpf ' /proc/mounts"
check "down removed $STATE_DIR" test ! -e "$STATE_DIR"
alive=""
for p in $pids; do [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat")" != Z ] && alive+=" $p"; done
check "down stopped the controller, agents and forwarders ($(tr "\n" " " <<<"$pids"))" test -z "$alive"
check "... nothing listens on the forwarder's port any more" bash -c "! ss -ltnH 'sport = :$local_port' | grep -q ."
check "down again is a no-op" lab down
check "status after down fails" fails_saying "is not up" lab status
check "root namespace unchanged after down" test "$(root_state)" = "$root_before"
finish
