#!/usr/bin/env bash
# bench/services/run.sh — services benchmark: the first-packet cost of a
# ClusterIP (TCP connect latency) with 10 and with BENCH_SVC_COUNT services
# installed, in weft and in a reference built from the iptables rules
# kube-proxy's iptables mode writes; throughput pod -> ClusterIP against
# pod -> pod; the time to install BENCH_SVC_COUNT services from scratch and
# to program one endpoint change on every node.  All in ONE run on this
# machine; prints the figures, the ratios and GOAL / INFO lines.
# Method and goals: bench/README.md, section "services".
#
#   reference (one topology per service count, both up at once):
#
#     $P-Kc (client)  10.76.0.2 --veth-- 10.76.0.1  $P-Kn (node: ip_forward,
#                                                   iptables-restore of the
#                                                   KUBE-* rules, conntrack)
#     $P-Kb1..3 (backends) 10.78.i.2 --veth-- 10.78.i.1 /
#     K = few (10 services) | many (BENCH_SVC_COUNT); the service IPs
#     (10.96/16) exist only as rules, as with kube-proxy.
#
#   floor: $P-vc 10.77.0.1 --veth-- 10.77.0.2 $P-vs (server): no routing,
#   no rules, no BPF -- what any path here costs at least.
#
#   weft: two labs, BENCH_SVC_LAB-few and BENCH_SVC_LAB-many (weft-lab up
#   --nodes 2); pods svcbench/c, b1, b2, b3 on node-1, svcbench/t1 on node-2.
#
# Every packet stays in network namespaces this script makes (wsv<pid>-*)
# or in its weft-lab labs; the root namespace's addresses, routes, firewall
# and sysctls are never touched.  The EXIT trap stops the processes it
# started (by PID), brings down the labs it brought up and deletes its
# namespaces, also on failure or ^C.  It refuses to use a lab that exists.
#
#   BENCH_SVC_COUNT     services of the large set                    (10000)
#   BENCH_SVC_FEW       services of the small set                    (10)
#   BENCH_SVC_CONNS     connects per latency run                     (5000)
#   BENCH_SVC_WARMUP    unrecorded connects before each run          (200)
#   BENCH_SVC_REPS      runs of each figure, interleaved; median; even,
#                       so both orders of each pair count alike      (6)
#   BENCH_SVC_SECONDS   length of each iperf3 run                    (3)
#   BENCH_SVC_CHANGES   endpoint changes timed; 0 skips them          (20)
#   BENCH_SVC_PIN       iperf3 -A 0,1 (client CPU 0, server CPU 1): 1 (1)
#   BENCH_SVC_LAT_PIN   connlat placement: split (client on CPU 0, servers
#                       on the last), same (all on the last CPU), off (split)
#   BENCH_SVC_SERVER_POLL  connlat servers accept by polling every this
#                       many microseconds, so that no connect wakes a
#                       process (bench/README.md); 0: blocking accept() (200)
#   BENCH_SVC_WAIT      seconds to wait for every node to apply the install;
#                       it gives up sooner when no node's applied-revisions
#                       moves for 30 s (each endpoint change gets 10) (120)
#   BENCH_SVC_REQUIRE_WEFT  1: a weft part that cannot run is an error (0)
#   BENCH_SVC_LAB       prefix of the lab names                      (wsvc)
#   WEFT_LAB_BIN        the lab (bin/weft-lab, else src/lab/weft-lab)
#   BENCH_SVC_AB_TREE   another checkout, built (make): the few lab runs its
#                       weft-lab and build/release/bin instead, an A/B of two
#                       builds in one run; with BENCH_SVC_FEW equal to
#                       BENCH_SVC_COUNT, svc_first_packet is then this
#                       build's connect latency over the other's       (unset)
#
# Exit status: 0 when the measurements completed (failed goals and skipped
# weft parts included) or when not run as root (all GOAL lines SKIP); 1
# when something broke (a tool is missing, the reference could not be
# built, a measurement failed: a connect, an iperf3 run, an API call).
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD

COUNT=${BENCH_SVC_COUNT:-10000}
FEW=${BENCH_SVC_FEW:-10}
AB_TREE=${BENCH_SVC_AB_TREE:-}
if [ -n "$AB_TREE" ] && ! [ -x "$AB_TREE/build/release/bin/weft-agent" ] || [ -n "$AB_TREE" ] && ! [ -x "$AB_TREE/src/lab/weft-lab" ]; then
	echo "services: BENCH_SVC_AB_TREE=$AB_TREE: no build/release/bin/weft-agent or src/lab/weft-lab there" >&2
	exit 1
