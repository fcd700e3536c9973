#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# drops_report.sh — what a user sees after an attack on the service
# conntrack (docs/services.md "Conntrack under attack"): `weftctl drops`
# lists the drop reasons the attack caused and the conntrack pressure line,
# and the Node annotation weft.io/conntrack the agent publishes parses, with
# the per-client cap the agent was given.
#
#                     L-underlay: bridge br0, 192.168.200.0/24
#        +------------------+------------------------+
#     L-ctrl          L-node-1 (.11)            L-node-2 (.12)
#     controller      |      |                  |
#                    evil   web                r2
#                   (blue) (red)              (red)
#
#   Services: red/web (selector app=web: web), blue/self (evil is its own
#   backend).  Agents run with --conntrack-per-client PER_CLIENT.
#
#   1. evil: 20,000 SYNs to red's web (tenant-refused)  -> isolated
#   2. evil: 5,000 RSTs to red's web (no connection)     -> ct-no-connection
#   3. evil: 3 x PER_CLIENT connections to itself, held -> ct-source-limit
#   4. `weftctl drops` names the three on node-1 with at least what was
#      sent (1, 2) or more than none (3); `weftctl drops node-1` shows the
#      conntrack line (entries/capacity, PER_CLIENT); the annotation is JSON
#      with numeric entries <= capacity and perClientMax = PER_CLIENT.
#   r2 connects to red's web before and after: answered.  Before the
#   attack an operator labels node-1: the agent's reports (a PUT of the
#   Node as its last report left it) still land, the label kept.
#
# Lab t<pid>-dr, so another lab is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -e -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-dr
L=$LAB
PER_CLIENT=50
PEER=$PWD/tests/tools/peer.py
HOLD=$PWD/tests/tools/hold.py
need_lab

cleanup() { # under set -e: a process stopped by its signal is no failure
	stop_started || true
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1 || true
	t_cleanup
}
trap cleanup EXIT

FLOOD=$T_ROOT/synflood
must cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wshadow -Wformat=2 -o "$FLOOD" tests/tools/synflood.c
svc_ip() { lab weftctl get svc "$1" -n "$2" -o json | jq -r .spec.clusterIP; }
serve() { # serve POD: peer.py on 8080
	ip netns exec "$(netns "$1")" python3 "$PEER" serve 8080 "${1#*/}" >>"$T_ROOT/${1//\//-}.log" 2>&1 &
	T_PIDS+=("$!")
}
listening() { ns "$1" ss -Hltn "sport = :8080" | grep -q .; }
answered() { ns "$1" timeout 5 python3 "$PEER" tcp "$2" 80 >/dev/null 2>&1; }
sent() { # sent OUTPUT: the segments synflood says it sent
	sed -n 's/^synflood: sent=\([0-9]*\) .*/\1/p' <<<"$1"
}
flood() { # flood FLAGS COUNT: COUNT segments from evil to red's web, all sent
	local out
	out=$(lab exec blue/evil -- "$FLOOD" "$WEB" 80 -f "$1" -n "$2" -r 50000 -d 30) &&
		[ "$(sent "$out")" = "$2" ]
}
conntrack_line() { # the pressure row: node, entries/capacity, the cap
	lab weftctl drops node-1 | grep -qE "^node-1 +[0-9]+/[1-9][0-9]* +$PER_CLIENT "
}
annotation() { lab weftctl get node "$1" -o json | jq -r '.metadata.annotations["weft.io/conntrack"]'; }
annotation_parses() { # NODE: JSON with every field the agent documents, numbers where numbers go
	annotation "$1" | jq -e --argjson cap "$PER_CLIENT" '
		(.entries | type == "number") and (.capacity | type == "number") and .capacity > 0 and
		.entries <= .capacity and .perClientMax == $cap and (.clients | type == "number") and
		(.topClient | type == "string") and (.topClientConnections | type == "number") and
		(.expiredPairs | type == "number") and (.orphans | type == "number") and
		(.sweepMicros | type == "number")'
}

WEFT_LAB_AGENT_ARGS="--conntrack-per-client $PER_CLIENT" must lab up --nodes 2 --mode multitenant
must lab pod add node-1 blue evil --label app=self
must lab pod add node-1 red web --label app=web
must lab pod add node-2 red r2
for p in red/web blue/evil; do serve "$p"; done
for p in red/web blue/evil; do must wait_for "$SERVER_START_S" listening "$p"; done
{ service_yaml red web web; echo ---; service_yaml blue self self; } >"$T_ROOT/svc.yaml"
must lab weftctl apply -f "$T_ROOT/svc.yaml"
WEB=$(svc_ip web red)
SELF=$(svc_ip self blue)
check "red's web $WEB answers r2" wait_for 20 answered red/r2 "$WEB"
check "blue's self $SELF answers evil (itself)" wait_for 20 answered blue/evil "$SELF"
check "before the attack: node-1's annotation weft.io/conntrack parses" wait_for 20 annotation_parses node-1
check "before the attack: drops lists no ct-no-connection on node-1" test "$(lab weftctl drops node-1 | awk '$2 == "ct-no-connection"' | wc -l)" -eq 0
# someone else writes node-1's Node: the agent's next report, a PUT of the
# Node as its last one left it, is refused (409), and it reads the Node
# again and writes on top of the label
check "an operator labels node-1 (weft.test/rack=r7)" \
	lab weftctl patch node node-1 --type merge -p '{"metadata":{"labels":{"weft.test/rack":"r7"}}}'

# ------------------------------------------------------------ the attack
check "evil: 20,000 SYNs to red's web" flood S 20000
check "evil: 5,000 RSTs to red's web" flood R 5000
# evil holds 3 x PER_CLIENT connections to itself open (closed at the end)
PINS=$T_ROOT/pins
held() { grep -q connected "$PINS.out" 2>/dev/null; }
ip netns exec "$(netns blue/evil)" python3 "$HOLD" "$SELF" 80 $((3 * PER_CLIENT)) "$PINS.release" >"$PINS.out" 2>&1 &
PIN_PID=$!
T_PIDS+=("$PIN_PID")
check "evil: $((3 * PER_CLIENT)) connections to itself through blue's self, held open" wait_for 15 held

# ------------------------------------------------------------ what the user sees
check "weftctl drops: node-1 isolated >= 20,000" wait_for 30 drops_reported node-1 isolated 20000
check "weftctl drops: node-1 ct-no-connection >= 5,000" wait_for 30 drops_reported node-1 ct-no-connection 5000
check "weftctl drops: node-1 ct-source-limit > 0" wait_for 30 drops_reported node-1 ct-source-limit 1
check "weftctl drops: the conntrack line for node-1 (entries/capacity, cap $PER_CLIENT)" conntrack_line
check "weftctl drops (every node): both nodes' conntrack lines" eval \
	'[ "$(lab weftctl drops | grep -cE "^node-[12] +[0-9]+/[1-9][0-9]* +$PER_CLIENT ")" -eq 2 ]'
check "node-1's annotation weft.io/conntrack parses after the attack" annotation_parses node-1
check "node-1 kept the operator's label through the agent's reports" \
	test "$(lab weftctl get node node-1 -o json | jq -r '.metadata.labels["weft.test/rack"]')" = r7
check "node-2's annotation weft.io/conntrack parses" annotation_parses node-2
check "red's web still answers r2" answered red/r2 "$WEB"
touch "$PINS.release"
gone() { ! kill -0 "$1" 2>/dev/null; }
check "evil closes its connections" wait_for 10 gone "$PIN_PID"
check "down $LAB" lab down
finish
