#!/usr/bin/env bash
# podpeerslices.sh — PodPeerSlices (network.weft.io/v1) over the real API,
# weftctl and kubectl: the controller's compact table of each node's pods
# with an address (name, ip, identity; identities = namespace, labels,
# named ports, once per slice) follows pod creates, relabels and deletes
# within a polled deadline; a node's last pod gone deletes its slice;
# they exist only while the cluster has a NetworkPolicy (made in the
# policy's own sync, deleted in its deletion's); a
# burst of pods on one node is gathered into few writes; no client may
# write one (405, the admin included); a node credential lists and
# watches them and may not write them (403); the discovery entry, the
# columns, the metrics; a restart adopts the stored slices.
#
#   weftctl / kubectl / curl ──HTTPS──► weft-controller (SQLite)
#                                           │ endpoints controller + peers
#                                           ▼
#                                        DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

W() { "$WEFTCTL" "$@"; }
PP=/apis/network.weft.io/v1/podpeerslices
# expect_api CODE PATTERN METHOD PATH [curl args]: the answer's code and body
expect_api() {
	local want=$1 pat=$2 out; shift 2
	out=$(api "$@")
	[ "$(code_of <<<"$out")" = "$want" ] || { echo "expected HTTP $want; seen: $out" | head -c 600; return 1; }
	grep -qE -- "$pat" <<<"$out" || { echo "answer lacks /$pat/: $out" | head -c 600; return 1; }
}
# slice_holds NAME JQ: the slice exists and JQ holds of it
slice_holds() { api GET "$PP/$1" | body_of | jq -e "$2" >/dev/null; }
# peers NODE: the node's pods as "ns/name ip identity-json" lines, sorted, from every slice of it
peers() {
	api GET "$PP" | body_of | jq -r --arg n "$1" '.items[] | select(.node == $n) | . as $s |
		.pods[] | "\($s.identities[.identity].namespace)/\(.name) \(.ip) \($s.identities[.identity] | tojson)"' | sort
}
# mpatch PATH JSON: a merge patch, printed as api prints
mpatch() {
	curl -s --cacert "$CTRL_CA" -X PATCH -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
		-H 'Content-Type: application/merge-patch+json' -w '\n%{http_code}\n' -d "$2" "$CTRL_URL$1"
}
# expect_out CODE PATTERN CMD...: CMD printed as api prints; its code and body
expect_out() {
	local want=$1 pat=$2 out; shift 2
	out=$("$@")
	[ "$(code_of <<<"$out")" = "$want" ] || { echo "expected HTTP $want; seen: $out" | head -c 600; return 1; }
	grep -qE -- "$pat" <<<"$out" || { echo "answer lacks /$pat/: $out" | head -c 600; return 1; }
}
peers_has() { peers "$1" | grep -q -- "$2"; }
is_gone() { [ "$(api GET "$PP/$1" | code_of)" = 404 ]; }
deleted() { [ "$(api DELETE "$1" | code_of)" = 200 ]; }
metric() { curl -s -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" "$CTRL_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
pod_json() { # NS NAME NODE IP LABELS PORTS
	echo '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'$2'","namespace":"'$1'","labels":'$5'},
	"spec":{"nodeName":"'$3'","containers":[{"name":"c","ports":'$6'}]},"status":{"podIP":"'$4'","phase":"Running"}}'
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
for i in 1 2; do
	api POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-'$i'"},
		"status":{"addresses":[{"type":"InternalIP","address":"192.168.0.'$i'"}]}}' >/dev/null
done
for ns in red blue; do
	api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"'$ns'"}}' >/dev/null
done
# the slices are kept while the cluster has a NetworkPolicy (checked below)
api POST /apis/networking.k8s.io/v1/namespaces/red/networkpolicies -d '{"apiVersion":"networking.k8s.io/v1",
	"kind":"NetworkPolicy","metadata":{"name":"any"},"spec":{"podSelector":{}}}' >/dev/null

echo "== pods with addresses appear in their node's slices"
HTTP='[{"name":"http","containerPort":8080},{"containerPort":9090}]'
check "pod red/a (app=web, a named port) on node-1: 201" \
	expect_api 201 . POST /api/v1/namespaces/red/pods -d "$(pod_json red a node-1 10.128.0.2 '{"app":"web"}' "$HTTP")"
check "pod red/b (app=web) on node-1: 201" \
	expect_api 201 . POST /api/v1/namespaces/red/pods -d "$(pod_json red b node-1 10.128.0.3 '{"app":"web"}' "$HTTP")"
