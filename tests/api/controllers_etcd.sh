#!/usr/bin/env bash
# controllers_etcd.sh — two weft-controllers on one etcd, both serving at
# once: what one writes the other reads and streams to its watchers,
# the Endpoints controller runs in one of them and moves when it dies,
# allocations made through both at the same moment never collide (node IDs
# and subnets, VNIDs, cluster IPs), a controller killed with SIGKILL in the
# middle of a stream of writes loses none that it acknowledged, and fsck of
# the store is clean afterwards.
#
#   api_writer.py ─HTTPS─► ctrl-1 ─┐
#   api_writer.py ─HTTPS─► ctrl-2 ─┴─ JSON gateway ─► etcd (one member, loopback)
#   curl watch ───HTTPS─► ctrl-2
cd "$(dirname "$0")/../.." && source tests/lib.sh

command -v etcd >/dev/null || { fail "etcd is installed (scripts/deps.sh installs etcd-server)"; finish; exit 1; }
dir=$(tmpdir)
start_etcd "$dir" || { fail "etcd starts"; finish; exit 1; }

# start_ctrl N: controller N on the etcd, its data in $dir/cN; ctrl-1 makes
# the cluster CA and admin token, and every later one serves with copies of
# them, so that a client of one is a client of all.  Sets URL_N and PID_N.
start_ctrl() {
	local n=$1 d=$dir/c$1 port
	port=$(free_port)
	mkdir -p "$d/pki" && chmod 700 "$d"
	if [ "$n" != 1 ]; then
		cp "$dir/c1/pki/ca.crt" "$dir/c1/pki/ca.key" "$d/pki/" && cp "$dir/c1/admin.token" "$d/"
	fi
	"$CONTROLLER" --data-dir "$d" --listen "127.0.0.1:$port" --store "$ETCD_URL" >>"$d/controller.log" 2>&1 &
	local pid=$!
	T_PIDS+=("$pid")
	printf -v "PID_$n" %s "$pid"
	printf -v "URL_$n" %s "https://127.0.0.1:$port"
	wait_for 20 curl -sf --cacert "$dir/c1/pki/ca.crt" "https://127.0.0.1:$port/healthz" ||
		{ tail -n 20 "$d/controller.log"; return 1; }
	# ready once its event cache has replayed the history it starts with
	wait_for 20 curl -sf --cacert "$dir/c1/pki/ca.crt" "https://127.0.0.1:$port/readyz" ||
		{ echo "  /readyz: $(curl -s --cacert "$dir/c1/pki/ca.crt" "https://127.0.0.1:$port/readyz")"; return 1; }
}

# on N METHOD PATH [curl args]: the body, then the HTTP code, from controller N
on() {
	local url=URL_$1; shift
	local m=$1 p=$2; shift 2
	curl -s --cacert "$dir/c1/pki/ca.crt" -X "$m" -H "Authorization: Bearer $(cat "$dir/c1/admin.token")" \
		-H 'Content-Type: application/json' -w '\n%{http_code}\n' "$@" "${!url}$p"
}

# (not through check: that runs its command in a subshell, which would keep the PIDs)
if start_ctrl 1; then pass "ctrl-1 starts on etcd"; else fail "ctrl-1 starts on etcd"; finish; exit 1; fi
if start_ctrl 2; then pass "ctrl-2 starts on the same etcd"; else fail "ctrl-2 starts on the same etcd"; finish; exit 1; fi
export SSL_CERT_FILE=$dir/c1/pki/ca.crt CURL_CA_BUNDLE=$dir/c1/pki/ca.crt

# A store that cannot be reached is said at start, naming it.
out=$("$CONTROLLER" --data-dir "$dir/bad" --listen 127.0.0.1:0 --store etcd://127.0.0.1:1 2>&1); rc=$?
check "an unreachable etcd: the controller exits non-zero" test "$rc" -ne 0
check "... and names the store it could not reach" grep -q 'etcd://127.0.0.1:1.*no endpoint answered' <<<"$out"
out=$("$CONTROLLER" --data-dir "$dir/bad" --listen 127.0.0.1:0 --store 'etcd://127.0.0.1:2379?colour=blue' 2>&1)
check "an unknown etcd URL parameter is refused by name" grep -q "unknown parameter 'colour'" <<<"$out"

# What ctrl-1 writes, ctrl-2 reads, and streams to a watch opened on it.
rv=$(on 2 GET /api/v1/namespaces | body_of | jq -r .metadata.resourceVersion)
curl -sN -D "$dir/watch.h" --cacert "$dir/c1/pki/ca.crt" -H "Authorization: Bearer $(cat "$dir/c1/admin.token")" \
	"$URL_2/api/v1/namespaces?watch=1&resourceVersion=$rv" >"$dir/watch.out" 2>&1 &
T_PIDS+=($!)
watch_open "$dir/watch.h"
check "a namespace created through ctrl-1" test "$(on 1 POST /api/v1/namespaces \
	-d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"seen-elsewhere"}}' | code_of)" = 201
check "... is read through ctrl-2" test "$(on 2 GET /api/v1/namespaces/seen-elsewhere | code_of)" = 200
check "... and reaches ctrl-2's watchers" wait_for 10 grep -q '"name":"seen-elsewhere"' "$dir/watch.out"

# A get or write waits on etcd in the server thread that read it when no
# other connection of that thread could wait behind it (inline_calls.h):
# no hand-off to a worker and back.  When etcd stalls, a call that has
# waited INLINE_STUCK_MS sends the next ones to the workers, and the
# server goes on answering whatever needs no etcd.
calls() { on 1 GET /metrics | grep -F "weft_store_calls_total{thread=\"$1\"}" | awk '{print $2}'; }
s0=$(calls server)
for i in 1 2 3; do on 1 GET /api/v1/namespaces/seen-elsewhere >/dev/null; done
check "a get alone on its connection waits on etcd in its server thread" test "$(calls server)" -ge $((s0 + 3))
w0=$(calls worker)
kill -STOP "$ETCD_PID"
on 1 GET /api/v1/namespaces/seen-elsewhere >"$dir/stalled-1" & g1=$!
check "etcd stalled under a call: ctrl-1 sends calls to the workers" \
	wait_for 10 grep -q 'ms on the store in a server thread: calls go to the workers' "$dir/c1/controller.log"
check "... and answers /healthz at once, from another thread" curl -sf -m 1 "$URL_1/healthz"
on 1 GET /api/v1/namespaces/seen-elsewhere >"$dir/stalled-2" & g2=$!
kill -CONT "$ETCD_PID"
wait "$g1" "$g2"
check "... both calls are answered once etcd is back" test "$(code_of <"$dir/stalled-1")/$(code_of <"$dir/stalled-2")" = 200/200
check "... the second by a worker" test "$(calls worker)" -ge $((w0 + 1))

# etcd takes 1.5 MiB per write: a larger object (within the API's 3 MiB)
# is 413, names why, and nothing else is disturbed.
# (a Secret within every limit of the API: 1 MiB of data, 240 KB of annotations)
python3 -c 'import base64,json,os; print(json.dumps({"apiVersion":"v1","kind":"Secret","metadata":{"name":"big","annotations":{"a":"x"*120000,"b":"y"*120000}},"data":{"blob":base64.b64encode(os.urandom(1040000)).decode()}}))' >"$dir/big.json"
out=$(on 1 POST /api/v1/namespaces/default/secrets --data-binary "@$dir/big.json")
check "a 1.6 MB Secret on etcd: 413" test "$(code_of <<<"$out")" = 413
check "... saying the store takes less in one write" grep -q 'larger than the store takes in one transaction' <<<"$out"
check "... and it is not there" test "$(on 2 GET /api/v1/namespaces/default/secrets/big | code_of)" = 404

# Allocations through both controllers at once.
create_many() { # create_many N WHO: 25 namespaces and 25 services through controller N
	local i
	for i in $(seq 1 25); do
		on "$1" POST /api/v1/namespaces \
			-d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns-$2-$i\"}}" | code_of
		on "$1" POST /api/v1/namespaces/default/services \
			-d "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"svc-$2-$i\"},\"spec\":{\"ports\":[{\"port\":80}]}}" |
			code_of
	done >"$dir/codes-$2"
}
create_many 1 a & p1=$!
create_many 2 b & p2=$!
python3 tests/tools/api_writer.py "$URL_1" "$dir/c1/admin.token" 200 "$dir/acks-1" 0 & w1=$!
python3 tests/tools/api_writer.py "$URL_2" "$dir/c2/admin.token" 200 "$dir/acks-2" 100000 & w2=$!
wait "$p1" "$p2" "$w1" "$w2"
check "100 creates through both at once: all 201" test "$(sort -u "$dir"/codes-* | tr '\n' ' ')" = "201 "
check "400 node and pod writes through both at once: all acknowledged" test "$(cat "$dir"/acks-* | wc -l)" = 400
unique() { # unique PATH FIELD: every item's FIELD differs (and there are some)
	local body
	body=$(on 2 GET "$1" | body_of) && [ -n "$body" ] &&
		jq -e --arg f "$2" '[.items[] | .[$f] // .spec[$f]] | (length == (unique | length)) and length > 0' <<<"$body"
}
check "VNIDs are unique" unique /apis/network.openshift.io/v1/netnamespaces netid
check "cluster IPs are unique" unique /api/v1/services clusterIP
check "node IDs are unique" unique /apis/network.openshift.io/v1/hostsubnets nodeID
check "node subnets are unique" unique /apis/network.openshift.io/v1/hostsubnets subnet

# The Endpoints controller runs in one of them (leader election): ctrl-1,
# which started first; ctrl-2 takes over when ctrl-1 dies (below).
leads() { # leads N: controller N's last word on the lease is that it leads
	grep -E 'leading the endpoints controller' "$dir/c$1/controller.log" | tail -n 1 | grep -q '^weft-controller: leading'
}
check "ctrl-1 leads the endpoints controller" leads 1
check "... ctrl-2 does not" bash -c "! grep -q 'leading the endpoints controller' '$dir/c2/controller.log'"
cidr=$(on 1 GET /api/v1/nodes/crash-node-0 | body_of | jq -r .spec.podCIDR)
pod_at() { # pod_at N NAME HOST: a pod app=web on crash-node-0 with its subnet's address HOST, through N
	local ip
	ip=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1])[int(sys.argv[2])])" "$cidr" "$3")
	on "$1" POST /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$2\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"nodeName\":\"crash-node-0\"},\"status\":{\"podIP\":\"$ip\"}}" | code_of
}
endpoints_are() { # endpoints_are N COUNT: Endpoints web, read through N, lists COUNT addresses
	[ "$(on "$1" GET /api/v1/namespaces/default/endpoints/web | body_of | jq -r '[.subsets[]?.addresses[]?.ip] | length')" = "$2" ]
}
check "a Service app=web through ctrl-2" test "$(on 2 POST /api/v1/namespaces/default/services \
	-d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}' | code_of)" = 201