fi
CONNS=${BENCH_SVC_CONNS:-5000}
WARMUP=${BENCH_SVC_WARMUP:-200}
REPS=${BENCH_SVC_REPS:-6}
SECS=${BENCH_SVC_SECONDS:-3}
CHANGES=${BENCH_SVC_CHANGES:-20}
PIN=${BENCH_SVC_PIN:-1}
LAT_PIN=${BENCH_SVC_LAT_PIN:-split}
SERVER_POLL=${BENCH_SVC_SERVER_POLL:-200}
WAIT=${BENCH_SVC_WAIT:-120}
REQUIRE_WEFT=${BENCH_SVC_REQUIRE_WEFT:-0}
LAB_PREFIX=${BENCH_SVC_LAB:-wsvc}
for v in COUNT FEW CONNS WARMUP REPS SECS CHANGES WAIT SERVER_POLL; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "services: BENCH_SVC_$v='${!v}' is not a number" >&2; exit 1; }
done
[ "$FEW" -ge 1 ] && [ "$COUNT" -ge 4 ] && [ "$COUNT" -le 60000 ] && [ "$FEW" -lt "$COUNT" ] ||
	{ echo "services: need 1 <= BENCH_SVC_FEW < BENCH_SVC_COUNT, 4 <= BENCH_SVC_COUNT <= 60000" >&2; exit 1; }
[ "$CONNS" -ge 100 ] && [ "$REPS" -ge 1 ] && [ "$SECS" -ge 1 ] ||
	{ echo "services: BENCH_SVC_CONNS >= 100, BENCH_SVC_REPS >= 1, BENCH_SVC_SECONDS >= 1" >&2; exit 1; }
LASTCPU=$(($(nproc) - 1))
case $LAT_PIN in
same) LAT_CPU_C=$LASTCPU LAT_CPU_S=$LASTCPU ;;
split) LAT_CPU_C=0 LAT_CPU_S=$LASTCPU ;;
off) LAT_CPU_C='' LAT_CPU_S='' ;;
*) echo "services: BENCH_SVC_LAT_PIN is same, split or off" >&2; exit 1 ;;
esac
LAB_FEW=$LAB_PREFIX-few
LAB_MANY=$LAB_PREFIX-many
K8S_NS=svcbench
POD_CIDR=10.76.0.0/14		# the reference's "pod network": client and backends

pick() { # first executable of the arguments, else the first argument
	local f
	for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done
	echo "$1"
}
# The release build, always: bin/ points at whatever was built last, and
# after `make test` that is the sanitizer build (several times slower).
export WEFT_BIN=${WEFT_BIN:-$TOP/build/release/bin}
[ -x "$WEFT_BIN/weft-agent" ] || { echo "services: $WEFT_BIN/weft-agent is not built (make bench builds it)" >&2; exit 1; }
LAB_BIN=${WEFT_LAB_BIN:-$(pick src/lab/weft-lab bin/weft-lab)}
unset WEFT_LAB	# weft-lab reads it as its default lab name; we always pass --lab
PY=$(pick /usr/bin/python3 "$(command -v python3 2>/dev/null)")
SVC=$TOP/bench/services/svc.py

P=wsv$$				# prefix of every namespace this run makes
TMP=$(mktemp -d /tmp/weft-bench-svc.XXXXXX)
CONNLAT=$TMP/connlat
RES=$TMP/results.tsv
: >"$RES"
NSS=()				# namespaces created here
PIDS=()				# processes started here
declare -A LAB_UP=()		# lab name -> 1 once we (not someone else) ran weft-lab up
WEFT_OK=0
WEFT_WHY=
broke=0

BENCH_NAME=services
source bench/lib.sh
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- preflight
GOALS=(svc_first_packet_p50 svc_first_packet_p99 svc_vs_iptables_p99 svc_tput)
bench_need_root "to create network namespaces"
NEED=()
[ -x "$PY" ] || NEED+=(python3)
bench_need_tools "scripts/deps.sh installs iperf3 jq iproute2 iptables; cc is the C compiler" \
	ip iptables-restore iptables-save iperf3 jq timeout taskset ss cc
if ! out=$(cc -O2 -Wall -Wextra -Werror -o "$CONNLAT" bench/services/tools/connlat.c 2>&1); then
	echo "services: cannot build bench/services/tools/connlat.c: $out" >&2
	exit 1
fi

# ------------------------------------------------------------ ns helpers
mkns() { # NAME: create, remember (only if we made it), lo up
	ip netns add "$1" || return 1
	NSS+=("$1")
	ip -n "$1" link set lo up
}
# in_ns NS CMD...: run CMD in NS (foreground); "ip netns exec" execs the
# command, so "ip netns exec NS CMD &" makes $! the command's own PID.
in_ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

