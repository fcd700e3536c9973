#!/usr/bin/env bash
# tests/api/ctl_weftctl.sh — weftctl against a real weft-controller.
#
#   weftctl ──HTTPS+token──> weft-controller --data-dir $DIR (127.0.0.1:free port)
#
# 1. apply: a multi-document manifest creates, re-applies unchanged, and a
#    modified one configures; stdin and directories work.
# 2. get: tables (columns, aliases), -o json/yaml/name, empty lists, not found.
# 3. refusals: malformed YAML, unknown kind, missing name, invalid CIDR, a bad
#    host in doc 2, a wrong token — each names what is wrong, exits non-zero,
#    and stores nothing (the snapshot of every object is unchanged).
# 4. describe, delete, delete -f, and the pod-network verbs.
# 5. get -w: the list, then a row per event another client causes; -o json;
#    errors; --timeout and SIGTERM end it with exit 0; relisting on 410 and
#    resuming after bookmarks, against tests/tools/fake_watch.py.  delete -l / -A /
#    --field-selector delete exactly what the selectors match.
# 6. describe networkpolicy shows what a policy selects and matches now;
#    can-reach answers allowed (0) / denied (1) naming the deciding
#    policies, and no answer (2) for an unknown pod, a bad port or protocol.
cd "$(dirname "$0")/../.."
. tests/lib.sh

W() { "$WEFTCTL" "$@"; }

# expect RC PATTERN CMD...: CMD exits RC ("!0" = any failure) and its output
# (stdout and stderr) matches the extended regex PATTERN.
expect() {
	local want=$1 pat=$2; shift 2
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	if [ "$want" = '!0' ]; then
		[ "$rc" -ne 0 ] || { echo "exit 0, wanted a failure; output: $out"; return 1; }
	elif [ "$rc" -ne "$want" ]; then
		echo "exit $rc, wanted $want; output: $out"; return 1
	fi
	grep -qE -- "$pat" <<<"$out" || { echo "output lacks /$pat/: $out"; return 1; }
}

# stdout_is WANT CMD...: CMD exits 0 and prints exactly WANT on stdout.
stdout_is() {
	local want=$1; shift
	local out
	out=$("$@") || { echo "exit $?"; return 1; }
	[ "$out" = "$want" ] || { printf 'got:\n%s\nwant:\n%s\n' "$out" "$want"; return 1; }
}

# Every object of every kind, one "kind/name" (with namespace) a line.
snapshot() {
	local k out
	for k in namespaces nodes netnamespaces hostsubnets services endpoints pods ingresses routes \
		networkpolicies secrets; do
		out=$(W get "$k" -A -o json 2>&1) || { echo "get $k failed: $out"; continue; }
		python3 -c '
import json, sys
for o in json.load(sys.stdin).get("items", []):
    m = o["metadata"]
    print(o["kind"], m.get("namespace", ""), m["name"], m.get("resourceVersion"))' <<<"$out"
	done
}

unchanged_since() { # unchanged_since SNAPSHOT: nothing was stored or changed
	local now; now=$(snapshot)
	[ "$now" = "$1" ] || { diff <(echo "$1") <(echo "$now"); return 1; }
}

netid() { W get netnamespaces "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["netid"])'; }

DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
M=$DIR/red.yaml
cat >"$M" <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: red
---
apiVersion: v1
kind: Service
metadata:
  name: avisvc-1b
  namespace: red
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: dns, port: 53, protocol: UDP}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: red}
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: avisvc-1b, port: {number: 80}}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web, namespace: red}
spec:
  host: www.example.com
  to: {kind: Service, name: avisvc-1b}
  tls: {termination: edge}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-web, namespace: red}
spec:
  podSelector:
    matchLabels: {app: web}
  ingress:
  - from:
    - podSelector: {}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: Opaque
stringData: {user: admin}
EOF

echo "== apply"
check "apply creates every document" stdout_is "namespace/red created
service/red/avisvc-1b created
ingress/red/web created
route/red/web created
networkpolicy/red/allow-web created
secret/default/creds created" W apply -f "$M"
check "apply again: all unchanged" stdout_is "namespace/red unchanged
service/red/avisvc-1b unchanged
ingress/red/web unchanged
route/red/web unchanged
networkpolicy/red/allow-web unchanged
secret/default/creds unchanged" W apply -f "$M"
check "apply keeps the allocated nodePorts" \
	expect 0 '80:3[0-9]{4}/TCP,53:3[0-9]{4}/UDP' W get svc avisvc-1b -n red
