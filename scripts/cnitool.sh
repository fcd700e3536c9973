#!/usr/bin/env bash
# scripts/cnitool.sh — build the reference CNI client `cnitool` offline into
# build/tools/cnitool, from Debian's libcni sources (golang-go and
# golang-github-appc-cni-dev; see scripts/deps.sh).  Idempotent: does
# nothing when the binary is newer than every source it is built from.
#
# Upstream's cnitool/ directory is used when the package has it; Debian's
# libcni 1.1.2 package does not, so tests/tools/cnitool/main.go (the same
# client: add|check|del <net> <netns>, NETCONFPATH, CNI_PATH, CAP_ARGS,
# CNI_ARGS, CNI_IFNAME) is built instead.
#
#   scripts/cnitool.sh            build if needed, print the binary's path
#   FORCE=1 scripts/cnitool.sh    rebuild
#   GOCODE=dir                    Debian's Go source root (/usr/share/gocode)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

gocode=${GOCODE:-/usr/share/gocode}
cni=$gocode/src/github.com/containernetworking/cni
out=$top/build/tools/cnitool

if ! command -v go >/dev/null 2>&1; then
	echo "cnitool: 'go' not found (Debian package golang-go; scripts/deps.sh installs it)" >&2
	exit 1
fi
if [ ! -f "$cni/libcni/api.go" ]; then
	echo "cnitool: libcni sources not found under $cni (Debian package golang-github-appc-cni-dev)" >&2
	exit 1
fi

if [ -f "$cni/cnitool/cnitool.go" ]; then
	src=$cni/cnitool
else
	src=$top/tests/tools/cnitool
fi

# Up to date: the binary exists and no source (the main package, libcni
# and its pkg/ tree, this script) is newer than it.
if [ -z "${FORCE:-}" ] && [ -x "$out" ] &&
	[ -z "$(find "$src" "$cni/libcni" "$cni/pkg" "$top/scripts/cnitool.sh" \
		-name '*.go' -newer "$out" -print -quit 2>/dev/null)" ] &&
	[ ! "$top/scripts/cnitool.sh" -nt "$out" ]; then
	echo "$out"
	exit 0
fi

mkdir -p "$top/build/tools" "$top/build/go-cache"
gopath_tmp=$(mktemp -d /tmp/weft-cnitool-gopath.XXXXXX)
trap 'rm -rf "$gopath_tmp"' EXIT

# GOPATH mode: no module proxy, no network; imports resolve from Debian's
# tree.  GOFLAGS/GOPROXY are cleared so the caller's environment cannot
# make go reach out.  CGO off gives a static binary.
(
	cd "$src"
	env GO111MODULE=off GOPATH="$gocode:$gopath_tmp" \
		GOCACHE="$top/build/go-cache" GOFLAGS= GOPROXY=off \
		CGO_ENABLED=0 \
		go build -o "$out.tmp" .
)
mv -f "$out.tmp" "$out"
echo "$out"
