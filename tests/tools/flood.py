#!/usr/bin/env python3
"""flood.py — a connection flood against weft-controller from loopback,
bounded in count and time, while a normal client probes it.

  Over HTTPS when --ca FILE (or SSL_CERT_FILE) names the controller's CA:
  the idle wave is raw TCP that never starts a handshake, every other
  client speaks TLS first.

  flood.py populate URL TOKEN_FILE NAMESPACE COUNT BYTES
      make NAMESPACE and COUNT pods in it, each with an annotation of BYTES
      (one keep-alive connection)

  flood.py run PORT TOKEN_FILE PID [--cap N] [--header-timeout S]
               [--idle-timeout S] [--wave N] [--slow N] [--lists N]
               [--rounds N] [--list-ns NS] [--list-items N] [--watches N]
               [--bound S]
      at once, each from its own loopback address (the controller counts
      connections per client address):
        127.0.0.2  WAVE idle connections opened at once (refused beyond the
                   cap, the rest closed by the header timeout), then the cap
                   + 8 held open, reopened as they close, until the end
        127.0.0.3  SLOW connections sending a request head a byte every
                   100 ms that never ends
        127.0.0.4  LISTS clients listing /api/v1/namespaces/NS/pods ROUNDS
                   times each
        127.0.0.5  WATCHES watch streams, one after the other (more than
                   the cap: they do not count once they stream), kept past
                   the idle timeout, and one more plain request from the
                   same address
        127.0.0.1  the normal client: GET /healthz and GET
                   /api/v1/namespaces/default (token) on new connections
                   every 50 ms, each timed
      and samples the controller's open descriptors (/proc/PID/fd).  Ends
      when every part is done and the idle timeout has passed; prints one
      JSON object of what it saw (flood.sh asserts on it).
"""
import argparse, http.client, json, os, select, socket, ssl, sys, threading, time
import urllib.parse

CTX = None	# the TLS context when the API is HTTPS


def tls_context(ca):
    return ssl.create_default_context(cafile=ca) if ca else None


def http_conn(port, timeout, src=None):
    kw = {"timeout": timeout}
    if src:
        kw["source_address"] = (src, 0)
    if CTX:
        return http.client.HTTPSConnection("127.0.0.1", port, context=CTX, **kw)
    return http.client.HTTPConnection("127.0.0.1", port, **kw)


def populate(url, token_file, ns, count, size):
    u = urllib.parse.urlparse(url)
    hdr = {"Authorization": "Bearer " + open(token_file).read().strip(),
           "Content-Type": "application/json"}
    ctx = tls_context(os.environ.get("SSL_CERT_FILE")) if u.scheme == "https" else None
    conn = (http.client.HTTPSConnection(u.hostname, u.port, timeout=60, context=ctx) if ctx
            else http.client.HTTPConnection(u.hostname, u.port, timeout=60))

    def post(path, body):
        conn.request("POST", path, json.dumps(body), hdr)
        r = conn.getresponse()
        r.read()
        if r.status != 201:
            sys.exit("POST %s: HTTP %d" % (path, r.status))

    post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pad = "x" * size
    for i in range(count):
        post("/api/v1/namespaces/%s/pods" % ns,
             {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "big-%d" % i, "annotations": {"flood.weft.io/pad": pad}}})


