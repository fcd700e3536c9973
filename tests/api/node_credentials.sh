#!/usr/bin/env bash
# node_credentials.sh — least privilege: each node's agent holds a
# credential bound to its node, and a leaked one opens nothing else.
#
#   weftctl node-credential issue/list/revoke ──HTTPS──► weft-controller
#   curl with node-1's token (as node-1's agent, or whoever stole it) ──┘
#
# 1. issue: the token only in the answer (a 0600 file, or stdout), never in
#    a list, the log or the store.
# 2. node-1 registers itself, not node-2; reads what its data plane needs.
# 3. everything else a node may not do is 403 naming the rule: Secrets,
#    Ingresses, Routes, /metrics, pod-network, credentials, Services and
#    policies and NetNamespaces and Namespaces written, another node.
# 4. Pods: only those bound to node-1, before and after; addresses only
#    from node-1's subnet.  NAME/status: node-1 writes that of its own pods
#    (an address of its subnet), not node-2's pods', nor a Service's; the
#    main resource keeps the stored status whatever a node sends there.
# 5. a Service: only node-1's own annotation weft.io/unprogrammed.node-1.
# 6. HostSubnets: node-1's own, annotations only (for everyone).
# 7. revoke: the next request is 401 and node-1's open watch ends; forged
#    tokens are 401.  A restart keeps issued and revoked credentials.
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }

# as TOKEN METHOD PATH [BODY]: the request with that bearer token; body, then code
as() {
	local t=$1 m=$2 p=$3; shift 3
	curl -s -X "$m" -H @- -H 'Content-Type: application/json' -w '\n%{http_code}\n' \
		${1:+--data-binary "$1"} "$CTRL_URL$p" <<<"Authorization: Bearer $t"
}
code_is() { # code_is WANT TOKEN METHOD PATH [BODY]
	local want=$1 got; shift
	got=$(as "$@" | code_of)
	[ "$got" = "$want" ] || { echo "got $got, want $want: $(as "$@" | body_of | head -c 400)"; return 1; }
}
message_has() { # message_has TEXT TOKEN METHOD PATH [BODY]
	local text=$1; shift
	as "$@" | body_of | jq -e --arg t "$text" '.message | contains($t)' >/dev/null
}
node_body() { echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}"; }
pod_body() { # pod_body NS NAME NODE [IP]
	local st=""
	[ -n "${4:-}" ] && st=",\"status\":{\"phase\":\"Running\",\"podIP\":\"$4\",\"podIPs\":[{\"ip\":\"$4\"}]}"
	echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$2\",\"namespace\":\"$1\",\"labels\":{\"app\":\"$2\"}},\"spec\":{${3:+\"nodeName\":\"$3\"}}$st}"
}
ADMIN=$(cat "$CTRL_TOKEN_FILE")

# ---------------------------------------------------------------- 1. issue
T1=$dir/node-1.token
check "weftctl node-credential issue node-1 --output-file: names the credential and the file" \
	grep -q "issued for node node-1; token written to $T1" <("$WEFTCTL" node-credential issue node-1 --output-file "$T1")
check "the token file is mode 0600" test "$(stat -c %a "$T1")" = 600
N1=$(cat "$T1")
N2=$("$WEFTCTL" node-credential issue node-2)
check "issue without --output-file prints only the token (name.secret, 16 + 64 hex)" \
	grep -qxE '[0-9a-f]{16}\.[0-9a-f]{64}' <<<"$N2"
