#!/usr/bin/env python3
# netpol_truth.py --world WORLD.json --weftctl BIN --kubeconfig FILE
#                 [--only PATTERN] [--list] — the scenarios of
# tests/e2e/netpol_truth.sh, run against the lab that script built.
#
# WORLD.json is what the script made (netpol_model.py's world, each pod
# with "netns" and "clusterIP" besides).  For each scenario, step by step:
#
#   1. write the step: apply its NetworkPolicies (weftctl apply -f; those
#      of the previous step it no longer has are deleted), or patch a
#      pod's or a namespace's labels (weftctl patch);
#   2. probe: from every pod at once (one netpol_probe.py per pod, in its
#      netns, started once and fed a batch per round), every other pod on 80 and 81, TCP and UDP, through its pod
#      IP and through its Service's ClusterIP; a pod reaching itself is
#      not probed (always allowed);
#   3. compare with netpol_model.py's matrix for the world as it now is;
#      probe again until they agree or WEFT_NETPOL_DEADLINE seconds
#      (default 3) have passed since the write; print how long agreement
#      took (to the end of the round that saw it, and which round), or the
#      difference.  The lab must converge within a second; 3 s leaves
#      room for two or three rounds on a loaded machine.
#
# After its last step a scenario deletes its policies, puts the labels
# back, and waits for everything to be allowed again (a deleted policy
# must stop being enforced).  A failing step does not end the scenario:
# the later steps are written and compared too, so each failure is shown.
# A label written is read back from the controller before probing.
#
# Output, for the shell script to count: "PASS\tNAME\tWHAT" or
# "FAIL\tNAME\tWHY", and lines starting with "    " (the differences).
# WEFT_NETPOL_SEED (default 1) and WEFT_NETPOL_RANDOM (default 8): the
# randomized scenarios, each 1-3 policies, the same for the same seed.
import argparse, copy, fnmatch, json, os, random, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netpol_model

HERE = os.path.dirname(os.path.abspath(__file__))
PORTS = [(80, "tcp"), (80, "udp"), (81, "tcp"), (81, "udp")]
VIAS = ["pod IP", "ClusterIP"]


# ---------------------------------------------------------------- policies
def np(ns, name, selector=None, ingress=None, egress=None, types=None):
    """A NetworkPolicy; ingress/egress None = absent; types None = absent."""
    spec = {"podSelector": selector or {}}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    if types is not None:
        spec["policyTypes"] = types
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(name):
    return {"matchLabels": {"pod": name}}


def ns(name):
    return {"matchLabels": {"ns": name}}


def cidr32(world, key):
    return netpol_model.pod_by_key(world, key)["ip"] + "/32"


