#!/usr/bin/env bash
# apply_batch.sh — batched apply: POST /weft/v1/apply of a v1 List, and
# weftctl apply -f sending its documents that way.
#
#   weftctl apply -f ──HTTPS──► weft-controller ──► DIR/weft.db
#   curl (admin, node-1's credential) ──┘    ▲ kill -9 right after an answer
#   weftctl ──HTTP──► old_server_proxy.py ──┘ (404 for /weft/v1/apply)
#
# 1. 2,100 mixed objects (Services, Endpoints, Secrets, NetworkPolicies,
#    Pods in two namespaces) in one apply: a line each, created, in a few
#    requests; again: all unchanged; some changed: those configured.
# 2. A bad document in the middle: the others applied, the error names it
#    (FILE doc N: KIND/NS/NAME: message), exit 1.
# 3. The request itself: not a List, malformed JSON, too many items, not
#    POST, an unknown kind or a nameless item (that item's error only);
#    ?mode=create: an item whose object exists is refused (409), kept.
# 4. A node credential: each item authorized as its own request would be
#    (403 for that item only), and each spends the node's write budget.
# 5. The lock is let go between groups: GETs during a large batch answer
#    promptly.
# 6. An older server (404 for the batch path): the same output, document
#    by document.
# 7. Durability: SIGKILL right after a batch answered, restart: every item
#    is there, and fsck is clean.
# 8. The same applies on etcd (each item's write a transaction of etcd's).
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
# a small write budget for node credentials, spent in section 4 only
start_controller "$dir" --node-write-rate 0.001 --node-write-burst 20 || { fail start; finish; exit 1; }
ADMIN=$(cat "$CTRL_TOKEN_FILE")
W() { "$WEFTCTL" "$@"; }

