#!/usr/bin/env bash
# bench/dataplane/ab.sh — two builds of weft's data plane, pod to pod, in
# one sitting: what a change to the programs costs in throughput.
#
#   reference build (BENCH_AB_REF, a commit: git archive, make)   this tree's build/release
#        lab wab<pid>-r: node-1 {a, b}  node-2 {c}                 lab wab<pid>-t: the same
#
# Both labs are up at once (two nodes each, flat mode, every agent on one
# kernel), and each round measures, with iperf3 for BENCH_DP_SECONDS:
# a -> b (same node) and a -> c (across the VXLAN tunnel) in the reference
# lab, then in this tree's, the order swapped every round so that neither
# build always goes first; then, when this tree has `weftctl flows`, in
# this tree's lab again with `weftctl flows --follow` attached (every
# node's programs report forwarded packets while it listens).  Each round
# gives a ratio, this tree's run over the reference's of the same round;
# the figure is the median of those ratios (the machine's speed drifts by
# 10 % in a sitting, and a ratio within a round cancels it where a ratio
# of two medians does not); the medians of the runs are printed beside
# it.  Comparing two
# labs of one run, not two runs, is what makes a 1 % goal measurable on a
# machine whose throughput moves by more than that between runs.
#
#   BENCH_AB_REF       the reference commit (e1fc3e6: the last one before
#                      the trace's and the flow log's hooks in the programs)
#   BENCH_AB_REPS      rounds (10)
#   BENCH_DP_SECONDS   seconds of each iperf3 run (3)
#   BENCH_DP_PIN       1: iperf3 -A 0,1 (client CPU 0, server CPU 1) (1)
#
# GOAL lines: across nodes and on one node, with nobody listening to the
# flow log, this tree ≥ 0.99× the reference; with a listener, ≥ 0.95×
# (bench/README.md, "dataplane: two builds").  Every packet stays in the labs' namespaces; the EXIT trap
# stops the iperf3 servers it started (by PID), brings both labs down and
# removes its directory, the reference's tree and build in it.
set -u
cd "$(dirname "$0")/../.."
BENCH_NAME=ab
REF=${BENCH_AB_REF:-e1fc3e6}
REPS=${BENCH_AB_REPS:-10}
SECS=${BENCH_DP_SECONDS:-3}
PIN=${BENCH_DP_PIN:-1}
GOALS=("ab_cross_node" "ab_same_node" "ab_cross_node_listened" "ab_same_node_listened")
PIDS=()
NSS=()
declare -A LAB_UP=()
LAB_BIN=$PWD/src/lab/weft-lab
source bench/lib.sh
bench_need_root "(network namespaces, BPF)"
NEED=()
bench_need_tools "scripts/deps.sh installs them" iperf3 jq git make
TMP=$(mktemp -d /tmp/weft-bench-ab.XXXXXX)
RES=$TMP/results
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

THIS_BIN=$PWD/build/release/bin
[ -x "$THIS_BIN/weft-agent" ] || { say "$THIS_BIN/weft-agent is not built (make)"; exit 1; }
say "reference: $(git log -1 --format='%h %s' "$REF" 2>/dev/null | cut -c1-100)"
git rev-parse --verify -q "$REF^{commit}" >/dev/null || { say "BENCH_AB_REF $REF: no such commit here"; exit 1; }
mkdir "$TMP/ref"
git archive "$REF" | tar -x -C "$TMP/ref" || { say "git archive $REF failed"; exit 1; }
say "building the reference in $TMP/ref"
make -C "$TMP/ref" -j2 all >"$TMP/ref-build.log" 2>&1 || { say "the reference did not build: $(tail -n 3 "$TMP/ref-build.log" | oneline)"; exit 1; }
REF_BIN=$TMP/ref/build/release/bin

