#!/usr/bin/env bash
# stop_watches.sh — SIGTERM stops a controller promptly while hundreds of
# watch streams are open, half of them never read, with writes going on:
# it exits 0 (no sanitizer report) within BOUND seconds, and a restart on
# the same data directory reads back every write it acknowledged.
#
#   127.0.0.2..  N watch streams of pods in default (TLS): the even ones
#                read, the odd ones never (their sockets fill)          ─┐
#   127.0.0.1    2 writers: pods of 2 KB, as fast as acknowledged        ─┴─► weft-controller ──► DIR/weft.db
#                                                                             ▲ SIGTERM with all of it going on
# (tests/tools/watch_crowd.py does the clients)
#
# A stop that waits for clients (each stream's last chunk, say) waits for
# ever on the ones that never read: the stop must not, nor may it take
# longer with more streams.
cd "$(dirname "$0")/../.." && source tests/lib.sh

N=${STOP_WATCHES_N:-400}	# watch streams
BOUND=4				# seconds from SIGTERM to exit (under ASan, on a loaded machine)

dir=$(tmpdir)
start_controller "$dir" || { fail start; finish; exit 1; }
crowd=$dir/crowd.out
python3 tests/tools/watch_crowd.py "$CTRL_URL" "$CTRL_TOKEN_FILE" "$N" "$dir/acks" >"$crowd" 2>"$dir/crowd.err" &
crowd_pid=$!
T_PIDS+=("$crowd_pid")
must wait_for 120 grep -q '^open ' "$crowd"
check "$N watch streams opened (200)" grep -qx "open $N" "$crowd"
# the streams nobody reads have filled their sockets: the sender holds them blocked
blocked() { api GET /metrics | awk '$1 == "weft_watch_streams_blocked" && $2 >= 10 { ok = 1 } END { exit !ok }'; }
check "writes flow and streams are blocked on clients that do not read" wait_for 60 blocked

start=$(date +%s%N)
kill -TERM "$CTRL_PID"
ended=0
wait_for $((BOUND * 4)) eval '! kill -0 "$CTRL_PID"' && ended=1
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ended" = 1 ] || kill -KILL "$CTRL_PID" 2>/dev/null
rc=0
wait "$CTRL_PID" || rc=$?
CTRL_PID=
check "the controller exited after SIGTERM ($took_ms ms)" test "$ended" = 1
check "... within $BOUND s" test "$took_ms" -le $((BOUND * 1000))
check "... with status 0 (no sanitizer report)" test "$rc" = 0
[ "$rc" = 0 ] || grep -E -A14 'ERROR|runtime error|Direct leak|PANIC|panic' "$CTRL_LOG" | head -n 40

# the clients see their connections end and write down what was acknowledged
check "the clients saw every stream end" wait_for 60 eval '! kill -0 "$crowd_pid"'
wait "$crowd_pid" 2>/dev/null || true
acked=$(awk '$1 == "acked" { print $2 }' "$crowd")
check "writes were acknowledged before the stop (${acked:-none})" test "${acked:-0}" -gt 0

check "fsck of the stopped controller's store is clean" "$CONTROLLER" --data-dir "$dir" --fsck
start_controller "$dir" || { fail restart; finish; exit 1; }
# one list, not a GET per pod: the names acknowledged that it lacks
api GET /api/v1/namespaces/default/pods | body_of | jq -r '.items[].metadata.name' | sort >"$dir/listed"
awk '$1 == "pod" { print $2 }' "$dir/acks" | sort >"$dir/acked"
check "after a restart every acknowledged pod is there ($acked)" \
	eval '[ -s "$dir/acked" ] && [ -z "$(comm -23 "$dir/acked" "$dir/listed")" ]'
check_stop "the restarted controller stops cleanly"
finish
