#!/usr/bin/env bash
# bench/dataplane/run.sh — data-plane benchmark: throughput and latency of
# weft's pod paths against a raw veth (the ceiling) and a Flannel-style
# reference (Debian's bridge + host-local CNI plugins, static kernel VXLAN),
# and CNI ADD latency of weft-cni against bridge + host-local, all measured
# in ONE run on this machine; prints the figures, the ratios and GOAL lines.
# Method and goals: bench/README.md, section "dataplane".
#
# Every packet stays inside network namespaces this script creates (names
# wdp<pid>-*, and wbench-cni-<i> for weft's CNI pods) or in the weft-lab
# lab it brings up (--lab wbench); the root namespace's addresses, routes,
# firewall and sysctls are never touched.  The EXIT trap stops the servers
# it started (by PID), brings its lab down and deletes its namespaces, also
# on failure or ^C.
#
#   BENCH_DP_SECONDS   seconds of each iperf3 / sockperf run      (3)
#   BENCH_DP_REPS      runs of each figure, interleaved; median   (3)
#   BENCH_CNI_PODS     pods of the CNI ADD figure; 0 skips it     (200)
#   BENCH_DP_PIN       1: iperf3 -A 0,1 (client CPU 0, server CPU 1)    (0)
#   BENCH_DP_LAT_PIN   sockperf placement: same (client and server on the
#                      last CPU), split (client CPU 0, server on the last),
#                      off                                        (same)
#   BENCH_DP_REQUIRE_WEFT  1: a weft part that cannot be set up is an error,
#                      not a skip                                 (0)
#   BENCH_DP_LAB       weft-lab lab name                          (wbench)
#   WEFT_LAB_BIN, WEFT_CNI_BIN  the binaries (bin/weft-lab, bin/weft-cni,
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
PIN=${BENCH_DP_PIN:-0}
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
CNI_BIN=${CNI_BIN:-/usr/lib/cni}
K8S_NS=bench

pick() { # first executable of the arguments, else the first argument
	local f
	for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done
	echo "$1"
}
LAB_BIN=${WEFT_LAB_BIN:-$(pick bin/weft-lab build/release/bin/weft-lab)}
WEFT_CNI=${WEFT_CNI_BIN:-$(pick bin/weft-cni build/release/bin/weft-cni)}
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
	if [ ${#NSS[@]} -gt 0 ]; then
		printf 'netns del %s\n' "${NSS[@]}" | ip -force -batch - 2>/dev/null
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "dataplane: $*"; }
oneline() { tr '\t\n' '  ' | sed 's/  */ /g; s/ $//' | cut -c1-300; }
record() { local IFS=$'\t'; echo "$*" >>"$RES"; }

# ---------------------------------------------------------------- preflight
need=()
if [ "$(id -u)" -ne 0 ]; then
	# not an error of weft's: say so in the GOAL summary and let the rest run
	echo "dataplane: skipped (needs root to create network namespaces)"
	for g in dp_same_node_tput dp_cross_node_tput dp_cross_node_rtt cni_add_p50 cni_add_p99; do
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
	nsx "$2"
	out=$(timeout $((SECS + 30)) "${NSX[@]}" iperf3 -c "$3" -p 5201 -t "$SECS" -J "${pin_c[@]}" 2>&1)
	bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
	retr=$(jq -r '.end.sum_sent.retransmits // 0' <<<"$out" 2>/dev/null)
	if [ -z "$bps" ]; then
		path_fail "$1" "iperf3 to $3: $(jq -r '.error // empty' <<<"$out" 2>/dev/null || true) $(tail -n 2 <<<"$out")"
		return
	fi
	record tput "$1" "$bps" "${retr%.*}" "$4"
	awk -v k="$1" -v b="$bps" -v r="$retr" 'BEGIN { printf "  %-11s %6.2f Gbit/s  retr %d\n", k, b / 1e9, r }'
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
	printf '  %-11s RTT p50 %8.1f us  p99 %8.1f us\n' "$1" "$p50" "$p99"
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
echo "dataplane: iperf3 $([ "$PIN" = 1 ] && echo "pinned: client CPU 0, server CPU 1" || echo "not pinned"); $(lat_where)"
record meta reps "$REPS"
record meta secs "$SECS"
record meta pin "$PIN"
record meta latpin "$(lat_where)"
record meta cni_pods "$CNI_PODS"

setup_raw || { echo "dataplane: cannot build the raw veth pair" >&2; exit 1; }
setup_ref || { echo "dataplane: cannot build the reference (bridge + host-local + VXLAN)" >&2; exit 1; }
setup_weft
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

for p in "${PATHS[@]}"; do
	read -r key src dst ip <<<"$p"
	start_servers "$dst" "$ip"
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

run_cni

echo
"$PY" "$DP" report "$RES" || broke=1
exit "$broke"
