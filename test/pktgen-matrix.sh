#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# uskb-pktgen's packets read back by an independent decoder (tshark): for a
# matrix of options (IPv4/IPv6, VLAN/SVLAN/MPLS, frags 0/1/4/17, UDPCSUM
# on/off, sizes), write a pcap and check every header field, length and
# checksum, that sequence numbers run from 1 without gaps; then ranges,
# random flags and imix stay in range. Skips (77) only without tshark.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pg=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
command -v tshark >/dev/null || { echo "tshark not installed (scripts/deps.sh installs it)"; exit 77; }
[ -x "$pg" ] || { echo "no $pg"; exit 1; }
tmp=$(mktemp -d /tmp/uskb-matrix.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0 cases=0 frames=0
N=40

bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# tshark fields, '|' between fields, ';' between repeated values
fields() {
	local f=$1; shift
	local args=()
	for e in "$@"; do args+=(-e "$e"); done
	tshark -r "$f" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE -o udp.try_heuristic_first:TRUE \
		-T fields -E separator='|' -E aggregator=';' "${args[@]}" 2>/dev/null
}

# one matrix point: family tag frags csum size
check_point() {
	local fam=$1 tag=$2 frags=$3 csum=$4 size=$5
	local name="ipv$fam-$tag-frags$frags-csum$csum-size$size" f="$tmp/p.pcap"
	local args=(-i "pcap:$f" -q -n $N -s "$size" --frags "$frags" -m 02:00:00:00:00:02)
	local iph=20 over=0
	[ "$fam" = 6 ] && { args+=(-6 -d fd00::2 "src6 fd00::1"); iph=40; } ||
		args+=(-d 198.18.0.2 "src_min 198.18.0.1" "src_max 198.18.0.1")
	[ "$csum" = 1 ] && args+=(-k)
	case $tag in
	vlan) args+=("vlan_id 5" "vlan_p 3"); over=4 ;;
	svlan) args+=("vlan_id 5" "vlan_p 3" "svlan_id 7" "svlan_p 1"); over=8 ;;
	mpls) args+=("mpls 0001000a,0002000b"); over=8 ;;
	esac
	"$pg" "${args[@]}" >"$tmp/out" 2>&1 || { bad "$name: uskb-pktgen failed: $(tail -1 "$tmp/out")"; return; }
	local datalen=$((size - 14 - iph - 8 - over))
	[ $datalen -lt 16 ] && datalen=16
	local flen=$((14 + over + iph + 8 + datalen))
	fields "$f" frame.len eth.dst eth.src vlan.id vlan.priority mpls.label mpls.bottom \
		ip.version ip.ttl ip.proto ip.len ip.checksum.status ip.src ip.dst \
		ipv6.plen ipv6.hlim ipv6.nxt ipv6.src ipv6.dst \
		udp.srcport udp.dstport udp.length udp.checksum udp.checksum.status \
		pktgen.magic pktgen.seqnum >"$tmp/f"
	frames=$((frames + $(wc -l <"$tmp/f")))
	awk -F'|' -v n=$N -v fam="$fam" -v tag="$tag" -v csum="$csum" -v flen=$flen \
		-v dlen=$datalen -v name="$name" '
	function err(m) { print "FAIL: " name " frame " NR ": " m; bad++ }
	{
		if ($1 != flen) err("frame.len " $1 " want " flen)
		if ($2 != "02:00:00:00:00:02" || $3 != "02:00:00:00:00:01") err("MACs " $2 " " $3)
		if (tag == "vlan" && ($4 != "5" || $5 != "3")) err("vlan " $4 " prio " $5)
		if (tag == "svlan" && ($4 != "7;5" || $5 != "1;3")) err("svlan/vlan " $4 " prio " $5)
		if (tag == "mpls" && ($6 != "16;32" || $7 != "0;1")) err("mpls " $6 " bos " $7)
		if (tag == "none" && ($4 != "" || $6 != "")) err("unexpected tag")
		if (fam == 4) {
			if ($8 != 4 || $9 != 32 || $10 != 17) err("ipv4 version/ttl/proto " $8 " " $9 " " $10)
			if ($11 != 20 + 8 + dlen) err("ip.len " $11)
			if ($12 != 1) err("ip checksum status " $12)
			if ($13 != "198.18.0.1" || $14 != "198.18.0.2") err("addresses " $13 " " $14)
		} else {
			if ($15 != dlen + 8 || $16 != 32 || $17 != 17) err("ipv6 plen/hlim/nxt " $15 " " $16 " " $17)
			if ($18 != "fd00::1" || $19 != "fd00::2") err("addresses " $18 " " $19)
		}
		if ($20 != 9 || $21 != 9) err("ports " $20 " " $21)
		if ($22 != dlen + 8) err("udp.length " $22)
		if (csum == 1 && $24 != 1) err("udp checksum " $23 " status " $24)
		if (csum == 0 && $23 != "0x0000") err("udp checksum " $23 " should be 0")
		if ($25 != "0xbe9be955") err("magic " $25)
		if ($26 != NR) err("seq " $26 " want " NR)
	}
	END {
		if (NR != n) { print "FAIL: " name ": " NR " frames, want " n; bad++ }
		exit bad > 0
	}' "$tmp/f" || fail=$((fail + 1))
	cases=$((cases + 1))
}

