#!/usr/bin/env python3
"""watch_log.py — a watcher of the HA chaos test: lists Namespaces, then
watches them through the controllers (URLS, comma-separated), resuming
from the last resourceVersion it saw on whichever controller answers when
a stream breaks, and listing again only on 410, as weft's agent does.  It
logs to OUT, one line each:

  LIST RV NAME...        a list (the first, or after a 410) at RV
  EVENT RV TYPE NAME     a watch event (ADDED, MODIFIED, DELETED)
  RESUME RV URL          a stream broke; resuming from RV

It runs until it sees the Namespace named STOP added, then exits 0.

usage: watch_log.py URLS TOKEN_FILE CA_FILE OUT STOP
"""
import http.client, json, ssl, sys, time, urllib.parse

urls, token_file, ca, out, stop = sys.argv[1].split(","), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
token = open(token_file).read().strip()
ctx = ssl.create_default_context(cafile=ca)
hdr = {"Authorization": "Bearer " + token}
current = 0
log = open(out, "w", buffering=1)


def conn():
    u = urllib.parse.urlparse(urls[current])
    return http.client.HTTPSConnection(u.hostname, u.port, timeout=60, context=ctx)


def next_url():
    global current
    current = (current + 1) % len(urls)


def list_all():
    while True:
        try:
            c = conn()
            c.request("GET", "/api/v1/namespaces", headers=hdr)
            r = c.getresponse()
            body = r.read()
            if r.status == 200:
                d = json.loads(body)
                rv = d["metadata"]["resourceVersion"]
                log.write("LIST %s %s\n" % (rv, " ".join(sorted(i["metadata"]["name"] for i in d["items"]))))
                return rv
        except Exception:
            pass
        next_url()
        time.sleep(0.1)


rv = list_all()
while True:
    try:
        c = conn()
        c.request("GET", "/api/v1/namespaces?watch=1&allowWatchBookmarks=false&timeoutSeconds=30&resourceVersion=%s" % rv,
                  headers=hdr)
        r = c.getresponse()
        if r.status == 410:
            r.read()
            rv = list_all()
            continue
        if r.status != 200:
            r.read()
            raise OSError("HTTP %d" % r.status)
        while True:
            line = r.readline()
            if not line:
                break   # the watch ended (its timeout): renew from rv
            e = json.loads(line)
            o = e["object"]
            if e["type"] == "ERROR":
                if o.get("code") == 410:
                    rv = list_all()
                break
            if e["type"] == "BOOKMARK":
                rv = o["metadata"]["resourceVersion"]
                continue
            rv = o["metadata"]["resourceVersion"]
            log.write("EVENT %s %s %s\n" % (rv, e["type"], o["metadata"]["name"]))
            if e["type"] == "ADDED" and o["metadata"]["name"] == stop:
                sys.exit(0)
    except (OSError, http.client.HTTPException, ValueError):
        next_url()
        log.write("RESUME %s %s\n" % (rv, urls[current]))
        time.sleep(0.05)
