#!/usr/bin/env bash
# hostile_bodies.sh — what an attacker on the API's port sent, each sent
# again as it was sent (curl, real controller), and what must happen now.
#
#   curl / python ──HTTP──► weft-controller (127.0.0.1:random) ──► DIR/weft.db
#   weftctl ──HTTP──► fake server (python, garbage answers)
#
# 1. a body of another kind to every kind's collection and item path
#    (POST, PUT) and to every DELETE: 400 naming both kinds, nothing stored
#    (every list, the store revision and the allocations unchanged); the
#    PUT of a Secret to an existing Node used to crash the controller.
# 2. the single holes: a Secret stored as a Pod, a Secret taking a cluster
#    IP, "Cannot allocate memory" for non-Node bodies at /nodes.
# 3. nesting: 2,000 levels refused (413, naming the limit and the path),
#    every list and watch still parses; too many values refused.
# 4. the minor ones: resourceVersion '58junk', unusable Node InternalIPs,
#    HEAD /healthz, 253-byte names, Content-Type.
# 5. weftctl against a server whose answers do not parse: exit 1, naming
#    the cause (it printed "No resources found" and exited 0).
# At the end the controller stops without a sanitizer report and fsck
# finds the store consistent.
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }
TOKEN=$(cat "$CTRL_TOKEN_FILE")

# send METHOD PATH BODY [curl args]: the body sent exactly as given
send() { local m=$1 p=$2 b=$3; shift 3; api "$m" "$p" --data-binary "$b" "$@"; }
reason_of() { body_of | python3 -c 'import json,sys; print(json.load(sys.stdin).get("reason",""))' 2>/dev/null; }
message_of() { body_of | python3 -c 'import json,sys; print(json.load(sys.stdin).get("message",""))' 2>/dev/null; }

# Every kind: plural, the path of its collection, apiVersion, Kind, and
# the name of an object of it that exists.
KINDS=(
	"clusternetworks /apis/network.openshift.io/v1 network.openshift.io/v1 ClusterNetwork default"
	"nodes /api/v1 v1 Node node-1"
	"hostsubnets /apis/network.openshift.io/v1 network.openshift.io/v1 HostSubnet node-1"
	"namespaces /api/v1 v1 Namespace red"
	"netnamespaces /apis/network.openshift.io/v1 network.openshift.io/v1 NetNamespace red"
	"pods /api/v1/namespaces/red v1 Pod web"
	"services /api/v1/namespaces/red v1 Service web"
	"endpoints /api/v1/namespaces/red v1 Endpoints web"
	"networkpolicies /apis/networking.k8s.io/v1/namespaces/red networking.k8s.io/v1 NetworkPolicy web"
	"ingresses /apis/networking.k8s.io/v1/namespaces/red networking.k8s.io/v1 Ingress web"
	"routes /apis/route.openshift.io/v1/namespaces/red route.openshift.io/v1 Route web"
	"secrets /api/v1/namespaces/red v1 Secret web"
)

# body KIND APIVERSION NAME: a body its own kind accepts
body() {
	local head="\"apiVersion\":\"$2\",\"kind\":\"$1\",\"metadata\":{\"name\":\"$3\"}"
	case $1 in
	ClusterNetwork) echo "{$head,\"clusterNetworks\":[{\"cidr\":\"10.128.0.0/14\",\"hostSubnetLength\":9}],\"serviceNetwork\":\"172.30.0.0/16\"}" ;;
	Node) echo "{$head,\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"192.168.10.1\"}]}}" ;;
	HostSubnet) echo "{$head,\"host\":\"$3\",\"hostIP\":\"192.168.10.9\",\"subnet\":\"10.128.100.0/23\"}" ;;
	NetNamespace) echo "{$head,\"netname\":\"$3\",\"netid\":77}" ;;
	Service) echo "{$head,\"spec\":{\"ports\":[{\"port\":80}]}}" ;;
	Endpoints) echo "{$head,\"subsets\":[{\"addresses\":[{\"ip\":\"192.168.5.5\"}],\"ports\":[{\"port\":80}]}]}" ;;
	NetworkPolicy) echo "{$head,\"spec\":{\"podSelector\":{}}}" ;;
	Ingress) echo "{$head,\"spec\":{\"defaultBackend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}}" ;;
	Route) echo "{$head,\"spec\":{\"to\":{\"name\":\"web\"}}}" ;;
	*) echo "{$head}" ;;
	esac
}

