#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The xdp-live: device through uskb-pktgen, in a private two-queue veth pair
# this test creates and removes (scripts/netns-veth.sh -g: an XDP program
# passes what arrives on to the peer's stack; 198.18.0.0/15):
# - the frames the kernel replays equal, field by field, those the pcap:
#   device writes for the same commands (times masked; random fields
#   checked for their range; every IP and UDP checksum good);
# - a paced run arrives at uskb-pktgen --rx with nothing lost, reordered
#   or twice, with sane latencies (right sequence numbers and times);
#   two threads on two queues send their counts;
# - each command the program cannot do is refused at start, naming it;
#   an interface missing or down, a frame past the MTU, no privilege and
#   a kernel without live frames (made by seccomp: helpers/refuse)
#   each give one clear line and a non-zero exit;
# - on a kernel that refuses live frames (before 5.18: EINVAL; a lockdown
#   or a BPF LSM: EPERM) it probes once and skips (77), saying why; it
#   runs itself under helpers/refuse to show that it does;
# - no BPF program or map, and no XDP program on the interfaces, outlives
#   the process: after the end, a Ctrl-C and a kill -9.
# Needs root; skips (77) without it, without network namespaces, or in a
# build without the live program.
set -u
source "$(dirname "$0")/net-common.bash" l
command -v tshark >/dev/null || { echo "no tshark (scripts/deps.sh)"; exit 77; }
command -v bpftool >/dev/null || { echo "no bpftool (scripts/deps.sh): it shows what the process leaves"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-live.XXXXXX)
cleanup() {
	"$net" down -p "$p" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
"$net" up -p "$p" -q 2 -g >/dev/null || { echo "FAIL: netns-veth.sh up"; exit 1; }
na=$p-a nb=$p-b a=${p}0 b=${p}1
# One probe, the tool's own: a build without the live program, or a kernel
# that refuses live frames, makes every case below fail alike. The tool
# names the refusal (its open runs one live frame): a kernel before 5.18
# says EINVAL; a lockdown or a BPF LSM policy EPERM, even to root.
probe=$(ip netns exec "$na" timeout 20 "$pg" -i "xdp-live:$a" -n 1 -q 2>&1 >/dev/null)
rc=$?
case $probe in
*"built without"*)
	echo "uskb was built without the live program (clang, libbpf-dev)"
	exit 77
	;;
*"does not run XDP live frames"* | *"live frames refused by this kernel"*)
	echo "$probe"
	why=$(sed -n 's/.*BPF_F_TEST_XDP_LIVE_FRAMES: \(E[A-Z0-9]*\);.*/\1/p' <<<"$probe")
	echo "skipped: this kernel refuses live-frames BPF_PROG_RUN (${why:-EINVAL: before Linux 5.18})"
	exit 77
	;;
esac
[ $rc = 0 ] || { echo "FAIL: one live frame: exit $rc: $probe"; echo "(every case would fail alike: stopped)"; exit 1; }
# no BPF object of ours left: no program or map by our names (bpftool), no XDP on the pair
leftovers() {
	local what=$1 left
	sleep 0.3 # a dead process's files close as it goes; the objects follow a grace period later
	for _ in $(seq 20); do
		left=$(bpftool prog show 2>/dev/null | grep -E "pktgen_live|uskb_live" ;
			bpftool map show 2>/dev/null | grep -E "uskb_pk|uskb_pg|flows")
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || bad "$what: BPF objects left: $left"
	ip -n "$na" link show "$a" | grep -q "prog/xdp" && bad "$what: an XDP program on $a"
	[ "$(ip -n "$nb" -d link show "$b" | grep -c 'prog/xdp')" = 1 ] ||
		bad "$what: $b lost its pass program"
}

# ---- frames: xdp-live captured on the peer, against pcap: ----
# the last field, the UDP payload, cut to the pktgen magic and sequence number (the time masked)
F=(-T fields -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE
	-e eth.src -e eth.dst -e vlan.id -e ip.src -e ip.dst -e ipv6.src -e ipv6.dst -e ip.id
	-e ip.len -e ip.checksum -e ip.checksum.status -e udp.srcport -e udp.dstport -e udp.length
	-e udp.checksum.status -e frame.len -e udp.payload)
