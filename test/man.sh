#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The man pages as a reader meets them in the tree: every page, links
# included, renders with "man -l" to a NAME that lists its own name, without
# a groff warning; every function the four libraries export (the maps) has
# a page; every page a page refers to as name(3) or name(8) exists. In the
# roff source (the rendered text hyphenates): every page but the overview
# uskb.3 gives each name of its NAME line a prototype in its SYNOPSIS and has
# a RETURN VALUE section, and every uskb_ function the headers declare
# (USKB_API or USKB_INLINE) has a page.
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

# the roff source of each page that is no link, but the overview: "name(" in
# the SYNOPSIS (from .SH SYNOPSIS to the next .SH) for each NAME, and a
# RETURN VALUE section
np=0
for f in man/man3/*.3; do
	[ -L "$f" ] && continue
	[ "$f" = man/man3/uskb.3 ] && continue
	names=$(awk 'f { sub(/ \\-.*/, ""); gsub(/,/, " "); print; exit } /^\.SH NAME/ { f = 1 }' "$f")
	[ -n "$names" ] || bad "$f: no names in its NAME section"
	syn=$(awk '/^\.SH SYNOPSIS/ { f = 1; next } f && /^\.SH/ { exit } f' "$f")
	[ -n "$syn" ] || bad "$f: no SYNOPSIS section"
	for nm in $names; do
		grep -qE "(^|[^A-Za-z0-9_])$nm\(" <<<"$syn" || bad "$f: $nm is in NAME but has no prototype in SYNOPSIS"
	done
	grep -q '^\.SH RETURN VALUE' "$f" || bad "$f: no RETURN VALUE section"
	np=$((np + 1))
done
# every uskb_ function of the headers: USKB_API or USKB_INLINE, the type on
# that line or more, the name where the first "(" is
fns=$(awk '/^USKB_(API|INLINE) / { s = ""; f = 1 }
	f { s = s " " $0; if (index($0, "(")) { sub(/\(.*/, "", s); k = split(s, w, /[ \t*]+/); print w[k]; f = 0 } }' \
	include/uskb/*.h | grep '^uskb_' | sort -u)
[ -n "$fns" ] || bad "no USKB_API or USKB_INLINE function found in include/uskb/*.h"
for sym in $fns; do
	[ -e "man/man3/$sym.3" ] || bad "$sym (declared in include/uskb/*.h) has no man page"
done
echo "$np pages give each NAME a prototype and a RETURN VALUE; $(echo "$fns" | wc -w) header functions have a page"

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
	# (a reference to another page, as uskb-pktgen(8), is not an exit code)
	codes=$(MANWIDTH=300 man -l "man/man8/uskb-$t.8" 2>/dev/null | col -b | sed -n '/^EXIT STATUS/,/^[A-Z]/p' |
		sed 's/[A-Za-z0-9_-]*([0-9])//g' | grep -o '\b[0-9]\b' | sort -u)
	hexit=$(printf '%s\n' "$help" | sed -n '/Exit status/,$p' | grep -o '\b[0-9]\b' | sort -u)
	for c in $codes; do grep -qx "$c" <<<"$hexit" || bad "uskb-$t: exit $c is in the man page, not in --help"; done
done
echo "--help of the three tools: their SYNOPSIS, -V and their exit codes"
exit $((fail > 0))