# A scenario is (NAME, WHAT, steps(world) -> [step, ...]); a step is
# ("policies", [NetworkPolicy, ...]) — the whole set from then on —,
# ("pod-labels", "x/a", {KEY: VALUE or None}) or ("ns-labels", "y", {...}).
def scenarios(world, seed, count):
    A = lambda: [("policies", [])]
    S = []
    def sc(name, what, *steps):
        S.append((name, what, list(steps)))

    sc("default-deny-ingress", "x: podSelector {}, policyTypes [Ingress], no rule",
       ("policies", [np("x", "deny", types=["Ingress"])]))
    sc("default-deny-egress", "x: podSelector {}, policyTypes [Egress], no rule",
       ("policies", [np("x", "deny", types=["Egress"])]))
    sc("default-deny-all", "x: podSelector {}, policyTypes [Ingress, Egress]",
       ("policies", [np("x", "deny", types=["Ingress", "Egress"])]))
    sc("allow-all-ingress", "x: ingress [{}]: everything allowed",
       ("policies", [np("x", "allow", ingress=[{}])]))
    sc("allow-all-ingress-wins", "x: deny-all ingress and allow-all ingress: the union allows all",
       ("policies", [np("x", "deny", ingress=[]), np("x", "allow", ingress=[{}])]))
    sc("allow-all-egress-wins", "x: deny-all egress and allow-all egress: the union allows all",
       ("policies", [np("x", "deny", types=["Egress"]),
                     np("x", "allow", egress=[{}], types=["Egress"])]))
    sc("ingress-to-target", "x: deny-all ingress, and allow all to x/a from every pod of every namespace",
       ("policies", [np("x", "deny", ingress=[]),
                     np("x", "allow-a", pod("a"), ingress=[{"from": [{"namespaceSelector": {}, "podSelector": {}}]}])]))
    sc("ingress-same-namespace-only", "x: from podSelector {} (pods of other namespaces denied)",
       ("policies", [np("x", "p", ingress=[{"from": [{"podSelector": {}}]}])]))
    sc("ingress-from-pod", "x/a: from podSelector pod=b (x only)",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"podSelector": pod("b")}]}])]))
    sc("ingress-from-any-pod-in-ns", "x/a: from podSelector {} (every pod of x)",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"podSelector": {}}]}])]))
    sc("ingress-from-namespace", "x/a: from namespaceSelector ns=y",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": ns("y")}]}])]))
    sc("ingress-from-all-namespaces", "x/a: from namespaceSelector {}: everything allowed",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": {}}]}])]))
    sc("ingress-pod-and-namespace", "x/a: from one peer {namespaceSelector ns=y, podSelector pod=b} (AND)",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [
           {"namespaceSelector": ns("y"), "podSelector": pod("b")}]}])]))
    sc("ingress-pod-or-namespace", "x/a: from two peers, namespaceSelector ns=y OR podSelector pod=b",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [
           {"namespaceSelector": ns("y")}, {"podSelector": pod("b")}]}])]))
    sc("ingress-multiple-selectors", "x/a: from {namespaceSelector metadata.name NotIn [x], podSelector pod In [b, c]}",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{
           "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["x"]}]},
           "podSelector": {"matchExpressions": [{"key": "pod", "operator": "In", "values": ["b", "c"]}]}}]}])]))
    sc("ingress-any-pod-selectors", "x/a: from two peers, podSelector pod=b OR pod=c",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"podSelector": pod("b")}, {"podSelector": pod("c")}]}])]))
    sc("ingress-pod-match-expressions", "x/a: from podSelector pod In [b]",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"podSelector": {"matchExpressions": [
           {"key": "pod", "operator": "In", "values": ["b"]}]}}]}])]))
    sc("ingress-namespace-match-expressions", "x/a: from namespaceSelector ns NotIn [y]",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": {"matchExpressions": [
           {"key": "ns", "operator": "NotIn", "values": ["y"]}]}}]}])]))
    sc("ingress-namespace-default-label", "x/a: from namespaceSelector kubernetes.io/metadata.name=y",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": {
           "matchLabels": {"kubernetes.io/metadata.name": "y"}}}]}])]))
    sc("ingress-exists-and-notin", "x/a: from {namespaceSelector ns Exists, podSelector pod NotIn [a, b]}",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{
           "namespaceSelector": {"matchExpressions": [{"key": "ns", "operator": "Exists"}]},
           "podSelector": {"matchExpressions": [{"key": "pod", "operator": "NotIn", "values": ["a", "b"]}]}}]}])]))
    sc("ingress-does-not-exist", "x/a: from pods without a label pod (there are none) or pod=b",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [
           {"namespaceSelector": {}, "podSelector": {"matchExpressions": [{"key": "pod", "operator": "DoesNotExist"}]}},
           {"podSelector": pod("b")}]}])]))
    sc("ingress-ports", "x/a: from namespaceSelector ns=y on port 81 (TCP) only",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": ns("y")}],
                                                       "ports": [{"port": 81}]}])]))
    sc("ingress-named-ports", "x/a: ports serve-81-tcp and serve-80-udp/UDP from anywhere",
       ("policies", [np("x", "p", pod("a"), ingress=[{"ports": [
           {"port": "serve-81-tcp"}, {"port": "serve-80-udp", "protocol": "UDP"}]}])]))
    sc("ingress-named-port-wrong-protocol", "x/a: port serve-80-tcp with protocol UDP names no port: deny all",
       ("policies", [np("x", "p", pod("a"), ingress=[{"ports": [{"port": "serve-80-tcp", "protocol": "UDP"}]}])]))
    sc("ingress-named-port-from-namespace", "x/a: from namespaceSelector ns=y on serve-80-tcp",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": ns("y")}],
                                                       "ports": [{"port": "serve-80-tcp"}]}])]))
    sc("egress-deny-pod", "x/a: policyTypes [Egress], no rule",
       ("policies", [np("x", "p", pod("a"), types=["Egress"])]))
    sc("ingress-egress-independent", "x/a: egress only to x/b; x/b: no ingress: x/a reaches nothing",
       ("policies", [np("x", "a", pod("a"), types=["Egress"], egress=[{"to": [{"podSelector": pod("b")}]}]),
                     np("x", "b", pod("b"), types=["Ingress"])]))
    sc("egress-named-ports", "x/a: egress to serve-80-tcp and serve-80-udp/UDP only",
       ("policies", [np("x", "p", pod("a"), types=["Egress"], egress=[{"ports": [
           {"port": "serve-80-tcp"}, {"port": "serve-80-udp", "protocol": "UDP"}]}])]))
    sc("egress-ports", "x: egress to port 81 TCP and UDP only, to any peer",
       ("policies", [np("x", "p", types=["Egress"], egress=[{"ports": [
           {"port": 81, "protocol": "TCP"}, {"port": 81, "protocol": "UDP"}]}])]))
    sc("end-port", "x/a: 81-90/TCP; x/b: 80-81/UDP",
       ("policies", [np("x", "a", pod("a"), ingress=[{"ports": [{"port": 81, "endPort": 90}]}]),
                     np("x", "b", pod("b"), ingress=[{"ports": [{"port": 80, "endPort": 81, "protocol": "UDP"}]}])]))
    sc("protocol-only", "x/a: ports [{protocol: UDP}] (any port, UDP only)",
       ("policies", [np("x", "p", pod("a"), ingress=[{"ports": [{"protocol": "UDP"}]}])]))
    sc("udp-port-is-not-tcp", "x/a: port 81/UDP only: 81/TCP denied",
       ("policies", [np("x", "p", pod("a"), ingress=[{"ports": [{"port": 81, "protocol": "UDP"}]}])]))
    sc("sctp-only-isolates", "x/a: port 80/SCTP only: isolated for TCP and UDP",
       ("policies", [np("x", "p", pod("a"), ingress=[{"ports": [{"port": 80, "protocol": "SCTP"}]}])]))
    sc("egress-ipblock", "x/a: egress to ipBlock y/b's IP/32",
       ("policies", [np("x", "p", pod("a"), types=["Egress"],
                        egress=[{"to": [{"ipBlock": {"cidr": cidr32(world, "y/b")}}]}])]))
    sc("egress-ipblock-except", "x/a: egress to ipBlock 10.128.0.0/14 except y/b's IP/32",
       ("policies", [np("x", "p", pod("a"), types=["Egress"], egress=[{"to": [{"ipBlock": {
           "cidr": "10.128.0.0/14", "except": [cidr32(world, "y/b")]}}]}])]))
    sc("egress-ipblock-except-overlap", "x/a: egress to 10.128.0.0/14 except y/b, and to y/b/32: y/b allowed",
       ("policies", [np("x", "p", pod("a"), types=["Egress"], egress=[{"to": [
           {"ipBlock": {"cidr": "10.128.0.0/14", "except": [cidr32(world, "y/b")]}},
           {"ipBlock": {"cidr": cidr32(world, "y/b")}}]}])]))
    sc("ingress-ipblock-except", "x/a: from 10.128.0.0/14 except z/a, z/b, z/c",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"ipBlock": {
           "cidr": "10.128.0.0/14", "except": [cidr32(world, "z/" + p) for p in "abc"]}}]}])]))
    sc("ingress-and-egress", "x/a: ingress from pod=b, egress to namespace y only",
       ("policies", [np("x", "p", pod("a"), types=["Ingress", "Egress"],
                        ingress=[{"from": [{"podSelector": pod("b")}]}],
                        egress=[{"to": [{"namespaceSelector": ns("y")}]}])]))
    sc("egress-without-policy-types", "x/a: egress rules, no policyTypes: isolated both ways",
       ("policies", [np("x", "p", pod("a"), egress=[{"to": [{"namespaceSelector": ns("y")}]}])]))
    sc("client-egress-denies", "y: egress to z only; x: allow all ingress: y cannot reach x",
       ("policies", [np("y", "p", types=["Egress"], egress=[{"to": [{"namespaceSelector": ns("z")}]}]),
                     np("x", "allow", ingress=[{}])]))
    sc("stacked-policies", "x/a: from pod=b on 80; x: from ns=y on 81 (union on x/a)",
       ("policies", [np("x", "a", pod("a"), ingress=[{"from": [{"podSelector": pod("b")}], "ports": [{"port": 80}]}]),
                     np("x", "all", ingress=[{"from": [{"namespaceSelector": ns("y")}], "ports": [{"port": 81}]}])]))
    sc("policy-updated", "x/a: from pod=b, then the same policy changed in place to from pod=c",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"podSelector": pod("b")}]}])]),
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"podSelector": pod("c")}]}])]))
    upd = {"matchLabels": {"pod2": "updated"}}
    sc("pod-label-allows", "x/a: from pods labelled pod2=updated; x/b gets it, then loses it",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": {}, "podSelector": upd}]}])]),
       ("pod-labels", "x/b", {"pod2": "updated"}),
       ("pod-labels", "x/b", {"pod2": None}))
    sc("pod-label-isolates", "x: deny ingress to target=isolated; x/a gets the label, then loses it",
       ("policies", [np("x", "p", {"matchLabels": {"target": "isolated"}}, ingress=[])]),
       ("pod-labels", "x/a", {"target": "isolated"}),
       ("pod-labels", "x/a", {"target": None}))
    sc("namespace-label", "x/a: from namespaces labelled ns2=updated; y gets it, then loses it",
       ("policies", [np("x", "p", pod("a"), ingress=[{"from": [{"namespaceSelector": {"matchLabels": {"ns2": "updated"}}}]}])]),
       ("ns-labels", "y", {"ns2": "updated"}),
       ("ns-labels", "y", {"ns2": None}))
    rng = random.Random(seed)
    for i in range(count):
        pols = [random_policy(rng, world, "r%d-%d" % (i, j)) for j in range(rng.randint(1, 3))]
        sc("random-%d-%d" % (seed, i), "seed %d, #%d: %d policies" % (seed, i, len(pols)), ("policies", pols))
    return S


