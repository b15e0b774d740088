#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak of the two services against peers that come, go, die and stall:
#   vhost  uskb-vhost (device null) serving DPDK's virtio-user (testpmd
#          txonly, 1000-byte frames, zero copy) that disconnects and
#          reconnects every 10 s, and a stalled frontend (a header, 3 of its
#          8 payload bytes, then nothing) every 60 s, connecting just before
#          the next testpmd, which must be served after it is dropped;
#   dp     uskb-dp with an external handler (uskb-dp --handler-of) that is
#          killed (SIGKILL) and restarted every 10 s, under 20,000 misses a
#          second of random source ports from uskb-pktgen, in a network
#          namespace of its own (its UDP counters are the run's alone).
# Every minute (every 5 s in runs under 10 minutes) the service's RSS, open
# fds and counters go to DIR/KIND/samples. Checks, per kind:
#   1. no hang: every reconnect served (each testpmd forwarded), every
#      stalled frontend dropped within 15 s, every restarted handler took
#      over, and the service ends within 30 s of SIGINT;
#   2. every frame and upcall accounted for:
#      vhost: taken = zero-copied + copied, completions = zero-copied,
#             nothing dropped, pending or abandoned; taken <= what testpmd
#             counted as sent, short of it by at most a ring (256) a
#             reconnect;
#      dp:    sent (packets - lost) = received by port 1 + the kernel's UDP
#             receive drops; received = hit + missed + bad frames;
#             missed = executed + lost (lost includes the upcalls in flight
#             to each killed handler), and one death counted per kill;
#   3. RSS and fds flat: after the warm-up (the first tenth, at least 10 s)
#      the second half holds no more than the first (RSS: plus 1 MiB).
#
#   scripts/soak-services.sh [-t SECONDS] [-k "vhost dp"] [-o DIR]
#
# -t  seconds per kind (default 1800)
# -k  kinds (default "vhost dp")
# -o  logs and DIR/summary.txt, DIR/summary.json (default build/soak-services)
# Needs root (the dp kind's namespace), dpdk-testpmd for vhost, and
# `make tools tests` (the tools and test/helpers). Exit 0 when every kind
# passed; 77 when no kind could run (each says why it skipped).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
B=${USKB_BUILD:-$here/build}
secs=1800 kinds="vhost dp" out=$B/soak-services
while getopts "t:k:o:" o; do
	case $o in
	t) secs=$OPTARG ;;
	k) kinds=$OPTARG ;;
	o) out=$OPTARG ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case $secs in *[!0-9]* | "" | 0) echo "soak-services.sh: -t wants whole seconds" >&2; exit 2 ;; esac
vht=$B/tools/uskb-vhost dpt=$B/tools/uskb-dp pg=$B/tools/uskb-pktgen hl=$B/test/helpers
for f in "$vht" "$dpt" "$pg" "$hl/stall-front"; do
	[ -x "$f" ] || { echo "soak-services.sh: no $f: run make tools tests" >&2; exit 77; }
done
period=10
stall_every=$((secs < 120 ? secs / 2 : 60))
step=$((secs < 600 ? 5 : 60))
warm=$((secs / 10 < 10 ? 10 : secs / 10))
mkdir -p "$out"
: >"$out/summary.txt"
echo "[" >"$out/summary.json"
first=1 fail=0 ran=0

