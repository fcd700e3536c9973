#!/usr/bin/env python3
"""chaos_check.py — the verdicts of the HA chaos test, from what the
clients logged (churn.py, watch_log.py) and the cluster's final state
(DIR/final-*.json: the lists of namespaces, services, nodes, pods,
netnamespaces and hostsubnets, read after the churn stopped).  Prints one
line a verdict, "ok TEXT" or "FAIL TEXT: WHY", and the counts.

  writes      every object's final presence is one its clients' outcomes
              allow: an acknowledged create is there unless an
              acknowledged (or unknown) delete followed; a refused create is
              not; an unknown one may be either
  allocations every namespace has its NetNamespace, every Service its
              cluster IP, every Node its HostSubnet, and none is shared
  watchers    each watcher's events come in revision order, none twice,
              and replaying them on its last list gives the final set

usage: chaos_check.py DIR
"""
import collections, glob, json, os, sys

d = sys.argv[1]
final = {k: json.load(open(os.path.join(d, "final-%s.json" % k)))["items"]
         for k in ("namespaces", "services", "nodes", "pods", "netnamespaces", "hostsubnets")}
failed = 0


def verdict(ok, text, why=""):
    global failed
    print("ok %s" % text if ok else "FAIL %s: %s" % (text, why))
    failed += not ok


# ---- writes
present = {
    "namespace": {o["metadata"]["name"] for o in final["namespaces"]},
    "service": {o["metadata"]["name"] for o in final["services"] if o["metadata"].get("namespace") == "default"},
    "node": {o["metadata"]["name"] for o in final["nodes"]},
    "pod": {o["metadata"]["name"] for o in final["pods"] if o["metadata"].get("namespace") == "default"},
}
ops = collections.defaultdict(list)
count = collections.Counter()
for path in sorted(glob.glob(os.path.join(d, "churn-*.log"))):
    for line in open(path):
        f = line.split()
        if len(f) < 5:
            continue
        seq, op, kind, name, outcome = int(f[0]), f[1], f[2], f[3], f[4]
        ops[(kind, name)].append((seq, op, outcome))
        count["%s %s" % (op, outcome)] += 1
lost, phantom, bad = [], [], []
unknown_there = unknown_absent = 0
for (kind, name), seq in ops.items():
    can = {False}
    for _, op, outcome in sorted(seq):
        want = op == "create"
        if outcome == "ack":
            can = {want}
        elif outcome == "unknown":
            can = can | {want}
    there = name in present[kind]
    if there not in can:
        (lost if there is False else phantom).append("%s %s (%s)" % (kind, name, ", ".join(
            "%s %s" % (op, o) for _, op, o in sorted(seq))))
    elif len(can) == 2:
        if there:
            unknown_there += 1
        else:
            unknown_absent += 1
print("  writes: %s" % ", ".join("%s %d" % kv for kv in sorted(count.items())))
print("  outcome unknown: %d applied, %d not" % (unknown_there, unknown_absent))
verdict(sum(count.values()) > 0, "the churn clients wrote", "no writes logged")
verdict(not lost, "no acknowledged write is lost (%d objects checked)" % len(ops), "; ".join(lost[:5]))
verdict(not phantom, "nothing refused or deleted appears", "; ".join(phantom[:5]))

# ---- allocations
netns = {o["metadata"]["name"]: o.get("netid") for o in final["netnamespaces"]}
missing = sorted(n for n in present["namespace"] if n not in netns)
verdict(not missing, "every Namespace has its NetNamespace (%d)" % len(present["namespace"]), " ".join(missing[:5]))
ids = [v for v in netns.values() if v not in (0, None)]
dup = [v for v, n in collections.Counter(ids).items() if n > 1]
verdict(not dup, "no VNID is shared (%d)" % len(ids), str(dup[:5]))
ips = [o["spec"].get("clusterIP") for o in final["services"]]
verdict(all(ips), "every Service has a cluster IP (%d)" % len(ips), "")
dup = [v for v, n in collections.Counter(i for i in ips if i and i != "None").items() if n > 1]
verdict(not dup, "no cluster IP is shared", str(dup[:5]))
hs = {o["metadata"]["name"]: o for o in final["hostsubnets"]}
missing = sorted(n for n in present["node"] if n not in hs)
verdict(not missing, "every Node has its HostSubnet (%d)" % len(present["node"]), " ".join(missing[:5]))
for field in ("nodeID", "subnet"):
    dup = [v for v, n in collections.Counter(o.get(field) for o in hs.values()).items() if n > 1]
    verdict(not dup, "no HostSubnet %s is shared" % field, str(dup[:5]))

# ---- watchers
final_ns = present["namespace"]
for path in sorted(glob.glob(os.path.join(d, "watch-*.log"))):
    w = os.path.basename(path)
    seen, last_rv, order_bad, twice = None, 0, [], []
    events = relists = resumes = 0
    keys = set()
    for line in open(path):
        f = line.split()
        if f[0] == "LIST":
            relists += 1
            seen, last_rv, keys = set(f[2:]), int(f[1]), set()
        elif f[0] == "RESUME":
            resumes += 1
        elif f[0] == "EVENT":
            events += 1
            rv, typ, name = int(f[1]), f[2], f[3]
            if rv < last_rv:
                order_bad.append("%d after %d" % (rv, last_rv))
            if (rv, typ, name) in keys:
                twice.append("%s %s at %d" % (typ, name, rv))
            keys.add((rv, typ, name))
            last_rv = rv
            if typ == "DELETED":
                seen.discard(name)
            else:
                seen.add(name)
    print("  %s: %d events, %d lists, %d resumes" % (w, events, relists, resumes))
    verdict(not order_bad, "%s: events in revision order" % w, "; ".join(order_bad[:3]))
    verdict(not twice, "%s: no event twice" % w, "; ".join(twice[:3]))
    diff = (seen or set()) ^ final_ns
    verdict(seen is not None and not diff, "%s: its events replayed give the final Namespaces (%d)" % (w, len(final_ns)),
            "differ in %s" % " ".join(sorted(diff)[:8]))
sys.exit(1 if failed else 0)
