#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The xdp: device through uskb-pktgen, in a private two-queue veth pair this
# test creates and removes (scripts/netns-veth.sh, 198.18.0.0/15): N packets
# sent with xdp: arrive exactly once at uskb-pktgen --rx on xdp: and on
# packet:; two threads send on two queues at once (xdp: and packet:); the
# receiver's counters agree with the interface's; frames over the MTU are
# errors; no XDP program stays attached after a normal end, a Ctrl-C or a
# kill -9; bad input gives one clear line and exit 5.
# Needs root; skips (77) without it, without network namespaces, in a build
# without libxdp or on a kernel that refuses AF_XDP (one probe each way).
set -u
source "$(dirname "$0")/net-common.bash" x
tmp=$(mktemp -d /tmp/uskb-xdp.XXXXXX)
cleanup() {
	"$net" down -p "$p" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
"$net" up -p "$p" -q 2 >/dev/null || { echo "FAIL: netns-veth.sh up"; exit 1; }
na=$p-a nb=$p-b a=${p}0 b=${p}1
# AF_XDP both ways, once: a build without libxdp, or a kernel that refuses
# AF_XDP, fails every case below alike
need "an AF_XDP receiver on $b" ip netns exec "$nb" "$pg" --rx "xdp:$b" -q --duration 0.2
need "an AF_XDP sender on $a" ip netns exec "$na" "$pg" -i "xdp:$a" -q -n 1 -d 198.18.0.2
N=3000
send=(-q -n $N -s 1000 -m 02:00:00:00:00:02 -d 198.18.0.2 "src_min 198.18.0.1" "src_max 198.18.0.1")

stat() { ip netns exec "$1" cat "/proc/net/dev" | awk -v i="$2:" -v f="$3" '$1 == i { print $f }'; }
no_xdp() {
	! ip -n "$na" link show "$a" | grep -q xdp && ! ip -n "$nb" link show "$b" | grep -q xdp ||
		bad "$1: an XDP program is still attached: $(ip -n "$nb" link show "$b")"
}

# every packet once: xdp: -> xdp:, packet: -> xdp:, xdp: -> packet:
for pair in "xdp:$a xdp:$b" "packet:$a xdp:$b" "xdp:$a packet:$b" "xdp:$a:copy xdp:$b:1"; do
	set -- $pair
	tx=$1 rx=$2
	rx_before=$(stat "$nb" "$b" 3)
	start_rx "$tmp/rx.err" ip netns exec "$nb" timeout 60 \
		"$pg" --rx "$rx" -n $N --duration 30 --json >"$tmp/rx.json"
	rxp=$!
	wait_rx "$tmp/rx.err" $rxp || bad "$tx -> $rx: the receiver did not start: $(cat "$tmp/rx.err")"
	ip -n "$nb" link show "$b" | grep -q xdp || [ "${rx%%:*}" = packet ] ||
		bad "$tx -> $rx: no XDP program on $b while receiving"
	extra=()
	# a single-queue receiver: steer everything to its queue (the sender's queue mapping)
	[ "$rx" = "xdp:$b:1" ] && extra=("queue_map_min 1" "queue_map_max 1")
	ip netns exec "$na" timeout 60 "$pg" -i "$tx" "${send[@]}" --ratep 50000 "${extra[@]}" >/dev/null ||
		bad "$tx: sender failed"
	wait $rxp || bad "$tx -> $rx: receiver exit $?"
	r=$(cat "$tmp/rx.json")
	for want in "\"packets\": $N," '"lost": 0,' '"reordered": 0,' '"duplicates": 0,' '"rx_dropped": 0,'; do
		grep -qF "$want" <<<"$r" || bad "$tx -> $rx: want $want in $r"
	done
	got=$(( $(stat "$nb" "$b" 3) - rx_before ))
	[ "$got" -ge $N ] && [ "$got" -le $((N + 10)) ] || bad "$tx -> $rx: $b counted $got packets, want $N"
	echo "$tx -> $rx: $N once, $b counted $got"
	no_xdp "$tx -> $rx"
done

# two threads, two queues (a socket each, for xdp: and packet: alike): each
# sends its count, the peer receives them all
for d in "xdp:$a" "packet:$a"; do
	start_rx "$tmp/rx.err" ip netns exec "$nb" timeout 60 \
		"$pg" --rx "xdp:$b" -n $((2 * N)) --duration 30 --json >"$tmp/rx.json"
	rxp=$!
	# until the receiver's program is on (a sanitizer build starts slowly), then its sockets bind
	for _ in $(seq 100); do
		ip -n "$nb" link show "$b" | grep -q xdp && break
		kill -0 $rxp 2>/dev/null || break
		sleep 0.1
	done
	wait_rx "$tmp/rx.err" $rxp || bad "two queues: the receiver did not start: $(cat "$tmp/rx.err")"
	# packet: threads pinned: the kernel picks a frame's queue from the sending CPU, so an
	# unpinned thread that moves spreads its stream over both queues, out of order
	pin=()
	[ "${d%%:*}" = xdp ] && pin=(--no-pin) # an AF_XDP socket is bound to its queue
	out=$(ip netns exec "$na" timeout 60 "$pg" -i "$d" -t 2 "${pin[@]}" "${send[@]}" --ratep 50000 --json) ||
		bad "$d -t 2: sender failed"
	# the receiver ends at 2N packets; one that lost some to a busy machine is stopped
	for _ in $(seq 30); do kill -0 $rxp 2>/dev/null || break; sleep 0.1; done
	kill -INT $rxp 2>/dev/null
	wait $rxp
	[ "$(grep -c "\"packets\": $N," <<<"$out")" = 2 ] || bad "$d -t 2: $out"
	r=$(cat "$tmp/rx.json")
	# each thread is a stream of its own (its own UDP source port): none of
	# its numbers twice or out of order; every packet not counted is one the
	# kernel counted as dropped (a loaded machine may drop; none may vanish)
	got=$(json_num packets "$r") dropped=$(json_num rx_dropped "$r")
	grep -qF '"streams": 2,' <<<"$r" && grep -qF '"duplicates": 0,' <<<"$r" &&
		grep -qF '"reordered": 0,' <<<"$r" && [ "$got" -le $((2 * N)) ] &&
		[ $((got + dropped)) -ge $((2 * N)) ] || bad "$d -t 2 receiver: $r"
	echo "$d -t 2 on two queues: 2 x $N sent, $got received, $dropped dropped by the kernel"
done

# one thread cycling over both queues (queue_map_min/max) loses nothing (that
# the queue left is flushed at once is pktgen-engine's test_queues)
start_rx "$tmp/rx.err" ip netns exec "$nb" timeout 60 \
	"$pg" --rx "xdp:$b" -n $N --duration 30 --json >"$tmp/rx.json"
rxp=$!
wait_rx "$tmp/rx.err" $rxp || bad "queue cycling: the receiver did not start: $(cat "$tmp/rx.err")"
ip netns exec "$na" timeout 60 "$pg" -i "xdp:$a" "${send[@]}" -c 3 "queue_map_min 0" "queue_map_max 1" \
	>/dev/null || bad "queue cycling: sender failed"
wait $rxp
r=$(cat "$tmp/rx.json")
grep -qF "\"packets\": $N," <<<"$r" || bad "queue cycling: $r"
echo "one thread over two queues: $N sent and received"

# Ctrl-C and kill -9 while receiving: the program goes with the process
for sig in INT KILL; do
	ip netns exec "$nb" "$pg" --rx "xdp:$b" -q >/dev/null 2>&1 &
	rxp=$!
	for _ in $(seq 50); do
		ip -n "$nb" link show "$b" | grep -q xdp && break
		kill -0 $rxp 2>/dev/null || break
		sleep 0.1
	done
	ip -n "$nb" link show "$b" | grep -q xdp || bad "SIG$sig: the receiver attached nothing"
	kill -$sig $rxp
	wait $rxp 2>/dev/null
	sleep 0.3 # a killed process's files are closed by the kernel as it goes
	no_xdp "SIG$sig"
done

# bad input: one clear line, exit 5
check_err() {
	local want=$1
	shift
	ip netns exec "$na" timeout 20 "$pg" -q -n 10 "$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc = 5 ] && grep -q "$want" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -le 3 ] ||
		bad "$*: exit $rc, stderr: $(cat "$tmp/err")"
}
check_err "no such interface" -i xdp:nosuch0
check_err "not an Ethernet interface" -i xdp:lo
check_err "no queue 7 (it has 2" -i "xdp:$a:7"
check_err "neither a queue number nor copy or zc" -i "xdp:$a:fast"
check_err "no zero-copy AF_XDP" -i "xdp:$a:zc"
ip -n "$na" link set "$a" down
check_err "is down (ip link set $a up)" -i "xdp:$a"
ip -n "$na" link set "$a" up
# a packet size past the MTU is refused at start, naming both numbers; nothing is sent
ip -n "$na" link set "$a" mtu 1000
out=$(ip netns exec "$na" timeout 20 "$pg" -i "xdp:$a" -q -n 5 -s 1200 --json 2>"$tmp/err")
rc=$?
[ $rc = 3 ] && grep -q '"ok": false' <<<"$out" &&
	grep -q "xdp:$a: ERROR: pkt_size 1200 does not fit the MTU 1000" "$tmp/err" ||
	bad "xdp: oversized packets: exit $rc: $out $(cat "$tmp/err")"
ip -n "$na" link set "$a" mtu 1500
# unprivileged: packet: and xdp: both say what they need
for d in "xdp:$a" "packet:$a"; do
	ip netns exec "$na" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$pg" -q -n 10 -i "$d" >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc = 5 ] && grep -q "needs root" "$tmp/err" || bad "unprivileged $d: exit $rc: $(cat "$tmp/err")"
done
# a receiver already on the queue: the second one is told
ip netns exec "$nb" "$pg" --rx "xdp:$b" -q >/dev/null 2>&1 &
rxp=$!
sleep 0.7
ip netns exec "$nb" timeout 20 "$pg" --rx "xdp:$b" -q --duration 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && grep -q "taken by another AF_XDP socket" "$tmp/err" || bad "second receiver: exit $rc: $(cat "$tmp/err")"
# a second generator on the queue: the device's reason is its first and only line
ip netns exec "$nb" timeout 20 "$pg" -i "xdp:$b" -q -n 10 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^uskb-pktgen: xdp:$b: queue 0 is taken by another AF_XDP socket" "$tmp/err" ||
	bad "second generator on a taken queue: exit $rc: $(cat "$tmp/err")"
kill -INT $rxp
wait $rxp
# timeout -s INT signals the receiver and then its process group: that second
# SIGINT, close behind the first, must not cost the report (it did ~1 in 7)
for i in 1 2 3 4 5 6 7 8; do
	out=$(ip netns exec "$nb" timeout -s INT 0.5 "$pg" --rx "xdp:$b" --json -q 2>"$tmp/err")
	grep -q '"packets"' <<<"$out" || { bad "timeout -s INT, try $i: no report: $(cat "$tmp/err")"; break; }
done
# an XDP program of someone else's: ours does not replace it
obj=$root/build/bpf/xdp_drop.o
[ -f "$obj" ] || { "$net" up -p "${p}y" -x >/dev/null; "$net" down -p "${p}y" >/dev/null 2>&1; }
if [ -f "$obj" ]; then
	ip -n "$nb" link set "$b" xdpgeneric obj "$obj" sec xdp || bad "cannot attach $obj"
	ip netns exec "$nb" timeout 20 "$pg" --rx "xdp:$b" -q --duration 1 >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc = 5 ] && grep -q "another XDP program is attached" "$tmp/err" || bad "foreign XDP: exit $rc: $(cat "$tmp/err")"
	ip -n "$nb" link set "$b" xdpgeneric off
else
	bad "no $obj (clang)"
fi
no_xdp "the end"
echo "$fail failed"
[ $fail = 0 ]
