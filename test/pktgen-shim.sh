#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# share/pktgen/functions.sh and parameters.sh drive uskb-pktgen the way the
# kernel's samples/pktgen scripts drive /proc/net/pktgen: a script written in
# the samples' style (reset, rem_device_all, add_device DEV@thread, pg_set
# ..., pg_ctrl start) runs and reports; a refused command stops it with
# exit 5 and the kernel's words; --script files do the same.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ -f "$root/share/pktgen/functions.sh" ] || root=$(cd "$here/../../.." && pwd)
export USKB_PKTGEN=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
tmp=$(mktemp -d /tmp/uskb-shim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$root/share/pktgen/functions.sh" "$root/share/pktgen/parameters.sh" "$tmp/"
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# a sample in the kernel samples' style: burst, one flow per thread
cat >"$tmp/sample.sh" <<'SAMPLE'
#!/bin/bash
basedir=`dirname $0`
source ${basedir}/functions.sh
root_check_run_with_sudo "$@"
source ${basedir}/parameters.sh
trap_exit
[ -z "$DEST_IP" ] && DEST_IP="198.18.0.42"
[ -z "$DST_MAC" ] && DST_MAC="90:e2:ba:ff:ff:ff"
[ -z "$BURST" ] && BURST=32
[ -z "$CLONE_SKB" ] && CLONE_SKB="0"
[ -z "$COUNT" ] && COUNT="0"
validate_addr${IP6} $DEST_IP
read -r DST_MIN DST_MAX <<< $(parse_addr${IP6} $DEST_IP)
if [ -n "$DST_PORT" ]; then
    read -r UDP_DST_MIN UDP_DST_MAX <<< $(parse_ports $DST_PORT)
    validate_ports $UDP_DST_MIN $UDP_DST_MAX
fi
[ -z "$APPEND" ] && pg_ctrl "reset"
for ((thread = $F_THREAD; thread <= $L_THREAD; thread++)); do
    dev=${DEV}@${thread}
    [ -z "$APPEND" ] && pg_thread $thread "rem_device_all"
    pg_thread $thread "add_device" $dev
    pg_set $dev "flag QUEUE_MAP_CPU"
    pg_set $dev "count $COUNT"
    pg_set $dev "clone_skb $CLONE_SKB"
    pg_set $dev "pkt_size $PKT_SIZE"
    pg_set $dev "delay $DELAY"
    pg_set $dev "flag NO_TIMESTAMP"
    pg_set $dev "dst_mac $DST_MAC"
    pg_set $dev "dst${IP6}_min $DST_MIN"
    pg_set $dev "dst${IP6}_max $DST_MAX"
    pg_set $dev "src_min 198.18.$((thread + 1)).1"
    if [ -n "$DST_PORT" ]; then
        pg_set $dev "flag UDPDST_RND"
        pg_set $dev "udp_dst_min $UDP_DST_MIN"
        pg_set $dev "udp_dst_max $UDP_DST_MAX"
    fi
    [ ! -z "$UDP_CSUM" ] && pg_set $dev "flag UDPCSUM"
    pg_set $dev "burst $BURST"
    [ -n "$EXTRA" ] && pg_set $dev "$EXTRA"
done
echo "Running... ctrl^C to stop" >&2
pg_ctrl "start"
for ((thread = $F_THREAD; thread <= $L_THREAD; thread++)); do
    dev=${DEV}@${thread}
    echo "Device: $dev"
    cat /proc/net/pktgen/$dev | grep -A2 "Result:"
done
SAMPLE
chmod +x "$tmp/sample.sh"

out=$("$tmp/sample.sh" -i null -t 2 -n 5000 -d 198.18.0.0/30 -p 9-19 -k 2>"$tmp/err")
rc=$?
[ $rc -eq 0 ] || bad "sample exit $rc: $(cat "$tmp/err")"
# two status blocks, then the two result lines the sample's cat shows again; nothing else
[ "$(grep -c '^Result: OK: ' <<<"$out")" = 4 ] || bad "2 + 2 result lines wanted: $out"
grep -q ' > ' <<<"$out" && bad "the commands were echoed: $out"
grep -q 'pkts-sofar: 5000  errors: 0' <<<"$out" || bad "5000 packets per device"
grep -q 'dst_min: 198.18.0.0  dst_max: 198.18.0.3' <<<"$out" || bad "CIDR range not applied"
grep -q 'udp_dst_min: 9  udp_dst_max: 19' <<<"$out" || bad "port range not applied"
grep -q 'Flags: UDPDST_RND  UDPCSUM  NO_TIMESTAMP  QUEUE_MAP_CPU' <<<"$out" || bad "flags: $(grep Flags <<<"$out")"
grep -q 'burst: 32' <<<"$out" || bad "burst"
grep -q 'Device: null@1' <<<"$out" || bad "sample did not finish"
# its last line, "cat /proc/net/pktgen/$dev | grep -A2 Result:", reads what the run left
[ "$(grep -A1 '^Device: null@1$' <<<"$out" | tail -n 1 | cut -c1-12)" = "Result: OK: " ] ||
	bad "cat /proc/net/pktgen/null@1 after the run: $(grep -A3 '^Device: null@1$' <<<"$out")"
# other reads are cat's own; a device that never ran is missing, as in /proc
(
	source "$tmp/functions.sh"
	[ "$(cat "$tmp/sample.sh" | head -n 1)" = "#!/bin/bash" ] || echo "FAIL: cat of a file"
	[ "$(echo piped | cat)" = piped ] || echo "FAIL: cat of its standard input"
	cat /proc/net/pktgen/nodev 2>&1 | grep -q "No such file" || echo "FAIL: cat of a missing device"
) | grep FAIL && bad "the shim's cat"
ls /tmp/uskb-pktgen-script.* >/dev/null 2>&1 && [ -n "$(find /tmp -maxdepth 1 -name 'uskb-pktgen-script.*' -newer "$tmp/sample.sh")" ] &&
	bad "script file left behind"

# a refused command: exit 5, the reply on stderr, nothing sent
EXTRA="flag BOGUS" "$tmp/sample.sh" -i null -n 10 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 5 ] || bad "bad flag: exit $rc, want 5"
grep -q 'Flag -:BOGUS:- unknown' "$tmp/err" || bad "bad flag: no kernel reply in: $(cat "$tmp/err")"
grep -q 'ERROR: Write error' "$tmp/err" || bad "bad flag: no write error"
grep -q 'Result: OK' "$tmp/out" && bad "bad flag: it still ran"
"$tmp/sample.sh" -i null -p 0-70000 >/dev/null 2>"$tmp/err"
[ $? -eq 5 ] && grep -q 'Invalid port' "$tmp/err" || bad "bad ports accepted"
"$tmp/sample.sh" -i null -d 198.18.0.300 >/dev/null 2>"$tmp/err"
[ $? -eq 5 ] && grep -q 'Invalid IPv4' "$tmp/err" || bad "bad address accepted"
"$tmp/sample.sh" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'Please specify output device' "$tmp/err" || bad "missing -i accepted"

