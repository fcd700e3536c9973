#!/usr/bin/env bash
# controller_api.sh — the REST API over real HTTP: authentication, errors
# and status codes, size limits, watch and resume, 410 after compaction,
# metrics, restart on the same data directory.
#
#   [curl / python] ──HTTPS──► weft-controller (127.0.0.1:random) ──► DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }
TOKEN=$(cat "$CTRL_TOKEN_FILE")

jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

node_json() { echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}"; }

# --- authentication
check "healthz needs no token" test "$(curl -s "$CTRL_URL/healthz")" = ok
check "readyz needs no token, and SQLite is ready at once" test "$(curl -s "$CTRL_URL/readyz")" = ok
check "token file is mode 0600" test "$(stat -c %a "$CTRL_TOKEN_FILE")" = 600
check "no token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' "$CTRL_URL/api/v1/nodes")" = 401
check "wrong token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "$CTRL_URL/api/v1/nodes")" = 401
out=$(curl -s -w '\n%{http_code}' -X POST -H "Authorization: Bearer x$TOKEN" -d "$(node_json n0 10.0.0.9)" "$CTRL_URL/api/v1/nodes")
check "write with a wrong token: 401" test "$(echo "$out" | code_of)" = 401
check "401 body is a Status" test "$(echo "$out" | body_of | jq_py 'd["reason"]')" = Unauthorized
check "write with a wrong token stored nothing" test "$(api GET /api/v1/nodes | body_of | jq_py 'len(d["items"])')" = 0

# --- create, get, list
out=$(api POST /api/v1/nodes -d "$(node_json node-1 192.168.10.1)")
check "create node: 201" test "$(echo "$out" | code_of)" = 201
check "node gets spec.podCIDR" test "$(echo "$out" | body_of | jq_py 'd["spec"]["podCIDR"]')" = 10.128.0.0/23
api POST /api/v1/nodes -d "$(node_json node-2 192.168.10.2)" >/dev/null
api POST /api/v1/nodes -d "$(node_json node-3 192.168.10.3)" >/dev/null
out=$(api GET /apis/network.openshift.io/v1/hostsubnets/node-3)
check "hostsubnet node-3 = 10.128.4.0/23, node ID 3" test "$(echo "$out" | body_of | jq_py 'd["subnet"]+" "+str(d["nodeID"])+" "+d["hostIP"]')" = "10.128.4.0/23 3 192.168.10.3"
out=$(api GET /api/v1/nodes)
check "list has resourceVersion and items" test "$(echo "$out" | body_of | jq_py 'd["kind"]+" "+str(len(d["items"]))+" "+str(int(d["metadata"]["resourceVersion"])>0)')" = "NodeList 3 True"
out=$(api GET /apis/network.openshift.io/v1/netnamespaces/default)
check "default namespace has VNID 0" test "$(echo "$out" | body_of | jq_py 'd["netid"]')" = 0

