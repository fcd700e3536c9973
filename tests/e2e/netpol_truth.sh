#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# netpol_truth.sh — NetworkPolicy enforcement, proved by truth tables: for
# each scenario, every pod probes every other one and the matrix seen is
# compared with what the semantics allow, computed by an independent model
# (tests/tools/netpol_model.py, which has its own --self-test).  The
# scenarios are those of the upstream Kubernetes NetworkPolicy e2e suite,
# plus randomized policies from a fixed seed.
#
#                     L-underlay: bridge br0, 192.168.200.0/24
#        +------------+--------------------------+--------------------------+
#      L-ctrl                               L-node-1 (.11)             L-node-2 (.12)
#      controller, networkpolicy mode       x/a x/c y/b z/a z/c        x/b y/a y/c z/b
#
#   namespaces x, y, z labelled ns=<name>; pods a, b, c in each, labelled
#   pod=<name>, with the named ports serve-80-tcp, serve-80-udp,
#   serve-81-tcp and serve-81-udp, and peer.py answering "NS/NAME CLIENTIP"
#   on 80 and 81, TCP and UDP; a ClusterIP Service NAME per pod in its
#   namespace (selector pod=NAME; 80 and 81, TCP and UDP).
#
# Each scenario (tests/tools/netpol_truth.py has the list; --list prints
# it) writes its policies or label changes step by step; after each step
# the 9x9 matrix of 80/81 x TCP/UDP x (pod IP, ClusterIP) is probed from
# all pods at once until it equals the model's, for at most
# WEFT_NETPOL_DEADLINE seconds (default 3; the lab must converge within a
# second, and each pass prints how long agreement took), else the test
# prints the tables of the cells that differ.  Then the scenario's policies
# are deleted and everything must be allowed again.  One check per scenario.
#
# Without enforcement only the scenarios whose matrix is all allowed pass
# (allow-all ones, random ones that deny nothing).  Alone:
#
#     sudo tests/e2e/netpol_truth.sh                 (BUILD=build/release for a plain build)
#     WEFT_NETPOL_ONLY='ingress-*' sudo -E tests/e2e/netpol_truth.sh
#     WEFT_NETPOL_SEED=7 WEFT_NETPOL_RANDOM=20 sudo -E tests/e2e/netpol_truth.sh
#
# Lab t<pid>-npt, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-npt
L=$LAB		# the lab the helpers of tests/lib.sh work on
PEER=$PWD/tests/tools/peer.py
# the interpreter itself, not a wrapper script in PATH: 18 servers and 9
# probers per round start through it, and a version manager's shim can
# take seconds to start each one on a loaded machine
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
NAMESPACES=(x y z)
NAMES=(a b c)
PORTS=(serve-80-tcp:80/TCP serve-80-udp:80/UDP serve-81-tcp:81/TCP serve-81-udp:81/UDP)
T0=$(date +%s)

need_lab

trap lab_cleanup EXIT

# ---------------------------------------------------------------- helpers
server_log() { echo "$T_ROOT/server-${1//\//-}-$2.log"; }
# serve POD PORT: peer.py on PORT (TCP and UDP) in POD, answering "POD CLIENTIP"
serve() {
	ip netns exec "$(netns "$1")" "$PYTHON" "$PEER" serve "$2" "$1" >>"$(server_log "$1" "$2")" 2>&1 &
	T_PIDS+=("$!")	# ip netns exec execs python3: the PID is the server's
}
listening() { ns "$1" ss -Hltn "sport = :$2" | grep -q .; }
server_up() {
	wait_for $SERVER_START_S listening "$1" "$2" && return 0
	echo "expected peer.py listening on :$2 in $(netns "$1") within $SERVER_START_S s; its log: $(tail -n 3 "$(server_log "$1" "$2")")"
	return 1
}

namespaces_yaml() {
	local n
	for n in "${NAMESPACES[@]}"; do
		printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {ns: %s}}\n' "$n" "$n"
	done
}
# pod_service_yaml NS NAME: Service NAME in NS selecting pod=NAME, 80 and 81, TCP and UDP
pod_service_yaml() {
	printf -- '---\napiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: %s}\n' "$2" "$1"
	printf 'spec:\n  selector: {pod: %s}\n  ports:\n' "$2"
	printf '  - {name: %s-%s, port: %s, targetPort: %s, protocol: %s}\n' \
		tcp 80 80 80 TCP udp 80 80 80 UDP tcp 81 81 81 TCP udp 81 81 81 UDP
}

