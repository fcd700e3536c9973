#!/usr/bin/env bash
# selectors_watch.sh — Kubernetes' list and watch conventions over the real
# API: labelSelector and fieldSelector on lists and watches of pods and
# services (a label change is a DELETED for a watch it leaves, an ADDED for
# one it enters), changes=network (what an agent watches with), the watch of one object, a resourceVersion from the
# future, timeoutSeconds past any bound, BOOKMARKs, paging with limit and
# continue at one revision, and an expired continue token.
#
#   curl ──HTTPS──► weft-controller --bookmark-interval 1 ──► DIR/weft.db
#   curl ──HTTPS──► weft-controller --history 2 --compact-interval 1 (expiry)
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" --bookmark-interval 1 || { fail "controller starts"; finish; exit 1; }
TOKEN=$(cat "$CTRL_TOKEN_FILE")

pod() { # pod NAME NODE|- APP|- : a Pod in default, JSON
	local spec='{}' labels='{}'
	[ "$2" = - ] || spec="{\"nodeName\":\"$2\"}"
	[ "$3" = - ] || labels="{\"app\":\"$3\"}"
	echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"labels\":$labels},\"spec\":$spec}"
}
put_pod() { api PUT "/api/v1/namespaces/default/pods/$1" -d "$(pod "$@")" | code_of; }
svc() { echo "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"$1\",\"labels\":{\"tier\":\"$2\"}},\"spec\":{\"ports\":[{\"port\":80}]}}"; }
# names PATH [curl args]: the names a list answers, sorted, joined by spaces
names() {
	local p=$1; shift
	api GET "$p" -G "$@" | body_of | jq -r '[.items[].metadata.name] | sort | join(" ")'
}
# status PATH [curl args]: "CODE REASON" of the answer (a watch that is
# answered with a stream instead gives up after 10 s: "000")
status() {
	local p=$1 res; shift
	res=$(api GET "$p" -G -m 10 "$@")
	echo "$(code_of <<<"$res") $(body_of <<<"$res" | jq -r .reason 2>/dev/null)"
}
# watch_start NAME PATH [curl args]: a watch stream into $dir/NAME until the
# script ends (or timeoutSeconds); WPID is its curl.  Returns once it is open.
watch_start() {
	local name=$1 p=$2; shift 2
	curl -sN -G -D "$dir/$name.h" -H "Authorization: Bearer $TOKEN" "$@" "$CTRL_URL$p" >"$dir/$name" &
	WPID=$!
	T_PIDS+=("$WPID")
	watch_open "$dir/$name.h"
}
# events NAME: "TYPE name" a line for every event the stream carried
events() { jq -r '.type + " " + (.object.metadata.name // "")' "$dir/$1"; }
# events_are NAME WANT: the stream carried exactly WANT (events joined by ',')
events_are() { [ "$(events "$1" | paste -sd, -)" = "$2" ] || { echo "got: $(events "$1" | paste -sd, -)"; return 1; }; }
has_events() { [ "$(events "$1" | grep -c .)" -ge "$2" ]; }
rev_now() { api GET /api/v1/namespaces | body_of | jq -r .metadata.resourceVersion; }

echo "== selectors on lists"
for p in a:node-1:web b:node-1:db c:node-2:web d:-:cache; do
	IFS=: read -r n node app <<<"$p"
	api POST /api/v1/namespaces/default/pods -d "$(pod "$n" "$node" "$app")" >/dev/null
done
api POST /api/v1/namespaces/default/services -d "$(svc web front)" >/dev/null
api POST /api/v1/namespaces/default/services -d "$(svc web-lb front)" >/dev/null
api POST /api/v1/namespaces/default/services -d "$(svc web-np back)" >/dev/null
check "labelSelector app=web lists a and c" test "$(names /api/v1/pods --data-urlencode labelSelector=app=web)" = "a c"
check "labelSelector app==web, in a namespace" test "$(names /api/v1/namespaces/default/pods --data-urlencode labelSelector=app==web)" = "a c"
check "labelSelector app!=web (and pods without the label)" test "$(names /api/v1/pods --data-urlencode 'labelSelector=app!=web')" = "b d"
check "labelSelector app in (db,cache)" test "$(names /api/v1/pods --data-urlencode 'labelSelector=app in (db,cache)')" = "b d"
check "labelSelector app notin (web)" test "$(names /api/v1/pods --data-urlencode 'labelSelector=app notin (web)')" = "b d"
check "labelSelector app (exists), !app (none)" \
	eval '[ "$(names /api/v1/pods --data-urlencode labelSelector=app)" = "a b c d" ] && [ -z "$(names /api/v1/pods --data-urlencode labelSelector=!app)" ]'
