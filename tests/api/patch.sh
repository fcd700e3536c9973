#!/usr/bin/env bash
# patch.sh — PATCH over the real API, with curl, weftctl and kubectl.
#
#   curl / weftctl patch / kubectl patch ──HTTPS──► weft-controller ──► DIR/weft.db
#   curl with node-1's credential ─────────────────┘
#
# 1. each patch type on a Pod: a merge patch and a JSON Patch add and
#    remove labels; a strategic merge patch changes one container's image
#    (the other container and the other fields kept) and deletes a port by
#    its key with $patch: delete.
# 2. a Service: a port added by strategic merge keeps the stored port's
#    nodePort and the clusterIP; a merge patch replaces the list.
# 3. refusals, each storing nothing: a JSON Patch test that fails (422, as
#    kube-apiserver), a Content-Type that is no patch type (415), a missing
#    object (404), a changed name or kind (400, as a PUT), a stale
#    resourceVersion (409), a malformed patch (400), too many operations
#    (413), dryRun=Some (400), a collection (405), what only the controller
#    writes (405, as a PUT).
# 4. a node credential patches its own pod, not another node's (403), and
#    cannot move its pod to another node.
# 5. weftctl patch, each type; 6. kubectl patch, each type.
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }
ADMIN=$(cat "$CTRL_TOKEN_FILE")
POD=/api/v1/namespaces/red/pods/web
SVC=/api/v1/namespaces/red/services/front

# patch TYPE PATH BODY [TOKEN]: a PATCH of that type (json, merge,
# strategic, or a Content-Type as it is); the body, then the code.
patch() {
	local ct=$1 p=$2 body=$3 token=${4:-$ADMIN}
	case $ct in
	json) ct=application/json-patch+json ;;
	merge) ct=application/merge-patch+json ;;
	strategic) ct=application/strategic-merge-patch+json ;;
	esac
	curl -s -X PATCH -H @- -H "Content-Type: $ct" -w '\n%{http_code}\n' --data-binary "$body" "$CTRL_URL$p" \
		<<<"Authorization: Bearer $token"
}
# answers CODE REASON TYPE PATH BODY [TOKEN]: the PATCH gets that code and Status reason
answers() {
	local code=$1 reason=$2 out; shift 2
	out=$(patch "$@")
	[ "$(code_of <<<"$out")" = "$code" ] && { [ "$code" = 200 ] || [ "$(body_of <<<"$out" | jq -r .reason)" = "$reason" ]; } ||
		{ echo "got: $out"; return 1; }
}
# stored PATH JQ: true when the stored object satisfies the jq filter
stored() {
	api GET "$1" | body_of | jq -e "$2" >/dev/null || { echo "stored: $(api GET "$1" | body_of)"; return 1; }
}
rv() { api GET "$1" | body_of | jq -r .metadata.resourceVersion; }

api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"red"}}' >/dev/null
api POST /api/v1/namespaces/red/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web","tier":"a"}},
	"spec":{"containers":[{"name":"web","image":"nginx:1","args":["-g"],"ports":[{"containerPort":80},{"containerPort":443}]},
	{"name":"log","image":"busybox:1"}]}}' >/dev/null

# ---------------------------------------------------------------- 1. a Pod
check "merge patch: a label added, one removed (null)" \
	answers 200 - merge $POD '{"metadata":{"labels":{"team":"x","tier":null}}}'
check "... stored so" stored $POD '.metadata.labels == {"app":"web","team":"x"}'
check "JSON Patch: a label added (~1 for /), one removed" \
	answers 200 - json $POD '[{"op":"add","path":"/metadata/labels/weft.io~1role","value":"db"},{"op":"remove","path":"/metadata/labels/team"}]'
check "... stored so" stored $POD '.metadata.labels == {"app":"web","weft.io/role":"db"}'
check "strategic merge patch: the web container's image changed" \
	answers 200 - strategic $POD '{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}'
check "... its args and ports kept, the other container untouched" stored $POD \
	'.spec.containers == [{"name":"web","image":"nginx:2","args":["-g"],"ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443,"protocol":"TCP"}]},{"name":"log","image":"busybox:1"}]'
check "strategic merge patch: port 443 deleted by its key (\$patch: delete)" \
	answers 200 - strategic $POD '{"spec":{"containers":[{"name":"web","ports":[{"containerPort":443,"$patch":"delete"}]}]}}'
