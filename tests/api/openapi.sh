#!/usr/bin/env bash
# openapi.sh — the OpenAPI documents (docs/api.md, OpenAPI) as curl and
# kubectl read them: /openapi/v2 as JSON and as gnostic's protobuf
# (decoded by protoc), /openapi/v3 and a group-version with its hash,
# ETags and 304, 406, 401 without a token; then kubectl on top of them:
# explain (a Pod's containers and ports, a Route's and a HostSubnet's
# fields), client-side validation of create (an unknown field refused by
# name, an upstream manifest with fields weft keeps accepted), and apply
# of six kinds followed by a changed manifest of each (a field changed,
# another removed), checked on the stored objects.  Apply of the other
# Service types, Endpoints and the network.openshift.io kinds is in
# tests/api/kubectl.sh.
#
#   curl / kubectl ──TLS──► weft-controller (127.0.0.1:random)
#
# kubectl is the one on PATH (what a user has); run it again with another
# kubectl first on PATH to check that one.
cd "$(dirname "$0")/../.." && source tests/lib.sh

DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
anon() { curl -s -o /dev/null -w '%{http_code}' "$CTRL_URL$1"; }
# jq_ok PATH FILTER [curl args]: GET PATH as the admin answers 200 and FILTER holds
jq_ok() {
	local p=$1 f=$2 out; shift 2
	out=$(api GET "$p" "$@")
	[ "$(code_of <<<"$out")" = 200 ] || { echo "expected 200 from $p; seen: $(head -c 300 <<<"$out")"; return 1; }
	body_of <<<"$out" | jq -e "$f" >/dev/null || { echo "expected $f to hold of $p: $(body_of <<<"$out" | head -c 300)"; return 1; }
}
# head_of PATH HEADER [curl args]: the value of a response header
head_of() {
	local p=$1 h=$2; shift 2
	curl -s -o /dev/null -D - -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" "$@" "$CTRL_URL$p" |
		tr -d '\r' | grep -i "^$h:" | head -n 1 | cut -d' ' -f2-
}
code() { # code PATH [curl args]: the HTTP code of GET PATH as the admin
	local p=$1; shift
	curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" "$@" "$CTRL_URL$p"
}
PB='application/com.github.proto-openapi.spec.v2@v1.0+protobuf'

echo "== who may read them"
check "/openapi/v2 without a token: 401" test "$(anon /openapi/v2)" = 401
check "/openapi/v3 without a token: 401" test "$(anon /openapi/v3)" = 401
check "/openapi/v3/api/v1 without a token: 401" test "$(anon /openapi/v3/api/v1)" = 401
NT=$("$WEFTCTL" node-credential issue node-1)
check "/openapi/v2 with a node's credential: 200 (as discovery)" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $NT" "$CTRL_URL/openapi/v2")" = 200

echo "== /openapi/v2 as JSON"
curl -s -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" -o "$DIR/v2.json" "$CTRL_URL/openapi/v2"
check "swagger 2.0, with a definition for each of the 17 kinds (and NodeCredential) (its GVK) and its List" \
	jq -e '.swagger == "2.0" and ([.definitions[] | select(."x-kubernetes-group-version-kind") | ."x-kubernetes-group-version-kind"[0].kind] | map(select(endswith("List") | not)) | unique | length) == 18' "$DIR/v2.json"
check "the Pod's definition: its GVK, spec a reference to PodSpec" \
	jq -e '.definitions."io.k8s.api.core.v1.Pod" | ."x-kubernetes-group-version-kind" == [{"group":"","kind":"Pod","version":"v1"}] and .properties.spec."$ref" == "#/definitions/io.k8s.api.core.v1.PodSpec"' "$DIR/v2.json"
check "a container's ports: merged by containerPort (strategic merge), keyed by containerPort and protocol" \
	jq -e '.definitions."io.k8s.api.core.v1.Container".properties.ports | ."x-kubernetes-patch-merge-key" == "containerPort" and ."x-kubernetes-patch-strategy" == "merge" and ."x-kubernetes-list-map-keys" == ["containerPort","protocol"]' "$DIR/v2.json"