sed -e 's/targetPort: 8080/targetPort: 9090/' -e 's/host: www.example.com/host: www2.example.com/' "$M" >"$DIR/red2.yaml"
check "modified manifest: configured" stdout_is "namespace/red unchanged
service/red/avisvc-1b configured
ingress/red/web unchanged
route/red/web configured
networkpolicy/red/allow-web unchanged
secret/default/creds unchanged" W apply -f "$DIR/red2.yaml"
check "the change is stored" expect 0 'targetPort.*9090' W get svc avisvc-1b -n red -o json
check "the same change again: unchanged" expect 0 'service/red/avisvc-1b unchanged' W apply -f "$DIR/red2.yaml"
check "apply -n puts documents in that namespace" \
	expect 0 '^secret/red/creds created$' W apply -f "$DIR/red2.yaml" -n red
check "apply -f - reads stdin" bash -c "'$WEFTCTL' apply -f - <'$DIR/red2.yaml' | grep -qx 'route/red/web unchanged'"
mkdir -p "$DIR/nodes"
for i in 1 2; do
	cat >"$DIR/nodes/node-$i.yaml" <<EOF
apiVersion: v1
kind: Node
metadata: {name: node-$i}
status:
  addresses: [{type: InternalIP, address: 10.0.0.$i}]
EOF
done
check "apply a directory" stdout_is "node/node-1 created
node/node-2 created" W apply -f "$DIR/nodes"
check "re-applied nodes are unchanged" stdout_is "node/node-1 unchanged
node/node-2 unchanged" W apply -f "$DIR/nodes"

echo "== get"
check "hostsubnets header" expect 0 '^NAME {3,}HOST {3,}HOST IP {3,}SUBNET {3,}NODE ID$' W get hostsubnets
check "hostsubnets row" expect 0 '^node-1 +node-1 +10\.0\.0\.1 +10\.128\.0\.0/23 +1$' W get hostsubnets
check "hostsubnets -o json fields" bash -c "'$WEFTCTL' get hs -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"kind\"] == \"HostSubnetList\", d
for i in d[\"items\"]:
    assert all(k in i for k in (\"host\", \"hostIP\", \"subnet\", \"nodeID\")), i'"
check "hostsubnet -o json of one" expect 0 '"hostIP": "10.0.0.2"' W get hostsubnet node-2 -o json
check "hostsubnet -o yaml" expect 0 '^subnet: 10\.128\.2\.0/23$' W get hs node-2 -o yaml
check "-o name" stdout_is "hostsubnet/node-1
hostsubnet/node-2" W get hs -o name
check "netnamespaces NETID" expect 0 '^NAME {3,}NETID$' W get netnamespaces
check "default is global" expect 0 '^default +0$' W get netns
check "red has its own netid" expect 0 '^red +[1-9][0-9]+$' W get netns
for k in node nodes no NODE Nodes; do
	check "kind alias $k" expect 0 '^node-2 +10\.0\.0\.2 ' W get "$k"
done
for k in hostsubnet hostsubnets hs HostSubnet; do
	check "kind alias $k" expect 0 '^node-1 +node-1 ' W get "$k"
done
check "kind alias svc" expect 0 '^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE$' W get svc -n red
check "kind alias svc/NAME" expect 0 '^avisvc-1b +NodePort +172\.30\.' W get svc/avisvc-1b -n red
check "services -A has NAMESPACE" expect 0 '^NAMESPACE +NAME +TYPE' W get services -A
check "ingress table" expect 0 '^web +web\.example\.com +80 +[0-9]+s$' W get ing -n red
check "route table" expect 0 '^web +www2\.example\.com +avisvc-1b +<all> +edge$' W get routes -n red
check "networkpolicy table" expect 0 '^allow-web +app=web +' W get netpol -n red
check "secret table" expect 0 '^creds +Opaque +1 +' W get secrets -n red
check "namespaces table" expect 0 '^red +Active +[0-9]+[smh]' W get ns
check "clusternetwork table" expect 0 '^default +10\.128\.0\.0/14 +172\.30\.0\.0/16 +multitenant$' W get cn
check "nodes -o wide" expect 0 '^NAME +INTERNAL-IP +AGE' W get nodes -o wide
check "empty list" expect 0 '^No resources found in red namespace\.$' W get pods -n red
check "empty list prints nothing on stdout" stdout_is "" W get pods -n red
check "not found" expect 1 'pods "nope" not found' W get pod nope -n red
check "unknown kind" expect 1 "doesn't have a resource type \"gizmo\"" W get gizmo
check "bad output format is a usage error" expect 2 'unknown output format' W get pods -o xml

echo "== get with selectors"
cat >"$DIR/labelled.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
spec: {nodeName: node-1}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, labels: {app: web}}
spec: {nodeName: node-2}
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, labels: {app: db}}
spec: {nodeName: node-1}
EOF
W apply -f "$DIR/labelled.yaml" >/dev/null
check "get -l app=web" stdout_is "pod/web-1
pod/web-2" W get pods -l app=web -o name
check "get --selector 'app in (db)' (spaces and parentheses pass through)" stdout_is "pod/db-1" W get pods --selector 'app in (db)' -o name
check "get --field-selector spec.nodeName=node-1" stdout_is "pod/db-1
pod/web-1" W get pods --field-selector spec.nodeName=node-1 -o name
check "get -l and --field-selector together" stdout_is "pod/web-2" W get pods -l app=web --field-selector spec.nodeName=node-2 -o name
check "get -A -l app!=web" expect 0 '^default +db-1 ' W get pods -A -l 'app!=web'
check "get -l that selects nothing" expect 0 '^No resources found in default namespace\.$' W get pods -l app=nothing
check "a malformed selector: the server's 400, naming it" \
	expect 1 "Error from server \(BadRequest\): labelSelector 'app in \(x'" W get pods -l 'app in (x'
check "a field services do not have: field label not supported" \
	expect 1 'field label not supported: spec.nodeName' W get svc --field-selector spec.nodeName=node-1
check "names and a selector: usage error" expect 2 'selectors cannot be used with names' W get pods web-1 -l app=web
W delete pods web-1 web-2 db-1 >/dev/null

echo "== refusals"
S=$(snapshot)
[ -n "$S" ] || fail "snapshot is empty"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [oops\n' >"$DIR/bad.yaml"
check "malformed YAML names file and line" expect '!0' "^$DIR/bad.yaml: line [0-9]+, column [0-9]+: " W apply -f "$DIR/bad.yaml"
check "malformed YAML stores nothing" unchanged_since "$S"
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: fresh1}\n---\napiVersion: v1\nkind: Gizmo\nmetadata: {name: g}\n' >"$DIR/unknown.yaml"
check "unknown kind in doc 2" expect '!0' "^$DIR/unknown.yaml doc 2: kind: " W apply -f "$DIR/unknown.yaml"
check "unknown kind: doc 1 not applied either" unchanged_since "$S"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  labels: {a: b}\n' >"$DIR/noname.yaml"
check "missing name" expect '!0' "^$DIR/noname.yaml doc 1: metadata\.name: " W apply -f "$DIR/noname.yaml"
check "missing name stores nothing" unchanged_since "$S"
cat >"$DIR/cidr.yaml" <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: wide-open, namespace: red}
spec:
  podSelector: {}
  ingress:
  - from:
    - ipBlock: {cidr: 10.0.0.0/33}
