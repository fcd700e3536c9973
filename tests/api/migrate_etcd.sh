#!/usr/bin/env bash
# migrate_etcd.sh — a cluster on SQLite moved to etcd with
# `weft-controller --migrate-to`: every object and every allocation (node
# IDs and subnets, VNIDs, cluster IPs, pod addresses) is kept, a
# resourceVersion from before is 410 (clients list again), allocation goes
# on without reusing anything, fsck is clean, and a second migration into
# the non-empty etcd is refused without touching it.
#
#   weft-controller (SQLite, DIR/weft.db) ── stop ──► --migrate-to etcd://... ──► weft-controller --store etcd://...
cd "$(dirname "$0")/../.." && source tests/lib.sh

command -v etcd >/dev/null || { fail "etcd is installed (scripts/deps.sh installs etcd-server)"; finish; exit 1; }
dir=$(tmpdir)
edir=$(tmpdir)
start_etcd "$edir" || { fail "etcd starts"; finish; exit 1; }
start_controller "$dir" || { fail "the SQLite controller starts"; finish; exit 1; }

python3 tests/tools/api_writer.py "$CTRL_URL" "$CTRL_TOKEN_FILE" 120 "$dir/acks" 0
for i in 1 2 3 4 5; do
	api POST /api/v1/namespaces -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"m$i\"}}" >/dev/null
	api POST /api/v1/namespaces/default/services \
		-d "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s$i\"},\"spec\":{\"type\":\"NodePort\",\"ports\":[{\"port\":80}]}}" >/dev/null
done
# what must survive: every allocation, by object
snapshot() {
	{
		api GET /apis/network.openshift.io/v1/hostsubnets | body_of | jq -c '[.items[] | [.metadata.name, .nodeID, .subnet, .hostIP]] | sort'
		api GET /apis/network.openshift.io/v1/netnamespaces | body_of | jq -c '[.items[] | [.metadata.name, .netid]] | sort'
		api GET /api/v1/services | body_of | jq -c '[.items[] | [.metadata.name, .spec.clusterIP, (.spec.ports[0].nodePort // 0)]] | sort'
		api GET /api/v1/pods | body_of | jq -c '[.items[] | [.metadata.name, .spec.nodeName, .status.podIP]] | sort'
	}
}
snapshot >"$dir/before"
rv=$(api GET /api/v1/namespaces | body_of | jq -r .metadata.resourceVersion)
check "the SQLite cluster holds 30 nodes, 5 services, 90 pods" \
	test "$(jq -rs '[(.[0] | length), (.[2] | length), (.[3] | length)] | map(tostring) | join(" ")' "$dir/before")" = "30 5 90"
check_stop "the SQLite controller stops"

out=$("$CONTROLLER" --data-dir "$dir" --migrate-to "$ETCD_URL" 2>&1); rc=$?
check "--migrate-to etcd exits 0" test "$rc" -eq 0
check "... and says what it copied" grep -qE "^migrated [0-9]+ keys of sqlite:.*into $ETCD_URL, now at revision [0-9]+" <<<"$out"
out=$("$CONTROLLER" --data-dir "$dir" --migrate-to "$ETCD_URL" 2>&1); rc=$?
check "a second migration into the same etcd is refused" test "$rc" -ne 0
check "... saying it is not empty" grep -q "already holds" <<<"$out"

start_controller "$dir" --store "$ETCD_URL" || { fail "the controller starts on etcd"; finish; exit 1; }
snapshot >"$dir/after"
check "every object and allocation is there, the same" cmp "$dir/before" "$dir/after"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")" \
	"$CTRL_URL/api/v1/namespaces?watch=1&resourceVersion=$rv")
check "a watch from a resourceVersion of the SQLite store ($rv) is 410: list again" test "$code" = 410
check "fsck of the etcd store is clean" "$CONTROLLER" --data-dir "$dir" --store "$ETCD_URL" --fsck
check "a new namespace after the move" test "$(api POST /api/v1/namespaces \
	-d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"after-move"}}' | code_of)" = 201
netid=$(api GET /apis/network.openshift.io/v1/netnamespaces/after-move | body_of | jq .netid)
check "... gets a VNID ($netid) no namespace had" jq -e --argjson n "${netid:-null}" \
	'$n != null and ([.[] | .[1]] | index($n) | not)' <(sed -n 2p "$dir/before")
check "a new node after the move" test "$(api POST /api/v1/nodes \
	-d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"after-move"},"status":{"addresses":[{"type":"InternalIP","address":"10.99.0.1"}]}}' | code_of)" = 201
id=$(api GET /apis/network.openshift.io/v1/hostsubnets/after-move | body_of | jq .nodeID)
check "... gets a node ID ($id) no node had" jq -e --argjson n "${id:-null}" \
	'$n != null and ([.[] | .[1]] | index($n) | not)' <(sed -n 1p "$dir/before")
check_stop "the controller on etcd stops cleanly"
finish
