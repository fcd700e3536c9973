#!/usr/bin/env bash
# store_etcd.sh — the store's conformance suite (src/store/store_test.c, the
# same tests tests/run runs on SQLite) against a real etcd, twice:
#
#   store_test ──WEFT_TEST_STORE=etcd://127.0.0.1:PORT──────────────► etcd, plain HTTP
#   store_test ──etcd://127.0.0.1:PORT?ca=&cert=&key=&user=root&password_file=──►
#                                       etcd, TLS with client certificates and auth on
#
# Each etcd is Debian's etcd-server (etcd 3.4) on loopback ports found free,
# in a directory of its own; the second one gets a CA, a server certificate
# (IP SAN 127.0.0.1) and a client certificate made here with openssl, and a
# root user with a random password.  A probe (the suite's store_open_backend,
# which writes nothing) says first whether the etcd back-end is there at all:
# an etcd url that store_open refuses with ENOTSUP is one failure that says
# so, never a silent pass.  Then every test of the suite runs, each counted
# here; against the TLS etcd, the probe also shows that a wrong password, no
# client certificate, no user and no CA are refused.  store_sqlite_test (url forms,
# foreign files, reopen of a file, group commit) is SQLite's alone: not run
# here, counted neither way.  The cleanup trap stops both etcds by PID and
# removes their directories.
cd "$(dirname "$0")/../.." && source tests/lib.sh
trap 'stop_started; t_cleanup' EXIT

SUITE=$BUILD/tests/store/store_test
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}	# seconds; a run takes well under a minute
export ETCDCTL_API=3

if [ ! -x "$SUITE" ] || [ ! -x "$ETCD" ] || [ ! -x "$ETCDCTL" ]; then
	fail "prerequisites" "need $SUITE (make unit-bins), $ETCD and $ETCDCTL (etcd-server, etcd-client)"
	finish
	exit 1
fi

# probe LABEL URL: the suite's store_open_backend alone (opens URL, reads,
# writes nothing).  0 when it passed; prints why when not.  PROBE_ENOTSUP=1
# when store_open said ENOTSUP: the etcd back-end is not built.
probe() {
	local out rc=0
	PROBE_ENOTSUP=0
	out=$(WEFT_TEST_STORE=$2 timeout -k 10 60 "$SUITE" store_open_backend 2>&1) || rc=$?
	grep -q 'back-end is not built' <<<"$out" && PROBE_ENOTSUP=1
	if [ "$rc" -ne 0 ]; then
		PROBE_OUT=$(grep -v -e '^  ok ' -e '^store_test: back-end ' <<<"$out" | tail -n 5)
		return 1
	fi
	return 0
}

