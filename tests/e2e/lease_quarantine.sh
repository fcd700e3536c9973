#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# lease_quarantine.sh — a damaged lease file never cuts a node off: it is
# quarantined (renamed <ip>.bad, its address held out of the pool) and
# reported everywhere, a full node stays ready, deleting the .bad file
# returns the address without a restart, and a stray file named by the
# subnet's broadcast address does not stop the agent.
#
#                     L-underlay: bridge br0
#        +----------------+------------------------------+
#     L-ctrl            L-node-1 (.11), subnet /29: 5 pod addresses
#     controller        agent, STATE/leases/<ip> per pod
#     /metrics           |    |    |    |    |
#                        a    b    c    d    e/f          pods, namespace blue
#
#   1. a, b; agent stop; garbage written as the lease of a free address X
#      (no pod has it); agent start: X quarantined (X.bad), reported in the
#      agent's log, the Node annotation weft.io/ipam, /metrics
#      (weft_ipam_*) and `weftctl drops`
#   2. c, d fill the subnet (4 leased + X): ADD of e fails naming both
#      counts; CNI STATUS is ok; `agent restart` of the full node works and
#      logs X again ("quarantined before this start")
#   3. the operator deletes X.bad: ADD of e succeeds at once (it gets X),
#      same agent process; the reports drop the quarantine
#   4. d deleted; agent stop; a lease file named by the broadcast address;
#      agent start: it comes up, sets the file aside (reported, holding no
#      address) and serves ADD (f)
#
# Lab t<pid>-lq, so another lab is not touched; `down` at the end (and in
# the cleanup trap) removes everything it made.
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -e -o pipefail

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-lq
L=$LAB
LAB_DIR=/run/weft-lab/$LAB
need_lab

cleanup() { # under set -e: a process stopped by its signal is no failure
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1 || true
	t_cleanup
}
trap cleanup EXIT

ALOG=$LAB_DIR/node-1/agent.log
log_size() { stat -c %s "$ALOG"; }
# log_says OFFSET FIXED-STRING: the agent's log has it after byte OFFSET
log_says() {
	tail -c +$(($1 + 1)) "$ALOG" | grep -qF -- "$2" && return 0
	echo "no \"$2\" in $ALOG since byte $1; its last lines:"
	tail -c +$(($1 + 1)) "$ALOG" | tail -n 5
	return 1
}
no_sanitizer_report() { ! tail -c +$(($1 + 1)) "$ALOG" | grep -E -A8 'ERROR: (Address|Leak)Sanitizer|runtime error:'; }
says() { grep -qF -- "$1" <<<"$2" || { echo "got: $2"; return 1; }; }	# says WANT TEXT
agent_pid() { status_json | jq -r '.nodes[] | select(.name == "node-1") | .agentPid'; }

# cni_status: CNI STATUS of node-1's agent, as a runtime asks it
cni_status() {
	local conf
	conf=$(jq -c '.plugins[0] + {name, cniVersion: "1.1.0"}' "$LAB_DIR/node-1/cni/10-weft.conflist")
	ns node-1 env CNI_COMMAND=STATUS CNI_PATH="$WEFT_BIN" "$WEFT_BIN/weft-cni" <<<"$conf"
}

# the Node annotation weft.io/ipam, parsed; ann_is JQ-ARGS...: it matches
ipam_ann() { lab weftctl get node node-1 -o json | jq -c '.metadata.annotations["weft.io/ipam"] | fromjson'; }
ann_is() {
	local a
	a=$(ipam_ann) || return 1
	jq -e "$@" <<<"$a" >/dev/null || { echo "weft.io/ipam: $a"; return 1; }
}

