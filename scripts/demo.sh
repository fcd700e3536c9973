#!/usr/bin/env bash
# demo.sh — what `make demo` runs: a three-node weft cluster in network
# namespaces (weft-lab) in multitenant mode, five pods across the nodes
# through the real CNI plugin — two isolated projects (blue, red) and the
# global one (default) — and a connectivity matrix measured with ping: every
# cell is a ping that was sent, not a claim.  The lab is left running to
# explore; `bin/weft-lab down` removes it.  Then a LoadBalancer Service in
# front of three web pods (one per node), reached from a pod by its cluster
# IP and from the outside namespace by NodePort on every node and by its
# VIP — each answer names the backend and the client address it saw; then
# a NetworkPolicy that lets only project blue reach the web pods, and its
# log of verdicts.  Last, an Ingress host served over HTTPS by the service
# engine (weft-lb driving HAProxy) on a VIP of its own, from the outside.
#
#   make demo                      (multitenant) projects isolated from each
#                                  other by VNID; default reaches and is reached by all
#   MODE=flat make demo            every pod reaches every pod
#
#           blue/a  red/d    blue/b  default/e    red/c
#              \    /           \    /             |
#             node-1           node-2           node-3        ctrl    outside   se-1
#               |                 |                |            |        |        |
#   ============================ underlay bridge 192.168.200.0/24 =====================
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

lab=bin/weft-lab
[ -x "$lab" ] || lab=src/lab/weft-lab
name=${WEFT_LAB:-weft}
mode=${MODE:-multitenant}
pods=(blue/a blue/b red/c red/d default/e)
nodes=(node-1 node-2 node-3 node-1 node-2)
outside=192.168.200.254

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

if [ -e "/run/weft-lab/$name" ]; then
	echo "A demo lab '$name' is already up:"
	"$lab" status 2>&1 | sed 's/^/  /'
	if [ -t 0 ] && [ -t 1 ]; then
		printf 'Remove it (weft-lab down) and build a new one? [y/N] '
		read -r answer
		case $answer in
		y | Y | yes) run "$lab" down || exit 1 ;;
		*) echo "Left as it is.  Remove it yourself with: $lab down"; exit 1 ;;
		esac
	else
		echo "Remove it with: $lab down   (then run make demo again)"
		exit 1
	fi
fi

step "build the lab: underlay bridge, controller, 3 nodes with their agents (mode $mode), a service engine"
run "$lab" up --nodes 3 --mode "$mode" --service-engines 1 || exit 1

step "create 5 pods in 3 projects (blue, red, default) through each node's CNI chain (weft, portmap)"
for i in "${!pods[@]}"; do
	run "$lab" pod add "${nodes[$i]}" "${pods[$i]%/*}" "${pods[$i]#*/}" || {
		echo "pod add failed; the lab is left up to look at (bin/weft-lab status; logs in /run/weft-lab/$name)"
		exit 1
	}
done

step "what the lab is made of"
run "$lab" status
run "$lab" weftctl get netnamespaces

step "the API is HTTPS only: the controller made a cluster CA and a kubeconfig; from here, through the lab's forwarder"
kubeconfig=$("$lab" kubeconfig) || exit 1
weftctl=bin/weftctl
[ -x "$weftctl" ] || weftctl=$(jq -r .bin "/run/weft-lab/$name/state.json")/weftctl
run env KUBECONFIG="$kubeconfig" "$weftctl" get nodes || exit 1
if command -v kubectl >/dev/null; then
	printf '$ KUBECONFIG=%s kubectl get --raw /api/v1/namespaces | jq -r '"'"'.items[].metadata.name'"'"'\n' "$kubeconfig"
	KUBECONFIG=$kubeconfig kubectl get --raw /api/v1/namespaces | jq -r '.items[].metadata.name' | paste -sd' '
fi
server=$(grep -m1 'server:' "$kubeconfig" | tr -d '" ' | cut -d: -f2-)
printf '$ curl %s/healthz   (no CA given: refused)\n' "$server"
curl -s -o /dev/null "$server/healthz"
echo "curl exit $? (60: the certificate is signed by a CA curl does not trust)"

step "least privilege: each agent holds a credential bound to its node, not the admin token"
run "$lab" weftctl node-credential list
ca=$("$lab" status -o json | jq -r .controller.caFile)
printf '$ curl --cacert %s -H "Authorization: Bearer $(cat /run/weft-lab/%s/node-1/node.token)" %s/api/v1/secrets\n' \
	"$ca" "$name" "$server"
