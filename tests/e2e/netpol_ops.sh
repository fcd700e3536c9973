#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# netpol_ops.sh — NetworkPolicy enforcement through operations: agents
# restarted and killed, the controller down, a node rebooted, connections
# that were open before a policy, multitenant mode, the policy log and the
# drop counters.  Measured with real traffic while it happens.
#
#                     L-underlay: bridge br0, 192.168.200.0/24
#     +------------+---------------------------+---------------------------+
#   L-ctrl                                L-node-1 (.11)              L-node-2 (.12)
#   controller, networkpolicy mode        x/a (pod=a)  x/c (pod=c)    y/b (pod=b)  y/d (pod=d)
#                                                                     peer.py :80  echo :90
#   namespaces x and y (labels ns=x, ns=y); policy y/allow-a selects
#   pod=b: ingress only from x/a (namespace x AND pod=a), TCP 80
#
#   lab 2 (E), t<pid>-opsmt, multitenant mode:
#   L-node-1: p/a        L-node-2: p/b  q/a     (peer.py :80 in p/b, q/a)
#
# Sections, in the order they run (A F B D C, then E on a second lab):
#   A. agent restart (SIGTERM) of node-2 (y/b's node), then of node-1, then
#      both with --kill, while two probers connect every 100 ms: x/a -> y/b
#      must always be answered (no failure, and no SYN sent twice, which
#      would mean one was dropped), x/c -> y/b never.  Each restarted agent
#      adopts what the pinned maps hold: node-1's and node-2's weft_policy
#      have the same keys and values after each restart (nothing rewritten).
#   F. the policy log, right after A: namespace y was annotated
#      weft.io/policy-log=all before A, so node-2's agents restarted with a
#      logging rule set, which they adopted unchanged (the rule numbers in
#      weft_policy are their predecessors', and must still name policies);
#      x/a -> y/b and x/c -> y/b once each: both show up in node-2's
#      weft.io/policy-log annotation within 10 s (weft: ~7 s), the allowed one naming
#      y/allow-a, the denied one policy-denied-ingress; `weftctl drops`
#      lists policy-denied-ingress on node-2; weft.io/policy has the map
#      figures (rules, rulesCapacity, connections).
#   B. controller stopped: the same probes, still no wrong answer; started
#      again: a change of allow-a (x/c allowed too) is enforced within a
#      second of the apply returning (printed; < 3 s asserted, for a
#      loaded machine), and its revert likewise.
#   D. weft's decided behaviour for connections open before a policy: they
#      live on (weft_policy_ct tracks every connection, isolated or not),
#      while new ones are judged at once.  x/c holds a TCP connection to
#      y/d's echo server, exchanging a line every 100 ms; policy y/deny-d
#      (pod=d, no ingress) is applied: a new connection x/c -> y/d is
#      refused, and the open one keeps exchanging for 5 s more.
#   C. node reboot node-2: after y/b and y/d are re-added, x/c -> y/b is
#      denied from the first try, x/a -> y/b answered, y/deny-d enforced.
#   E. multitenant mode: p and q (not joined) stay isolated although both
#      have a policy allowing all ingress; a deny-all policy in p denies
#      p/a -> p/b; once q is joined to p, p/a -> q/a passes (q allows all)
#      and q/a -> p/b does not (p denies all): both apply.
#
# Alone: sudo tests/e2e/netpol_ops.sh (BUILD=build/release for a plain build).
# Labs t<pid>-ops and t<pid>-opsmt, so a demo lab or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-ops
LAB2=t$$-opsmt
L=$LAB		# the lab the helpers of tests/lib.sh work on
PEER=$PWD/tests/tools/peer.py
PROBE=$PWD/tests/tools/probe_loop.py
CHAT=$PWD/tests/tools/chat.py
# the interpreter itself: a wrapper in PATH can take seconds to start
PYTHON=/usr/bin/python3
T0=$(date +%s)

need_lab
for t in bpftool socat; do
	command -v $t >/dev/null || { fail "prerequisites" "$t is not installed"; finish; exit 1; }
done

trap 'lab_cleanup "$LAB2"' EXIT

