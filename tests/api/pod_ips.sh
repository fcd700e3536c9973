#!/usr/bin/env bash
# pod_ips.sh — a pod's address is its node's to give and one pod's only,
# sent as an attacker sends it (any client that may write pods).
#
#   curl / weftctl ──HTTPS──► weft-controller ──► DIR/weft.db
#   node-1 10.128.0.0/23   node-2 10.128.2.0/23   namespaces blue, red
#
# The hole: red's pod b has 10.128.0.7; blue writes a pod of its own
# claiming 10.128.0.7 with the labels of blue's Service, and the endpoints
# controller aimed blue's Service at red's pod (around the check that
# hand-written Endpoints get).  Now that pod is refused (409 naming the
# holder) and blue's Endpoints never carry the address, watched from before
# the attack.  Also: an address of node-2's subnet on a pod bound to node-1,
# the subnet's network, gateway and broadcast, no node, an unknown node
# (422 naming field, value, node and subnet); the address freed by a pod
# delete, an address change and a namespace delete; a restart and --fsck.
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }
W() { "$WEFTCTL" "$@"; }
message_of() { body_of | jq -r .message; }
reason_of() { body_of | jq -r .reason; }

# pod NS NAME NODE IP [LABELS]: a Pod body as an agent reports one (nodeName, podIP, podIPs)
pod() {
	local labels=${5:-'{}'}
	jq -nc --arg ns "$1" --arg n "$2" --arg node "$3" --arg ip "$4" --argjson l "$labels" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: $n, namespace: $ns, labels: $l},
		 spec: ({containers: [{name: "c", ports: [{name: "http", containerPort: 8080}]}]}
			+ (if $node == "" then {} else {nodeName: $node} end)),
		 status: {phase: "Running", podIP: $ip, podIPs: [{ip: $ip}], hostIP: "192.168.0.1"}}'
}
# send METHOD NS NAME BODY: POST to the collection; PUT as the agent reports:
# a pod that exists has its status written to NAME/status (the main
# resource ignores a status change), a missing one is created whole
send() {
	local path=/api/v1/namespaces/$2/pods
	if [ "$1" = PUT ]; then
		path=$path/$3
		[ "$(api GET "$path" | code_of)" = 200 ] && path=$path/status
	fi
	api "$1" "$path" -d "$4"
}
# eps NS NAME: every address of the Endpoints, ready or not ("-": none)
eps() {
	api GET "/api/v1/namespaces/$1/endpoints/$2" | body_of |
		jq -r '[.subsets[]? | (.addresses // [])[], (.notReadyAddresses // [])[] | .ip] | sort | join(" ") | if . == "" then "-" else . end'
}
pod_ip() { api GET "/api/v1/namespaces/$1/pods/$2" | body_of | jq -r '.status.podIP // "-"'; }

echo "== the cluster"
for i in 1 2; do
	out=$(api POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-'$i'"},
		"status":{"addresses":[{"type":"InternalIP","address":"192.168.0.'$i'"}]}}')
	check "node-$i registers" test "$(code_of <<<"$out")" = 201
done
check "node-1 has 10.128.0.0/23, node-2 10.128.2.0/23" test "$(api GET /apis/network.openshift.io/v1/hostsubnets |
	body_of | jq -r '[.items[] | .host + " " + .subnet] | join(", ")')" = "node-1 10.128.0.0/23, node-2 10.128.2.0/23"
for ns in blue red; do
	api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"'$ns'"}}' >/dev/null
done
out=$(send POST red b "$(pod red b node-1 10.128.0.7 '{"app":"db"}')")
check "red's pod b on node-1 with 10.128.0.7" test "$(code_of <<<"$out")" = 201
out=$(api POST /api/v1/namespaces/blue/services -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"steal"},
	"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":"http"}]}}')
check "blue's Service selecting app=web" test "$(code_of <<<"$out")" = 201
check "... has Endpoints without addresses" test "$(eps blue steal)" = "-"

# every change of blue's Endpoints from here to the end of the attack
rv=$(api GET /api/v1/namespaces/blue/endpoints | body_of | jq -r .metadata.resourceVersion)
curl -sN -m 60 -D "$dir/watch.h" -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
	"$CTRL_URL/api/v1/namespaces/blue/endpoints?watch=1&resourceVersion=$rv" >"$dir/watch" &
