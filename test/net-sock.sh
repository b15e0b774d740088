#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# uskb-pktgen through udp: and tcp: in zc and uring mode, on a veth pair
# whose sending end drops every frame at tc egress (scripts/netns-veth.sh
# -s: a sink that takes no copy), in namespaces this test creates and
# removes (198.18.0.0/15):
# - a counted run waits for every send to complete and reports each as
#   completed without a copy (Zero copy line, zc_sent in --json);
# - SIGINT mid-flight ends the run cleanly: exit 0, every in-flight send
#   completed before the report and the exit;
# - the same run towards a receiver on this host falls back to copy and
#   says so, and every frame still arrives.
# A mode the kernel refuses (io_uring off by sysctl, say) is left out,
# saying so, at its first run.
# Needs root and clang (for bpf/tc_drop.c); skips (77) otherwise.
set -u
source "$(dirname "$0")/net-common.bash" s
command -v clang >/dev/null || { echo "no clang to build bpf/tc_drop.c"; exit 77; }
command -v tc >/dev/null || { echo "no tc (iproute2)"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-netsock.XXXXXX)
trap '"$net" down -p "$p" >/dev/null 2>&1; "$net" down -p "${p}r" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
"$net" up -p "$p" -s >/dev/null || { echo "FAIL: netns-veth.sh up -s"; exit 1; }
N=20000

for mode in zc uring; do
	# a counted run: every send completes, none copied (copybreak=0: each frame zero-copy;
	# 1400 bytes, as a datagram past the MTU is fragmented, and the kernel copies fragments)
	out=$(ip netns exec "$p-a" timeout -k 5 60 "$pg" -q --json -i "udp:198.18.0.2:9,$mode,copybreak=0" -n $N \
		-s 1400 --frags 1 2>"$tmp/err")
	rc=$?
	# a kernel that refuses the mode (io_uring off by sysctl, say) refuses every case of it
	if [ $mode = uring ] && [ $rc != 0 ] && grep -qE "$REFUSED" "$tmp/err"; then
		echo "$mode: not tried: $(cat "$tmp/err")"
		continue
	fi
	[ $rc = 0 ] || bad "$mode: counted run exit $rc: $(cat "$tmp/err")"
	[ "$(json_num packets "$out")" = $N ] && [ "$(json_num zc_sent "$out")" = $N ] &&
		[ "$(json_num zc_copied "$out")" = 0 ] && [ "$(json_num zc_fallback "$out")" = 0 ] ||
		bad "$mode: $N sent, each should complete without a copy: $out"
	echo "$mode: $N frames, $(json_num zc_sent "$out") sends completed without a copy"

	# SIGINT mid-flight: the report comes after every in-flight send completed
	ip netns exec "$p-a" "$pg" -i "udp:198.18.0.2:9,$mode,copybreak=0" -n 0 -s 1400 --frags 3 -b 32 \
		>"$tmp/int.out" 2>"$tmp/int.err" &
	pid=$!
	sleep 1
	kill -INT $pid
	wait_within 30 $pid
	rc=$?
	[ $rc = 0 ] || bad "$mode: SIGINT run exit $rc: $(cat "$tmp/int.err")"
	sent=$(sed -n 's/.*pkts-sofar: \([0-9]*\).*/\1/p' "$tmp/int.out")
	zc=$(sed -n 's/^Zero copy: \([0-9]*\) sends.*/\1/p' "$tmp/int.out")
	[ -n "$sent" ] && [ "$sent" -gt 0 ] || bad "$mode: SIGINT run sent nothing: $(cat "$tmp/int.out")"
	[ "$zc" = "$sent" ] || bad "$mode: SIGINT run: $sent sent, $zc completed at the report"
	grep -q "^Zero copy: .* 0 copied by the kernel, 0 fallbacks" "$tmp/int.out" ||
		bad "$mode: SIGINT run: no clean Zero copy line: $(grep -i zero "$tmp/int.out")"
	echo "$mode: Ctrl-C after 1 s: $sent sent, $zc completed without a copy at the report"
done

# towards a receiver on this host: the kernel copies, the device falls back, every frame arrives
"$net" up -p "${p}r" >/dev/null || { bad "netns-veth.sh up (receiver pair)"; exit 1; }
start_rx "$tmp/rx.err" ip netns exec "${p}r-b" \
	"$pg" --rx udp:198.18.0.2:9,listen -n 2000 --duration 10 --json >"$tmp/rx.json"
rpid=$!
wait_rx "$tmp/rx.err" $rpid || bad "udp: the receiver did not start: $(cat "$tmp/rx.err")"
out=$(ip netns exec "${p}r-a" timeout -k 5 60 "$pg" -q --json -i udp:198.18.0.2:9,zc,copybreak=0 -n 2000 -s 1500 --ratep 20000 \
	-m 02:00:00:00:00:02 2>"$tmp/err")
wait $rpid
[ "$(json_num zc_fallback "$out")" = 1 ] && [ "$(json_num zc_copied "$out")" -ge 32 ] ||
	bad "to a receiver on this host: the device should fall back once: $out"
[ "$(json_num packets "$(cat "$tmp/rx.json")")" = 2000 ] ||
	bad "to a receiver on this host: 2000 sent, received: $(cat "$tmp/rx.json")"
echo "to a receiver on this host: fell back to copy after $(json_num zc_copied "$out") copied sends; 2000 of 2000 arrived"

[ $fail = 0 ] || exit 1
echo "net-sock: all passed"