# start_server NS IP PORT ID: a connlat server, pinned like the clients' peers
start_server() {
	local pin=() poll=()
	[ -n "$LAT_CPU_S" ] && pin=(taskset -c "$LAT_CPU_S")
	[ "$SERVER_POLL" -gt 0 ] && poll=(-P "$SERVER_POLL")
	ip netns exec "$1" "${pin[@]}" "$CONNLAT" server "$2" "$3" -i "$4" "${poll[@]}" >>"$TMP/servers.log" 2>&1 &
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
# probe NS IP PORT: the ID of the server a fresh connection reaches
probe() { in_ns "$1" "$CONNLAT" probe "$2" "$3" -t 1000; }

# --------------------------------------------------------- 1. reference
# ref_setup K N: client, node and three backends for N services; the
# iptables-restore into the node is timed (seconds in REF_RESTORE_S).
ref_setup() {
	local k=$1 n=$2 c=$P-${1}c nd=$P-${1}n i b info t0 t1
	mkns "$c" && mkns "$nd" || return 1
	ip -n "$nd" link add c0 type veth peer name eth0 netns "$c" &&
	ip -n "$nd" addr add 10.76.0.1/24 dev c0 && ip -n "$nd" link set c0 up &&
	ip -n "$c" addr add 10.76.0.2/24 dev eth0 && ip -n "$c" link set eth0 up &&
	ip -n "$c" route add default via 10.76.0.1 || return 1
	for i in 1 2 3; do
		b=$P-${k}b$i
		mkns "$b" &&
		ip -n "$nd" link add "b$i" type veth peer name eth0 netns "$b" &&
		ip -n "$nd" addr add "10.78.$i.1/24" dev "b$i" && ip -n "$nd" link set "b$i" up &&
		ip -n "$b" addr add "10.78.$i.2/24" dev eth0 && ip -n "$b" link set eth0 up &&
		ip -n "$b" route add default via "10.78.$i.1" || return 1
		start_server "$b" "10.78.$i.2" 8080 "r$i"
	done
	in_ns "$nd" sysctl -qw net.ipv4.ip_forward=1 || return 1
	info=$("$PY" "$SVC" iptables "$n" "$POD_CIDR" 10.78.1.2:8080,10.78.2.2:8080,10.78.3.2:8080 \
		"$TMP/ref-$k.rules") || return 1
	t0=$(date +%s%N)
	in_ns "$nd" iptables-restore -w 60 <"$TMP/ref-$k.rules" || { echo "iptables-restore into $nd failed" >&2; return 1; }
	t1=$(date +%s%N)
	REF_RESTORE_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	local got
	got=$(in_ns "$nd" iptables-save -t nat | grep -c '^-A KUBE-SERVICES ')
	[ "$got" = $((n + 1)) ] || { echo "reference $k: KUBE-SERVICES has $got rules, expected $((n + 1))" >&2; return 1; }
	for i in 1 2 3; do wait_listen "$P-${k}b$i" 8080 || { echo "reference $k: server in $P-${k}b$i did not start" >&2; return 1; }; done
	REF_IP=$(jq -r .targetIp <<<"$info")
	REF_RULE=$(jq -r .targetRule <<<"$info")
	REF_RULES=$(jq -r '"\(.servicesRules) rules in KUBE-SERVICES, \(.rules) rules and \(.chains) chains in all"' <<<"$info")
	# the service answers, from each backend in turn (random split)
	local ids="" id
	for i in 1 2 3 4 5 6; do
		id=$(probe "$c" "$REF_IP" 80) || { echo "reference $k: $REF_IP:80 from $c does not answer" >&2; return 1; }
		ids+="$id "
	done
	id=$(probe "$c" "$(jq -r .lastIp <<<"$info")" 80) ||
		{ echo "reference $k: the last service $(jq -r .lastIp <<<"$info"):80 does not answer" >&2; return 1; }
	say "reference, $n services: $REF_RULES; iptables-restore ${REF_RESTORE_S} s; measured service $REF_IP:80 is rule $REF_RULE of KUBE-SERVICES; answered by: $ids"
}

# floor_setup: the floor under every path -- two namespaces joined by one
# veth pair, no routing, no rules, no BPF; a connlat server on port 80.
floor_setup() {
	mkns "$P-vc" && mkns "$P-vs" &&
	ip -n "$P-vc" link add eth0 type veth peer name eth0 netns "$P-vs" &&
	ip -n "$P-vc" addr add 10.77.0.1/24 dev eth0 && ip -n "$P-vc" link set eth0 up &&
	ip -n "$P-vs" addr add 10.77.0.2/24 dev eth0 && ip -n "$P-vs" link set eth0 up || return 1
	start_server "$P-vs" 10.77.0.2 80 floor
	wait_listen "$P-vs" 80 && [ "$(probe "$P-vc" 10.77.0.2 80)" = floor ]
}

# ------------------------------------------------------------------ 2. weft
weft_skip() {
	WEFT_WHY=$(printf '%s' "$1" | oneline)
	record skip weft "$WEFT_WHY"
	say "weft: skipped ($WEFT_WHY)"
	[ "$REQUIRE_WEFT" = 1 ] && broke=1
	return 0
}
lab() {
	local l=$1; shift
	if [ "$l" = "$LAB_FEW" ] && [ -n "$AB_TREE" ]; then	# the other build
		WEFT_BIN=$AB_TREE/build/release/bin timeout "${LAB_TIMEOUT:-300}" "$AB_TREE/src/lab/weft-lab" --lab "$l" "$@"
	else
		timeout "${LAB_TIMEOUT:-300}" "$LAB_BIN" --lab "$l" "$@"
	fi
}

LABELS=0	# 1 when weft-lab pod add takes --label/--port
# weft_lab K L: bring lab L up with our pods and servers (K = few|many);
# sets WPOD[K:POD:netns|ip|node] for POD = c b1 b2 b3 t1, and
# WPOD[K:ctrl|url|token] (the controller's netns, URL, token file).
declare -A WPOD=()
weft_lab() {
	local k=$1 l=$2 out st pod node extra id
	if LAB_TIMEOUT=30 lab "$l" status -o json >/dev/null 2>&1; then
		weft_skip "a lab named $l already exists; remove it with: $LAB_BIN --lab $l down"
		return 1
	fi
	LAB_UP[$l]=1
	say "weft: $LAB_BIN --lab $l up --nodes 2"
	if ! out=$(lab "$l" up --nodes 2 2>&1); then
		[[ $out == *"already up"* || $out == *"already exists"* ]] && unset "LAB_UP[$l]"
		weft_skip "weft-lab --lab $l up failed: $(tail -n 3 <<<"$out")"
		return 1
	fi
	for pod in "node-1 c" "node-1 b1" "node-1 b2" "node-1 b3" "node-2 t1"; do
		node=${pod% *} pod=${pod#* }
		extra=()
		[ "$LABELS" = 1 ] && [[ $pod == b* ]] && extra=(--label app=svcbench-be --port p:8080/TCP)
		out=$(lab "$l" pod add "$node" "$K8S_NS" "$pod" "${extra[@]}" 2>&1) ||
			{ weft_skip "weft-lab --lab $l pod add $node $K8S_NS $pod: $(tail -n 3 <<<"$out")"; return 1; }
	done
	st=$TMP/status-$k.json
	out=$(LAB_TIMEOUT=30 lab "$l" status -o json 2>&1) || { weft_skip "weft-lab --lab $l status: $(tail -n 3 <<<"$out")"; return 1; }
	echo "$out" >"$st"
	for pod in c b1 b2 b3 t1; do
		WPOD[$k:$pod:netns]=$(jq -r --arg n "$pod" --arg ns "$K8S_NS" '.pods[] | select(.namespace == $ns and .name == $n) | .netns // empty' "$st")
		WPOD[$k:$pod:ip]=$(jq -r --arg n "$pod" --arg ns "$K8S_NS" '.pods[] | select(.namespace == $ns and .name == $n) | .ip // empty' "$st")
		WPOD[$k:$pod:node]=$(jq -r --arg n "$pod" --arg ns "$K8S_NS" '.pods[] | select(.namespace == $ns and .name == $n) | .node // empty' "$st")
		[ -n "${WPOD[$k:$pod:netns]}" ] && [ -n "${WPOD[$k:$pod:ip]}" ] ||
			{ weft_skip "weft-lab --lab $l status -o json lacks netns/ip of pod $K8S_NS/$pod"; return 1; }
	done
	WPOD[$k:ctrl]=$(jq -r '.controller.netns' "$st")
	WPOD[$k:url]=$(jq -r '.controller.url' "$st")
	WPOD[$k:token]=$(jq -r '.controller.tokenFile' "$st")
	WPOD[$k:ca]=$(jq -r '.controller.caFile // empty' "$st")
	for pod in b1 b2 b3 t1; do
		start_server "${WPOD[$k:$pod:netns]}" "${WPOD[$k:$pod:ip]}" 8080 "$pod"
	done
	if [ "$k" = many ]; then	# the throughput figure's server
		ip netns exec "${WPOD[$k:t1:netns]}" iperf3 -s -B "${WPOD[$k:t1:ip]}" -p 5201 >"$TMP/iperf3-server.log" 2>&1 &
		PIDS+=($!)
		wait_listen "${WPOD[$k:t1:netns]}" 5201 || { weft_skip "lab $l: iperf3 server in pod t1 did not start"; return 1; }
	fi
	for pod in b1 b2 b3 t1; do
		wait_listen "${WPOD[$k:$pod:netns]}" 8080 ||
			{ weft_skip "lab $l: connlat server in pod $pod did not start"; return 1; }
	done
	# pod -> pod first, so a failure below is the service path's
	for pod in b1 t1; do
		id=$(probe "${WPOD[$k:c:netns]}" "${WPOD[$k:$pod:ip]}" 8080 2>&1) ||
			{ weft_skip "lab $l: pod c cannot reach pod $pod (${WPOD[$k:$pod:ip]}:8080): $id"; return 1; }
	done
	return 0
}

# weft_manifest K N FILE: the services of lab K (see svc.py manifest)
weft_manifest() {
	local k=$1 n=$2 be extra
	be=$(jq -cn --arg a "${WPOD[$k:b1:ip]}" --arg b "${WPOD[$k:b2:ip]}" --arg c "${WPOD[$k:b3:ip]}" \
		--arg na "${WPOD[$k:b1:node]}" --arg nb "${WPOD[$k:b2:node]}" --arg nc "${WPOD[$k:b3:node]}" \
		'[[$a, 8080, $na, "b1"], [$b, 8080, $nb, "b2"], [$c, 8080, $nc, "b3"]]')
	extra='[]'
	if [ "$k" = many ]; then
		extra=$(jq -cn --arg t "${WPOD[$k:t1:ip]}" --arg nt "${WPOD[$k:t1:node]}" \
			--arg b "${WPOD[$k:b1:ip]}" --arg nb "${WPOD[$k:b1:node]}" \
			'[{name: "svc-tput", port: 5201, backends: [[$t, 5201, $nt, "t1"]]},
			  {name: "svc-prog", port: 80, backends: [[$b, 8080, $nb, "b1"]]}]')
	fi
	jq -n --arg ns "$K8S_NS" --argjson n "$n" --argjson be "$be" --argjson extra "$extra" \
		--argjson sel "$LABELS" \
		'{namespace: $ns, count: $n, target: "svc-target", targetIndex: (($n - ($extra | length)) / 2 | floor),
		  extra: $extra, backends: $be, port: 80,
		  selector: (if $sel == 1 then {app: "svcbench-be"} else null end)}' >"$TMP/manifest-$k.json"
	"$PY" "$SVC" manifest "$TMP/manifest-$k.json" "$3"
}

# cluster_ip K NAME: the ClusterIP the controller gave service NAME
cluster_ip() {
	LAB_TIMEOUT=30 lab "$(labname "$1")" weftctl get service "$2" -n "$K8S_NS" -o json 2>/dev/null |
		jq -r '.spec.clusterIP // empty'
}
labname() { if [ "$1" = few ]; then echo "$LAB_FEW"; else echo "$LAB_MANY"; fi; }

# target_endpoints K: with a selector, wait until the controller derived
# the target's Endpoints (3 addresses); else make it selector-less with
# hand-written Endpoints (said in the output).
target_endpoints() {
	local k=$1 l n _
	l=$(labname "$k")
	[ "$LABELS" = 1 ] || return 0
	for _ in $(seq 20); do
		n=$(LAB_TIMEOUT=30 lab "$l" weftctl get endpoints svc-target -n "$K8S_NS" -o json 2>/dev/null |
			jq '[.subsets[]?.addresses[]?] | length' 2>/dev/null)
		[ "${n:-0}" -ge 3 ] && { say "lab $l: svc-target selects app=svcbench-be; the controller derived its 3 endpoints"; return 0; }
		sleep 0.5
	done
	say "lab $l: the controller derived no 3 endpoints for svc-target (selector app=svcbench-be) within 10 s; making it selector-less with hand-written Endpoints"
	jq '.selector = null | .count = (.extra | length) + 1 | .targetIndex = 0' "$TMP/manifest-$k.json" >"$TMP/manifest-$k-fix.json"
	"$PY" "$SVC" manifest "$TMP/manifest-$k-fix.json" "$TMP/fix-$k.list.json" >/dev/null &&
		LAB_TIMEOUT=60 lab "$l" weftctl apply -f "$TMP/fix-$k.list.json" >/dev/null
}

# gate K IP: the weft service path works: a connection to IP:80 from pod c
# reaches a backend (retried up to 30 s: programming may lag the API)
gate() {
	local k=$1 ip=$2 t0 err id
	t0=$(date +%s)
	while :; do
		if id=$(probe "${WPOD[$k:c:netns]}" "$ip" 80 2>"$TMP/probe.err"); then
			[[ $id == b[123] ]] && return 0
			err="answered by '$id', not one of b1 b2 b3"
		else
			err=$(cat "$TMP/probe.err")
		fi
		# (a large few lab, BENCH_SVC_AB_TREE, is still being programmed)
		[ $(($(date +%s) - t0)) -ge $((30 + FEW / 100)) ] && break
		sleep 0.5
	done
	GATE_WHY="ClusterIP $ip:80 from pod $K8S_NS/c in lab $(labname "$k") fails after $((30 + FEW / 100)) s: $(printf '%s' "$err" | oneline)"
	return 1
}

setup_weft() {
	local out info last last_info ip
	if [ ! -x "$LAB_BIN" ]; then weft_skip "$LAB_BIN is not built"; return; fi
	"$LAB_BIN" --help 2>&1 | grep -q -- '--label' && LABELS=1
	say "weft: pods $([ "$LABELS" = 1 ] && echo "with labels (app=svcbench-be, port p:8080/TCP); svc-target selects them" || echo "without labels (weft-lab pod add takes no --label yet); every service has hand-written Endpoints")"
	# the large lab first: its install is timed from an empty cluster
	weft_lab many "$LAB_MANY" || return
	info=$(weft_manifest many "$COUNT" "$TMP/many.json") || { weft_skip "cannot write the manifest"; return; }
	last=$(jq -c .last <<<"$info")
	last_info=$info
	# the daemons whose CPU time the install reports: the controller (the
	# weft-controller process in the lab's ctrl namespace) and the agents
	local pids
	pids=$(lab_daemon_pids "$TMP/status-many.json" "${WPOD[many:ctrl]}")
	jq -n --arg lab "$LAB_BIN" --arg l "$LAB_MANY" --arg m "$TMP/many.json" --argjson last "$last" \
		--arg ns "$K8S_NS" --arg url "${WPOD[many:url]}" --arg tok "${WPOD[many:token]}" \
		--arg ca "${WPOD[many:ca]}" --argjson wait "$WAIT" --argjson pids "$pids" \
		'{lab: [$lab, "--lab", $l], manifest: $m, last: $last, namespace: $ns,
		  url: $url, tokenFile: $tok, caFile: (if $ca == "" then null else $ca end), timeout: $wait, stall: 30, nodes: 2, pids: $pids}' >"$TMP/install.json"
	say "weft: installing $COUNT services ($(jq -r .objects <<<"$info") objects, one List) in lab $LAB_MANY: weftctl apply -f, then until every node applied them"
	if ! ip netns exec "${WPOD[many:ctrl]}" "$PY" "$SVC" install "$TMP/install.json" "$TMP/install-out.json"; then
		record err install "install helper failed"
		broke=1
		weft_skip "install helper failed"; return
	fi
	jq -r '"inst\tapply_s\t\(.apply_s)", (select(.total_s) | "inst\ttotal_s\t\(.total_s)", "inst\twait_s\t\(.wait_s)")' \
		"$TMP/install-out.json" >>"$RES"
	out=$(jq -r '.error // empty' "$TMP/install-out.json")
	if [ -n "$out" ]; then record err install "$out"; broke=1; weft_skip "install: $out"; return; fi
	out=$(jq -r '.skip // empty' "$TMP/install-out.json")
	[ -n "$out" ] && record skip install "$out"
	say "weft: $(jq -r '"weftctl apply took \(.apply_s | . * 100 | round / 100) s (\(.created) created)" + (if .total_s then "; every node applied revision \(.revision) \(.total_s | . * 100 | round / 100) s after the start" else "; not applied everywhere: \(.skip)" end)' "$TMP/install-out.json")"
	out=$(jq -r '.cpu // {} | to_entries | map("\(.key) \(.value[0] // "?" | tostring)/\(.value[1] // "?" | tostring)") | join(", ")' "$TMP/install-out.json")
	if [ -n "$out" ]; then
		say "weft: CPU seconds during the apply / the wait after it: $out"
		record meta install_cpu "$out"
	fi

	weft_lab few "$LAB_FEW" || return
	info=$(weft_manifest few "$FEW" "$TMP/few.json") || { weft_skip "cannot write the manifest"; return; }
	out=$(LAB_TIMEOUT=$((120 + FEW / 50)) lab "$LAB_FEW" weftctl apply -f "$TMP/few.json" 2>&1) ||
		{ weft_skip "weftctl apply -f (lab $LAB_FEW, $FEW services): $(tail -n 3 <<<"$out")"; return; }

	for k in many few; do
		target_endpoints "$k"
		ip=$(cluster_ip "$k" svc-target)
		[ -n "$ip" ] || { weft_skip "lab $(labname "$k"): service svc-target has no clusterIP"; return; }
		WPOD[$k:vip]=$ip
	done
	WPOD[many:tputvip]=$(cluster_ip many svc-tput)
	WPOD[many:progvip]=$(cluster_ip many svc-prog)
	for k in many few; do
		if ! gate "$k" "${WPOD[$k:vip]}"; then
			record skip install "$GATE_WHY"
			record skip changes "$GATE_WHY"
			weft_skip "$GATE_WHY"; return
		fi
	done
	# the install is in effect, as far as one connection can tell: the
	# service written last answers too
	ip=$(cluster_ip many "$(jq -r '.last[1]' <<<"$last_info")")
	if jq -e .total_s "$TMP/install-out.json" >/dev/null &&
		{ [ -z "$ip" ] || ! out=$(probe "${WPOD[many:c:netns]}" "$ip" 80 2>&1); }; then
		record err install "every node reported the install applied, but the service written last (${ip:-no clusterIP}:80) fails: $(printf '%s' "$out" | oneline)"
		broke=1
	fi
	say "weft: svc-target is ${WPOD[few:vip]}:80 in lab $LAB_FEW ($FEW services), ${WPOD[many:vip]}:80 in lab $LAB_MANY ($COUNT services); backends b1 b2 b3 on node-1 with the client"
	WEFT_OK=1
}