check "a Pod's PATCH: the three patch types, its GVK (what kubectl apply reads)" \
	jq -e '.paths."/api/v1/namespaces/{namespace}/pods/{name}".patch | (.consumes | index("application/strategic-merge-patch+json")) and ."x-kubernetes-group-version-kind".kind == "Pod"' "$DIR/v2.json"
check "a NetNamespace is only read: no post, put, patch or delete" \
	jq -e '.paths."/apis/network.openshift.io/v1/netnamespaces/{name}" | has("get") and (has("put") or has("patch") or has("delete") | not)' "$DIR/v2.json"
check "an open object (a pod's affinity) keeps what it is given" \
	jq -e '.definitions."io.k8s.api.core.v1.PodSpec".properties.affinity."x-kubernetes-preserve-unknown-fields" == true' "$DIR/v2.json"
check "Content-Type application/json" test "$(head_of /openapi/v2 Content-Type)" = application/json
check "Vary: Accept" test "$(head_of /openapi/v2 Vary)" = Accept
ETAG=$(head_of /openapi/v2 ETag)
check "an ETag: the SHA-512 of the body, upper-case hex, quoted" \
	test "$ETAG" = "\"$(sha512sum "$DIR/v2.json" | cut -d' ' -f1 | tr a-f A-F)\""
check "If-None-Match with it: 304" test "$(code /openapi/v2 -H "If-None-Match: $ETAG")" = 304
check "Accept: text/plain: 406" test "$(code /openapi/v2 -H 'Accept: text/plain')" = 406

echo "== /openapi/v2 as protobuf"
curl -s -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" -H "Accept: $PB" -o "$DIR/v2.pb" "$CTRL_URL/openapi/v2"
check "Accept: $PB: the protobuf content type" \
	test "$(head_of /openapi/v2 Content-Type -H "Accept: $PB")" = application/com.github.proto-openapi.spec.v2.v1.0+protobuf
if command -v protoc >/dev/null; then
	protoc --decode_raw <"$DIR/v2.pb" >"$DIR/v2.txt" 2>"$DIR/protoc.err"
	check "protoc decodes it" test -s "$DIR/v2.txt"
	check "Document.swagger (field 1) is 2.0, info.title (2.1) weft" \
		bash -c "head -n 3 '$DIR/v2.txt' | tr '\n' ' ' | grep -q '^1: \"2.0\" 2 {   1: \"weft\"'"
	# Document.definitions (9) holds one NamedSchema (1) per definition
	defs_pb() { awk '/^9 \{$/ { in9 = 1; next } /^\}$/ { in9 = 0 } in9 && /^  1 \{$/ { n++ } END { print n + 0 }' "$DIR/v2.txt"; }
	check "as many definitions (field 9) as the JSON has" test "$(defs_pb)" = "$(jq '.definitions | length' "$DIR/v2.json")"
	check "the Pod's definition is there by name, its GVK a vendor extension (NamedAny, Any.yaml)" \
		bash -c "grep -q '^    1: \"io.k8s.api.core.v1.Pod\"$' '$DIR/v2.txt' && grep -q 'x-kubernetes-group-version-kind' '$DIR/v2.txt' && grep -q 'kind: Pod\\\\n' '$DIR/v2.txt'"
else
	fail "protoc is installed (scripts/deps.sh installs protobuf-compiler)"
fi

echo "== /openapi/v3"
GVS='["api/v1","apis/discovery.k8s.io/v1","apis/lb.weft.io/v1","apis/network.openshift.io/v1","apis/network.weft.io/v1","apis/networking.k8s.io/v1","apis/route.openshift.io/v1"]'
check "the index: the seven group-versions, each with its hash" \
	jq_ok /openapi/v3 "(.paths | keys) == $GVS and all(.paths[]; .serverRelativeURL | test(\"^/openapi/v3/.*[?]hash=[0-9A-F]{128}\$\"))"
