#!/usr/bin/env bash
# bench/lb/run.sh — L7 load-balancer benchmark: weft-lb (the service
# engine, docs/lb_engine.md) and the controller's VirtualServices
# (docs/lb.md) against hand-written HAProxy configurations, all in ONE run
# on this machine; prints the figures, the ratios and GOAL / INFO lines.
# Method and figures: bench/README.md, section "lb".
#
#   netns wlb<pid> (made and removed here; everything below is in it):
#
#     wrk / curl / lb.py ──► 10.99.0.1:80  reference HAProxy (hand-written:
#                            │             weft-lb's global and defaults,
#                            │             Host bench.example.com -> 4 servers)
#                            ├► 10.99.0.2:80  weft-lb --objects-dir (a SharedL7
#                            │             VirtualService, same host, same 4)
#                            ├► 192.168.210.0/24 (local route: AnyIP) weft-lb
#                            │             --controller, VIPs from the
#                            │             Ingresses' status (8 shards)
#                            └► 10.99.0.3:80  reference for the many hosts
#                                          (one backend per host, a host map)
#     weft-controller 127.0.0.1:6443 (SQLite, HTTPS), loadBalancer.vipNetworks
#                            192.168.210.0/24; Services without selector,
#                            hand-written Endpoints
#     responder HAProxy ("http-request return ... ok"): 10.99.1.1:8001-8004
#                            (the 4 servers), :8080 (the Services' backend),
#                            10.99.1.2:9100-9149 (the scaled pool, answers
#                            "port=N")
#
#   1. requests/s and p99 through weft-lb ÷ through the reference (wrk,
#      interleaved, medians); the responder alone is the floor
#   2. a new host: POST an Ingress, time until its VIP answers 200
#   3. a pool scaled 1 -> 50 -> 1 servers under wrk: errors, reloads
#   4. BENCH_LB_HOSTS_MANY Ingresses in one weftctl apply: time until every
#      host answers; HAProxy memory ÷ a hand-written config for them
#
# Every packet stays on the loopback of this namespace; the root
# namespace's addresses, routes and firewall are never touched.  The EXIT
# trap stops what it started (by PID; an HAProxy a weft-lb left behind is
# found by its pid file and master socket), then deletes the namespace and
# the temporary directory, also on failure or ^C.
#
#   BENCH_LB_REPS        runs of each throughput figure, interleaved;
#                        median; even, so both orders count alike     (6)
#   BENCH_LB_SECONDS     length of each wrk run                       (5)
#   BENCH_LB_CONNS       wrk connections (-t2 -cN)                    (32)
#   BENCH_LB_HOSTS_NEW   new hosts timed one by one; 0 skips          (30)
#   BENCH_LB_NEW_GAP_MS  pause before each new host; 0: back to back,
#                        each new host waiting for the engine's reload
#                        rate limit (500 ms) after the one before     (0)
#   BENCH_LB_HOSTS_MANY  Ingresses of the many-hosts figure; 0 skips  (1000)
#   BENCH_LB_SAVE        a directory: keep the HAProxy configurations
#                        there (the references' and weft-lb's, with
#                        weft-lb's maps)                             (unset)
#   WEFT_BIN             the binaries              (build/release/bin)
#   BENCH_LB_HAPROXY     the HAProxy                  (/usr/sbin/haproxy)
#
# Exit status: 0 when the measurements completed (failed goals included)
# or when not run as root (GOAL lines SKIP); 1 when something broke.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD

REPS=${BENCH_LB_REPS:-6}
SECS=${BENCH_LB_SECONDS:-5}
CONNS=${BENCH_LB_CONNS:-32}
HOSTS_NEW=${BENCH_LB_HOSTS_NEW:-30}
NEW_GAP_MS=${BENCH_LB_NEW_GAP_MS:-0}
HOSTS_MANY=${BENCH_LB_HOSTS_MANY:-1000}
SAVE=${BENCH_LB_SAVE:-}
for v in REPS SECS CONNS HOSTS_NEW NEW_GAP_MS HOSTS_MANY; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "lb: BENCH_LB_$v='${!v}' is not a number" >&2; exit 1; }
done
[ "$REPS" -ge 1 ] && [ "$SECS" -ge 1 ] && [ "$CONNS" -ge 2 ] ||
	{ echo "lb: BENCH_LB_REPS >= 1, BENCH_LB_SECONDS >= 1, BENCH_LB_CONNS >= 2" >&2; exit 1; }
