#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# uskb-dp between two veth pairs in three namespaces this test creates and
# removes (198.18.0.0/15): A (uskb-pktgen) -- D (uskb-dp) -- B (--rx).
#  - every packet arrives once; each flow's first packet misses and the rest
#    hit, and hit + missed = what the ports received; each miss was handled
#    and executed; zerocopy and copy upcalls alike. Under a sanitizer
#    (USKB_SANITIZE, set by make test) handlers are slow enough for the
#    frames their upcalls hold to fill D's receive ring; the kernel then
#    drops, and the port must count every frame B did not get;
#  - the upcall pcap: tshark reads its netlink and genetlink headers, and
#    each upcall's packet attribute is a frame the datapath forwarded;
#  - the learning switch: unknown destinations flood, learnt ones do not;
#    traffic goes both ways;
#  - flows expire after --idle-ms;
#  - stalled handlers lose upcalls (counted), and nothing leaks;
#  - an external handler over --handler-socket does the handlers' work;
#  - rules: push_vlan, pop_vlan, a userspace action, an output to a port
#    that does not exist refused and counted;
#  - bad options give one line and exit 2.
# Needs root; skips (77) without it, without network namespaces or tshark.
set -u
source "$(dirname "$0")/net-common.bash" d
dpt=${USKB_DP:-$here/../tools/uskb-dp}
[ -x "$dpt" ] || { echo "no uskb-dp (built without libmnl-dev?)"; exit 77; }
command -v tshark >/dev/null || { echo "no tshark (scripts/deps.sh)"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-dp.XXXXXX)
na=$p-a nb=$p-b nd=$p-d a=${p}a b=${p}b d0=${p}d0 d1=${p}d1
cleanup() {
	for n in "$na" "$nb" "$nd"; do ip netns del "$n" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

for n in "$na" "$nb" "$nd"; do
	ip netns add "$n" || { echo "FAIL: ip netns add $n"; exit 1; }
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$n" link set lo up
done
ip link add "$a" netns "$na" type veth peer name "$d0" netns "$nd" &&
	ip link add "$b" netns "$nb" type veth peer name "$d1" netns "$nd" ||
	{ echo "FAIL: ip link add ... type veth"; echo "stopped: every case needs the two pairs"; exit 1; }
ip -n "$na" link set "$a" address 02:00:00:00:00:01 up
ip -n "$nb" link set "$b" address 02:00:00:00:00:02 up
# no addresses: A and B stay silent unless a test makes them send (no ARP, no ICMP)
ip -n "$nd" link set "$d0" up
ip -n "$nd" link set "$d1" up

# uskb-dp in D (its output in $tmp/dp.json, stderr in $tmp/dp.err), returns at once
dp_start() {
	ip netns exec "$nd" timeout 60 "$dpt" --json --quiet "$@" >"$tmp/dp.json" 2>"$tmp/dp.err" &
	dpp=$!
	sleep 0.5
	# (it runs for --duration: gone now, it could not start, as every later case would not)
	kill -0 $dpp 2>/dev/null ||
		{ wait $dpp; bad "uskb-dp $*: exit $?: $(cat "$tmp/dp.err")"; echo "stopped: every case runs uskb-dp"; exit 1; }
}
dp_wait() {
	wait $dpp
	dprc=$?
	final=$(grep '"final": true' "$tmp/dp.json")
	[ $dprc = 0 ] || bad "$1: uskb-dp exit $dprc: $(cat "$tmp/dp.err")"
}
# send N packets of SIZE from A to B from K sources at RATE pps, B counting them
send_ab() {
	local n=$1 size=$2 k=$3 rate=$4
	ip netns exec "$nb" timeout 30 "$pg" --rx "packet:$b" -n "$n" --duration 8 --json -q >"$tmp/rx.json" &
	local rxp=$!
	sleep 0.5
	ip netns exec "$na" timeout 30 "$pg" -i "packet:$a" -q -n "$n" -s "$size" -m 02:00:00:00:00:02 \
		-d 198.18.0.2 --ratep "$rate" "src_min 198.18.1.1" "src_max 198.18.1.$k" >/dev/null ||
		{ bad "sender failed"; kill $rxp 2>/dev/null; } # (nothing comes: the receiver is not waited out)
	wait $rxp
	rx=$(cat "$tmp/rx.json")
}
# RX (a receiver's JSON) holds WANT packets, once each, less those port PORT
# of uskb-dp's final line counted as dropped; sets got; drops are failures
# unless under a sanitizer
delivered() {
	local label=$1 want=$2 port=$3 rxj=$4 drop
	drop=$(sed -n "s/.*\"port\": $port, [^}]*\"rx_dropped\": \([0-9]*\).*/\1/p" <<<"$final")
	[ -z "${USKB_SANITIZE:-}" ] && [ "${drop:-x}" != 0 ] && bad "$label: port $port dropped $drop frames"
	got=$((want - ${drop:-0}))
	grep -qF "\"packets\": $got," <<<"$rxj" && grep -qF '"duplicates": 0,' <<<"$rxj" ||
		bad "$label: the receiver did not get $want - $drop dropped packets once: $rxj"
}
# the flows uskb-dp dumped at its end: FIELD of the ones matching PATTERN
flows() { grep -E "$1" "$tmp/dp.json"; }

# ---- misses, hits and the counts, in both upcall modes ----
N=1000 K=10
for mode in zerocopy copy; do
	extra=()
	# copy mode with one thread for both ports (frames not handed over)
	[ $mode = copy ] && extra=(--copy -t 1)
	dp_start -p "packet:$d0" -p "packet:$d1" -p "pcap:$tmp/out.pcap" --dump-flows --duration 5 \
		--upcall-pcap "$tmp/up.pcap" "${extra[@]}"
	send_ab $N 1001 $K 2000
	dp_wait "$mode"
	hit=$(json_num hit "$final") missed=$(json_num missed "$final") lost=$(json_num lost "$final")
	handled=$(json_num handled "$final") executed=$(json_num executed "$final")
	rx1=$(sed -n 's/.*"port": 1, [^}]*"rx_packets": \([0-9]*\).*/\1/p' <<<"$final")
	rx2=$(sed -n 's/.*"port": 2, [^}]*"rx_packets": \([0-9]*\).*/\1/p' <<<"$final")
	delivered "$mode" $N 1 "$rx"
	[ -n "$hit" ] && [ $((hit + missed)) = $((rx1 + rx2)) ] ||
		bad "$mode: hit $hit + missed $missed != received $rx1 + $rx2"
	[ "$lost" = 0 ] && [ "$handled" = "$missed" ] && [ "$executed" = "$missed" ] ||
		bad "$mode: missed $missed, lost $lost, handled $handled, executed $executed"
	grep -qF "\"mode\": \"$mode\"" <<<"$final" || bad "$mode: the JSON says another mode: $final"
	# the K UDP flows from A: their first packets missed (and any that came
	# before the flow was in), all the others hit
	udp=$(flows '^in_port\(1\).*udp\(src=9,dst=9\)')
	nflows=$(grep -c . <<<"$udp")
	sum=$(sed -n 's/.*packets:\([0-9]*\),.*/\1/p' <<<"$udp" | awk '{ s += $1 } END { print s + 0 }')
	[ "$nflows" = $K ] && [ "$sum" = $((got - missed)) ] && [ "$missed" -ge $K ] ||
		bad "$mode: $nflows UDP flows holding $sum hits, want $K and $((got - missed)): $udp"
	# the upcalls' pcap: genetlink MISS messages whose packet is a frame the datapath sent on
	tshark -r "$tmp/up.pcap" -T fields -e netlink.hdr_len -e genl.cmd -e genl.version -e data.data \
		2>/dev/null >"$tmp/up.txt"
	tshark -r "$tmp/out.pcap" -T json -x 2>/dev/null | grep -A1 '"frame_raw"' |
		grep -o '"[0-9a-f]\{28,\}"' | tr -d '"' >"$tmp/out.txt"
	nup=$(grep -c . "$tmp/up.txt")
	[ "$nup" = "$missed" ] || bad "$mode: $nup upcalls in the pcap, $missed missed"
	matched=0
	while read -r len cmd ver data; do
		[ "$cmd" = 1 ] && [ "$ver" = 1 ] && [ $((len % 4)) = 0 ] || { bad "$mode: upcall header $len $cmd $ver"; break; }
		# the frame is the tail of the message, before its pad
		while read -r frame; do
			flen=${#frame}
			pad=$(( (8 - flen % 8) % 8 ))
			tail=${data: -$((flen + pad))}
			[ "${tail:0:$flen}" = "$frame" ] && [ "${tail:$flen}" = "$(printf '%*s' $pad '' | tr ' ' 0)" ] &&
				{ matched=$((matched + 1)); break; }
		done <"$tmp/out.txt"
	done < <(grep -E $'\t'"1"$'\t' "$tmp/up.txt" | head -20)
	want=$(grep -cE $'\t'"1"$'\t' "$tmp/up.txt" | awk '{ print ($1 > 20) ? 20 : $1 }')
	[ "$matched" = "$want" ] && [ "$want" -ge $K ] ||
		bad "$mode: $matched of $want upcall packets found among the forwarded frames"
	echo "$mode: $N packets, B got $got, hit $hit missed $missed lost $lost; $nflows flows; $matched upcall packets = forwarded frames"
done

# ---- the learning switch, both ways (two handlers); flows expire ----
dp_start -p "packet:$d0" -p "packet:$d1" -p null --dump-flows --duration 7 --idle-ms 1500 --stats 0.25 -H 2
send_ab 300 200 3 2000
rxab=$rx
# now B -> A: A's address was learnt on port 1: no flood to port 3
ip netns exec "$na" timeout 30 "$pg" --rx "packet:$a" -n 300 --duration 8 --json -q >"$tmp/rxa.json" &
rxp=$!
sleep 0.5
ip netns exec "$nb" timeout 30 "$pg" -i "packet:$b" -q -n 300 -s 200 -m 02:00:00:00:00:01 \
	-d 198.18.0.1 --ratep 2000 "src_min 198.18.2.1" "src_max 198.18.2.3" >/dev/null || bad "B sender failed"
wait $rxp
sleep 2
dp_wait learning
delivered "A -> B" 300 1 "$rxab"
delivered "B -> A" 300 2 "$(cat "$tmp/rxa.json")"
ab=$(grep -c '"flows": 0' "$tmp/dp.json")
last=$(grep '"final": false' "$tmp/dp.json" | tail -1)
[ "$(json_num flows "$last")" = 0 ] && [ "$(json_num expired "$last")" -ge 6 ] ||
	bad "flows did not expire: $last"
peak=$(sed -n 's/.*"flows": \([0-9]*\).*/\1/p' "$tmp/dp.json" | sort -n | tail -1)
# both directions' flows were in (3 each; they may not all have been at once) and all went
[ "$peak" -ge 3 ] || bad "at most $peak flows at once"
echo "learning (2 handlers): B -> A 300 packets; flows peaked at $peak and expired ($ab samples at 0)"

# the flows again, kept: the learnt direction outputs to port 1 only; the first
# packets to B (unknown until B spoke) flooded to 2 and 3
dp_start -p "packet:$d0" -p "packet:$d1" -p null --dump-flows --duration 4
send_ab 100 200 2 2000
ip netns exec "$nb" timeout 30 "$pg" -i "packet:$b" -q -n 100 -s 200 -m 02:00:00:00:00:01 \
	-d 198.18.0.1 --ratep 2000 "src_min 198.18.2.1" "src_max 198.18.2.2" >/dev/null
dp_wait learning2
ba=$(flows '^in_port\(2\).*dst=02:00:00:00:00:01.*udp')
[ "$(grep -c . <<<"$ba")" = 2 ] && ! grep -qv 'actions:1$' <<<"$ba" ||
	bad "B -> A flows should output to port 1 only: $ba"
grep -qE '^in_port\(1\).*udp.*actions:2,3$' "$tmp/dp.json" ||
	bad "A -> B before B was learnt should flood to 2 and 3: $(flows '^in_port\(1\)')"
echo "learning: learnt destinations go to their port, unknown ones flood"

# ---- stalled handlers: upcalls are lost, counted, and nothing leaks ----
dp_start -p "packet:$d0" -p "packet:$d1" --duration 4 --queue 4 --handler-stall 30
send_ab 1000 200 250 5000
dp_wait stall
hit=$(json_num hit "$final") missed=$(json_num missed "$final") lost=$(json_num lost "$final")
rx1=$(sed -n 's/.*"port": 1, [^}]*"rx_packets": \([0-9]*\).*/\1/p' <<<"$final")
rx2=$(sed -n 's/.*"port": 2, [^}]*"rx_packets": \([0-9]*\).*/\1/p' <<<"$final")
[ "$lost" -gt 100 ] && [ $((hit + missed)) = $((rx1 + rx2)) ] ||
	bad "stalled handlers: hit $hit missed $missed lost $lost, received $rx1 + $rx2"
echo "stalled handlers: missed $missed, lost $lost (uskb-dp exit $dprc: no leak)"

# ---- an external handler ----
sock=$tmp/h.sock
dp_start -p "packet:$d0" -p "packet:$d1" --duration 5 --handler-socket "$sock"
ip netns exec "$nd" timeout 30 "$dpt" --handler-of "$sock" --quiet 2>"$tmp/h.err" &
hp=$!
sleep 0.3
send_ab 500 300 5 2000
dp_wait external
wait $hp || bad "the external handler exited $?: $(cat "$tmp/h.err")"
missed=$(json_num missed "$final") executed=$(json_num executed "$final")
delivered "external handler" 500 1 "$rx"
[ "$missed" -ge 5 ] && [ "$executed" = "$missed" ] || bad "external handler: missed $missed executed $executed"
echo "external handler: 500 packets, missed $missed, all executed"

# ---- rules: push_vlan to a pcap port, a userspace action, a port that does not exist ----
cat >"$tmp/rules" <<EOF
# comments and blank lines are fine

in_port=1,udp,nw_src=198.18.1.1 actions=push_vlan:5,output:3
in_port=1,udp,nw_src=198.18.1.2 actions=userspace:hello,output:2
in_port=1,udp,nw_src=198.18.1.3 actions=output:9
in_port=1,dl_vlan=7 actions=pop_vlan,output:3
EOF
dp_start -p "packet:$d0" -p "packet:$d1" -p "pcap:$tmp/vlan.pcap" --rules "$tmp/rules" --duration 11
# 40 frames tagged with VLAN 7 (source 198.18.9.9): popped on the way to the pcap port
ip netns exec "$na" timeout 30 "$pg" -i "packet:$a" -q -n 40 -s 200 -m 02:00:00:00:00:02 \
	-d 198.18.0.2 --ratep 2000 "src_min 198.18.9.9" "src_max 198.18.9.9" "vlan_id 7" >/dev/null ||
	bad "the VLAN sender failed"
# B gets only 1.2's 30 of these 90: its receiver waits out its 8 s
send_ab 90 200 3 2000
dp_wait rules
vids=$(tshark -r "$tmp/vlan.pcap" -T fields -e vlan.id 2>/dev/null | grep . | sort -u | paste -sd' ')
[ "$vids" = "5" ] || bad "push_vlan/pop_vlan: VLAN ids in the pcap port: '$vids', want only 5"
untagged=$(tshark -r "$tmp/vlan.pcap" -Y '!vlan && ip.src == 198.18.9.9' 2>/dev/null | grep -c .)
[ "$untagged" = 40 ] || bad "pop_vlan: $untagged untagged frames from 198.18.9.9 in the pcap port, want 40"
[ "$(json_num action_upcalls "$final")" -ge 29 ] || bad "userspace action: $final"
[ "$(json_num bad_replies "$final")" -ge 1 ] || bad "output:9 should be refused: $final"
grep -qF '"packets": 30,' <<<"$rx" || bad "rules: B should get the 30 packets of 198.18.1.2: $rx"
echo "rules: push_vlan, pop_vlan, userspace and a refused output:9"

# ---- bad options ----
check_usage() {
	local want=$1
	shift
	"$dpt" "$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc = 2 ] && grep -q "$want" "$tmp/err" || bad "$*: exit $rc: $(cat "$tmp/err")"
}
check_usage "no ports" --duration 1
check_usage "is not a number" -p null -H x
check_usage "unexpected argument" -p null extra
printf 'in_port=1 actions=fly\n' >"$tmp/bad.rules"
check_usage "bad.rules:1: an unknown action" -p null --rules "$tmp/bad.rules"
ip netns exec "$nd" "$dpt" -p packet:nosuch0 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "port 1: packet:nosuch0: no such interface" "$tmp/err" ||
	bad "a missing interface: exit $rc: $(cat "$tmp/err")"

[ $fail = 0 ] && echo "net-dp: ok" || echo "net-dp: $fail failure(s)"
[ $fail = 0 ]
