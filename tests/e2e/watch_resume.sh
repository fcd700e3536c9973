#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# watch_resume.sh — an agent renews a watch that ended from the last
# revision it applied, and lists again only when it must (docs/agent.md,
# "Following the controller").
#
#   a 2-node lab in networkpolicy mode, both agents with --watch-timeout 1:
#   every watch request ends after a second and is renewed
#
#   x/a (node-1)  --->  x/b (node-2, peer.py on 80)
#
#   1. for at least 6 s (six renewals of each watch), NetworkPolicies made
#      one after another, each in force on both nodes
#      (weft.io/applied-revisions) before the next: no change is lost
#      between two watch requests
#   2. a policy denying ingress to app=b2: x/a is still answered (x/b is
#      app=b); x/b relabelled app=b2 (a Pod event): x/a is refused; the
#      policy deleted: x/a is answered again
#   3. through all of it neither agent listed anything again (its "list
#      KIND: N at revision R" lines stay as they were after start-up), and
#      neither warned about a watch
#   4. the controller restarted: each agent's watches break and resume
#      from the last revision they applied (no list: the restarted
#      controller serves what came since from its history), and a policy
#      made after the restart is in force on both nodes
#
# With an agent that lists again whenever a watch ends (weft before this
# test), 2 fails: each node logs a list of every kind every second.
#
# Lab t<pid>-wr, so a demo lab ("weft") or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

lab_names wr

need_lab

trap lab_cleanup EXIT

declare -A AGENT_LOG IP
locate() {
	local n s
	while read -r n s; do AGENT_LOG[$n]=$(dirname "$s")/agent.log; done \
		< <(status_json | jq -r '.nodes[] | "\(.name) \(.stateDir)"')
}
lists() { grep -cE 'info: list [a-z]+: [0-9]+ at revision ' "${AGENT_LOG[$1]}"; }
watch_warnings() { grep -E 'warn: watch |listing again' "${AGENT_LOG[$1]}"; }

# applied RV: both nodes report NetworkPolicies applied up to RV
applied() {
	lab weftctl get nodes -o json | jq -e --argjson rv "$1" '.items | length == 2 and
		all(.metadata.annotations["weft.io/applied-revisions"] // "{}" | fromjson | (.networkpolicies // 0) >= $rv)' >/dev/null
}
rv_of() { jq -r '.metadata.resourceVersion' <<<"$1"; }
policy_json() { # NAME SELECTOR_JSON
	printf '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"%s","namespace":"x"},"spec":{"podSelector":%s,"policyTypes":["Ingress"]}}' "$1" "$2"
}
make_policy() { # NAME SELECTOR_JSON: prints the stored object
	policy_json "$1" "$2" | lab weftctl apply -f - >/dev/null &&
		lab weftctl get networkpolicy "$1" -n x -o json
}
connects() { ns "$1" timeout 1 bash -c 'exec 3<>"/dev/tcp/$0/80"' "$2" 2>/dev/null; }
answered() {
	local got
	got=$(ns x/a timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/80" && head -n 1 <&3' "${IP[x/b]}" 2>&1)
	[ "$got" = "x/b ${IP[x/a]}" ] && return 0
	echo "x/a -> x/b: expected the answer \"x/b ${IP[x/a]}\"; seen \"$got\""
	return 1
}
refused() { ! connects x/a "${IP[x/b]}"; }

echo "lab $LAB: 2 nodes, networkpolicy mode, agents with --watch-timeout 1"
must env WEFT_LAB_AGENT_ARGS="--watch-timeout 1" src/lab/weft-lab --lab "$LAB" up --nodes 2 --mode networkpolicy
ns_x() { lab weftctl apply -f - <<<'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}'; }
must ns_x
must lab pod add node-1 x a --label app=a
must lab pod add node-2 x b --label app=b
locate
while read -r t a; do IP[$t]=$a; done < <(status_json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')
ip netns exec "$(netns x/b)" "$PYTHON" "$PEER" serve 80 x/b >>"$T_ROOT/server.log" 2>&1 &
T_PIDS+=("$!")
check "x/b's peer.py listens on 80" wait_for "$SERVER_START_S" bash -c "ip netns exec $(netns x/b) ss -Hltn 'sport = :80' | grep -q ."
check "x/a is answered by x/b" answered
agent_args() { tr '\0' ' ' <"/proc/$(cat "$(dirname "${AGENT_LOG[$1]}")/agent.pid")/cmdline"; }
for n in node-1 node-2; do
	check "$n's agent runs with --watch-timeout 1" bash -c "[[ '$(agent_args $n)' == *'--watch-timeout 1'* ]]"
done

# 1. changes across renewals
declare -A LISTS
for n in node-1 node-2; do LISTS[$n]=$(lists $n); done
start=$(date +%s%N)
i=0 lost=""
while [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 6000 ] || [ $i -lt 6 ]; do
	i=$((i + 1))
	out=$(make_policy "p$i" '{"matchLabels":{"app":"none-'$i'"}}') || { lost="p$i: apply failed: $out"; break; }
	wait_for 10 applied "$(rv_of "$out")" || { lost="p$i (revision $(rv_of "$out")) not in force on both nodes within 10 s"; break; }
done
if [ -z "$lost" ]; then pass "$i policies made one after another over $(( ($(date +%s%N) - start) / 1000000 )) ms, each in force on both nodes within 10 s"
else fail "policies across watch renewals" "$lost"; fi

# 2. a Pod relabelled into a policy's selection
out=$(make_policy deny-b2 '{"matchLabels":{"app":"b2"}}')
check "deny-b2 (all ingress to app=b2) in force on both nodes within 10 s" wait_for 10 applied "$(rv_of "$out")"
check "x/b is app=b: x/a is still answered" answered
must lab weftctl patch pod b -n x --type merge -p '{"metadata":{"labels":{"app":"b2"}}}'
check "x/b relabelled app=b2: x/a is refused within 10 s" wait_for 10 refused
must lab weftctl delete networkpolicy deny-b2 -n x
check "deny-b2 deleted: x/a is answered again within 10 s" wait_for 10 answered

# 3. no list again, no warning
for n in node-1 node-2; do
	now=$(lists $n)
	if [ "$now" = "${LISTS[$n]}" ]; then pass "$n listed nothing again while its watches renewed ($now lists since start-up)"
	else fail "$n listed nothing again while its watches renewed" "$((now - LISTS[$n])) more lists: $(grep -E 'info: list ' "${AGENT_LOG[$n]}" | tail -n 3)"; fi
	check "$n warned about no watch" bash -c "! grep -E 'warn: watch |listing again' '${AGENT_LOG[$n]}'"
done

# 4. a broken connection resumes from the last revision applied
for n in node-1 node-2; do LISTS[$n]=$(lists $n); done
must lab controller restart
out=$(make_policy after '{"matchLabels":{"app":"none"}}')
check "a policy made after the restart is in force on both nodes within 20 s" wait_for 20 applied "$(rv_of "$out")"
for n in node-1 node-2; do
	check "$n resumed its watches after the controller restarted" grep -qE 'warn: watch .*resuming from revision' "${AGENT_LOG[$n]}"
	now=$(lists $n)
	if [ "$now" = "${LISTS[$n]}" ]; then pass "$n listed nothing again after the restart (resumed instead)"
	else fail "$n listed nothing again after the restart" "$((now - LISTS[$n])) more lists"; fi
done

finish