# --- errors: each gets a Status with the right code and stores nothing
before=$(api GET /api/v1/nodes | body_of | jq_py 'd["metadata"]["resourceVersion"]')
expect() { # expect NAME CODE REASON METHOD PATH [curl args]
	local name=$1 code=$2 reason=$3; shift 3
	local o; o=$(api "$@")
	if [ "$(echo "$o" | code_of)" = "$code" ] && [ "$(echo "$o" | body_of | jq_py 'd["reason"]' 2>/dev/null)" = "$reason" ]; then
		pass "$name"
	else
		fail "$name" "got: $(echo "$o" | tr '\n' ' ')"
	fi
}
expect "malformed JSON: 400" 400 BadRequest POST /api/v1/nodes -d '{"kind": "Node",'
expect "JSON that is not an object: 400" 400 BadRequest POST /api/v1/nodes -d '[1,2]'
expect "unknown kind in path: 404" 404 NotFound GET /api/v1/widgets
expect "unknown object: 404" 404 NotFound GET /api/v1/nodes/nosuch
expect "missing name: 422" 422 Invalid POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{},"status":{"addresses":[{"type":"InternalIP","address":"1.2.3.4"}]}}'
expect "duplicate node IP: 409" 409 Conflict POST /api/v1/nodes -d "$(node_json node-4 192.168.10.2)"
expect "existing name: 409" 409 AlreadyExists POST /api/v1/nodes -d "$(node_json node-1 192.168.10.1)"
expect "writing a HostSubnet: 405" 405 MethodNotAllowed POST /apis/network.openshift.io/v1/hostsubnets -d '{"apiVersion":"network.openshift.io/v1","kind":"HostSubnet","metadata":{"name":"x"},"host":"x","hostIP":"1.1.1.1","subnet":"10.128.0.0/23"}'
expect "invalid CIDR in the cluster network: 422" 422 Invalid PUT /apis/network.openshift.io/v1/clusternetworks/default -d '{"apiVersion":"network.openshift.io/v1","kind":"ClusterNetwork","metadata":{"name":"default"},"clusterNetworks":[{"cidr":"10.128.0.0/33","hostSubnetLength":9}],"serviceNetwork":"172.30.0.0/16"}'
expect "overlapping cluster networks: 422" 422 Invalid PUT /apis/network.openshift.io/v1/clusternetworks/default -d '{"apiVersion":"network.openshift.io/v1","kind":"ClusterNetwork","metadata":{"name":"default"},"clusterNetworks":[{"cidr":"10.128.0.0/14","hostSubnetLength":9},{"cidr":"10.130.0.0/16","hostSubnetLength":9}],"serviceNetwork":"172.30.0.0/16"}'
expect "hostSubnetLength that does not fit: 422" 422 Invalid PUT /apis/network.openshift.io/v1/clusternetworks/default -d '{"apiVersion":"network.openshift.io/v1","kind":"ClusterNetwork","metadata":{"name":"default"},"clusterNetworks":[{"cidr":"10.128.0.0/24","hostSubnetLength":9}],"serviceNetwork":"172.30.0.0/16"}'
expect "cluster network change orphaning subnets: 409" 409 Conflict PUT /apis/network.openshift.io/v1/clusternetworks/default -d '{"apiVersion":"network.openshift.io/v1","kind":"ClusterNetwork","metadata":{"name":"default"},"clusterNetworks":[{"cidr":"10.0.0.0/14","hostSubnetLength":9}],"serviceNetwork":"172.30.0.0/16"}'
expect "pod in a missing namespace: 404" 404 NotFound POST /api/v1/namespaces/nosuch/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}'
expect "namespace mismatch body/path: 400" 400 BadRequest POST /api/v1/namespaces/default/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"other"}}'
expect "PATCH with Content-Type application/json (no patch type): 415" 415 UnsupportedMediaType PATCH /api/v1/nodes/node-1 -d '{}'
expect "stale resourceVersion: 409" 409 Conflict PUT /api/v1/nodes/node-1 -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","resourceVersion":"1"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.10.1"}]}}'
api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"red"}}' >/dev/null
expect "cluster IP outside the service network: 422" 422 Invalid POST /api/v1/namespaces/red/services -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"s1"},"spec":{"clusterIP":"10.0.0.1","ports":[{"port":80}]}}'
expect "NodePort out of range: 422" 422 Invalid POST /api/v1/namespaces/red/services -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"s1"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":80}]}}'
after=$(api GET /api/v1/nodes | body_of | jq_py 'd["metadata"]["resourceVersion"]')
check "failed writes stored nothing (only the namespace was written)" test "$after" -eq $((before + 1))

# --- body limit: a 100 MB body is refused without being read
big=$dir/big.json
head -c $((100 * 1024 * 1024)) /dev/zero | tr '\0' ' ' > "$big"
t0=$(date +%s%N)
code=$(curl -s -o "$dir/413.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
	-H 'Content-Type: application/json' --data-binary @"$big" "$CTRL_URL/api/v1/nodes" || true)