# world: the model's view of what this script made (labels and ports as
# written here; IPs from the lab, cluster IPs from the controller)
world() {
	local ports
	ports=$(printf '%s\n' "${PORTS[@]}" | jq -R 'capture("(?<name>[^:]+):(?<containerPort>[0-9]+)/(?<protocol>.+)")
		| .containerPort |= tonumber' | jq -s .)
	jq -n --argjson st "$(status_json)" --argjson svc "$(lab weftctl get svc -A -o json)" \
		--argjson ports "$ports" --arg nss "${NAMESPACES[*]}" '
		($svc.items | map({key: "\(.metadata.namespace)/\(.metadata.name)", value: .spec.clusterIP}) | from_entries) as $vip
		| {namespaces: ($nss | split(" ") | map({key: ., value: {ns: .}}) | from_entries),
		   pods: [$st.pods[] | {namespace, name, ip, netns, node, labels: {pod: .name}, ports: $ports,
		                        clusterIP: $vip["\(.namespace)/\(.name)"]}]}'
}
all_have_cluster_ips() { jq -e '[.pods[] | .clusterIP // empty] | length == 9' "$T_ROOT/world.json" >/dev/null; }

# ================================================================ the lab
check "the model's self-test (netpol_model.py --self-test)" python3 tests/tools/netpol_model.py --self-test
must lab up --nodes 2 --mode networkpolicy
namespaces_yaml >"$T_ROOT/namespaces.yaml"
must lab weftctl apply -f "$T_ROOT/namespaces.yaml"
# name_labelled NS: the controller gave NS the label kubernetes.io/metadata.name=NS
name_labelled() {
	local seen
	seen=$(lab weftctl get namespace "$1" -o json | jq -r '.metadata.labels["kubernetes.io/metadata.name"] // "none"')
	[ "$seen" = "$1" ] && return 0
	echo "expected the label kubernetes.io/metadata.name=$1 on namespace $1; seen: $seen"
	return 1
}
for n in "${NAMESPACES[@]}"; do
	check "namespace $n carries kubernetes.io/metadata.name=$n (policies select namespaces by it)" name_labelled "$n"
done
PODS=()
i=0
for n in "${NAMESPACES[@]}"; do
	for p in "${NAMES[@]}"; do
		args=(--label "pod=$p")
		for port in "${PORTS[@]}"; do args+=(--port "$port"); done
		must lab pod add "node-$((i % 2 + 1))" "$n" "$p" "${args[@]}"
		PODS+=("$n/$p")
		i=$((i + 1))
		pod_service_yaml "$n" "$p" >>"$T_ROOT/services.yaml"
	done
done
must lab weftctl apply -f "$T_ROOT/services.yaml"
for p in "${PODS[@]}"; do serve "$p" 80; serve "$p" 81; done
for p in "${PODS[@]}"; do must server_up "$p" 80; must server_up "$p" 81; done
world >"$T_ROOT/world.json"
must all_have_cluster_ips
echo "  lab $LAB: $(jq -r '[.pods[] | "\(.namespace)/\(.name)=\(.ip) (\(.node), \(.clusterIP))"] | join(" ")' "$T_ROOT/world.json")"
echo "  set up in $(( $(date +%s) - T0 )) s"

# ================================================================ the scenarios
T1=$(date +%s)
while IFS=$'\t' read -r verdict name what; do
	case $verdict in
	PASS) pass "$name: $what" ;;
	FAIL) fail "$name" "$what" ;;
	*) echo "$verdict${name:+	$name}${what:+	$what}" ;;
	esac
done < <("$PYTHON" tests/tools/netpol_truth.py --world "$T_ROOT/world.json" --tmp "$T_ROOT" \
	--weftctl "$WEFTCTL" --kubeconfig "$(lab kubeconfig)" --only "${WEFT_NETPOL_ONLY:-*}" 2>&1 \
	|| echo "FAIL	netpol_truth.py	exited $?")
echo "  scenarios took $(( $(date +%s) - T1 )) s"

stop_started
check "down $LAB (and no sanitizer report in the controller's or agents' logs)" lab down
finish