check "a pod app=web through ctrl-2" test "$(pod_at 2 web-1 20)" = 201
check "... the leader wrote Endpoints web with its address" wait_for 10 endpoints_are 2 1

# SIGKILL ctrl-1 in the middle of a stream: what it acknowledged is there,
# read through ctrl-2.
: >"$dir/acks-k"
python3 tests/tools/api_writer.py "$URL_1" "$dir/c1/admin.token" 2000 "$dir/acks-k" 200000 & wk=$!
acked() { [ "$(wc -l <"$dir/acks-k")" -ge 40 ]; }
check "writes through ctrl-1 flow" wait_for 60 acked
kill -KILL "$PID_1"; wait "$PID_1" 2>/dev/null; wait "$wk" 2>/dev/null
check "ctrl-1 was killed mid-stream" test "$(wc -l <"$dir/acks-k")" -lt 2000
lost=$(lost_acks "$dir/acks-k" on 2)
check "all $(wc -l <"$dir/acks-k") writes ctrl-1 acknowledged are read through ctrl-2" test "$lost" -eq 0
check "ctrl-2 takes the endpoints controller over" wait_for 20 leads 2
check "... a second pod app=web through ctrl-2" test "$(pod_at 2 web-2 21)" = 201
check "... ctrl-2 writes Endpoints web with both addresses" wait_for 10 endpoints_are 2 2
check "ctrl-2 still serves writes" test "$(on 2 POST /api/v1/namespaces \
	-d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"after-kill"}}' | code_of)" = 201
