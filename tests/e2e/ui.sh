#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# ui.sh — the cluster page (docs/ui.md) in a real browser: Debian's
# chromium, headless, driven over the DevTools protocol
# (tests/tools/ui_browser.py), and what it shows checked against the API.
#
#   a 2-node lab in multitenant mode
#
#   node-1: x/a             node-2: x/b (app=b), y/d (peer.py on 80)
#   service x/web (app=b)   policy x/deny-b: nothing may reach x/b
#
#   1. the page's files are served without a token (they hold no data),
#      with a Content-Security-Policy that lets it load nothing but its own
#      files and the API; an unknown file is 404
#   2. signed in with the admin's token, the page shows every node with
#      its address and pod subnet, every pod under its namespace with its
#      address and node, each namespace's VNID, x/web with its cluster IP
#      and x/b as its backend: each compared with the API
#   3. the reachability matrix: x and y are other tenants (none both
#      ways), x to x is restricted by x/deny-b (some), default reaches
#      itself (all)
#   4. live drops: x/a's connections to y/d (another tenant) appear as
#      they happen, reason isolated
#   5. a wrong token: the page says so and shows no cluster
#
# The screenshot is kept at UI_SCREENSHOT when set.
# Lab t<pid>-ui, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

lab_names ui
need_lab
trap lab_cleanup EXIT
if ! command -v chromium >/dev/null 2>&1; then
	fail "prerequisites" "chromium is not installed (scripts/deps.sh installs it)"
	finish
	exit 1
fi

declare -A IP