check "pod blue/c (no labels, no named port) on node-2: 201" \
	expect_api 201 . POST /api/v1/namespaces/blue/pods -d "$(pod_json blue c node-2 10.128.2.2 '{}' '[{"containerPort":53,"protocol":"UDP"}]')"
check "pod red/pending without an address: 201" \
	expect_api 201 . POST /api/v1/namespaces/red/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pending"},"spec":{"nodeName":"node-1"},"status":{"phase":"Pending"}}'
check "node-1-1 appears with red/a and red/b (polled)" \
	wait_for 10 slice_holds node-1-1 '(.pods | length) == 2'
check "node-2-1 appears with blue/c (polled)" \
	wait_for 10 slice_holds node-2-1 '(.pods | length) == 1'
out=$(api GET "$PP/node-1-1" | body_of)
check "a slice: kind, apiVersion, node, the managed-by and node labels" \
	jq -e '.kind == "PodPeerSlice" and .apiVersion == "network.weft.io/v1" and .node == "node-1" and
		.metadata.labels == {"network.weft.io/managed-by":"podpeerslice-controller.weft.io","network.weft.io/node":"node-1"}' <<<"$out"
check "... one identity for both pods: namespace, labels, the named port only (protocol TCP)" \
	jq -e '.identities == [{"labels":{"app":"web"},"namespace":"red","ports":[{"name":"http","port":8080,"protocol":"TCP"}]}]' <<<"$out"
check "... the pods sorted by name, each with its address and identity 0" \
	jq -e '.pods == [{"identity":0,"ip":"10.128.0.2","name":"a"},{"identity":0,"ip":"10.128.0.3","name":"b"}]' <<<"$out"
check "... the pod without an address is not there" test "$(peers node-1 | grep -c pending)" = 0
check "blue/c: its namespace, no labels, no ports" \
	slice_holds node-2-1 '.identities == [{"labels":{},"namespace":"blue","ports":[]}] and .pods == [{"identity":0,"ip":"10.128.2.2","name":"c"}]'

echo "== kept only while the cluster has a NetworkPolicy"
NP=/apis/networking.k8s.io/v1/namespaces/red/networkpolicies
npol() { echo '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"'$1'"},"spec":{"podSelector":{}}}'; }
n_slices() { api GET "$PP" | body_of | jq '.items | length'; }
d0=$(metric weft_podpeerslice_deletes_total)
check "the only NetworkPolicy deleted: 200" expect_api 200 . DELETE "$NP/any"
check "... every slice deleted, in the delete's own sync (none listed right after its answer)" \
	test "$(n_slices)" = 0
check "... counted: weft_podpeerslice_deletes_total +2" test "$(metric weft_podpeerslice_deletes_total)" = $((d0 + 2))
w0=$(metric weft_podpeerslice_writes_total)
check "no policy: pod red/e on node-2: 201" \
	expect_api 201 . POST /api/v1/namespaces/red/pods -d "$(pod_json red e node-2 10.128.2.9 '{}' '[]')"
check "... no slice written for it, nor later (a pod's change costs no slice write)" \
	test "$(n_slices)/$(metric weft_podpeerslice_writes_total)" = "0/$w0"
check "a NetworkPolicy again: 201" expect_api 201 . POST "$NP" -d "$(npol any)"
check "... every node's slices written in its own sync (2 listed right after its answer)" test "$(n_slices)" = 2
check "... node-2-1 holds blue/c and red/e" slice_holds node-2-1 '[.pods[].name] == ["c","e"]'
check "... node-1-1 as before" slice_holds node-1-1 '[.pods[].name] == ["a","b"]'
check "red/e deleted" deleted /api/v1/namespaces/red/pods/e
check "... gone from node-2-1 (polled)" wait_for 10 slice_holds node-2-1 '[.pods[].name] == ["c"]'

echo "== a lone new pod is visible at once (its node's slices not written within the gather)"
# two watches, each line stamped as it arrives: the pod's own event, then
# its node's slice's (a client's requests take ~100 ms here: TLS, curl)
stamped() { # URL FILE: the watch's lines, each prefixed with its arrival (ms)
	curl -sN -m 20 -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" "$CTRL_URL$1" |
		while IFS= read -r line; do echo "$(now_ms) $line"; done >"$2"
}
rv=$(api GET "$PP" | body_of | jq -r .metadata.resourceVersion)
stamped "/api/v1/namespaces/blue/pods?watch=1&resourceVersion=$rv" "$DIR/pods.w" &
T_PIDS+=($!)
stamped "$PP?watch=1&resourceVersion=$rv" "$DIR/pps.w" &
T_PIDS+=($!)
sleep 1	# (both streams open: they start from rv, so nothing is missed anyway)
api POST /api/v1/namespaces/blue/pods -d "$(pod_json blue d node-2 10.128.2.3 '{"app":"db"}' '[]')" >/dev/null
check "blue/d's own event (ADDED)" wait_for 10 grep -q '"ADDED".*"name":"d"' "$DIR/pods.w"
check "node-2-1's event carrying blue/d (MODIFIED)" wait_for 10 grep -q '"MODIFIED".*10.128.2.3' "$DIR/pps.w"
t_pod=$(grep -m1 '"ADDED".*"name":"d"' "$DIR/pods.w" | cut -d' ' -f1)
t_pps=$(grep -m1 '"MODIFIED".*10.128.2.3' "$DIR/pps.w" | cut -d' ' -f1)
took=$(( ${t_pps:-0} - ${t_pod:-0} ))
check "... ${took} ms after the pod's: written in the pod write's own sync (under 400 ms)" \
	test "$took" -lt 400