t1=$(date +%s%N)
check "100 MB body (Content-Length): 413" test "$code" = 413
check "413 answered in under 5 s" test $(( (t1 - t0) / 1000000 )) -lt 5000
code=$(head -c $((100 * 1024 * 1024)) /dev/zero | tr '\0' ' ' | curl -s -o /dev/null -w '%{http_code}' -X POST \
	-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' \
	--data-binary @- "$CTRL_URL/api/v1/nodes" || true)
check "100 MB body (chunked): 413" test "$code" = 413
rm -f "$big"
check "the controller still answers after the big bodies" curl -sf "$CTRL_URL/healthz"

# --- DELETE with preconditions.resourceVersion (DeleteOptions)
api POST /api/v1/namespaces/default/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"cond"}}' >/dev/null
crv=$(api GET /api/v1/namespaces/default/pods/cond | body_of | jq -r .metadata.resourceVersion)
del_out=$(api DELETE /api/v1/namespaces/default/pods/cond -d "{\"preconditions\":{\"resourceVersion\":\"$((crv + 1000))\"}}")
check "DELETE with a stale resourceVersion precondition: 409 naming both revisions" \
	eval '[ "$(code_of <<<"$del_out")" = 409 ] && grep -q "is $crv, not $((crv + 1000))" <<<"$del_out"'
check "... and the pod is still there" eval '[ "$(api GET /api/v1/namespaces/default/pods/cond | code_of)" = 200 ]'
del_out=$(api DELETE /api/v1/namespaces/default/pods/cond -d '{"preconditions":{"resourceVersion":"x1"}}')
check "DELETE with a precondition that is no revision: 400" test "$(code_of <<<"$del_out")" = 400
del_out=$(api DELETE /api/v1/namespaces/default/pods/cond -d "{\"preconditions\":{\"resourceVersion\":\"$crv\"}}")
check "DELETE with the current resourceVersion: 200, gone" \
	eval '[ "$(code_of <<<"$del_out")" = 200 ] && [ "$(api GET /api/v1/namespaces/default/pods/cond | code_of)" = 404 ]'

# --- watch: events in order, resume from a revision
rv=$(api GET /api/v1/namespaces/default/pods | body_of | jq_py 'd["metadata"]["resourceVersion"]')
curl -sN -D "$dir/watch1.h" -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv" > "$dir/watch1" &
wpid=$!; T_PIDS+=("$wpid")
check "the watch stream is open (its 200 arrived)" watch_open "$dir/watch1.h"
for p in p1 p2 p3; do api POST /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$p\"}}" >/dev/null; done
api PUT /api/v1/namespaces/default/pods/p2 -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2","labels":{"a":"b"}}}' >/dev/null
api DELETE /api/v1/namespaces/default/pods/p3 >/dev/null
api POST /api/v1/namespaces/red/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"elsewhere"}}' >/dev/null
wait_for 5 test "$(grep -c . "$dir/watch1")" -ge 5
events=$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    if l.strip():
        e=json.loads(l); print(e["type"], e["object"]["metadata"]["name"])' "$dir/watch1" | tr '\n' ',')