def random_selector(rng, key, values):
    r = rng.random()
    if r < 0.3:
        return {}
    if r < 0.6:
        return {"matchLabels": {key: rng.choice(values)}}
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
    e = {"key": key if op != "DoesNotExist" or rng.random() < 0.5 else "other", "operator": op}
    if op in ("In", "NotIn"):
        e["values"] = rng.sample(values, rng.randint(1, 2))
    return {"matchExpressions": [e]}


def random_peer(rng, world):
    r = rng.random()
    if r < 0.15:
        ips = [p["ip"] + "/32" for p in world["pods"]]
        if rng.random() < 0.5:
            return {"ipBlock": {"cidr": rng.choice(ips)}}
        return {"ipBlock": {"cidr": "10.128.0.0/14", "except": rng.sample(ips, rng.randint(1, 3))}}
    peer = {}
    if r < 0.6:
        peer["podSelector"] = random_selector(rng, "pod", ["a", "b", "c"])
    if r >= 0.4:
        peer["namespaceSelector"] = random_selector(rng, "ns", ["x", "y", "z"])
    return peer


def random_port(rng):
    e = {}
    r = rng.random()
    if r < 0.4:
        e["port"] = rng.choice([80, 81])
    elif r < 0.6:
        e["port"] = "serve-%d-%s" % (rng.choice([80, 81]), rng.choice(["tcp", "udp"]))
    elif r < 0.8:
        e["port"], e["endPort"] = 80, 81
    if rng.random() < 0.6:
        e["protocol"] = rng.choice(["TCP", "UDP"])
    return e


