#!/usr/bin/env bash
# kubectl.sh — kubectl end to end against weft: the kubectl on PATH, with
# the controller's admin kubeconfig, does what a Kubernetes user does.
#   1. version, api-resources (every kind weft serves, with its short name)
#   2. get of every kind: -o wide, -o yaml, -o json, -l
#   3. get -w: the initial rows, then a pod another client creates, as a
#      row with the pod's columns (the watch's events are Tables)
#   4. create namespace; patch --type json, merge, strategic, each checked
#      on the stored object; delete -l deletes the matching objects only
#   5. apply, then a changed manifest (a field changed, another removed),
#      then the same again ("unchanged", nothing written), checked on the
#      stored objects: a Service of every type weft serves (ClusterIP,
#      NodePort with and without nodePort, LoadBalancer, headless, without
#      selector) and hand-written Endpoints; type ExternalName refused
#      (422 naming spec.type)
#   6. apply of the network.openshift.io kinds: the ClusterNetwork (the
#      admin's), a HostSubnet's annotations (the rest is the controller's:
#      405, printed), a NetNamespace (the controller's: 405, printed)
#
# Where the rest of apply is: tests/api/openapi.sh applies a Pod, a
# Service (ClusterIP), a NetworkPolicy, an Ingress, a Route and a Secret
# the same way, and has explain and client-side validation.  Both use
# the kubectl on PATH; put another first on PATH to check that one
# (PATH=/tmp/kc/x/usr/bin:$PATH for Debian's 1.20).
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
virtualservices vs lb.weft.io/v1 false VirtualService
sslkeyandcertificates sslkc lb.weft.io/v1 false SSLKeyAndCertificate
nodecredentials nodecred weft.io/v1 false NodeCredential
endpointslices - discovery.k8s.io/v1 true EndpointSlice
podpeerslices pps network.weft.io/v1 false PodPeerSlice
tracerequests - network.weft.io/v1 false TraceRequest"
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

