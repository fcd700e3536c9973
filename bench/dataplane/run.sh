#!/usr/bin/env bash
# bench/dataplane/run.sh — data-plane benchmark: throughput and latency of
# weft's pod paths against a raw veth (the ceiling) and a Flannel-style
# reference (Debian's bridge + host-local CNI plugins, static kernel VXLAN),
# and CNI ADD latency of weft-cni against bridge + host-local, all measured
# in ONE run on this machine; also weft cross-node in multitenant mode
# against flat mode (a second lab) and how long a join-projects /
# isolate-projects takes to be applied on every node; prints the figures,
# the ratios and GOAL lines.
# Method and goals: bench/README.md, section "dataplane".
#
# Every packet stays inside network namespaces this script creates (names
# wdp<pid>-*, and wbench-cni-<i> for weft's CNI pods) or in the weft-lab
# labs it brings up (--lab wbench, flat; --lab wbenchmt, multitenant); the
# root namespace's addresses, routes, firewall and sysctls are never
# touched.  The EXIT trap stops the servers it started (by PID), brings its
# labs down and deletes its namespaces, also on failure or ^C.
#
#   BENCH_DP_SECONDS   seconds of each iperf3 / sockperf run      (3)
#   BENCH_DP_REPS      runs of each figure, interleaved; median   (3)
#   BENCH_CNI_PODS     pods of the CNI ADD figure; 0 skips it     (200)
#   BENCH_DP_PIN       1: iperf3 -A 0,1 (client CPU 0, server CPU 1);
#                      0: unpinned (bench/README.md: why pinned)        (1)
#   BENCH_DP_CC        TCP congestion control of every iperf3 run
#                      (iperf3 -C NAME); "host": the host's default (host)
#   BENCH_DP_LAT_PIN   sockperf placement: same (client and server on the
#                      last CPU), split (client CPU 0, server on the last),
#                      off                                        (same)
#   BENCH_DP_REQUIRE_WEFT  1: a weft part that cannot be set up is an error,
#                      not a skip                                 (0)
#   BENCH_DP_LAB       weft-lab lab name                          (wbench)
#   BENCH_DP_TENANT    0: skip the multitenant part (second lab)  (1)
#   BENCH_DP_LAB_MT    the multitenant lab's name      (BENCH_DP_LAB + mt)
#   BENCH_DP_TENANT_OPS  join/isolate calls of the propagation figure,
#                      alternating; 0 skips that figure            (10)
#   WEFT_BIN           the daemons and plugin (build/release/bin: never the
#                      sanitizer build bin/ may point at)
#   WEFT_LAB_BIN, WEFT_CNI_BIN  the binaries (src/lab/weft-lab, WEFT_BIN/weft-cni,
#                      else build/release/bin/...)
#   CNI_BIN            Debian's reference plugins                 (/usr/lib/cni)
#
# Exit status: 0 when the measurements completed (failed goals and skipped
# weft parts included) or when not run as root (all GOAL lines SKIP); 1 when
# something broke (a tool is missing, the reference could not be built, a
# measurement or a CNI call failed).
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD

SECS=${BENCH_DP_SECONDS:-3}
REPS=${BENCH_DP_REPS:-3}
CNI_PODS=${BENCH_CNI_PODS:-200}
PIN=${BENCH_DP_PIN:-1}
CC=${BENCH_DP_CC:-host}
if [ "$CC" != host ] && ! grep -qw -- "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null; then
	echo "dataplane: BENCH_DP_CC=$CC is not one of this kernel's: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null) (or: host)" >&2
	exit 1
fi
LAT_PIN=${BENCH_DP_LAT_PIN:-same}
LASTCPU=$(($(nproc) - 1))
case $LAT_PIN in
same) LAT_CPU_C=$LASTCPU LAT_CPU_S=$LASTCPU ;;
split) LAT_CPU_C=0 LAT_CPU_S=$LASTCPU ;;
off) LAT_CPU_C='' LAT_CPU_S='' ;;
*) echo "dataplane: BENCH_DP_LAT_PIN is same, split or off" >&2; exit 1 ;;
esac
REQUIRE_WEFT=${BENCH_DP_REQUIRE_WEFT:-0}
LAB=${BENCH_DP_LAB:-wbench}
TENANT=${BENCH_DP_TENANT:-1}
LAB_MT=${BENCH_DP_LAB_MT:-${LAB}mt}
TENANT_OPS=${BENCH_DP_TENANT_OPS:-10}
[[ $TENANT_OPS =~ ^[0-9]+$ ]] || { echo "dataplane: BENCH_DP_TENANT_OPS is a number of calls (0 skips them)" >&2; exit 1; }
MT_OTHER=other			# the second project of the multitenant lab
CNI_BIN=${CNI_BIN:-/usr/lib/cni}
K8S_NS=bench

