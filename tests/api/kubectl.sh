#!/usr/bin/env bash
# kubectl.sh — kubectl end to end against weft: the kubectl on PATH, with
# the controller's admin kubeconfig, does what a Kubernetes user does.
#   1. version, api-resources (every kind weft serves, with its short name)
#   2. get of every kind: -o wide, -o yaml, -o json, -l
#   3. get -w: the initial rows, then a pod another client creates, as a
#      row with the pod's columns (the watch's events are Tables)
#   4. create namespace; patch --type json, merge, strategic, each checked
#      on the stored object; delete -l deletes the matching objects only
#
#   kubectl ──TLS──► weft-controller (127.0.0.1:random) ◄── curl (writes)
cd "$(dirname "$0")/../.." && source tests/lib.sh

if ! command -v kubectl >/dev/null; then
	fail "kubectl on PATH" "this test is kubectl's"
	finish
	exit 1
fi
DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" --cache-dir "$DIR/kube-cache" "$@"; }
# json_of PATH: the stored object, as the admin reads it (curl, not kubectl)
json_of() { local out; out=$(api GET "$1"); [ "$(code_of <<<"$out")" = 200 ] && body_of <<<"$out"; }
# holds PATH FILTER: the stored object at PATH satisfies the jq FILTER
holds() { local o; o=$(json_of "$1") || { echo "GET $1 failed"; return 1; }; jq -e "$2" <<<"$o" >/dev/null || { echo "expected $2 of $1; seen: $o"; return 1; }; }
# post PATH JSON: create, expecting 201
post() { local out; out=$(api POST "$1" -d "$2"); [ "$(code_of <<<"$out")" = 201 ] || { echo "POST $1: $out" >&2; return 1; }; }

echo "== objects of every kind (curl, as another client)"
must_post() { post "$@" || fail "create $1"; }
must_post /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"role":"edge"}},"status":{"addresses":[{"type":"InternalIP","address":"192.168.9.1"}]}}'
check "kubectl create namespace red" bash -c "$(declare -f K); K create namespace red | grep -qx 'namespace/red created'"
check "... stored, with its NetNamespace" holds /apis/network.openshift.io/v1/netnamespaces/red '.netname == "red"'
pod() { # pod NAME LABELS-JSON [IP]
	local st=""; [ -n "${3:-}" ] && st=",\"status\":{\"podIP\":\"$3\"}"
	post /api/v1/namespaces/red/pods "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"labels\":$2},\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}$st}"
}
pod web '{"app":"web","t":"k"}' 10.128.0.5 || fail "create pod web"
must_post /api/v1/namespaces/red/services '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"t":"k"}},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80}]}}'
must_post /apis/networking.k8s.io/v1/namespaces/red/networkpolicies '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"allow-web","labels":{"t":"k"}},"spec":{"podSelector":{"matchLabels":{"app":"web"}},"ingress":[{"from":[{"podSelector":{}}]}]}}'
must_post /apis/networking.k8s.io/v1/namespaces/red/ingresses '{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","labels":{"t":"k"}},"spec":{"rules":[{"host":"web.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}]}}'
must_post /apis/route.openshift.io/v1/namespaces/red/routes '{"apiVersion":"route.openshift.io/v1","kind":"Route","metadata":{"name":"web","labels":{"t":"k"}},"spec":{"host":"www.example.com","to":{"kind":"Service","name":"web"}}}'
must_post /api/v1/namespaces/red/secrets '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","labels":{"t":"k"}},"type":"Opaque","stringData":{"user":"admin"}}'
CRED=$("$WEFTCTL" node-credential list node-1 2>/dev/null | awk 'NR > 1 {print $1; exit}')
[ -n "$CRED" ] || { "$WEFTCTL" node-credential issue node-1 >/dev/null && CRED=$("$WEFTCTL" node-credential list node-1 | awk 'NR > 1 {print $1; exit}'); }
[ -n "$CRED" ] || fail "issue a node credential"

echo "== version and api-resources"
check "kubectl version: the server's version is weft's" \
	bash -c "$(declare -f K); K version -o json | jq -e '.serverVersion.gitVersion | test(\"^v1\\\\.[0-9]+\\\\.[0-9]+\\\\+weft\")'"
