#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Paced runs end: with a delay between packets (-w, --rate, --ratep) a run
# of -n packets sends exactly that many and stops after about count x delay,
# even when a sleep wakes past its deadline. Each run is bounded by a
# timeout far above what it needs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pg=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# args, the least and the most seconds the run may take
check() {
	local min=$1 max=$2 out start end secs
	shift 2
	start=${EPOCHREALTIME/./}
	out=$(timeout 30 "$pg" -i null -q --json "$@")
	rc=$?
	end=${EPOCHREALTIME/./}
	secs=$(awk -v us=$((end - start)) 'BEGIN { printf "%.2f", us / 1e6 }')
	if [ $rc != 0 ]; then
		bad "$*: exit $rc after ${secs}s (a run that never ends is killed at 30 s)"
		return
	fi
	grep -q '"packets": 10,' <<<"$out" || bad "$*: not 10 packets: $out"
	awk -v s="$secs" -v lo="$min" -v hi="$max" 'BEGIN { exit !(s >= lo && s <= hi) }' ||
		bad "$*: took ${secs}s, expected ${min}-${max}s"
	echo "$*: 10 packets in ${secs}s"
}

check 0.05 5 -n 10 -w 10000000     # 10 ms apart
check 0.02 5 -n 10 -w 5000000      # 5 ms apart
check 0.05 5 -n 10 --ratep 100     # 10 ms apart
check 0.40 5 -n 10 --ratep 16      # 62.5 ms apart
check 0.00 5 -n 10 -w 50000        # 50 us: spun, not slept

[ $fail = 0 ] || { echo "$fail failed"; exit 1; }
echo "pacing: every paced run ended on time"
