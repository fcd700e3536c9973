#!/usr/bin/python3
"""bench/netpol/np.py — helpers of bench/netpol/run.sh.

  np.py gen SPEC.json DIR     the cluster of the benchmark, from a fixed
                              seed: DIR/pods.json (every pod: namespace,
                              name, node, labels, named ports, reference
                              IP), DIR/namespaces.json (a v1 List of the
                              labelled Namespaces), DIR/policies.json (a v1
                              List of the NetworkPolicies); prints a JSON
                              summary (counts of rules, peers, ports)
  np.py iptables PODS POLICIES LOCAL OUT_PREFIX
                              compiles the policies the way kube-router
                              does into OUT_PREFIX.ipset (ipset restore)
                              and OUT_PREFIX.rules (iptables-restore) for
                              the pods named in LOCAL (one ns/name a line):
                              the pods of the reference node; prints a JSON
                              summary
  np.py verdict PODS POLICIES NS/SRC NS/DST PORT...
                              the naive reading of the policies (the spec,
                              rule by rule) for TCP from SRC to DST: prints
                              "PORT allow|deny" per port; run.sh checks the
                              compiled reference against it
  np.py propagation SPEC.json OUT.json
                              times policy creates / updates / deletes until
                              every probe pair sees the verdict change
  np.py report RESULTS        the table, the ratios and the GOAL lines

Percentiles and medians are dp.py's (bench/dataplane/dp.py), imported.
"""
import ctypes
import hashlib
import json
import os
import random
import selectors
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dataplane"))
from dp import median, pct  # noqa: E402  (one copy of each small helper)

# ------------------------------------------------------------------ gen
# The measured pair and the pods of the propagation figure are fixed; the
# rest is drawn from random.Random(seed).
NS_ENVS = ["prod", "staging", "dev"]
TEAMS = ["payments", "search", "identity", "media", "ads", "infra", "data"]
TIERS = ["web", "api", "db", "cache", "worker"]
NAMED_PORTS = [("http", 8080), ("metrics", 9090), ("grpc", 50051), ("admin", 8443),
               ("db", 5432), ("redis", 6379)]
PAIR_NS = "np-0"
PROP_NS = "np-prop"
SERVE_PORT = 80          # connlat
TPUT_PORT = 5201         # iperf3