# up KEY BIN: a lab of two nodes with pods a, b (node-1) and c (node-2),
# iperf3 servers in b and c; sets NS_<KEY>_{a,b,c} and IP_<KEY>_{b,c}
up() {
	local key=$1 bin=$2 lab="wab$$-$1" out st p
	LAB_UP[$lab]=1
	out=$(WEFT_BIN=$bin timeout 300 "$LAB_BIN" --lab "$lab" up --nodes 2 2>&1) ||
		{ say "weft-lab up ($key): $(tail -n 3 <<<"$out" | oneline)"; exit 1; }
	for p in "node-1 a" "node-1 b" "node-2 c"; do
		# shellcheck disable=SC2086
		out=$(WEFT_BIN=$bin timeout 120 "$LAB_BIN" --lab "$lab" pod add ${p% *} bench ${p#* } 2>&1) ||
			{ say "pod add $p ($key): $(tail -n 3 <<<"$out" | oneline)"; exit 1; }
	done
	st=$(timeout 30 "$LAB_BIN" --lab "$lab" status -o json) || { say "status ($key) failed"; exit 1; }
	for p in a b c; do
		printf -v "NS_${key}_$p" '%s' "$(jq -r --arg n $p '.pods[] | select(.name == $n) | .netns' <<<"$st")"
		printf -v "IP_${key}_$p" '%s' "$(jq -r --arg n $p '.pods[] | select(.name == $n) | .ip | sub("/.*"; "")' <<<"$st")"
	done
	for p in b c; do
		local ns="NS_${key}_$p" ip="IP_${key}_$p"
		ip netns exec "${!ns}" iperf3 -s -B "${!ip}" -p 5201 >/dev/null 2>&1 &
		PIDS+=($!)
	done
	for p in b c; do
		local ns="NS_${key}_$p" _
		for _ in $(seq 100); do
			[ -n "$(ip netns exec "${!ns}" ss -Hltn 'sport = :5201')" ] && break
			sleep 0.05
		done
	done
}

# tput KEY PATH DST [AS]: one iperf3 run from a in KEY's lab, bits a
# second recorded (under AS, else KEY)
tput() {
	local ns="NS_${1}_a" ip="IP_${1}_$3" as=${4:-$1} pin=() out bps
	[ "$PIN" = 1 ] && pin=(-A 0,1)
	out=$(timeout $((SECS + 30)) ip netns exec "${!ns}" iperf3 -c "${!ip}" -p 5201 -t "$SECS" -J "${pin[@]}" 2>&1)
	bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
	[ -n "$bps" ] || { say "iperf3 $as $2: $(tail -n 2 <<<"$out" | oneline)"; exit 1; }
	record "$as" "$2" "$bps"
}

say "labs: the reference's and this tree's"
up ref "$REF_BIN"
up this "$THIS_BIN"
LISTEN=0
if WEFT_BIN=$THIS_BIN timeout 30 "$LAB_BIN" --lab "wab$$-this" weftctl flows --help >/dev/null 2>&1; then
	LISTEN=1
fi
# listened KEY: iperf3 runs of this tree's lab with a follower of its flows
listened() {
	local f
	WEFT_BIN=$THIS_BIN "$LAB_BIN" --lab "wab$$-this" weftctl flows --follow -o json >"$TMP/follow.json" 2>&1 &
	f=$!
	PIDS+=("$f")
	# the follower reaches both agents: wait for its first event (a SYN of a probe)
	for _ in $(seq 100); do
		ip netns exec "$NS_this_a" bash -c "exec 3<>/dev/tcp/$IP_this_c/9" 2>/dev/null
		grep -q '"event":"new"' "$TMP/follow.json" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '"event":"new"' "$TMP/follow.json" || { say "the follower saw no connection: $(tail -n 2 "$TMP/follow.json" | oneline)"; exit 1; }
	tput this cross c listened
	tput this same b listened
	kill -INT "$f"
	wait "$f" 2>/dev/null
	# the agents drop the relay's streams at their next write (a heartbeat,
	# every 5 s): until then the programs still report for a listener, so
	# the next round waits for both to have none
	local nodes
	nodes=$(timeout 30 "$LAB_BIN" --lab "wab$$-this" status -o json | jq -r '.nodes[] | "\(.netns) \(.ip)"')
	for _ in $(seq 300); do
		! listened_to <<<"$nodes" && return 0
		sleep 0.1
	done
	say "this tree's agents kept a listener 30 s after the follower ended"
	exit 1
}
# listened_to < "NETNS IP" lines: does any of these agents count a
# listener (weft_agent_flows_listeners above 0, or no answer)?
listened_to() {
	local ns ip n
	while read -r ns ip; do
		n=$(ip netns exec "$ns" curl -sf --max-time 5 "http://$ip:9966/metrics" |
			awk '$1 == "weft_agent_flows_listeners" { print $2 }')
		[ "$n" = 0 ] || return 0
	done
	return 1
}
per=$((4 + 2 * LISTEN))
say "$REPS rounds of iperf3 -t $SECS$([ "$PIN" = 1 ] && echo ", pinned: client CPU 0, server CPU 1")$([ $LISTEN = 1 ] && echo "; then this tree's with weftctl flows --follow attached")"
for r in $(seq "$REPS"); do
	order=(ref this)
	[ $((r % 2)) -eq 0 ] && order=(this ref)
	for k in "${order[@]}"; do
		tput "$k" cross c
		tput "$k" same b
	done
	[ $LISTEN = 1 ] && listened
	say "round $r: $(awk -v r="$r" -v per="$per" 'NR > (r - 1) * per { printf "%s %s %.2f  ", $1, $2, $3 / 1e9 }' "$RES")"
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# One ratio a round: build k's run of path over the reference's in the
# same round (the lines of round r are (r - 1) * per + 1 .. r * per).
ratios() { awk -v p="$1" -v k="$2" -v per="$per" '
	{ r = int((NR - 1) / per); if ($2 == p) v[r, $1] = $3 }
	END { for (i = 0; i < NR / per; i++) if (v[i, "ref"] > 0 && v[i, k] > 0) print v[i, k] / v[i, "ref"] }' "$RES"; }
for path in cross same; do
	ref=$(awk -v p=$path '$1 == "ref" && $2 == p { print $3 }' "$RES" | median)
	for k in this listened; do
		[ $k = listened ] && [ $LISTEN != 1 ] && { echo "GOAL ab_${path}_node_listened: SKIP (this tree has no weftctl flows)"; continue; }
		g=ab_${path}_node; goal=0.99; what="this tree"
		[ $k = listened ] && { g=${g}_listened; goal=0.95; what="flows followed"; }
		med=$(awk -v p=$path -v k=$k '$1 == k && $2 == p { print $3 }' "$RES" | median)
		each=$(ratios $path $k | awk '{ printf "%s%.3f", (NR > 1 ? " " : ""), $1 }')
		ratio=$(ratios $path $k | median)
		awk -v p=$path -v w="$what" -v a="$ref" -v b="$med" -v r="$ratio" -v e="$each" -v g="$g" -v goal=$goal 'BEGIN {
			printf "ab: %s node, %s: rounds %s\n", p, w, e
			printf "ab: %s node: reference %.2f Gbit/s, %s %.2f Gbit/s (medians: %.3f×)\n", p, a / 1e9, w, b / 1e9, b / a
			printf "GOAL %s: %.3f× (median of the rounds; goal ≥ %.2f×) %s\n", g, r, goal, (r >= goal) ? "PASS" : "FAIL" }'
	done
done
