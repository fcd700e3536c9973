#!/usr/bin/env bash
# tests/api/lb_engine.sh — weft-lb and a real HAProxy in a private network
# namespace: what each lb.weft.io/v1 object becomes on the wire, and which
# changes reload HAProxy (none but a new listener).
#
#   netns weftlb-$$ (made and removed here)
#   ┌──────────────────────────────────────────────────────────────────────────┐
#   │ curl / openssl s_client / lb_backends.py count                            │
#   │      │                                                                    │
#   │      ▼                                                                    │
#   │ HAProxy (started by weft-lb run --min-slots 8; objects: JSON files)       │
#   │  192.168.202.1:80   SharedL7: a.example.com/api, /api/v2, w. (75/25),     │
#   │                     scale. (1 -> 50 -> 51 -> 1 -> 20 -> 1 servers: slots │
#   │                     added at run time), 302 for s.example.com             │
#   │  192.168.202.1:443  SNI children: s. (edge), r. (reencrypt, right CA),    │
#   │                     rbad. (reencrypt, wrong CA)                           │
#   │  192.168.202.2:443  Passthrough by SNI: pass.example.com                  │
#   │  192.168.202.2:80   PassthroughInsecure: 302 for pass.example.com         │
#   │  192.168.202.3:80   Dedicated (added later: the one reload)              │
#   │      │                                                                    │
#   │      ▼  lo:     10.128.0.1-5:8080 http, 10.128.1.1:9100-9149 http (9150:  │
#   │                 nothing listens),                                         │
#   │         10.128.0.6:8443 openssl s_server (CA 1), 10.128.0.7:8443 (pass)   │
#   └──────────────────────────────────────────────────────────────────────────┘
cd "$(dirname "$0")/../.." && source tests/lib.sh

LB=${WEFT_LB:-$BUILD/bin/weft-lb}
NS=weftlb-$$
VIP1=192.168.202.1 VIP2=192.168.202.2 VIP3=192.168.202.3
dir=$(tmpdir)
OBJ=$dir/objects STATE=$dir/state PKI=$dir/pki
mkdir -p "$OBJ" "$STATE" "$PKI"
NS_MADE=0

cleanup() {
	local p
	stop_started
	# HAProxy was started by weft-lb: its master is in our state directory's pid file
	p=$(cat "$STATE/haproxy.pid" 2>/dev/null || true)
	if [ -n "$p" ] && grep -qaF "$STATE/master.sock" "/proc/$p/cmdline" 2>/dev/null; then
		kill -KILL "$p" 2>/dev/null || true
	fi
	if [ "$NS_MADE" = 1 ]; then
		# every process left in the namespace is one this test started
		for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		ip netns del "$NS" 2>/dev/null || true
	fi
	t_cleanup
}
trap cleanup EXIT

ns() { ip netns exec "$NS" "$@"; }
status() { jq -r ".$1" "$STATE/status.json" 2>/dev/null; }

# --- namespace, backends, certificates
must ip netns add "$NS"
NS_MADE=1
must ns ip link set lo up
for a in $VIP1 $VIP2 $VIP3 10.128.0.1 10.128.0.2 10.128.0.3 10.128.0.4 10.128.0.5 10.128.0.6 10.128.0.7 10.128.1.1; do
	must ns ip addr add "$a/32" dev lo
done