check "fieldSelector spec.nodeName=node-1" test "$(names /api/v1/pods --data-urlencode fieldSelector=spec.nodeName=node-1)" = "a b"
check "fieldSelector spec.nodeName!=node-1" test "$(names /api/v1/pods --data-urlencode 'fieldSelector=spec.nodeName!=node-1')" = "c d"
check "fieldSelector spec.nodeName= (unscheduled)" test "$(names /api/v1/pods --data-urlencode fieldSelector=spec.nodeName=)" = "d"
check "both: app=web and spec.nodeName=node-2" \
	test "$(names /api/v1/pods --data-urlencode labelSelector=app=web --data-urlencode fieldSelector=spec.nodeName=node-2)" = "c"
check "fieldSelector metadata.name, metadata.namespace" \
	eval '[ "$(names /api/v1/pods --data-urlencode fieldSelector=metadata.name=b)" = b ] &&
	      [ "$(names /api/v1/pods --data-urlencode fieldSelector=metadata.namespace=kube-system)" = "" ]'
check "services: labelSelector tier=front" test "$(names /api/v1/namespaces/default/services --data-urlencode labelSelector=tier=front)" = "web web-lb"
check "services: fieldSelector metadata.name=web (not web-lb)" test "$(names /api/v1/services --data-urlencode fieldSelector=metadata.name=web)" = "web"
rv_list=$(api GET /api/v1/pods -G --data-urlencode labelSelector=app=web | body_of | jq -r .metadata.resourceVersion)
check "a filtered list has the list's resourceVersion" test "$rv_list" = "$(rev_now)"
res=$(api GET /api/v1/pods -G --data-urlencode 'labelSelector=app in (web')
check "malformed labelSelector: 400 naming it" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "labelSelector '"'"'app in (web'"'"'" <<<"$res"'
res=$(api GET /api/v1/services -G --data-urlencode fieldSelector=spec.nodeName=node-1)
check "services have no spec.nodeName: 400, field label not supported" \
	eval '[ "$(code_of <<<"$res")" = 400 ] && grep -qF "field label not supported: spec.nodeName" <<<"$res"'
check "fieldSelector status.phase: 400, never ignored" test "$(status /api/v1/pods --data-urlencode fieldSelector=status.phase=Running)" = "400 BadRequest"
check "labelSelector with a bad value: 400" test "$(status /api/v1/pods --data-urlencode 'labelSelector=app=-x')" = "400 BadRequest"
long=$(printf 'a%.0s' $(seq 5000))
check "a 5000-byte selector: 400" test "$(status /api/v1/pods --data-urlencode "labelSelector=$long")" = "400 BadRequest"

echo "== selectors on watches"
rv=$(rev_now)
watch_start node1 /api/v1/pods -d watch=1 -d "resourceVersion=$rv" --data-urlencode fieldSelector=spec.nodeName=node-1 ||
	fail "the node-1 watch opens"
watch_start web /api/v1/namespaces/default/pods -d watch=1 -d "resourceVersion=$rv" --data-urlencode labelSelector=app=web ||
	fail "the app=web watch opens"
watch_start front /api/v1/services -d watch=1 -d "resourceVersion=$rv" --data-urlencode labelSelector=tier=front ||
	fail "the tier=front watch opens"
put_pod b node-2 db >/dev/null		# b leaves node-1
put_pod d node-1 web >/dev/null		# d comes to node-1 and becomes web
rv_a=$(api PUT /api/v1/namespaces/default/pods/a -d "$(pod a node-1 db)" | body_of | jq -r .metadata.resourceVersion)	# a stays on node-1, leaves web
api POST /api/v1/namespaces/default/pods -d "$(pod e node-3 other)" >/dev/null	# nobody's
api PUT /api/v1/namespaces/default/services/web-np -d "$(svc web-np front)" >/dev/null
api DELETE /api/v1/namespaces/default/pods/d >/dev/null
check "node-1 watch: DELETED b (moved away), ADDED d, MODIFIED a, DELETED d" \
	eval 'wait_for 10 has_events node1 4 && events_are node1 "DELETED b,ADDED d,MODIFIED a,DELETED d"'
check "app=web watch: ADDED d (label changed into it), DELETED a (out of it), DELETED d" \
	eval 'wait_for 10 has_events web 3 && events_are web "ADDED d,DELETED a,DELETED d"'
check "tier=front watch of services: ADDED web-np" eval 'wait_for 10 has_events front 1 && events_are front "ADDED web-np"'
check "the DELETED of a label change carries the object as it was, at the change's revision" \
	eval '[ "$(jq -r "select(.type==\"DELETED\" and .object.metadata.name==\"a\") | .object.metadata.labels.app" "$dir/web")" = web ] &&
	      [ "$(jq -r "select(.type==\"DELETED\" and .object.metadata.name==\"a\") | .object.metadata.resourceVersion" "$dir/web")" = "$rv_a" ]'
curl -sN -m 3 -G -H "Authorization: Bearer $TOKEN" -d watch=1 --data-urlencode labelSelector=app=db \
	"$CTRL_URL/api/v1/namespaces/default/pods" >"$dir/initial" || true
check "a filtered watch without resourceVersion starts with only what it selects" events_are initial "ADDED a,ADDED b"
check "a watch with a malformed selector: 400" \
	test "$(status /api/v1/pods -d watch=1 --data-urlencode 'labelSelector=x in (')" = "400 BadRequest"
check "a watch with an unsupported field: 400" \
	test "$(status /api/v1/pods -d watch=1 --data-urlencode fieldSelector=spec.host=x)" = "400 BadRequest"

echo "== changes=network: updates that change nothing a node's network reads are not sent"
rv=$(rev_now)
watch_start netpods /api/v1/namespaces/default/pods -d watch=1 -d "resourceVersion=$rv" -d changes=network ||
	fail "the changes=network watch of pods opens"
watch_start allpods /api/v1/namespaces/default/pods -d watch=1 -d "resourceVersion=$rv" || fail "the plain watch opens"
ann_pod() { # ann_pod NAME KEY=VALUE: the pod as it is, with one more annotation
	api GET "/api/v1/namespaces/default/pods/$1" | body_of |
		jq -c --arg k "${2%%=*}" --arg v "${2#*=}" 'del(.metadata.resourceVersion) | .metadata.annotations[$k] = $v'
}
api PUT /api/v1/namespaces/default/pods/b -d "$(ann_pod b note=one)" >/dev/null	# an annotation: nothing
api PUT /api/v1/namespaces/default/pods/b -d "$(ann_pod b weft.io/container-id=c1)" >/dev/null	# the container: sent
api PUT /api/v1/namespaces/default/pods/c -d "$(pod c node-2 db)" >/dev/null	# a label: sent
api POST /api/v1/namespaces/default/pods -d "$(pod f node-1 web)" >/dev/null	# a new pod: sent
api DELETE /api/v1/namespaces/default/pods/f >/dev/null	# its deletion: sent
check "the plain watch gets all 5 events" eval 'wait_for 10 has_events allpods 5 && events_are allpods "MODIFIED b,MODIFIED b,MODIFIED c,ADDED f,DELETED f"'
check "changes=network: the annotation change is not sent, the other 4 are" \
	eval 'wait_for 10 has_events netpods 4 && events_are netpods "MODIFIED b,MODIFIED c,ADDED f,DELETED f"'
node_json() { echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\",\"annotations\":{\"weft.io/drops\":\"$2\"}},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$3\"}]}}"; }
api PUT /api/v1/nodes/nw-1 -d "$(node_json nw-1 0 192.0.2.71)" >/dev/null
rv=$(rev_now)
watch_start netnodes /api/v1/nodes -d watch=1 -d "resourceVersion=$rv" -d changes=network || fail "the changes=network watch of nodes opens"
api PUT /api/v1/nodes/nw-1 -d "$(node_json nw-1 5 192.0.2.71)" >/dev/null	# an agent's report: nothing
api PUT /api/v1/nodes/nw-1 -d "$(node_json nw-1 5 192.0.2.72)" >/dev/null	# a new InternalIP: sent
check "nodes, changes=network: a report annotation is not sent, a new address is" \
	eval 'wait_for 10 has_events netnodes 1 && events_are netnodes "MODIFIED nw-1" &&
	      [ "$(jq -r .object.status.addresses[0].address "$dir/netnodes")" = 192.0.2.72 ]'
check "changes=bogus: 400 naming the parameter" \
	eval '[ "$(status /api/v1/pods -d watch=1 -d changes=bogus)" = "400 BadRequest" ] &&
	      api GET /api/v1/pods -G -d watch=1 -d changes=bogus | body_of | jq -e ".message | test(\"changes\")" >/dev/null'

echo "== a watch of one object"
rv=$(rev_now)
watch_start one /api/v1/namespaces/default/services/web -d watch=1 -d "resourceVersion=$rv" || fail "the watch of web opens"
watch_start byname /api/v1/namespaces/default/services -d watch=1 -d "resourceVersion=$rv" \
	--data-urlencode fieldSelector=metadata.name=web || fail "the watch of name=web opens"
for s in web-lb web-np web; do api PUT "/api/v1/namespaces/default/services/$s" -d "$(svc "$s" changed)" >/dev/null; done
check "services/web?watch=1 streams web only, not web-lb or web-np" eval 'wait_for 10 has_events one 1 && events_are one "MODIFIED web"'
check "fieldSelector=metadata.name=web on the collection: the same" eval 'wait_for 10 has_events byname 1 && events_are byname "MODIFIED web"'
curl -sN -m 2 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/namespaces/default/services/web?watch=1" >"$dir/one-initial" || true
check "... and without resourceVersion it starts with that object alone" events_are one-initial "ADDED web"

echo "== resourceVersion from the future"
now=$(rev_now)
future=$((now + 3))
res=$(curl -s -D "$dir/504.h" -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/pods?resourceVersion=$future")
check "a list at a future resourceVersion: 504 Timeout, Too large resource version" \
	eval '[ "$(jq -r .code <<<"$res") $(jq -r .reason <<<"$res")" = "504 Timeout" ] && grep -qF "Too large resource version: $future, current: $now" <<<"$res"'
check "... with details.retryAfterSeconds 1 and a Retry-After header" \
	eval '[ "$(jq -r .details.retryAfterSeconds <<<"$res")" = 1 ] && grep -qi "^Retry-After: 1" "$dir/504.h"'
check "a get at a future resourceVersion: 504 too" test "$(status /api/v1/namespaces/default/pods/a -d "resourceVersion=$future")" = "504 Timeout"
check "a list at the current resourceVersion: 200" test "$(status /api/v1/pods -d "resourceVersion=$now" | cut -d' ' -f1)" = 200
watch_start future /api/v1/namespaces/default/pods -d watch=1 -d "resourceVersion=$future" ||
	fail "a watch from a future revision opens (200)"
fpid=$WPID
for i in 1 2 3 4; do put_pod "f$i" - - >/dev/null; done
check "a watch from a future revision waits for it: only what comes after it streams" \
	eval 'wait_for 10 has_events future 1 && events_are future "ADDED f4"'
check "... and it is still open" kill -0 "$fpid"

echo "== timeoutSeconds"
watch_start huge /api/v1/pods -d watch=1 -d "resourceVersion=$(rev_now)" -d timeoutSeconds=99999999999999999999 ||
	fail "a watch with a huge timeoutSeconds opens"
hpid=$WPID
start_ms=$(( $(date +%s%N) / 1000000 ))
open_past_2s() { # poll: the stream must stay open for 2.5 s
	while [ $(( $(date +%s%N) / 1000000 - start_ms )) -lt 2500 ]; do
		kill -0 "$hpid" 2>/dev/null || return 1
		sleep 0.05
	done
}
check "timeoutSeconds=99999999999999999999: the watch stays open past 2 s" open_past_2s
put_pod late - - >/dev/null
check "... and still streams" eval 'wait_for 10 has_events huge 1 && events_are huge "ADDED late"'
check "timeoutSeconds=-1: 400" test "$(status /api/v1/pods -d watch=1 -d timeoutSeconds=-1)" = "400 BadRequest"
check "timeoutSeconds=ten: 400" test "$(status /api/v1/pods -d watch=1 -d timeoutSeconds=ten)" = "400 BadRequest"
t0=$(date +%s%N)
curl -sN -m 10 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/pods?watch=1&resourceVersion=$(rev_now)&timeoutSeconds=1" >/dev/null || true
check "timeoutSeconds=1 still ends the watch within 1-4 s" test $(( ($(date +%s%N) - t0) / 1000000 )) -lt 4000

echo "== bookmarks"
watch_start bm /api/v1/namespaces/default/pods -d watch=1 -d "resourceVersion=$(rev_now)" -d allowWatchBookmarks=true \
	--data-urlencode labelSelector=app=nothing || fail "the watch with bookmarks opens"
watch_start nobm /api/v1/namespaces/default/pods -d watch=1 -d "resourceVersion=$(rev_now)" \
	--data-urlencode labelSelector=app=nothing || fail "the watch without bookmarks opens"
api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"elsewhere"}}' >/dev/null
target=$(rev_now)
bookmark_at_least() { jq -r 'select(.type=="BOOKMARK") | .object.metadata.resourceVersion' "$dir/bm" | awk -v t="$1" '$1 >= t {ok=1} END {exit !ok}'; }
check "an idle watch with allowWatchBookmarks=true gets a BOOKMARK of the revision it may resume from" \
	wait_for 10 bookmark_at_least "$target"
check "the BOOKMARK's object has kind, apiVersion and metadata.resourceVersion only" \
	test "$(jq -c 'select(.type=="BOOKMARK") | .object | del(.metadata.resourceVersion)' "$dir/bm" | head -n 1)" = '{"kind":"Pod","apiVersion":"v1","metadata":{}}'
api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"elsewhere2"}}' >/dev/null
check "a second one after another write" wait_for 10 bookmark_at_least "$(rev_now)"
check "without allowWatchBookmarks none is sent (two bookmark intervals later)" \
	test "$(jq -r 'select(.type=="BOOKMARK") | .type' "$dir/nobm" | grep -c .)" = 0