wpid=$!; T_PIDS+=("$wpid")
check "blue's Endpoints are watched" watch_open "$dir/watch.h"

echo "== the attack: blue's pod claims red's pod's address"
rev_before=$(api GET /api/v1/pods | body_of | jq -r .metadata.resourceVersion)
attack=$(pod blue a node-1 10.128.0.7 '{"app":"web"}')
for m in POST PUT; do
	out=$(send $m blue a "$attack")
	check "$m: 409 Conflict" test "$(code_of <<<"$out") $(reason_of <<<"$out")" = "409 Conflict"
	check "$m: the message names the field, the address and the holder" \
		test "$(message_of <<<"$out")" = "status.podIP 10.128.0.7 is held by pod red/b"
done
check "nothing was stored (the store's revision did not move)" \
	test "$(api GET /api/v1/pods | body_of | jq -r .metadata.resourceVersion)" = "$rev_before"
check "... there is no blue/a" test "$(api GET /api/v1/namespaces/blue/pods/a | code_of)" = 404
# without podIPs, and through weftctl apply as YAML
out=$(send POST blue a "$(jq -c 'del(.status.podIPs)' <<<"$attack")")
check "without podIPs: 409 too" test "$(code_of <<<"$out")" = 409
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: blue, labels: {app: web}}\nspec: {nodeName: node-1}\nstatus: {podIP: 10.128.0.7}\n' >"$dir/attack.yaml"
check "weftctl apply: exit 1 naming the holder" \
	bash -c "! '$WEFTCTL' apply -f '$dir/attack.yaml' >'$dir/apply.out' 2>&1 && grep -q 'status.podIP 10.128.0.7 is held by pod red/b' '$dir/apply.out'"
# a blue pod of its own, then moved onto red's address
out=$(send PUT blue a "$(pod blue a node-1 10.128.0.8 '{"app":"web"}')")
check "blue's pod a with its own address 10.128.0.8: 200" test "$(code_of <<<"$out")" = 200
check "... is in blue's Endpoints" test "$(eps blue steal)" = 10.128.0.8
out=$(send PUT blue a "$attack")
check "a PUT moving blue/a onto 10.128.0.7: 409 naming red/b" \
	test "$(code_of <<<"$out") $(message_of <<<"$out")" = "409 status.podIP 10.128.0.7 is held by pod red/b"
check "... blue/a kept 10.128.0.8" test "$(pod_ip blue a)" = 10.128.0.8
# the same pod with red's address on another node, or with a podIPs that differs
out=$(api PUT /api/v1/namespaces/blue/pods/a -d "$(pod blue a node-2 10.128.0.7 '{"app":"web"}')")
check "blue/a rebound to node-2 (its address is not node-2's): 422" test "$(code_of <<<"$out")" = 422
out=$(api PUT /api/v1/namespaces/blue/pods/a -d "$(pod blue a node-1 10.128.0.9 '{"app":"web"}')")
check "an address sent to the main resource is ignored: 200, blue/a kept 10.128.0.8" \
	test "$(code_of <<<"$out") $(pod_ip blue a)" = "200 10.128.0.8"
out=$(send PUT blue a "$(pod blue a node-1 10.128.0.8 '{"app":"web"}' | jq -c '.status.podIPs = [{ip: "10.128.0.7"}]')")
check "podIPs naming red's address beside its own: 422" \
	test "$(code_of <<<"$out") $(message_of <<<"$out")" = "422 status.podIPs[0].ip: '10.128.0.7' differs from status.podIP 10.128.0.8 (a pod has one IPv4 address)"
check "blue's Endpoints: only blue's pod" test "$(eps blue steal)" = 10.128.0.8
check "red's pod b is as it was" test "$(pod_ip red b) $(api GET /api/v1/namespaces/red/pods/b | body_of | jq -r .metadata.namespace)" = "10.128.0.7 red"
kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
check "the watch saw blue's Endpoints change (to 10.128.0.8)" grep -q '10.128.0.8' "$dir/watch"
check "... and never carry 10.128.0.7" bash -c "! grep -q '10.128.0.7' '$dir/watch'"

