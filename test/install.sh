#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The install, as a user makes it: a copy of the sources (the tree under test
# stays untouched) is built and installed into a prefix the dynamic linker
# does not search, and then deleted, build tree and all. Then:
#  - no installed file names a path of that build tree (strings);
#  - a program built with pkg-config against the prefix runs without
#    LD_LIBRARY_PATH (the .pc files give such a prefix as RUNPATH);
#  - as root, the installed uskb-pktgen --veth runs the installed
#    netns-veth.sh (a file planted where the build tree's was is never run).
# Runs once, in the plain build's suite (skips, 77, in a sanitizer's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
case $here in */san-*/test | */noxdp/test | */clang/test) echo "skipped: the plain suite tests the install"; exit 77 ;; esac
root=$(cd "$here/../.." && pwd)
[ -f "$root/Makefile" ] || { echo "skipped: no source tree above $here"; exit 77; }
command -v pkg-config >/dev/null || { echo "skipped: no pkg-config (scripts/deps.sh)"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

src=$tmp/src prefix=$tmp/opt
mkdir -p "$src"
tar -C "$root" --exclude=./build --exclude=./.git -cf - . | tar -C "$src" -xf -
cp "$root/examples/demo.c" "$tmp/demo.c"
if ! make -C "$src" -j2 PREFIX="$prefix" CFLAGS="-O1 -g" lib tools >"$tmp/build.log" 2>&1 ||
	! make -C "$src" PREFIX="$prefix" install >"$tmp/install.log" 2>&1; then
	tail -n 20 "$tmp/build.log" "$tmp/install.log"
	echo "FAIL: the build or the install into $prefix failed"
	exit 1
fi
# the build tree goes; something else is planted where its script was
rm -rf "$src"
mkdir -p "$src/scripts"
printf '#!/bin/sh\ntouch %s/planted-ran\nexit 1\n' "$tmp" >"$src/scripts/netns-veth.sh"
chmod 755 "$src/scripts/netns-veth.sh"

# no path of the build tree in anything installed
hits=$(find "$prefix" -type f -exec grep -l -F "$src" {} + 2>/dev/null)
[ -z "$hits" ] || bad "installed files name the build tree $src: $hits"

# a program built with pkg-config runs, without LD_LIBRARY_PATH
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
if cc "$tmp/demo.c" $(pkg-config --cflags --libs uskb) -lpthread -o "$tmp/demo" 2>"$tmp/cc.err"; then
	env -u LD_LIBRARY_PATH "$tmp/demo" >/dev/null 2>"$tmp/demo.err" ||
		bad "a pkg-config program against $prefix: exit $?: $(cat "$tmp/demo.err")"
	readelf -d "$tmp/demo" | grep -q "RUNPATH.*$prefix/lib" || bad "no RUNPATH $prefix/lib in the program"
else
	bad "building a program with pkg-config against $prefix: $(cat "$tmp/cc.err")"
fi
echo "pkg-config against $prefix: built and ran with no LD_LIBRARY_PATH"

# --veth from the installed tool: the installed script, never the planted one
if [ "$(id -u)" = 0 ]; then
	out=$("$prefix/bin/uskb-pktgen" --veth -n 100 -q 2>&1)
	rc=$?
	[ $rc = 0 ] && grep -q "^Result: OK" <<<"$out" && [ ! -e "$tmp/planted-ran" ] ||
		bad "--veth of the installed tool: exit $rc, planted script ran: $([ -e "$tmp/planted-ran" ] && echo yes || echo no): $out"
	echo "--veth: the installed netns-veth.sh ran (the planted one did not)"
else
	echo "--veth: not tried (not root)"
fi

[ $fail = 0 ] || { echo "$fail failed"; exit 1; }
echo "install: ok"
