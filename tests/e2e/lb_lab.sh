#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# lb_lab.sh — Ingresses and Routes served by a service engine (weft-lb and
# HAProxy) in the lab, checked from the outside namespace as a client on
# the internet would, with curl and openssl s_client (docs/lb.md):
#
#                         L-underlay: bridge br0, 192.168.200.0/24
#     +-----------+------------------+----------------+----------------+
#   L-ctrl     L-outside (.254)    L-se-1 (.221)     L-node-1 (.11)   L-node-2 (.12)
#   controller curl, openssl,      weft-lb, HAProxy  web-1 (app=web)  web-2 (app=web)
#              wrk: 192.168.202.   192.168.202.0/24  tls-1 (app=tls)  canary-1
#              0/24 via .221       local; 10.128.x   many-1 (50 ports 9100-9149 in all,
#                                  via each node      for `many`, hand-written Endpoints)
#
#   1. host and path (longest prefix first), X-Forwarded-For
#   2. TLS: the certificate per SNI, 302 to https with its Location, a
#      Secret that appears later, a key that is not its certificate's
#   3. Routes: passthrough (the backend's own certificate), reencrypt with
#      the right CA (200) and the wrong one (503), alternate backends'
#      weights over 1,000 requests
#   4. under load (wrk from outside): a pool from 1 to 50 servers and back
#      (hand-written Endpoints), then a backend of real pods from 1 to 50
#      and back (pod add through the CNI chain; relabelled out, deleted),
#      both without a reload; a certificate rotated, a host added and
#      removed: 0 failed requests; the reloads are counted
#   5. a deleted Ingress: its host is gone (404); an engine killed and
#      started again serves the same configuration without a reload
#
# Lab t<pid>-lb, so a demo lab or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-lb
L=$LAB
need_lab
trap 'lab_cleanup' EXIT

BACKENDS=$PWD/tests/tools/lb_backends.py
DIR=$(tmpdir)
VIP=""		# the shared VS's, once known
W() { lab weftctl "$@"; }
out() { ns outside "$@"; }
is() { [ "$("${@:2}")" = "$1" ]; }	# is WANT CMD...: CMD prints exactly WANT

must lab up --nodes 2 --service-engines 1
SE_DIR=/run/weft-lab/$L/se-1/state
engine_status() { ns se-1 "$WEFT_BIN/weft-lb" status --state-dir "$SE_DIR"; }
reloads() { engine_status | jq -r .reloads; }

# ------------------------------------------------------------- backends
# serve POD PORT...: lb_backends.py in the pod on its IP and those ports
serve() {
	local pod=$1 ip a=(); shift
	ip=$(pod_ip "$pod")
	for p in "$@"; do a+=("$ip:$p"); done
	# ip netns exec execs python3: $! is the server itself, which the
	# cleanup stops by its PID (a function run with & would be a subshell)
	ip netns exec "$(netns "$pod")" python3 "$BACKENDS" serve "${a[@]}" >"$DIR/${pod//\//-}.log" 2>&1 &
	T_PIDS+=("$!")
}
listening() { ns "$1" ss -Hltn "sport = :$2" | grep -q .; }

must lab pod add node-1 shop web-1 --label app=web --port http:8080/TCP
must lab pod add node-2 shop web-2 --label app=web --port http:8080/TCP
must lab pod add node-2 shop canary-1 --label app=canary --port http:8080/TCP
must lab pod add node-1 shop tls-1 --label app=tls --port https:8443/TCP
must lab pod add node-2 shop many-1 --label app=many
serve shop/web-1 8080
serve shop/web-2 8080
serve shop/canary-1 8080
serve shop/many-1 $(seq 9100 9149)
WEB1=$(pod_ip shop/web-1) WEB2=$(pod_ip shop/web-2) CANARY=$(pod_ip shop/canary-1) MANY=$(pod_ip shop/many-1)
TLS1=$(pod_ip shop/tls-1)

