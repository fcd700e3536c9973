#!/usr/bin/env bash
# requests.sh — requests and answers as Kubernetes has them: YAML bodies,
# Accept, dryRun=All, the status subresource and Status reasons.
#
#   curl (YAML, Accept, dryRun) / kubectl --dry-run=server ──HTTPS──► weft-controller ──► DIR/weft.db
#
# 1. YAML bodies: create and replace; an alias bomb (413) and two
#    documents (400) refused, storing nothing; apply-patch+yaml is 415.
# 2. Accept: YAML of an object and a list (parsed back by python's yaml),
#    q-values, nothing satisfiable (406), a watch that accepts only YAML (406).
# 3. dryRun=All on POST, PUT, PATCH, DELETE: the answer is the real one,
#    nothing changes (object, list resourceVersion), the clusterIP a dry
#    create showed is still free; an unknown dryRun value is 400;
#    kubectl create/delete --dry-run=server.
# 4. NAME/status: GET, PUT and PATCH change only the status; PUT and PATCH
#    of the main resource ignore a status change; a Service is created
#    without the status it is sent.
# 5. Status reasons and codes, and their details: Invalid's causes (field,
#    reason), NotFound, AlreadyExists, Conflict, 413, 504's Retry-After,
#    Expired 410 (a second controller of short history).  429 cannot be
#    provoked (weft refuses load at accept): status_json_test.c.
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }
ADMIN=$(cat "$CTRL_TOKEN_FILE")
PY=/usr/bin/python3

# req METHOD PATH CONTENT-TYPE ACCEPT [BODY]: the body, then the code
req() {
	local m=$1 p=$2 ct=$3 acc=$4 body=${5-}
	curl -s -X "$m" -H @- -H "Content-Type: $ct" -H "Accept: $acc" -w '\n%{http_code}\n' \
		${body:+--data-binary "$body"} "$CTRL_URL$p" <<<"Authorization: Bearer $ADMIN"
}
# reason CODE REASON OUT: OUT (req's) has that code and Status reason
reason() {
	[ "$(code_of <<<"$3")" = "$1" ] && [ "$(body_of <<<"$3" | jq -r .reason)" = "$2" ] || { echo "got: $3"; return 1; }
}
json() { api GET "$1" | body_of; }
absent() { [ "$(api GET "$1" | code_of)" = 404 ]; }
list_rv() { json "$1" | jq -r .metadata.resourceVersion; }
# yaml_is JQ: the YAML on stdin parses (python's yaml) to what jq accepts
yaml_is() { $PY -c 'import sys, yaml, json; print(json.dumps(yaml.safe_load(sys.stdin)))' | jq -e "$1" >/dev/null; }

api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"red"}}' >/dev/null
PODS=/api/v1/namespaces/red/pods
SVCS=/api/v1/namespaces/red/services

# ---------------------------------------------------------------- 1. YAML bodies
pod_yaml='apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: nginx:1
'
ans=$(req POST $PODS application/yaml application/json "$pod_yaml")
check "a YAML body creates (201)" test "$(code_of <<<"$ans")" = 201
check "... stored as JSON, defaulted" eval 'json $PODS/web | jq -e ".metadata.labels.app == \"web\" and .spec.containers[0].image == \"nginx:1\"" >/dev/null'
ans=$(req PUT $PODS/web application/yaml application/json "${pod_yaml/app: web/app: web2}")
check "a YAML body replaces (200)" test "$(code_of <<<"$ans")" = 200
check "... stored so" eval 'json $PODS/web | jq -e ".metadata.labels.app == \"web2\"" >/dev/null'
bomb='apiVersion: v1
kind: Pod
metadata: {name: bomb}
a0: &a0 [x, x, x, x, x, x, x, x, x, x]
a1: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]
a2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]
a3: &a3 [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]
a4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]
a5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]
a6: &a6 [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]
a7: &a7 [*a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6]
a8: &a8 [*a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7]
'
check "a YAML alias bomb: 413, refused at the value limit" reason 413 RequestEntityTooLarge "$(req POST $PODS application/yaml application/json "$bomb")"
check "... nothing stored" absent $PODS/bomb
deep=$(printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: deep}\nx: %s1%s\n' "$(printf '[%.0s' {1..5000})" "$(printf ']%.0s' {1..5000})")
ans=$(req POST $PODS application/yaml application/json "$deep")
check "a deeply nested flow: 400 from the parser's own depth bound (64), nothing stored" \
	eval 'reason 400 BadRequest "$ans" && body_of <<<"$ans" | jq -e ".message | contains(\"depth\")" >/dev/null && absent $PODS/deep'
