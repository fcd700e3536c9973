#!/usr/bin/env bash
# services_scale.sh — the endpoints controller at scale, through one
# `weftctl apply -f` of a List: N Services with a selector in one namespace,
# 3 matching pods each, on the nodes their addresses belong to (N=1000
# here; SCALE_N=10000 for the figure in docs).  Checks that each Service got exactly one Endpoints write (no
# storms), that moving one pod between two Services recomputes those two
# and writes each once (the cost follows the change, not the N Services:
# counted, not timed — timings are bench/controller's), and that a
# restart's resync writes nothing.
#
#   weftctl apply -f list.json (Nodes, N Services + 3N Pods) ──► weft-controller ──► DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

N=${SCALE_N:-1000}
DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
metric() { api GET /metrics | sed '$d' | awk -v m="$1" '$1 == m { print $2 }'; }

# the pods' nodes: node-K has the K-th /23 of 10.128.0.0/14, 509 pod addresses
NODES=$(( (3 * N + 508) / 509 ))
python3 - "$N" "$NODES" >"$DIR/list.json" <<'EOF'
import json, sys
n, nodes = int(sys.argv[1]), int(sys.argv[2])
items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scale"}}]
for k in range(nodes):
    items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{k + 1}"},
                  "status": {"addresses": [{"type": "InternalIP", "address": f"192.168.{k // 250}.{k % 250 + 1}"}]}})
for i in range(n):
    items.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}", "namespace": "scale"},
                  "spec": {"selector": {"app": f"s{i}", "tier": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}})
for i in range(n):
    for k in range(3):
        j = 3 * i + k
        a = 0x0a800000 + (j // 509) * 512 + 2 + j % 509   # neither network, gateway nor broadcast
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"p{i}-{k}", "namespace": "scale", "labels": {"app": f"s{i}", "tier": "web"}},
                      "spec": {"nodeName": f"node-{j // 509 + 1}",
                               "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
                      "status": {"podIP": f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}"}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
EOF
t0=$(date +%s%N)
check "apply $N services and $((3 * N)) pods (on $NODES nodes) in one file" bash -c "'$WEFTCTL' apply -f '$DIR/list.json' >'$DIR/apply.out'"
t1=$(date +%s%N)
echo "  ($((N * 4 + 1 + NODES)) objects applied in $(( (t1 - t0) / 1000000 )) ms)"
check "every Service has its 3 pods" test "$(api GET /api/v1/namespaces/scale/endpoints | sed '$d' |
	jq '[.items[] | (.subsets[0].addresses | length)] | map(select(. == 3)) | length')" = "$N"
# services first, then pods: one create and three updates per Service
check "Endpoints writes: 4 per Service, no more" test "$(metric weft_endpoints_writes_total)" = $((4 * N))

# one pod changes Service: two Services recomputed, two Endpoints writes
body=$(api GET /api/v1/namespaces/scale/pods/p1-0 | sed '$d' | jq -c '.metadata.labels.app = "s2" | del(.metadata.resourceVersion)')
recomputed=$(metric weft_endpoints_recomputed_total)
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
	-H 'Content-Type: application/json' -d "$body" "$CTRL_URL/api/v1/namespaces/scale/pods/p1-0")
check "a pod's label change among $N services: 200" test "$code" = 200
check "... recomputes the two Services it concerns, not the $N" \
	test "$(( $(metric weft_endpoints_recomputed_total) - recomputed ))" = 2
check "... with exactly two Endpoints writes" test "$(metric weft_endpoints_writes_total)" = $((4 * N + 2))
check "... the pod left s1 and joined s2" test "$(api GET /api/v1/namespaces/scale/endpoints/s1 | sed '$d' | jq '.subsets[0].addresses | length') $(api GET /api/v1/namespaces/scale/endpoints/s2 | sed '$d' | jq '.subsets[0].addresses | length')" = "2 4"

check_stop "controller stops cleanly"
start_controller "$DIR" || fail restart
check "restart: the resync checks $N services and writes nothing" \
	grep -qE "endpoints controller: $N services with a selector checked in [0-9.]+ s \(0 written, 0 deleted, 0 failed\)" "$CTRL_LOG"
grep -oE 'checked in [0-9.]+ s' "$CTRL_LOG" | tail -n 1 | sed 's/^/  (resync /; s/$/)/'
check_stop "controller stops cleanly after the restart"
finish
