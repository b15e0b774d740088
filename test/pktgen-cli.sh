#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# uskb-pktgen's command line and --script against bad input: numbers that
# strtoul/strtod would misread are refused, a script line of any length is
# one line, a script that cannot be read fails, and --dry-run writes every
# command without sending. A tcp: peer that stops reading costs the frames
# it did not take, counted lost (exit 3), in copy, zc and uring mode.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pg=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
tmp=$(mktemp -d /tmp/uskb-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# refused with exit 1 and a line naming the option and the value
refused() {
	local want=$1
	shift
	timeout 10 "$pg" -i null -q "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 1 ] && grep -qF -- "$want" "$tmp/err" ||
		bad "$*: exit $rc, want 1 and \"$want\": $(cat "$tmp/err")"
}
refused '-n: " -1" is not a number' -n " -1"
refused '-w: " -1" is not a number' -w " -1"
refused '-n: "+5" is not a number' -n "+5"
refused '--rate: "0x10" is not a positive number' --rate 0x10
refused '--ratep: "inf" is not a positive number' --ratep inf
refused '--duration: "nan" is not a positive number' --duration nan
refused '--duration: " 1" is not a positive number' --duration " 1"
# and good ones still work
out=$("$pg" -i null -q -n 7 --json)
grep -q '"packets": 7,' <<<"$out" || bad "-n 7: $out"

# a script whose comment is longer than any buffer: still one line, nothing runs from its tail
long=$(head -c 5000 /dev/zero | tr '\0' x)
cat >"$tmp/run.pg" <<EOF
pg_ctrl "reset"
pg_thread 0 "rem_device_all"
pg_thread 0 "add_device" null
# $long pg_set null "count 99"
pg_set null "count 5"
pg_ctrl "start"
EOF
out=$("$pg" --script "$tmp/run.pg" -q --json 2>"$tmp/err")
grep -q '"packets": 5,' <<<"$out" || bad "--script with a long comment: $out $(cat "$tmp/err")"
# errors name the right line after the long one
printf 'pg_ctrl "reset"\n# %s\nbogus line\n' "$long" >"$tmp/bad.pg"
"$pg" --script "$tmp/bad.pg" >/dev/null 2>"$tmp/err"
grep -q "bad.pg:3: unknown line" "$tmp/err" || bad "line number after a long line: $(cat "$tmp/err")"
# a directory, a missing file: an error and exit 1
"$pg" --script "$tmp" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q "Is a directory" "$tmp/err" || bad "--script DIR: exit $rc: $(cat "$tmp/err")"
"$pg" --script "$tmp/none.pg" >/dev/null 2>"$tmp/err"
[ $? = 1 ] || bad "--script of a missing file exits 0"

# --dry-run writes every command as functions.sh would, and sends nothing
out=$("$pg" --script "$tmp/run.pg" --dry-run 2>&1)
want='reset > pgctrl
rem_device_all > kpktgend_0
add_device null > kpktgend_0
count 5 > null
start > pgctrl'
[ "$out" = "$want" ] || bad "--dry-run wrote: $out"
# the example script in examples/: checks, and runs
root=$(cd "$here/../.." && pwd)
[ -f "$root/examples/run.pg" ] || root=$(cd "$here/../../.." && pwd)
out=$("$pg" --script "$root/examples/run.pg" --dry-run 2>&1)
[ "$(tail -n 1 <<<"$out")" = "start > pgctrl" ] || bad "examples/run.pg --dry-run: $out"
[ "$("$pg" --script "$root/examples/run.pg" -q | grep -c '^Result: OK: ')" = 2 ] || bad "examples/run.pg did not run two devices"

# a capture that cannot be written fails at once (its header is written at open): exit 5, the reason
for f in /dev/full /proc/version; do
	out=$(timeout 10 "$pg" -i "pcap:$f" -n 1000 -q --json 2>"$tmp/err")
	rc=$?
	[ $rc = 5 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "pcap: cannot write $f" "$tmp/err" ||
		bad "pcap:$f: exit $rc: $out $(cat "$tmp/err")"
done
timeout 10 "$pg" -i null -n 10 >/dev/full 2>"$tmp/err"
rc=$?
[ $rc = 3 ] && grep -q "writing the report" "$tmp/err" || bad "report to /dev/full: exit $rc"

# --rx on a device that cannot receive opens nothing: an existing capture stays whole
timeout 10 "$pg" -i "pcap:$tmp/keep.pcap" -n 3 -q >/dev/null
size=$(stat -c %s "$tmp/keep.pcap")
timeout 10 "$pg" --rx "pcap:$tmp/keep.pcap" -n 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && grep -q "cannot receive" "$tmp/err" && [ "$(stat -c %s "$tmp/keep.pcap")" = "$size" ] ||
	bad "--rx pcap: exit $rc, $(stat -c %s "$tmp/keep.pcap") of $size bytes left: $(cat "$tmp/err")"
# a device that cannot be opened: its reason is the first line, the only one without -v
timeout 10 "$pg" -i nosuch9 -n 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "nosuch9: no such interface" "$tmp/err" ||
	bad "-i nosuch9: exit $rc: $(cat "$tmp/err")"
# --rx on an interface that is not there says so, not that its kind cannot receive
timeout 10 "$pg" --rx nosuch9 -n 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "nosuch9: no such interface" "$tmp/err" ||
	bad "--rx nosuch9: exit $rc: $(cat "$tmp/err")"
printf 'pg_thread 99 "add_device" null\n' >"$tmp/t99.pg"
timeout 10 "$pg" --script "$tmp/t99.pg" >/dev/null 2>"$tmp/err"
grep -q "no thread kpktgend_99" "$tmp/err" && ! grep -q "no error" "$tmp/err" ||
	bad "pg_thread 99: $(cat "$tmp/err")"

# a raw command means what it means to the kernel: "dst" after the default -d is one address
out=$(timeout 10 "$pg" -i null -n 20 "dst 198.18.0.2")
grep -q 'dst_min: 198.18.0.2  dst_max: $' <<<"$out" && grep -q 'cur_daddr: 198.18.0.2$' <<<"$out" ||
	bad "raw dst after the default -d: $(grep 'dst_m\|cur_daddr' <<<"$out")"
out=$(timeout 10 "$pg" -i null -n 20 -d 198.18.0.0/30)
grep -q 'dst_min: 198.18.0.0  dst_max: 198.18.0.3$' <<<"$out" || bad "-d range: $(grep dst_m <<<"$out")"

# no device: the hint names every kind
timeout 10 "$pg" -n 1 >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "null, pcap:FILE, packet:IFNAME, xdp:IFNAME" "$tmp/err" || bad "no device: $(cat "$tmp/err")"

# device names: too long or holding a separator are refused, never cut, and make no file
mkdir "$tmp/names"
long=$(printf 'n%.0s' $(seq 200))
refused "-i: the device name has $((5 + ${#tmp} + 7 + 200)) characters; at most 127" -i "pcap:$tmp/names/$long"
refused "-i: the device name has 130 characters; at most 125 can be used" -t 3 \
	-i "pcap:$tmp/names/${long:0:$((130 - 5 - ${#tmp} - 7))}"
refused "-i: a device name cannot hold a space" -i "pcap:$tmp/names/a b"
printf 'pg_thread 0 "add_device pcap:%s/names/%s"\n' "$tmp" "$long" >"$tmp/long.pg"
timeout 10 "$pg" --script "$tmp/long.pg" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && grep -q "device name longer than 127 characters" "$tmp/err" && ! grep -q "no error" "$tmp/err" ||
	bad "--script add_device of 200 characters: exit $rc: $(cat "$tmp/err")"
[ -z "$(ls "$tmp/names")" ] || bad "a refused name made a file: $(ls "$tmp/names")"
# --json is valid UTF-8 whatever bytes a name holds: a bad byte becomes U+FFFD, a control \u00XX
out=$(timeout 10 "$pg" -i "pcap:$tmp/names/"$'caf\xc3\xa9\x01\xff' -n 1 -q --json)
iconv -f UTF-8 -t UTF-8 <<<"$out" >/dev/null 2>&1 && grep -qF 'café\u0001\ufffd"' <<<"$out" ||
	bad "--json of a name with bad UTF-8: $out"

# a tcp: peer that stops reading: at the end (SIGINT) the run gives it 2 s, then counts what it
# did not take as lost, "ok": false, exit 3 (the peer's 4 KB window holds no whole 9000-byte frame)
for mode in "" ,zc ,uring; do
	port=$((20000 + $$ % 12000))
	"$here/helpers/stall-peer" $port 30 >"$tmp/stall" &
	sp=$!
	for _ in $(seq 50); do grep -q ready "$tmp/stall" && break; sleep 0.1; done
	"$pg" -q -i "tcp:127.0.0.1:$port$mode" -n 100000 -s 9000 --json >"$tmp/out" 2>"$tmp/err" &
	p=$!
	sleep 1
	kill -INT $p
	wait $p
	rc=$?
	kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	out=$(cat "$tmp/out")
	# a mode this kernel refuses (uring) is left out
	grep -q "refused by this kernel" "$tmp/err" && { echo "tcp:$mode: $(tail -n 1 "$tmp/err")"; continue; }
	pk=$(sed -n 's/.*"packets": \([0-9]*\).*/\1/p' <<<"$out")
	lost=$(sed -n 's/.*"lost": \([0-9]*\).*/\1/p' <<<"$out")
	[ $rc = 3 ] && [ -n "$pk" ] && [ "$pk" -gt 0 ] && [ "$lost" = "$pk" ] && grep -q '"ok": false' <<<"$out" &&
		grep -q "the peer took no more within 2000 ms: connection reset" "$tmp/err" ||
		bad "tcp:$mode to a peer that stopped reading: exit $rc, packets $pk, lost $lost: $(cat "$tmp/err")"
done

# a device that does not open: its own reason in one line, exit 5 (never "no thread kpktgend_0")
for spec in "pcap:$tmp/nonexistent/x.pcap" "unix:$tmp/nonexistent/s" "udp:nohost.invalid:9"; do
	timeout 20 "$pg" -i "$spec" -n 5 >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc = 5 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^uskb-pktgen: ${spec%%:*}:" "$tmp/err" &&
		! grep -q "no thread" "$tmp/err" || bad "-i $spec: exit $rc: $(cat "$tmp/err")"
done
grep -q "No such file or directory" <<<"$(timeout 20 "$pg" -i "pcap:$tmp/nonexistent/x.pcap" -n 5 2>&1)" ||
	bad "pcap: in a missing directory does not say so"

# messages: a range gives only values it takes; a socket path that is a directory says so;
# the MTU only where it may be the cause; no CPU figure per GB for a run too short to measure
refused '-t: "0" is not a number from 1 to 4096' -t 0
timeout 10 "$pg" --rx "unix:$tmp,listen" -n 1 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && grep -q "something other than a socket is there (a directory or a file): left alone" "$tmp/err" ||
	bad "--rx unix:DIR,listen: exit $rc: $(cat "$tmp/err")"
timeout 10 "$pg" -i udp:127.0.0.1:9 -n 50 >/dev/null 2>"$tmp/err"
grep -q "Connection refused" "$tmp/err" && ! grep -q "MTU" "$tmp/err" || bad "udp: refused: $(cat "$tmp/err")"
out=$("$pg" -i null -n 10)
grep -q "too short a run for a figure per GB" <<<"$out" && ! grep -q "CPU-seconds per GB" <<<"$out" ||
	bad "a 10-packet run gives a CPU figure: $(tail -n 1 <<<"$out")"
grep -q '"cpu_s_per_gb": null' <<<"$("$pg" -i null -n 10 --json)" || bad "--json of a 10-packet run: cpu_s_per_gb not null"

# --rx against a burst of 4 (one skb, one number, sent four times): duplicates, not loss
port=$((20000 + ($$ + 7) % 12000))
"$pg" --rx "udp:127.0.0.1:$port,listen" -n 1000 --duration 20 --json -q >"$tmp/rx" 2>&1 &
rp=$!
sleep 0.3
"$pg" -q -i "udp:127.0.0.1:$port" -b 4 -n 1000 --ratep 2000 >/dev/null
wait $rp
out=$(cat "$tmp/rx")
grep -q '"packets": 1000,' <<<"$out" && grep -q '"lost": 0,' <<<"$out" && grep -q '"duplicates": 750' <<<"$out" ||
	bad "--rx of -b 4 -n 1000: want 1000 packets, 750 duplicates, 0 lost: $out"

[ $fail = 0 ] || { echo "$fail failed"; exit 1; }
echo "cli: bad numbers refused, long script lines, unreadable scripts, --dry-run"