echo "== relabel, delete"
check "red/a relabelled app=api (merge patch): 200" \
	expect_out 200 . mpatch /api/v1/namespaces/red/pods/a '{"metadata":{"labels":{"app":"api"}}}'
check "... red/a gets an identity of its own (polled)" \
	wait_for 10 peers_has node-1 '^red/a 10.128.0.2 .*"app":"api"'
check "... two identities now, each used once" \
	slice_holds node-1-1 '(.identities | length) == 2 and ([.pods[].identity] | sort) == [0,1]'
check "red/b deleted: 200" expect_api 200 . DELETE /api/v1/namespaces/red/pods/b
check "... gone from node-1-1 (polled)" wait_for 10 slice_holds node-1-1 '[.pods[].name] == ["a"] and (.identities | length) == 1'
check "blue/c deleted" deleted /api/v1/namespaces/blue/pods/c
check "blue/d deleted" deleted /api/v1/namespaces/blue/pods/d
check "... node-2's last pod gone: its slice is deleted (polled)" wait_for 10 is_gone node-2-1

echo "== a burst of pods on one node is gathered"
w0=$(metric weft_podpeerslice_writes_total)
posts=()
for i in $(seq 10 29); do	# at once, one request each, as kubelets report them
	api POST /api/v1/namespaces/red/pods -d "$(pod_json red "p$i" node-2 "10.128.2.$i" '{"app":"web"}' "$HTTP")" >/dev/null &
	posts+=($!)
done
wait "${posts[@]}"
node2_pods() { # the pods of node-2's slices, and the largest slice
	api GET "$PP" | body_of | jq -e "[.items[] | select(.node == \"node-2\")] |
		([.[].pods | length] | add) == $1 and ([.[].pods | length] | max) <= 10"
}
# (once every pod is in, the last write has been made: nothing is left to write)
check "20 pods on node-2, one request each: all in its slices, 10 a slice at most (polled)" \
	wait_for 10 node2_pods 20
w1=$(metric weft_podpeerslice_writes_total)
check "... in far fewer writes than pods: $((w1 - w0)) for 20" test $((w1 - w0)) -le 10

echo "== no client writes them, the admin included"
SL='{"apiVersion":"network.weft.io/v1","kind":"PodPeerSlice","metadata":{"name":"mine"},"node":"node-1"}'
MSG='podpeerslices are derived from Pods by the controller and cannot be written through the API'
check "POST: 405 MethodNotAllowed, the reason given" expect_api 405 "MethodNotAllowed.*$MSG|$MSG.*MethodNotAllowed" POST "$PP" -d "$SL"
check "PUT of a stored one: 405" expect_api 405 "$MSG" PUT "$PP/node-1-1" -d "$(api GET "$PP/node-1-1" | body_of)"
check "PUT of a new one: 405" expect_api 405 "$MSG" PUT "$PP/mine" -d "$SL"
check "PATCH (merge): 405" \
	expect_out 405 "$MSG" mpatch "$PP/node-1-1" '{"metadata":{"labels":{"x":"y"}}}'
check "DELETE: 405" expect_api 405 "$MSG" DELETE "$PP/node-1-1"
check "... node-1-1 is as it was" slice_holds node-1-1 '[.pods[].name] == ["a"] and (.metadata.labels | has("x") | not)'
check "weftctl apply -f of one: refused" bash -c "! echo '$SL' | '$WEFTCTL' apply -f - 2>&1 | grep -q created"

echo "== get, list, watch; weftctl and kubectl"
check "list: a PodPeerSliceList" expect_api 200 '"kind":"PodPeerSliceList"' GET "$PP"
check "labelSelector of the node label: node-2's two only" \
	test "$(api GET "$PP?labelSelector=network.weft.io/node%3Dnode-2" | body_of | jq -r '[.items[].metadata.name] | sort | join(",")')" = node-2-1,node-2-2