# mixed NS N [CHANGED]: a v1 List (JSON) of a Namespace and N objects in it,
# in turn a Service, its Endpoints (an address outside the cluster
# network), a Secret, a NetworkPolicy and a Pod; with CHANGED, every
# CHANGED-th object gets a label more.
mixed() {
	python3 - "$@" <<'PY'
import json, sys
ns, n = sys.argv[1], int(sys.argv[2])
every = int(sys.argv[3]) if len(sys.argv) > 3 else 0
items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
for i in range(n):
    md = {"name": "o-%05d" % (i - 1 if i % 5 == 1 else i), "namespace": ns, "labels": {"app": "a"}}
    if every and i % every == 0:
        md["labels"]["changed"] = "yes"
    k = i % 5
    if k == 0:
        o = {"apiVersion": "v1", "kind": "Service", "metadata": md,
             "spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
    elif k == 1:
        o = {"apiVersion": "v1", "kind": "Endpoints", "metadata": md,
             "subsets": [{"addresses": [{"ip": "192.168.%d.%d" % (i // 250, i % 250 + 1)}],
                          "ports": [{"port": 8080, "protocol": "TCP"}]}]}
    elif k == 2:
        o = {"apiVersion": "v1", "kind": "Secret", "metadata": md, "type": "Opaque", "data": {"k": "dmFs"}}
    elif k == 3:
        o = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": md,
             "spec": {"podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Ingress"]}}
    else:
        o = {"apiVersion": "v1", "kind": "Pod", "metadata": md,
             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    items.append(o)
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
}
# results FILE: "N created, N configured, ..." of weftctl apply's output
results() { awk '{print $2}' "$1" | sort | uniq -c | awk '{printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2}'; }
# metric NAME{LABELS}: its value now
metric() { api GET /metrics | body_of | grep -F "$1 " | awk '{print $2}'; }
# batch BODY-FILE [TOKEN]: POST it to /weft/v1/apply; body, then code
batch() {
	curl -s -X POST -H @- -H 'Content-Type: application/json' -w '\n%{http_code}\n' \
		--data-binary "@$1" "$CTRL_URL/weft/v1/apply" <<<"Authorization: Bearer ${2:-$ADMIN}"
}
# item_codes: the items' codes of a batch's answer (stdin), space-separated
item_codes() { body_of | jq -r '[.items[].code] | map(tostring) | join(" ")'; }
# count KIND NS: objects of KIND in NS
count() { W get "$1" -n "$2" -o json | jq '.items | length'; }

# ------------------------------------------------ 1. 2,100 objects in one apply
mixed ab-1 2100 >"$dir/m.json"
req0=$(metric 'weft_http_requests_total{code="2xx"}')
W apply -f "$dir/m.json" >"$dir/out" 2>"$dir/err"; rc=$?
req1=$(metric 'weft_http_requests_total{code="2xx"}')
check "apply of 2,101 objects exits 0, nothing on stderr" test "$rc:$(cat "$dir/err")" = "0:"
check "a line per object, in order: 2101 created ($(results "$dir/out"))" test "$(results "$dir/out")" = "2101 created"
check "the lines name the objects in the manifest's order" \
	test "$(sed -n '1p;3p;2101p' "$dir/out" | tr '\n' ' ')" = "namespace/ab-1 created endpoints/ab-1/o-00000 created pod/ab-1/o-02099 created "
check "every object is stored (420 Services, 420 Secrets, 420 Pods)" \
	test "$(count services ab-1) $(count secrets ab-1) $(count pods ab-1)" = "420 420 420"
check "in a few requests: $((req1 - req0)) answered (5 batches of at most 500, and this test's own)" \
	test $((req1 - req0)) -le 8
check "/metrics counts the batches' items" test "$(metric 'weft_apply_items_total{result="created"}')" = 2101
W apply -f "$dir/m.json" >"$dir/out" 2>&1
check "applied again: 2101 unchanged ($(results "$dir/out"))" test "$(results "$dir/out")" = "2101 unchanged"
mixed ab-1 2100 50 >"$dir/m2.json"
W apply -f "$dir/m2.json" >"$dir/out" 2>&1
check "every 50th object changed: 42 configured, the rest unchanged ($(results "$dir/out"))" \
	test "$(results "$dir/out")" = "42 configured, 2059 unchanged"
check "... and the first changed one is the one said configured" grep -qx 'service/ab-1/o-00000 configured' "$dir/out"

# --------------------------------------------------- 2. a bad document in the middle
{
	service_yaml ab-1 mid-a x; echo ---
	service_yaml nosuch mid-b x; echo ---
	service_yaml ab-1 mid-c x
} >"$dir/bad.yaml"
W apply -f "$dir/bad.yaml" >"$dir/out" 2>"$dir/err"; rc=$?
check "a document the server refuses: exit 1" test "$rc" = 1
check "the others are applied" test "$(tr '\n' ' ' <"$dir/out")" = "service/ab-1/mid-a created service/ab-1/mid-c created "
check "the error names the file, the document and the object: $(cat "$dir/err")" \
	grep -qx "$dir/bad.yaml doc 2: service/nosuch/mid-b: namespaces \"nosuch\" not found" "$dir/err"

# ------------------------------------------------------------ 3. the request itself
printf '{"apiVersion":"v1","kind":"Service","metadata":{"name":"x","namespace":"ab-1"}}' >"$dir/notlist.json"
check "a body that is not a List: 400 naming what is wanted" \
	eval 'batch "$dir/notlist.json" | body_of | jq -e ".code == 400 and (.message | contains(\"must be a v1 List\"))" >/dev/null'
printf '{"apiVersion":"v1","kind":"List","items":[' >"$dir/broken.json"
check "malformed JSON: 400" test "$(batch "$dir/broken.json" | code_of)" = 400
printf '[1,2]' >"$dir/array.json"
check "a JSON array: 400" test "$(batch "$dir/array.json" | code_of)" = 400
python3 -c 'import json; print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "many-%d" % i, "namespace": "ab-1"}} for i in range(1001)]}))' >"$dir/many.json"
check "1001 items: 413 naming the limit of 1000, nothing stored" \
	eval 'batch "$dir/many.json" | body_of | jq -e ".code == 413 and (.message | contains(\"more than 1000\"))" >/dev/null &&
		! W get secret many-0 -n ab-1 >/dev/null 2>&1'
check "GET /weft/v1/apply: 405" test "$(api GET /weft/v1/apply | code_of)" = 405
check "?dryRun=All: 400 (not a dry run that writes)" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
		--data-binary "@$dir/m.json" "$CTRL_URL/weft/v1/apply?dryRun=All")" = 400
cat >"$dir/odd.json" <<'EOF'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"odd-1","namespace":"ab-1"}},
 {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ab-1"}},
 {"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"ab-1"}},
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"no-ns"}},
 "text",
 {"apiVersion":"apps/v1","kind":"Secret","metadata":{"name":"odd-2","namespace":"ab-1"}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"odd-3","namespace":"ab-1"},"spec":{"ports":[{"port":0}]}},
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"odd-4","namespace":"ab-1"}}]}
EOF
batch "$dir/odd.json" >"$dir/odd.out"
check "odd items: 200, each item its own answer (201 400 400 400 400 400 422 201)" \
	test "$(code_of <"$dir/odd.out"):$(item_codes <"$dir/odd.out")" = "200:201 400 400 400 400 400 422 201"
