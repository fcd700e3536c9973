#!/usr/bin/env python3
"""churn.py — one client of the HA chaos test: for SECONDS, create and
delete Namespaces, Services, Nodes and Pods through the controllers (URLS,
comma-separated, tried in turn as weft's own clients do: a request that
could not connect goes to the next; one that was sent is never sent again),
and log every request's outcome to OUT, one line each:

  SEQ OP KIND NAME ack           the controller answered 2xx
  SEQ OP KIND NAME refused CODE  it answered another status (nothing written)
  SEQ OP KIND NAME unknown       the connection broke after the request was
                                 sent, or the answer was 500 or 504 (the
                                 store could not say): it may or may not
                                 have been applied

OP is create or delete; KIND namespace, service, node or pod.  Names carry
the client's ID, so clients never touch each other's objects.

usage: churn.py URLS TOKEN_FILE CA_FILE OUT SECONDS ID [STOP_FILE]
(it stops after SECONDS, or as soon as STOP_FILE exists)
"""
import http.client, json, os, random, socket, ssl, sys, time, urllib.parse

urls, token_file, ca, out, seconds, ident = sys.argv[1].split(","), sys.argv[2], sys.argv[3], sys.argv[4], \
    float(sys.argv[5]), sys.argv[6]
stop_file = sys.argv[7] if len(sys.argv) > 7 else None
token = open(token_file).read().strip()
ctx = ssl.create_default_context(cafile=ca)
rng = random.Random(ident)
current, conn = 0, None


def connect():
    global conn
    u = urllib.parse.urlparse(urls[current])
    conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=15, context=ctx)
    conn.connect()


def request(method, path, body):
    """(status, None) or (None, "unknown"); moves to the next URL on a
    connection that cannot be made."""
    global current, conn
    for _ in range(len(urls) * 3):
        if conn is None:
            try:
                connect()
            except (OSError, ssl.SSLError):
                conn = None
                current = (current + 1) % len(urls)
                time.sleep(0.05)
                continue
        try:
            conn.request(method, path, body, {"Content-Type": "application/json",
                                              "Authorization": "Bearer " + token})
        except (OSError, http.client.HTTPException):
            # not sent whole: a keep-alive connection the server had closed
            conn = None
            continue
        try:
            r = conn.getresponse()
            r.read()
            return r.status, None
        except (OSError, http.client.HTTPException, socket.timeout):
            conn = None
            current = (current + 1) % len(urls)
            return None, "unknown"
    return 0, None   # nobody could be reached: refused, nothing sent


PATHS = {
    "namespace": ("/api/v1/namespaces", "Namespace"),
    "service": ("/api/v1/namespaces/default/services", "Service"),
    "node": ("/api/v1/nodes", "Node"),
    "pod": ("/api/v1/namespaces/default/pods", "Pod"),
}


def body_of(kind, name, n):
    k = PATHS[kind][1]
    o = {"apiVersion": "v1", "kind": k, "metadata": {"name": name}}
    if kind == "service":
        o["spec"] = {"ports": [{"port": 80}]}
    elif kind == "node":
        o["status"] = {"addresses": [{"type": "InternalIP",
                                      "address": "10.%d.%d.%d" % (200 + int(ident) % 50, n // 256 % 256, n % 256)}]}
    elif kind == "pod":
        o["spec"] = {"containers": [{"name": "c", "image": "churn"}]}
    return json.dumps(o)


live = []   # (kind, name) created and acknowledged, not yet deleted
deadline = time.monotonic() + seconds
seq = 0
with open(out, "w") as f:
    while time.monotonic() < deadline and not (stop_file and os.path.exists(stop_file)):
        seq += 1
        if live and rng.random() < 0.4:
            kind, name = live.pop(rng.randrange(len(live)))
            op, method, path, body = "delete", "DELETE", PATHS[kind][0] + "/" + name, None
        else:
            kind = rng.choice(list(PATHS))
            name = "ch%s-%s-%d" % (ident, kind[:2], seq)
            op, method, path, body = "create", "POST", PATHS[kind][0], body_of(kind, name, seq)
        status, why = request(method, path, body)
        if why or status in (500, 504):   # the store's "outcome unknown" (docs/store.md)
            outcome = "unknown"
        elif 200 <= status < 300:
            outcome = "ack"
            if op == "create":
                live.append((kind, name))
        else:
            outcome = "refused %d" % status
        f.write("%d %s %s %s %s\n" % (seq, op, kind, name, outcome))
        f.flush()