bmrv=$(jq -r 'select(.type=="BOOKMARK") | .object.metadata.resourceVersion' "$dir/bm" | tail -n 1)
curl -sN -m 2 -H "Authorization: Bearer $TOKEN" "$CTRL_URL/api/v1/namespaces/default/pods?watch=1&resourceVersion=$bmrv" >"$dir/resumed" || true
check "a watch resumed from the bookmark's revision gets nothing old" test "$(events resumed | grep -c .)" = 0
check "allowWatchBookmarks=maybe: 400" test "$(status /api/v1/pods -d watch=1 -d allowWatchBookmarks=maybe)" = "400 BadRequest"

echo "== paging"
api POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"paged"}}' >/dev/null
for i in $(seq -w 1 25); do
	api POST /api/v1/namespaces/paged/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p$i\"}}" >/dev/null
done
page() { api GET /api/v1/namespaces/paged/pods -G -d limit=10 ${1:+--data-urlencode "continue=$1"} | body_of; }
p1=$(page)
c1=$(jq -r '.metadata.continue // ""' <<<"$p1")
check "limit=10: 10 items, a continue token, remainingItemCount 15" \
	test "$(jq -r '"\(.items | length) \(.metadata.remainingItemCount)"' <<<"$p1") $([ -n "$c1" ] && echo token)" = "10 15 token"
