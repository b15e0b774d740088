#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak: uskb-pktgen sending at full rate through a veth pair for a long
# time, with uskb-pktgen --rx counting on the other end, once per device
# kind, on the pair scripts/netns-veth.sh makes (the one --veth uses).
# Checks, per kind:
#   1. the counts are exact: what the sender put on the wire (packets -
#      lost) = what the receiver counted + what the kernel counted as
#      dropped on the way (the receiver's ring, the veth pair);
#   2. RSS and the library's live objects are flat after the warm-up: the
#      second half of the run holds no more than the first half (plus 1 MiB
#      of RSS and 10 % + 64 objects of slack);
#   3. nothing is left: no namespace, no XDP program, no process.
#
#   scripts/soak.sh [-t SECONDS] [-k "KIND ..."] [-o DIR]
#
# -t  seconds per kind (default 1800); the first tenth (at least 10 s) is
#     warm-up
# -k  device kinds (default "packet packet::mmsg xdp")
# -o  where the logs go (default build/soak); DIR/summary.txt and
#     DIR/summary.json hold the figures
# Root only (network namespaces). Exit 0 when every kind passed.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
pg=${USKB_PKTGEN:-$here/build/tools/uskb-pktgen}
net=$here/scripts/netns-veth.sh
secs=1800 kinds="packet packet::mmsg xdp" out=$here/build/soak
while getopts "t:k:o:" o; do
	case $o in
	t) secs=$OPTARG ;;
	k) kinds=$OPTARG ;;
	o) out=$OPTARG ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case $secs in *[!0-9]* | "" | 0) echo "soak.sh: -t wants whole seconds" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "soak.sh: needs root (network namespaces)" >&2; exit 1; }
[ -x "$pg" ] || { echo "soak.sh: no $pg: run make first" >&2; exit 1; }
mkdir -p "$out"
p=sk$(($$ % 100000))
warm=$((secs / 10 < 10 ? 10 : secs / 10))
fail=0
: >"$out/summary.txt"
echo "[" >"$out/summary.json"
first=1

cleanup() { "$net" down -p "$p" >/dev/null 2>&1; }
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

