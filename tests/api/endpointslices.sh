#!/usr/bin/env bash
# endpointslices.sh — EndpointSlices (discovery.k8s.io/v1) over the real
# API, weftctl and kubectl: the controller's slices of a 250-pod Service
# (3 slices of at most 100; one pod removed rewrites one slice, written
# before the DELETE is answered), get/list/watch across namespaces with
# field and label selectors, the discovery entry, kubectl's columns, a
# node credential that reads but never writes them, the tenant check on a
# hand-written slice, malformed and oversized slices, mirroring of a
# hand-written Endpoints, a restart that adopts the stored slices (none
# rewritten), and a Service's slices going with it.
#
#   weftctl / kubectl / curl ──HTTPS──► weft-controller (SQLite)
#                                           │ endpoints controller + slices
#                                           ▼
#                                        DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

W() { "$WEFTCTL" "$@"; }
ES=/apis/discovery.k8s.io/v1
# expect_api CODE PATTERN METHOD PATH [curl args]: the answer's code and body
expect_api() {
	local want=$1 pat=$2 out; shift 2
	out=$(api "$@")
	[ "$(code_of <<<"$out")" = "$want" ] || { echo "expected HTTP $want; seen: $out" | head -c 600; return 1; }
	grep -qE -- "$pat" <<<"$out" || { echo "answer lacks /$pat/: $out" | head -c 600; return 1; }
}
# slices NS SVC: the Service's slices, as "name rv size" lines in name order
slices() {
	api GET "$ES/namespaces/$1/endpointslices?labelSelector=kubernetes.io/service-name%3D$2" | body_of |
		jq -r '.items | sort_by(.metadata.name)[] | "\(.metadata.name) \(.metadata.resourceVersion) \(.endpoints | length)"'
}
sizes() { slices "$1" "$2" | awk '{print $3}' | sort -n | tr '\n' ' '; }

DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
for i in 1 2; do
	api POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-'$i'"},
		"status":{"addresses":[{"type":"InternalIP","address":"192.168.0.'$i'"}]}}' >/dev/null
done

echo "== a 250-pod Service: 3 slices"
{
	echo '{"apiVersion":"v1","kind":"List","items":['
	echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"red"}},'
	echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"blue"}},'
	for i in $(seq 0 249); do
		echo '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p'$i'","namespace":"red","labels":{"app":"web"}},
		"spec":{"nodeName":"node-1","containers":[{"name":"c","ports":[{"name":"http","containerPort":8080}]}]},
		"status":{"podIP":"10.128.0.'$((i + 2))'","phase":"Running"}},'
	done
	echo '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"red"},
		"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":"http"}]}}]}'
} >"$DIR/web.json"
check "weftctl apply -f: 250 pods and their Service" W apply -f "$DIR/web.json"
check "3 slices: 100, 100 and 50 endpoints" test "$(sizes red web)" = "50 100 100 "
out=$(api GET "$ES/namespaces/red/endpointslices/web-1" | body_of)
check "a slice: kind, apiVersion, addressType IPv4, the managed-by and service-name labels" \
	jq -e '.kind == "EndpointSlice" and .apiVersion == "discovery.k8s.io/v1" and .addressType == "IPv4" and
		.metadata.labels["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.weft.io" and
		.metadata.labels["kubernetes.io/service-name"] == "web"' <<<"$out"
check "... its ports (the named targetPort resolved) and an endpoint's shape" \
	jq -e '.ports == [{"name":"http","port":8080,"protocol":"TCP"}] and .endpoints[0] ==
		{"addresses":["10.128.0.2"],"conditions":{"ready":true,"serving":true,"terminating":false},
		 "nodeName":"node-1","targetRef":{"kind":"Pod","namespace":"red","name":"p0"}}' <<<"$out"
before=$(slices red web)
check "DELETE of one pod: 200" expect_api 200 . DELETE /api/v1/namespaces/red/pods/p7
after=$(slices red web)
changed=$(diff <(echo "$before") <(echo "$after") | grep -c '^>')
check "... exactly one slice rewritten, already when the DELETE was answered (resourceVersions)" test "$changed" = 1
check "... which lost the pod: 99, 100, 50" eval '[ "$(sizes red web)" = "50 99 100 " ] || { echo "$after"; false; }'

echo "== get, list, watch"
check "list across namespaces" expect_api 200 '"kind":"EndpointSliceList"' GET "$ES/endpointslices"
check "list across namespaces has the 3" \
	test "$(api GET "$ES/endpointslices" | body_of | jq '[.items[] | select(.metadata.namespace == "red")] | length')" = 3
check "fieldSelector metadata.name=web-2: that one" \
	test "$(api GET "$ES/namespaces/red/endpointslices?fieldSelector=metadata.name%3Dweb-2" | body_of | jq -r '[.items[].metadata.name] | join(",")')" = web-2
check "labelSelector of the managed-by label" \
	test "$(api GET "$ES/endpointslices?labelSelector=endpointslice.kubernetes.io/managed-by%3Dendpointslice-controller.weft.io" | body_of | jq '.items | length')" = 3
rv=$(api GET "$ES/endpointslices" | body_of | jq -r .metadata.resourceVersion)
curl -sN -m 10 -D "$DIR/watch.h" -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
	"$CTRL_URL$ES/endpointslices?watch=1&allowWatchBookmarks=true&resourceVersion=$rv" >"$DIR/watch" &
wpid=$!; T_PIDS+=("$wpid")
check "a watch across namespaces is open" watch_open "$DIR/watch.h"
api POST /api/v1/namespaces/red/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p250","labels":{"app":"web"}},
	"spec":{"nodeName":"node-1","containers":[{"name":"c","ports":[{"name":"http","containerPort":8080}]}]},
	"status":{"podIP":"10.128.1.200","phase":"Running"}}' >/dev/null
