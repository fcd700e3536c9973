#!/usr/bin/env bash
# tls.sh — the API is HTTPS: what the controller makes at first start
# (cluster CA, serving certificate, admin.kubeconfig) and keeps at the next,
# what each TLS client makes of it (curl, openssl s_client, Python's ssl,
# kubectl when installed, weftctl through kubeconfigs), the refusals
# (no CA, another CA, plain HTTP, --insecure-http off loopback, a key that
# does not match), a certificate brought by the user, and no key material
# in the log.
#
#   curl / openssl / python / kubectl / weftctl ──TLS──► weft-controller (127.0.0.1:random)
#                                                         DIR/pki/{ca,apiserver}.{key,crt}
#                                                         DIR/admin.kubeconfig
cd "$(dirname "$0")/../.." && source tests/lib.sh

DIR=$(tmpdir)
start_controller "$DIR" --tls-san api.weft.test --tls-san 10.11.12.13 || { fail "controller starts"; finish; exit 1; }
PKI=$DIR/pki
PORT=${CTRL_URL##*:}
# every client below says what it trusts: nothing from the environment
unset CURL_CA_BUNDLE SSL_CERT_FILE KUBECONFIG WEFT_SERVER WEFT_TOKEN_FILE
W() { "$WEFTCTL" "$@"; }
# fails_saying WANT CMD...: CMD exits non-zero and its output (lines joined) has WANT (an ERE)
fails_saying() {
	local want=$1 out; shift
	if out=$("$@" 2>&1); then echo "succeeded: $out"; return 1; fi
	tr '\n' ' ' <<<"$out" | grep -qE -- "$want" || { echo "output: $out"; return 1; }
}
curl_exit() { local rc=0; curl -s -o /dev/null -m 5 "$@" || rc=$?; echo $rc; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
served_fingerprint() { # the SHA-256 fingerprint of the certificate served on 127.0.0.1:$1
	openssl s_client -connect "127.0.0.1:$1" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256
}

# ---------------------------------------------------------------- what the first start makes
echo "== first start"
for f in ca.key ca.crt apiserver.key apiserver.crt; do check "$f exists" test -s "$PKI/$f"; done
check "pki/ is mode 700" test "$(stat -c %a "$PKI")" = 700
check "ca.key is mode 600" test "$(stat -c %a "$PKI/ca.key")" = 600
check "apiserver.key is mode 600" test "$(stat -c %a "$PKI/apiserver.key")" = 600
check "admin.kubeconfig is mode 600" test "$(stat -c %a "$DIR/admin.kubeconfig")" = 600
check "openssl verify -CAfile ca.crt apiserver.crt" openssl verify -CAfile "$PKI/ca.crt" "$PKI/apiserver.crt"
SAN=$(openssl x509 -in "$PKI/apiserver.crt" -noout -ext subjectAltName)
check "SANs: 127.0.0.1, localhost, the --tls-san name and IP" \
	bash -c "grep -q 'IP Address:127.0.0.1' <<<'$SAN' && grep -q 'DNS:localhost' <<<'$SAN' &&
		grep -q 'DNS:api.weft.test' <<<'$SAN' && grep -q 'IP Address:10.11.12.13' <<<'$SAN'"
CA_TEXT=$(openssl x509 -in "$PKI/ca.crt" -noout -text)
check "the CA: basicConstraints CA:TRUE, critical" grep -qA1 'Basic Constraints: critical' <<<"$CA_TEXT"
check "... CA:TRUE" grep -q 'CA:TRUE' <<<"$CA_TEXT"
check "... keyCertSign" grep -q 'Certificate Sign' <<<"$CA_TEXT"
check "... a subject key identifier" grep -q 'Subject Key Identifier' <<<"$CA_TEXT"
SRV_TEXT=$(openssl x509 -in "$PKI/apiserver.crt" -noout -text)
check "serving: extendedKeyUsage serverAuth" grep -q 'TLS Web Server Authentication' <<<"$SRV_TEXT"
check "... keyUsage digitalSignature, CA:FALSE, authority key identifier" \
	bash -c "grep -q 'Digital Signature' <<<'$SRV_TEXT' && grep -q 'CA:FALSE' <<<'$SRV_TEXT' && grep -q 'Authority Key Identifier' <<<'$SRV_TEXT'"
check "... valid for a year: not past 366 days" bash -c "! openssl x509 -in '$PKI/apiserver.crt' -noout -checkend $((366 * 86400)) >/dev/null"
check "... and past 364" openssl x509 -in "$PKI/apiserver.crt" -noout -checkend $((364 * 86400))
check "the CA is valid for ten years" openssl x509 -in "$PKI/ca.crt" -noout -checkend $((3649 * 86400))
check "the log says https" grep -q "listening on https://127.0.0.1:$PORT" "$CTRL_LOG"

# ---------------------------------------------------------------- clients
echo "== clients"
check "curl --cacert ca.crt: ok" test "$(curl -s --cacert "$PKI/ca.crt" "$CTRL_URL/healthz")" = ok
check "curl --cacert ca.crt https://localhost:PORT: ok" test "$(curl -s --cacert "$PKI/ca.crt" "https://localhost:$PORT/healthz")" = ok
check "curl without the CA is refused (exit 60)" test "$(curl_exit "$CTRL_URL/healthz")" = 60
OTHER=$(tmpdir)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$OTHER/other.key" -out "$OTHER/other-ca.crt" \
	-subj /CN=other-ca -days 2 >/dev/null 2>&1
check "curl trusting another CA is refused (exit 60)" test "$(curl_exit --cacert "$OTHER/other-ca.crt" "$CTRL_URL/healthz")" = 60
check "curl to a name not in the certificate is refused (exit 60)" \
	test "$(curl_exit --cacert "$PKI/ca.crt" --resolve "other.name:$PORT:127.0.0.1" "https://other.name:$PORT/healthz")" = 60
check "openssl s_client -verify_return_error with the CA: verify ok" bash -c \
	"openssl s_client -connect 127.0.0.1:$PORT -CAfile '$PKI/ca.crt' -verify_return_error -verify_ip 127.0.0.1 </dev/null 2>&1 |
	 grep -q 'Verify return code: 0 (ok)'"
check "... TLS 1.1 is refused" bash -c "! openssl s_client -connect 127.0.0.1:$PORT -tls1_1 </dev/null >/dev/null 2>&1"
py_get() { # py_get CAFILE|'' URL: Python's ssl, default context
	python3 - "$@" <<'PY'
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1] or None)
print(urllib.request.urlopen(sys.argv[2], context=ctx, timeout=5).read().decode().strip())
PY
}
check "Python ssl with the CA: ok" test "$(py_get "$PKI/ca.crt" "$CTRL_URL/healthz")" = ok
check "Python ssl without it: CERTIFICATE_VERIFY_FAILED" fails_saying 'CERTIFICATE_VERIFY_FAILED' py_get "" "$CTRL_URL/healthz"
if command -v kubectl >/dev/null; then
	check "kubectl (Go's crypto/x509) with admin.kubeconfig" \
		bash -c "kubectl --kubeconfig '$DIR/admin.kubeconfig' get --raw /api/v1/namespaces | jq -e '.kind == \"NamespaceList\"'"
