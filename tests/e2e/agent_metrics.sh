#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# agent_metrics.sh — each agent's Prometheus endpoint (docs/agent.md,
# "Metrics"), read by the Prometheus client's own parser.
#
#   a 2-node lab in networkpolicy mode
#
#   x/a, x/c (node-1)  --->  x/b (node-2, peer.py on 80)
#
#   1. each node serves GET http://NODE-IP:9966/metrics (the agent's
#      default address); the text parses (tests/tools/prom_parse.py: every
#      family with HELP and TYPE, counters named *_total, no duplicate
#      series); durations are histograms in seconds
#   2. the figures are the node's: ready 1, pod addresses = its pods, one
#      CNI ADD counted per pod added there (+Inf bucket = count, buckets
#      cumulative), programming timed for the kinds it watches
#   3. a policy admitting only app=a to x/b: x/c's refused connections
#      show on node-2 as weft_agent_drops_total{reason=
#      "policy-denied-ingress"}, at least as many as were refused; the
#      policy apply and the networkpolicies programming counted
#   4. hostile scrapers: another path is 404, another method 405 (Allow
#      says GET, HEAD); 40 connections held open from node-1 take only
#      their client's share, and node-2 still answers its own scrape
#      (a malformed --metrics-address: tests/api/agent_flags.sh)
#   5. a restarted agent binds its address again at once
#
# Lab t<pid>-me, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

lab_names me
PARSE=$PWD/tests/tools/prom_parse.py
PORT=9966

need_lab

trap lab_cleanup EXIT

declare -A IP NODE_IP
# scrape NODE [FROM]: node NODE's /metrics, asked from FROM's namespace
# (default: the node's own)
scrape() { ns "${2:-$1}" curl -sf --max-time 5 "http://${NODE_IP[$1]}:$PORT/metrics"; }
# parsed NODE: its metrics as prom_parse.py's JSON
parsed() { scrape "$1" | "$PYTHON" "$PARSE"; }
# value JSON SAMPLE LABELS_JSON: the value of one sample (null if none)
value() {
	jq -r --arg s "$2" --argjson l "$3" '[.families[].samples[] | select(.[0] == $s and .[1] == $l) | .[2]] | first // "null"' <<<"$1"
}
connects() { ns "$1" timeout 1 bash -c 'exec 3<>"/dev/tcp/$0/80"' "$2" 2>/dev/null; }

echo "lab $LAB: 2 nodes, networkpolicy mode"
must src/lab/weft-lab --lab "$LAB" up --nodes 2 --mode networkpolicy
must lab weftctl apply -f - <<<'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}'
must lab pod add node-1 x a --label app=a
must lab pod add node-1 x c --label app=c
must lab pod add node-2 x b --label app=b
while read -r t a; do IP[$t]=$a; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
for n in node-1 node-2; do NODE_IP[$n]=$(node_field "$n" ip); done
ip netns exec "$(netns x/b)" "$PYTHON" "$PEER" serve 80 x/b >>"$T_ROOT/server.log" 2>&1 &
T_PIDS+=("$!")
check "x/b's peer.py listens on 80" wait_for "$SERVER_START_S" bash -c "ip netns exec $(netns x/b) ss -Hltn 'sport = :80' | grep -q ."

# 1. served and parsed
for n in node-1 node-2; do
	check "$n serves http://${NODE_IP[$n]}:$PORT/metrics within 10 s" wait_for 10 scrape "$n"
	hdr=$(ns "$n" curl -s -o /dev/null -D - --max-time 5 "http://${NODE_IP[$n]}:$PORT/metrics")
	check "... as text/plain; version=0.0.4" grep -qi '^content-type: text/plain; version=0.0.4' <<<"$hdr"
	out=$(parsed "$n" 2>&1)
	if jq -e .families <<<"$out" >/dev/null 2>&1; then pass "... the Prometheus client's parser reads all of it ($(jq '.families | length' <<<"$out") families)"
	else fail "... the Prometheus client's parser reads all of it" "$out"; fi
	check "... durations are histograms named *_seconds" jq -e '[.families | to_entries[] | select(.value.type == "histogram")] |
		length >= 3 and all(.key | endswith("_seconds"))' <<<"$out"
	check "... counters end in _total (the parser names the family without it)" jq -e \
		'.families.weft_agent_drops.type == "counter" and (.families.weft_agent_drops.samples | all(.[0] == "weft_agent_drops_total"))' <<<"$out"
done

# 2. the node's own figures
m1=$(parsed node-1) m2=$(parsed node-2)
check "node-1 weft_agent_ready 1" test "$(value "$m1" weft_agent_ready '{}')" = 1
check "node-1 weft_agent_pod_addresses 2 (x/a, x/c)" test "$(value "$m1" weft_agent_pod_addresses '{}')" = 2
check "node-2 weft_agent_pod_addresses 1 (x/b)" test "$(value "$m2" weft_agent_pod_addresses '{}')" = 1
add1=$(value "$m1" weft_agent_cni_request_duration_seconds_count '{"command":"ADD"}')
check "node-1 counted 2 CNI ADDs (seen $add1)" test "$add1" = 2
check "node-2 counted 1 CNI ADD" test "$(value "$m2" weft_agent_cni_request_duration_seconds_count '{"command":"ADD"}')" = 1
check "... its +Inf bucket is its count, and the buckets are cumulative" jq -e '
	[.families.weft_agent_cni_request_duration_seconds.samples[] | select(.[0] | endswith("_bucket")) | select(.[1].command == "ADD")] as $b
	| ($b | map(.[2] | if . == "+Inf" then 1e18 else . end)) as $v
	| ($b | last | .[1].le) == "+Inf" and ($b | last | .[2]) == 2
	and ([range(1; $b | length)] | all(. as $i | $b[$i][2] >= $b[$i - 1][2]))' <<<"$m1"
