#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# lab_faults.sh — weft-lab's fault verbs act at once while the lab is busy.
# With a burst of pod adds in flight on node-1, `agent stop --kill` and
# `controller stop --kill` return with the daemon already gone while adds
# are still in flight (they do not queue for state.json's lock behind the
# adds); then the lab converges: every add succeeded or failed with an
# error, status lists only pods that have their netns and IP, and `agent
# start` / `controller start` work.
#
#                    L-underlay: bridge br0
#        +---------------+----------------+
#     L-ctrl          L-outside        L-node-1 (.11)
#     controller                       agent  <- SIGKILL mid-burst, then start
#     <- SIGKILL mid-burst, then start   |
#                                  L-pod-fa-p1 ... L-pod-fa-pN   (burst 1)
#                                  L-pod-fc-p1 ... L-pod-fc-pN   (burst 2)
#
#   1. N pod adds at once (namespace fa); as soon as one is in flight:
#      agent stop --kill node-1.  When it returns the agent is gone,
#      state.json has forgotten it, and adds are still in flight.
#   2. agent start; the burst ends; each add is ready (netns, IP on eth0)
#      or failed with an error, leaving no record and no netns; a pod add
#      works again.
#   3. the same with controller stop --kill (namespace fc); after
#      controller start the agent reports the burst's pods.
#
# Order, not time, shows "at once".  When the verb has returned, the
# daemon is gone and state.json says so, while adds of the burst are still
# running, and some have not even recorded their pod yet: those were
# queued for state.json's lock before the verb's record, and the verb did
# not wait for them (before the fix it waited for every one, 40 s).
# L is t<pid>-lf, so a demo lab ("weft") is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-lf
L=$LAB
STATE_DIR=/run/weft-lab/$LAB
STATE=$STATE_DIR/state.json
N=36		# pod adds in one burst
DONE_S=300	# bound for a burst to end (36 ADDs on a loaded 2-CPU machine, sanitizer builds)