else
	echo "  (kubectl is not installed: Go's verification not checked)"
fi

# ---------------------------------------------------------------- plain HTTP to the TLS port
echo "== plain HTTP to the TLS port"
lines_before=$(wc -l <"$CTRL_LOG")
check "curl http:// to the TLS port fails" bash -c "test \"\$(curl -s -o /dev/null -m 5 -w '%{http_code}' http://127.0.0.1:$PORT/healthz)\" = 000"
check "a raw HTTP request gets no HTTP answer" bash -c \
	"! printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 5 socat - TCP:127.0.0.1:$PORT | grep -q 'HTTP/1'"
check "the server keeps serving" test "$(curl -s --cacert "$PKI/ca.crt" "$CTRL_URL/healthz")" = ok
check "... and logged at most a line about it" test $(($(wc -l <"$CTRL_LOG") - lines_before)) -le 1
check "weftctl to http:// on the TLS port fails, saying https" fails_saying 'Empty reply from server.*https://' \
	W --server "http://127.0.0.1:$PORT" --token-file "$DIR/admin.token" get ns

# ---------------------------------------------------------------- weftctl and kubeconfigs
echo "== weftctl"
check "weftctl --kubeconfig admin.kubeconfig get ns" bash -c "'$WEFTCTL' --kubeconfig '$DIR/admin.kubeconfig' get ns | grep -q '^default '"
check "KUBECONFIG=admin.kubeconfig weftctl get ns" bash -c "KUBECONFIG='$DIR/admin.kubeconfig' '$WEFTCTL' get ns | grep -q '^default '"
check "KUBECONFIG=missing:admin.kubeconfig (the first that exists)" \
	bash -c "KUBECONFIG='$DIR/none:$DIR/admin.kubeconfig' '$WEFTCTL' get ns | grep -q '^default '"