fields() {
	tshark -r "$1" "${F[@]}" 2>/dev/null | awk -F'\t' -v OFS='\t' '{ $NF = substr($NF, 1, 16); print }'
}
# hex to a number (mawk has no strtonum)
HEX='function hex(s,   i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }'
# capture N UDP frames on $b while "$@" sends them: fields into $tmp/live.txt, times into $tmp/times.txt
capture() {
	local n=$1
	shift
	rm -f "$tmp/cap.pcap" "$tmp/ts.err"
	local f0
	f0=$(filtered_sockets "$nb")
	ip netns exec "$nb" timeout 30 tshark -q -B 64 -i "$b" -f udp -c "$n" -w "$tmp/cap.pcap" 2>"$tmp/ts.err" &
	local tp=$! rx0
	rx0=$(ip netns exec "$nb" cat /sys/class/net/"$b"/statistics/rx_packets)
	capture_ready "$nb" "$tmp/ts.err" "$f0" $tp ||
		{ bad "xdp-live $*: tshark did not start: $(cat "$tmp/ts.err")"; echo "stopped: every case captures"; exit 1; }
	# (a sender that failed sent nothing: the capture is not waited for)
	ip netns exec "$na" timeout 30 "$pg" -q -i "xdp-live:$a" -n "$n" ${RATE:+--ratep $RATE} "$@" >"$tmp/out" 2>&1 ||
		{ bad "xdp-live $*: exit $?: $(tail -3 "$tmp/out")"; kill $tp; }
	wait $tp || bad "xdp-live $*: tshark caught $(tshark -r "$tmp/cap.pcap" 2>/dev/null | wc -l) of $n frames ($b received $(($(ip netns exec "$nb" cat /sys/class/net/"$b"/statistics/rx_packets) - rx0)))"
	fields "$tmp/cap.pcap" >"$tmp/live.txt"
	# the capture's second and microsecond, the packet's (its pktgen header)
	tshark -r "$tmp/cap.pcap" -T fields -e frame.time_epoch -e udp.payload 2>/dev/null |
		awk "$HEX"' { split($1, t, "."); print t[1], substr(t[2] "000000", 1, 6) + 0, hex(substr($2, 17, 8)), hex(substr($2, 25, 8)) }' >"$tmp/times.txt"
}
reference() {
	ip netns exec "$na" "$pg" -q -i "pcap:$tmp/ref.pcap" -n "$1" "${@:2}" >/dev/null 2>&1 ||
		bad "pcap: $*: exit $?"
	fields "$tmp/ref.pcap" >"$tmp/ref.txt"
}
# no frame with a bad checksum (column 11: ip.checksum.status, 15: udp.checksum.status; 0 is bad)
sums_good() {
	awk -F'\t' -v what="$1" '($11 != "" && $11 != 1) || $15 == "0" {
		print "FAIL: " what ": a bad checksum: " $0; bad = 1 } END { exit bad }' "$tmp/live.txt" ||
		fail=$((fail + 1))
}
# the send times: never after the capture saw the frame (the times are never
# ahead), within 2 s of it, and in order (the clock never runs back)
times_sane() {
	awk -v what="$1" '$3 != 0 { d = ($1 - $3) * 1000000 + $2 - $4; t = $3 * 1000000 + $4
		if (d < 0 || d > 2000000 || t < last) { printf "FAIL: %s: sent at %d.%06d (the one before at %s), seen at %d.%06d\n", what, $3, $4, prev, $1, $2; bad = 1; exit }
		last = t; prev = sprintf("%d.%06d", $3, $4) } END { exit bad }' "$tmp/times.txt" || fail=$((fail + 1))
}
N=40
base=(-s 100 -m 02:00:00:00:00:02 "src_mac 02:00:00:00:00:01" "src_min 198.18.0.1" "src_max 198.18.0.1")
cases=(
	"plain|-d 198.18.0.2"
	"ranges|dst_min 198.18.0.2|dst_max 198.18.0.9|src_max 198.18.0.4|udp_src_min 100|udp_src_max 105|udp_dst_min 7|udp_dst_max 9|dst_mac_count 3|src_mac_count 2|flag UDPCSUM"
	"flows|dst_min 198.18.0.2|dst_max 198.18.0.30|flows 4|flowlen 3|flag FLOW_SEQ"
	"vlan, no timestamp, 1000 B|-d 198.18.0.2|vlan_id 5|-s|1000|flag NO_TIMESTAMP|flag UDPCSUM"
	"IPv6|-6|-d|fd00::2|src6 fd00::1|flag UDPCSUM|udp_dst_min 20|udp_dst_max 24"
	"IPv6, nothing changing but the pktgen header|-6|-d|fd00::2|src6 fd00::1|flag UDPCSUM"
	"MPLS, QinQ, odd length|-d 198.18.0.2|mpls 0001000a,00002000|svlan_id 7|vlan_id 9|-s|101|flag UDPCSUM"
	"unpaced: one call, batches of 64 on recycled frames|-d 198.18.0.2|src_max 198.18.0.9|udp_dst_min 5|udp_dst_max 60|dst_mac_count 7|flows 3|flowlen 5|flag FLOW_SEQ|flag UDPCSUM|@unpaced"
)
for c in "${cases[@]}"; do
	IFS='|' read -r -a args <<<"$c"
	what=${args[0]}
	args=("${args[@]:1}")
	n=$N RATE=20000 # one packet per call, on time
	if [ "${args[-1]}" = @unpaced ]; then
		unset 'args[-1]'
		n=500 RATE="" # one call of 500: the kernel's batches reuse frames the program changed
	fi
	# "-d X" split in two words
	ex=()
	for w in "${args[@]}"; do
		case $w in "-d "*) ex+=(-d "${w#-d }") ;; *) ex+=("$w") ;; esac
	done
	capture $n "${base[@]}" "${ex[@]}"
	reference $n "${base[@]}" "${ex[@]}"
	before=$fail
	if ! diff -q "$tmp/ref.txt" "$tmp/live.txt" >/dev/null || [ "$(wc -l <"$tmp/live.txt")" != $n ]; then
		bad "$what: the frames differ from pcap:'s"
		diff "$tmp/ref.txt" "$tmp/live.txt" | head -6
	fi
	sums_good "$what"
	times_sane "$what"
	[ $fail = "$before" ] && echo "frames, $what: $n equal to pcap:'s"
