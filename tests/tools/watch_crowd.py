#!/usr/bin/env python3
"""watch_crowd.py URL TOKEN_FILE N — a crowd of watch streams that the
controller must be able to stop under (tests/api/stop_watches.sh).

Opens N watch streams of the pods of namespace "default" (over TLS when URL
is https; SSL_CERT_FILE names the CA), from 127.0.0.2, 127.0.0.3, ... a
hundred to an address.  Every other stream is read as it comes; the rest
are never read, so their sockets fill up.  Meanwhile WRITERS threads
create pods of PAD bytes in "default", so that every stream has events to
send.  Once every stream has its 200 and the writes are under way it
prints "open K" (K: the streams that got a 200) and "writes W" (W: writes
acknowledged so far) and keeps going — reading, writing — until the
controller goes away (its connections close) or DURATION seconds pass.
At the end it prints "acked A": pods created (201) whose names are in
ACKS (one "pod NAME" a line, for tests/lib.sh lost_acks).
"""
import json, os, selectors, socket, ssl, sys, threading, time, urllib.parse

WRITERS = 2
PAD = 2048
PAUSE = 0.01	# seconds between a writer's writes
DURATION = 120

url, token_file, n, acks_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
u = urllib.parse.urlparse(url)
token = open(token_file).read().strip()
ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE")) if u.scheme == "https" else None
stop = threading.Event()
acked = []
lock = threading.Lock()


def connect(src, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect((u.hostname, u.port))
    if ctx:
        s = ctx.wrap_socket(s, server_hostname=u.hostname)
    return s


def request(s, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    head = ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (method, path, token, len(data)))
    s.sendall(head.encode() + data)


def status_of(s):
    """The status of the answer on s (its body read and dropped): keep-alive."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise OSError("closed")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    length = 0
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    while len(rest) < length:
        d = s.recv(65536)
        if not d:
            raise OSError("closed")
        rest += d
    return int(lines[0].split()[1])


def writer(k):
    pad = "x" * PAD
    i = 0
    s = None
    while not stop.is_set():
        try:
            if s is None:
                s = connect("127.0.0.1")
            name = "w%d-%d" % (k, i)
            request(s, "POST", "/api/v1/namespaces/default/pods",
                    {"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "annotations": {"crowd.weft.io/pad": pad}}})
            if status_of(s) == 201:
                with lock:
                    acked.append(name)
            i += 1
            stop.wait(PAUSE)
        except OSError:
            if s is not None:
                s.close()
            s = None
            time.sleep(0.05)	# the controller is going away (or gone)


def main():
    threads = [threading.Thread(target=writer, args=(k,), daemon=True) for k in range(WRITERS)]
    for t in threads:
        t.start()
    streams, readers, ok = [], [], 0
    for i in range(n):
        try:
            w = connect("127.0.0.%d" % (2 + i // 100))
            request(w, "GET", "/api/v1/namespaces/default/pods?watch=1")
            ok += w.recv(4096).startswith(b"HTTP/1.1 200")
            w.setblocking(False)
            streams.append(w)
            if i % 2 == 0:
                readers.append(w)
        except OSError as e:
            print("watch %d: %s" % (i, e), file=sys.stderr)
    with lock:
        print("open %d" % ok, "writes %d" % len(acked), sep="\n", flush=True)
    deadline = time.monotonic() + DURATION
    live = selectors.DefaultSelector()
    for w in readers:
        live.register(w, selectors.EVENT_READ)
    # read the readers until every one has been closed by the server
    while live.get_map() and time.monotonic() < deadline:
        for key, _ in live.select(0.2):
            w = key.fileobj
            try:
                while True:
                    if not w.recv(65536):
                        live.unregister(w)
                        break
            except (ssl.SSLWantReadError, BlockingIOError):
                pass
            except OSError:
                live.unregister(w)
    stop.set()
    for t in threads:
        t.join(5)
    with lock:
        with open(acks_path, "w") as f:
            for name in acked:
                f.write("pod %s\n" % name)
        print("acked %d" % len(acked), flush=True)
    for w in streams:
        w.close()


main()