HOMEDIR=$(tmpdir)
mkdir -p "$HOMEDIR/.kube" && cp "$DIR/admin.kubeconfig" "$HOMEDIR/.kube/config"
check "~/.kube/config (HOME=$HOMEDIR)" bash -c "HOME='$HOMEDIR' '$WEFTCTL' get ns | grep -q '^default '"
echo not-the-token >"$OTHER/wrong.token"
check "--token-file overrides the kubeconfig's token (a wrong one: 401)" fails_saying 'Unauthorized' \
	env HOME="$HOMEDIR" "$WEFTCTL" --token-file "$OTHER/wrong.token" get ns
check "--server overrides the kubeconfig's server" fails_saying 'cannot reach https://127\.0\.0\.1:1' \
	env HOME="$HOMEDIR" "$WEFTCTL" --server https://127.0.0.1:1 get ns
check "--certificate-authority with --server and --token-file" bash -c \
	"HOME=/nonexistent '$WEFTCTL' --server '$CTRL_URL' --token-file '$DIR/admin.token' --certificate-authority '$PKI/ca.crt' get ns | grep -q '^default '"
check "no CA at all: refused, naming the certificate problem and the trust used" \
	fails_saying "cannot trust $CTRL_URL: SSL certificate problem.*system's trust store" \
	env HOME=/nonexistent "$WEFTCTL" --server "$CTRL_URL" --token-file "$DIR/admin.token" get ns
# a kubeconfig whose CA is another one
wrong_ca=$(base64 -w0 "$OTHER/other-ca.crt")
sed -E "s#certificate-authority-data: .*#certificate-authority-data: $wrong_ca#" "$DIR/admin.kubeconfig" >"$OTHER/wrong-ca.kubeconfig"
check "a kubeconfig with the wrong CA fails, naming the certificate problem and the file" \
	fails_saying "SSL certificate problem.*certificate-authority-data in kubeconfig $OTHER/wrong-ca.kubeconfig" \
	W --kubeconfig "$OTHER/wrong-ca.kubeconfig" get ns
sed -E "s#certificate-authority-data: .*#certificate-authority: $PKI/ca.crt#" "$DIR/admin.kubeconfig" >"$OTHER/ca-file.kubeconfig"
check "certificate-authority: FILE in the kubeconfig" bash -c "'$WEFTCTL' --kubeconfig '$OTHER/ca-file.kubeconfig' get ns | grep -q '^default '"
sed -E "s#certificate-authority-data: .*#insecure-skip-tls-verify: true#" "$DIR/admin.kubeconfig" >"$OTHER/insecure.kubeconfig"
check "insecure-skip-tls-verify: true, written in the kubeconfig, is honoured" \
	bash -c "'$WEFTCTL' --kubeconfig '$OTHER/insecure.kubeconfig' get ns | grep -q '^default '"
sed -E "s#certificate-authority-data: (.*)#certificate-authority-data: \1\n    insecure-skip-tls-verify: true#" \
	"$DIR/admin.kubeconfig" >"$OTHER/both.kubeconfig"
check "... but not beside a CA (as kubectl)" fails_saying "insecure-skip-tls-verify is true and a certificate authority is given" \
	W --kubeconfig "$OTHER/both.kubeconfig" get ns
sed -E "s#server: .*#server: 7#" "$DIR/admin.kubeconfig" >"$OTHER/bad.kubeconfig"
check "a bad kubeconfig names the file and the field" \
	fails_saying "kubeconfig $OTHER/bad.kubeconfig: clusters\[weft\]\.cluster\.server: want a string" \
	W --kubeconfig "$OTHER/bad.kubeconfig" get ns
