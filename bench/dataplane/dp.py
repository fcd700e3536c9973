#!/usr/bin/python3
"""bench/dataplane/dp.py — helpers of bench/dataplane/run.sh.

  dp.py cni SPEC.json     time CNI ADD (then DEL) of N pods on each side
                          given in SPEC, interleaved pod by pod; prints
                          one JSON object with per-side samples
  dp.py cni-serve         (internal) runs inside a node namespace: reads
                          one JSON request per line, execs the plugin the
                          way a container runtime does, answers with the
                          wall time of the exec
  dp.py tenant-ops SPEC.json OUT.json
                          times N alternating weftctl pod-network
                          join-projects / isolate-projects calls (through
                          weft-lab), each from invocation to return, and
                          probes with one ping after each; prints a line
                          per call, writes the samples to OUT
  dp.py report RESULTS    reads the TSV run.sh wrote and prints the table,
                          the ratios and the GOAL lines

SPEC: {"pods": N, "k8sNamespace": "bench",
       "sides": [{"name": "reference", "enter": ["ip","netns","exec","NODE"],
                  "plugin": "/usr/lib/cni/bridge", "conf": "/path/conf.json",
                  "cniPath": "/usr/lib/cni", "netns": ["/var/run/netns/x-0", ...],
                  "idPrefix": "wdp-ref-"}, ...]}

tenant-ops SPEC: {"lab": ["bin/weft-lab", "--lab", "wbenchmt"], "ops": 10,
       "to": "bench", "project": "other", "nodes": 2, "timeout": 120,
       "probe": {"enter": ["ip","netns","exec","POD_NS"], "ip": "10.128.2.2",
                 "from": "other/x", "to": "bench/c"}}
"""
import json
import math
import os
import re
import subprocess
import sys
import time


def pct(samples, p):
    """Nearest-rank percentile of a list (None when empty)."""
    if not samples:
        return None
    s = sorted(samples)
    k = max(1, math.ceil(p / 100.0 * len(s)))
    return s[k - 1]


def median(v):
    if not v:
        return None
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


