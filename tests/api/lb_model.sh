#!/usr/bin/env bash
# lb_model.sh — the load-balancer model over the real API: Ingresses,
# Routes, Secrets and Services in, VirtualServices and SSLKeyAndCertificates
# out (docs/lb.md), with their VIPs, and what became of each host written
# back to the Ingress and Route status.  A Secret that appears later, a
# key that does not match its certificate, a shard-size change that moves
# hosts without leaving a VS behind, a deleted Ingress, and the kinds
# refusing any writer but the controller.
#
#   weftctl / curl ──HTTPS──► weft-controller (loadBalancer.vipNetworks 192.168.202.0/29)
#                                 │ lb controller (in-process, the API's tick)
#                                 ▼
#                              DIR/weft.db
cd "$(dirname "$0")/../.." && source tests/lib.sh

W() { "$WEFTCTL" "$@"; }
DIR=$(tmpdir)

cluster() { # cluster SHARD_SIZE
	cat <<EOF
apiVersion: network.openshift.io/v1
kind: ClusterNetwork
metadata: {name: default}
clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 9}]
serviceNetwork: 172.30.0.0/16
vipNetworks: [192.168.201.0/29]
loadBalancer: {clusterName: weft, shardSize: $1, vipNetworks: [192.168.202.0/29]}
EOF
}
cluster LARGE >"$DIR/cluster.yaml"
start_controller "$DIR" --config "$DIR/cluster.yaml" || { fail "controller starts"; finish; exit 1; }

# vs NAME JQ: the VirtualService's field ("-" when there is none)
vs() { api GET "/apis/lb.weft.io/v1/virtualservices/$1" | body_of | jq -r "($2) // \"-\"" 2>/dev/null || echo -; }
vs_names() { api GET /apis/lb.weft.io/v1/virtualservices | body_of | jq -r '[.items[].metadata.name] | sort | join(" ")'; }
ing() { api GET "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/$1" | body_of | jq -r "$2"; }
is() { [ "$("${@:2}")" = "$1" ]; }	# is WANT CMD...: CMD prints exactly WANT