EOF
check "invalid CIDR" expect '!0' "^$DIR/cidr.yaml doc 1: spec\.ingress\[0\]\.from\[0\]\.ipBlock\.cidr: " W apply -f "$DIR/cidr.yaml"
check "invalid CIDR stores nothing" unchanged_since "$S"
cat >"$DIR/ingress.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: fresh2}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad, namespace: fresh2}
spec:
  rules:
  - host: My_Host
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: s, port: {number: 80}}}
EOF
check "bad host names doc 2 and the field" \
	expect 1 "^$DIR/ingress.yaml doc 2: spec\.rules\[0\]\.host: 'My_Host'" W apply -f "$DIR/ingress.yaml"
check "bad host: the namespace of doc 1 is not created" unchanged_since "$S"
check "namespace differing from -n" expect '!0' 'does not match the namespace "blue"' W apply -f "$M" -n blue
check "namespace mismatch stores nothing" unchanged_since "$S"
echo "not-the-token" >"$DIR/wrong.token"
sed 's/My_Host/good.example.com/' "$DIR/ingress.yaml" >"$DIR/ingress-ok.yaml"
check "wrong token: apply fails" expect '!0' 'Error from server \(Unauthorized\)' W --token-file "$DIR/wrong.token" apply -f "$DIR/ingress-ok.yaml"
check "wrong token stores nothing" unchanged_since "$S"
check "wrong token: get fails" expect 1 'Unauthorized' W get ns --token-file="$DIR/wrong.token"
check "no token: clear error" expect 1 'no token' env WEFT_TOKEN_FILE= KUBECONFIG= HOME="$DIR" "$WEFTCTL" get ns
check "unreachable server named" expect 1 'cannot reach http://127\.0\.0\.1:1: Connection refused' W --server http://127.0.0.1:1 get ns
check "a controller-owned kind is refused" expect 1 'MethodNotAllowed|written by the controller' W delete hs node-1
check "apply without -f is a usage error" expect 2 'usage: weftctl apply' W apply
check "unknown verb is a usage error" expect 2 'unknown verb' W frobnicate
check "refusals stored nothing" unchanged_since "$S"
check "the fixed manifest applies" stdout_is "namespace/fresh2 created
ingress/fresh2/bad created" W apply -f "$DIR/ingress-ok.yaml"

