#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# flows.sh — the cluster's flows (docs/trace.md, "Flows"): each agent
# serves its node's flow log over TLS to the controller's relay only, and
# `weftctl flows` reads every node's through the API.
#
#   a 2-node lab in multitenant mode
#
#   node-1: x/a                 node-2: x/b (peer.py on 80), y/d (peer.py on 80)
#
#   1. each node publishes where it serves its flows and its key's pin
#      (annotation weft.io/flows on its Node); the agent's endpoint
#      refuses a client without the relay's certificate (403), and
#      answers the relay's (the controller's flows-relay.crt, the pin)
#   2. weftctl flows --follow -o json while x/a connects to x/b:80 across
#      nodes: the connection's SYN (new) and SYN-ACK (reply) reported by
#      both nodes, the pods named; x/a's connection to y/d:80 (another
#      tenant): dropped on node-2 as isolated, y/d named
#   3. a NetworkPolicy admitting nothing to x/b: x/a's connection is
#      dropped there as policy-denied-ingress, and `weftctl flows
#      --verdict dropped --pod x/b` shows it (only drops, only x/b's)
#   4. the human output names the verdict, the reason and the pods
#   5. nobody listening (the follow ended with SIGINT, exit 0): a new
#      connection is not reported (the programs report forwards only while
#      someone listens), drops still are
#   6. a node's credential may not read the flows (403); a bad --verdict
#      or --pod exits 2 naming it
#   7. node-2's agent restarts under a follow: the relay says it reads
#      node-2 again, finds the new agent by the new pin it published, and
#      says so (restarted); an isolated drop on node-2 after it reaches
#      the same follow.  Then the controller stops under a follow: it
#      exits on SIGTERM, the follow ends, and the controller starts again
#
# Lab t<pid>-fl, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

lab_names fl
need_lab
trap lab_cleanup EXIT

declare -A IP NODE_IP
flows() { lab weftctl flows "$@"; }
# has FILE JQ-FILTER: a line of FILE (JSON lines) matches
has() { jq -c "select($2)" "$1" 2>/dev/null | grep -q .; }
# event FILE NODE EVENT SRC-IP DST-IP [PORT]: FILE holds that event
event() {
	has "$1" '.node == "'"$2"'" and .event == "'"$3"'" and .source.ip == "'"$4"'" and .destination.ip == "'"$5"'"'"${6:+ and .destination.port == $6}"
}