check "a new pod: one MODIFIED slice event carrying it (it filled the slice with room)" \
	wait_for 10 bash -c "grep '\"MODIFIED\"' '$DIR/watch' | grep -q '10.128.1.200'"
check "... and only one" test "$(grep -c '"type":"MODIFIED"' "$DIR/watch")" = 1
check "... the slice of 99 is full again" test "$(sizes red web)" = "50 100 100 "

echo "== a restart adopts the slices"
before=$(slices red web)
check_stop "the controller stops cleanly (SIGTERM)"
start_controller "$DIR" || { fail "the controller starts again"; finish; exit 1; }
check "after the restart (index rebuilt, resync): the same slices at the same resourceVersions" \
	eval '[ "$(slices red web)" = "$before" ] || { echo "before: $before"; echo "after: $(slices red web)"; false; }'
check "... nothing written at start" bash -c "curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' '$CTRL_URL/metrics' | grep -qx 'weft_endpointslice_writes_total 0'"

echo "== weftctl and kubectl"
check "weftctl get endpointslices -n red: NAME ADDRESSTYPE PORTS ENDPOINTS AGE" \
	bash -c "'$WEFTCTL' get endpointslices -n red | head -1 | grep -qE '^NAME +ADDRESSTYPE +PORTS +ENDPOINTS +AGE$'"
check "... web-1: IPv4, 8080, three addresses + 97 more" \
	bash -c "'$WEFTCTL' get endpointslices -n red | grep -qE '^web-1 +IPv4 +8080 +10\.128\.0\.2,10\.128\.0\.3,10\.128\.0\.4 \+ 97 more\.\.\. +[0-9]+s$'"
cat >"$DIR/mine.yaml" <<'EOF'
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: mine, namespace: red, labels: {kubernetes.io/service-name: external}}
addressType: IPv4
endpoints:
- addresses: [192.0.2.10]
  conditions: {ready: true}
ports: [{name: https, port: 443}]
EOF
check "weftctl apply -f of a hand-written slice" bash -c "'$WEFTCTL' apply -f '$DIR/mine.yaml' | grep -q 'endpointslice/red/mine created'"
check "... stored with protocol TCP defaulted" \
	test "$(api GET "$ES/namespaces/red/endpointslices/mine" | body_of | jq -c .ports)" = '[{"name":"https","port":443,"protocol":"TCP"}]'
if command -v kubectl >/dev/null; then
	K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" --cache-dir "$DIR/kube-cache" "$@"; }
	check "kubectl get endpointslices -n red: kubectl's columns" \
		bash -c "$(declare -f K); K get endpointslices -n red | head -1 | grep -qE '^NAME +ADDRESSTYPE +PORTS +ENDPOINTS +AGE$'"
	check "kubectl get endpointslices -n red: mine, 443, its address" \
		bash -c "$(declare -f K); K get endpointslices -n red --no-headers | grep -qE '^mine +IPv4 +443 +192\.0\.2\.10 +'"
	check "kubectl get endpointslice web-1 -n red -o json" \
		bash -c "$(declare -f K); K get endpointslice web-1 -n red -o json | jq -e '.endpoints | length == 100'"
else
	echo "  (kubectl is not installed: its checks are skipped)"
fi

echo "== a node credential"
NT=$(W node-credential issue node-1)
nodeapi() { curl -s -w '\n%{http_code}\n' -H "Authorization: Bearer $NT" "$@"; }
check "a node lists slices across namespaces (200)" \
	test "$(nodeapi "$CTRL_URL$ES/endpointslices" | code_of)" = 200
check "a node watches them (200)" \
	test "$(nodeapi -m 2 -o /dev/null "$CTRL_URL$ES/endpointslices?watch=1&timeoutSeconds=1" | tail -n 1)" = 200
out=$(nodeapi -X POST "$CTRL_URL$ES/namespaces/red/endpointslices" \
	-d '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"n"},"addressType":"IPv4"}')
check "a node may not create one (403)" test "$(code_of <<<"$out")" = 403
check "... the refusal names the resource and its group" \
	grep -q 'cannot create resource \\"endpointslices\\" in API group \\"discovery.k8s.io\\"' <<<"$out"