two=$'apiVersion: v1\nkind: Pod\nmetadata: {name: one}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: two}\n'
check "two YAML documents in one request: 400" reason 400 BadRequest "$(req POST $PODS application/yaml application/json "$two")"
check "... neither stored" eval 'absent $PODS/one && absent $PODS/two'
ans=$(req PATCH $PODS/web application/apply-patch+yaml application/json 'metadata: {labels: {a: b}}')
check "PATCH with application/apply-patch+yaml (server-side apply): 415 naming the patch types" \
	eval 'reason 415 UnsupportedMediaType "$ans" && body_of <<<"$ans" | jq -e ".message | contains(\"application/merge-patch+json\")" >/dev/null'

# ---------------------------------------------------------------- 2. Accept
ans=$(req GET $PODS/web application/json application/yaml)
check "Accept: application/yaml on a get: YAML that parses back to the object" \
	eval '[ "$(code_of <<<"$ans")" = 200 ] && body_of <<<"$ans" | yaml_is ".kind == \"Pod\" and .metadata.name == \"web\""'
ans=$(req GET $PODS application/json 'text/html;q=0.9, application/yaml;q=0.5, application/json;q=0.4')
check "... on a list, chosen by q: a PodList" \
	eval 'body_of <<<"$ans" | yaml_is ".kind == \"PodList\" and (.items | length) == 1 and (.metadata.resourceVersion | length) > 0"'
ans=$(req GET $PODS/web application/json '*/*')
check "Accept: */* is JSON" eval 'body_of <<<"$ans" | jq -e ".kind == \"Pod\"" >/dev/null'
ans=$(req GET $PODS application/json 'application/json;as=Table;g=meta.k8s.io;v=v1, application/json')
check "the Table, as before" eval 'body_of <<<"$ans" | jq -e ".kind == \"Table\"" >/dev/null'
ans=$(req GET $PODS/web application/json 'text/html, application/vnd.kubernetes.protobuf')
check "Accept nothing satisfies: 406 naming the types served" \
	eval 'reason 406 NotAcceptable "$ans" && body_of <<<"$ans" | jq -e ".message | contains(\"application/yaml\")" >/dev/null'
check "a watch that accepts only YAML: 406 (watch events are JSON)" \
	reason 406 NotAcceptable "$(req GET "$PODS?watch=1&timeoutSeconds=1" application/json application/yaml)"
ans=$(req GET $PODS/nope application/json application/yaml)
check "a Status in YAML when YAML is asked for" eval '[ "$(code_of <<<"$ans")" = 404 ] && body_of <<<"$ans" | yaml_is ".kind == \"Status\" and .reason == \"NotFound\""'

# ---------------------------------------------------------------- 3. dryRun
rv0=$(list_rv $SVCS)
svc='{"apiVersion":"v1","kind":"Service","metadata":{"name":"front"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}'
ans=$(req POST "$SVCS?dryRun=All" application/json application/json "$svc")
ip=$(body_of <<<"$ans" | jq -r .spec.clusterIP)
check "dry create of a Service: 201 with its defaults and an allocated clusterIP" \
	eval '[ "$(code_of <<<"$ans")" = 201 ] && [ -n "$ip" ] && [ "$ip" != null ] && body_of <<<"$ans" | jq -e ".spec.ports[0].protocol == \"TCP\"" >/dev/null'