export WEFT_BIN=${WEFT_BIN:-$TOP/build/release/bin}
HAPROXY=${BENCH_LB_HAPROXY:-/usr/sbin/haproxy}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
LBPY=$TOP/bench/lb/lb.py

P=wlb$$
NS=$P				# the one namespace this run makes
HOST=bench.example.com
REF_VIP=10.99.0.1 WEFT_VIP=10.99.0.2 MANY_REF_VIP=10.99.0.3
RESP_IP=10.99.1.1 SCALE_IP=10.99.1.2
LB_NET=192.168.210.0/24
CTRL_URL=https://127.0.0.1:6443
KNS=bench			# the Kubernetes namespace of the objects
TMP=$(mktemp -d /tmp/weft-bench-lb.XXXXXX)
RES=$TMP/results.tsv
: >"$RES"
NSS=()				# namespaces created here
PIDS=()				# processes started here
# shellcheck disable=SC2034  # bench/lib.sh reads these (no labs here)
declare -A LAB_UP=()
# shellcheck disable=SC2034
LAB_BIN=
HAPROXY_DIRS=()			# state directories of HAProxy masters (pid file, master.sock)
broke=0

# shellcheck disable=SC2034  # the prefix of say's lines (bench/lib.sh)
BENCH_NAME=lb
source bench/lib.sh

