#!/usr/bin/env bash
# flood.sh — a connection flood from loopback does not take the controller
# down: idle connections beyond the per-client cap are refused, heads that
# trickle in are cut at the header timeout, big lists are served in
# parallel, watch streams beyond the cap stay up past the idle timeout —
# and all the while a normal client gets /healthz and a small
# authenticated GET answered, each within BOUND seconds (under ASan).
#
#   127.0.0.2  600 idle connections at once, then the cap + 8 held ─┐
#   127.0.0.3  8 request heads, a byte every 100 ms, never ending  ─┤
#   127.0.0.4  4 clients × 2 lists of 150 pods × 100 KB            ─┼─► weft-controller 127.0.0.1:random
#   127.0.0.5  40 watch streams, then one plain request            ─┤     RLIMIT_NOFILE 512 (so at most
#   127.0.0.1  GET /healthz + GET a namespace every 50 ms (timed)  ─┘     384 connections), 16 per client,
#                                                                          head within 2 s, idle 5 s
# (tests/tools/flood.py does the clients; this script asserts on what it saw)
cd "$(dirname "$0")/../.." && source tests/lib.sh

NOFILE=512	# the controller's descriptor limit, soft and hard
CAP=16		# --max-connections-per-client
HEADER=2	# --header-timeout
IDLE=5		# --idle-timeout
WAVE=600	# idle connections at once from one address: more than NOFILE
BOUND=1		# seconds: the longest a normal request may take
PODS=150	# pods of 100 KB in the listed namespace (~15 MiB a list)

# the controller under a low descriptor limit: a wrapper that lowers it, then execs
wrap=$T_ROOT/weft-controller-nofile
printf '#!/bin/sh\nulimit -n %d || exit 1\nexec "%s" "$@"\n' "$NOFILE" "$PWD/$CONTROLLER" > "$wrap"
chmod +x "$wrap"

dir=$(tmpdir)
CONTROLLER=$wrap start_controller "$dir" --max-connections-per-client "$CAP" --header-timeout "$HEADER" \
	--idle-timeout "$IDLE" || { fail start; finish; exit 1; }
port=${CTRL_URL##*:}
check "it derived its connection limit from RLIMIT_NOFILE ($NOFILE - 128 kept back)" \
	grep -q "connections: at most $((NOFILE - 128)) (RLIMIT_NOFILE $NOFILE), $CAP per client" "$CTRL_LOG"
toomany=$( (ulimit -n "$NOFILE"; "$CONTROLLER" --data-dir "$(tmpdir)" --max-connections 1000) 2>&1); rc=$?
check "--max-connections above what RLIMIT_NOFILE allows: exit 2, naming both" \
	eval '[ $rc = 2 ] && grep -q "above the $((NOFILE - 128)) that RLIMIT_NOFILE $NOFILE allows" <<<"$toomany"'

check "$PODS pods of 100 KB made" python3 tests/tools/flood.py populate "$CTRL_URL" "$CTRL_TOKEN_FILE" big "$PODS" 100000

res=$dir/flood.json
v() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, d))' "$res" "$1"; }
python3 tests/tools/flood.py run "$port" "$CTRL_TOKEN_FILE" "$CTRL_PID" --cap "$CAP" --header-timeout "$HEADER" \
	--idle-timeout "$IDLE" --wave "$WAVE" --bound "$BOUND" --list-items "$PODS" > "$res" 2>"$dir/flood.err"
check "the flood ran to its end (bounded at 120 s)" test "$(v timed_out 2>/dev/null)" = False
if [ "$(v timed_out 2>/dev/null)" != False ]; then
	tail -n 20 "$dir/flood.err"
	finish
	exit 1
fi
echo "  ($(v seconds) s: $(v wave_refused) refused, $(v 'wave_closed + slow_closed') cut at the header timeout," \
	"$(v lists_complete) lists of $(v list_mib) MiB (slowest $(v list_max_s) s), $(v pressure_connects) reconnects" \
	"held at the cap; at most $(v fd_max) descriptors open)"

# the idle wave from one address
check "all $WAVE idle connections were made" test "$(v wave_opened)" = "$WAVE"
check "the $((WAVE - CAP)) beyond the per-client cap were refused at once" test "$(v wave_refused)" = $((WAVE - CAP))
check "the cap's $CAP were closed by the header timeout (${HEADER} s, at most +1.5 s)" \
	test "$(v "wave_closed == $CAP and wave_min_s >= $HEADER - 0.3 and wave_max_s <= $HEADER + 1.5")" = True