check "... the unknown kind is named" \
	eval 'body_of <"$dir/odd.out" | jq -e ".items[1] | .kind == \"ConfigMap\" and (.message | contains(\"ConfigMap\"))" >/dev/null'
check "... so are the missing name and namespace" \
	eval 'body_of <"$dir/odd.out" | jq -e "(.items[2].message | contains(\"metadata.name: required\")) and (.items[3].message | contains(\"metadata.namespace: required\"))" >/dev/null'
check "... and the items around them are stored" eval 'W get secret odd-1 -n ab-1 && W get secret odd-4 -n ab-1'

# ?mode=create: each item created as its POST, one that exists refused (409) and left as it is
curl -s -o /dev/null -X PATCH -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/merge-patch+json' \
	--cacert "$CTRL_CA" -d '{"metadata":{"labels":{"kept":"yes"}}}' "$CTRL_URL/api/v1/namespaces/ab-1/secrets/odd-1"
cat >"$dir/create.json" <<'EOF'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"odd-1","namespace":"ab-1"},"data":{"k":"bmV3"}},
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"fresh-1","namespace":"ab-1"}},
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"fresh-1","namespace":"ab-1"}}]}
EOF
post_mode() { # MODE FILE: POST /weft/v1/apply?mode=MODE, printed as api prints
	curl -s -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' --cacert "$CTRL_CA" \
		-w '\n%{http_code}\n' --data-binary "@$2" "$CTRL_URL/weft/v1/apply?mode=$1"
}
post_mode create "$dir/create.json" >"$dir/create.out"
check "?mode=create: 200, the one that exists 409, the new one 201, its repeat 409 (409 201 409)" \
	test "$(code_of <"$dir/create.out"):$(item_codes <"$dir/create.out")" = "200:409 201 409"
check "... the existing one's answer is its POST's (AlreadyExists, named)" \
	eval 'body_of <"$dir/create.out" | jq -e ".items[0] | .reason == \"AlreadyExists\" and (.message | contains(\"odd-1\"))" >/dev/null'
check "... and it is left as it was: its label kept, its data not replaced" \
	eval '[ "$(W get secret odd-1 -n ab-1 -o json | jq -r "[.metadata.labels.kept, (.data.k // \"none\")] | join(\" \")")" = "yes none" ]'
check "?mode=bogus: 400 naming the supported values" \
	eval 'post_mode bogus "$dir/create.json" | body_of | jq -e ".code == 400 and (.message | contains(\"supported values\"))" >/dev/null'
check "?mode=apply: the usual apply (odd-1 configured)" \
	eval '[ "$(post_mode apply "$dir/create.json" | body_of | jq -r ".items[0].result")" = configured ]'