lb_cleanup() {
	local rc=$? pid d
	trap - EXIT INT TERM
	# the engines first: on SIGTERM weft-lb stops its HAProxy
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	PIDS=()
	for d in "${HAPROXY_DIRS[@]}"; do
		pid=$(cat "$d/haproxy.pid" 2>/dev/null)
		[ -n "$pid" ] && grep -qaF "$d/master.sock" "/proc/$pid/cmdline" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	done
	# whatever is left in the namespace this run made, it started
	if [ ${#NSS[@]} -gt 0 ]; then
		for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
	fi
	(exit "$rc")
	bench_cleanup
}
trap lb_cleanup EXIT
trap 'exit 130' INT TERM

GOALS=(lb_rps_vs_ref lb_p99_vs_ref lb_new_host_p99 lb_scale_errors lb_scale_reloads)
bench_need_root "to create a network namespace"
NEED=()
[ -x "$HAPROXY" ] || NEED+=("$HAPROXY (Debian package haproxy)")
[ -x "$PY" ] || NEED+=(python3)
for b in weft-controller weft-lb weftctl; do [ -x "$WEFT_BIN/$b" ] || NEED+=("$WEFT_BIN/$b (make)"); done
bench_need_tools "" ip wrk curl jq timeout

# ------------------------------------------------------------ helpers
# in_ns CMD...: CMD in the namespace (foreground).  Background processes
# are started with "ip netns exec NS CMD &" itself, which execs CMD, so
# that $! is CMD's own PID (a function would put a subshell between).
in_ns() { ip netns exec "$NS" "$@"; }
stop() { # PID: end one process this run started, and forget it
	local pid=$1 i
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	for i in "${!PIDS[@]}"; do [ "${PIDS[i]}" = "$pid" ] && unset "PIDS[i]"; done
}
until_ok() { # SECONDS CMD...: CMD until it succeeds, every 50 ms
	local end=$(($(date +%s%N) + $1 * 1000000000)); shift
	while [ "$(date +%s%N)" -lt "$end" ]; do "$@" && return 0; sleep 0.05; done
	return 1
}
code() { in_ns curl -s -o /dev/null -m 2 -w '%{http_code}' -H "Host: $1" "http://$2/"; }
answers() { [ "$(code "$1" "$2")" = 200 ]; }
die() { # MESSAGE: the goals measured so far, the others FAIL; exit 1
	say "FAILED: $*"
	"$PY" "$LBPY" report "$RES"
	exit 1
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
children() { cat /proc/"$1"/task/*/children 2>/dev/null; }
# haproxy_rss MASTER: "master worker others" KiB (workers: its children;
# "others": old workers a reload left, still finishing)
haproxy_rss() {
	local m=$1 cur=${2:-} c w=0 o=0
	for c in $(children "$m"); do
		if [ -z "$cur" ] || [ "$c" = "$cur" ]; then w=$((w + $(rss_kib "$c"))); else o=$((o + $(rss_kib "$c"))); fi
	done
	echo "$(rss_kib "$m") $w $o"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# global_cfg DIR: weft-lb's global and defaults (src/lb/render.c,
# render_global), with DIR's sockets: the reference runs under the same
# tuning (no nbthread, no maxconn: HAProxy's defaults for both)
global_cfg() {
	cat <<EOF
global
	master-worker
	stats socket $1/haproxy.sock mode 600 level admin expose-fd listeners
	stats timeout 30s
	hard-stop-after 30s
	tune.ssl.default-dh-param 2048

defaults
	mode http
	timeout connect 5s
	timeout client 30s
	timeout server 30s
	timeout http-request 10s
	timeout http-keep-alive 10s
	timeout tunnel 1h
	timeout check 3s
	retries 2
	option redispatch
	option idle-close-on-response

backend not-found
	mode http
	http-request deny deny_status 404

EOF
}
# start_haproxy DIR: HAProxy as weft-lb starts it (master-worker, master
# socket, pid file) on DIR/haproxy.cfg
start_haproxy() {
	ip netns exec "$NS" "$HAPROXY" -W -S "$1/master.sock" -f "$1/haproxy.cfg" -p "$1/haproxy.pid" >"$1/haproxy.log" 2>&1 &
	PIDS+=($!)
	HAPROXY_DIRS+=("$1")
	LAST_PID=$!
}
engine_status() { in_ns "$WEFT_BIN/weft-lb" status --state-dir "$1" 2>/dev/null; }
settled() { engine_status "$1" | jq -e '.pendingReload == false' >/dev/null; }

# ------------------------------------------------------------ namespace
ip netns add "$NS" || { echo "lb: cannot create netns $NS" >&2; exit 1; }
NSS+=("$NS")
ip -n "$NS" link set lo up
for a in $REF_VIP $WEFT_VIP $MANY_REF_VIP $RESP_IP $SCALE_IP; do ip -n "$NS" addr add "$a/32" dev lo; done
# AnyIP, as weft-lab gives its engines: the whole L7 VIP network is local
ip -n "$NS" route add local "$LB_NET" dev lo
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
echo "lb: kernel $(uname -r), $(nproc) CPUs, $("$HAPROXY" -v | head -n 1 | cut -d' ' -f1-3), wrk -t2 -c$CONNS -d${SECS}s, $REPS runs interleaved; netns $NS"
[ $((REPS % 2)) -eq 1 ] && say "note: BENCH_LB_REPS=$REPS is odd: one order of the pair is measured once more"
record meta wrk "-t2 -c$CONNS -d${SECS}s"

# the responder: the fastest backend HAProxy itself can be
mkdir -p "$TMP/resp"
cat >"$TMP/resp/haproxy.cfg" <<EOF
defaults
	mode http
	timeout connect 5s
	timeout client 30s
	timeout server 30s

frontend static
	bind $RESP_IP:8001-8004
	bind $RESP_IP:8080
	http-request return status 200 content-type text/plain string ok

frontend scaled
	bind $SCALE_IP:9100-9149
	http-request return status 200 content-type text/plain lf-string "port=%[dst_port]"
EOF
ip netns exec "$NS" "$HAPROXY" -db -f "$TMP/resp/haproxy.cfg" >"$TMP/resp/haproxy.log" 2>&1 &
PIDS+=($!)
until_ok 10 answers x "$RESP_IP:8004" || die "the responder does not answer on $RESP_IP:8004: $(tail -n 3 "$TMP/resp/haproxy.log" | oneline)"

# ---------------------------------------------- 1. throughput and latency
mkdir -p "$TMP/ref" "$TMP/se-dir/objects"
{
	global_cfg "$TMP/ref"
	cat <<EOF
frontend ref
	mode http
	bind $REF_VIP:80
	option forwardfor
	http-request set-header Forwarded for=%[src];proto=http;host=%[req.hdr(host)]
	http-request set-header X-Forwarded-Proto http
	use_backend bench if { req.hdr(host),field(1,:),lower -m str $HOST }
	default_backend not-found

backend bench
	mode http
	balance roundrobin
	option httpchk GET /
EOF
	for p in 1 2 3 4; do printf '\tserver s%d %s:800%d check inter 2s fall 2 rise 1\n' "$p" "$RESP_IP" "$p"; done
} >"$TMP/ref/haproxy.cfg"
start_haproxy "$TMP/ref"
REF_PID=$LAST_PID

jq -n --arg vip "$WEFT_VIP" --arg ip "$RESP_IP" --arg h "$HOST" '{apiVersion: "lb.weft.io/v1", kind: "VirtualService",
  metadata: {name: "weft--Shared-L7-0", labels: {"lb.weft.io/type": "SharedL7", "lb.weft.io/shard": "0"}},
  spec: {type: "SharedL7", vip: $vip, ports: [{port: 80, protocol: "HTTP"}],
    poolGroups: [{name: "weft--Shared-L7-0", members: [{pool: ("weft--" + $h + "-bench-bench"), host: $h,
      priorityLabel: $h, ratio: 100}]}],
    pools: [{name: ("weft--" + $h + "-bench-bench"), service: {namespace: "bench", name: "bench", port: 80},
      protocol: "HTTP", healthMonitor: {type: "HTTP"},
      servers: [range(1; 5) | {ip: $ip, port: (8000 + .)}]}],
    sources: [{kind: "Ingress", namespace: "bench", name: "bench"}]}}' >"$TMP/se-dir/objects/shared.json"
ip netns exec "$NS" "$WEFT_BIN/weft-lb" run --name se-dir --state-dir "$TMP/se-dir/state" --objects-dir "$TMP/se-dir/objects" \
	--haproxy "$HAPROXY" >"$TMP/se-dir/weft-lb.log" 2>&1 &
PIDS+=($!)
SE_DIR_PID=$!
HAPROXY_DIRS+=("$TMP/se-dir/state")
until_ok 20 answers "$HOST" "$REF_VIP:80" || die "the reference does not answer: $(tail -n 3 "$TMP/ref/haproxy.log" | oneline)"
until_ok 20 answers "$HOST" "$WEFT_VIP:80" || die "weft-lb (objects dir) does not answer: $(tail -n 3 "$TMP/se-dir/weft-lb.log" | oneline)"
if [ -n "$SAVE" ]; then
	mkdir -p "$SAVE" && cp "$TMP/ref/haproxy.cfg" "$SAVE/ref.cfg" && cp "$TMP/se-dir/state/haproxy.cfg" "$SAVE/weft-lb.cfg" &&
		cp -r "$TMP/se-dir/state/maps" "$SAVE/weft-lb-maps"
fi
say "reference $REF_VIP:80 and weft-lb $WEFT_VIP:80 answer $HOST; 4 servers $RESP_IP:8001-8004; floor: $RESP_IP:8001 directly"

run_wrk() { # KEY ADDR RUN
	local f=$TMP/wrk-$1-$3.txt j
	timeout $((SECS + 30)) ip netns exec "$NS" wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -H "Host: $HOST" "http://$2/" >"$f" 2>&1
	j=$("$PY" "$LBPY" wrk "$f")
	if [ "$(jq -r .rps <<<"$j")" = null ]; then die "wrk against $1 ($2): $(tail -n 3 "$f" | oneline)"; fi
	record wrk "$1" "$3" "$j"
	jq -r --arg k "$1" '"  \($k | .+"      " | .[0:6]) \(.rps | floor) req/s  p50 \(.p50_ms) ms  p99 \(.p99_ms) ms  non-2xx \(.non2xx)  socket errors \(.socket_errors)"' <<<"$j"
}
# warm-up, unrecorded
for a in "$RESP_IP:8001" "$REF_VIP:80" "$WEFT_VIP:80"; do
	timeout 30 ip netns exec "$NS" wrk -t2 -c"$CONNS" -d1s -H "Host: $HOST" "http://$a/" >/dev/null 2>&1
done
for ((r = 1; r <= REPS; r++)); do
	say "throughput, run $r/$REPS"
	if [ $((r % 2)) -eq 1 ]; then order="floor ref weft"; else order="weft ref floor"; fi
	for k in $order; do
		case $k in
		floor) run_wrk floor "$RESP_IP:8001" "$r" ;;
		ref) run_wrk ref "$REF_VIP:80" "$r" ;;
		weft) run_wrk weft "$WEFT_VIP:80" "$r" ;;
		esac
	done
done
say "weft-lb (objects dir): $(engine_status "$TMP/se-dir/state" | jq -c '{reloads, runtimeBatches, frontends, backends, servers}')"
stop "$SE_DIR_PID"
stop "$REF_PID"

# --------------------------------------------- controller and engine
CD=$TMP/ctrl
SE=$TMP/se-api/state
mkdir -p "$CD" "$TMP/se-api"
cat >"$TMP/cluster.yaml" <<EOF
apiVersion: network.openshift.io/v1
kind: ClusterNetwork
metadata: {name: default}
clusterNetworks: [{cidr: 10.128.0.0/14, hostSubnetLength: 9}]
serviceNetwork: 172.30.0.0/16
vipNetworks: [192.168.211.0/29]
loadBalancer: {clusterName: weft, shardSize: LARGE, vipNetworks: [$LB_NET]}
EOF
ip netns exec "$NS" "$WEFT_BIN/weft-controller" --data-dir "$CD" --listen 127.0.0.1:6443 --config "$TMP/cluster.yaml" \
	>"$TMP/controller.log" 2>&1 &
PIDS+=($!)
CTRL_PID=$!
until_ok 20 in_ns curl -sf --cacert "$CD/pki/ca.crt" "$CTRL_URL/healthz" -o /dev/null ||
	die "the controller did not start: $(tail -n 3 "$TMP/controller.log" | oneline)"
W() { in_ns env WEFT_SERVER=$CTRL_URL WEFT_TOKEN_FILE=$CD/admin.token KUBECONFIG=$CD/admin.kubeconfig "$WEFT_BIN/weftctl" "$@"; }
cat >"$TMP/base.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $KNS}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: $KNS}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: $KNS}
subsets: [{addresses: [{ip: $RESP_IP}], ports: [{name: http, port: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: many, namespace: $KNS}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: many, namespace: $KNS}
subsets: [{addresses: [{ip: $SCALE_IP}], ports: [{name: http, port: 9100}]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: scale, namespace: $KNS}
spec:
  rules:
  - host: scale.$HOST
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: many, port: {number: 80}}}}]}
EOF
out=$(W apply -f "$TMP/base.yaml" 2>&1) || die "weftctl apply -f base.yaml: $(oneline <<<"$out")"
ip netns exec "$NS" "$WEFT_BIN/weft-lb" run --name se-1 --controller "$CTRL_URL" --token-file "$CD/admin.token" \
	--ca-file "$CD/pki/ca.crt" --state-dir "$SE" --haproxy "$HAPROXY" >"$TMP/se-api/weft-lb.log" 2>&1 &
PIDS+=($!)
SE_PID=$!
HAPROXY_DIRS+=("$SE")
scale_vip() { W get ingress -n "$KNS" scale -o json 2>/dev/null | jq -r '.status.loadBalancer.ingress[0].ip // empty'; }
has_scale_vip() { [ -n "$(scale_vip)" ]; }
until_ok 20 has_scale_vip || die "Ingress scale got no VIP within 20 s"
SCALE_VIP=$(scale_vip)
until_ok 20 answers "scale.$HOST" "$SCALE_VIP" ||
	die "scale.$HOST does not answer on $SCALE_VIP: $(tail -n 3 "$TMP/se-api/weft-lb.log" | oneline)"
say "controller $CTRL_URL (SQLite) and weft-lb --controller up; scale.$HOST on $SCALE_VIP"

api_spec() { # FILE JQ-ARGS...: the helper's SPEC with the API's credentials
	local f=$1; shift
	jq -n --arg url "$CTRL_URL" --arg tok "$CD/admin.token" --arg ca "$CD/pki/ca.crt" --arg ns "$KNS" \
		--arg sd "$SE" "$@" '{url: $url, tokenFile: $tok, caFile: $ca, namespace: $ns, stateDir: $sd} + $x' >"$f"
}

# ------------------------------------------------------ 2. new hosts
if [ "$HOSTS_NEW" -gt 0 ]; then
	until_ok 10 settled "$SE"
	N0=$(engine_status "$SE" | jq -r .reloads)
	api_spec "$TMP/newhost.json" --argjson x "{\"service\": \"web\", \"count\": $HOSTS_NEW, \"pollMs\": 10,
		\"gapS\": $(awk -v g="$NEW_GAP_MS" 'BEGIN { print g / 1000 }'), \"timeoutS\": 10}"
	say "new hosts: $HOSTS_NEW Ingresses POSTed one by one ($NEW_GAP_MS ms apart), each until http://VIP/ answers 200 (polled every 10 ms)"
	timeout $((HOSTS_NEW * 15 + 30)) ip netns exec "$NS" "$PY" "$LBPY" newhost "$TMP/newhost.json" "$TMP/newhost-out.json" ||
		die "the new-host helper failed"
	err=$(jq -r '.error // empty' "$TMP/newhost-out.json")
	[ -z "$err" ] || die "new hosts: $err"
	jq -r '"lb: new host: \(.ok) of \(.samples | length) answered; p50 \(.p50 * 1000 | round) ms, p99 \(.p99 * 1000 | round) ms, max \(.max * 1000 | round) ms; the VIP in the status after p50 \(.vip_p50 * 1000 | round) ms"' \
		"$TMP/newhost-out.json"
	until_ok 10 settled "$SE"
	say "new host: $(($(engine_status "$SE" | jq -r .reloads) - N0)) reloads for the $HOSTS_NEW hosts"
	say "new host, each (ms): $(jq -r '[.samples[] | .s * 1000 | round] | map(tostring) | join(" ")' "$TMP/newhost-out.json")"
	ok=$(jq -r '.ok' "$TMP/newhost-out.json")
	if [ "$ok" = "$HOSTS_NEW" ]; then
		record newhost p99 "$(jq -r .p99 "$TMP/newhost-out.json")"
	else
		say "new host: $((HOSTS_NEW - ok)) of $HOSTS_NEW did not answer within 10 s: $(jq -r '[.samples[] | select(.ok | not) | .host] | .[0:3] | join(" ")' "$TMP/newhost-out.json")"
		record newhost p99 99
	fi
fi

# --------------------------------------------- 3. 1 -> 50 -> 1 under load
STEPS='[2, 5, 10, 20, 35, 50, 35, 20, 10, 5, 1]'
until_ok 10 settled "$SE"
R0=$(engine_status "$SE" | jq -c '{reloads, runtimeBatches, runtimeCommands}')
SCALE_SECS=15
api_spec "$TMP/scale.json" --argjson x "{\"service\": \"many\", \"ip\": \"$SCALE_IP\", \"firstPort\": 9100,
	\"steps\": $STEPS, \"holdS\": 0.5}"
say "scale: Endpoints many 1 -> $(jq -r 'join(" -> ")' <<<"$STEPS") servers while wrk -t2 -c16 --timeout 10s runs ${SCALE_SECS} s on scale.$HOST ($SCALE_VIP)"
ip netns exec "$NS" wrk -t2 -c16 -d"${SCALE_SECS}s" --timeout 10s --latency -H "Host: scale.$HOST" "http://$SCALE_VIP/" \
	>"$TMP/wrk-scale.txt" 2>&1 &
WRK_PID=$!
PIDS+=("$WRK_PID")
sleep 1
t0=$(date +%s%N)
timeout 120 ip netns exec "$NS" "$PY" "$LBPY" scale "$TMP/scale.json" "$TMP/scale-out.json" || die "the scale helper failed"
t1=$(date +%s%N)
err=$(jq -r '.error // empty' "$TMP/scale-out.json")
[ -z "$err" ] || die "scale: $err"
# wrk ends on 1 server; then the reloads and errors of the whole run
wait "$WRK_PID"
for i in "${!PIDS[@]}"; do [ "${PIDS[i]}" = "$WRK_PID" ] && unset "PIDS[i]"; done
until_ok 10 settled "$SE"
R1=$(engine_status "$SE" | jq -c '{reloads, runtimeBatches, runtimeCommands}')
W_SCALE=$("$PY" "$LBPY" wrk "$TMP/wrk-scale.txt")
scale_errors=$(jq -r '.non2xx + .socket_errors' <<<"$W_SCALE")
scale_reloads=$(($(jq -r .reloads <<<"$R1") - $(jq -r .reloads <<<"$R0")))
if [ "$(jq -r .requests <<<"$W_SCALE")" = null ]; then die "wrk during the scale: $(tail -n 3 "$TMP/wrk-scale.txt" | oneline)"; fi
say "scale: $(jq -r '[.steps[] | "\(.servers)(\(.s * 1000 | round) ms)"] | join(" ")' "$TMP/scale-out.json") — each step's time until the VirtualService's pool had that many servers; the steps took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s of wrk's $SCALE_SECS"
say "scale: wrk $(jq -r '"\(.requests) requests, \(.rps | floor) req/s, p99 \(.p99_ms) ms, non-2xx \(.non2xx), socket errors \(.socket_errors)"' <<<"$W_SCALE"); engine before $R0, after $R1"
record scale errors "$scale_errors"
record scale reloads "$scale_reloads"
# a fresh 50 -> spread check, outside the timed load: 200 requests reach how many of the 50
api_spec "$TMP/scale50.json" --argjson x "{\"service\": \"many\", \"ip\": \"$SCALE_IP\", \"firstPort\": 9100, \"steps\": [50], \"holdS\": 0.3}"
if timeout 60 ip netns exec "$NS" "$PY" "$LBPY" scale "$TMP/scale50.json" "$TMP/scale50-out.json"; then
	seen=$(for _ in $(seq 200); do in_ns curl -s -m 2 -H "Host: scale.$HOST" "http://$SCALE_VIP/"; echo; done | sort -u | grep -c '^port=')
	say "scale: at 50 servers, 200 requests (new connections) reached $seen distinct servers"
	api_spec "$TMP/scale1.json" --argjson x "{\"service\": \"many\", \"ip\": \"$SCALE_IP\", \"firstPort\": 9100, \"steps\": [1], \"holdS\": 0}"
	timeout 60 ip netns exec "$NS" "$PY" "$LBPY" scale "$TMP/scale1.json" "$TMP/scale1-out.json" >/dev/null
fi

# ------------------------------------------------ 4. many hosts, 8 shards
if [ "$HOSTS_MANY" -gt 0 ]; then
	until_ok 10 settled "$SE"
	M0=$(engine_status "$SE" | jq -c '{reloads, runtimeBatches, runtimeCommands}')
	cpu_s() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat" 2>/dev/null; }	# USER_HZ = 100
	c0=$(cpu_s "$CTRL_PID") e0=$(cpu_s "$SE_PID")
	t0=$(date +%s%N)
	"$PY" "$LBPY" ingresses "$HOSTS_MANY" "$KNS" web "$TMP/many.yaml"
	t1=$(date +%s%N)
	out=$(W apply -f "$TMP/many.yaml" 2>&1) || die "weftctl apply -f of $HOSTS_MANY Ingresses: $(tail -n 2 <<<"$out" | oneline)"
	t2=$(date +%s%N)
	api_spec "$TMP/hosts.json" --argjson x "{\"count\": $HOSTS_MANY, \"t0\": $t0, \"timeoutS\": 300}"
	timeout 330 ip netns exec "$NS" "$PY" "$LBPY" hosts "$TMP/hosts.json" "$TMP/hosts-out.json" || die "the hosts helper failed"
	c1=$(cpu_s "$CTRL_PID") e1=$(cpu_s "$SE_PID")
	M1=$(engine_status "$SE" | jq -c '{reloads, runtimeBatches, runtimeCommands, frontends, backends, servers, generation, rejected: (.rejected | length)}')
	H=$TMP/hosts-out.json
	APPLY_S=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	say "many: $HOSTS_MANY Ingresses: manifest written in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s, weftctl apply -f took $APPLY_S s"
	say "many: $(jq -r '"\(.with_vip) hosts with a VIP in their Ingress status after \(.vips_s * 100 | round / 100) s; every host answering 200 after \(.answer_s * 100 | round / 100) s (\(.rounds) rounds of checks, \(.failing) failing)"' "$H")"
	say "many: controller: $(jq -r '"\(.vs) VirtualServices (\(.vs_shared) SharedL7) on \(.vips | length) VIPs, \(.pools) pools"' "$H"); CPU $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s; RSS $(mib "$(rss_kib "$CTRL_PID")") MiB"
	say "many: engine: before $M0, after $M1; weft-lb CPU $(awk -v a="$e0" -v b="$e1" 'BEGIN { printf "%.2f", b - a }') s, RSS $(mib "$(rss_kib "$SE_PID")") MiB"
	[ "$(jq -r .failing "$H")" = 0 ] && [ "$(jq -r .with_vip "$H")" -ge "$HOSTS_MANY" ] ||
		{ say "many: FAILED: not every host answered: $(jq -c .failingSample "$H")"; record err many "not every host answered"; broke=1; }

	# a new host again, now that HAProxy has the many hosts to reload
	api_spec "$TMP/newhost-many.json" --argjson x "{\"service\": \"web\", \"count\": 5, \"pollMs\": 10,
		\"gapS\": $(awk -v g="$NEW_GAP_MS" 'BEGIN { print g / 1000 }'), \"timeoutS\": 10, \"prefix\": \"late\"}"
	if timeout 120 ip netns exec "$NS" "$PY" "$LBPY" newhost "$TMP/newhost-many.json" "$TMP/newhost-many-out.json" &&
		[ -z "$(jq -r '.error // empty' "$TMP/newhost-many-out.json")" ]; then
		echo "INFO lb_new_host_many: with $HOSTS_MANY hosts served, a new host answers after $(jq -r '[.samples[] | .s * 1000 | round] | map(tostring) | join(", ")' "$TMP/newhost-many-out.json") ms ($(jq -r .ok "$TMP/newhost-many-out.json") of 5 answered)"
	else
		say "many: FAILED: new hosts with $HOSTS_MANY hosts served: $(jq -r '.error // "the helper failed"' "$TMP/newhost-many-out.json" 2>/dev/null)"
		broke=1
	fi

	# the reference: one HAProxy, one backend per host, a host map
	mkdir -p "$TMP/many-ref"
	global_cfg "$TMP/many-ref" >"$TMP/many-ref/head.cfg"
	"$PY" "$LBPY" refcfg "$HOSTS_MANY" "$RESP_IP:8080" "$MANY_REF_VIP" "$TMP/many-ref" "$TMP/many-ref/head.cfg" "$TMP/many-ref/haproxy.cfg"
	t0=$(date +%s%N)
	start_haproxy "$TMP/many-ref"
	until_ok 30 answers h-0.bench.example.com "$MANY_REF_VIP:80" || die "the many-hosts reference does not answer"
	n=$(in_ns "$PY" "$LBPY" check "$MANY_REF_VIP" "$HOSTS_MANY")
	t1=$(date +%s%N)
	[ "$n" = "$HOSTS_MANY" ] || die "the many-hosts reference: $n of $HOSTS_MANY hosts answered"
	# both have answered one request per host; let old workers finish, then read both
	sleep 2
	SE_HA=$(engine_status "$SE" | jq -r .haproxyPid)
	SE_W=$(engine_status "$SE" | jq -r .workerPid)
	REF_M=$(cat "$TMP/many-ref/haproxy.pid" 2>/dev/null | head -n 1)
	read -r wm ww wo <<<"$(haproxy_rss "$SE_HA" "$SE_W")"
	read -r rm rw _ <<<"$(haproxy_rss "${REF_M:-0}")"
	say "many: reference HAProxy (one frontend, $HOSTS_MANY backends of 1 server, a host map): up and every host answering in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s"
	say "many: HAProxy RSS: weft-lb's master $(mib "$wm") + worker $(mib "$ww") MiB$([ "$wo" -gt 0 ] && echo " (+ $(mib "$wo") MiB of old workers still finishing)"); reference master $(mib "$rm") + worker $(mib "$rw") MiB"
	say "many: configuration: weft-lb $(wc -l <"$SE/haproxy.cfg") lines, $(grep -c '^[[:space:]]server ' "$SE/haproxy.cfg") server lines; reference $(wc -l <"$TMP/many-ref/haproxy.cfg") lines, $(grep -c '^[[:space:]]server ' "$TMP/many-ref/haproxy.cfg") server lines"
	if [ -n "$SAVE" ]; then
		rm -rf "$SAVE/weft-lb-many" "$SAVE/ref-many" && cp -r "$SE" "$SAVE/weft-lb-many" && cp -r "$TMP/many-ref" "$SAVE/ref-many"
		echo "$SE" >"$SAVE/weft-lb-many/original-dir"
	fi
	ratio=$(awk -v a=$((wm + ww)) -v b=$((rm + rw)) 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')
	echo "INFO lb_many_answer_s: $(jq -r '.answer_s * 100 | round / 100' "$H") s from the start of weftctl apply -f (${APPLY_S} s itself) until all $HOSTS_MANY hosts answer"
	echo "INFO lb_many_vs: $(jq -r .vs_shared "$H") SharedL7 VirtualServices (8 expected), $(jq -r .vs "$H") in all"
	echo "INFO lb_many_haproxy_rss: weft-lb $(mib $((wm + ww))) MiB / reference $(mib $((rm + rw))) MiB = ${ratio}x (master + current worker)"
fi

record meta load "$LOAD_START / $(cut -d' ' -f1 /proc/loadavg)"
say "load average $LOAD_START at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
echo
"$PY" "$LBPY" report "$RES" || broke=1
exit "$broke"