# ---------------------------------------------------------------- helpers
now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }
# a node's pin dir and its agent's log, as status -o json names them (locate: after up)
declare -A PIN AGENT_LOG
locate() {
	local n p s
	while read -r n p s; do PIN[$n]=$p AGENT_LOG[$n]=$(dirname "$s")/agent.log; done \
		< <(status_json | jq -r '.nodes[] | "\(.name) \(.pinDir) \(.stateDir)"')
}
pin_dir() { echo "${PIN[$1]}"; }
agent_log() { echo "${AGENT_LOG[$1]}"; }
log_size() { stat -c %s "$1"; }
# log_says FILE OFFSET REGEX: FILE has a line matching REGEX after byte OFFSET
log_says() { tail -c +$(($2 + 1)) "$1" | grep -qE -- "$3"; }

# serve POD: peer.py on 80 in POD, answering "POD CLIENTIP"
serve() {
	ip netns exec "$(netns "$1")" "$PYTHON" "$PEER" serve 80 "$1" >>"$T_ROOT/server-${1//\//-}.log" 2>&1 &
	T_PIDS+=("$!")	# ip netns exec execs python3: the PID is the server's
}
# echo_serve POD: a line echo server on 90 (socat, one child a connection)
echo_serve() {
	ip netns exec "$(netns "$1")" socat TCP-LISTEN:90,fork,reuseaddr PIPE >>"$T_ROOT/echo.log" 2>&1 &
	T_PIDS+=("$!")
}
listening() { ns "$1" ss -Hltn "sport = :$2" | grep -q .; }
server_up() {
	wait_for "$SERVER_START_S" listening "$1" "$2" && return 0
	echo "expected a server listening on :$2 in $(netns "$1") within $SERVER_START_S s"
	return 1
}

declare -A IP
addresses() {
	while read -r t a; do IP[$t]=$a; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
}

# connects FROM IP PORT: a TCP connection from pod FROM to IP:PORT is set up within 1 s
connects() { ns "$1" timeout 1 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" 2>/dev/null; }
# answered FROM TO: FROM asks TO's peer.py on 80 and is answered "TO FROMIP"
answered() {
	local got
	got=$(ns "$1" timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/80" && head -n 1 <&3' "${IP[$2]}" 2>&1)
	[ "$got" = "$2 ${IP[$1]}" ] && return 0
	echo "$1 -> $2 (${IP[$2]}:80): expected the answer \"$2 ${IP[$1]}\"; seen \"$got\""
	return 1
}
# denied FROM IP PORT: no connection within 1 s
denied() {
	connects "$@" || return 0
	echo "$1 -> $2:$3: connected, but a policy denies it"
	return 1
}

apply_yaml() { lab weftctl apply -f - <<<"$1" >/dev/null; }

# allow_a_yaml PODS...: y/allow-a, selecting pod=b, ingress from the pods of
# namespace x whose label pod is one of PODS, TCP 80
allow_a_yaml() {
	local pods; pods=$(printf '%s, ' "$@")
	cat <<EOF
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-a, namespace: y}
spec:
  podSelector: {matchLabels: {pod: b}}
  policyTypes: [Ingress]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: x}}
      podSelector: {matchExpressions: [{key: pod, operator: In, values: [${pods%, }]}]}
    ports: [{port: 80, protocol: TCP}]
EOF
}

# ---- probers: tests/tools/probe_loop.py in a pod, for a whole section
declare -A PROBER
# probe_start NAME FROM TO-IP [PERIOD TIMEOUT]: prober NAME from pod FROM
probe_start() {
	local log=$T_ROOT/probe-$1.log
	rm -f "$T_ROOT/stop-$1"
	ip netns exec "$(netns "$2")" "$PYTHON" "$PROBE" "$3" 80 "$T_ROOT/stop-$1" "${4:-0.1}" "${5:-1.5}" >"$log" 2>&1 &
	PROBER[$1]=$!
	T_PIDS+=("$!")
	wait_for "$SERVER_START_S" grep -q '^started' "$log" || { echo "prober $1 did not start: $(tail -n 3 "$log")"; return 1; }
}
# check_probe_start CHECK-NAME ARGS...: probe_start ARGS in this shell (not
# in check's subshell: its PID is waited for here), as a check
check_probe_start() {
	local name=$1; shift
	if probe_start "$@"; then pass "$name"; else fail "$name" "see above"; fi
}
probe_stop() { touch "$T_ROOT/stop-$1"; wait "${PROBER[$1]}" 2>/dev/null; }
probes() { grep -cE '^[0-9]+ [0-9]+ ' "$T_ROOT/probe-$1.log"; }
# probes_more NAME N: prober NAME has ended N more probes than when asked first
# (probe_mark NAME first)
declare -A MARK
probe_mark() { MARK[$1]=$(probes "$1"); }
probes_more() { [ "$(probes "$1")" -ge $(( MARK[$1] + $2 )) ]; }
# wrong_allowed NAME ANSWER: every probe of NAME was answered ANSWER, without a SYN sent twice
wrong_allowed() {
	awk -v want="$2" 'NF >= 3 && $1 ~ /^[0-9]+$/ { n++; a = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", a)
		if ($3 != "yes" || a != want) { bad++; if (bad <= 3) print "  " $0 } }
		END { printf "%d of %d probes wrong\n", bad, n; exit !(n > 0 && bad == 0) }' "$T_ROOT/probe-$1.log"
}
# wrong_denied NAME: no probe of NAME connected
wrong_denied() {
	awk 'NF >= 3 && $1 ~ /^[0-9]+$/ { n++; if ($3 != "no") { bad++; if (bad <= 3) print "  " $0 } }
		END { printf "%d of %d probes connected\n", bad, n; exit !(n > 0 && bad == 0) }' "$T_ROOT/probe-$1.log"
}