# IPv6 through the shim
out=$("$tmp/sample.sh" -i null -6 -d fd00::/120 -n 1000 2>/dev/null) || bad "ipv6 sample failed"
grep -q 'Flags: IPV6' <<<"$out" || bad "ipv6 sample: no IPV6 flag"
grep -q 'min_daddr: fd00::  max_daddr: fd00::ff' <<<"$out" || bad "ipv6 range not applied"

# --script directly, with a pcap device, checked by reading the file back
cat >"$tmp/s.pg" <<SCRIPT
pg_ctrl reset
pg_thread 0 rem_device_all
pg_thread 0 add_device pcap:$tmp/s.pcap
pg_set pcap:$tmp/s.pcap "count 7"
pg_set pcap:$tmp/s.pcap "pkt_size 128"
pg_ctrl start
SCRIPT
"$USKB_PKTGEN" --script "$tmp/s.pg" -q >"$tmp/out" || bad "--script run"
# pcap: 24-byte header, then 7 records of 16 + 128 bytes
[ "$(stat -c %s "$tmp/s.pcap")" = $((24 + 7 * (16 + 128))) ] || bad "--script pcap size $(stat -c %s "$tmp/s.pcap")"
printf 'pg_set nodev "count 1"\n' >"$tmp/bad.pg"
"$USKB_PKTGEN" --script "$tmp/bad.pg" -q >/dev/null 2>"$tmp/err"
[ $? -eq 5 ] || bad "--script with an unknown device file"
printf 'pg_frob 1\n' >"$tmp/bad.pg"
"$USKB_PKTGEN" --script "$tmp/bad.pg" -q >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q 'unknown line' "$tmp/err" || bad "--script with an unknown line"

echo "$fail failed"
[ $fail -eq 0 ]
