# probe_loop.py IP PORT STOP [PERIOD_S] [TIMEOUT_S]: from the network
# namespace it runs in, open a TCP connection to IP:PORT every PERIOD_S
# (default 0.1), each in a thread of its own (a denied one waits out its
# timeout without delaying the next), until the file STOP exists; then,
# once every probe has ended, exit.  It prints "started" once running, then
# one line per probe as it ends:
#     START_NS END_NS yes ANSWER      connected and read the server's first
#                                     line (peer.py: "NAME CLIENTIP")
#     START_NS END_NS retrans ANSWER  the same, but the kernel had to send
#                                     the SYN again (tcp_info.total_retrans:
#                                     the first was dropped)
#     START_NS END_NS no REASON       refused, reset, or no answer within
#                                     TIMEOUT_S (default 1.5)
# START_NS and END_NS are the wall clock (time.time_ns), comparable with
# `date +%s%N`.  A prober for the whole of a scenario: what it saw while
# daemons restart (tests/e2e/netpol_ops.sh).
import os, socket, struct, sys, threading, time

ip, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
period = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 1.5
lock = threading.Lock()


def say(line):
    with lock:
        print(line, flush=True)


def total_retrans(s):
    # struct tcp_info (linux/tcp.h): __u32 tcpi_total_retrans at byte 100
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("I", info, 100)[0] if len(info) >= 104 else 0


def probe():
    t0 = time.time_ns()
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((ip, port), timeout=timeout) as s:
            retrans = total_retrans(s)
            s.settimeout(max(0.01, deadline - time.monotonic()))
            line = s.makefile().readline().strip()
            if not line:
                raise OSError("closed without an answer")
        verdict = ("retrans " if retrans else "yes ") + line
    except OSError as e:
        verdict = "no " + (str(e) or type(e).__name__)
    say("%d %d %s" % (t0, time.time_ns(), verdict.replace("\n", " ")))


say("started")
threads = []
next_at = time.monotonic()
while not os.path.exists(stop):
    t = threading.Thread(target=probe)
    t.start()
    threads.append(t)
    threads = [t for t in threads if t.is_alive()]
    next_at += period
    time.sleep(max(0, next_at - time.monotonic()))
for t in threads:
    t.join()