N1_NAME=${N1%%.*}
both_listed() { "$WEFTCTL" node-credential list | grep -q "^$N1_NAME .*node-1" && [ "$("$WEFTCTL" node-credential list | grep -c node-)" = 2 ]; }
check "list shows both credentials with their nodes" both_listed
listed_for() { # listed_for QUERY: the nodes of the credentials the list with QUERY has, sorted, on one line
	as "$ADMIN" GET "/apis/weft.io/v1/nodecredentials?$1" | body_of | jq -r '[.items[].spec.nodeName] | sort | join(",")'
}
check "list ?fieldSelector=spec.nodeName=node-1: node-1's only" test "$(listed_for fieldSelector=spec.nodeName%3Dnode-1)" = node-1
check "list ?fieldSelector=metadata.name=NAME: that one" test "$(listed_for "fieldSelector=metadata.name%3D$N1_NAME")" = node-1
check "list ?fieldSelector=spec.nodeName!=node-1: node-2's only" test "$(listed_for fieldSelector=spec.nodeName%21%3Dnode-1)" = node-2
check "list ?labelSelector=x=y: none (credentials have no labels)" test "$(listed_for labelSelector=x%3Dy)" = ""
check "list ?labelSelector=!x: both" test "$(listed_for labelSelector=%21x)" = node-1,node-2
check "list ?fieldSelector=status.token=x: 400, not ignored" \
	eval 'as "$ADMIN" GET "/apis/weft.io/v1/nodecredentials?fieldSelector=status.token%3Dx" | body_of | jq -e ".code == 400 and (.message | contains(\"field label not supported: status.token\"))" >/dev/null'
check "list ?labelSelector=a%20in: 400 (malformed)" code_is 400 "$ADMIN" GET "/apis/weft.io/v1/nodecredentials?labelSelector=a%20in"
secret_nowhere() {
	local s=${N1#*.}
	! "$WEFTCTL" node-credential list | grep -q "$s" &&
		! as "$ADMIN" GET /apis/weft.io/v1/nodecredentials | grep -q "$s" &&
		as "$ADMIN" GET /apis/weft.io/v1/nodecredentials | grep -q "$N1_NAME" &&
		! grep -qa "$s" "$dir/controller.log" "$dir"/weft.db*
}
check "no token in the list, the controller's log or the store (only its SHA-256)" secret_nowhere
check "issue for a name that is not a node name: 422" code_is 422 "$ADMIN" POST /apis/weft.io/v1/nodecredentials \
	'{"spec":{"nodeName":"Bad_Name"}}'
check "issue with a body of another kind: 400" code_is 400 "$ADMIN" POST /apis/weft.io/v1/nodecredentials \
	'{"apiVersion":"v1","kind":"Secret","spec":{"nodeName":"node-1"}}'
check_fails "weftctl node-credential issue without a node: usage error" "$WEFTCTL" node-credential issue

# ---------------------------------------------------------------- 2. own node, reads
check "node-1 registers its own Node" code_is 201 "$N1" POST /api/v1/nodes "$(node_body node-1 192.168.50.1)"
check "node-1 may not register node-2 (POST)" code_is 403 "$N1" POST /api/v1/nodes "$(node_body node-2 192.168.50.2)"
check "node-1 may not register node-2 (PUT)" code_is 403 "$N1" PUT /api/v1/nodes/node-2 "$(node_body node-2 192.168.50.2)"
check "node-2 registers itself with its own credential (PUT)" code_is 200 "$N2" PUT /api/v1/nodes/node-2 "$(node_body node-2 192.168.50.2)"
check "the refusal names the user, the verb, the resource and the rule" \
	message_has 'nodes "node-2" is forbidden: User "system:node:node-1" cannot update resource "nodes"' \
	"$N1" PUT /api/v1/nodes/node-2 "$(node_body node-2 192.168.50.2)"
for p in /api/v1/nodes /api/v1/nodes/node-2 /apis/network.openshift.io/v1/hostsubnets \
	/apis/network.openshift.io/v1/clusternetworks/default /apis/network.openshift.io/v1/netnamespaces \
	/api/v1/namespaces /api/v1/pods /api/v1/services /api/v1/endpoints /apis/networking.k8s.io/v1/networkpolicies \
	"/api/v1/pods?watch=1&timeoutSeconds=1"; do
	check "node-1 may read $p (its data plane programs it)" code_is 200 "$N1" GET "$p"
done
code_is 201 "$ADMIN" POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"blue"}}' >/dev/null
code_is 201 "$ADMIN" POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"red"}}' >/dev/null
SUB1=$(as "$ADMIN" GET /apis/network.openshift.io/v1/hostsubnets/node-1 | body_of | jq -r .subnet)
SUB2=$(as "$ADMIN" GET /apis/network.openshift.io/v1/hostsubnets/node-2 | body_of | jq -r .subnet)
ip_in() { python3 -c "import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1])[int(sys.argv[2])])" "$1" "$2"; }