URL=$(api GET /openapi/v3 | body_of | jq -r '.paths."apis/networking.k8s.io/v1".serverRelativeURL')
check "networking.k8s.io/v1 at its hash: OpenAPI 3.0.0, the Ingress's schema with its GVK" \
	jq_ok "$URL" '.openapi == "3.0.0" and .components.schemas."io.k8s.api.networking.v1.Ingress"."x-kubernetes-group-version-kind"[0].kind == "Ingress"'
check "... and its paths' GVK (what kubectl explain follows)" \
	jq_ok "$URL" '.paths."/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses".get."x-kubernetes-group-version-kind" == {"group":"networking.k8s.io","kind":"Ingress","version":"v1"}'
check "... cached for good: Cache-Control public, immutable" test "$(head_of "$URL" Cache-Control)" = "public, immutable"
check "... and an Expires" test -n "$(head_of "$URL" Expires)"
check "... its ETag is the hash" test "$(head_of "$URL" ETag)" = "\"${URL##*hash=}\""
check "an old hash: 301 to the current one" \
	bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' '$CTRL_URL/openapi/v3/apis/networking.k8s.io/v1?hash=0BAD')\" = '301 $CTRL_URL$URL' ]"
check "a group-version weft does not serve: 404" test "$(code /openapi/v3/apis/apps/v1)" = 404

echo "== fieldValidation (what kubectl sends on create, apply and patch)"
POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"NAME"},"spec":{"foo":1,"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"bogus":true}]}]}}'
post_pod() { # post_pod NAME QUERY [curl args]: create the pod with spec.foo and a port's bogus
	api POST "/api/v1/namespaces/default/pods$2" -d "${POD/NAME/$1}" "${@:3}"
}
strict_refuses() {
	local out; out=$(post_pod strict '?fieldValidation=Strict')
	[ "$(code_of <<<"$out")" = 400 ] || { echo "expected 400: $out"; return 1; }
	body_of <<<"$out" | jq -e '.reason == "BadRequest" and .message == "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.foo\", unknown field \"spec.containers[0].ports[0].bogus\""' >/dev/null ||
		{ echo "$out"; return 1; }
	[ "$(code /api/v1/namespaces/default/pods/strict)" = 404 ]
}
check "Strict: 400 naming each unknown field as kube-apiserver does; nothing stored" strict_refuses
warns() {
	local h; h=$(post_pod warned '?fieldValidation=Warn' -D - | tr -d '\r')
	grep -q '^201$' <<<"$h" && grep -qx 'Warning: 299 - "unknown field \\"spec.foo\\""' <<<"$h" &&
		grep -qx 'Warning: 299 - "unknown field \\"spec.containers\[0\].ports\[0\].bogus\\""' <<<"$h" || { echo "$h"; return 1; }
}
check "Warn: created, a Warning header for each unknown field" warns
check "Ignore: created, the unknown field kept (as without the parameter)" \
	bash -c "$(declare -f api post_pod code_of); POD='$POD' CTRL_URL=$CTRL_URL CTRL_CA=$CTRL_CA CTRL_TOKEN_FILE=$CTRL_TOKEN_FILE; [ \"\$(post_pod ignored '?fieldValidation=Ignore' | code_of)\" = 201 ]"
check "... stored with spec.foo" jq_ok /api/v1/namespaces/default/pods/ignored '.spec.foo == 1'
check "fieldValidation=strict (not a value Kubernetes takes): 400" \
	bash -c "$(declare -f api post_pod code_of); POD='$POD' CTRL_URL=$CTRL_URL CTRL_CA=$CTRL_CA CTRL_TOKEN_FILE=$CTRL_TOKEN_FILE; post_pod x '?fieldValidation=strict' | grep -q 'Unsupported value: \\\\\"strict\\\\\"'"
patch_code() { # patch_code TYPE PATCH: the code of a Strict PATCH of the pod ignored
	curl -s -o /dev/null -w '%{http_code}' -X PATCH -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
		-H "Content-Type: application/$1" --data-binary "$2" \
		"$CTRL_URL/api/v1/namespaces/default/pods/ignored?fieldValidation=Strict"
}
check "Strict PATCH (strategic) of a known field: 200, though the stored object has spec.foo" \
	test "$(patch_code strategic-merge-patch+json '{"metadata":{"labels":{"a":"b"}},"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"name":"c","image":"j"}]}}')" = 200
