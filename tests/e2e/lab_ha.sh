#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# lab_ha.sh — weft-lab's etcd store: a real etcd cluster of three members
# in the lab's namespaces, two controllers on it that are one API to their
# clients, the fault verbs on both (etcd stop/start/partition/heal,
# controller stop/start) and a down that leaves nothing of it.
#
#                             L-underlay: bridge br0, 192.168.200.0/24
#     +-----------+-----------+-----------+-----------+-----------+-----------+-----------+
#  L-ctrl      L-ctrl-2    L-etcd-1    L-etcd-2    L-etcd-3    L-node-1    L-node-2   (L-outside .254)
#  .2:8080     .3:8080     .231        .232        .233        .11         .12
#  ctrl-1      ctrl-2      etcd        etcd        etcd        weft-agent  weft-agent
#     \___________\____ --store etcd://.231:2379,.232:2379,.233:2379      |           |
#                                                                  L-pod-ha-p1  L-pod-ha-p2
#
#   0. up refuses bad --store / --etcd-members / --controllers before it
#      makes anything.
#   1. up --nodes 2 --store etcd --etcd-members 3 --controllers 2; status -o
#      json: 3 members, all running, exactly one leader (etcd's own word);
#      2 controllers whose PIDs run in their namespaces; plain status too.
#   2. one API: both answer /healthz with ctrl-1's CA and token; a
#      namespace made through ctrl-1 is read through ctrl-2 and the other
#      way round; the nodes registered; pods on both nodes ping each other.
#   3. etcd stop <leader> (SIGTERM): another member leads; writes through
#      both controllers succeed; etcd start: it is healthy again and has the
#      writes made while it was down.
#   4. etcd partition etcd-1, the member every controller asks first: it
#      runs on, one of the others leads, both see it unhealthy; writes
#      through both controllers succeed and each reads the other's (their
#      client leaves the silent member for the next); heal: every member
#      healthy, the healed one has the writes.
#   5. controller stop ctrl-2 --kill: status says stopped, ctrl-1 serves;
#      controller start ctrl-2: running, and it sees what ctrl-1 wrote.
#   6. down: no namespace, process or directory of the lab is left.
#   7. an up --store etcd whose controller cannot start fails with its
#      members running; down of that half-built lab removes them too.
#
# Needs etcd and etcdctl (Debian's etcd-server and etcd-client) and a
# weft-controller with the etcd back-end.  L is t<pid>-ha, so a demo lab
# ("weft") is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-ha
L=$LAB
BAD=t$$-hx			# the refusals' lab (never made), then the half-built one (7.)
STATE_DIR=/run/weft-lab/$LAB
STATE=$STATE_DIR/state.json
CA=$STATE_DIR/ctrl/pki/ca.crt
TOKEN=$STATE_DIR/ctrl/admin.token
ELECT_S=30			# bound for an election, a rejoin, a controller's failover

need_lab
for t in etcd etcdctl; do
	command -v $t >/dev/null || { fail "prerequisites" "$t is not installed (Debian: etcd-server, etcd-client)"; finish; exit 1; }
done
trap 'lab_cleanup "$BAD"' EXIT
trap 'exit 130' INT TERM

