#!/usr/bin/env bash
# tests/api/agent_flags.sh — weft-agent's command line refuses what it
# cannot use before it touches anything (docs/agent.md):
#
# 1. every numeric flag, given a value below or above its range, a
#    negative, an empty one, a word, a number with a tail or one beyond
#    64 bits: exit 2, one line on stderr naming the flag, the value and the
#    range; no state dir, pin dir or socket made;
# 2. --metrics-address and --flows-address, given what is not ADDRESS:PORT (no port, port 0,
#    beyond 65535 or negative, a name, an IPv6 address) nor off: exit 2,
#    one line naming the value, nothing made;
# 3. an unknown flag, a missing required flag, a stray argument: exit 2;
# 4. --help names every flag it takes.
#
# Needs nothing but the binary: no controller, no root.
cd "$(dirname "$0")/../.."
. tests/lib.sh

AGENT=${WEFT_AGENT:-$BUILD/bin/weft-agent}
dir=$(tmpdir)
base=(--controller https://127.0.0.1:9 --node n1 --node-ip 10.0.0.1
      --state-dir "$dir/state" --bpf-pin-dir "$dir/pin" --cni-socket "$dir/cni.sock")

# refused FLAG VALUE LO HI: exit 2, the one message, nothing made
refused() {
	local out rc=0
	out=$("$AGENT" "${base[@]}" "--$1" "$2" 2>&1 >/dev/null) || rc=$?
	if [ "$rc" != 2 ] || [ "$out" != "weft-agent: --$1 $2: not a number in $3..$4" ] || [ -e "$dir/state" ] ||
		[ -e "$dir/pin" ] || [ -e "$dir/cni.sock" ]; then
		echo "--$1 '$2': exit $rc, stderr '$out'; made: $(ls "$dir")"
		return 1
	fi
}

# 1. numeric flags
while read -r flag lo hi; do
	bad=0 why=""
	for v in $((lo - 1)) $((hi + 1)) -5 "" abc 12x 99999999999999999999; do
		out=$(refused "$flag" "$v" "$lo" "$hi") || { bad=$((bad + 1)); why=$out; }
	done
	if [ "$bad" = 0 ]; then pass "--$flag: 7 hostile values refused (exit 2, named, range $lo..$hi), nothing made"
	else fail "--$flag: hostile values refused" "$bad wrong; e.g. $why"; fi
done <<'EOF'
mtu 576 65485
max-services 16 16777216
max-backends 16 16777216
max-conntrack 16 16777216
conntrack-per-client 1 8388608
max-policy-rules 16 16777216
max-policy-conntrack 16 16777216
policy-conntrack-per-client 1 16777216
watch-timeout 1 3600
list-page-size 1 100000
EOF

# 2. --metrics-address and --flows-address
for flag in metrics-address flows-address; do
	bad=0 why=""
	for v in 10.0.0.1 10.0.0.1: 10.0.0.1:0 10.0.0.1:65536 10.0.0.1:-1 host:9966 "[::1]:9966" 10.0.0.300:1 ""; do
		rc=0
		out=$("$AGENT" "${base[@]}" --$flag "$v" 2>&1 >/dev/null) || rc=$?
		if [ "$rc" != 2 ] || [ "$out" != "weft-agent: --$flag $v: not ADDRESS:PORT (an IPv4 address, or none for every address, and a port 1-65535), nor off" ] ||
			[ -n "$(ls "$dir")" ]; then
			bad=$((bad + 1)) why="'$v': exit $rc, stderr '$out'"
		fi
	done
	if [ "$bad" = 0 ]; then pass "--$flag: 9 malformed values refused (exit 2, named), nothing made"
	else fail "--$flag: malformed values refused" "$bad wrong; e.g. $why"; fi
done

# 3. the rest of the line
exit_of() { local rc=0; "$AGENT" "$@" >/dev/null 2>&1 || rc=$?; echo "$rc"; }
check "an unknown flag: exit 2" test "$(exit_of "${base[@]}" --no-such-flag)" = 2
check "--node missing: exit 2" test "$(exit_of --controller https://127.0.0.1:9 --node-ip 10.0.0.1)" = 2
check "a stray argument: exit 2" test "$(exit_of "${base[@]}" stray)" = 2
check "... and nothing made" test -z "$(ls "$dir")"

# 4. --help
help=$("$AGENT" --help 2>&1)
missing=""
for f in controller token-file ca-file node node-ip state-dir bpf-pin-dir cni-socket mtu max-services \
	max-backends max-conntrack conntrack-per-client max-policy-rules max-policy-conntrack \
	policy-conntrack-per-client watch-timeout list-page-size metrics-address flows-address; do
	grep -q -- "--$f " <<<"$help" || missing+=" --$f"
done
check "--help names every flag${missing:+ (missing:$missing)}" test -z "$missing"

finish