cert() { # cert NAME CN [CA]: NAME.key, NAME.crt (self-signed, or signed by CA)
	local n=$1 cn=$2 ca=${3:-}
	if [ -z "$ca" ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/$n.key" -out "$PKI/$n.crt" -days 2 \
			-subj "/CN=$cn" -addext "subjectAltName=DNS:$cn" 2>/dev/null
	else
		openssl req -newkey rsa:2048 -nodes -keyout "$PKI/$n.key" -out "$PKI/$n.csr" -subj "/CN=$cn" 2>/dev/null &&
			openssl x509 -req -in "$PKI/$n.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
				-out "$PKI/$n.crt" -days 2 2>/dev/null
	fi
}
must cert ca1 "weft test CA 1"
must cert ca2 "weft test CA 2"
must cert backend backend.internal ca1
must cert s1 s.example.com
must cert s2 s.example.com
must cert r r.example.com
must cert rbad rbad.example.com
must cert pass pass-backend.internal

ports=(10.128.0.1:8080 10.128.0.2:8080 10.128.0.3:8080 10.128.0.4:8080 10.128.0.5:8080)
for p in $(seq 9100 9149); do ports+=("10.128.1.1:$p"); done
ip netns exec "$NS" python3 tests/tools/lb_backends.py serve "${ports[@]}" >"$dir/backends.log" 2>&1 &
T_PIDS+=($!)
ip netns exec "$NS" openssl s_server -accept 10.128.0.6:8443 -cert "$PKI/backend.crt" -key "$PKI/backend.key" -www -quiet \
	>"$dir/s_server_reencrypt.log" 2>&1 &
T_PIDS+=($!)
ip netns exec "$NS" openssl s_server -accept 10.128.0.7:8443 -cert "$PKI/pass.crt" -key "$PKI/pass.key" -www -quiet \
	>"$dir/s_server_pass.log" 2>&1 &
T_PIDS+=($!)
must wait_for "$SERVER_START_S" grep -q listening "$dir/backends.log"
must wait_for "$SERVER_START_S" ns bash -c "echo | openssl s_client -connect 10.128.0.6:8443 2>/dev/null | grep -q CONNECTED"
must wait_for "$SERVER_START_S" ns bash -c "echo | openssl s_client -connect 10.128.0.7:8443 2>/dev/null | grep -q CONNECTED"

# --- objects
servers() { # servers IP FIRST LAST: a JSON array of IP:FIRST..LAST
	jq -nc --arg ip "$1" --argjson a "$2" --argjson b "$3" '[range($a; $b + 1) | {ip: $ip, port: .}]'
}
shared() { # shared SCALE-SERVERS-JSON
	jq -n --argjson scale "$1" '{apiVersion: "lb.weft.io/v1", kind: "VirtualService",
	  metadata: {name: "weft--Shared-L7-0"},
	  spec: {type: "SharedL7", vip: "'$VIP1'", ports: [{port: 80, protocol: "HTTP"}, {port: 443, protocol: "HTTPS"}],
	    poolGroups: [{name: "weft--Shared-L7-0", members: [
	      {pool: "weft--a.example.com_api_v2-shop-a", host: "a.example.com", path: "/api/v2", priorityLabel: "a.example.com/api/v2", ratio: 100},
	      {pool: "weft--a.example.com_api-shop-a", host: "a.example.com", path: "/api", priorityLabel: "a.example.com/api", ratio: 100},
	      {pool: "weft--w.example.com-shop-w-a", host: "w.example.com", priorityLabel: "w.example.com", ratio: 75},
	      {pool: "weft--w.example.com-shop-w-b", host: "w.example.com", priorityLabel: "w.example.com", ratio: 25},
	      {pool: "weft--scale.example.com-shop-scale", host: "scale.example.com", priorityLabel: "scale.example.com", ratio: 100}]}],
	    pools: [
	      {name: "weft--a.example.com_api-shop-a", protocol: "HTTP", servers: [{ip: "10.128.0.1", port: 8080}]},
	      {name: "weft--a.example.com_api_v2-shop-a", protocol: "HTTP", servers: [{ip: "10.128.0.2", port: 8080}]},
	      {name: "weft--w.example.com-shop-w-a", protocol: "HTTP", servers: [{ip: "10.128.0.4", port: 8080}]},
	      {name: "weft--w.example.com-shop-w-b", protocol: "HTTP", servers: [{ip: "10.128.0.5", port: 8080}]},
	      {name: "weft--scale.example.com-shop-scale", protocol: "HTTP", healthMonitor: {type: "HTTP"}, servers: $scale}],
	    httpRedirects: [{name: "weft--Shared-L7-0", host: "s.example.com", port: 80, code: 302, scheme: "https"}]}}'
}
child() { # child HOST CERT POOL-JSON
	jq -n --arg h "$1" --arg c "$2" --argjson pool "$3" '{apiVersion: "lb.weft.io/v1", kind: "VirtualService",
	  metadata: {name: ("weft--" + $h)},
	  spec: {type: "SNIChild", vip: "'$VIP1'", parent: "weft--Shared-L7-0", hosts: [$h], sslKeyAndCertificate: $c,
	    poolGroups: [{name: ("weft--shop-" + $h + "-" + $pool.name), members: [{pool: $pool.name, host: $h, ratio: 100}]}],
	    pools: [$pool]}}'
}
tls_object() { # tls_object NAME PKI-NAME
	jq -n --arg n "$1" --rawfile c "$PKI/$2.crt" --rawfile k "$PKI/$2.key" \
		'{apiVersion: "lb.weft.io/v1", kind: "SSLKeyAndCertificate", metadata: {name: $n},
		  spec: {certificate: $c, key: $k, source: {kind: "Secret", namespace: "shop", name: $n}}}'
}
write_objects() {
	shared "$(servers 10.128.1.1 9100 9100)" >"$OBJ/shared.json"
	child s.example.com weft--shop-s-tls '{"name":"s","protocol":"HTTP","servers":[{"ip":"10.128.0.3","port":8080}]}' >"$OBJ/child-s.json"
	child r.example.com weft--shop-r-tls "$(jq -n --rawfile ca "$PKI/ca1.crt" '{name: "r", protocol: "HTTPS",
	  tls: {verify: true, pkiProfile: "r-pkiprofile", caCertificate: $ca}, servers: [{ip: "10.128.0.6", port: 8443}]}')" >"$OBJ/child-r.json"
	child rbad.example.com weft--shop-rbad-tls "$(jq -n --rawfile ca "$PKI/ca2.crt" '{name: "rbad", protocol: "HTTPS",
	  tls: {verify: true, pkiProfile: "rbad-pkiprofile", caCertificate: $ca}, servers: [{ip: "10.128.0.6", port: 8443}]}')" >"$OBJ/child-rbad.json"
	tls_object weft--shop-s-tls s1 >"$OBJ/tls-s.json"
	tls_object weft--shop-r-tls r >"$OBJ/tls-r.json"
	tls_object weft--shop-rbad-tls rbad >"$OBJ/tls-rbad.json"
	jq -n '{apiVersion: "lb.weft.io/v1", kind: "VirtualService", metadata: {name: "weft--Shared-Passthrough-0"},
	  spec: {type: "Passthrough", vip: "'$VIP2'", ports: [{port: 443, protocol: "TCP"}],
	    poolGroups: [{name: "weft--pass.example.com", members: [{pool: "weft--pass.example.com-pass", host: "pass.example.com", ratio: 100}]}],
	    pools: [{name: "weft--pass.example.com-pass", protocol: "TCP", healthMonitor: {type: "TCP"}, servers: [{ip: "10.128.0.7", port: 8443}]}]}}' \
		>"$OBJ/passthrough.json"
	jq -n '{apiVersion: "lb.weft.io/v1", kind: "VirtualService", metadata: {name: "weft--Shared-Passthrough-0-insecure"},
	  spec: {type: "PassthroughInsecure", vip: "'$VIP2'", parent: "weft--Shared-Passthrough-0", ports: [{port: 80, protocol: "HTTP"}],
	    httpRedirects: [{name: "weft--Shared-Passthrough-0-insecure", host: "pass.example.com", port: 80, code: 302, scheme: "https"}]}}' \
		>"$OBJ/passthrough-insecure.json"
	jq -n '{apiVersion: "lb.weft.io/v1", kind: "VirtualService", metadata: {name: "weft--svc-l4"},
	  spec: {type: "L4", vip: "192.168.200.9", ports: [{port: 53, protocol: "UDP"}]}}' >"$OBJ/l4.json"
	# hostile: a VIP that is no address, a path with a space, not JSON
	jq -n '{apiVersion: "lb.weft.io/v1", kind: "VirtualService", metadata: {name: "weft--bad-vip"},
	  spec: {type: "SharedL7", vip: "192.168.202.300", ports: [{port: 80, protocol: "HTTP"}]}}' >"$OBJ/bad-vip.json"
	printf '{"apiVersion": "lb.weft.io/v1", "kind": "VirtualService", "metadata": {"name": "weft--bad-path"},' >"$OBJ/bad-path.json"
	printf ' "spec": {"type": "SharedL7", "vip": "192.168.202.9", "poolGroups": [{"name": "g", "members": [{"pool": "p", "path": "/a b"}]}]}}' >>"$OBJ/bad-path.json"
	printf '{"kind": ' >"$OBJ/broken.json"
}
must write_objects