sysfs() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
json_num() { sed -n "s/.*\"$1\": \\([0-9]*\\).*/\\1/p" "$2" | head -n 1; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
# the largest value of column $2 of file $1 in the rows with time in [$3, $4)
max_in() { awk -v c="$2" -v a="$3" -v b="$4" '$1 >= a && $1 < b && $c > m { m = $c } END { print m + 0 }' "$1"; }

for kind in $kinds; do
	fam=${kind%%:*}
	opts=$(sed 's/^[a-z]*:*/:/; s/^:$//' <<<"$kind")
	tx="$fam:${p}0$opts"
	rx="${p}1"
	[ "$fam" = xdp ] && rx="xdp:${p}1"
	log=$out/$(tr ':' '_' <<<"$kind")
	mkdir -p "$log"
	"$net" up -p "$p" >/dev/null || { echo "soak.sh: netns-veth.sh up failed" >&2; exit 1; }
	a_drop0=$(sysfs "$p-a" "${p}0" tx_dropped) b_drop0=$(sysfs "$p-b" "${p}1" rx_dropped)

	ip netns exec "$p-b" "$pg" --rx "$rx" -v --json >"$log/rx.json" 2>"$log/rx.log" &
	rxp=$!
	sleep 1
	ip netns exec "$p-a" "$pg" -i "$tx" -m 02:00:00:00:00:02 -d 198.18.0.2 -n 0 --duration "$secs" \
		-v --json >"$log/tx.json" 2>"$log/tx.log" &
	txp=$!
	echo "soak.sh: $kind: $tx -> $rx for $secs s (logs in $log)"
	# RSS of both every 5 s: seconds, sender KiB, receiver KiB
	: >"$log/rss"
	start=$SECONDS
	while kill -0 $txp 2>/dev/null; do
		echo "$((SECONDS - start)) $(rss_kb $txp) $(rss_kb $rxp)" >>"$log/rss"
		sleep 5
	done
	wait $txp
	txrc=$?
	sleep 1
	kill -TERM $rxp
	wait $rxp
	rxrc=$?
	a_drop=$(($(sysfs "$p-a" "${p}0" tx_dropped) - a_drop0))
	b_drop=$(($(sysfs "$p-b" "${p}1" rx_dropped) - b_drop0))
	cleanup

	sent=$(json_num packets "$log/tx.json") lost=$(json_num lost "$log/tx.json")
	got=$(json_num packets "$log/rx.json") ringdrop=$(json_num rx_dropped "$log/rx.json")
	dups=$(json_num duplicates "$log/rx.json")
	why=""
	[ "$txrc" = 0 ] || why="$why sender exit $txrc;"
	[ "$rxrc" = 0 ] || why="$why receiver exit $rxrc;"
	[ -n "$sent" ] && [ -n "$got" ] || why="$why no JSON;"
	wire=$((${sent:-0} - ${lost:-0}))
	# the receiver's ring drops: a packet: ring's are its own; an AF_XDP
	# socket's are redirects the veth end also counts in its rx_dropped
	counted=$((${got:-0} + a_drop + b_drop))
	[ "$fam" = xdp ] || counted=$((counted + ${ringdrop:-0}))
	[ "$wire" = "$counted" ] || why="$why sent $wire but counted $counted;"
	[ "${dups:-0}" = 0 ] || why="$why $dups duplicates;"

	# flat after the warm-up: second half against first half
	mid=$(((warm + secs) / 2))
	for col in 2 3; do
		a=$(max_in "$log/rss" $col $warm $mid) b=$(max_in "$log/rss" $col $mid $((secs + 5)))
		[ "$b" -le $((a + 1024)) ] || why="$why RSS $([ $col = 2 ] && echo sender || echo receiver) grew $a -> $b KiB;"
	done
	for side in tx rx; do
		# progress lines: "  12.0s ... live: skbs N heads N pages N cached N"
		sed -n 's/^ *\([0-9]*\)\.[0-9]s.*live: skbs \([0-9-]*\) heads \([0-9-]*\) pages \([0-9-]*\).*/\1 \2 \3 \4/p' \
			"$log/$side.log" >"$log/$side.live"
		for col in 2 3 4; do
			a=$(max_in "$log/$side.live" $col $warm $mid) b=$(max_in "$log/$side.live" $col $mid $((secs + 5)))
			[ "$b" -le $((a + a / 10 + 64)) ] || why="$why $side live column $col grew $a -> $b;"
		done
	done
	rss_tx=$(max_in "$log/rss" 2 0 $((secs + 5))) rss_rx=$(max_in "$log/rss" 3 0 $((secs + 5)))
	live_rx=$(max_in "$log/rx.live" 2 $warm $((secs + 5)))

	# nothing left behind
	ls /run/netns 2>/dev/null | grep -q "^$p-" && why="$why namespaces left;"
	ip -d link show 2>/dev/null | grep -q "prog/xdp" && why="$why an XDP program left in the root namespace;"
	kill -0 $txp 2>/dev/null || kill -0 $rxp 2>/dev/null && why="$why a process left;"

	res=PASS
	[ -z "$why" ] || { res=FAIL; fail=1; }
	line="$res $kind: ${secs}s, sent $sent (lost $lost), received $got, kernel drops: receiver's ring $ringdrop, veth ends $((a_drop + b_drop))$([ "$fam" = xdp ] && echo " (the same ones)"); RSS max tx ${rss_tx} KiB rx ${rss_rx} KiB; receiver skbs live max $live_rx${why:+;}$why"
	echo "$line" | tee -a "$out/summary.txt"
	[ $first = 1 ] || echo "," >>"$out/summary.json"
	first=0
	printf '{"kind": "%s", "ok": %s, "seconds": %s, "sent": %s, "lost": %s, "received": %s, "ring_dropped": %s, "veth_dropped": %s, "rss_max_kib": {"tx": %s, "rx": %s}, "why": "%s"}' \
		"$kind" "$([ $res = PASS ] && echo true || echo false)" "$secs" "${sent:-0}" "${lost:-0}" "${got:-0}" \
		"${ringdrop:-0}" "$((a_drop + b_drop))" "$rss_tx" "$rss_rx" "$(sed 's/"/\\"/g' <<<"${why# }")" >>"$out/summary.json"
done
echo "]" >>"$out/summary.json"
exit $fail