check "Strict PATCH (merge) of an unknown field: 400" test "$(patch_code merge-patch+json '{"spec":{"bar":1}}')" = 400
check "Strict PATCH (JSON Patch) adding an unknown field: 400" \
	test "$(patch_code json-patch+json '[{"op":"add","path":"/spec/bar","value":1}]')" = 400
check "Strict PATCH (JSON Patch) removing one: 200" \
	test "$(patch_code json-patch+json '[{"op":"remove","path":"/spec/foo"}]')" = 200
check "the v3 PATCH of a Pod lists fieldValidation (kubectl 1.28 then leaves validation to the server)" \
	jq_ok "$(api GET /openapi/v3 | body_of | jq -r '.paths."api/v1".serverRelativeURL')" \
	'[.paths."/api/v1/namespaces/{namespace}/pods/{name}".patch.parameters[].name] | index("fieldValidation")'

echo "== kubectl"
if ! command -v kubectl >/dev/null; then
	fail "kubectl is installed (scripts/deps.sh installs kubernetes-client)"
	check_stop "the controller stops cleanly"
	finish
	exit
fi
K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" --cache-dir "$DIR/kube-cache" "$@"; }
echo "  ($(K version --client 2>/dev/null | head -n 1))"
# explains WHAT TEXT...: kubectl explain WHAT prints every TEXT
explains() {
	local what=$1 out t; shift
	out=$(K explain "$what" 2>&1) || { echo "kubectl explain $what failed: $out"; return 1; }
	for t in "$@"; do grep -qF -- "$t" <<<"$out" || { echo "no '$t' in: $out"; return 1; }; done
}
check "explain pod.spec.containers: its description and fields" \
	explains pod.spec.containers "The pod's containers." "ports" "image" "-required-"
check "explain pod.spec.containers.ports: containerPort, required, described" \
	explains pod.spec.containers.ports "containerPort" "The port number, 1-65535." "merges them by containerPort"
check "explain route.spec.tls.termination: a Route's field" \
	explains route.spec.tls.termination "edge (the load balancer terminates TLS)"
check "explain hostsubnet.subnet: a HostSubnet's field" explains hostsubnet.subnet "The node's pod subnet"

cat >"$DIR/unknown.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: unknown}
spec:
  foo: 1
  containers: [{name: web, image: nginx}]
EOF
cat >"$DIR/upstream.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: upstream, labels: {app: upstream}}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 30
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: web
    image: nginx
    args: [-g, daemon off;]
    env: [{name: MODE, value: prod}]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
    livenessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 10}
    volumeMounts: [{name: data, mountPath: /data}]
    ports: [{containerPort: 80, name: http, protocol: TCP}]
EOF
refused_unknown() {
	local out
	out=$(K create --validate=true -f "$DIR/unknown.yaml" 2>&1) && { echo "created: $out"; return 1; }
	grep -qE 'unknown field "(spec\.)?foo"' <<<"$out" || { echo "not named: $out"; return 1; }
	! K get pod unknown >/dev/null 2>&1
}
check "create --validate=true of a Pod with spec.foo: refused, naming the field; nothing stored" refused_unknown
check "create --validate=true of an upstream Pod (resources, probes, volumes, args): created" \
	K create --validate=true -f "$DIR/upstream.yaml"

