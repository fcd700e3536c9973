#!/usr/bin/python3
"""bench/lb/lb.py — helpers of bench/lb/run.sh.

  lb.py wrk FILE
          wrk --latency's report as one JSON object: rps, p50_ms, p99_ms,
          requests, non2xx, socket_errors.
  lb.py refcfg N SERVER VIP STATEDIR HEAD OUT
          the hand-written reference for N hosts (h-<i>.bench.example.com):
          HEAD (weft-lb's global and defaults), one frontend on VIP:80 routing by
          a host map, one backend per host with one server (SERVER,
          IP:PORT), health-checked as weft-lb checks an HTTP pool.
  lb.py ingresses N NAMESPACE SERVICE OUT
          N Ingresses (one host each, h-<i>.bench.example.com, to SERVICE
          port 80) as one multi-document YAML file.
  lb.py newhost SPEC OUT
          SPEC["count"] times: POST an Ingress for a new host, then every
          SPEC["pollMs"] the Ingress's status until it names a VIP, and a
          GET http://VIP/ with that Host until it answers 200; one sample
          per host, timed from just before the POST.  Names:
          SPEC["prefix"]-<i> (default "new").
  lb.py scale SPEC OUT
          Endpoints SPEC["name"] through SPEC["steps"] server counts (one
          address, consecutive ports), each until the VirtualService's pool
          holds that many servers, then SPEC["holdS"] seconds.
  lb.py hosts SPEC OUT
          after `weftctl apply` of the Ingresses (started at SPEC["t0"],
          CLOCK_REALTIME ns): until every Ingress's status names a VIP, the
          engine's status has no reload pending, and every host answers 200
          on its VIP (keep-alive connection per VIP, failures retried).
  lb.py check VIP N
          each of the N hosts of refcfg answers 200 on VIP:80; prints the
          count that did.
  lb.py report RESULTS.tsv
          the figures, the ratios and the GOAL lines.

SPEC (JSON): {"url", "tokenFile", "caFile", "namespace", "service", ...}
"""
import http.client
import json
import os
import re
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dataplane"))
from dp import median, pct  # noqa: E402  (one copy of each small helper)

HOST_FMT = "h-%d.bench.example.com"