echo "== describe"
check "describe node shows its HostSubnet" expect 0 'Subnet: +10\.128\.0\.0/23' W describe node node-1
check "describe namespace shows its NetID" expect 0 '^NetID: +[1-9][0-9]*$' W describe ns red
check "describe service" expect 0 'clusterIP: +172\.30\.' W describe svc avisvc-1b -n red
check "describe secret hides values" bash -c "out=\$('$WEFTCTL' describe secret creds -n red) && grep -q 'user: *5 bytes' <<<\"\$out\" && ! grep -q admin <<<\"\$out\""
check "describe missing" expect 1 'routes "nope" not found' W describe route nope -n red

echo "== pod-network"
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: blue}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: green}\n' >"$DIR/bg.yaml"
check "projects blue and green" stdout_is "namespace/blue created
namespace/green created" W apply -f "$DIR/bg.yaml"
check "blue and green differ" test "$(netid blue)" != "$(netid green)"
check "join-projects prints the netids" expect 0 "^netnamespace/blue netid $(netid red)$" W pod-network join-projects --to=red blue green
check "join: blue has red's netid" test "$(netid blue)" = "$(netid red)"
check "join: green has red's netid" test "$(netid green)" = "$(netid red)"
check "isolate-projects" expect 0 '^netnamespace/blue netid [1-9][0-9]*$' W pod-network isolate-projects blue
check "isolate: blue has a new netid" test "$(netid blue)" != "$(netid red)"
check "isolate: green still joined to red" test "$(netid green)" = "$(netid red)"
check "make-projects-global" stdout_is "netnamespace/green netid 0" W pod-network make-projects-global green
check "global: green is 0" test "$(netid green)" = 0
check "isolating default is refused" expect 1 'default' W pod-network isolate-projects default
check "default stays 0" test "$(netid default)" = 0
check "unknown project" expect 1 'NotFound' W pod-network isolate-projects nope
check "join without --to is a usage error" expect 2 'needs --to' W pod-network join-projects blue
check "no projects is a usage error" expect 2 'at least one PROJECT' W pod-network isolate-projects
check "unknown action is a usage error" expect 2 'unknown pod-network action' W pod-network split-projects blue
check "a bad --timeout is a usage error" expect 2 'seconds from 0' W pod-network isolate-projects blue --timeout abc
# a node whose agent reported an old revision and never catches up
put_node() { # NAME APPLIED DROPS_JSON: PUT it, succeed on 200/201
	local body
	body=$(jq -cn --arg n "$1" --arg a "$2" --arg d "$3" '{apiVersion: "v1", kind: "Node",
		metadata: {name: $n, annotations: {"weft.io/applied-revision": $a, "weft.io/drops": $d}},
		status: {addresses: [{type: "InternalIP", address: "192.168.77.9"}]}}')
	api PUT "/api/v1/nodes/$1" -d "$body" | tail -n 1 | grep -qE '^20[01]$'
}
metrics_have() { api GET /metrics | grep -qF "$1"; }
check "register node wn1 with an old applied revision" put_node wn1 1 '{"isolated":3,"spoofed-ip":2}'
check "pod-network fails after --timeout naming the late node" expect 1 'not applied within 1 s on: wn1 \(at revision 1\)' W pod-network isolate-projects blue --timeout 1
check "... the change itself is stored" test "$(netid blue)" != "$(netid red)"
check "node wn1 catches up" put_node wn1 999999 '{"isolated":3,"spoofed-ip":2}'
check "pod-network waits and reports the nodes" expect 0 '^applied on 1 node\(s\) in [0-9.]+ s \(revision [0-9]+\)$' W pod-network isolate-projects blue
check "drops lists them per node and reason" expect 0 'wn1 +isolated +3' W drops
check "drops NODE" expect 0 'wn1 +spoofed-ip +2' W drops wn1
check "drops of an unknown node" expect 1 'do not exist' W drops nosuch
check "/metrics has weft_drops_total" metrics_have 'weft_drops_total{node="wn1",reason="isolated"} 3'
check "/metrics has weft_node_applied_revision" metrics_have 'weft_node_applied_revision{node="wn1"} 999999'