check "... port 80 kept" stored $POD '.spec.containers[0].ports == [{"containerPort":80,"protocol":"TCP"}] and (.spec.containers | length) == 2'
rev=$(rv $POD)
check "a patch that changes nothing: 200, the revision stays (nothing written)" \
	answers 200 - merge $POD '{"metadata":{"labels":{"app":"web"}}}'
check "... same resourceVersion" test "$(rv $POD)" = "$rev"
answer=$(patch strategic $POD '{"metadata":{"labels":{"step":"answer"}}}')
check "the answer is the stored object, with its new resourceVersion" \
	eval '[ "$(body_of <<<"$answer" | jq -r .metadata.resourceVersion)" = "$(rv $POD)" ] && body_of <<<"$answer" | jq -e ".metadata.labels.step == \"answer\"" >/dev/null'

# ---------------------------------------------------------------- 2. a Service
api POST /api/v1/namespaces/red/services -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"front"},
	"spec":{"type":"NodePort","selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":8080}]}}' >/dev/null
cip=$(api GET $SVC | body_of | jq -r .spec.clusterIP)
np=$(api GET $SVC | body_of | jq -r '.spec.ports[0].nodePort')
check "the Service has a clusterIP and a nodePort" test -n "$cip" -a "$np" -gt 0
check "strategic merge patch adds port 443" \
	answers 200 - strategic $SVC '{"spec":{"ports":[{"name":"https","port":443,"targetPort":8443}]}}'
check "... port 80 keeps its nodePort, the Service its clusterIP, 443 gets a nodePort of its own" stored $SVC \
	"(.spec.ports | length) == 2 and (.spec.ports[] | select(.port == 80) | .nodePort) == $np and .spec.clusterIP == \"$cip\" and (.spec.ports[] | select(.port == 443) | .nodePort) > 0"
check "a merge patch replaces the list: port 80 goes" answers 200 - merge $SVC '{"spec":{"ports":[{"port":443,"targetPort":8443}]}}'
check "... only 443 left, the clusterIP kept" stored $SVC "[.spec.ports[].port] == [443] and .spec.clusterIP == \"$cip\""

# ---------------------------------------------------------------- 3. refusals
before=$(api GET /api/v1/namespaces | body_of | jq -r .metadata.resourceVersion)
check "a JSON Patch test that fails: 422 Invalid (as kube-apiserver)" \
	answers 422 Invalid json $POD '[{"op":"test","path":"/metadata/labels/app","value":"db"},{"op":"add","path":"/metadata/labels/x","value":"y"}]'
check "... naming the operation, its path and both values" eval \
	'patch json $POD "[{\"op\":\"test\",\"path\":\"/metadata/labels/app\",\"value\":\"db\"}]" | grep -qF "operation 0 (test /metadata/labels/app): the value is \\\"web\\\", not \\\"db\\\""'
check "a path that is not there: 422" answers 422 Invalid json $POD '[{"op":"replace","path":"/spec/nope/x","value":1}]'
check "Content-Type application/json: 415" answers 415 UnsupportedMediaType application/json $POD '{}'
check "... naming it and the three patch types" eval \
	'patch application/json $POD "{}" | body_of | jq -r .message | grep -q "'"'"'application/json'"'"' is not a patch type: send application/json-patch+json (JSON Patch), application/merge-patch+json or application/strategic-merge-patch+json"'
check "Content-Type application/apply-patch+yaml (server-side apply): 415" \
	answers 415 UnsupportedMediaType application/apply-patch+yaml $POD '{}'