# ---------------------------------------------------------------- wrk
def ms(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[m.group(2)]


def wrk_parse(path):
    out = {"rps": None, "p50_ms": None, "p99_ms": None, "requests": None,
           "non2xx": 0, "socket_errors": 0}
    with open(path) as f:
        for line in f:
            w = line.split()
            if line.startswith("Requests/sec:"):
                out["rps"] = float(w[1])
            elif len(w) == 2 and w[0] in ("50%", "99%"):
                out["p%s_ms" % w[0][:-1]] = ms(w[1])
            elif "requests in" in line:
                out["requests"] = int(w[0])
            elif line.strip().startswith("Non-2xx"):
                out["non2xx"] = int(w[-1])
            elif line.strip().startswith("Socket errors:"):
                out["socket_errors"] = sum(int(x) for x in re.findall(r"\d+", line))
    return out


# ---------------------------------------------------------------- files
def refcfg(n, server, vip, statedir, head, out):
    lines = [open(head).read(),
             "frontend ref\n\tmode http\n\tbind %s:80\n\toption forwardfor\n" % vip,
             "\thttp-request set-header Forwarded for=%%[src];proto=http;host=%%[req.hdr(host)]\n"
             "\thttp-request set-header X-Forwarded-Proto http\n"
             "\tuse_backend %%[req.hdr(host),field(1,:),lower,map(%s/hosts.map)]\n"
             "\tdefault_backend not-found\n" % statedir]
    hosts = []
    for i in range(n):
        h = HOST_FMT % i
        hosts.append("%s be-%d\n" % (h, i))
        lines.append("\nbackend be-%d\n\tmode http\n\tbalance roundrobin\n\toption httpchk GET /\n"
                     "\tserver s1 %s check inter 2s fall 2 rise 1\n" % (i, server))
    with open(os.path.join(statedir, "hosts.map"), "w") as f:
        f.writelines(hosts)
    with open(out, "w") as f:
        f.writelines(lines)


def ingresses(n, ns, svc, out):
    with open(out, "w") as f:
        for i in range(n):
            if i:
                f.write("---\n")
            f.write("apiVersion: networking.k8s.io/v1\nkind: Ingress\n"
                    "metadata: {name: h-%d, namespace: %s}\nspec:\n  rules:\n  - host: %s\n"
                    "    http: {paths: [{path: /, pathType: Prefix, backend: "
                    "{service: {name: %s, port: {number: 80}}}}]}\n" % (i, ns, HOST_FMT % i, svc))


# ---------------------------------------------------------------- API
class Api:
    """One keep-alive HTTPS connection to the controller."""

    def __init__(self, spec):
        self.host, _, port = spec["url"].split("://")[1].rstrip("/").partition(":")
        self.port = int(port or 443)
        self.ctx = ssl.create_default_context(cafile=spec["caFile"])
        with open(spec["tokenFile"]) as f:
            self.token = f.read().strip()
        self.conn = None

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        hdr = {"Authorization": "Bearer " + self.token}
        if data is not None:
            hdr["Content-Type"] = "application/json"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
            try:
                self.conn.request(method, path, body=data, headers=hdr)
                r = self.conn.getresponse()
                text = r.read().decode()
                return r.status, (json.loads(text) if text else None)
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        return None, None


def http_status(vip, host, timeout=2.0):
    """One GET http://vip/ with Host, on a new connection: the status, or 0."""
    c = http.client.HTTPConnection(vip, 80, timeout=timeout)
    try:
        c.request("GET", "/", headers={"Host": host})
        r = c.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        c.close()


def engine_status(state_dir):
    try:
        with open(os.path.join(state_dir, "status.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def ingress_vips(ing):
    return {e.get("hostname"): e.get("ip") for e in
            ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [] if e.get("ip")}


def ingress_body(ns, name, host, svc):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": svc, "port": {"number": 80}}}}]}}]}}


def newhost(spec, out):
    api = Api(spec)
    ns, svc = spec["namespace"], spec["service"]
    poll = spec.get("pollMs", 10) / 1000.0
    samples = []
    for i in range(spec["count"]):
        name = "%s-%d" % (spec.get("prefix", "new"), i)
        host = name + ".bench.example.com"
        time.sleep(spec.get("gapS", 0))
        t0 = time.monotonic()
        st, body = api.call("POST", "/apis/networking.k8s.io/v1/namespaces/%s/ingresses" % ns,
                            ingress_body(ns, name, host, svc))
        if st not in (200, 201):
            json.dump({"error": "POST Ingress %s: %s %s" % (name, st, body)}, open(out, "w"))
            return
        t_post = time.monotonic()
        vip = t_vip = None
        ok = False
        deadline = t0 + spec.get("timeoutS", 10)
        while time.monotonic() < deadline:
            if vip is None:
                st, ing = api.call("GET", "/apis/networking.k8s.io/v1/namespaces/%s/ingresses/%s" % (ns, name))
                vip = ingress_vips(ing or {}).get(host) if st == 200 else None
                if vip:
                    t_vip = time.monotonic()
            if vip and http_status(vip, host, timeout=1.0) == 200:
                ok = True
                break
            time.sleep(poll)
        t1 = time.monotonic()
        samples.append({"host": host, "vip": vip, "ok": ok, "s": t1 - t0, "post_s": t_post - t0,
                        "vip_s": (t_vip - t0) if t_vip else None})
    ok = [x["s"] for x in samples if x["ok"]]
    json.dump({"samples": samples, "ok": len(ok), "p50": pct(ok, 50), "p99": pct(ok, 99), "max": max(ok, default=None),
               "vip_p50": pct([x["vip_s"] for x in samples if x["vip_s"] is not None], 50)}, open(out, "w"))


def endpoints_body(ns, name, ip, first, n):
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": ns},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": first + k}]}
                        for k in range(n)]}


def pool_size(api, service):
    st, lst = api.call("GET", "/apis/lb.weft.io/v1/virtualservices")
    n = None
    for vs in (lst or {}).get("items") or []:
        for p in (vs.get("spec") or {}).get("pools") or []:
            if (p.get("service") or {}).get("name") == service:
                n = (n or 0) + len(p.get("servers") or [])
    return n