# policy_map NODE: NODE's weft_policy, keys and values, sorted
policy_map() { bpftool -j map dump pinned "$(pin_dir "$1")/weft_policy" | jq -c 'map({key, value}) | sort'; }
same_map() {
	local now; now=$(policy_map "$1")
	[ "$now" = "$2" ] && return 0
	echo "$1's weft_policy changed: before $(jq length <<<"$2") entries, now $(jq length <<<"$now");" \
		"only before: $(jq -nc --argjson a "$2" --argjson b "$now" '$a - $b' | head -c 400);" \
		"only now: $(jq -nc --argjson a "$2" --argjson b "$now" '$b - $a' | head -c 400)"
	return 1
}

node_annotation() { lab weftctl get nodes "$1" -o json | jq -r --arg a "$2" '.metadata.annotations[$a] // empty'; }

# ================================================================ the lab
echo "# lab $LAB: networkpolicy mode, 2 nodes"
must lab up --nodes 2 --mode networkpolicy
locate
must apply_yaml "$(printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {ns: %s}}\n' x x y y)"
must lab pod add node-1 x a --label pod=a
must lab pod add node-1 x c --label pod=c
must lab pod add node-2 y b --label pod=b
must lab pod add node-2 y d --label pod=d
addresses
echo "  x/a=${IP[x/a]} x/c=${IP[x/c]} (node-1), y/b=${IP[y/b]} y/d=${IP[y/d]} (node-2)"
serve y/b
echo_serve y/d
must server_up y/b 80
must server_up y/d 90
check "before any policy: x/c -> y/b answered" answered x/c y/b
check "pin dir of node-2 ($(pin_dir node-2)) is the one its agent was given" \
	grep -qF -- "$(pin_dir node-2)" "/proc/$(node_field node-2 agentPid)/cmdline"
# y's pods log their verdicts from the start (F): so node-2's agents are
# restarted in A with a logging rule set, which F then finds unchanged
must lab weftctl patch namespace y --type merge -p '{"metadata": {"annotations": {"weft.io/policy-log": "all"}}}'
must apply_yaml "$(allow_a_yaml a)"
check "y/allow-a applied: x/c -> y/b denied within 3 s" wait_for 3 denied x/c "${IP[y/b]}" 80
check "... x/a -> y/b answered" answered x/a y/b

# ================================================================ A. agent restarts
echo "# A. agent restarts while x/a -> y/b and x/c -> y/b are probed every 100 ms"
check_probe_start "prober x/a -> y/b started" ok x/a "${IP[y/b]}"
check_probe_start "prober x/c -> y/b started" no x/c "${IP[y/b]}"
map1=$(policy_map node-1) map2=$(policy_map node-2)
echo "  weft_policy: node-1 $(jq length <<<"$map1") entries, node-2 $(jq length <<<"$map2")"
check "node-2's weft_policy holds y/allow-a's rule set" test "$(jq length <<<"$map2")" -gt 0
# restart NODE [--kill]: the agent restarted, until its first policy apply
# (it says "data plane synced: ready" after it), then 1 s of probes more
restart() {
	local off; off=$(log_size "$(agent_log "$1")")
	probe_mark ok; probe_mark no
	check "agent restart $*" lab agent restart "$@"
	check "... the new agent applied the policies (\"data plane synced: ready\")" \
		wait_for 20 log_says "$(agent_log "$1")" "$off" 'data plane synced: ready'
	check "... node-1's weft_policy unchanged (keys and values)" same_map node-1 "$map1"
	check "... node-2's weft_policy unchanged (keys and values)" same_map node-2 "$map2"
	check "... 10 more probes each way after it" wait_for 10 eval 'probes_more ok 10 && probes_more no 10'
}
restart node-2
restart node-1
restart node-2 --kill
restart node-1 --kill
probe_stop ok; probe_stop no
check "x/a -> y/b through the restarts: always answered, never a SYN sent twice ($(wrong_allowed ok "y/b ${IP[x/a]}" | tail -n 1))" \
	wrong_allowed ok "y/b ${IP[x/a]}"