# trickled heads
check "8 heads sent a byte every 100 ms were cut after ${HEADER} s (at most +1.5 s), unanswered" \
	test "$(v "slow_closed == slow and slow_min_s >= $HEADER - 0.3 and slow_max_s <= $HEADER + 1.5 and slow_bytes_received == 0")" = True
# big lists
check "4 × 2 lists of $PODS pods ($(v list_mib) MiB each) were complete" test "$(v lists_complete)" = 8
# watch streams
check "40 watch streams from one address opened (they do not count against the cap of $CAP)" test "$(v watches_ok)" = 40
check "... and that address still got a plain request in" test "$(v same_client_after_watches)" = 200
check "the watch streams outlived the idle timeout (${IDLE} s): $(v watches_open_at_end) of 40 open after $(v watches_lived_s) s" \
	test "$(v "watches_open_at_end == 40 and watches_lived_s > $IDLE")" = True
# the controller's descriptors
check "its open descriptors stayed under RLIMIT_NOFILE $NOFILE (at most $(v fd_max))" test "$(v fd_max)" -lt "$NOFILE"
# the normal client
check "GET /healthz never failed ($(v healthz_n) requests)" test "$(v 'len(healthz_errors)')" = 0
check "GET /healthz always answered within $BOUND s (max $(v healthz_max_ms) ms, p99 $(v healthz_p99_ms) ms)" \
	test "$(v healthz_over_bound)" = 0
check "an authenticated GET never failed ($(v get_n) requests)" test "$(v 'len(get_errors)')" = 0
check "an authenticated GET always answered within $BOUND s (max $(v get_max_ms) ms, p99 $(v get_p99_ms) ms)" \
	test "$(v get_over_bound)" = 0

# what the controller counted
m=$(api GET /metrics)
metric() { awk -v k="$1" '$1 == k { print $2 }' <<<"$m"; }
check "weft_connections_refused_total counts the refusals (>= $((WAVE - CAP)))" \
	test "$(metric weft_connections_refused_total)" -ge $((WAVE - CAP))
check "weft_connections_timeouts_total{phase=\"header\"} counts the cut connections (>= $((CAP + 8)))" \
	test "$(metric 'weft_connections_timeouts_total{phase="header"}')" -ge $((CAP + 8))
check "weft_connections_open and the limits are reported" \
	eval "[ -n '$(metric weft_connections_open)' ] && [ '$(metric weft_connections_limit)' = $((NOFILE - 128)) ] && [ '$(metric weft_connections_per_client_limit)' = $CAP ]"

check_stop "the controller stops cleanly after the flood (no sanitizer report)"

# The server's own limit: connections beyond --max-connections are closed
# at accept (before any TLS), whoever sends them, and once some close the
# server takes new ones again.
LIMIT=24
EXTRA=10
d2=$(tmpdir)
start_controller "$d2" --max-connections "$LIMIT" --max-connections-per-client 1000 --header-timeout 30 ||
	{ fail "a controller with --max-connections $LIMIT starts"; finish; exit 1; }
mkfifo "$d2/go"
python3 - "${CTRL_URL##*:}" $((LIMIT + EXTRA)) "$d2/held" "$d2/go" <<'PY' &
import select, socket, sys, time
port, n, out, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
# a refused one is closed at once; a held one says nothing for 2 s (its head is due in 30 s)
closed, end = set(), time.monotonic() + 2
while time.monotonic() < end:
	ready, _, _ = select.select([s for s in socks if s not in closed], [], [], end - time.monotonic())
	for s in ready:
		try:
			if s.recv(1) == b"":
				closed.add(s)
		except OSError:
			closed.add(s)
open(out, "w").write("%d %d\n" % (n - len(closed), len(closed)))
open(go).read()	# hold them until told
PY
holder=$!
T_PIDS+=("$holder")
wait_for 30 test -s "$d2/held"
read -r held closed <"$d2/held"
check "$((LIMIT + EXTRA)) idle connections against --max-connections $LIMIT: $held held, $closed closed at once" \
	test "$held" -le "$LIMIT" -a "$held" -ge $((LIMIT - 2)) -a $((held + closed)) = $((LIMIT + EXTRA))
check "... a new client is refused while they are held" bash -c "! curl -sf -m 5 '$CTRL_URL/healthz'"
echo >"$d2/go"
wait "$holder"
check "... and served once they are gone" wait_for 10 curl -sf -m 2 "$CTRL_URL/healthz"
m=$(api GET /metrics)
check "weft_connections_over_limit_total counts them (>= $((EXTRA + 1)))" \
	test "$(metric weft_connections_over_limit_total)" -ge $((EXTRA + 1))
check_stop "that controller stops cleanly"
finish