# gone PID: exited (absent, or a zombie its parent has not reaped yet)
gone() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; s=${s##*) }; [ "${s%% *}" = Z ]; }
agent_pid() { jq -r '.nodes[0].agentPid // empty' "$STATE"; }
ctrl_pid() { jq -r '.controllerPid // empty' "$STATE"; }

need_lab

WORK=$(tmpdir)
BURST=()	# the adds' PIDs; each leads its own process group (setsid)
faults_cleanup() {
	local p
	for p in "${BURST[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
	for p in "${BURST[@]}"; do wait "$p" 2>/dev/null; done
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1
	t_cleanup
}
trap faults_cleanup EXIT
trap 'exit 130' INT TERM

# burst NS: start N `pod add node-1 NS pI` at once, each in a process group
# of its own (so cleanup ends whatever it started); WORK/NS.I.out gets its
# output and WORK/NS.I.rc its exit code when it ends
burst() {
	local i
	for ((i = 1; i <= N; i++)); do
		setsid bash -c 'src/lab/weft-lab --lab "$1" pod add node-1 "$2" "$3" >"$4.out" 2>&1; echo $? >"$4.rc"' \
			_ "$LAB" "$1" "p$i" "$WORK/$1.$i" &
		BURST+=("$!")
	done
}
ended() { find "$WORK" -name "$1.*.rc" | wc -l; }			# ended NS: adds of NS that ended
all_ended() { [ "$(ended "$1")" -eq $N ]; }
recorded() { jq -e --arg ns "$1" 'any(.pods[]; .namespace == $ns)' "$STATE" >/dev/null; }	# a pod of NS passed reservation

# not_started NS: how many adds of NS have left no trace yet: no record in
# state.json, no output, not ended.  state.json is read first: a failed add
# drops its record and then prints why, so an add whose record went before
# the read has printed by the time its files are looked at.
not_started() {
	local names i n=0
	names=$(jq -r --arg ns "$1" '.pods[] | select(.namespace == $ns) | .name' "$STATE")
	for ((i = 1; i <= N; i++)); do
		[ -e "$WORK/$1.$i.rc" ] || [ -s "$WORK/$1.$i.out" ] || grep -qx "p$i" <<<"$names" || n=$((n + 1))
	done
	echo $n
}

# outcome NS I: "ok" when add I of NS succeeded and its pod is whole (listed
# by status with an IP that is on eth0 of its netns), "failed" when it failed
# saying why and left no record, netns or pod dir; else what is wrong
outcome() {
	local ns=$1 i=$2 rc out ip netns=$LAB-pod-$1-p$2
	rc=$(cat "$WORK/$ns.$i.rc") out=$(cat "$WORK/$ns.$i.out")
	if [ "$rc" = 0 ]; then
		ip=$(pod_ip "$ns/p$i")
		if [ -z "$ip" ] || [ "$ip" = null ]; then echo "$ns/p$i: exit 0 but status lists no IP"; return; fi
		ip netns exec "$netns" ip -4 -o addr show dev eth0 2>/dev/null | grep -q "inet $ip/" ||
			{ echo "$ns/p$i: exit 0 but $ip is not on eth0 of $netns"; return; }
		echo ok
	else
		grep -q "^weft-lab: pod add $ns/p$i" <<<"$out" || { echo "$ns/p$i: exit $rc without an error naming it: $out"; return; }
		jq -e --arg ns "$ns" --arg n "p$i" 'all(.pods[]; .namespace != $ns or .name != $n)' "$STATE" >/dev/null ||
			{ echo "$ns/p$i: failed but state.json still has it"; return; }
		[ ! -e "/run/netns/$netns" ] || { echo "$ns/p$i: failed but $netns is left"; return; }
		[ ! -e "$STATE_DIR/pods/$ns.p$i" ] || { echo "$ns/p$i: failed but its pod dir is left"; return; }
		echo failed
	fi
}

# burst_clean NS: every add of NS is ok or failed (above); prints the counts
burst_clean() {
	local i o ok=0 failed=0
	for ((i = 1; i <= N; i++)); do
		o=$(outcome "$1" "$i")
		case $o in
		ok) ok=$((ok + 1)) ;;
		failed) failed=$((failed + 1)) ;;
		*) echo "$o"; return 1 ;;
		esac
	done
	echo "$ok ok, $failed failed"
}

# lab_consistent: state.json and status agree with the system: every pod
# recorded is ready, every pod listed has an IP on eth0 of its netns, and
# every netns recorded exists
lab_consistent() {
	local s
	jq -e 'all(.pods[]; .ready)' "$STATE" >/dev/null || { echo "state.json has pods that are not ready: $(jq -c '[.pods[] | select(.ready | not) | .name]' "$STATE")"; return 1; }
	s=$(status_json) || return 1
	jq -r '.pods[] | [.netns, (.ip // "")] | @tsv' <<<"$s" | while IFS=$'\t' read -r netns ip; do
		[ -n "$ip" ] || { echo "status lists $netns without an IP"; exit 1; }
		ip netns exec "$netns" ip -4 -o addr show dev eth0 2>/dev/null | grep -q "inet $ip/" ||
			{ echo "status lists $netns with $ip, which is not on its eth0"; exit 1; }
	done || return 1
	jq -r '.netns[]' "$STATE" | while read -r n; do
		[ -e "/run/netns/$n" ] || { echo "state.json records netns $n, which does not exist"; exit 1; }
	done
}

# ---------------------------------------------------------------- the lab
check "up --nodes 1" lab up --nodes 1
check "pod add node-1 fc p0 (namespace fc exists before its burst)" lab pod add node-1 fc p0

