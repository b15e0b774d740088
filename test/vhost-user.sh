#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# uskb-vhost against a real vhost-user frontend: DPDK's virtio-user in
# dpdk-testpmd (txonly), which connects to the backend's socket as a guest
# would (QEMU speaks the same protocol):
#  - 1000-byte frames to pcap: every frame testpmd counts as sent is in the
#    pcap, byte for byte the UDP frame txonly builds (tshark reads them);
#  - to null (a zero-copy device): every 1000-byte frame goes in place and
#    is completed; 64-byte frames are copied (under the copy break), and
#    --zcopy off copies everything, each counted by its reason;
#  - a second connection after the first went: the counters go on;
#  - the guest's receive: uskb-pktgen sends to the backend's udp: device,
#    and testpmd (rxonly) counts every frame in its virtio-user port;
#  - the lower device fails (a tcp: peer killed mid-run): a line says why,
#    the drops are counted, and the exit is 1;
#  - frames abandoned: a tcp:,zc peer that never reads holds the chains
#    when the frontend goes; at a stop they are counted (abandoned), said,
#    and the exit is 1;
#  - bad options give one line and exit 2 (-t 0 and -n 0 among them); a
#    second backend on a live socket is refused (exit 2) and the first serves
#    on; a killed backend's socket is replaced; a file there is left alone;
#    no leak (exit 0).
# No root needed; skips (77) without dpdk-testpmd or tshark.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.bash"
vht=${USKB_VHOST:-$here/../tools/uskb-vhost}
command -v dpdk-testpmd >/dev/null || { echo "no dpdk-testpmd (scripts/deps.sh --bench)"; exit 77; }
command -v tshark >/dev/null || { echo "no tshark (scripts/deps.sh)"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-vhost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# the backend's counter KEY in its latest stats line (--stats 0.2: one every 0.2 s)
vh_now() { json_num "$1" "$(tail -n 1 "$tmp/vh.json")"; }
# wait until the backend's counter KEY reaches N, while PID (a peer) and the backend run
vh_wait() { counter_wait "$tmp/vh.json" "$1" "$2" "$3" "$vp"; }
# wait (10 s at most) for a stats line written after the call that shows no guest connected:
# the one before has gone and all it sent is counted; $base: that line's packets
vh_idle() {
	local n0 line
	n0=$(wc -l <"$tmp/vh.json")
	for _ in $(seq 100); do
		line=$(tail -n +$((n0 + 1)) "$tmp/vh.json" | grep '"connected": false.*}}$' | tail -n 1)
		[ -n "$line" ] && base=$(json_num packets "$line") && return 0
		kill -0 "$vp" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# testpmd as the guest: txonly frames of SIZE bytes until the backend has taken N more
# (or ended: --count); its TX-packets in $sent. It counts a frame once it is in the ring;
# when it stops, GET_VRING_BASE stops the ring, and up to a ring's worth (256) it made
# available may never be taken.
RING=256
# (a third argument: the backend goes first, and testpmd's failure to stop its port is expected)
guest() {
	local size=$1 n=$2 goes=${3:-}
	sent=0
	vh_idle || { bad "the backend is not idle before the guest's frames of $size bytes: $(cat "$tmp/vh.err")"; return; }
	testpmd_start "$tmp/tp" "$tmp/vh.sock" --forward-mode=txonly --txpkts="$size"
	vh_wait packets $((base + n)) $tpp || [ -n "$goes" ] ||
		bad "the guest's $n frames of $size bytes: the backend took $(($(vh_now packets) - base))"
	testpmd_stop || [ -n "$goes" ] || { bad "testpmd failed: $(tail -3 "$tmp/tp.out")"; return; }
	# a guest that never got going: every later case would fail alike
	grep -q "Press enter to exit" "$tmp/tp.out" ||
		{ bad "testpmd never started forwarding: $(tail -3 "$tmp/tp.out")"; echo "(stopped: every case needs it)"; exit 1; }
	sent=$(sed -n 's/.*TX-packets: *\([0-9]*\).*/\1/p' "$tmp/tp.out" | head -1)
	[ "${sent:-0}" -gt 1000 ] || bad "testpmd sent ${sent:-nothing}: $(tail -3 "$tmp/tp.out")"
}
# N (the backend's count) is within a ring of WANT (testpmd's), never above it
near() { [ -n "$1" ] && [ "$1" -le "$2" ] && [ "$1" -ge $(($2 - $3 * RING)) ]; }
# uskb-vhost in the background until stopped (SIGINT); its JSON in $tmp/vh.json
vhost_start() {
	rm -f "$tmp/vh.sock"
	# (-k 60: a sanitizer's exit may be slow; vhost_stop shows the stacks of one that lingers)
	timeout -k 60 180 "$vht" -s "$tmp/vh.sock" --stats 0.2 --json "$@" >"$tmp/vh.json" 2>"$tmp/vh.err" &
	vp=$!
	for _ in $(seq 50); do
		[ -S "$tmp/vh.sock" ] && return 0
		kill -0 $vp 2>/dev/null || break
		sleep 0.1
	done
	bad "uskb-vhost $* did not start: $(cat "$tmp/vh.err")"
	echo "stopped: every case serves a guest"
	exit 1
}
# (timeout -k: a backend still running 60 s after the SIGINT is killed, and exits 137; gdb,
# from scripts/deps.sh, shows where it was 8 s after the SIGINT)
# vhost_end NAME: SIGINT, then its exit status in $rc and its last line in $final; a backend
# that has not ended 8 s after the SIGINT shows its threads' stacks, to say where
vhost_end() {
	local pid
	pid=$(pgrep -P $vp | head -1) # uskb-vhost itself, under timeout
	kill -INT $vp
	for _ in $(seq 80); do kill -0 $vp 2>/dev/null || break; sleep 0.1; done
	if kill -0 $vp 2>/dev/null && [ -n "$pid" ]; then
		echo "$1: uskb-vhost (pid $pid) still runs 8 s after SIGINT: $(tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null)"
		if command -v gdb >/dev/null; then
			gdb -p "$pid" -batch -ex "thread apply all bt 15" 2>/dev/null | grep -E '^#|^Thread' | head -40
		else
			cat /proc/$pid/task/*/stack /proc/$pid/task/*/wchan 2>/dev/null | head -20
		fi
	fi
	wait $vp
	rc=$?
	final=$(grep '"final": true' "$tmp/vh.json")
}
vhost_stop() {
	vhost_end "$1"
	[ $rc = 0 ] || bad "$1: uskb-vhost exit $rc: $(cat "$tmp/vh.err")"
}

# ---- to pcap: the frames, byte for byte ----
# (--count: a whole run's frames would make a pcap of hundreds of MB)
vhost_start -d "pcap:$tmp/out.pcap" --count 20000
guest 1000 20000 goes
wait $vp || bad "pcap: uskb-vhost exit $?: $(cat "$tmp/vh.err")"
final=$(grep '"final": true' "$tmp/vh.json")
pk=$(json_num packets "$final")
[ "$pk" = 20000 ] && [ "$sent" -ge 20000 ] || bad "pcap: testpmd sent $sent, uskb-vhost took $pk of 20000: $final"
[ "$(json_num nozc "$final")" = "$pk" ] || bad "pcap: a device without zero copy copies each frame: $final"
frames=$(tshark -r "$tmp/out.pcap" -T fields -e frame.len -e ip.src -e ip.dst -e udp.srcport -e udp.length \
	2>/dev/null | sort | uniq -c)
[ "$(wc -l <<<"$frames")" = 1 ] && grep -qE "^ *$pk 1000"$'\t'"198.18.0.1"$'\t'"198.18.0.2"$'\t'"9"$'\t'"966$" <<<"$frames" ||
	bad "pcap: want $pk UDP frames of 1000 bytes 198.18.0.1 -> 198.18.0.2: $frames"
# the payload txonly writes, whole (958 bytes): every frame the same bytes
body=$(tshark -r "$tmp/out.pcap" -T fields -e udp.payload 2>/dev/null | sort -u)
[ "$(grep -c . <<<"$body")" = 1 ] && [ "${#body}" -ge 1916 ] ||
	bad "pcap: $(grep -c . <<<"$body") different payloads, the first ${#body} hex digits"
echo "pcap: --count 20000 of the $sent frames testpmd sent, the same in the pcap"

# ---- to null: in place, completed; small frames copied; --zcopy off ----
vhost_start -d null
guest 1000 100000
sent1=$sent
guest 64 100000
vhost_stop null
pk=$(json_num packets "$final") zc=$(json_num zcopied "$final") small=$(json_num small "$final")
done=$(json_num completions "$final") pend=$(json_num pending "$final")
near "$pk" $((sent1 + sent)) 2 && [ "$pk" = $((zc + small)) ] ||
	bad "null: two connections sent $sent1 + $sent, uskb-vhost took $pk: $final"
near "$zc" "$sent1" 1 && [ "$done" = "$zc" ] && near "$small" "$sent" 1 && [ "$pend" = 0 ] ||
	bad "null: zcopied $zc completions $done (sent $sent1), small $small (sent $sent), pending $pend"
# the device's own count, and the backend's CPU time, in the same line
[ "$(json_num tx_packets "$final")" = "$pk" ] && grep -qE '"cpu": [0-9]+\.[0-9]{3}' <<<"$final" ||
	bad "null: the device's tx_packets should be the $pk frames taken, and cpu given: $final"
echo "null: $zc frames of 1000 bytes in place and completed, $small of 64 copied; counters across two connections"

vhost_start -d null --zcopy off
# a second backend on the live socket: refused (exit 2), the first serves on (the guest below)
"$vht" -s "$tmp/vh.sock" -d null -t 1 >/dev/null 2>"$tmp/err2"
rc=$?
[ $rc = 2 ] && grep -q "a live process serves this socket" "$tmp/err2" ||
	bad "a second backend on a live socket: exit $rc: $(cat "$tmp/err2")"
guest 1000 100000
vhost_stop "zcopy off"
pk=$(json_num packets "$final")
near "$pk" "$sent" 1 && [ "$(json_num off "$final")" = "$pk" ] && [ "$(json_num zcopied "$final")" = 0 ] ||
	bad "--zcopy off: all $pk frames ($sent sent) should be copied: $final"
echo "--zcopy off: $pk frames copied"

# ---- the guest's receive: udp: -> uskb-vhost -> virtio-user (rxonly) ----
# below the ephemeral range (32768 on), where another test's connection may hold it
port=$((20000 + $$ % 12700))
vhost_start -d "udp:127.0.0.1:$port,listen"
testpmd_start "$tmp/tpr" "$tmp/vh.sock" --forward-mode=rxonly
# the guest is up once testpmd says it forwards, and the backend that it is connected
for _ in $(seq 600); do
	grep -q "Press enter to exit" "$tmp/tpr.out" && grep -q '"connected": true' <<<"$(tail -n 1 "$tmp/vh.json")" && break
	kill -0 $tpp 2>/dev/null || break
	sleep 0.1
done
grep -q "Press enter to exit" "$tmp/tpr.out" || bad "rx: testpmd did not start: $(tail -3 "$tmp/tpr.out")"
pgt=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
timeout -k 5 30 "$pgt" -q -i "udp:127.0.0.1:$port" -n 1000 -s 700 --ratep 5000 >/dev/null ||
	bad "rx: the sender failed (exit $?)"
vh_wait rx_packets 1000 $tpp || bad "rx: the backend put $(vh_now rx_packets) of 1000 frames into the guest"
testpmd_stop || bad "rx: testpmd failed: $(tail -3 "$tmp/tpr.out")"
vhost_stop rx
got=$(sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' "$tmp/tpr.out" | head -1)
[ "$got" = 1000 ] && [ "$(json_num rx_packets "$final")" = 1000 ] && [ "$(json_num rx_bytes "$final")" = 700000 ] ||
	bad "rx: 1000 frames sent, testpmd received $got: $final"
echo "rx: 1000 frames from udp: into the guest's buffers, all received"

# ---- the lower device fails: a tcp: peer resets mid-run ----
# said in a line, the drops counted, and the exit is no success
port2=$((port + 1))
pgt=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
start_rx "$tmp/prx.err" "$pgt" --rx "tcp:127.0.0.1:$port2,listen" --duration 60 --json >/dev/null
prx=$!
wait_rx "$tmp/prx.err" $prx || bad "device fails: the tcp: peer did not start: $(cat "$tmp/prx.err")"
vhost_start -d "tcp:127.0.0.1:$port2"
testpmd_start "$tmp/tpf" "$tmp/vh.sock" --forward-mode=txonly --txpkts=1500
vh_wait packets 10000 $tpp || bad "device fails: the backend took $(vh_now packets) frames before the reset"
kill -KILL $prx
wait $prx 2>/dev/null
vh_wait dropped 1000 $tpp || bad "device fails: $(vh_now dropped) frames dropped after the peer went"
testpmd_stop >/dev/null
vhost_end "device fails"
[ $rc = 1 ] && grep -q "the device failed, its frames are dropped from now on: the peer went away" "$tmp/vh.err" &&
	grep -q "the device failed during the run ([0-9]* frames dropped)" "$tmp/vh.err" &&
	[ "$(json_num dropped "$final")" -ge 1000 ] ||
	bad "device fails: exit $rc, $(json_num dropped "$final") dropped: $(cat "$tmp/vh.err")"
echo "device fails: the tcp: peer reset mid-run: said, $(json_num dropped "$final") drops counted, exit 1"

# ---- frames abandoned: the frontend goes while a stuck device holds its chains ----
# a tcp:,zc peer that accepts and never reads; at a stop the drain ends
# (100 ms), the chains are kept, counted, said, and the exit is no success
port3=$((port + 2))
"$here/helpers/stall-peer" $port3 90 >"$tmp/stall.out" &
stp=$!
for _ in $(seq 50); do grep -q ready "$tmp/stall.out" && break; sleep 0.1; done
grep -q ready "$tmp/stall.out" || bad "abandoned: the stalled peer did not start"
vhost_start -d "tcp:127.0.0.1:$port3,zc"
testpmd_start "$tmp/tpa" "$tmp/vh.sock" --forward-mode=txonly --txpkts=1500
vh_wait pending 64 $tpp || bad "abandoned: $(vh_now pending) chains out behind the stalled peer"
testpmd_stop >/dev/null
vhost_end abandoned
kill $stp 2>/dev/null
wait $stp 2>/dev/null
final=$(grep '"final": true' "$tmp/vh.json")
ab=$(json_num abandoned "$final")
[ $rc = 1 ] && [ "${ab:-0}" -ge 64 ] &&
	grep -q "$ab frames never went back to their frontend: it went while the device still held them" "$tmp/vh.err" ||
	bad "abandoned: exit $rc, $ab abandoned: $(cat "$tmp/vh.err")"
echo "abandoned: $ab chains the stalled device held when the frontend went: counted, said, exit 1"

# ---- bad usage ----
check_usage() {
	local want=$1
	shift
	timeout -k 5 10 "$vht" "$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc = 2 ] && grep -q -e "$want" "$tmp/err" || bad "$*: exit $rc: $(cat "$tmp/err")"
}
check_usage "are needed" -d null
check_usage "give on or off" -s "$tmp/x.sock" -d null --zcopy maybe
check_usage "is not a number" -s "$tmp/x.sock" -d null --stats x
check_usage "unexpected argument" -s "$tmp/x.sock" -d null extra
# 0 would read as "no limit"
check_usage '--duration: "0" is not a number from 0.001 to 10000000 seconds' -s "$tmp/x.sock" -d null -t 0
check_usage '--count: "0" is not a whole number from 1 to' -s "$tmp/x.sock" -d null -n 0
check_usage '--max-pend: "0" is not a whole number from 1 to 32768' -s "$tmp/x.sock" -d null --max-pend 0
check_usage '--duration: "1e99" is not a number from 0.001 to 10000000' -s "$tmp/x.sock" -d null -t 1e99
# a device that does not open: its reason once (the spec named once), exit 5 as the other tools
timeout -k 5 10 "$vht" -s "$tmp/x.sock" -d "pcap:$tmp/no/such/dir/x.pcap" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 5 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && [ "$(grep -o "x.pcap" "$tmp/err" | wc -l)" = 1 ] ||
	bad "a device that does not open: exit $rc: $(cat "$tmp/err")"
# a socket a killed backend left: replaced; a file that is no socket: left alone
"$vht" -s "$tmp/x.sock" -d null -q >/dev/null 2>&1 &
kp=$!
for _ in $(seq 50); do [ -S "$tmp/x.sock" ] && break; sleep 0.1; done
kill -KILL $kp
wait $kp 2>/dev/null
[ -S "$tmp/x.sock" ] || bad "a killed backend left no socket file to replace"
"$vht" -s "$tmp/x.sock" -d null -t 0.2 -q >/dev/null 2>"$tmp/err" || bad "a stale socket: not replaced: $(cat "$tmp/err")"
[ -e "$tmp/x.sock" ] && bad "the socket file outlived the backend"
: >"$tmp/x.sock"
check_usage "something other than a socket is there" -s "$tmp/x.sock" -d null
[ -f "$tmp/x.sock" ] || bad "a file at the socket path was removed"
"$vht" -s "$tmp/x.sock" -d nosuch:dev >/dev/null 2>"$tmp/err"
[ $? = 5 ] && grep -q "nosuch" "$tmp/err" || bad "a bad device: $(cat "$tmp/err")"

[ $fail = 0 ] && echo "vhost-user: ok" || echo "vhost-user: $fail failure(s)"
[ $fail = 0 ]