# certificates: a CA for the hosts, another for the backend, a stranger CA
cert() { # cert NAME CN [CA]: DIR/NAME.crt and .key, signed by CA (else self-signed)
	if [ -z "${3:-}" ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$2" -keyout "$DIR/$1.key" \
			-out "$DIR/$1.crt" 2>/dev/null
	else
		openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$DIR/$1.key" -out "$DIR/$1.csr" 2>/dev/null &&
			openssl x509 -req -in "$DIR/$1.csr" -CA "$DIR/$3.crt" -CAkey "$DIR/$3.key" -CAcreateserial \
				-days 2 -out "$DIR/$1.crt" 2>/dev/null
	fi
}
must cert backend-ca "backend CA"
must cert stranger-ca "stranger CA"
must cert backend backend.internal backend-ca
must cert a a.example.com
must cert a2 a.example.com
must cert b b.example.com
must cert e e.example.com
must cert r r.example.com
ip netns exec "$(netns shop/tls-1)" openssl s_server -accept "$TLS1:8443" -cert "$DIR/backend.crt" -key "$DIR/backend.key" -www -quiet \
	>"$DIR/tls-1.log" 2>&1 </dev/null &
T_PIDS+=("$!")
all_listen() {
	listening shop/web-1 8080 && listening shop/web-2 8080 && listening shop/canary-1 8080 &&
		listening shop/many-1 9149 && listening shop/tls-1 8443
}
check "the backends listen" wait_for "$SERVER_START_S" all_listen

secret() { # secret NAME CERT KEY
	printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: shop}\ntype: kubernetes.io/tls\n' "$1"
	printf 'data: {tls.crt: %s, tls.key: %s}\n' "$(base64 -w0 "$2")" "$(base64 -w0 "$3")"
}
pem() { sed 's/^/      /' "$1"; }	# a PEM file as a YAML block's lines

cat >"$DIR/shop.yaml" <<EOF
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: v1
kind: Service
metadata: {name: canary, namespace: shop}
spec: {selector: {app: canary}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: v1
kind: Service
metadata: {name: tls, namespace: shop}
spec: {selector: {app: tls}, ports: [{name: https, port: 443, targetPort: https}]}
---
apiVersion: v1
kind: Service
metadata: {name: many, namespace: shop}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: many, namespace: shop}
subsets: [{addresses: [{ip: $MANY}], ports: [{name: http, port: 9100}]}]
---
$(secret a-tls "$DIR/a.crt" "$DIR/a.key")
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: store, namespace: shop}
spec:
  tls: [{hosts: [a.example.com], secretName: a-tls}, {hosts: [b.example.com], secretName: b-tls}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /canary, pathType: Prefix, backend: {service: {name: canary, port: {name: http}}}}
      - {path: /canary/web, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
  - host: a.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
  - host: b.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: canary, port: {number: 80}}}}]}
  - host: many.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: many, port: {number: 80}}}}]}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: pass, namespace: shop}
spec: {host: p.example.com, to: {kind: Service, name: tls}, tls: {termination: passthrough}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: weighted, namespace: shop}
spec:
  host: w.example.com
  to: {kind: Service, name: web, weight: 75}
  alternateBackends: [{kind: Service, name: canary, weight: 25}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: re-right, namespace: shop}
spec:
  host: r.example.com
  to: {kind: Service, name: tls}
  tls:
    termination: reencrypt
    certificate: |
$(pem "$DIR/r.crt")
    key: |
$(pem "$DIR/r.key")
    destinationCACertificate: |
$(pem "$DIR/backend-ca.crt")
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: re-wrong, namespace: shop}
spec:
  host: r.example.com
  path: /wrong
  to: {kind: Service, name: tls}
  tls:
    termination: reencrypt
    certificate: |
$(pem "$DIR/r.crt")
    key: |
$(pem "$DIR/r.key")
    destinationCACertificate: |
