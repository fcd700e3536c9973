#!/usr/bin/env bash
# hollow.sh — hollow nodes against a real controller: weft-hollow runs 50
# agents in one process (the agent's own code, maps in memory, each with
# its own node credential), adds their pods, and compares every node's
# maps with what the controller lists, entry by entry: weft_nodes and
# weft_node_ips (from the Nodes; the agents read HostSubnets), weft_ipcache
# (node IP and VNID of the pods the node needs), weft_endpoints (the
# node's own pods), and every service's frontend and backends.  Then
# one pod add and one Endpoints change at a time, each until every node
# that needs it has it.  Each node asks for its own pods only: the
# controller sends it no other.  A second, smaller fleet has a
# NetworkPolicy naming pods as peers (--pod-peers): every node then asks
# for, and holds, every pod.  The checker itself is shown to catch a
# wrong map (--tamper).  A last fleet reaches the controller through a
# proxy that looks like an older controller (no batched create).
#
#   weft-hollow (50 agents: 400 watch streams, 500 pods) ──HTTPS──► weft-controller ──► DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

HOLLOW=${HOLLOW:-$BUILD/bin/weft-hollow}
N=${HOLLOW_N:-50}
PODS=${HOLLOW_PODS:-10}
SVCS=${HOLLOW_SERVICES:-100}
dir=$(tmpdir)
# every agent keeps one connection a watched kind and one for its reports
start_controller "$dir" --max-connections-per-client $((N * 12 + 64)) || { fail "controller starts"; finish; exit 1; }

hollow() { # hollow REPORT ARGS...: weft-hollow on this controller; its exit code
	local report=$1; shift
	"$HOLLOW" --controller "$CTRL_URL" --token-file "$CTRL_TOKEN_FILE" --ca-file "$CTRL_CA" \
		--state-dir "$dir/hollow" --controller-pid "$CTRL_PID" --timeout 120 \
		--output "$report" "$@" 2>>"${HOLLOW_LOG:-$dir/hollow.log}"
}
jqr() { jq -e "$2" "$1" >/dev/null; }

hollow "$dir/run.json" --nodes "$N" --pods-per-node "$PODS" --services "$SVCS" --check \
	--pod-adds 10 --endpoint-changes 10
rc=$?
check "weft-hollow: $N nodes, $PODS pods each, $SVCS services: exit 0 ($(jq -r '.error // "no error"' "$dir/run.json"))" test "$rc" -eq 0
check "every node ready, its pods added, and converged" jqr "$dir/run.json" '.steps.converged_s > 0'
check "the maps of all $N nodes equal the cluster ($(jq -r '.check.entries_checked' "$dir/run.json") entries compared)" \
	jqr "$dir/run.json" ".check.nodes_checked == $N and .check.nodes_wrong == 0 and .check.entries_checked > $((N * PODS))"
check "10 pod adds, each in its node's maps and its record back (p99 $(jq -r '.pod_add.p99_ms' "$dir/run.json") ms)" \
	jqr "$dir/run.json" '.pod_add.timed == 10 and .pod_add.timed_out == 0'
check "10 Endpoints changes, each applied by every node (p99 $(jq -r '.endpoint_change.p99_ms' "$dir/run.json") ms)" \
	jqr "$dir/run.json" '.endpoint_change.timed == 10 and .endpoint_change.timed_out == 0'
check "the controller's CPU and RSS were sampled" jqr "$dir/run.json" '.controller_converged.rss_bytes > 0'

# what the controller holds: N Nodes, N*PODS + 10 Pods with the hollow nodes' addresses
nodes=$(api GET /api/v1/nodes | body_of | jq '[.items[] | select(.metadata.name | startswith("hollow-"))] | length')
check "the controller has $N hollow Nodes ($nodes)" test "$nodes" -eq "$N"
pods=$(api GET /api/v1/pods | body_of | jq '[.items[] | select(.status.podIP != null and (.spec.nodeName | startswith("hollow-")))] | length')
check "the controller has $((N * PODS + 10)) hollow Pods with addresses ($pods)" test "$pods" -eq $((N * PODS + 10))
check "no agent logged an error" bash -c "! grep -q ' error: ' '$dir/hollow.log'"
metric() { api GET /metrics | body_of | awk -v m="$1" '$1 == m {print $2}'; }
created=$(metric 'weft_apply_items_total{result="created"}')
check "the nodes' new records came a round's worth a request (batched creates: ${created:-0} records)" \
	test "${created:-0}" -gt 0
check "no NetworkPolicy: no PodPeerSlice written ($(metric weft_podpeerslice_writes_total))" \
	test "$(metric weft_podpeerslice_writes_total)" = 0

# the checker catches a wrong map: one ipcache entry of one node removed
hollow "$dir/tamper.json" --nodes 3 --pods-per-node 2 --prefix tamper- --first-node-ip 100.65.0.1 --check --tamper
rc=$?
check "a node whose ipcache lost an entry fails the check (exit $rc)" test "$rc" -eq 1
check "... and the report names it ($(jq -r '.check.first_difference' "$dir/tamper.json" | cut -c1-90))" \
	jqr "$dir/tamper.json" '.check.nodes_wrong == 1 and (.check.first_difference | test("weft_ipcache"))'

# a NetworkPolicy naming pods as peers: every node asks for every pod of
# the cluster (the 510 + 6 above, whose Nodes stay, and its own), holds
# them, and a pod add reaches every one of them
PN=20 PP=5
hollow "$dir/peers.json" --nodes $PN --pods-per-node $PP --prefix peers- --first-node-ip 100.66.0.1 \
	--pod-peers --check --pod-adds 5
