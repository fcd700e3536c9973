# flow.py — many ports, many connections and long-lived flows, for the
# services test (tests/e2e/services.sh).  Answers are peer.py's with the
# port added, so a client cannot tell the two apart but by that port.
#
#  flow.py serve NAME PORT[-LAST]...
#      TCP and UDP on every port (one thread).  A TCP connection gets
#      "NAME CLIENTIP PORT" at once and again for every line it sends; a UDP
#      datagram gets that line back.  Logs "tcp CLIENTIP PORT" per connection.
#  flow.py conns tcp|udp IP PORT N
#      N separate connections (UDP: N sockets, one datagram each, 3 tries of
#      0.7 s): one answer line per connection, or "error: ..." for a
#      connection that got none; exit 1 if any got none.
#  flow.py session tcp|udp IP PORT [SPORT]
#      one connection (UDP: one socket, bound to SPORT when given) kept until
#      killed: every 0.1 s "SEQ" is sent and "SEQ ANSWER" printed (TCP: the
#      greeting is "0 ANSWER"); a UDP datagram without an answer within
#      0.1 s prints "SEQ -" ("SEQ refused" after an ICMP unreachable) and the
#      flow goes on; a TCP error prints "SEQ error: ..." and ends (exit 1).
import selectors, socket, sys, time


def ports_of(args):
    for a in args:
        first, _, last = a.partition("-")
        yield from range(int(first), int(last or first) + 1)


def serve(name, args):
    sel = selectors.DefaultSelector()
    for port in ports_of(args):
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("0.0.0.0", port))
        u.setblocking(False)
        sel.register(u, selectors.EVENT_READ, ("udp", port))
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind(("0.0.0.0", port))
        t.listen(128)
        t.setblocking(False)
        sel.register(t, selectors.EVENT_READ, ("listen", port))
    answer = lambda ip, port: ("%s %s %d\n" % (name, ip, port)).encode()
    while True:
        for key, _ in sel.select():
            kind, port = key.data[0], key.data[1]
            s = key.fileobj
            try:
                if kind == "udp":
                    data, peer = s.recvfrom(2048)
                    s.sendto(answer(peer[0], port), peer)
                elif kind == "listen":
                    c, peer = s.accept()
                    print("tcp %s %d" % (peer[0], port), flush=True)
                    c.setblocking(False)
                    c.sendall(answer(peer[0], port))
                    sel.register(c, selectors.EVENT_READ, ("conn", port, peer[0], bytearray()))
                else:
                    data = s.recv(4096)
                    if not data:
                        sel.unregister(s)
                        s.close()
                        continue
                    buf = key.data[3]
                    buf += data
                    while b"\n" in buf:
                        del buf[:buf.index(b"\n") + 1]
                        s.sendall(answer(key.data[2], port))
            except OSError:
                if kind == "conn":
                    sel.unregister(s)
                    s.close()


def ask_udp(s, payload, tries, wait):
    for _ in range(tries):
        s.send(payload)
        s.settimeout(wait)
        try:
            return s.recv(200).decode().strip()
        except socket.timeout:
            pass
    raise OSError("no answer in %d tries" % tries)


def conns(proto, ip, port, n):
    bad = 0
    for _ in range(n):
        try:
            if proto == "tcp":
                with socket.create_connection((ip, port), timeout=2) as s:
                    print(s.makefile().readline().strip(), flush=True)
            else:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.connect((ip, port))
                    print(ask_udp(s, b"who\n", 3, 0.7), flush=True)
        except OSError as e:
            print("error: %s %s:%d: %s" % (proto, ip, port, e), flush=True)
            bad += 1
    sys.exit(1 if bad else 0)


def session(proto, ip, port, sport):
    seq = 0
    if proto == "tcp":
        try:
            s = socket.create_connection((ip, port), timeout=2)
            f = s.makefile()
            print("0 %s" % f.readline().strip(), flush=True)
            while True:
                time.sleep(0.1)
                seq += 1
                s.sendall(b"%d\n" % seq)
                line = f.readline()
                if not line:
                    raise OSError("connection closed by the server")
                print("%d %s" % (seq, line.strip()), flush=True)
        except OSError as e:
            print("%d error: %s" % (seq, e), flush=True)
            sys.exit(1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", sport))
    s.connect((ip, port))
    while True:
        seq += 1
        start = time.monotonic()
        try:
            print("%d %s" % (seq, ask_udp(s, b"%d\n" % seq, 1, 0.1)), flush=True)
        except ConnectionRefusedError:
            print("%d refused" % seq, flush=True)
        except OSError:
            print("%d -" % seq, flush=True)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - start)))


cmd = sys.argv[1] if len(sys.argv) > 1 else ""
if cmd == "serve" and len(sys.argv) >= 4:
    serve(sys.argv[2], sys.argv[3:])
elif cmd == "conns" and len(sys.argv) == 6:
    conns(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif cmd == "session" and len(sys.argv) in (5, 6):
    session(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) == 6 else 0)
else:
    sys.exit("usage: flow.py serve NAME PORT[-LAST]... | conns tcp|udp IP PORT N | "
             "session tcp|udp IP PORT [SPORT]")
