#!/usr/bin/env bash
# python_client.sh — the official Python client (Debian's python3-kubernetes)
# against weft-controller, as a user's script would use it: load the
# controller's admin.kubeconfig, create, read and list objects into the
# client's typed models, watch from a resourceVersion, delete, and read
# an API error as the client's ApiException.
#
#   python3 (kubernetes.client) ──TLS──► weft-controller (127.0.0.1:random)
cd "$(dirname "$0")/../.." && source tests/lib.sh

PY=/usr/bin/python3	# Debian's, with python3-kubernetes
if ! "$PY" -c 'import kubernetes' 2>/dev/null; then
	fail "Debian's python3-kubernetes is installed (scripts/deps.sh installs it)"
	finish
	exit 1
fi
DIR=$(tmpdir)
start_controller "$DIR" || { fail "controller starts"; finish; exit 1; }
api POST /api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.9.1"}]}}' >/dev/null

# client SCRIPT: run a Python snippet with the client loaded from the kubeconfig;
# it prints what the check compares
client() {
	"$PY" - "$CTRL_KUBECONFIG" <<PY
import sys, threading
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
net = client.NetworkingV1Api()
$1
PY
}
out_is() { # out_is WANT SCRIPT
	local out; out=$(client "$2" 2>&1) || { echo "the script failed: $out"; return 1; }
	[ "$out" = "$1" ] || { echo "expected '$1'; seen '$out'"; return 1; }
}

check "create a namespace and a pod (typed models in, typed models out)" out_is "blue web node-1" '
v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="blue")))
p = v1.create_namespaced_pod("blue", client.V1Pod(
    metadata=client.V1ObjectMeta(name="web", labels={"app": "web"}),
    spec=client.V1PodSpec(node_name="node-1", containers=[client.V1Container(name="c", image="nginx",
        ports=[client.V1ContainerPort(container_port=8080, name="http")])])))
print(p.metadata.namespace, p.metadata.name, p.spec.node_name)'
check "read it back: uid, creationTimestamp as a datetime, the container port" out_is "True True 8080" '
p = v1.read_namespaced_pod("web", "blue")
print(len(p.metadata.uid) == 36, p.metadata.creation_timestamp.year >= 2024, p.spec.containers[0].ports[0].container_port)'
check "a Service gets its cluster IP; Endpoints list the pod when it has an address" out_is "True 80 TCP" '
s = v1.create_namespaced_service("blue", client.V1Service(metadata=client.V1ObjectMeta(name="web"),
    spec=client.V1ServiceSpec(selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port="http")])))
print(s.spec.cluster_ip.startswith("172.30."), s.spec.ports[0].port, s.spec.ports[0].protocol)'
check "list pods in all namespaces: a V1PodList with a resourceVersion" out_is "V1PodList True blue/web" '
l = v1.list_pod_for_all_namespaces()
print(type(l).__name__, int(l.metadata.resource_version) > 0, " ".join(p.metadata.namespace + "/" + p.metadata.name for p in l.items))'
check "list a NetworkPolicy through the networking group" out_is "deny-all" '
net.create_namespaced_network_policy("blue", client.V1NetworkPolicy(metadata=client.V1ObjectMeta(name="deny-all"),
    spec=client.V1NetworkPolicySpec(pod_selector=client.V1LabelSelector())))
print(" ".join(n.metadata.name for n in net.list_namespaced_network_policy("blue").items))'
check "watch from a resourceVersion sees the next create, then the delete" out_is "ADDED blue/api DELETED blue/api" '
rv = v1.list_namespaced_pod("blue").metadata.resource_version
seen = []
def writer():
    v1.create_namespaced_pod("blue", client.V1Pod(metadata=client.V1ObjectMeta(name="api"),
        spec=client.V1PodSpec(node_name="node-1", containers=[client.V1Container(name="c", image="nginx")])))
    v1.delete_namespaced_pod("api", "blue")
w = watch.Watch()
t = threading.Thread(target=writer)
t.start()
for ev in w.stream(v1.list_namespaced_pod, "blue", resource_version=rv, timeout_seconds=20):
    seen.append(ev["type"] + " " + ev["object"].metadata.namespace + "/" + ev["object"].metadata.name)
    if len(seen) == 2:
        w.stop()
t.join()
print(" ".join(seen))'
check "an error is an ApiException with the Status: 404 NotFound naming the pod" out_is "404 NotFound True" '
import json
try:
    v1.read_namespaced_pod("nope", "blue")
except ApiException as e:
    body = json.loads(e.body)
    print(e.status, body["reason"], "nope" in body["message"])'
check "a create that conflicts: 409 AlreadyExists" out_is "409 AlreadyExists" '
import json
try:
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="blue")))
except ApiException as e:
    print(e.status, json.loads(e.body)["reason"])'
check "delete the pod: gone from the list" out_is "0" '
v1.delete_namespaced_pod("web", "blue")
print(len(v1.list_namespaced_pod("blue").items))'
# the client sends watch=True: booleans are read as Kubernetes reads them
check "GET ...?watch=yes: 400, naming the value" \
	bash -c "out=\$(curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' '$CTRL_URL/api/v1/pods?watch=yes'); jq -e '.code == 400 and (.message | test(\"yes\"))' <<<\"\$out\""
check "GET ...?watch=False: a list" \
	bash -c "curl -s -H 'Authorization: Bearer $(cat "$CTRL_TOKEN_FILE")' '$CTRL_URL/api/v1/pods?watch=False' | jq -e '.kind == \"PodList\"'"
check_stop "the controller stops cleanly"
finish
