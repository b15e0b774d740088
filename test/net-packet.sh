#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packet: device on a real interface, in a private veth pair this test
# creates and removes (scripts/netns-veth.sh, 198.18.0.0/15): for the TX
# ring and for sendmmsg, N packets sent by uskb-pktgen arrive exactly once
# (pktgen sequence numbers), byte for byte as the pcap: device writes the
# same run, and the receiver's interface counters agree with the sender's
# result line; bad interfaces fail with one clear line. Needs root; skips
# (77) without it or without network namespaces.
set -u
source "$(dirname "$0")/net-common.bash" u
command -v tshark >/dev/null || { echo "no tshark"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-net.XXXXXX)
cleanup() {
	[ -n "${cap:-}" ] && kill "$cap" 2>/dev/null
	"$net" down -p "$p" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
"$net" up -p "$p" >/dev/null || { echo "FAIL: netns-veth.sh up"; exit 1; }
na=$p-a nb=$p-b
N=2000
common=(-q -n $N -s 200 --frags 2 -k --seed 9 -m 02:00:00:00:00:02 -d 198.18.0.2
	"src_min 198.18.0.1" "src_max 198.18.0.1" "flag NO_TIMESTAMP" "flag UDPSRC_RND"
	"udp_src_min 1000" "udp_src_max 2000")

rx_packets() { ip -n "$nb" -s -j link show "${p}1" | grep -o '"rx":{[^}]*' | grep -o '"packets":[0-9]*' | cut -d: -f2; }
raw() { tshark -r "$1" -T ek -x 2>/dev/null | grep -o '"frame_raw":"[0-9a-f]*"'; }

# the reference frames: the same run into a pcap
"$pg" -i "pcap:$tmp/ref.pcap" "${common[@]}" >/dev/null || bad "reference run"
raw "$tmp/ref.pcap" >"$tmp/ref.raw"
[ "$(wc -l <"$tmp/ref.raw")" = $N ] || bad "reference pcap has $(wc -l <"$tmp/ref.raw") frames"

for mode in ring mmsg; do
	before=$(rx_packets)
	f0=$(filtered_sockets "$nb")
	ip netns exec "$nb" tshark -i "${p}1" -f "udp and dst port 9" -w "$tmp/rx.pcap" -q 2>"$tmp/cap.err" &
	cap=$!
	capture_ready "$nb" "$tmp/cap.err" "$f0" $cap ||
		{ bad "$mode: tshark did not start: $(cat "$tmp/cap.err")"; echo "stopped: every case captures"; exit 1; }
	out=$(ip netns exec "$na" timeout 60 "$pg" -i "packet:${p}0:$mode" "${common[@]}" --ratep 50000 --json) ||
		bad "$mode: uskb-pktgen failed"
	sleep 0.5
	kill -INT $cap
	wait $cap
	cap=""
	sent=$(sed -n 's/.*"packets": \([0-9]*\).*/\1/p' <<<"$out")
	[ "$sent" = $N ] || bad "$mode: sent $sent, want $N"
	grep -q '"errors": 0' <<<"$out" || bad "$mode: errors: $out"
	after=$(rx_packets)
	# (the receiver's stack may add a few of its own: IPv6 neighbour discovery)
	[ $((after - before)) -ge $N ] && [ $((after - before)) -le $((N + 10)) ] ||
		bad "$mode: receiver counted $((after - before)) packets, sender $N"
	# each sequence number exactly once, in order
	tshark -r "$tmp/rx.pcap" -o udp.try_heuristic_first:TRUE -T fields -e pktgen.seqnum 2>/dev/null >"$tmp/seq"
	[ "$(wc -l <"$tmp/seq")" = $N ] || bad "$mode: captured $(wc -l <"$tmp/seq") frames, want $N"
	[ "$(sort -n "$tmp/seq" | uniq | wc -l)" = $N ] || bad "$mode: duplicate sequence numbers"
	seq 1 $N | cmp -s - "$tmp/seq" || bad "$mode: sequence numbers not 1..$N in order"
	raw "$tmp/rx.pcap" >"$tmp/rx.raw"
	cmp -s "$tmp/ref.raw" "$tmp/rx.raw" || bad "$mode: frames on the wire differ from the ones built"
	echo "$mode: $N sent, $((after - before)) received, byte for byte as built"
done

# no source given: the interface's own addresses (198.18.0.1, fd00::1), as the kernel takes them
f0=$(filtered_sockets "$nb")
ip netns exec "$nb" tshark -i "${p}1" -f "udp and dst port 9" -w "$tmp/src.pcap" -q 2>"$tmp/cap.err" &
cap=$!
capture_ready "$nb" "$tmp/cap.err" "$f0" $cap || bad "tshark did not start: $(cat "$tmp/cap.err")"
ip netns exec "$na" timeout 20 "$pg" -i "packet:${p}0" -q -n 20 -m 02:00:00:00:00:02 -d 198.18.0.2 >/dev/null ||
	bad "IPv4 run without a source"
ip netns exec "$na" timeout 20 "$pg" -i "packet:${p}0" -q -n 20 -6 -m 02:00:00:00:00:02 -d fd00::2 >/dev/null ||
	bad "IPv6 run without a source"
sleep 0.5
kill -INT $cap
wait $cap
cap=""
srcs=$(tshark -r "$tmp/src.pcap" -T fields -e ip.src -e ipv6.src 2>/dev/null | tr -d '\t' | sort |
	uniq -c | awk '{ printf "%s %s; ", $1, $2 }')
[ "$srcs" = "20 198.18.0.1; 20 fd00::1; " ] || bad "sources without src_min / src6: $srcs"

# --rx: the receiving uskb-pktgen counts every packet once, with latencies
for mode in ring mmsg; do
	start_rx "$tmp/rx.err" ip netns exec "$nb" timeout 60 \
		"$pg" --rx "${p}1" -n $N --duration 30 --json >"$tmp/rx.json"
	rxp=$!
	wait_rx "$tmp/rx.err" $rxp || bad "--rx ($mode): the receiver did not start: $(cat "$tmp/rx.err")"
	ip netns exec "$na" timeout 60 "$pg" -i "packet:${p}0:$mode" -q -n $N -s 1000 -m 02:00:00:00:00:02 \
		-d 198.18.0.2 --ratep 50000 >/dev/null || bad "--rx: sender ($mode) failed"
	wait $rxp || bad "--rx ($mode): exit $?"
	r=$(cat "$tmp/rx.json")
	for want in "\"packets\": $N," '"lost": 0,' '"reordered": 0,' '"duplicates": 0,' \
		"\"lat_samples\": $N," '"rx_dropped": 0,' '"streams": 1,'; do
		grep -qF "$want" <<<"$r" || bad "--rx ($mode): want $want in $r"
	done
	p50=$(sed -n 's/.*"p50": \([0-9]*\).*/\1/p' <<<"$r")
	p99=$(sed -n 's/.*"p99": \([0-9]*\).*/\1/p' <<<"$r")
	[ -n "$p50" ] && [ "$p50" -gt 0 ] && [ "$p50" -le "$p99" ] || bad "--rx ($mode): latencies $r"
	echo "--rx ($mode): $N counted, none lost, p50 ${p50} ns"
done
out=$("$pg" --rx null -q 2>&1)
[ $? = 5 ] && grep -q "cannot receive" <<<"$out" || bad "--rx null: $out"

# bad interfaces: one clear line, exit 5, nothing sent
check_err() {
	local want=$1
	shift
	ip netns exec "$na" timeout 20 "$pg" -q -n 10 "$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc = 5 ] && grep -q "$want" "$tmp/err" || bad "$*: exit $rc, stderr: $(cat "$tmp/err")"
}
check_err "no such interface" -i packet:nosuch0
check_err "not an Ethernet interface" -i packet:lo
check_err "packet:${p}0:fast: unknown mode \"fast\" (ring or mmsg)" -i "packet:${p}0:fast"
ip -n "$na" link set "${p}0" down
check_err "is down (ip link set ${p}0 up)" -i "packet:${p}0"
ip -n "$na" link set "${p}0" up
# a packet size past the MTU is refused at start, naming both numbers; nothing is sent
ip -n "$na" link set "${p}0" mtu 1000
out=$(ip netns exec "$na" timeout 20 "$pg" -i "packet:${p}0" -q -n 5 -s 1200 --json 2>"$tmp/err")
rc=$?
[ $rc = 3 ] && grep -q '"ok": false' <<<"$out" &&
	grep -q "packet:${p}0: ERROR: pkt_size 1200 does not fit the MTU 1000" "$tmp/err" ||
	bad "oversized packets: exit $rc: $out $(cat "$tmp/err")"
# imix sizes count too
out=$(ip netns exec "$na" timeout 20 "$pg" -i "packet:${p}0" -q -n 5 --imix "100,5 1100,1" --json 2>"$tmp/err")
[ $? = 3 ] && grep -q "pkt_size 1100 does not fit the MTU 1000" "$tmp/err" ||
	bad "oversized imix: $out $(cat "$tmp/err")"
# --veth: a pair made for the run, removed after it, also on Ctrl-C
# (a stale pair of a process that no longer exists is removed first; 9999990
# is above any pid_max, so no such process can exist)
"$net" up -p uv9999990 >/dev/null || bad "netns-veth.sh up -p uv9999990"
# (and a half pair, as a cleanup cut short once left)
"$net" up -p uv9999991 >/dev/null && ip netns del uv9999991-a || bad "netns-veth.sh up -p uv9999991"
out=$(timeout 60 "$pg" --veth -n 500 -q --json 2>"$tmp/err")
grep -q '"packets": 500,' <<<"$out" ||
	{ bad "--veth: $out $(cat "$tmp/err")"; echo "stopped: every later case makes a pair with --veth"; exit 1; }
# the peer received exactly what was sent: the ends are quiet, nothing else arrives
grep -q '"peer_received": 500[,}]' <<<"$out" || bad "--veth: JSON peer_received: $out"
rx=$(sed -n 's/.* received \([0-9]*\) packets; the pair is removed$/\1/p' "$tmp/err")
[ "$rx" = 500 ] || bad "--veth: peer received '$rx': $(cat "$tmp/err")"
grep -q "removed the pair uv9999990-a/uv9999990-b left by process 9999990" "$tmp/err" &&
	grep -q "removed the pair uv9999991-a/uv9999991-b left by process 9999991" "$tmp/err" &&
	! ls /run/netns | grep -q '^uv999999[01]-' || bad "--veth: stale pairs: $(cat "$tmp/err")"
ns=$(sed -n 's/.*(in \(uv[0-9]*-b\)).*/\1/p' "$tmp/err")
[ -n "$ns" ] && ! ip netns list | grep -q "${ns%-b}" || bad "--veth left $ns behind"
# --veth=PREFIX: the namespaces and ends carry it; a prefix whose namespaces exist is refused
vp=nv$(($$ % 100000))
timeout 60 "$pg" --veth="$vp" -n 50 -q 2>"$tmp/err" >/dev/null &&
	grep -q "${vp}1 (in $vp-b) received 50 packets; the pair is removed" "$tmp/err" && ! ip netns list | grep -q "^$vp-" ||
	bad "--veth=$vp: $(cat "$tmp/err")"
ip netns add "$vp-a"
timeout 60 "$pg" --veth="$vp" -n 50 -q >/dev/null 2>"$tmp/err"
rc=$?
ip netns del "$vp-a"
[ $rc = 2 ] && grep -q "the namespace $vp-a exists already" "$tmp/err" || bad "--veth=$vp over a namespace: exit $rc: $(cat "$tmp/err")"
echo "--veth=$vp: named namespaces; refused over one that exists"
# --veth -i KIND: the kind and its options land on the veth end
for kind in xdp:copy xdp::copy packet::mmsg; do
	out=$(timeout 60 "$pg" --veth -i "$kind" -n 200 -q -v --json 2>&1)
	# (a kernel that refuses AF_XDP: not this test's to judge)
	[[ $kind == xdp* ]] && grep -E "$REFUSED" <<<"$out" && { echo "--veth -i $kind: not tried"; continue; }
	want="add_device ${kind%%:*}:uv[0-9]*$(sed 's/^[a-z]*:*/:/; s/^:$//' <<<"$kind")"
	grep -q "$want >" <<<"$out" && grep -q '"packets": 200,' <<<"$out" || bad "--veth -i $kind: want $want: $out"
done
before=$(ip netns list | grep -c '^uv[0-9]*-a' || true)
"$pg" --veth -n 0 -q >/dev/null 2>"$tmp/err" &
vp=$!
# interrupt once the pair exists (slow under sanitizers), then a little later
for _ in $(seq 100); do
	[ "$(ip netns list | grep -c '^uv[0-9]*-a' || true)" -gt "$before" ] && break
	kill -0 $vp 2>/dev/null || break
	sleep 0.1
done
sleep 0.5
kill -INT $vp
wait_within 60 $vp || bad "--veth interrupted: exit $?"
ns=$(sed -n 's/.*(in \(uv[0-9]*-b\)).*/\1/p' "$tmp/err")
[ -n "$ns" ] && ! ip netns list | grep -q "${ns%-b}" || bad "--veth interrupted left namespaces: $(ip netns list)"

# a second Ctrl-C after the first (within 250 ms it is taken as the same
# one; later it ends the tool at once), and kill -9: the pair still goes
# (its guardian process removes it once the tool is gone, whatever killed it)
pair_gone_within() { # PID: wait up to 10 s for uvPID-a and -b to disappear
	for _ in $(seq 100); do
		ls /run/netns 2>/dev/null | grep -q "^uv$1-" || return 0
		sleep 0.1
	done
	return 1
}
for how in "INT 0.005" "INT 0.030" "INT 0.4" "KILL"; do
	set -- $how
	"$pg" --veth -n 0 -q >/dev/null 2>"$tmp/err" &
	vp=$!
	for _ in $(seq 100); do
		ip netns list | grep -q "^uv$vp-b" && break
		kill -0 $vp 2>/dev/null || break
		sleep 0.1
	done
	sleep 0.3
	if [ "$1" = INT ]; then
		kill -INT $vp; sleep "$2"; kill -INT $vp 2>/dev/null
	else
		kill -KILL $vp
	fi
	wait $vp 2>/dev/null
	pair_gone_within $vp || bad "--veth after SIG$how left: $(ip netns list | grep "^uv$vp-")"
	ip netns list | grep "^uv$vp-" | while read -r n _; do ip netns del "$n"; done
done
echo "$fail failed"
[ $fail = 0 ]