# run_suite LABEL URL [NAME-SUBSTRING]: the suite against URL, each of its
# tests passed or failed here under "LABEL: NAME"; a crash (no summary) or a
# non-zero exit without a failed test (a leak report) is a failure too.
# Other lines (why a check failed, sanitizer reports) are shown, the first 80.
run_suite() {
	local label=$1 url=$2 only=${3:-} out rc=0 l summary="" failed=0 shown=0 t0=$SECONDS
	echo "== $label: $SUITE ${only:+$only }against $url"
	out=$(WEFT_TEST_STORE=$url timeout -k 10 "$SUITE_TIMEOUT" "$SUITE" $only 2>&1) || rc=$?
	while IFS= read -r l; do
		if [[ $l == "  ok   "* ]]; then
			pass "$label: ${l#  ok   }"
		elif [[ $l == "  FAIL "* ]]; then
			fail "$label: ${l#  FAIL }"; failed=1
		elif [[ $l =~ ^store_test:\ [0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
			summary=$l
		elif [ -n "$l" ]; then	# a check's message, a sanitizer's report
			shown=$((shown + 1))
			[ "$shown" -gt 80 ] || echo "    $l"
		fi
	done <<<"$out"
	[ "$shown" -le 80 ] || echo "    ($((shown - 80)) more lines)"
	if [ -z "$summary" ]; then
		fail "$label: $SUITE printed no summary (exit $rc${rc/#124/: killed after $SUITE_TIMEOUT s})"
	elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		fail "$label: $SUITE exited $rc"
	fi
	echo "   ($label: ${summary:-no summary}, $((SECONDS - t0)) s)"
}

# the etcd back-end is there, or one failure says it is not (and why)
backend_there() { # backend_there LABEL URL
	if probe "$1" "$2"; then
		pass "$1: store_open($2) opens and reads"
		return 0
	fi
	if [ "$PROBE_ENOTSUP" = 1 ]; then
		fail "$1: the etcd back-end is not built: store_open of an etcd url fails with ENOTSUP" \
			"src/store/store.c has no etcd back-end yet; the suite cannot run against etcd"
	else
		fail "$1: store_open($2) fails" "$PROBE_OUT"
	fi
	return 1
}

echo "  skip store_sqlite_test: SQLite-only tests (url forms, foreign files, reopen of a file, group commit), not run against etcd"

# ------------------------------------------------------------- plain etcd
PLAIN=$(tmpdir)
ETCD_CTL_ARGS=()
if ! start_etcd "$PLAIN" http; then
	fail "etcd (plain) starts on loopback" "$(tail -n 5 "$PLAIN/etcd.log")"
	finish
	exit 1
fi
pass "etcd (plain) starts on 127.0.0.1:$ETCD_PORT and answers endpoint health"
PLAIN_URL=etcd://127.0.0.1:$ETCD_PORT
if ! backend_there "etcd (plain)" "$PLAIN_URL"; then
	finish
	exit 1
fi
run_suite "etcd (plain)" "$PLAIN_URL"

# ------------------------------------------------------------- TLS, client certificates, auth
echo "== etcd with TLS (client certificates) and a root user"
TLS=$(tmpdir)
PKI=$TLS/pki
mkdir -m 700 "$PKI"
# make_cert NAME CN EXTENSIONS: NAME.{key,crt} signed by the test CA (no CN when CN is "")
make_cert() {
	openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" \
		-subj "/O=weft store test${2:+/CN=$2}" &&
	openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
		-days 2 -out "$PKI/$1.crt" -extfile <(printf '%b' "$3")
}
make_pki() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 2 \
		-subj "/CN=weft store test etcd CA" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" &&
	# etcd's own gateway dials its gRPC port with the server certificate,
	# so that one is a client certificate too
	make_cert server etcd-server "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n" &&
	# etcd 3.4's gateway answers 400 to a client certificate with a
	# CommonName when --client-cert-auth is on ("CommonName of client
	# sending a request against gateway will be ignored..."): none here
	make_cert client "" "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
}
check "openssl: a CA, a server certificate (IP SAN 127.0.0.1), a client certificate" make_pki
check "the server certificate verifies for 127.0.0.1" \
	openssl verify -CAfile "$PKI/ca.crt" -verify_ip 127.0.0.1 "$PKI/server.crt"

ETCD_CTL_ARGS=(--cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
if ! start_etcd "$TLS" https --cert-file "$PKI/server.crt" --key-file "$PKI/server.key" \
	--trusted-ca-file "$PKI/ca.crt" --client-cert-auth; then
	fail "etcd (TLS) starts on loopback" "$(tail -n 5 "$TLS/etcd.log")"
	finish
	exit 1
fi
pass "etcd (TLS) starts on 127.0.0.1:$ETCD_PORT and answers endpoint health"
check "etcd (TLS) refuses a client without a certificate" \
	bash -c "! curl -s -m 5 --cacert '$PKI/ca.crt' -X POST -d '{\"key\":\"AA==\"}' $ETCD_ENDPOINT/v3/kv/range | grep -q header"

PASSWORD=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
(umask 077; printf '%s\n' "$PASSWORD" >"$TLS/root.password"; printf 'not the password\n' >"$TLS/wrong.password")
enable_auth() {
	ctl role add root && ctl user add "root:$PASSWORD" && ctl user grant-role root root && ctl auth enable
}
check "etcd (TLS): root user (role root) with a password, auth enabled" enable_auth
ETCD_CTL_ARGS+=(--user "root:$PASSWORD")
check "etcdctl as root answers" ctl get --prefix /nothing
check "etcdctl without the user is refused" \
	bash -c "! '$ETCDCTL' --endpoints $ETCD_ENDPOINT --cacert '$PKI/ca.crt' --cert '$PKI/client.crt' --key '$PKI/client.key' put /x y"

TLS_Q="ca=$PKI/ca.crt&cert=$PKI/client.crt&key=$PKI/client.key"
TLS_URL="etcd://127.0.0.1:$ETCD_PORT?$TLS_Q&user=root&password_file=$TLS/root.password"
if backend_there "etcd (TLS, auth)" "$TLS_URL"; then
	# refusals, once the right url is known to work
	check_fails "etcd (TLS, auth): a wrong password is refused" \
		env WEFT_TEST_STORE="etcd://127.0.0.1:$ETCD_PORT?$TLS_Q&user=root&password_file=$TLS/wrong.password" \
		"$SUITE" store_open_backend
	check_fails "etcd (TLS, auth): no client certificate is refused" \
		env WEFT_TEST_STORE="etcd://127.0.0.1:$ETCD_PORT?ca=$PKI/ca.crt&user=root&password_file=$TLS/root.password" \
		"$SUITE" store_open_backend
	check_fails "etcd (TLS, auth): no user is refused" \
		env WEFT_TEST_STORE="etcd://127.0.0.1:$ETCD_PORT?$TLS_Q" "$SUITE" store_open_backend
	check_fails "etcd (TLS, auth): no CA (plain http to a TLS port) is refused" \
		env WEFT_TEST_STORE="etcd://127.0.0.1:$ETCD_PORT?user=root&password_file=$TLS/root.password" \
		"$SUITE" store_open_backend
	run_suite "etcd (TLS, auth)" "$TLS_URL"
fi
finish
