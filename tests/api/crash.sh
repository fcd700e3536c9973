#!/usr/bin/env bash
# crash.sh — SIGKILL the controller in the middle of a stream of node and
# pod writes, restart it on the same data directory, and check that every
# acknowledged write is there, nothing is half-applied (fsck: every node has
# its node ID, IP and HostSubnet; no two share one), and allocation goes on
# from where it was.  Three rounds, killed at different moments.
#
#   api_writer.py ──HTTPS──► weft-controller ──► DIR/weft.db
#                            ▲ kill -9 at a random moment
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
acks=$dir/acks
: > "$acks"
written=0
for round in 1 2 3; do
	start_controller "$dir" || { fail "start round $round"; break; }
	python3 tests/tools/api_writer.py "$CTRL_URL" "$CTRL_TOKEN_FILE" 1000 "$acks" "$written" &
	wpid=$!; T_PIDS+=("$wpid")
	# kill after a random number of acknowledged writes (50..300 into this round)
	target=$(( $(wc -l < "$acks") + 50 + RANDOM % 250 ))
	acked() { [ "$(wc -l < "$acks")" -ge "$target" ]; }
	wait_for 60 acked || fail "round $round: writes did not progress"
	kill -KILL "$CTRL_PID"; wait "$CTRL_PID" 2>/dev/null; CTRL_PID=
	wait "$wpid" 2>/dev/null
	# the next round numbers its writes past anything this one attempted
	written=$(( round * 2000 ))

	check "round $round: killed mid-stream (the writer had not finished)" test "$(wc -l < "$acks")" -lt "$(( round * 1000 ))"
	check "round $round: fsck after SIGKILL is clean" "$CONTROLLER" --data-dir "$dir" --fsck
	start_controller "$dir" || { fail "restart round $round"; break; }
	lost=$(lost_acks "$acks" api)
	check "round $round: all $(wc -l < "$acks") acknowledged writes survived" test "$lost" -eq 0
	ids=$(api GET /apis/network.openshift.io/v1/hostsubnets | sed '$d' | python3 -c '
import json,sys
d=json.load(sys.stdin)["items"]
ids=[h["nodeID"] for h in d]; subs=[h["subnet"] for h in d]
print("dup" if len(set(ids))!=len(ids) or len(set(subs))!=len(subs) else "ok", len(ids))')
	check "round $round: node IDs and subnets unique ($ids)" test "${ids%% *}" = ok
	check_stop "round $round: controller stops cleanly"
done
finish