check "x/c -> y/b through the restarts: never connected ($(wrong_denied no | tail -n 1))" wrong_denied no

# ================================================================ F. the policy log, drops
echo "# F. policy log and drop counters"
# log_has NODE JQ-CONDITION: an entry of NODE's weft.io/policy-log matches
log_entries() { node_annotation "$1" weft.io/policy-log | jq -c '.[]' 2>/dev/null; }
log_has() { log_entries "$1" | jq -se --arg t "$since" "any(.[]; .time >= \$t and $2)" >/dev/null; }
ALLOWED='.source == "x/a" and .destination == "y/b" and .port == "80/TCP" and .verdict == "allow" and .direction == "ingress"'
DENIED='.source == "x/c" and .destination == "y/b" and .port == "80/TCP" and .verdict == "deny" and .direction == "ingress" and .reason == "policy-denied-ingress"'
# connect_pair: one allowed and one denied connection (repeated while the
# annotation takes effect: the log shows only new connections after it)
connect_pair() { answered x/a y/b >/dev/null; denied x/c "${IP[y/b]}" 80 >/dev/null; }
started=$(now_ns) since=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)	# entries from now on
both_logged() { connect_pair; log_has node-2 "$ALLOWED" && log_has node-2 "$DENIED"; }
check "node-2's weft.io/policy-log has a new x/a -> y/b allowed and x/c -> y/b denied within 10 s" wait_for 10 both_logged
echo "  logged $(ms_since "$started") ms after the first try (the report: at most every 2 s)"
check "... the allowed entry names y/allow-a" log_has node-2 "$ALLOWED and (.policies | index(\"y/allow-a\"))"
check "... entries have time, source, destination, port, verdict, direction, policies" \
	log_has node-2 '(keys | contains(["time", "source", "destination", "port", "verdict", "direction", "policies"])) and (.time | test("^[0-9-]+T[0-9:.]+Z$"))'
if [ "$T_FAILED" -gt 0 ]; then log_entries node-2 | tail -n 4 | sed 's/^/    /'; fi
# weftctl policy-log: the same records, named, from every node
exit_is() { local want=$1 rc=0; shift; "$@" >/dev/null 2>&1 || rc=$?; [ "$rc" -eq "$want" ]; }
ctl_log_has() { lab weftctl policy-log -n y 2>/dev/null | grep -E "^[^ ]+ +node-2 +$1 +y/b +80/TCP +$2 +ingress +$3" >/dev/null; }
check "weftctl policy-log -n y shows x/a -> y/b allowed by y/allow-a" ctl_log_has x/a allow y/allow-a
check "weftctl policy-log -n y shows x/c -> y/b denied (policy-denied-ingress)" ctl_log_has x/c deny policy-denied-ingress
check "weftctl policy-log -n z shows none of them" eval '! lab weftctl policy-log -n z | grep -q "y/b"'
check "weftctl policy-log -n (no value) is a usage error (exit 2)" exit_is 2 lab weftctl policy-log -n
check "weftctl drops lists policy-denied-ingress on node-2" wait_for 15 drops_reported node-2 policy-denied-ingress 1
policy_fig() { node_annotation node-2 weft.io/policy | jq -e "$1" >/dev/null; }
check "node-2's weft.io/policy: rules > 0, rulesCapacity, connections, connectionsCapacity" \
	policy_fig '.rules > 0 and .rulesCapacity >= .rules and (.connections | type) == "number" and .connectionsCapacity > 0 and .policies == 1'