# -------------------------------------------------------------- measuring
FAILED=" "
path_fail() { # KEY MESSAGE
	record err "$1" "$(printf '%s' "$2" | oneline)"
	say "$1: FAILED: $(printf '%s' "$2" | oneline)"
	FAILED+="$1 "
	broke=1
}

# run_conn KEY NS IP RUN: run R's connects come from source ports
# 1024 + (R-1)*(CONNS+WARMUP) on, so no 4-tuple repeats within the
# benchmark (while REPS*(CONNS+WARMUP) <= 64512): every connect is a new
# flow to the conntrack of either data plane, never a hit on an old entry.
run_conn() {
	local out pin=() kv sport
	[ -n "$LAT_CPU_C" ] && pin=(taskset -c "$LAT_CPU_C")
	sport=$((1024 + ($4 - 1) * (CONNS + WARMUP) % 64512))
	out=$(timeout 900 ip netns exec "$2" "${pin[@]}" "$CONNLAT" client "$3" 80 -n "$CONNS" -w "$WARMUP" \
		-t 1000 -f 10 -p "$sport" 2>&1)
	kv=$(grep '^connlat: n=' <<<"$out")
	if [ -z "$kv" ]; then path_fail "$1" "connlat to $3:80: $(tail -n 2 <<<"$out")"; return; fi
	# connlat: n=N failed=F p50_us=.. p90_us=.. p99_us=.. max_us=.. mean_us=..
	local n failed p50 p99 max mean
	read -r n failed p50 p99 max mean < <(awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		print v["n"], v["failed"], v["p50_us"], v["p99_us"], v["max_us"], v["mean_us"] }' <<<"$kv")
	record conn "$1" "$4" "$n" "$failed" "$p50" "$p99" "$max" "$mean"
	printf '  %-10s connect p50 %7.1f us  p99 %7.1f us  max %8.1f us  (%d ok, %d failed)\n' \
		"$1" "$p50" "$p99" "$max" "$n" "$failed"
	# a lost connect is judged in the report, against the floor's losses
	# (this machine loses about one SYN in 30,000 on a bare veth pair)
	[ "$n" -gt 0 ] || path_fail "$1" "every connect failed: $(grep -v '^connlat: n=' <<<"$out" | tail -n 1)"
	[ "$failed" -gt 0 ] && say "$1: $failed of $CONNS connects failed: $(grep -v '^connlat: n=' <<<"$out" | tail -n 1)"
	return 0
}

