# tests/lib.sh — shared helpers for weft's shell tests (sourced).
#
# A test script sources this, defines its checks with `check NAME CMD...`
# (or `pass NAME` / `fail NAME WHY`), and ends with `finish`, which prints
# "<script>: N passed, N failed" for tests/run to add up.  Helpers start a
# controller on a private directory and port, and a cleanup trap stops
# exactly the processes and removes exactly the files the script made.

set -u
T_NAME=$(basename "$0" .sh)
T_PASSED=0
T_FAILED=0
T_PIDS=()
T_ROOT=$(mktemp -d /tmp/weft-test.XXXXXX)	# every directory a test makes is inside
BUILD=${BUILD:-build/san}
WEFTCTL=${WEFTCTL:-$BUILD/bin/weftctl}
CONTROLLER=${CONTROLLER:-$BUILD/bin/weft-controller}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

pass() { T_PASSED=$((T_PASSED + 1)); echo "  ok   $1"; }
fail() { T_FAILED=$((T_FAILED + 1)); echo "  FAIL $1${2:+: $2}"; }

# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(echo "$out" | tail -n 5)"; fi
}

# check_fails NAME CMD...: passes when CMD exits non-zero.
check_fails() {
	local name=$1; shift
	if "$@" >/dev/null 2>&1; then fail "$name" "succeeded but should have failed"; else pass "$name"; fi
}

# How long a test server (python3 peer.py, iperf3) may take to listen: a
# bound, not a sleep (wait_for returns as soon as it listens).  Python's
# start alone took over a second on a loaded 2-CPU machine, and the tests
# start ten at once.
SERVER_START_S=${SERVER_START_S:-30}

# wait_for SECONDS CMD...: poll until CMD succeeds (every 50 ms).
wait_for() {
	local deadline=$(( $(date +%s%N) / 1000000 + $1 * 1000 )); shift
	until "$@" >/dev/null 2>&1; do
		[ $(( $(date +%s%N) / 1000000 )) -lt $deadline ] || return 1
		sleep 0.05
	done
}

# watch_open HEADERS: wait until a streaming `curl -D HEADERS` has its
# 200.  The controller registers a watch before it answers, so from then on
# every write reaches the stream.
watch_open() { wait_for 10 grep -q '^HTTP/[0-9.]* 200' "$1"; }

# tmpdir: a fresh directory under T_ROOT (safe in $(...): cleanup removes the root).
tmpdir() { mktemp -d "$T_ROOT/d.XXXXXX"; }