cat >"$DIR/backends.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: shop}
subsets: [{addresses: [{ip: 10.200.0.5}, {ip: 10.200.0.6}], ports: [{name: http, port: 8080}]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: store, namespace: shop}
spec:
  tls: [{hosts: [b.example.com], secretName: b-tls}]
  rules:
  - host: a.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
  - host: b.example.com
    http: {paths: [{path: /api, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}
EOF
check "apply the backends and an Ingress" W apply -f "$DIR/backends.yaml"

echo "== an insecure host: pools on its shard's shared VS, a VIP, the Ingress's status"
# a.example.com: fnv1a32 0x00d78f4b & 7 = 3; b.example.com: 0x312435a2 & 7 = 2
check "weft--Shared-L7-3 is made" wait_for 10 is "SharedL7" vs weft--Shared-L7-3 .spec.type
check "its pool is named by host, path, namespace and Ingress, with the Endpoints' servers" \
	is "weft--a.example.com_-shop-store 10.200.0.5:8080 10.200.0.6:8080" \
	vs weft--Shared-L7-3 '.spec.pools[0] | "\(.name) \([.servers[] | "\(.ip):\(.port)"] | join(" "))"'
check "it has the first VIP of the pool" is 192.168.202.1 vs weft--Shared-L7-3 .spec.vip
check "the Ingress's status names the host's VIP" wait_for 10 is "192.168.202.1 a.example.com" \
	ing store '.status.loadBalancer.ingress[0] | "\(.ip) \(.hostname)"'

echo "== a secure host whose Secret is missing, then appears"
check "the host is not built: no SNI child" is - vs weft--b.example.com .spec.type
check "the status says why, naming the Secret" wait_for 10 is \
	"SecretNotFound host b.example.com: secret shop/b-tls not found" \
	ing store '.status.conditions[0] | "\(.reason) \(.message)"'
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=b.example.com -keyout "$DIR/b.key" \
	-out "$DIR/b.crt" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other -keyout "$DIR/other.key" \
	-out "$DIR/other.crt" 2>/dev/null
secret() { # secret CRT KEY
	cat <<EOF
apiVersion: v1
kind: Secret
metadata: {name: b-tls, namespace: shop}
type: kubernetes.io/tls
data: {tls.crt: $(base64 -w0 "$1"), tls.key: $(base64 -w0 "$2")}
EOF
}
secret "$DIR/b.crt" "$DIR/other.key" >"$DIR/bad.yaml"
check "a Secret whose key is another certificate's" W apply -f "$DIR/bad.yaml"
check "is refused in the status: the key does not belong to the certificate" wait_for 10 is \
	"SecretInvalid host b.example.com: Secret shop/b-tls: the key does not belong to the certificate" \
	ing store '.status.conditions[0] | "\(.reason) \(.message)"'
secret "$DIR/b.crt" "$DIR/b.key" >"$DIR/good.yaml"
check "the right Secret" W apply -f "$DIR/good.yaml"
check "the SNI child is built under its shard's parent" wait_for 10 is "SNIChild weft--Shared-L7-2" \
	vs weft--b.example.com '"\(.spec.type) \(.spec.parent)"'
check "with the parent's VIP and the Secret's key/certificate object" is \
	"192.168.202.2 weft--shop-b-tls" vs weft--b.example.com '"\(.spec.vip) \(.spec.sslKeyAndCertificate)"'
cert_of() { api GET "/apis/lb.weft.io/v1/sslkeyandcertificates/$1" | body_of | jq -r .spec.certificate; }
check "which holds the certificate" is "$(cat "$DIR/b.crt")" cert_of weft--shop-b-tls
describe_hides_key() {
	local out; out=$(W describe sslkeyandcertificate weft--shop-b-tls) || return 1
	grep -q 'key: *<hidden>' <<<"$out" && ! grep -q 'PRIVATE KEY' <<<"$out" && grep -q 'kind: *Secret' <<<"$out"
}
check "weftctl describe of the key/certificate object hides the key" describe_hides_key
describe_vs() { W describe vs weft--b.example.com | grep -qE '^ +sslKeyAndCertificate: +weft--shop-b-tls'; }
check "weftctl describe vs shows the SNI child's fields" describe_vs
check "the parent redirects the host to HTTPS (302)" is "b.example.com 302 https" \
	vs weft--Shared-L7-2 '.spec.httpRedirects[0] | "\(.host) \(.code) \(.scheme)"'
check "the status lists both hosts and no condition" wait_for 10 is "a.example.com b.example.com -" \
	ing store '"\([.status.loadBalancer.ingress[].hostname] | sort | join(" ")) \(.status.conditions // "-")"'

echo "== reading the model"
check "weftctl get vs lists them with their VIPs" sh -c "'$WEFTCTL' get vs | grep -E '^weft--Shared-L7-3 +SharedL7 +192.168.202.1 +80/HTTP,443/HTTPS'"
post_vs() { api POST /apis/lb.weft.io/v1/virtualservices \
	-d '{"apiVersion":"lb.weft.io/v1","kind":"VirtualService","metadata":{"name":"x"},"spec":{}}' | code_of; }
check "a client may not write a VirtualService (405)" is 405 post_vs

engine_patch() { # engine_patch NAME JSON: merge-patch the VS's status, as an engine does
	curl -s --cacert "$CTRL_CA" -X PATCH -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
		-H 'Content-Type: application/merge-patch+json' -o /dev/null -w '%{http_code}' -d "$2" \
		"$CTRL_URL/apis/lb.weft.io/v1/virtualservices/$1/status"
}
check "a service engine may write a VirtualService's status (200)" is 200 \
	engine_patch weft--Shared-L7-3 '{"status":{"engines":{"se-1":{"state":"Applied","observedSpec":"x"}}}}'
check "... another engine's entry beside it" is 200 \
	engine_patch weft--Shared-L7-3 '{"status":{"engines":{"se-2":{"state":"Pending","observedSpec":"x"}}}}'
check "both entries are kept" is "se-1 se-2" vs weft--Shared-L7-3 '.status.engines | keys | join(" ")'
spec_put() { # a replace that changes the spec: refused
	api GET /apis/lb.weft.io/v1/virtualservices/weft--Shared-L7-3 | body_of | jq -c '.spec.vip = "192.168.202.7"' |
		api PUT /apis/lb.weft.io/v1/virtualservices/weft--Shared-L7-3 -d @- | code_of
}
check "a replace that changes its spec is refused (405)" is 405 spec_put

echo "== a Route: edge with an alternate backend, and passthrough"
cat >"$DIR/routes.yaml" <<EOF
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: edge, namespace: shop}
spec:
  host: edge.example.com
  to: {kind: Service, name: web, weight: 90}
  alternateBackends: [{kind: Service, name: web2, weight: 10}]
  tls:
    termination: edge
    insecureEdgeTerminationPolicy: Redirect
    certificate: |
$(sed 's/^/      /' "$DIR/b.crt")
    key: |
$(sed 's/^/      /' "$DIR/b.key")
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: pass, namespace: shop}
spec: {host: pass.example.com, to: {kind: Service, name: web}, tls: {termination: passthrough}}
EOF
check "apply two Routes" W apply -f "$DIR/routes.yaml"
# edge.example.com: 0x113cd49b & 7 = 3
check "the edge Route's SNI child has one pool per backend, ratio = weight" wait_for 10 is \
	"weft--shop-edge.example.com-edge-web2:10 weft--shop-edge.example.com-edge-web:90" \
	vs weft--edge.example.com '[.spec.poolGroups[0].members[] | "\(.pool):\(.ratio)"] | sort | join(" ")'
check "the passthrough Route is on Shared-Passthrough-0, its own VIP" wait_for 10 is \
	"weft--pass.example.com-web 192.168.202.3" \
	vs weft--Shared-Passthrough-0 '"\(.spec.pools[0].name) \(.spec.vip)"'
route() { api GET "/apis/route.openshift.io/v1/namespaces/shop/routes/$1" | body_of | jq -r "$2"; }
check "the Route's status: admitted, with its VIP" wait_for 10 is "True 192.168.202.1" \
	route edge '.status.ingress[0] | "\(.conditions[0].status) \(.vip)"'

echo "== a Service of type LoadBalancer: its L4 VS, under AKO's names"
cat >"$DIR/l4.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: shop}
spec: {type: LoadBalancer, ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]}
EOF
check "apply it" W apply -f "$DIR/l4.yaml"
check "weft--shop-dns: L4, with the Service's own VIP (answered by the nodes' eBPF)" wait_for 10 is \
	"L4 192.168.201.1 weft--shop-dns-TCP-53 weft--shop-dns-UDP-53" \
	vs weft--shop-dns '"\(.spec.type) \(.spec.vip) \([.spec.pools[].name] | join(" "))"'