echo "== apply: Services of every type weft serves, hand-written Endpoints"
# Each applied, then changed (a field) and cut (another removed), then
# applied again as it is: "unchanged".  What the server allocated (a
# clusterIP, a nodePort the manifest leaves out) is kept across applies.
A="$DIR/apply"
mkdir -p "$A"
cat >"$A/svc1.yaml" <<'EOF2'
apiVersion: v1
kind: Service
metadata: {name: cip, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}, {name: https, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: np-auto, labels: {app: np}}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: web, port: 8000, targetPort: 9000}, {name: tls, port: 8443}]
---
apiVersion: v1
kind: Service
metadata: {name: np-fixed}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, nodePort: 30080}, {name: https, port: 443, nodePort: 30443}]
---
apiVersion: v1
kind: Service
metadata: {name: lb}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{name: http, port: 80}, {name: https, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: headless}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app: web}
  ports: [{name: http, port: 80}, {name: https, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: ext, labels: {role: db}}
spec:
  ports: [{name: pg, port: 5432}]
---
# protocol written out: subsets is replaced whole by a strategic merge
# patch, so a port without it (the server fills in TCP) differs from the
# stored one on every apply, and kubectl says "configured" (upstream too)
apiVersion: v1
kind: Endpoints
metadata: {name: ext, labels: {backend: db}}
subsets:
- addresses: [{ip: 192.168.50.10}, {ip: 192.168.50.11}]
  ports: [{name: pg, port: 5432, protocol: TCP}]
EOF2
sed -e 's/, {name: https, port: 443[^}]*}//' -e 's/port: 80}/port: 8080}/' -e 's/nodePort: 30080/nodePort: 30081/' \
	-e 's/labels: {tier: front}/labels: {tier: back}/' -e '/externalTrafficPolicy: Local/d' \
	-e '/publishNotReadyAddresses/d' -e 's/{name: ext, labels: {role: db}}/{name: ext}/' -e 's/port: 5432}/port: 5433}/' \
	-e 's/{ip: 192.168.50.10}, //' \
	-e 's/{name: np-auto, labels: {app: np}}/{name: np-auto}/' -e 's/targetPort: 9000}, {name: tls, port: 8443}/targetPort: 9001}/' -e 's/backend: db/backend: pg/' "$A/svc1.yaml" >"$A/svc2.yaml"
# applied FILE WANT KIND/NAME...: kubectl apply -n red FILE prints "KIND/NAME WANT" for each, and no warning
applied() {
	local f=$1 want=$2 out o; shift 2
	out=$(K apply -n red -f "$f" 2>&1) || { echo "apply failed: $out"; return 1; }
	for o in "$@"; do grep -qx "$o $want" <<<"$out" || { echo "no '$o $want' in: $out"; return 1; }; done
	! grep -qi warning <<<"$out" || { echo "$out"; return 1; }
}
SVCS="service/cip service/np-auto service/np-fixed service/lb service/headless service/ext endpoints/ext"
check "apply: a ClusterIP, NodePort (with and without nodePort), LoadBalancer, headless and selector-less Service, Endpoints: created" \
	applied "$A/svc1.yaml" created $SVCS
S=$P/services
CIP=$(json_of $S/cip | jq -r .spec.clusterIP)
NP8000=$(json_of $S/np-auto | jq '.spec.ports[] | select(.port == 8000) | .nodePort')
node_ports_ok() {
	holds $S/np-auto '[.spec.ports[].nodePort | select(. >= 30000 and . <= 32767)] | length == 2' &&
		holds $S/np-fixed '[.spec.ports[].nodePort] == [30080,30443]'
}
check "... stored: the NodePort without nodePorts got two, the one with them has those" node_ports_ok
check "... the LoadBalancer: externalTrafficPolicy Local, a status.loadBalancer" \
	holds $S/lb '.spec.externalTrafficPolicy == "Local" and (.status | has("loadBalancer"))'
check "the manifests changed and cut: configured (ext's Service too), no warning" \
	applied "$A/svc2.yaml" configured $SVCS
check "ClusterIP: label changed, port 443 removed, 80 became 8080; its clusterIP kept" \
	holds $S/cip ".metadata.labels == {\"tier\":\"back\"} and [.spec.ports[] | [.name, .port, .targetPort]] == [[\"http\",8080,8080]] and .spec.clusterIP == \"$CIP\" and .spec.type == \"ClusterIP\""
check "NodePort without nodePort: label and port 8443 removed, targetPort changed, 8000 keeps its nodePort" \
	holds $S/np-auto "(.metadata.labels // {}) == {} and [.spec.ports[] | [.name, .port, .targetPort, .nodePort]] == [[\"web\",8000,9001,$NP8000]]"
check "NodePort with nodePort: 30081 now, 30443 released with its port" \
	holds $S/np-fixed '[.spec.ports[] | [.port, .nodePort]] == [[80,30081]]'
check "... 30443 is free again: another Service takes it" \
	post $S '{"apiVersion":"v1","kind":"Service","metadata":{"name":"np-reuse"},"spec":{"type":"NodePort","ports":[{"port":1,"nodePort":30443}]}}'
check "LoadBalancer: externalTrafficPolicy removed (back to the default, Cluster), port 443 removed" \
	holds $S/lb '.spec.type == "LoadBalancer" and .spec.externalTrafficPolicy == "Cluster" and ([.spec.ports[].port] == [8080])'
check "headless: still clusterIP None, publishNotReadyAddresses removed, port 8080" \
	holds $S/headless '.spec.clusterIP == "None" and (.spec.publishNotReadyAddresses // false) == false and ([.spec.ports[].port] == [8080])'
check "selector-less Service: label removed, port 5433, no selector" \
	holds $S/ext '(.metadata.labels // {}) == {} and ([.spec.ports[].port] == [5433]) and (.spec.selector // {}) == {}'
check "hand-written Endpoints: an address removed, the label changed; not taken over by the controller" \
	holds $P/endpoints/ext '.subsets == [{"addresses":[{"ip":"192.168.50.11"}],"ports":[{"name":"pg","port":5432,"protocol":"TCP"}]}] and .metadata.labels == {"backend":"pg"}'
revisions() { # the resourceVersions of SVCS' objects, in a line
	local o
	for o in $SVCS; do json_of "$P/$([ "${o%%/*}" = service ] && echo services || echo endpoints)/${o#*/}" |
		jq -r .metadata.resourceVersion; done | paste -sd,
}
RVS=$(revisions)
check "the same again: unchanged, every one" applied "$A/svc2.yaml" unchanged $SVCS
check "... and nothing was written (every resourceVersion as it was)" test "$(revisions)" = "$RVS"
printf 'apiVersion: v1\nkind: Service\nmetadata: {name: extname}\nspec: {type: ExternalName, externalName: db.example.com}\n' >"$A/extname.yaml"
extname_refused() {
	local out
	out=$(K apply -n red -f "$A/extname.yaml" 2>&1) && { echo "applied: $out"; return 1; }
	grep -qF "spec.type: 'ExternalName' is not one of ClusterIP, NodePort, LoadBalancer" <<<"$out" ||
		{ echo "not named: $out"; return 1; }
	gone $S/extname
}
check "type ExternalName (weft does not serve it): refused, kubectl prints spec.type; nothing stored" extname_refused
extname_422() {
	local out
	out=$(api POST $S -d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"extname"},"spec":{"type":"ExternalName","externalName":"db.example.com","ports":[{"port":80}]}}')
	[ "$(code_of <<<"$out")" = 422 ] && body_of <<<"$out" | jq -e '.reason == "Invalid" and any(.details.causes[]; .field == "spec.type")' >/dev/null ||
		{ echo "$out"; return 1; }
}
check "... 422 Invalid with a cause naming spec.type, as kube-apiserver's" extname_422

