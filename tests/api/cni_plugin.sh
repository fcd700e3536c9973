#!/usr/bin/env bash
# tests/api/cni_plugin.sh — weft-cni as a shell or a runtime runs it, where
# the unit test (src/agent/cni_server_test.c) cannot easily look:
#
#   env -i / env VARS ──► weft-cni ◄── stdin: nothing, JSON, garbage, 5 MB
#                            │
#                            └──► /absent/socket (no agent)
#
# 1. a bare environment, each command's missing variables, bad IDs and
#    ifnames: code 4, one JSON line on stdout, one line on stderr, exit 1;
# 2. stdin: empty, not JSON, larger than the bound from a writer that does
#    not stop (the plugin must not hang);
# 3. no agent: ADD/DEL/CHECK/GC say "try again later" (11), STATUS 50;
# 4. thin: the binary links no library of the agent or the controller
#    (how fast a pod starts is bench/dataplane's CNI ADD figure, not a
#    timed check here: on a loaded machine a sanitizer build's start time
#    says nothing).
cd "$(dirname "$0")/../.."
. tests/lib.sh

CNI=${WEFT_CNI:-$BUILD/bin/weft-cni}
dir=$(tmpdir)
sock=$dir/absent.sock
conf10='{"cniVersion":"1.0.0","name":"weft","type":"weft","agentSocket":"'$sock'"}'
conf11='{"cniVersion":"1.1.0","name":"weft","type":"weft","agentSocket":"'$sock'","cni.dev/valid-attachments":[]}'

# cni CODE MSG-REGEX STDIN ENV...: runs the plugin with exactly ENV, stdin
# STDIN; wants exit 1, a single-line CNI error with CODE whose msg matches,
# and one line on stderr.
cni() {
	local code=$1 pat=$2 in=$3; shift 3
	local out err rc=0
	out=$(printf '%s' "$in" | timeout 10 env -i "$@" "$CNI" 2>"$dir/stderr") || rc=$?
	err=$(cat "$dir/stderr")
	[ "$rc" -eq 1 ] || { echo "exit $rc, wanted 1; stdout: $out; stderr: $err"; return 1; }
	[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "stdout is not one line: $out"; return 1; }
	jq -e --argjson c "$code" --arg p "$pat" \
		'.code == $c and (.msg | test($p)) and (.details | type == "string") and (.cniVersion | type == "string")' \
		<<<"$out" >/dev/null || { echo "unexpected error JSON: $out"; return 1; }
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -q '^weft-cni: ' <<<"$err" ||
		{ echo "stderr is not one weft-cni line: $err"; return 1; }
}

check "plugin binary exists" test -x "$CNI"

# 1. environment
check "empty environment: code 4 naming CNI_COMMAND" cni 4 'CNI_COMMAND' "$conf10"
check "unknown command: code 4" cni 4 'unknown CNI_COMMAND "FROB"' "$conf10" CNI_COMMAND=FROB
check "ADD without variables names all three" \
	cni 4 'missing: CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME$' "$conf10" CNI_COMMAND=ADD
check "CHECK without netns names CNI_NETNS only" \
	cni 4 'missing: CNI_NETNS$' "$conf10" CNI_COMMAND=CHECK CNI_CONTAINERID=c1 CNI_IFNAME=eth0
check "DEL needs no netns" \
	cni 4 'missing: CNI_CONTAINERID, CNI_IFNAME$' "$conf10" CNI_COMMAND=DEL
check "empty variables count as missing" \
	cni 4 'missing: CNI_IFNAME$' "$conf10" CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=
check "bad container ID: code 4" \
	cni 4 'CNI_CONTAINERID' "$conf10" CNI_COMMAND=DEL CNI_CONTAINERID='a b' CNI_IFNAME=eth0
check "bad ifname: code 4 naming CNI_IFNAME" \
	cni 4 'CNI_IFNAME' "$conf10" CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=0123456789abcdef
check "errors speak the config's version" \
	bash -c "printf '%s' '{\"cniVersion\":\"0.4.0\",\"name\":\"n\"}' | env -i CNI_COMMAND=ADD '$CNI' 2>/dev/null |
		jq -e '.cniVersion == \"0.4.0\"' >/dev/null"

# 2. stdin
check "empty stdin: code 6" \
	cni 6 'not valid JSON' "" CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0
check "stdin not JSON: code 6" \
	cni 6 'not valid JSON' "cniVersion: 1.0.0" CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0
check "stdin a JSON array: code 6" \
	cni 6 'not a JSON object' '[1]' CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0
check "agentSocket relative: code 7" \
	cni 7 'agentSocket' '{"cniVersion":"1.0.0","name":"n","agentSocket":"cni.sock"}' \
	CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0
oversize() { # a writer that never stops: the plugin reads its bound and answers
	local out rc=0
	out=$(yes '{"padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}' |
		timeout 10 env -i CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0 "$CNI" 2>/dev/null) || rc=$?
	[ "$rc" -eq 1 ] && jq -e '.code == 7 and (.msg | test("larger than"))' <<<"$out" >/dev/null ||
		{ echo "exit $rc: $out"; return 1; }
}
check "endless stdin: code 7, no hang" oversize

# 3. no agent
check "ADD without agent: 11 try again later" \
	cni 11 "^try again later: weft-agent not reachable at $sock: No such file" "$conf10" \
	CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=eth0
check "DEL without agent: 11" \
	cni 11 '^try again later' "$conf10" CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0
check "GC without agent: 11" cni 11 '^try again later' "$conf11" CNI_COMMAND=GC
check "STATUS without agent: 50" \
	cni 50 "^weft-agent is not running at $sock\$" "$conf11" CNI_COMMAND=STATUS
: >"$dir/not-a-socket"
check "agentSocket not a socket: 11" \
	cni 11 'try again later' '{"cniVersion":"1.0.0","name":"n","agentSocket":"'"$dir/not-a-socket"'"}' \
	CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_IFNAME=eth0

# 4. VERSION and thinness
version_ok() {
	local out
	out=$(env -i CNI_COMMAND=VERSION "$CNI" </dev/null) &&
		jq -e '.cniVersion == "1.1.0" and (.supportedVersions | index("1.0.0") != null and index("1.1.0") != null)' \
			<<<"$out" >/dev/null
}
check "VERSION with no stdin, no agent" version_ok
thin() {
	local heavy
	heavy=$(ldd "$CNI" | grep -E 'curl|bpf|mnl|sqlite|fyaml|microhttpd|elf|libz\.' || true)
	[ -z "$heavy" ] || { echo "links: $heavy"; return 1; }
}
check "links no agent or controller library" thin
repeated() {
	local i
	for i in $(seq 50); do env -i CNI_COMMAND=VERSION "$CNI" </dev/null | grep -q cniVersion || return 1; done
}
check "50 VERSION calls in a row each answer" repeated

finish
