#!/usr/bin/env python3
"""batch_writer.py — a stream of batched applies against weft-controller:
v1 Lists of BATCH Secrets (crash-secret-START .. START+COUNT-1, namespace
default) POSTed to /weft/v1/apply on one keep-alive connection; every item
the answer says was written is appended (and flushed) to ACKS as
"secret NAME".  Stops after COUNT items or at the first connection error
(the controller died).

usage: batch_writer.py URL TOKEN_FILE COUNT ACKS [START [BATCH]]
"""
import http.client, json, ssl, sys, urllib.parse

url, token_file, count, acks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
size = int(sys.argv[6]) if len(sys.argv) > 6 else 25
u = urllib.parse.urlparse(url)
token = open(token_file).read().strip()
hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
if u.scheme == "https":  # the CA: the default trust store (tests set SSL_CERT_FILE)
    conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=10, context=ssl.create_default_context())
else:
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
with open(acks, "a") as out:
    for first in range(start, start + count, size):
        names = ["crash-secret-%d" % i for i in range(first, min(first + size, start + count))]
        body = {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": "default"},
             "type": "Opaque", "data": {"n": "MQ=="}} for n in names]}
        try:
            conn.request("POST", "/weft/v1/apply", json.dumps(body), hdr)
            r = conn.getresponse()
            answer = r.read()
        except Exception:
            sys.exit(0)
        if r.status != 200:
            print("batch from %s: HTTP %d" % (names[0], r.status), file=sys.stderr)
            sys.exit(1)
        for item in json.loads(answer)["items"]:
            if item["result"] in ("created", "configured", "unchanged"):
                out.write("secret %s\n" % item["name"])
        out.flush()