# run_tput KEY IP RUN
run_tput() {
	local out bps retr pin=()
	[ "$PIN" = 1 ] && pin=(-A "0,1")
	out=$(timeout $((SECS + 30)) ip netns exec "${WPOD[many:c:netns]}" iperf3 -c "$2" -p 5201 -t "$SECS" -J "${pin[@]}" 2>&1)
	bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
	retr=$(jq -r '.end.sum_sent.retransmits // 0' <<<"$out" 2>/dev/null)
	if [ -z "$bps" ]; then
		path_fail tput "iperf3 to $2:5201 (run $3): $(jq -r '.error // empty' <<<"$out" 2>/dev/null || tail -n 2 <<<"$out"); server: $(grep -i 'error' "$TMP/iperf3-server.log" | tail -n 2)"
		return
	fi
	record tput "$1" "$3" "$bps" "${retr%.*}"
	awk -v k="$1" -v b="$bps" -v r="$retr" 'BEGIN { printf "  %-10s %6.2f Gbit/s  retr %d\n", k, b / 1e9, r }'
}

run_changes() {
	local err
	if [ "$WEFT_OK" != 1 ]; then return; fi
	if [ "$CHANGES" -le 0 ]; then record skip changes "BENCH_SVC_CHANGES=0"; return; fi
	if [ -z "${WPOD[many:progvip]}" ]; then record err changes "service svc-prog has no clusterIP"; broke=1; return; fi
	jq -n --arg url "${WPOD[many:url]}" --arg tok "${WPOD[many:token]}" --arg ca "${WPOD[many:ca]}" --arg ns "$K8S_NS" \
		--arg ip "${WPOD[many:progvip]}" --argjson n "$CHANGES" \
		--arg b "${WPOD[many:b1:ip]}" --arg nb "${WPOD[many:b1:node]}" \
		--arg t "${WPOD[many:t1:ip]}" --arg nt "${WPOD[many:t1:node]}" \
		--argjson probe "$(jq -cn --arg n "${WPOD[many:c:netns]}" --arg c "$CONNLAT" '["ip", "netns", "exec", $n, $c]')" \
		'{url: $url, tokenFile: $tok, caFile: (if $ca == "" then null else $ca end), namespace: $ns, name: "svc-prog", port: 8080, ip: $ip,
		  servicePort: 80, backends: [[$b, "b1", $nb, "b1"], [$t, "t1", $nt, "t1"]],
		  changes: $n, timeout: 10, nodes: 2, probe: $probe, probes: 3}' >"$TMP/changes.json"
	say "endpoint changes: $CHANGES in lab $LAB_MANY, Endpoints svc-prog switched between b1 (node-1) and t1 (node-2)"
	if ! timeout $((60 + CHANGES * 30)) ip netns exec "${WPOD[many:ctrl]}" "$PY" "$SVC" changes "$TMP/changes.json" "$TMP/changes-out.json"; then
		record err changes "endpoint change helper failed"
		broke=1
		return
	fi
	jq -r '.samples[] | "chg\t\(.s)\t\(if .ok then 1 else 0 end)"' "$TMP/changes-out.json" >>"$RES"
	err=$(jq -r '.error // empty' "$TMP/changes-out.json")
	[ -n "$err" ] && { record err changes "$err"; broke=1; }
	err=$(jq -r '.skip // empty' "$TMP/changes-out.json")
	[ -n "$err" ] && record skip changes "$err"
	return 0
}

