#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The example programs the README and the man pages point to build (make
# tests builds them) and run to a clean end: each checks what it shows and
# exits non-zero when something is not as it says.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/../examples
fail=0
for ex in demo zerocopy; do
	if [ ! -x "$dir/$ex" ]; then
		echo "FAIL: $dir/$ex was not built"
		fail=1
		continue
	fi
	out=$("$dir/$ex" 2>&1)
	rc=$?
	echo "$out"
	[ $rc = 0 ] || { echo "FAIL: $ex exited $rc"; fail=1; }
done
# the zero-copy example's three completions, in order, with their success flags
got=$("$dir/zerocopy" 2>/dev/null | grep -o 'complete(buffer ., success=.)' | tr '\n' ' ')
want='complete(buffer A, success=1) complete(buffer B, success=0) complete(buffer C, success=1) '
[ "$got" = "$want" ] || { echo "FAIL: zerocopy completions: $got, want $want"; fail=1; }
exit $fail