check "... nothing stored, the list's resourceVersion unchanged" eval 'absent $SVCS/front && [ "$(list_rv $SVCS)" = "$rv0" ]'
ans=$(req POST $SVCS application/json application/json "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"taker\"},\"spec\":{\"clusterIP\":\"$ip\",\"ports\":[{\"port\":80}]}}")
check "... the clusterIP it showed is free: a real create asking for it succeeds" test "$(code_of <<<"$ans")" = 201
rv1=$(json $PODS/web | jq -r .metadata.resourceVersion)
ans=$(req PUT "$PODS/web?dryRun=All" application/yaml application/json "${pod_yaml/app: web/app: dry}")
check "dry replace: 200 with the new labels" eval '[ "$(code_of <<<"$ans")" = 200 ] && body_of <<<"$ans" | jq -e ".metadata.labels.app == \"dry\"" >/dev/null'
ans=$(curl -s -X PATCH -H @- -H 'Content-Type: application/merge-patch+json' -w '\n%{http_code}\n' \
	--data-binary '{"metadata":{"labels":{"app":"patched"}}}' "$CTRL_URL$PODS/web?dryRun=All" <<<"Authorization: Bearer $ADMIN")
check "dry patch: 200 with the patched labels" eval '[ "$(code_of <<<"$ans")" = 200 ] && body_of <<<"$ans" | jq -e ".metadata.labels.app == \"patched\"" >/dev/null'
ans=$(req DELETE "$PODS/web?dryRun=All" application/json application/json)
check "dry delete: 200 with the object" eval '[ "$(code_of <<<"$ans")" = 200 ] && body_of <<<"$ans" | jq -e ".metadata.name == \"web\"" >/dev/null'
check "... after all three the pod is as it was (same resourceVersion, labels)" \
	eval 'json $PODS/web | jq -e ".metadata.resourceVersion == \"$rv1\" and .metadata.labels.app == \"web2\"" >/dev/null'
check "dryRun=Some: 400" reason 400 BadRequest "$(req POST "$SVCS?dryRun=Some" application/json application/json "$svc")"
manifest=$dir/svc.yaml
cat >"$manifest" <<'YAML'
apiVersion: v1
kind: Service
metadata:
  name: kube-dry
  namespace: red
spec:
  ports:
  - port: 8080
YAML
check "kubectl create --dry-run=server -f" eval 'kubectl create --dry-run=server --validate=false -f "$manifest" 2>&1 | grep -q "kube-dry created (server dry run)"'
check "... nothing stored" absent $SVCS/kube-dry
check "kubectl delete --dry-run=server" eval 'kubectl -n red delete service taker --dry-run=server 2>&1 | grep -q "taker\" deleted (server dry run)"'
check "... still there" test "$(api GET $SVCS/taker | code_of)" = 200

# ---------------------------------------------------------------- 4. status subresource
ans=$(req GET $PODS/web/status application/json application/json)
check "GET NAME/status: the object" eval 'body_of <<<"$ans" | jq -e ".kind == \"Pod\"" >/dev/null'
body=$(json $PODS/web | jq -c '.spec.containers[0].image = "evil:1" | .status = {"phase":"Running"}')
ans=$(req PUT $PODS/web/status application/json application/json "$body")
check "PUT NAME/status: 200" test "$(code_of <<<"$ans")" = 200
check "... the status written, the spec change ignored" \
	eval 'json $PODS/web | jq -e ".status.phase == \"Running\" and .spec.containers[0].image == \"nginx:1\"" >/dev/null'
ans=$(curl -s -X PATCH -H @- -H 'Content-Type: application/merge-patch+json' -w '\n%{http_code}\n' \
	--data-binary '{"spec":{"nodeName":"x"},"status":{"phase":"Pending"}}' "$CTRL_URL$PODS/web/status" <<<"Authorization: Bearer $ADMIN")
