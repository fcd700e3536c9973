#!/usr/bin/env bash
# fresh_machine.sh — the README's commands on a machine where none of weft's
# dependencies is installed yet.
#
#   copy of the tree (the files git would commit), in a temporary directory
#     PATH: a pkg-config that finds nothing until the deps step has run,
#           then answers as the real one does (a fresh Debian 12 machine)
#     scripts/deps.sh: replaced by one that logs it ran and "installs"
#           the packages (makes that pkg-config find them), or installs
#           nothing (FRESH_INSTALL=0)
#
#   1. deps that install nothing: make fails, naming each missing package
#      and its Debian package, and compiles nothing
#   2. `make -j2` (what `make demo` builds first): succeeds the first time;
#      the deps step ran before any compile, pkg-config was asked nothing
#      before it, weft-agent links libbpf and libmnl, weft-cni only jansson
#   3. a second make compiles nothing and keeps build/config.mk as it was
#   4. `make clean` installs nothing
#
# The Makefile that computed its link flags while it was parsed, before the
# deps step, failed 2 (undefined references to every libbpf symbol).
cd "$(dirname "$0")/../.." && source tests/lib.sh
set -o pipefail
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

real_pkgconfig=$(command -v pkg-config) || { fail "pkg-config is installed" "not found"; finish; exit 1; }
fresh=$(tmpdir)
tree=$fresh/weft
mkdir -p "$tree" "$fresh/bin"

# the tree as a clone has it (untracked files that are not ignored included)
git ls-files -z -co --exclude-standard | tar -cf - --null -T - | tar -xf - -C "$tree"

cat >"$fresh/bin/pkg-config" <<PC
#!/bin/sh
if [ -e "$fresh/installed" ]; then
	echo "after  \$*" >>"$fresh/pkg-config.log"
	exec "$real_pkgconfig" "\$@"
fi
echo "before \$*" >>"$fresh/pkg-config.log"
exit 1
PC
cat >"$tree/scripts/deps.sh" <<DEPS
#!/bin/sh
echo "fresh-deps: ran"
echo ran >>"$fresh/deps.log"
[ "\${FRESH_INSTALL:-1}" = 0 ] || touch "$fresh/installed"
DEPS
chmod +x "$fresh/bin/pkg-config" "$tree/scripts/deps.sh"
fresh_make() { (cd "$tree" && PATH="$fresh/bin:$PATH" make "$@"); }
deps_runs() { [ -f "$fresh/deps.log" ] && wc -l <"$fresh/deps.log" || echo 0; }
compiled() { grep -cE '^  (CC|BPF|LD|SKEL) ' "$1" || true; }

# 1. the deps step installs nothing
rc=0
FRESH_INSTALL=0 fresh_make -j2 >"$fresh/none.log" 2>&1 || rc=$?
check "deps that install nothing: make fails" test "$rc" -ne 0
check "the error names libbpf and its Debian package" grep -q 'libbpf (Debian package libbpf-dev)' "$fresh/none.log"
check "the error names jansson and its Debian package" grep -q 'jansson (Debian package libjansson-dev)' "$fresh/none.log"
check "nothing was compiled" test "$(compiled "$fresh/none.log")" -eq 0
rm -f "$fresh/pkg-config.log" "$fresh/deps.log"

# 2. the first real build
rc=0
fresh_make -j2 >"$fresh/first.log" 2>&1 || rc=$?
check "make succeeds the first time" test "$rc" -eq 0
[ "$rc" -eq 0 ] || grep -E 'error|undefined' "$fresh/first.log" | head -n 5
deps_line=$(grep -n '^fresh-deps: ran' "$fresh/first.log" | head -n 1 | cut -d: -f1)
cc_line=$(grep -nE '^  (CC|BPF) ' "$fresh/first.log" | head -n 1 | cut -d: -f1)
check "the deps step ran before the first compile" test -n "$deps_line" -a -n "$cc_line" -a "${deps_line:-0}" -lt "${cc_line:-0}"
before=$(grep -c '^before' "$fresh/pkg-config.log" 2>/dev/null || true)
check "pkg-config was asked nothing before the deps step" test "${before:-0}" -eq 0
[ "${before:-0}" -eq 0 ] || grep '^before' "$fresh/pkg-config.log" | sort | uniq -c | head -n 5
needed() { readelf -d "$tree/build/release/bin/$1" 2>/dev/null | grep -oE 'NEEDED.*\[[^]]+\]' | grep -oE '\[[^]]+\]' | tr -d '[]'; }
check "weft-agent links libbpf" grep -q '^libbpf\.so' <(needed weft-agent)
check "weft-agent links libmnl" grep -q '^libmnl\.so' <(needed weft-agent)
check "weft-cni links jansson and nothing heavy" test "$(needed weft-cni | grep -vE '^(libjansson|libc)\.so' | wc -l)" -eq 0 -a -n "$(needed weft-cni | grep libjansson)"
check "bin/ has every command" test -x "$tree/bin/weft-controller" -a -x "$tree/bin/weft-agent" -a -x "$tree/bin/weft-cni" -a -x "$tree/bin/weftctl" -a -x "$tree/bin/weft-lab"
check "weftctl runs" "$tree/bin/weftctl" --help

# 3. nothing to do the second time
stamp=$(stat -c %Y.%y "$tree/build/config.mk" 2>/dev/null)
fresh_make >"$fresh/second.log" 2>&1
check "a second make compiles nothing" test "$(compiled "$fresh/second.log")" -eq 0
check "build/config.mk is kept as it was" test "$stamp" = "$(stat -c %Y.%y "$tree/build/config.mk" 2>/dev/null)"

# 4. clean
runs=$(deps_runs)
fresh_make clean >"$fresh/clean.log" 2>&1
check "make clean runs no deps step" test "$(deps_runs)" -eq "$runs"
check "make clean removes build/" test ! -e "$tree/build"

finish
