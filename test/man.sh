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

# each tool's --help: the usage lines of its SYNOPSIS, -V, and the exit codes of its EXIT STATUS
for t in pktgen dp vhost; do
	bin=""
	for b in "$here/../tools/uskb-$t" "$root/build/tools/uskb-$t"; do [ -x "$b" ] && { bin=$b; break; }; done
	[ -n "$bin" ] || { bad "no uskb-$t binary to ask for --help"; continue; }
	help=$("$bin" --help)
	syn=$(MANWIDTH=300 man -l "man/man8/uskb-$t.8" 2>/dev/null | col -b | sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' |
		sed '1d;$d; s/^ *//; /^$/d')
	usage=$(printf '%s\n' "$help" | sed -n '/^Usage:/,/^[^ U]/p' | grep "uskb-$t" | sed 's/^Usage: *//; s/^ *//')
	[ "$syn" = "$usage" ] || bad "uskb-$t: --help's usage and the man page's SYNOPSIS differ: [$usage] [$syn]"
	"$bin" -V | grep -q "^uskb-$t [0-9]" || bad "uskb-$t -V: $("$bin" -V 2>&1 | head -1)"
	# every number the EXIT STATUS section gives is in the help's exit status
	codes=$(MANWIDTH=300 man -l "man/man8/uskb-$t.8" 2>/dev/null | col -b | sed -n '/^EXIT STATUS/,/^[A-Z]/p' |
		grep -o '\b[0-9]\b' | sort -u)
	hexit=$(printf '%s\n' "$help" | sed -n '/Exit status/,$p' | grep -o '\b[0-9]\b' | sort -u)
	for c in $codes; do grep -qx "$c" <<<"$hexit" || bad "uskb-$t: exit $c is in the man page, not in --help"; done
done
echo "--help of the three tools: their SYNOPSIS, -V and their exit codes"
exit $((fail > 0))