rc=$?
check "--pod-peers: $PN nodes converged and checked (exit $rc: $(jq -r '.error // "no error"' "$dir/peers.json"))" test "$rc" -eq 0
check "--pod-peers: every node holds every pod ($(jq -r '.check.entries_checked' "$dir/peers.json") entries compared)" \
	jqr "$dir/peers.json" ".check.nodes_wrong == 0 and .check.entries_checked > $((PN * (N * PODS + 10)))"
check "--pod-peers: 5 pod adds, each in every node's ipcache (p99 $(jq -r '.pod_add.p99_ms' "$dir/peers.json") ms)" \
	jqr "$dir/peers.json" '.pod_add.timed == 5 and .pod_add.timed_out == 0'

# the agents in two worker processes (--processes: how weft-hollow goes
# past one process's descriptors): the same checks, added up by the
# runner.  Their lists come 4 objects a page (--list-page-size): every
# kind of more than 4 in pages, whose union must be the whole list
HOLLOW_LOG=$dir/crew.log hollow "$dir/crew.json" --nodes 10 --processes 2 --pods-per-node 3 --services 10 --prefix crew- --first-node-ip 100.67.0.1 \
	--check --pod-adds 4 --endpoint-changes 4 --list-page-size 4 --verbose
rc=$?
check "--processes 2: 10 nodes converged, checked and probed (exit $rc: $(jq -r '.error // "no error"' "$dir/crew.json"))" \
	jqr "$dir/crew.json" '.processes == 2 and .check.nodes_checked == 10 and .check.nodes_wrong == 0 and .pod_add.timed == 4 and .pod_add.timed_out == 0 and .endpoint_change.timed == 4 and .endpoint_change.timed_out == 0'
# every crew node lists the services (the first fleet's and its own)
# and the HostSubnets (every fleet's nodes so far) in pages
cp "$dir/crew.log" /tmp/crew.log; paged=$(grep -cE 'list services: [0-9]+ at revision [0-9]+ \(([2-9]|[1-9][0-9]+) pages\)' "$dir/crew.log")
check "--list-page-size 4: each of the 10 nodes read its services in pages ($paged lists)" test "$paged" -ge 10
paged=$(grep -cE 'list hostsubnets: [0-9]+ at revision [0-9]+ \(([2-9]|[1-9][0-9]+) pages\)' "$dir/crew.log")
check "... and its HostSubnets ($paged lists)" test "$paged" -ge 10
check "... with no error" bash -c "! grep -q ' error: ' '$dir/crew.log'"
hollow "$dir/crew-tamper.json" --nodes 4 --processes 2 --pods-per-node 2 --prefix crewt- --first-node-ip 100.68.0.1 --check --tamper
rc=$?
cp "$dir/crew-tamper.json" /tmp/crewt.json; check "--processes 2 --tamper: the first worker's first node fails the check (exit $rc)" \
	jqr "$dir/crew-tamper.json" '.check.nodes_checked == 4 and .check.nodes_wrong == 1 and (.check.first_difference | test("crewt-0001: weft_ipcache"))'

# a controller older than the batched create (tests/tools/old_server_proxy.py:
# 404 for /weft/v1/apply, everything else passed on, watches streamed):
# a node asks for a batch once, then reports its records one by one
ON=3 OP=10
pport=$(free_port)
python3 tests/tools/old_server_proxy.py "$pport" "$CTRL_URL" "$dir/proxy.log" 2>>"$dir/proxy.err" &
T_PIDS+=("$!")
check "the old-server proxy answers" wait_for 20 curl -sf "http://127.0.0.1:$pport/healthz"
"$HOLLOW" --controller "http://127.0.0.1:$pport" --token-file "$CTRL_TOKEN_FILE" --state-dir "$dir/hollow" \
	--timeout 120 --output "$dir/old.json" --nodes $ON --pods-per-node $OP --prefix old- \
	--first-node-ip 100.69.0.1 --check 2>>"$dir/hollow.log"
rc=$?
check "through an older controller: $ON nodes converged and checked (exit $rc: $(jq -r '.error // "no error"' "$dir/old.json"))" \
	jqr "$dir/old.json" ".check.nodes_checked == $ON and .check.nodes_wrong == 0"
batches=$(grep -c '^POST /weft/v1/apply?mode=create$' "$dir/proxy.log")
posts=$(grep -cE '^POST /api/v1/namespaces/[^/]+/pods$' "$dir/proxy.log")
check "... the batched create was asked for, and by each node once at most ($batches requests, 404)" \
	test "$batches" -ge 1 -a "$batches" -le $ON
check "... every record came one by one instead ($posts POSTs of a Pod for $((ON * OP)) pods)" test "$posts" -ge $((ON * OP))
old_pods=$(api GET /api/v1/pods | body_of | jq '[.items[] | select(.status.podIP != null and (.spec.nodeName | startswith("old-")))] | length')
check "... and the controller has their $((ON * OP)) Pods with addresses ($old_pods)" test "$old_pods" -eq $((ON * OP))
check "... no agent logged an error" bash -c "! grep -q ' error: ' '$dir/hollow.log'"

check "no sanitizer report from 90 agents started and stopped in one process and two workers" \
	bash -c "! grep -q 'Sanitizer' '$dir/hollow.log'"
check_stop "controller stops cleanly"
finish