def scale(spec, out):
    api = Api(spec)
    ns, name = spec["namespace"], spec["service"]
    steps = []
    for n in spec["steps"]:
        t0 = time.monotonic()
        st, body = api.call("PUT", "/api/v1/namespaces/%s/endpoints/%s" % (ns, name),
                            endpoints_body(ns, name, spec["ip"], spec["firstPort"], n))
        if st not in (200, 201):
            json.dump({"error": "PUT Endpoints %s (%d servers): %s %s" % (name, n, st, body)}, open(out, "w"))
            return
        got = None
        while time.monotonic() < t0 + 10:
            got = pool_size(api, name)
            if got == n:
                break
            time.sleep(0.02)
        steps.append({"servers": n, "pool": got, "s": time.monotonic() - t0})
        time.sleep(spec.get("holdS", 0.5))
    json.dump({"steps": steps}, open(out, "w"))


def check_hosts(pairs, timeout=2.0):
    """pairs: [(vip, host)]; one keep-alive connection per VIP; the pairs
    that did not answer 200."""
    conns, bad = {}, []
    for vip, host in pairs:
        ok = False
        for attempt in (0, 1):
            c = conns.get(vip)
            if c is None:
                c = conns[vip] = http.client.HTTPConnection(vip, 80, timeout=timeout)
            try:
                c.request("GET", "/", headers={"Host": host})
                r = c.getresponse()
                r.read()
                ok = r.status == 200
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    del conns[vip]
                break
            except (OSError, http.client.HTTPException):
                c.close()
                del conns[vip]
        if not ok:
            bad.append((vip, host))
    for c in conns.values():
        c.close()
    return bad


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def hosts(spec, out):
    api = Api(spec)
    ns, n, t0 = spec["namespace"], spec["count"], spec["t0"]
    deadline = time.monotonic() + spec.get("timeoutS", 120)
    res = {"count": n}
    pairs = []
    while time.monotonic() < deadline:
        st, lst = api.call("GET", "/apis/networking.k8s.io/v1/namespaces/%s/ingresses" % ns)
        pairs = []
        for ing in (lst or {}).get("items") or []:
            if ing["metadata"]["name"].startswith("h-"):
                pairs += [(v, h) for h, v in ingress_vips(ing).items()]
        if len(pairs) >= n:
            break
        time.sleep(0.1)
    res["vips_s"] = (now_ns() - t0) / 1e9
    res["with_vip"] = len(pairs)
    rounds = 0
    todo = pairs
    while todo and time.monotonic() < deadline:
        es = engine_status(spec["stateDir"])
        if es.get("pendingReload"):
            time.sleep(0.05)
            continue
        rounds += 1
        todo = check_hosts(todo)
        if todo:
            time.sleep(0.1)
    res["answer_s"] = (now_ns() - t0) / 1e9
    res["rounds"] = rounds
    res["failing"] = len(todo)
    res["failingSample"] = [h for _, h in todo[:3]]
    st, lst = api.call("GET", "/apis/lb.weft.io/v1/virtualservices")
    items = (lst or {}).get("items") or []
    res["vs"] = len(items)
    res["vs_shared"] = sum(1 for v in items if (v.get("spec") or {}).get("type") == "SharedL7")
    res["vips"] = sorted({(v.get("spec") or {}).get("vip") for v in items if (v.get("spec") or {}).get("vip")})
    res["pools"] = sum(len((v.get("spec") or {}).get("pools") or []) for v in items)
    json.dump(res, open(out, "w"))


