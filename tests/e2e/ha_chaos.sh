#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# ha_chaos.sh — the controllers in HA on etcd under churn and faults, over
# and over, then everything checked against what the clients were told.
#
#   L-outside: 3 churn clients (tests/tools/churn.py) create and delete
#              Namespaces, Services, Nodes and Pods through both
#              controllers; 2 watchers (tests/tools/watch_log.py) follow
#              the Namespaces, resuming on the other controller when a
#              stream breaks
#   L-ctrl, L-ctrl-2: ctrl-1, ctrl-2 ── etcd-1, etcd-2, etcd-3 (L-etcd-*)
#   L-node-1, L-node-2: agents given both controllers; pod chaos/a on
#              node-1 pings chaos/b on node-2 all along
#
#   faults, in turn, until the churn stops (each waits for the churn to
#   move on before the next):
#     SIGKILL a controller (ctrl-1 and ctrl-2 by turns), start it again
#     SIGKILL the etcd leader, start it again
#     partition an etcd member, heal it
#
#   at the end (tests/tools/chaos_check.py, and here):
#     every acknowledged write is there, nothing refused appears (a write
#       whose answer was lost may be either: counted)
#     no allocation is lost or shared (VNIDs, cluster IPs, node IDs, subnets)
#     every watcher saw its events in revision order, none twice, and
#       replaying them gives the final Namespaces (a list after 410 allowed)
#     fsck of the store is clean
#     every agent's watches are live and caught up: what is made after the
#       churn reaches both nodes' maps
#     the pods kept talking: no ping lost while controllers and members died
#
# Lab t<pid>-hc, so another lab is not touched.  CHAOS_ROUNDS (default 3)
# rounds of the three faults; the churn runs until they are done (at most
# 300 s).
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-hc
L=$LAB
ROUNDS=${CHAOS_ROUNDS:-3}
need_lab
command -v etcd >/dev/null || { fail "etcd is installed (scripts/deps.sh installs etcd-server)"; finish; exit 1; }
trap 'lab_cleanup' EXIT

must lab up --nodes 2 --mode multitenant --store etcd --etcd-members 3 --controllers 2
LD=/run/weft-lab/$L
CA=$LD/ctrl/pki/ca.crt
TOKEN=$LD/ctrl/admin.token
URLS=https://192.168.200.2:8080,https://192.168.200.3:8080
dir=$(tmpdir)
must lab pod add node-1 chaos a
must lab pod add node-2 chaos b
ipb=$(pod_ip chaos/b)
check "chaos/a reaches chaos/b across nodes before the chaos" wait_for 10 ns chaos/a ping -c1 -W1 "$ipb"

out_py() { ip netns exec "$L-outside" /usr/bin/python3 "$@"; }
ip netns exec "$(netns chaos/a)" ping -i 0.2 -W 1 "$ipb" >"$dir/ping.log" 2>&1 &	# ping itself: its PID gets the SIGINT
ping_pid=$!
T_PIDS+=("$ping_pid")
wpids=()
for w in 1 2; do
	out_py tests/tools/watch_log.py "$URLS" "$TOKEN" "$CA" "$dir/watch-$w.log" chaos-stop &
	wpids+=($!); T_PIDS+=($!)
done
cpids=()
for c in 1 2 3; do
	out_py tests/tools/churn.py "$URLS" "$TOKEN" "$CA" "$dir/churn-$c.log" 300 "$c" "$dir/stop" &
	cpids+=($!); T_PIDS+=($!)
done

churning() { local p; for p in "${cpids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
writes() { cat "$dir"/churn-*.log 2>/dev/null | wc -l; }
moved_on() { [ "$(writes)" -ge "$1" ] || ! churning; }	# moved_on N: N writes logged, or the churn is over
leader() { lab status -o json | jq -r '[.etcd[] | select(.leader) | .name] | if length == 1 then .[0] else empty end'; }
faults=0; kills=0; leader_kills=0; partitions=0
round=0
while churning && [ "$round" -lt $((3 * ROUNDS)) ]; do
	wait_for 30 moved_on $(( $(writes) + 40 )) || true
	churning || break
	case $((round % 3)) in
	0)
		victim=ctrl-$(( (round / 3) % 2 + 1 ))
		lab controller stop "$victim" --kill >/dev/null && kills=$((kills + 1))
		wait_for 30 moved_on $(( $(writes) + 20 )) || true
		lab controller start "$victim" >/dev/null || fail "controller start $victim after its kill"
		;;
	1)
		lead=$(leader)
		if [ -n "$lead" ]; then
			lab etcd stop "$lead" --kill >/dev/null && leader_kills=$((leader_kills + 1))
			wait_for 30 moved_on $(( $(writes) + 20 )) || true
			lab etcd start "$lead" >/dev/null || fail "etcd start $lead after its kill"
		fi
		;;
	2)
		member=etcd-$(( (round / 3) % 3 + 1 ))
		lab etcd partition "$member" >/dev/null && partitions=$((partitions + 1))
		wait_for 30 moved_on $(( $(writes) + 20 )) || true
		lab etcd heal "$member" >/dev/null || fail "etcd heal $member"
		;;
	esac
	faults=$((faults + 1))
	round=$((round + 1))