def random_rules(rng, world, peers_key):
    rules = []
    for _ in range(rng.choice([0, 1, 1, 2])):
        rule = {}
        if rng.random() < 0.8:
            rule[peers_key] = [random_peer(rng, world) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.5:
            rule["ports"] = [random_port(rng) for _ in range(rng.randint(1, 2))]
        rules.append(rule)
    return rules


def random_policy(rng, world, name):
    types = rng.choice([None, ["Ingress"], ["Egress"], ["Ingress", "Egress"]])
    ingress = random_rules(rng, world, "from") if types is None or "Ingress" in types else None
    egress = random_rules(rng, world, "to") if types is None or "Egress" in types else None
    return np(rng.choice("xyz"), name, random_selector(rng, "pod", ["a", "b", "c"]), ingress, egress, types)


# ---------------------------------------------------------------- the lab
class Lab:
    def __init__(self, args, world):
        self.args, self.world = args, world
        self.tmp = tempfile.mkdtemp(prefix="netpol.", dir=args.tmp)
        self.applied = {}		# (ns, name) -> policy
        self.procs = []			# (pod, its prober)

    def weftctl(self, *argv):
        """weftctl ARGV against the lab's controller, from here through the
        lab's forwarder (weft-lab kubeconfig): no shell around each call."""
        env = {k: v for k, v in os.environ.items() if k not in ("WEFT_SERVER", "WEFT_TOKEN_FILE")}
        env["KUBECONFIG"] = self.args.kubeconfig
        r = subprocess.run([self.args.weftctl, *argv], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError("weftctl %s: %s" % (" ".join(argv), (r.stderr or r.stdout).strip()))
        return r.stdout

    def set_policies(self, policies):
        want = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in policies}
        for key in [k for k in self.applied if k not in want]:
            self.weftctl("delete", "networkpolicy", key[1], "-n", key[0])
            del self.applied[key]
        if want:
            path = os.path.join(self.tmp, "policies.yaml")
            with open(path, "w") as f:
                f.write("---\n".join(json.dumps(p) + "\n" for p in policies))
            self.weftctl("apply", "-f", path)
            self.applied = dict(want)

    def set_labels(self, kind, target, labels):
        if kind == "pod-labels":
            ns_name, name = target.split("/")
            obj = netpol_model.pod_by_key(self.world, target)
            self.weftctl("patch", "pod", name, "-n", ns_name, "--type", "merge",
                         "-p", json.dumps({"metadata": {"labels": labels}}))
            current = obj.setdefault("labels", {})
        else:
            self.weftctl("patch", "namespace", target, "--type", "merge",
                         "-p", json.dumps({"metadata": {"labels": labels}}))
            current = self.world["namespaces"].setdefault(target, {})
        for k, v in labels.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = v
        stored = self.stored_labels(kind, target)
        if stored != current:
            raise RuntimeError("%s %s: labels %s written, the controller has %s" % (
                kind, target, json.dumps(current, sort_keys=True), json.dumps(stored, sort_keys=True)))

    def stored_labels(self, kind, target):
        """The labels the controller holds (a namespace's without the one
        it adds, kubernetes.io/metadata.name, which the model adds itself)."""
        if kind == "pod-labels":
            ns_name, name = target.split("/")
            out = self.weftctl("get", "pod", name, "-n", ns_name, "-o", "json")
        else:
            out = self.weftctl("get", "namespace", target, "-o", "json")
        labels = json.loads(out).get("metadata", {}).get("labels") or {}
        if kind != "pod-labels":
            labels.pop("kubernetes.io/metadata.name", None)
        return labels

    def probers(self):
        """One netpol_probe.py per pod, in its netns, kept for every round."""
        if not self.procs:
            for src in self.world["pods"]:
                self.procs.append((src, subprocess.Popen(
                    ["ip", "netns", "exec", src["netns"], sys.executable,
                     os.path.join(HERE, "netpol_probe.py"), str(self.args.probe_timeout)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)))
        return self.procs

    def close(self):
        for _, p in self.procs:
            p.stdin.close()
            p.wait()

    def probe(self):
        """{(from, to, via, port, proto): (bool, answer)}: every pod probes at once."""
        procs = self.probers()
        for src, p in procs:
            for dst in self.world["pods"]:
                if dst is src:
                    continue
                for via, ip in (("pod_IP", dst["ip"]), ("ClusterIP", dst["clusterIP"])):
                    for port, proto in PORTS:
                        p.stdin.write("%s/%s|%s|%d|%s %s %d %s\n" % (
                            dst["namespace"], dst["name"], via, port, proto, ip, port, proto))
            p.stdin.write("\n")
            p.stdin.flush()
        seen = {}
        for src, p in procs:
            for line in p.stdout:
                if not line.strip():
                    break
                key, verdict, *rest = line.rstrip("\n").split(" ", 2)
                to, via, port, proto = key.split("|")
                answer = rest[0] if rest else ""
                ok = verdict == "yes" and answer.split(" ")[0] == to
                if verdict == "yes" and not ok:
                    answer = "answered by " + answer
                seen[("%s/%s" % (src["namespace"], src["name"]), to, via.replace("_", " "),
                      int(port), proto)] = (ok, answer)
            else:
                raise RuntimeError("the prober in %s exited" % src["netns"])
        return seen


def expected(world, policies):
    keys = ["%s/%s" % (p["namespace"], p["name"]) for p in world["pods"]]
    return {(s, d, via, port, proto): netpol_model.allowed(world, policies, s, d, port, proto.upper())
            for s in keys for d in keys if s != d for via in VIAS for port, proto in PORTS}


def differences(want, seen):
    return {k: (want[k], seen.get(k, (False, "not probed"))) for k in want
            if want[k] != seen.get(k, (False, ""))[0]}


def render(world, want, diff):
    """Tables of the cells that differ, one per group of (via, port/proto)
    that differs the same way: '.' as expected, 'Y' allowed but expected
    denied, 'N' denied but expected allowed, '-' a pod and itself."""
    keys = ["%s/%s" % (p["namespace"], p["name"]) for p in world["pods"]]
    groups = {}
    for via in VIAS:
        for port, proto in PORTS:
            cells = tuple(tuple("-" if s == d else ("." if (s, d, via, port, proto) not in diff
                                                     else ("N" if want[(s, d, via, port, proto)] else "Y"))
                                for d in keys) for s in keys)
            if any(c in "YN" for row in cells for c in row):
                groups.setdefault(cells, []).append("%d/%s via %s" % (port, proto, via))
    out = ["%d cells differ (Y: allowed, expected denied; N: denied, expected allowed; rows from, columns to)"
           % len(diff)]
    for cells, names in groups.items():
        out.append(", ".join(names) + ":")
        out.append("%5s %s" % ("", " ".join("%3s" % k for k in keys)))
        for s, row in zip(keys, cells):
            out.append("%5s %s" % (s, " ".join("%3s" % c for c in row)))
    for (s, d, via, port, proto), (w, (got, answer)) in sorted(diff.items())[:6]:
        out.append("%s -> %s %d/%s via %s: expected %s, got %s (%s)" % (
            s, d, port, proto, via, "allowed" if w else "denied", "allowed" if got else "denied", answer))
    if len(diff) > 6:
        out.append("... and %d more" % (len(diff) - 6))
    return out


def converge(lab, policies, deadline):
    """Probe until the matrix is the model's: (seconds, rounds, None) when
    a round agreed (seconds: from the write to that round's end), or
    (seconds, rounds, lines) when none did within deadline."""
    want = expected(lab.world, policies)
    t0, rounds = time.monotonic(), 0
    while True:
        diff = differences(want, lab.probe())
        took, rounds = time.monotonic() - t0, rounds + 1
        if not diff:
            return took, rounds, None
        if took >= deadline:
            return took, rounds, render(lab.world, want, diff)


def report(verdict, name, what, lines=()):
    print("%s\t%s\t%s" % (verdict, name, what), flush=True)
    for l in lines:
        print("    " + l, flush=True)


def step_name(kind, step, policies):
    if kind == "policies":
        return "policies " + (", ".join(p["metadata"]["namespace"] + "/" + p["metadata"]["name"]
                                        for p in policies) or "none")
    return "%s %s %s" % (kind, step[0], json.dumps(step[1], sort_keys=True))


def run_scenario(lab, name, what, steps, baseline):
    """Every step is written and compared, also after a failing one (each
    failing step prints its tables); the scenario passes when all agree."""
    policies, failed, times = [], [], []
    try:
        for i, (kind, *step) in enumerate(steps):
            if kind == "policies":
                policies = copy.deepcopy(step[0])
                lab.set_policies(policies)
            else:
                lab.set_labels(kind, step[0], step[1])
            took, rounds, lines = converge(lab, policies, lab.args.deadline)
            times.append("%.1f s, round %d" % (took, rounds))
            if lines:
                failed += ["step %d of %d (%s): no agreement within %.0f s" % (
                    i + 1, len(steps), step_name(kind, step, policies), lab.args.deadline)] + lines
    except RuntimeError as e:
        failed.append(str(e))
    # clean up: policies away, labels back; everything must be allowed again
    try:
        lab.set_policies([])
        for target, labels in baseline["pods"].items():
            pod = netpol_model.pod_by_key(lab.world, target)
            if pod.get("labels") != labels:
                lab.set_labels("pod-labels", target, {**{k: None for k in pod["labels"]}, **labels})
        for n, labels in baseline["namespaces"].items():
            if lab.world["namespaces"].get(n) != labels:
                lab.set_labels("ns-labels", n, {**{k: None for k in lab.world["namespaces"][n]}, **labels})
        took, rounds, lines = converge(lab, [], lab.args.deadline)
        if lines:
            failed += ["after its policies were deleted and labels restored: not everything "
                       "allowed within %.0f s" % lab.args.deadline] + lines
    except RuntimeError as e:
        failed.append("cleanup: %s" % e)
    if failed:
        report("FAIL", name, failed[0], failed[1:])
    else:
        report("PASS", name, "%s (agreement %s after the write)" % (what, "; ".join(times)))
    return not failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", required=True)
    ap.add_argument("--weftctl", required=True)
    ap.add_argument("--kubeconfig", required=True, help="the lab's, for the root namespace (weft-lab kubeconfig)")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--only", default="*", help="run the scenarios whose name matches (fnmatch)")
    ap.add_argument("--deadline", type=float, default=float(os.environ.get("WEFT_NETPOL_DEADLINE", 3)))
    ap.add_argument("--probe-timeout", type=float, default=1.0)
    ap.add_argument("--baseline-deadline", type=float, default=30)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    with open(args.world) as f:
        world = json.load(f)
    seed = int(os.environ.get("WEFT_NETPOL_SEED", 1))
    count = int(os.environ.get("WEFT_NETPOL_RANDOM", 8))
    all_scenarios = scenarios(world, seed, count)
    if args.list:
        for name, what, steps in all_scenarios:
            print("%-36s %s" % (name, what))
        return 0
    lab = Lab(args, world)
    baseline = {"pods": {"%s/%s" % (p["namespace"], p["name"]): dict(p.get("labels") or {}) for p in world["pods"]},
                "namespaces": copy.deepcopy(world["namespaces"])}
    took, rounds, lines = converge(lab, [], args.baseline_deadline)
    if lines:
        report("FAIL", "baseline", "with no policy, not every pod reaches every other within %.0f s" % args.baseline_deadline, lines)
        lab.close()
        return 1
    report("PASS", "baseline", "with no policy every pod reaches every other, by pod IP and ClusterIP, "
           "80 and 81, TCP and UDP (after %.1f s)" % took)
    for name, what, steps in all_scenarios:
        if fnmatch.fnmatch(name, args.only):
            run_scenario(lab, name, what, steps, baseline)
    lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
