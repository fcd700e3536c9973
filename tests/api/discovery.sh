#!/usr/bin/env bash
# discovery.sh — what Kubernetes clients read before any object: /version,
# /api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION, against the kind
# table of docs/api.md; who may read them (anyone /version, any
# authenticated client the rest); and kubectl on top of them (version,
# api-resources, get of cluster-scoped and namespaced kinds, OpenShift's).
#
#   curl / kubectl ──TLS──► weft-controller (127.0.0.1:random)
cd "$(dirname "$0")/../.." && source tests/lib.sh

DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
anon() { curl -s -w '\n%{http_code}\n' "$CTRL_URL$1"; }
# jq_ok PATH FILTER: GET PATH as the admin answers 200 and FILTER holds
jq_ok() {
	local out; out=$(api GET "$1")
	[ "$(code_of <<<"$out")" = 200 ] || { echo "expected 200 from $1; seen: $out"; return 1; }
	body_of <<<"$out" | jq -e "$2" >/dev/null || { echo "expected $2 to hold of $1: $(body_of <<<"$out")"; return 1; }
}
is_code() { # is_code WANT CMD...: the last line CMD prints is WANT
	local want=$1 out; shift
	out=$("$@")
	[ "$(code_of <<<"$out")" = "$want" ] || { echo "expected HTTP $want; seen: $out"; return 1; }
}

echo "== /version"
check "/version without a token: 200, major 1, a gitVersion kubectl can parse" \
	bash -c "out=\$(curl -sf '$CTRL_URL/version') && jq -e '.major == \"1\" and (.gitVersion | test(\"^v1\\\\.[0-9]+\\\\.[0-9]+\"))' <<<\"\$out\""

echo "== /api and /apis"
check "/api without a token: 401" is_code 401 anon /api
check "/api: APIVersions [v1] and the address the client used" \
	jq_ok /api ".kind == \"APIVersions\" and .versions == [\"v1\"] and .serverAddressByClientCIDRs[0].serverAddress == \"${CTRL_URL#https://}\""
check "/api/ (a trailing slash) too" jq_ok /api/ '.kind == "APIVersions"'
CORE='["endpoints","namespaces","nodes","pods","pods/status","secrets","services","services/status"]'
check "/api/v1: the core kinds of docs/api.md and their status subresources, no others" \
	jq_ok /api/v1 ".kind == \"APIResourceList\" and .groupVersion == \"v1\" and ([.resources[].name] | sort) == $CORE"
check "/api/v1 pods: namespaced, Kind Pod, short name po, category all, the verbs the API serves" \
	jq_ok /api/v1 '.resources[] | select(.name == "pods") | .namespaced and .kind == "Pod" and .singularName == "pod" and .shortNames == ["po"] and .categories == ["all"] and (.verbs | sort) == ["create","delete","get","list","patch","update","watch"]'
check "/api/v1 nodes and namespaces are cluster-scoped" \
	jq_ok /api/v1 '[.resources[] | select(.name == "nodes" or .name == "namespaces") | .namespaced] == [false, false]'
check "/apis: discovery.k8s.io, lb.weft.io, networking.k8s.io, network.openshift.io, network.weft.io, route.openshift.io and weft.io, v1 preferred" \
	jq_ok /apis '.kind == "APIGroupList" and ([.groups[].name] | sort) == ["discovery.k8s.io","lb.weft.io","network.openshift.io","network.weft.io","networking.k8s.io","route.openshift.io","weft.io"] and all(.groups[]; .preferredVersion.version == "v1")'
check "/apis/discovery.k8s.io: the APIGroup" \
	jq_ok /apis/discovery.k8s.io '.kind == "APIGroup" and .name == "discovery.k8s.io" and .versions[0].groupVersion == "discovery.k8s.io/v1"'
check "/apis/discovery.k8s.io/v1: endpointslices, namespaced, Kind EndpointSlice, no short name (as kubectl), every verb" \
	jq_ok /apis/discovery.k8s.io/v1 '.groupVersion == "discovery.k8s.io/v1" and [.resources[] | [.name, .kind, .singularName, .namespaced, (.verbs | sort), (.shortNames // [])]] == [["endpointslices","EndpointSlice","endpointslice",true,["create","delete","get","list","patch","update","watch"],[]]]'
check "/apis/network.weft.io: the APIGroup" \
	jq_ok /apis/network.weft.io '.kind == "APIGroup" and .name == "network.weft.io" and .versions[0].groupVersion == "network.weft.io/v1"'
check "/apis/network.weft.io/v1: podpeerslices (read verbs only, short name pps) and tracerequests (every verb) with their status, cluster-scoped" \
	jq_ok /apis/network.weft.io/v1 '.groupVersion == "network.weft.io/v1" and [.resources[] | [.name, .kind, .singularName, .namespaced, (.verbs | sort), .shortNames]] == [["podpeerslices","PodPeerSlice","podpeerslice",false,["get","list","watch"],["pps"]],["tracerequests","TraceRequest","tracerequest",false,["create","delete","get","list","patch","update","watch"],null],["tracerequests/status","TraceRequest","",false,["get","patch","update"],null]]'