# ------------------------------------------------------------ 4. a node credential
N1=$(W node-credential issue node-1)
cat >"$dir/node.json" <<'EOF'
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.7.1"}]}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"mine","namespace":"ab-1"},"spec":{"nodeName":"node-1"}},
 {"apiVersion":"v1","kind":"Secret","metadata":{"name":"stolen","namespace":"ab-1"}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"theirs","namespace":"ab-1"},"spec":{"nodeName":"node-2"}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"o-00000","namespace":"ab-1"},"spec":{"ports":[{"port":81}]}},
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"node-2"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.7.2"}]}}]}
EOF
batch "$dir/node.json" "$N1" >"$dir/node.out"
check "node-1's batch: its Node and its pod written, the rest 403 (201 201 403 403 403 403)" \
	test "$(code_of <"$dir/node.out"):$(item_codes <"$dir/node.out")" = "200:201 201 403 403 403 403"
check "... a 403 says why as the request's own would (cannot get secrets)" \
	eval 'body_of <"$dir/node.out" | jq -e ".items[2].message | contains(\"cannot get resource \\\"secrets\\\"\")" >/dev/null'
check "... and nothing forbidden was written" \
	eval '! W get secret stolen -n ab-1 && ! W get pod theirs -n ab-1 && ! W get node node-2 &&
		test "$(W get service o-00000 -n ab-1 -o json | jq ".spec.ports[0].port")" = 80' 
python3 -c 'import json; print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b-%d" % i, "namespace": "ab-1"},
     "spec": {"nodeName": "node-1"}} for i in range(20)]}))' >"$dir/budget.json"
batch "$dir/budget.json" "$N1" >"$dir/budget.out"
# the budget was 20: 6 spent above, 14 left; the first 14 items spend them
check "every item spends the node's write budget: 14 written, then 429 for each" \
	test "$(item_codes <"$dir/budget.out")" = "$(printf '201 %.0s' $(seq 14))429 429 429 429 429 429"
check "... and the request itself is 200: the refusals are its items'" \
	test "$(code_of <"$dir/budget.out")" = 200

# ----------------------------------------------------- 5. GETs during a large batch
python3 -c 'import json; print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "big-%d" % i, "namespace": "ab-1"},
     "spec": {"ports": [{"port": 80}]}} for i in range(1000)]}))' >"$dir/big.json"
t0=$(date +%s%N)
curl -s -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
	--data-binary "@$dir/big.json" -o "$dir/big.out" "$CTRL_URL/weft/v1/apply" &
bpid=$!; T_PIDS+=("$bpid")
: >"$dir/gets"
while kill -0 "$bpid" 2>/dev/null; do
	curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $ADMIN" \
		"$CTRL_URL/api/v1/namespaces/ab-1/services/o-00000" >>"$dir/gets"
done
wait "$bpid"
batch_s=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
slowest=$(sort -g "$dir/gets" | tail -n 1)
check "the large batch: 1000 created" test "$(jq '[.items[] | select(.result == "created")] | length' "$dir/big.out")" = 1000
# (with the lock held for the whole batch, the slowest took 0.59 s of 0.81)
check "GETs during it answered promptly: $(wc -l <"$dir/gets") GETs in its $batch_s s, the slowest $slowest s (< a third)" \
	awk -v s="$slowest" -v b="$batch_s" -v n="$(wc -l <"$dir/gets")" 'BEGIN { exit !(s < b / 3 && n >= 3) }'