curl -s --cacert "$ca" -H @- "$server/api/v1/secrets" <<<"Authorization: Bearer $(cat "/run/weft-lab/$name/node-1/node.token")" |
	jq -r '"\(.code) \(.message)"'

# ip of each pod, from the lab's status
declare -A ip
while read -r p addr; do ip[$p]=$addr; done < <("$lab" status -o json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')

step "connectivity, measured: ping -c1 -W1 from each pod (rows) to each pod and to outside (columns)"
results=$(mktemp -d /tmp/weft-demo.XXXXXX)
trap 'rm -rf "$results"' EXIT
targets=("${pods[@]}" outside)
for src in "${pods[@]}"; do
	for dst in "${targets[@]}"; do
		[ "$src" = "$dst" ] && continue
		if [ "$dst" = outside ]; then addr=$outside; else addr=${ip[$dst]}; fi
		( if "$lab" exec "$src" -- ping -c1 -W1 -q "$addr" >/dev/null 2>&1; then echo ok; else echo no; fi \
			>"$results/${src/\//_}.${dst/\//_}" ) &
	done
done
wait
printf '%-11s' 'from\to'
for dst in "${targets[@]}"; do printf '%-11s' "$dst"; done
printf '\n'
for src in "${pods[@]}"; do
	printf '%-11s' "$src"
	for dst in "${targets[@]}"; do
		if [ "$src" = "$dst" ]; then printf '%-11s' '.'; else printf '%-11s' "$(cat "$results/${src/\//_}.${dst/\//_}")"; fi
	done
	printf '\n'
done
list=""
for p in "${pods[@]}"; do list+="$p ${ip[$p]}, "; done
echo "(pod IPs: ${list%, }; outside $outside, reachable only through the nodes' masquerade)"

# what the mode promises, against what was measured.  Multitenant: a pod of
# VNID a reaches a pod of VNID b iff a == b or either is 0 (the namespace
# default is 0: global; every other namespace has its own VNID).
mismatch=()
for src in "${pods[@]}"; do
	for dst in "${targets[@]}"; do
		[ "$src" = "$dst" ] && continue
		want=ok
		[ "$mode" = multitenant ] && [ "$dst" != outside ] && [ "${src%/*}" != "${dst%/*}" ] &&
			[ "${src%/*}" != default ] && [ "${dst%/*}" != default ] && want=no
		got=$(cat "$results/${src/\//_}.${dst/\//_}")
		[ "$got" = "$want" ] || mismatch+=("$src -> $dst: expected $want, measured $got")
	done
done
if [ ${#mismatch[@]} -eq 0 ]; then
	case $mode in
	multitenant) echo "As $mode mode promises: pods reach pods of their own project on any node (blue <-> blue, red <-> red),"
		echo "not the other project's (blue <-> red refused, both ways, on one node and across nodes);"
		echo "default is global: it reaches and is reached by every project; all reach outside." ;;
	*) echo "As $mode mode promises: every pod reaches every pod on any node, and the outside." ;;
	esac
else
	echo "Differs from what $mode mode promises:"
	printf '  %s\n' "${mismatch[@]}"
fi

step "a LoadBalancer Service in front of 3 web pods (one per node), translated in eBPF"
for i in 1 2 3; do
	run "$lab" pod add "node-$i" default "web-$i" --label app=web --port http:8080/TCP || exit 1
done
# each web pod answers every connection with its name and the client
# address it saw (tests/tools/peer.py); stopped at the end of this step
servers=()
for i in 1 2 3; do
	ns=$("$lab" status -o json | jq -r --arg n "web-$i" '.pods[] | select(.namespace == "default" and .name == $n) | .netns')
	ip netns exec "$ns" python3 tests/tools/peer.py serve 8080 "web-$i" >/dev/null 2>&1 &
	servers+=($!)
done
trap 'kill "${servers[@]}" 2>/dev/null; rm -rf "$results"' EXIT
manifest=$results/web.yaml
printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: web, namespace: default}' 'spec:' \
	'  type: LoadBalancer' '  selector: {app: web}' \
	'  ports: [{name: http, port: 80, targetPort: http, protocol: TCP}]' >"$manifest"
run "$lab" weftctl apply -f "$manifest" || exit 1
for _ in $(seq 50); do	# the endpoints controller and the agents: well under a second
	n=$("$lab" weftctl get endpoints -n default web -o json 2>/dev/null |
		jq '[.subsets[]?.addresses[]?] | length' 2>/dev/null)
	[ "${n:-0}" = 3 ] && break
	sleep 0.1
done
run "$lab" weftctl get services -n default web
run "$lab" weftctl get endpoints -n default web
svc=$("$lab" weftctl get services -n default web -o json)
cip=$(jq -r .spec.clusterIP <<<"$svc")
np=$(jq -r '.spec.ports[0].nodePort' <<<"$svc")
vip=$(jq -r '.status.loadBalancer.ingress[0].ip // empty' <<<"$svc")
outside_ns=$("$lab" status -o json | jq -r '.outside.netns // empty')
ask() { # FROM ADDR PORT: six connections, summed up per backend
	local from=$1 i out
	out=$(for i in 1 2 3 4 5 6; do
		if [ "$from" = outside ]; then ip netns exec "$outside_ns" python3 tests/tools/peer.py tcp "$2" "$3"
		else "$lab" exec "$from" -- python3 tests/tools/peer.py tcp "$2" "$3"; fi
	done 2>/dev/null | sed -E 's/^(tcp|udp) [^ ]+ (.*) \(after [0-9]+ ms\)$/no-answer \2/' | sed -E 's/^no-answer (timed out|.*refused).*/no-answer \1/' |
		sort | uniq -c | awk '{ if ($2 == "no-answer") { $1 = $1; n = $1; $1 = ""; $2 = ""; sub(/^ +/, ""); printf "%sno answer x%d (%s)", sep, n, $0 }
			else printf "%s%s x%d (saw %s)", sep, $2, $1, $3; sep=", " }')
	printf '  %-8s -> %-21s %s\n' "$from" "$2:$3" "${out:-no answer}"
}
echo "six connections each; every answer names the backend and the client address it saw:"
ask blue/a "$cip" 80
ask red/c "$cip" 80
for i in 1 2 3; do ask outside "192.168.200.$((10 + i))" "$np"; done
[ -n "$vip" ] && ask outside "$vip" 80
echo "(pods keep their address; an outside client keeps its own when the backend is on the node it"
echo " reached, and is SNATed to that node's gateway when the backend is on another node)"

step "a NetworkPolicy: the web pods accept only project blue, enforced in eBPF on every node"
policy=$results/web-policy.yaml
printf '%s\n' 'apiVersion: networking.k8s.io/v1' 'kind: NetworkPolicy' \
	'metadata: {name: web-from-blue, namespace: default, annotations: {weft.io/policy-log: all}}' \
	'spec:' '  podSelector: {matchLabels: {app: web}}' \
	'  ingress: [{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: blue}}}], ports: [{port: http}]}]' \
	>"$policy"
run "$lab" weftctl apply -f "$policy" || exit 1
run "$lab" weftctl can-reach red/c default/web-1 8080/TCP
ask blue/a "$cip" 80
ask red/c "$cip" 80
echo "(the policy is judged on the backend the Service chose, with the client's own address; the"
echo " verdicts of the web pods' new connections are logged, as the policy's annotation asks:)"
for _ in $(seq 100); do	# the agents report the log every few seconds
	"$lab" weftctl policy-log -n default 2>/dev/null | grep -q deny && break
	sleep 0.1
done
"$lab" weftctl policy-log -n default | { IFS= read -r head; echo "$head"; tail -n 4; }
kill "${servers[@]}" 2>/dev/null
wait "${servers[@]}" 2>/dev/null

step "an Ingress host over HTTPS: a VIP of the service engine se-1 (weft-lb driving HAProxy)"
for i in 1 2; do
	run "$lab" pod add "node-$i" shop "store-$i" --label app=store --port http:8080/TCP || exit 1
	ns=$("$lab" status -o json | jq -r --arg n "store-$i" '.pods[] | select(.namespace == "shop" and .name == $n) | .netns')
	addr=$("$lab" status -o json | jq -r --arg n "store-$i" '.pods[] | select(.namespace == "shop" and .name == $n) | .ip')
	# answers every GET with the address it serves on and the client's (X-Forwarded-For)
	ip netns exec "$ns" python3 tests/tools/lb_backends.py serve "$addr:8080" >/dev/null 2>&1 &
	servers+=($!)
done
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=shop.example.com \
	-keyout "$results/shop.key" -out "$results/shop.crt" 2>/dev/null
{
	printf '%s\n' 'apiVersion: v1' 'kind: Secret' 'metadata: {name: shop-tls, namespace: shop}' 'type: kubernetes.io/tls'
	printf 'data: {tls.crt: %s, tls.key: %s}\n---\n' "$(base64 -w0 "$results/shop.crt")" "$(base64 -w0 "$results/shop.key")"
	printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: store, namespace: shop}' \
		'spec: {selector: {app: store}, ports: [{name: http, port: 80, targetPort: http}]}' '---' \
		'apiVersion: networking.k8s.io/v1' 'kind: Ingress' 'metadata: {name: store, namespace: shop}' 'spec:' \
		'  tls: [{hosts: [shop.example.com], secretName: shop-tls}]' \
		'  rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: store, port: {number: 80}}}}]}}]'
} >"$results/shop.yaml"
run "$lab" weftctl apply -f "$results/shop.yaml" || exit 1
lbvip=""
for _ in $(seq 100); do	# the controller translates on its tick; the engine applies at once
	lbvip=$("$lab" weftctl get ingress -n shop store -o json | jq -r '.status.loadBalancer.ingress[0].ip // empty')
	[ -n "$lbvip" ] && ip netns exec "$outside_ns" curl -s -o /dev/null -m 1 --cacert "$results/shop.crt" \
		--resolve "shop.example.com:443:$lbvip" https://shop.example.com/ && break
	sleep 0.1