# plural, short name, apiVersion, namespaced, Kind: every kind weft serves
KINDS="clusternetworks cn network.openshift.io/v1 false ClusterNetwork
nodes no v1 false Node
hostsubnets hs network.openshift.io/v1 false HostSubnet
namespaces ns v1 false Namespace
netnamespaces netns network.openshift.io/v1 false NetNamespace
pods po v1 true Pod
services svc v1 true Service
endpoints ep v1 true Endpoints
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy
ingresses ing networking.k8s.io/v1 true Ingress
routes - route.openshift.io/v1 true Route
secrets - v1 true Secret
nodecredentials nodecred weft.io/v1 false NodeCredential"
resources_ok() {
	local out plural short gv nsd kind re
	out=$(K api-resources --no-headers) || return 1
	[ "$(wc -l <<<"$out")" = "$(wc -l <<<"$KINDS")" ] || { echo "expected $(wc -l <<<"$KINDS") kinds; seen: $out"; return 1; }
	while read -r plural short gv nsd kind; do
		if [ "$short" = - ]; then re="^$plural +${gv//./\\.} +$nsd +$kind\$"; else re="^$plural +$short +${gv//./\\.} +$nsd +$kind\$"; fi
		grep -qE "$re" <<<"$out" || { echo "no line '$re' in: $out"; return 1; }
	done <<<"$KINDS"
}
check "kubectl api-resources: every kind weft serves, with its short name" resources_ok

echo "== get of every kind: -o wide, -o yaml, -o json, -l"
# KIND (as typed), NAME, its namespace flag or -, the -o wide header (a regex)
GETS="cn default - ^NAME +CLUSTER NETWORKS +SERVICE NETWORK +MODE\$
no node-1 - ^NAME +INTERNAL-IP +AGE\$
hs node-1 - ^NAME +HOST +HOST IP +SUBNET +NODE ID\$
ns red - ^NAME
netns red - ^NAME +NETID\$
po web --namespace=red ^NAME +IP +NODE +AGE +CONTAINER-ID\$
svc web --namespace=red ^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\\(S\\) +AGE +SELECTOR\$
ep web --namespace=red ^NAME +ENDPOINTS
netpol allow-web --namespace=red ^NAME +POD-SELECTOR
ing web --namespace=red ^NAME +HOSTS +ADDRESS +PORTS
routes web --namespace=red ^NAME +HOST/PORT +PATH +SERVICES +PORT +TERMINATION
secrets creds --namespace=red ^NAME +TYPE +DATA
nodecred ${CRED:-none} - ^NAME +AGE\$"
get_wide() { # KIND NAME NSFLAGS HEADER
	local out nsf=(); [ "$3" = - ] || nsf=("$3")
	out=$(K get "$1" "${nsf[@]}" -o wide) || return 1
	head -1 <<<"$out" | grep -qE "$4" || { echo "header: $(head -1 <<<"$out"), wanted $4"; return 1; }
	sed 1d <<<"$out" | grep -qE "^$2 " || { echo "no row $2 in: $out"; return 1; }
}
get_yaml() {
	local out nsf=(); [ "$3" = - ] || nsf=("$3")
	out=$(K get "$1" "$2" "${nsf[@]}" -o yaml) || return 1
	grep -qx "  name: $2" <<<"$out" && grep -qE '^kind: [A-Z]' <<<"$out" || { echo "seen: $out"; return 1; }
}
get_json() { # the list as JSON, read with python3's json: NAME is among its items
	local nsf=(); [ "$3" = - ] || nsf=("$3")
	K get "$1" "${nsf[@]}" -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [i["metadata"]["name"] for i in d["items"]]
sys.exit(0 if sys.argv[1] in names else "%s not in %s" % (sys.argv[1], names))' "$2"
}
get_labels() { # a selector no object matches: nothing; one every object matches: NAME
	local out nsf=(); [ "$3" = - ] || nsf=("$3")
	out=$(K get "$1" "${nsf[@]}" -l 'weft-test=none' -o name) || return 1
	[ -z "$out" ] || { echo "-l weft-test=none listed: $out"; return 1; }
	out=$(K get "$1" "${nsf[@]}" -l '!weft-test' -o name) || return 1
	grep -qE "/$2\$" <<<"$out" || { echo "-l !weft-test: $2 missing from: $out"; return 1; }
}
while read -r kind name nsflags header; do
	check "get $kind -o wide: the wide columns, a row for $name" get_wide "$kind" "$name" "$nsflags" "$header"
	check "get $kind $name -o yaml" get_yaml "$kind" "$name" "$nsflags"
	check "get $kind -o json: $name among the items" get_json "$kind" "$name" "$nsflags"
	check "get $kind -l: nothing for a label no one has, $name for one it lacks" \
		get_labels "$kind" "$name" "$nsflags"
