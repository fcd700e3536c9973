#!/usr/bin/env bash
# bench/controller/run.sh — the controllers in HA on etcd, in one run:
#
#  1. Rates (loopback, one etcd member, data on the same disk as SQLite's),
#     in BENCH_HA_RATE_ROUNDS rounds, each on a fresh etcd:
#       etcd's own put rate: 600-byte puts through etcd's JSON gateway (the
#         path the controllers use) from 4 keep-alive connections: the
#         reference;
#       the floor beside it: the same creates as the controllers make them
#         (a transaction "key absent -> put") straight to etcd, with two
#         watches of every key on it (curl), as two controllers keep: what
#         etcd allows any design with a watch per controller;
#       creates through 2 controllers on that etcd, 4 connections (2 each):
#         Pod creates of the same size;
#     then creates through 1 controller on SQLite, 4 connections.
#     The same client (bench/controller/load.py) makes every load.  Goal:
#     creates on 2 controllers >= 0.5 x etcd's put rate, the median of the
#     rounds' ratios (the machine is shared: one round varies by a tenth).
#     Reported: etcd ÷ SQLite.  Then watch fan-out (bench/controller/fanout.py): 50 watchers
#     spread over the controllers, 100 Namespaces created one at a time
#     through the first, each timed until every watcher has it; p99 on etcd
#     ÷ p99 on SQLite is reported.
#  2. Failover (a lab: 2 nodes, 3 etcd members, 2 controllers, agents
#     given both): BENCH_HA_ROUNDS times, SIGKILL the controller the agents
#     are on (its pid from the lab's status; `weft-lab controller stop
#     --kill` records it after), at once create a Namespace through the
#     other, and time from the kill until
#     both nodes report it applied (weft.io/applied-revisions): their
#     watches broke, resumed on the other controller, and carried the
#     change into the maps.  The floor beside it: the same create and wait
#     with no kill.  Goal: p99 <= 2 s.
#  3. Writes in flight at each kill: bench/controller/inflight.py keeps 8
#     Namespace creates in flight on the controller that is killed; after
#     the failover each outcome is checked through the survivor: every
#     acknowledged create is there (lost = 0 is the goal), every refused
#     one is absent, and those whose connection broke are counted as there
#     or not (their outcome was never told).
#
#   BENCH_HA_ROUNDS   kills (default 10)
#   BENCH_HA_CREATES  creates per rate measurement (default 3000)
#   BENCH_HA_RATE_ROUNDS  rounds of the rates (default 5)
#   BENCH_HA_WATCHERS watchers of the fan-out (default 50)
set -u
cd "$(dirname "$0")/../.."
BENCH_NAME=ha
BUILD=${BUILD:-build/release}
LAB_BIN=$PWD/src/lab/weft-lab
ROUNDS=${BENCH_HA_ROUNDS:-10}
CREATES=${BENCH_HA_CREATES:-3000}
RATE_ROUNDS=${BENCH_HA_RATE_ROUNDS:-5}
WATCHERS=${BENCH_HA_WATCHERS:-50}
PIDS=()
declare -A LAB_UP=()
NSS=()
TMP=$(mktemp -d /tmp/weft-bench-ha.XXXXXX)
RES=$TMP/results
source bench/lib.sh
source tests/lib.sh	# start_etcd, free_port, wait_for (its own T_ROOT: removed, TMP instead)
rmdir "$T_ROOT"
T_ROOT=$TMP
trap bench_cleanup EXIT INT TERM
GOALS=(ha_creates_vs_etcd_put ha_failover_p99 ha_writes_lost)
if [ "$(id -u)" -ne 0 ] || ! command -v etcd >/dev/null; then
	for g in "${GOALS[@]}"; do echo "GOAL $g: skipped (needs root and etcd) SKIP"; done
	exit 0
fi
CONTROLLER=$BUILD/bin/weft-controller

rate_of() { sed -n 's/.* rate \([0-9.]*\) .*/\1/p'; }
errors_of() { sed -n 's/.* errors \([0-9]*\)$/\1/p'; }
stats() { # stats < milliseconds, one a line ("fail": 30 s): "n N p50 X p99 Y max Z"
	python3 -c '
import sys
v = sorted(30000.0 if x.strip() == "fail" else float(x) for x in sys.stdin if x.strip())
q = lambda p: v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
print("n %d p50 %.3f p99 %.3f max %.3f" % (len(v), q(0.5), q(0.99), v[-1] if v else float("nan")))'
}

