#!/usr/bin/env bash
# Install the Debian packages weft needs to build, test and run.
# Idempotent: when every package is present it does nothing (no apt call).
set -euo pipefail

packages=(
  build-essential pkg-config make gcc clang llvm libclang-rt-14-dev
  libsqlite3-dev sqlite3
  libjansson-dev
  libfyaml-dev
  libmicrohttpd-dev libgnutls28-dev
  libcurl4-openssl-dev curl
  iproute2 procps python3
  # weft-lab status (column)
  bsdextrautils
  # agent and data plane: libbpf skeletons, netlink, masquerade
  libbpf-dev bpftool libelf-dev zlib1g-dev libmnl-dev nftables
  # lab, end-to-end tests and benchmarks
  containernetworking-plugins iptables ipset iperf3 sockperf tcpdump socat jq iputils-ping
  # the attacker suite: raw packets from a pod (Debian's python3, not any other)
  python3-scapy
  # the API as the official Python client uses it
  python3-kubernetes
  # the agents' /metrics read by the Prometheus client's own parser
  python3-prometheus-client
  # the OpenAPI test decodes the protobuf document (protoc --decode_raw)
  protobuf-compiler
  # the reference CNI client (cnitool, built from Debian's libcni sources)
  golang-go golang-github-appc-cni-dev
  # the store's conformance suite against a real etcd (tests/api/store_etcd.sh)
  etcd-server etcd-client
  # the service engine (weft-lb) and its tests: HAProxy, clients under load
  haproxy openssl wrk nghttp2-client
  # the cluster page in a real browser (tests/e2e/ui.sh)
  chromium
)

# kubectl for the API tests: Debian's kubernetes-client, unless a kubectl is
# already installed (some images carry a newer one at /usr/bin/kubectl from
# another package, which kubernetes-client would collide with)
if ! command -v kubectl >/dev/null 2>&1; then
  packages+=(kubernetes-client)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}; run as root (or: sudo $0)" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
