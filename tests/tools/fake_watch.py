#!/usr/bin/env python3
"""fake_watch.py PORT LOG — a plain-HTTP stand-in for weft-controller that
plays one scripted list+watch of pods, for what a real controller cannot be
made to do on cue (weftctl get -w's 410 and resume paths).  Every request
path is appended to LOG.

  list N      -> PodList at resourceVersion 10*N with one pod "listN"
  watch 1     -> 410 Expired (a Status): relist
  watch 2     -> ERROR event with code 410: relist
  watch 3     -> ADDED "added" (rv 31), BOOKMARK rv 35, end of stream: rewatch from 35
  watch 4..   -> MODIFIED "modified" (rv 36), then held open
"""
import http.server
import json
import sys
import threading

log = open(sys.argv[2], "a")
count = {"list": 0, "watch": 0}


def pod(name, rv):
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n1"},
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def event(self, ev):
        line = (json.dumps(ev) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()

    def do_GET(self):
        log.write(self.path + "\n")
        log.flush()
        if "watch=1" not in self.path:
            count["list"] += 1
            n = count["list"]
            return self.send_json(200, {"kind": "PodList", "metadata": {"resourceVersion": str(10 * n)},
                                        "items": [pod("list%d" % n, str(10 * n))]})
        count["watch"] += 1
        n = count["watch"]
        if n == 1:
            return self.send_json(410, {"kind": "Status", "status": "Failure", "reason": "Expired",
                                        "code": 410, "message": "too old resource version"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if n == 2:
            self.event({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}})
        elif n == 3:
            self.event({"type": "ADDED", "object": pod("added", "31")})
            self.event({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "35"}}})
        else:
            self.event({"type": "MODIFIED", "object": pod("modified", "36")})
            threading.Event().wait(60)
        self.wfile.write(b"0\r\n\r\n")


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