# ---------------------------------------------------------------- 1. rates
# one round: a fresh etcd, its put rate, then 2 controllers on it and their
# create rate; the fan-out in the last round only.  Sets r_ref, r_etcd.
start_controllers() { # start_controllers DIR: 2 controllers on $ETCD_URL; urls in $urls
	local n d port
	urls=""
	for n in 1 2; do
		d=$1/c$n; mkdir -p "$d/pki"; chmod 700 "$d"
		[ "$n" = 1 ] || { cp "$1/c1/pki/ca.crt" "$1/c1/pki/ca.key" "$d/pki/"; cp "$1/c1/admin.token" "$d/"; }
		port=$(free_port)
		"$CONTROLLER" --data-dir "$d" --listen "127.0.0.1:$port" --store "$ETCD_URL" >"$d/log" 2>&1 &
		PIDS+=($!)
		# ready: its event cache has replayed the history it starts with
		wait_for 20 curl -sf --cacert "$1/c1/pki/ca.crt" "https://127.0.0.1:$port/readyz" ||
			{ say "controller $n did not start"; tail -n 5 "$d/log"; return 1; }
		urls+=${urls:+,}https://127.0.0.1:$port
	done
}
stop_all() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	PIDS=()
}
rate_round() { # rate_round N LAST
	local d=$TMP/r$1 ref etcd_rate
	mkdir -p "$d/etcd"
	start_etcd "$d/etcd" >/dev/null || { say "etcd did not start"; return 1; }
	PIDS+=("$ETCD_PID")
	ref=$(python3 bench/controller/load.py etcd "$ETCD_ENDPOINT" 4 "$CREATES")
	# the least any controllers with a watch each could reach: the same
	# creates as transactions straight to etcd, two watches (curl) on it
	local w1 w2 floor
	curl -sN -X POST "$ETCD_ENDPOINT/v3/watch" -d "$WATCH_ALL" >/dev/null & w1=$!
	curl -sN -X POST "$ETCD_ENDPOINT/v3/watch" -d "$WATCH_ALL" >/dev/null & w2=$!
	PIDS+=("$w1" "$w2")
	floor=$(python3 bench/controller/load.py etcd-txn "$ETCD_ENDPOINT" 4 "$CREATES")
	kill "$w1" "$w2" 2>/dev/null; wait "$w1" "$w2" 2>/dev/null
	r_floor=$(rate_of <<<"$floor")
	errs=$((errs + $(errors_of <<<"$floor")))
	start_controllers "$d" || return 1
	etcd_rate=$(python3 bench/controller/load.py weft "$urls" 4 "$CREATES" "$d/c1/admin.token" "$d/c1/pki/ca.crt" e)
	r_ref=$(rate_of <<<"$ref"); r_etcd=$(rate_of <<<"$etcd_rate")
	errs=$((errs + $(errors_of <<<"$ref") + $(errors_of <<<"$etcd_rate")))
	say "  round $1: etcd put $r_ref/s; creates as transactions, 2 watches: $r_floor/s ($(python3 -c "print('%.3f' % ($r_floor / $r_ref))")); 2 controllers: $r_etcd/s ($(python3 -c "print('%.3f' % ($r_etcd / $r_ref))"))"
	if [ "$2" = 1 ]; then
		etcd_fan=$(python3 bench/controller/fanout.py "$urls" "$d/c1/admin.token" "$d/c1/pki/ca.crt" "$WATCHERS" 100 fe)
		say "  fan-out, 2 controllers on etcd: $etcd_fan"
	fi
	stop_all
	rm -rf "$d"
}
say "1. rates: $RATE_ROUNDS rounds of $CREATES creates, 4 connections (each round: a fresh etcd, its put rate, then 2 controllers on it)"
# the controllers' watch: every key, with the previous value, progress notices
WATCH_ALL='{"create_request":{"key":"AA==","range_end":"AA==","prev_kv":true,"progress_notify":true}}'
errs=0; ratios=(); floors=(); etcd_rates=()
for ((i = 1; i <= RATE_ROUNDS; i++)); do
	rate_round "$i" "$([ "$i" = "$RATE_ROUNDS" ] && echo 1 || echo 0)" || exit 1
	ratios+=("$(python3 -c "print($r_etcd / $r_ref)")"); floors+=("$(python3 -c "print($r_floor / $r_ref)")")
	etcd_rates+=("$r_etcd")