# snapshot: every object of every kind (all namespaces), the store's
# revision and the allocation gauges — equal snapshots, nothing written
snapshot() {
	local k plural prefix
	for k in "${KINDS[@]}"; do
		read -r plural prefix _ <<<"$k"
		api GET "${prefix%/namespaces/red}/$plural" | body_of |
			python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(sorted(d["items"], key=lambda o: json.dumps(o, sort_keys=True)), sort_keys=True))'
	done
	api GET /metrics | body_of | grep -E '^weft_(store_revision|allocations_used)'
}

# --- objects for the replaces to find: the crash was in a replace
api POST /api/v1/nodes --data-binary "$(body Node v1 node-1)" >/dev/null
for k in "${KINDS[@]}"; do
	read -r plural prefix apiv kind name <<<"$k"
	case $kind in
	ClusterNetwork|Node|HostSubnet|NetNamespace) continue ;;
	esac
	res=$(send POST "$prefix/$plural" "$(body "$kind" "$apiv" "$name")")
	[ "$(code_of <<<"$res")" = 201 ] || fail "setup: create $kind $name" "$(tr '\n' ' ' <<<"$res")"
done

echo "== a body of another kind, on every path"
before=$(snapshot)
# sweep VERB: every kind's path with every other kind's body; prints what was wrong
sweep() {
	local verb=$1 p b path_plural path_prefix path_kind path_name body_plural body_prefix body_api body_kind _ res bad=0
	for p in "${KINDS[@]}"; do
		read -r path_plural path_prefix _ path_kind path_name <<<"$p"
		for b in "${KINDS[@]}"; do
			read -r body_plural body_prefix body_api body_kind _ <<<"$b"
			[ "$body_kind" = "$path_kind" ] && [ "$verb" != DELETE ] && continue
			case $verb in
			POST) res=$(send POST "$path_prefix/$path_plural" "$(body "$body_kind" "$body_api" "$path_name")") ;;
			*) res=$(send "$verb" "$path_prefix/$path_plural/$path_name" "$(body "$body_kind" "$body_api" "$path_name")") ;;
			esac
			if [ "$(code_of <<<"$res")" != 400 ]; then
				echo "$verb $path_prefix/$path_plural with body kind $body_kind: $(tr '\n' ' ' <<<"$res")"; bad=1
			elif [ "$verb" != DELETE ] &&
			     ! grep -qF "body kind '$body_kind' does not match the path's resource '$path_plural' (kind $path_kind)" <<<"$res"; then
				echo "$verb $path_prefix/$path_plural with body kind $body_kind: message: $(message_of <<<"$res")"; bad=1
			elif [ "$verb" = DELETE ] && ! grep -qF "body kind '$body_kind' is not DeleteOptions" <<<"$res"; then
				echo "DELETE $path_plural/$path_name with body kind $body_kind: message: $(message_of <<<"$res")"; bad=1
			fi
		done
	done
	return $bad
}
check "POST of another kind's body to every collection: 400 naming both (132 pairs)" sweep POST
check "PUT of another kind's body to every object: 400 naming both (132 pairs)" sweep PUT
check "DELETE with any kind's body instead of DeleteOptions: 400 (144 pairs)" sweep DELETE
after=$(snapshot)
check "... and nothing was stored: every list, the store revision and the allocations are unchanged" \
	test "$before" = "$after"
check "the controller still serves" curl -sf "$CTRL_URL/healthz"

