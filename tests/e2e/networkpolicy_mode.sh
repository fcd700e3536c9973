#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# networkpolicy_mode.sh — a 2-node lab in networkpolicy mode, where every
# NetNamespace has VNID 0 (docs/api.md, "Cluster modes and VNIDs"), so pods
# of different namespaces reach each other, measured with real traffic.
# (NetworkPolicy objects would restrict that; weft does not enforce them
# yet, and this test writes none.)
#
#                     L-underlay: bridge br0, 192.168.200.0/24
#     +------------+--------------+--------------------------+------------------+
#   L-ctrl      L-outside      L-node-1 (.11)             L-node-2 (.12)
#   controller                 |       |        |          |        |
#   /metrics                 red/r1  blue/b1  green/api   red/r2   blue/b2
#                            (peer.py on 7000 in every pod, answering "NS/NAME
#                             CLIENTIP"; blue's Service "to-green" has no
#                             selector: its hand-written Endpoints name green/api)
#
#   1. every NetNamespace (default, red, blue, green) reports netid 0, and
#      the controller counts no VNID allocated (/metrics)
#   2. different namespaces reach each other over TCP and UDP, both ways,
#      each server seeing the client's own address: red <-> blue on one node
#      (r1, b1) and across nodes (r1, b2; r2, b1), green <-> red and blue
#      across nodes; a same-namespace pair (r1, r2) as the control
#   3. the pod-network verbs are refused with a message naming the mode,
#      and change no VNID; a change of the mode to multitenant is refused
#      while the namespaces exist (each would need a VNID of its own)
#   4. blue's Service to-green, Endpoints at green/api: accepted, and
#      answers b1 (api's node) and b2 (across nodes) over TCP and UDP, api
#      seeing each client's own address
#
# On a controller that gives each namespace a VNID of its own in this mode
# (weft before networkpolicy mode meant VNID 0), 1, 2 (all but the control)
# and 4 fail: the data plane drops the traffic between namespaces.  Run it
# with WEFT_BIN=DIR to try other binaries.
#
# Lab t<pid>-np, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-np
L=$LAB		# the lab the helpers of tests/lib.sh work on
PORT=7000
PEER=$PWD/tests/tools/peer.py

need_lab

trap lab_cleanup EXIT

# ---------------------------------------------------------------- helpers
# serve POD: peer.py on PORT in POD, answering "POD CLIENTIP"
server_log() { echo "$T_ROOT/server-${1//\//-}.log"; }
serve() {
	ip netns exec "$(netns "$1")" python3 "$PEER" serve $PORT "$1" >>"$(server_log "$1")" 2>&1 &
	T_PIDS+=("$!")	# ip netns exec execs python3: the PID is the server's
}
listening() { ns "$1" ss -Hltn "sport = :$PORT" | grep -q .; }
server_up() {
	wait_for $SERVER_START_S listening "$1" && return 0
	echo "expected peer.py listening on :$PORT in $(netns "$1") within $SERVER_START_S s; its log: $(tail -n 3 "$(server_log "$1")")"
	return 1
}

declare -A IP
addresses() {
	while read -r t a; do IP[$t]=$a; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
}

# answers FROM PROTO IP PORT WANT: FROM asks IP:PORT over PROTO and the answer is WANT
answers() {
	local from=$1 proto=$2 ip=$3 port=$4 want=$5 got
	if ! got=$(ns "$from" python3 "$PEER" "$proto" "$ip" "$port" 2>&1); then
		echo "$from -> $ip:$port/$proto: expected the answer \"$want\"; seen: $got"
		return 1
	fi
	[ "$got" = "$want" ] && return 0
	echo "$from -> $ip:$port/$proto: expected \"$want\"; seen \"$got\""
	return 1
}
# reaches A B: A reaches B's server over TCP and UDP, which sees A's address
reaches() {
	local p
	for p in tcp udp; do answers "$1" $p "${IP[$2]}" $PORT "$2 ${IP[$1]}" || return 1; done
}
reach_both() { reaches "$1" "$2" && reaches "$2" "$1"; }
# answers_soon ARGS...: answers within 10 s (the agents program a new
# Service as its events arrive), else the last try's reason
answers_soon() { wait_for 10 answers "$@" && return 0; answers "$@"; }

netids() { lab weftctl get netnamespaces -o json | jq -r '.items[] | "\(.metadata.name)=\(.netid)"' | sort | paste -sd' ' -; }
all_netids_0() {
	local seen
	seen=$(netids)
	[ "$seen" = "blue=0 default=0 green=0 red=0" ] && return 0
	echo "expected blue=0 default=0 green=0 red=0; seen: $seen"
	return 1
}

metrics() {
	local url tok ca
	url=$(status_json | jq -r .controller.url) tok=$(status_json | jq -r .controller.tokenFile)
	ca=$(status_json | jq -r .controller.caFile)
	ns ctrl curl -sf --cacert "$ca" -H "Authorization: Bearer $(cat "$tok")" "$url/metrics"
}
no_vnid_allocated() {
	local line
	line=$(metrics | grep -F 'weft_allocations_used{pool="vnid"}')
	[ "$line" = 'weft_allocations_used{pool="vnid"} 0' ] && return 0
	echo "expected weft_allocations_used{pool=\"vnid\"} 0; seen: ${line:-no such metric}"
	return 1
}

