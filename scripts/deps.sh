#!/usr/bin/env bash
# Install the Debian packages weft needs to build, test and run.
# Idempotent: when every package is present it does nothing (no apt call).
set -euo pipefail

packages=(
  build-essential pkg-config make gcc clang llvm libclang-rt-14-dev
  libsqlite3-dev sqlite3
  libjansson-dev
  libfyaml-dev
  libmicrohttpd-dev
  libcurl4-openssl-dev curl
  iproute2 procps python3
)

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