# ---------------------------------------------------------------- 1. agent stop --kill mid-burst
echo "# 1. $N pod adds at once; agent stop --kill node-1 as soon as one is in flight"
apid=$(agent_pid)
burst fa
check "a pod add of the burst is in flight (recorded in state.json)" wait_for 60 recorded fa
lab agent stop node-1 --kill >"$WORK/stop.out" 2>&1
rc=$?
ended_at=$(ended fa) unstarted_at=$(not_started fa) pid_at=$(jq -c '[.nodes[0].agentPid, [.procs[].pid]]' "$STATE")
check "agent stop node-1 --kill succeeded" test $rc -eq 0
check "... says so" grep -q "agent of node-1: stopped (pid $apid, SIGKILL)" "$WORK/stop.out"
check "... when it returned the agent (pid $apid) was gone" gone "$apid"
check "... and state.json had forgotten it (agentPid, procs): $pid_at" \
	jq -e --argjson p "$apid" '.[0] == null and all(.[1][]; . != $p)' <<<"$pid_at"
check "... while the burst was in flight: $ended_at of $N adds had ended" test "$ended_at" -lt $N
check "... $unstarted_at of them not even past their reservation" test "$unstarted_at" -ge 1

check "the burst ends (every add exits within ${DONE_S}s)" wait_for $DONE_S all_ended fa
check "agent start node-1" lab agent start node-1
check "... a new agent runs in $LAB-node-1" test "$(ip netns identify "$(agent_pid)")" = "$LAB-node-1"
out=$(burst_clean fa)
check "every add of the burst is ready or failed cleanly ($out)" burst_clean fa
check "state.json and status match the system" lab_consistent
check "pod add node-1 fa after (works again)" lab pod add node-1 fa after
check "... and it has an IP" grep -qE '^10\.' <<<"$(pod_ip fa/after)"

# ---------------------------------------------------------------- 2. controller stop --kill mid-burst
echo "# 2. $N pod adds at once; controller stop --kill as soon as one is in flight"
cpid=$(ctrl_pid)
burst fc
check "a pod add of the burst is in flight (recorded in state.json)" wait_for 60 recorded fc
lab controller stop --kill >"$WORK/cstop.out" 2>&1
rc=$?
ended_at=$(ended fc) unstarted_at=$(not_started fc) pid_at=$(jq -c '[.controllerPid, [.procs[].pid]]' "$STATE")
check "controller stop --kill succeeded" test $rc -eq 0
check "... says so" grep -q "controller: stopped (pid $cpid, SIGKILL)" "$WORK/cstop.out"
check "... when it returned the controller (pid $cpid) was gone" gone "$cpid"
check "... and state.json had forgotten it (controllerPid, procs): $pid_at" \
	jq -e --argjson p "$cpid" '.[0] == null and all(.[1][]; . != $p)' <<<"$pid_at"
check "... while the burst was in flight: $ended_at of $N adds had ended" test "$ended_at" -lt $N
check "... $unstarted_at of them not even past their reservation" test "$unstarted_at" -ge 1

check "the burst ends (every add exits within ${DONE_S}s)" wait_for $DONE_S all_ended fc
check "controller start" lab controller start
check "... a new controller runs in $LAB-ctrl" test "$(ip netns identify "$(ctrl_pid)")" = "$LAB-ctrl"
out=$(burst_clean fc)
check "every add of the burst is ready or failed cleanly ($out)" burst_clean fc
check "state.json and status match the system" lab_consistent
# the agent reports to the controller when it is back: fc's pods with their IPs
fc_reported() {
	local want got
	want=$(status_json | jq -c '[.pods[] | select(.namespace == "fc") | [.name, .ip]] | sort')
	got=$(lab weftctl get pods -n fc -o json | jq -c '[.items[] | [.metadata.name, .status.podIP]] | sort')
	[ "$want" = "$got" ]
}
check "the controller has every fc pod with its IP (the agent reported them)" wait_for 60 fc_reported
check "agent stop and start still work" bash -c "src/lab/weft-lab --lab $LAB agent restart node-1 --kill"
check "state.json and status still match the system" lab_consistent

# ---------------------------------------------------------------- down
pids=$(jq -r '.procs[].pid' "$STATE")
check "down" lab down
check "down removed every namespace of the lab" test -z "$(ip netns list | awk '{print $1}' | grep -E "^$LAB-" || true)"
alive=""
for p in $pids; do gone "$p" || alive+=" $p"; done
check "down stopped the lab's daemons" test -z "$alive"
finish
