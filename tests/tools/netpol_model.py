#!/usr/bin/env python3
# netpol_model.py — what Kubernetes NetworkPolicy allows, computed naively.
#
# The reference the truth-table test (tests/e2e/netpol_truth.sh) compares
# the data plane with.  It is written from the API's semantics, not from
# weft's code, and it is deliberately plain: every question walks every
# policy.  It knows nothing of nodes, Services or conntrack: a probe through
# a ClusterIP is judged on the backend pod it reaches.
#
#   world    = {"namespaces": {NAME: {LABEL: VALUE, ...}, ...},
#               "pods": [{"namespace": NS, "name": NAME, "labels": {...},
#                         "ip": "10.128.0.2",
#                         "ports": [{"name": "serve-80-tcp", "containerPort": 80,
#                                    "protocol": "TCP"}, ...]}, ...]}
#   policies = [NetworkPolicy objects as dicts (metadata.namespace set)]
#
# allowed(world, policies, "x/a", "y/b", 80, "TCP") -> bool
#
# The rules (numbered as the code below refers to them):
#  1. A pod is isolated for ingress (egress) when a policy of its namespace
#     selects it (spec.podSelector; {} = every pod) and has Ingress (Egress)
#     among its policy types.  policyTypes absent or empty: Ingress, and
#     Egress too when spec.egress has at least one rule.
#  2. A flow needs the source's egress (when isolated) and the destination's
#     ingress (when isolated).  A pod reaching itself is always allowed.
#  3. An isolated pod gets the union of its selecting policies' rules; a rule
#     matches when (from/to absent or empty, or any peer matches) and (ports
#     absent or empty, or any port matches).  ingress: [] denies everything.
#  4. A peer: podSelector alone = pods of the policy's namespace;
#     namespaceSelector alone = every pod of the selected namespaces;
#     both = AND; ipBlock = the pod's IP inside cidr and in no except.
#  5. A namespace always carries kubernetes.io/metadata.name=<its name>.
#  6. Selectors: matchLabels and matchExpressions, all ANDed; NotIn and
#     DoesNotExist match a pod without the key.
#  7. Ports: protocol TCP when absent; port absent = every port of the
#     protocol; a number (with endPort: the inclusive range); a name is the
#     destination pod's container port of that name AND that protocol.
#
# Run with --self-test for hand-worked cases (scenarios of the upstream
# Kubernetes e2e suite on namespaces x, y, z and pods a, b, c).
import ipaddress
import sys


def ns_labels(world, ns):
    labels = dict(world["namespaces"].get(ns, {}))
    labels["kubernetes.io/metadata.name"] = ns		# rule 5
    return labels


def selects(selector, labels):
    """Rule 6: does a LabelSelector (None or {} = everything) match labels?"""
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError("matchExpressions operator %r" % op)
        if not ok:
            return False
    return True


def policy_types(policy):
    """Rule 1: the policy types, with the API's defaulting."""
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes") or []
    if types:
        return set(types)
    return {"Ingress", "Egress"} if spec.get("egress") else {"Ingress"}


def peer_matches(world, policy_ns, peer, pod):
    """Rule 4: does one NetworkPolicyPeer take in pod?"""
    if "ipBlock" in peer:
        ip = ipaddress.ip_address(pod["ip"])
        block = peer["ipBlock"]
        if ip not in ipaddress.ip_network(block["cidr"], strict=False):
            return False
        return not any(ip in ipaddress.ip_network(e, strict=False) for e in block.get("except") or [])
    has_pod, has_ns = "podSelector" in peer, "namespaceSelector" in peer
    if not has_pod and not has_ns:
        raise ValueError("a peer needs podSelector, namespaceSelector or ipBlock: %r" % peer)
    if has_ns:
        if not selects(peer["namespaceSelector"], ns_labels(world, pod["namespace"])):
            return False
    elif pod["namespace"] != policy_ns:
        return False
    return not has_pod or selects(peer["podSelector"], pod.get("labels") or {})


