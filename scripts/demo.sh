#!/usr/bin/env bash
# demo.sh — what `make demo` runs: a controller on a temporary directory,
# three nodes registering, projects getting VNIDs, the pod-network verbs.
# (The data plane, weft-lab and pods talking across nodes come with the
# agent; this demo grows with it.)
#
# KEEP=1 make demo leaves the controller running and prints how to use it.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/release/bin
dir=$(mktemp -d /tmp/weft-demo.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=
cleanup() {
	if [ -z "${KEEP:-}" ]; then
		[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "start weft-controller on $dir (listening on 127.0.0.1:$port)"
"$bin/weft-controller" --data-dir "$dir" --listen "127.0.0.1:$port" 2>"$dir/controller.log" &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
export WEFT_SERVER=http://127.0.0.1:$port WEFT_TOKEN_FILE=$dir/admin.token
alias weftctl="$bin/weftctl"
weftctl() { "$bin/weftctl" "$@"; }

step "three nodes register (as their agents will)"
cat > "$dir/nodes.yaml" <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {addresses: [{type: InternalIP, address: 192.168.50.11}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
status: {addresses: [{type: InternalIP, address: 192.168.50.12}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-3}
status: {addresses: [{type: InternalIP, address: 192.168.50.13}]}
YAML
run weftctl apply -f "$dir/nodes.yaml"
run weftctl get hostsubnets

step "projects get VNIDs (default is global: 0)"
cat > "$dir/projects.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: red}
---
apiVersion: v1
kind: Namespace
metadata: {name: blue}
---
apiVersion: v1
kind: Namespace
metadata: {name: green}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: red}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
YAML
run weftctl apply -f "$dir/projects.yaml"
run weftctl get netnamespaces
run weftctl get services -n red

step "the pod-network verbs"
run weftctl pod-network join-projects --to=red blue
run weftctl pod-network make-projects-global green
run weftctl get netnamespaces

step "a bad manifest is refused, naming the file, document and field"
cat > "$dir/bad.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: fine}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: red}
spec:
  rules:
  - host: My_Host
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
YAML
printf '$ weftctl apply -f bad.yaml\n'
(cd "$dir" && "$OLDPWD/$bin/weftctl" apply -f bad.yaml) || echo "(exit $? — nothing applied)"

if [ -n "${KEEP:-}" ]; then
	step "the controller keeps running (pid $pid)"
	cat <<EOT
  export WEFT_SERVER=$WEFT_SERVER WEFT_TOKEN_FILE=$WEFT_TOKEN_FILE
  $bin/weftctl get nodes
  curl -s -H "Authorization: Bearer \$(cat $WEFT_TOKEN_FILE)" $WEFT_SERVER/metrics
stop it with:  kill $pid && rm -rf $dir
EOT
else
	step "done (KEEP=1 make demo leaves the controller running to explore)"
fi