done
sd=$TMP/sqlite; mkdir -p "$sd"
port=$(free_port)
"$CONTROLLER" --data-dir "$sd" --listen "127.0.0.1:$port" >"$sd/log" 2>&1 &
PIDS+=($!)
wait_for 20 curl -sf --cacert "$sd/pki/ca.crt" "https://127.0.0.1:$port/healthz" || { say "sqlite controller did not start"; exit 1; }
sqlite_rate=$(python3 bench/controller/load.py weft "https://127.0.0.1:$port" 4 "$CREATES" "$sd/admin.token" "$sd/pki/ca.crt" s)
say "  1 controller on SQLite:       $sqlite_rate"
sqlite_fan=$(python3 bench/controller/fanout.py "https://127.0.0.1:$port" "$sd/admin.token" "$sd/pki/ca.crt" "$WATCHERS" 100 fs)
say "  fan-out, 1 controller on SQLite: $sqlite_fan"
stop_all
r_sqlite=$(rate_of <<<"$sqlite_rate")
errs=$((errs + $(errors_of <<<"$sqlite_rate")))
median() { # three decimals: the goal is judged on what is printed, never on a rounding up
	python3 -c 'import statistics, sys; print("%.3f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
vs_put=$(median "${ratios[@]}")
vs_sqlite=$(python3 -c "import statistics, sys; print('%.2f' % (statistics.median(map(float, sys.argv[2:])) / float(sys.argv[1])))" "$r_sqlite" "${etcd_rates[@]}")
vs_floor=$(median "${floors[@]}")
say "  creates on etcd ÷ etcd's put rate, median of $RATE_ROUNDS rounds: $vs_put (each: $(printf '%.3f ' "${ratios[@]}"));  etcd ÷ SQLite: $vs_sqlite;  errors: $errs"
say "  the same creates as transactions straight to etcd with 2 watches on it (what no controller adds): $vs_floor"
fan_p99() { sed -n 's/.* p99_ms \([0-9.]*\) .*/\1/p'; }
fan_ratio=$(python3 -c "print('%.2f' % ($(fan_p99 <<<"$etcd_fan") / $(fan_p99 <<<"$sqlite_fan")))")
say "  fan-out p99 to $WATCHERS watchers, etcd ÷ SQLite: $fan_ratio"

# ---------------------------------------------------------------- 2. failover
L=bha$$
say "2. failover: lab $L (2 nodes, 3 etcd members, 2 controllers), $ROUNDS kills"
LAB_UP[$L]=1
WEFT_BIN=$BUILD/bin "$LAB_BIN" --lab "$L" up --nodes 2 --mode multitenant --store etcd --etcd-members 3 --controllers 2 >"$TMP/up.log" 2>&1 ||
	{ say "lab up failed"; tail -n 20 "$TMP/up.log"; exit 1; }
LD=/run/weft-lab/$L
CA=$LD/ctrl/pki/ca.crt
TOKEN=$LD/ctrl/admin.token
ctrl_url() { echo "https://192.168.200.$((1 + $1)):8080"; }
ctrl_ns() { [ "$1" = 1 ] && echo "$L-ctrl" || echo "$L-ctrl-$1"; }
on() { # on K METHOD PATH [curl args]: through controller K, from its namespace
	local k=$1 m=$2 p=$3; shift 3
	ip netns exec "$(ctrl_ns "$k")" curl -s -m 5 --cacert "$CA" -X "$m" -H "Authorization: Bearer $(cat "$TOKEN")" \
		-H 'Content-Type: application/json' "$@" "$(ctrl_url "$k")$p"
}
applied_on_both() { # applied_on_both K REV: both nodes report netnamespaces applied >= REV (read through K)
	on "$1" GET /api/v1/nodes | jq -e --argjson r "$2" '[.items[] | .metadata.annotations["weft.io/applied-revisions"] // "{}" |
		fromjson | (.netnamespaces // 0) >= $r] | length == 2 and all' >/dev/null
}
now_ms() { local us=${EPOCHREALTIME/[.,]/}; echo $((us / 1000)); }
create_and_wait() { # create_and_wait K NAME T0: ms from T0 until NAME is applied on both nodes
	local rev t
	rev=$(on "$1" POST /api/v1/namespaces -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$2\"}}" |
		jq -r '.metadata.resourceVersion // empty')
	[ -n "$rev" ] || { echo fail; return; }
	until applied_on_both "$1" "$rev"; do
		[ $(( $(now_ms) - $3 )) -lt 30000 ] || { echo fail; return; }
		sleep 0.01
	done
	t=$(now_ms)
	echo $((t - $3))
}
: >"$TMP/floor"; : >"$TMP/failover"
lost=0; inflight=0; unknown_there=0; unknown_absent=0; refused_there=0; acked=0
victim=1
for ((i = 1; i <= ROUNDS; i++)); do
	other=$((3 - victim))
	t0=$(now_ms); ms=$(create_and_wait "$victim" "floor-$i" "$t0"); echo "$ms" >>"$TMP/floor"
	ip netns exec "$L-outside" python3 bench/controller/inflight.py "$(ctrl_url "$victim")" "$TOKEN" "$CA" "w$i" 8 100000 \
		"$TMP/inflight-$i" & wpid=$!
	pid=$("$LAB_BIN" --lab "$L" status -o json | jq -r --arg n "ctrl-$victim" '.controllers[] | select(.name == $n) | .pid')
	[ -n "$pid" ] && [ "$pid" != null ] || { say "no pid for ctrl-$victim"; exit 1; }
	sleep 0.3	# let the writes flow (the writer then runs until the kill ends it)
	# the clock starts at the SIGKILL itself, not before the lab's verb
	# (which reads its records first); the verb then only records it
	t0=$(now_ms)
	kill -KILL "$pid"
	ms=$(create_and_wait "$other" "after-kill-$i" "$t0")
	echo "$ms" >>"$TMP/failover"
	"$LAB_BIN" --lab "$L" controller stop "ctrl-$victim" --kill >/dev/null
	wait "$wpid"
	while read -r what name code; do
		[ -n "$what" ] || continue
		c=$(on "$other" GET "/api/v1/namespaces/$name" -o /dev/null -w '%{http_code}')
		case $what in
		ack) acked=$((acked + 1)); [ "$c" = 200 ] || { lost=$((lost + 1)); say "  LOST: $name acknowledged, now $c"; } ;;
		refused) inflight=$((inflight + 1)); [ "$c" = 404 ] || refused_there=$((refused_there + 1)) ;;
		unknown) inflight=$((inflight + 1)); if [ "$c" = 200 ]; then unknown_there=$((unknown_there + 1)); else unknown_absent=$((unknown_absent + 1)); fi ;;
		esac
	done <"$TMP/inflight-$i"
	say "  kill $i (ctrl-$victim): resumed and applied on both nodes in $ms ms (floor $(tail -n 1 "$TMP/floor") ms)"
	"$LAB_BIN" --lab "$L" controller start "ctrl-$victim" >/dev/null
	victim=$other