$(pem "$DIR/stranger-ca.crt")
EOF
must W apply -f "$DIR/shop.yaml"

# a host's VIP, as its Ingress's or Route's status says
host_vip() { W get ingress -n shop store -o json | jq -r --arg h "$1" '.status.loadBalancer.ingress[]? | select(.hostname == $h) | .ip'; }
route_vip() { W get route -n shop "$1" -o json | jq -r '.status.ingress[0].vip // empty'; }
has_vip() { [ -n "$(host_vip "$1")" ]; }
check "the Ingress's hosts get VIPs" wait_for 20 has_vip shop.example.com
SHOP_VIP=$(host_vip shop.example.com)
# GET HOST PATH [curl args]: the body from outside, through the host's VIP
get() { local h=$1 p=$2; shift 2; out curl -s -m 5 --resolve "$h:80:$(host_vip "$h")" "$@" "http://$h$p"; }
srv() { get "$@" | sed -n 's/^srv=\([^ ]*\) .*/\1/p'; }
answers() { [ -n "$(srv "$@")" ]; }

echo "== 1. host and path"
check "shop.example.com answers through its VIP from outside" wait_for 20 answers shop.example.com /x
to_web() { case $(srv "$@") in "$WEB1:8080" | "$WEB2:8080") ;; *) return 1 ;; esac; }
check "/ goes to web" to_web shop.example.com /x
check "/canary/x goes to canary" is "$CANARY:8080" srv shop.example.com /canary/x
check "/canary/web/x: the longest prefix wins (web)" to_web shop.example.com /canary/web/x
check "an unknown host on the VIP: 404" is 404 out curl -s -o /dev/null -w '%{http_code}' -m 5 -H 'Host: nobody.example.com' "http://$SHOP_VIP/"
xff_is_outside() { get shop.example.com /x | grep -q 'xff=192.168.200.254'; }
check "the backend sees the client's address in X-Forwarded-For" xff_is_outside

echo "== 2. TLS"
A_VIP=$(host_vip a.example.com)
subject() { # subject HOST VIP: the CN of the certificate served for SNI HOST
	out sh -c "openssl s_client -connect $2:443 -servername $1 </dev/null 2>/dev/null | openssl x509 -noout -subject" | sed 's/.*CN *= *//'
}
serial() { out sh -c "openssl s_client -connect $2:443 -servername $1 </dev/null 2>/dev/null | openssl x509 -noout -serial"; }
check "a.example.com: its own certificate" wait_for 20 is a.example.com subject a.example.com "$A_VIP"
https_get() { # https_get HOST CERT VIP PATH: the body, the server verified against CERT
	out curl -s -m 5 --cacert "$2" --resolve "$1:443:$3" "https://$1$4"
}
https_answers() { https_get "$@" | grep -q '^srv='; }
check "https://a.example.com/ answers (verified against its certificate)" wait_for 10 https_answers a.example.com "$DIR/a.crt" "$A_VIP" /x
check "http://a.example.com/p?q=1: 302 to https, path and query kept" is "302 https://a.example.com/p?q=1" \
	out curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -m 5 --resolve "a.example.com:80:$A_VIP" 'http://a.example.com/p?q=1'
status_reason() { W get ingress -n shop store -o json | jq -r '[.status.conditions[]? | .reason + " " + .message] | join("; ")'; }
reason_says() { status_reason | grep -qF "$1"; }
check "b.example.com has no Secret yet: the status says so" wait_for 10 reason_says \
	'SecretNotFound host b.example.com: secret shop/b-tls not found'
