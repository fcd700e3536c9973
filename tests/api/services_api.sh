#!/usr/bin/env bash
# services_api.sh — Services over the real API and weftctl: the endpoints
# controller (Endpoints follow pods, labels, readiness, named ports and
# selectors; watchers see them), LoadBalancer VIPs (lowest free, requested,
# exhausted, released), the tenancy check on hand-written Endpoints, the
# status-keeping replace, `weftctl get svc/ep`, and a restart that repairs
# what was missed while the endpoints controller was off.
#
#   weftctl / curl ──HTTPS──► weft-controller --config (vipNetworks: 192.168.100.0/30)
#                                 │ endpoints controller (in-process)
#                                 ▼
#                              DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

W() { "$WEFTCTL" "$@"; }

# stdout_is WANT CMD...: CMD exits 0 and prints exactly WANT.
stdout_is() {
	local want=$1; shift
	local out
	out=$("$@" 2>&1) || { echo "exit $?: $out"; return 1; }
	[ "$out" = "$want" ] || { printf 'got:\n%s\nwant:\n%s\n' "$out" "$want"; return 1; }
}
# expect RC PATTERN CMD...: CMD exits RC ('!0' any failure), output matches PATTERN.
expect() {
	local want=$1 pat=$2; shift 2
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	if [ "$want" = '!0' ]; then
		[ "$rc" -ne 0 ] || { echo "exit 0, wanted a failure: $out"; return 1; }
	elif [ "$rc" -ne "$want" ]; then
		echo "exit $rc, wanted $want: $out"; return 1
	fi
	grep -qE -- "$pat" <<<"$out" || { echo "output lacks /$pat/: $out"; return 1; }
}
# eps NS NAME: "ip:port ip:port ... | notready ip ..." from the stored Endpoints ("-" none)
eps() {
	local out
	out=$(api GET "/api/v1/namespaces/$1/endpoints/$2")
	[ "$(code_of <<<"$out")" = 200 ] || { echo -; return; }
	body_of <<<"$out" | jq -r '[.subsets[]? | . as $s | ($s.ports // [{}])[] as $p |
		($s.addresses // [])[] | "\(.ip):\($p.port // "")"] | join(" ")' 
}
notready() {
	api GET "/api/v1/namespaces/$1/endpoints/$2" | body_of | jq -r '[.subsets[]?.notReadyAddresses[]?.ip] | join(" ")'
}
revision() { api GET /api/v1/namespaces | body_of | jq -r .metadata.resourceVersion; }

DIR=$(tmpdir)
cat >"$DIR/cluster.yaml" <<'EOF'
apiVersion: network.openshift.io/v1
kind: ClusterNetwork
metadata: {name: default}
clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 9}]
serviceNetwork: 172.30.0.0/16
vipNetworks: [192.168.100.0/30]
EOF
start_controller "$DIR" --config "$DIR/cluster.yaml" || { fail "controller starts"; finish; exit 1; }

# node-1..4 hold 10.128.0.0/23, 10.128.2.0/23, 10.128.4.0/23, 10.128.6.0/23;
# a pod's address is one of its node's
for i in 1 2 3 4; do
	api POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-'$i'"},
		"status":{"addresses":[{"type":"InternalIP","address":"192.168.0.'$i'"}]}}' >/dev/null
done
node_of() { echo "node-$(( $(cut -d. -f3 <<<"$1") / 2 + 1 ))"; }	# node_of IP

# pod NS NAME LABELS IP [PHASE] [READY]: a pod manifest with named ports, on IP's node
pod() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, labels: $3}
spec:
  nodeName: $(node_of "$4")
  containers:
  - name: app
    ports: [{name: http, containerPort: 8080}, {name: dns, containerPort: 5353, protocol: UDP}]
status: {podIP: $4, phase: ${5:-Running}, conditions: [{type: Ready, status: "${6:-True}"}]}
EOF
}

