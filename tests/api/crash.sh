#!/usr/bin/env bash
# crash.sh — SIGKILL the controller in the middle of concurrent streams of
# writes, restart it on the same data directory, and check that every
# acknowledged write is there, nothing is half-applied (fsck: every node has
# its node ID, IP and HostSubnet; no two share one), and allocation goes on
# from where it was.  Three rounds, killed at different moments.
#
#   4 x api_writer.py (node and pod POSTs) ──HTTPS──► weft-controller ──► DIR/weft.db
#   api_writer.py ... 25 (Lists of 25 Secrets to /weft/v1/apply) ──┘   ▲ kill -9 at a random moment
#
# The writers commit at once, so their commits share the store's flushes
# (group commit): an acknowledged write must be on disk however many
# others its flush covered.
cd "$(dirname "$0")/../.." && source tests/lib.sh

WRITERS=4
PER_WRITER=1000
dir=$(tmpdir)
acks=$dir/acks
: > "$acks"
written=0
for round in 1 2 3; do
	start_controller "$dir" || { fail "start round $round"; break; }
	wpids=()
	# disjoint names: writer w writes indexes written + w * PER_WRITER on
	for ((w = 0; w < WRITERS; w++)); do
		python3 tests/tools/api_writer.py "$CTRL_URL" "$CTRL_TOKEN_FILE" "$PER_WRITER" "$acks" \
			$((written + w * PER_WRITER)) &
		wpids+=("$!")
	done
	python3 tests/tools/api_writer.py "$CTRL_URL" "$CTRL_TOKEN_FILE" "$PER_WRITER" "$acks" "$written" 25 &
	wpids+=("$!")
	T_PIDS+=("${wpids[@]}")
	before=$(wc -l < "$acks")
	# kill after a random number of acknowledged writes (100..400 into this
	# round), once a batch is among them
	target=$(( before + 100 + RANDOM % 300 ))
	acked() { [ "$(wc -l < "$acks")" -ge "$target" ] && tail -n +$((before + 1)) "$acks" | grep -q '^secret '; }
	wait_for 60 acked || fail "round $round: writes did not progress"
	kill -KILL "$CTRL_PID"; wait "$CTRL_PID" 2>/dev/null; CTRL_PID=
	for p in "${wpids[@]}"; do wait "$p" 2>/dev/null; done

	round_acks=$(tail -n +$((before + 1)) "$acks")
	check "round $round: killed mid-stream (the writers had not finished)" \
		test "$(wc -l <<<"$round_acks")" -lt $(( (WRITERS + 1) * PER_WRITER ))
	# which writer each acknowledged write came from: its index range, or the batches
	from=$(awk -v base="$written" -v per="$PER_WRITER" '
		$1 == "secret" { w["batch"] = 1; next }
		{ n = $2; sub(/.*-/, "", n); if ($1 == "node") n *= 4; w[int((n - base) / per)] = 1 }
		END { print length(w) }' <<<"$round_acks")
	check "round $round: writes of several writers were acknowledged ($from of $((WRITERS + 1)))" test "$from" -ge 2
	check "round $round: batched writes were acknowledged too" grep -q '^secret ' <<<"$round_acks"
	# the next round numbers its writes past anything this one attempted
	written=$(( round * (WRITERS + 1) * PER_WRITER ))

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
