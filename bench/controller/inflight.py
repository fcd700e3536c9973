#!/usr/bin/env python3
"""inflight.py — keep C creates in flight against one controller until it
dies, and write each one's outcome to OUT, one line each:
  ack NAME          201: acknowledged
  refused NAME CODE another status: refused
  unknown NAME      the connection broke before an answer: the write may or
                    may not have been applied
Stops when every connection has broken (the controller was killed), or
after LIMIT creates per connection.  Namespaces are created (each one a
VNID allocation: a compare-and-swap in the store).

usage: inflight.py URL TOKEN_FILE CA_FILE PREFIX CONNECTIONS LIMIT OUT
"""
import http.client, json, ssl, sys, threading, urllib.parse

url, token_file, ca, prefix, conns, limit, out = sys.argv[1:8]
conns, limit = int(conns), int(limit)
token = open(token_file).read().strip()
u = urllib.parse.urlparse(url)
ctx = ssl.create_default_context(cafile=ca)
lock = threading.Lock()
lines = []


def run(k):
    c = http.client.HTTPSConnection(u.hostname, u.port, timeout=10, context=ctx)
    for i in range(limit):
        name = "%s-%d-%d" % (prefix, k, i)
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        try:
            c.request("POST", "/api/v1/namespaces", body,
                      {"Content-Type": "application/json", "Authorization": "Bearer " + token})
            r = c.getresponse()
            r.read()
        except Exception:
            with lock:
                lines.append("unknown %s" % name)
            return
        with lock:
            lines.append("ack %s" % name if r.status == 201 else "refused %s %d" % (name, r.status))


threads = [threading.Thread(target=run, args=(k,)) for k in range(conns)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