def port_matches(entry, dst, port, proto):
    """Rule 7: does one NetworkPolicyPort take in port/proto on dst?"""
    if (entry.get("protocol") or "TCP") != proto:
        return False
    want = entry.get("port")
    if want is None:
        return True
    if isinstance(want, str) and not want.isdigit():
        return any(p.get("name") == want and (p.get("protocol") or "TCP") == proto
                   and p["containerPort"] == port for p in dst.get("ports") or [])
    want = int(want)
    end = entry.get("endPort")
    return want <= port <= int(end) if end is not None else port == want


def rule_matches(world, policy_ns, rule, peers_key, other, dst, port, proto):
    """Rule 3: one ingress (peers_key "from") or egress ("to") rule."""
    peers = rule.get(peers_key) or []
    if peers and not any(peer_matches(world, policy_ns, p, other) for p in peers):
        return False
    ports = rule.get("ports") or []
    return not ports or any(port_matches(e, dst, port, proto) for e in ports)


def direction_allows(world, policies, pod, other, dst, port, proto, kind):
    """Rules 1 and 3 for one end: kind "Ingress" (pod = dst, other = src)
    or "Egress" (pod = src, other = dst)."""
    key, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    isolated = False
    for p in policies:
        meta, spec = p.get("metadata") or {}, p.get("spec") or {}
        if meta.get("namespace") != pod["namespace"]:
            continue
        if kind not in policy_types(p) or not selects(spec.get("podSelector"), pod.get("labels") or {}):
            continue
        isolated = True
        for rule in spec.get(key) or []:
            if rule_matches(world, meta["namespace"], rule, peers_key, other, dst, port, proto):
                return True
    return not isolated


def pod_by_key(world, key):
    ns, name = key.split("/")
    for p in world["pods"]:
        if p["namespace"] == ns and p["name"] == name:
            return p
    raise KeyError("no pod %s in the world" % key)


def allowed(world, policies, src, dst, port, proto):
    """Rule 2: may pod src ("ns/name") reach pod dst on port/proto?"""
    if src == dst:
        return True
    s, d = pod_by_key(world, src), pod_by_key(world, dst)
    return (direction_allows(world, policies, s, d, d, port, proto, "Egress")
            and direction_allows(world, policies, d, s, d, port, proto, "Ingress"))


# ---------------------------------------------------------------- self-test
def test_world():
    ports = [{"name": "serve-%d-%s" % (n, p.lower()), "containerPort": n, "protocol": p}
             for n in (80, 81) for p in ("TCP", "UDP")]
    pods = []
    for i, ns in enumerate("xyz"):
        for j, name in enumerate("abc"):
            pods.append({"namespace": ns, "name": name, "labels": {"pod": name},
                         "ip": "10.128.%d.%d" % (i, j + 2), "ports": ports})
    return {"namespaces": {ns: {"ns": ns} for ns in "xyz"}, "pods": pods}