# ================================================================ B. the controller down
echo "# B. controller stopped, then started; a policy change after"
check_probe_start "prober x/a -> y/b started" ok x/a "${IP[y/b]}"
check_probe_start "prober x/c -> y/b started" no x/c "${IP[y/b]}"
probe_mark ok; probe_mark no
check "controller stop" env WEFT_LAB_TIMEOUT=20 src/lab/weft-lab --lab "$LAB" controller stop
check "... 20 probes each way with the controller down" wait_for 10 eval 'probes_more ok 20 && probes_more no 20'
check "controller start" lab controller start
probe_stop ok; probe_stop no
check "x/a -> y/b while the controller was down and came back: always answered, never a SYN sent twice ($(wrong_allowed ok "y/b ${IP[x/a]}" | tail -n 1))" \
	wrong_allowed ok "y/b ${IP[x/a]}"
check "x/c -> y/b while the controller was down and came back: never connected ($(wrong_denied no | tail -n 1))" wrong_denied no

# first_probe NAME VERDICT AFTER_NS: END_NS of the first probe of NAME
# started after AFTER_NS with VERDICT (yes or no)
first_probe() { awk -v v="$2" -v t="$3" '$1 >= t && $3 == v { print $2; exit }' "$T_ROOT/probe-$1.log"; }
has_probe() { test -n "$(first_probe "$@")"; }
check_probe_start "fast prober x/c -> y/b started (every 50 ms, 250 ms timeout)" fast x/c "${IP[y/b]}" 0.05 0.25
check "... it is denied" wait_for 10 has_probe fast no 0
lab weftctl apply -f - >/dev/null <<<"$(allow_a_yaml a c)"
applied=$(now_ns)
check "allow-a changed to let x/c in: a probe answered within 3 s" wait_for 3 has_probe fast yes "$applied"
took=$(( ($(first_probe fast yes "$applied") - applied) / 1000000 ))
echo "  the change was enforced $took ms after the apply returned"
check "... within 3 s of the apply returning ($took ms; the lab should take < 1 s)" test "$took" -lt 3000
lab weftctl apply -f - >/dev/null <<<"$(allow_a_yaml a)"
applied=$(now_ns)
# denied again: probes started after the revert are refused from some point on
last_yes() { awk -v t="$1" '$1 >= t && $3 == "yes" { e = $2 } END { print (e == "" ? 0 : e) }' "$T_ROOT/probe-fast.log"; }
denied_since() { has_probe fast no "$(( $(last_yes "$applied") > applied ? $(last_yes "$applied") : applied ))"; }
check "reverted: x/c denied again within 3 s" wait_for 3 denied_since
took=$(( ($(last_yes "$applied") - applied) / 1000000 ))
[ "$took" -ge 0 ] || took=0
echo "  the revert was enforced within $took ms of the apply returning (last answered probe)"
check "... within 3 s ($took ms)" test "$took" -lt 3000
probe_stop fast
check "x/c -> y/b denied after the revert" denied x/c "${IP[y/b]}" 80

# ================================================================ D. connections open before a policy
echo "# D. a connection x/c -> y/d open before y/deny-d lives on; new ones are denied"
chat_log=$T_ROOT/chat.log
ip netns exec "$(netns x/c)" "$PYTHON" "$CHAT" "${IP[y/d]}" 90 "$T_ROOT/stop-chat" >"$chat_log" 2>&1 &
chat=$! T_PIDS+=("$chat")
chat_oks() { grep -c ' ok ' "$chat_log"; }
check "x/c holds a connection to y/d's echo server, a line every 100 ms" wait_for "$SERVER_START_S" eval '[ "$(chat_oks)" -ge 5 ]'
must apply_yaml "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-d, namespace: y}
spec:
  podSelector: {matchLabels: {pod: d}}
  policyTypes: [Ingress]"
check "y/deny-d applied: a new connection x/c -> y/d is refused within 3 s" wait_for 3 denied x/c "${IP[y/d]}" 90
denied_at=$(now_ns)
# exchanged_until T: the open connection echoed a line after T, and never failed
exchanged_until() { ! grep -q ' fail ' "$chat_log" && awk -v t="$1" '$2 == "ok" && $1 >= t { f = 1 } END { exit !f }' "$chat_log"; }
check "... while the open one keeps exchanging for 5 s more" wait_for 15 exchanged_until $((denied_at + 5000000000))
check "... without a single failed exchange ($(chat_oks) echoes)" bash -c "! grep ' fail ' '$chat_log'"
check "... and new connections are still refused: x/c -> y/d" denied x/c "${IP[y/d]}" 90
check "... x/a -> y/d" denied x/a "${IP[y/d]}" 90
touch "$T_ROOT/stop-chat"; wait "$chat" 2>/dev/null