def gen(spec_path, out_dir):
    with open(spec_path) as f:
        spec = json.load(f)
    rnd = random.Random(spec["seed"])
    n_pods, n_pol, n_rules, n_ns = spec["pods"], spec["policies"], spec["rules"], spec["namespaces"]
    namespaces = []
    for i in range(n_ns):
        namespaces.append({"name": "np-%d" % i, "labels": {
            "team": TEAMS[i % len(TEAMS)], "env": NS_ENVS[i % len(NS_ENVS)],
            "kubernetes.io/metadata.name": "np-%d" % i}})
    apps_per_ns = max(2, n_pods // (n_ns * 4))
    pods = []
    # the measured pair: client on node-1, server on node-2, namespace np-0
    pods.append({"ns": PAIR_NS, "name": "srv", "node": "node-2",
                 "labels": {"app": "bench-srv", "tier": "api"},
                 "ports": [["serve", SERVE_PORT], ["tput", TPUT_PORT], ["metrics", 9090]]})
    pods.append({"ns": PAIR_NS, "name": "cli", "node": "node-1",
                 "labels": {"app": "bench-cli", "tier": "web"}, "ports": [["http", 8080]]})
    for i in range(n_pods - 2):
        ns = namespaces[i % n_ns]["name"]
        tier = rnd.choice(TIERS)
        ports = rnd.sample(NAMED_PORTS, rnd.randint(1, 3))
        pods.append({"ns": ns, "name": "p%d" % i, "node": "node-%d" % (1 + i % 2),
                     "labels": {"app": "app-%d" % rnd.randrange(apps_per_ns), "tier": tier,
                                "version": rnd.choice(["v1", "v2"])},
                     "ports": [[n, p] for n, p in ports]})
    # the propagation figure's pods, in a namespace of their own whose only
    # label is its name: no generated selector picks it
    for node, name, role in (("node-1", "c1", "prop-client"), ("node-2", "c2", "prop-client"),
                             ("node-1", "s1", "prop-server"), ("node-2", "s2", "prop-server")):
        pods.append({"ns": PROP_NS, "name": name, "node": node, "labels": {"role": role},
                     "ports": [["serve", SERVE_PORT]]})
    # reference addresses: 10.80.0.0/16 in pod order
    for i, p in enumerate(pods):
        p["ip"] = "10.80.%d.%d" % (i // 250, 2 + i % 250)

    def pod_sel():
        r = rnd.random()
        if r < 0.5:
            return {"matchLabels": {"app": "app-%d" % rnd.randrange(apps_per_ns)}}
        if r < 0.8:
            return {"matchLabels": {"tier": rnd.choice(TIERS)}}
        if r < 0.9:
            return {"matchExpressions": [{"key": "tier", "operator": "In",
                                          "values": rnd.sample(TIERS, 2)}]}
        return {"matchLabels": {"tier": rnd.choice(TIERS), "version": rnd.choice(["v1", "v2"])}}

    def ns_sel():
        r = rnd.random()
        if r < 0.4:
            return {"matchLabels": {"team": rnd.choice(TEAMS)}}
        if r < 0.7:
            return {"matchLabels": {"env": rnd.choice(NS_ENVS)}}
        if r < 0.85:
            return {"matchLabels": {"kubernetes.io/metadata.name": rnd.choice(namespaces)["name"]}}
        return {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}

    def peer():
        r = rnd.random()
        if r < 0.45:
            return {"podSelector": pod_sel()}
        if r < 0.65:
            return {"namespaceSelector": ns_sel()}
        if r < 0.90:
            return {"namespaceSelector": ns_sel(), "podSelector": pod_sel()}
        b = "172.%d.%d.0/24" % (rnd.randint(16, 31), rnd.randrange(256))
        blk = {"cidr": b}
        if rnd.random() < 0.5:
            blk = {"cidr": b, "except": [b.rsplit(".", 1)[0] + ".128/25"]}
        return {"ipBlock": blk}

    def port():
        r = rnd.random()
        if r < 0.35:
            return {"protocol": "TCP", "port": rnd.choice(NAMED_PORTS)[0]}
        if r < 0.75:
            return {"protocol": "TCP", "port": rnd.choice([80, 443, 8080, 9090, 5432, 6379, 3306])}
        if r < 0.85:
            return {"protocol": "UDP", "port": rnd.choice([53, 8125, 5353])}
        lo = rnd.choice([30000, 31000, 32000])
        return {"protocol": "TCP", "port": lo, "endPort": lo + rnd.choice([9, 99, 767])}

    def rule():
        r = {}
        if rnd.random() < 0.95:
            r["from"] = [peer() for _ in range(rnd.choice([1, 1, 1, 2, 2, 3]))]
        if rnd.random() < 0.85:
            r["ports"] = [port() for _ in range(rnd.choice([1, 1, 2, 2, 3]))]
        return r

    # rules per policy: n_rules spread over n_pol, each policy at least one
    counts = [1] * n_pol
    for _ in range(n_rules - n_pol):
        counts[rnd.randrange(n_pol)] += 1
    policies = []
    for i in range(n_pol):
        ns = namespaces[i % n_ns]["name"]
        sel = pod_sel() if rnd.random() < 0.9 else {}
        pol = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "np-pol-%d" % i, "namespace": ns},
               "spec": {"podSelector": sel}}
        k = counts[i]
        egress = rnd.random() < 0.3 and k >= 2
        n_eg = rnd.randint(1, k // 2) if egress else 0
        ing = [rule() for _ in range(k - n_eg)]
        eg = []
        for _ in range(n_eg):
            r = rule()
            if "from" in r:
                r["to"] = r.pop("from")
            eg.append(r)
        pol["spec"]["ingress"] = ing
        pol["spec"]["policyTypes"] = ["Ingress"]
        if egress:
            pol["spec"]["egress"] = eg
            pol["spec"]["policyTypes"].append("Egress")
        policies.append(pol)
    # The measured pair: policy 0 selects the server (ingress from the
    # client on its named ports), policy 1 the client (egress to the
    # server); both rules stay in the count.  Both ends are isolated.
    if n_pol >= 2:
        p0, p1 = policies[0], policies[1]
        for p in (p0, p1):
            p["metadata"]["namespace"] = PAIR_NS
        p0["spec"]["podSelector"] = {"matchLabels": {"app": "bench-srv"}}
        p0["spec"]["policyTypes"] = ["Ingress"]
        p0["spec"].pop("egress", None)
        p0["spec"]["ingress"][0] = {
            "from": [{"podSelector": {"matchLabels": {"app": "bench-cli"}}}],
            "ports": [{"protocol": "TCP", "port": "serve"}, {"protocol": "TCP", "port": "tput"}]}
        p1["spec"]["podSelector"] = {"matchLabels": {"app": "bench-cli"}}
        p1["spec"]["policyTypes"] = ["Egress"]
        p1["spec"]["egress"] = p1["spec"].pop("ingress")
        for r in p1["spec"]["egress"]:
            if "from" in r:
                r["to"] = r.pop("from")
        p1["spec"]["egress"][0] = {
            "to": [{"podSelector": {"matchLabels": {"app": "bench-srv"}}}],
            "ports": [{"protocol": "TCP", "port": SERVE_PORT}, {"protocol": "TCP", "port": TPUT_PORT}]}
    # np-prop/c1 -> np-0/srv must be denied (the check that policies are
    # enforced): a rule without peers in a policy that selects srv gets one
    srv = pods[0]
    for p in policies:
        if p["metadata"]["namespace"] == PAIR_NS and sel_match(p["spec"]["podSelector"], srv["labels"]):
            for r in p["spec"].get("ingress", []):
                if not r.get("from"):
                    r["from"] = [{"podSelector": pod_sel()}]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "pods.json"), "w") as f:
        json.dump(pods, f)
    nsl = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": n["name"], "labels": n["labels"]}} for n in namespaces]}
    with open(os.path.join(out_dir, "namespaces.json"), "w") as f:
        json.dump(nsl, f)
    with open(os.path.join(out_dir, "policies.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": policies}, f)
    rules = sum(len(p["spec"].get("ingress", [])) + len(p["spec"].get("egress", []))
                for p in policies)
    peers = sum(len(r.get("from", r.get("to", [])))
                for p in policies for r in p["spec"].get("ingress", []) + p["spec"].get("egress", []))
    ports = sum(len(r.get("ports", []))
                for p in policies for r in p["spec"].get("ingress", []) + p["spec"].get("egress", []))
    blocks = sum(1 for p in policies for r in p["spec"].get("ingress", []) + p["spec"].get("egress", [])
                 for x in r.get("from", r.get("to", [])) if "ipBlock" in x)
    named = sum(1 for p in policies for r in p["spec"].get("ingress", []) + p["spec"].get("egress", [])
                for x in r.get("ports", []) if isinstance(x.get("port"), str))
    print(json.dumps({"pods": len(pods) - 4, "namespaces": len(namespaces), "policies": len(policies),
                      "rules": rules, "peers": peers, "ports": ports, "ipBlocks": blocks,
                      "namedPorts": named,
                      "egressPolicies": sum("Egress" in p["spec"]["policyTypes"] for p in policies)}))


