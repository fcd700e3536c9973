#!/usr/bin/env bash
# bench/netpol/run.sh — NetworkPolicy benchmark: what BENCH_NP_POLICIES
# policies (BENCH_NP_RULES rules in all, over BENCH_NP_PODS pods, drawn from
# a fixed seed by np.py gen) cost an allowed pair's throughput and TCP
# connect latency, against the same pair with no policy; the same against
# a reference that compiles the same policies into iptables + ipset the way
# kube-router does; how long a policy create / update / delete takes to be
# enforced on every node (probed); CNI ADD of a selected pod with and
# without the policies.  All in ONE run; GOAL lines at the end.
# Method and goals: bench/README.md, section "netpol".
#
#   reference (K = none | pol, both up at once, same addresses):
#
#     $P-Kc (client, 10.80.0.3/32) --veth-- $P-Kn (node: ip_forward; for
#     K=pol the compiled ipsets and   --veth-- $P-Ks (server, 10.80.0.2/32)
#     iptables rules, conntrack)      both veths 169.254.1.1/32 on the node
#
#   floor: $P-vc 10.77.0.1 --veth-- 10.77.0.2 $P-vs: no routing, no rules.
#
#   weft: two labs (weft-lab up --nodes 2 --mode networkpolicy):
#     BENCH_NP_LAB-none  np-0/cli (node-1), np-0/srv (node-2), no policy
#     BENCH_NP_LAB-pol   every generated pod (the same cli and srv among
#                        them), np-prop/{c1,s1} on node-1 and {c2,s2} on
#                        node-2, and every generated policy
#   cli -> srv is allowed by policy np-pol-0 (ingress of srv, named ports)
#   and np-pol-1 (egress of cli); both ends are isolated.
#
# Every packet stays in network namespaces this script makes (wnp<pid>-*)
# or in its labs; the root namespace's addresses, routes, firewall, ipsets
# and sysctls are never touched (ipsets and rules live in $P-poln and go
# with it).  The EXIT trap stops the processes it started (by PID), brings
# down the labs it brought up and deletes its namespaces.
#
#   BENCH_NP_PODS        pods of the policy lab, the pair included    (200)
#   BENCH_NP_POLICIES    NetworkPolicies                              (500)
#   BENCH_NP_RULES       ingress + egress rules of all of them        (5000)
#   BENCH_NP_NAMESPACES  namespaces they spread over                  (10)
#   BENCH_NP_SEED        seed of the generator                        (1)
#   BENCH_NP_REPS        runs of each figure, interleaved; median     (6)
#   BENCH_NP_CONNS       connects per latency run                     (5000)
#   BENCH_NP_WARMUP      unrecorded connects before each              (200)
#   BENCH_NP_SECONDS     length of each iperf3 run                    (3)
#   BENCH_NP_PROP_OPS    policy changes timed; 0 skips them           (20)
#   BENCH_NP_PROP_TIMEOUT  seconds an op may take before it counts as
#                        not enforced                                 (3)
#   BENCH_NP_POD_JOBS    weft-lab pod add calls at once               (4)
#   BENCH_NP_CNI_PODS    pods per side of the CNI ADD figure; 0 skips (BENCH_CNI_PODS, else 100)
#   BENCH_NP_CNI_ROUNDS  rounds of those ADDs (and DELs) per side (default 3)
#   BENCH_NP_NONE_FULL   1 (default): the lab without policies gets the same pods as the
#                        other, so CNI ADD is compared at one cluster size; 0: only its pair
#   BENCH_NP_LAB         prefix of the labs' names                    (wnp)
#   BENCH_NP_REQUIRE_WEFT  1: a weft part that cannot run is an error (0)
#   BENCH_NP_ENFORCING   what the GOAL lines say about enforcement: auto
#                        (probe: a denied pair is refused), or a text (auto)
#   WEFT_BIN, WEFT_LAB_BIN, WEFT_CNI_BIN  as bench/dataplane/run.sh
#
# Exit status: 0 when the measurements completed (failed goals and skipped
# weft parts included) or not root (every GOAL SKIP); 1 when a tool is
# missing, the reference cannot be built, or a measurement fails.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD

