# chat.py IP PORT STOP: one TCP connection to an echo server at IP:PORT
# (socat ... PIPE); every 0.1 s a line "N", and its echo awaited (2 s at
# most), until the file STOP exists.  Prints "connected" once connected,
# then "TIME_NS ok N" for each echo (the wall clock, as `date +%s%N`); on
# an error "TIME_NS fail REASON", and exits 1.  A long-lived connection
# whose every exchange is seen (tests/e2e/netpol_ops.sh).
import os, socket, sys, time

ip, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    s = socket.create_connection((ip, port), timeout=2)
except OSError as e:
    print("%d fail connect: %s" % (time.time_ns(), e), flush=True)
    sys.exit(1)
print("connected", flush=True)
f = s.makefile("rb")
n = 0
while not os.path.exists(stop):
    n += 1
    try:
        s.sendall(b"%d\n" % n)
        got = f.readline().strip()
        if got != b"%d" % n:
            raise OSError("echo %r, expected %d" % (got, n))
    except OSError as e:
        print("%d fail %s" % (time.time_ns(), e or type(e).__name__), flush=True)
        sys.exit(1)
    print("%d ok %d" % (time.time_ns(), n), flush=True)
    time.sleep(0.1)
s.close()