lab_up_tenants
must lab pod add node-1 x a --label app=a
must lab pod add node-2 x b --label app=b --port http:80/TCP
must lab pod add node-2 y d --label app=d
while read -r t a; do IP[$t]=${a%/*}; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
ip netns exec "$(netns y/d)" "$PYTHON" "$PEER" serve 80 y/d >>"$T_ROOT/server.log" 2>&1 &
T_PIDS+=("$!")
must lab weftctl apply -f - <<<'{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"x"},
  "spec":{"selector":{"app":"b"},"ports":[{"port":80,"targetPort":80}]}},
 {"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"deny-b","namespace":"x"},
  "spec":{"podSelector":{"matchLabels":{"app":"b"}},"policyTypes":["Ingress"]}}]}'

DIR=/run/weft-lab/$LAB
SERVER=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$(lab kubeconfig)")
TOKEN=$(cat "$DIR/ctrl/admin.token")
PIN=$(openssl x509 -in "$DIR/ctrl/pki/apiserver.crt" -pubkey -noout | openssl pkey -pubin -outform der |
	openssl dgst -sha256 -binary | base64)
CA=$DIR/ctrl/pki/ca.crt

# 1. the files
H=$T_ROOT/headers
check "GET /ui/ without a token: 200, the page" bash -c \
	"curl -s --cacert '$CA' -D '$H' '$SERVER/ui/' | grep -q '<title>weft</title>' && grep -q '^HTTP/[0-9.]* 200' '$H'"
check "... with a Content-Security-Policy: its own files and the API, nothing else" \
	grep -qi "^content-security-policy: default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'" "$H"
check "... not to be framed (X-Frame-Options DENY)" grep -qi '^x-frame-options: DENY' "$H"
check "GET /ui/nothing.js: 404" test "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "$SERVER/ui/nothing.js")" = 404
check "GET /ui/ui.js is JavaScript" bash -c \
	"curl -s -o /dev/null -w '%{content_type}' --cacert '$CA' '$SERVER/ui/ui.js' | grep -q '^text/javascript'"
check "the API itself still wants a token (401)" test "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "$SERVER/api/v1/pods")" = 401

# 2-4. signed in; x/a keeps trying y/d meanwhile (the live drops)
( while :; do connects x/a "${IP[y/d]}" 80; sleep 0.5; done ) &
PROBE=$!
T_PIDS+=("$PROBE")
R=$T_ROOT/page.json
SHOT=${UI_SCREENSHOT:-$T_ROOT/page.png}
check "chromium shows the page, up to date, with an isolated drop live" \
	"$PYTHON" tests/tools/ui_browser.py "$SERVER/ui/" "$TOKEN" "$PIN" "$R" --screenshot "$SHOT" --timeout 60 \
	--until "document.querySelector('[data-drop=isolated]') && document.querySelectorAll('[data-pod]').length >= 3"
kill "$PROBE" 2>/dev/null
echo "    (screenshot: $SHOT)"
[ -s "$R" ] || echo '{}' >"$R"
check "the token left the address bar" bash -c "! jq -r .location '$R' | grep -q token"

lab weftctl get nodes -o json >"$T_ROOT/nodes.json"
lab weftctl get hostsubnets -o json >"$T_ROOT/hs.json"
for n in node-1 node-2; do
	ip=$(jq -r --arg n "$n" '.items[] | select(.metadata.name == $n) | .status.addresses[] | select(.type == "InternalIP") | .address' "$T_ROOT/nodes.json")
	sub=$(jq -r --arg n "$n" '.items[] | select(.host == $n) | .subnet' "$T_ROOT/hs.json")
	check "node $n: address $ip and pod subnet $sub, as the API has them" \
		jq -e --arg n "$n" --arg ip "$ip" --arg s "$sub" '.nodes[] | select(.node == $n and .ip == $ip and .subnet == $s)' "$R"
done
lab weftctl get pods -A -o json >"$T_ROOT/pods.json"
while read -r p ip node; do
	check "pod $p: $ip on $node" jq -e --arg p "$p" --arg ip "$ip" --arg n "$node" \
		'.namespaces[].pods[] | select(.pod == $p and .ip == $ip and .node == $n)' "$R"
done < <(jq -r '.items[] | "\(.metadata.namespace)/\(.metadata.name) \(.status.podIP) \(.spec.nodeName)"' "$T_ROOT/pods.json")
lab weftctl get netnamespaces -o json >"$T_ROOT/netns.json"
for n in x y default; do
	id=$(jq -r --arg n "$n" '.items[] | select(.metadata.name == $n) | .netid' "$T_ROOT/netns.json")
	check "namespace $n: VNID $id" jq -e --arg n "$n" --arg id "$id" '.namespaces[] | select(.namespace == $n and .vnid == $id)' "$R"
done
cip=$(lab weftctl get svc web -n x -o json | jq -r .spec.clusterIP)
check "service x/web: cluster IP $cip, backend x/b (${IP[x/b]})" jq -e --arg c "$cip" --arg b "${IP[x/b]}" \
	'.services[] | select(.service == "x/web" and .clusterIP == $c and .backends == $b)' "$R"
check "reach x -> y: none (other tenants)" jq -e '.reach[] | select(.from == "x" and .to == "y" and .reach == "none")' "$R"
check "reach y -> x: none" jq -e '.reach[] | select(.from == "y" and .to == "x" and .reach == "none")' "$R"
check "reach x -> x: some (x/deny-b isolates x/b)" jq -e '.reach[] | select(.from == "x" and .to == "x" and .reach == "some")' "$R"
check "reach default -> default: all" jq -e '.reach[] | select(.from == "default" and .to == "default" and .reach == "all")' "$R"
check "live drops: x/a -> y/d, isolated, as it happened" jq -e --arg d "${IP[y/d]}" \
	'.drops[] | select(.reason == "isolated" and (.text | contains($d)))' "$R"

# 5. a wrong token
W=$T_ROOT/wrong.json
"$PYTHON" tests/tools/ui_browser.py "$SERVER/ui/" "not-a-token" "$PIN" "$W" --timeout 30 --state login \
	--until "document.querySelector('#login-error').textContent.length > 0" >"$T_ROOT/wrong.log" 2>&1
check "a wrong token: the page is signed out, says why, and shows no cluster" \
	jq -e '.state == "login" and (.nodes | length) == 0' "$W" || { cat "$T_ROOT/wrong.log"; jq -c . "$W"; }

finish