# ---------------------------------------- 6. an older server: document by document
pport=$(free_port)
python3 tests/tools/old_server_proxy.py "$pport" "$CTRL_URL" "$dir/proxy.log" &
T_PIDS+=("$!")
wait_for 20 curl -s "http://127.0.0.1:$pport/healthz" || fail "proxy did not start"
old() { WEFT_SERVER=http://127.0.0.1:$pport "$WEFTCTL" "$@"; }
# the same manifest in two namespaces: by the proxy (ab-old) and in batches (ab-new)
same_output() { # same_output NAME: $dir/ab-old-NAME by the proxy, $dir/ab-new-NAME in batches
	local ro=0 rn=0
	old apply -f "$dir/ab-old-$1" >"$dir/o.out" 2>"$dir/o.err" || ro=$?
	W apply -f "$dir/ab-new-$1" >"$dir/n.out" 2>"$dir/n.err" || rn=$?
	sed -i 's/ab-old/ab-new/g' "$dir/o.out" "$dir/o.err"
	[ "$ro" = "$rn" ] && cmp -s "$dir/o.out" "$dir/n.out" && cmp -s "$dir/o.err" "$dir/n.err" ||
		{ echo "per object, exit $ro:"; cat "$dir/o.out" "$dir/o.err"; echo "batched, exit $rn:"; cat "$dir/n.out" "$dir/n.err"; return 1; }
}
for n in ab-old ab-new; do
	mixed "$n" 30 | jq '.items |= .[:20] + [.[3] | .metadata.namespace = "nowhere"] + .[20:]' >"$dir/$n-1.json"
	mixed "$n" 30 7 >"$dir/$n-2.json"
done
check "create, with a document refused in the middle: the same output and exit both ways" same_output 1.json
check "changed: the same output both ways" same_output 2.json
check "again: the same output both ways" same_output 2.json
check "the older server was asked for the batch path once per apply, then every document alone" \
	test "$(grep -c '^POST /weft/v1/apply' "$dir/proxy.log")" = 3

# ------------------------------------------ 7. SIGKILL right after a batch answered
python3 -c 'import json; print(json.dumps({"apiVersion": "v1", "kind": "List", "items":
    [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ab-kill"}}] + [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k-%d" % i, "namespace": "ab-kill"}} for i in range(999)]}))' >"$dir/kill.json"
batch "$dir/kill.json" >"$dir/kill.out"
kill -KILL "$CTRL_PID"; wait "$CTRL_PID" 2>/dev/null; CTRL_PID=
check "the batch was answered: 1000 created" \
	test "$(body_of <"$dir/kill.out" | jq '[.items[] | select(.result == "created")] | length')" = 1000
check "fsck after SIGKILL is clean" "$CONTROLLER" --data-dir "$dir" --fsck
start_controller "$dir" || { fail restart; finish; exit 1; }
check "after the restart every item of the batch is there (999 Secrets)" test "$(count secrets ab-kill)" = 999
check_stop "controller stops cleanly"

# ------------------------------------------------------------- 8. on etcd
edir=$(tmpdir)
if ! start_etcd "$edir"; then
	fail "etcd starts"
	finish; exit 1
fi
start_controller "$edir" --store "$ETCD_URL" || { fail "controller on etcd"; finish; exit 1; }
ADMIN=$(cat "$CTRL_TOKEN_FILE")
mixed ab-etcd 300 >"$dir/e.json"
mixed ab-etcd 300 25 >"$dir/e2.json"
W apply -f "$dir/e.json" >"$dir/out" 2>&1
check "etcd: 301 created ($(results "$dir/out"))" test "$(results "$dir/out")" = "301 created"
W apply -f "$dir/e.json" >"$dir/out" 2>&1
check "etcd: again, 301 unchanged ($(results "$dir/out"))" test "$(results "$dir/out")" = "301 unchanged"
W apply -f "$dir/e2.json" >"$dir/out" 2>&1
check "etcd: every 25th changed: 12 configured ($(results "$dir/out"))" test "$(results "$dir/out")" = "12 configured, 289 unchanged"
sed 's/ab-1/ab-etcd/g' "$dir/odd.json" >"$dir/e-odd.json"
batch "$dir/e-odd.json" >"$dir/odd.out"
check "etcd: odd items, each its own answer (201 400 400 400 400 400 422 201)" \
	test "$(code_of <"$dir/odd.out"):$(item_codes <"$dir/odd.out")" = "200:201 400 400 400 400 400 422 201"
check "etcd: fsck is clean" "$CONTROLLER" --data-dir "$edir" --store "$ETCD_URL" --fsck
check_stop "etcd: controller stops cleanly"
finish