check "--kubeconfig of a missing file: named" fails_saying "kubeconfig $OTHER/none: No such file" W --kubeconfig "$OTHER/none" get ns

# ---------------------------------------------------------------- secrets stay out of the log
echo "== the log"
key_body() { grep -v -- '-----' "$1" | tr -d '\n' | cut -c1-40; }
check "no private key in the log" bash -c "! grep -q 'PRIVATE KEY' '$CTRL_LOG'"
check "... not ca.key's base64" bash -c "! grep -qF -- '$(key_body "$PKI/ca.key")' '$CTRL_LOG'"
check "... not apiserver.key's base64" bash -c "! grep -qF -- '$(key_body "$PKI/apiserver.key")' '$CTRL_LOG'"
check "... not the token" bash -c "! grep -qF -- '$(cat "$DIR/admin.token")' '$CTRL_LOG'"

# ---------------------------------------------------------------- restart
echo "== restart"
ca_sha=$(sha "$PKI/ca.crt") cakey_sha=$(sha "$PKI/ca.key") srv_sha=$(sha "$PKI/apiserver.crt") kc_sha=$(sha "$DIR/admin.kubeconfig")
check_stop "the controller stops cleanly"
start_controller "$DIR" --tls-san api.weft.test --tls-san 10.11.12.13 || fail "restart"
unset CURL_CA_BUNDLE SSL_CERT_FILE KUBECONFIG WEFT_SERVER WEFT_TOKEN_FILE
check "restart: the same CA (ca.crt and ca.key unchanged)" test "$(sha "$PKI/ca.crt") $(sha "$PKI/ca.key")" = "$ca_sha $cakey_sha"
check "... the same serving certificate" test "$(sha "$PKI/apiserver.crt")" = "$srv_sha"
check "... the log says kept" grep -q "apiserver.crt: kept" "$CTRL_LOG"
check "... a new port: admin.kubeconfig names it" grep -q "server: \"$CTRL_URL\"" "$DIR/admin.kubeconfig"
check "... and still trusts the CA" bash -c "'$WEFTCTL' --kubeconfig '$DIR/admin.kubeconfig' get ns | grep -q '^default '"
check_stop "the controller stops cleanly (2)"
start_controller "$DIR" --tls-san api.weft.test --tls-san 10.11.12.13 --tls-san extra.weft.test || fail "restart with one more --tls-san"
unset CURL_CA_BUNDLE SSL_CERT_FILE KUBECONFIG WEFT_SERVER WEFT_TOKEN_FILE
check "one more --tls-san: a new serving certificate naming it" \
	bash -c "openssl x509 -in '$PKI/apiserver.crt' -noout -ext subjectAltName | grep -q DNS:extra.weft.test"
