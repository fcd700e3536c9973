#!/usr/bin/env bash
# cnitool_reference.sh — the reference CNI client that cni_portmap.sh
# drives weft with is itself sound: build/tools/cnitool (built by
# scripts/cnitool.sh) drives Debian's reference plugins: a conflist of
# bridge + host-local + portmap, `cnitool add`, `check`, a port mapping
# that answers, then `del` leaves nothing behind.
#
# Everything happens in two network namespaces it creates (a "node" that
# runs cnitool and holds cni0 and the portmap rules, and a "pod"); the root
# namespace is not touched.  host-local keeps its leases in a temporary
# directory.  The trap removes the namespaces, the server it started (by
# PID) and its files, also on failure.
#
# When cni_portmap.sh fails and this passes, the fault is weft's, not the
# client's.
cd "$(dirname "$0")/../.." && source tests/lib.sh
CNI_BIN=${CNI_BIN:-/usr/lib/cni}

node=wcnit-node-$$
pod=wcnit-pod-$$
tmp=$(tmpdir)
srv_pid=
had_cache_dir=0
[ -d /var/lib/cni ] && had_cache_dir=1

cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
	# del again in case the test stopped between add and del (idempotent).
	if [ -e "/var/run/netns/$pod" ] && [ -e "/var/run/netns/$node" ]; then
		cni del >/dev/null 2>&1
		[ -f "$tmp/net.d/20-wcnit-np.conflist" ] && np del >/dev/null 2>&1
	fi
	ip netns del "$pod" 2>/dev/null
	ip netns del "$node" 2>/dev/null
	# libcni's cache: remove only the directories this test created, if empty.
	if [ "$had_cache_dir" = 0 ]; then
		rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null
	fi
	t_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cni() {
	ip netns exec "$node" env NETCONFPATH="$tmp/net.d" CNI_PATH="$CNI_BIN" \
		CAP_ARGS='{"portMappings":[{"hostPort":18080,"containerPort":8080,"protocol":"tcp"}]}' \
		CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=smoke' \
		"$CNITOOL" "$1" wcnit "/var/run/netns/$pod"
}

if [ "$(id -u)" -ne 0 ]; then
	fail "cnitool_reference needs root (network namespaces)"; finish; exit
fi
if ! CNITOOL=$(bash scripts/cnitool.sh 2>"$tmp/cnitool.err" | tail -n 1) || [ ! -x "$CNITOOL" ]; then
	fail "bash scripts/cnitool.sh builds the reference client" "$(tail -n 3 "$tmp/cnitool.err")"
	finish; exit
fi
for p in bridge host-local portmap; do
	[ -x "$CNI_BIN/$p" ] || { fail "$CNI_BIN/$p exists" "Debian package containernetworking-plugins"; finish; exit; }
done
command -v iptables >/dev/null || { fail "iptables exists" "Debian package iptables; the portmap plugin calls it"; finish; exit; }

mkdir -p "$tmp/net.d"
cat >"$tmp/net.d/10-wcnit.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "wcnit",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "10.244.1.0/24" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$tmp/ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON

ip netns add "$node"
ip netns add "$pod"
ip -n "$node" link set lo up

if out=$(cni add 2>&1); then pass "add"; else fail "add" "$out"; finish; exit; fi
ip=$(printf '%s' "$out" | jq -r '.ips[0].address' | cut -d/ -f1)
case $ip in 10.244.1.*) pass "add result has an IP ($ip)" ;; *) fail "add result" "$out" ;; esac

if ip -n "$pod" -4 addr show dev eth0 | grep -q "inet $ip/"; then pass "pod eth0 has $ip"; else fail "pod eth0"; fi
if ip netns exec "$pod" ping -c1 -W2 10.244.1.1 >/dev/null; then pass "pod reaches gateway"; else fail "pod reaches gateway"; fi

# containernetworking-plugins 1.1.1's portmap CHECK looks for an IPv6 DNAT
# chain that ADD never made for an IPv4-only pod and fails
# (containernetworking/plugins#819, fixed upstream after 1.1.1).  That is
# the plugin's bug, not the client's: accept exactly that failure here, and
# prove CHECK through cnitool on a bridge + host-local list further down.
if out=$(cni check 2>&1); then
	pass "check"
elif [[ $out == *"could not check ipv6 dnat"* ]]; then
	pass "check: portmap's known IPv4-only CHECK bug (plugins#819): $out"
else
	fail "check" "$out"
fi

if ip netns exec "$node" iptables -t nat -S 2>/dev/null | grep -q 'dport 18080'; then
	pass "portmap DNAT rule in node namespace"
else
	fail "portmap DNAT rule" "$(ip netns exec "$node" iptables -t nat -S 2>&1 | tail -5)"
fi
ip netns exec "$pod" socat TCP-LISTEN:8080,reuseaddr,fork SYSTEM:'echo weft-smoke' &
srv_pid=$!
reply=
for _ in $(seq 50); do
	reply=$(ip netns exec "$node" socat -T2 - TCP:10.244.1.1:18080 </dev/null 2>/dev/null) && [ -n "$reply" ] && break
	sleep 0.1
done
if [ "$reply" = weft-smoke ]; then pass "hostPort 18080 reaches the pod"; else fail "hostPort 18080" "reply '$reply'"; fi
kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; srv_pid=

if out=$(cni del 2>&1); then pass "del"; else fail "del" "$out"; fi
if ip -n "$pod" link show eth0 >/dev/null 2>&1; then fail "del removed eth0"; else pass "del removed eth0"; fi
if ip netns exec "$node" iptables -t nat -S 2>/dev/null | grep -q 'dport 18080'; then fail "del removed DNAT rule"; else pass "del removed DNAT rule"; fi
if compgen -G "$tmp/ipam/wcnit/10.*" >/dev/null; then fail "del released the lease"; else pass "del released the lease"; fi
if out=$(cni del 2>&1); then pass "del again is a no-op"; else fail "del again" "$out"; fi

# The same without portmap: add, check (must pass), del.
jq '.name = "wcnit-np" | .plugins |= [.[0]]' "$tmp/net.d/10-wcnit.conflist" >"$tmp/net.d/20-wcnit-np.conflist"
np() {
	ip netns exec "$node" env NETCONFPATH="$tmp/net.d" CNI_PATH="$CNI_BIN" \
		CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=smoke' \
		"$CNITOOL" "$1" wcnit-np "/var/run/netns/$pod"
}
if out=$(np add 2>&1); then pass "bridge+host-local: add"; else fail "bridge+host-local: add" "$out"; fi
if out=$(np check 2>&1); then pass "bridge+host-local: check"; else fail "bridge+host-local: check" "$out"; fi
ip -n "$pod" addr flush dev eth0 2>/dev/null
if out=$(np check 2>&1); then fail "check notices a removed address" "passed"; else pass "check notices a removed address"; fi
if out=$(np del 2>&1); then pass "bridge+host-local: del"; else fail "bridge+host-local: del" "$out"; fi
if ip -n "$pod" link show eth0 >/dev/null 2>&1; then fail "bridge+host-local: del removed eth0"; else pass "bridge+host-local: del removed eth0"; fi

finish