api DELETE /api/v1/namespaces/paged/pods/p15 >/dev/null
api POST /api/v1/namespaces/paged/pods -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p99"}}' >/dev/null
p2=$(page "$c1")
c2=$(jq -r '.metadata.continue // ""' <<<"$p2")
check "the second page: the next 10, at the first page's resourceVersion (p15 deleted since is there)" \
	test "$(jq -r '"\(.metadata.resourceVersion) \(.items | length) \(.metadata.remainingItemCount) \(.items[4].metadata.name)"' <<<"$p2")" = \
	     "$(jq -r .metadata.resourceVersion <<<"$p1") 10 5 p15"
p3=$(page "$c2")
check "the third page: the last 5, no continue, no remainingItemCount (p99, made since, is not)" \
	test "$(jq -r '"\(.items | length) \(.metadata.continue // "none") \(.metadata.remainingItemCount // "none") \(.items[-1].metadata.name)"' <<<"$p3")" = "5 none none p25"
check "the three pages are the 25 objects, each once" \
	test "$(jq -sr '[.[].items[].metadata.name] | unique | length' <<<"$p1$p2$p3")" = 25
check "limit with a selector: at most limit items, no remainingItemCount" \
	test "$(api GET /api/v1/pods -G -d limit=1 --data-urlencode labelSelector=app=db | body_of | jq -r '"\(.items | length) \(.metadata.remainingItemCount // "none") \(.metadata.continue != null)"')" = "1 none true"
check "a malformed continue token: 400" test "$(status /api/v1/namespaces/paged/pods --data-urlencode continue=not-a-token)" = "400 BadRequest"
check "continue with a resourceVersion: 400" test "$(status /api/v1/namespaces/paged/pods -d resourceVersion=5 --data-urlencode "continue=$c1")" = "400 BadRequest"
check "limit=-1: 400" test "$(status /api/v1/pods -d limit=-1)" = "400 BadRequest"
check_stop "controller stops cleanly with watches open (no sanitizer report)"

echo "== an expired continue token"
dir2=$(tmpdir)
start_controller "$dir2" --history 2 --compact-interval 1 || fail "start with short history"
for i in 1 2 3 4 5; do api POST /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x$i\"}}" >/dev/null; done
token=$(api GET /api/v1/namespaces/default/pods -G -d limit=2 | body_of | jq -r .metadata.continue)
for i in 6 7 8 9; do api POST /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x$i\"}}" >/dev/null; done
expired() { [ "$(status /api/v1/namespaces/default/pods -d limit=2 --data-urlencode "continue=$token")" = "410 Expired" ]; }
check "a continue token whose revision is compacted: 410 Expired" wait_for 10 expired
check_stop "controller with short history stops cleanly"

finish