echo "== delete"
check "delete by name" stdout_is "secret/creds deleted" W delete secret creds -n red
check "delete again: not found" expect 1 'secrets "creds" not found' W delete secret creds -n red
check "delete missing with --ignore-not-found" W delete secret creds -n red --ignore-not-found
check "delete -f: the missing one is reported" expect 1 'secrets "creds" not found' W delete -f "$DIR/red2.yaml" -n red
check "delete -f: the others are gone" expect 0 'No resources found in red namespace' W get routes -n red
check "delete -f: the namespace is gone" expect 1 'namespaces "red" not found' W get ns red
check "delete -f of a malformed file deletes nothing" expect '!0' "$DIR/bad.yaml: line" W delete -f "$DIR/bad.yaml"

echo "== get -w"
WD=$(tmpdir)
pod_json() { # NAME APP: a Pod bound to node-1, labelled app=APP
	jq -cn --arg n "$1" --arg a "$2" '{apiVersion: "v1", kind: "Pod",
		metadata: {name: $n, labels: {app: $a}}, spec: {nodeName: "node-1"}}'
}
create_pod() { api POST /api/v1/namespaces/default/pods -d "$(pod_json "$1" "$2")" | code_of | grep -qx 201; }
delete_pod() { api DELETE "/api/v1/namespaces/default/pods/$1" | code_of | grep -qx 200; }
pod_code() { api GET "/api/v1/namespaces/${2:-default}/pods/$1" | code_of; }
lines_like() { # FILE REGEX N: FILE has exactly N lines matching REGEX
	[ "$(grep -cE -- "$2" "$1")" -eq "$3" ]
}
# json_stream_names FILE NAME...: FILE is a stream of JSON objects, Pods, and
# holds one of each NAME
json_stream_names() {
	python3 - "$@" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec, i, names = json.JSONDecoder(), 0, []
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    o, i = dec.raw_decode(text, i)
    assert o["kind"] == "Pod", o
    names.append(o["metadata"]["name"])
for n in sys.argv[2:]:
    assert names.count(n) == 1, (n, names)
PY
}
must create_pod w-old watched
must create_pod w-gone watched
"$WEFTCTL" get pods -l app=watched -w --timeout 60 >"$WD/rows" 2>"$WD/rows.err" &
WPID=$!
T_PIDS+=("$WPID")
check "get -w prints the existing rows" wait_for 10 grep -q '^w-old ' "$WD/rows"
check "... under a header" lines_like "$WD/rows" '^NAME +IP +NODE +AGE$' 1
check "... the rows in name order" bash -c "grep -E '^w-' '$WD/rows' | awk '{print \$1}' | paste -sd, | grep -qx 'w-gone,w-old'"
check "another client creates w-new" create_pod w-new watched
check "get -w prints a row for the object created" wait_for 10 grep -q '^w-new ' "$WD/rows"
check "another client creates an unselected pod" create_pod w-other other
check "another client deletes w-gone" delete_pod w-gone
check "get -w prints a row for the object deleted" wait_for 10 lines_like "$WD/rows" '^w-gone ' 2
check "... and none for the pod its selector leaves out" lines_like "$WD/rows" '^w-other ' 0
check "... and the header still once" lines_like "$WD/rows" '^NAME ' 1
kill -TERM "$WPID" 2>/dev/null
rc=0; wait "$WPID" || rc=$?
check "SIGTERM ends get -w with exit 0" test "$rc" -eq 0
check "... and nothing on stderr" test ! -s "$WD/rows.err"

"$WEFTCTL" get pods -l app=watched -w -o json --timeout 60 >"$WD/json" 2>"$WD/json.err" &
WPID=$!
T_PIDS+=("$WPID")
check "get -w -o json prints the listed objects" wait_for 10 grep -q '"name": "w-new"' "$WD/json"
check "another client creates w-json" create_pod w-json watched
check "get -w -o json prints the created object" wait_for 10 grep -q '"name": "w-json"' "$WD/json"
kill -INT "$WPID" 2>/dev/null
rc=0; wait "$WPID" || rc=$?
check "SIGINT ends get -w with exit 0" test "$rc" -eq 0
check "-o json under -w is one JSON object per object" json_stream_names "$WD/json" w-old w-new w-json
check "get -w --timeout 2 ends by itself, exit 0" expect 0 '^w-json ' timeout 20 "$WEFTCTL" get pods -w --timeout 2
check "get NAME -w: that object only" bash -c "out=\$(timeout 20 '$WEFTCTL' get pods w-new -w --timeout 1) &&
	grep -q '^w-new ' <<<\"\$out\" && ! grep -q '^w-old ' <<<\"\$out\""