echo "== the holes one by one"
res=$(send PUT /api/v1/nodes/node-1 '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"node-1"}}')
check "PUT /api/v1/nodes/node-1 with a Secret body: 400, no crash" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && curl -sf "$CTRL_URL/healthz" >/dev/null'
res=$(send PUT /api/v1/nodes/node-1 '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"node-1"}}')
check "PUT /api/v1/nodes/node-1 with a Pod body: 400, no crash" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && curl -sf "$CTRL_URL/healthz" >/dev/null'
res=$(send POST /api/v1/namespaces/red/pods '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"}}')
check "a Secret POSTed to pods: 400 naming both, not stored as a pod" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && [ "$(message_of <<<"$res")" = "body kind '"'"'Secret'"'"' does not match the path'"'"'s resource '"'"'pods'"'"' (kind Pod)" ] &&
	      [ "$(api GET /api/v1/namespaces/red/pods/s1 | code_of)" = 404 ]'
ips_before=$(api GET /metrics | body_of | grep 'weft_allocations_used{pool="clusterip"}')
res=$(send POST /api/v1/namespaces/red/services '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s2"}}')
check "a Secret POSTed to services: 400, no cluster IP taken" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && [ "$(api GET /metrics | body_of | grep "weft_allocations_used{pool=\"clusterip\"}")" = "$ips_before" ]'
res=$(send POST /api/v1/nodes '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n9"}}')
check "a Namespace POSTed to nodes: 400 BadRequest, not 500" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && [ "$(reason_of <<<"$res")" = BadRequest ]'
res=$(send POST /api/v1/namespaces/red/pods '{"apiVersion":"networking.k8s.io/v1","kind":"Pod","metadata":{"name":"v"}}')
check "a Pod body with another apiVersion: 400 naming both" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "body apiVersion '"'"'networking.k8s.io/v1'"'"' does not match the path'"'"'s resource '"'"'pods'"'"' (apiVersion v1)" <<<"$res"'
res=$(send PUT /api/v1/namespaces/red/pods/web '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other"}}')
check "PUT with another name in the body: 400 naming both" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "'"'"'other'"'"' does not match the name in the path ('"'"'web'"'"')" <<<"$res"'
res=$(send PUT /api/v1/namespaces/red/pods/web '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"}}')
check "PUT with another namespace in the body: 400 naming both" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "'"'"'default'"'"' does not match the namespace in the path ('"'"'red'"'"')" <<<"$res"'
res=$(send POST /api/v1/namespaces/red/pods '{"metadata":{"name":"nokind"}}')
check "a body without kind and apiVersion takes the path's (as kube-apiserver)" \
	eval '[ "$(code_of <<<"$res")" = 201 ] && [ "$(body_of <<<"$res" | jq -r "[.apiVersion, .kind] | join(\" \")")" = "v1 Pod" ]'

echo "== nesting and size"
nest() { python3 -c 'import sys; n=int(sys.argv[1]); print("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" + sys.argv[2] + "\"},\"spec\":" + "{\"a\":" * n + "1" + "}" * n + "}")' "$@"; }
nest 2000 deep > "$dir/deep.json"
res=$(api POST /api/v1/namespaces/red/pods --data-binary @"$dir/deep.json")
check "a body nested 2,000 levels: 413 naming the limit and the path" \
	eval '[ "$(code_of <<<"$res")" = 413 ] && [ "$(reason_of <<<"$res")" = RequestEntityTooLarge ] &&
	      grep -qE "spec(\\.a){31}: nested deeper than 32 levels \\(the limit\\)" <<<"$res"'
nest 3000 deeper > "$dir/deeper.json"
res=$(api POST /api/v1/namespaces/red/pods --data-binary @"$dir/deeper.json")
check "a body nested past the parser's own depth: 413 too" \
	eval '[ "$(code_of <<<"$res")" = 413 ] && grep -q "nested deeper than 32 levels" <<<"$res"'
res=$(api POST /api/v1/namespaces/red/pods --data-binary "$(nest 31 deep31)")
check "31 levels under spec (32 in all) is the limit, and is stored" test "$(code_of <<<"$res")" = 201
res=$(api POST /api/v1/namespaces/red/pods --data-binary "$(nest 32 deep32)")
check "one more level: 413" test "$(code_of <<<"$res")" = 413
python3 -c 'print("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"wide\"},\"spec\":{\"x\":[" + ",".join(["0"] * 100000) + "]}}")' > "$dir/wide.json"
res=$(api POST /api/v1/namespaces/red/pods --data-binary @"$dir/wide.json")
check "a body of more than 100,000 values: 413 naming the limit" \
	eval '[ "$(code_of <<<"$res")" = 413 ] && grep -q "more than 100000 JSON values in one object (the limit)" <<<"$res"'
check "every list of pods still parses (weftctl get pods -A)" \
	eval '"$WEFTCTL" get pods -A >/dev/null && "$WEFTCTL" get pods -A -o json | python3 -c "import json,sys; d=json.load(sys.stdin); assert any(i[\"metadata\"][\"name\"]==\"deep31\" for i in d[\"items\"])"'
curl -sN -m 5 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/pods?watch=1&timeoutSeconds=1" > "$dir/watch"
check "a watch of every pod parses, event by event" \
	python3 -c 'import json,sys; n=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; assert len(n) >= 3, n' "$dir/watch"

echo "== resourceVersion, node addresses, HEAD, names, Content-Type"
rv=$(api GET /api/v1/namespaces/red/pods/web | body_of | jq -r .metadata.resourceVersion)
for bad in 58junk -1 99999999999999999999 " 5" 0x10; do
	res=$(send PUT /api/v1/namespaces/red/pods/web "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"resourceVersion\":\"$bad\",\"labels\":{\"x\":\"y\"}}}")
	check "PUT with resourceVersion '$bad': 400 naming it, nothing written" \
		eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "'"'"'$bad'"'"' is not a resourceVersion" <<<"$res" &&
		      [ "$(api GET /api/v1/namespaces/red/pods/web | body_of | jq -r .metadata.resourceVersion)" = "$rv" ]'
done
for q in "pods?resourceVersion=58junk" "pods/web?resourceVersion=-1" "pods?watch=1&resourceVersion=58junk" \
	 "pods?watch=1&resourceVersion=99999999999999999999" "pods?watch=1&timeoutSeconds=5x"; do
	res=$(api GET "/api/v1/namespaces/red/$q")
	check "GET .../$q: 400 naming it" eval '[ "$(code_of <<<"$res")" = 400 ] && [ "$(reason_of <<<"$res")" = BadRequest ]'
done
for bad in 58junk -1 0 99999999999999999999; do
	res=$(send DELETE /api/v1/namespaces/red/pods/web "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"resourceVersion\":\"$bad\"}}")
	check "DELETE with precondition resourceVersion '$bad': 400, pod kept" \
		eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "'"'"'$bad'"'"' is not a revision" <<<"$res" &&
		      [ "$(api GET /api/v1/namespaces/red/pods/web | code_of)" = 200 ]'
done
res=$(send DELETE /api/v1/namespaces/red/pods/web '{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}')
check "DELETE with dryRun [All]: 200 (a dry run), pod kept" \
	eval '[ "$(code_of <<<"$res")" = 200 ] && [ "$(api GET /api/v1/namespaces/red/pods/web | code_of)" = 200 ]'
res=$(send DELETE /api/v1/namespaces/red/pods/web '{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["Some"]}')
check "DELETE with dryRun [Some]: 400, pod kept" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && [ "$(api GET /api/v1/namespaces/red/pods/web | code_of)" = 200 ]'
res=$(send POST '/api/v1/namespaces/red/pods?dryRun=Some' '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dry"}}')
check "POST ?dryRun=Some: 400 (only All is a dry run), nothing created" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && [ "$(api GET /api/v1/namespaces/red/pods/dry | code_of)" = 404 ]'

i=20
for ip in 0.0.0.0 127.0.0.1 127.8.9.10 169.254.3.4 224.0.0.5 239.1.1.1 240.0.0.1 255.255.255.255; do
	i=$((i + 1))
	res=$(send POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"bad-$i\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$ip\"}]}}")
	check "Node InternalIP $ip: 422 naming it" \
		eval '[ "$(code_of <<<"$res")" = 422 ] && grep -qF "status.addresses[0].address: $ip is " <<<"$res"'
done
head_status=$(python3 - "$CTRL_URL" <<'PY'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
conn = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
c = conn(u.hostname, u.port, timeout=5)
c.request("HEAD", "/healthz")
r = c.getresponse()
print(r.status, len(r.read()))
PY
)
check "HEAD /healthz: 200 without a token, no body" test "$head_status" = "200 0"

name253=$(printf 'a%.0s' $(seq 253))
res=$(send POST /api/v1/namespaces/red/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$name253\"}}")
check "a Pod named with 253 bytes (a DNS-1123 subdomain, as Kubernetes): 201" test "$(code_of <<<"$res")" = 201
check "... and it reads back by name" test "$(api GET "/api/v1/namespaces/red/pods/$name253" | code_of)" = 200
res=$(send POST /api/v1/namespaces/red/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a$name253\"}}")
check "254 bytes: 422" test "$(code_of <<<"$res")" = 422
res=$(send POST /api/v1/nodes "$(body Node v1 "$name253" | sed 's/192.168.10.1/192.168.10.77/')")
check "a Node named with 253 bytes: 201" test "$(code_of <<<"$res")" = 201
name63=${name253:0:63}
res=$(send POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$name63\"}}")
check "a Namespace of 63 bytes: 201" test "$(code_of <<<"$res")" = 201
res=$(send POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a$name63\"}}")
check "a Namespace of 64 bytes (a DNS-1123 label, as Kubernetes): 422" test "$(code_of <<<"$res")" = 422
res=$(send POST /api/v1/namespaces/red/services "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"a$name63\"},\"spec\":{\"ports\":[{\"port\":80}]}}")
check "a Service of 64 bytes (a DNS-1035 label, as Kubernetes): 422" test "$(code_of <<<"$res")" = 422

ct() { # ct CONTENT-TYPE-HEADER METHOD PATH BODY: curl with exactly that header line
	curl -s -X "$2" -H "Authorization: Bearer $TOKEN" -H "$1" -w '\n%{http_code}\n' --data-binary "$4" "$CTRL_URL$3"
}
for t in text/plain application/x-www-form-urlencoded application/merge-patch+json; do
	res=$(ct "Content-Type: $t" POST /api/v1/namespaces/red/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"ct"}}')
	check "POST with Content-Type $t: 415 naming it, nothing stored" \
		eval '[ "$(code_of <<<"$res")" = 415 ] && [ "$(reason_of <<<"$res")" = UnsupportedMediaType ] &&
		      grep -qF "'"'"'$t'"'"' is not supported" <<<"$res" && [ "$(api GET /api/v1/namespaces/red/secrets/ct | code_of)" = 404 ]'
done
res=$(ct "Content-Type: text/plain" PUT /api/v1/namespaces/red/secrets/web '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"web"}}')
check "PUT with Content-Type text/plain: 415" test "$(code_of <<<"$res")" = 415
res=$(ct "Content-Type: text/plain" DELETE /api/v1/namespaces/red/secrets/web '{}')
check "DELETE with a body of Content-Type text/plain: 415, secret kept" \
	eval '[ "$(code_of <<<"$res")" = 415 ] && [ "$(api GET /api/v1/namespaces/red/secrets/web | code_of)" = 200 ]'
res=$(ct "Content-Type:" POST /api/v1/namespaces/red/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"ct1"}}')
check "POST without a Content-Type: read as JSON (as kube-apiserver), 201" test "$(code_of <<<"$res")" = 201
res=$(ct "Content-Type: Application/JSON; charset=utf-8" POST /api/v1/namespaces/red/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"ct2"}}')
check "POST with application/json and a charset: 201" test "$(code_of <<<"$res")" = 201

