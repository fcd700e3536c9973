#!/usr/bin/env python3
"""lb_backends.py — test backends for tests/api/lb_engine.sh.

  lb_backends.py serve IP:PORT...      one HTTP server per address, each
                                       answering any GET with one line:
                                       "srv=IP:PORT path=PATH xff=... fwd=..."
  lb_backends.py count URL N HOST      N GETs of URL with Host HOST (a new
                                       connection each); prints "srv count"
                                       lines, then "errors N"
"""
import http.client
import http.server
import socketserver
import sys
import threading
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ip, port = self.server.server_address[:2]
        body = "srv=%s:%d path=%s xff=%s fwd=%s\n" % (
            ip, port, self.path, self.headers.get("X-Forwarded-For", "-"),
            self.headers.get("Forwarded", "-"))
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self):
        # HTTPServer.server_bind asks DNS for the address's name
        # (socket.getfqdn): a query to the resolver, which a pod's network
        # namespace cannot reach (and must not try to)
        socketserver.TCPServer.server_bind(self)
        self.server_name = self.server_address[0]
        self.server_port = self.server_address[1]


def serve(addrs):
    servers = []
    for a in addrs:
        ip, port = a.rsplit(":", 1)
        servers.append(Server((ip, int(port)), Handler))
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("listening", len(servers), flush=True)
    threading.Event().wait()


def count(url, n, host):
    u = urllib.parse.urlsplit(url)
    seen, errors = {}, 0
    for _ in range(n):
        try:
            c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=5)
            c.request("GET", u.path or "/", headers={"Host": host})
            r = c.getresponse()
            body = r.read().decode()
            c.close()
            if r.status != 200:
                errors += 1
                continue
            srv = body.split()[0][4:]
            seen[srv] = seen.get(srv, 0) + 1
        except OSError:
            errors += 1
    for k in sorted(seen):
        print(k, seen[k])
    print("errors", errors)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        count(sys.argv[2], int(sys.argv[3]), sys.argv[4])