check "get NAME NAME -w: those objects only" bash -c "out=\$(timeout 20 '$WEFTCTL' get pods w-new w-old -w --timeout 1) &&
	grep -q '^w-new ' <<<\"\$out\" && grep -q '^w-old ' <<<\"\$out\" && ! grep -q '^w-json ' <<<\"\$out\""
check "get -w of a missing NAME: not found, exit 1" expect 1 'pods "nope" not found' timeout 20 "$WEFTCTL" get pods nope -w --timeout 5
check "get -w with a bad selector: exit 1 naming it" \
	expect 1 "Error from server \(BadRequest\): labelSelector 'app in \(x'" timeout 20 "$WEFTCTL" get pods -w -l 'app in (x' --timeout 10
check "get -w with a wrong token: exit 1" \
	expect 1 'Unauthorized' timeout 20 "$WEFTCTL" --token-file "$DIR/wrong.token" get pods -w --timeout 10
check "--timeout without -w is a usage error" expect 2 'goes with -w' W get pods --timeout 5
check "a bad --timeout is a usage error" expect 2 '\-\-timeout 5m: want whole seconds' W get pods -w --timeout 5m
for p in w-old w-new w-json w-other; do delete_pod "$p" || fail "clean up pod $p"; done

echo "== get -w: 410, ERROR 410, bookmarks and resume (tests/tools/fake_watch.py)"
FPORT=$(free_port)
: >"$WD/fake.log"
echo fake-token >"$WD/fake.token"
python3 tests/tools/fake_watch.py "$FPORT" "$WD/fake.log" &
T_PIDS+=("$!")
wait_for "$SERVER_START_S" python3 -c "import socket; socket.create_connection(('127.0.0.1', $FPORT))" ||
	fail "fake_watch.py listens"
rc=0
timeout 30 "$WEFTCTL" --server "http://127.0.0.1:$FPORT" --token-file "$WD/fake.token" get pods -w --timeout 3 \
	>"$WD/fake.out" 2>&1 || rc=$?
check "get -w against it ends at --timeout with exit 0" test "$rc" -eq 0
check "410 and ERROR 410 relist (rows again, header once), events after" \
	test "$(awk '{print $1}' "$WD/fake.out" | paste -sd,)" = "NAME,list1,list2,list3,added,modified"
check "each watch starts from the last list's or event's resourceVersion, a BOOKMARK's included" \
	test "$(grep -o 'watch=1&resourceVersion=[0-9]*' "$WD/fake.log" | cut -d= -f3 | paste -sd,)" = "10,20,30,35"
check "the watches ask for bookmarks and a timeout" \
	test "$(grep -c 'allowWatchBookmarks=true&timeoutSeconds=[0-9]' "$WD/fake.log")" -eq 4

echo "== delete -l"
for p in d-1 d-2; do must create_pod "$p" del; done
must create_pod d-keep keep
must api POST /api/v1/namespaces/blue/pods -d "$(pod_json d-blue del)"
check "d-blue exists in blue" test "$(pod_code d-blue blue)" = 200
check "delete -l deletes the matching objects of the namespace" stdout_is "pod/d-1 deleted
pod/d-2 deleted" W delete pods -l app=del
check "... d-1 is gone" test "$(pod_code d-1)" = 404
check "... d-2 is gone" test "$(pod_code d-2)" = 404
check "... d-keep is left" test "$(pod_code d-keep)" = 200
check "... d-blue in another namespace is left" test "$(pod_code d-blue blue)" = 200
check "delete -A -l deletes in every namespace" stdout_is "pod/blue/d-blue deleted" W delete pods -A -l app=del
check "... d-blue is gone" test "$(pod_code d-blue blue)" = 404
check "delete -l with no match: No resources found, exit 0" expect 0 '^No resources found in default namespace\.$' W delete pods -l app=del
check "... and nothing on stdout" stdout_is "" W delete pods -l app=del
check "delete --field-selector" stdout_is "pod/d-keep deleted" W delete pods --field-selector metadata.name=d-keep
check "... d-keep is gone" test "$(pod_code d-keep)" = 404
check "delete -l with NAMEs is a usage error" expect 2 'NAMEs or a selector' W delete pods d-1 -l app=del
check "delete -A without a selector is a usage error" expect 2 'needs a selector' W delete pods -A
check "delete -l with a bad selector: exit 1 naming it" expect 1 "labelSelector 'app in \(x'" W delete pods -l 'app in (x'