echo "== endpoints controller"
cat >"$DIR/red.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: red}
---
apiVersion: v1
kind: Namespace
metadata: {name: blue}
---
$(pod red web-1 '{app: web}' 10.128.0.12)
---
$(pod red web-2 '{app: web}' 10.128.2.3)
---
$(pod red web-3 '{app: web}' 10.128.0.9 Running False)
---
$(pod red db-1 '{app: db}' 10.128.0.20)
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: red}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: dns, port: 53, targetPort: dns, protocol: UDP}
EOF
check "apply pods and a selector service" W apply -f "$DIR/red.yaml"
check "ready pods, named ports resolved (http 8080/TCP, dns 5353/UDP)" \
	test "$(eps red web)" = "10.128.0.12:8080 10.128.2.3:8080 10.128.0.12:5353 10.128.2.3:5353"
check "a pod with Ready=False is a not-ready address" test "$(notready red web)" = "10.128.0.9"
out=$(api GET /api/v1/namespaces/red/endpoints/web | body_of)
check "Endpoints carry the controller's label" \
	test "$(jq -r '.metadata.labels["endpoints.weft.io/managed-by"]' <<<"$out")" = weft-controller
check "addresses carry nodeName and targetRef" \
	test "$(jq -c '.subsets[0].addresses[0] | [.nodeName, .targetRef]' <<<"$out")" = '["node-1",{"kind":"Pod","namespace":"red","name":"web-1"}]'
check "port names and protocols" \
	test "$(jq -c '[.subsets[0].ports[] | [.name, .port, .protocol]]' <<<"$out")" = '[["http",8080,"TCP"],["dns",5353,"UDP"]]'

# watchers see Endpoints change
rv=$(api GET /api/v1/namespaces/red/endpoints | body_of | jq -r .metadata.resourceVersion)
curl -sN -m 5 -D "$DIR/watch.h" -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
	"$CTRL_URL/api/v1/namespaces/red/endpoints?watch=1&resourceVersion=$rv" >"$DIR/watch" &
wpid=$!; T_PIDS+=("$wpid")
check "the Endpoints watch is open" watch_open "$DIR/watch.h"

# a label change through apply of the manifest (no status in it): the pod
# keeps its podIP, and leaves the Service
cat >"$DIR/web-2.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: red, labels: {app: other}}
spec:
  nodeName: node-2
  containers:
  - name: app
    ports: [{name: http, containerPort: 8080}, {name: dns, containerPort: 5353, protocol: UDP}]
EOF
t0=$(date +%s%N)
check "apply the pod with a new label" stdout_is "pod/red/web-2 configured" W apply -f "$DIR/web-2.yaml"
t1=$(date +%s%N)
check "the applied pod kept status.podIP" \
	test "$(api GET /api/v1/namespaces/red/pods/web-2 | body_of | jq -r .status.podIP)" = 10.128.2.3
check "label change: the pod left the Endpoints" test "$(eps red web)" = "10.128.0.12:8080 10.128.0.12:5353"
echo "  (label change applied in $(( (t1 - t0) / 1000000 )) ms)"
wait_for 5 grep -q MODIFIED "$DIR/watch"
check "a watcher of endpoints saw the change" \
	test "$(jq -r 'select(.type == "MODIFIED") | [.object.subsets[0].addresses[].ip] | join(",")' "$DIR/watch" | tail -n 1)" = 10.128.0.12
kill "$wpid" 2>/dev/null

# the same manifest again: nothing written, Endpoints untouched
ep_rv=$(api GET /api/v1/namespaces/red/endpoints/web | body_of | jq -r .metadata.resourceVersion)
check "apply unchanged" stdout_is "pod/red/web-2 unchanged" W apply -f "$DIR/web-2.yaml"
# a change the Endpoints do not read (an annotation): no Endpoints write
api PUT /api/v1/namespaces/red/pods/web-1 -d "$(api GET /api/v1/namespaces/red/pods/web-1 | body_of |
	jq -c '.metadata.annotations = {"note": "x"} | del(.metadata.resourceVersion)')" >/dev/null
check "no Endpoints write when nothing they show changed" \
	test "$(api GET /api/v1/namespaces/red/endpoints/web | body_of | jq -r .metadata.resourceVersion)" = "$ep_rv"

# readiness changes (the agent's PUT of NAME/status), pod delete, selector change
api PUT /api/v1/namespaces/red/pods/web-3/status -d "$(api GET /api/v1/namespaces/red/pods/web-3 | body_of |
	jq -c '.status.conditions = [{"type": "Ready", "status": "True"}] | del(.metadata.resourceVersion)')" >/dev/null