# ---------------------------------------------------------------- cni-serve
def serve():
    """One request per line: {"cmd","plugin","conf","cniPath","netns","id",
    "args"}.  Runs the plugin with only the CNI variables and PATH in its
    environment, the config on stdin, and answers {"ok","ns","out","err"}."""
    confs = {}
    for line in sys.stdin:
        req = json.loads(line)
        conf = confs.get(req["conf"])
        if conf is None:
            with open(req["conf"], "rb") as f:
                conf = confs[req["conf"]] = f.read()
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "CNI_COMMAND": req["cmd"],
            "CNI_CONTAINERID": req["id"],
            "CNI_NETNS": req["netns"],
            "CNI_IFNAME": "eth0",
            "CNI_PATH": req["cniPath"],
            "CNI_ARGS": req["args"],
        }
        t0 = time.monotonic_ns()
        p = subprocess.run([req["plugin"]], input=conf, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dt = time.monotonic_ns() - t0
        rep = {"ok": p.returncode == 0, "ns": dt,
               "out": p.stdout.decode(errors="replace")[-2000:],
               "err": p.stderr.decode(errors="replace")[-500:]}
        sys.stdout.write(json.dumps(rep) + "\n")
        sys.stdout.flush()


class Side:
    def __init__(self, spec, k8s_ns):
        self.s = spec
        self.k8s_ns = k8s_ns
        self.name = spec["name"]
        self.add = []
        self.dele = []
        self.added = []          # indexes whose ADD was attempted
        self.error = None
        self.first_result = None
        self.proc = subprocess.Popen(
            spec["enter"] + [sys.executable, os.path.abspath(__file__), "cni-serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(self, cmd, i):
        req = {"cmd": cmd, "plugin": self.s["plugin"], "conf": self.s["conf"],
               "cniPath": self.s["cniPath"], "netns": self.s["netns"][i],
               "id": "%s%d" % (self.s["idPrefix"], i),
               "args": "IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=cni-%d;"
                       "K8S_POD_INFRA_CONTAINER_ID=%s%d"
                       % (self.k8s_ns, i, self.s["idPrefix"], i)}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("%s: helper in the node namespace died" % self.name)
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()


def cni(spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    n = spec["pods"]
    sides = [Side(s, spec.get("k8sNamespace", "default")) for s in spec["sides"]]
    try:
        # ADD, pod by pod; the side that goes first alternates.
        for i in range(n):
            order = sides if i % 2 == 0 else list(reversed(sides))
            for sd in order:
                if sd.error:
                    continue
                sd.added.append(i)
                r = sd.call("ADD", i)
                if not r["ok"]:
                    sd.error = "ADD of pod %d failed: %s %s" % (
                        i, r["err"].strip(), r["out"].strip())
                    continue
                sd.add.append(r["ns"])
                if sd.first_result is None:
                    sd.first_result = r["out"]
        # DEL everything that was attempted (a runtime DELs after a failed ADD too).
        for i in range(n):
            order = sides if i % 2 == 0 else list(reversed(sides))
            for sd in order:
                if i not in sd.added:
                    continue
                r = sd.call("DEL", i)
                if r["ok"]:
                    sd.dele.append(r["ns"])
                elif not sd.error:
                    sd.error = "DEL of pod %d failed: %s %s" % (
                        i, r["err"].strip(), r["out"].strip())
    finally:
        for sd in sides:
            sd.close()
    out = {}
    for sd in sides:
        out[sd.name] = {"add_ns": sd.add, "del_ns": sd.dele, "error": sd.error,
                        "first_result": sd.first_result}
    print(json.dumps(out))


# --------------------------------------------------------------- tenant-ops
APPLIED = re.compile(r"applied on (\d+) node\(s\) in ([0-9.]+) s \(revision (\d+)\)")


def tenant_ops(spec_path, out_path):
    """Call i (from 0) is a join-projects --to=TO PROJECT when i is even,
    an isolate-projects PROJECT when odd, so the project starts isolated
    and every call changes something.  wall_ns: CLOCK_MONOTONIC from just
    before the exec of weft-lab to its exit (weft-lab's own start-up, the
    POST and the wait until every node applied the change).  reported_s:
    the X of weftctl's "applied on N node(s) in X s (revision R)", the wait
    alone.  Then one ping (-c1 -W1) from the probe pod to the probe IP,
    which should pass after a join and fail after an isolate.  Stops at
    the first call that fails or prints no "applied on" line."""
    with open(spec_path) as f:
        spec = json.load(f)
    probe = spec.get("probe")
    samples, error = [], None
    for i in range(spec["ops"]):
        op = "join" if i % 2 == 0 else "isolate"
        args = (["join-projects", "--to=" + spec["to"], spec["project"]] if op == "join"
                else ["isolate-projects", spec["project"]])
        cmd = (["timeout", str(spec.get("timeout", 120))] + spec["lab"]
               + ["weftctl", "pod-network"] + args)
        t0 = time.monotonic_ns()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        wall = time.monotonic_ns() - t0
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        m = APPLIED.search(out)
        if p.returncode != 0 or not m:
            error = "weftctl pod-network %s (call %d) %s: %s" % (
                " ".join(args), i + 1,
                "exited %d" % p.returncode if p.returncode else "printed no 'applied on' line",
                " ".join((out.strip().splitlines() + err.strip().splitlines())[-3:]))
            print("  %-8s FAILED: %s" % (op, error))
            break
        s = {"op": op, "wall_ns": wall, "reported_s": float(m.group(2)),
             "nodes": int(m.group(1)), "revision": int(m.group(3)), "reached": None,
             "note": err.strip()[-300:]}
        if probe:
            r = subprocess.run(probe["enter"] + ["ping", "-c1", "-W1", probe["ip"]],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            s["reached"] = r.returncode == 0
        samples.append(s)
        line = ("  %-8s %7.3f s wall  %6.3f s reported  (%d node(s), revision %d)"
                % (op, wall / 1e9, s["reported_s"], s["nodes"], s["revision"]))
        if probe:
            ok = s["reached"] == (op == "join")
            line += "  %s %s %s%s" % (probe.get("from", "probe"),
                                      "reached" if s["reached"] else "did not reach",
                                      probe.get("to", probe["ip"]), "" if ok else "  (WRONG)")
        if s["nodes"] != spec.get("nodes", s["nodes"]):
            line += "  (expected %d nodes: %s)" % (spec["nodes"], s["note"] or "?")
        print(line, flush=True)
    with open(out_path, "w") as f:
        json.dump({"samples": samples, "error": error}, f)


# ------------------------------------------------------------------- report
def report(path):
    """RESULTS is a TSV written by run.sh:
         meta  KEY  VALUE
         tput  PATH  bits_per_second  retransmits  run
         lat   PATH  p50_us  p99_us  run
         cni   SIDE  add|del  ns            (one line per sample)
         prop  join|isolate  wall_ns  reported_s  nodes  revision  reached(0|1)
         skip  WHAT  reason
         err   PATH  message
    """
    meta, tput, lat, cni_s, skip, err = {}, {}, {}, {}, {}, {}
    prop = []
    by_run = {}     # (tput|lat, path) -> {run: value}
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "meta":
                meta[p[1]] = p[2]
            elif p[0] == "tput":
                tput.setdefault(p[1], []).append((float(p[2]), int(p[3])))
                by_run.setdefault(("tput", p[1]), {})[p[4]] = float(p[2])
            elif p[0] == "lat":
                lat.setdefault(p[1], []).append((float(p[2]), float(p[3])))
                by_run.setdefault(("lat", p[1]), {})[p[4]] = float(p[2])
            elif p[0] == "cni":
                cni_s.setdefault(p[1], {}).setdefault(p[2], []).append(int(p[3]))
            elif p[0] == "prop":
                prop.append({"op": p[1], "wall": int(p[2]) / 1e9, "reported": float(p[3]),
                             "nodes": int(p[4]), "revision": int(p[5]),
                             "reached": p[6] == "1"})
            elif p[0] == "skip":
                skip[p[1]] = p[2]
            elif p[0] == "err":
                err.setdefault(p[1], p[2])

    paths = [("raw", "raw veth, MTU 1500 (ceiling)"),
             ("ref-same", "reference same-node (cni0 bridge)"),
             ("ref-cross", "reference cross-node (VXLAN, MTU 1450)"),
             ("weft-same", "weft same-node"),
             ("weft-cross", "weft cross-node"),
             ("weft-mt-cross", "weft cross-node, multitenant lab")]

    def gbit(path):
        v = [b for b, _ in tput.get(path, [])]
        return median(v) / 1e9 if v else None

    def latf(path, which):
        v = [x[which] for x in lat.get(path, [])]
        return median(v)

    print("%-40s %8s %17s %6s %9s %9s" % ("path", "Gbit/s", "(min-max)", "retr",
                                         "RTT p50", "RTT p99"))
    for key, label in paths:
        if key in skip and key not in tput:
            print("%-40s %s" % (label, "skipped (%s)" % skip[key]))
            continue
        t = tput.get(key, [])
        l = lat.get(key, [])
        g = gbit(key)
        gs = "%8.2f" % g if g is not None else "%8s" % "-"
        rng = ("(%.2f-%.2f)" % (min(b for b, _ in t) / 1e9, max(b for b, _ in t) / 1e9)
               if t else "")
        retr = "%6d" % int(median([r for _, r in t])) if t else "%6s" % "-"
        p50 = latf(key, 0)
        p99 = latf(key, 1)
        ls = ("%7.1fus %7.1fus" % (p50, p99)) if p50 is not None else "%9s %9s" % ("-", "-")
        line = "%-40s %s %17s %s %s" % (label, gs, rng, retr, ls)
        if key in err:
            line += "  ERROR: " + err[key]
        print(line)
    print("  (median of %s runs each, interleaved across paths; throughput: iperf3 TCP "
          "1 stream, %s s%s, congestion control %s;\n   RTT: sockperf ping-pong TCP 64 B, "
          "%s s, --full-rtt, %s)"
          % (meta.get("reps", "?"), meta.get("secs", "?"),
             ", pinned -A 0,1" if meta.get("pin") == "1" else ", not pinned",
             meta.get("cc", "?"), meta.get("secs", "?"), meta.get("latpin", "?")))
    # per-run values, so the noise is visible
    for key, label in paths:
        if key in tput:
            print("  %-13s Gbit/s per run: %s" % (key, " ".join(
                "%.2f" % (b / 1e9) for b, _ in tput[key])))
    for key, label in paths:
        if key in lat:
            print("  %-13s RTT p50/p99 us per run: %s" % (key, " ".join(
                "%.1f/%.1f" % x for x in lat[key])))

    # CNI
    if cni_s or "cni" in skip:
        n = meta.get("cni_pods", "?")
        print()
        print("CNI ADD latency, %s pods, one at a time, interleaved pod by pod "
              "(wall time of the plugin exec):" % n)
        for side in ("reference", "weft"):
            d = cni_s.get(side)
            if not d or not d.get("add"):
                why = skip.get("cni-" + side) or err.get("cni-" + side) or "no samples"
                print("  %-10s %s" % (side, why))
                continue
            a = [x / 1e6 for x in d["add"]]
            dl = [x / 1e6 for x in d.get("del", [])]
            s = ("  %-10s ADD n=%d p50 %.2f ms  p99 %.2f ms  max %.2f ms"
                 % (side, len(a), pct(a, 50), pct(a, 99), max(a)))
            if dl:
                s += "   DEL p50 %.2f ms  p99 %.2f ms" % (pct(dl, 50), pct(dl, 99))
            if ("cni-" + side) in err:
                s += "  ERROR: " + err["cni-" + side]
            print(s)

    # ratios and goals
    def paired(what, a, b):
        """Median over runs of a/b; in every run a and b are measured back
        to back, so a slow drift of the machine hits both."""
        x, y = by_run.get((what, a), {}), by_run.get((what, b), {})
        rs = [x[k] / y[k] for k in x if k in y and y[k]]
        return median(rs), len(rs)

    print()
    print("ratios (median over runs of each run's ratio):")
    for what, a, b, lbl in (
            ("tput", "ref-same", "raw", "reference same-node / raw veth, throughput"),
            ("tput", "ref-cross", "raw", "reference cross-node / raw veth, throughput"),
            ("lat", "ref-same", "raw", "reference same-node / raw veth, RTT p50"),
            ("lat", "ref-cross", "raw", "reference cross-node / raw veth, RTT p50"),
            ("tput", "weft-same", "ref-same", "weft same-node / reference same-node, throughput"),
            ("lat", "weft-same", "raw", "weft same-node / raw veth, RTT p50"),
            ("lat", "weft-same", "ref-same", "weft same-node / reference same-node, RTT p50"),
            ("tput", "weft-mt-cross", "ref-cross",
             "weft multitenant cross-node / reference, throughput"),
            ("lat", "weft-mt-cross", "ref-cross",
             "weft multitenant cross-node / reference, RTT p50")):
        r, n = paired(what, a, b)
        if r is not None:
            print("  %-54s %.3fx" % (lbl, r))
    a, b = latf("weft-cross", 1), latf("ref-cross", 1)
    if a and b:
        print("  %-54s %.3fx  (not a goal: p99 of a few seconds is noise)"
              % ("weft cross-node / reference, RTT p99 (medians)", a / b))
    a, b = latf("weft-mt-cross", 1), latf("weft-cross", 1)
    if a and b:
        print("  %-54s %.3fx  (not a goal)"
              % ("weft multitenant / flat cross-node, RTT p99 (medians)", a / b))

    # join/isolate propagation
    want_nodes = 2
    if prop or "tenant-ops" in skip or "tenant-ops" in err:
        print()
        print("join/isolate propagation (multitenant lab; weft-lab weftctl pod-network "
              "join-projects --to=bench other / isolate-projects other, alternating, %s calls):"
              % meta.get("tenant_ops", "?"))
        if prop:
            w = [x["wall"] for x in prop]
            rp = [x["reported"] for x in prop]
            print("  wall time, invocation to return  p50 %.3f s  max %.3f s  (min %.3f s)"
                  % (pct(w, 50), max(w), min(w)))
            print("  CLI-reported wait ('in X s')     p50 %.3f s  max %.3f s  (min %.3f s)"
                  % (pct(rp, 50), max(rp), min(rp)))
            for op in ("join", "isolate"):
                v = [x for x in prop if x["op"] == op]
                if v:
                    print("  %-8s wall p50 %.3f s  reported p50 %.3f s  (%d calls)"
                          % (op, pct([x["wall"] for x in v], 50),
                             pct([x["reported"] for x in v], 50), len(v)))
            print("  per call, wall/reported s: %s" % " ".join(
                "%s %.3f/%.3f" % (x["op"][0], x["wall"], x["reported"]) for x in prop))
            j = [x for x in prop if x["op"] == "join"]
            s = [x for x in prop if x["op"] == "isolate"]
            print("  probe right after return (ping other/x -> bench/c): joins reached %d/%d, "
                  "isolates blocked %d/%d; applied on %s node(s)"
                  % (sum(x["reached"] for x in j), len(j), sum(not x["reached"] for x in s),
                     len(s), "/".join(sorted({str(x["nodes"]) for x in prop}))))
        if "tenant-ops" in err:
            print("  ERROR: " + err["tenant-ops"])
        elif not prop:
            print("  skipped (%s)" % skip.get("tenant-ops", "no samples"))

    def goal(name, r, text, ok, errkeys, skipkeys):
        """ok is judged by the caller on r rounded to the 3 printed decimals."""
        if r is not None:
            print("GOAL %s: %s %s" % (name, text, "PASS" if ok else "FAIL"))
            return
        for k in errkeys:
            if k in err:
                print("GOAL %s: no result (%s) FAIL" % (name, err[k]))
                return
        why = next((skip[k] for k in skipkeys if k in skip), "no measurement")
        print("GOAL %s: skipped (%s) SKIP" % (name, why))

    raw, rc, ws, wc = (gbit(k) for k in ("raw", "ref-cross", "weft-same", "weft-cross"))
    r, n = paired("tput", "weft-same", "raw")
    goal("dp_same_node_tput", r,
         r is not None and "%.3fx raw veth (medians %.2f vs %.2f Gbit/s, %d runs) (goal >= 0.95x)"
         % (r, ws, raw, n), r is not None and round(r, 3) >= 0.95,
         ("weft-same", "raw"), ("weft-same", "weft"))
    r, n = paired("tput", "weft-cross", "ref-cross")
    goal("dp_cross_node_tput", r,
         r is not None and "%.3fx reference cross-node (medians %.2f vs %.2f Gbit/s, %d runs) "
         "(goal >= 0.95x)" % (r, wc, rc, n), r is not None and round(r, 3) >= 0.95,
         ("weft-cross", "ref-cross"), ("weft-cross", "weft"))
    a, b = latf("weft-cross", 0), latf("ref-cross", 0)
    r, n = paired("lat", "weft-cross", "ref-cross")
    goal("dp_cross_node_rtt", r,
         r is not None and "%.3fx reference cross-node RTT p50 (medians %.1f vs %.1f us, %d runs) "
         "(goal <= 1.10x)" % (r, a, b, n), r is not None and round(r, 3) <= 1.10,
         ("weft-cross", "ref-cross"), ("weft-cross", "weft"))
    wa = cni_s.get("weft", {}).get("add")
    ra = cni_s.get("reference", {}).get("add")
    cni_ok = wa and ra and "cni-weft" not in err and "cni-reference" not in err
    for p in (50, 99):
        r = x = y = None
        if cni_ok:
            x, y = pct(wa, p) / 1e6, pct(ra, p) / 1e6
            r = x / y
        goal("cni_add_p%d" % p, r,
             r is not None and "%.3fx reference (%.2f vs %.2f ms over %d pods) (goal <= 1.0x)"
             % (r, x, y, len(wa)), r is not None and round(r, 3) <= 1.0,
             ("cni-weft", "cni-reference"), ("cni-weft", "cni", "weft"))
    mt_err = ("weft-mt-cross", "weft-cross")
    mt_skip = ("weft-mt-cross", "weft-mt", "weft-cross", "weft")
    wm = gbit("weft-mt-cross")
    r, n = paired("tput", "weft-mt-cross", "weft-cross")
    goal("dp_tenant_tput", r,
         r is not None and "%.3fx flat (multitenant vs flat weft cross-node, same project; "
         "medians %.2f vs %.2f Gbit/s, %d runs) (goal >= 0.98x)" % (r, wm, wc, n),
         r is not None and round(r, 3) >= 0.98, mt_err, mt_skip)
    a, b = latf("weft-mt-cross", 0), latf("weft-cross", 0)
    r, n = paired("lat", "weft-mt-cross", "weft-cross")
    goal("dp_tenant_rtt", r,
         r is not None and "%.3fx flat RTT p50 (multitenant vs flat weft cross-node, same "
         "project; medians %.1f vs %.1f us, %d runs) (goal <= 1.02x)" % (r, a, b, n),
         r is not None and round(r, 3) <= 1.02, mt_err, mt_skip)
    r = None
    if prop and "tenant-ops" not in err:
        w = [x["wall"] for x in prop]
        r = pct(w, 50)
        bad = [x for x in prop if x["reached"] != (x["op"] == "join")]
        few = [x for x in prop if x["nodes"] != want_nodes]
        why = []
        if bad:
            why.append("%d probe(s) wrong right after return" % len(bad))
        if few:
            why.append("%d call(s) not applied on %d nodes" % (len(few), want_nodes))
        text = ("join/isolate wall p50 %.3f s, max %.3f s; CLI-reported p50 %.3f s, max %.3f s "
                "(%d calls)%s (goal: p50 wall <= 2 s, every call applied on %d nodes and "
                "in effect on return; a loose sanity bound, not from the issue)"
                % (r, max(w), pct([x["reported"] for x in prop], 50),
                   max(x["reported"] for x in prop), len(prop),
                   ": " + ", ".join(why) if why else "", want_nodes))
        ok = round(r, 3) <= 2.0 and not why
    goal("dp_tenant_propagation", r, r is not None and text, r is not None and ok,
         ("tenant-ops",), ("tenant-ops", "weft-mt"))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "cni-serve":
        serve()
    elif len(sys.argv) == 3 and sys.argv[1] == "cni":
        cni(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "tenant-ops":
        tenant_ops(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
