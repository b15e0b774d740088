#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The interface changes under a running uskb-pktgen, on veth pairs this
# test creates and removes (scripts/netns-veth.sh, 198.18.0.0/15), for
# packet: (ring and mmsg) and xdp: alike:
# - the MTU falls below the packet size and comes back: sending goes on
#   after it, every frame is counted as sent or as an error, and what the
#   peer counts (uskb-pktgen --rx) is what was sent less what the device
#   says it lost; the run says it failed (exit 3);
# - packet:, 60-byte frames: the MTU falls to veth's smallest (68) and
#   nothing is refused or lost (the ring skips its per-send MTU check);
#   with 1400-byte frames among them, a fall to 1000 costs only those;
# - the interface is deleted: a sender with -n 0 ends with one line and
#   exit 3; a receiver on the deleted peer ends too (exit 3);
# - a pcap: file fills its disk: the records written plus those counted
#   lost are all that were sent, and the file is a whole capture.
# Needs root; skips (77) without it or without network namespaces.
set -u
source "$(dirname "$0")/net-common.bash" f
kinds=(packet packet::mmsg)
tmp=$(mktemp -d /tmp/uskb-faults.XXXXXX)
trap '"$net" down -p "$p" >/dev/null 2>&1; umount "$tmp/full" 2>/dev/null; rm -rf "$tmp"' EXIT
# xdp: once: a build without libxdp or a kernel that refuses AF_XDP leaves
# its cases out, saying so; the pair itself is what every case needs
"$net" up -p "$p" >/dev/null || { echo "FAIL: netns-veth.sh up"; echo "stopped: every case needs a pair"; exit 1; }
if why=$(ip netns exec "$p-a" timeout 20 "$pg" -i "xdp:${p}0" -q -n 1 -d 198.18.0.2 2>&1 >/dev/null); then
	kinds+=(xdp)
elif grep -qE "$REFUSED" <<<"$why"; then
	echo "xdp: not tried: $why"
else
	bad "xdp: one frame: $why"
fi
"$net" down -p "$p" >/dev/null
# the device spec of KIND on the first end: packet::mmsg -> packet:IF:mmsg
spec() { local k=$1; echo "${k%%:*}:${p}0$(sed 's/^[a-z]*:*/:/; s/^:$//' <<<"$k")"; }

# One run through an MTU fall on pair $p: the peer counts (uskb-pktgen
# --rx) while uskb-pktgen, given "$@" (the device, the sizes), sends 40000
# packets at 20000 pps at most (the run lasts past the fall on any machine)
# and the sender's MTU falls to $1 for half a second. Sets out, rc, sent,
# lost, errs and got (what the peer counted).
through_fall() {
	local low=$1 mtu rxp
	shift
	start_rx "$tmp/rx.err" ip netns exec "$p-b" timeout 60 "$pg" --rx "${p}1" --json >"$tmp/rx.json"
	rxp=$!
	wait_rx "$tmp/rx.err" $rxp || bad "$*: the receiver did not start: $(cat "$tmp/rx.err")"
	(sleep 1; ip -n "$p-a" link set "${p}0" mtu "$low"; sleep 0.5; ip -n "$p-a" link set "${p}0" mtu 1500) &
	mtu=$!
	out=$(ip netns exec "$p-a" timeout 60 "$pg" "$@" -m 02:00:00:00:00:02 -d 198.18.0.2 \
		--ratep 20000 -n 40000 -q --json 2>"$tmp/err")
	rc=$?
	wait $mtu
	sleep 0.5
	kill -TERM $rxp
	wait $rxp || echo "receiver exit $?: $(cat "$tmp/rx.err")"
	sent=$(json_num packets "$out") lost=$(json_num lost "$out") errs=$(json_num errors "$out")
	got=$(json_num packets "$(cat "$tmp/rx.json")")
}