def netpol(ns, spec, name="p"):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def self_test():
    w = test_world()
    A = lambda pols, s, d, port=80, proto="TCP": allowed(w, pols, s, d, port, proto)
    cases = []
    def case(name, got, want):
        cases.append((name, got, want))

    case("no policy: y/b -> x/a", A([], "y/b", "x/a"), True)
    deny_in = [netpol("x", {"podSelector": {}, "ingress": []})]
    case("default-deny-ingress: y/b -> x/a denied", A(deny_in, "y/b", "x/a"), False)
    case("default-deny-ingress: x/b -> x/a denied", A(deny_in, "x/b", "x/a"), False)
    case("default-deny-ingress: x/a -> y/b allowed (egress free)", A(deny_in, "x/a", "y/b"), True)
    case("default-deny-ingress: x/a -> x/a (itself) allowed", A(deny_in, "x/a", "x/a"), True)
    deny_eg = [netpol("x", {"podSelector": {}, "policyTypes": ["Egress"]})]
    case("default-deny-egress: x/a -> y/b denied", A(deny_eg, "x/a", "y/b"), False)
    case("default-deny-egress: y/b -> x/a allowed", A(deny_eg, "y/b", "x/a"), True)
    # policyTypes absent, egress rules present: the policy is Ingress+Egress
    eg_only = [netpol("x", {"podSelector": {}, "egress": [{"to": [{"podSelector": {}}]}]})]
    case("egress rules without policyTypes also isolate ingress: y/a -> x/a", A(eg_only, "y/a", "x/a"), False)
    case("... and x/a -> x/b, allowed by the egress rule, is denied by x/b's ingress", A(eg_only, "x/a", "x/b"), False)
    # egress: [] without policyTypes: Ingress only
    empty_eg = [netpol("x", {"podSelector": {}, "ingress": [{}], "egress": []})]
    case("egress: [] without policyTypes does not isolate egress", A(empty_eg, "x/a", "y/a"), True)
    allow_all = [netpol("x", {"podSelector": {}, "ingress": [{}]})]
    case("allow-all ingress: z/c -> x/a", A(allow_all, "z/c", "x/a"), True)
    from_pod = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}},
                             "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]})]
    case("from pod=b (policy ns only): x/b -> x/a", A(from_pod, "x/b", "x/a"), True)
    case("from pod=b (policy ns only): y/b -> x/a denied", A(from_pod, "y/b", "x/a"), False)
    case("from pod=b: x/c -> x/a denied", A(from_pod, "x/c", "x/a"), False)
    case("from pod=b: x/c -> x/b (not selected)", A(from_pod, "x/c", "x/b"), True)
    and_form = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}},
                             "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}},
                                                    "podSelector": {"matchLabels": {"pod": "b"}}}]}]})]
    case("AND: y/b -> x/a", A(and_form, "y/b", "x/a"), True)
    case("AND: y/c -> x/a denied", A(and_form, "y/c", "x/a"), False)
    case("AND: x/b -> x/a denied", A(and_form, "x/b", "x/a"), False)
    or_form = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}},
                            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}},
                                                  {"podSelector": {"matchLabels": {"pod": "b"}}}]}]})]
    case("OR: y/c -> x/a", A(or_form, "y/c", "x/a"), True)
    case("OR: x/b -> x/a", A(or_form, "x/b", "x/a"), True)
    case("OR: z/b -> x/a denied", A(or_form, "z/b", "x/a"), False)
    case("OR: x/c -> x/a denied", A(or_form, "x/c", "x/a"), False)
    notin = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}},
                          "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                              {"key": "ns", "operator": "NotIn", "values": ["y"]}]}}]}]})]
    case("ns NotIn [y]: z/a -> x/a", A(notin, "z/a", "x/a"), True)
    case("ns NotIn [y]: y/a -> x/a denied", A(notin, "y/a", "x/a"), False)
    w["pods"].append({"namespace": "z", "name": "d", "labels": {}, "ip": "10.128.2.9", "ports": []})
    notin_pod = [netpol("z", {"podSelector": {"matchLabels": {"pod": "a"}},
                              "ingress": [{"from": [{"podSelector": {"matchExpressions": [
                                  {"key": "pod", "operator": "NotIn", "values": ["b"]}]}}]}]})]
    case("pod NotIn [b] matches a pod without the key: z/d -> z/a", A(notin_pod, "z/d", "z/a"), True)
    case("pod NotIn [b]: z/b -> z/a denied", A(notin_pod, "z/b", "z/a"), False)
    dne = [netpol("z", {"podSelector": {"matchLabels": {"pod": "a"}},
                        "ingress": [{"from": [{"podSelector": {"matchExpressions": [
                            {"key": "pod", "operator": "DoesNotExist"}]}}]}]})]
    case("DoesNotExist: z/d -> z/a", A(dne, "z/d", "z/a"), True)
    case("DoesNotExist: z/c -> z/a denied", A(dne, "z/c", "z/a"), False)
    w["pods"].pop()
    default_ns = [netpol("x", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": "y"}}}]}]})]
    case("kubernetes.io/metadata.name=y: y/a -> x/b", A(default_ns, "y/a", "x/b"), True)
    case("kubernetes.io/metadata.name=y: z/a -> x/b denied", A(default_ns, "z/a", "x/b"), False)
    named = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}},
                          "ingress": [{"ports": [{"port": "serve-80-tcp"}]}]})]
    case("named port serve-80-tcp: 80/TCP", A(named, "y/a", "x/a", 80, "TCP"), True)
    case("named port serve-80-tcp: 81/TCP denied", A(named, "y/a", "x/a", 81, "TCP"), False)
    case("named port serve-80-tcp: 80/UDP denied (protocol TCP by default)", A(named, "y/a", "x/a", 80, "UDP"), False)
    named_udp = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}},
                              "ingress": [{"ports": [{"port": "serve-80-tcp", "protocol": "UDP"}]}]})]
    case("named port serve-80-tcp with protocol UDP resolves to nothing", A(named_udp, "y/a", "x/a", 80, "UDP"), False)
    end = [netpol("x", {"podSelector": {}, "ingress": [{"ports": [{"port": 80, "endPort": 81}]}]})]
    case("endPort 80-81: 81/TCP", A(end, "y/a", "x/a", 81, "TCP"), True)
    case("endPort 80-81: 81/UDP denied", A(end, "y/a", "x/a", 81, "UDP"), False)
    udp_only = [netpol("x", {"podSelector": {}, "ingress": [{"ports": [{"protocol": "UDP"}]}]})]
    case("ports [{protocol: UDP}]: 81/UDP", A(udp_only, "y/a", "x/a", 81, "UDP"), True)
    case("ports [{protocol: UDP}]: 81/TCP denied", A(udp_only, "y/a", "x/a", 81, "TCP"), False)
    sctp = [netpol("x", {"podSelector": {}, "ingress": [{"ports": [{"protocol": "SCTP", "port": 80}]}]})]
    case("SCTP 80 is not TCP 80", A(sctp, "y/a", "x/a", 80, "TCP"), False)
    block = [netpol("x", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "10.128.1.0/24", "except": ["10.128.1.3/32"]}}]}]})]
    case("ipBlock 10.128.1.0/24 except y/b: x/a -> y/a", A(block, "x/a", "y/a"), True)
    case("ipBlock except y/b: x/a -> y/b denied", A(block, "x/a", "y/b"), False)
    case("ipBlock: x/a -> z/a denied", A(block, "x/a", "z/a"), False)
    both = [netpol("x", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "10.128.1.0/24", "except": ["10.128.1.3/32"]}},
                {"ipBlock": {"cidr": "10.128.1.3/32"}}]}]})]
    case("IP in one block's except and in another block: allowed", A(both, "x/a", "y/b"), True)
    client_deny = [netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"]}),
                   netpol("y", {"podSelector": {}, "ingress": [{}]}, "allow")]
    case("egress denied on the client although the server allows", A(client_deny, "x/a", "y/b"), False)
    stacked = [netpol("x", {"podSelector": {}, "ingress": [{"ports": [{"port": 81}]}]}, "p1"),
               netpol("x", {"podSelector": {"matchLabels": {"pod": "a"}}, "ingress": [{"ports": [{"port": 80}]}]}, "p2")]
    case("stacked policies: union on x/a (80)", A(stacked, "y/a", "x/a", 80), True)
    case("stacked policies: union on x/a (81)", A(stacked, "y/a", "x/a", 81), True)
    case("stacked policies: x/b only 81", A(stacked, "y/a", "x/b", 80), False)

    bad = [c for c in cases if c[1] != c[2]]
    for name, got, want in bad:
        print("FAIL %s: expected %s, got %s" % (name, want, got))
    print("netpol_model self-test: %d passed, %d failed" % (len(cases) - len(bad), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    print("usage: netpol_model.py --self-test   (import it for allowed())", file=sys.stderr)
    sys.exit(2)