no_ct() { curl -s -X PATCH -H "Authorization: Bearer $ADMIN" -H 'Content-Type:' -o /dev/null -w '%{http_code}' --data-binary '{}' "$CTRL_URL$POD"; }
check "no Content-Type: 415" test "$(no_ct)" = 415
check "a missing object: 404 NotFound" answers 404 NotFound merge /api/v1/namespaces/red/pods/nope '{"metadata":{"labels":{"a":"b"}}}'
check "a patch that renames: 400, as a PUT" answers 400 BadRequest merge $POD '{"metadata":{"name":"other"}}'
check "a patch that moves it to another namespace: 400" answers 400 BadRequest json $POD '[{"op":"replace","path":"/metadata/namespace","value":"blue"}]'
check "a patch that changes its kind: 400" answers 400 BadRequest merge $POD '{"kind":"Secret"}'
check "a patch that changes its apiVersion: 400" answers 400 BadRequest merge $POD '{"apiVersion":"v2"}'
check "a patch that makes it invalid: 422" answers 422 Invalid strategic $POD '{"spec":{"containers":[{"name":"web","ports":[{"containerPort":70000}]}]}}'
check "a stale resourceVersion in the patch: 409 Conflict" answers 409 Conflict merge $POD '{"metadata":{"resourceVersion":"1","labels":{"a":"b"}}}'
check "the current resourceVersion in the patch: 200" answers 200 - merge $POD "{\"metadata\":{\"resourceVersion\":\"$(rv $POD)\"}}"
check "a JSON Patch that is not a list: 400" answers 400 BadRequest json $POD '{"op":"add"}'
check "an unknown operation: 400" answers 400 BadRequest json $POD '[{"op":"frob","path":"/a"}]'
check "an unknown directive: 400" answers 400 BadRequest strategic $POD '{"metadata":{"labels":{"$patch":"frob"}}}'
check "a merge patch that is not an object: 400" answers 400 BadRequest merge $POD '[1]'
check "not JSON: 400" answers 400 BadRequest merge $POD '{"a":'
python3 -c 'import json; print(json.dumps([{"op":"test","path":"/kind","value":"Pod"}] * 10001))' >"$dir/ops.json"
check "10001 operations: 413 (the limit is 10000)" answers 413 RequestEntityTooLarge json $POD "@$dir/ops.json"
dry() { curl -s -X PATCH -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/merge-patch+json' -o /dev/null -w '%{http_code}' --data-binary '{}' "$CTRL_URL$POD?dryRun=Some"; }
check "dryRun=Some: 400 (only All is a dry run; tests/api/requests.sh has dryRun=All)" test "$(dry)" = 400
check "PATCH of a collection: 405" answers 405 MethodNotAllowed merge /api/v1/namespaces/red/pods '{}'
check "a NetNamespace: 405, as a PUT" answers 405 MethodNotAllowed merge /apis/network.openshift.io/v1/netnamespaces/red '{"netid":0}'
check "none of these stored anything" test "$(api GET /api/v1/namespaces | body_of | jq -r .metadata.resourceVersion)" = "$before"

# ---------------------------------------------------------------- 4. node credentials
N1=$("$WEFTCTL" node-credential issue node-1)
N2=$("$WEFTCTL" node-credential issue node-2)
node_body() { echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}"; }
as() { curl -s -X POST -H @- -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' --data-binary "$2" "$CTRL_URL/api/v1/nodes" <<<"Authorization: Bearer $1"; }
check "node-1 and node-2 register themselves" test "$(as "$N1" "$(node_body node-1 192.168.60.1)")$(as "$N2" "$(node_body node-2 192.168.60.2)")" = 201201
for p in a:node-1 b:node-2; do
	api POST /api/v1/namespaces/red/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"${p%%:*}\"},\"spec\":{\"nodeName\":\"${p#*:}\"}}" >/dev/null
done
check "node-1 patches a pod bound to it" answers 200 - strategic /api/v1/namespaces/red/pods/a '{"metadata":{"labels":{"seen":"1"}}}' "$N1"
check "node-1 may not patch node-2's pod: 403" answers 403 Forbidden strategic /api/v1/namespaces/red/pods/b '{"metadata":{"labels":{"x":"1"}}}' "$N1"
whose() { patch merge /api/v1/namespaces/red/pods/b '{"spec":{"nodeName":"node-1"}}' "$N1" | grep -qF 'cannot update resource \"pods\" in API group \"\" in the namespace \"red\": the pod is bound to node \"node-2\"'; }
check "node-1 may not take node-2's pod by patching spec.nodeName: 403, saying whose pod it is" whose
check "node-1 may not move its pod to node-2 by a patch: 403" \
	answers 403 Forbidden json /api/v1/namespaces/red/pods/a '[{"op":"replace","path":"/spec/nodeName","value":"node-2"}]' "$N1"
check "node-1 may not patch a Service's spec: 403" answers 403 Forbidden merge $SVC '{"spec":{"selector":{"app":"x"}}}' "$N1"
check "node-1 may not patch a Secret: 403" answers 403 Forbidden merge /api/v1/namespaces/red/secrets/s '{}' "$N1"
check "node-1 patches its own HostSubnet's annotations (as a PUT may)" \
	answers 200 - merge /apis/network.openshift.io/v1/hostsubnets/node-1 '{"metadata":{"annotations":{"weft.io/note":"x"}}}' "$N1"
check "nobody patches a HostSubnet's subnet: 405, as a PUT" \
	answers 405 MethodNotAllowed merge /apis/network.openshift.io/v1/hostsubnets/node-1 '{"subnet":"10.128.100.0/23"}'
check "red/b is as the admin made it" stored /api/v1/namespaces/red/pods/b '.spec.nodeName == "node-2" and .metadata.labels == null'

# ---------------------------------------------------------------- 5. weftctl patch
W() { "$WEFTCTL" "$@"; }
check "weftctl patch (strategic, the default) prints what it patched" \
	grep -qx "pod/red/web patched" <(W patch pod web -n red -p '{"spec":{"containers":[{"name":"log","image":"busybox:2"}]}}')
check "... the log container's image changed, web's kept" stored $POD '[.spec.containers[].image] == ["nginx:2","busybox:2"]'
check "weftctl patch --type merge, KIND/NAME, a YAML patch" \
	grep -qx "pod/red/web patched" <(W patch -n red pods/web --type merge -p 'metadata: {labels: {via: weftctl, step: null}}')
check "... stored" stored $POD '.metadata.labels.via == "weftctl" and .metadata.labels.step == null'
check "weftctl patch --type json" \
	grep -qx "service/red/front patched" <(W patch svc front -n red --type json -p '[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]')
check "... stored" stored $SVC '.metadata.annotations == {"a":"b"}'
check "weftctl patch of a cluster-scoped kind" \
	grep -qx "namespace/red patched" <(W patch ns red -p '{"metadata":{"labels":{"env":"test"}}}')
wexpect() { # wexpect RC PATTERN CMD...: exit status RC, output matching PATTERN
	local want=$1 pat=$2 out rc=0; shift 2
	out=$("$@" 2>&1) || rc=$?
	[ "$rc" = "$want" ] && grep -qE -- "$pat" <<<"$out" || { echo "exit $rc: $out"; return 1; }
}
check "weftctl patch of a missing object: exit 1, NotFound" \
	wexpect 1 'Error from server \(NotFound\): pods "nope" not found' W patch pod nope -n red -p '{}'
check "weftctl patch with a failing test: exit 1, Invalid" \
	wexpect 1 'Error from server \(Invalid\): operation 0 \(test /kind\)' W patch pod web -n red --type json -p '[{"op":"test","path":"/kind","value":"Service"}]'
check "weftctl patch with a patch that does not parse: exit 1, nothing sent" \
	wexpect 1 'error: the patch is not JSON or YAML' W patch pod web -n red -p '{"a":'
check "weftctl patch --type yaml: usage (exit 2)" wexpect 2 'must be strategic, merge or json' W patch pod web -n red --type yaml -p '{}'
check "weftctl patch without -p: usage (exit 2)" wexpect 2 'patch needs -p PATCH' W patch pod web -n red
check "weftctl patch without a name: usage (exit 2)" wexpect 2 'patch needs a NAME' W patch pod -p '{}'

# ---------------------------------------------------------------- 6. kubectl patch
# kubectl reads the API discovery (/api, /apis) before any request; a
# controller without it gets these checks reported as waiting for it,
# neither passed nor failed.  Without kubectl on the machine they are
# skipped, saying so.
K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" "$@"; }
if ! command -v kubectl >/dev/null; then
	echo "  skip kubectl patch: no kubectl on this machine"
elif [ "$(api GET /api | code_of)" != 200 ]; then
	echo "  skip kubectl patch: this controller serves no API discovery (GET /api: $(api GET /api | code_of)); kubectl needs it, and these checks run once it is there"
else
	check "kubectl patch (strategic, its default)" \
		grep -q "pod/web patched" <(K -n red patch pod web -p '{"spec":{"containers":[{"name":"web","image":"nginx:3"}]}}' 2>&1)
	check "... stored, the other container kept" stored $POD '[.spec.containers[].image] == ["nginx:3","busybox:2"]'
	check "kubectl patch --type merge" \
		grep -q "pod/web patched" <(K -n red patch pod web --type merge -p '{"metadata":{"labels":{"via":"kubectl"}}}' 2>&1)
	check "... stored" stored $POD '.metadata.labels.via == "kubectl"'
	check "kubectl patch --type json" \
		grep -q "service/front patched" <(K -n red patch svc front --type json -p '[{"op":"replace","path":"/metadata/annotations/a","value":"c"}]' 2>&1)
	check "... stored" stored $SVC '.metadata.annotations.a == "c"'
	check "kubectl patch of a JSON Patch test that fails: refused" \
		eval '! K -n red patch pod web --type json -p "[{\"op\":\"test\",\"path\":\"/kind\",\"value\":\"Node\"}]" >/dev/null 2>&1'
fi

check_stop "the controller stops cleanly (no sanitizer report)"
check "fsck finds the store consistent" "$CONTROLLER" --data-dir "$dir" --fsck
finish