for kind in "${kinds[@]}"; do
	dev=$(spec "$kind")
	"$net" up -p "$p" >/dev/null || { bad "netns-veth.sh up"; continue; }
	through_fall 1000 -i "$dev" -s 1400
	# exit 3, frames refused (the fall hit the run), and all 40000 sent in
	# the end: sending went on after the MTU came back
	[ $rc = 3 ] && [ "$sent" = 40000 ] && [ -n "$errs" ] && [ "$errs" -gt 0 ] ||
		bad "$kind, MTU 1500 -> 1000 -> 1500: exit $rc, sent '$sent', errors '$errs': $out $(cat "$tmp/err")"
	grep -q "MTU 1000" "$tmp/err" || bad "$kind: no word of the MTU: $(cat "$tmp/err")"
	# every frame the device took arrived, except those it says it lost
	[ -n "$got" ] && [ -n "$lost" ] && [ $((got + lost)) = "$sent" ] ||
		bad "$kind: sent $sent, lost $lost, the peer counted $got: $(cat "$tmp/rx.json")"
	echo "$kind: MTU fell and rose: sent $sent, lost $lost after taking them, the peer counted $got"
	"$net" down -p "$p" >/dev/null

	# the interface deleted under a sender that would never end by itself
	"$net" up -p "$p" >/dev/null || { bad "netns-veth.sh up"; continue; }
	(sleep 1; ip -n "$p-a" link del "${p}0") &
	out=$(ip netns exec "$p-a" timeout 30 "$pg" -i "$dev" -m 02:00:00:00:00:02 -d 198.18.0.2 -n 0 -q \
		--json 2>"$tmp/err")
	rc=$?
	wait
	[ $rc = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -Eq "went down|was deleted" "$tmp/err" &&
		grep -q '"ok": false' <<<"$out" || bad "$kind, interface deleted: exit $rc: $(cat "$tmp/err") $out"
	echo "$kind: interface deleted: $(cat "$tmp/err")"
	"$net" down -p "$p" >/dev/null
done

# packet:'s ring leaves out its per-send MTU check while no frame is longer
# than the interface's smallest MTU (veth: 68) allows: 60-byte frames through
# a fall to that MTU arrive whole, none refused, none lost
"$net" up -p "$p" >/dev/null || bad "netns-veth.sh up"
through_fall 68 -i "packet:${p}0" -s 60
[ $rc = 0 ] && [ "$sent" = 40000 ] && [ "$errs" = 0 ] && [ "$lost" = 0 ] && [ "$got" = 40000 ] ||
	bad "60-byte frames, MTU 1500 -> 68 -> 1500: exit $rc, sent '$sent', errors '$errs', lost '$lost', the peer counted '$got': $(cat "$tmp/err")"
echo "packet: 60-byte frames through MTU 68: sent $sent, the peer counted $got"
# 60- and 1400-byte frames through a fall to 1000: no more refused or lost
# than there are long ones, and every frame accounted for
through_fall 1000 -i "packet:${p}0" --imix "60,20 1400,1"
[ $rc = 3 ] && [ "$sent" = 40000 ] && [ -n "$errs" ] && [ "$errs" -gt 0 ] && [ -n "$lost" ] &&
	[ -n "$got" ] && [ $((got + lost)) = "$sent" ] &&
	[ $((errs + lost)) -le $((40000 / 21 + 200)) ] ||
	bad "60/1400-byte frames, MTU 1500 -> 1000 -> 1500: exit $rc, sent '$sent', errors '$errs', lost '$lost', the peer counted '$got': $(cat "$tmp/err")"
echo "packet: 60/1400-byte frames through MTU 1000: sent $sent, refused $errs, lost $lost, the peer counted $got"
"$net" down -p "$p" >/dev/null

# a receiver whose interface is deleted (two queues: xdp: then polls them without waiting)
for rxdev in "${p}1" "xdp:${p}1"; do
	[ "${rxdev%%:*}" = xdp ] && [[ " ${kinds[*]} " != *" xdp "* ]] && continue
	"$net" up -p "$p" -q 2 >/dev/null || { bad "netns-veth.sh up"; continue; }
	start_rx "$tmp/err" ip netns exec "$p-b" timeout 30 \
		"$pg" --rx "$rxdev" --duration 20 >/dev/null
	rxp=$!
	wait_rx "$tmp/err" $rxp && sleep 0.5 && ip -n "$p-b" link del "${p}1"
	wait $rxp
	rc=$?
	[ $rc = 3 ] && grep -Eq "went down|was deleted" "$tmp/err" || bad "--rx $rxdev, deleted: exit $rc: $(cat "$tmp/err")"
	echo "--rx $rxdev: interface deleted: $(cat "$tmp/err")"
	"$net" down -p "$p" >/dev/null
done
# a full disk under pcap: every record is in the file or counted lost, and the file stays whole
mkdir -p "$tmp/full"
if mount -t tmpfs -o size=64k tmpfs "$tmp/full"; then
	out=$(timeout 30 "$pg" -i "pcap:$tmp/full/x.pcap" -n 1000 -s 100 -q --json 2>"$tmp/err")
	rc=$?
	sent=$(json_num packets "$out") lost=$(json_num lost "$out")
	size=$(stat -c %s "$tmp/full/x.pcap")
	# 24 bytes of header, then 16 + 100 per record
	[ $rc = 3 ] && [ "$sent" = 1000 ] && [ -n "$lost" ] && [ "$lost" -gt 0 ] &&
		[ "$size" = $((24 + (sent - lost) * 116)) ] && grep -q "No space left on device" "$tmp/err" ||
		bad "pcap on a full disk: exit $rc, size $size: $out $(cat "$tmp/err")"
	if command -v tshark >/dev/null; then
		n=$(tshark -r "$tmp/full/x.pcap" 2>/dev/null | wc -l)
		[ "$n" = $((sent - lost)) ] || bad "pcap on a full disk: tshark reads $n frames, want $((sent - lost))"
	fi
	echo "pcap on a full disk: $((sent - lost)) records written, $lost counted lost"
	umount "$tmp/full"
else
	bad "cannot mount a tmpfs"
fi

echo "$fail failed"
[ $fail = 0 ]