check "watch sees ADDED x3, MODIFIED, DELETED in order, only its namespace" test "$events" = "ADDED p1,ADDED p2,ADDED p3,MODIFIED p2,DELETED p3,"
kill "$wpid" 2>/dev/null
mid=$(python3 -c '
import json,sys
ls=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(ls[2]["object"]["metadata"]["resourceVersion"])' "$dir/watch1")
curl -sN -m 2 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/namespaces/default/pods?watch=1&resourceVersion=$mid" > "$dir/watch2" || true
events=$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    if l.strip():
        e=json.loads(l); print(e["type"], e["object"]["metadata"]["name"])' "$dir/watch2" | tr '\n' ',')
check "watch resumed from a revision gets exactly what came after" test "$events" = "MODIFIED p2,DELETED p3,"
curl -sN -m 2 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/namespaces/default/pods?watch=1" > "$dir/watch3" || true
check "watch without a revision starts with the current objects" test "$(grep -c ADDED "$dir/watch3")" = 2
curl -sN -m 5 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=$rv&timeoutSeconds=1" > "$dir/watch4" || true
check "timeoutSeconds ends the watch; all namespaces are watched" test "$(grep -c . "$dir/watch4")" = 6

# --- a replace that changes nothing writes nothing
cur=$(api GET /api/v1/namespaces/default/pods/p2 | body_of)
rv1=$(echo "$cur" | jq_py 'd["metadata"]["resourceVersion"]')
srv=$(api GET /api/v1/pods | body_of | jq_py 'd["metadata"]["resourceVersion"]')
curl -sN -m 2 -D "$dir/watch5.h" -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=$srv" > "$dir/watch5" &
w5=$!; T_PIDS+=("$w5")
check "the second watch stream is open" watch_open "$dir/watch5.h"
out=$(api PUT /api/v1/namespaces/default/pods/p2 -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2","labels":{"a":"b"}}}')
check "no-op replace: 200 with the same resourceVersion" test "$(echo "$out" | code_of) $(echo "$out" | body_of | jq_py 'd["metadata"]["resourceVersion"]')" = "200 $rv1"
wait "$w5" 2>/dev/null
check "no-op replace: no watch event" test "$(grep -c . "$dir/watch5")" = 0
out=$(api PUT /api/v1/namespaces/default/pods/p2 -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2","labels":{"a":"c"}}}')
check "a real change gets a new resourceVersion" test "$(echo "$out" | body_of | jq_py 'd["metadata"]["resourceVersion"]')" != "$rv1"

# --- metrics
m=$(api GET /metrics | body_of)
check "metrics: objects by kind" grep -q 'weft_objects{kind="Node"} 3' <<<"$m"
check "metrics: allocations" grep -q 'weft_allocations_used{pool="hostsubnet"} 3' <<<"$m"
check "metrics: watchers" grep -q '^weft_watchers ' <<<"$m"
check "metrics: request latency histogram" grep -q 'weft_http_request_duration_seconds_count' <<<"$m"
check "metrics need the token" test "$(curl -s -o /dev/null -w '%{http_code}' "$CTRL_URL/metrics")" = 401

# --- stopping with idle watches whose clients left, and one still open
for i in 1 2 3; do curl -s -m 1 -o /dev/null -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=$rv" || true; done
curl -sN -D "$dir/watch6.h" -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/nodes?watch=1" > /dev/null &
T_PIDS+=("$!")
check "a watch is open while the controller stops" watch_open "$dir/watch6.h"

# --- restart on the same directory: same state, same token
check_stop "controller stops cleanly with watches open (no sanitizer report)"
start_controller "$dir" || fail restart
check "after restart the token is the same" test "$(cat "$CTRL_TOKEN_FILE")" = "$TOKEN"
out=$(api GET /apis/network.openshift.io/v1/hostsubnets/node-3)
check "after restart node-3 still has 10.128.4.0/23" test "$(echo "$out" | body_of | jq_py 'd["subnet"]')" = 10.128.4.0/23
check_stop "controller stops cleanly again"
check "fsck: the store is consistent" "$CONTROLLER" --data-dir "$dir" --fsck

# --- 410 after compaction
dir2=$(tmpdir)
start_controller "$dir2" --history 2 --compact-interval 1 || fail "start with short history"
for i in 1 2 3 4 5 6; do api POST /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"c$i\"}}" >/dev/null; done
gone() { [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=1")" = 410 ]; }
check "watch from a compacted revision: 410" wait_for 10 gone
out=$(curl -s -m 2 -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=1")
check "410 carries reason Expired" test "$(echo "$out" | jq_py 'd["reason"]')" = Expired
check_stop "controller with short history stops cleanly"

finish
