#!/usr/bin/env bash
# throttle.sh — each node credential has a write budget; over it a write
# is answered 429 TooManyRequests with Retry-After, and nothing is stored.
#
#   curl as node-1, 40 PUTs of its Node on one connection ──► weft-controller
#        (--node-write-rate 0.1 --node-write-burst 10: one write every
#        10 s once 10 are spent, so what is checked "while node-1 is over"
#        does run while it is, on a slow machine too)
#
# 1. a burst over the budget: the first 9 (the registration spent one)
#    200, then 429 with a Status
#    {reason TooManyRequests, code 429, details.retryAfterSeconds} and a
#    Retry-After header of the same seconds.
# 2. while node-1 is over: its refused write is not stored (the Node read
#    back is the last one accepted), its reads pass, the admin's writes
#    all pass, node-2's writes pass; a request with a bad token is 401,
#    not 429, and is not counted.
# 3. once its bucket refills (polled), node-1 writes again.
# 4. /metrics: weft_requests_throttled_total is the number of 429s seen.
cd "$(dirname "$0")/../.." && source tests/lib.sh

dir=$(tmpdir)
start_controller "$dir" --node-write-rate 0.1 --node-write-burst 10 || { fail start; finish; exit 1; }
ADMIN=$(cat "$CTRL_TOKEN_FILE")
CODES=$dir/codes	# every HTTP code a node write got, one a line

# as TOKEN METHOD PATH [BODY]: the request with that bearer token; body, then code
as() {
	local t=$1 m=$2 p=$3; shift 3
	curl -s -X "$m" -H @- -H 'Content-Type: application/json' -w '\n%{http_code}\n' \
		${1:+--data-binary "$1"} "$CTRL_URL$p" <<<"Authorization: Bearer $t"
}
node_body() { # node_body NAME IP [ANNOTATION VALUE]
	echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"${3:+,\"annotations\":{\"$3\":\"$4\"}}},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$2\"}]}}"
}
# node_put TOKEN NODE IP VALUE: PUT the Node with annotation test/v=VALUE;
# prints the code (and logs it in CODES)
node_put() {
	local code
	code=$(as "$1" PUT "/api/v1/nodes/$2" "$(node_body "$2" "$3" test/v "$4")" | code_of)
	echo "$code" >>"$CODES"
	echo "$code"
}
stored_v() { as "$ADMIN" GET /api/v1/nodes/node-1 | body_of | jq -r '.metadata.annotations["test/v"] // "-"'; }
throttled_metric() { as "$ADMIN" GET /metrics | body_of | awk '$1 == "weft_requests_throttled_total" { print $2 }'; }

N1=$("$WEFTCTL" node-credential issue node-1)
N2=$("$WEFTCTL" node-credential issue node-2)
: >"$CODES"
check "node-1 registers its Node" test "$(node_put "$N1" node-1 192.168.50.1 v0)" = 200
check "node-2 registers its Node" test "$(node_put "$N2" node-2 192.168.50.2 v0)" = 200
check "no write has been throttled yet (metric 0)" test "$(throttled_metric)" = 0

# ---------------------------------------------------------------- 1. a burst
# 40 PUTs on one connection, as fast as curl sends them: 30 over the
# budget.  Each transfer prints its body (one JSON line) and then a line
# "CODE <code> <Retry-After>".
burst=$dir/burst
urls=()
for i in $(seq 40); do urls+=("$CTRL_URL/api/v1/nodes/node-1"); done
curl -s -X PUT -H @- -H 'Content-Type: application/json' --data-binary "$(node_body node-1 192.168.50.1 test/v burst)" \
	-w 'CODE %{http_code} %header{retry-after}\n' "${urls[@]}" <<<"Authorization: Bearer $N1" >"$burst"
grep '^CODE ' "$burst" | awk '{ print $2 }' >>"$CODES"
n200=$(grep -c '^CODE 200 ' "$burst")
n429=$(grep -c '^CODE 429 ' "$burst")
check "the burst: 40 answers, each 200 or 429" test "$(grep -cE '^CODE (200|429) ' "$burst")" = 40
check "the burst: what was left of the burst of 10 passes, no more ($n200 did)" test "$n200" -ge 9 -a "$n200" -le 10
check "the burst: writes over the budget are 429 ($n429 were)" test "$n429" -ge 30
check "the burst: the first 9 answers are all 200" \
	test "$(grep '^CODE ' "$burst" | head -n 9 | grep -c '^CODE 200 ')" = 9