lab_up_tenants
must lab pod add node-1 x a --label app=a
must lab pod add node-2 x b --label app=b --port http:80/TCP
must lab pod add node-2 y d --label app=d
while read -r t a; do IP[$t]=${a%/*}; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
for n in node-1 node-2; do NODE_IP[$n]=$(node_field "$n" ip); done
serve_http 80 x/b y/d

# 1. where each node serves, and who it answers
ann() { lab weftctl get node "$1" -o json | jq -r '.metadata.annotations["weft.io/flows"] // empty'; }
for n in node-1 node-2; do
	check "$n publishes its flows endpoint and key pin (weft.io/flows)" wait_for 10 bash -c \
		"src/lab/weft-lab --lab $LAB weftctl get node $n -o json | jq -e '.metadata.annotations[\"weft.io/flows\"] | fromjson | (.endpoint == \"https://${NODE_IP[$n]}:9967\") and (.pin | startswith(\"sha256//\"))' >/dev/null"
done
PIN=$(ann node-1 | jq -r .pin)
RELAY=/run/weft-lab/$LAB/ctrl/pki/flows-relay
check "the controller made the relay's certificate (CN weft-flows-relay, TLS client)" bash -c \
	"openssl x509 -in $RELAY.crt -noout -subject -ext extendedKeyUsage | grep -q 'CN *= *weft-flows-relay' && openssl x509 -in $RELAY.crt -noout -ext extendedKeyUsage | grep -q 'TLS Web Client'"
agent_get() { # NODE CURL-ARGS...: GET /v1/flows of NODE's agent, from the controller's namespace; the HTTP code
	local n=$1; shift
	ip netns exec "$L-ctrl" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -k "$@" "https://${NODE_IP[$n]}:9967/v1/flows"
}
check "node-1's agent refuses a client without a certificate (403)" test "$(agent_get node-1)" = 403
check "node-1's agent answers the relay's certificate, its key pinned (200)" \
	test "$(agent_get node-1 --cert "$RELAY.crt" --key "$RELAY.key" --pinnedpubkey "$PIN")" = 200
check_fails "a key other than the pinned one is not trusted" \
	test "$(agent_get node-1 --cert "$RELAY.crt" --key "$RELAY.key" --pinnedpubkey "$(ann node-2 | jq -r .pin)")" = 200

# 2. following: a connection across nodes, and one to another tenant
F=$T_ROOT/follow.json
# exec: $! is weftctl's own PID (weft-lab execs it), which SIGINT reaches
(exec src/lab/weft-lab --lab "$L" weftctl flows --follow -o json >"$F" 2>"$T_ROOT/follow.err") &
FOLLOW=$!
T_PIDS+=("$FOLLOW")
# the follow reaches both agents within a moment; connect until the
# connection is seen (a SYN before the agents listen is not reported)
seen_new() { connects x/a "${IP[x/b]}" 80; event "$F" node-1 new "${IP[x/a]}" "${IP[x/b]}" 80; }
check "x/a -> x/b:80 across nodes: node-1 reports the new connection" wait_for 15 seen_new
check "... node-2 reports it too (from the tunnel)" wait_for 5 event "$F" node-2 new "${IP[x/a]}" "${IP[x/b]}" 80
check "... and x/b's answer (reply)" wait_for 5 event "$F" node-2 reply "${IP[x/b]}" "${IP[x/a]}"
check "... the pods named on node-1 (x/a, and x/b when the node knows it)" has "$F" \
	'.node == "node-1" and .event == "new" and .source.pod == "x/a" and .destination.port == 80'
check "... node-2 names x/b, and says the tunnel (VNI, node-1)" has "$F" \
	'.node == "node-2" and .event == "new" and .destination.pod == "x/b" and .from == "tunnel" and .tunnel.node == "'"${NODE_IP[node-1]}"'"'
check_fails "x/a -> y/d:80 (another tenant) does not connect" connects x/a "${IP[y/d]}" 80
check "... dropped on node-2 as isolated, y/d named" wait_for 5 has "$F" \
	'.node == "node-2" and .verdict == "dropped" and .reason == "isolated" and .destination.pod == "y/d" and .source.ip == "'"${IP[x/a]}"'"'

# 3. NetworkPolicy: nothing may reach x/b
must lab weftctl apply -f - <<<'{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy",
 "metadata":{"name":"deny-b","namespace":"x"},"spec":{"podSelector":{"matchLabels":{"app":"b"}},"policyTypes":["Ingress"]}}'
refused() { ! connects x/a "${IP[x/b]}" 80 && has "$F" '.node == "node-2" and .reason == "policy-denied-ingress" and .destination.ip == "'"${IP[x/b]}"'"'; }
check "x/a -> x/b:80 refused by x/deny-b, dropped as policy-denied-ingress" wait_for 15 refused
D=$T_ROOT/dropped.json
flows --verdict dropped --pod x/b -o json >"$D" 2>"$T_ROOT/dropped.err"
check "weftctl flows --verdict dropped --pod x/b (no --follow) exits 0" test $? = 0
check "... shows the policy's drop" has "$D" '.reason == "policy-denied-ingress" and .destination.pod == "x/b"'
check "... and nothing but drops of x/b's" bash -c \
	"jq -e -s 'map(select(.event != null)) | length > 0 and all(.verdict == \"dropped\" and (.source.ip == \"${IP[x/b]}\" or .destination.ip == \"${IP[x/b]}\"))' '$D' >/dev/null"

# 4. the human output
H=$T_ROOT/human.txt
flows --verdict dropped --node node-2 >"$H" 2>&1
check "the human output names the verdict, the reason and the pods" \
	grep -qE "node-2 +dropped +policy-denied-ingress +TCP .*x/b" "$H"
sed 's/^/        | /' "$H" | tail -n 5

# 5. nobody listening
kill -INT "$FOLLOW"
wait "$FOLLOW"
check "the follow ends on SIGINT with exit 0" test $? = 0
must lab weftctl delete networkpolicy deny-b -n x
check "x/a reaches x/b again" wait_for 15 connects x/a "${IP[x/b]}" 80
# the agents notice the relay's streams gone at their next write (a
# heartbeat, every 5 s): then nobody listens
for n in node-1 node-2; do
	check "$n: no listener left (weft_agent_flows_listeners 0)" wait_for 15 bash -c "[ \"\$(ip netns exec $(netns "$n") curl -sf --max-time 5 http://${NODE_IP[$n]}:9966/metrics | awk '\$1 == \"weft_agent_flows_listeners\" {print \$2}')\" = 0 ]"
done
before=$(flows -o json | jq -s 'map(select(.event == "new")) | length')
check "nobody listening: another connection x/a -> x/b" connects x/a "${IP[x/b]}" 80
after=$(flows -o json | jq -s 'map(select(.event == "new")) | length')
check "... is not reported ($before new connections kept, then $after)" test "$before" = "$after"
check_fails "x/a -> y/d:80 still refused" connects x/a "${IP[y/d]}" 80
check "... and its drop still reported" wait_for 5 bash -c \
	"src/lab/weft-lab --lab $LAB weftctl flows --verdict dropped -o json | jq -e -s 'map(select(.reason == \"isolated\")) | length >= 2' >/dev/null"

# 6. who may read, and what is asked wrong
NODE_TOKEN=$(cat "/run/weft-lab/$LAB/node-1/node.token")
code=$(ip netns exec "$L-ctrl" curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "/run/weft-lab/$LAB/ctrl/pki/ca.crt" \
	-H "Authorization: Bearer $NODE_TOKEN" "https://192.168.200.2:8080/apis/network.weft.io/v1/flows")
check "a node's credential may not read the flows (403)" test "$code" = 403
rc=0; out=$(flows --verdict maybe 2>&1) || rc=$?
check "--verdict maybe exits 2 naming it" bash -c "[ $rc = 2 ] && grep -q maybe <<<'$out'"
rc=0; out=$(flows --pod x/nobody 2>&1) || rc=$?
check "--pod x/nobody exits 2 naming it" bash -c "[ $rc = 2 ] && grep -q 'x/nobody' <<<'$out'"

# 7. an agent restarts under a follow; the controller stops under one
listeners() { [ "$(ip netns exec "$(netns "$1")" curl -sf --max-time 5 "http://${NODE_IP[$1]}:9966/metrics" | awk '$1 == "weft_agent_flows_listeners" {print $2}')" = "$2" ]; }
pin_of() { lab weftctl get node "$1" -o json | jq -r '.metadata.annotations["weft.io/flows"] | fromjson | .pin'; }
F2=$T_ROOT/follow2.json
(exec src/lab/weft-lab --lab "$L" weftctl flows --follow -o json >"$F2" 2>"$T_ROOT/follow2.err") &
FOLLOW=$!
check "a new follow is attached to node-2 (its listeners gauge 1)" wait_for 15 listeners node-2 1
pin0=$(pin_of node-2)
must lab agent restart node-2
new_pin() { local p; p=$(pin_of node-2); [ -n "$p" ] && [ "$p" != null ] && [ "$p" != "$pin0" ]; }
check "node-2's restarted agent published a new pin" wait_for 20 new_pin
check "the relay said node-2's stream broke, and when it reads it again" \
	wait_for 20 has "$F2" '.node == "node-2" and (.error | type) == "string" and .retryInSeconds >= 1'
refused_d() { ! connects x/a "${IP[y/d]}" 80 && has "$F2" '.node == "node-2" and .resumed == true and .restarted == true'; }
check "... read node-2 again, its agent restarted (said), while x/a tries y/d" wait_for 30 refused_d
check "... node-2's new agent has the follow as its listener" wait_for 15 listeners node-2 1
after_resume() {
	connects x/a "${IP[y/d]}" 80
	jq -c -s 'map(select(.node == "node-2")) | (map(.resumed == true) | index(true)) as $r
		| .[$r:] | map(select(.reason == "isolated" and .destination.pod == "y/d")) | length > 0' "$F2" | grep -q true
}
check "... and an isolated drop on node-2 after it reaches the same follow" wait_for 15 after_resume
CTRL_LOG=/run/weft-lab/$LAB/controller.log
check "the controller stops on SIGTERM with the follow attached (no SIGKILL needed)" \
	timeout 60 src/lab/weft-lab --lab "$LAB" controller stop
check "... the follow ends" wait_for 15 bash -c "! kill -0 $FOLLOW 2>/dev/null"
wait "$FOLLOW" 2>/dev/null || true
check_fails "... and the controller's log has no abort or sanitizer report" \
	grep -qiE 'PANIC|Aborted|ERROR: (Address|Leak|Undefined)Sanitizer|runtime error' "$CTRL_LOG"
check "the controller starts again" src/lab/weft-lab --lab "$LAB" controller start

finish