check "... no CNI error counted" test "$(value "$m1" weft_agent_cni_request_errors_total '{"command":"ADD"}')" = 0
check "node-1 timed the programming of its pods' events (their records, as the reporter wrote them)" awk \
	-v a="$(value "$m1" weft_agent_programming_duration_seconds_count '{"kind":"pods"}')" 'BEGIN { exit !(a >= 2) }'

# 3. a denial, counted where it happens
check "x/c -> x/b connects before any policy" connects x/c "${IP[x/b]}"
before=$(value "$m2" weft_agent_drops_total '{"reason":"policy-denied-ingress"}')
applies=$(value "$m2" weft_agent_policy_apply_duration_seconds_count '{}')
must lab weftctl apply -f - <<<'{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"only-a","namespace":"x"},"spec":{"podSelector":{"matchLabels":{"app":"b"}},"ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"a"}}}]}]}}'
refused() { ! connects x/c "${IP[x/b]}"; }
check "only-a: x/c -> x/b refused within 10 s" wait_for 10 refused
tries=1
for _ in 1 2 3 4; do refused && tries=$((tries + 1)); done
check "x/a -> x/b still connects" connects x/a "${IP[x/b]}"
m2=$(parsed node-2)
after=$(value "$m2" weft_agent_drops_total '{"reason":"policy-denied-ingress"}')
check "node-2 counted policy-denied-ingress drops: $before -> $after, at least the $tries refused connections" \
	awk -v a="$after" -v b="$before" -v t="$tries" 'BEGIN { exit !(a - b >= t) }'
check "... and its flow log read them as dropped flows (weft_agent_flows_total{verdict=\"dropped\"} $(value "$m2" weft_agent_flows_total '{"verdict":"dropped"}'))" \
	awk -v a="$(value "$m2" weft_agent_flows_total '{"verdict":"dropped"}')" -v t="$tries" 'BEGIN { exit !(a >= t) }'
check "... with nobody listening, no forwarded flow reported" \
	test "$(value "$m2" weft_agent_flows_total '{"verdict":"new"}')" = 0
check "node-2 timed a policy apply more (before $applies)" awk -v a="$(value "$m2" weft_agent_policy_apply_duration_seconds_count '{}')" \
	-v b="$applies" 'BEGIN { exit !(a > b) }'
check "node-2 timed the NetworkPolicy event's programming" awk -v a="$(value "$m2" weft_agent_programming_duration_seconds_count '{"kind":"networkpolicies"}')" \
	'BEGIN { exit !(a >= 1) }'
check "node-2's weft_policy entries and capacity are there" jq -e \
	'[.families.weft_agent_map_entries.samples[] | select(.[1].map == "weft_policy")][0][2] >= 1' <<<"$m2"

# 4. hostile scrapers
code() { ns node-1 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
check "GET /other is 404" test "$(code "http://${NODE_IP[node-1]}:$PORT/other")" = 404
check "POST /metrics is 405" test "$(code -X POST -d x "http://${NODE_IP[node-1]}:$PORT/metrics")" = 405
check "... with Allow: GET, HEAD" bash -c "ip netns exec $(netns node-1) curl -s -D - -o /dev/null -X DELETE --max-time 5 \
	http://${NODE_IP[node-1]}:$PORT/metrics | grep -qi '^allow: GET, HEAD'"
release=$T_ROOT/release
ns node-1 "$PYTHON" tests/tools/hold.py "${NODE_IP[node-2]}" "$PORT" 40 "$release" >"$T_ROOT/hold.log" 2>&1 &
T_PIDS+=("$!")
check "40 connections from node-1 to node-2's endpoint opened and held" wait_for 10 grep -q '^connected' "$T_ROOT/hold.log"
check "... node-2 still answers its own scrape" scrape node-2
check "... node-2's agent still serves CNI STATUS (ready)" test "$(value "$(parsed node-2)" weft_agent_ready '{}')" = 1
touch "$release"
check "... released: node-1 scrapes node-2 again within 15 s" wait_for 15 scrape node-2 node-1

# 5. a restarted agent serves again at once (its address is free: the
# scrapes above left connections in TIME_WAIT, which do not hold it)
must lab agent restart node-1
check "agent restarted on node-1: /metrics served again within 10 s" wait_for 10 scrape node-1
check "... counting from zero: no CNI ADD since its start" \
	test "$(value "$(parsed node-1)" weft_agent_cni_request_duration_seconds_count '{"command":"ADD"}')" = 0

check "down $LAB (and no sanitizer report in the agents' logs)" lab down
finish
