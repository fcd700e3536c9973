#!/usr/bin/env bash
# bench/services/flood.sh — the connect latency of a Service while a pod of
# another tenant floods it with SYNs the tenant rule refuses, against the
# same without the flood.  Prints each run's p50/p99, the flood's achieved
# rate, the sender's rate across a bare veth pair, and GOAL lines (goal:
# connect p50 and p99 under the flood <= 1.2x without).
# Method: bench/README.md, section "services", "connect under a SYN flood".
#
#   floor: $P-fa 10.79.0.1 --veth-- 10.79.0.2 $P-fb (routes nothing: every
#   segment to 10.79.1.0/24 is dropped on arrival) -- what the sender
#   reaches on this machine when nothing but a veth is in its way.
#
#   weft-lab $P-fl, 2 nodes, multitenant; on node-1:
#     red/c    client: connlat client -> red/web's ClusterIP :80
#     red/b    backend of red/web (selector app=b): connlat server :8080
#     blue/evil  attacker: tests/tools/synflood.c, SYNs to the same
#              ClusterIP :80 from its own address at BENCH_FLOOD_PPS
#   The tenant rule refuses blue -> red, so every SYN is dropped on node-1
#   (reason isolated) before conntrack; the run checks that they were.
#
# Every packet stays in namespaces this script makes ($P-*) or in its lab;
# the root namespace is not touched.  The EXIT trap stops the processes it
# started (by PID), brings its lab down and deletes its namespaces.
#
#   BENCH_FLOOD_PPS     the flood's target rate, packets/s; 0: as fast as
#                       the sender goes                           (100000)
#   BENCH_FLOOD_CONNS   connects per latency run                  (3000)
#   BENCH_FLOOD_WARMUP  unrecorded connects before each run       (100)
#   BENCH_FLOOD_REPS    runs of each, interleaved; even           (4)
#   BENCH_FLOOD_PER_CLIENT  the agents' --conntrack-per-client; empty: the
#                       agent's default (the measuring client resets each
#                       connection, and a RST frees its slot at once)     ()
#   BENCH_FLOOD_PIN     split: client on CPU 0, server and flooder on the
#                       last CPU (the attacker's own share of the node,
#                       as a CPU limit would give it); off: unpinned (split)
#
# Exit status: 0 when the measurement completed (a failed goal is a
# result) or when not run as root (GOAL lines SKIP); 1 when something
# broke (a build, the lab, a connect, a flood whose SYNs were not seen).
cd "$(dirname "$0")/../.." || exit 1
set -u
BUILD=${BUILD:-build/release}
export WEFT_BIN=${WEFT_BIN:-$PWD/$BUILD/bin}
P=wfl$$
LAB=$P-fl
PPS=${BENCH_FLOOD_PPS:-100000}
CONNS=${BENCH_FLOOD_CONNS:-3000}
WARMUP=${BENCH_FLOOD_WARMUP:-100}
REPS=${BENCH_FLOOD_REPS:-4}
PIN=${BENCH_FLOOD_PIN:-split}
PER_CLIENT=${BENCH_FLOOD_PER_CLIENT:-}
GOALS=(svc_connect_under_flood_p50 svc_connect_under_flood_p99)
if [ "$(id -u)" != 0 ]; then
	for g in "${GOALS[@]}"; do echo "GOAL $g: SKIP (not root)"; done
	exit 0
fi
LASTCPU=$(($(nproc) - 1))
case $PIN in
split) CPU_C=(taskset -c 0) CPU_S=(taskset -c "$LASTCPU") ;;
off) CPU_C=() CPU_S=() ;;
*) echo "flood: BENCH_FLOOD_PIN is split or off" >&2; exit 1 ;;
esac
TMP=$(mktemp -d /tmp/weft-flood.XXXXXX)
SERVER_PID=""
FLOOD_PID=""
LAB_UP=0
lab() { src/lab/weft-lab --lab "$LAB" "$@"; }
cleanup() {
	local p
	for p in $FLOOD_PID $SERVER_PID; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ "$LAB_UP" = 0 ] || lab down >/dev/null 2>&1
	ip netns del "$P-fa" 2>/dev/null
	ip netns del "$P-fb" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() { for g in "${GOALS[@]}"; do echo "GOAL $g: no result ($1) FAIL"; done; exit 1; }
# poll CMD every 50 ms for at most SECONDS: poll SECONDS CMD...
poll() {
	local deadline=$(($(date +%s%N) / 1000000 + $1 * 1000)); shift
	until "$@" >/dev/null 2>&1; do
		[ $(($(date +%s%N) / 1000000)) -lt "$deadline" ] || return 1
		sleep 0.05
	done
}
field() { # field KEY LINE: the value of KEY=value in LINE
	awk -v k="$1" '{ for (i = 1; i <= NF; i++) { n = index($i, "="); if (substr($i, 1, n - 1) == k) print substr($i, n + 1) } }' <<<"$2"
}