done <<<"$GETS"
check "get po -l app=web: web only" bash -c "$(declare -f K); [ \"\$(K get po -n red -l app=web -o name)\" = pod/web ]"
check "get no -l role=edge: node-1" bash -c "$(declare -f K); [ \"\$(K get no -l role=edge -o name)\" = node/node-1 ]"

echo "== get -w: a pod created by another client arrives as a row with its columns"
W="$DIR/watch.out"
K get pods -n red -w --request-timeout=60s >"$W" 2>&1 &
WPID=$!
T_PIDS+=("$WPID")
check "get -w: the header and the existing pod" wait_for 20 grep -qE '^web +10\.128\.0\.5 +node-1 +[0-9]+[sm]' "$W"
pod late '{"app":"late"}' 10.128.0.6 || fail "create pod late"
check "get -w: the new pod's row, IP and NODE columns" wait_for 20 grep -qE '^late +10\.128\.0\.6 +node-1 +[0-9]+s$' "$W"
check "get -w: one header, the kind's columns" \
	bash -c "[ \"\$(grep -c '^NAME' '$W')\" = 1 ] && grep -qE '^NAME +IP +NODE +AGE$' '$W'"
kill "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null

echo "== patch: json, merge, strategic, each on the stored object"
P=/api/v1/namespaces/red
check "patch --type=json: a label added" K patch pod web -n red --type=json -p '[{"op":"add","path":"/metadata/labels/tier","value":"front"}]'
check "... stored" holds $P/pods/web '.metadata.labels.tier == "front" and .metadata.labels.app == "web"'
check "patch --type=merge: an annotation, a label removed" K patch pod web -n red --type=merge -p '{"metadata":{"annotations":{"note":"m"},"labels":{"tier":null}}}'
check "... stored" holds $P/pods/web '.metadata.annotations.note == "m" and (.metadata.labels | has("tier") | not) and .metadata.labels.app == "web"'
check "patch --type=strategic: a port merged into the Service's by its key" \
	K patch svc web -n red --type=strategic -p '{"spec":{"ports":[{"name":"https","port":443}]}}'
check "... stored: both ports, 80 kept (a merge patch would have replaced the list)" \
	holds $P/services/web '([.spec.ports[].port] | sort) == [80,443]'
check "patch with no --type (strategic): a container's image by its name" \
	K patch pod web -n red -p '{"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}'
check "... stored: one container, its new image" holds $P/pods/web '[.spec.containers[] | [.name, .image]] == [["c","busybox:1.36"]]'

echo "== delete -l: the matching objects only"
pod x1 '{"del":"yes"}' && pod x2 '{"del":"yes"}' && pod keep '{"del":"no"}' || fail "create x1, x2, keep"
check "delete pods -l del=yes: x1 and x2" \
	bash -c "$(declare -f K); out=\$(K delete pods -n red -l del=yes) && grep -q 'pod \"x1\" deleted' <<<\"\$out\" && grep -q 'pod \"x2\" deleted' <<<\"\$out\""
gone() { local code; code=$(api GET "$1" | code_of); [ "$code" = 404 ] || { echo "GET $1: $code, expected 404"; return 1; }; }
check "... x1 is gone" gone $P/pods/x1
check "... x2 is gone" gone $P/pods/x2
check "... keep, web and late remain" \
	bash -c "$(declare -f K); [ \"\$(K get po -n red -o name | sort | paste -sd' ')\" = 'pod/keep pod/late pod/web' ]"

# ---- apply and explain: they need the OpenAPI documents (/openapi/v2,
# /openapi/v3), which come with their own change; their checks go here.

check_stop "the controller stops cleanly"
finish
