# peer.py serve PORT [NAME]: answer each TCP connection and each UDP datagram
#                     on PORT with the client's address as seen here (after
#                     "NAME " when a name is given), and log it on stdout:
#                     "tcp ADDR" or "udp ADDR PAYLOAD"
# peer.py tcp|udp IP PORT [PAYLOAD]: ask the server at IP:PORT, print its answer;
#                     on failure, print the error and how long the exchange
#                     took ("... (after N ms)": process start not counted)
import socket, sys, threading, time
mode = sys.argv[1]
if mode == "serve":
    port = int(sys.argv[2])
    prefix = (sys.argv[3] + " ").encode() if len(sys.argv) > 3 else b""
    lock = threading.Lock()
    def log(line):
        with lock:
            print(line, flush=True)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", port))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind(("0.0.0.0", port))
    t.listen(64)
    def udp():
        while True:
            data, peer = u.recvfrom(2048)
            log("udp %s %s" % (peer[0], data.decode(errors="replace").strip()))
            u.sendto(prefix + peer[0].encode() + b"\n", peer)
    threading.Thread(target=udp, daemon=True).start()
    while True:
        c, peer = t.accept()
        log("tcp %s" % peer[0])
        with c:
            try:
                c.sendall(prefix + peer[0].encode() + b"\n")
            except OSError:	# the client is gone already (reset)
                pass
else:
    ip, port = sys.argv[2], int(sys.argv[3])
    payload = (sys.argv[4] if len(sys.argv) > 4 else "who").encode() + b"\n"
    t0 = time.monotonic()
    try:
        if mode == "tcp":
            s = socket.create_connection((ip, port), timeout=2)
            print(s.makefile().readline().strip())
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(0.7)
            s.connect((ip, port))
            for attempt in range(3):	# a datagram may be lost; three tries
                s.send(payload)
                try:
                    print(s.recv(100).decode().strip())
                    break
                except socket.timeout:
                    pass
            else:
                raise OSError("no answer in 3 tries")
    except OSError as e:
        print(f"{mode} {ip}:{port}: {e} (after {int((time.monotonic() - t0) * 1000)} ms)")
        sys.exit(1)
