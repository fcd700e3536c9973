#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters name $variables inside single quotes
# lease_damage.sh — damaged lease files never cut a pod off: with node-1's
# agent stopped, one pod's lease file gets garbage, another's is truncated,
# and a third pod's lease is copied to a free address below its own (so
# the lease directory names that pod twice, and the copy wins the tie).
# After the agent starts again:
#
#   a, c   their files are quarantined (<ip>.bad); their veths carry an
#          endpoint with that address, so the start-up GC keeps them, and
#          once the Pods are known the leases are written again from them
#   d      its MAC (0a:58:<IP>) says which address it holds: its own lease
#          comes back from quarantine, the copy is quarantined instead
#
# Every pod keeps its address and reaches the others throughout; the
# controller's Pod records stay the lab's pods; DEL still works.
#
# L is t<pid>-ld, so a demo lab left running ("weft") is not touched.
cd "$(dirname "$0")/../.." && source tests/lib.sh

export WEFT_BIN=${WEFT_BIN:-$BUILD/bin}
L=t$$-ld
LAB_DIR=/run/weft-lab/$L
LEASES=$LAB_DIR/node-1/state/leases
pod_field() { status_json | jq -r --arg p "$1" '.pods[] | select(.namespace + "/" + .name == $p) | .'"$2"; }
ping1() { ns "$1" ping -c1 -W1 "$2"; }
reaches() { wait_for 10 ping1 "$1" "$2"; }
log_size() { stat -c %s "$1"; }
# log_says OFFSET REGEX: node-1's agent log has a line matching REGEX after OFFSET
log_says() {
	tail -c +$(($1 + 1)) "$LAB_DIR/node-1/agent.log" | grep -qE -- "$2" && return 0
	echo "no /$2/ in node-1's agent log; its last lines:"
	tail -c +$(($1 + 1)) "$LAB_DIR/node-1/agent.log" | tail -n 6
	return 1
}
no_sanitizer_report() { ! tail -c +$(($1 + 1)) "$LAB_DIR/node-1/agent.log" | grep -E -A8 'ERROR: (Address|Leak)Sanitizer|runtime error:'; }
endpoints() { bpftool map dump pinned "$LAB_DIR/bpf/node-1/weft_endpoints" 2>/dev/null | grep -c '"key"'; }
has_addr() { ns "$1" ip -4 -o addr show dev eth0 | grep -q "inet $2/"; }
lease_of() { jq -r '.pod_namespace + "/" + .pod_name' "$LEASES/$1"; }	# lease_of IP: its owner
ctrl_pods() { lab weftctl get pods -A -o json | jq -c '[.items[] | select(.metadata.namespace == "blue") |
	[.metadata.name, .status.podIP, .metadata.annotations["weft.io/container-id"]]] | sort'; }
lab_pods() { status_json | jq -c '[.pods[] | [.name, .ip, .containerID]] | sort'; }
records_match() { test "$(ctrl_pods)" = "$(lab_pods)"; }
# settled IP OWNER: IP's lease file is back, names OWNER, and no .bad is left
settled() { [ -f "$LEASES/$1" ] && [ ! -e "$LEASES/$1.bad" ] && [ "$(lease_of "$1")" = "$2" ]; }

need_lab
command -v bpftool >/dev/null || { fail "prerequisites" "bpftool is not installed"; finish; exit 1; }
ld_cleanup() { src/lab/weft-lab --lab "$L" down >/dev/null 2>&1; t_cleanup; }
trap ld_cleanup EXIT

must lab up --nodes 1
for p in a b c d; do must lab pod add node-1 blue "$p"; done
ip_a=$(pod_field blue/a ip) ip_b=$(pod_field blue/b ip) ip_c=$(pod_field blue/c ip) ip_d=$(pod_field blue/d ip)
check "pod del blue/b (its address, below d's, is free now)" lab pod del blue/b
check "the controller's Pod records are the lab's pods" wait_for 20 records_match
before=$(lab_pods)

echo "# damage: garbage in a's lease, c's truncated, d's copied to $ip_b"
must lab agent stop node-1
printf 'not a lease {' >"$LEASES/$ip_a"
: >"$LEASES/$ip_c"
cp -p "$LEASES/$ip_d" "$LEASES/$ip_b"
off=$(log_size "$LAB_DIR/node-1/agent.log")
check "agent start node-1" lab agent start node-1

echo "# the start-up GC keeps every pod"
check "a's veth kept: its address is quarantined" log_says "$off" "carries $ip_a, whose lease file is quarantined: kept"
check "c's veth kept: its address is quarantined" log_says "$off" "carries $ip_c, whose lease file is quarantined: kept"
check "d's own lease restored, the copy at $ip_b quarantined" \
	log_says "$off" "blue/d holds $ip_d \(its MAC says so\), but the lease of $ip_b named it too"
check "no interface removed, no lease released" log_says "$off" 'start-up: 1 pod\(s\) kept, 0 lease\(s\) released, 0 orphan'
check "d's lease is at $ip_d, naming blue/d" test "$(lease_of "$ip_d")" = blue/d
check "the copy is quarantined as $ip_b.bad, and $ip_b is no lease" test -f "$LEASES/$ip_b.bad" -a ! -e "$LEASES/$ip_b"
for p in a:$ip_a c:$ip_c d:$ip_d; do
	check "${p%%:*} still has ${p#*:} on eth0" has_addr "blue/${p%%:*}" "${p#*:}"
done
check "a -> c" reaches blue/a "$ip_c"
check "c -> d" reaches blue/c "$ip_d"
check "d -> a" reaches blue/d "$ip_a"
check "the node reaches a" wait_for 10 ns node-1 ping -c1 -W1 "$ip_a"
check "three endpoints in the data plane" test "$(endpoints)" = 3

echo "# once the Pods are known, a's and c's leases are written again from them"
check "a's lease is back (no .bad left)" wait_for 30 settled "$ip_a" blue/a
check "c's lease is back (no .bad left)" wait_for 30 settled "$ip_c" blue/c
check "... the log says so for a" log_says "$off" "pod blue/a \($ip_a\): its lease file was quarantined; written again from its Pod"
check "... and for c" log_says "$off" "pod blue/c \($ip_c\): its lease file was quarantined; written again from its Pod"
check "the controller's Pod records are still the lab's pods" wait_for 20 records_match
check "the lab's pods are as before" test "$(lab_pods)" = "$before"
check "a -> d after the leases came back" reaches blue/a "$ip_d"

echo "# DEL works on every pod that went through it"
check "pod del blue/a" lab pod del blue/a
check "... its lease is gone" test ! -e "$LEASES/$ip_a"
check "pod del blue/d" lab pod del blue/d
check "... its lease is gone, the copy stays quarantined" test ! -e "$LEASES/$ip_d" -a -f "$LEASES/$ip_b.bad"
check "one endpoint left (c's)" test "$(endpoints)" = 1
check "c -> node-1's gateway still" reaches blue/c "$(ns blue/c ip -4 route show default | awk '{print $3; exit}')"
check "no sanitizer report in node-1's agent log" no_sanitizer_report "$off"
check "down" lab down
finish