check "a pod turning ready moves to addresses" \
	test "$(eps red web) / $(notready red web)" = "10.128.0.9:8080 10.128.0.12:8080 10.128.0.9:5353 10.128.0.12:5353 / "
check "delete a pod" W delete pod web-1 -n red
check "the deleted pod left the Endpoints" test "$(eps red web)" = "10.128.0.9:8080 10.128.0.9:5353"
sed -e 's/selector: {app: web}/selector: {app: db}/' "$DIR/red.yaml" | awk '/^kind: Service/,0' |
	sed '1i apiVersion: v1' >"$DIR/svc-db.yaml"
check "selector change applied" stdout_is "service/red/web configured" W apply -f "$DIR/svc-db.yaml"
check "selector change: the other pods" test "$(eps red web)" = "10.128.0.20:8080 10.128.0.20:5353"
# someone writes the selector Service's Endpoints by hand: the controller puts its own back
api PUT /api/v1/namespaces/red/endpoints/web \
	-d '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web"},"subsets":[{"addresses":[{"ip":"192.0.2.1"}],"ports":[{"port":1}]}]}' >/dev/null
check "hand-written Endpoints of a selector Service are overwritten" test "$(eps red web)" = "10.128.0.20:8080 10.128.0.20:5353"
# a Service without pods has an (empty) Endpoints; deleting it deletes them
printf 'apiVersion: v1\nkind: Service\nmetadata: {name: lonely, namespace: red}\nspec:\n  selector: {app: none}\n  ports: [{port: 80}]\n' >"$DIR/lonely.yaml"
check "a selector Service without pods" W apply -f "$DIR/lonely.yaml"
check "... has an Endpoints without subsets" test "$(eps red lonely)" = ""
check "delete the Service" W delete svc lonely -n red
check "... deletes its Endpoints" test "$(eps red lonely)" = "-"

echo "== weftctl get svc / ep"
check "get ep" stdout_is "NAME   ENDPOINTS                           AGE
web    10.128.0.20:8080,10.128.0.20:5353   0s" bash -c "'$WEFTCTL' get ep -n red | sed -E 's/[0-9]+s\$/0s/'"
check "get endpoints -o json keeps working" expect 0 '"kind": "EndpointsList"' W get endpoints -n red -o json

echo "== LoadBalancer VIPs"
lb() { # lb NAME [LOADBALANCERIP] [TYPE]
	printf 'apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: blue}\nspec:\n  type: %s\n  ports: [{port: 80}]\n%s' \
		"$1" "${3:-LoadBalancer}" "${2:+  loadBalancerIP: $2
}"
}
vip() { api GET "/api/v1/namespaces/blue/services/$1" | body_of | jq -r '.status.loadBalancer.ingress[0].ip // "none"'; }
lb lb-a >"$DIR/lb-a.yaml"
check "LoadBalancer service" W apply -f "$DIR/lb-a.yaml"
check "gets the lowest usable VIP (not the network address)" test "$(vip lb-a)" = 192.168.100.1
check "apply again: unchanged, the VIP kept" stdout_is "service/blue/lb-a unchanged" W apply -f "$DIR/lb-a.yaml"
lb lb-b 192.168.100.2 >"$DIR/lb-b.yaml"
check "requested VIP (spec.loadBalancerIP)" W apply -f "$DIR/lb-b.yaml"
check "... is honoured" test "$(vip lb-b)" = 192.168.100.2
check "get svc shows the VIP and the node port" \
	expect 0 '^lb-b +LoadBalancer +172\.30\.[0-9.]+ +192\.168\.100\.2 +80:3[0-9]{4}/TCP +[0-9]+s$' W get svc lb-b -n blue
lb lb-c 192.168.100.1 >"$DIR/lb-c.yaml"
check "a taken VIP is refused naming it" \
	expect 1 'spec\.loadBalancerIP: 192\.168\.100\.1 is already allocated \(to service blue/lb-a\)' W apply -f "$DIR/lb-c.yaml"
lb lb-c 10.9.9.9 >"$DIR/lb-c.yaml"
check "a VIP outside the pools is refused naming it" \
	expect 1 'spec\.loadBalancerIP: 10\.9\.9\.9 is not inside a VIP pool \(192\.168\.100\.0/30\)' W apply -f "$DIR/lb-c.yaml"