# ------------------------------------------------------------------- main
lat_where() {
	case $LAT_PIN in
	same) echo "connlat client and servers on CPU $LASTCPU" ;;
	split) echo "connlat client on CPU 0, servers on CPU $LASTCPU" ;;
	off) echo "connlat not pinned" ;;
	esac | tr -d '\n'
	if [ "$SERVER_POLL" -gt 0 ]; then echo ", servers poll accept every $SERVER_POLL us"
	else echo ", servers block in accept"; fi
}
echo "services: kernel $(uname -r), $(nproc) CPUs, $(iptables --version 2>/dev/null); $FEW vs $COUNT services; $REPS runs x $CONNS connects (+$WARMUP warm-up), interleaved; $(lat_where); iperf3 $SECS s $([ "$PIN" = 1 ] && echo "pinned -A 0,1" || echo "not pinned")"
if [ $((REPS % 2)) -eq 1 ]; then
	say "note: BENCH_SVC_REPS=$REPS is odd: one order of each compared pair is measured once more than the other"
fi
if [ $((REPS * (CONNS + WARMUP))) -gt 64512 ]; then
	say "note: $REPS x $((CONNS + WARMUP)) connects exceed the 64512 source ports: 4-tuples repeat, and a repeated one may hit an old conntrack entry"