pick() { # first executable of the arguments, else the first argument
	local f
	for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done
	echo "$1"
}
# The release build, always: bin/ points at whatever was built last, and
# after `make test` that is the sanitizer build (several times slower).
export WEFT_BIN=${WEFT_BIN:-$TOP/build/release/bin}
[ -x "$WEFT_BIN/weft-agent" ] || { echo "dataplane: $WEFT_BIN/weft-agent is not built (make bench builds it)" >&2; exit 1; }
LAB_BIN=${WEFT_LAB_BIN:-$(pick src/lab/weft-lab bin/weft-lab)}
WEFT_CNI=${WEFT_CNI_BIN:-$WEFT_BIN/weft-cni}
unset WEFT_LAB	# weft-lab reads it as its default lab name; we always pass --lab
PY=$(pick /usr/bin/python3 "$(command -v python3 2>/dev/null)")
DP=$TOP/bench/dataplane/dp.py

P=wdp$$				# prefix of every namespace this run makes
TMP=$(mktemp -d /tmp/weft-bench-dp.XXXXXX)
RES=$TMP/results.tsv
: >"$RES"
NSS=()				# namespaces created here
PIDS=()				# processes started here
LAB_UP=0			# 1 once we (not someone else) ran weft-lab up
WEFT_OK=0
WEFT_WHY=
LAB_MT_UP=0			# 1 while the multitenant lab we brought up is up
TENANT_OK=0
TENANT_WHY=
MT_PIDS=()			# the servers in the multitenant lab's pod
broke=0

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	if [ "$LAB_UP" = 1 ]; then
		timeout 180 "$LAB_BIN" --lab "$LAB" down >/dev/null 2>&1 ||
			echo "dataplane: warning: '$LAB_BIN --lab $LAB down' failed" >&2
	fi
	if [ "$LAB_MT_UP" = 1 ]; then
		timeout 180 "$LAB_BIN" --lab "$LAB_MT" down >/dev/null 2>&1 ||
			echo "dataplane: warning: '$LAB_BIN --lab $LAB_MT down' failed" >&2
	fi
	if [ ${#NSS[@]} -gt 0 ]; then
		printf 'netns del %s\n' "${NSS[@]}" | ip -force -batch - 2>/dev/null
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_NAME=dataplane
source bench/lib.sh

# ---------------------------------------------------------------- preflight
need=()
if [ "$(id -u)" -ne 0 ]; then
	# not an error of weft's: say so in the GOAL summary and let the rest run
	echo "dataplane: skipped (needs root to create network namespaces)"
	for g in dp_same_node_tput dp_cross_node_tput dp_cross_node_rtt cni_add_p50 cni_add_p99 \
		dp_tenant_tput dp_tenant_rtt dp_tenant_propagation; do
		echo "GOAL $g: skipped (not root) SKIP"
	done
	exit 0
fi
for t in ip bridge iperf3 sockperf jq nsenter timeout ss; do
	command -v "$t" >/dev/null 2>&1 || need+=("$t")
done
[ -x "$PY" ] || need+=(python3)
for p in bridge host-local; do [ -x "$CNI_BIN/$p" ] || need+=("$CNI_BIN/$p"); done
if [ ${#need[@]} -gt 0 ]; then
	echo "dataplane: missing ${need[*]} (scripts/deps.sh installs iperf3 sockperf jq iproute2 containernetworking-plugins)" >&2
	exit 1
fi

# ------------------------------------------------------------ ns helpers
mkns() { # NAME: create, remember (only if we made it), lo up
	ip netns add "$1" || return 1
	NSS+=("$1")
	ip -n "$1" link set lo up
}
# nsx NS: NSX = the command prefix that runs a command in NS, a name under
# /var/run/netns or an absolute path.  Both ip netns exec and nsenter exec
# the command, so "${NSX[@]}" CMD & makes $! the command's own PID (a
# backgrounded shell function would give a subshell's PID instead, and
# killing it would orphan the command).
nsx() {
	if [[ $1 == /* ]]; then NSX=(nsenter "--net=$1" --); else NSX=(ip netns exec "$1"); fi
}
in_ns() { local NSX; nsx "$1"; shift; "${NSX[@]}" "$@"; }	# foreground only
enter_json() { # NS -> JSON array of the command prefix entering it
	if [[ $1 == /* ]]; then jq -cn --arg p "--net=$1" '["nsenter",$p,"--"]'
	else jq -cn --arg n "$1" '["ip","netns","exec",$n]'; fi
}
ns_path() { if [[ $1 == /* ]]; then echo "$1"; else echo "/var/run/netns/$1"; fi; }

# cni_call NODE_NS CMD CONF POD_NS ID NAME PLUGIN CNI_PATH: run a plugin
# as a runtime does (config on stdin, CNI_* in the environment).
cni_call() {
	ip netns exec "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		CNI_COMMAND="$2" CNI_CONTAINERID="$5" CNI_NETNS="$(ns_path "$4")" \
		CNI_IFNAME=eth0 CNI_PATH="$8" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$K8S_NS;K8S_POD_NAME=$6" \
		"$7" <"$3"
}

# ------------------------------------------------------------ 1. raw veth
setup_raw() {
	mkns "$P-ra" && mkns "$P-rb" &&
	ip -n "$P-ra" link add veth0 mtu 1500 type veth peer name veth0 netns "$P-rb" &&
	ip -n "$P-ra" addr add 10.99.0.1/24 dev veth0 &&
	ip -n "$P-rb" addr add 10.99.0.2/24 dev veth0 &&
	ip -n "$P-ra" link set veth0 up &&
	ip -n "$P-rb" link set veth0 up
}

# ------------------------------------------- 2. Flannel-style reference
# underlay namespace with bridge br0; node namespaces n1, n2 with eth0
# (192.168.99.i/24, MTU 1500); in each node the bridge plugin makes cni0
# and pods, and vxlan0 (VNI 1, port 4789, nolearning, MTU 1450) reaches
# the other node's pod subnet by an fdb entry, a permanent neighbour for
# the peer's 10.244.j.0 and a route via it onlink — flannel's vxlan backend.
# bridge_conf FILE SUBNET ROUTE DATADIR: the reference bridge + host-local
# network configuration (cni0, gateway, no masquerade, MTU 1450)
bridge_conf() {
	cat >"$1" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "cbr0",
  "type": "bridge",
  "bridge": "cni0",
  "isGateway": true,
  "ipMasq": false,
  "mtu": 1450,
  "ipam": {
    "type": "host-local",
    "ranges": [[{ "subnet": "$2" }]],
    "routes": [{ "dst": "$3" }],
    "dataDir": "$4"
  }
}
JSON
}

ref_conf() { # I -> path of node I's bridge conf
	local f=$TMP/ref-n$1.json
	bridge_conf "$f" "10.244.$1.0/24" 10.244.0.0/16 "$TMP/ipam-n$1"
	echo "$f"
}

ref_pod() { # NODE_I POD_NS NAME -> pod IP on stdout (POD_NS exists)
	local out
	out=$(cni_call "$P-n$1" ADD "$(ref_conf "$1")" "$2" "$P-$3" "$3" \
		"$CNI_BIN/bridge" "$CNI_BIN") || { echo "bridge ADD $3: $out" >&2; return 1; }
	jq -r '.ips[0].address' <<<"$out" | cut -d/ -f1
}

setup_ref() {
	local i j
	mkns "$P-ul" && ip -n "$P-ul" link add br0 type bridge && ip -n "$P-ul" link set br0 up || return 1
	for i in 1 2; do
		mkns "$P-n$i" &&
		ip -n "$P-ul" link add "n$i" mtu 1500 type veth peer name eth0 netns "$P-n$i" &&
		ip -n "$P-ul" link set "n$i" master br0 up &&
		ip -n "$P-n$i" addr add "192.168.99.$i/24" dev eth0 &&
		ip -n "$P-n$i" link set eth0 up &&
		ip -n "$P-n$i" link add vxlan0 address "02:42:c0:a8:63:0$i" type vxlan id 1 \
			dstport 4789 local "192.168.99.$i" dev eth0 nolearning &&
		ip -n "$P-n$i" link set vxlan0 mtu 1450 up &&
		ip -n "$P-n$i" addr add "10.244.$i.0/32" dev vxlan0 || return 1
	done
	for i in 1 2; do
		j=$((3 - i))
		bridge -n "$P-n$i" fdb append "02:42:c0:a8:63:0$j" dev vxlan0 dst "192.168.99.$j" &&
		ip -n "$P-n$i" neigh add "10.244.$j.0" lladdr "02:42:c0:a8:63:0$j" dev vxlan0 nud permanent &&
		ip -n "$P-n$i" route add "10.244.$j.0/24" via "10.244.$j.0" dev vxlan0 onlink || return 1
	done
	mkns "$P-p1a" && mkns "$P-p1b" && mkns "$P-p2a" || return 1
	REF_P1A=$(ref_pod 1 "$P-p1a" p1a) && REF_P1B=$(ref_pod 1 "$P-p1b" p1b) &&
	[ -n "$REF_P1A" ] &&
	REF_P2A=$(ref_pod 2 "$P-p2a" p2a) || return 1
	in_ns "$P-p1a" ping -c1 -W2 "$REF_P1B" >/dev/null || { echo "reference: p1a cannot ping p1b ($REF_P1B)" >&2; return 1; }
	in_ns "$P-p1a" ping -c1 -W2 "$REF_P2A" >/dev/null || { echo "reference: p1a cannot ping p2a ($REF_P2A) across the VXLAN" >&2; return 1; }
}

# ------------------------------------------------------------------ 3. weft
weft_skip() {
	WEFT_WHY=$(printf '%s' "$1" | oneline)
	record skip weft "$WEFT_WHY"
	say "weft: skipped ($WEFT_WHY)"
	[ "$REQUIRE_WEFT" = 1 ] && broke=1
	return 0
}
lab() { timeout "${LAB_TIMEOUT:-300}" "$LAB_BIN" --lab "$LAB" "$@"; }

setup_weft() {
	local st out n pod
	if [ ! -x "$LAB_BIN" ]; then weft_skip "$LAB_BIN is not built"; return; fi
	# Never take over (or later bring down) a lab this run did not make:
	# status succeeds for any lab that exists, even a half-built one.
	if LAB_TIMEOUT=30 lab status -o json >/dev/null 2>&1; then
		weft_skip "a lab named $LAB already exists; remove it with: $LAB_BIN --lab $LAB down"
		return
	fi
	LAB_UP=1
	say "weft: $LAB_BIN --lab $LAB up --nodes 2"
	if ! out=$(lab up --nodes 2 2>&1); then
		# someone else's lab appeared meanwhile: not ours to bring down
		[[ $out == *"already up"* || $out == *"already exists"* ]] && LAB_UP=0
		weft_skip "weft-lab up failed: $(tail -n 3 <<<"$out")"
		return
	fi
	for pod in "node-1 a" "node-1 b" "node-2 c"; do
		# shellcheck disable=SC2086
		out=$(lab pod add ${pod% *} "$K8S_NS" ${pod#* } 2>&1) ||
			{ weft_skip "weft-lab pod add ${pod}: $(tail -n 3 <<<"$out")"; return; }
	done
	st=$(LAB_TIMEOUT=30 lab status -o json 2>&1) || { weft_skip "weft-lab status: $(tail -n 3 <<<"$st")"; return; }
	echo "$st" >"$TMP/weft-status.json"
	podf() { jq -r --arg n "$1" --arg ns "$K8S_NS" --arg f "$2" \
		'.pods[] | select(.namespace == $ns and .name == $n) | .[$f] // empty' "$TMP/weft-status.json" | head -n1; }
	nodef() { jq -r --arg n "$1" --arg f "$2" \
		'.nodes[] | select(.name == $n) | .[$f] // empty' "$TMP/weft-status.json" | head -n1; }
	W_A_NS=$(podf a netns); W_A=$(podf a ip)
	W_B_NS=$(podf b netns); W_B=$(podf b ip)
	W_C_NS=$(podf c netns); W_C=$(podf c ip)
	W_N1_NS=$(nodef node-1 netns); W_N1_CONF=$(nodef node-1 cniConfig)
	W_A=${W_A%/*}; W_B=${W_B%/*}; W_C=${W_C%/*}
	if [ -z "$W_A_NS" ] || [ -z "$W_A" ] || [ -z "$W_B_NS" ] || [ -z "$W_B" ] || [ -z "$W_C_NS" ] || [ -z "$W_C" ]; then
		weft_skip "weft-lab status -o json lacks netns/ip of pods $K8S_NS/a, b, c"; return
	fi
	in_ns "$W_A_NS" ping -c1 -W2 "$W_B" >/dev/null 2>&1 || { weft_skip "pod a cannot ping pod b ($W_B) on node-1"; return; }
	in_ns "$W_A_NS" ping -c1 -W2 "$W_C" >/dev/null 2>&1 || { weft_skip "pod a cannot ping pod c ($W_C) on node-2"; return; }
	WEFT_OK=1
}

# ------------------------------------------------ 3b. weft, multitenant
# A second lab, `up --nodes 2 --mode multitenant`, with bench/a on node-1,
# bench/c on node-2 (same project: allowed) and other/x on node-1 (another
# project: isolated from bench until join-projects).  It is up from before
# the measuring loop (its a->c path is measured right after the flat lab's
# a->c, interleaved) until after the join/isolate figure, and brought down
# before the CNI figure.
tenant_skip() {
	TENANT_WHY=$(printf '%s' "$1" | oneline)
	record skip weft-mt "$TENANT_WHY"
	say "weft multitenant: skipped ($TENANT_WHY)"
	[ "$REQUIRE_WEFT" = 1 ] && broke=1
	return 0
}
labmt() { timeout "${LAB_TIMEOUT:-300}" "$LAB_BIN" --lab "$LAB_MT" "$@"; }

setup_tenant() {
	local out pod i st=$TMP/weftmt-status.json reached
	if [ "$TENANT" = 0 ]; then
		TENANT_WHY="BENCH_DP_TENANT=0"
		record skip weft-mt "$TENANT_WHY"
		say "weft multitenant: skipped ($TENANT_WHY)"
		return
	fi
	if [ ! -x "$LAB_BIN" ]; then tenant_skip "$LAB_BIN is not built"; return; fi
	if [ "$LAB_MT" = "$LAB" ]; then tenant_skip "BENCH_DP_LAB_MT is the flat lab's name ($LAB)"; return; fi
	if LAB_TIMEOUT=30 labmt status -o json >/dev/null 2>&1; then
		tenant_skip "a lab named $LAB_MT already exists; remove it with: $LAB_BIN --lab $LAB_MT down"
		return
	fi
	LAB_MT_UP=1
	say "weft multitenant: $LAB_BIN --lab $LAB_MT up --nodes 2 --mode multitenant"
	if ! out=$(labmt up --nodes 2 --mode multitenant 2>&1); then
		[[ $out == *"already up"* || $out == *"already exists"* ]] && LAB_MT_UP=0
		tenant_skip "weft-lab up --mode multitenant failed: $(tail -n 3 <<<"$out")"
		return
	fi
	for pod in "node-1 $K8S_NS a" "node-2 $K8S_NS c" "node-1 $MT_OTHER x"; do
		# shellcheck disable=SC2086
		out=$(labmt pod add $pod 2>&1) ||
			{ tenant_skip "weft-lab --lab $LAB_MT pod add ${pod}: $(tail -n 3 <<<"$out")"; return; }
	done
	out=$(LAB_TIMEOUT=30 labmt status -o json 2>&1) || { tenant_skip "weft-lab --lab $LAB_MT status: $(tail -n 3 <<<"$out")"; return; }
	echo "$out" >"$st"
	mtpod() { jq -r --arg ns "$1" --arg n "$2" --arg f "$3" \
		'.pods[] | select(.namespace == $ns and .name == $n) | .[$f] // empty' "$st" | head -n1; }
	if [ "$(jq -r '.mode' "$st")" != multitenant ]; then
		tenant_skip "lab $LAB_MT reports mode '$(jq -r '.mode' "$st")', not multitenant"; return
	fi
	M_A_NS=$(mtpod "$K8S_NS" a netns); M_C_NS=$(mtpod "$K8S_NS" c netns); M_C=$(mtpod "$K8S_NS" c ip)
	M_X_NS=$(mtpod "$MT_OTHER" x netns)
	M_N1_IP=$(jq -r '.nodes[] | select(.name == "node-1") | .ip // empty' "$st" | head -n1)
	M_C=${M_C%/*}
	if [ -z "$M_A_NS" ] || [ -z "$M_C_NS" ] || [ -z "$M_C" ] || [ -z "$M_X_NS" ] || [ -z "$M_N1_IP" ]; then
		tenant_skip "weft-lab --lab $LAB_MT status -o json lacks netns/ip of pods $K8S_NS/a, $K8S_NS/c, $MT_OTHER/x or node-1's ip"; return
	fi
	in_ns "$M_A_NS" ping -c1 -W2 "$M_C" >/dev/null 2>&1 ||
		{ tenant_skip "multitenant: pod $K8S_NS/a cannot ping $K8S_NS/c ($M_C) on node-2 (same project)"; return; }
	# The lab must really isolate, or the ratio compares flat with flat:
	# other/x is up (reaches its own node) and cannot reach bench/c.
	in_ns "$M_X_NS" ping -c1 -W2 "$M_N1_IP" >/dev/null 2>&1 ||
		{ tenant_skip "multitenant: pod $MT_OTHER/x cannot ping its node ($M_N1_IP)"; return; }
	reached=1
	for i in 1 2 3 4 5 6 7 8 9 10; do
		in_ns "$M_X_NS" ping -c1 -W1 "$M_C" >/dev/null 2>&1 || { reached=0; break; }
		sleep 0.5
	done
	[ "$reached" = 0 ] ||
		{ tenant_skip "multitenant: pod $MT_OTHER/x still reaches $K8S_NS/c ($M_C) after 10 tries: projects are not isolated"; return; }
	TENANT_OK=1
}

# join/isolate propagation: BENCH_DP_TENANT_OPS calls, alternating
# join-projects --to=bench other / isolate-projects other, each timed from
# invocation to return (dp.py tenant-ops); after each, one ping from
# other/x to bench/c must succeed after a join and fail after an isolate.
run_tenant_ops() {
	local err
	if [ "$TENANT_OK" != 1 ]; then
		record skip tenant-ops "${TENANT_WHY:-multitenant lab not set up}"
		return
	fi
	if [ "$TENANT_OPS" -le 0 ]; then record skip tenant-ops "BENCH_DP_TENANT_OPS=0"; return; fi
	jq -n --arg lab "$LAB_BIN" --arg name "$LAB_MT" --argjson n "$TENANT_OPS" \
		--arg to "$K8S_NS" --arg proj "$MT_OTHER" --argjson enter "$(enter_json "$M_X_NS")" \
		--arg ip "$M_C" \
		'{lab: [$lab, "--lab", $name], ops: $n, to: $to, project: $proj, nodes: 2, timeout: 120,
		  probe: {enter: $enter, ip: $ip, from: ($proj + "/x"), to: ($to + "/c")}}' >"$TMP/tenant-spec.json"
	say "join/isolate propagation: $TENANT_OPS calls in lab $LAB_MT, alternating join-projects --to=$K8S_NS $MT_OTHER / isolate-projects $MT_OTHER"
	if ! timeout $((60 + TENANT_OPS * 150)) "$PY" "$DP" tenant-ops "$TMP/tenant-spec.json" "$TMP/tenant-ops.json"; then
		path_fail tenant-ops "join/isolate timing helper failed"
		return
	fi
	jq -r '.samples[] | "prop\t\(.op)\t\(.wall_ns)\t\(.reported_s)\t\(.nodes)\t\(.revision)\t\(if .reached then 1 else 0 end)"' \
		"$TMP/tenant-ops.json" >>"$RES"
	err=$(jq -r '.error // empty' "$TMP/tenant-ops.json")
	[ -n "$err" ] && path_fail tenant-ops "$err"
	return 0
}

teardown_tenant() { # stop our servers in the multitenant lab, bring it down
	local pid keep=()
	[ "$LAB_MT_UP" = 1 ] || return 0
	for pid in "${MT_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${MT_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do [[ " ${MT_PIDS[*]} " == *" $pid "* ]] || keep+=("$pid"); done
	PIDS=("${keep[@]}")
	MT_PIDS=()
	say "weft multitenant: $LAB_BIN --lab $LAB_MT down"
	if timeout 180 "$LAB_BIN" --lab "$LAB_MT" down >/dev/null 2>&1; then
		LAB_MT_UP=0
	else
		echo "dataplane: warning: '$LAB_BIN --lab $LAB_MT down' failed (retried on exit)" >&2
	fi
}

# -------------------------------------------------------------- measuring
# PATHS: key src-netns dst-netns dst-ip
PATHS=()
FAILED=" "
start_servers() { # NS IP
	local pin_s=()
	[ -n "$LAT_CPU_S" ] && pin_s=(taskset -c "$LAT_CPU_S")
	nsx "$1"
	"${NSX[@]}" iperf3 -s -B "$2" -p 5201 >/dev/null 2>&1 &
	PIDS+=($!)
	"${NSX[@]}" "${pin_s[@]}" sockperf server --tcp -i "$2" -p 11111 >/dev/null 2>&1 &
	PIDS+=($!)
}
wait_listen() { # NS PORT
	local _
	for _ in $(seq 100); do
		[ -n "$(in_ns "$1" ss -Hltn "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}
path_fail() { # KEY MESSAGE
	record err "$1" "$(printf '%s' "$2" | oneline)"
	say "$1: FAILED: $(printf '%s' "$2" | oneline)"
	FAILED+="$1 "
	broke=1
}

run_tput() { # KEY SRC DST_IP RUN
	local out bps retr pin_c=()
	[ "$PIN" = 1 ] && pin_c=(-A "0,1")
	[ "$CC" != host ] && pin_c+=(-C "$CC")
	nsx "$2"
	out=$(timeout $((SECS + 30)) "${NSX[@]}" iperf3 -c "$3" -p 5201 -t "$SECS" -J "${pin_c[@]}" 2>&1)
	bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
	retr=$(jq -r '.end.sum_sent.retransmits // 0' <<<"$out" 2>/dev/null)
	if [ -z "$bps" ]; then
		path_fail "$1" "iperf3 to $3: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || true) $(tail -n 2 <<<"$out")"
		return
	fi
	record tput "$1" "$bps" "${retr%.*}" "$4"
	awk -v k="$1" -v b="$bps" -v r="$retr" 'BEGIN { printf "  %-13s %6.2f Gbit/s  retr %d\n", k, b / 1e9, r }'
}

run_lat() { # KEY SRC DST_IP RUN
	local out p50 p99 pin_c=()
	[ -n "$LAT_CPU_C" ] && pin_c=(taskset -c "$LAT_CPU_C")
	nsx "$2"
	out=$(timeout $((SECS + 30)) "${NSX[@]}" "${pin_c[@]}" sockperf ping-pong --tcp -i "$3" -p 11111 -t "$SECS" -m 64 --full-rtt 2>&1 |
		sed 's/\x1b\[[0-9;]*m//g')
	p50=$(awk '/percentile 50.000 =/ {print $NF}' <<<"$out")
	p99=$(awk '/percentile 99.000 =/ {print $NF}' <<<"$out")
	if [ -z "$p50" ] || [ -z "$p99" ]; then
		path_fail "$1" "sockperf to $3: $(grep -iE 'error|fail' <<<"$out" | tail -n 2)"
		return
	fi
	record lat "$1" "$p50" "$p99" "$4"
	printf '  %-13s RTT p50 %8.1f us  p99 %8.1f us\n' "$1" "$p50" "$p99"
}

# ------------------------------------------------------------- 4. CNI ADD
run_cni() {
	local i names=() wnames=() sides out
	if [ "$CNI_PODS" -le 0 ]; then
		record skip cni "BENCH_CNI_PODS=0"
		record skip cni-reference "BENCH_CNI_PODS=0"
		record skip cni-weft "BENCH_CNI_PODS=0"
		return
	fi
	# reference: one node namespace, its own cni0 and host-local store
	mkns "$P-cn" || { path_fail cni-reference "cannot create node namespace"; return; }
	bridge_conf "$TMP/ref-cni.json" 10.246.0.0/16 10.244.0.0/14 "$TMP/ipam-cni"
	for ((i = 0; i < CNI_PODS; i++)); do names+=("$P-c$i"); done
	NSS+=("${names[@]}")
	printf 'netns add %s\n' "${names[@]}" | ip -batch - || { path_fail cni-reference "cannot create pod namespaces"; return; }
	sides=$(jq -cn --argjson enter "$(enter_json "$P-cn")" --arg plugin "$CNI_BIN/bridge" \
		--arg conf "$TMP/ref-cni.json" --arg cp "$CNI_BIN" --arg id "$P-ref-" \
		--argjson netns "$(printf '/var/run/netns/%s\n' "${names[@]}" | jq -R . | jq -cs .)" \
		'[{name:"reference", enter:$enter, plugin:$plugin, conf:$conf, cniPath:$cp, netns:$netns, idPrefix:$id}]')

	# weft: weft-cni in the lab's node-1 namespace with the first plugin
	# of node-1's conflist (plus the list's name and cniVersion)
	local why=
	if [ "$WEFT_OK" != 1 ]; then why=${WEFT_WHY:-weft not set up}
	elif [ ! -x "$WEFT_CNI" ]; then why="$WEFT_CNI is not built"
	elif [ -z "$W_N1_NS" ] || [ -z "$W_N1_CONF" ]; then why="weft-lab status lacks node-1 netns/cniConfig"
	elif ! jq 'if has("plugins") then .plugins[0] + {name: .name, cniVersion: .cniVersion} else . end' \
		"$W_N1_CONF" >"$TMP/weft-cni.json" 2>/dev/null; then why="cannot read $W_N1_CONF"
	elif compgen -G '/var/run/netns/wbench-cni-*' >/dev/null; then
		why="namespaces wbench-cni-* already exist (a previous run's?)"
	fi
	if [ -n "$why" ]; then
		record skip cni-weft "$(printf '%s' "$why" | oneline)"
	else
		for ((i = 0; i < CNI_PODS; i++)); do wnames+=("wbench-cni-$i"); done
		NSS+=("${wnames[@]}")
		if printf 'netns add %s\n' "${wnames[@]}" | ip -batch -; then
			local wcni; wcni=$(cd "$(dirname "$WEFT_CNI")" && pwd)/$(basename "$WEFT_CNI")
			sides=$(jq -c --argjson enter "$(enter_json "$W_N1_NS")" --arg plugin "$wcni" \
				--arg conf "$TMP/weft-cni.json" --arg cp "$(dirname "$wcni"):$CNI_BIN" \
				--arg id "wbench-cni-" \
				--argjson netns "$(printf '/var/run/netns/%s\n' "${wnames[@]}" | jq -R . | jq -cs .)" \
				'. + [{name:"weft", enter:$enter, plugin:$plugin, conf:$conf, cniPath:$cp, netns:$netns, idPrefix:$id}]' \
				<<<"$sides")
		else
			record skip cni-weft "cannot create wbench-cni-* namespaces"
		fi
	fi
	jq -n --argjson sides "$sides" --argjson n "$CNI_PODS" --arg ns "$K8S_NS" \
		'{pods:$n, k8sNamespace:$ns, sides:$sides}' >"$TMP/cni-spec.json"
	say "CNI ADD: $CNI_PODS pods per side ($(jq -r '[.sides[].name] | join(", ")' "$TMP/cni-spec.json")), interleaved"
	if ! out=$(timeout $((120 + CNI_PODS * 10)) "$PY" "$DP" cni "$TMP/cni-spec.json"); then
		path_fail cni-reference "CNI timing helper failed"
		return
	fi
	jq -r 'to_entries[] | .key as $k |
		(.value.add_ns[] | "cni\t\($k)\tadd\t\(.)"),
		(.value.del_ns[] | "cni\t\($k)\tdel\t\(.)")' <<<"$out" >>"$RES"
	local side err
	for side in $(jq -r 'keys[]' <<<"$out"); do
		err=$(jq -r --arg k "$side" '.[$k].error // empty' <<<"$out")
		[ -n "$err" ] && path_fail "cni-$side" "$err"
	done
	# remove the CNI pods' namespaces now (they are many)
	printf 'netns del %s\n' "$P-cn" "${names[@]}" "${wnames[@]}" | ip -force -batch - 2>/dev/null
}

# ------------------------------------------------------------------- main
lat_where() {
	case $LAT_PIN in
	same) echo "sockperf client and server both on CPU $LASTCPU" ;;
	split) echo "sockperf client on CPU 0, server on CPU $LASTCPU" ;;
	off) echo "sockperf not pinned" ;;
	esac
}
echo "dataplane: kernel $(uname -r), $(nproc) CPUs; $REPS runs x $SECS s per figure, interleaved; CNI pods $CNI_PODS"
echo "dataplane: iperf3 $([ "$PIN" = 1 ] && echo "pinned: client CPU 0, server CPU 1" || echo "not pinned"), congestion control $([ "$CC" = host ] && echo "the host's ($(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null))" || echo "$CC"); $(lat_where)"
record meta reps "$REPS"
record meta secs "$SECS"
record meta pin "$PIN"
record meta cc "$([ "$CC" = host ] && echo "host default ($(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null))" || echo "$CC")"
record meta latpin "$(lat_where)"
record meta cni_pods "$CNI_PODS"
record meta tenant_ops "$TENANT_OPS"

setup_raw || { echo "dataplane: cannot build the raw veth pair" >&2; exit 1; }
setup_ref || { echo "dataplane: cannot build the reference (bridge + host-local + VXLAN)" >&2; exit 1; }
setup_weft
setup_tenant
# The order puts each compared pair next to each other (raw | weft-same,
# ref-cross | weft-cross), and odd runs go through it backwards, so each
# pair is measured A B, B A, A B ...: slow drifts of the machine hit both.
if [ "$WEFT_OK" = 1 ]; then
	PATHS=("raw $P-ra $P-rb 10.99.0.2" "weft-same $W_A_NS $W_B_NS $W_B"
		"ref-same $P-p1a $P-p1b $REF_P1B"
		"ref-cross $P-p1a $P-p2a $REF_P2A" "weft-cross $W_A_NS $W_C_NS $W_C")
else
	PATHS=("raw $P-ra $P-rb 10.99.0.2" "ref-same $P-p1a $P-p1b $REF_P1B"
		"ref-cross $P-p1a $P-p2a $REF_P2A")
	record skip weft-same "$WEFT_WHY"
	record skip weft-cross "$WEFT_WHY"
fi
# multitenant a->c right after flat a->c: measured flat, mt, mt, flat ...
if [ "$TENANT_OK" = 1 ]; then
	PATHS+=("weft-mt-cross $M_A_NS $M_C_NS $M_C")
else
	record skip weft-mt-cross "$TENANT_WHY"
fi

for p in "${PATHS[@]}"; do
	read -r key src dst ip <<<"$p"
	n=${#PIDS[@]}
	start_servers "$dst" "$ip"
	[ "$key" = weft-mt-cross ] && MT_PIDS=("${PIDS[@]:n}")
done
for p in "${PATHS[@]}"; do
	read -r key src dst ip <<<"$p"
	wait_listen "$dst" 5201 && wait_listen "$dst" 11111 || path_fail "$key" "servers did not start in $dst"
done

in_order() { # R: the paths in run R's order (odd runs backwards)
	local i n=${#PATHS[@]}
	if [ $(($1 % 2)) -eq 1 ]; then for ((i = 0; i < n; i++)); do echo "${PATHS[i]}"; done
	else for ((i = n - 1; i >= 0; i--)); do echo "${PATHS[i]}"; done; fi
}
for what in tput lat; do
	for ((r = 1; r <= REPS; r++)); do
		say "$([ $what = tput ] && echo throughput || echo latency), run $r/$REPS"
		while read -r key src dst ip; do
			[[ $FAILED == *" $key "* ]] || "run_$what" "$key" "$src" "$ip" "$r" </dev/null
		done < <(in_order "$r")
	done
done

run_tenant_ops
teardown_tenant	# before the CNI figure: one lab fewer on the machine

run_cni

echo
"$PY" "$DP" report "$RES" || broke=1
exit "$broke"