# Six kinds, applied, then each changed (a field) and cut (another removed).
cat >"$DIR/apply1.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web, tier: front}}
spec:
  containers: [{name: web, image: "nginx:1.25", ports: [{containerPort: 80, name: http}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}, {name: https, port: 443}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress: [{from: [{podSelector: {matchLabels: {role: client}}}], ports: [{port: 80, protocol: TCP}]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: weft
  rules:
  - host: a.example.com
    http: {paths: [{path: /a, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
  - host: b.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web}
spec:
  host: web.example.com
  path: /app
  to: {kind: Service, name: web}
  port: {targetPort: http}
---
apiVersion: v1
kind: Secret
metadata: {name: web}
type: Opaque
data: {user: YWRtaW4=, pass: c2VjcmV0}
EOF
sed -e 's/app: web, tier: front}}/app: web}}/' -e 's/nginx:1.25/nginx:1.27/' \
	-e 's/labels: {tier: front}/labels: {tier: back}/' -e 's/, {name: https, port: 443}//' \
	-e 's/role: client/role: frontend/' -e 's/, ports: \[{port: 80, protocol: TCP}\]//' \
	-e '/ingressClassName: weft/d' -e 's#path: /a,#path: /b,#' -e '/host: b.example.com/,+1d' \
	-e 's#path: /app#path: /v2#' -e '/port: {targetPort: http}/d' \
	-e 's/user: YWRtaW4=, pass: c2VjcmV0/user: cm9vdA==/' "$DIR/apply1.yaml" >"$DIR/apply2.yaml"
applies() { # applies FILE WANT: kubectl apply FILE, every object WANT, no warning
	local out
	out=$(K apply -f "$1" 2>&1) || { echo "apply failed: $out"; return 1; }
	[ "$(grep -c " $2\$" <<<"$out")" = 6 ] || { echo "expected 6 '$2': $out"; return 1; }
	! grep -qi warning <<<"$out" || { echo "$out"; return 1; }
}
stored() { # stored PATH FILTER
	local out; out=$(api GET "$1")
	body_of <<<"$out" | jq -e "$2" >/dev/null || { echo "expected $2 of $1: $(body_of <<<"$out" | head -c 400)"; return 1; }
}
check "apply of a Pod, Service, NetworkPolicy, Ingress, Route and Secret: created" applies "$DIR/apply1.yaml" created
check "the manifests changed (a field) and cut (another): apply configures each, without a warning" \
	applies "$DIR/apply2.yaml" configured
NS=/namespaces/default
check "the Pod: image changed, label tier removed (strategic merge, by container name)" \
	stored /api/v1$NS/pods/web '.spec.containers == [{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"name":"http","protocol":"TCP"}]}] and .metadata.labels == {"app":"web"}'
check "the Service: label changed, port 443 removed (merged by port), 80 kept" \
	stored /api/v1$NS/services/web '.metadata.labels == {"tier":"back"} and ([.spec.ports[].port] == [80])'
check "the NetworkPolicy: peer changed, ports removed" \
	stored /apis/networking.k8s.io/v1$NS/networkpolicies/web '.spec.ingress == [{"from":[{"podSelector":{"matchLabels":{"role":"frontend"}}}]}]'
check "the Ingress: path changed, second rule and ingressClassName removed" \
	stored /apis/networking.k8s.io/v1$NS/ingresses/web '(.spec.rules | length) == 1 and .spec.rules[0].http.paths[0].path == "/b" and (.spec | has("ingressClassName") | not)'
check "the Route (a merge patch: not a kind of kubectl's): path changed, port removed" \
	stored /apis/route.openshift.io/v1$NS/routes/web '.spec.path == "/v2" and (.spec | has("port") | not) and .spec.to.name == "web"'
check "the Secret: a value changed, a key removed" stored /api/v1$NS/secrets/web '.data == {"user":"cm9vdA=="}'
check "apply of the same again: unchanged" applies "$DIR/apply2.yaml" unchanged
check_stop "the controller stops cleanly"
finish
