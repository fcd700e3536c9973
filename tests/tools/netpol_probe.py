#!/usr/bin/env python3
# netpol_probe.py [TIMEOUT_S] — many connection probes at once, from the
# network namespace it runs in (ip netns exec POD-NETNS python3 ...).
#
# It reads batches from stdin, each a list of lines "KEY IP PORT tcp|udp"
# ended by an empty line or the end of input; for each batch it probes
# every line at once and writes one line per probe, then an empty line:
#     KEY yes ANSWER        the server answered (ANSWER: its first line,
#                           peer.py's "NAME CLIENTIP")
#     KEY no REASON         refused, reset, no answer within TIMEOUT_S
# So one process serves every round of a test (no interpreter start per
# round), and a round takes about TIMEOUT_S (default 1.0) at most.
#
# tcp: connect and read the answer line.  udp: a datagram (peer.py answers
# each), sent again every TIMEOUT_S/3 while unanswered, from one socket,
# so one lost datagram does not turn an allowed flow into "no".
#
# UDP source ports: a datagram from the address and port of a flow seen in
# the last minute belongs to that flow (UDP has no "new connection"), and
# weft lets a flow allowed before a policy change go on until it idles
# out; so does every conntrack-based data plane.  A probe must be a new
# flow: each UDP probe binds the next port of a range the prober walks
# through (PORT_LO..PORT_HI), not one the kernel picks at random, which
# may be one a probe to the same destination used seconds ago.
import random, socket, sys, threading, time

timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
PORT_LO, PORT_HI = 20000, 60000
next_port = [random.randrange(PORT_LO, PORT_HI)]
port_lock = threading.Lock()


def udp_socket():
    """A UDP socket bound to the next free port of the walk."""
    for _ in range(64):
        with port_lock:
            port = next_port[0]
            next_port[0] = PORT_LO + (port + 1 - PORT_LO) % (PORT_HI - PORT_LO)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("0.0.0.0", port))
            return s
        except OSError:
            s.close()
    raise OSError("no free source port")


def tcp(ip, port):
    deadline = time.monotonic() + timeout
    with socket.create_connection((ip, port), timeout=timeout) as s:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        line = s.makefile().readline().strip()
        if not line:
            raise OSError("closed without an answer")
        return line


def udp(ip, port):
    deadline = time.monotonic() + timeout
    with udp_socket() as s:
        s.connect((ip, port))
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OSError("no answer")
            s.send(b"probe\n")
            s.settimeout(min(left, timeout / 3))
            try:
                return s.recv(200).decode(errors="replace").strip()
            except socket.timeout:
                pass


def probe(line, out, lock):
    try:
        key, ip, port, proto = line.split()
        verdict = "yes " + (tcp if proto == "tcp" else udp)(ip, int(port))
    except (OSError, ValueError) as e:
        key = line.split()[0] if line.split() else "?"
        verdict = "no " + (str(e) or type(e).__name__)
    with lock:
        out.append("%s %s" % (key, verdict.replace("\n", " ")))


def batch(lines):
    out, lock = [], threading.Lock()
    threads = [threading.Thread(target=probe, args=(l, out, lock)) for l in lines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.stdout.write("".join(l + "\n" for l in out) + "\n")
    sys.stdout.flush()


def main():
    lines = []
    for line in sys.stdin:
        if line.strip():
            lines.append(line.strip())
        elif lines:
            batch(lines)
            lines = []
    if lines:
        batch(lines)


main()