# --- the engine
generation() { status generation; }
start_engine() {
	ip netns exec "$NS" "$LB" run --name se-1 --state-dir "$STATE" --objects-dir "$OBJ" --min-reload-interval-ms 500 --min-slots 8 \
		>>"$dir/lb.log" 2>&1 &
	LB_PID=$!
	T_PIDS+=("$LB_PID")
	wait_for 30 test -s "$STATE/status.json"
}
# hup: send SIGHUP, wait until the engine loaded the objects again and no reload waits
hup() {
	local g; g=$(generation)
	kill -HUP "$LB_PID"
	wait_for 30 bash -c "[ \"\$(jq -r .generation '$STATE/status.json')\" -gt $g ] &&
		[ \"\$(jq -r .pendingReload '$STATE/status.json')\" = false ]"
}
start_engine
running() { [ "$(status haproxyPid)" -gt 0 ] && kill -0 "$LB_PID"; }
check "weft-lb run starts HAProxy and writes its status" running
running || { tail -n 20 "$dir/lb.log"; finish; exit 1; }
R0=$(status reloads)

get() { # get HOST PATH [VIP]: the body
	ns curl -s --max-time 5 -H "Host: $1" "http://${3:-$VIP1}$2"
}
routed() { # routed HOST PATH SERVER [VIP]
	get "$1" "$2" "${4:-}" | grep -q "^srv=$3 "
}
check "a.example.com/api/v2/x goes to /api/v2's pool (longest prefix first)" routed a.example.com /api/v2/x 10.128.0.2:8080
check "a.example.com/api/x goes to /api's pool" routed a.example.com /api/x 10.128.0.1:8080
check "a.example.com/api goes to /api's pool" routed a.example.com /api 10.128.0.1:8080
check "a.example.com:80 (Host with a port) routes the same" routed a.example.com:80 /api/v2 10.128.0.2:8080
check "a host with no route gets 404" \
	test "$(ns curl -s -o /dev/null -w '%{http_code}' -H 'Host: nobody.example.com' "http://$VIP1/")" = 404
check "the backend sees X-Forwarded-For and Forwarded" \
	bash -c "ip netns exec $NS curl -s -H 'Host: a.example.com' http://$VIP1/api | grep -q 'xff=192.168.202.1 fwd=for=192.168.202.1;proto=http;host=a.example.com'"

redirect_ok() { # redirect_ok VIP HOST: 302 to https://HOST/p?q=1
	local out
	out=$(ns curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -H "Host: $2" "http://$1/p?q=1")
	[ "$out" = "302 https://$2/p?q=1" ] || { echo "got: $out"; return 1; }
}
check "http://s.example.com/p?q=1 is a 302 to https://s.example.com/p?q=1" redirect_ok $VIP1 s.example.com
check "PassthroughInsecure: http://pass.example.com is a 302 to https" redirect_ok $VIP2 pass.example.com

subject() { # subject VIP SNI: the certificate's subject as s_client prints it
	ns bash -c "echo | timeout 5 openssl s_client -connect $1:443 -servername $2 2>/dev/null | openssl x509 -noout -subject -serial"
}
cert_is() { # cert_is VIP SNI PKI-NAME: the certificate served is PKI-NAME's
	local want got
	want=$(openssl x509 -in "$PKI/$3.crt" -noout -subject -serial)
	got=$(subject "$1" "$2")
	[ "$got" = "$want" ] || { echo "got: $got; want: $want"; return 1; }
}
check "SNI s.example.com gets its own certificate" cert_is $VIP1 s.example.com s1
check "SNI r.example.com gets its own certificate" cert_is $VIP1 r.example.com r
check "an SNI with no certificate is refused (strict-sni)" \
	bash -c "! ip netns exec $NS bash -c 'echo | timeout 5 openssl s_client -connect $VIP1:443 -servername x.example.com 2>/dev/null' | grep -q 'BEGIN CERTIFICATE'"
check "https://s.example.com/ reaches its pool" \
	bash -c "ip netns exec $NS curl -s --max-time 5 --cacert $PKI/s1.crt --resolve s.example.com:443:$VIP1 https://s.example.com/x | grep -q '^srv=10.128.0.3:8080 .*proto=https'"
check "passthrough: pass.example.com sees the backend's own certificate" cert_is $VIP2 pass.example.com pass
code() { ns curl -s -o /dev/null -w '%{http_code}' --max-time 10 -k --resolve "$1:443:$VIP1" "https://$1/"; }
check "reencrypt with the right CA: 200 from the TLS backend" wait_for 20 test "$(code r.example.com)" = 200
check "reencrypt with the wrong CA: 503" test "$(code rbad.example.com)" = 503

weights_ok() {
	local out a b
	out=$(ns python3 tests/tools/lb_backends.py count "http://$VIP1/" 1000 w.example.com)
	a=$(awk '$1 == "10.128.0.4:8080" { print $2 }' <<<"$out")
	b=$(awk '$1 == "10.128.0.5:8080" { print $2 }' <<<"$out")
	echo "75/25: $a and $b of 1000"
	[ "${a:-0}" -ge 700 ] && [ "${a:-0}" -le 800 ] && [ $((a + b)) -eq 1000 ]
}
check "ratios 75/25 over 1,000 requests: 750 ± 50 to the first pool" weights_ok
check "the L4 VirtualService is skipped, the malformed ones are rejected by name" \
	bash -c "jq -r '.rejected[]' '$STATE/status.json' | grep -q 'bad-vip.json: VirtualService weft--bad-vip: vip' &&
		jq -r '.rejected[]' '$STATE/status.json' | grep -q 'bad-path.json: VirtualService weft--bad-path: member path' &&
		jq -r '.rejected[]' '$STATE/status.json' | grep -q 'broken.json' &&
		! jq -r '.rejected[]' '$STATE/status.json' | grep -q l4"

# --- scaling without reload: 1 -> 50 outgrows the 8 slots; the slots past
# them are added at run time (HAProxy's "add server"), not by a reload
all_reached() { # all_reached N: N distinct scale servers answered (polled)
	local out n
	out=$(ns python3 tests/tools/lb_backends.py count "http://$VIP1/" $(( $1 * 4 )) scale.example.com)
	n=$(grep -c '^10.128.1.1:' <<<"$out")
	[ "$n" -eq "$1" ]
}
SCALE_BE=weft--Shared-L7-0:scale.example.com
cli() { # cli COMMAND: the answer of HAProxy's stats socket
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n")
while True:
    b = s.recv(65536)
    if not b: break
    sys.stdout.write(b.decode())' "$STATE/haproxy.sock" "$1"
}
# server_state PORT: "<op state> <admin state> <check status>" of the scale
# server on PORT (show servers state: op state 2 running, 0 stopped; admin
# state bit 1: forced maintenance; check status 8 L4CON, 15 L7OK)
server_state() { cli "show servers state $SCALE_BE" | awk -v p="$1" '$19 == p { print $6, $7, $11 }'; }
slots() { cli "show servers state $SCALE_BE" | awk '$4 ~ /:[0-9]+$/' | wc -l; }
check "the scale pool starts with 8 slots" test "$(slots)" = 8
ns python3 tests/tools/lb_backends.py count "http://$VIP1/" 1500 scale.example.com >"$dir/load.out" 2>&1 &
LOAD=$!
shared "$(servers 10.128.1.1 9100 9149)" >"$OBJ/shared.json"
check "scale 1 -> 50 servers (under load): the engine applied it" hup
check "... with 0 reloads (reloads $(status reloads), was $R0)" test "$(status reloads)" = "$R0"
check "... as runtime commands (batches: $(status runtimeBatches), commands: $(status runtimeCommands))" \
	test "$(status runtimeCommands)" -ge 147
check "... HAProxy runs 64 slots (56 added), and the file lists them" \
	bash -c "[ \"\$(grep -c 'server weft--scale.example.com-shop-scale:' '$STATE/haproxy.cfg')\" = 64 ] && [ $(slots) = 64 ]"
wait "$LOAD" || true
check "... no request failed during the change ($(tail -n 1 "$dir/load.out"))" grep -qx 'errors 0' "$dir/load.out"
check "... and every one of the 50 servers is reached" wait_for 30 all_reached 50
shared "$(servers 10.128.1.1 9100 9150)" >"$OBJ/shared.json"
check "scale 50 -> 51, the 51st not listening: applied" hup
check "... with 0 reloads" test "$(status reloads)" = "$R0"
down_and_up() { # 9150: out of maintenance, down by its check; 9149: up by its HTTP check
	local dead live
	dead=($(server_state 9150)) live=($(server_state 9149))
	echo "9150: ${dead[*]}; 9149: ${live[*]}"
	[ "${dead[0]}" = 0 ] && [ $((dead[1] & 1)) = 0 ] && [ "${dead[2]}" = 8 ] &&
		[ "${live[0]}" = 2 ] && [ "${live[2]}" = 15 ]
}
check "... health checks run on added servers: 9150 (slot 51) is down, 9149 (slot 50) up" wait_for 20 down_and_up
shared "$(servers 10.128.1.1 9100 9100)" >"$OBJ/shared.json"
check "scale 51 -> 1: applied" hup
check "... with 0 reloads" test "$(status reloads)" = "$R0"
only_one() {
	local out; out=$(ns python3 tests/tools/lb_backends.py count "http://$VIP1/" 40 scale.example.com)
	[ "$(grep -c '^10.128.1.1:' <<<"$out")" = 1 ] && grep -q '^10.128.1.1:9100 40$' <<<"$out"
}
check "... and only the one left is reached" wait_for 10 only_one
check "... the pool keeps its 64 slots (no server deleted)" test "$(slots)" = 64

# --- certificate rotation without reload
tls_object weft--shop-s-tls s2 >"$OBJ/tls-s.json"
check "rotate s.example.com's certificate: applied" hup
check "... the new certificate is served" cert_is $VIP1 s.example.com s2
check "... with 0 reloads" test "$(status reloads)" = "$R0"

# --- a new listener: exactly one reload
jq -n '{apiVersion: "lb.weft.io/v1", kind: "VirtualService", metadata: {name: "weft--d.example.com-L7-dedicated"},
  spec: {type: "Dedicated", vip: "'$VIP3'", hosts: ["d.example.com"], ports: [{port: 80, protocol: "HTTP"}],
    poolGroups: [{name: "weft--shop-d.example.com-d", members: [{pool: "weft--shop-d.example.com-d", host: "d.example.com", ratio: 100}]}],
    pools: [{name: "weft--shop-d.example.com-d", protocol: "HTTP", servers: [{ip: "10.128.0.3", port: 8080}]}]}}' >"$OBJ/dedicated.json"