done
read -r _ nf _ f50 _ f99 _ fmax < <(stats <"$TMP/failover")
read -r _ nb _ b50 _ b99 _ bmax < <(stats <"$TMP/floor")
say "  failover (ms): n $nf p50 $f50 p99 $f99 max $fmax;  floor, no kill (ms): n $nb p50 $b50 p99 $b99 max $bmax"
say "3. writes in flight at the kills: $acked acknowledged (lost: $lost), $inflight in flight when killed:"
say "   $unknown_there applied, $unknown_absent not applied (connection broken: outcome never told), $refused_there refused but applied"

pass() { python3 -c "import sys; sys.exit(0 if $1 else 1)" && echo PASS || echo FAIL; }
echo "GOAL ha_creates_vs_etcd_put: $vs_put (goal >= 0.5; median of $RATE_ROUNDS rounds; transactions straight to etcd with 2 watches: $vs_floor; etcd ÷ SQLite $vs_sqlite; fan-out p99 etcd ÷ SQLite $fan_ratio) $(pass "$vs_put >= 0.5")"
echo "GOAL ha_failover_p99: $(python3 -c "print('%.3f' % ($f99 / 1000))") s (goal <= 2 s; floor p99 $(python3 -c "print('%.3f' % ($b99 / 1000))") s) $(pass "$f99 <= 2000")"
echo "GOAL ha_writes_lost: $lost of $acked acknowledged (goal 0; refused but applied: $refused_there) $(pass "$lost == 0 and $refused_there == 0")"