for t in ip jq taskset bpftool cc; do command -v "$t" >/dev/null || fail "$t not installed"; done
FLAGS=(-std=gnu11 -O2 -Wall -Wextra -Werror -Wshadow -Wformat=2)
cc "${FLAGS[@]}" -o "$TMP/connlat" bench/services/tools/connlat.c || fail "connlat does not compile"
cc "${FLAGS[@]}" -o "$TMP/synflood" tests/tools/synflood.c || fail "synflood does not compile"
echo "flood: kernel $(uname -r), $(nproc) CPUs; target $PPS pps; $REPS runs x $CONNS connects (+$WARMUP warm-up) with and without, interleaved; placement $PIN; per-client cap ${PER_CLIENT:-the agent default}"

# ---------------------------------------------------------------- floor
ip netns add "$P-fa" && ip netns add "$P-fb" &&
	ip link add fa netns "$P-fa" type veth peer name fb netns "$P-fb" &&
	ip -n "$P-fa" addr add 10.79.0.1/24 dev fa && ip -n "$P-fb" addr add 10.79.0.2/24 dev fb &&
	ip -n "$P-fa" link set fa up && ip -n "$P-fb" link set fb up &&
	ip -n "$P-fa" route add 10.79.1.0/24 via 10.79.0.2 || fail "floor namespaces"
floor=$(ip netns exec "$P-fa" "${CPU_S[@]}" "$TMP/synflood" 10.79.1.1 80 -d 2) || fail "synflood on the floor: $floor"
FLOOR_PPS=$(field pps "$floor")
echo "  floor: the sender alone across a bare veth pair, as fast as it goes: $FLOOR_PPS pps"
ip netns del "$P-fa" && ip netns del "$P-fb"

# ---------------------------------------------------------------- the lab
LAB_UP=1
out=$(WEFT_LAB_AGENT_ARGS="${PER_CLIENT:+--conntrack-per-client $PER_CLIENT}" lab up --nodes 2 --mode multitenant 2>&1) || fail "lab up: $(tail -n 1 <<<"$out")"
for p in "red c" "red b --label app=b" "blue evil"; do
	# shellcheck disable=SC2086  # the words of $p are the arguments
	out=$(lab pod add node-1 $p 2>&1) || fail "pod add $p: $(tail -n 1 <<<"$out")"
done
"${CPU_S[@]}" ip netns exec "$LAB-pod-red-b" "$TMP/connlat" server 0.0.0.0 8080 -i b -P 200 >>"$TMP/server.log" 2>&1 &
SERVER_PID=$!
cat >"$TMP/svc.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: web, namespace: red}
spec:
  selector: {app: b}
  ports: [{port: 80, targetPort: 8080, protocol: TCP}]