def connect(port, src, timeout=5, tls=False):
    """A connection from src; with tls (and an HTTPS API) handshaken."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    if tls and CTX:
        s = CTX.wrap_socket(s, server_hostname="127.0.0.1")
    return s


def recv_now(s):
    """(bytes received, closed) without blocking; b"" when nothing came."""
    r, _, _ = select.select([s], [], [], 0)
    if not r and not (isinstance(s, ssl.SSLSocket) and s.pending()):
        return b"", False
    timeout = s.gettimeout()
    s.settimeout(0)
    try:
        d = s.recv(65536)
        return d, d == b""
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return b"", False
    except OSError:
        return b"", True
    finally:
        try:
            s.settimeout(timeout)
        except OSError:
            pass


def server_closed(s):
    """Has the server closed (or reset) s?  Never blocks."""
    return recv_now(s)[1]


class Run:
    def __init__(self, a):
        self.a = a
        self.token = open(a.token_file).read().strip()
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.res = {"cap": a.cap, "wave": a.wave, "slow": a.slow, "watches": a.watches,
                    "lists": a.lists, "rounds": a.rounds}
        self.lock = threading.Lock()

    def elapsed(self):
        return time.monotonic() - self.t0

    def put(self, **kv):
        with self.lock:
            self.res.update(kv)

    # 127.0.0.2: a wave of idle connections, then steady pressure at the cap
    def idle(self):
        a = self.a
        socks, opened = [], []
        for _ in range(a.wave):
            try:
                socks.append(connect(a.port, "127.0.0.2"))
                opened.append(time.monotonic())
            except OSError:
                break
        alive = list(range(len(socks)))
        # the refusals come at once, well before the header timeout
        deadline = time.monotonic() + min(1.5, a.header_timeout * 0.75)
        while time.monotonic() < deadline and len(alive) > a.cap:
            alive = [i for i in alive if not server_closed(socks[i])]
            time.sleep(0.02)
        alive = [i for i in alive if not server_closed(socks[i])]
        self.put(wave_opened=len(socks), wave_refused=len(socks) - len(alive), wave_accepted=len(alive))
        # the accepted ones never send a head: closed by the header timeout
        lifetimes = {}
        deadline = time.monotonic() + a.header_timeout + 5
        while alive and time.monotonic() < deadline:
            for i in list(alive):
                if server_closed(socks[i]):
                    lifetimes[i] = time.monotonic() - opened[i]
                    alive.remove(i)
            time.sleep(0.02)
        self.put(wave_closed=len(lifetimes), wave_still_open=len(alive),
                 wave_min_s=round(min(lifetimes.values(), default=0), 3),
                 wave_max_s=round(max(lifetimes.values(), default=0), 3))
        for s in socks:
            s.close()
        self.put(wave_done=True)
        # steady pressure until the end: hold the cap + 8, reopening what closes
        held, reopened = [], 0
        while not self.stop.is_set():
            for s in [s for s in held if server_closed(s)]:
                s.close()
                held.remove(s)
            while len(held) < a.cap + 8:
                try:
                    held.append(connect(a.port, "127.0.0.2"))
                    reopened += 1
                except OSError:
                    break
            self.stop.wait(0.1)
        for s in held:
            s.close()
        self.put(pressure_connects=reopened)

    # 127.0.0.3: heads that trickle in and never end
    def slow(self):
        a = self.a
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000
        socks = [connect(a.port, "127.0.0.3", tls=True) for _ in range(a.slow)]
        opened = time.monotonic()
        sent = [0] * len(socks)
        got = 0
        lifetimes = {}
        deadline = opened + a.header_timeout + 5
        while len(lifetimes) < len(socks) and time.monotonic() < deadline:
            for i, s in enumerate(socks):
                if i in lifetimes:
                    continue
                d, closed = recv_now(s)
                got += len(d)
                if not closed:
                    try:
                        s.send(head[sent[i]:sent[i] + 1])
                        sent[i] += 1
                    except OSError:
                        closed = True
                if closed:
                    lifetimes[i] = time.monotonic() - opened
            time.sleep(0.1)
        for s in socks:
            s.close()
        self.put(slow_closed=len(lifetimes), slow_bytes_received=got,
                 slow_bytes_sent_max=max(sent, default=0),
                 slow_min_s=round(min(lifetimes.values(), default=0), 3),
                 slow_max_s=round(max(lifetimes.values(), default=0), 3), slow_done=True)

    # 127.0.0.4: big lists in parallel
    def lists(self):
        a = self.a
        out = []

        def one():
            c = http_conn(a.port, 120, "127.0.0.4")
            for _ in range(a.rounds):
                t = time.monotonic()
                try:
                    c.request("GET", "/api/v1/namespaces/%s/pods" % a.list_ns,
                              headers={"Authorization": "Bearer " + self.token})
                    r = c.getresponse()
                    body = r.read()
                    n = len(json.loads(body)["items"]) if r.status == 200 else -1
                except Exception as e:
                    out.append({"error": str(e)})
                    return
                out.append({"status": r.status, "items": n, "bytes": len(body),
                            "s": time.monotonic() - t})
            c.close()

        ts = [threading.Thread(target=one) for _ in range(a.lists)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        complete = sum(1 for o in out if o.get("status") == 200 and o.get("items") == a.list_items)
        self.put(lists_complete=complete, lists_errors=[o for o in out if "error" in o][:3],
                 list_mib=round(max((o.get("bytes", 0) for o in out), default=0) / 2**20, 1),
                 list_max_s=round(max((o.get("s", 0) for o in out), default=0), 3), lists_done=True)

    # 127.0.0.5: watch streams beyond the cap, kept past the idle timeout
    def watches(self):
        a = self.a
        req = ("GET /api/v1/namespaces/default/pods?watch=1 HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\n\r\n" % self.token).encode()
        socks, ok = [], 0
        for _ in range(a.watches):
            # one after the other, as a client starts its watches: a stream
            # stops counting once it streams, not while its head is on the way
            try:
                s = connect(a.port, "127.0.0.5", tls=True)
                s.sendall(req)
                socks.append(s)
                ok += s.recv(4096).startswith(b"HTTP/1.1 200")
            except OSError:
                pass
        # with the streams open, the same address still gets a plain request in
        try:
            c = http_conn(a.port, 5, "127.0.0.5")
            c.request("GET", "/healthz")
            same = c.getresponse().status
            c.close()
        except Exception as e:
            same = str(e)
        opened = time.monotonic()
        self.put(watches_ok=ok, same_client_after_watches=same, watches_opened_at=opened)
        self.stop.wait()
        self.put(watches_lived_s=round(time.monotonic() - opened, 3),
                 watches_open_at_end=sum(1 for s in socks if not server_closed(s)))
        for s in socks:
            s.close()

    # 127.0.0.1: the normal client
    def probe(self):
        a = self.a
        stats = {"healthz": [], "get": []}
        errors = {"healthz": [], "get": []}
        paths = {"healthz": ("/healthz", {}),
                 "get": ("/api/v1/namespaces/default", {"Authorization": "Bearer " + self.token})}
        while not self.stop.is_set():
            for k, (path, hdr) in paths.items():
                t = time.monotonic()
                try:
                    c = http_conn(a.port, a.bound * 5)
                    c.request("GET", path, headers=hdr)
                    r = c.getresponse()
                    r.read()
                    c.close()
                    if r.status != 200:
                        errors[k].append("HTTP %d" % r.status)
                except Exception as e:
                    errors[k].append("%s at %.1f s" % (e, self.elapsed()))
                stats[k].append(time.monotonic() - t)
            self.stop.wait(0.05)
        for k in stats:
            v = sorted(stats[k])
            self.put(**{k + "_n": len(v), k + "_errors": errors[k][:3],
                        k + "_max_ms": round(1000 * (v[-1] if v else 0), 1),
                        k + "_p99_ms": round(1000 * (v[int(0.99 * (len(v) - 1))] if v else 0), 1),
                        k + "_over_bound": sum(1 for x in v if x > a.bound)})

    def fds(self):
        m = 0
        while not self.stop.is_set():
            try:
                m = max(m, len(os.listdir("/proc/%d/fd" % self.a.pid)))
            except OSError:
                pass
            self.stop.wait(0.05)
        self.put(fd_max=m)

    def main(self):
        parts = [self.idle, self.slow, self.lists, self.watches, self.probe, self.fds]
        ts = [threading.Thread(target=p) for p in parts]
        for t in ts:
            t.start()
        # every part done and the idle timeout (+1 s) passed, bounded
        limit = 120
        while self.elapsed() < limit:
            with self.lock:
                done = all(self.res.get(k) for k in ("wave_done", "slow_done", "lists_done"))
                watched = self.res.get("watches_opened_at")
            # the watch streams must outlive the idle timeout, however
            # long opening them took (40 handshakes under ASan)
            if done and watched and time.monotonic() - watched > self.a.idle_timeout + 2:
                break
            time.sleep(0.1)
        self.put(seconds=round(self.elapsed(), 1), timed_out=self.elapsed() >= limit)
        self.stop.set()
        for t in ts:
            t.join()
        print(json.dumps(self.res, sort_keys=True))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "populate":
        url, token_file, ns, count, size = sys.argv[2:7]
        populate(url, token_file, ns, int(count), int(size))
        return
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["run"])
    p.add_argument("port", type=int)
    p.add_argument("token_file")
    p.add_argument("pid", type=int)
    p.add_argument("--cap", type=int, default=16)
    p.add_argument("--header-timeout", type=float, default=2)
    p.add_argument("--idle-timeout", type=float, default=5)
    p.add_argument("--wave", type=int, default=600)
    p.add_argument("--slow", type=int, default=8)
    p.add_argument("--lists", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--list-ns", default="big")
    p.add_argument("--list-items", type=int, default=0)
    p.add_argument("--watches", type=int, default=40)
    p.add_argument("--bound", type=float, default=1.0)
    p.add_argument("--ca", default=os.environ.get("SSL_CERT_FILE"))
    a = p.parse_args()
    global CTX
    CTX = tls_context(a.ca)
    Run(a).main()


if __name__ == "__main__":
    main()