check "weftctl --server URL1,URL2 goes on with ctrl-2 while ctrl-1 is dead" "$WEFTCTL" --server "$URL_1,$URL_2" \
	--token-file "$dir/c1/admin.token" --certificate-authority "$dir/c1/pki/ca.crt" get namespace after-kill
sed "s|server: .*|server: $URL_1,$URL_2|" "$dir/c2/admin.kubeconfig" >"$dir/both.kubeconfig"
check "... and so does a kubeconfig whose server lists both" "$WEFTCTL" --kubeconfig "$dir/both.kubeconfig" get namespace after-kill
check "fsck of the etcd store is clean" "$CONTROLLER" --data-dir "$dir/c1" --store "$ETCD_URL" --fsck
if start_ctrl 1; then pass "ctrl-1 restarts on the same etcd"; else fail "ctrl-1 restarts on the same etcd"; fi
check "... and follows: ctrl-2 keeps the lease" bash -c "tail -n 30 '$dir/c1/controller.log' | grep -q 'the endpoints controller runs elsewhere'"
check "... and reads what ctrl-2 wrote meanwhile" test "$(on 1 GET /api/v1/namespaces/after-kill | code_of)" = 200

for n in 1 2; do	# SIGTERM, and a clean exit (a sanitizer report would make it non-zero)
	pid=PID_$n
	kill -TERM "${!pid}"
	if wait "${!pid}"; then pass "ctrl-$n stops cleanly"; else fail "ctrl-$n stops cleanly" "$(tail -n 20 "$dir/c$n/controller.log")"; fi
done
finish