done
wait_for 30 moved_on $(( $(writes) + 40 )) || true	# the churn goes on after the last fault too
touch "$dir/stop"
for p in "${cpids[@]}"; do wait "$p"; done
echo "  $faults faults injected: $kills controller SIGKILLs, $leader_kills etcd leader SIGKILLs, $partitions partitions; $(writes) writes"
check "$ROUNDS faults of each kind were injected, the churn running" test "$kills" -ge "$ROUNDS" -a "$leader_kills" -ge "$ROUNDS" -a "$partitions" -ge "$ROUNDS"

# every member back, one leader; then the sentinel ends the watchers
check "etcd has one leader again" wait_for 30 test -n "$(leader)"
api_on() { # api_on METHOD PATH [curl args]: through whichever controller answers
	local url
	for url in ${URLS//,/ }; do
		ip netns exec "$L-ctrl" curl -sf -m 10 --cacert "$CA" -X "$1" -H "Authorization: Bearer $(cat "$TOKEN")" \
			-H 'Content-Type: application/json' "${@:3}" "$url$2" && return 0
	done
	return 1
}
check "the sentinel namespace chaos-stop" api_on POST /api/v1/namespaces \
	-d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"chaos-stop"}}'
for p in "${wpids[@]}"; do
	if wait_for 60 bash -c "! kill -0 $p 2>/dev/null"; then wait "$p"; else fail "watcher $p saw chaos-stop within 60 s"; fi
done
for k in namespaces services nodes pods; do
	api_on GET "/api/v1/$k" >"$dir/final-$k.json" || fail "list $k at the end"
done
for k in netnamespaces hostsubnets; do
	api_on GET "/apis/network.openshift.io/v1/$k" >"$dir/final-$k.json" || fail "list $k at the end"
done
while read -r verdict text; do
	case $verdict in
	ok) pass "$text" ;;
	FAIL) fail "$text" ;;
	*) echo "$verdict $text" ;;
	esac
done < <(/usr/bin/python3 tests/tools/chaos_check.py "$dir")

check "fsck of the etcd store is clean" ip netns exec "$L-ctrl" "$WEFT_BIN/weft-controller" \
	--data-dir "$LD/ctrl" --store "$(lab status -o json | jq -r .store)" --fsck
# the agents caught up: a NetNamespace (chaos-stop's) and a Service made
# after the churn reach both nodes' maps, so each agent's watches of those
# kinds are live and have applied everything before them, in order
nsrev=$(api_on GET /apis/network.openshift.io/v1/netnamespaces/chaos-stop | jq -r .metadata.resourceVersion)
svcrev=$(api_on POST /api/v1/namespaces/default/services \
	-d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"chaos-final"},"spec":{"ports":[{"port":80}]}}' |
	jq -r .metadata.resourceVersion)
applied_all() { # both nodes applied NetNamespaces up to $nsrev and Services up to $svcrev
	api_on GET /api/v1/nodes | jq -e --argjson n "${nsrev:-0}" --argjson s "${svcrev:-0}" '[.items[] |
		select(.metadata.name | test("^node-[0-9]+$")) | .metadata.annotations["weft.io/applied-revisions"] // "{}" |
		fromjson | (.netnamespaces // 0) >= $n and (.services // 0) >= $s] | length == 2 and all' >/dev/null
}
check "both agents applied the NetNamespace and Service made after the churn (revisions $nsrev, $svcrev)" \
	wait_for 60 applied_all

kill -INT "$ping_pid"; wait "$ping_pid"
sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$dir/ping.log")
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$dir/ping.log")
echo "  chaos/a -> chaos/b: ${got:-?} of ${sent:-?} pings answered"
check "the pods kept talking: at most one ping of ${sent:-?} lost (the one in flight at the end)" \
	test -n "$sent" -a -n "$got" -a "$(( ${sent:-0} - ${got:-0} ))" -le 1 -a "${sent:-0}" -gt 50
finish