echo "== apply: the network.openshift.io kinds"
# The ClusterNetwork is the admin's; a HostSubnet's annotations are anyone's
# (the rest the controller's); a NetNamespace the controller's alone.
OS=/apis/network.openshift.io/v1
cat >"$A/cn1.yaml" <<'EOF2'
apiVersion: network.openshift.io/v1
kind: ClusterNetwork
metadata: {name: default, labels: {site: a}}
clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 9}]
serviceNetwork: 172.30.0.0/16
mode: multitenant
mtu: 1400
vxlanPort: 4789
EOF2
sed -e 's/mtu: 1400/mtu: 1450/' -e 's/, labels: {site: a}//' "$A/cn1.yaml" >"$A/cn2.yaml"
HS_SUBNET=$(json_of $OS/hostsubnets/node-1 | jq -r .subnet)
HS=$(json_of $OS/hostsubnets/node-1 | jq -r '"host: \(.host)\nhostIP: \(.hostIP)\nsubnet: \(.subnet)\nnodeID: \(.nodeID)"')
printf 'apiVersion: network.openshift.io/v1\nkind: HostSubnet\nmetadata: {name: node-1, annotations: {weft.test/owner: ops, weft.test/rack: r1}}\n%s\n' \
	"$HS" >"$A/hs1.yaml"
