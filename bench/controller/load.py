#!/usr/bin/env python3
"""load.py — N creates from C keep-alive connections, as fast as they go,
against etcd's JSON gateway (the reference: etcd's own put rate over the
same HTTP/JSON path the controllers use; or, etcd-txn, a create as the
controllers make it: a transaction "key absent -> put") or against
weft-controllers (Pod creates, the connections spread over the URLs
given).  Prints one line: "creates N seconds S rate R errors E".

usage: load.py etcd|etcd-txn URL CONNECTIONS COUNT
       load.py weft URL[,URL...] CONNECTIONS COUNT TOKEN_FILE CA_FILE PREFIX

Every create carries a 600-byte value (the size of a stored Pod), under a
key or name unique to this run (PREFIX, a connection number, a counter).
"""
import base64, http.client, json, ssl, sys, threading, time, urllib.parse

mode, urls, conns, count = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
if mode == "weft":
    token = open(sys.argv[5]).read().strip()
    ctx = ssl.create_default_context(cafile=sys.argv[6])
    prefix = sys.argv[7]
filler = "x" * 420
errors = [0] * conns


def connect(url):
    u = urllib.parse.urlparse(url)
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, timeout=30, context=ctx)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=30)


def run(k, n):
    c = connect(urls[k % len(urls)])
    for i in range(n):
        if mode == "etcd":
            key = base64.b64encode(b"/bench/put/%d/%d" % (k, i)).decode()
            body = json.dumps({"key": key, "value": base64.b64encode(b"v" * 600).decode()})
            c.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
            ok = 200
        elif mode == "etcd-txn":
            key = base64.b64encode(b"/bench/txn/%d/%d" % (k, i)).decode()
            body = json.dumps({"compare": [{"key": key, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
                               "success": [{"request_put": {"key": key, "value": base64.b64encode(b"v" * 600).decode()}}]})
            c.request("POST", "/v3/kv/txn", body, {"Content-Type": "application/json"})
            ok = 200
        else:
            body = json.dumps({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": "%s-%d-%d" % (prefix, k, i), "labels": {"app": "bench"},
                                            "annotations": {"filler": filler}},
                               "spec": {"containers": [{"name": "c", "image": "bench"}]}})
            c.request("POST", "/api/v1/namespaces/default/pods", body,
                      {"Content-Type": "application/json", "Authorization": "Bearer " + token})
            ok = 201
        r = c.getresponse()
        data = r.read()
        if r.status != ok or (mode == "etcd-txn" and b'"succeeded":true' not in data):
            errors[k] += 1


per = count // conns
threads = [threading.Thread(target=run, args=(k, per)) for k in range(conns)]
t0 = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
secs = time.monotonic() - t0
print("creates %d seconds %.3f rate %.1f errors %d" % (per * conns, secs, per * conns / secs, sum(errors)))
