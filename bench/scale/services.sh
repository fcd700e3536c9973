#!/usr/bin/env bash
# bench/scale/services.sh — how long 10,000 Services take to be installed
# and programmed on every node, against iptables-restore of the same
# services' kube-proxy rules, in ONE run on this machine.
#
#   weft:      weft-lab --lab wscale up --nodes 2; pods svcbench/b1 b2 b3
#              on node-1.  One `weftctl apply -f` of a v1 List of COUNT
#              ClusterIP Services, each with hand-written Endpoints of the
#              three pods (svc.py manifest), timed from its exec to the
#              poll that sees every Node's weft.io/applied-revisions with
#              services and endpointslices >= the revisions of the last
#              Service written and of the EndpointSlices the controller
#              mirrored from the last Endpoints (svc.py install, in the
#              controller's namespace).
#   reference: the iptables-restore input kube-proxy's iptables mode
#              writes for the same COUNT services and three endpoints
#              (svc.py iptables), restored into a namespace of its own
#              ($P-ref), timed.
#
# Prints both, the ratio, the CPU seconds of the controller and of each
# agent during the apply and during the wait after it, and two GOAL lines:
#   GOAL scale_svc_install_s     weft's install, seconds          <= 10
#   GOAL scale_svc_vs_iptables   weft's install / iptables-restore <= 2
# BENCH_SCALE_SVC_PERF=1 also records the daemons with perf during the
# install and prints where their CPU time went.
#
# Every packet stays in the lab or in $P-ref; the root namespace's
# addresses, routes and firewall are not touched.  The EXIT trap (bench/lib.sh)
# stops what this script started, brings the lab down and deletes $P-ref.
#
#   BENCH_SCALE_SVC_COUNT  services                                   (10000)
#   BENCH_SCALE_SVC_WAIT   seconds to wait for every node to apply them;
#                          it gives up sooner after 30 s without progress (300)
#   BENCH_SCALE_SVC_LAB    the lab's name                            (wscale)
#   BENCH_SCALE_SVC_PERF   1: perf record the daemons during the install (0)
#   WEFT_LAB_BIN           the lab (default src/lab/weft-lab)
#
# Exit status: 0 when the measurement completed (a missed goal included) or
# when not run as root (GOAL lines SKIP); 1 when something broke.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD

COUNT=${BENCH_SCALE_SVC_COUNT:-10000}
WAIT=${BENCH_SCALE_SVC_WAIT:-300}
LAB=${BENCH_SCALE_SVC_LAB:-wscale}
PERF=${BENCH_SCALE_SVC_PERF:-0}
for v in COUNT WAIT PERF; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "scale/services: BENCH_SCALE_SVC_$v='${!v}' is not a number" >&2; exit 1; }
done
[ "$COUNT" -ge 1 ] && [ "$COUNT" -le 60000 ] || { echo "scale/services: 1 <= BENCH_SCALE_SVC_COUNT <= 60000" >&2; exit 1; }
K8S_NS=svcbench
POD_CIDR=10.128.0.0/14		# weft-lab's cluster network: kube-proxy's cluster CIDR
# the release build: bin/ may point at the sanitizer build (after make test)
export WEFT_BIN=${WEFT_BIN:-$TOP/build/release/bin}
LAB_BIN=${WEFT_LAB_BIN:-$TOP/src/lab/weft-lab}
unset WEFT_LAB		# weft-lab's default lab name; we always pass --lab
SVC=$TOP/bench/services/svc.py

P=wsc$$			# prefix of the namespace this run makes
TMP=$(mktemp -d /tmp/weft-bench-scale.XXXXXX)
NSS=()
PIDS=()
declare -A LAB_UP=()

BENCH_NAME=scale/services
source bench/lib.sh
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

GOALS=(scale_svc_install_s scale_svc_vs_iptables)
bench_need_root "to build a weft-lab and a network namespace"
NEED=()
[ -x "$WEFT_BIN/weft-agent" ] && [ -x "$WEFT_BIN/weftctl" ] || NEED+=("$WEFT_BIN (make)")
[ "$PERF" = 0 ] || command -v perf >/dev/null 2>&1 || NEED+=(perf)
bench_need_tools "scripts/deps.sh installs jq iproute2 iptables" ip iptables-restore iptables-save jq timeout python3

lab() { timeout "${LAB_TIMEOUT:-300}" "$LAB_BIN" --lab "$LAB" "$@"; }
broke() { say "broke: $*"; exit 1; }

# ------------------------------------------------------------------ the lab
if LAB_TIMEOUT=30 lab status -o json >/dev/null 2>&1; then
	broke "a lab named $LAB exists already; remove it with: $LAB_BIN --lab $LAB down"
fi
echo "scale/services: kernel $(uname -r), $(nproc) CPUs, $(iptables --version 2>/dev/null); $COUNT services, 3 endpoints each; load average $(cut -d' ' -f1-3 /proc/loadavg)"
LAB_UP[$LAB]=1
say "weft: $LAB_BIN --lab $LAB up --nodes 2, pods $K8S_NS/b1 b2 b3 on node-1 ($WEFT_BIN)"
lab up --nodes 2 >"$TMP/lab.log" 2>&1 || broke "weft-lab up: $(tail -n 3 "$TMP/lab.log" | oneline)"
for b in b1 b2 b3; do
	lab pod add node-1 "$K8S_NS" "$b" >>"$TMP/lab.log" 2>&1 || broke "weft-lab pod add node-1 $K8S_NS $b: $(tail -n 3 "$TMP/lab.log" | oneline)"