fi
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
record meta count "$COUNT"
record meta few "$FEW"
record meta reps "$REPS"
record meta conns "$CONNS"
record meta warmup "$WARMUP"
record meta secs "$SECS"
record meta nodes 2
record meta pin "$(lat_where)"
record meta tput_pin "$([ "$PIN" = 1 ] && echo "iperf3 -A 0,1" || echo "not pinned")"

ref_setup few "$FEW" || { echo "services: cannot build the reference with $FEW services" >&2; exit 1; }
REF_FEW_IP=$REF_IP
ref_setup many "$COUNT" || { echo "services: cannot build the reference with $COUNT services" >&2; exit 1; }
REF_MANY_IP=$REF_IP
record inst restore_s "$REF_RESTORE_S"
record meta ref_target "$REF_RULE of $((COUNT + 1)) in KUBE-SERVICES (the middle) with $COUNT services"
record meta ref_rules "$REF_RULES"

floor_setup || { echo "services: cannot build the veth-pair floor" >&2; exit 1; }
setup_weft

# The order puts each compared pair next to each other (floor | ref-few,
# ref-few | ref-many, ref-many | weft-many, weft-many | weft-few), and odd
# runs go through it backwards, so each pair is measured A B, B A, A B ...
PATHS=("floor $P-vc 10.77.0.2" "ref-few $P-fewc $REF_FEW_IP" "ref-many $P-manyc $REF_MANY_IP")
if [ "$WEFT_OK" = 1 ]; then
	PATHS+=("weft-many ${WPOD[many:c:netns]} ${WPOD[many:vip]}" "weft-few ${WPOD[few:c:netns]} ${WPOD[few:vip]}")
