#!/usr/bin/env python3
"""fanout.py — watch fan-out latency: W watchers of Namespaces spread over
the controllers given (URLS), then K Namespaces created one at a time
through the first; for each, the time from just before the create is sent
until every watcher has its ADDED event (on etcd, the watchers of the other
controller get it through that controller's own etcd watch).
Prints one line: "watchers W creates K p50_ms X p99_ms Y max_ms Z".

usage: fanout.py URL[,URL...] TOKEN_FILE CA_FILE WATCHERS CREATES PREFIX
"""
import http.client, json, ssl, sys, threading, time, urllib.parse

urls, token_file, ca, nw, k, prefix = sys.argv[1].split(","), sys.argv[2], sys.argv[3], int(sys.argv[4]), \
    int(sys.argv[5]), sys.argv[6]
token = open(token_file).read().strip()
ctx = ssl.create_default_context(cafile=ca)
hdr = {"Authorization": "Bearer " + token}
seen = {}            # name -> number of watchers that saw it
cond = threading.Condition()
ready = threading.Barrier(nw + 1)


def conn(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPSConnection(u.hostname, u.port, timeout=120, context=ctx)


def watch(i):
    c = conn(urls[i % len(urls)])
    c.request("GET", "/api/v1/namespaces", headers=hdr)
    r = c.getresponse()
    rv = json.loads(r.read())["metadata"]["resourceVersion"]
    c.request("GET", "/api/v1/namespaces?watch=1&resourceVersion=%s" % rv, headers=hdr)
    r = c.getresponse()
    ready.wait()
    while True:
        line = r.readline()
        if not line:
            return
        e = json.loads(line)
        name = e["object"]["metadata"]["name"]
        if e["type"] == "ADDED" and name.startswith(prefix):
            with cond:
                seen[name] = seen.get(name, 0) + 1
                cond.notify_all()


for i in range(nw):
    threading.Thread(target=watch, args=(i,), daemon=True).start()
ready.wait()
c = conn(urls[0])
lat = []
for j in range(k):
    name = "%s-%d" % (prefix, j)
    t0 = time.monotonic()
    c.request("POST", "/api/v1/namespaces", json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": name}}),
              dict(hdr, **{"Content-Type": "application/json"}))
    r = c.getresponse()
    r.read()
    if r.status != 201:
        sys.exit("create %s: HTTP %d" % (name, r.status))
    with cond:
        if not cond.wait_for(lambda: seen.get(name, 0) >= nw, timeout=30):
            sys.exit("%s: %d of %d watchers within 30 s" % (name, seen.get(name, 0), nw))
    lat.append((time.monotonic() - t0) * 1000)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print("watchers %d creates %d p50_ms %.2f p99_ms %.2f max_ms %.2f" % (nw, k, q(0.5), q(0.99), lat[-1]))