# refused_naming_mode VERB ARGS...: weftctl pod-network fails, saying the
# verb works in multitenant mode and this cluster's mode is networkpolicy
refused_naming_mode() {
	local out
	if out=$(lab weftctl pod-network "$@" --timeout 0 2>&1); then echo "succeeded: $out"; return 1; fi
	grep -q "multitenant mode" <<<"$out" && grep -q "mode is networkpolicy" <<<"$out" && return 0
	echo "expected a message naming multitenant mode and this cluster's mode, networkpolicy; seen: $out"
	return 1
}

mode_change_refused() {
	local out
	lab weftctl get clusternetworks default -o json | jq '.mode = "multitenant" | del(.metadata.resourceVersion)' \
		>"$T_ROOT/cn.json" || return 1
	if out=$(lab weftctl apply -f "$T_ROOT/cn.json" 2>&1); then echo "accepted: $out"; return 1; fi
	grep -qF "mode: cannot change from networkpolicy to multitenant" <<<"$out" && return 0
	echo "expected \"mode: cannot change from networkpolicy to multitenant ...\"; seen: $out"
	return 1
}
mode_is() { lab weftctl get clusternetworks default -o json | jq -e --arg m "$1" '.mode == $m' >/dev/null; }

# ================================================================ the lab
PODS=(red/r1 blue/b1 green/api red/r2 blue/b2)
POD_NODES=(node-1 node-1 node-1 node-2 node-2)
must lab up --nodes 2 --mode networkpolicy
for i in "${!PODS[@]}"; do must lab pod add "${POD_NODES[$i]}" "${PODS[$i]%/*}" "${PODS[$i]#*/}"; done
addresses
echo "  lab $LAB: $(for i in "${!PODS[@]}"; do echo -n "${PODS[$i]}=${IP[${PODS[$i]}]} (${POD_NODES[$i]}) "; done)"
for p in "${PODS[@]}"; do serve "$p"; done
for p in "${PODS[@]}"; do must server_up "$p"; done
check "the controller runs in networkpolicy mode" mode_is networkpolicy

# ---------------------------------------------------------------- 1. VNIDs
check "every NetNamespace (default, red, blue, green) reports netid 0" all_netids_0
check "/metrics: no VNID allocated (weft_allocations_used{pool=\"vnid\"} 0)" no_vnid_allocated

# ---------------------------------------------------------------- 2. traffic
check "control: red r1 <-> red r2 (same namespace, across nodes), tcp+udp both ways" reach_both red/r1 red/r2
check "red r1 <-> blue b1 (same node), tcp+udp both ways" reach_both red/r1 blue/b1
check "red r1 <-> blue b2 (node-1 <-> node-2), tcp+udp both ways" reach_both red/r1 blue/b2
check "red r2 <-> blue b1 (node-2 <-> node-1), tcp+udp both ways" reach_both red/r2 blue/b1
check "green api <-> red r2 (across nodes), tcp+udp both ways" reach_both green/api red/r2
check "green api <-> blue b2 (across nodes), tcp+udp both ways" reach_both green/api blue/b2

# ---------------------------------------------------------------- 3. refusals
check "pod-network isolate-projects red: refused, naming the mode" refused_naming_mode isolate-projects red
check "pod-network join-projects --to=red blue: refused, naming the mode" refused_naming_mode join-projects --to=red blue
check "pod-network make-projects-global green: refused, naming the mode" refused_naming_mode make-projects-global green
check "... the refused verbs changed no VNID" all_netids_0
check "a change of the mode to multitenant is refused while red, blue and green exist" mode_change_refused
check "... the mode is still networkpolicy" mode_is networkpolicy

# ---------------------------------------------------------------- 4. a Service across namespaces
cat >"$T_ROOT/to-green.yaml" <<EOF
apiVersion: v1
kind: Service
metadata: {name: to-green, namespace: blue}
spec:
  ports:
  - {name: tcp, port: 80, targetPort: $PORT, protocol: TCP}
  - {name: udp, port: 80, targetPort: $PORT, protocol: UDP}
---
apiVersion: v1
kind: Endpoints
metadata: {name: to-green, namespace: blue}
subsets:
- addresses: [{ip: ${IP[green/api]}}]
  ports:
  - {name: tcp, port: $PORT, protocol: TCP}
  - {name: udp, port: $PORT, protocol: UDP}
EOF
check "blue's Service to-green with Endpoints at green/api ${IP[green/api]} is accepted" lab weftctl apply -f "$T_ROOT/to-green.yaml"
ep_ips() { lab weftctl get ep to-green -n blue -o json | jq -r '[.subsets[]?.addresses[]?.ip] | join(" ")'; }
ep_is() { local seen; seen=$(ep_ips); [ "$seen" = "$1" ] || { echo "expected the addresses {$1}; seen {$seen}"; return 1; }; }
check "... and stored: Endpoints blue/to-green lists ${IP[green/api]}" ep_is "${IP[green/api]}"
VIP=$(lab weftctl get svc to-green -n blue -o json | jq -r '.spec.clusterIP // empty')
check "... it has a cluster IP (${VIP:-none})" test -n "$VIP"
for c in blue/b1 blue/b2; do
	for p in tcp udp; do
		check "$c -> to-green ${VIP:-?}:80/$p: green/api answers, seeing ${IP[$c]}" \
			answers_soon "$c" $p "${VIP:-0.0.0.0}" 80 "green/api ${IP[$c]}"
	done
done

if [ "$T_FAILED" -gt 0 ]; then
	echo "  for the failures above: NetNamespaces $(netids)"
	lab weftctl drops 2>&1 | sed 's/^/    /'
fi
stop_started
check "down $LAB (and no sanitizer report in the controller's or agents' logs)" lab down
finish
