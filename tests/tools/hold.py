# hold.py IP PORT N RELEASE: open N TCP connections to IP:PORT at once and
# hold them.  Once every connect has finished, or after 3 s, print
# "connected K" (K = the ones that succeeded); then wait until the file
# RELEASE exists, close them all and exit.  A client pinning its share of
# a conntrack table (tests/e2e/attack_conntrack.sh, drops_report.sh).
import os, resource, select, socket, sys, time

ip, port, n, release = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
if hard != resource.RLIM_INFINITY and hard < n + 64:
    sys.exit(f"hold.py: {n} connections need {n + 64} descriptors, the limit is {hard}")
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, hard))
socks = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((ip, port))
    socks.append(s)
p = select.poll()
for s in socks:
    p.register(s, select.POLLOUT)
done, deadline = set(), time.time() + 3
while len(done) < n and time.time() < deadline:
    for fd, ev in p.poll(200):
        done.add(fd)
        p.unregister(fd)
ok = sum(1 for s in socks if s.fileno() in done and
         s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
print("connected", ok, flush=True)
while not os.path.exists(release):
    time.sleep(0.05)
for s in socks:
    s.close()