check "the namespaced path is no resource: 404" \
	test "$(api GET /apis/network.weft.io/v1/namespaces/red/podpeerslices | code_of)" = 404
check "weftctl get podpeerslices: NAME NODE PODS IDENTITIES AGE" \
	bash -c "'$WEFTCTL' get podpeerslices | head -1 | grep -qE '^NAME +NODE +PODS +IDENTITIES +AGE$'"
check "... node-1-1: node-1, 1 pod, 1 identity" \
	bash -c "'$WEFTCTL' get pps | grep -qE '^node-1-1 +node-1 +1 +1 +[0-9]+[smh]$'"
check "... node-2-1 and node-2-2: node-2, 10 pods, 1 identity each" \
	bash -c "'$WEFTCTL' get podpeerslice | grep -cE '^node-2-[12] +node-2 +10 +1 +[0-9]+[smh]$' | grep -qx 2"
lists_group() { api GET /apis | body_of | jq -e '[.groups[].name] | index("network.weft.io")'; }
check "discovery: /apis lists network.weft.io" lists_group
if command -v kubectl >/dev/null; then
	K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" --cache-dir "$DIR/kube-cache" "$@"; }
	check "kubectl get pps: the columns and node-1-1" \
		bash -c "$(declare -f K); out=\$(K get pps); head -1 <<<\"\$out\" | grep -qE '^NAME +NODE +PODS +IDENTITIES +AGE$' && grep -qE '^node-1-1 +node-1 +1 +1 ' <<<\"\$out\""
	check "kubectl delete pps node-1-1: refused" bash -c "$(declare -f K); ! K delete pps node-1-1"
else
	echo "  (kubectl is not installed: its checks are skipped)"
fi

echo "== a node credential"
NT=$(W node-credential issue node-1)
nodeapi() { curl -s -w '\n%{http_code}\n' -H "Authorization: Bearer $NT" "$@"; }
check "a node lists them (200), every node's" \
	test "$(nodeapi "$CTRL_URL$PP" | body_of | jq -r '[.items[].metadata.name] | sort | join(",")')" = node-1-1,node-2-1,node-2-2
check "a node gets one (200)" test "$(nodeapi "$CTRL_URL$PP/node-2-1" | code_of)" = 200
curl -sN -m 10 -D "$DIR/watch.h" -H "Authorization: Bearer $NT" "$CTRL_URL$PP?watch=1&resourceVersion=$(api GET "$PP" | body_of | jq -r .metadata.resourceVersion)" >"$DIR/watch" &
wpid=$!; T_PIDS+=("$wpid")
check "a node watches them (200)" watch_open "$DIR/watch.h"
api POST /api/v1/namespaces/red/pods -d "$(pod_json red e node-1 10.128.0.9 '{"app":"web"}' "$HTTP")" >/dev/null
check "... and sees node-1-1 take a new pod (MODIFIED)" \
	wait_for 10 bash -c "grep '\"MODIFIED\"' '$DIR/watch' | grep -q '10.128.0.9'"
kill "$wpid" 2>/dev/null
out=$(nodeapi -X POST "$CTRL_URL$PP" -d "$SL")
check "a node may not create one (403)" test "$(code_of <<<"$out")" = 403
check "... the refusal names the resource and its group" \
	grep -q 'cannot create resource \\"podpeerslices\\" in API group \\"network.weft.io\\"' <<<"$out"
check "a node may not delete one (403)" test "$(nodeapi -X DELETE "$CTRL_URL$PP/node-1-1" | code_of)" = 403

echo "== metrics, and a restart adopts the slices"
check "writes and deletes counted" test "$(metric weft_podpeerslice_deletes_total)" -ge 1 -a "$(metric weft_podpeerslice_writes_total)" -ge 3
check "... no write failed" test "$(metric weft_podpeerslice_failures_total)" = 0
sleep 0.3
before=$(api GET "$PP" | body_of | jq -r '.items[] | "\(.metadata.name) \(.metadata.resourceVersion)"')
check_stop "the controller stops cleanly (SIGTERM)"
start_controller "$DIR" || { fail "the controller starts again"; finish; exit 1; }
sleep 0.3
check "after the restart: the same slices at the same resourceVersions" \
	eval '[ "$(api GET "$PP" | body_of | jq -r ".items[] | \"\(.metadata.name) \(.metadata.resourceVersion)\"")" = "$before" ]'
check "... nothing written at start" test "$(metric weft_podpeerslice_writes_total)" = 0
check_stop "the controller stops cleanly"
finish