PODS=${BENCH_NP_PODS:-200}
POLICIES=${BENCH_NP_POLICIES:-500}
RULES=${BENCH_NP_RULES:-5000}
NAMESPACES=${BENCH_NP_NAMESPACES:-10}
SEED=${BENCH_NP_SEED:-1}
REPS=${BENCH_NP_REPS:-6}
CONNS=${BENCH_NP_CONNS:-5000}
WARMUP=${BENCH_NP_WARMUP:-200}
SECS=${BENCH_NP_SECONDS:-3}
PROP_OPS=${BENCH_NP_PROP_OPS:-20}
PROP_TIMEOUT=${BENCH_NP_PROP_TIMEOUT:-3}
POD_JOBS=${BENCH_NP_POD_JOBS:-4}
CNI_PODS=${BENCH_NP_CNI_PODS:-${BENCH_CNI_PODS:-100}}
CNI_ROUNDS=${BENCH_NP_CNI_ROUNDS:-3}
NONE_FULL=${BENCH_NP_NONE_FULL:-1}
LAB_PREFIX=${BENCH_NP_LAB:-wnp}
REQUIRE_WEFT=${BENCH_NP_REQUIRE_WEFT:-0}
ENFORCING=${BENCH_NP_ENFORCING:-auto}
for v in PODS POLICIES RULES NAMESPACES SEED REPS CONNS WARMUP SECS PROP_OPS PROP_TIMEOUT POD_JOBS CNI_PODS; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "netpol: BENCH_NP_$v='${!v}' is not a number" >&2; exit 1; }
done
[ "$PODS" -ge 4 ] && [ "$PODS" -le 60000 ] && [ "$POLICIES" -ge 2 ] && [ "$RULES" -ge "$POLICIES" ] &&
	[ "$NAMESPACES" -ge 1 ] && [ "$CONNS" -ge 100 ] && [ "$REPS" -ge 1 ] && [ "$SECS" -ge 1 ] &&
	[ "$PROP_TIMEOUT" -ge 1 ] && [ "$POD_JOBS" -ge 1 ] ||
	{ echo "netpol: need 4 <= PODS <= 60000, POLICIES >= 2, RULES >= POLICIES, NAMESPACES >= 1, CONNS >= 100, REPS >= 1, SECONDS >= 1, PROP_TIMEOUT >= 1" >&2; exit 1; }
LASTCPU=$(($(nproc) - 1))
LAB_NONE=$LAB_PREFIX-none
LAB_POL=$LAB_PREFIX-pol
PAIR_NS=np-0
PROP_NS=np-prop

pick() { # first executable of the arguments, else the first argument
	local f
	for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done
	echo "$1"
}
export WEFT_BIN=${WEFT_BIN:-$TOP/build/release/bin}
[ -x "$WEFT_BIN/weft-agent" ] || { echo "netpol: $WEFT_BIN/weft-agent is not built (make bench builds it)" >&2; exit 1; }
LAB_BIN=${WEFT_LAB_BIN:-$(pick src/lab/weft-lab bin/weft-lab)}
WEFT_CNI=${WEFT_CNI_BIN:-$WEFT_BIN/weft-cni}
unset WEFT_LAB
PY=$(pick /usr/bin/python3 "$(command -v python3 2>/dev/null)")
NP=$TOP/bench/netpol/np.py
DP=$TOP/bench/dataplane/dp.py

P=wnp$$
TMP=$(mktemp -d /tmp/weft-bench-np.XXXXXX)
CONNLAT=$TMP/connlat
RES=$TMP/results.tsv
: >"$RES"
NSS=()
PIDS=()
declare -A LAB_UP=()
WEFT_OK=0
WEFT_WHY=
WEFT_VERDICTS=
broke=0

BENCH_NAME=netpol
source bench/lib.sh
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- preflight
GOALS=(np_tput np_connect_p50 np_added_vs_ref np_propagation_p99 np_cni_add_p99)
bench_need_root "to create network namespaces"
NEED=()
[ -x "$PY" ] || NEED+=(python3)
bench_need_tools "scripts/deps.sh installs iperf3 jq iproute2 iptables ipset; cc is the C compiler" \
	ip ipset iptables-restore iptables-save iperf3 jq timeout taskset ss cc
if ! out=$(cc -O2 -Wall -Wextra -Werror -o "$CONNLAT" bench/services/tools/connlat.c 2>&1); then
	echo "netpol: cannot build bench/services/tools/connlat.c: $out" >&2
	exit 1
fi