check "... signed by the same CA" bash -c "openssl verify -CAfile '$PKI/ca.crt' '$PKI/apiserver.crt' && test '$(sha "$PKI/ca.crt")' = '$ca_sha'"
check "... the log says why" grep -q "made again, because it does not name DNS:extra.weft.test" "$CTRL_LOG"
check "... and serves it" test "$(served_fingerprint "${CTRL_URL##*:}")" = "$(openssl x509 -in "$PKI/apiserver.crt" -noout -fingerprint -sha256)"
check_stop "the controller stops cleanly (3)"

# ---------------------------------------------------------------- refusals at start
echo "== refusals"
run_controller() { timeout 20 "$CONTROLLER" "$@"; }	# a start that must fail: it exits by itself
check "--insecure-http on a non-loopback address is refused (exit 2), saying why" \
	fails_saying "--insecure-http: plain HTTP is served only on a loopback address.*--listen 0\.0\.0\.0:$PORT is not one" \
	run_controller --data-dir "$(tmpdir)" --listen "0.0.0.0:$PORT" --insecure-http
rc=0; run_controller --data-dir "$(tmpdir)" --listen "192.0.2.1:$PORT" --insecure-http >/dev/null 2>&1 || rc=$?
check "... exit status 2" test $rc = 2
check "--insecure-http with --tls-cert-file is refused" fails_saying "does not go with --tls-cert-file" \
	run_controller --data-dir "$(tmpdir)" --insecure-http --tls-cert-file x --tls-key-file y
check "--tls-cert-file without --tls-key-file is refused" fails_saying "go together" \
	run_controller --data-dir "$(tmpdir)" --tls-cert-file "$PKI/apiserver.crt"
check "a bad --tls-san is refused, naming it" fails_saying "--tls-san 'bad_name': not an IP address or a DNS name" \
	run_controller --data-dir "$(tmpdir)" --tls-san bad_name
chmod 0644 "$PKI/ca.key"
check "a ca.key readable by others is refused, naming it" fails_saying "$PKI/ca.key: a private key readable by others \(mode 644\)" \
	run_controller --data-dir "$DIR" --listen "127.0.0.1:$PORT"
chmod 0600 "$PKI/ca.key"

# ---------------------------------------------------------------- bring your own certificate
echo "== bring your own"
BYO=$(tmpdir)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$BYO/tls.key" -out "$BYO/tls.crt" \
	-subj /CN=byo -addext subjectAltName=IP:127.0.0.1,DNS:localhost -days 30 >/dev/null 2>&1
chmod 0600 "$BYO/tls.key"
check "a key that does not match the certificate is refused, naming both" \
	fails_saying "--tls-key-file $OTHER/other.key does not match the certificate of --tls-cert-file $BYO/tls.crt" \
	run_controller --data-dir "$(tmpdir)" --tls-cert-file "$BYO/tls.crt" --tls-key-file "$OTHER/other.key"
BDIR=$(tmpdir)
BPORT=$(free_port)
"$CONTROLLER" --data-dir "$BDIR" --listen "127.0.0.1:$BPORT" --tls-cert-file "$BYO/tls.crt" --tls-key-file "$BYO/tls.key" \
	>>"$BDIR/controller.log" 2>&1 &
BPID=$!; T_PIDS+=("$BPID")
check "bring your own: the controller starts with --tls-cert-file/--tls-key-file" \
	wait_for 20 curl -sf --cacert "$BYO/tls.crt" "https://127.0.0.1:$BPORT/healthz"
check "... serves that certificate" \
	test "$(served_fingerprint "$BPORT")" = "$(openssl x509 -in "$BYO/tls.crt" -noout -fingerprint -sha256)"
check "... admin.kubeconfig trusts it" bash -c "grep -q 'certificate-authority-data: $(base64 -w0 "$BYO/tls.crt")' '$BDIR/admin.kubeconfig'"
check "... weftctl with that kubeconfig works" bash -c "'$WEFTCTL' --kubeconfig '$BDIR/admin.kubeconfig' get ns | grep -q '^default '"
check "... no serving key of its own was made" test ! -e "$BDIR/pki/apiserver.key"
check "... no key material in its log" bash -c "! grep -qF -- '$(key_body "$BYO/tls.key")' '$BDIR/controller.log' && ! grep -q 'PRIVATE KEY' '$BDIR/controller.log'"
kill -TERM "$BPID"; rc=0; wait "$BPID" || rc=$?
check "... and stops cleanly" test $rc = 0

# ---------------------------------------------------------------- --insecure-http on loopback
echo "== --insecure-http"
IDIR=$(tmpdir)
start_controller "$IDIR" --insecure-http || fail "--insecure-http on 127.0.0.1 starts"
check "--insecure-http on 127.0.0.1: plain HTTP answers" test "$(curl -s "$CTRL_URL/healthz")" = ok
check "... https does not" bash -c "! curl -s -k -m 5 'https://${CTRL_URL#http://}/healthz'"
check "... no pki/ is made" test ! -e "$IDIR/pki"
check "... admin.kubeconfig: an http server, no CA" bash -c \
	"grep -q 'server: \"http://127.0.0.1:' '$IDIR/admin.kubeconfig' && ! grep -q certificate-authority '$IDIR/admin.kubeconfig'"
check "... weftctl with it works" bash -c "'$WEFTCTL' --kubeconfig '$IDIR/admin.kubeconfig' get ns | grep -q '^default '"
check "... the log says http" grep -q "listening on http://127.0.0.1:" "$CTRL_LOG"
check_stop "the plain controller stops cleanly"

finish