EOF
out=$(lab weftctl apply -f "$TMP/svc.yaml" 2>&1) || fail "apply: $out"
WEB=$(lab weftctl get svc web -n red -o json | jq -r .spec.clusterIP)
answers() { ip netns exec "$LAB-pod-red-c" "$TMP/connlat" probe "$WEB" 80 -t 1000 | grep -qx b; }
poll 30 answers || fail "red/web $WEB does not answer red/c within 30 s"
PIN_DIR=$(lab status -o json | jq -r '.nodes[] | select(.name == "node-1") | .pinDir')
NAMES=$(sed -n '/#define WEFT_DROP_NAMES/,/}/p' bpf/weft_bpf.h | grep -oE '"[a-z0-9-]+"' | jq -sc .)
drops() { # every drop reason node-1 counted so far: {"reason": packets}
	bpftool -j map dump pinned "$PIN_DIR/weft_drops" | jq -c --argjson names "$NAMES" '
		[.[] | (.formatted // .) | {key: $names[.key], value: ([.values[].value] | add)}
		 | select(.value > 0)] | from_entries'
}
isolated() { drops | jq '.isolated // 0'; }
other_drops() { # other_drops BEFORE AFTER: the reasons but isolated that grew, "reason +N"
	jq -rn --argjson a "$1" --argjson b "$2" \
		'$b | to_entries[] | select(.key != "isolated" and .value > ($a[.key] // 0)) | "\(.key) +\(.value - ($a[.key] // 0))"' | paste -sd' '
}
grew_past() { [ "$(isolated)" -gt "$1" ]; }
echo "  lab $LAB: red/web $WEB (backend red/b), client red/c, attacker blue/evil, all on node-1"

# ---------------------------------------------------------------- runs
declare -a P50_Q P99_Q P50_F P99_F RATES
run=0
FAILED_Q=0
FAILED_F=0
measure() { # measure quiet|flood REP
	local out kv sport before flood d0 d1 lost
	# every run its own source ports: no 4-tuple repeats, every connect is a new flow
	sport=$((1024 + run * (CONNS + WARMUP) % 64512))
	run=$((run + 1))
	d0=$(drops)
	if [ "$1" = flood ]; then
		before=$(isolated)
		"${CPU_S[@]}" src/lab/weft-lab --lab "$LAB" exec blue/evil -- \
			"$TMP/synflood" "$WEB" 80 -r "$PPS" -d 300 >"$TMP/flood.$2" 2>&1 &
		FLOOD_PID=$!
		poll 10 grew_past $((before + 1000)) || fail "the flood's SYNs are not dropped as isolated on node-1"
	fi
	out=$("${CPU_C[@]}" ip netns exec "$LAB-pod-red-c" "$TMP/connlat" client "$WEB" 80 \
		-n "$CONNS" -w "$WARMUP" -t 1000 -p "$sport" 2>&1)
	if [ -n "$FLOOD_PID" ]; then
		kill -TERM "$FLOOD_PID"
		wait "$FLOOD_PID" || fail "synflood: $(cat "$TMP/flood.$2")"
		FLOOD_PID=""
		flood=$(grep '^synflood:' "$TMP/flood.$2") || fail "synflood printed nothing"
		RATES+=("$(field pps "$flood")")
	fi
	kv=$(grep '^connlat: n=' <<<"$out") || fail "connlat: $(tail -n 1 <<<"$out")"
	d1=$(drops)
	lost=$(field failed "$kv")
	p50=$(field p50_us "$kv") p99=$(field p99_us "$kv")
	printf '  %-5s run %d: connect p50 %7.1f us  p99 %7.1f us  failed %d%s%s\n' "$1" "$2" "$p50" "$p99" \
		"$lost" "$([ "$1" = flood ] && echo "  (flood ${RATES[-1]} pps)")" \
		"$(other=$(other_drops "$d0" "$d1"); [ -z "$other" ] || echo "  node-1 also dropped: $other")"
	if [ "$1" = flood ]; then FAILED_F=$((FAILED_F + lost)); else FAILED_Q=$((FAILED_Q + lost)); fi
	if [ "$1" = flood ]; then P50_F+=("$p50") P99_F+=("$p99"); else P50_Q+=("$p50") P99_Q+=("$p99"); fi
}
for r in $(seq 1 "$REPS"); do
	if [ $((r % 2)) = 1 ]; then measure quiet "$r"; measure flood "$r"; else measure flood "$r"; measure quiet "$r"; fi
done

# ---------------------------------------------------------------- report
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratios() { # ratios "A..." "B...": the per-run A/B, one a line
	paste <(tr ' ' '\n' <<<"$1") <(tr ' ' '\n' <<<"$2") | awk '{ print $1 / $2 }'
}
rate=$(median "${RATES[@]}")
mapfile -t r50 < <(ratios "${P50_F[*]}" "${P50_Q[*]}")
mapfile -t r99 < <(ratios "${P99_F[*]}" "${P99_Q[*]}")
reached=$(awk -v r="$rate" -v t="$PPS" 'BEGIN { if (t > 0 && r < 0.95 * t) printf "; reached %.0f%% of the target %d pps", 100 * r / t, t }')
echo "INFO svc_flood_pps: the flood sent $rate pps (median of $REPS runs$reached); the same sender across a bare veth pair: $FLOOR_PPS pps"
for f in p50 p99; do
	if [ $f = p50 ]; then rs=("${r50[@]}") q=("${P50_Q[@]}") fl=("${P50_F[@]}"); else rs=("${r99[@]}") q=("${P99_Q[@]}") fl=("${P99_F[@]}"); fi
	r=$(median "${rs[@]}")
	# a connect that failed is in no percentile: the goal fails when the flood cost any
	awk -v n="$f" -v r="$r" -v f="$(median "${fl[@]}")" -v q="$(median "${q[@]}")" -v pps="$rate" -v runs="$REPS" \
		-v lf="$FAILED_F" -v lq="$FAILED_Q" -v conns=$((REPS * CONNS)) 'BEGIN {
		printf "GOAL svc_connect_under_flood_%s: %.3fx (TCP connect %s to a ClusterIP while another tenant floods it with refused SYNs at %d pps, vs no flood; medians %.1f vs %.1f us, %d runs; failed connects %d vs %d of %d each) (goal <= 1.2x, none lost) %s\n",
			n, r, n, pps, f, q, runs, lf, lq, conns, (sprintf("%.3f", r) + 0 <= 1.2 && lf <= lq) ? "PASS" : "FAIL" }'
done