metrics() {
	local url tok ca
	url=$(status_json | jq -r .controller.url) tok=$(status_json | jq -r .controller.tokenFile)
	ca=$(status_json | jq -r .controller.caFile)
	ns ctrl curl -sf --cacert "$ca" -H "Authorization: Bearer $(cat "$tok")" "$url/metrics"
}
# metric_is NAME VALUE: node-1's sample of NAME is VALUE
metric_is() {
	local m
	m=$(metrics) || return 1
	awk -v m="$1{node=\"node-1\"}" -v v="$2" '$1 == m && $2 == v { ok = 1 } END { exit !ok }' <<<"$m" ||
		{ echo "metrics: $(grep -F "$1{" <<<"$m" | paste -sd' ')"; return 1; }
}

# `weftctl drops node-1`: its quarantine line says WANT / it has none
QLINE='^node-1 +quarantined leases: '
drops_says() {
	local out
	out=$(lab weftctl drops node-1) || return 1
	grep -E -- "$QLINE" <<<"$out" | grep -qF -- "$1" || { echo "weftctl drops: $out"; return 1; }
}
drops_no_quarantine() {
	local out
	out=$(lab weftctl drops node-1) || return 1
	! grep -qE -- "$QLINE" <<<"$out" || { echo "weftctl drops: $out"; return 1; }
}
drops_resolution() {
	local out
	out=$(lab weftctl drops node-1) || return 1
	grep -qF 'then delete it; the agent returns the address' <<<"$out"
}

check "up --nodes 1 --host-subnet-length 3 (a /29: 5 pod addresses)" lab up --nodes 1 --host-subnet-length 3
SUBNET=$(node_field node-1 subnet)
LEASES=$(node_field node-1 stateDir)/leases
must test "${SUBNET#*/}" = 29
BASE=${SUBNET%/*}
addr() { echo "${BASE%.*}.$((${BASE##*.} + $1))"; }	# addr K: the subnet's K-th address
BCAST=$(addr 7)
must lab pod add node-1 blue a
must lab pod add node-1 blue b
IP_A=$(pod_ip blue/a) IP_B=$(pod_ip blue/b)
X=""
for k in 6 5 4 3 2; do
	c=$(addr $k)
	if [ "$c" != "$IP_A" ] && [ "$c" != "$IP_B" ]; then X=$c; break; fi
done
echo "# subnet $SUBNET: a=$IP_A b=$IP_B; the garbage lease will be $X, broadcast $BCAST"

# ---------------------------------------------------------------- 1. a garbage lease, no pod
echo "# 1. garbage as the lease of $X (no pod has it); agent restarted"
check "agent stop node-1" lab agent stop node-1
off=$(log_size)
printf 'garbage, not a lease\n' >"$LEASES/$X"
check "agent start node-1 with a garbage lease file" lab agent start node-1
check "... the file is moved to $X.bad" test -f "$LEASES/$X.bad" -a ! -e "$LEASES/$X"
check "... the agent's log names it, its path and why" \
	log_says "$off" "lease $X quarantined: $LEASES/$X.bad: not JSON"
check "... the log says how it is resolved" log_says "$off" "held until an operator checks and deletes that file"
check "... the Node annotation weft.io/ipam: 2 leased, $X quarantined, with file and reason" \
	wait_for 30 ann_is --arg ip "$X" --arg f "$LEASES/$X.bad" '.leases == 2 and .quarantined == 1 and
		.capacity == 5 and .quarantineFiles == 1 and (.quarantine | length) == 1 and
		.quarantine[0].ip == $ip and .quarantine[0].file == $f and
		(.quarantine[0].reason | startswith("not JSON"))'
check "... /metrics: weft_ipam_quarantined 1" wait_for 30 metric_is weft_ipam_quarantined 1
check "... /metrics: weft_ipam_leases 2" metric_is weft_ipam_leases 2
check "... /metrics: weft_ipam_capacity 5" metric_is weft_ipam_capacity 5
check "... weftctl drops: node-1's quarantined lease $X with its file and reason" \
	wait_for 30 drops_says "$X ($LEASES/$X.bad: not JSON"
check "... weftctl drops says how to resolve it" drops_resolution

# ---------------------------------------------------------------- 2. full: ADD refused, STATUS ready, restart works
echo "# 2. c, d fill the subnet (4 leased + $X quarantined)"
must lab pod add node-1 blue c
must lab pod add node-1 blue d
check "c and d did not get the quarantined $X" test "$(pod_ip blue/c)" != "$X" -a "$(pod_ip blue/d)" != "$X"
add_e=$(lab pod add node-1 blue e 2>&1) && add_rc=0 || add_rc=$?
check "ADD of e fails" test "$add_rc" -ne 0
check "... exhausted, naming leased and quarantined counts" \
	says "node node-1: subnet $SUBNET is exhausted (4 leased, 1 quarantined, of 5 addresses)" "$add_e"
check "... and says how a quarantined address returns" says "checks and deletes its .bad lease file" "$add_e"
check "... the failed ADD left no lease behind" test "$(find "$LEASES" -maxdepth 1 -regex '.*/[0-9.]+' | wc -l)" -eq 4
check "CNI STATUS of the full node: ready (exit 0)" cni_status
check "weft.io/ipam: 4 leased, 1 quarantined, of 5" \
	wait_for 30 ann_is '.leases == 4 and .quarantined == 1 and .capacity == 5'
check "/metrics: weft_ipam_leases 4" wait_for 30 metric_is weft_ipam_leases 4
off=$(log_size)
check "agent restart of the full node succeeds (waits for STATUS)" lab agent restart node-1
check "... it logs $X again, quarantined before this start" \
	log_says "$off" "lease $X quarantined: $LEASES/$X.bad: quarantined before this start"
check "... no sanitizer report from the stopped agent" no_sanitizer_report "$off"

# ---------------------------------------------------------------- 3. resolved by deleting the file
echo "# 3. the operator deletes $X.bad; ADD of e at once"
pid=$(agent_pid)
off=$(log_size)
rm "$LEASES/$X.bad"
check "ADD of e succeeds right after the deletion" lab pod add node-1 blue e
check "... e has the address that was quarantined, $X" test "$(pod_ip blue/e)" = "$X"
check "... the same agent process (no restart)" test "$(agent_pid)" = "$pid"
check "... the log says the quarantine was resolved" \
	log_says "$off" "lease $X: quarantine resolved ($LEASES/$X.bad is gone)"
check "weft.io/ipam: 5 leased, none quarantined, empty list" \
	wait_for 30 ann_is '.leases == 5 and .quarantined == 0 and .quarantineFiles == 0 and .quarantine == []'
check "/metrics: weft_ipam_quarantined 0" wait_for 30 metric_is weft_ipam_quarantined 0
check "/metrics: weft_ipam_leases 5" metric_is weft_ipam_leases 5
check "weftctl drops: no quarantine line any more" wait_for 30 drops_no_quarantine

# ---------------------------------------------------------------- 4. a stray file of the broadcast address
echo "# 4. a lease file named by the broadcast address $BCAST"
must lab pod del blue/d
check "agent stop node-1" lab agent stop node-1
off=$(log_size)
jq -cn '{container_id: "stray", ifname: "eth0", pod_namespace: "blue", pod_name: "stray",
	host_ifname: "", netns: "/n", created: 1}' >"$LEASES/$BCAST"
check "agent start node-1 with it: the agent comes up" lab agent start node-1
check "... the file is moved to $BCAST.bad" test -f "$LEASES/$BCAST.bad" -a ! -e "$LEASES/$BCAST"
check "... the log names it and why" \
	log_says "$off" "lease file quarantined: $LEASES/$BCAST.bad: $BCAST is the broadcast address of node subnet $SUBNET"
check "... it serves ADD (f)" lab pod add node-1 blue f
check "weft.io/ipam lists it, holding no address: 5 leased, 0 quarantined" \
	wait_for 30 ann_is --arg ip "$BCAST" '.leases == 5 and .quarantined == 0 and .quarantineFiles == 1 and
		.quarantine[0].ip == $ip and (.quarantine[0].reason | contains("broadcast address"))'
check "/metrics: weft_ipam_quarantined 0, weft_ipam_leases 5" \
	wait_for 30 eval 'metric_is weft_ipam_quarantined 0 && metric_is weft_ipam_leases 5'
check "weftctl drops names it" wait_for 30 drops_says "$BCAST ($LEASES/$BCAST.bad: $BCAST is the broadcast address"
check "the agent still runs" kill -0 "$(agent_pid)"
check "agent stop node-1 (SIGTERM) at the end" lab agent stop node-1
check "... no sanitizer report in the agent's whole log" no_sanitizer_report 0

check "down $LAB" lab down
check "... no namespace of the lab is left" eval '! ip netns list | grep -q "^$LAB-"'
check "... its directory is gone" test ! -e "$LAB_DIR"
finish