fi
in_order() { # R LIST...: the list in run R's order (even runs backwards)
	local r=$1 i; shift
	local a=("$@") n=$#
	if [ $((r % 2)) -eq 1 ]; then for ((i = 0; i < n; i++)); do echo "${a[i]}"; done
	else for ((i = n - 1; i >= 0; i--)); do echo "${a[i]}"; done; fi
}
for ((r = 1; r <= REPS; r++)); do
	say "connect latency, run $r/$REPS"
	while read -r key ns ip; do
		[[ $FAILED == *" $key "* ]] || run_conn "$key" "$ns" "$ip" "$r" </dev/null
	done < <(in_order "$r" "${PATHS[@]}")
done

if [ "$WEFT_OK" = 1 ] && [ -n "${WPOD[many:tputvip]}" ]; then
	TPATHS=("pod ${WPOD[many:t1:ip]}" "svc ${WPOD[many:tputvip]}")
	for ((r = 1; r <= REPS; r++)); do
		say "throughput, run $r/$REPS"
		while read -r key ip; do
			[[ $FAILED == *" tput "* ]] || run_tput "$key" "$ip" "$r" </dev/null
		done < <(in_order "$r" "${TPATHS[@]}")
	done
elif [ "$WEFT_OK" = 1 ]; then
	record err tput "service svc-tput has no clusterIP"
	broke=1
fi

run_changes

record meta load "$LOAD_START / $(cut -d' ' -f1 /proc/loadavg)"
echo
"$PY" "$SVC" report "$RES" || broke=1
exit "$broke"
