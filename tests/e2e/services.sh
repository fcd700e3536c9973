#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# services.sh — Services in the eBPF data plane (docs/services.md,
# issue 5), measured with real traffic: three backends on three nodes, each
# answering with its own name and the client address it sees, so every
# answer says which backend served it and whether the client's IP survived.
#
#                             L-underlay: bridge br0, 192.168.200.0/24
#     +------------+------------------+------------------+------------------+
#   L-ctrl      L-outside          L-node-1 (.11)     L-node-2 (.12)     L-node-3 (.13)
#   controller  (.254) clients;    |     |            |     |    |       |     |
#               VIPs 192.168.201  web-1  c1         web-2  c2  spare-1 web-3 spare-2
#               .0/24 ECMP via    (web-N: app=web, ports http:8080/TCP udp:8080/UDP,
#               .11 .12 .13        web-1 also tier=edge; peer.py on 8080 in web-N,
#                                  flow.py on 9000-9049 in web-N and spare-N;
#                                  c1, c2 are clients)
#
#   Services in namespace shop (selector app=web unless said):
#     web     NodePort 80/TCP+UDP -> http/udp, nodePort 30080 (both protocols)
#     lb      LoadBalancer 80 -> http (VIP from vipNetworks)
#     empty   selector app=nobody: no endpoints
#     sticky  sessionAffinity ClientIP (60 s), later switched off, then deleted
#     itp     internalTrafficPolicy Local
#     etp     NodePort 30090, externalTrafficPolicy Local, selector app=web,tier=edge
#             (web-1 only: node-1 has a local backend, node-2 and node-3 not)
#     both    80/TCP and 80/UDP; UDP removed later
#     sess    9000 -> 9000 (a TCP session kept across an agent restart)
#     many    no selector; hand-written Endpoints: 5 pods x 50 ports = 250 backends
#
#   1. ClusterIP TCP/UDP spread over the three, client IP kept; NodePort from
#      outside via every node (backend local: outside's IP kept, else node's
#      gateway) and from pods; LoadBalancer VIP from outside; hairpin
#      (169.254.42.1); no endpoints refused within 1 s (TCP RST, ICMP)
#   2. traffic policies; ClientIP affinity (15 in a row) and switched off;
#      TCP and UDP on one port, UDP removed; one service deleted, others kept;
#      250 endpoints
#   3. agent restart on node-1 during a TCP session through a cluster IP;
#      scaling down (relabel) and up; a UDP flow (fixed source port) moves
#      when its backend pod is deleted, the pod's conntrack entries purged
#   4. from the node itself (its namespace: the node, a host-network pod):
#      weft_svc (dummy or ifb, NOARP, svc_egress at egress) routes the
#      service and VIP networks, src the gateway; node-1 -> web TCP/UDP
#      spread over web-1..3, each seeing node-1's gateway; node-2 too;
#      the VIP; itp (node-local only); empty refused within 1 s; a
#      hand-written Endpoints at node-2's IP (outside the pod network)
#      refused within 1 s, counted external-backend; an unallocated
#      cluster IP and a deleted service's unanswered, counted no-service;
#      a cluster IP forwarded through node-1 from outside not translated;
#      an agent restart keeps weft_svc (same ifindex), routes and traffic
#   5. a 2-node multitenant lab: a red pod cannot reach blue's backend
#      through blue's service (nothing reaches the backend, counted isolated),
#      blue and default can; red's hand-written Endpoints aimed at blue's pod
#      are refused
#   6. in that lab, whose agents run with --max-services 24: a service too
#      big for the map is reported on the Service (one annotation per node)
#      and in the controller's metrics, and api keeps working; once it is
#      deleted, a small one is programmed
#
# Labs t<pid>-sv and t<pid>-sm, so a demo lab or another test's is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-sv
MT=t$$-sm
L=$LAB		# the lab the helpers below work on

need_lab

trap 'lab_cleanup "$MT"' EXIT

PEER=$PWD/tests/tools/peer.py
FLOW=$PWD/tests/tools/flow.py
HAIRPIN=169.254.42.1

# ---------------------------------------------------------------- helpers
# serve POD NAME: peer.py on 8080 (TCP+UDP) and flow.py on 9000-9049, both
# answering "NAME CLIENTIP ..."; their PIDs in SERVERS[POD]
declare -A SERVERS
server_log() { echo "$T_ROOT/server-$L-${1//\//-}.log"; }
serve() {
	ip netns exec "$(netns "$1")" python3 "$PEER" serve 8080 "$2" >>"$(server_log "$1")" 2>&1 &
	T_PIDS+=("$!") SERVERS[$1]="$!"
	serve_many "$1" "$2"
}
serve_many() { # flow.py only
	ip netns exec "$(netns "$1")" python3 "$FLOW" serve "$2" 9000-9049 >>"$(server_log "$1").flow" 2>&1 &
	T_PIDS+=("$!") SERVERS[$1]="${SERVERS[$1]:-} $!"
}
unserve() { local p; for p in ${SERVERS[$1]}; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; SERVERS[$1]=; true; }
listening() { ns "$1" ss -Hltn "sport = :$2" | grep -q .; }
server_up() {
	wait_for $SERVER_START_S listening "$1" "$2" && return 0
	echo "expected a server listening on :$2 in $(netns "$1") within $SERVER_START_S s; its log: $(tail -n 3 "$(server_log "$1")"*)"
	return 1
}
log_size() { stat -c %s "$(server_log "$1")"; }
log_since() { tail -c +$(($2 + 1)) "$(server_log "$1")"; }

declare -A IP PIN
addresses() {
	local json
	json=$(status_json)
	while read -r t a; do IP[$t]=$a; done < <(jq -r '(.pods[] | "\(.namespace)/\(.name) \(.ip)"), (.nodes[] | "\(.name) \(.ip)")' <<<"$json")
	while read -r n p; do PIN[$L/$n]=$p; done < <(jq -r '.nodes[] | "\(.name) \(.pinDir)"' <<<"$json")
}
first_host() { # first_host 10.128.0.0/23 -> 10.128.0.1
	local a b c d n
	IFS=. read -r a b c d <<<"${1%/*}"
	n=$(( (a << 24 | b << 16 | c << 8 | d) + 1 ))
	echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
}