echo "== an address the pod's node does not give"
# bad NODE IP MESSAGE: refused with 422 Invalid and exactly MESSAGE
bad() {
	local out
	out=$(send POST blue c "$(pod blue c "$1" "$2")")
	check "${1:-no node} $2: 422 Invalid" test "$(code_of <<<"$out") $(reason_of <<<"$out")" = "422 Invalid"
	check "... $3" test "$(message_of <<<"$out")" = "$3"
}
bad node-1 10.128.2.5 "status.podIP 10.128.2.5: pod blue/c is on node node-1, whose subnet is 10.128.0.0/23"
bad node-1 10.0.0.5 "status.podIP 10.0.0.5: pod blue/c is on node node-1, whose subnet is 10.128.0.0/23"
bad node-1 10.128.0.0 "status.podIP 10.128.0.0: pod blue/c is on node node-1, and 10.128.0.0 is the network address of its subnet 10.128.0.0/23 (pods get 10.128.0.2 to 10.128.1.254)"
bad node-1 10.128.0.1 "status.podIP 10.128.0.1: pod blue/c is on node node-1, and 10.128.0.1 is the gateway address of its subnet 10.128.0.0/23 (pods get 10.128.0.2 to 10.128.1.254)"
bad node-1 10.128.1.255 "status.podIP 10.128.1.255: pod blue/c is on node node-1, and 10.128.1.255 is the broadcast address of its subnet 10.128.0.0/23 (pods get 10.128.0.2 to 10.128.1.254)"
bad "" 10.128.0.9 "status.podIP 10.128.0.9: pod blue/c has no spec.nodeName (a pod's address comes from its node's subnet)"
bad node-7 10.128.0.9 "status.podIP 10.128.0.9: pod blue/c is on node node-7, which has no HostSubnet (no such node is registered)"
check "none of them was stored" test "$(api GET /api/v1/namespaces/blue/pods/c | code_of)" = 404
out=$(send POST blue c "$(pod blue c node-2 10.128.2.5)")
check "node-2's address on node-2: 201" test "$(code_of <<<"$out")" = 201

echo "== addresses come free"
out=$(api DELETE /api/v1/namespaces/red/pods/b)
check "delete red's pod b" test "$(code_of <<<"$out")" = 200
out=$(send POST red b2 "$(pod red b2 node-1 10.128.0.7 '{"app":"db"}')")
check "... its address goes to the next pod" test "$(code_of <<<"$out")" = 201
out=$(send PUT blue c "$(pod blue c node-2 10.128.2.6)")
check "blue/c moves to 10.128.2.6" test "$(code_of <<<"$out") $(pod_ip blue c)" = "200 10.128.2.6"
out=$(send POST red d "$(pod red d node-2 10.128.2.5)")
check "... and 10.128.2.5 is free again" test "$(code_of <<<"$out")" = 201
out=$(api DELETE /api/v1/namespaces/red)
check "delete namespace red (its pods with it)" test "$(code_of <<<"$out")" = 200
out=$(send PUT blue a "$(pod blue a node-1 10.128.0.7 '{"app":"web"}')")
check "... 10.128.0.7 is free: blue's pod may have it now" test "$(code_of <<<"$out")" = 200
check "... and blue's Endpoints follow their own pod" test "$(eps blue steal)" = 10.128.0.7
out=$(send POST blue e "$(pod blue e node-2 10.128.2.5)")
check "... 10.128.2.5 too" test "$(code_of <<<"$out")" = 201

echo "== restart and fsck"
check_stop "the controller stops cleanly (no sanitizer report)"
check "fsck: the store is consistent" "$CONTROLLER" --data-dir "$dir" --fsck
start_controller "$dir" || fail restart
check "restart: no pod IP had to be indexed or reported" bash -c "! grep -q 'pod IPs' '$CTRL_LOG'"
out=$(send POST blue f "$(pod blue f node-1 10.128.0.7)")
check "after the restart the addresses are still held" \
	test "$(code_of <<<"$out") $(message_of <<<"$out")" = "409 status.podIP 10.128.0.7 is held by pod blue/a"
check_stop "the controller stops cleanly"
check "fsck at the end" "$CONTROLLER" --data-dir "$dir" --fsck
finish