check "/apis/weft.io/v1: nodecredentials, cluster-scoped, the verbs its path serves, short name and category" \
	jq_ok /apis/weft.io/v1 '.groupVersion == "weft.io/v1" and [.resources[] | [.name, .kind, .namespaced, (.verbs | sort), .shortNames, .categories]] == [["nodecredentials","NodeCredential",false,["create","delete","get","list"],["nodecred"],["weft"]]]'
check "/apis/weft.io: the APIGroup" jq_ok /apis/weft.io '.kind == "APIGroup" and .preferredVersion.groupVersion == "weft.io/v1"'
check "the OpenShift network kinds are in the category weft" \
	jq_ok /apis/network.openshift.io/v1 'all(.resources[]; .categories == ["weft"])'
check "/apis/networking.k8s.io: the APIGroup" \
	jq_ok /apis/networking.k8s.io '.kind == "APIGroup" and .name == "networking.k8s.io" and .versions[0].groupVersion == "networking.k8s.io/v1"'
check "/apis/networking.k8s.io/v1: ingresses and networkpolicies, namespaced" \
	jq_ok /apis/networking.k8s.io/v1 '.groupVersion == "networking.k8s.io/v1" and ([.resources[] | select(.namespaced) | .name] | sort) == ["ingresses","ingresses/status","networkpolicies"]'
check "/apis/network.openshift.io/v1: the controller writes hostsubnets (nodes their annotations) and netnamespaces" \
	jq_ok /apis/network.openshift.io/v1 '[.resources[] | select(.name == "hostsubnets" or .name == "netnamespaces") | (.verbs | sort)] == [["get","list","patch","update","watch"],["get","list","watch"]]'
check "/apis/network.openshift.io/v1: clusternetworks, hostsubnets, netnamespaces, cluster-scoped, with short names" \
	jq_ok /apis/network.openshift.io/v1 '([.resources[].name] | sort) == ["clusternetworks","hostsubnets","netnamespaces"] and all(.resources[]; .namespaced == false and (.shortNames | length) == 1)'
check "/apis/route.openshift.io/v1: routes, routes/status" jq_ok /apis/route.openshift.io/v1 '[.resources[].name] == ["routes","routes/status"]'
check "/api/v1 pods/status: get, patch, update, as kube-apiserver lists it" \
	jq_ok /api/v1 '.resources[] | select(.name == "pods/status") | .namespaced and .kind == "Pod" and (.verbs | sort) == ["get","patch","update"]'
check "/apis/apps: 404 (no such group here)" is_code 404 api GET /apis/apps
check "/apis/networking.k8s.io/v2: 404" is_code 404 api GET /apis/networking.k8s.io/v2
check "/apis/networking.k8s.io/v1beta1: 404" is_code 404 api GET /apis/networking.k8s.io/v1beta1
check "/apis/ + 300 bytes of group: 404, the server answers" is_code 404 api GET "/apis/$(printf 'g%.0s' $(seq 300))/v1"
check "POST /api/v1: not a discovery answer (404)" is_code 404 api POST /api/v1 -d '{}'

echo "== a node's credential reads discovery too"
NT=$("$WEFTCTL" node-credential issue node-1)
check "GET /apis with a node credential: 200" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $NT" "$CTRL_URL/apis")" = 200

echo "== Table answers (what kubectl get asks for)"
api POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.9.1"}]}}' >/dev/null
api POST /api/v1/namespaces/default/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"node-1"}}' >/dev/null
TABLE='Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'
api POST /api/v1/namespaces/default/services -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}' >/dev/null
table_ok() { # table_ok PATH FILTER [ACCEPT]
	local out; out=$(api GET "$1" -H "${3:-$TABLE}")
	[ "$(code_of <<<"$out")" = 200 ] || { echo "expected 200 from $1; seen: $out"; return 1; }
	body_of <<<"$out" | jq -e "$2" >/dev/null || { echo "expected $2 to hold of $1: $(body_of <<<"$out")"; return 1; }
}
check "a list of services as a Table: the columns of weftctl, SELECTOR wide (priority 1)" \
	table_ok /api/v1/namespaces/default/services '.kind == "Table" and .apiVersion == "meta.k8s.io/v1" and [.columnDefinitions[].name] == ["NAME","TYPE","CLUSTER-IP","EXTERNAL-IP","PORT(S)","AGE","SELECTOR"] and [.columnDefinitions[].priority] == [0,0,0,0,0,0,1] and .columnDefinitions[0].format == "name"'
