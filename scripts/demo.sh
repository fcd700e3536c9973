#!/usr/bin/env bash
# demo.sh — what `make demo` runs: a three-node weft cluster in network
# namespaces (weft-lab) in multitenant mode, five pods across the nodes
# through the real CNI plugin — two isolated projects (blue, red) and the
# global one (default) — and a connectivity matrix measured with ping: every
# cell is a ping that was sent, not a claim.  The lab is left running to
# explore; `bin/weft-lab down` removes it.
#
#   make demo                      (multitenant) projects isolated from each
#                                  other by VNID; default reaches and is reached by all
#   MODE=flat make demo            every pod reaches every pod
#
#           blue/a  red/d    blue/b  default/e    red/c
#              \    /           \    /             |
#             node-1           node-2           node-3        ctrl    outside
#               |                 |                |            |        |
#   ============================ underlay bridge 192.168.200.0/24 ============
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

lab=bin/weft-lab
[ -x "$lab" ] || lab=src/lab/weft-lab
name=${WEFT_LAB:-weft}
mode=${MODE:-multitenant}
pods=(blue/a blue/b red/c red/d default/e)
nodes=(node-1 node-2 node-3 node-1 node-2)
outside=192.168.200.254

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

if [ -e "/run/weft-lab/$name" ]; then
	echo "A demo lab '$name' is already up:"
	"$lab" status 2>&1 | sed 's/^/  /'
	if [ -t 0 ] && [ -t 1 ]; then
		printf 'Remove it (weft-lab down) and build a new one? [y/N] '
		read -r answer
		case $answer in
		y | Y | yes) run "$lab" down || exit 1 ;;
		*) echo "Left as it is.  Remove it yourself with: $lab down"; exit 1 ;;
		esac
	else
		echo "Remove it with: $lab down   (then run make demo again)"
		exit 1
	fi
fi

step "build the lab: underlay bridge, controller, 3 nodes with their agents (mode $mode)"
run "$lab" up --nodes 3 --mode "$mode" || exit 1

step "create 5 pods in 3 projects (blue, red, default) through each node's CNI chain (weft, portmap)"
for i in "${!pods[@]}"; do
	run "$lab" pod add "${nodes[$i]}" "${pods[$i]%/*}" "${pods[$i]#*/}" || {
		echo "pod add failed; the lab is left up to look at (bin/weft-lab status; logs in /run/weft-lab/$name)"
		exit 1
	}
done

step "what the lab is made of"
run "$lab" status
run "$lab" weftctl get netnamespaces

# ip of each pod, from the lab's status
declare -A ip
while read -r p addr; do ip[$p]=$addr; done < <("$lab" status -o json | jq -r '.pods[] | "\(.namespace)/\(.name) \(.ip)"')

step "connectivity, measured: ping -c1 -W1 from each pod (rows) to each pod and to outside (columns)"
results=$(mktemp -d /tmp/weft-demo.XXXXXX)
trap 'rm -rf "$results"' EXIT
targets=("${pods[@]}" outside)
for src in "${pods[@]}"; do
	for dst in "${targets[@]}"; do
		[ "$src" = "$dst" ] && continue
		if [ "$dst" = outside ]; then addr=$outside; else addr=${ip[$dst]}; fi
		( if "$lab" exec "$src" -- ping -c1 -W1 -q "$addr" >/dev/null 2>&1; then echo ok; else echo no; fi \
			>"$results/${src/\//_}.${dst/\//_}" ) &
	done
done
wait
printf '%-11s' 'from\to'
for dst in "${targets[@]}"; do printf '%-11s' "$dst"; done
printf '\n'
for src in "${pods[@]}"; do
	printf '%-11s' "$src"
	for dst in "${targets[@]}"; do
		if [ "$src" = "$dst" ]; then printf '%-11s' '.'; else printf '%-11s' "$(cat "$results/${src/\//_}.${dst/\//_}")"; fi
	done
	printf '\n'
done
list=""
for p in "${pods[@]}"; do list+="$p ${ip[$p]}, "; done
echo "(pod IPs: ${list%, }; outside $outside, reachable only through the nodes' masquerade)"

# what the mode promises, against what was measured.  Multitenant: a pod of
# VNID a reaches a pod of VNID b iff a == b or either is 0 (the namespace
# default is 0: global; every other namespace has its own VNID).
mismatch=()
for src in "${pods[@]}"; do
	for dst in "${targets[@]}"; do
		[ "$src" = "$dst" ] && continue
		want=ok
		[ "$mode" = multitenant ] && [ "$dst" != outside ] && [ "${src%/*}" != "${dst%/*}" ] &&
			[ "${src%/*}" != default ] && [ "${dst%/*}" != default ] && want=no
		got=$(cat "$results/${src/\//_}.${dst/\//_}")
		[ "$got" = "$want" ] || mismatch+=("$src -> $dst: expected $want, measured $got")
	done
done
if [ ${#mismatch[@]} -eq 0 ]; then
	case $mode in
	multitenant) echo "As $mode mode promises: pods reach pods of their own project on any node (blue <-> blue, red <-> red),"
		echo "not the other project's (blue <-> red refused, both ways, on one node and across nodes);"
		echo "default is global: it reaches and is reached by every project; all reach outside." ;;
	*) echo "As $mode mode promises: every pod reaches every pod on any node, and the outside." ;;
	esac
else
	echo "Differs from what $mode mode promises:"
	printf '  %s\n' "${mismatch[@]}"
fi

step "the lab keeps running: explore it"
explore() { printf '  %-62s %s\n' "$1" "$2"; }
explore "$lab status" "nodes, subnets, pods (-o json for scripts)"
explore "$lab exec blue/a -- ping -c3 ${ip[blue/b]:-IP}" "run anything inside a pod"
explore "$lab exec node-1 -- ip route" "... or inside a node (or ctrl, outside)"
explore "$lab weftctl get pods -A" "the controller's view"
explore "$lab weftctl get netnamespaces" "projects and their VNIDs"
explore "$lab weftctl pod-network join-projects --to=blue red" "red takes blue's VNID: ping blue <-> red again"
explore "$lab weftctl pod-network isolate-projects red" "... and red is on its own again"
explore "$lab weftctl drops" "packets the data plane refused, per node and reason"
explore "$lab pod add node-2 green f" "one more pod (a third project)"
explore "$lab down" "remove the lab (everything it made)"