echo "== networkpolicies: describe and can-reach"
cat >"$DIR/np.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: np-x, labels: {team: x}}
---
apiVersion: v1
kind: Namespace
metadata: {name: np-y}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: np-y}
spec:
  podSelector: {}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-x, namespace: np-y}
spec:
  podSelector:
    matchLabels: {pod: b}
  ingress:
  - from:
    - namespaceSelector:
        matchLabels: {team: x}
      podSelector:
        matchLabels: {pod: a}
    ports:
    - port: 80
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-http, namespace: np-y}
spec:
  podSelector:
    matchExpressions:
    - {key: app, operator: In, values: [web]}
  ingress:
  - from:
    - ipBlock: {cidr: 192.168.0.0/16, except: [192.168.1.0/24]}
    ports:
    - port: http
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: dns-only, namespace: np-x}
spec:
  podSelector:
    matchLabels: {pod: b}
  policyTypes: [Egress]
  egress:
  - to:
    - namespaceSelector:
        matchLabels: {kubernetes.io/metadata.name: np-y}
    - ipBlock: {cidr: 8.8.8.0/24}
    ports:
    - {port: 53, protocol: UDP}
EOF
np_pod() { # NS NAME IP LABELS-JSON: a pod on node-1 at IP serving "http" on 8080/TCP
	api POST "/api/v1/namespaces/$1/pods" -d "$(jq -cn --arg n "$2" --arg ip "$3" --argjson l "$4" \
		'{apiVersion: "v1", kind: "Pod", metadata: {name: $n, labels: $l},
		  spec: {nodeName: "node-1", containers: [{name: "c", image: "x",
			 ports: [{name: "http", containerPort: 8080}]}]},
		  status: {podIP: $ip}}')" | code_of | grep -qx 201
}
must W apply -f "$DIR/np.yaml"
must np_pod np-x a 10.128.0.21 '{"pod":"a"}'
must np_pod np-x b 10.128.0.22 '{"pod":"b"}'
must np_pod np-y a 10.128.0.31 '{"pod":"a"}'
must np_pod np-y b 10.128.0.32 '{"pod":"b","app":"web"}'
check "describe netpol: the pods it selects now" \
	expect 0 '^  Selects: +np-y/b$' W describe netpol allow-x -n np-y
check "describe networkpolicy: a peer of both selectors matches their AND" \
	expect 0 '^    from\[0\]: +namespaces np-x; pods np-x/a$' W describe networkpolicy allow-x -n np-y
check "describe: the ports of a rule" expect 0 '^    ports: +80/TCP$' W describe netpol allow-x -n np-y
check "describe: an ipBlock and the pods inside it (none)" \
	expect 0 '^    from\[0\]: +ipBlock 192\.168\.0\.0/16 except 192\.168\.1\.0/24; no pods now$' \
	W describe netpol web-http -n np-y
check "describe: a named port resolved on each selected pod" \
	expect 0 '^    ports: +http/TCP \(np-y/b: 8080\)$' W describe netpol web-http -n np-y
check "describe: no rule denies all ingress" \
	expect 0 '^  Ingress: +no rule: this policy allows no ingress' W describe netpol deny-all -n np-y
check "describe: egress only" expect 0 '^  Ingress: +not isolated by this policy$' W describe netpol dns-only -n np-x
check "describe: egress to a namespace by its name label" \
	expect 0 '^    to\[0\]: +namespaces np-y; pods np-y/a, np-y/b$' W describe netpol dns-only -n np-x
check "describe: the object's fields are still shown" expect 0 '^Spec:$' W describe netpol dns-only -n np-x
check "can-reach: allowed, naming the policy" \
	expect 0 '^allowed: np-x/a egress not isolated; np-y/b ingress allowed by np-y/allow-x$' \
	W can-reach np-x/a np-y/b 80
check "can-reach: denied names the isolating policies, exit 1" \
	expect 1 '^denied: np-y/b ingress isolated by np-y/allow-x, np-y/deny-all, np-y/web-http; no rule allows np-x/a on 81/TCP$' \
	W can-reach np-x/a np-y/b 81
