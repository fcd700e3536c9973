#!/usr/bin/env python3
"""api_writer.py — a stream of writes against weft-controller on one
keep-alive connection, each acknowledged write's object appended (and
flushed) to ACKS.  Stops at COUNT writes or at the first connection error
(the controller died).

Without BATCH: node registrations and pod creates, acknowledged as
"node NAME" / "pod NAME".  Each node is followed by three pods on it, with
the first addresses of the subnet the registration gave it (spec.podCIDR
of the answer).

With BATCH: batched applies, v1 Lists of BATCH Secrets (crash-secret-START
.. START+COUNT-1, namespace default) POSTed to /weft/v1/apply; every item
the answer says was written is acknowledged as "secret NAME".

usage: api_writer.py URL TOKEN_FILE COUNT ACKS [START [BATCH]]
"""
import http.client, ipaddress, json, ssl, sys, urllib.parse

url, token_file, count, acks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
batch = int(sys.argv[6]) if len(sys.argv) > 6 else 0
u = urllib.parse.urlparse(url)
token = open(token_file).read().strip()
hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
if u.scheme == "https":  # the CA: the default trust store (tests set SSL_CERT_FILE)
    conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=10, context=ssl.create_default_context())
else:
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)


def post(path, body, want, what):
    """The answer's body, or exit: 0 when the connection failed, 1 on
    another status than want."""
    try:
        conn.request("POST", path, json.dumps(body), hdr)
        r = conn.getresponse()
        answer = r.read()
    except Exception:
        sys.exit(0)
    if r.status != want:
        print("write %s: HTTP %d" % (what, r.status), file=sys.stderr)
        sys.exit(1)
    return answer


def one_by_one(out):
    node, pod_ips = None, []
    for i in range(start, start + count):
        if i % 4 == 0:   # one node registration for three pod creates
            n = i // 4
            name = "crash-node-%d" % n
            body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                    "status": {"addresses": [{"type": "InternalIP",
                                              "address": "10.%d.%d.%d" % (n // 65536 % 256 + 50, n // 256 % 256, n % 256)}]}}
            path, what = "/api/v1/nodes", "node"
        else:
            name = "crash-pod-%d" % i
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"nodeName": node},
                    "status": {"podIP": pod_ips[i % 4 - 1]}}
            path, what = "/api/v1/namespaces/default/pods", "pod"
        answer = post(path, body, 201, "%s %s" % (what, name))
        if what == "node":   # its pods get the subnet's addresses after the gateway
            subnet = ipaddress.ip_network(json.loads(answer)["spec"]["podCIDR"])
            node, pod_ips = name, [str(subnet.network_address + k) for k in (2, 3, 4)]
        out.write("%s %s\n" % (what, name))
        out.flush()


def batches(out):
    for first in range(start, start + count, batch):
        names = ["crash-secret-%d" % i for i in range(first, min(first + batch, start + count))]
        body = {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": "default"},
             "type": "Opaque", "data": {"n": "MQ=="}} for n in names]}
        answer = post("/weft/v1/apply", body, 200, "batch from %s" % names[0])
        for item in json.loads(answer)["items"]:
            if item["result"] in ("created", "configured", "unchanged"):
                out.write("secret %s\n" % item["name"])
        out.flush()


with open(acks, "a") as out:
    (batches if batch else one_by_one)(out)