# drop counters: weft_drops[reason] summed over CPUs (names from bpf/weft_bpf.h)
mapfile -t DROP_NAMES < <(sed -n '/#define WEFT_DROP_NAMES/,/}/p' bpf/weft_bpf.h | grep -oE '"[a-z0-9-]+"' | tr -d '"')
drop_table() {
	bpftool -j map dump pinned "${PIN[$L/$1]}/weft_drops" 2>/dev/null |
		jq -r --argjson names "$(printf '%s\n' "${DROP_NAMES[@]}" | jq -R . | jq -s .)" '
			map(.formatted // .) | .[] | "\($names[.key] // "reason-\(.key)") \([.values[].value] | add)"'
}
drop_count() { drop_table "$1" | awk -v r="$2" '$1 == r { n = $2 } END { print n + 0 }'; }
drops() {
	local n
	for n in "${NODES[@]}"; do echo -n "[$n drops: $(drop_table "$n" | awk '$2 > 0 { printf "%s=%s ", $1, $2 }')] "; done
	echo
}
counter_above() { [ "$(drop_count "$1" "$2")" -gt "$3" ]; }
grew() { # grew NODE REASON BEFORE: within 3 s
	wait_for 3 counter_above "$1" "$2" "$3" && return 0
	echo "expected $1's $2 drop counter above $3; seen $(drop_count "$1" "$2"); $(drops)"
	return 1
}

# the data plane's service map, read from a node's pins: an address as the
# little-endian integer bpftool shows for a __be32, a port likewise
be32() { local a b c d; IFS=. read -r a b c d <<<"$1"; echo $(( a | b << 8 | c << 16 | d << 24 )); }
be16() { echo $(( ($1 & 255) << 8 | $1 >> 8 )); }
proto_nr() { case $1 in tcp|TCP) echo 6 ;; udp|UDP) echo 17 ;; esac; }
# frontend NODE IP PORT PROTO: "svc_id count local_count flags" of slot 0, or nothing
frontend() {
	bpftool -j map dump pinned "${PIN[$L/$1]}/weft_services" |
		jq -r --argjson a "$(be32 "$2")" --argjson p "$(be16 "$3")" --argjson pr "$(proto_nr "$4")" '
			.[] | .formatted | select(.key.addr == $a and .key.port == $p and .key.proto == $pr and
				.key.scope == 0 and .key.slot == 0) | .value | "\(.svc_id) \(.count) \(.local_count) \(.flags)"'
}
fe_count() { local f; f=$(frontend "$@"); f=${f#* }; echo "${f%% *}"; }
# programmed IP PORT PROTO COUNT: every node has the frontend with COUNT backends
programmed_now() { local n; for n in "${NODES[@]}"; do [ "$(fe_count "$n" "$1" "$2" "$3")" = "$4" ] || return 1; done; }
programmed() {
	wait_for 5 programmed_now "$@" && return 0
	local n
	echo -n "expected $1:$2/$3 with $4 backends on every node within 5 s; seen (svc_id count local flags):"
	for n in "${NODES[@]}"; do echo -n " $n: $(frontend "$n" "$1" "$2" "$3" | tr '\n' ' ');"; done
	echo
	return 1
}
# entries_of NODE IP: weft_services entries of address IP (any port, protocol, slot)
entries_of() {
	bpftool -j map dump pinned "${PIN[$L/$1]}/weft_services" |
		jq --argjson a "$(be32 "$2")" '[.[] | select(.formatted.key.addr == $a)] | length'
}
gone_everywhere_now() { local n; for n in "${NODES[@]}"; do [ "$(entries_of "$n" "$1")" = 0 ] || return 1; done; }
# ct_naming NODE IP PORT: weft_ct entries whose backend is IP:PORT (FWD: the
# value's nat_addr:nat_port; REV: the key's source)
ct_naming() {
	bpftool -j map dump pinned "${PIN[$L/$1]}/weft_ct" |
		jq --argjson a "$(be32 "$2")" --argjson p "$(be16 "$3")" '[.[] | .formatted |
			select((.key.dir == 0 and .value.nat_addr == $a and .value.nat_port == $p) or
			       (.key.dir == 1 and .key.saddr == $a and .key.sport == $p))] | length'
}

svc_field() { lab weftctl get svc "$1" -n "${3:-shop}" -o json | jq -r "$2"; }
endpoint_names() { lab weftctl get ep "$1" -n shop -o json | jq -r '[.subsets[]?.addresses[]?.targetRef.name] | unique | join(" ")'; }
endpoints_are() { [ "$(endpoint_names "$1")" = "$2" ]; }
endpoints_become() {
	wait_for 5 endpoints_are "$1" "$2" && return 0
	echo "expected Endpoints $1 to list the pods {$2} within 5 s; seen {$(endpoint_names "$1")}"
	return 1
}
is() { [ "$1" = "$2" ] || { echo "expected $3 $2; seen ${1:-nothing}"; return 1; }; }	# is SEEN WANT WHAT

# conns FROM PROTO IP PORT N: N connections with flow.py; answers in $T_ROOT/answers
conns() {
	ns "$1" python3 "$FLOW" conns "$2" "$3" "$4" "$5" >"$T_ROOT/answers" 2>&1 && return 0
	echo "$1 -> $3:$4/$2: expected $5 answers; $(grep -c '^error' "$T_ROOT/answers") failed: $(grep -m1 '^error' "$T_ROOT/answers"); $(drops)"
	return 1
}
tally() { awk '{ $1 = $1; print }' "$T_ROOT/answers" | sort | uniq -c | awk '{ $1 = $1; print }' | paste -sd, - | sed 's/,/, /g'; }
names_seen() { awk '{ print $1 }' "$T_ROOT/answers" | sort -u | paste -sd' ' -; }
# spread FROM PROTO IP PORT N NAMES CLIENT: N connections all answered, by
# exactly the backends NAMES (each at least once), each seeing the client
# as CLIENT
spread() {
	local what="$1 -> $3:$4/$2"
	conns "$1" "$2" "$3" "$4" "$5" || return 1
	[ "$(names_seen)" = "$6" ] || { echo "$what: expected answers from exactly {$6}; seen (count name client): $(tally)"; return 1; }
	awk -v c="$7" '$2 != c { bad = 1 } END { exit bad }' "$T_ROOT/answers" && return 0
	echo "$what: expected every backend to see the client as $7; seen: $(tally)"
	return 1
}
spread_soon() { wait_for "$1" spread "${@:2}" && return 0; spread "${@:2}"; }	# spread_soon SECONDS ARGS...
# seen_as FROM PROTO IP PORT N RULE: every answer "NAME CLIENT" satisfies RULE,
# a function of NAME and CLIENT; all three web backends answered
seen_as() {
	local rule=$6 name client rest bad=""
	conns "$1" "$2" "$3" "$4" "$5" || return 1
	while read -r name client rest; do
		$rule "$name" "$client" || bad="$bad $name/$client"
	done <"$T_ROOT/answers"
	[ -z "$bad" ] || { echo "$1 -> $3:$4/$2: unexpected client addresses for (backend/client):$bad; all: $(tally)"; return 1; }
	[ "$(names_seen)" = "web-1 web-2 web-3" ] && return 0
	echo "$1 -> $3:$4/$2: expected all of web-1 web-2 web-3 to answer; seen: $(tally)"
	return 1
}

# refused_fast FROM PROTO IP PORT: refused (TCP RST / ICMP unreachable), in
# under 1 s (peer.py times the exchange itself: a slow process start on a
# busy machine is not the data plane's; a lost first SYN is retried at 1 s)
refused_fast() {
	local out ms
	if out=$(ns "$1" python3 "$PEER" "$2" "$3" "$4" 2>&1); then echo "expected a refusal; answered: $out"; return 1; fi
	grep -q "Connection refused" <<<"$out" || { echo "expected 'Connection refused': $out; $(drops)"; return 1; }
	ms=$(sed -n 's/.*(after \([0-9]*\) ms)$/\1/p' <<<"$out")
	[ -n "$ms" ] && [ "$ms" -lt 1000 ] || { echo "refused only after ${ms:-?} ms (want < 1000): $out"; return 1; }
}
# unanswered FROM PROTO IP PORT: no answer at all, not even a refusal
# (TCP: the connect times out; UDP: 3 datagrams unanswered)
unanswered() {
	local out
	if out=$(ns "$1" python3 "$PEER" "$2" "$3" "$4" 2>&1); then echo "expected no answer; answered: $out"; return 1; fi
	grep -qE "timed out|no answer in 3 tries" <<<"$out" && return 0
	echo "expected a timeout; seen: $out"
	return 1
}
# no_answer FROM PROTO IP PORT: not answered (refused, unreachable or silent)
no_answer() {
	local out
	! out=$(ns "$1" python3 "$PEER" "$2" "$3" "$4" 2>&1) && return 0
	echo "expected no answer; answered: $out"
	return 1
}
unanswered_both() { # unanswered_both FROM IP PORT: TCP and UDP at once
	local d rc=0
	d=$(mktemp -d "$T_ROOT/un.XXXXXX")
	unanswered "$1" tcp "$2" "$3" >"$d/tcp" 2>&1 & local p1=$!
	unanswered "$1" udp "$2" "$3" >"$d/udp" 2>&1 & local p2=$!
	wait $p1 || { rc=1; echo "tcp: $(cat "$d/tcp")"; }
	wait $p2 || { rc=1; echo "udp: $(cat "$d/udp")"; }
	return $rc
}

# relabel NAME APP: the pod shop/NAME's Pod object with label app=APP
relabel() {
	lab weftctl get pod "$1" -n shop -o json | jq --arg v "$2" '.metadata.labels.app = $v | del(.status)' >"$T_ROOT/pod-$1.json" &&
		lab weftctl apply -f "$T_ROOT/pod-$1.json"
}

# ================================================================ the flat lab
NODES=(node-1 node-2 node-3)
WEB=(web-1 web-2 web-3)
declare -A NODE_OF=([web-1]=node-1 [web-2]=node-2 [web-3]=node-3)
WEBPORTS=(--port http:8080/TCP --port udp:8080/UDP)
must lab up --nodes 3
must lab pod add node-1 shop web-1 --label app=web --label tier=edge "${WEBPORTS[@]}"
must lab pod add node-2 shop web-2 --label app=web "${WEBPORTS[@]}"
must lab pod add node-3 shop web-3 --label app=web "${WEBPORTS[@]}"
must lab pod add node-1 shop c1
must lab pod add node-2 shop c2
must lab pod add node-2 shop spare-1
must lab pod add node-3 shop spare-2
addresses
declare -A GW
for n in "${NODES[@]}"; do GW[$n]=$(first_host "$(node_field "$n" subnet)"); done
OUT=$(status_json | jq -r .outside.ip)
C1=${IP[shop/c1]} C2=${IP[shop/c2]} N1=${IP[node-1]} N2=${IP[node-2]} N3=${IP[node-3]}
for w in "${WEB[@]}"; do serve "shop/$w" "$w"; done
serve_many shop/spare-1 spare-1
serve_many shop/spare-2 spare-2
for w in "${WEB[@]}"; do must server_up "shop/$w" 8080; must server_up "shop/$w" 9049; done
must server_up shop/spare-1 9049
must server_up shop/spare-2 9049
echo "  lab $LAB: $(for p in shop/web-1 shop/web-2 shop/web-3 shop/c1 shop/c2 shop/spare-1 shop/spare-2; do echo -n "${p#shop/}=${IP[$p]} "; done)gateways ${GW[node-1]} ${GW[node-2]} ${GW[node-3]}"

svc() { # svc NAME TYPE SPEC-YAML-LINES...: a Service document in namespace shop
	local name=$1 type=$2; shift 2
	printf -- '---\napiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: shop}\nspec:\n  type: %s\n' "$name" "$type"
	printf '  %s\n' "$@"
}
HTTP='- {name: http, port: 80, targetPort: http, protocol: TCP}'
{
	svc web NodePort 'selector: {app: web}' ports: \
		'- {name: http, port: 80, targetPort: http, protocol: TCP, nodePort: 30080}' \
		'- {name: udp, port: 80, targetPort: udp, protocol: UDP, nodePort: 30080}'
	svc lb LoadBalancer 'selector: {app: web}' ports: "$HTTP"
	svc empty ClusterIP 'selector: {app: nobody}' ports: \
		'- {name: tcp, port: 80, targetPort: 8080, protocol: TCP}' '- {name: udp, port: 80, targetPort: 8080, protocol: UDP}'
	svc sticky ClusterIP 'selector: {app: web}' 'sessionAffinity: ClientIP' \
		'sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}' ports: "$HTTP" | tee "$T_ROOT/sticky.yaml"
	svc itp ClusterIP 'selector: {app: web}' 'internalTrafficPolicy: Local' ports: "$HTTP"
	svc etp NodePort 'selector: {app: web, tier: edge}' 'externalTrafficPolicy: Local' ports: \
		'- {name: http, port: 80, targetPort: http, protocol: TCP, nodePort: 30090}'
	svc both ClusterIP 'selector: {app: web}' ports: \
		'- {name: tcp, port: 80, targetPort: http, protocol: TCP}' '- {name: udp, port: 80, targetPort: udp, protocol: UDP}' |
		tee "$T_ROOT/both.yaml"
	svc sess ClusterIP 'selector: {app: web}' ports: '- {port: 9000, targetPort: 9000, protocol: TCP}'
	svc many ClusterIP ports: '- {port: 80, protocol: TCP}'
} >"$T_ROOT/services.yaml"
must lab weftctl apply -f "$T_ROOT/services.yaml"
declare -A CIP
for s in web lb empty sticky itp etp both sess many; do CIP[$s]=$(svc_field $s .spec.clusterIP); done
VIP=$(svc_field lb '.status.loadBalancer.ingress[0].ip // empty')
echo "  cluster IPs: $(for s in web lb empty sticky itp etp both sess many; do echo -n "$s=${CIP[$s]} "; done)VIP ${VIP:-none}"

# ---------------------------------------------------------------- 1. ClusterIP, NodePort, LoadBalancer, hairpin, no endpoints
in_service_network() { [[ $1 == 172.30.* ]] || { echo "expected a cluster IP in 172.30.0.0/16; seen '${1}'"; return 1; }; }
check "web has a cluster IP from the service network (${CIP[web]})" in_service_network "${CIP[web]}"
check "Endpoints web lists web-1 web-2 web-3 (selector app=web, ready pods)" endpoints_become web "web-1 web-2 web-3"
ep_ports() { lab weftctl get ep web -n shop -o json | jq -r '[.subsets[].ports[] | "\(.name)=\(.port)/\(.protocol)"] | unique | join(" ")'; }
check "... with the named targetPorts resolved: http=8080/TCP udp=8080/UDP" is "$(ep_ports)" "http=8080/TCP udp=8080/UDP" "ports"
check "web ${CIP[web]}:80/TCP and /UDP programmed with 3 backends on every node" \
	eval 'programmed "${CIP[web]}" 80 tcp 3 && programmed "${CIP[web]}" 80 udp 3'
local_one() {
	local n id count local_count
	for n in "${NODES[@]}"; do
		read -r id count local_count _ <<<"$(frontend "$n" "${CIP[web]}" 80 tcp)"
		[ "${local_count:-}" = 1 ] || { echo "$n: local_count ${local_count:-none} (svc_id ${id:-none}, count ${count:-none}), want 1"; return 1; }
	done
}
check "... each node counts exactly one local backend" local_one
check "c1 (node-1) -> web ${CIP[web]}:80 TCP x30: spread over web-1..3, each sees c1 $C1" \
	spread shop/c1 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C1"
check "c1 -> web :80 UDP x30: spread over web-1..3, each sees $C1" spread shop/c1 udp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C1"
check "c2 (node-2) -> web :80 TCP x30: spread, each sees c2 $C2" spread shop/c2 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C2"
check "c2 -> web :80 UDP x30: spread, each sees $C2" spread shop/c2 udp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C2"

# from outside through node K: a backend on K sees outside's IP, one elsewhere K's gateway
ENTRY=
via_entry() { if [ "${NODE_OF[$1]}" = "$ENTRY" ]; then [ "$2" = "$OUT" ]; else [ "$2" = "${GW[$ENTRY]}" ]; fi; }
for ENTRY in "${NODES[@]}"; do
	check "outside -> $ENTRY ${IP[$ENTRY]}:30080 TCP x30: all three answer; local backend sees $OUT, others ${GW[$ENTRY]}" \
		seen_as outside tcp "${IP[$ENTRY]}" 30080 30 via_entry
done
ENTRY=node-2
check "outside -> node-2 $N2:30080 UDP x30: all three answer, same client rule" seen_as outside udp "$N2" 30080 30 via_entry
check "c2 (node-2) -> node-1 $N1:30080 TCP x30: spread, each sees c2 $C2" spread shop/c2 tcp "$N1" 30080 30 "web-1 web-2 web-3" "$C2"
check "c2 -> node-3 $N3:30080 UDP x30: spread, each sees $C2" spread shop/c2 udp "$N3" 30080 30 "web-1 web-2 web-3" "$C2"
check "c1 -> its own node $N1:30080 TCP x30: spread, each sees $C1" spread shop/c1 tcp "$N1" 30080 30 "web-1 web-2 web-3" "$C1"

in_vip_network() { [[ $1 == 192.168.201.* ]] || { echo "expected status.loadBalancer.ingress[0].ip in 192.168.201.0/24; seen '${1}'"; return 1; }; }
check "lb got a VIP from vipNetworks 192.168.201.0/24 (${VIP:-none})" in_vip_network "$VIP"
get_shows_vip() { lab weftctl get services -n shop | awk -v v="$VIP" '$1 == "lb" && index($0, v) { ok = 1 } END { exit !ok }'; }
check "weftctl get services shows lb's VIP" get_shows_vip
# through the ECMP router: the entry node is unknown, but a client address is
# outside's (backend on the entry node) or the gateway of another node
via_vip() { [ "$2" = "$OUT" ] && return 0; local n; for n in "${NODES[@]}"; do [ "$2" = "${GW[$n]}" ] && [ "$n" != "${NODE_OF[$1]}" ] && return 0; done; return 1; }
if [ -n "$VIP" ]; then
	check "lb $VIP programmed with 3 backends on every node" programmed "$VIP" 80 tcp 3
	check "outside -> VIP $VIP:80 TCP x30: all three answer, each sees $OUT or another node's gateway" seen_as outside tcp "$VIP" 80 30 via_vip
else
	fail "outside -> VIP :80 TCP" "lb has no VIP: status.loadBalancer = $(svc_field lb '.status.loadBalancer' | tr -d ' \n')"
fi
check_fails "cluster IPs are not reachable from outside: outside -> web ${CIP[web]}:80 TCP" ns outside python3 "$PEER" tcp "${CIP[web]}" 80

hairpin_rule() { if [ "$1" = web-1 ]; then [ "$2" = "$HAIRPIN" ]; else [ "$2" = "${IP[shop/web-1]}" ]; fi; }
check "hairpin: web-1 -> web :80 TCP x30: web-1 itself sees $HAIRPIN, the others ${IP[shop/web-1]}" \
	seen_as shop/web-1 tcp "${CIP[web]}" 80 30 hairpin_rule
check "hairpin: web-1 -> web :80 UDP x30: same" seen_as shop/web-1 udp "${CIP[web]}" 80 30 hairpin_rule

check "Endpoints empty lists no pod" endpoints_are empty ""
check "c1 -> empty ${CIP[empty]}:80 TCP refused (RST) within 1 s" refused_fast shop/c1 tcp "${CIP[empty]}" 80
check "c1 -> empty :80 UDP refused (ICMP unreachable) within 1 s" refused_fast shop/c1 udp "${CIP[empty]}" 80
check "c2 (node-2) -> empty :80 TCP refused within 1 s" refused_fast shop/c2 tcp "${CIP[empty]}" 80

# ---------------------------------------------------------------- 2. policies, affinity, protocols, deletion, 250 endpoints
check "itp programmed (3 backends)" programmed "${CIP[itp]}" 80 tcp 3
check "internalTrafficPolicy Local: c1 (node-1) -> itp TCP x20: only web-1, sees $C1" spread shop/c1 tcp "${CIP[itp]}" 80 20 web-1 "$C1"
check "internalTrafficPolicy Local: c2 (node-2) -> itp TCP x20: only web-2, sees $C2" spread shop/c2 tcp "${CIP[itp]}" 80 20 web-2 "$C2"

check "Endpoints etp lists web-1 only (selector app=web,tier=edge)" endpoints_become etp web-1
check "etp programmed (1 backend)" programmed "${CIP[etp]}" 80 tcp 1
check "externalTrafficPolicy Local: outside -> node-1 $N1:30090 TCP x10: web-1 answers, sees outside $OUT" \
	spread outside tcp "$N1" 30090 10 web-1 "$OUT"
etp_silent() { # etp_silent NODE: no answer via NODE, and NODE counted no-backend
	local before
	before=$(drop_count "$1" no-backend)
	unanswered outside tcp "${IP[$1]}" 30090 || return 1
	grew "$1" no-backend "$before"
}
check "externalTrafficPolicy Local: outside -> node-2 $N2:30090 (no local backend): no answer, no-backend counted on node-2" etp_silent node-2
check "externalTrafficPolicy Local: outside -> node-3 $N3:30090: no answer, no-backend counted on node-3" etp_silent node-3
check "... a pod still uses every backend: c2 -> node-2 $N2:30090 TCP x5: web-1 answers, sees $C2" \
	spread shop/c2 tcp "$N2" 30090 5 web-1 "$C2"

check "sticky programmed (3 backends)" programmed "${CIP[sticky]}" 80 tcp 3
check "ClientIP affinity: c1 -> sticky TCP x15 in a row: one backend" eval 'conns shop/c1 tcp "${CIP[sticky]}" 80 15 && is "$(names_seen | wc -w)" 1 "backends (answers: $(tally))"'
check "ClientIP affinity: c2 -> sticky TCP x15 in a row: one backend" eval 'conns shop/c2 tcp "${CIP[sticky]}" 80 15 && is "$(names_seen | wc -w)" 1 "backends (answers: $(tally))"'
sed -e 's/sessionAffinity: ClientIP/sessionAffinity: None/' -e '/sessionAffinityConfig/d' "$T_ROOT/sticky.yaml" >"$T_ROOT/sticky-off.yaml"
check "apply sticky with sessionAffinity None" lab weftctl apply -f "$T_ROOT/sticky-off.yaml"
check "affinity off: c1 -> sticky TCP x30 spreads over web-1..3 again (within 5 s)" \
	spread_soon 5 shop/c1 tcp "${CIP[sticky]}" 80 30 "web-1 web-2 web-3" "$C1"

check "both programmed: :80/TCP and :80/UDP (3 backends each)" \
	eval 'programmed "${CIP[both]}" 80 tcp 3 && programmed "${CIP[both]}" 80 udp 3'
check "both: c1 -> :80 TCP x30 spread" spread shop/c1 tcp "${CIP[both]}" 80 30 "web-1 web-2 web-3" "$C1"
check "both: c1 -> :80 UDP x30 spread" spread shop/c1 udp "${CIP[both]}" 80 30 "web-1 web-2 web-3" "$C1"
grep -v 'protocol: UDP' "$T_ROOT/both.yaml" >"$T_ROOT/both-tcp.yaml"
check "apply both without its UDP port" lab weftctl apply -f "$T_ROOT/both-tcp.yaml"
udp_gone_now() { local n; for n in "${NODES[@]}"; do [ -z "$(frontend "$n" "${CIP[both]}" 80 udp)" ] || return 1; done; }
check "... :80/UDP leaves every node's map (within 5 s)" wait_for 5 udp_gone_now
check "... c1 -> both :80 UDP is no longer answered" unanswered shop/c1 udp "${CIP[both]}" 80
check "... c1 -> both :80 TCP x30 still spread" spread shop/c1 tcp "${CIP[both]}" 80 30 "web-1 web-2 web-3" "$C1"

check "delete service sticky" lab weftctl delete svc sticky -n shop
check "... sticky's ${CIP[sticky]} leaves every node's map (within 5 s)" wait_for 5 gone_everywhere_now "${CIP[sticky]}"
check "... c1 -> sticky ${CIP[sticky]}:80 TCP no longer answered" no_answer shop/c1 tcp "${CIP[sticky]}" 80
check "... web untouched: c1 -> web :80 TCP x30 spread" spread shop/c1 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C1"
check "... web untouched: c2 -> web :80 UDP x30 spread" spread shop/c2 udp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C2"
check "... itp untouched: c1 -> itp TCP x10 only web-1" spread shop/c1 tcp "${CIP[itp]}" 80 10 web-1 "$C1"

# 250 endpoints: 5 pods (web-1..3, spare-1..2) x 50 ports (9000-9049), one
# subset per port; every pair ip:port is a distinct live backend
MANY=(shop/web-1 shop/web-2 shop/web-3 shop/spare-1 shop/spare-2)
jq -n --argjson ips "$(printf '%s\n' "${MANY[@]}" | while read -r p; do echo "${IP[$p]}"; done | jq -R . | jq -s .)" '
	{apiVersion: "v1", kind: "Endpoints", metadata: {name: "many", namespace: "shop"},
	 subsets: [range(9000; 9050) as $p | {addresses: [$ips[] | {ip: .}], ports: [{port: $p, protocol: "TCP"}]}]}' \
	>"$T_ROOT/many-endpoints.json"
check "apply hand-written Endpoints many (250 addresses:ports)" lab weftctl apply -f "$T_ROOT/many-endpoints.json"
check "many ${CIP[many]}:80 programmed with 250 backends on every node" programmed "${CIP[many]}" 80 tcp 250
many_ok() { # many_ok FROM N: N connections, all answered by the five pods on ports 9000-9049, over >= 40 pairs
	conns "$1" tcp "${CIP[many]}" 80 "$2" || return 1
	local names pairs ports
	names=$(names_seen) pairs=$(awk '{ print $1, $3 }' "$T_ROOT/answers" | sort -u | wc -l)
	ports=$(awk '$3 < 9000 || $3 > 9049' "$T_ROOT/answers" | head -n 3)
	[ "$names" = "spare-1 spare-2 web-1 web-2 web-3" ] && [ "$pairs" -ge 40 ] && [ -z "$ports" ] && return 0
	echo "expected all 5 pods, >= 40 distinct pod:port pairs, ports 9000-9049; seen pods {$names}, $pairs pairs, off-range: ${ports:-none}"
	return 1
}
check "c1 -> many :80 TCP x100: all answered, all 5 pods, >= 40 distinct backends" many_ok shop/c1 100
check "c2 -> many :80 TCP x100: same" many_ok shop/c2 100

# ---------------------------------------------------------------- 3. agent restart, scaling, a UDP flow that moves
check "sess programmed (3 backends)" programmed "${CIP[sess]}" 9000 tcp 3
SESSION=$T_ROOT/session.log
ns shop/c1 python3 "$FLOW" session tcp "${CIP[sess]}" 9000 >"$SESSION" 2>&1 &
SESSION_PID=$! T_PIDS+=("$!")
lines() { grep -c . "$1" || true; }
lines_at_least() { [ "$(lines "$1")" -ge "$2" ]; }
check "a TCP session c1 -> sess ${CIP[sess]}:9000 answers every 0.1 s" wait_for 5 lines_at_least "$SESSION" 5
web_fe_before=$(frontend node-1 "${CIP[web]}" 80 tcp)
check "agent restart node-1 (during the session)" lab agent restart node-1
after=$(lines "$SESSION")
session_goes_on() {
	wait_for 5 lines_at_least "$SESSION" $((after + 10)) || { echo "expected 10 more answers after the restart; log tail: $(tail -n 3 "$SESSION")"; return 1; }
	! grep -q error "$SESSION" || { echo "the session broke: $(grep -m1 error "$SESSION")"; return 1; }
	local who; who=$(awk '{ print $2, $3 }' "$SESSION" | sort -u)
	[ "$(wc -l <<<"$who")" = 1 ] && [ "${who#* }" = "$C1" ] && return 0
	echo "expected one backend seeing $C1 for the whole session; seen: $(tr '\n' ',' <<<"$who")"
	return 1
}
check "... the session goes on through the same backend, nothing lost (>= 10 answers after)" session_goes_on
same_frontend() {
	[ -n "$web_fe_before" ] || { echo "web's frontend was not read before the restart"; return 1; }
	is "$(frontend node-1 "${CIP[web]}" 80 tcp)" "$web_fe_before" "node-1's web frontend (svc_id count local flags)"
}
check "... node-1 recovered web's frontend with the same svc_id and counts ($web_fe_before)" same_frontend
check "... new connections after the restart: c1 -> web TCP x30 spread" spread shop/c1 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C1"
kill "$SESSION_PID" 2>/dev/null; wait "$SESSION_PID" 2>/dev/null

check "scale down: relabel web-3 app=off (weftctl apply of its Pod)" relabel web-3 off
check "... Endpoints web drops web-3" endpoints_become web "web-1 web-2"
check "... c1 -> web TCP x30: only web-1 and web-2 (within 5 s)" spread_soon 5 shop/c1 tcp "${CIP[web]}" 80 30 "web-1 web-2" "$C1"
check "... c2 -> web UDP x30: only web-1 and web-2" spread shop/c2 udp "${CIP[web]}" 80 30 "web-1 web-2" "$C2"
check "... node-3 now counts no local backend" is "$(frontend node-3 "${CIP[web]}" 80 tcp | cut -d' ' -f2,3)" "2 0" "node-3's web count and local_count"
check "scale up: relabel web-3 app=web" relabel web-3 web
check "... c1 -> web TCP x30: web-1..3 again (within 5 s)" spread_soon 5 shop/c1 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C1"

# conntrack naming web's backend X:8080 on any node (X stays a backend of
# many, on ports 9000-9049: its Endpoints are hand-written)
ct_all() { local n sum=0; for n in "${NODES[@]}"; do sum=$((sum + $(ct_naming "$n" "$XIP" 8080))); done; echo $sum; }
ct_purged() {
	wait_for 5 eval '[ "$(ct_all)" = 0 ]' && return 0
	echo "expected no weft_ct entry naming $XIP:8080 on any node within 5 s; seen $(ct_all), e.g.:"
	local n
	for n in "${NODES[@]}"; do
		bpftool -j map dump pinned "${PIN[$L/$n]}/weft_ct" | jq -c --arg n "$n" --argjson a "$(be32 "$XIP")" --argjson p "$(be16 8080)" '
			.[] | .formatted | select((.key.dir == 0 and .value.nat_addr == $a and .value.nat_port == $p) or
				(.key.dir == 1 and .key.saddr == $a and .key.sport == $p)) | {node: $n} + .' | head -n 2
	done
	return 1
}
FLOWLOG=$T_ROOT/udpflow.log
ns shop/c1 python3 "$FLOW" session udp "${CIP[web]}" 80 40404 >"$FLOWLOG" 2>&1 &
FLOW_PID=$! T_PIDS+=("$!")
answered() { grep -qE '^[0-9]+ web-' "$FLOWLOG"; }
check "a UDP flow c1:40404 -> web ${CIP[web]}:80 is answered" wait_for 5 answered
X=$(grep -m1 -oE '^[0-9]+ web-[0-9]' "$FLOWLOG" | cut -d' ' -f2)
XIP=${IP[shop/$X]}
echo "  the flow's backend: $X ($XIP)"
ct_before=$(ct_all)
check "before the deletion, conntrack names web's backend $XIP:8080 ($ct_before entries: the flow, earlier connections)" test "$ct_before" -gt 0
unserve "shop/$X"
mark=$(lines "$FLOWLOG")
check "delete its backend's pod shop/$X" lab pod del "shop/$X"
moved_to() { tail -n +$((mark + 1)) "$FLOWLOG" | awk -v x="$X" '$2 ~ /^web-/ && $2 != x { print $2, $3; exit }'; }
moved() { [ -n "$(moved_to)" ]; }
check "... the same flow (source port 40404) is answered by another backend within 5 s" wait_for 5 moved
Y=$(moved_to)
check "... the new backend sees c1 $C1 (${Y:-none})" is "${Y#* }" "$C1" "the client at the new backend"
stays() {
	local n0 next
	n0=$(lines "$FLOWLOG")
	wait_for 5 lines_at_least "$FLOWLOG" $((n0 + 10)) || { echo "the flow stopped: $(tail -n 3 "$FLOWLOG")"; return 1; }
	next=$(tail -n +$((n0 + 1)) "$FLOWLOG" | head -n 10 | awk '{ print $2 }' | sort | uniq -c | awk '{ $1 = $1; print }' | paste -sd, -)
	is "$next" "10 ${Y%% *}" "the flow's next 10 answers (count backend)"
}
check "... and stays there: the next 10+ datagrams all answered by ${Y%% *}" stays
kill "$FLOW_PID" 2>/dev/null; wait "$FLOW_PID" 2>/dev/null
check "... and no node's conntrack names $XIP:8080 any more (within 5 s)" ct_purged

check "scale up: a new pod shop/$X with app=web on ${NODE_OF[$X]}" lab pod add "${NODE_OF[$X]}" shop "$X" --label app=web "${WEBPORTS[@]}"
addresses
serve "shop/$X" "$X"
check "... its server is up" server_up "shop/$X" 8080
check "... c1 -> web UDP x30: web-1..3 again (within 5 s)" spread_soon 5 shop/c1 udp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "$C1"

# ---------------------------------------------------------------- 4. from the node itself
# A socket in a node's namespace (the node, a host-network pod) reaches
# cluster IPs and VIPs through the node's service device: the agent routes
# the service network and the VIP networks to weft_svc, src the gateway,
# and svc_egress translates there as pod_ingress does for a pod.  node-1's
# agent was restarted in 3: this runs on what the new agent kept.
SVC_DEV=weft_svc
svc_link() { ns "$1" ip -d -j link show dev "$SVC_DEV" 2>/dev/null; }
# svc_device_ok NODE: a dummy (or ifb), NOARP, up, no IPv4 address,
# svc_egress at egress, and weft_svc_dev names it (ifindex and MAC)
svc_device_ok() {
	local j rec
	j=$(svc_link "$1") || { echo "$1 has no $SVC_DEV"; return 1; }
	jq -e '.[0] | (.linkinfo.info_kind == "dummy" or .linkinfo.info_kind == "ifb") and
		(.flags | index("NOARP") and index("UP"))' <<<"$j" >/dev/null ||
		{ echo "$1 $SVC_DEV: $(jq -c '.[0] | {kind: .linkinfo.info_kind, flags}' <<<"$j"), want a dummy or ifb, NOARP, UP"; return 1; }
	[ -z "$(ns "$1" ip -4 -o addr show dev "$SVC_DEV")" ] || { echo "$1 $SVC_DEV has an IPv4 address"; return 1; }
	ns "$1" tc filter show dev "$SVC_DEV" egress | grep -q svc_egress || { echo "$1 $SVC_DEV: no svc_egress at egress: $(ns "$1" tc filter show dev "$SVC_DEV" egress)"; return 1; }
	rec=$(bpftool -j map dump pinned "${PIN[$L/$1]}/weft_svc_dev" | jq -c '.[0].formatted.value | {ifindex, mac: (.mac | map(. as $b | [$b / 16 | floor, $b % 16] | map("0123456789abcdef"[.:.+1]) | join("")) | join(":"))}')
	jq -e --argjson r "$rec" '.[0] | .ifindex == $r.ifindex and .address == $r.mac' <<<"$j" >/dev/null && return 0
	echo "$1: weft_svc_dev says $rec; $SVC_DEV is $(jq -c '.[0] | {ifindex, address}' <<<"$j")"
	return 1
}
svc_routes_ok() { # svc_routes_ok NODE: service and VIP networks dev weft_svc src <gateway>
	local r
	r=$(ns "$1" ip -j route show dev "$SVC_DEV")
	jq -e --arg gw "${GW[$1]}" '[.[] | select(.prefsrc == $gw) | .dst] | sort == ["172.30.0.0/16", "192.168.201.0/24"]' <<<"$r" >/dev/null && return 0
	echo "$1: routes dev $SVC_DEV: $(jq -c '[.[] | {dst, prefsrc}]' <<<"$r"), want 172.30.0.0/16 and 192.168.201.0/24 src ${GW[$1]}"
	return 1
}
svc_ifindex() { svc_link "$1" | jq -r '.[0].ifindex'; }
for n in node-1 node-2; do
	check "$n: $SVC_DEV is a dummy (or ifb), NOARP, up, no address, svc_egress at egress, named by weft_svc_dev (ifindex, MAC)" svc_device_ok "$n"
	check "$n: 172.30.0.0/16 and the VIP network 192.168.201.0/24 dev $SVC_DEV src ${GW[$n]}" svc_routes_ok "$n"
done
check "node-1 -> web ${CIP[web]}:80 TCP x30: spread over web-1..3, each sees node-1's gateway ${GW[node-1]}" \
	spread node-1 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "${GW[node-1]}"
check "node-1 -> web :80 UDP x30: spread, each sees ${GW[node-1]}" spread node-1 udp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "${GW[node-1]}"
check "node-2 -> web :80 TCP x30: spread, each sees node-2's gateway ${GW[node-2]}" \
	spread node-2 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "${GW[node-2]}"
if [ -n "$VIP" ]; then
	check "node-1 -> lb's VIP $VIP:80 TCP x30: spread, each sees ${GW[node-1]}" spread node-1 tcp "$VIP" 80 30 "web-1 web-2 web-3" "${GW[node-1]}"
else
	fail "node-1 -> VIP :80 TCP" "lb has no VIP"
fi
check "internalTrafficPolicy Local: node-3 -> itp TCP x10: only web-3, sees ${GW[node-3]}" spread node-3 tcp "${CIP[itp]}" 80 10 web-3 "${GW[node-3]}"
check "node-1 -> empty ${CIP[empty]}:80 TCP refused (RST) within 1 s" refused_fast node-1 tcp "${CIP[empty]}" 80
check "node-1 -> empty :80 UDP refused (ICMP unreachable) within 1 s" refused_fast node-1 udp "${CIP[empty]}" 80

# a backend outside the pod network (a host-network endpoint: node-2's IP)
# would answer node-1's gateway where no program sees it: refused, counted
{
	svc hostep ClusterIP ports: '- {port: 80, targetPort: 8080, protocol: TCP}'
	printf -- '---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: hostep, namespace: shop}\nsubsets:\n- addresses: [{ip: %s}]\n  ports: [{port: 8080, protocol: TCP}]\n' "$N2"
} >"$T_ROOT/hostep.yaml"
check "apply service hostep with hand-written Endpoints $N2:8080 (a host-network endpoint)" lab weftctl apply -f "$T_ROOT/hostep.yaml"
CIP[hostep]=$(svc_field hostep .spec.clusterIP)
check "hostep ${CIP[hostep]}:80 programmed (1 backend)" programmed "${CIP[hostep]}" 80 tcp 1
ext_refused() {
	local before
	before=$(drop_count node-1 external-backend)
	refused_fast node-1 tcp "${CIP[hostep]}" 80 || return 1
	grew node-1 external-backend "$before"
}
check "node-1 -> hostep: refused within 1 s (backend outside the pod network), external-backend counted on node-1" ext_refused

# what is no frontend: dropped and counted, not answered
silent_no_service() { # silent_no_service NODE FROM IP PORT
	local before
	before=$(drop_count "$1" no-service)
	unanswered "$2" tcp "$3" "$4" || return 1
	grew "$1" no-service "$before"
}
check "node-1 -> an unallocated cluster IP 172.30.255.254:80: no answer, no-service counted" silent_no_service node-1 node-1 172.30.255.254 80
check "node-1 -> both ${CIP[both]}:80 TCP x30: spread, each sees ${GW[node-1]}" spread node-1 tcp "${CIP[both]}" 80 30 "web-1 web-2 web-3" "${GW[node-1]}"
check "delete service both" lab weftctl delete svc both -n shop
check "... both's ${CIP[both]} leaves every node's map (within 5 s)" wait_for 5 gone_everywhere_now "${CIP[both]}"
check "... node-1 -> both ${CIP[both]}:80: no answer, no-service counted" silent_no_service node-1 node-1 "${CIP[both]}" 80

# forwarded through a node (outside routes the service network via node-1):
# not the gateway's, never translated
outside_via_node1() {
	ns outside ip route replace 172.30.0.0/16 via "$N1" || return 1
	local rc=0
	silent_no_service node-1 outside "${CIP[web]}" 80 || rc=1
	ns outside ip route del 172.30.0.0/16 via "$N1"
	return $rc
}
check "outside -> web ${CIP[web]}:80 routed through node-1: not translated, no answer, no-service counted" outside_via_node1

svc_idx_before=$(svc_ifindex node-1)
check "agent restart node-1" lab agent restart node-1
check "... $SVC_DEV kept, same ifindex ($svc_idx_before)" is "$(svc_ifindex node-1)" "$svc_idx_before" "$SVC_DEV's ifindex"
check "... still one $SVC_DEV, configured as before" svc_device_ok node-1
check "... routes kept" svc_routes_ok node-1
check "... node-1 -> web TCP x30: spread, each sees ${GW[node-1]}" spread node-1 tcp "${CIP[web]}" 80 30 "web-1 web-2 web-3" "${GW[node-1]}"

if [ "$T_FAILED" -gt 0 ]; then
	echo "  for the failures above: $(drops)"
	for n in "${NODES[@]}"; do
		echo "  --- /run/weft-lab/$LAB/$n/agent.log (last 8 lines)"
		tail -n 8 "/run/weft-lab/$LAB/$n/agent.log" | sed 's/^/    /'
	done
fi
stop_started
check "down $LAB (and no sanitizer report in the controller's or agents' logs)" lab down

# ================================================================ 5. tenants (multitenant lab)
L=$MT
NODES=(node-1 node-2)
WEFT_LAB_AGENT_ARGS="--max-services 24" must lab up --nodes 2 --mode multitenant
must lab pod add node-1 blue api --label app=api "${WEBPORTS[@]}"
must lab pod add node-2 blue bc
must lab pod add node-1 red r1
must lab pod add node-2 red r2
must lab pod add node-2 default d1
addresses
serve blue/api api
must server_up blue/api 8080
cat >"$T_ROOT/api.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: api, namespace: blue}
spec:
  selector: {app: api}
  ports:
  - {name: tcp, port: 80, targetPort: http, protocol: TCP}
  - {name: udp, port: 80, targetPort: udp, protocol: UDP}
EOF
must lab weftctl apply -f "$T_ROOT/api.yaml"
API=$(svc_field api .spec.clusterIP blue)
echo "  lab $MT: api=${IP[blue/api]} bc=${IP[blue/bc]} r1=${IP[red/r1]} r2=${IP[red/r2]} d1=${IP[default/d1]}; api's cluster IP $API"
check "api ${API}:80/TCP and /UDP programmed (1 backend) on both nodes" eval 'programmed "$API" 80 tcp 1 && programmed "$API" 80 udp 1'
for p in blue/bc default/d1; do
	check "$p -> blue's api ${API}:80 TCP x5: api answers, sees ${IP[$p]}" spread "$p" tcp "$API" 80 5 api "${IP[$p]}"
	check "$p -> api :80 UDP x5: api answers, sees ${IP[$p]}" spread "$p" udp "$API" 80 5 api "${IP[$p]}"
done
# isolated FROM NODE: FROM gets no answer (TCP and UDP), api's server logged
# nothing from FROM, and NODE (where the rule is enforced) counted isolated
isolated() {
	local before off seen
	before=$(drop_count "$2" isolated) off=$(log_size blue/api)
	unanswered_both "$1" "$API" 80 || return 1
	seen=$(log_since blue/api "$off" | grep -F "${IP[$1]}")
	[ -z "$seen" ] || { echo "api's server received from $1: $seen"; return 1; }
	grew "$2" isolated "$before"
}
check "red r1 (node-1, the backend's node) -> blue's api: no answer, nothing reaches api, isolated on node-1" isolated red/r1 node-1
check "red r2 (node-2) -> blue's api: no answer, nothing reaches api, isolated on node-2 (the client's node: refused before any conntrack entry)" isolated red/r2 node-2
cat >"$T_ROOT/steal.yaml" <<EOF
apiVersion: v1
kind: Service
metadata: {name: steal, namespace: red}
spec:
  ports:
  - {port: 80, targetPort: 8080, protocol: TCP}
---
apiVersion: v1
kind: Endpoints
metadata: {name: steal, namespace: red}
subsets:
- addresses: [{ip: ${IP[blue/api]}}]
  ports: [{port: 8080, protocol: TCP}]
EOF
steal_refused() {
	local out
	if out=$(lab weftctl apply -f "$T_ROOT/steal.yaml" 2>&1); then echo "accepted: $out"; return 1; fi
	grep -qF "${IP[blue/api]}" <<<"$out" || { echo "expected a refusal naming ${IP[blue/api]}; seen: $out"; return 1; }
	! lab weftctl get ep steal -n red >/dev/null 2>&1 || { echo "Endpoints red/steal was stored"; return 1; }
}
check "red's hand-written Endpoints aimed at blue's pod ${IP[blue/api]} are refused, naming it, and not stored" steal_refused
STEAL=$(svc_field steal '.spec.clusterIP // empty' red)
check "... red r1 -> red's steal ${STEAL:-?}:80 is refused at once (no endpoints), never reaching blue" \
	refused_fast red/r1 tcp "${STEAL:-0.0.0.0}" 80

# ---------------------------------------------------------------- 6. a full map
# api (2 frontends x (1 + 1 slot)) and steal (1 frontend) use 5 of the 24
# entries; wide asks for 12 ports x (1 + 1 slot) = 24 more
{
	printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: wide, namespace: blue}' \
		'spec:' '  selector: {app: api}' '  ports:'
	for i in $(seq 1 12); do printf '  - {name: p%d, port: %d, targetPort: 8080, protocol: TCP}\n' "$i" $((1000 + i)); done
} >"$T_ROOT/wide.yaml"
must lab weftctl apply -f "$T_ROOT/wide.yaml"
CTRL_NS=$(lab status -o json | jq -r .controller.netns)
CTRL_URL_LAB=$(lab status -o json | jq -r .controller.url)
CTRL_TOKEN_LAB=$(lab status -o json | jq -r .controller.tokenFile)
CTRL_CA_LAB=$(lab status -o json | jq -r .controller.caFile)
unprogrammed_on_both() {
	local ann
	ann=$(lab weftctl get svc wide -n blue -o json | jq -c '.metadata.annotations // {}')
	for n in "${NODES[@]}"; do
		jq -e --arg k "weft.io/unprogrammed.$n" '.[$k] | test("map is full")' <<<"$ann" >/dev/null ||
			{ echo "annotations of blue/wide: $ann"; return 1; }
	done
}
check "blue/wide (too big for --max-services 24) carries weft.io/unprogrammed.node-1 and .node-2 (within 5 s)" \
	wait_for 5 unprogrammed_on_both
metric_full() {
	local m
	m=$(ip netns exec "$CTRL_NS" curl -s --cacert "$CTRL_CA_LAB" -H "Authorization: Bearer $(cat "$CTRL_TOKEN_LAB")" "$CTRL_URL_LAB/metrics")
	for n in "${NODES[@]}"; do
		grep -Eq "^weft_service_map_full_total\{node=\"$n\"\} [1-9]" <<<"$m" ||
			{ echo "metrics: $(grep weft_service_map_full <<<"$m" | paste -sd' ')"; return 1; }
	done
}
check "... and the controller's /metrics counts weft_service_map_full_total > 0 for both nodes (within 10 s)" \
	wait_for 10 metric_full
check "... nothing programmed before is lost: blue/bc -> api ${API}:80 TCP x5 still answered" \
	spread blue/bc tcp "$API" 80 5 api "${IP[blue/bc]}"
must lab weftctl delete svc wide -n blue
cat >"$T_ROOT/small.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: small, namespace: blue}
spec:
  selector: {app: api}
  ports: [{name: tcp, port: 81, targetPort: http, protocol: TCP}]
EOF
must lab weftctl apply -f "$T_ROOT/small.yaml"
SMALL=$(svc_field small .spec.clusterIP blue)
check "with wide deleted there is room again: small ${SMALL}:81 programmed on both nodes" \
	programmed "$SMALL" 81 tcp 1
check "... and answered: blue/bc -> small x3" spread blue/bc tcp "$SMALL" 81 3 api "${IP[blue/bc]}"

if [ "$T_FAILED" -gt 0 ]; then echo "  for the failures above: $(drops)"; fi
stop_started
check "down $MT" lab down
finish
