#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The man pages as a reader meets them in the tree: every page, links
# included, renders with "man -l" to a NAME that lists its own name, without
# a groff warning; every function the four libraries export (the maps) has
# a page; every page a page refers to as name(3) or name(8) exists.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# the source tree: above test/, build/test/ or build/VARIANT/test/
for root in "$here/.." "$here/../.." "$here/../../.."; do
	[ -x "$root/scripts/man-links" ] && break
done
command -v man >/dev/null || { echo "man (man-db) is not installed: scripts/deps.sh installs it"; exit 77; }
cd "$root"
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

scripts/man-links --check || bad "scripts/man-links --check"

n=0
for f in man/man3/*.3 man/man8/*.8; do
	name=$(basename "$f" | sed 's/\.[0-9]$//')
	out=$(MANWIDTH=200 man -l "$f" 2>/tmp/uskb-man.$$ | col -b)
	err=$(cat /tmp/uskb-man.$$)
	[ -z "$err" ] || bad "$f: $err"
	# the NAME paragraph: from NAME to the first blank line after it
	names=$(printf '%s\n' "$out" | awk '/^NAME/ { f = 1; next } f && /^$/ { exit } f')
	printf '%s\n' "$names" | grep -qw -- "$name" || bad "$f: NAME does not list $name: $names"
	n=$((n + 1))
done
rm -f /tmp/uskb-man.$$
echo "$n pages render"

for map in src/libuskb.map src/dev/libuskb-netdev.map src/pktgen/libuskb-pktgen.map src/vhost/libuskb-vhost.map; do
	for sym in $(grep -o '\buskb_[a-z0-9_]*;' "$map" | tr -d ';'); do
		[ -e "man/man3/$sym.3" ] || bad "$sym (exported in $map) has no man page"
	done
done

refs=$(cat man/man3/*.3 man/man8/*.8 | grep -o '^\.BR* [a-z_0-9-]* *([38])' | sed 's/^\.BR* //; s/ *(/./; s/)//' | sort -u)
for r in $refs; do
	[ -e "man/man${r##*.}/$r" ] || bad "a page refers to ${r%.*}(${r##*.}), which has no page"
done
echo "$(echo "$refs" | wc -w) cross-references checked"
exit $((fail > 0))