sizes=(60 100 1000 1500)
i=0
for fam in 4 6; do
	for tag in none vlan svlan mpls; do
		for frags in 0 1 4 17; do
			for csum in 0 1; do
				check_point $fam $tag $frags $csum "${sizes[$((i % 4))]}"
				i=$((i + 1))
			done
		done
	done
done

# ranges and random flags: random ranges exclude max, sequential ones include it
f=$tmp/r.pcap
"$pg" -i "pcap:$f" -q -n 400 --seed 7 -d 198.18.0.100 "dst_max 198.18.0.103" \
	"src_min 198.18.0.10" "src_max 198.18.0.20" "flag IPSRC_RND" \
	"udp_src_min 1000" "udp_src_max 1010" "flag UDPSRC_RND" \
	"udp_dst_min 2000" "udp_dst_max 2003" \
	"min_pkt_size 100" "max_pkt_size 200" "flag TXSIZE_RND" \
	-m 02:00:00:00:00:10 "dst_mac_count 4" >/dev/null 2>"$tmp/err" || bad "ranges run: $(cat "$tmp/err")"
fields "$f" frame.len ip.src ip.dst udp.srcport udp.dstport eth.dst ip.checksum.status pktgen.seqnum >"$tmp/f"
awk -F'|' '
function err(m) { print "FAIL: ranges frame " NR ": " m; bad++ }
{
	if ($1 < 100 || $1 >= 200) err("size " $1)
	split($2, s, "."); if (s[4] < 10 || s[4] >= 20 || $2 !~ /^198\.18\.0\./) err("src " $2)
	split($3, d, "."); if (d[4] < 100 || d[4] > 103) err("dst " $3)
	if ($4 < 1000 || $4 >= 1010) err("udp src " $4)
	if ($5 < 2000 || $5 >= 2003) err("udp dst " $5)
	if ($6 !~ /^02:00:00:00:00:1[0-3]$/) err("dst mac " $6)
	if ($7 != 1) err("ip checksum")
	if ($8 != NR) err("seq " $8)
	seen_src[$2]++; seen_dst[$3]++; seen_sp[$4]++; seen_dp[$5]++; seen_mac[$6]++; seen_len[$1]++
}
END {
	if (NR != 400) err("frames " NR)
	if (length(seen_src) != 10) err("sources seen: " length(seen_src) " of 10")
	if (length(seen_dst) != 4) err("destinations seen: " length(seen_dst) " of 4 (inclusive range)")
	if (length(seen_sp) != 10) err("udp sources seen: " length(seen_sp))
	if (length(seen_dp) != 3) err("udp destinations seen: " length(seen_dp))
	if (length(seen_mac) != 4) err("dst macs seen: " length(seen_mac))
	if (length(seen_len) < 50) err("sizes seen: " length(seen_len))
	exit bad > 0
}' "$tmp/f" || fail=$((fail + 1))
cases=$((cases + 1))

# IPv6 random destinations: (rand | min) & max
"$pg" -i "pcap:$f" -q -n 100 --seed 3 -6 -d fd00::/120 "src6 fd00::1" >/dev/null 2>&1 ||
	bad "ipv6 range run"
fields "$f" ipv6.dst pktgen.seqnum >"$tmp/f"
awk -F'|' '
{ if ($1 !~ /^fd00::([0-9a-f][0-9a-f]?)?$/) { print "FAIL: ipv6 dst " $1; bad++ } seen[$1]++ }
END { if (NR != 100 || length(seen) < 20) { print "FAIL: ipv6 range: " NR " frames, " length(seen) " addresses"; bad++ } exit bad > 0 }' \
	"$tmp/f" || fail=$((fail + 1))
cases=$((cases + 1))

# imix: only the listed sizes, each seen, the heaviest the most common
"$pg" -i "pcap:$f" -q -n 600 --seed 5 --imix "64,7 576,4 1500,1" --frags 1 >/dev/null 2>&1 || bad "imix run"
fields "$f" frame.len udp.length pktgen.seqnum >"$tmp/f"
awk -F'|' '
{ c[$1]++; if ($1 != 64 && $1 != 576 && $1 != 1500) { print "FAIL: imix size " $1; bad++ }
  if ($2 != $1 - 34) { print "FAIL: imix udp length " $2 " in a " $1 " frame"; bad++ }
  if ($3 != NR) { print "FAIL: imix seq " $3; bad++ } }
END { if (NR != 600 || !c[64] || !c[576] || !c[1500] || c[64] < c[576] || c[576] < c[1500]) {
	print "FAIL: imix mix " c[64] "/" c[576] "/" c[1500]; bad++ } exit bad > 0 }' "$tmp/f" || fail=$((fail + 1))
cases=$((cases + 1))

echo "$cases cases, $frames matrix frames decoded by tshark, $fail failed"
[ $fail -eq 0 ]