done
# random fields: within their ranges, checksums good, sequence in order
RATE=20000 capture $N "${base[@]}" "src_min 198.18.0.10" "src_max 198.18.0.20" "flag IPSRC_RND" \
	"dst_min 198.18.0.40" "dst_max 198.18.0.50" "flag IPDST_RND" \
	"udp_src_min 200" "udp_src_max 210" "flag UDPSRC_RND" "udp_dst_min 1000" "udp_dst_max 1010" \
	"flag UDPDST_RND" "src_mac_count 5" "flag MACSRC_RND" "dst_mac_count 3" "flag MACDST_RND" "flag UDPCSUM"
awk -F'\t' "$HEX"' { split($4, ip, "."); split($5, dip, "."); split($1, m, ":"); split($2, dm, ":")
	if (ip[4] < 10 || ip[4] >= 20 || dip[4] < 40 || dip[4] >= 50 || $12 < 200 || $12 >= 210 ||
	    $13 < 1000 || $13 >= 1010 || m[6] !~ /^0[1-5]$/ || dm[6] !~ /^0[2-4]$/ ||
	    hex(substr($NF, 9, 8)) != NR || substr($NF, 1, 8) != "be9be955") {
		print "FAIL: random: out of range or order: " $0; bad = 1; exit } } END { exit bad }' "$tmp/live.txt" ||
	fail=$((fail + 1))
sums_good random
[ "$(cut -f4 "$tmp/live.txt" | sort -u | wc -l)" -gt 2 ] || bad "random: the source never changed: $(cut -f4 "$tmp/live.txt" | sort -u)"
# random IPv6 destinations: (random | min) & max, as the kernel
RATE=20000 capture $N "${base[@]}" -6 "src6 fd00::1" "dst6_min fd00::2:0" "dst6_max fd00::2:ff" "flag UDPCSUM"
awk -F'\t' '$7 !~ /^fd00::2:[0-9a-f]+$/ && $7 != "fd00::2" { print "FAIL: random IPv6: " $0; bad = 1; exit } END { exit bad }' \
	"$tmp/live.txt" || fail=$((fail + 1))
sums_good "random IPv6"
[ "$(cut -f7 "$tmp/live.txt" | sort -u | wc -l)" -gt 2 ] || bad "random IPv6: the destination never changed"
[ $fail = 0 ] && echo "frames, random fields: in range"

# ---- sequence and timing: a paced run, every packet once ----
M=20000
start_rx "$tmp/rx.err" ip netns exec "$nb" timeout 60 \
	"$pg" --rx "packet:$b" -n $M --duration 30 --json >"$tmp/rx.json"