no_b() { ! out curl -s -m 5 -k --resolve "b.example.com:443:$A_VIP" https://b.example.com/ | grep -q srv=; }
check "... and nothing serves it on 443 (no certificate for its SNI)" no_b
secret b-tls "$DIR/b.crt" "$DIR/a.key" >"$DIR/b-wrong.yaml"
must W apply -f "$DIR/b-wrong.yaml"
check "a Secret whose key is another's: SecretInvalid" wait_for 10 reason_says \
	'SecretInvalid host b.example.com: Secret shop/b-tls: the key does not belong to the certificate'
secret b-tls "$DIR/b.crt" "$DIR/b.key" >"$DIR/b.yaml"
must W apply -f "$DIR/b.yaml"
b_built() { local v; v=$(host_vip b.example.com); [ -n "$v" ] && [ "$(subject b.example.com "$v")" = b.example.com ]; }
check "the Secret appears: b.example.com is built and serves its certificate" wait_for 20 b_built
b_canary() { https_get b.example.com "$DIR/b.crt" "$(host_vip b.example.com)" / | grep -q "srv=$CANARY:8080"; }
check "https://b.example.com/ goes to canary" b_canary

echo "== 3. Routes"
routes_admitted() { [ -n "$(route_vip pass)" ] && [ -n "$(route_vip re-right)" ] && [ -n "$(route_vip weighted)" ]; }
check "the Routes are admitted with a VIP" wait_for 20 routes_admitted
P_VIP=$(route_vip pass) R_VIP=$(route_vip re-right) W_VIP=$(route_vip weighted)
check "passthrough: the backend's own certificate is seen (never terminated)" wait_for 20 is backend.internal subject p.example.com "$P_VIP"
check "reencrypt with the right destination CA: 200 from the TLS backend" wait_for 20 is 200 \
	out curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$DIR/r.crt" --resolve "r.example.com:443:$R_VIP" https://r.example.com/
check "reencrypt with the wrong CA: 503 (the backend's certificate does not verify)" is 503 \
	out curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$DIR/r.crt" --resolve "r.example.com:443:$R_VIP" https://r.example.com/wrong
weights() { # weights: "web canary" counts over 1,000 new connections to w.example.com
	out python3 "$BACKENDS" count "http://$W_VIP/" 1000 w.example.com |
		awk -v c="$CANARY:8080" '$1 == "errors" { e = $2; next } $1 == c { k += $2; next } { w += $2 } END { print w + 0, k + 0, e + 0 }'
}
read -r NW NC NE <<<"$(weights)"
check "alternate backends 75/25 over 1,000 requests: web $NW, canary $NC (within 75±5%), $NE errors" \
	test "$NE" = 0 -a "$NW" -ge 700 -a "$NW" -le 800 -a "$((NW + NC))" = 1000

vs_engine_state() { W get vs "$1" -o json | jq -r '.status.engines."se-1" | "\(.state) \(.observedSpec | length)"'; }
check "the engine wrote what it made of each VS to its status (Applied, the spec's hash)" wait_for 10 is "Applied 16" \
	vs_engine_state weft--a.example.com

echo "== 4. changes under load"
MANY_VIP=$(host_vip many.example.com)
R0=$(reloads)
endpoints_of() { # endpoints_of N: Endpoints many, one subset per port 9100..9100+N-1
	local p
	printf 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: many, namespace: shop}\nsubsets:\n'
	for ((p = 9100; p < 9100 + $1; p++)); do
		printf -- '- {addresses: [{ip: %s}], ports: [{name: http, port: %d}]}\n' "$MANY" "$p"
	done
}
wrk_start() { # wrk_start HOST VIP SECONDS: wrk from outside, its output in DIR/wrk-HOST
	out wrk -t2 -c16 -d"$3s" --timeout 10s --latency -H "Host: $1" "http://$2/" >"$DIR/wrk-$1" 2>&1 &
	WRK=$!
	T_PIDS+=("$WRK")
}
no_wrk_errors() { # no non-2xx response and no socket error in wrk's report (else it)
	awk '/Non-2xx/ { n += $NF } /Socket errors/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } END { exit n > 0 }' "$DIR/wrk-$1" ||
		{ grep -E 'requests in|Non-2xx|Socket errors' "$DIR/wrk-$1"; return 1; }
}
pool_size() { W get vs "$1" -o json | jq '[.spec.pools[] | select(.service.name == "many") | .servers | length] | add'; }
MANY_VS=$(W get vs -o json | jq -r '.items[] | select(any(.spec.pools[]?; .service.name == "many")) | .metadata.name')
wrk_start many.example.com "$MANY_VIP" 25
for n in 2 5 10 20 35 50 35 20 10 5 1; do
	endpoints_of "$n" >"$DIR/many.yaml"
	W apply -f "$DIR/many.yaml" >/dev/null
	wait_for 10 is "$n" pool_size "$MANY_VS" || fail "the pool follows the Endpoints to $n servers" "$(pool_size "$MANY_VS")"
