#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tap: device in a network namespace this test creates and removes
# (198.18.0.0/15):
#  - a tap made by the device goes with it;
#  - frames sent into a (persistent) tap reach the kernel: its rx counters
#    grow by exactly what uskb-pktgen sent, with one queue and with two;
#  - frames the kernel sends out of it (UDP datagrams to a neighbour) are
#    received, each once; one longer than the MTU at open is dropped and
#    counted, not cut short;
#  - uskb-vhost with tap: below it: what DPDK's virtio-user sends reaches
#    the kernel (skipped without dpdk-testpmd);
#  - with csum (TUN_F_CSUM) the kernel's datagrams still all arrive;
#  - the interface set down, or deleted, under -n 0: the device goes down,
#    one line says why, the run stops within a second with exit 3;
#  - bad specs give one line and a failure exit.
# Needs root; skips (77) without it or without /dev/net/tun.
set -u
source "$(dirname "$0")/net-common.bash" t
[ -c /dev/net/tun ] || { echo "no /dev/net/tun"; exit 77; }
vht=${USKB_VHOST:-$here/../tools/uskb-vhost}
ns=$p-ns
tmp=$(mktemp -d /tmp/uskb-tap.XXXXXX)
cleanup() {
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
in_ns() { ip netns exec "$ns" "$@"; }
rx_count() { cat "/sys/class/net/$1/statistics/rx_packets"; }

ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
in_ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1

# ---- a tap the device makes goes with it ----
in_ns "$pg" -q -i tap:ut0 -n 10 -s 100 >/dev/null || bad "sending into a new tap failed"
in_ns ip link show ut0 >/dev/null 2>&1 && bad "the tap the device made is still there"
echo "a new tap: made, sent into, gone"

# ---- into a persistent tap: the kernel counts every frame ----
in_ns ip tuntap add dev ut1 mode tap multi_queue
in_ns ip addr add 198.18.5.1/24 dev ut1
in_ns ip link set ut1 up
in_ns ip neigh add 198.18.5.2 lladdr 02:00:00:00:00:09 dev ut1
before=$(in_ns cat /sys/class/net/ut1/statistics/rx_packets)
in_ns "$pg" -q -i tap:ut1 -n 200 -s 300 -d 198.18.5.1 >/dev/null || bad "tap:ut1: the sender failed"
after=$(in_ns cat /sys/class/net/ut1/statistics/rx_packets)
[ $((after - before)) = 200 ] || bad "tap:ut1: 200 sent, the kernel received $((after - before))"
in_ns "$pg" -q -i tap:ut1,queues=2 -t 2 -n 100 -s 300 -d 198.18.5.1 >/dev/null || bad "tap:ut1,queues=2: the sender failed"
after2=$(in_ns cat /sys/class/net/ut1/statistics/rx_packets)
[ $((after2 - after)) = 200 ] || bad "tap:ut1,queues=2: 2 x 100 sent, the kernel received $((after2 - after))"
echo "tap:ut1: 200 frames into the kernel, one queue and two"

# ---- out of it: the kernel's datagrams are received ----
start_rx "$tmp/rx.err" in_ns "$pg" --rx tap:ut1 --duration 3 --json >"$tmp/rx.json"
rpid=$!
wait_rx "$tmp/rx.err" $rpid || bad "tap: the receiver did not start: $(cat "$tmp/rx.err")"
in_ns bash -c 'for i in $(seq 20); do echo "datagram $i" >/dev/udp/198.18.5.2/9; done'
wait $rpid
rx=$(cat "$tmp/rx.json")
[ "$(json_num other "$rx")" = 20 ] && [ "$(json_num rx_packets "$rx")" = 20 ] ||
	bad "tap:ut1 receive: the kernel sent 20 datagrams: $rx"
echo "tap:ut1: 20 datagrams from the kernel received"
# with receive checksum offload (TUN_F_CSUM) the kernel may leave their checksums to us: all still come
start_rx "$tmp/rx.err" in_ns "$pg" --rx tap:ut1,csum --duration 3 --json >"$tmp/rx.json"
rpid=$!
wait_rx "$tmp/rx.err" $rpid || bad "tap: the receiver did not start: $(cat "$tmp/rx.err")"
in_ns bash -c 'for i in $(seq 20); do echo "datagram $i" >/dev/udp/198.18.5.2/9; done'
wait $rpid
rx=$(cat "$tmp/rx.json")
[ "$(json_num rx_packets "$rx")" = 20 ] || bad "tap:ut1,csum receive: the kernel sent 20 datagrams: $rx"
echo "tap:ut1,csum: 20 datagrams from the kernel received"

# the MTU raised after the open: a longer frame is dropped and counted, not cut short
start_rx "$tmp/rx.err" in_ns "$pg" --rx tap:ut1 --duration 2 --json >"$tmp/rx2.json"
rpid=$!
wait_rx "$tmp/rx.err" $rpid || bad "tap: the receiver did not start: $(cat "$tmp/rx.err")"
in_ns ip link set ut1 mtu 3000
in_ns bash -c 'head -c 2500 /dev/zero >/dev/udp/198.18.5.2/9'
wait $rpid
in_ns ip link set ut1 mtu 1500
rx=$(cat "$tmp/rx2.json")
[ "$(json_num rx_dropped "$rx")" = 1 ] && [ "$(json_num rx_packets "$rx")" = 0 ] ||
	bad "tap:ut1: a frame past the MTU seen at open should be dropped and counted: $rx"
echo "tap:ut1: a frame longer than the MTU at open: dropped and counted"

# ---- uskb-vhost on tap: ----
if command -v dpdk-testpmd >/dev/null; then
	before=$(in_ns cat /sys/class/net/ut1/statistics/rx_packets)
	# not through in_ns: $! must be uskb-vhost itself, for the SIGINT
	ip netns exec "$ns" "$vht" -s "$tmp/vh.sock" -d tap:ut1 --stats 0.2 --json >"$tmp/vh.json" 2>"$tmp/vh.err" &
	vp=$!
	for _ in $(seq 50); do
		[ -S "$tmp/vh.sock" ] && break
		kill -0 $vp 2>/dev/null || break
		sleep 0.1
	done
	# the guest sends until the backend has taken 20000 frames
	testpmd_start "$tmp/tp" "$tmp/vh.sock" --forward-mode=txonly --txpkts=600
	counter_wait "$tmp/vh.json" packets 20000 $tpp $vp ||
		bad "uskb-vhost on tap: the backend took $(json_num packets "$(tail -n 1 "$tmp/vh.json")") of 20000: $(cat "$tmp/vh.err")"
	testpmd_stop || bad "testpmd failed: $(tail -3 "$tmp/tp.out")"
	kill -INT $vp
	wait $vp || bad "uskb-vhost on tap: exit $?: $(cat "$tmp/vh.err")"
	sent=$(sed -n 's/.*TX-packets: *\([0-9]*\).*/\1/p' "$tmp/tp.out" | head -1)
	final=$(grep '"final": true' "$tmp/vh.json")
	after=$(in_ns cat /sys/class/net/ut1/statistics/rx_packets)
	took=$(json_num packets "$final") dropped=$(json_num dropped "$final")
	# testpmd counts what it put in the ring; up to 256 of that may still be there when it stops
	[ "${sent:-0}" -gt 0 ] && [ "${took:-0}" -le "$sent" ] && [ "${took:-0}" -ge $((sent - 256)) ] &&
		[ $((after - before)) = $((took - dropped)) ] ||
		bad "uskb-vhost on tap: testpmd sent $sent, uskb-vhost took $took (dropped $dropped), the kernel got $((after - before))"
	echo "uskb-vhost on tap:ut1: $sent frames from virtio-user, $((after - before)) reached the kernel ($dropped dropped: its queue was full)"
else
	echo "uskb-vhost on tap: skipped (no dpdk-testpmd: scripts/deps.sh --bench)"
fi

# ---- the interface goes away under -n 0: down, one line, exit 3 within a second ----
for how in down delete; do
	in_ns ip tuntap add dev ut2 mode tap
	in_ns ip link set ut2 up
	in_ns "$pg" -i tap:ut2 -n 0 -s 100 --json >"$tmp/gone.json" 2>"$tmp/gone.err" &
	gp=$!
	sleep 1
	[ $how = down ] && in_ns ip link set ut2 down || in_ns ip link del ut2
	t0=$(date +%s%N)
	for _ in $(seq 50); do kill -0 $gp 2>/dev/null || break; sleep 0.05; done
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill -0 $gp 2>/dev/null && { kill -INT $gp; ms=never; }
	wait $gp
	rc=$?
	in_ns ip link del ut2 2>/dev/null
	line=$(grep -c "writev" "$tmp/gone.err")
	[ $rc = 3 ] && [ "$ms" != never ] && [ "$ms" -lt 1500 ] && [ "$line" = 0 ] &&
		grep -q "went down\|was deleted" "$tmp/gone.err" &&
		[ "$(json_num packets "$(cat "$tmp/gone.json")")" -gt 0 ] ||
		bad "tap:ut2 $how under -n 0: exit $rc after $ms ms, $line writev lines: $(head -c 600 "$tmp/gone.err")"
	echo "tap:ut2 $how under -n 0: stopped after $ms ms, exit 3: $(grep -m1 -o "tap:ut2: .*" "$tmp/gone.err")"
done

# ---- bad specs ----
check_open() {
	local want=$1 spec=$2
	in_ns "$pg" -q -i "$spec" -n 1 >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc != 0 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "$want" "$tmp/err" ||
		bad "$spec: exit $rc: $(cat "$tmp/err")"
}
check_open "give an interface name" "tap:"
check_open "give queues=1 to" "tap:ut1,queues=99"
check_open "give queues=1 to" "tap:ut1,csum,queues=x"
check_open "unknown option" "tap:ut1,speed=9"
check_open "at most 15 characters" "tap:abcdefghijklmnopqrstuvwxyz"

[ $fail = 0 ] && echo "net-tap: ok" || echo "net-tap: $fail failure(s)"
[ $fail = 0 ]
