#!/usr/bin/env bash
# bench/services/flood.sh — the connect latency of a Service while another
# tenant floods it with SYNs the tenant rule refuses, against the same
# without the flood.  Prints the p50/p99 of each, the flood's rate, their
# ratios and GOAL lines (goal: p99 under flood <= 1.2 x without).
#
#   weft-lab t<pid>-fl, 2 nodes, multitenant; on node-1: red/c (client),
#   red/b (connlat server, the backend of red/web), blue/evil (flooder:
#   tests/tools/synflood.py, raw socket, as fast as it sends; the target
#   is ~100k pps, the rate reached is printed).
#
# Every packet stays in the lab's namespaces.  The EXIT trap stops what it
# started (by PID) and brings the lab down.
#
#   BENCH_FLOOD_CONNS   connects per latency run      (3000)
#   BENCH_FLOOD_REPS    runs of each, interleaved     (4)
cd "$(dirname "$0")/../.." || exit 1
set -u
BUILD=${BUILD:-build/release}
export WEFT_BIN=${WEFT_BIN:-$PWD/$BUILD/bin}
LAB=t$$-fl
CONNS=${BENCH_FLOOD_CONNS:-3000}
REPS=${BENCH_FLOOD_REPS:-4}
GOALS=(svc_connect_under_flood_p50 svc_connect_under_flood_p99)
if [ "$(id -u)" != 0 ]; then
	for g in "${GOALS[@]}"; do echo "GOAL $g: SKIP (not root)"; done
	exit 0
fi
TMP=$(mktemp -d /tmp/weft-flood.XXXXXX)
PIDS=()
lab() { src/lab/weft-lab --lab "$LAB" "$@"; }
ns() { local p=$1; shift; ip netns exec "$LAB-pod-${p/\//-}" "$@"; }
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	lab down >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() { for g in "${GOALS[@]}"; do echo "GOAL $g: no result ($1) FAIL"; done; exit 1; }

cc -O2 -Wall -Wextra -Werror -o "$TMP/connlat" bench/services/tools/connlat.c || fail "connlat build"
lab up --nodes 2 --mode multitenant >/dev/null || fail "lab up"
lab pod add node-1 red c >/dev/null && lab pod add node-1 red b --label app=b >/dev/null &&
	lab pod add node-1 blue evil >/dev/null || fail "pods"
ip netns exec "$LAB-pod-red-b" "$TMP/connlat" server 0.0.0.0 8080 -i 1 >>"$TMP/server.log" 2>&1 &
PIDS+=($!)
cat >"$TMP/svc.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: web, namespace: red}
spec:
  selector: {app: b}
  ports: [{port: 80, targetPort: 8080, protocol: TCP}]
EOF
lab weftctl apply -f "$TMP/svc.yaml" >/dev/null || fail "service"
WEB=$(lab weftctl get svc web -n red -o json | jq -r .spec.clusterIP)
ready() { ns red/c "$TMP/connlat" client "$WEB" 80 -n 1 -w 0 -t 1000 2>/dev/null | grep -q 'failed=0'; }
deadline=$((SECONDS + 30))
until ready; do [ $SECONDS -lt $deadline ] || fail "service $WEB not answering"; sleep 0.2; done

declare -a P50_Q P99_Q P50_F P99_F RATES
run() { # run quiet|flood REP
	local out kv sport=$((1024 + $2 * (CONNS + 100) % 60000)) fpid=""
	if [ "$1" = flood ]; then
		ns blue/evil /usr/bin/python3 tests/tools/synflood.py "$WEB" 80 100000000 S >"$TMP/flood.$2" 2>&1 &
		fpid=$!
	fi
	out=$(ns red/c "$TMP/connlat" client "$WEB" 80 -n "$CONNS" -w 100 -t 1000 -p "$sport" 2>&1)
	if [ -n "$fpid" ]; then
		local before after
		before=$(date +%s%N)
		kill -INT "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null
		after=$(date +%s%N)
		: "$before" "$after"
	fi
	kv=$(grep '^connlat: n=' <<<"$out") || fail "connlat: $(tail -n 1 <<<"$out")"
	read -r p50 p99 < <(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		print v["p50_us"], v["p99_us"] }' <<<"$kv")
	printf '  %-6s run %d: connect p50 %7.1f us  p99 %7.1f us\n' "$1" "$2" "$p50" "$p99"
	if [ "$1" = flood ]; then P50_F+=("$p50"); P99_F+=("$p99"); else P50_Q+=("$p50"); P99_Q+=("$p99"); fi
}
for r in $(seq 1 "$REPS"); do
	if [ $((r % 2)) = 1 ]; then run quiet "$r"; run flood "$r"; else run flood "$r"; run quiet "$r"; fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# the flood's rate: SYNs counted isolated on node-1 over the flood runs' time
pin=$(lab status -o json | jq -r '.nodes[] | select(.name == "node-1") | .pinDir')
isolated=$(bpftool -j map dump pinned "$pin/weft_drops" | jq '[.[] | (.formatted // .) | select(.key == 11) | .values[].value] | add')
entries=$(bpftool -j map dump pinned "$pin/weft_ct" | jq length)
q50=$(median "${P50_Q[@]}") q99=$(median "${P99_Q[@]}") f50=$(median "${P50_F[@]}") f99=$(median "${P99_F[@]}")
echo "  without flood: p50 $q50 us p99 $q99 us; with flood: p50 $f50 us p99 $f99 us"
echo "  refused SYNs counted (isolated) on node-1: $isolated; weft_ct entries after: $entries"
for f in "$TMP"/flood.*; do grep -h '^sent' "$f" 2>/dev/null; done | sed 's/^/  flood: /'
r50=$(awk -v a="$f50" -v b="$q50" 'BEGIN { printf "%.2f", a / b }')
r99=$(awk -v a="$f99" -v b="$q99" 'BEGIN { printf "%.2f", a / b }')
ok50=$(awk -v r="$r50" 'BEGIN { print (r <= 1.2) ? "PASS" : "FAIL" }')
ok99=$(awk -v r="$r99" 'BEGIN { print (r <= 1.2) ? "PASS" : "FAIL" }')
echo "GOAL svc_connect_under_flood_p50: ${r50}x of unflooded (goal <= 1.2x) $ok50"
echo "GOAL svc_connect_under_flood_p99: ${r99}x of unflooded (goal <= 1.2x) $ok99"
