#!/usr/bin/env bash
# scripts/config.sh — print build/config.mk: every compiler and linker flag
# that comes from an installed package, asked of pkg-config.
#
# The Makefile runs it after scripts/deps.sh, never while it is parsed, so
# the flags are those of the packages as installed now.  A package that
# pkg-config cannot find is an error naming it and the Debian package that
# provides it: empty flags would only fail later, in the linker, with a
# message that names a symbol instead of the cause.
#
#   bash scripts/config.sh > build/config.mk
#   PKG_CONFIG=cmd   the pkg-config to ask (default: pkg-config)
set -euo pipefail

pkgconf=${PKG_CONFIG:-pkg-config}

# pkg-config name -> Debian package (scripts/deps.sh installs them)
declare -A debian=(
	[jansson]=libjansson-dev [libfyaml]=libfyaml-dev
	[libmicrohttpd]=libmicrohttpd-dev [libcurl]=libcurl4-openssl-dev
	[sqlite3]=libsqlite3-dev [libbpf]=libbpf-dev [libmnl]=libmnl-dev
	[libelf]=libelf-dev [zlib]=zlib1g-dev [gnutls]=libgnutls28-dev
)

missing=0
for p in $(printf '%s\n' "${!debian[@]}" | sort); do
	"$pkgconf" --exists "$p" 2>/dev/null && continue
	[ $missing -eq 1 ] || echo "config: pkg-config ($pkgconf) does not find:" >&2
	echo "config:   $p (Debian package ${debian[$p]})" >&2
	missing=1
done
if [ $missing -eq 1 ]; then
	echo "config: scripts/deps.sh installs them (as root); then run make again." >&2
	exit 1
fi

flags() { "$pkgconf" "$@" | tr -s ' \n' ' ' | sed 's/ $//'; }

cat <<EOF
# build/config.mk — written by scripts/config.sh after scripts/deps.sh;
# the Makefile remakes it before every build.  Do not edit.
PKG_CFLAGS := $(flags --cflags jansson libfyaml libmicrohttpd gnutls libcurl sqlite3)
PKG_LIBS   := $(flags --libs jansson libfyaml libmicrohttpd gnutls libcurl sqlite3)
AGENT_LIBS := $(flags --libs libbpf libmnl libelf zlib)
CNI_LIBS   := $(flags --libs jansson)
EOF