sed 's#weft.test/owner: ops, weft.test/rack: r1#weft.test/owner: netops#' "$A/hs1.yaml" >"$A/hs2.yaml"
# os_applied FILE WANT OBJECT: kubectl apply FILE prints "OBJECT WANT"
# (the first apply of an object made without kubectl apply warns that
# the last-applied annotation is missing: allowed there only)
os_applied() {
	local out
	out=$(K apply -f "$1" 2>&1) || { echo "apply failed: $out"; return 1; }
	grep -qx "$3 $2" <<<"$out" || { echo "no '$3 $2' in: $out"; return 1; }
	grep -i warning <<<"$out" | grep -qv 'missing the kubectl.kubernetes.io/last-applied-configuration' &&
		{ echo "$out"; return 1; }
	return 0
}
CN=clusternetwork.network.openshift.io/default
check "ClusterNetwork (made at start): apply with a label and mtu 1400: configured" os_applied "$A/cn1.yaml" configured $CN
check "... mtu changed, the label removed: configured" os_applied "$A/cn2.yaml" configured $CN
check "... stored: mtu 1450, no label" holds $OS/clusternetworks/default '.mtu == 1450 and (.metadata.labels // {}) == {} and .mode == "multitenant"'
check "... the same again: unchanged" os_applied "$A/cn2.yaml" unchanged $CN
HSO=hostsubnet.network.openshift.io/node-1
check "HostSubnet (made by node-1's registration): apply with two annotations: configured" os_applied "$A/hs1.yaml" configured $HSO
check "... one changed, the other removed: configured" os_applied "$A/hs2.yaml" configured $HSO
check "... stored: the annotation changed, the other gone, the subnet as it was" \
	holds $OS/hostsubnets/node-1 ".metadata.annotations[\"weft.test/owner\"] == \"netops\" and (.metadata.annotations | has(\"weft.test/rack\") | not) and .subnet == \"$HS_SUBNET\""
check "... the same again: unchanged" os_applied "$A/hs2.yaml" unchanged $HSO
# refused FILE TEXT: kubectl apply FILE fails and prints MethodNotAllowed and TEXT
refused() {
	local out
	out=$(K apply -f "$1" 2>&1) && { echo "applied: $out"; return 1; }
	grep -q 'Error from server (MethodNotAllowed)' <<<"$out" && grep -qF "$2" <<<"$out" || { echo "seen: $out"; return 1; }
}
sed 's#^subnet: .*#subnet: 10.128.254.0/23#' "$A/hs2.yaml" >"$A/hs3.yaml"
check "... its subnet changed: 405, kubectl prints that only annotations may change" \
	refused "$A/hs3.yaml" 'hostsubnets "node-1": written by the controller; only metadata.annotations may change'
sed 's/node-1/node-9/g' "$A/hs1.yaml" >"$A/hs4.yaml"
check "a HostSubnet of no node: 405, kubectl prints that a Node registration makes them" \
	refused "$A/hs4.yaml" 'HostSubnet objects are written by the controller (a Node registration creates them)'
check "... nothing stored" gone $OS/hostsubnets/node-9
# kubectl 1.26 and later looks up a kind's PATCH in the OpenAPI documents to
# leave validation to the server; a NetNamespace has none (it cannot be
# patched), so kubectl lists the CRDs, which weft answers (an empty list):
# before it did, apply stopped at "failed to check CRD ... could not find
# the requested resource" and never asked the server
json_of $OS/netnamespaces/red >"$A/netns-before.json"
printf 'apiVersion: network.openshift.io/v1\nkind: NetNamespace\nmetadata: {name: red, labels: {a: b}}\nnetname: red\nnetid: %s\n' \
	"$(jq -r .netid "$A/netns-before.json")" >"$A/netns.yaml"
check "NetNamespace red (its Namespace's): apply gets the server's 405, which kubectl prints" \
	refused "$A/netns.yaml" 'NetNamespace objects are written by the controller (a Namespace creates them)'
check "... stored as it was" test "$(json_of $OS/netnamespaces/red)" = "$(cat "$A/netns-before.json")"
sed 's/red/blue/g' "$A/netns.yaml" >"$A/netns-new.yaml"
check "a NetNamespace of no Namespace: the create's 405, printed" refused "$A/netns-new.yaml" 'error when creating'
check "... nothing stored" gone $OS/netnamespaces/blue
check "the CRD list kubectl reads: empty" \
	holds /apis/apiextensions.k8s.io/v1/customresourcedefinitions '.kind == "CustomResourceDefinitionList" and .items == []'

check_stop "the controller stops cleanly"
finish