# ================================================================ C. node reboot
echo "# C. node reboot node-2 (y/b, y/d)"
check "node reboot node-2" lab node reboot node-2
addresses
echo "  y/b=${IP[y/b]} y/d=${IP[y/d]} after the reboot"
check "x/c -> y/b denied at the first try after the reboot" denied x/c "${IP[y/b]}" 80
answered_soon() { wait_for 10 answered "$@" && return 0; answered "$@"; }
check "x/a -> y/b answered within 10 s" answered_soon x/a y/b
check "x/c -> y/b denied" denied x/c "${IP[y/b]}" 80
check "y/deny-d still enforced: x/c -> y/d denied" denied x/c "${IP[y/d]}" 90
check "node-2's weft_policy holds rule sets again" test "$(policy_map node-2 | jq length)" -gt 0
if [ "$T_FAILED" -gt 0 ]; then
	echo "  for the failures above: the Pods of y, the agents' warnings, node-2's weft_policy"
	lab weftctl get pods -A -o json | jq -c '.items[] | [.metadata.namespace, .metadata.name, .status.podIP, .metadata.labels]' | sed 's/^/    /'
	for n in node-1 node-2; do grep -E ' (warn|error)' "$(agent_log $n)" | tail -n 6 | sed "s/^/    $n: /"; done
	policy_map node-2 | sed 's/^/    /'
	for n in node-1 node-2; do bpftool -j map dump pinned "$(pin_dir $n)/weft_ipcache" | jq -c '.[]' | sed "s/^/    $n ipcache: /"; done
fi

stop_started
check "down $LAB (and no sanitizer report in the controller's or agents' logs)" lab down
echo "  networkpolicy lab done after $(( $(date +%s) - T0 )) s"

# ================================================================ E. multitenant
echo "# E. lab $LAB2: multitenant mode, VNID isolation and policies both apply"
L=$LAB2
unset IP; declare -A IP
must lab up --nodes 2 --mode multitenant
must lab pod add node-1 p a --label pod=a
must lab pod add node-2 p b --label pod=b
must lab pod add node-2 q a --label pod=a
addresses
serve p/b; serve q/a
must server_up p/b 80
must server_up q/a 80
allow_all() {
	printf 'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: allow-all, namespace: %s}\n' "$1"
	printf 'spec:\n  podSelector: {}\n  policyTypes: [Ingress]\n  ingress: [{}]\n'
}
must apply_yaml "$(allow_all p)"
must apply_yaml "$(allow_all q)"
policies_on() { node_annotation "$1" weft.io/policy | jq -e --argjson n "$2" '.policies == $n' >/dev/null; }
check "both nodes' agents hold the 2 policies (weft.io/policy)" wait_for 20 eval 'policies_on node-1 2 && policies_on node-2 2'
check "p/a -> p/b answered (allow-all, same namespace)" answered p/a p/b
check "p/a -> q/a denied: not joined (across nodes)" denied p/a "${IP[q/a]}" 80
check "p/b -> q/a denied: not joined (same node)" denied p/b "${IP[q/a]}" 80
check "q/a -> p/b denied: not joined" denied q/a "${IP[p/b]}" 80
# policies are a union: p's allow-all goes, and deny-all takes its place
must lab weftctl delete networkpolicy allow-all -n p
must apply_yaml "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: p}
spec:
  podSelector: {}
  policyTypes: [Ingress]"
check "p/deny-all instead of p/allow-all: p/a -> p/b denied within 3 s" wait_for 3 denied p/a "${IP[p/b]}" 80
check "... and stays denied" denied p/a "${IP[p/b]}" 80
check "pod-network join-projects --to=p q" lab weftctl pod-network join-projects --to=p q
check "joined: p/a -> q/a answered within 10 s (q allows all ingress)" wait_for 10 answered p/a q/a
check "... p/b -> q/a answered (same node)" wait_for 10 answered p/b q/a
check "... q/a -> p/b denied (p denies all ingress)" denied q/a "${IP[p/b]}" 80

stop_started
check "down $LAB2 (and no sanitizer report in the controller's or agents' logs)" lab down
echo "  took $(( $(date +%s) - T0 )) s"
finish
