#!/usr/bin/env bash
# bench/scale/hollow.sh — the control plane at the sizes of a large
# cluster, with hollow nodes (weft-hollow: the agent's own code on maps in
# memory, many agents in one process, each with its own credential and
# connections) against a real controller, one fresh controller per size:
#
#   weft-hollow (N agents) ──HTTPS, N × 8 streams──► weft-controller (SQLite) ──► TMP/N/weft.db
#
# For each N in BENCH_SCALE_NODES, with BENCH_SCALE_PODS pods a node and
# BENCH_SCALE_SERVICES services (3 hand-written endpoints each):
#   cold start   from the first agent's start to every node's maps holding
#                every node, service and endpoint and the pods it needs
#                (agents registered, lists read, pods leased and reported,
#                watches delivered)
#   pod add      one pod at a time on node i, until every node that needs
#                it has it: p50 / p99 over BENCH_SCALE_PROBES.  A node
#                asks for its own pods only, unless a NetworkPolicy names
#                pods as peers: BENCH_SCALE_PEERS=1 makes one (mode
#                networkpolicy), and then every node needs every pod
#   endpoint     one Endpoints PUT at a time (one address replaced, the
#                others kept), until every node applied the revision of
#                the EndpointSlice the controller mirrored from it (nodes
#                read slices): p50 / p99
#   controller   CPU seconds of the cold start, RSS after it
#   hollowCPU    the hollow process's CPU seconds in the cold start: the
#                agents' own work, which here shares the 2 CPUs with the
#                controller, so (ctl_cpu + hollowCPU) / CPUs is the floor
#                of a cold start on this machine
#   bytes        what the hollow process read per pod add (all nodes; TLS
#                bytes included), and per node
# With BENCH_SCALE_CHECK=1 every node's maps are compared with the
# cluster, entry by entry, after the cold start.
#
# Then one more run at the smallest size, with BENCH_SCALE_BIG_SERVICES
# Services of 1,000 endpoints each: an endpoint change there, and the bytes
# a node received for it against the size of the Service's whole
# Endpoints object, which is what every node was sent per change before
# EndpointSlices (measured in the same run: the object is read back).
#
# The reference in the same run is the smallest N: each per-event figure
# is also printed as a ratio to it (cost per event ÷ N's growth shows
# what scales with the cluster).  GOAL lines at N = 1000: cold start ≤ 60
# s, pod add p99 ≤ 1 s, endpoint change p99 ≤ 2 s, controller RSS ≤ 2 GiB.
#
#   BENCH_SCALE_NODES     sizes                        ("100 500 1000 2000")
#   BENCH_SCALE_PODS      pods a node                  (30)
#   BENCH_SCALE_SERVICES  services                     (1000)
#   BENCH_SCALE_PROBES    pod adds and endpoint changes timed at each size (50)
#   BENCH_SCALE_CHECK     compare every map with the cluster (1)
#   BENCH_SCALE_PEERS     1: a NetworkPolicy naming pods as peers (0)
#   BENCH_SCALE_BIG_SERVICES  services of 1,000 endpoints in the last run;
#                         0 skips it                   (10)
#   BENCH_SCALE_PER_PROCESS  hollow nodes a weft-hollow worker process holds
#                         (600: each agent costs 24 descriptors, and a
#                         process may have 20,000 here)
#   BENCH_SCALE_TIMEOUT   seconds for each wait        (600)
#   BENCH_SCALE_SAVE      a directory to keep each size's JSON report in (unset)
#   WEFT_BIN              the binaries                 (build/release/bin)
#
# Nothing leaves loopback.  The EXIT trap stops what it started, by PID,
# and removes its directory.
set -u
cd "$(dirname "$0")/../.." || exit 1
BENCH_NAME=scale-hollow
WEFT_BIN=${WEFT_BIN:-build/release/bin}
SIZES=${BENCH_SCALE_NODES:-100 500 1000 2000}
PODS=${BENCH_SCALE_PODS:-30}
SVCS=${BENCH_SCALE_SERVICES:-1000}
PROBES=${BENCH_SCALE_PROBES:-50}
CHECK=${BENCH_SCALE_CHECK:-1}
PEERS=${BENCH_SCALE_PEERS:-0}
PER_PROCESS=${BENCH_SCALE_PER_PROCESS:-600}
TIMEOUT=${BENCH_SCALE_TIMEOUT:-600}
PIDS=() NSS=() NEED=()
declare -A LAB_UP=()
GOALS=(scale_cold_start_1000 scale_pod_add_p99_1000 scale_endpoint_p99_1000 scale_controller_rss_1000)
TMP=$(mktemp -d /tmp/weft-bench-scale.XXXXXX)
RES=$TMP/results.tsv
source bench/lib.sh
# The hollow nodes' state directories (each node's IPAM lease files) on a
# tmpfs when there is one: a node's disk is its own, not the
# controller's.  On the controller's file system, 30,000 lease files made
# in a burst wait behind the controller's own flushes (one cold start at
# 1,000 nodes: the pods added in 10 s instead of 1 s, and 16 CPU-s more
# in the agents).  BENCH_SCALE_NODE_DISK=1 keeps them under TMP.
NODE_STATE=$TMP
if [ "${BENCH_SCALE_NODE_DISK:-0}" != 1 ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	NODE_STATE=$(mktemp -d /dev/shm/weft-bench-scale.XXXXXX)
fi
bench_cleanup_state() {
	local rc=$?
	[ "$NODE_STATE" = "$TMP" ] || rm -rf "$NODE_STATE"
	(exit "$rc")
	bench_cleanup
}
trap bench_cleanup_state EXIT INT TERM
bench_need_tools "scripts/deps.sh installs jq and curl" jq curl
for b in weft-controller weftctl weft-hollow; do
	[ -x "$WEFT_BIN/$b" ] || { say "missing $WEFT_BIN/$b (make)"; exit 1; }
done
# N agents keep N × 8 connections to the controller, each a descriptor on
# both sides; the hard limit is raised when we may (root)
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
MODE=multitenant PEERFLAG=()
[ "$PEERS" = 1 ] && MODE=networkpolicy PEERFLAG=(--pod-peers)
say "sizes: $SIZES nodes; $PODS pods a node; $SVCS services; $PROBES probes; mode $MODE$([ "$PEERS" = 1 ] && echo ", a policy naming pods as peers: every node needs every pod"); descriptors $(ulimit -n); the nodes' state in $NODE_STATE"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

run_size() { # N [NAME [WEFT-HOLLOW ARGS...]]: one fresh controller, one weft-hollow run
	# (the ARGS after the usual ones: the last of a flag counts); the report in TMP/NAME.json
	local n=$1 out=${2:-$1} port=6443 pid url hrc
	local dir=$TMP/$out
	shift; [ $# -gt 0 ] && shift
	local extra=("$@")
	mkdir -p "$dir"
	while ! port_free "$port"; do port=$((port + 1)); done
	url=https://127.0.0.1:$port
	# 8 connections an agent and some room, within what the controller's
	# descriptors allow (it keeps 128 for itself)
	local conns=$((n * 10 + 256)) fds
	fds=$(ulimit -n)
	[ "$fds" != unlimited ] && [ "$conns" -gt $((fds - 128)) ] && conns=$((fds - 128))
	"$WEFT_BIN/weft-controller" --data-dir "$dir" --listen "127.0.0.1:$port" \
		--max-connections "$conns" --max-connections-per-client "$conns" \
		>"$dir/controller.log" 2>&1 &
	pid=$!; PIDS+=("$pid")
	local t=0
	until curl -sf --cacert "$dir/pki/ca.crt" "$url/healthz" >/dev/null; do
		sleep 0.1; t=$((t + 1))
		if [ $t -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
			say "N=$n: the controller did not start: $(tail -n 3 "$dir/controller.log" | oneline)"; return 1
		fi
	done
	# /26 node subnets (62 pods each): 10.128.0.0/14 holds 4,096 nodes
	cat >"$dir/cn.yaml" <<-EOF2
	apiVersion: network.openshift.io/v1
	kind: ClusterNetwork
	metadata: {name: default}
	clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 6}]
	serviceNetwork: 172.30.0.0/16
	mode: $MODE
	EOF2
	if ! KUBECONFIG=$dir/admin.kubeconfig "$WEFT_BIN/weftctl" apply -f "$dir/cn.yaml" >"$dir/apply.log" 2>&1; then
		say "N=$n: ClusterNetwork refused: $(oneline <"$dir/apply.log")"; return 1
	fi
	local checkflag=() procs=$(((n + PER_PROCESS - 1) / PER_PROCESS))
	[ "$CHECK" = 1 ] && checkflag=(--check)
	# one process when every node tracks every probe pod (--pod-peers)
	[ "$PEERS" = 1 ] && procs=1
	"$WEFT_BIN/weft-hollow" --controller "$url" --token-file "$dir/admin.token" \
		--ca-file "$dir/pki/ca.crt" --nodes "$n" --processes "$procs" --pods-per-node "$PODS" --services "$SVCS" \
		--pod-adds "$PROBES" --endpoint-changes "$PROBES" "${checkflag[@]}" "${PEERFLAG[@]}" \
		--controller-pid "$pid" --timeout "$TIMEOUT" --state-dir "$NODE_STATE/$out-hollow" \
		--output "$TMP/$out.json" "${extra[@]}" 2>"$dir/hollow.log"
	hrc=$?
	kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	rm -rf "$NODE_STATE/$out-hollow" "$dir/weft.db"*
	[ "$hrc" -eq 0 ] || { say "N=$n: weft-hollow failed: $(jq -r '.error // "no report"' "$TMP/$out.json" 2>/dev/null | oneline)"; return 1; }
	return 0
}

fmt() { jq -r "$1" "$TMP/$2.json"; }
ref=
printf '%s: %6s %8s %9s %9s %9s %9s %8s %8s %10s %9s %9s %7s\n' "$BENCH_NAME" N "cold_s" "add_p50" "add_p99" \
	"ep_p50" "ep_p99" "ctl_cpu" "ctl_MiB" "B/add/node" "hollowMiB" "hollowCPU" "check"
for n in $SIZES; do
	if ! run_size "$n"; then record err "$n"; continue; fi
	[ -n "$ref" ] || ref=$n
	printf '%s: %6s %8.2f %9.1f %9.1f %9.1f %9.1f %8.1f %8.0f %10.0f %9.0f %9.1f %7s\n' "$BENCH_NAME" "$n" \
		"$(fmt .steps.converged_s "$n")" "$(fmt .pod_add.p50_ms "$n")" "$(fmt .pod_add.p99_ms "$n")" \
		"$(fmt .endpoint_change.p50_ms "$n")" "$(fmt .endpoint_change.p99_ms "$n")" \
		"$(fmt '.controller_converged.cpu_s - .controller_before.cpu_s' "$n")" \
		"$(fmt '.controller_converged.rss_bytes / 1048576' "$n")" \
		"$(fmt ".pod_add.bytes_received_per_add / $n" "$n")" "$(fmt '.hollow_rss_bytes / 1048576' "$n")" \
		"$(fmt '.hollow_cpu_cold_s' "$n")" \
		"$(fmt 'if .check then (if .check.nodes_wrong == 0 then "equal" else "DIFF" end) else "-" end' "$n")"
	record ok "$n"
done
CPUS=$(nproc)
for n in $SIZES; do
	[ -f "$TMP/$n.json" ] && jq -e .hollow_cpu_cold_s "$TMP/$n.json" >/dev/null 2>&1 || continue
	jq -r --arg n "$n" --argjson c "$CPUS" \
		'"\(env.BENCH_NAME // "scale-hollow"): N=\($n): the cold start used \((.controller_converged.cpu_s - .controller_before.cpu_s) | . * 10 | round / 10) CPU-s in the controller and \(.hollow_cpu_cold_s | . * 10 | round / 10) in the agents (\(.processes) weft-hollow processes): on \($c) CPUs no cold start here is shorter than \(((.controller_converged.cpu_s - .controller_before.cpu_s + .hollow_cpu_cold_s) / $c) | . * 10 | round / 10) s (measured \(.steps.converged_s | . * 10 | round / 10) s); the agents alone need \((.hollow_cpu_cold_s / $c) | . * 10 | round / 10) s"' \
		"$TMP/$n.json"
done
if [ -n "$ref" ]; then
	say "ratios to N=$ref (the same run): per-event cost as the cluster grows"
	for n in $SIZES; do
		[ -f "$TMP/$n.json" ] && jq -e .steps.converged_s "$TMP/$n.json" >/dev/null 2>&1 || continue
		jq -r --arg n "$n" --arg r "$ref" --slurpfile R "$TMP/$ref.json" \
			'"\(env.BENCH_NAME // "scale-hollow"): N=\($n) ÷ N=\($r): nodes \(($n|tonumber)/($r|tonumber))×, cold start \(.steps.converged_s / $R[0].steps.converged_s | . * 100 | round / 100)×, pod add p50 \(.pod_add.p50_ms / $R[0].pod_add.p50_ms | . * 100 | round / 100)×, endpoint p50 \(.endpoint_change.p50_ms / $R[0].endpoint_change.p50_ms | . * 100 | round / 100)×, bytes per add \(.pod_add.bytes_received_per_add / $R[0].pod_add.bytes_received_per_add | . * 100 | round / 100)×"' \
			"$TMP/$n.json"
	done
fi
BIG=${BENCH_SCALE_BIG_SERVICES:-10}
if [ -n "$ref" ] && [ "$BIG" -gt 0 ]; then
	say "N=$ref, $BIG services of 1,000 endpoints (EndpointSlices of 100): one endpoint changed at a time"
	if run_size "$ref" big --services "$BIG" --endpoints-per-service 1000 --pod-adds 0 --check; then
		jq -r --arg n "$ref" '"\(env.BENCH_NAME // "scale-hollow"): N=\($n), 1,000 endpoints a service: endpoint change p50 \(.endpoint_change.p50_ms | . * 10 | round / 10) ms, p99 \(.endpoint_change.p99_ms | . * 10 | round / 10) ms; a node received \(.endpoint_change.bytes_received_per_change / ($n | tonumber) | round) bytes per change, the Service'"'"'s Endpoints object is \(.endpoint_change.endpoints_object_bytes) bytes (sent whole to every node per change when nodes read Endpoints): \(.endpoint_change.bytes_received_per_change / ($n | tonumber) / .endpoint_change.endpoints_object_bytes | . * 100 | round / 100)×; check \(if .check.nodes_wrong == 0 then "equal" else "DIFF" end)"' "$TMP/big.json"
		record ok big
	else
		record err big
	fi
fi
goal() { # NAME JQ-VALUE LIMIT UNIT
	if [ -f "$TMP/1000.json" ] && jq -e .steps.converged_s "$TMP/1000.json" >/dev/null 2>&1; then
		local v; v=$(jq -r "$2" "$TMP/1000.json")
		echo "GOAL $1: $v $4 (goal ≤ $3) $(awk -v v="$v" -v l="$3" 'BEGIN { print (v <= l) ? "PASS" : "FAIL" }')"
	else
		echo "GOAL $1: SKIP (N=1000 not run or failed)"
	fi
}
goal scale_cold_start_1000 '.steps.converged_s | . * 100 | round / 100' 60 s
goal scale_pod_add_p99_1000 '.pod_add.p99_ms | round' 1000 ms
goal scale_endpoint_p99_1000 '.endpoint_change.p99_ms | round' 2000 ms
goal scale_controller_rss_1000 '.controller_converged.rss_bytes / 1048576 | round' 2048 MiB
if [ -n "${BENCH_SCALE_SAVE:-}" ]; then mkdir -p "$BENCH_SCALE_SAVE" && cp "$TMP"/*.json "$BENCH_SCALE_SAVE"/; fi
grep -q '^err' "$RES" 2>/dev/null && exit 1
exit 0