# ---------------------------------------------------------------- report
def report(path):
    rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
    wrk = {}
    info = {}
    for r in rows:
        if r[0] == "wrk":
            wrk.setdefault(r[1], []).append(json.loads(r[3]))
        else:
            info[(r[0], r[1])] = r[2:]
    print("lb: throughput and latency, medians of %d runs (wrk %s)" % (
        max((len(v) for v in wrk.values()), default=0), info.get(("meta", "wrk"), ["?"])[0]))
    med = {}
    for key in ("floor", "ref", "weft"):
        runs = wrk.get(key, [])
        rps = median([x["rps"] for x in runs if x["rps"] is not None])
        p50 = median([x["p50_ms"] for x in runs if x["p50_ms"] is not None])
        p99 = median([x["p99_ms"] for x in runs if x["p99_ms"] is not None])
        errs = sum(x["non2xx"] + x["socket_errors"] for x in runs)
        med[key] = (rps, p50, p99)
        if rps is None:
            print("  %-6s no run" % key)
            continue
        print("  %-6s %9.0f req/s  p50 %6.3f ms  p99 %6.3f ms  errors %d   (req/s of each run: %s)" % (
            key, rps, p50, p99, errs, " ".join("%.0f" % x["rps"] for x in runs if x["rps"])))
    goals = []
    (rr, _, rp), (wr, _, wp) = med["ref"], med["weft"]
    # paired ratios: run i of weft over run i of ref (they are neighbours)
    pr = [w["rps"] / r["rps"] for r, w in zip(wrk.get("ref", []), wrk.get("weft", [])) if r["rps"] and w["rps"]]
    pp = [w["p99_ms"] / r["p99_ms"] for r, w in zip(wrk.get("ref", []), wrk.get("weft", []))
          if r["p99_ms"] and w["p99_ms"]]
    if rr and wr:
        ratio = wr / rr
        print("  weft-lb / reference: req/s %.3fx (paired runs: median %.3f, range %.3f-%.3f); "
              "p99 %.3fx (paired: median %.3f, range %.3f-%.3f)" % (
                  ratio, median(pr), min(pr), max(pr), wp / rp, median(pp), min(pp), max(pp)))
        if med["floor"][0]:
            print("  reference / floor (the backend alone): req/s %.3fx" % (rr / med["floor"][0]))
        goals.append("GOAL lb_rps_vs_ref: %.3f (goal >= 0.95) %s" % (ratio, "PASS" if ratio >= 0.95 else "FAIL"))
        r99 = wp / rp
        goals.append("GOAL lb_p99_vs_ref: %.3f (goal <= 1.10) %s" % (r99, "PASS" if r99 <= 1.10 else "FAIL"))
    else:
        goals.append("GOAL lb_rps_vs_ref: FAIL (no measurement)")
        goals.append("GOAL lb_p99_vs_ref: FAIL (no measurement)")
    nh = info.get(("newhost", "p99"))
    if nh:
        p99 = float(nh[0])
        goals.append("GOAL lb_new_host_p99: %.3f s (goal <= 1 s) %s" % (p99, "PASS" if p99 <= 1.0 else "FAIL"))
    else:
        goals.append("GOAL lb_new_host_p99: FAIL (no measurement)")
    sc = info.get(("scale", "errors"))
    if sc:
        e, rl = int(sc[0]), int(info[("scale", "reloads")][0])
        goals.append("GOAL lb_scale_errors: %d (goal 0) %s" % (e, "PASS" if e == 0 else "FAIL"))
        goals.append("GOAL lb_scale_reloads: %d (goal 0) %s" % (rl, "PASS" if rl == 0 else "FAIL"))
    else:
        goals.append("GOAL lb_scale_errors: FAIL (no measurement)")
        goals.append("GOAL lb_scale_reloads: FAIL (no measurement)")
    for g in goals:
        print(g)


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    cmd = a[0]
    if cmd == "wrk":
        print(json.dumps(wrk_parse(a[1])))
    elif cmd == "refcfg":
        refcfg(int(a[1]), a[2], a[3], a[4], a[5], a[6])
    elif cmd == "ingresses":
        ingresses(int(a[1]), a[2], a[3], a[4])
    elif cmd in ("newhost", "scale", "hosts"):
        spec = json.load(open(a[1]))
        {"newhost": newhost, "scale": scale, "hosts": hosts}[cmd](spec, a[2])
    elif cmd == "check":
        n = int(a[2])
        bad = check_hosts([(a[1], HOST_FMT % i) for i in range(n)])
        print(n - len(bad))
    elif cmd == "report":
        report(a[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
