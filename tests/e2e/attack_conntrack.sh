#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# attack_conntrack.sh — a tenant attacking the service conntrack table
# (weft_ct, docs/services.md "Conntrack under attack"), in a 2-node
# multitenant lab whose agents cap each client at PER_CLIENT connections.
#
#                     L-underlay: bridge br0, 192.168.200.0/24
#        +------------------+------------------------+
#     L-ctrl          L-node-1 (.11)            L-node-2 (.12)
#     controller      |      |      |           |      |
#                    evil   web    d1          r2     red-web
#                   (blue) (red)  (default)   (red)   (red)
#
#   Services: red/web (selector app=web: web, red-web), blue/self (evil
#   is its own backend).
#
#   1. SYN flood: evil sends 20,000 SYNs to red's web (tenant-refused):
#      weft_ct on node-1 gains nothing, isolated grows; control: the same
#      sender's SYNs to blue/self do make entries (the count sees them)
#   2. RST and ACK storm: 20,000 segments to red's web and blue/self: no
#      entry, ct-no-connection grows; control: a SYN after them makes one
#   3. orphan pinning: evil opens 3 x PER_CLIENT connections to itself
#      through blue/self and holds them: at most PER_CLIENT tracked at once
#      (ct-source-limit counts the rest), and once they close they are
#      freed within seconds (none pinned)
#   4. reset churn: evil opens 3 x PER_CLIENT connections to itself, each
#      closed by a RST: all connect (a RST frees the pair and the slot at
#      once), ct-source-limit does not grow, weft_ct keeps none of them
#   During 1-3, r2 and d1 open connections to red's web: every one answered.
#
#   Bound asserted: weft_ct on node-1 <= 2 x PER_CLIENT + 2 x OTHERS (the
#   other tenants' connections of the run), whatever evil sends.
#
# Lab t<pid>-ac, so another lab is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -e -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-ac
L=$LAB
PER_CLIENT=500
PEER=$PWD/tests/tools/peer.py
HOLD=$PWD/tests/tools/hold.py
FLOOD=$PWD/tests/tools/synflood.py
need_lab

cleanup() { # under set -e: a process stopped by its signal is no failure
	stop_started || true
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1 || true
	t_cleanup
}
trap cleanup EXIT