check "PATCH NAME/status: status only" \
	eval '[ "$(code_of <<<"$ans")" = 200 ] && json $PODS/web | jq -e ".status.phase == \"Pending\" and .spec.nodeName == null" >/dev/null'
ans=$(req PUT $PODS/web application/json application/json "$(json $PODS/web | jq -c '.status = {"phase":"Failed"} | .metadata.labels.main = "yes"')")
check "PUT of the main resource: 200, its status change ignored, the rest written" \
	eval '[ "$(code_of <<<"$ans")" = 200 ] && json $PODS/web | jq -e ".status.phase == \"Pending\" and .metadata.labels.main == \"yes\"" >/dev/null'
ans=$(curl -s -X PATCH -H @- -H 'Content-Type: application/merge-patch+json' -w '\n%{http_code}\n' \
	--data-binary '{"status":{"phase":"Succeeded"}}' "$CTRL_URL$PODS/web" <<<"Authorization: Bearer $ADMIN")
check "PATCH of the main resource: its status change ignored" \
	eval '[ "$(code_of <<<"$ans")" = 200 ] && json $PODS/web | jq -e ".status.phase == \"Pending\"" >/dev/null'
ans=$(req POST $SVCS application/json application/json '{"apiVersion":"v1","kind":"Service","metadata":{"name":"st"},"spec":{"ports":[{"port":80}]},"status":{"loadBalancer":{"ingress":[{"ip":"10.9.9.9"}]}}}')
check "a Service created with a status: 201, the status not taken (the VIP allocator's)" \
	eval '[ "$(code_of <<<"$ans")" = 201 ] && json $SVCS/st | jq -e ".status.loadBalancer.ingress == null" >/dev/null'
ans=$(req PUT $SVCS/st/status application/json application/json "$(json $SVCS/st | jq -c '.status.conditions = [{"type":"X","status":"True","reason":"R","message":"m","lastTransitionTime":"2024-01-01T00:00:00Z"}]')")
check "a Service's NAME/status: 200, written" \
	eval '[ "$(code_of <<<"$ans")" = 200 ] && json $SVCS/st | jq -e ".status.conditions[0].type == \"X\"" >/dev/null'
check "POST to NAME/status: 405" reason 405 MethodNotAllowed "$(req POST $PODS/web/status application/json application/json '{}')"
check "a kind without status subresource: 404" test "$(api GET /api/v1/namespaces/red/endpoints/x/status | code_of)" = 404
check "NAME/status of a missing object: 404" reason 404 NotFound "$(req PUT $PODS/nope/status application/json application/json '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nope"},"spec":{"containers":[{"name":"a","image":"b"}]}}')"

# ---------------------------------------------------------------- 5. Status reasons
check "AlreadyExists 409" reason 409 AlreadyExists "$(req POST $PODS application/yaml application/json "$pod_yaml")"
check "Conflict 409" reason 409 Conflict "$(req PUT $PODS/web application/json application/json "$(json $PODS/web | jq -c '.metadata.resourceVersion = "1"')")"
check "NotFound 404" reason 404 NotFound "$(req GET $PODS/nope application/json application/json)"
check "Invalid 422" reason 422 Invalid "$(req POST $PODS application/json application/json '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"a","image":"b"}]}}')"
check "MethodNotAllowed 405" reason 405 MethodNotAllowed "$(req POST /apis/network.openshift.io/v1/netnamespaces application/json application/json '{"metadata":{"name":"x"}}')"
check "UnsupportedMediaType 415" reason 415 UnsupportedMediaType "$(req POST $PODS text/plain application/json 'x')"
check "BadRequest 400" reason 400 BadRequest "$(req POST $PODS application/json application/json '{')"
check "Forbidden 403" reason 403 Forbidden "$(req DELETE /api/v1/namespaces/default application/json application/json)"