done
run "$lab" weftctl get ingress -n shop
run "$lab" weftctl get virtualservices
echo "(AKO's names: the shared VS of shard fnv1a32(host) & 7, and the host's SNI child under it)"
printf '$ curl --cacert shop.crt --resolve shop.example.com:443:%s https://shop.example.com/   (from outside, 4 times)\n' "$lbvip"
for _ in 1 2 3 4; do
	ip netns exec "$outside_ns" curl -s -m 3 --cacert "$results/shop.crt" --resolve "shop.example.com:443:$lbvip" https://shop.example.com/
done
printf '$ curl -I http://shop.example.com/   (plain HTTP: sent to HTTPS)\n'
ip netns exec "$outside_ns" curl -s -I -m 3 --resolve "shop.example.com:80:$lbvip" http://shop.example.com/ | grep -iE '^(HTTP|location)'
kill "${servers[@]}" 2>/dev/null
wait "${servers[@]}" 2>/dev/null

step "the lab keeps running: explore it"
explore() { printf '  %-62s %s\n' "$1" "$2"; }
explore "$lab status" "nodes, subnets, pods (-o json for scripts)"
explore "$lab exec blue/a -- ping -c3 ${ip[blue/b]:-IP}" "run anything inside a pod"
explore "$lab exec node-1 -- ip route" "... or inside a node (or ctrl, outside)"
explore "$lab weftctl get pods -A" "the controller's view"
explore "KUBECONFIG=\$($lab kubeconfig) bin/weftctl get pods -A" "... the same from this namespace (kubectl too)"
explore "$lab weftctl get netnamespaces" "projects and their VNIDs"
explore "$lab weftctl pod-network join-projects --to=blue red" "red takes blue's VNID: ping blue <-> red again"
explore "$lab weftctl pod-network isolate-projects red" "... and red is on its own again"
explore "$lab weftctl drops" "packets the data plane refused, per node and reason"
explore "$lab weftctl describe networkpolicy web-from-blue" "what the policy selects and admits now"
explore "$lab weftctl delete networkpolicy web-from-blue" "red reaches the web pods again"
explore "$lab weftctl node-credential revoke --node node-2" "node-2's agent is refused from its next request"
explore "$lab pod add node-2 green f" "one more pod (a third project)"
explore "$lab weftctl get services -A" "cluster IPs, NodePorts, VIPs"
explore "$lab weftctl get vs" "the virtual services Ingresses and Routes became"
explore "$lab exec se-1 -- bin/weft-lb status --state-dir /run/weft-lab/$name/se-1/state" "the engine's reloads and runtime changes"
explore "$lab exec default/web-1 -- python3 tests/tools/peer.py serve 8080 web-1" "serve again, then connect to the service"
explore "$lab down" "remove the lab (everything it made)"

# last, so it is what is on the screen: a line to paste as it is
step "kubectl works against it too: the lab's admin kubeconfig, from this namespace"
if command -v kubectl >/dev/null; then
	echo "KUBECONFIG=$kubeconfig kubectl get pods -A"
else
	echo "KUBECONFIG=$kubeconfig kubectl get pods -A    (kubectl is not installed here)"
fi