check "can-reach: the same pod of another namespace is denied (AND within a peer)" \
	expect 1 '^denied: np-y/b ingress isolated by' W can-reach np-y/a np-y/b 80
check "can-reach: a named port from an ipBlock" \
	expect 0 '^allowed: 192\.168\.7\.7 is not a pod .*; np-y/b ingress allowed by np-y/web-http$' \
	W can-reach 192.168.7.7 np-y/b 8080
check "can-reach: the except of an ipBlock" expect 1 '^denied: ' W can-reach 192.168.1.7 np-y/b 8080
check "can-reach: a pod's address is the pod" \
	expect 0 '^allowed: np-x/a egress not isolated; np-y/b ingress allowed by np-y/allow-x$' \
	W can-reach 10.128.0.21 10.128.0.32 80/tcp
check "can-reach: egress allowed, ingress denied: only the side that denies" \
	expect 1 '^denied: np-y/a ingress isolated by np-y/deny-all; no rule allows np-x/b on 53/UDP$' \
	W can-reach np-x/b np-y/a 53/UDP
check "can-reach: egress isolated, UDP 53 to an ipBlock allowed" \
	expect 0 '^allowed: np-x/b egress allowed by np-x/dns-only; 8\.8\.8\.8 is not a pod' W can-reach np-x/b 8.8.8.8 53/UDP
check "can-reach: egress isolated, TCP 53 denied" \
	expect 1 '^denied: np-x/b egress isolated by np-x/dns-only; no rule allows np-y/a on 53/TCP; np-y/a ingress isolated by np-y/deny-all' \
	W can-reach np-x/b np-y/a 53
check "can-reach: egress to an address outside the ipBlock" \
	expect 1 '^denied: np-x/b egress isolated by np-x/dns-only; no rule allows 9\.9\.9\.9 on 53/UDP$' \
	W can-reach np-x/b 9.9.9.9 53/UDP
check "can-reach: not isolated both ways" expect 0 '^allowed: np-x/a egress not isolated; np-x/b ingress not isolated$' \
	W can-reach np-x/a np-x/b 9000/SCTP
check "can-reach: a pod to itself" expect 0 '^allowed: np-y/a to itself' W can-reach np-y/a np-y/a 80
check "can-reach: an unknown pod, exit 2 naming it" expect 2 '^error: pod np-y/nope not found$' \
	W can-reach np-x/a np-y/nope 80
check "can-reach: an unknown namespace" expect 2 'pod nons/a not found' W can-reach nons/a np-y/a 80
check "can-reach: a bad port" expect 2 'error: port "0": want a number from 1 to 65535' W can-reach np-x/a np-y/a 0
check "can-reach: a port past 65535" expect 2 'error: port "65536"' W can-reach np-x/a np-y/a 65536
check "can-reach: a port that is not a number" expect 2 'error: port "http"' W can-reach np-x/a np-y/a http
check "can-reach: a bad protocol" expect 2 'error: protocol "ICMP": want TCP, UDP or SCTP' \
	W can-reach np-x/a np-y/a 80/ICMP
check "can-reach: an empty protocol" expect 2 'error: protocol ""' W can-reach np-x/a np-y/a 80/
check "can-reach: neither a pod nor an address" \
	expect 2 'error: SRC "10.0.0.300" is neither NAMESPACE/POD nor an IPv4 address' W can-reach 10.0.0.300 np-y/a 80
check "can-reach: a bad name" expect 2 'error: invalid pod name "a/b"' W can-reach np-x/a/b np-y/a 80
check "can-reach: an empty namespace" expect 2 'error: invalid namespace ""' W can-reach /a np-y/a 80
check "can-reach: too few arguments" expect 2 'usage: weftctl can-reach' W can-reach np-x/a np-y/a
W delete -f "$DIR/np.yaml" >/dev/null 2>&1 || true

echo "== misc"
check "version" expect 0 '^weftctl [0-9]+\.[0-9]+' W version
check "help lists every verb" bash -c "out=\$('$WEFTCTL' --help) && for v in apply get describe delete can-reach pod-network drops version help; do grep -q \"^  \$v \" <<<\"\$out\" || exit 1; done"
# not through check: stop_controller must wait in this shell, not a subshell
rc=0
stop_controller || rc=$?
if [ "$rc" -eq 0 ]; then
	pass "controller exits cleanly"
else
	fail "controller exits cleanly" "exit $rc: $(grep -E 'ERROR|Sanitizer|leak|runtime error' "$DIR/controller.log" | head -n 3)"
fi
finish