rxp=$!
wait_rx "$tmp/rx.err" $rxp || bad "paced run: the receiver did not start: $(cat "$tmp/rx.err")"
ip netns exec "$na" timeout 60 "$pg" -i "xdp-live:$a" -q -n $M --ratep 20000 -d 198.18.0.2 \
	-m 02:00:00:00:00:02 >/dev/null || bad "paced run: sender failed"
wait $rxp || bad "paced run: receiver exit $?"
r=$(cat "$tmp/rx.json")
for want in "\"packets\": $M," '"lost": 0,' '"reordered": 0,' '"duplicates": 0,' "\"lat_samples\": $M,"; do
	grep -qF "$want" <<<"$r" || bad "paced run: want $want in $r"
done
lmax=$(sed -n 's/.*"max": \([0-9]*\)}.*/\1/p' <<<"$r")
[ -n "$lmax" ] && [ "$lmax" -lt 1000000000 ] || bad "paced run: latency max $lmax ns: $r"
echo "paced run: $M packets once each, latency max $lmax ns"

# two threads, two queues: each sends its count, exactly
rx0=$(ip netns exec "$nb" cat /sys/class/net/"$b"/statistics/rx_packets)
out=$(ip netns exec "$na" timeout 60 "$pg" -i "xdp-live:$a" -t 2 -n 100000 -d 198.18.0.2 --json) ||
	bad "-t 2: sender failed: $out"
[ "$(grep -c '"packets": 100000,' <<<"$out")" = 2 ] || bad "-t 2: $out"
got=$(( $(ip netns exec "$nb" cat /sys/class/net/"$b"/statistics/rx_packets) - rx0 ))
[ "$got" -ge 200000 ] && [ "$got" -le 200010 ] || bad "-t 2: $b received $got packets, want 200000"
echo "two threads: 2 x 100000 sent, $got received"

# a stop in the middle of a long call (Ctrl-C, --duration): the program halts
# at once, and what the result says was sent is what arrived
for how in INT duration; do
	rx0=$(ip netns exec "$nb" cat /sys/class/net/"$b"/statistics/rx_packets)
	if [ $how = INT ]; then
		ip netns exec "$na" "$pg" -i "xdp-live:$a" -n 0 -d 198.18.0.2 --json >"$tmp/out" 2>&1 &
		sp=$!
		sleep 1.5
		kill -INT $sp
		wait $sp || bad "stopped by SIGINT: exit $?"
	else
		ip netns exec "$na" timeout 60 "$pg" -i "xdp-live:$a" -n 0 --duration 1.5 -d 198.18.0.2 \
			--json >"$tmp/out" 2>&1 || bad "stopped by --duration: exit $?"
	fi
	sent=$(json_num packets "$(cat "$tmp/out")")
	got=$(( $(ip netns exec "$nb" cat /sys/class/net/"$b"/statistics/rx_packets) - rx0 ))
	[ -n "$sent" ] && [ "$sent" -gt 100000 ] && [ "$got" -ge "$sent" ] && [ "$got" -le $((sent + 10)) ] ||
		bad "stopped by $how: sent ${sent:-?}, $b received $got: $(tail -3 "$tmp/out")"
	echo "stopped by $how mid-call: ${sent:-?} sent, $got received"
done
leftovers "normal ends"