if command -v kubectl >/dev/null; then
	K() { kubectl --kubeconfig "$CTRL_KUBECONFIG" --cache-dir "$DIR/kube-cache" "$@"; }
	check "kubectl get vs weft--shop-dns" bash -c "$(declare -f K); K get vs weft--shop-dns --no-headers | grep -qE '^weft--shop-dns +L4 +192.168.201.1 +53/TCP,53/UDP '"
	check "kubectl get virtualservices -o yaml names its sources" bash -c "$(declare -f K); K get virtualservices weft--shop-dns -o yaml | grep -q 'kind: Service'"
else
	fail "kubectl on PATH" "this check is kubectl's"
fi
check "delete it" W delete -f "$DIR/l4.yaml"
check "weft--shop-dns is gone" wait_for 10 is - vs weft--shop-dns .spec.type

echo "== the shard size changes: hosts move, no VS is left behind"
cluster SMALL >"$DIR/small.yaml"
check "ClusterNetwork shardSize SMALL" W apply -f "$DIR/small.yaml"
check "every L7 host is on weft--Shared-L7-0; the others are gone" wait_for 10 is \
	"weft--Shared-L7-0 weft--Shared-Passthrough-0 weft--b.example.com weft--edge.example.com" vs_names
check "the SNI children moved under the new parent" is weft--Shared-L7-0 vs weft--b.example.com .spec.parent
check "the Ingress's status follows" wait_for 10 is \
	"$(vs weft--Shared-L7-0 .spec.vip)" ing store '[.status.loadBalancer.ingress[].ip] | unique | join(" ")'

echo "== deleting"
check "delete the Ingress and the Routes" sh -c "'$WEFTCTL' delete -f '$DIR/routes.yaml' && '$WEFTCTL' delete ingress -n shop store"
check "no VS is left" wait_for 10 is "" vs_names
certs() { api GET /apis/lb.weft.io/v1/sslkeyandcertificates | body_of | jq '.items | length'; }
check "nor a key/certificate object" is 0 certs

stop_controller
finish
