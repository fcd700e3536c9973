#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# restart.sh — pods keep working while weft's daemons go away and come back:
# an agent stopped (SIGTERM) and started with pods present, both agents
# killed (SIGKILL) and restarted during a TCP transfer between nodes, the
# controller down while a pod starts, and a node rebooted (its namespace
# deleted and re-created, its pods re-added through the CNI chain).
#
#                         L-underlay: bridge br0
#        +---------------+---------------------+---------------------+
#     L-ctrl          L-node-1 (.11)         L-node-2 (.12)       (L-outside)
#     controller      agent                  agent
#                     |  |  |  |             |  |
#                     a  c  e  g             b  f         pods, namespace blue
#
#   1. agent stop/start node-1 (SIGTERM): IPs, CNI CHECK, maps, leases and
#      Pod records unchanged; traffic flows while the agent is away
#   2. iperf3 a -> b for 15 s (both restarts must fit in it on a busy
#      machine); agent restart --kill node-1, then node-2 in the middle:
#      the transfer completes; new pods e (node-1), f (node-2)
#  2b. node-1's agent killed and its config entry zeroed (half-written):
#      the next agent rebuilds the maps from its leases; pods work again
#   3. controller stop; pod add node-1 g works locally; controller start:
#      the agent reports g (spec.nodeName, status.podIP)
#   4. node reboot node-2 while a pings c (node-1): same subnet, b and f
#      re-added and reachable from node-1, a <-> c lost nothing
#
# L is t<pid>-rs, so a demo lab left running ("weft") is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
LAB=t$$-rs
LAB_DIR=/run/weft-lab/$LAB
lab() { src/lab/weft-lab --lab "$LAB" "$@"; }
in_pod() { local p=$1; shift; ip netns exec "$LAB-pod-${p/\//-}" "$@"; }	# in_pod blue/a CMD...
status_json() { lab status -o json; }
jq_status() { status_json | jq -e "$@" >/dev/null; }
pod_field() { status_json | jq -r --arg p "$1" '.pods[] | select(.namespace + "/" + .name == $p) | .'"$2"; }
agent_pid() { status_json | jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .agentPid'; }
subnet_of() { status_json | jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .subnet'; }
ping1() { in_pod "$1" ping -c1 -W1 "$2"; }			# ping1 blue/a IP
reaches() { wait_for 10 ping1 "$1" "$2"; }			# after a change: routes and maps may lag a moment
log_size() { stat -c %s "$1"; }
log_since() { tail -c +$(($2 + 1)) "$1"; }			# log_since FILE OFFSET
agent_log() { echo "$LAB_DIR/$1/agent.log"; }
# log_says FILE OFFSET REGEX [HINT]: the log has a line matching REGEX after
# OFFSET; else it shows the lines matching HINT (default: the last lines)
log_says() {
	log_since "$1" "$2" | grep -qE -- "$3" && return 0
	echo "no /$3/ in $1 since byte $2; instead:"
	if [ -n "${4:-}" ]; then log_since "$1" "$2" | grep -E -- "$4" | tail -n 4; else log_since "$1" "$2" | tail -n 4; fi
	return 1
}
no_sanitizer_report() { ! log_since "$1" "$2" | grep -E -A8 'ERROR: (Address|Leak)Sanitizer|runtime error:'; }
leases() { find "$LAB_DIR/$1/state/leases" -maxdepth 1 -regex '.*/[0-9.]+' | wc -l; }	# one file per pod IP
endpoints() { bpftool map dump pinned "$LAB_DIR/bpf/$1/weft_endpoints" 2>/dev/null | grep -c '"key"'; }
# gone PID: exited (absent, or a zombie its parent has not reaped yet)
gone() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; s=${s##*) }; [ "${s%% *}" = Z ]; }
alive() { ! gone "$1"; }
running_in() { test "$(ip netns identify "$1")" = "$LAB-$2"; }	# running_in PID node-1

# fails_saying WANT CMD...: CMD fails and its output contains WANT
fails_saying() {
	local want=$1 out; shift
	if out=$("$@" 2>&1); then echo "succeeded: $out"; return 1; fi
	grep -qF -- "$want" <<<"$out" || { echo "message was: $out"; return 1; }
}

# cni_check NS/NAME: CNI CHECK of the weft plugin with the pod's ADD result
cni_check() {
	local dir=$LAB_DIR/pods/${1/\//.} node cid conf
	node=$(pod_field "$1" node) cid=$(pod_field "$1" containerID)
	conf=$(jq -c --slurpfile r "$dir/result.json" '.plugins[0] + {name, cniVersion, prevResult: $r[0]}' \
		"$LAB_DIR/$node/cni/10-weft.conflist")
	ip netns exec "$LAB-$node" env CNI_COMMAND=CHECK CNI_CONTAINERID="$cid" CNI_NETNS="/run/netns/$LAB-pod-${1/\//-}" \
		CNI_IFNAME=eth0 CNI_PATH="$WEFT_BIN" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=${1%/*};K8S_POD_NAME=${1#*/};K8S_POD_INFRA_CONTAINER_ID=$cid" \
		"$WEFT_BIN/weft-cni" <<<"$conf"
}

# ctrl_pods: the controller's Pods of namespace blue as [name, node, podIP, container ID]
ctrl_pods() { lab weftctl get pods -A -o json | jq -c '[.items[] | select(.metadata.namespace == "blue") |
	[.metadata.name, .spec.nodeName, .status.podIP, .metadata.annotations["weft.io/container-id"]]] | sort'; }
lab_pods() { status_json | jq -c '[.pods[] | [.name, .node, .ip, .containerID]] | sort'; }
# the controller's Pod records are the lab's pods: same names, nodes, IPs, container IDs, no duplicates
records_match() { test "$(ctrl_pods)" = "$(lab_pods)"; }
records_unique() { ctrl_pods | jq -e 'map(.[0]) | length == (unique | length)' >/dev/null; }

need_lab
for t in iperf3 ping bpftool; do
	command -v $t >/dev/null || { fail "prerequisites" "$t is not installed"; finish; exit 1; }
done

BG=()	# background commands (iperf3, ping; started without a subshell, so $! is theirs): ended by PID
restart_cleanup() {
	local p
	for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
	src/lab/weft-lab --lab "$LAB" down >/dev/null 2>&1
	t_cleanup
}
trap restart_cleanup EXIT

check "up --nodes 2" lab up --nodes 2
check "agent stop of an unknown node fails, naming it" fails_saying "unknown node 'node-9'" lab agent stop node-9
check "agent stop with a bad flag fails, naming it" fails_saying "unexpected argument '--hard'" lab agent stop node-1 --hard
check "node reboot without a node fails" fails_saying "node reboot: which node?" lab node reboot
check "controller with a bad verb fails" fails_saying "controller: expected" lab controller halt
for p in node-1:a node-2:b node-1:c; do
	check "pod add ${p%:*} blue ${p#*:}" lab pod add "${p%:*}" blue "${p#*:}"
done
ip_a=$(pod_field blue/a ip) ip_b=$(pod_field blue/b ip) ip_c=$(pod_field blue/c ip)
check "a -> b across nodes before anything" ping1 blue/a "$ip_b"
check "the controller's Pod records are the lab's pods" wait_for 20 records_match

# ---------------------------------------------------------------- 1. graceful agent restart (SIGTERM)
echo "# 1. agent stop (SIGTERM) and start on node-1 with pods a and c"
log1=$(agent_log node-1) off=$(log_size "$(agent_log node-1)")
pods_before=$(lab_pods) pid_before=$(agent_pid node-1)
check "agent stop node-1" lab agent stop node-1
check "... the agent process is gone" gone "$pid_before"
check "... it stopped on SIGTERM (log)" log_says "$log1" "$off" 'signal 15: stopping'
check "... status: agentPid null, state.json forgot the PID" jq_status '.nodes[0].agentPid == null'
check "... state.json has no process entry for it" jq -e --argjson p "$pid_before" 'all(.procs[]; .pid != $p)' "$LAB_DIR/state.json"
check "... plain status says the agent is not running" grep -qE 'node-1 .* none' <<<"$(lab status)"
check "a -> b while node-1 has no agent" ping1 blue/a "$ip_b"
check "a -> c while node-1 has no agent" ping1 blue/a "$ip_c"
check "agent stop node-1 again: not running, exit 0" lab agent stop node-1
check "agent start node-1 (waits for CNI STATUS)" lab agent start node-1
pid_after=$(agent_pid node-1)
check "... a new agent runs in $LAB-node-1 (pid $pid_after)" running_in "$pid_after" node-1
check "... recorded in state.json's procs" jq -e --argjson p "$pid_after" 'any(.procs[]; .pid == $p and .role == "agent")' "$LAB_DIR/state.json"
check "... its log says the pinned state was kept" log_says "$log1" "$off" 'pinned data-plane state .* is complete: kept' 'pinned data-plane'
check "... and both pods' state was kept, no lease released" log_says "$log1" "$off" 'start-up: 2 pod\(s\) kept, 0 lease\(s\) released, 0 orphan' 'start-up:'
check "... no sanitizer report from the stopped agent" no_sanitizer_report "$log1" "$off"
check "agent start node-1 again: already running, same pid" bash -c "src/lab/weft-lab --lab $LAB agent start node-1 | grep -q 'already running (pid $pid_after)'"
check "pods keep their IPs, nodes and container IDs" test "$(lab_pods)" = "$pods_before"
check "a still has $ip_a on eth0" grep -q "inet $ip_a/" <<<"$(in_pod blue/a ip -4 -o addr show dev eth0)"
check "CNI CHECK blue/a passes" cni_check blue/a
check "CNI CHECK blue/c passes" cni_check blue/c
check "a -> c (same node)" ping1 blue/a "$ip_c"
check "a -> b (across nodes)" ping1 blue/a "$ip_b"
check "b -> c (across nodes)" ping1 blue/b "$ip_c"
check "node-1 has 2 leases, 2 endpoint map entries" test "$(leases node-1):$(endpoints node-1)" = 2:2
check "no duplicate Pod records in the controller" records_unique
check "the controller's Pod records are still the lab's pods" wait_for 10 records_match

# ---------------------------------------------------------------- 2. SIGKILL during a transfer
echo "# 2. iperf3 a -> b for 15 s; agent restart --kill node-1, then node-2, meanwhile"
tmp=$(tmpdir)
ip netns exec "$LAB-pod-blue-b" iperf3 -s -1 -p 5201 >"$tmp/server.log" 2>&1 &
srv=$! BG+=("$srv")
check "iperf3 server listens in b" wait_for 5 bash -c "ip netns exec $LAB-pod-blue-b ss -Hltn 'sport = :5201' | grep -q ."
ip netns exec "$LAB-pod-blue-a" iperf3 -c "$ip_b" -p 5201 -t 15 -i 1 -J >"$tmp/client.json" 2>&1 &
cli=$! BG+=("$cli")
check "the transfer is under way" wait_for 5 bash -c "ip netns exec $LAB-pod-blue-b ss -Htn state established 'sport = :5201' | grep -q ."
# received BYTES: b's end of the transfer has taken more than BYTES
received() {
	ip netns exec "$LAB-pod-blue-b" ss -Htni state established 'sport = :5201' |
		grep -oE 'bytes_received:[0-9]+' | cut -d: -f2 | sort -n | tail -n 1 |
		{ read -r n; [ "${n:-0}" -gt "$1" ]; }
}
check "100 MB into the transfer" wait_for 8 received 100000000
off1=$(log_size "$(agent_log node-1)") off2=$(log_size "$(agent_log node-2)")
check "agent restart node-1 --kill" lab agent restart node-1 --kill
check "... and 100 MB more while node-1's agent was restarted" wait_for 8 received 200000000
check "agent restart node-2 --kill" lab agent restart node-2 --kill
check "... both restarts happened while the transfer ran" alive "$cli"
rc=0; wait "$cli" || rc=$?
check "the transfer completed (iperf3 client exit 0)" test $rc -eq 0
rc=0; wait "$srv" || rc=$?
check "... and the server's side too" test $rc -eq 0
check "... without an error" jq -e '.error == null' "$tmp/client.json"
bytes=$(jq -r '.end.sum_received.bytes // 0' "$tmp/client.json")
check "... carrying $((bytes / 1000000)) MB (more than 100 MB)" test "$bytes" -gt 100000000
check "... and no 1-second interval without data" jq -e '[.intervals[].sum.bytes] | length >= 7 and all(. > 0)' "$tmp/client.json"
for n in 1 2; do
	log=$(agent_log node-$n) off=$((n == 1 ? off1 : off2))
	check "node-$n: the lab noted the SIGKILL in the agent's log" log_says "$log" "$off" 'weft-lab .*: SIGKILL to agent of node-'$n
	check "node-$n: the new agent kept the pinned state" log_says "$log" "$off" 'pinned data-plane state .* is complete: kept' 'pinned data-plane'
	check "node-$n: ... and the pods' state, releasing no lease" log_says "$log" "$off" 'start-up: [0-9]+ pod\(s\) kept, 0 lease\(s\) released' 'start-up:'
	check "node-$n: the new agent runs in its node" running_in "$(agent_pid node-$n)" node-$n
done
check "pod add node-1 blue e after the restarts" lab pod add node-1 blue e
check "pod add node-2 blue f after the restarts" lab pod add node-2 blue f
ip_e=$(pod_field blue/e ip) ip_f=$(pod_field blue/f ip)
check "e -> a (same node)" ping1 blue/e "$ip_a"
check "e -> f (across nodes)" reaches blue/e "$ip_f"
check "f -> b (same node)" ping1 blue/f "$ip_b"
check "b -> e (across nodes)" reaches blue/b "$ip_e"
check "CNI CHECK blue/a still passes" cni_check blue/a
check "CNI CHECK blue/b still passes" cni_check blue/b

# ---------------------------------------------------------------- 2b. half-written state
echo "# 2b. agent killed on node-1 and its config entry left half-written (version 0)"
off=$(log_size "$(agent_log node-1)")
check "agent stop --kill node-1" lab agent stop node-1 --kill
# the config entry as an agent leaves it between "version 0" and the full
# sync: all zero (struct weft_config is 64 bytes)
check "... weft_config set to version 0" bpftool map update pinned "$LAB_DIR/bpf/node-1/weft_config" \
	key 0 0 0 0 value $(printf '0 %.0s' $(seq 64))
check "a -> e while the state is half-written (the kernel routes carry it)" ping1 blue/a "$ip_e"
check "agent start node-1" lab agent start node-1
check "the agent saw the half-written state and rebuilt it" log_says "$(agent_log node-1)" "$off" \
	'is half-written: rebuilding' 'pinned data-plane'
check "... every lease has its endpoint again" wait_for 10 test "$(endpoints node-1)" = "$(leases node-1)"
check "e -> f (across nodes) after the rebuild" reaches blue/e "$ip_f"
check "b -> a (across nodes) after the rebuild" reaches blue/b "$ip_a"
check "CNI CHECK blue/a passes after the rebuild" cni_check blue/a

# ---------------------------------------------------------------- 3. controller down
echo "# 3. controller stop; pod add node-1 blue g; controller start"
ctrl_log=$LAB_DIR/controller.log coff=$(log_size "$LAB_DIR/controller.log")
ctrl_pid=$(jq -r .controllerPid "$LAB_DIR/state.json")
# a controller stops in well under 10 s; WEFT_LAB_TIMEOUT bounds the wait
check "controller stop: the controller exits on SIGTERM" env WEFT_LAB_TIMEOUT=10 src/lab/weft-lab --lab "$LAB" controller stop
check "... it is gone" gone "$ctrl_pid"
check "... status says not running" grep -q 'pid none, not running' <<<"$(lab status)"
check "... node-1 cannot reach it" bash -c "! ip netns exec $LAB-node-1 curl -sf -m 1 --cacert $LAB_DIR/ctrl/pki/ca.crt https://192.168.200.2:8080/healthz"
check "... status -o json: subnets null" jq_status 'all(.nodes[]; .subnet == null)'
check "pod add node-1 blue g with the controller down" lab pod add node-1 blue g
ip_g=$(pod_field blue/g ip)
check "... g got an IP in node-1's subnet ($ip_g)" grep -qE '^10\.128\.0\.' <<<"$ip_g"
check "g -> a (same node)" ping1 blue/g "$ip_a"
check "a -> g (same node)" ping1 blue/a "$ip_g"
check "g -> node-1 (192.168.200.11)" ping1 blue/g 192.168.200.11
check "g -> b (across nodes, routes kept)" ping1 blue/g "$ip_b"
check "controller start" lab controller start
check "... same data dir: the cluster is still there" jq_status '[.nodes[].subnet] | map(select(. != null)) | length == 2'
check "... no sanitizer report from the stopped controller" no_sanitizer_report "$ctrl_log" "$coff"
g_reported() { lab weftctl get pods -A -o json | jq -e --arg ip "$ip_g" \
	'any(.items[]; .metadata.namespace == "blue" and .metadata.name == "g" and .spec.nodeName == "node-1" and .status.podIP == $ip)'; }
check "the controller has Pod blue/g (node-1, $ip_g) within 20 s" wait_for 20 g_reported
check "... and every Pod record is the lab's pod" wait_for 10 records_match
check "... no duplicates" records_unique

# ---------------------------------------------------------------- 4. node reboot
echo "# 4. node reboot node-2 while a pings c on node-1"
sub_before=$(subnet_of node-2) cid_b=$(pod_field blue/b containerID) pid2=$(agent_pid node-2)
ino_before=$(stat -L -c %i "/run/netns/$LAB-node-2")
off=$(log_size "$(agent_log node-2)")
ip netns exec "$LAB-pod-blue-a" ping -O -n -i 0.1 "$ip_c" >"$tmp/ping.log" 2>&1 &
pinger=$! BG+=("$pinger")
check "lab node reboot node-2" lab node reboot node-2
check "... the old agent is gone" gone "$pid2"
check "... a new agent runs in the new $LAB-node-2" running_in "$(agent_pid node-2)" node-2
check "... node-2 has its subnet back ($sub_before)" test "$(subnet_of node-2)" = "$sub_before"
check "... its underlay: 192.168.200.12, default via .254, ip_forward=1" bash -c "
	ip -n $LAB-node-2 -4 -o addr show dev eth0 | grep -q 192.168.200.12/24 &&
	ip -n $LAB-node-2 route show default | grep -q 'via 192.168.200.254' &&
	test \$(ip netns exec $LAB-node-2 sysctl -n net.ipv4.ip_forward) = 1"
ino_after=$(stat -L -c %i "/run/netns/$LAB-node-2")
check "... the agent saw the new namespace (inode $ino_before, now $ino_after) and rebuilt its pinned state" \
	log_says "$(agent_log node-2)" "$off" 'pinned data-plane state .* is from another node or namespace: rebuilding' 'pinned data-plane'
check "... the old leases were released (their veths are gone)" \
	log_says "$(agent_log node-2)" "$off" 'start-up: 0 pod\(s\) kept, 2 lease\(s\) released' 'start-up:'
check "status lists b and f on node-2 with IPs" jq_status '[.pods[] | select(.node == "node-2" and .ip != null) | .name] | sort == ["b","f"]'
check "b has a new container ID" test "$(pod_field blue/b containerID)" != "$cid_b"
ip_b=$(pod_field blue/b ip) ip_f=$(pod_field blue/f ip)
check "b has $ip_b on eth0" grep -q "inet $ip_b/" <<<"$(in_pod blue/b ip -4 -o addr show dev eth0)"
check "b's IP is in node-2's subnet" bash -c "python3 -c 'import ipaddress,sys; sys.exit(ipaddress.ip_address(\"$ip_b\") not in ipaddress.ip_network(\"$sub_before\"))'"
check "node-2 has 2 leases" test "$(leases node-2)" = 2
check "a -> b (from node-1)" reaches blue/a "$ip_b"
check "b -> a (to node-1)" reaches blue/b "$ip_a"
check "e -> f (from node-1)" reaches blue/e "$ip_f"
check "b -> f (same node)" ping1 blue/b "$ip_f"
check "CNI CHECK blue/b passes" cni_check blue/b
check "CNI CHECK blue/f passes" cni_check blue/f
check "the controller's Pod records follow (new IPs and container IDs)" wait_for 20 records_match
check "... no duplicates" records_unique
kill -INT "$pinger"; wait "$pinger" 2>/dev/null
sent=$(grep -c 'bytes from' "$tmp/ping.log") lost=$(grep -c 'no answer yet' "$tmp/ping.log")
check "a <-> c on node-1 during the reboot: $sent replies, $lost lost" test "$sent" -ge 10 -a "$lost" -eq 0

# ---------------------------------------------------------------- state.json, then down
procs_alive() { # state.json records 5 daemons (controller, 2 agents, the 2 socats of the forwarder), all running
	local p
	for p in $(jq -r '.procs[].pid' "$LAB_DIR/state.json"); do alive "$p" || return 1; done
	test "$(jq -c '[.procs[].role] | sort' "$LAB_DIR/state.json")" = '["agent","agent","controller","forward","forward"]'
}
check "state.json's processes are the running daemons" procs_alive
check "down (no sanitizer report in any daemon's log)" lab down
check "down removed every namespace of the lab" test -z "$(ip netns list | awk '{print $1}' | grep -E "^$LAB-" || true)"
finish
