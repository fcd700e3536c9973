#!/usr/bin/env python3
"""old_server_proxy.py — weft-controller as a server older than
POST /weft/v1/apply looks: plain HTTP on 127.0.0.1:PORT in front of the
controller at URL (HTTPS, trusting SSL_CERT_FILE as tests/lib.sh sets
it), every request passed on as it came except that path, which is 404 as
an older server answers an unknown path.  Each request's method and path
is appended to LOG, one a line, so a test can count what a client sent.
An answer without a length (a watch's stream) is passed on as it comes,
chunk by chunk, so agents can follow the cluster through it.

usage: old_server_proxy.py PORT URL LOG
"""
import http.client, http.server, socketserver, ssl, sys, urllib.parse

port, target, log = int(sys.argv[1]), urllib.parse.urlparse(sys.argv[2]), sys.argv[3]
GONE = "/weft/v1/apply"


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
        if self.path.split("?")[0] == GONE:
            status, ctype, data = 404, "application/json", (
                b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound",'
                b'"message":"the server could not find the requested resource","code":404}')
        else:
            conn = http.client.HTTPSConnection(target.hostname, target.port, timeout=60,
                                               context=ssl.create_default_context())
            hdr = {k: v for k, v in self.headers.items()
                   if k.lower() in ("authorization", "content-type", "accept")}
            conn.request(self.command, self.path, body, hdr)
            r = conn.getresponse()
            if r.getheader("Content-Length") is None:
                self.stream(conn, r)
                return
            status, ctype, data = r.status, r.getheader("Content-Type", ""), r.read()
            conn.close()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, conn, r):
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type", ""))
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                piece = r.read1(65536)
                if not piece:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            self.close_connection = True
        finally:
            conn.close()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = relay


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", port), Proxy).serve_forever()