check "a node may not delete one (403)" \
	test "$(nodeapi -X DELETE "$CTRL_URL$ES/namespaces/red/endpointslices/web-1" | code_of)" = 403

echo "== hand-written slices: tenancy, malformed, oversized"
api POST /api/v1/namespaces/blue/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b1"},
	"spec":{"nodeName":"node-2"},"status":{"podIP":"10.128.2.3","phase":"Running"}}' >/dev/null
slice() { echo '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"'$1'"},"addressType":"'$2'","endpoints":'$3'}'; }
check "a slice in red aiming at blue's pod: 403 naming the field and the pod" \
	expect_api 403 'endpoints\[0\]\.addresses\[0\]: 10\.128\.2\.3 is pod blue/b1' POST "$ES/namespaces/red/endpointslices" -d "$(slice x IPv4 '[{"addresses":["10.128.2.3"]}]')"
check "... at an address of the cluster network that is no pod's: 403" \
	expect_api 403 'is no pod.s address' POST "$ES/namespaces/red/endpointslices" -d "$(slice x IPv4 '[{"addresses":["10.128.3.99"]}]')"
check "... at its own pod: 201" \
	expect_api 201 . POST "$ES/namespaces/red/endpointslices" -d "$(slice own IPv4 '[{"addresses":["10.128.0.2"]}]')"
check "addressType IPv6: 422 naming the field" \
	expect_api 422 "addressType: 'IPv6' is not supported: weft is IPv4 only" POST "$ES/namespaces/red/endpointslices" -d "$(slice x IPv6 '[]')"
check "no addressType: 422" \
	expect_api 422 'addressType: required' POST "$ES/namespaces/red/endpointslices" -d '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"x"}}'
check "a bad address: 422 naming it" \
	expect_api 422 "endpoints\[0\]\.addresses\[0\]: '10\.1\.1\.999' is not a valid IPv4 address" POST "$ES/namespaces/red/endpointslices" -d "$(slice x IPv4 '[{"addresses":["10.1.1.999"]}]')"
many=$(jq -cn '[range(1001) | {addresses: ["192.0.2.\(. % 250 + 1)"]}]')
check "1001 endpoints: 422, the limit named" \
	expect_api 422 'endpoints: too many items \(1001, at most 1000\)' POST "$ES/namespaces/red/endpointslices" -d "$(slice x IPv4 "$many")"
check "not JSON: 400" expect_api 400 . POST "$ES/namespaces/red/endpointslices" -d '{"kind": "EndpointSlice",'
check "a body of another kind: 400" \
	expect_api 400 'kind' POST "$ES/namespaces/red/endpointslices" -d '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"x"}}'
head -c 4000000 /dev/zero | tr '\0' ' ' >"$DIR/big"
check "a body over --max-body: 413" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" -X POST \
		-H 'Content-Type: application/json' --data-binary @"$DIR/big" "$CTRL_URL$ES/namespaces/red/endpointslices")" = 413

echo "== mirroring, and slices that go with their Service"
api POST /api/v1/namespaces/red/services -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"ext"},
	"spec":{"ports":[{"name":"https","port":443}]}}' >/dev/null
check "a hand-written Endpoints of a Service without a selector: 201" \
	expect_api 201 . POST /api/v1/namespaces/red/endpoints -d '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"ext"},
	"subsets":[{"addresses":[{"ip":"192.0.2.20"}],"notReadyAddresses":[{"ip":"192.0.2.21"}],"ports":[{"name":"https","port":8443}]}]}'
out=$(api GET "$ES/namespaces/red/endpointslices?labelSelector=kubernetes.io/service-name%3Dext" | body_of)
check "... mirrored at once, by the mirroring controller, ready and not ready" \
	jq -e '(.items | length) == 1 and .items[0].metadata.labels["endpointslice.kubernetes.io/managed-by"] == "endpointslicemirroring-controller.weft.io" and
		[.items[0].endpoints[] | [.addresses[0], .conditions.ready]] == [["192.0.2.20",true],["192.0.2.21",false]] and
		.items[0].ports == [{"name":"https","port":8443,"protocol":"TCP"}]' <<<"$out"
check "the Service ext deleted: 200" expect_api 200 . DELETE /api/v1/namespaces/red/services/ext
check "... its mirrored slices went with it" test -z "$(slices red ext)"
check "the Service web deleted: 200" expect_api 200 . DELETE /api/v1/namespaces/red/services/web
check "... its slices went with it" test -z "$(slices red web)"
check "... hand-written slices stay" \
	test "$(api GET "$ES/namespaces/red/endpointslices" | body_of | jq -r '[.items[].metadata.name] | sort | join(",")')" = mine,own
check "no slice write failed" bash -c "curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' '$CTRL_URL/metrics' | grep -qx 'weft_endpointslice_failures_total 0'"
check_stop "the controller stops cleanly"
finish