done
seen_many() { out python3 "$BACKENDS" count "http://$MANY_VIP/" 200 many.example.com | grep -c "^$MANY:"; }
endpoints_of 50 >"$DIR/many.yaml"
W apply -f "$DIR/many.yaml" >/dev/null
many_reached() { [ "$(seen_many)" -ge 30 ]; }
check "at 50 servers, 200 requests reach at least 30 of them" wait_for 10 many_reached
endpoints_of 1 >"$DIR/many.yaml"
W apply -f "$DIR/many.yaml" >/dev/null
wait "$WRK"
check "scaling 1 -> 50 -> 1 under load: 0 failed requests ($(awk '/requests in/ { print $1 }' "$DIR/wrk-many.example.com") served)" no_wrk_errors many.example.com
R1=$(reloads)
echo "  reloads while scaling: $((R1 - R0))"
check "... and none was a reload" is "$R0" reloads

# a backend of real pods, made through the CNI chain and found by the
# endpoints controller: 1 -> 50 while wrk runs, then back to 1 (relabelled
# out of the selector first, as a rollout drains them, then deleted)
cat >"$DIR/pods.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: pods, namespace: shop}
spec: {selector: {app: pods}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: pods, namespace: shop}
spec:
  rules:
  - host: pods.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: pods, port: {number: 80}}}}]}
EOF
pods_pool() { W get vs -o json | jq '[.items[].spec.pools[]? | select(.service.name == "pods") | .servers | length] | add // 0'; }
pods_vip() { W get ingress -n shop pods -o json | jq -r '.status.loadBalancer.ingress[0].ip // empty'; }
pods_answer() { local v; v=$(pods_vip); [ -n "$v" ] && out curl -s -m 3 -H 'Host: pods.example.com' "http://$v/" | grep -q srv=; }
must lab pod add node-1 shop pods-1 --label app=pods --port http:8080/TCP
serve shop/pods-1 8080
must W apply -f "$DIR/pods.yaml"
check "pods.example.com answers from its first pod" wait_for 30 pods_answer
PODS_VIP=$(pods_vip)
R_PODS=$(reloads)
# ip netns exec execs nice, nice execs wrk: $! is wrk itself, whose SIGINT
# ends the run with its report; niced, so that the 49 pod adds it runs
# beside are not starved of the 2 CPUs (wrk takes what is left)
ip netns exec "$(netns outside)" nice -n 19 wrk -t2 -c16 -d600s --timeout 10s -H "Host: pods.example.com" "http://$PODS_VIP/" \
	>"$DIR/wrk-pods.example.com" 2>&1 &
WRK=$!
T_PIDS+=("$WRK")
T0=$(date +%s)
for ((i = 2; i <= 50; i++)); do
	lab pod add "node-$((i % 2 + 1))" shop "pods-$i" --label app=pods --port http:8080/TCP >/dev/null ||
		fail "pod add shop/pods-$i"
	serve "shop/pods-$i" 8080
done
check "50 pods made; the pool has 50 servers" wait_for 30 is 50 pods_pool
for ((i = 2; i <= 50; i++)); do
	W patch pod -n shop "pods-$i" --type merge -p '{"metadata":{"labels":{"app":"gone"}}}' >/dev/null ||
		fail "relabel shop/pods-$i"