# ------------------------------------------------------------- selectors
def sel_match(sel, labels):
    """Does a LabelSelector match LABELS ({} matches everything)?"""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values", [])
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


# ------------------------------------------------------------- iptables
def short(*parts):
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:12].upper()


def iptables(pods_path, pols_path, local_path, prefix):
    """kube-router's shape: a KUBE-ROUTER-FORWARD chain jumped to from
    FORWARD; in it, for every local pod, '-d IP' and '-s IP' jumps to the
    pod's KUBE-POD-FW-* chain, which accepts ESTABLISHED/RELATED first,
    drops INVALID, then jumps to the KUBE-NWPLCY-* chain of every policy
    that selects the pod and drops what no policy marked (0x10000 for
    ingress, 0x20000 for egress).  A policy chain has one rule per (peer,
    port) of each of its rules, matching ipsets: KUBE-DST-* (the policy's
    pods), KUBE-SRC-* (a peer's pods, hash:ip), KUBE-NET-* (an ipBlock,
    hash:net, except as nomatch), and a named port resolved per pod into
    a set of the pods where it has one number."""
    pods, pols, nslabels = load_cluster(pods_path, pols_path)
    with open(local_path) as f:
        local = set(l.strip() for l in f if l.strip())
    sets = {}          # name -> (type, [entries])
    chains = {}        # name -> [rule args]

    def ipset(kind, key, entries):
        name = "KUBE-%s-%s" % (kind, short(key))
        if name not in sets:
            sets[name] = ("hash:net" if kind == "NET" else "hash:ip", entries)
        return name

    def peer_pods(pol_ns, peer):
        out = []
        for p in pods:
            if "namespaceSelector" in peer:
                if not sel_match(peer["namespaceSelector"], nslabels.get(p["ns"], {})):
                    continue
            elif p["ns"] != pol_ns:
                continue
            if "podSelector" in peer and not sel_match(peer["podSelector"], p["labels"]):
                continue
            out.append(p)
        return out

    def port_matches(port, dst_pods):
        """[(match args, set-restricting pods or None)] for one port entry."""
        proto = port.get("protocol", "TCP").lower()
        pv = port.get("port")
        if pv is None:
            return [(["-p", proto], None)]
        if isinstance(pv, str):  # named: group the pods by their number
            by = {}
            for p in dst_pods:
                for n, num in p["ports"]:
                    if n == pv:
                        by.setdefault(num, []).append(p)
            return [(["-p", proto, "--dport", str(num)], ps) for num, ps in sorted(by.items())]
        if "endPort" in port:
            return [(["-p", proto, "--dport", "%d:%d" % (pv, port["endPort"])], None)]
        return [(["-p", proto, "--dport", str(pv)], None)]

    rules_total = 0
    pol_chain = {}
    for pol in pols:
        ns, name = pol["metadata"]["namespace"], pol["metadata"]["name"]
        spec = pol["spec"]
        targets = [p for p in pods if p["ns"] == ns and sel_match(spec.get("podSelector", {}), p["labels"])]
        for direction in ("Ingress", "Egress"):
            if direction not in spec.get("policyTypes", ["Ingress"]):
                continue
            ing = direction == "Ingress"
            ch = "KUBE-NWPLCY-%s" % short(ns, name, direction)
            pol_chain[(ns, name, direction)] = ch
            mark = "0x10000/0x10000" if ing else "0x20000/0x20000"
            me, other = ("dst", "src") if ing else ("src", "dst")
            tset = ipset("DST" if ing else "SRC", "%s/%s/%s/targets" % (ns, name, direction),
                         [p["ip"] for p in targets])
            body = []
            for ri, r in enumerate(spec.get("ingress" if ing else "egress", [])):
                peers = r.get("from" if ing else "to") or [None]
                for pi, peer in enumerate(peers):
                    key = "%s/%s/%s/%d/%d" % (ns, name, direction, ri, pi)
                    if peer is None:
                        pm, ppods = [], None
                    elif "ipBlock" in peer:
                        b = peer["ipBlock"]
                        s = ipset("NET", key, [b["cidr"]] + ["%s nomatch" % e for e in b.get("except", [])])
                        pm, ppods = ["-m", "set", "--match-set", s, other], None
                    else:
                        ppods = peer_pods(ns, peer)
                        s = ipset("SRC" if ing else "DST", key, [p["ip"] for p in ppods])
                        pm = ["-m", "set", "--match-set", s, other]
                    dst_pods = targets if ing else (ppods if ppods is not None else pods)
                    for port in r.get("ports") or [{}]:
                        if not port:
                            pms = [([], None)]
                        else:
                            pms = port_matches(port, dst_pods)
                        for qi, (portm, restrict) in enumerate(pms):
                            tm = ["-m", "set", "--match-set", tset, me]
                            if restrict is not None:  # named port: only the pods with that number
                                rs = ipset("DST", "%s/np/%d/%s" % (key, qi, json.dumps(port)),
                                           [p["ip"] for p in restrict])
                                tm = tm + ["-m", "set", "--match-set", rs, "dst"]
                            body.append(tm + pm + portm + ["-j", "MARK", "--set-xmark", mark])
                            body.append(["-m", "mark", "--mark", mark, "-j", "RETURN"])
                            rules_total += 1
            chains[ch] = body
    fwd = []
    n_local = 0
    for p in pods:
        if "%s/%s" % (p["ns"], p["name"]) not in local:
            continue
        n_local += 1
        ch = "KUBE-POD-FW-%s" % short(p["ns"], p["name"])
        body = [["-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
                ["-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP"]]
        for direction, flag, mark in (("Ingress", "-d", "0x10000/0x10000"), ("Egress", "-s", "0x20000/0x20000")):
            sel = [pol for pol in pols if pol["metadata"]["namespace"] == p["ns"]
                   and direction in pol["spec"].get("policyTypes", ["Ingress"])
                   and sel_match(pol["spec"].get("podSelector", {}), p["labels"])]
            for pol in sel:
                body.append([flag, p["ip"] + "/32", "-j",
                             pol_chain[(p["ns"], pol["metadata"]["name"], direction)]])
            if sel:
                body.append([flag, p["ip"] + "/32", "-m", "mark", "!", "--mark", mark, "-j", "DROP"])
        chains[ch] = body
        fwd.append(["-d", p["ip"] + "/32", "-j", ch])
        fwd.append(["-s", p["ip"] + "/32", "-j", ch])
    chains["KUBE-ROUTER-FORWARD"] = fwd
    with open(prefix + ".ipset", "w") as f:
        for name, (kind, entries) in sorted(sets.items()):
            f.write("create %s %s family inet hashsize 1024 maxelem 65536\n" % (name, kind))
            for e in entries:
                f.write("add %s %s\n" % (name, e))
    with open(prefix + ".rules", "w") as f:
        f.write("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
        for ch in chains:
            f.write(":%s - [0:0]\n" % ch)
        f.write("-A FORWARD -m comment --comment \"kube-router netpol\" -j KUBE-ROUTER-FORWARD\n")
        n = 1
        for ch, body in chains.items():
            for r in body:
                f.write("-A %s %s\n" % (ch, " ".join(r)))
                n += 1
        f.write("COMMIT\n")
    print(json.dumps({"ipsets": len(sets), "ipsetEntries": sum(len(e) for _, e in sets.values()),
                      "chains": len(chains), "rules": n, "policyRules": rules_total,
                      "localPods": n_local}))


# --------------------------------------------------------------- verdict
def load_cluster(pods_path, pols_path):
    with open(pods_path) as f:
        pods = json.load(f)
    with open(pols_path) as f:
        pols = json.load(f)["items"]
    nslabels = {p["ns"]: {"kubernetes.io/metadata.name": p["ns"]} for p in pods}
    try:
        with open(os.path.join(os.path.dirname(pods_path), "namespaces.json")) as f:
            for n in json.load(f)["items"]:
                nslabels[n["metadata"]["name"]] = n["metadata"]["labels"]
    except OSError:
        pass
    return pods, pols, nslabels


def in_cidr(ip, cidr):
    import ipaddress
    return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)


def allowed(pods, pols, nslabels, src, dst, proto, port):
    """The spec read literally, with no sets or chains: the flow needs the
    source's egress (if isolated) and the destination's ingress (if
    isolated), each the union of the selecting policies' rules."""
    def peer_ok(pol_ns, peer, other):
        if "ipBlock" in peer:
            b = peer["ipBlock"]
            return in_cidr(other["ip"], b["cidr"]) and not any(
                in_cidr(other["ip"], e) for e in b.get("except", []))
        if "namespaceSelector" in peer:
            if not sel_match(peer["namespaceSelector"], nslabels.get(other["ns"], {})):
                return False
        elif other["ns"] != pol_ns:
            return False
        return "podSelector" not in peer or sel_match(peer["podSelector"], other["labels"])

    def port_ok(pp):
        if pp.get("protocol", "TCP") != proto:
            return False
        v = pp.get("port")
        if v is None:
            return True
        if isinstance(v, str):
            return any(n == v and num == port for n, num in dst["ports"])
        return v <= port <= pp.get("endPort", v)

    def side(pod, other, direction):
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        sel = [p for p in pols if p["metadata"]["namespace"] == pod["ns"]
               and direction in p["spec"].get("policyTypes", ["Ingress"])
               and sel_match(p["spec"].get("podSelector", {}), pod["labels"])]
        if not sel:
            return True
        for p in sel:
            for r in p["spec"].get(key, []):
                peers = r.get(peers_key) or []
                ports = r.get("ports") or []
                if (not peers or any(peer_ok(p["metadata"]["namespace"], x, other) for x in peers)) and \
                        (not ports or any(port_ok(x) for x in ports)):
                    return True
        return False
    return side(src, dst, "Egress") and side(dst, src, "Ingress")


def verdict(pods_path, pols_path, src, dst, ports):
    pods, pols, nslabels = load_cluster(pods_path, pols_path)
    by = {"%s/%s" % (p["ns"], p["name"]): p for p in pods}
    for port in ports:
        print("%d %s" % (port, "allow" if allowed(pods, pols, nslabels, by[src], by[dst], "TCP", port)
                         else "deny"))


# ---------------------------------------------------------- propagation
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns %s: %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


class Prober:
    """Connects to every pair at once, a new attempt per pair every
    INTERVAL s; an attempt is 'allowed' when connect() completes, 'denied'
    when refused or not done within TIMEOUT s.  Sockets are made in the
    client's namespace (setns before socket(); a socket keeps it)."""

    def __init__(self, pairs, interval, timeout):
        self.pairs, self.interval, self.timeout = pairs, interval, timeout
        self.sel = selectors.DefaultSelector()
        self.root = os.open("/proc/self/ns/net", os.O_RDONLY)

    def attempt(self, i):
        setns(self.pairs[i]["netns"])
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        t = time.monotonic()
        s.connect_ex((self.pairs[i]["ip"], self.pairs[i]["port"]))
        self.sel.register(s, selectors.EVENT_WRITE, (i, t))
        return s

    def run(self, t0, want, deadline):
        """First start time (s after t0) of an attempt of each pair whose
        verdict is WANT (True = allowed); None for a pair that never."""
        first = [None] * len(self.pairs)
        nxt = [t0] * len(self.pairs)
        live = {}
        while time.monotonic() < deadline and any(f is None for f in first):
            now = time.monotonic()
            for i in range(len(self.pairs)):
                if first[i] is None and now >= nxt[i]:
                    s = self.attempt(i)
                    live[s] = now
                    nxt[i] = now + self.interval
            for key, _ in self.sel.select(timeout=0.002):
                s = key.fileobj
                i, t = key.data
                ok = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                self.sel.unregister(s)
                s.close()
                live.pop(s, None)
                if ok == want and first[i] is None:
                    first[i] = t - t0
            now = time.monotonic()
            for s, t in list(live.items()):
                if now - t >= self.timeout:
                    i, ts = self.sel.get_key(s).data
                    self.sel.unregister(s)
                    s.close()
                    del live[s]
                    if not want and first[i] is None:
                        first[i] = ts - t0
        for s in list(live):
            self.sel.unregister(s)
            s.close()
        return first


def propagation(spec_path, out_path):
    """SPEC: {"lab": [...weft-lab --lab L], "ops": N, "timeout": S,
    "interval": S, "connectTimeout": S, "pairs": [{"name", "netns", "ip",
    "port"}], "manifests": {"deny": FILE, "allow": FILE}, "namespace": NS,
    "policy": NAME}.  Op i of the cycle create(deny), update(allow),
    update(deny), delete (-> allowed, nothing selects the servers): each
    flips every pair's verdict.  Its time: from just before the exec of
    weftctl to the first attempt of the LAST pair that saw the new verdict
    (so: enforced on every node); none within TIMEOUT s: not enforced."""
    with open(spec_path) as f:
        spec = json.load(f)
    pr = Prober(spec["pairs"], spec["interval"], spec["connectTimeout"])
    samples, error = [], None
    cycle = [("create", "deny", False), ("update", "allow", True),
             ("update", "deny", False), ("delete", None, True)]
    # before the first op every pair must be allowed (nothing selects them)
    t0 = time.monotonic()
    first = pr.run(t0, True, t0 + 10)
    if any(f is None for f in first):
        error = "before any policy: %s not reachable within 10 s" % ", ".join(
            p["name"] for p, f in zip(spec["pairs"], first) if f is None)
    for i in range(spec["ops"] if not error else 0):
        op, man, want = cycle[i % 4]
        if op == "delete":
            args = ["delete", "networkpolicy", spec["policy"], "-n", spec["namespace"]]
        else:
            args = ["apply", "-f", spec["manifests"][man]]
        cmd = ["timeout", "60"] + spec["lab"] + ["weftctl"] + args
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        ended = []
        th = threading.Thread(target=lambda: (ended.append(p.communicate()[0]),
                                              ended.append(time.monotonic())))
        th.start()
        first = pr.run(t0, want, t0 + spec["timeout"])
        th.join()
        out = ended[0].decode(errors="replace")
        t_cli = ended[1] - t0
        if p.returncode != 0:
            error = "weftctl %s (op %d): exited %d: %s" % (" ".join(args), i + 1, p.returncode,
                                                            " ".join(out.strip().splitlines()[-2:]))
            print("  %-7s FAILED: %s" % (op, error), flush=True)
            break
        done = None if any(f is None for f in first) else max(first)
        samples.append({"op": op, "verdict": "allow" if want else "deny", "s": done,
                        "perPair": first, "cli_s": t_cli})
        print("  %-7s -> %-5s %s  (weftctl returned after %.3f s; per pair: %s)" % (
            op, "allow" if want else "deny",
            "%.3f s" % done if done is not None else "not seen within %g s" % spec["timeout"],
            t_cli, " ".join("%s %s" % (pp["name"], "%.3f" % f if f is not None else "-")
                            for pp, f in zip(spec["pairs"], first))), flush=True)
        if done is None:
            # settle: wait until the pairs agree with the policy in force, or move on
            pr.run(time.monotonic(), want, time.monotonic() + 1)
    with open(out_path, "w") as f:
        json.dump({"samples": samples, "error": error}, f)


# ------------------------------------------------------------------ report
def report(path):
    """RESULTS, a TSV written by run.sh:
         meta  KEY  VALUE
         conn  PATH  run  n  failed  p50_us  p99_us  max_us  mean_us
         tput  PATH  run  bits_per_second  retransmits
         cni   SIDE  add|del  ns
         prop  op  verdict  seconds|-  cli_s
         skip  WHAT  reason
         err   WHAT  message"""
    meta, conn, tput, cni_s, prop, skip, err = {}, {}, {}, {}, [], {}, {}
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "meta":
                meta[p[1]] = p[2]
            elif p[0] == "conn":
                conn.setdefault(p[1], {})[p[2]] = (int(p[3]), int(p[4]), float(p[5]), float(p[6]))
            elif p[0] == "tput":
                tput.setdefault(p[1], {})[p[2]] = float(p[3])
            elif p[0] == "cni":
                cni_s.setdefault(p[1], {}).setdefault(p[2], []).append(int(p[3]) / 1e6)
            elif p[0] == "prop":
                prop.append({"op": p[1], "verdict": p[2], "s": None if p[3] == "-" else float(p[3])})
            elif p[0] == "skip":
                skip.setdefault(p[1], p[2])
            elif p[0] == "err":
                err.setdefault(p[1], p[2])
    labels = [("floor", "floor: bare veth pair"),
              ("ref-none", "reference, no rules"),
              ("ref-pol", "reference, kube-router iptables + ipset"),
              ("weft-none", "weft, no policy (lab %s)" % meta.get("lab_none", "?")),
              ("weft-pol", "weft, %s policies (lab %s)" % (meta.get("policies", "?"), meta.get("lab_pol", "?")))]
    print("%-48s %9s %9s %7s %9s" % ("path", "p50 us", "p99 us", "failed", "Gbit/s"))

    def med(k, i):
        v = [x[i] for x in conn.get(k, {}).values()]
        return median(v)

    for k, lbl in labels:
        if k not in conn and k not in tput:
            print("%-48s %s" % (lbl, "skipped (%s)" % skip.get(k, err.get(k, "not measured"))))
            continue
        g = median(list(tput.get(k, {}).values()))
        print("%-48s %9s %9s %7s %9s%s" % (
            lbl, "%.1f" % med(k, 2) if k in conn else "-", "%.1f" % med(k, 3) if k in conn else "-",
            sum(x[1] for x in conn.get(k, {}).values()) if k in conn else "-",
            "%.2f" % (g / 1e9) if g else "-", "  ERROR: " + err[k] if k in err else ""))
    print("  (medians over %s runs of %s connects, interleaved; %s)" % (
        meta.get("reps", "?"), meta.get("conns", "?"), meta.get("pin", "")))
    for k, _ in labels:
        if k in conn:
            print("  %-10s connect p50/p99 us per run: %s" % (k, " ".join(
                "%.1f/%.1f" % (v[2], v[3]) for _, v in sorted(conn[k].items(), key=lambda x: int(x[0])))))
        if k in tput:
            print("  %-10s Gbit/s per run: %s" % (k, " ".join(
                "%.2f" % (v / 1e9) for _, v in sorted(tput[k].items(), key=lambda x: int(x[0])))))

    def paired(d, a, b, i=None):
        x, y = d.get(a, {}), d.get(b, {})
        get = (lambda v: v) if i is None else (lambda v: v[i])
        rs = [get(x[r]) / get(y[r]) for r in x if r in y and get(y[r])]
        return median(rs), len(rs)

    def goal(name, val, text, ok, keys):
        if val is not None:
            print("GOAL %s: %s %s" % (name, text, "PASS" if ok else "FAIL"))
            return
        for k in keys:
            if k in err:
                print("GOAL %s: no result (%s) FAIL" % (name, err[k]))
                return
        why = next((skip[k] for k in keys if k in skip), "no measurement")
        print("GOAL %s: skipped (%s) SKIP" % (name, why))

    enf = meta.get("enforcement", "")
    if enf:
        print("  weft: %s" % enf)
    note = " [%s]" % enf.split(":")[0] if enf else ""
    print()
    r, n = paired(conn, "ref-pol", "ref-none", 2)
    if r:
        print("  reference with rules / without, connect p50: %.3fx" % r)
    r, n = paired(tput, "ref-pol", "ref-none")
    if r:
        print("  reference with rules / without, throughput:  %.3fx" % r)
    r, n = paired(tput, "weft-pol", "weft-none")
    goal("np_tput", r, r is not None and "%.3fx no policy (medians %.2f vs %.2f Gbit/s, %d runs) (goal >= 0.97x)%s"
         % (r, median(list(tput["weft-pol"].values())) / 1e9, median(list(tput["weft-none"].values())) / 1e9, n, note),
         r is not None and round(r, 3) >= 0.97, ("weft-pol", "weft-none", "weft"))
    r, n = paired(conn, "weft-pol", "weft-none", 2)
    goal("np_connect_p50", r, r is not None and "%.3fx no policy (medians %.1f vs %.1f us, %d runs) (goal <= 1.10x)%s"
         % (r, med("weft-pol", 2), med("weft-none", 2), n, note),
         r is not None and round(r, 3) <= 1.10, ("weft-pol", "weft-none", "weft"))
    r = None
    if all(k in conn for k in ("weft-pol", "weft-none", "ref-pol", "ref-none")):
        wa = med("weft-pol", 2) - med("weft-none", 2)
        ra = med("ref-pol", 2) - med("ref-none", 2)
        if ra > 0:
            r = wa / ra
        else:
            err.setdefault("np-added", "the reference's rules added nothing (%.1f us): no ratio" % ra)
    goal("np_added_vs_ref", r, r is not None and
         "%.3fx the reference's (weft adds %.1f us, kube-router iptables adds %.1f us to the connect p50) "
         "(goal <= 0.2x)%s" % (r, wa, ra, note), r is not None and round(r, 3) <= 0.2,
         ("np-added", "weft-pol", "weft-none", "ref-pol", "weft"))
    r = text = None
    if prop and "prop" not in err:
        vals = [x["s"] for x in prop]
        seen = [v for v in vals if v is not None]
        lost = len(vals) - len(seen)
        # an op never seen counts as infinitely slow
        r = pct([v if v is not None else float("inf") for v in vals], 99)
        text = "p99 %s, p50 %s over %d ops (%d not enforced within %s s; by verdict: %s) (goal <= 1 s)%s" % (
            "%.3f s" % r if r != float("inf") else "never", "%.3f s" % pct(seen, 50) if seen else "-",
            len(vals), lost, meta.get("prop_timeout", "?"),
            ", ".join("%s %d/%d seen" % (v, sum(1 for x in prop if x["verdict"] == v and x["s"] is not None),
                                         sum(1 for x in prop if x["verdict"] == v)) for v in ("deny", "allow")),
            note)
    goal("np_propagation_p99", r, text, r is not None and r <= 1.0, ("prop", "weft"))
    r = None
    a, b = cni_s.get("weft-pol", {}).get("add"), cni_s.get("weft-none", {}).get("add")
    if a and b and "cni-weft-pol" not in err and "cni-weft-none" not in err:
        x, y = pct(a, 99), pct(b, 99)
        r = x / y
        print("  CNI ADD p50 %.2f ms with policies, %.2f ms without (%d ADDs each)" % (pct(a, 50), pct(b, 50), len(a)))
    goal("np_cni_add_p99", r, r is not None and
         "%.3fx no policy (p99 %.2f vs %.2f ms over %d ADDs) (goal <= 1.2x)%s" % (r, x, y, len(a), note),
         r is not None and round(r, 3) <= 1.2, ("cni-weft-pol", "cni-weft-none", "cni", "weft"))


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "gen":
        gen(a[1], a[2])
    elif len(a) == 5 and a[0] == "iptables":
        iptables(a[1], a[2], a[3], a[4])
    elif len(a) >= 6 and a[0] == "verdict":
        verdict(a[1], a[2], a[3], a[4], [int(x) for x in a[5:]])
    elif len(a) == 3 and a[0] == "propagation":
        propagation(a[1], a[2])
    elif len(a) == 2 and a[0] == "report":
        report(a[1])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