# the load-balancer controller writes lb-a's and lb-b's VirtualServices on
# its own tick: once they are there, nothing else writes
vs_there() { [ "$(api GET "/apis/lb.weft.io/v1/virtualservices/weft--blue-$1" | code_of)" = 200 ]; }
wait_for 10 vs_there lb-a && wait_for 10 vs_there lb-b || fail "the VirtualServices of lb-a and lb-b appear"
before=$(revision)
lb lb-c >"$DIR/lb-c.yaml"
check "exhausted pool: refused naming the pool" \
	expect 1 'no VIPs available in the VIP pool 192\.168\.100\.0/30' W apply -f "$DIR/lb-c.yaml"
check "... and nothing stored" test "$(revision) $(api GET /api/v1/namespaces/blue/services/lb-c | code_of)" = "$before 404"
check "metrics count the VIP failure" bash -c "curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' $CTRL_URL/metrics | grep -qx 'weft_allocation_failures_total{pool=\"vip\"} 1'"
check "metrics show the VIP pool used up" bash -c "curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' $CTRL_URL/metrics | grep -qx 'weft_allocations_free{pool=\"vip\"} 0'"
lb lb-a '' NodePort >"$DIR/lb-a-np.yaml"
check "type change away from LoadBalancer" stdout_is "service/blue/lb-a configured" W apply -f "$DIR/lb-a-np.yaml"
check "... releases the VIP" test "$(vip lb-a)" = none
check "get svc: <none> for a NodePort" expect 0 '^lb-a +NodePort +172\.30\.[0-9.]+ +<none> +80:3[0-9]{4}/TCP' W get svc lb-a -n blue
check "the released VIP goes to the next one" W apply -f "$DIR/lb-c.yaml"
check "... lb-c has it" test "$(vip lb-c)" = 192.168.100.1
check "delete lb-b" W delete svc lb-b -n blue
lb lb-d >"$DIR/lb-d.yaml"
check "delete released lb-b's VIP: lb-d gets it" bash -c "'$WEFTCTL' apply -f '$DIR/lb-d.yaml' >/dev/null && test \"\$(curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' $CTRL_URL/api/v1/namespaces/blue/services/lb-d | jq -r '.status.loadBalancer.ingress[0].ip')\" = 192.168.100.2"
check "get svc -A with NAMESPACE" expect 0 '^blue +lb-c +LoadBalancer +172\.30\.[0-9.]+ +192\.168\.100\.1 +80:3[0-9]{4}/TCP' W get svc -A
check "describe svc shows the VIP" expect 0 '^External IP: +192\.168\.100\.1$' W describe svc lb-c -n blue

echo "== hand-written Endpoints"
printf '%s\n---\n%s\n' "$(pod blue blue-1 '{app: b}' 10.128.4.7)" "$(pod default global-1 '{app: g}' 10.128.6.7)" >"$DIR/pods2.yaml"
check "pods in blue and default" W apply -f "$DIR/pods2.yaml"
handeps() { # handeps NS IP...: an Endpoints "ext" for a selector-less Service
	local ns=$1; shift
	printf 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext, namespace: %s}\nsubsets:\n- addresses: [%s]\n  ports: [{port: 80}]\n' \
		"$ns" "$(printf '{ip: %s},' "$@" | sed 's/,$//')"
}
handeps red 10.128.4.7 >"$DIR/ep-other.yaml"
check "another tenant's pod IP is refused (403), naming the address" \
	expect 1 'endpoints/red/ext: subsets\[0\]\.addresses\[0\]\.ip: 10\.128\.4\.7 is pod blue/blue-1 \(VNID [0-9]+\), which namespace red \(VNID [0-9]+\) may not reach' W apply -f "$DIR/ep-other.yaml"
handeps red 10.128.0.20 10.128.9.9 >"$DIR/ep-nopod.yaml"
check "a cluster-network address that is no pod's is refused" \
	expect 1 'subsets\[0\]\.addresses\[1\]\.ip: 10\.128\.9\.9 is inside the cluster network \(10\.128\.0\.0/14\) but is no pod.s address' W apply -f "$DIR/ep-nopod.yaml"
code=$(api PUT /api/v1/namespaces/red/endpoints/ext \
	-d '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"ext"},"subsets":[{"addresses":[{"ip":"10.128.4.7"}],"ports":[{"port":80}]}]}' | code_of)