free_port() {
	python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# start_controller DIR [ARGS...]: sets CTRL_PID, CTRL_URL, CTRL_TOKEN_FILE,
# CTRL_CA (DIR/pki/ca.crt) and CTRL_KUBECONFIG (DIR/admin.kubeconfig).  The
# controller serves HTTPS (plain HTTP only when ARGS has --insecure-http).
# From then on the script's clients trust that CA, as a host whose trust
# store holds the cluster CA would: curl through CURL_CA_BUNDLE, Python's
# ssl through SSL_CERT_FILE, weftctl through KUBECONFIG (beside
# WEFT_SERVER and WEFT_TOKEN_FILE).  A test of refusals unsets them.
start_controller() {
	local dir=$1; shift
	local port scheme=https a; port=$(free_port)
	for a in "$@"; do [ "$a" != --insecure-http ] || scheme=http; done
	CTRL_URL="$scheme://127.0.0.1:$port"
	CTRL_TOKEN_FILE="$dir/admin.token"
	CTRL_CA="$dir/pki/ca.crt"
	CTRL_KUBECONFIG="$dir/admin.kubeconfig"
	CTRL_LOG="$dir/controller.log"
	"$CONTROLLER" --data-dir "$dir" --listen "127.0.0.1:$port" "$@" >>"$dir/controller.log" 2>&1 &
	CTRL_PID=$!
	T_PIDS+=("$CTRL_PID")
	if ! wait_for 20 curl -sf --cacert "$CTRL_CA" "$CTRL_URL/healthz"; then
		echo "controller did not start; log:" >&2; tail -n 20 "$dir/controller.log" >&2
		return 1
	fi
	export WEFT_SERVER=$CTRL_URL WEFT_TOKEN_FILE=$CTRL_TOKEN_FILE KUBECONFIG=$CTRL_KUBECONFIG
	if [ "$scheme" = https ]; then export CURL_CA_BUNDLE=$CTRL_CA SSL_CERT_FILE=$CTRL_CA; fi
}

# One etcd member (Debian's etcd-server) on loopback for a test.
ETCD=${ETCD:-/usr/bin/etcd}
ETCDCTL=${ETCDCTL:-/usr/bin/etcdctl}
ETCD_CTL_ARGS=()	# TLS and user flags for etcdctl, when the etcd wants them

# ctl ARGS...: etcdctl on the etcd started last (ETCD_ENDPOINT, ETCD_CTL_ARGS)
ctl() { ETCDCTL_API=3 "$ETCDCTL" --endpoints "$ETCD_ENDPOINT" --dial-timeout 2s --command-timeout 5s "${ETCD_CTL_ARGS[@]}" "$@"; }

# etcd_healthy: until etcd answers, or it has exited (a port taken since
# free_port looked), or 30 s
etcd_healthy() {
	local deadline=$(( $(date +%s) + 30 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		kill -0 "$ETCD_PID" 2>/dev/null || return 1
		ctl endpoint health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# start_etcd DIR [SCHEME [ETCD-ARGS...]]: a one-member etcd with its data
# in DIR/data, clients on SCHEME (http, or https with TLS flags in
# ETCD-ARGS) at a free loopback port; a port taken meanwhile is tried
# again.  Sets ETCD_PID, ETCD_PORT, ETCD_ENDPOINT (SCHEME://127.0.0.1:PORT)
# and ETCD_URL (etcd://127.0.0.1:PORT, the store URL weft-controller
# takes).  0 once it answers.
start_etcd() {
	local dir=$1 scheme=${2:-http} try cport pport; shift; [ $# -eq 0 ] || shift
	for try in 1 2 3; do
		cport=$(free_port); pport=$(free_port)
		[ "$cport" != "$pport" ] || continue
		rm -rf "$dir/data"
		ETCD_PORT=$cport
		ETCD_ENDPOINT=$scheme://127.0.0.1:$cport
		ETCD_URL=etcd://127.0.0.1:$cport
		"$ETCD" --name default --data-dir "$dir/data" \
			--listen-client-urls "$ETCD_ENDPOINT" --advertise-client-urls "$ETCD_ENDPOINT" \
			--listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
			--initial-cluster "default=http://127.0.0.1:$pport" --initial-cluster-state new \
			--initial-cluster-token "weft-test-$try" "$@" >"$dir/etcd.log" 2>&1 &
		ETCD_PID=$!
		T_PIDS+=("$ETCD_PID")
		etcd_healthy && return 0
		kill "$ETCD_PID" 2>/dev/null; wait "$ETCD_PID" 2>/dev/null
		echo "  etcd on port $cport did not come up (try $try); its log ends:"
		tail -n 5 "$dir/etcd.log" | sed 's/^/    /'
	done
	return 1
}

# stop_controller: SIGTERM and wait; fails if it exited with an error
# (a sanitizer report makes the exit status non-zero).
stop_controller() {
	[ -n "${CTRL_PID:-}" ] || return 0
	kill -TERM "$CTRL_PID" 2>/dev/null || true
	local rc=0
	wait "$CTRL_PID" || rc=$?
	CTRL_PID=
	if [ $rc -ne 0 ]; then
		echo "controller exited $rc; its log:"
		grep -E -A14 'ERROR|runtime error|Direct leak' "$CTRL_LOG" | head -n 60
	fi
	return $rc
}

# check_stop NAME: stop the controller (in this shell, so it can be reaped)
# and pass when it exited cleanly.
check_stop() {
	local report rc=0
	report=$(mktemp /tmp/weft-test.XXXXXX)
	stop_controller >"$report" 2>&1 || rc=$?
	if [ $rc -eq 0 ]; then pass "$1"; else fail "$1" "$(cat "$report")"; fi
	rm -f "$report"
}

# what api (below) printed: the HTTP code, or the body without it
code_of() { tail -n 1; }
body_of() { sed '$d'; }

api() { # api METHOD PATH [curl args...]: prints body, then HTTP code on the last line
	local m=$1 p=$2; shift 2
	curl -s --cacert "$CTRL_CA" -X "$m" -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
		-H 'Content-Type: application/json' -w '\n%{http_code}\n' "$@" "$CTRL_URL$p"
}

# lost_acks ACKS CLIENT...: how many of the objects tests/tools/api_writer.py
# acknowledged (ACKS: "node NAME" / "pod NAME" / "secret NAME" lines)
# CLIENT does not find;
# CLIENT is called as `CLIENT... GET PATH` and prints the body, then the
# HTTP code (api, say).  Each one missing is named on stderr.
lost_acks() {
	local acks=$1 what name p n=0; shift
	while read -r what name; do
		case $what in
		node) p=/api/v1/nodes/$name ;;
		pod) p=/api/v1/namespaces/default/pods/$name ;;
		secret) p=/api/v1/namespaces/default/secrets/$name ;;
		*) continue ;;
		esac
		[ "$("$@" GET "$p" | tail -n 1)" = 200 ] || { n=$((n + 1)); echo "lost: $what $name" >&2; }
	done <"$acks"
	echo "$n"
}

t_cleanup() {
	local p
	for p in "${T_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${T_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T_ROOT"
}
trap t_cleanup EXIT

finish() {
	echo "$T_NAME: $T_PASSED passed, $T_FAILED failed"
	[ "$T_FAILED" -eq 0 ]
}

# need_lab: end the script now (as a failure, so it is never mistaken for
# a pass) unless it runs as root with the agent and plugin built.
need_lab() {
	local why=""

	if [ "$(id -u)" != 0 ]; then
		why="weft-lab needs root"
	elif [ ! -x "$WEFT_BIN/weft-agent" ] || [ ! -x "$WEFT_BIN/weft-cni" ]; then
		why="$WEFT_BIN/weft-agent or weft-cni is missing (make SAN=1 unit-bins)"
	fi
	[ -z "$why" ] && return 0
	fail "prerequisites" "$why"
	finish
	exit 1
}

# lab_names SUFFIX: the names a lab script starts with: the binaries
# (WEFT_BIN), its lab t<pid>-SUFFIX (LAB, and L for lab()), peer.py (PEER)
# and Debian's python3 (PYTHON, whose modules the tests use)
lab_names() {
	export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
	LAB=t$$-$1
	L=$LAB
	PEER=$PWD/tests/tools/peer.py
	PYTHON=$(command -v /usr/bin/python3 || command -v python3)
}

# --- for scripts that drive a weft-lab.  lab() works on the lab named $L
# (scripts with one lab set L=$LAB; scripts with several switch L).
lab() { src/lab/weft-lab --lab "$L" "$@"; }
# netns TARGET: the namespace of a pod (blue/a), a node (node-1), outside or ctrl
netns() { local t=$1; [[ $t == */* ]] && t=pod-${t/\//-}; echo "$L-$t"; }
# ns TARGET CMD...: run CMD there
ns() { local n; n=$(netns "$1"); shift; ip netns exec "$n" "$@"; }
status_json() { lab status -o json; }
pod_ip() { status_json | jq -r --arg p "$1" '.pods[] | select(.namespace + "/" + .name == $p) | .ip'; }
node_field() { status_json | jq -r --arg n "$1" --arg f "$2" '.nodes[] | select(.name == $n) | .[$f]'; }

# connects TARGET IP [PORT [SECONDS]]: a TCP connection from TARGET's
# namespace to IP:PORT (80) opens within SECONDS (2)
connects() { ns "$1" timeout "${4:-2}" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "${3:-80}" 2>/dev/null; }

# serve_http PORT POD...: peer.py serving PORT in each pod (NAMESPACE/NAME,
# the name it answers with), started by this script, each checked to listen
serve_http() {
	local port=$1 p
	shift
	for p in "$@"; do
		ip netns exec "$(netns "$p")" "$PYTHON" "$PEER" serve "$port" "$p" >>"$T_ROOT/server.log" 2>&1 &
		T_PIDS+=("$!")
		check "$p's peer.py listens on $port" wait_for "$SERVER_START_S" \
			bash -c "ip netns exec $(netns "$p") ss -Hltn 'sport = :$port' | grep -q ."
	done
}

# lab_up_tenants: lab $LAB of 2 nodes in multitenant mode, with the
# namespaces x and y (two tenants)
lab_up_tenants() {
	echo "lab $LAB: 2 nodes, multitenant mode"
	must src/lab/weft-lab --lab "$LAB" up --nodes 2 --mode multitenant
	must lab weftctl apply -f - <<<'{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}},
 {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"y"}}]}'
}

# drops_reported NODE REASON MIN: `weftctl drops NODE` lists REASON on NODE
# with at least MIN packets (what the node's agent last reported)
drops_reported() {
	lab weftctl drops "$1" | awk -v n="$1" -v r="$2" -v min="$3" '$1 == n && $2 == r && $3 >= min { ok = 1 } END { exit !ok }'
}

# must CMD...: a step the rest of the test needs; stop here when it fails
# service_yaml NS NAME APP: a ClusterIP Service NAME in NS selecting
# app=APP, port 80 to the pods' 8080/TCP (one YAML document).
service_yaml() {
	printf 'apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: %s}\n' "$2" "$1"
	printf 'spec:\n  selector: {app: %s}\n  ports: [{port: 80, targetPort: 8080, protocol: TCP}]\n' "$3"
}

must() {
	local out
	out=$("$@" 2>&1) && return 0
	fail "$*" "$(tail -n 5 <<<"$out")"
	finish
	exit 1
}

# lab_cleanup [LAB...]: a lab script's EXIT trap: stop what it started,
# remove its files, bring down its lab $LAB and the other labs named
# (trap 'lab_cleanup "$OTHER"' EXIT)
lab_cleanup() {
	local l
	stop_started
	t_cleanup
	for l in "$LAB" "$@"; do src/lab/weft-lab --lab "$l" down >/dev/null 2>&1; done
	return 0
}

# stop_started: stop the processes this script started (T_PIDS), by PID.
# Always returns 0: a process stopped by its signal exits non-zero, and under
# set -e (a cleanup trap's too) that status would end the loop at the first
# PID and leave the others running.
stop_started() {
	local p
	for p in "${T_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${T_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	T_PIDS=()
}