check "... one row for web: its cells, and its metadata as PartialObjectMetadata" \
	table_ok /api/v1/namespaces/default/services '(.rows | length) == 1 and .rows[0].cells[0] == "web" and .rows[0].cells[1] == "ClusterIP" and (.rows[0].cells[2] | test("^172\\.30\\.")) and .rows[0].cells[4] == "80/TCP" and .rows[0].cells[6] == "app=web" and .rows[0].object.kind == "PartialObjectMetadata" and .rows[0].object.metadata.namespace == "default"'
check "... with the list's resourceVersion" table_ok /api/v1/namespaces/default/services '(.metadata.resourceVersion | tonumber) > 0'
check "a GET of one pod as a Table: one row, IP and NODE" \
	table_ok /api/v1/namespaces/default/pods/web '.kind == "Table" and (.rows | length) == 1 and .rows[0].cells[0] == "web" and .rows[0].cells[2] == "node-1"'
check "Accept: application/json first: the object, not a Table" \
	table_ok /api/v1/namespaces/default/pods/web '.kind == "Pod"' 'Accept: application/json, application/json;as=Table;v=v1;g=meta.k8s.io'
check "as=Table of another group and nothing else: 406, as kube-apiserver (nothing it asks for is served)" \
	is_code 406 api GET /api/v1/namespaces/default/pods -H 'Accept: application/json;as=Table;v=v1;g=example.com'
check "... with a JSON fallback: the list" \
	table_ok /api/v1/namespaces/default/pods '.kind == "PodList"' 'Accept: application/json;as=Table;v=v1;g=example.com, application/json'

echo "== kubectl"
if command -v kubectl >/dev/null; then
	K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" --cache-dir "$DIR/kube-cache" "$@"; }
	k_version() { K version -o json | jq -e '.serverVersion.gitVersion | test("weft")'; }
	k_resources() {
		local out; out=$(K api-resources --no-headers)
		[ "$(wc -l <<<"$out")" = 18 ] || { echo "expected 18 kinds; seen: $out"; return 1; }
		grep -qE '^hostsubnets +hs +network.openshift.io/v1 +false +HostSubnet' <<<"$out" &&
			grep -qE '^pods +po +v1 +true +Pod' <<<"$out" &&
			grep -qE '^nodecredentials +nodecred +weft.io/v1 +false +NodeCredential' <<<"$out" &&
			grep -qE '^endpointslices +discovery.k8s.io/v1 +true +EndpointSlice' <<<"$out" &&
			grep -qE '^podpeerslices +pps +network.weft.io/v1 +false +PodPeerSlice' <<<"$out" &&
			grep -qE '^tracerequests +network.weft.io/v1 +false +TraceRequest' <<<"$out" || { echo "seen: $out"; return 1; }
	}
	k_unknown() { local out; ! out=$(K get nosuchkind 2>&1) && grep -q nosuchkind <<<"$out"; }
	check "kubectl version: the server's version" k_version
	check "kubectl api-resources: every kind, with its short name" k_resources
	check "kubectl get nodes: node-1" bash -c "$(declare -f K); K get nodes --no-headers | grep -q '^node-1 '"
	check "kubectl get po -A: default/web" bash -c "$(declare -f K); K get po -A --no-headers | grep -qE '^default +web '"
	check "kubectl get hs node-1 -o json: its subnet, and an age (creationTimestamp)" \
		bash -c "$(declare -f K); K get hs node-1 -o json | jq -e '.subnet == \"10.128.0.0/23\" and (.metadata.creationTimestamp | length) > 0'"
	check "kubectl get netns -o name: netnamespace.network.openshift.io/default" \
		bash -c "$(declare -f K); K get netns -o name | grep -qx 'netnamespace.network.openshift.io/default'"
	check "kubectl get nosuchkind: fails, naming it" k_unknown
	check "kubectl get svc -o wide: weft's columns, SELECTOR included" \
		bash -c "$(declare -f K); K get svc -o wide | head -1 | grep -qE '^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE +SELECTOR$'"
	check "kubectl get svc: no SELECTOR without -o wide" \
		bash -c "$(declare -f K); K get svc | head -1 | grep -qE '^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE$'"
	check "kubectl get hs: HOST, HOST IP, SUBNET, NODE ID" \
		bash -c "$(declare -f K); K get hs --no-headers | grep -qE '^node-1 +node-1 +192\.168\.9\.1 +10\.128\.0\.0/23 +1$'"
	check "kubectl get all -A: the pod and the service, with their namespace" \
		bash -c "$(declare -f K); out=\$(K get all -A); grep -qE '^default +pod/web ' <<<\"\$out\" && grep -qE '^default +service/web +ClusterIP' <<<\"\$out\""
else
	echo "  (kubectl is not installed: its checks are skipped)"
fi
check_stop "the controller stops cleanly"
finish