# the first number KEY has in the JSON text $2
json_num() { grep -o "\"$1\": [0-9]*" <<<"$2" | head -n 1 | grep -o '[0-9]*$'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
nfds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# the largest value of column $2 of file $1 in the rows with time in [$3, $4)
max_in() { awk -v c="$2" -v a="$3" -v b="$4" '$1 >= a && $1 < b && $c > m { m = $c } END { print m + 0 }' "$1"; }
# wait up to $1 s for pid $2 to end; its status, or 124 (then it is killed)
wait_for() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$2" 2>/dev/null; then
		kill -KILL "$2" 2>/dev/null
		wait "$2" 2>/dev/null
		return 124
	fi
	wait "$2"
}
# every $step s: seconds, RSS KiB, fds, and the last line of $3 (the counters) into $2
sampler() {
	local pid=$1 file=$2 json=$3 t0=$SECONDS
	: >"$file"
	while kill -0 "$pid" 2>/dev/null; do
		echo "$((SECONDS - t0)) $(rss_kb "$pid") $(nfds "$pid") $(tail -n 1 "$json" 2>/dev/null | cut -c1-300)" >>"$file"
		sleep "$step"
	done
}
# RSS (column 2) and fds (3) flat after the warm-up; appends to $why
flat() {
	local file=$1 mid=$(((warm + secs) / 2)) a b
	a=$(max_in "$file" 2 "$warm" "$mid") b=$(max_in "$file" 2 "$mid" $((secs + step + 5)))
	[ "$b" -le $((a + 1024)) ] || why="$why RSS grew $a -> $b KiB;"
	a=$(max_in "$file" 3 "$warm" "$mid") b=$(max_in "$file" 3 "$mid" $((secs + step + 5)))
	[ "$b" -le "$a" ] || why="$why fds grew $a -> $b;"
	rss_max=$(max_in "$file" 2 0 $((secs + step + 5))) fds_max=$(max_in "$file" 3 0 $((secs + step + 5)))
}
report() {
	local kind=$1 figures=$2 res=PASS
	[ -z "$why" ] || { res=FAIL; fail=1; }
	echo "$res $kind: ${secs}s; $figures; RSS max $rss_max KiB, fds max $fds_max${why:+;}$why" | tee -a "$out/summary.txt"
	[ $first = 1 ] || echo "," >>"$out/summary.json"
	first=0
	printf '{"kind": "%s", "ok": %s, "seconds": %s, "figures": "%s", "rss_max_kib": %s, "fds_max": %s, "why": "%s"}' \
		"$kind" "$([ $res = PASS ] && echo true || echo false)" "$secs" "$figures" "$rss_max" "$fds_max" \
		"$(sed 's/"/\\"/g' <<<"${why# }")" >>"$out/summary.json"
}

soak_vhost() {
	local log=$out/vhost sock vp sp t0 cycles=0 served=0 stalls=0 dropped_ok=0 sent=0 tx rc final
	local stall_ms="" next_stall=$stall_every sfp=""
	command -v dpdk-testpmd >/dev/null || { echo "soak-services.sh: vhost: skipped: no dpdk-testpmd (scripts/deps.sh --bench)"; return; }
	ran=$((ran + 1))
	mkdir -p "$log"
	sock=$log/vh.sock
	rm -f "$sock"
	"$vht" -s "$sock" -d null --stats 1 --json >"$log/vh.json" 2>"$log/vh.err" &
	vp=$!
	for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
	echo "soak-services.sh: vhost: testpmd reconnects every $period s, a stalled frontend every $stall_every s, for $secs s (logs in $log)"
	sampler $vp "$log/samples" "$log/vh.json" &
	sp=$!
	t0=$SECONDS
	why=""
	while ((SECONDS - t0 < secs)) && kill -0 $vp 2>/dev/null; do
		sfp=""
		if ((SECONDS - t0 >= next_stall)); then
			# it connects first: the testpmd below waits behind it
			"$hl/stall-front" "$sock" 15 >"$log/stall.out" 2>&1 &
			sfp=$!
			sleep 0.2
			next_stall=$((next_stall + stall_every))
			stalls=$((stalls + 1))
		fi
		cycles=$((cycles + 1))
		# it runs until its stdin ends: Enter, as a user stops it
		timeout -k 5 $((period + 60)) dpdk-testpmd --no-huge -m 512 --no-pci --no-telemetry \
			--file-prefix "uskbsoak$$" -l 0-1 --vdev "net_virtio_user0,path=$sock,queues=1" -- \
			--nb-cores=1 --total-num-mbufs=16384 --forward-mode=txonly --txpkts=1000 \
			< <(sleep "$period") >"$log/tp.out" 2>&1
		tx=$(sed -n 's/.*TX-packets: *\([0-9]*\).*/\1/p' "$log/tp.out" | tail -n 1)
		if [ "${tx:-0}" -gt 0 ]; then
			served=$((served + 1)) sent=$((sent + tx))
		else
			cp "$log/tp.out" "$log/tp.unserved.$cycles"
		fi
		if [ -n "$sfp" ]; then
			wait_for 20 $sfp && dropped_ok=$((dropped_ok + 1))
			stall_ms="$stall_ms $(sed -n 's/closed after \([0-9]*\) ms/\1/p' "$log/stall.out")"
		fi
	done
	kill -INT $vp 2>/dev/null
	wait_for 30 $vp
	rc=$?
	wait $sp 2>/dev/null
	final=$(grep '"final": true' "$log/vh.json" | tail -n 1)
	local pk zc cp_all comp drop pend ab
	pk=$(json_num packets "$final") zc=$(json_num zcopied "$final") comp=$(json_num completions "$final")
	drop=$(json_num dropped "$final") pend=$(json_num pending "$final") ab=$(json_num abandoned "$final")
	cp_all=$(($(json_num off "$final") + $(json_num small "$final") + $(json_num pend "$final") +
		$(json_num nozc "$final") + $(json_num err "$final") + $(json_num sg "$final")))
	[ $rc = 0 ] || why="$why uskb-vhost exit $rc ($(tail -n 2 "$log/vh.err" | tr '\n' ' '));"
	[ -n "$final" ] || why="$why no final counters;"
	[ "$served" = "$cycles" ] || why="$why $((cycles - served)) of $cycles reconnects not served;"
	[ "$dropped_ok" = "$stalls" ] || why="$why $((stalls - dropped_ok)) of $stalls stalled frontends not dropped;"
	[ "${pk:-0}" = $((${zc:-0} + cp_all)) ] || why="$why taken $pk != zero-copied $zc + copied $cp_all;"
	[ "${comp:-0}" = "${zc:-0}" ] || why="$why completions $comp != zero-copied $zc;"
	[ "${drop:-0}${pend:-0}${ab:-0}" = 000 ] || why="$why dropped $drop, pending $pend, abandoned $ab;"
	[ "${pk:-0}" -le "$sent" ] && [ "${pk:-0}" -ge $((sent - 256 * cycles)) ] ||
		why="$why taken $pk against $sent sent over $cycles reconnects;"
	flat "$log/samples"
	report vhost "$cycles reconnects served $served, $stalls stalled frontends dropped $dropped_ok (after ms:${stall_ms:- none}), testpmd sent $sent, taken $pk = zero-copied $zc + copied $cp_all, completions $comp, dropped ${drop:-?}, pending ${pend:-?}, abandoned ${ab:-?}"
}

soak_dp() {
	local log=$out/dp ns=uskbsoak$$ sock p1=40001 p2=40002 dpp pgp sp hp t0 kills=0 rc final
	[ "$(id -u)" = 0 ] || { echo "soak-services.sh: dp: skipped: needs root (a network namespace)"; return; }
	ran=$((ran + 1))
	mkdir -p "$log"
	sock=$log/h.sock
	rm -f "$sock"
	ip netns add $ns || { echo "FAIL dp: ip netns add $ns failed" | tee -a "$out/summary.txt"; fail=1; return; }
	trap 'ip netns del '$ns' 2>/dev/null; kill $(jobs -p) 2>/dev/null; exit 130' INT TERM
	ip -n $ns link set lo up
	ip netns exec $ns "$dpt" -p "udp:127.0.0.1:$p1,listen" -p "udp:127.0.0.1:$p2,listen" \
		--handler-socket "$sock" --stats 1 --json >"$log/dp.json" 2>"$log/dp.err" &
	dpp=$!
	for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
	"$dpt" --handler-of "$sock" --quiet 2>>"$log/handler.err" &
	hp=$!
	echo "soak-services.sh: dp: the handler killed every $period s under 20,000 misses/s, for $secs s (logs in $log)"
	ip netns exec $ns "$pg" -q -i "udp:127.0.0.1:$p1" -n 0 --duration "$secs" --ratep 20000 --json \
		"flag IPSRC_RND" "src_min 198.18.0.1" "src_max 198.19.255.254" \
		"flag UDPSRC_RND" "udp_src_min 1024" "udp_src_max 65000" >"$log/pg.json" 2>"$log/pg.err" &
	pgp=$!
	sampler $dpp "$log/samples" "$log/dp.json" &
	sp=$!
	t0=$SECONDS
	why=""
	while kill -0 $pgp 2>/dev/null && kill -0 $dpp 2>/dev/null; do
		sleep "$period"
		kill -0 $pgp 2>/dev/null || break
		kill -KILL $hp 2>/dev/null
		wait $hp 2>/dev/null
		kills=$((kills + 1))
		"$dpt" --handler-of "$sock" --quiet 2>>"$log/handler.err" &
		hp=$!
	done
	wait_for $((secs + 30)) $pgp || why="$why uskb-pktgen exit $?;"
	sleep 2 # what is in flight to the live handler comes back
	kill -INT $dpp 2>/dev/null
	wait_for 30 $dpp
	rc=$?
	wait_for 10 $hp
	wait $sp 2>/dev/null
	local udp_drops
	udp_drops=$(ip netns exec $ns awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["RcvbufErrors"] }' /proc/net/snmp)
	ip netns del $ns
	trap - INT TERM
	final=$(grep '"final": true' "$log/dp.json" | tail -n 1)
	local pk lo rx hit miss bad ex lost deaths lif took
	pk=$(json_num packets "$(cat "$log/pg.json")") lo=$(json_num lost "$(cat "$log/pg.json")")
	rx=$(json_num rx_packets "$final") hit=$(json_num hit "$final") miss=$(json_num missed "$final")
	bad=$(json_num bad_frames "$final") ex=$(json_num executed "$final") lost=$(json_num lost "$final")
	deaths=$(json_num handler_deaths "$final") lif=$(json_num lost_in_flight "$final")
	took=$(grep -c "a new handler took over" "$log/dp.err")
	# exit 1 is what a handler's death must give
	[ $rc = 1 ] && grep -q "external handlers\{0,1\} died during the run" "$log/dp.err" ||
		why="$why uskb-dp exit $rc ($(tail -n 2 "$log/dp.err" | tr '\n' ' '));"
	[ -n "$final" ] && [ -n "$pk" ] || why="$why no final counters;"
	[ "${deaths:-0}" = "$kills" ] || why="$why $kills kills but $deaths deaths counted;"
	[ "$took" = "$kills" ] || why="$why $kills kills but $took handlers took over;"
	[ $((${pk:-0} - ${lo:-0})) = $((${rx:-0} + ${udp_drops:-0})) ] ||
		why="$why sent $((pk - lo)) != received $rx + UDP drops $udp_drops;"
	[ "${rx:-0}" = $((${hit:-0} + ${miss:-0} + ${bad:-0})) ] || why="$why received $rx != hit $hit + missed $miss + bad $bad;"
	[ "${miss:-0}" = $((${ex:-0} + ${lost:-0})) ] || why="$why missed $miss != executed $ex + lost $lost;"
	flat "$log/samples"
	report dp "$kills handlers killed, $took took over, $deaths deaths counted; sent $((pk - lo)) = received $rx + UDP drops $udp_drops; received = hit $hit + missed $miss + bad $bad; missed = executed $ex + lost $lost (in flight at a death $lif)"
}

for kind in $kinds; do
	rss_max=0 fds_max=0 why=""
	case $kind in
	vhost) soak_vhost ;;
	dp) soak_dp ;;
	*) echo "soak-services.sh: no kind $kind (vhost, dp)" >&2; exit 2 ;;
	esac
done
echo "]" >>"$out/summary.json"
[ $fail = 0 ] && [ $ran = 0 ] && exit 77 # nothing it needs was here: said above
exit $fail