check "... with HTTP 403" test "$code" = 403
check "... and nothing stored" test "$(eps red ext)" = "-"
handeps red 10.128.0.20 10.128.6.7 192.0.2.10 >"$DIR/ep-ok.yaml"
check "same tenant, global pod and external address are allowed" W apply -f "$DIR/ep-ok.yaml"
check "... stored as written" test "$(eps red ext)" = "10.128.0.20:80 10.128.6.7:80 192.0.2.10:80"
handeps default 10.128.4.7 >"$DIR/ep-global.yaml"
check "the global namespace may point at any pod" W apply -f "$DIR/ep-global.yaml"

echo "== status-keeping replace"
svc_rv=$(api GET /api/v1/namespaces/blue/services/lb-c | body_of | jq -r .metadata.resourceVersion)
check "re-apply a LoadBalancer manifest (no status)" stdout_is "service/blue/lb-c unchanged" W apply -f "$DIR/lb-c.yaml"
check "... kept status.loadBalancer" test "$(vip lb-c)" = 192.168.100.1
out=$(api PUT /api/v1/namespaces/blue/services/lb-c -d "$(api GET /api/v1/namespaces/blue/services/lb-c | body_of |
	jq -c 'del(.metadata.resourceVersion) | .status = null')")
check "a body with status null keeps it too" test "$(body_of <<<"$out" | jq -r '.status.loadBalancer.ingress[0].ip + " " + .metadata.resourceVersion')" = "192.168.100.1 $svc_rv"

echo "== restart"
check_stop "controller stops cleanly"
check "fsck: allocations consistent" "$CONTROLLER" --data-dir "$DIR" --fsck
# while the endpoints controller is off, pods come and go
start_controller "$DIR" --no-endpoints-controller || fail "start without the endpoints controller"
printf '%s\n---\n%s\n' "$(pod red db-2 '{app: db}' 10.128.0.21)" "$(pod red db-3 '{app: db}' 10.128.0.22 Pending)" >"$DIR/db.yaml"
check "pods added while the endpoints controller is off" W apply -f "$DIR/db.yaml"
check "pod deleted while it is off" W delete pod db-1 -n red
check "... the Endpoints did not follow (it is off)" test "$(eps red web)" = "10.128.0.20:8080 10.128.0.20:5353"
check "hand-written Endpoints are still checked when it is off" expect 1 'no pod.s address' W apply -f "$DIR/ep-nopod.yaml"
check_stop "controller (endpoints off) stops cleanly"
start_controller "$DIR" || fail restart
check "after restart the Endpoints are repaired" test "$(eps red web) / $(notready red web)" = "10.128.0.21:8080 10.128.0.21:5353 / 10.128.0.22"
check "the start-up line says what the resync did" grep -qE 'endpoints controller: [0-9]+ services with a selector checked in [0-9.]+ s \(1 written, 0 deleted, 0 failed\)' "$CTRL_LOG"
check "after restart the VIPs are kept" test "$(vip lb-c) $(vip lb-d)" = "192.168.100.1 192.168.100.2"

# a second controller on the same store (its endpoints controller off)
# takes a pod write: the first one's endpoints controller follows it
port2=$(free_port)
"$CONTROLLER" --data-dir "$DIR" --listen "127.0.0.1:$port2" --no-endpoints-controller >>"$DIR/controller2.log" 2>&1 &
pid2=$!; T_PIDS+=("$pid2")
check "a second controller on the same store starts" wait_for 20 curl -sf "https://127.0.0.1:$port2/healthz"
pod red db-4 '{app: db}' 10.128.0.23 >"$DIR/db-4.yaml"
check "a pod written through the second controller" W --server "https://127.0.0.1:$port2" apply -f "$DIR/db-4.yaml"
ep_has_db4() { [ "$(eps red web)" = "10.128.0.21:8080 10.128.0.23:8080 10.128.0.21:5353 10.128.0.23:5353" ]; }
check "... reaches the Endpoints through the first one (its timer)" wait_for 5 ep_has_db4
kill -TERM "$pid2"; rc2=0; wait "$pid2" || rc2=$?
check "the second controller stops cleanly" test "$rc2" = 0
check_stop "controller stops cleanly after the restart"
check "fsck after everything" "$CONTROLLER" --data-dir "$DIR" --fsck

finish