mkns() { ip netns add "$1" || return 1; NSS+=("$1"); ip -n "$1" link set lo up; }
# nsx NS: NSX = the command prefix that runs a command in NS (a name
# under /var/run/netns or a path), for timeout and taskset to exec
nsx() { if [[ $1 == /* ]]; then NSX=(nsenter "--net=$1" --); else NSX=(ip netns exec "$1"); fi; }
in_ns() { local n=$1; shift; if [[ $n == /* ]]; then nsenter "--net=$n" -- "$@"; else ip netns exec "$n" "$@"; fi; }
bg_ns() { # NS LOG CMD...: start CMD in NS in the background, remember its PID
	local n=$1 log=$2; shift 2
	if [[ $n == /* ]]; then nsenter "--net=$n" -- "$@" >>"$log" 2>&1 &
	else ip netns exec "$n" "$@" >>"$log" 2>&1 & fi
	PIDS+=($!)
}
# servers NS IP ID: connlat on :80 (polling accept, last CPU), iperf3 on :5201
servers() {
	bg_ns "$1" "$TMP/servers.log" taskset -c "$LASTCPU" "$CONNLAT" server "$2" 80 -i "$3" -P 200
	bg_ns "$1" "$TMP/servers.log" iperf3 -s -B "$2" -p 5201
}
wait_listen() { # NS PORT
	local _
	for _ in $(seq 100); do
		[ -n "$(in_ns "$1" ss -Hltn "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}
probe() { in_ns "$1" "$CONNLAT" probe "$2" "$3" -t 1000; }

# The spec's verdicts (np.py verdict, the policies read literally) for TCP
# from np-0/cli (allowed on 80 and 5201) and np-prop/c1 (denied on every
# port) to np-0/srv on CHECK_PORTS, against what a path does: check_servers
# starts connlat servers on the ports but 80 (blocking accept: idle while
# measuring); verdicts probes them (a connect not answered within 300 ms
# is denied) and counts into VERDICT_BAD (differs from the spec),
# VERDICT_DENY (denied by the spec) and VERDICT_DENY_OK (and refused).
CHECK_PORTS=(80 81 443 8080 9090 9999 30005)
check_servers() { # NS IP
	local port
	for port in "${CHECK_PORTS[@]}"; do
		[ "$port" = 80 ] && continue
		bg_ns "$1" "$TMP/servers.log" "$CONNLAT" server "$2" "$port" -i "check-$port"
	done
	for port in "${CHECK_PORTS[@]}"; do wait_listen "$1" "$port" || return 1; done
}
verdicts() { # KEY CLIENT_NS FROM SERVER_IP
	local port want got line=""
	while read -r port want; do
		if in_ns "$2" "$CONNLAT" probe "$4" "$port" -t 300 >/dev/null 2>&1; then got=allow; else got=deny; fi
		[ "$want" = deny ] && VERDICT_DENY=$((VERDICT_DENY + 1))
		[ "$want" = deny ] && [ "$got" = deny ] && VERDICT_DENY_OK=$((VERDICT_DENY_OK + 1))
		[ "$want" = "$got" ] || VERDICT_BAD=$((VERDICT_BAD + 1))
		line+=" $port:$got$([ "$want" = "$got" ] || echo "(spec: $want)")"
	done <"$TMP/verdicts-$3"
	say "$1: $3 -> srv TCP verdicts:$line"
}

# ---------------------------------------------------------- the cluster
jq -n --argjson s "$SEED" --argjson p "$PODS" --argjson n "$POLICIES" --argjson r "$RULES" \
	--argjson ns "$NAMESPACES" '{seed: $s, pods: $p, policies: $n, rules: $r, namespaces: $ns}' >"$TMP/gen.json"
GEN=$("$PY" "$NP" gen "$TMP/gen.json" "$TMP") || { echo "netpol: np.py gen failed" >&2; exit 1; }
say "cluster (seed $SEED): $(jq -r '"\(.pods) pods in \(.namespaces) namespaces, \(.policies) policies (\(.egressPolicies) with egress), \(.rules) rules, \(.peers) peers (\(.ipBlocks) ipBlocks), \(.ports) ports (\(.namedPorts) named)"' <<<"$GEN")"
record meta policies "$POLICIES"
record meta gen "$(jq -c . <<<"$GEN")"
podf() { jq -r --arg ns "$1" --arg n "$2" --arg f "$3" '.[] | select(.ns == $ns and .name == $n) | .[$f]' "$TMP/pods.json"; }
for from in "$PAIR_NS/cli" "$PROP_NS/c1"; do
	"$PY" "$NP" verdict "$TMP/pods.json" "$TMP/policies.json" "$from" "$PAIR_NS/srv" "${CHECK_PORTS[@]}" >"$TMP/verdicts-${from#*/}" ||
		{ echo "netpol: np.py verdict failed" >&2; exit 1; }
done
grep -q '^80 allow$' "$TMP/verdicts-cli" || { echo "netpol: the generated policies do not allow np-0/cli -> np-0/srv:80" >&2; exit 1; }
grep -q allow "$TMP/verdicts-c1" && { echo "netpol: the generated policies allow np-prop/c1 -> np-0/srv" >&2; exit 1; }
say "the spec's verdicts to np-0/srv, TCP: from np-0/cli $(tr '\n' ' ' <"$TMP/verdicts-cli"); from np-prop/c1 $(tr '\n' ' ' <"$TMP/verdicts-c1")"
C1_REF=$(podf "$PROP_NS" c1 ip)
SRV_REF=$(podf "$PAIR_NS" srv ip)
CLI_REF=$(podf "$PAIR_NS" cli ip)

# --------------------------------------------------------- 1. reference
# ref_setup K: client, node, server; for K=pol the compiled rules of the
# pods weft places on node-2 (the server's node) and of the client.
ref_setup() {
	local k=$1 c=$P-${1}c n=$P-${1}n s=$P-${1}s x=$P-${1}x info t0 t1
	local sides=("c $c $CLI_REF c0" "s $s $SRV_REF s0") side ns ip dev
	[ "$k" = pol ] && sides+=("x $x $C1_REF x0")	# np-prop/c1: denied
	mkns "$n" || return 1
	for side in "${sides[@]}"; do
		read -r _ ns ip dev <<<"$side"
		mkns "$ns" && ip -n "$n" link add "$dev" type veth peer name eth0 netns "$ns" || return 1
	done
	for side in "${sides[@]}"; do
		read -r _ ns ip dev <<<"$side"
		ip -n "$n" addr add 169.254.1.1/32 dev "$dev" && ip -n "$n" link set "$dev" up &&
		ip -n "$n" route add "$ip/32" dev "$dev" &&
		ip -n "$ns" addr add "$ip/32" dev eth0 && ip -n "$ns" link set eth0 up &&
		ip -n "$ns" route add 169.254.1.1/32 dev eth0 &&
		ip -n "$ns" route add default via 169.254.1.1 dev eth0 || return 1
	done
	in_ns "$n" sysctl -qw net.ipv4.ip_forward=1 || return 1
	servers "$s" "$SRV_REF" "ref-$k"
	if [ "$k" = pol ]; then
		jq -r '.[] | select(.node == "node-2" or .name == "cli") | "\(.ns)/\(.name)"' "$TMP/pods.json" >"$TMP/ref-local"
		info=$("$PY" "$NP" iptables "$TMP/pods.json" "$TMP/policies.json" "$TMP/ref-local" "$TMP/ref") || return 1
		t0=$(date +%s%N)
		in_ns "$n" ipset restore <"$TMP/ref.ipset" || { echo "ipset restore into $n failed" >&2; return 1; }
		in_ns "$n" iptables-restore -w 60 <"$TMP/ref.rules" || { echo "iptables-restore into $n failed" >&2; return 1; }
		t1=$(date +%s%N)
		say "reference: kube-router-style rules for $(jq -r .localPods <<<"$info") local pods: $(jq -r '"\(.rules) iptables rules in \(.chains) chains (\(.policyRules) policy rules), \(.ipsets) ipsets with \(.ipsetEntries) entries"' <<<"$info"); ipset restore + iptables-restore $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s"
		record meta ref_rules "$(jq -c . <<<"$info")"
	fi
	wait_listen "$s" 80 && wait_listen "$s" 5201 || { echo "reference $k: servers did not start" >&2; return 1; }
	probe "$c" "$SRV_REF" 80 >/dev/null || { echo "reference $k: $CLI_REF cannot connect to $SRV_REF:80" >&2; return 1; }
	if [ "$k" = pol ]; then	# the rules are in the path
		local hits
		hits=$(in_ns "$n" iptables -w -t filter -L FORWARD -v -x -n | awk '/KUBE-ROUTER-FORWARD/ {print $1; exit}')
		[ "${hits:-0}" -gt 0 ] || { echo "reference pol: no packet went through KUBE-ROUTER-FORWARD" >&2; return 1; }
		check_servers "$s" "$SRV_REF" || { echo "reference pol: check servers did not start" >&2; return 1; }
		VERDICT_BAD=0 VERDICT_DENY=0 VERDICT_DENY_OK=0
		verdicts ref-pol "$c" cli "$SRV_REF"
		verdicts ref-pol "$x" c1 "$SRV_REF"
		[ "$VERDICT_BAD" = 0 ] ||
			{ echo "reference pol: the compiled rules disagree with the spec on $VERDICT_BAD port(s)" >&2; return 1; }
	fi
}
floor_setup() {
	mkns "$P-vc" && mkns "$P-vs" &&
	ip -n "$P-vc" link add eth0 type veth peer name eth0 netns "$P-vs" &&
	ip -n "$P-vc" addr add 10.77.0.1/24 dev eth0 && ip -n "$P-vc" link set eth0 up &&
	ip -n "$P-vs" addr add 10.77.0.2/24 dev eth0 && ip -n "$P-vs" link set eth0 up || return 1
	servers "$P-vs" 10.77.0.2 floor
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
lab() { local l=$1; shift; timeout "${LAB_TIMEOUT:-300}" "$LAB_BIN" --lab "$l" "$@"; }
declare -A W=()	# W[lab:ns/name:netns|ip], W[lab:node-1:netns|conf]

# lab_pod L NODE NS NAME LABELS_JSON PORTS_JSON
lab_pod() {
	local args=() out
	mapfile -t args < <(jq -r 'to_entries[] | "--label", "\(.key)=\(.value)"' <<<"$5";
		jq -r '.[] | "--port", "\(.[0]):\(.[1])/TCP"' <<<"$6")
	out=$(lab "$1" pod add "$2" "$3" "$4" "${args[@]}" 2>&1) || { echo "pod add $2 $3/$4: $(tail -n 2 <<<"$out")"; return 1; }
}
weft_lab() { # L: up, namespaces
	local l=$1 out
	if LAB_TIMEOUT=30 lab "$l" status -o json >/dev/null 2>&1; then
		weft_skip "a lab named $l already exists; remove it with: $LAB_BIN --lab $l down"; return 1
	fi
	LAB_UP[$l]=1
	say "weft: $LAB_BIN --lab $l up --nodes 2 --mode networkpolicy"
	if ! out=$(lab "$l" up --nodes 2 --mode networkpolicy 2>&1); then
		[[ $out == *"already up"* || $out == *"already exists"* ]] && unset "LAB_UP[$l]"
		weft_skip "weft-lab --lab $l up failed: $(tail -n 3 <<<"$out")"; return 1
	fi
	out=$(lab "$l" weftctl apply -f "$TMP/namespaces.json" 2>&1) ||
		{ weft_skip "lab $l: weftctl apply -f namespaces: $(tail -n 2 <<<"$out")"; return 1; }
}
lab_status() { # L: fill W[] from status -o json
	local l=$1 st=$TMP/status-$1.json out
	out=$(LAB_TIMEOUT=30 lab "$l" status -o json 2>&1) || { echo "status: $(tail -n 2 <<<"$out")"; return 1; }
	echo "$out" >"$st"
	while IFS=$'\t' read -r key nsv ip; do
		W[$l:$key:netns]=$nsv; W[$l:$key:ip]=${ip%/*}
	done < <(jq -r '.pods[] | "\(.namespace)/\(.name)\t\(.netns)\t\(.ip)"' "$st")
	W[$l:node-1:netns]=$(jq -r '.nodes[] | select(.name == "node-1") | .netns' "$st")
	W[$l:node-1:conf]=$(jq -r '.nodes[] | select(.name == "node-1") | .cniConfig' "$st")
}

# add_pods LAB TSV: the pods of TSV (node, ns, name, labels, ports) in LAB,
# POD_JOBS at a time; 1 (weft skipped, why recorded) on the first failure
add_pods() {
	local l=$1 tsv=$2 jobs=() j
	: >"$TMP/pods.err"
	for ((j = 0; j < POD_JOBS; j++)); do
		awk -v j="$j" -v n="$POD_JOBS" 'NR % n == j' "$tsv" | while IFS=$'\t' read -r node ns name labels ports; do
			[ -s "$TMP/pods.err" ] && break
			lab_pod "$l" "$node" "$ns" "$name" "$labels" "$ports" >>"$TMP/pods.err" || break
		done &
		jobs+=($!)
	done
	for j in "${jobs[@]}"; do wait "$j"; done
	[ -s "$TMP/pods.err" ] && { weft_skip "lab $l: $(head -n 1 "$TMP/pods.err")"; return 1; }
	return 0
}

# programmed LAB RV SECONDS: every node of LAB reports NetworkPolicies
# applied to its maps up to RV (weft.io/applied-revisions), within SECONDS
programmed() {
	local deadline=$(($(date +%s) + $3))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		lab "$1" weftctl get nodes -o json 2>/dev/null | jq -e --argjson rv "$2" '.items | length > 0 and
			all(.metadata.annotations["weft.io/applied-revisions"] // "{}" | fromjson | (.networkpolicies // 0) >= $rv)' \
			>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

setup_weft() {
	local out t0 t1 t2 rv i n line
	if [ ! -x "$LAB_BIN" ]; then weft_skip "$LAB_BIN is not built"; return; fi
	weft_lab "$LAB_NONE" || return
	for p in cli srv; do
		out=$(lab_pod "$LAB_NONE" "$(podf "$PAIR_NS" $p node)" "$PAIR_NS" $p \
			"$(jq -c --arg n $p '.[] | select(.ns == "np-0" and .name == $n) | .labels' "$TMP/pods.json")" \
			"$(jq -c --arg n $p '.[] | select(.ns == "np-0" and .name == $n) | .ports' "$TMP/pods.json")") ||
			{ weft_skip "lab $LAB_NONE: $out"; return; }
	done
	weft_lab "$LAB_POL" || return
	n=$(jq length "$TMP/pods.json")
	# POD_JOBS streams at once (weft-lab pod add locks its state)
	jq -r '.[] | [.node, .ns, .name, (.labels | tojson), (.ports | tojson)] | @tsv' "$TMP/pods.json" >"$TMP/pods.tsv"
	say "weft: $n pods in lab $LAB_POL (weft-lab pod add, $POD_JOBS at a time)"
	t0=$(date +%s)
	add_pods "$LAB_POL" "$TMP/pods.tsv" || return
	t1=$(date +%s)
	say "weft: pods made in $((t1 - t0)) s"
	record meta pods_s "$((t1 - t0))"
	if [ "$NONE_FULL" = 1 ]; then
		# the same cluster without its policies: what CNI ADD costs is
		# compared at one size
		say "weft: the same $((n - 2)) other pods in lab $LAB_NONE (BENCH_NP_NONE_FULL=1)"
		awk -F'\t' -v ns="$PAIR_NS" '!($2 == ns && ($3 == "cli" || $3 == "srv"))' "$TMP/pods.tsv" >"$TMP/pods-none.tsv"
		add_pods "$LAB_NONE" "$TMP/pods-none.tsv" || return
	fi
	for l in "$LAB_NONE" "$LAB_POL"; do
		lab_status "$l" >"$TMP/status.err" || { weft_skip "lab $l: $(cat "$TMP/status.err")"; return; }
	done
	for l in "$LAB_NONE" "$LAB_POL"; do
		servers "${W[$l:$PAIR_NS/srv:netns]}" "${W[$l:$PAIR_NS/srv:ip]}" "$l"
	done
	for p in s1 s2; do
		bg_ns "${W[$LAB_POL:$PROP_NS/$p:netns]}" "$TMP/servers.log" "$CONNLAT" server "${W[$LAB_POL:$PROP_NS/$p:ip]}" 80 -i "$p" -P 200
	done
	for l in "$LAB_NONE" "$LAB_POL"; do
		wait_listen "${W[$l:$PAIR_NS/srv:netns]}" 80 && wait_listen "${W[$l:$PAIR_NS/srv:netns]}" 5201 ||
			{ weft_skip "lab $l: servers in np-0/srv did not start"; return; }
	done
	say "weft: applying $POLICIES policies to lab $LAB_POL (weftctl apply -f, one List)"
	t0=$(date +%s%N)
	out=$(LAB_TIMEOUT=600 lab "$LAB_POL" weftctl apply -f "$TMP/policies.json" 2>&1) ||
		{ record err weft "weftctl apply -f policies: $(tail -n 2 <<<"$out" | oneline)"; broke=1
		  weft_skip "weftctl apply -f policies: $(tail -n 2 <<<"$out")"; return; }
	t1=$(date +%s%N)
	say "weft: policies applied in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s (the API's answer; not the data plane's)"
	# the verdicts below are the data plane's only once both nodes hold
	# every policy: each reports the NetworkPolicy revision its maps hold
	# (the newest policy's, not the list's: other kinds move the store on)
	rv=$(lab "$LAB_POL" weftctl get networkpolicies -A -o json 2>/dev/null |
		jq -r '[.items[].metadata.resourceVersion | tonumber] | max // empty')
	[ -n "$rv" ] || { weft_skip "lab $LAB_POL: no resourceVersion on the NetworkPolicies"; return; }
	if ! programmed "$LAB_POL" "$rv" 120; then
		record err weft "the nodes did not report NetworkPolicy revision $rv applied within 120 s"; broke=1
		weft_skip "the nodes did not report NetworkPolicy revision $rv applied within 120 s"; return
	fi
	t2=$(date +%s%N)
	say "weft: both nodes' maps hold the $POLICIES policies $(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s after the apply began (weft.io/applied-revisions networkpolicies >= $rv)"
	record meta programmed_s "$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')"
	for l in "$LAB_NONE" "$LAB_POL"; do
		out=$(probe "${W[$l:$PAIR_NS/cli:netns]}" "${W[$l:$PAIR_NS/srv:ip]}" 80 2>&1) ||
			{ weft_skip "lab $l: np-0/cli cannot connect to np-0/srv (${W[$l:$PAIR_NS/srv:ip]}:80): $out"; return; }
	done
	check_servers "${W[$LAB_POL:$PAIR_NS/srv:netns]}" "${W[$LAB_POL:$PAIR_NS/srv:ip]}" ||
		{ weft_skip "lab $LAB_POL: check servers in np-0/srv did not start"; return; }
	VERDICT_BAD=0 VERDICT_DENY=0 VERDICT_DENY_OK=0
	verdicts weft-pol "${W[$LAB_POL:$PAIR_NS/cli:netns]}" cli "${W[$LAB_POL:$PAIR_NS/srv:ip]}"
	verdicts weft-pol "${W[$LAB_POL:$PROP_NS/c1:netns]}" c1 "${W[$LAB_POL:$PAIR_NS/srv:ip]}"
	WEFT_VERDICTS="$VERDICT_BAD of $((2 * ${#CHECK_PORTS[@]})) verdicts to np-0/srv differ from the spec, $VERDICT_DENY_OK of $VERDICT_DENY denied connects refused"
	# what the compiled rules take on each node (the Node's weft.io/policy)
	for n in node-1 node-2; do
		out=$(lab "$LAB_POL" weftctl get node "$n" -o json 2>/dev/null |
			jq -c '.metadata.annotations["weft.io/policy"] // "" | fromjson? | {ruleSets, rules, rulesCapacity, cidrs, mapFull}' 2>/dev/null)
		say "weft: $n policy maps: ${out:-unknown}"
	done
	WEFT_OK=1
}

# enforcement: what the GOAL lines say about it.  auto: from the
# propagation probes -- enforced when a "deny" op was ever seen refused.
enforcement() {
	local seen total prop
	if [ "$ENFORCING" != auto ]; then echo "$ENFORCING"; return; fi
	if [ "$WEFT_OK" != 1 ]; then echo "weft not measured"; return; fi
	if [ -s "$TMP/prop-out.json" ]; then
		seen=$(jq '[.samples[] | select(.verdict == "deny" and .s != null)] | length' "$TMP/prop-out.json")
		total=$(jq '[.samples[] | select(.verdict == "deny")] | length' "$TMP/prop-out.json")
		prop="$seen of $total deny ops seen refused"
	else
		seen=0 prop="no propagation probe"
	fi
	if [ "${seen:-0}" -gt 0 ] || [ "$VERDICT_DENY_OK" -gt 0 ]; then echo "enforced: $prop; $WEFT_VERDICTS"
	else echo "MEASURED WITHOUT ENFORCEMENT: $prop; $WEFT_VERDICTS"; fi
}

# ------------------------------------------------------------ measuring
FAILED=" "
path_fail() { record err "$1" "$(printf '%s' "$2" | oneline)"; say "$1: FAILED: $(printf '%s' "$2" | oneline)"; FAILED+="$1 "; broke=1; }
run_conn() { # KEY NS IP RUN
	local out kv sport n failed p50 p99 max mean NSX
	nsx "$2"
	sport=$((1024 + ($4 - 1) * (CONNS + WARMUP) % 64512))
	out=$(timeout 900 "${NSX[@]}" taskset -c 0 "$CONNLAT" client "$3" 80 -n "$CONNS" -w "$WARMUP" \
		-t 1000 -f 10 -p "$sport" 2>&1)
	kv=$(grep '^connlat: n=' <<<"$out")
	if [ -z "$kv" ]; then path_fail "$1" "connlat to $3:80: $(tail -n 2 <<<"$out")"; return; fi
	read -r n failed p50 p99 max mean < <(awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		print v["n"], v["failed"], v["p50_us"], v["p99_us"], v["max_us"], v["mean_us"] }' <<<"$kv")
	record conn "$1" "$4" "$n" "$failed" "$p50" "$p99" "$max" "$mean"
	printf '  %-10s connect p50 %7.1f us  p99 %7.1f us  (%d ok, %d failed)\n' "$1" "$p50" "$p99" "$n" "$failed"
	[ "$n" -gt 0 ] || path_fail "$1" "every connect failed"
	return 0
}
run_tput() { # KEY NS IP RUN
	local out bps retr NSX
	nsx "$2"
	out=$(timeout $((SECS + 30)) "${NSX[@]}" iperf3 -c "$3" -p 5201 -t "$SECS" -J -A 0,1 2>&1)
	bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
	retr=$(jq -r '.end.sum_sent.retransmits // 0' <<<"$out" 2>/dev/null)
	if [ -z "$bps" ]; then path_fail "$1" "iperf3 to $3: $(jq -r '.error // empty' <<<"$out" 2>/dev/null)"; return; fi
	record tput "$1" "$4" "$bps" "${retr%.*}"
	awk -v k="$1" -v b="$bps" -v r="$retr" 'BEGIN { printf "  %-10s %6.2f Gbit/s  retr %d\n", k, b / 1e9, r }'
}

run_prop() {
	local l=$LAB_POL err pairs
	if [ "$WEFT_OK" != 1 ]; then return; fi
	if [ "$PROP_OPS" -le 0 ]; then record skip prop "BENCH_NP_PROP_OPS=0"; return; fi
	jq -n --arg ns "$PROP_NS" '{apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy",
		metadata: {name: "prop", namespace: $ns},
		spec: {podSelector: {matchLabels: {role: "prop-server"}}, policyTypes: ["Ingress"], ingress: []}}' >"$TMP/prop-deny.json"
	jq '.spec.ingress = [{from: [{podSelector: {matchLabels: {role: "prop-client"}}}], ports: [{protocol: "TCP", port: "serve"}]}]' \
		"$TMP/prop-deny.json" >"$TMP/prop-allow.json"
	pairs=$(for c in c1 c2; do for s in s1 s2; do
		jq -cn --arg n "$c->$s" --arg ns "${W[$l:$PROP_NS/$c:netns]}" --arg ip "${W[$l:$PROP_NS/$s:ip]}" \
			'{name: $n, netns: (if ($ns | startswith("/")) then $ns else "/var/run/netns/" + $ns end), ip: $ip, port: 80}'
	done; done | jq -cs .)
	jq -n --arg lab "$LAB_BIN" --arg l "$l" --argjson ops "$PROP_OPS" --argjson t "$PROP_TIMEOUT" \
		--argjson pairs "$pairs" --arg d "$TMP/prop-deny.json" --arg a "$TMP/prop-allow.json" --arg ns "$PROP_NS" \
		'{lab: [$lab, "--lab", $l], ops: $ops, timeout: $t, interval: 0.01, connectTimeout: 0.2, pairs: $pairs,
		  manifests: {deny: $d, allow: $a}, namespace: $ns, policy: "prop"}' >"$TMP/prop.json"
	say "propagation: $PROP_OPS ops on policy $PROP_NS/prop (create -> deny, update -> allow, update -> deny, delete -> allow, ...), probing c1,c2 -> s1,s2 every 10 ms"
	if ! timeout $((60 + PROP_OPS * (PROP_TIMEOUT + 70))) "$PY" "$NP" propagation "$TMP/prop.json" "$TMP/prop-out.json"; then
		record err prop "propagation helper failed"; broke=1; return
	fi
	jq -r '.samples[] | "prop\t\(.op)\t\(.verdict)\t\(.s // "-")\t\(.cli_s)"' "$TMP/prop-out.json" >>"$RES"
	err=$(jq -r '.error // empty' "$TMP/prop-out.json")
	[ -n "$err" ] && { record err prop "$err"; broke=1; }
	return 0
}

run_cni() {
	local l side cni_sides='[]' names i r conf out err
	if [ "$WEFT_OK" != 1 ]; then return; fi
	if [ "$CNI_PODS" -le 0 ]; then record skip cni "BENCH_NP_CNI_PODS=0"; return; fi
	# the Pod objects first, labelled like np-0/srv: np-pol-0 selects them
	jq -n --argjson n "$CNI_PODS" --arg ns "$PAIR_NS" '{apiVersion: "v1", kind: "List", items: [range($n) |
		{apiVersion: "v1", kind: "Pod", metadata: {name: "cni-\(.)", namespace: $ns,
		 labels: {app: "bench-srv", tier: "api"}},
		 spec: {containers: [{name: "main", ports: [{name: "serve", containerPort: 80, protocol: "TCP"}]}]}}]}' >"$TMP/cni-pods.json"
	for l in "$LAB_NONE" "$LAB_POL"; do
		side=${l##*-}
		conf=$TMP/cni-$side.json
		jq 'if has("plugins") then .plugins[0] + {name: .name, cniVersion: .cniVersion} else . end' \
			"${W[$l:node-1:conf]}" >"$conf" || { path_fail "cni-weft-$side" "cannot read ${W[$l:node-1:conf]}"; return; }
		names=()
		for ((i = 0; i < CNI_PODS; i++)); do names+=("$P-c$side$i"); done
		NSS+=("${names[@]}")
		printf 'netns add %s\n' "${names[@]}" | ip -batch - || { path_fail "cni-weft-$side" "cannot create pod namespaces"; return; }
		local enter wcni
		if [[ ${W[$l:node-1:netns]} == /* ]]; then enter=$(jq -cn --arg p "--net=${W[$l:node-1:netns]}" '["nsenter",$p,"--"]')
		else enter=$(jq -cn --arg n "${W[$l:node-1:netns]}" '["ip","netns","exec",$n]'); fi
		wcni=$(cd "$(dirname "$WEFT_CNI")" && pwd)/$(basename "$WEFT_CNI")
		cni_sides=$(jq -c --arg name "weft-$side" --argjson enter "$enter" --arg plugin "$wcni" --arg conf "$conf" \
			--arg cp "$(dirname "$wcni"):/usr/lib/cni" --arg id "$P-$side-" \
			--argjson netns "$(printf '/var/run/netns/%s\n' "${names[@]}" | jq -R . | jq -cs .)" \
			'. + [{name: $name, enter: $enter, plugin: $plugin, conf: $conf, cniPath: $cp, netns: $netns, idPrefix: $id}]' <<<"$cni_sides")
	done
	jq -n --argjson sides "$cni_sides" --argjson n "$CNI_PODS" --arg ns "$PAIR_NS" \
		'{pods: $n, k8sNamespace: $ns, sides: $sides}' >"$TMP/cni-spec.json"
	say "CNI ADD: $CNI_ROUNDS rounds of $CNI_PODS pods per lab on node-1 (np-0/cni-<i>, labelled as np-0/srv; each round applies the Pod objects, then ADDs them all and DELs them), interleaved pod by pod (bench/dataplane/dp.py cni)"
	for ((r = 1; r <= CNI_ROUNDS; r++)); do
		for l in "$LAB_NONE" "$LAB_POL"; do
			out=$(lab "$l" weftctl apply -f "$TMP/cni-pods.json" 2>&1) || { path_fail "cni-weft-${l##*-}" "apply Pod objects: $out"; return; }
		done
		out=$(timeout $((120 + CNI_PODS * 10)) "$PY" "$DP" cni "$TMP/cni-spec.json") || { path_fail cni-weft-pol "CNI timing helper failed"; return; }
		jq -r 'to_entries[] | .key as $k | (.value.add_ns[] | "cni\t\($k)\tadd\t\(.)"), (.value.del_ns[] | "cni\t\($k)\tdel\t\(.)")' <<<"$out" >>"$RES"
		for side in weft-none weft-pol; do
			err=$(jq -r --arg k "$side" '.[$k].error // empty' <<<"$out")
			[ -n "$err" ] && { path_fail "cni-$side" "round $r: $err"; return 0; }
		done
	done
	return 0
}

# ------------------------------------------------------------------- main
echo "netpol: kernel $(uname -r), $(nproc) CPUs, $(iptables --version 2>/dev/null); $REPS runs x $CONNS connects (+$WARMUP warm-up) and iperf3 $SECS s, interleaved; connlat client CPU 0, servers CPU $LASTCPU polling accept every 200 us; iperf3 -A 0,1"
record meta reps "$REPS"
record meta conns "$CONNS"
record meta prop_timeout "$PROP_TIMEOUT"
record meta lab_none "$LAB_NONE"
record meta lab_pol "$LAB_POL"
record meta pin "connlat client CPU 0, servers CPU $LASTCPU; iperf3 -A 0,1"
[ $((REPS * (CONNS + WARMUP))) -gt 64512 ] && say "note: $REPS x $((CONNS + WARMUP)) connects exceed the 64512 source ports: 4-tuples repeat"
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)

floor_setup || { echo "netpol: cannot build the veth-pair floor" >&2; exit 1; }
ref_setup none || { echo "netpol: cannot build the reference without rules" >&2; exit 1; }
ref_setup pol || { echo "netpol: cannot build the reference with rules" >&2; exit 1; }
setup_weft

# pairs compared side by side: floor | ref-none | ref-pol | weft-pol | weft-none;
# even runs backwards
PATHS=("floor $P-vc 10.77.0.2" "ref-none $P-nonec $SRV_REF" "ref-pol $P-polc $SRV_REF")
if [ "$WEFT_OK" = 1 ]; then
	PATHS+=("weft-pol ${W[$LAB_POL:$PAIR_NS/cli:netns]} ${W[$LAB_POL:$PAIR_NS/srv:ip]}"
		"weft-none ${W[$LAB_NONE:$PAIR_NS/cli:netns]} ${W[$LAB_NONE:$PAIR_NS/srv:ip]}")
else
	for k in weft-pol weft-none; do record skip "$k" "$WEFT_WHY"; done
fi
in_order() {
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
for ((r = 1; r <= REPS; r++)); do
	say "throughput, run $r/$REPS"
	while read -r key ns ip; do
		[ "$key" = floor ] && continue
		[[ $FAILED == *" $key "* ]] || run_tput "$key" "$ns" "$ip" "$r" </dev/null
	done < <(in_order "$r" "${PATHS[@]}")
done
run_prop
ENF=$(enforcement)
say "enforcement: $ENF"
record meta enforcement "$ENF"
run_cni

record meta load "$LOAD_START / $(cut -d' ' -f1 /proc/loadavg)"
echo
"$PY" "$NP" report "$RES" || broke=1
exit "$broke"