check "a Dedicated VS on a new VIP: applied" hup
check "... with exactly one reload" test "$(status reloads)" = $((R0 + 1))
check "... and it answers on its VIP" routed d.example.com / 10.128.0.3:8080 $VIP3
check "... the old listeners still answer" routed a.example.com /api/v2 10.128.0.2:8080

# --- slots added after the reload (which laid the pool out afresh: 8 slots)
check "the reload laid the scale pool out afresh" test "$(slots)" = 8
shared "$(servers 10.128.1.1 9100 9119)" >"$OBJ/shared.json"
check "scale 1 -> 20: applied" hup
check "... with no new reload" test "$(status reloads)" = $((R0 + 1))
check "... 32 slots" test "$(slots)" = 32
check "... all 20 reached" wait_for 30 all_reached 20

# --- engine restart: same configuration, HAProxy adopted, no reload
sum_before=$(cat "$STATE/haproxy.cfg" "$STATE"/maps/* "$STATE"/certs/*.crtlist | sha256sum)
master_before=$(status haproxyPid)
kill -KILL "$LB_PID"; wait "$LB_PID" 2>/dev/null
rm -f "$STATE/status.json"
start_engine
check "the engine starts again" running
check "... it adopted the running HAProxy (master $master_before)" test "$(status haproxyPid)" = "$master_before"
check "... with no reload (same files)" test "$(status reloads)" = 0
check "... the files are the same" test "$(cat "$STATE/haproxy.cfg" "$STATE"/maps/* "$STATE"/certs/*.crtlist | sha256sum)" = "$sum_before"
check "... and routes as before" routed a.example.com /api/v2/x 10.128.0.2:8080
check "... serves the rotated certificate" cert_is $VIP1 s.example.com s2
shared "$(servers 10.128.1.1 9100 9100)" >"$OBJ/shared.json"
check "... scale 20 -> 1 after the restart: applied" hup
check "... with no reload (the engine knows the 32 slots that run)" test "$(status reloads)" = 0
check "... and only the one left is reached" wait_for 10 only_one

stop_engine() {
	kill -TERM "$LB_PID"
	local rc=0; wait "$LB_PID" || rc=$?
	T_PIDS=("${T_PIDS[@]/$LB_PID}")
	[ "$rc" = 0 ] || { echo "weft-lb exited $rc"; tail -n 20 "$dir/lb.log"; return 1; }
	! kill -0 "$master_before" 2>/dev/null
}
stop_engine >"$dir/stop.out" 2>&1 && pass "SIGTERM: weft-lb stops HAProxy and exits 0 (no sanitizer report)" ||
	fail "SIGTERM: weft-lb stops HAProxy and exits 0 (no sanitizer report)" "$(tail -n 20 "$dir/stop.out")"
echo "  (engine log:)"; sed 's/^/    /' "$dir/lb.log" | grep -v '^    weft-lb: rejected' | head -n 20
finish
