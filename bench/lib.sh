# shellcheck shell=bash
# bench/lib.sh — what the script benchmarks (bench/*/run.sh) share: the
# line helpers and the cleanup of what a benchmark made.  Source it after
# setting BENCH_NAME (the prefix of its lines) and with, as a benchmark
# fills them: PIDS (processes it started), LAB_UP (associative: the labs
# it brought up), NSS (network namespaces it made), TMP (its directory),
# LAB_BIN (weft-lab).
#
#   say TEXT...      "NAME: TEXT"
#   oneline          stdin on one line of at most 300 characters
#   record FIELD...  a tab-separated line to $RES
#   bench_cleanup    kill PIDS, take the labs down, delete NSS and TMP,
#                    exit with the status it was called with (trap EXIT)
#   bench_need_root WHY       unless root: say it is skipped, a SKIP line
#                    for each of GOALS, exit 0
#   bench_need_tools HINT TOOL...  every TOOL on PATH (and NEED empty: the
#                    caller's other missing things), else name them and
#                    HINT, exit 1
#   lab_daemon_pids STATUS.json CTRL_NETNS
#                    {"node-1": PID, ..., "controller": PID} of a lab: each
#                    node's agent (weft-lab status -o json) and the
#                    weft-controller in its namespace, whose CPU time
#                    svc.py install reports

say() { echo "$BENCH_NAME: $*"; }
oneline() { tr '\t\n' '  ' | sed 's/  */ /g; s/ $//' | cut -c1-300; }
record() { local IFS=$'\t'; echo "$*" >>"$RES"; }

bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	local pid l
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	for l in "${!LAB_UP[@]}"; do
		timeout 300 "$LAB_BIN" --lab "$l" down >/dev/null 2>&1 ||
			echo "$BENCH_NAME: warning: '$LAB_BIN --lab $l down' failed" >&2
	done
	if [ ${#NSS[@]} -gt 0 ]; then
		printf 'netns del %s\n' "${NSS[@]}" | ip -force -batch - 2>/dev/null
	fi
	rm -rf "$TMP"
	exit "$rc"
}

bench_need_root() {
	local g
	[ "$(id -u)" -eq 0 ] && return 0
	echo "$BENCH_NAME: skipped (needs root $1)"
	for g in "${GOALS[@]}"; do echo "GOAL $g: SKIP (not root)"; done
	exit 0
}

bench_need_tools() {
	local hint=$1 t; shift
	for t in "$@"; do command -v "$t" >/dev/null 2>&1 || NEED+=("$t"); done
	[ ${#NEED[@]} -eq 0 ] && return 0
	echo "$BENCH_NAME: missing ${NEED[*]}${hint:+ ($hint)}" >&2
	exit 1
}

lab_daemon_pids() {
	local pids p
	pids=$(jq -c '[.nodes[] | select(.agentPid) | {key: .name, value: .agentPid}] | from_entries' "$1")
	for p in $(ip netns pids "$2" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = weft-controller ] &&
			pids=$(jq -c --argjson p "$p" '. + {controller: $p}' <<<"$pids")
	done
	echo "$pids"
}