done
check "49 pods relabelled out of the selector: the pool has 1 server" wait_for 30 is 1 pods_pool
for ((i = 2; i <= 50; i++)); do lab pod del "shop/pods-$i" >/dev/null || fail "pod del shop/pods-$i"; done
kill -INT "$WRK" 2>/dev/null
wait "$WRK"
check "1 -> 50 -> 1 real pods under load over $(($(date +%s) - T0)) s: 0 failed requests ($(awk '/requests in/ { print $1 }' "$DIR/wrk-pods.example.com") served)" no_wrk_errors pods.example.com
echo "  reloads while the pods came and went: $(($(reloads) - R_PODS))"
check "... and none was a reload" is "$R_PODS" reloads

R1=$(reloads)
wrk_start a.example.com "$A_VIP" 12
secret a-tls "$DIR/a2.crt" "$DIR/a2.key" >"$DIR/a2.yaml"
must W apply -f "$DIR/a2.yaml"
check "the rotated certificate is served" wait_for 10 is "$(openssl x509 -noout -serial -in "$DIR/a2.crt")" serial a.example.com "$A_VIP"
R2=$(reloads)
echo "  reloads for the rotation: $((R2 - R1))"
cat >"$DIR/extra.yaml" <<'EOF'
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: extra, namespace: shop}
spec:
  rules:
  - host: extra.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
EOF
must W apply -f "$DIR/extra.yaml"
extra_vip() { W get ingress -n shop extra -o json | jq -r '.status.loadBalancer.ingress[0].ip // empty'; }
extra_answers() { local v; v=$(extra_vip); [ -n "$v" ] && out curl -s -m 3 -H 'Host: extra.example.com' "http://$v/" | grep -q srv=; }
check "a host added under load answers" wait_for 20 extra_answers
EXTRA_VIP=$(extra_vip)
must W delete -f "$DIR/extra.yaml"
check "... and removed: 404" wait_for 20 is 404 out curl -s -o /dev/null -w '%{http_code}' -m 3 -H 'Host: extra.example.com' "http://$EXTRA_VIP/"
wait "$WRK"
check "rotation and a host added and removed under load: 0 failed requests on a.example.com" no_wrk_errors a.example.com
R3=$(reloads)
echo "  reloads for the host added and removed: $((R3 - R2)); in all: $R3"

echo "== 5. deleting, restarting"
must W delete ingress -n shop store
shop_gone() { # 404, or no listener at all when its VS went with it
	case $(out curl -s -o /dev/null -w '%{http_code}' -m 3 -H 'Host: shop.example.com' "http://$SHOP_VIP/") in
	404 | 000) ;; *) return 1 ;; esac
}
check "the deleted Ingress's host is gone (404, or its VIP no longer listens)" wait_for 20 shop_gone
PID=$(lab status -o json | jq -r '.engines[0].pid')
mapfile -d '' CMD </proc/"$PID"/cmdline
cp "$SE_DIR/haproxy.cfg" "$DIR/before.cfg"
kill -KILL "$PID"
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_for 10 gone "$PID"
ip netns exec "$(netns se-1)" setsid "${CMD[@]}" >>"/run/weft-lab/$L/se-1/weft-lb.log" 2>&1 </dev/null &
T_PIDS+=("$!")
adopted() { engine_status | jq -e '.last == "adopted, same configuration" and .reloads == 0' >/dev/null; }
check "the engine, killed and started again, adopts HAProxy with the same configuration" wait_for 20 adopted
check "... the same files" cmp -s "$DIR/before.cfg" "$SE_DIR/haproxy.cfg"
w_answers() { out curl -s -m 5 -H 'Host: w.example.com' "http://$W_VIP/" | grep -q srv=; }
check "... and it serves: w.example.com answers" w_answers

finish
