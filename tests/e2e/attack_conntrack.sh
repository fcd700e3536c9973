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
#   3. orphan pinning: evil opens 3 x PER_CLIENT short connections to
#      itself through blue/self: at most PER_CLIENT held at once
#      (ct-source-limit counts the rest), and once they close the sweep
#      frees them within seconds (none pinned)
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
at_most() { local n; n=$(ct_entries node-1); [ "$n" -le "$1" ] || { echo "weft_ct on node-1: $n > $1"; return 1; }; }
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
check "control: 200 SYNs to blue's self from the same sender make entries" \
	ns blue/evil /usr/bin/python3 "$FLOOD" "$SELF" 80 200 S 50000
check "... visible in weft_ct (>= 200)" at_least 200

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
before=$(drop_count node-1 ct-source-limit)
pin_attempt() {
	ns blue/evil /usr/bin/python3 - "$SELF" $((3 * PER_CLIENT)) <<'EOF'
import socket, sys
ok = 0
for i in range(int(sys.argv[2])):
    s = socket.socket()
    s.settimeout(0.2)
    try:
        s.connect((sys.argv[1], 80)); ok += 1
    except OSError:
        pass
    s.close()
print("connected", ok)
EOF
}
check "evil: $((3 * PER_CLIENT)) short connections to itself through blue's self" pin_attempt
bystanders 10
check "... ct-source-limit counted the ones over the cap" grew node-1 ct-source-limit "$before"
check "... weft_ct bounded: <= 2 x $PER_CLIENT + bystanders" at_most $((2 * PER_CLIENT + 2 * OTHERS))
check "... and once closed, the sweep frees them: weft_ct <= bystanders within 30 s" \
	wait_for 30 at_most $((2 * OTHERS))
check "control: evil reaches its own service again" answered blue/evil "$SELF"

check "the other tenants: all $OTHERS connections answered during the attacks" test "$BYSTANDER_FAIL" -eq 0
check "down $LAB" lab down
finish