# details (docs/api.md, Errors): what each failure is about, as kube-apiserver's
# details_are OUT JQ: OUT's Status body satisfies JQ
details_are() { body_of <<<"$1" | jq -e "$2" >/dev/null || { echo "got: $1"; return 1; }; }
ans=$(req POST $PODS application/json application/json '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[{"image":"b"}]}}')
check "Invalid: details {name, kind: the Kind}" details_are "$ans" '.code == 422 and .details.name == "Bad_Name" and .details.kind == "Pod"'
check "... a cause per error, with its field and reason" details_are "$ans" \
	'[.details.causes[] | [.field, .reason]] | (index([["metadata.name", "FieldValueInvalid"]]) != null) and (index([["spec.containers[0].name", "FieldValueRequired"]]) != null)'
ans=$(req POST $SVCS application/json application/json '{"apiVersion":"v1","kind":"Service","metadata":{"name":"bad"},"spec":{"type":"Weird","ports":[{"port":80}]}}')
check "... a value not among the supported: FieldValueNotSupported" details_are "$ans" \
	'.code == 422 and .details.kind == "Service" and any(.details.causes[]; .field == "spec.type" and .reason == "FieldValueNotSupported")'
check "NotFound: details {name, kind: the resource}" details_are "$(req GET $PODS/nope application/json application/json)" \
	'.code == 404 and .reason == "NotFound" and .details == {"name": "nope", "kind": "pods"}'
check "... of the namespace a create needs: names the namespace" \
	details_are "$(req POST /api/v1/namespaces/ghost/pods application/yaml application/json "$pod_yaml")" \
	'.code == 404 and .details == {"name": "ghost", "kind": "namespaces"}'
check "... of a grouped kind: its group" details_are "$(req GET /apis/route.openshift.io/v1/namespaces/red/routes/r application/json application/json)" \
	'.details == {"name": "r", "group": "route.openshift.io", "kind": "routes"}'
check "AlreadyExists: details" details_are "$(req POST $PODS application/yaml application/json "$pod_yaml")" \
	'.code == 409 and .reason == "AlreadyExists" and .details == {"name": "web", "kind": "pods"}'
check "Conflict: details" details_are "$(req PUT $PODS/web application/json application/json "$(json $PODS/web | jq -c '.metadata.resourceVersion = "1"')")" \
	'.code == 409 and .reason == "Conflict" and .details == {"name": "web", "kind": "pods"}'
check "RequestEntityTooLarge 413, no details" details_are \
	"$(req POST $PODS application/json application/json "$($PY -c 'print("{\"a\":" * 40 + "1" + "}" * 40)')")" \
	'.code == 413 and .reason == "RequestEntityTooLarge" and .details == null'
hdr=$dir/timeout.headers
ans=$(curl -s -D "$hdr" -H @- -w '\n%{http_code}\n' "$CTRL_URL$PODS/web?resourceVersion=999999999" <<<"Authorization: Bearer $ADMIN")
check "Timeout 504 (a resourceVersion from the future): details.retryAfterSeconds and Retry-After" \
	eval 'details_are "$ans" ".code == 504 and .details.retryAfterSeconds == 1" && grep -qi "^Retry-After: 1" "$hdr"'
# TooManyRequests 429: weft refuses load only at accept (a client over its
# connection limit), before HTTP; the 429 Status is the builder's, tested in
# src/controller/status_json_test.c.

check_stop "the controller stops cleanly (no sanitizer report)"

# Expired 410: a watch from a compacted revision (a controller of short history)
dir2=$(tmpdir)
start_controller "$dir2" --history 2 --compact-interval 1 || { fail "start with short history"; finish; exit 1; }
ADMIN=$(cat "$CTRL_TOKEN_FILE")
for i in 1 2 3 4 5; do api POST /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x$i\"}}" >/dev/null; done
expired() { details_are "$(curl -s -m 2 -H @- -w '\n%{http_code}\n' "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=1" <<<"Authorization: Bearer $ADMIN")" \
	'.code == 410 and .reason == "Expired" and .details == null'; }
check "Expired 410: a watch from a compacted revision, no details" wait_for 10 expired
check_stop "the controller of short history stops cleanly"
finish