done
LAB_TIMEOUT=30 lab status -o json >"$TMP/status.json" || broke "weft-lab status -o json failed"
BACKENDS=$(jq -c --arg ns "$K8S_NS" '[.pods[] | select(.namespace == $ns) | [.ip, 8080, .node, .name]]' "$TMP/status.json")
[ "$(jq length <<<"$BACKENDS")" = 3 ] || broke "weft-lab status lacks the three pods: $BACKENDS"
CTRL=$(jq -r '.controller.netns' "$TMP/status.json")

# ------------------------------------------------------------ the reference
ip netns add "$P-ref" || broke "ip netns add $P-ref"
NSS+=("$P-ref")
REF=$(python3 "$SVC" iptables "$COUNT" "$POD_CIDR" "$(jq -r 'map("\(.[0]):\(.[1])") | join(",")' <<<"$BACKENDS")" \
	"$TMP/ref.rules") || broke "svc.py iptables"
t0=$(date +%s%N)
ip netns exec "$P-ref" iptables-restore -w 60 <"$TMP/ref.rules" || broke "iptables-restore into $P-ref failed"
t1=$(date +%s%N)
RESTORE_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
got=$(ip netns exec "$P-ref" iptables-save -t nat | grep -c '^-A KUBE-SERVICES ')
[ "$got" = $((COUNT + 1)) ] || broke "the reference's KUBE-SERVICES has $got rules, expected $((COUNT + 1))"
say "reference: iptables-restore of $(jq -r '"\(.servicesRules) rules in KUBE-SERVICES, \(.rules) rules and \(.chains) chains in all"' <<<"$REF"): $RESTORE_S s"

# ------------------------------------------------------------ weft's install
jq -n --arg ns "$K8S_NS" --argjson n "$COUNT" --argjson be "$BACKENDS" \
	'{namespace: $ns, count: $n, target: "s-target", targetIndex: ($n / 2 | floor), extra: [],
	  backends: $be, port: 80, selector: null}' >"$TMP/spec.json"
INFO=$(python3 "$SVC" manifest "$TMP/spec.json" "$TMP/services.json") || broke "svc.py manifest"
jq -n --arg lab "$LAB_BIN" --arg l "$LAB" --arg m "$TMP/services.json" --argjson last "$(jq -c .last <<<"$INFO")" \
	--arg ns "$K8S_NS" --argjson st "$(jq -c .controller "$TMP/status.json")" --argjson wait "$WAIT" \
	--argjson pids "$(lab_daemon_pids "$TMP/status.json" "$CTRL")" \
	'{lab: [$lab, "--lab", $l], manifest: $m, last: $last, namespace: $ns, url: $st.url,
	  tokenFile: $st.tokenFile, caFile: $st.caFile, timeout: $wait, stall: 30, nodes: 2, pids: $pids}' >"$TMP/install.json"
if [ "$PERF" = 1 ]; then
	perf record -q -F 499 -g -o "$TMP/perf.data" -p "$(jq -r '.pids | [.[]] | map(tostring) | join(",")' "$TMP/install.json")" \
		>"$TMP/perf.log" 2>&1 &
	PIDS+=($!)
	sleep 1		# perf attaches before the install starts
fi
say "weft: weftctl apply -f of $(jq -r .objects <<<"$INFO") objects (one List), then until every node applied them"
ip netns exec "$CTRL" python3 "$SVC" install "$TMP/install.json" "$TMP/install.out" || broke "svc.py install failed"
if [ "$PERF" = 1 ]; then
	kill -INT "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null
	say "perf: where the daemons' CPU time went during the install (self time, top 40)"
	perf report -i "$TMP/perf.data" --stdio --no-children --sort comm,symbol --percent-limit 0.7 2>/dev/null |
		grep -E '^ +[0-9]' | head -n 40
fi
err=$(jq -r '.error // empty' "$TMP/install.out")
[ -z "$err" ] || broke "install: $err"
say "weft: CPU seconds during the apply / the wait after it: $(jq -r '.cpu | to_entries | map("\(.key) \(.value[0])/\(.value[1])") | join(", ")' "$TMP/install.out")"
skip=$(jq -r '.skip // empty' "$TMP/install.out")
if [ -n "$skip" ]; then
	say "weft: not applied everywhere: $skip"
	echo "GOAL scale_svc_install_s: no result (weftctl apply $(jq -r '.apply_s | . * 100 | round / 100' "$TMP/install.out") s, then $skip) MISS"
	echo "GOAL scale_svc_vs_iptables: no result MISS"
	exit 0
fi
jq -r --arg r "$RESTORE_S" --argjson n "$COUNT" '
	def f: . * 100 | round / 100;
	(.total_s / ($r | tonumber)) as $x |
	"scale/services: weft: \(.created) created; weftctl apply \(.apply_s | f) s, every node applied revision \(.revision) \(.wait_s | f) s later: \(.total_s | f) s in all",
	"GOAL scale_svc_install_s: \(.total_s | f) s (\($n) services with their Endpoints, one weftctl apply, until both nodes applied them) (goal <= 10 s) \(if .total_s <= 10 then "PASS" else "MISS" end)",
	"GOAL scale_svc_vs_iptables: \($x | f)x iptables-restore (\(.total_s | f) vs \($r) s) (goal <= 2x) \(if $x <= 2 then "PASS" else "MISS" end)"' \
	"$TMP/install.out"