declare -A IP PIN
addresses() {
	local json
	json=$(status_json)
	while read -r t a; do IP[$t]=$a; done < <(jq -r '(.pods[] | "\(.namespace)/\(.name) \(.ip)"), (.nodes[] | "\(.name) \(.ip)")' <<<"$json")
	while read -r n p; do PIN[$n]=$p; done < <(jq -r '.nodes[] | "\(.name) \(.pinDir)"' <<<"$json")
}
mapfile -t DROP_NAMES < <(sed -n '/#define WEFT_DROP_NAMES/,/}/p' bpf/weft_bpf.h | grep -oE '"[a-z0-9-]+"' | tr -d '"')
drop_count() { # drop_count NODE REASON
	bpftool -j map dump pinned "${PIN[$1]}/weft_drops" |
		jq -r --argjson names "$(printf '%s\n' "${DROP_NAMES[@]}" | jq -R . | jq -s .)" --arg r "$2" '
			map(.formatted // .) | map(select($names[.key] == $r)) | [.[].values[].value] | add // 0'
}
ct_entries() { bpftool -j map dump pinned "${PIN[$1]}/weft_ct" | jq length; }
svc_ip() { lab weftctl get svc "$1" -n "$2" -o json | jq -r .spec.clusterIP; }
serve() { # serve POD: peer.py on 8080
	ip netns exec "$(netns "$1")" python3 "$PEER" serve 8080 "${1#*/}" >>"$T_ROOT/${1//\//-}.log" 2>&1 &
	T_PIDS+=("$!")
}
listening() { ns "$1" ss -Hltn "sport = :8080" | grep -q .; }
at_most() { local n; n=$(ct_entries node-1); [ "$n" -le "$1" ] || { echo "weft_ct on node-1: $n > $1"; bpftool -j map dump pinned "${PIN[node-1]}/weft_ct" | jq -c '.[] | (.formatted // .) ' | head -6 >&2; return 1; }; }
at_least() { [ "$(ct_entries node-1)" -ge "$1" ]; }
grew() { [ "$(drop_count "$1" "$2")" -gt "$3" ]; }

# the other tenants, meanwhile: one connection a step, each must be answered
OTHERS=0
BYSTANDER_FAIL=0
bystanders() { # bystanders N: N connections from r2 and d1 each
	local i p
	for i in $(seq 1 "$1"); do
		for p in red/r2 default/d1; do
			OTHERS=$((OTHERS + 1))
			ns "$p" timeout 5 python3 "$PEER" tcp "$WEB" 80 >/dev/null 2>&1 || BYSTANDER_FAIL=$((BYSTANDER_FAIL + 1))
		done
	done
}

WEFT_LAB_AGENT_ARGS="--conntrack-per-client $PER_CLIENT" must lab up --nodes 2 --mode multitenant
must lab pod add node-1 blue evil --label app=self
must lab pod add node-1 red web --label app=web
must lab pod add node-2 red red-web --label app=web
must lab pod add node-2 red r2
must lab pod add node-1 default d1
addresses
for p in red/web red/red-web blue/evil; do serve "$p"; done
for p in red/web red/red-web blue/evil; do must wait_for "$SERVER_START_S" listening "$p"; done
{ service_yaml red web web; echo ---; service_yaml blue self self; } >"$T_ROOT/svc.yaml"
must lab weftctl apply -f "$T_ROOT/svc.yaml"
WEB=$(svc_ip web red)
SELF=$(svc_ip self blue)
answered() { ns "$1" timeout 5 python3 "$PEER" tcp "$2" 80 >/dev/null 2>&1; }
check "red's web $WEB answers r2" wait_for 20 answered red/r2 "$WEB"
check "blue's self $SELF answers evil (itself)" wait_for 20 answered blue/evil "$SELF"
echo "  lab $LAB: evil=${IP[blue/evil]} web=$WEB self=$SELF per-client cap $PER_CLIENT"
bystanders 5

# ------------------------------------------------------------ 1. SYN flood
before=$(drop_count node-1 isolated)
check "evil: 20,000 SYNs to red's web" ns blue/evil /usr/bin/python3 "$FLOOD" "$WEB" 80 20000 S 20000
bystanders 10
check "... isolated counted on node-1 (the packets were seen)" wait_for 5 grew node-1 isolated "$before"
check "... weft_ct on node-1 holds only the bystanders' connections" at_most $((2 * OTHERS))
# (evil's own stack would reset the answers to SYNs it did not send, and
# a RST deletes the pair: it drops them for the control)
synack_drop() { ns blue/evil nft "$1" table ip t_synack; }
check "control: 200 SYNs to blue's self from the same sender make entries" eval '
	synack_drop add && ns blue/evil nft add chain ip t_synack in "{ type filter hook input priority 0; }" &&
	ns blue/evil nft add rule ip t_synack in ip saddr "$SELF" tcp flags \& \(syn \| ack\) == \(syn \| ack\) drop &&
	ns blue/evil /usr/bin/python3 "$FLOOD" "$SELF" 80 200 S 50000'
check "... visible in weft_ct (>= 200)" at_least 200
check "... evil's answer filter removed" synack_drop delete

# ------------------------------------------------------------ 2. RST / ACK storm
before=$(drop_count node-1 ct-no-connection)
check "evil: 10,000 RSTs and 10,000 ACKs to red's web and blue's self" eval '
	ns blue/evil /usr/bin/python3 "$FLOOD" "$WEB" 80 5000 R 1000 &&
	ns blue/evil /usr/bin/python3 "$FLOOD" "$SELF" 80 5000 R 1000 &&
	ns blue/evil /usr/bin/python3 "$FLOOD" "$WEB" 80 5000 A 1000 &&
	ns blue/evil /usr/bin/python3 "$FLOOD" "$SELF" 80 5000 A 1000'
bystanders 10
check "... ct-no-connection counted them" wait_for 5 grew node-1 ct-no-connection $((before + 9999))
check "... weft_ct bounded: <= 2 x $PER_CLIENT + bystanders" at_most $((2 * PER_CLIENT + 2 * OTHERS))

# ------------------------------------------------------------ 3. orphan pinning
# evil opens 3 x PER_CLIENT connections to itself and holds them open
before=$(drop_count node-1 ct-source-limit)
PINS=$T_ROOT/pins
held() { grep -q connected "$PINS.out" 2>/dev/null; }
ip netns exec "$(netns blue/evil)" python3 "$HOLD" "$SELF" 80 $((3 * PER_CLIENT)) "$PINS.release" >"$PINS.out" 2>&1 &
PIN_PID=$!
T_PIDS+=("$PIN_PID")
check "evil: $((3 * PER_CLIENT)) connections to itself through blue's self, held open" \
	wait_for 15 held
echo "  evil: $(cat "$PINS.out")"
check "... ct-source-limit counted the ones over the cap" grew node-1 ct-source-limit "$before"
check "... weft_ct bounded while held: <= 2 x $PER_CLIENT + bystanders" at_most $((2 * PER_CLIENT + 2 * OTHERS))
bystanders 10
touch "$PINS.release"
gone() { ! kill -0 "$1" 2>/dev/null; }
check "... evil closes them all" wait_for 10 gone "$PIN_PID"
check "... and once closed, the sweep frees them: weft_ct <= bystanders within 30 s" \
	wait_for 30 at_most $((2 * OTHERS))
check "control: evil reaches its own service again" answered blue/evil "$SELF"

# ------------------------------------------------------------ 4. reset churn
# a client that resets its connections (SO_LINGER 0, as load generators
# do) gives each slot back at once: 3 x PER_CLIENT of them in a row are
# never refused by the cap, and none stays in the table
before=$(drop_count node-1 ct-source-limit)
reset_churn() {
	ns blue/evil /usr/bin/python3 - "$SELF" $((3 * PER_CLIENT)) <<'EOF'
import socket, struct, sys
ok = 0
for i in range(int(sys.argv[2])):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((sys.argv[1], 80)); ok += 1
    except OSError:
        pass
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
print("connected", ok)
sys.exit(0 if ok == int(sys.argv[2]) else 1)
EOF
}
check "evil: $((3 * PER_CLIENT)) connections to itself, each reset: all connect" reset_churn
check "... ct-source-limit did not grow (each RST gave its slot back)" \
	test "$(drop_count node-1 ct-source-limit)" -eq "$before"
check "... weft_ct holds none of them: <= bystanders" at_most $((2 * OTHERS))

check "the other tenants: all $OTHERS connections answered during the attacks" test "$BYSTANDER_FAIL" -eq 0
check "down $LAB" lab down
finish