# ---------------------------------------------------------------- 3. refused
code_is 201 "$ADMIN" POST /api/v1/namespaces/red/secrets \
	'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"pw":"aHVudGVyMg=="}}' >/dev/null
code_is 201 "$ADMIN" POST /api/v1/namespaces/blue/services \
	'{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"a"},"ports":[{"port":80}]}}' >/dev/null
while read -r what method path body; do
	check "node-1 may not $what: 403" code_is 403 "$N1" "$method" "$path" "$body"
done <<EOF
list-secrets GET /api/v1/secrets
get-a-secret GET /api/v1/namespaces/red/secrets/db
watch-secrets GET /api/v1/namespaces/red/secrets?watch=1
list-ingresses GET /apis/networking.k8s.io/v1/ingresses
list-routes GET /apis/route.openshift.io/v1/routes
read-metrics GET /metrics
list-credentials GET /apis/weft.io/v1/nodecredentials
issue-a-credential POST /apis/weft.io/v1/nodecredentials {"spec":{"nodeName":"node-2"}}
revoke-node-2's-credential DELETE /apis/weft.io/v1/nodecredentials/${N2%%.*}
change-pod-networks POST /apis/network.openshift.io/v1/podnetwork {"action":"join-projects","to":"blue","projects":["red"]}
create-a-Service POST /api/v1/namespaces/red/services {"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{"ports":[{"port":80}]}}
delete-a-Service DELETE /api/v1/namespaces/blue/services/web
create-Endpoints POST /api/v1/namespaces/red/endpoints {"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"x"}}
create-a-NetworkPolicy POST /apis/networking.k8s.io/v1/namespaces/red/networkpolicies {"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"x"},"spec":{"podSelector":{}}}
update-a-NetNamespace PUT /apis/network.openshift.io/v1/netnamespaces/red {"apiVersion":"network.openshift.io/v1","kind":"NetNamespace","metadata":{"name":"red"},"netname":"red","netid":0}
create-a-Namespace POST /api/v1/namespaces {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"evil"}}
delete-a-Namespace DELETE /api/v1/namespaces/red
update-the-ClusterNetwork PUT /apis/network.openshift.io/v1/clusternetworks/default {}
delete-node-2 DELETE /api/v1/nodes/node-2
delete-itself DELETE /api/v1/nodes/node-1
reach-an-unknown-path GET /debug/pprof
EOF

# ---------------------------------------------------------------- 4. pods
IP1=$(ip_in "$SUB1" 10) IP2=$(ip_in "$SUB2" 10)
check "node-1 reports a pod bound to it, with an address of its subnet" \
	code_is 201 "$N1" POST /api/v1/namespaces/blue/pods "$(pod_body blue a node-1 "$IP1")"
check "node-1 may not write a pod bound to node-2" \
	code_is 403 "$N1" POST /api/v1/namespaces/blue/pods "$(pod_body blue x node-2)"
check "node-1 may not give its pod an address of node-2's subnet through NAME/status (422)" \
	code_is 422 "$N1" PUT /api/v1/namespaces/blue/pods/a/status "$(pod_body blue a node-1 "$IP2")"
pod_ip_of() { as "$ADMIN" GET "/api/v1/namespaces/$1/pods/$2" | body_of | jq -r '.status.podIP // "-"'; }
check "node-1 writes its pod's status (another address of its subnet) through NAME/status" \
	code_is 200 "$N1" PUT /api/v1/namespaces/blue/pods/a/status "$(pod_body blue a node-1 "$(ip_in "$SUB1" 13)")"
check "... stored" test "$(pod_ip_of blue a)" = "$(ip_in "$SUB1" 13)"
check "a status sent to the main resource is ignored (200, the stored address kept)" \
	eval 'code_is 200 "$N1" PUT /api/v1/namespaces/blue/pods/a "$(pod_body blue a node-1 "$(ip_in "$SUB1" 14)")" &&
	      [ "$(pod_ip_of blue a)" = "$(ip_in "$SUB1" 13)" ]'
code_is 201 "$ADMIN" POST /api/v1/namespaces/red/pods "$(pod_body red b node-2 "$IP2")" >/dev/null
check "node-1 may not take node-2's pod red/b (rebind it to itself)" \
	code_is 403 "$N1" PUT /api/v1/namespaces/red/pods/b "$(pod_body red b node-1 "$(ip_in "$SUB1" 11)")"
check "... and the refusal says whose pod it is" \
	message_has 'the pod is bound to node "node-2"' "$N1" PUT /api/v1/namespaces/red/pods/b "$(pod_body red b node-1)"
check "node-1 may not write the status of node-2's pod red/b" \
	code_is 403 "$N1" PUT /api/v1/namespaces/red/pods/b/status "$(pod_body red b node-2 "$(ip_in "$SUB2" 11)")"
check "... not even naming itself in the body (the stored binding decides)" \
	code_is 403 "$N1" PUT /api/v1/namespaces/red/pods/b/status "$(pod_body red b node-1 "$(ip_in "$SUB1" 11)")"
check "... nor PATCH it" eval '[ "$(curl -s -X PATCH -H @- -H "Content-Type: application/merge-patch+json" -o /dev/null -w "%{http_code}" \
	--data-binary "{\"status\":{\"phase\":\"Failed\"}}" "$CTRL_URL/api/v1/namespaces/red/pods/b/status" <<<"Authorization: Bearer $N1")" = 403 ]'
check "... and its status is as node-2's admin wrote it" test "$(pod_ip_of red b)" = "$IP2"
check "node-1 may not write the status of a pod that does not exist" \
	code_is 403 "$N1" PUT /api/v1/namespaces/blue/pods/nope/status "$(pod_body blue nope node-1 "$(ip_in "$SUB1" 15)")"
check "node-1 may not delete node-2's pod" code_is 403 "$N1" DELETE /api/v1/namespaces/red/pods/b
still_node2s() { as "$ADMIN" GET /api/v1/namespaces/red/pods/b | body_of | jq -e '.spec.nodeName == "node-2"' >/dev/null; }
check "red/b is still there, bound to node-2" still_node2s
code_is 201 "$ADMIN" POST /api/v1/namespaces/blue/pods "$(pod_body blue c "")" >/dev/null
check "node-1 may bind a pod nobody bound yet (weft-lab pod add writes labels first)" \
	code_is 200 "$N1" PUT /api/v1/namespaces/blue/pods/c "$(pod_body blue c node-1 "$(ip_in "$SUB1" 12)")"
check "node-1 deletes its own pod" code_is 200 "$N1" DELETE /api/v1/namespaces/blue/pods/c

# ---------------------------------------------------------------- 5. a Service's annotation
svc_with() { # svc_with JQ: blue/web as stored, changed by JQ
	as "$ADMIN" GET /api/v1/namespaces/blue/services/web | body_of | jq -c "$1"
}
check "node-1 sets its own annotation weft.io/unprogrammed.node-1 on a Service" \
	code_is 200 "$N1" PUT /api/v1/namespaces/blue/services/web \
	"$(svc_with '.metadata.annotations["weft.io/unprogrammed.node-1"] = "map is full"')"
check "node-1 may not set node-2's annotation" code_is 403 "$N1" PUT /api/v1/namespaces/blue/services/web \
	"$(svc_with '.metadata.annotations["weft.io/unprogrammed.node-2"] = "forged"')"
check "node-1 may not change the Service's ports (with its own annotation beside)" \
	code_is 403 "$N1" PUT /api/v1/namespaces/blue/services/web \
	"$(svc_with '.spec.ports[0].port = 81 | .metadata.annotations["weft.io/unprogrammed.node-1"] = "x"')"
check "node-1 may not change the Service's selector" code_is 403 "$N1" PUT /api/v1/namespaces/blue/services/web \
	"$(svc_with '.spec.selector.app = "b"')"
check "node-1 removes its own annotation" code_is 200 "$N1" PUT /api/v1/namespaces/blue/services/web \
	"$(svc_with 'del(.metadata.annotations["weft.io/unprogrammed.node-1"])')"
svc_unchanged() {
	as "$ADMIN" GET /api/v1/namespaces/blue/services/web | body_of |
		jq -e '.spec.ports[0].port == 80 and .spec.selector.app == "a" and ((.metadata.annotations // {}) | length == 0)' >/dev/null
}
check "node-1 may not write the Service's status (NAME/status)" code_is 403 "$N1" PUT \
	/api/v1/namespaces/blue/services/web/status "$(svc_with '.status.loadBalancer = {"ingress":[{"ip":"10.9.9.9"}]}')"
check "node-1's status on the main resource is ignored (200, status kept)" eval \
	'code_is 200 "$N1" PUT /api/v1/namespaces/blue/services/web "$(svc_with '"'"'.status.loadBalancer = {"ingress":[{"ip":"10.9.9.9"}]}'"'"')" &&
	 as "$ADMIN" GET /api/v1/namespaces/blue/services/web | body_of | jq -e ".status.loadBalancer.ingress == null" >/dev/null'
check "the Service is as the admin made it" svc_unchanged

# ---------------------------------------------------------------- 6. HostSubnets
hs_with() { as "$ADMIN" GET "/apis/network.openshift.io/v1/hostsubnets/$1" | body_of | jq -c "$2"; }
check "node-1 annotates its own HostSubnet" code_is 200 "$N1" PUT /apis/network.openshift.io/v1/hostsubnets/node-1 \
	"$(hs_with node-1 '.metadata.annotations["weft.io/note"] = "x"')"
check "node-1 may not annotate node-2's HostSubnet" code_is 403 "$N1" PUT \
	/apis/network.openshift.io/v1/hostsubnets/node-2 "$(hs_with node-2 '.metadata.annotations["weft.io/note"] = "x"')"
check "nobody changes a HostSubnet's subnet: 405 (node-1)" code_is 405 "$N1" PUT \
	/apis/network.openshift.io/v1/hostsubnets/node-1 "$(hs_with node-1 ".subnet = \"$SUB2\"")"
check "nobody changes a HostSubnet's subnet: 405 (the admin)" code_is 405 "$ADMIN" PUT \
	/apis/network.openshift.io/v1/hostsubnets/node-1 "$(hs_with node-1 '.hostIP = "192.168.50.9"')"
check "nobody creates a HostSubnet: 405" code_is 405 "$ADMIN" POST /apis/network.openshift.io/v1/hostsubnets \
	"$(hs_with node-1 '.metadata.name = "node-9" | .host = "node-9" | del(.metadata.resourceVersion)')"

# ---------------------------------------------------------------- 7. revoke
check "a forged token with node-1's name: 401" code_is 401 "${N1%%.*}.$(printf '0%.0s' {1..64})" GET /api/v1/pods
check "a token of the wrong shape: 401" code_is 401 "${N1}x" GET /api/v1/pods
gone() { [ ! -e "/proc/$1" ] || grep -q ') Z' "/proc/$1/stat"; }	# exited (a zombie until waited for)
hdr=$dir/watch.headers
curl -s -N -D "$hdr" -H @- "$CTRL_URL/api/v1/pods?watch=1" <<<"Authorization: Bearer $N1" >/dev/null &
WPID=$!
T_PIDS+=("$WPID")
watch_open "$hdr"
check "weftctl node-credential revoke --node node-1" \
	grep -q "nodecredential/$N1_NAME revoked (node node-1)" <("$WEFTCTL" node-credential revoke --node node-1)
check "node-1's open watch stream ends when its credential is revoked" \
	wait_for 5 gone "$WPID"
check "node-1's revoked credential: 401" code_is 401 "$N1" GET /api/v1/pods
check "node-2's credential still works" code_is 200 "$N2" GET /api/v1/pods
check "revoking it again: 404" code_is 404 "$ADMIN" DELETE "/apis/weft.io/v1/nodecredentials/$N1_NAME"
check_fails "weftctl node-credential revoke --node node-1 again fails (none left)" \
	"$WEFTCTL" node-credential revoke --node node-1

check_stop "the controller stops cleanly (no sanitizer report)"
start_controller "$dir" || { fail restart; finish; exit 1; }
check "after a restart node-2's credential works" code_is 200 "$N2" GET /api/v1/pods
check "after a restart node-1's stays revoked" code_is 401 "$N1" GET /api/v1/pods
check_stop "the controller stops cleanly again"
check "fsck finds the store consistent" "$CONTROLLER" --data-dir "$dir" --fsck
finish