first429=$(grep -B1 '^CODE 429 ' "$burst" | head -n 1)
status_ok() {
	[ -n "$first429" ] && jq -e '.kind == "Status" and .status == "Failure" and .reason == "TooManyRequests" and .code == 429 and
		(.details.retryAfterSeconds | type == "number" and . >= 1) and (.message | contains("node-1"))' \
		<<<"$first429" >/dev/null
}
check "a 429 is a Status: reason TooManyRequests, code 429, details.retryAfterSeconds >= 1" status_ok
retry_header=$(grep -m1 '^CODE 429 ' "$burst" | awk '{ print $3 }' | tr -d '\r')
check "a 429 says when: retryAfterSeconds 10 at 0.1 a second" test "$(jq -r .details.retryAfterSeconds <<<"$first429")" -le 10
check "a 429 has Retry-After: the same seconds as details.retryAfterSeconds ($retry_header)" \
	test -n "$retry_header" -a "$retry_header" = "$(jq -r .details.retryAfterSeconds <<<"$first429")"
check "a 200 of the burst has no Retry-After" test -z "$(grep -m1 '^CODE 200 ' "$burst" | awk '{ print $3 }')"

# ---------------------------------------------------------------- 2. while over
# node-1 has spent 10 and gains one every 10 s: the next write is refused (checked last again, so everything between ran while it was over)
check "node-1's write over budget is 429" test "$(node_put "$N1" node-1 192.168.50.1 refused)" = 429
check "... and not stored: the Node holds the last write accepted" test "$(stored_v)" = burst
check "node-1's Node is intact and readable (name, address)" \
	eval 'as "$ADMIN" GET /api/v1/nodes/node-1 | body_of | jq -e ".metadata.name == \"node-1\" and .status.addresses[0].address == \"192.168.50.1\"" >/dev/null'
check "node-1's reads are not limited (GET its Node: 200)" test "$(as "$N1" GET /api/v1/nodes/node-1 | code_of)" = 200
admin_burst() {
	local out
	out=$(curl -s -X PUT -H @- -H 'Content-Type: application/json' \
		--data-binary '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"blue","labels":{"x":"y"}}}' \
		-w 'CODE %{http_code}\n' -o /dev/null "${urls[@]/nodes\/node-1/namespaces\/blue}" <<<"Authorization: Bearer $ADMIN")
	[ "$(grep -c '^CODE 200$' <<<"$out")" = 40 ] || { echo "$out" | sort | uniq -c; return 1; }
}
as "$ADMIN" POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"blue"}}' >/dev/null
check "the admin's 40 writes on one connection meanwhile: all 200" admin_burst
check "node-2's credential is not affected: its write is 200" test "$(node_put "$N2" node-2 192.168.50.2 mine)" = 200
bad=$(as "${N1%%.*}.$(printf '0%.0s' $(seq 64))" PUT /api/v1/nodes/node-1 "$(node_body node-1 192.168.50.1)" | code_of)
check "a write with a forged token is 401, not 429 (authentication first)" test "$bad" = 401
check "node-1 is still over its budget (the checks above ran while it was)" \
	test "$(node_put "$N1" node-1 192.168.50.1 refused)" = 429
check "... still not stored" test "$(stored_v)" = burst

# ---------------------------------------------------------------- 3. refilled
writes_again() { [ "$(node_put "$N1" node-1 192.168.50.1 later)" = 200 ]; }
check "once its bucket refills (polled), node-1 writes again" wait_for 20 writes_again
check "... stored" test "$(stored_v)" = later

# ---------------------------------------------------------------- 4. metrics
seen=$(grep -c '^429$' "$CODES")
check "weft_requests_throttled_total counts every 429 ($seen)" test "$(throttled_metric)" = "$seen"

check_stop "the controller stops cleanly"
finish