# ---- refusals and errors ----
refuse() {
	local cmd=$1
	shift
	out=$(ip netns exec "$na" timeout 20 "$pg" -i "xdp-live:$a" -q -n 10 -d 198.18.0.2 "$@" --json 2>"$tmp/err")
	local rc=$?
	[ $rc = 3 ] && grep -q "cannot do $cmd .*use xdp:$a" "$tmp/err" && grep -q '"ok": false' <<<"$out" || bad "refuse $cmd: exit $rc: $(cat "$tmp/err") $out"
}
refuse clone_skb -c 5
refuse burst -b 8
refuse frags --frags 2
refuse imix_weights "imix_weights 64,7 1000,1"
refuse "min_pkt_size/max_pkt_size" "min_pkt_size 64" "max_pkt_size 128"
refuse TXSIZE_RND "flag TXSIZE_RND"
refuse VID_RND "vlan_id 5" "flag VID_RND"
refuse MPLS_RND "mpls 0001000a" "flag MPLS_RND"
refuse QUEUE_MAP_RND "flag QUEUE_MAP_RND"
refuse "queue_map_min/queue_map_max" "queue_map_min 0" "queue_map_max 1"
refuse SVID_RND "svlan_id 3" "vlan_id 4" "flag SVID_RND"
refuse xmit_mode "xmit_mode queue_xmit"
echo "refusals: each named"
check_err() {
	local rc_want=$1 want=$2
	shift 2
	ip netns exec "$na" timeout 20 "$pg" -q -n 10 "$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc = "$rc_want" ] && grep -q "$want" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -le 2 ] ||
		bad "$*: exit $rc, stderr: $(cat "$tmp/err")"
}
check_err 5 "no such interface" -i xdp-live:nosuch0
check_err 5 "not an interface name" -i "xdp-live:$a:1"
check_err 5 "not an Ethernet interface" -i xdp-live:lo
ip -n "$na" link set "$a" down
check_err 5 "is down (ip link set $a up)" -i "xdp-live:$a"
ip -n "$na" link set "$a" up
check_err 3 "pkt_size 1600 does not fit the MTU 1500" -i "xdp-live:$a" -s 1600
ip netns exec "$na" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$pg" -q -n 10 -i "xdp-live:$a" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && grep -q "needs root" "$tmp/err" || bad "unprivileged: exit $rc: $(cat "$tmp/err")"
# a kernel before 5.18: its BPF_PROG_RUN says EINVAL to the live-frames flag; one whose policy
# refuses (a lockdown, a BPF LSM) says EPERM (helpers/refuse makes every test run say so
# through seccomp)
refuser=$(dirname "$0")/helpers/refuse
for e in "EINVAL:this kernel does not run XDP live frames .*: use xdp:$a$" \
	"EPERM:live frames refused by this kernel (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES: EPERM; .*): use xdp:$a$"; do
	ip netns exec "$na" timeout 20 "$refuser" live-frames "${e%%:*}" "$pg" -q -n 10 -i "xdp-live:$a" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc = 77 ]; then
		echo "no live frames, ${e%%:*}: not tried: $(cat "$tmp/err")" # (no seccomp filter for this machine)
	else
		[ $rc = 5 ] && grep -q "${e#*:}" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ] ||
			bad "no live frames, ${e%%:*}: exit $rc: $(cat "$tmp/err")"
	fi
done
echo "errors: one line each"

# this test on a kernel that refuses live frames (EPERM): one probe, then a skip within 10 s
# that says why (USKB_LIVE_INNER: the run inside does not try this again)
if [ -z "${USKB_LIVE_INNER:-}" ]; then
	t0=${EPOCHREALTIME/./}
	USKB_LIVE_INNER=1 timeout -k 5 60 "$refuser" live-frames EPERM "$0" >"$tmp/inner" 2>&1
	rc=$? ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	if [ $rc = 77 ] && grep -q "^refuse: " "$tmp/inner"; then
		echo "skip on a refusing kernel: not tried: $(cat "$tmp/inner")"
	elif [ $rc = 77 ] && [ $ms -lt 10000 ] &&
		[ "$(tail -1 "$tmp/inner")" = "skipped: this kernel refuses live-frames BPF_PROG_RUN (EPERM)" ]; then
		echo "skip on a refusing kernel (EPERM): exit 77 in $ms ms: $(tail -1 "$tmp/inner")"
	else
		bad "skip on a refusing kernel: exit $rc in $ms ms: $(tail -3 "$tmp/inner")"
	fi
fi

# ---- Ctrl-C and kill -9 mid-run: nothing stays ----
for sig in INT KILL; do
	ip netns exec "$na" "$pg" -i "xdp-live:$a" -q -n 0 -d 198.18.0.2 >"$tmp/out" 2>&1 &
	sp=$!
	for _ in $(seq 50); do bpftool prog show 2>/dev/null | grep -q pktgen_live && break; sleep 0.1; done
	bpftool prog show 2>/dev/null | grep -q pktgen_live || bad "SIG$sig: no program loaded while sending"
	kill -$sig $sp
	wait $sp 2>/dev/null
	rc=$?
	[ $sig = KILL ] || [ $rc = 0 ] || bad "SIGINT: exit $rc: $(tail -2 "$tmp/out")"
	[ $sig = KILL ] || grep -q "^Result: OK" "$tmp/out" || bad "SIGINT: no result: $(tail -3 "$tmp/out")"
	leftovers "SIG$sig"
done
echo "Ctrl-C and kill -9: nothing left"
echo "$fail failed"
[ $fail = 0 ]