# fails_saying WANT CMD...: CMD fails and its output contains WANT
fails_saying() {
	local want=$1 out; shift
	if out=$("$@" 2>&1); then echo "succeeded: $out"; return 1; fi
	grep -qF -- "$want" <<<"$out" || { echo "message was: $out"; return 1; }
}
jq_status() { status_json | jq -e "$@" >/dev/null; }		# jq_status [--arg ..] FILTER
gone() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; s=${s##*) }; [ "${s%% *}" = Z ]; }
running_in() { [ -n "$1" ] && ! gone "$1" && test "$(ip netns identify "$1")" = "$2"; }	# running_in PID NETNS

# the lab's controllers and members: ctrl-K at .(1+K), etcd-M at .(230+M)
ctrl_ns() { if [ "$1" = 1 ]; then echo "$LAB-ctrl"; else echo "$LAB-ctrl-$1"; fi; }
ctrl_url() { echo "https://192.168.200.$((1 + $1)):8080"; }
etcd_url() { echo "http://192.168.200.$((230 + ${1#etcd-})):2379"; }

# api_on K METHOD PATH [BODY]: the admin's request to ctrl-K, from its
# namespace, trusting ctrl-1's CA (every controller has it); prints the
# body, then the HTTP code on the last line
api_on() {
	local k=$1 m=$2 p=$3 body=${4:-} args
	args=(-s -m 10 --cacert "$CA" -X "$m" -H @- -w '\n%{http_code}\n')
	[ -z "$body" ] || args+=(-H 'Content-Type: application/json' --data-binary "$body")
	printf 'Authorization: Bearer %s\n' "$(cat "$TOKEN")" |
		ip netns exec "$(ctrl_ns "$k")" curl "${args[@]}" "$(ctrl_url "$k")$p" || { echo; echo 000; }
}
code_on() { api_on "$@" | code_of; }
healthz() { ip netns exec "$(ctrl_ns "$1")" curl -sf -m 2 --cacert "$CA" "$(ctrl_url "$1")/healthz" >/dev/null; }
ns_body() { jq -nc --arg n "$1" '{apiVersion: "v1", kind: "Namespace", metadata: {name: $n}}'; }
# make_ns K NAME: POST Namespace NAME through ctrl-K: 201
make_ns() { local c; c=$(code_on "$1" POST /api/v1/namespaces "$(ns_body "$2")"); [ "$c" = 201 ] || { echo "POST through ctrl-$1: $c"; return 1; }; }
has_ns() { test "$(code_on "$1" GET "/api/v1/namespaces/$2")" = 200; }	# has_ns K NAME
# write_through K NAME: the first POST may meet the store between leaders:
# a failure is retried (wait_for), a 409 means an earlier try got in
write_through() { local c; c=$(code_on "$1" POST /api/v1/namespaces "$(ns_body "$2")"); [ "$c" = 201 ] || [ "$c" = 409 ]; }

# leaders: the members that say they lead (status -o json), one a line
leaders() { status_json | jq -r '.etcd[] | select(.leader) | .name'; }
one_leader() { test "$(leaders | wc -l)" = 1; }
# new_leader OLD: exactly one member leads, and it is not OLD
new_leader() { local l; l=$(leaders); [ "$(wc -l <<<"$l")" = 1 ] && [ -n "$l" ] && [ "$l" != "$1" ]; }
# health_from M: etcdctl endpoint health --cluster from etcd-M's namespace,
# as JSON [{endpoint, health}] (every member's client URL, from the member list)
health_from() {
	lab exec "$1" etcdctl --endpoints "$(etcd_url "$1")" --command-timeout 3s endpoint health --cluster -w json 2>/dev/null
	return 0
}
# sees M WANT-HEALTHY WANT-UNHEALTHY: from M, exactly these endpoints are (un)healthy
sees() {
	local h; h=$(health_from "$1")
	jq -e --arg ok "$2" --arg bad "$3" '
		([.[] | select(.health) | .endpoint] | sort | join(" ")) == ($ok | split(" ") | map(select(. != "")) | sort | join(" ")) and
		([.[] | select(.health | not) | .endpoint] | sort | join(" ")) == ($bad | split(" ") | map(select(. != "")) | sort | join(" "))' \
		<<<"${h:-null}" >/dev/null 2>&1 || { echo "from $1: ${h:-no answer}"; return 1; }
}
# member_has M NAME: etcd-M's own copy of the store (a serializable read of
# its endpoint alone) has a key naming NAME
member_has() {
	lab exec "$1" etcdctl --endpoints "$(etcd_url "$1")" --command-timeout 3s get "" --prefix --keys-only --consistency=s 2>/dev/null |
		grep -q -- "$2"
}
# leads_besides P: exactly one member other than P leads (P, cut off,
# may still call itself leader until it notices it has lost its quorum)
leads_besides() { test "$(status_json | jq --arg p "$1" '[.etcd[] | select(.leader and .name != $p)] | length')" = 1; }
member_list_started() { test "$(lab exec etcd-1 etcdctl member list | grep -cE ', started, etcd-[123], ')" = 3; }
ctrl1_is_controller_pid() { test "$(ctrl_pid ctrl-1)" = "$(jq -r .controllerPid "$STATE")"; }
nodes_via() { api_on "$1" GET /api/v1/nodes | body_of | jq -e '.items | length == 2' >/dev/null; }	# nodes_via K: ctrl-K lists both
no_healthz() { ! healthz "$1"; }
link_down() { ! ip -n "$LAB-$1" -o link show dev eth0 | grep -q 'state UP'; }
route_back() { ip -n "$LAB-$1" -4 route show dev eth0 | grep -q '^192\.168\.200\.0/24'; }
alone_unhealthy() { ! lab exec "$1" etcdctl --command-timeout 3s endpoint health >/dev/null 2>&1; }	# its own view
member_pid() { status_json | jq -r --arg n "$1" '.etcd[] | select(.name == $n) | .pid // empty'; }
ctrl_pid() { status_json | jq -r --arg n "$1" '.controllers[] | select(.name == $n) | .pid // empty'; }

ALL_URLS="$(etcd_url 1) $(etcd_url 2) $(etcd_url 3)"
others() { local m; for m in etcd-1 etcd-2 etcd-3; do [ "$m" = "$1" ] || echo "$m"; done; }	# others M: the other members
urls_but() { local u out=""; for u in $ALL_URLS; do [ "$u" = "$(etcd_url "$1")" ] || out+="$u "; done; echo "$out"; }

# ---------------------------------------------------------------- 0. refusals
echo "# 0. up refuses what it cannot make, before making anything"
bad_up() { src/lab/weft-lab --lab "$BAD" up --nodes 1 "$@"; }
check "--controllers 2 on sqlite is refused" fails_saying "several controllers need --store etcd" bad_up --controllers 2
check "--etcd-members without --store etcd is refused" fails_saying "only with --store etcd" bad_up --etcd-members 3
check "--etcd-members 8 is refused" fails_saying "--etcd-members '8': expected a number of etcd members from 1 to 7" bad_up --store etcd --etcd-members 8
check "--controllers 6 is refused" fails_saying "--controllers '6': expected a number of controllers from 1 to 5" bad_up --store etcd --controllers 6
check "--controllers 0 is refused" fails_saying "--controllers '0'" bad_up --store etcd --controllers 0
check "--store bolt is refused" fails_saying "--store 'bolt': expected sqlite or etcd" bad_up --store bolt
check "... and none of them made anything" test ! -e "/run/weft-lab/$BAD" -a -z "$(ip netns list | awk '{print $1}' | grep -E "^$BAD-" || true)"

# ---------------------------------------------------------------- 1. up, status
echo "# 1. up --nodes 2 --store etcd --etcd-members 3 --controllers 2"
must lab up --nodes 2 --store etcd --etcd-members 3 --controllers 2
pass "up --nodes 2 --store etcd --etcd-members 3 --controllers 2"
check "status -o json: store is the three members' client URLs" \
	jq_status '.store == "etcd://192.168.200.231:2379,192.168.200.232:2379,192.168.200.233:2379"'
check "status -o json: three members etcd-1..3 at .231-.233, running, not partitioned" jq_status --arg l "$LAB" '
	[.etcd[] | [.name, .netns, .url, .running, .partitioned, (.pid | type)]] ==
	[["etcd-1", "\($l)-etcd-1", "http://192.168.200.231:2379", true, false, "number"],
	 ["etcd-2", "\($l)-etcd-2", "http://192.168.200.232:2379", true, false, "number"],
	 ["etcd-3", "\($l)-etcd-3", "http://192.168.200.233:2379", true, false, "number"]]'
check "... exactly one leader" wait_for $ELECT_S one_leader
check "status -o json: two controllers, ctrl-1 where the one controller always is" jq_status --arg l "$LAB" '
	[.controllers[] | [.name, .netns, .url, .running]] ==
	[["ctrl-1", "\($l)-ctrl", "https://192.168.200.2:8080", true], ["ctrl-2", "\($l)-ctrl-2", "https://192.168.200.3:8080", true]]
	and .controller.url == "https://192.168.200.2:8080" and .controller.netns == "\($l)-ctrl"'
for m in etcd-1 etcd-2 etcd-3; do
	check "$m's PID runs in $LAB-$m" running_in "$(member_pid $m)" "$LAB-$m"
done
check "ctrl-1's PID runs in $LAB-ctrl" running_in "$(ctrl_pid ctrl-1)" "$LAB-ctrl"
check "... and is state.json's controllerPid, as always" ctrl1_is_controller_pid
check "ctrl-2's PID runs in $LAB-ctrl-2" running_in "$(ctrl_pid ctrl-2)" "$LAB-ctrl-2"
check "every PID is in state.json's procs" jq -e --argjson p "$(status_json | jq -c '[.etcd[].pid, .controllers[].pid]')" \
	'[.procs[].pid] as $have | all($p[]; . as $x | $have | index($x))' "$STATE"
plain=$(lab status)
check "plain status lists the controllers" grep -qE "^ctrl-2 +$LAB-ctrl-2 +https://192\.168\.200\.3:8080 +pid [0-9]+ \(running\)" <<<"$plain"
check "plain status lists the members, one leader" \
	test "$(grep -cE "^etcd-[123] +$LAB-etcd-[123] +http://192\.168\.200\.23[123]:2379 +pid [0-9]+ \(running\) +(leader|follower)$" <<<"$plain"):$(grep -cE ' leader$' <<<"$plain")" = 3:1
check "etcd's member list has the three members, started" member_list_started
check "etcd partition without a member is refused" fails_saying "etcd partition: which member? (lab '$LAB' has: etcd-1 etcd-2 etcd-3)" lab etcd partition
check "etcd stop etcd-9 is refused" fails_saying "etcd stop: unknown etcd member 'etcd-9'" lab etcd stop etcd-9
check "etcd start --kill is refused" fails_saying "etcd start: unexpected argument '--kill'" lab etcd start etcd-1 --kill
check "controller stop ctrl-3 is refused" fails_saying "controller stop: unknown controller 'ctrl-3' (lab '$LAB' has: ctrl-1 ctrl-2)" lab controller stop ctrl-3
check "every member healthy, seen from etcd-1" sees etcd-1 "$ALL_URLS" ""

# ---------------------------------------------------------------- 2. one API
echo "# 2. two controllers, one API"
check "ctrl-1 answers /healthz (ctrl-1's CA)" healthz 1
check "ctrl-2 answers /healthz (ctrl-1's CA: it has the cluster's CA)" healthz 2
check "ctrl-2 takes ctrl-1's admin token" test "$(code_on 2 GET /api/v1/namespaces)" = 200
check "namespace ha-one made through ctrl-1" make_ns 1 ha-one
check "... ctrl-2 reads it" has_ns 2 ha-one
check "namespace ha-two made through ctrl-2" make_ns 2 ha-two
check "... ctrl-1 reads it" has_ns 1 ha-two
check "... a second POST of it through ctrl-1 is a conflict (one store)" test "$(code_on 1 POST /api/v1/namespaces "$(ns_body ha-two)")" = 409
check "both nodes registered (status: subnets)" wait_for 20 jq_status '[.nodes[].subnet | select(. != null)] | length == 2'
check "ctrl-2 lists both nodes" nodes_via 2
must lab pod add node-1 ha p1
must lab pod add node-2 ha p2
pass "pod add node-1 ha p1, node-2 ha p2"
ip1=$(pod_ip ha/p1) ip2=$(pod_ip ha/p2)
check "p1 -> p2 across nodes ($ip1 -> $ip2)" wait_for 10 ns ha/p1 ping -c1 -W1 "$ip2"
check "p2 -> p1 across nodes" wait_for 10 ns ha/p2 ping -c1 -W1 "$ip1"
check "a pod cannot reach etcd (its node's masquerade is refused by the members' firewall)" \
	bash -c "! ip netns exec $LAB-pod-ha-p1 curl -s -m 2 http://192.168.200.231:2379/health"
check "... nor can a node" bash -c "! ip netns exec $LAB-node-1 curl -s -m 2 http://192.168.200.231:2379/health"
check "... the controllers can" ip netns exec "$LAB-ctrl" curl -sf -m 2 http://192.168.200.231:2379/health

# ---------------------------------------------------------------- 3. the leader stopped
echo "# 3. etcd stop <the leader>, then start"
old=$(leaders)
opid=$(member_pid "$old")
check "etcd stop $old (the leader)" lab etcd stop "$old"
check "... its process (pid $opid) is gone" gone "$opid"
check "... status: pid null, not running, not leader" jq_status --arg n "$old" \
	'.etcd[] | select(.name == $n) | .pid == null and .running == false and .leader == false'
check "... state.json's procs forgot it" jq -e --argjson p "$opid" 'all(.procs[]; .pid != $p)' "$STATE"
check "another member leads" wait_for $ELECT_S new_leader "$old"
mapfile -t rest < <(others "$old")
check "... the two others are healthy, $old is not, seen from ${rest[0]}" wait_for $ELECT_S sees "${rest[0]}" "$(urls_but "$old")" "$(etcd_url "$old")"
check "a write through ctrl-1 succeeds (namespace ha-down1)" wait_for $ELECT_S write_through 1 ha-down1
check "a write through ctrl-2 succeeds (namespace ha-down2)" wait_for $ELECT_S write_through 2 ha-down2
check "... ctrl-1 reads ctrl-2's" has_ns 1 ha-down2
check "... ctrl-2 reads ctrl-1's" has_ns 2 ha-down1
check "etcd start $old" lab etcd start "$old"
npid=$(member_pid "$old")
check "... a new process (pid $npid) runs in $LAB-$old" running_in "$npid" "$LAB-$old"
check "... every member is healthy again, seen from ${rest[0]}" wait_for $ELECT_S sees "${rest[0]}" "$ALL_URLS" ""
check "... $old has the writes made while it was down (its own copy)" wait_for $ELECT_S member_has "$old" ha-down2
check "... still exactly one leader" wait_for $ELECT_S one_leader

# ---------------------------------------------------------------- 4. the leader partitioned
echo "# 4. etcd partition etcd-1 (first in every controller's --store), then heal"
part=etcd-1
ppid=$(member_pid "$part")
mapfile -t rest < <(others "$part")
check "etcd partition $part ($([ "$(leaders)" = "$part" ] && echo "the leader" || echo "a follower"))" lab etcd partition "$part"
check "... its process runs on (pid $ppid)" running_in "$ppid" "$LAB-$part"
check "... status: partitioned, running" jq_status --arg n "$part" '.etcd[] | select(.name == $n) | .partitioned and .running'
check "... its eth0 is down in its namespace" link_down "$part"
check "another member leads" wait_for $ELECT_S leads_besides "$part"
check "${rest[0]} sees $part unhealthy, the others healthy" wait_for $ELECT_S sees "${rest[0]}" "$(urls_but "$part")" "$(etcd_url "$part")"
check "... and so does ${rest[1]}" wait_for $ELECT_S sees "${rest[1]}" "$(urls_but "$part")" "$(etcd_url "$part")"
check "... $part is not healthy itself (no quorum on its side)" alone_unhealthy "$part"
check "a write through ctrl-1 succeeds (namespace ha-part1)" wait_for $ELECT_S write_through 1 ha-part1
check "a write through ctrl-2 succeeds (namespace ha-part2)" wait_for $ELECT_S write_through 2 ha-part2
check "... ctrl-1 reads ctrl-2's" wait_for $ELECT_S has_ns 1 ha-part2
check "... ctrl-2 reads ctrl-1's" wait_for $ELECT_S has_ns 2 ha-part1
check "etcd heal $part" lab etcd heal "$part"
check "... status: not partitioned" jq_status --arg n "$part" '.etcd[] | select(.name == $n) | .partitioned == false'
check "... its address and route are back" route_back "$part"
check "... every member healthy, seen from ${rest[0]}" wait_for $ELECT_S sees "${rest[0]}" "$ALL_URLS" ""
check "... and from $part" wait_for $ELECT_S sees "$part" "$ALL_URLS" ""
check "... $part has the writes made while it was cut off (its own copy)" wait_for $ELECT_S member_has "$part" ha-part2
check "... the same process all along (pid $ppid)" running_in "$ppid" "$LAB-$part"
check "... exactly one leader" wait_for $ELECT_S one_leader

# ---------------------------------------------------------------- 5. a controller killed
echo "# 5. controller stop ctrl-2 --kill, then start"
c2=$(ctrl_pid ctrl-2)
out=$(lab controller stop ctrl-2 --kill 2>&1)
check "controller stop ctrl-2 --kill says so" grep -q "controller ctrl-2: stopped (pid $c2, SIGKILL)" <<<"$out"
check "... it is gone" gone "$c2"
check "... status: ctrl-2 pid null, not running; ctrl-1 running" \
	jq_status '[.controllers[] | [.name, .pid, .running]] as $c | $c[1] == ["ctrl-2", null, false] and $c[0][2] == true'
check "... plain status says none" grep -qE "^ctrl-2 +$LAB-ctrl-2 +https://192\.168\.200\.3:8080 +none" <<<"$(lab status)"
check "... ctrl-2 answers nothing" no_healthz 2
check "... ctrl-1 still writes (namespace ha-solo)" make_ns 1 ha-solo
check "controller start ctrl-2" lab controller start ctrl-2
c2n=$(ctrl_pid ctrl-2)
check "... status: running, a new pid ($c2n)" jq_status --argjson p "${c2n:-0}" --argjson o "$c2" \
	'.controllers[1] | .running and .pid == $p and .pid != $o'
check "... it runs in $LAB-ctrl-2" running_in "$c2n" "$LAB-ctrl-2"
check "... it sees what ctrl-1 wrote meanwhile" has_ns 2 ha-solo
out=$(lab controller stop --kill 2>&1)
check "controller stop --kill (no name) still means ctrl-1" grep -q '^controller ctrl-1: stopped' <<<"$out"
check "... ctrl-2 serves alone" make_ns 2 ha-alone
for n in node-1 node-2; do
	check "... $n's agent resumed its watches on ctrl-2 from its last revision" \
		wait_for 20 grep -qE 'warn: watch .*resuming from revision' "$STATE_DIR/$n/agent.log"
done
check "... p1 -> p2 still across nodes" wait_for 10 ns ha/p1 ping -c1 -W1 "$ip2"
check "... a pod added on node-2 while ctrl-1 is dead (its agent reports it to ctrl-2)" lab pod add node-2 ha p3
ip3=$(pod_ip ha/p3)
check "... p1 -> p3 across nodes ($ip1 -> ${ip3:-none}): node-1 learnt p3 through ctrl-2" \
	wait_for 10 ns ha/p1 ping -c1 -W1 "${ip3:-192.0.2.1}"
check "controller start ctrl-1" lab controller start ctrl-1
check "... ctrl-1 sees it" has_ns 1 ha-alone

# ---------------------------------------------------------------- 6. down
echo "# 6. down"
pids=$(jq -r '.procs[].pid' "$STATE")
epids=$(jq -r '.etcd[].pid // empty' "$STATE")
check "down" lab down
check "... no namespace of the lab is left" test -z "$(ip netns list | awk '{print $1}' | grep -E "^$LAB-" || true)"
alive=""
for p in $pids $epids; do gone "$p" || alive+=" $p"; done
check "... no process of the lab is left (etcd members:$(tr '\n' ' ' <<<" $epids"))" test -z "$alive"
check "... nothing runs on the lab's data dirs" test -z "$(pgrep -f -- "--data-dir $STATE_DIR/" || true)"
check "... $STATE_DIR is gone (the etcd data dirs with it)" test ! -e "$STATE_DIR"

# ---------------------------------------------------------------- 7. a half-built lab
echo "# 7. an up whose controller dies, with its etcd running; down"
fake=$(tmpdir)
printf '#!/bin/sh\necho "fake controller: cannot start" >&2\nexit 3\n' >"$fake/weft-controller"
chmod +x "$fake/weft-controller"
ln -s "$(cd "$WEFT_BIN" && pwd)/weftctl" "$fake/weftctl"
check "up --store etcd --etcd-members 1 whose controller dies fails, pointing at its log" \
	fails_saying "/run/weft-lab/$BAD/controller.log" env WEFT_BIN="$fake" src/lab/weft-lab --lab "$BAD" up --nodes 1 --no-agents --store etcd --etcd-members 1
bpid=$(jq -r '.etcd[0].pid // empty' "/run/weft-lab/$BAD/state.json" 2>/dev/null)
check "... its etcd-1 runs (pid ${bpid:-none}) in $BAD-etcd-1" running_in "$bpid" "$BAD-etcd-1"
check "down of the half-built lab" src/lab/weft-lab --lab "$BAD" down
check "... stopped its etcd-1" gone "${bpid:-0}"
check "... removed its namespaces" test -z "$(ip netns list | awk '{print $1}' | grep -E "^$BAD-" || true)"
check "... and its directory" test ! -e "/run/weft-lab/$BAD"
finish