echo "== weftctl against answers that do not parse"
fake_port=$(free_port)
python3 - "$fake_port" > "$dir/fake.log" 2>&1 <<'PY' &
import http.server, sys
deep = '{"apiVersion":"v1","kind":"PodList","metadata":{},"items":[' + '[' * 3000 + ']' * 3000 + ']}'
answers = {
    "/api/v1/pods": deep,                                   # past any parser's depth
    "/api/v1/namespaces/default/pods": "<html>garbage</html>",
    "/api/v1/namespaces/default/services": '{"kind":"ServiceList","metadata":{}}',
    "/api/v1/nodes": '{"kind":"NodeList","items":5}',
    "/healthz": "ok",
}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = answers.get(self.path, "{}").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
T_PIDS+=("$!")
wait_for 10 curl -sf "http://127.0.0.1:$fake_port/healthz" || fail "fake server" "$(cat "$dir/fake.log")"
fake() { WEFT_SERVER="http://127.0.0.1:$fake_port" "$WEFTCTL" "$@"; }
# expect_fail NAME PATTERN CMD...: CMD exits 1 and says PATTERN on stderr, nothing like "No resources"
expect_fail() {
	local name=$1 pat=$2 res rc=0; shift 2
	res=$("$@" 2>&1) || rc=$?
	if [ "$rc" = 1 ] && grep -qE -- "$pat" <<<"$res" && ! grep -q "No resources" <<<"$res"; then
		pass "$name"
	else
		fail "$name" "exit $rc: $res"
	fi
}
expect_fail "weftctl get pods -A, list past the parser's depth: exit 1 naming it" \
	"error: the server's answer to GET /api/v1/pods is not valid JSON .*maximum parsing depth" fake get pods -A
expect_fail "weftctl get pods, an HTML answer: exit 1 naming it" \
	"error: the server's answer to GET /api/v1/namespaces/default/pods is not valid JSON" fake get pods
expect_fail "weftctl get pods -o json, an HTML answer: exit 1" "is not valid JSON" fake get pods -o json
expect_fail "weftctl get svc, a list without items: exit 1" "is not a list \\(it has no items\\)" fake get svc
expect_fail "weftctl get nodes, items that are no list: exit 1" "is not a list \\(its items are not a JSON list\\)" fake get nodes
expect_fail "weftctl drops, items that are no list: exit 1" "is not a list" fake drops

echo "== the end"
check_stop "the controller stops cleanly (no sanitizer report)"
check "fsck: the store is consistent, every object is what its key says" "$CONTROLLER" --data-dir "$dir" --fsck
finish
