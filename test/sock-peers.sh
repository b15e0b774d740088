#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The socket devices against real peers, so that a framing mistake cannot
# hide. QEMU 7.2 with no guest relays between two netdevs through its hub
# (-netdev stream / dgram / hubport); every frame uskb-pktgen sends into one
# side is counted by uskb-pktgen --rx on the other, and the frames QEMU
# relayed (its filter-dump pcap) equal, byte for byte, what uskb-pktgen
# writes to pcap: with the same commands (into QEMU's UDP socket, paced,
# up to 5 % may be lost on a busy machine: UDP; never a changed frame):
#   unix: -> QEMU stream server -> QEMU dgram -> udp:
#   udp: -> QEMU dgram -> QEMU stream server -> unix: (client)
#   tcp: -> QEMU stream server (inet) -> dgram -> udp:, in zc and uring mode
#   udp: -> dgram -> QEMU stream client -> tcp:...,listen
# As root, passt (no guest) in a network namespace of its own: a UDP frame
# sent by uskb-pktgen -i unix:PASST_SOCKET leaves passt as a real UDP
# datagram to a socket in that namespace.
# Skips (77) without qemu-system-x86_64 (scripts/deps.sh --interop) or when
# it has no -netdev stream and dgram; stops (exit 1) at once when QEMU does
# not start; a mode the kernel refuses (uring) is left out, saying so.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.bash"
pg=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64: scripts/deps.sh --interop"; exit 77; }
command -v tshark >/dev/null || { echo "no tshark (scripts/deps.sh)"; exit 77; }
tmp=$(mktemp -d /tmp/uskb-peers.XXXXXX)
chmod 1777 "$tmp" # passt drops to nobody before it binds its socket
qpid=""
ns=""
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	pkill -f "passt.*$tmp" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
# ten ports of our own, below the ephemeral range (32768 on): a port in it may be a
# client connection's of a test running beside this one ("Address already in use")
base=$((20000 + $$ % 1270 * 10))
N=300
SIZES="60 1514 9000 65000"
frames() { # SIZE: the extra arguments that shape a frame of SIZE bytes
	case $1 in
	60) echo "-s 60" ;;
	1514) echo "-s 1514 --frags 1" ;;
	9000) echo "-s 9000 --frags 3" ;;
	*) echo "-s $1 --frags 16" ;;
	esac
}
# packets per second QEMU's dgram side takes without loss, even on a busy machine: 1000, or
# 25 Mb/s for big frames (its socket buffer, 208 KiB, holds three 64 KiB datagrams; at 25 Mb/s
# QEMU may sleep 60 ms without losing one)
pace() { local p=$((25000000 / 8 / $1)); echo $((p > 1000 ? 1000 : p)); }

# QEMU with two netdevs on hub 0, each dumped to a pcap: stream-args dgram-args
qemu_hub() {
	rm -f "$tmp"/s.pcap "$tmp"/d.pcap
	qemu-system-x86_64 -M none -nographic -nodefaults -display none \
		-netdev "$1" -netdev hubport,id=h0,hubid=0,netdev=s0 \
		-netdev "$2" -netdev hubport,id=h1,hubid=0,netdev=d0 \
		-object filter-dump,id=f0,netdev=h1,file="$tmp"/d.pcap \
		-object filter-dump,id=f1,netdev=h0,file="$tmp"/s.pcap >"$tmp"/qemu.log 2>&1 &
	qpid=$!
	for _ in $(seq 100); do
		[ -s "$tmp"/d.pcap ] && [ -s "$tmp"/s.pcap ] && break
		kill -0 $qpid 2>/dev/null || break
		sleep 0.05
	done
	sleep 0.2
	kill -0 $qpid 2>/dev/null && return 0
	# QEMU did not start: the same arguments fail every later case alike
	wait $qpid
	echo "qemu-system-x86_64 exit $?: $(tail -3 "$tmp"/qemu.log)"
	if grep -qiE "netdev backend type|(stream|dgram).*(invalid|unsupported)|(invalid|unsupported).*(stream|dgram)" "$tmp"/qemu.log; then
		echo "skipped: this QEMU has no -netdev stream and dgram (QEMU 7.2 and later): $(qemu-system-x86_64 --version | head -1)"
		exit 77
	fi
	echo "FAIL: QEMU did not start; stopped: every case relays through it"
	exit 1
}
qemu_stop() {
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	qpid=""
}

# the frames of a pcap as hex, one line per frame (record times left out); printed
# piece by piece: growing a 130 KB string by concatenation took mawk 51 s for 1200 frames
hexframes() {
	tshark -r "$1" -x 2>/dev/null |
		awk '/^Frame/ { next } /^$/ { if (s) printf "\n"; s = 0; next }
			{ printf "%s", substr($0, 7, 48); s = 1 } END { if (s) printf "\n" }'
}
# every frame of pcap $1 is one uskb-pktgen built (UDP into QEMU may lose some, never change one)
all_built() { hexframes "$1" | awk 'NR == FNR { ref[$0] = 1; next } !($0 in ref) { bad++ } END { exit bad > 0 }' "$tmp"/ref.hex -; }

# what uskb-pktgen writes for SIZES into pcap: (the reference)
reference() {
	rm -f "$tmp"/ref.pcap "$tmp"/ref.hex
	for s in $SIZES; do
		# shellcheck disable=SC2046
		"$pg" -q -i pcap:"$tmp"/r$s.pcap -n $N $(frames $s) "flag NO_TIMESTAMP" >/dev/null || bad "pcap reference $s"
		hexframes "$tmp"/r$s.pcap >>"$tmp"/ref.hex
	done
}
reference

# send SIZES through TX into QEMU while --rx RX counts on the other side: label tx rx.
# Into QEMU's stream every frame must arrive; into its UDP socket up to 5 % may be lost.
# (into QEMU's dgram netdev paced, see pace(): QEMU reads its UDP socket
# slower than a sender fills it, and UDP drops what does not fit)
relay() {
	local label=$1 tx=$2 rx=$3 s out pace="" lossy=""
	refused=""
	for s in $SIZES; do
		case $tx in udp:*) pace="--ratep $(pace $s)" lossy=1 ;; esac
		# QEMU relays a stream into our UDP socket as fast as it comes: under a
		# sanitizer the receiver drains 64 KiB datagrams slower than that, and the
		# kernel drops what its buffer cannot hold (paced, none is lost)
		case $rx in udp:*) [ -n "${USKB_SANITIZE:-}" ] && pace="--ratep $(pace $s)" ;; esac
		"$pg" -q --rx "$rx" -n $N --duration 10 --json >"$tmp"/rx.json 2>"$tmp"/rx.err &
		local rpid=$!
		sleep 0.3
		# shellcheck disable=SC2046
		if ! timeout -k 5 60 "$pg" -q -i "$tx" -n $N $(frames $s) $pace "flag NO_TIMESTAMP" >"$tmp"/tx.out 2>&1; then
			# (nothing was sent: the receiver is not waited out, nor the other sizes tried)
			kill $rpid 2>/dev/null
			wait $rpid
			# a mode the kernel refuses (io_uring off by sysctl, say) is left out, saying so
			if [[ $tx == *,uring* ]] && grep -qE "$REFUSED" "$tmp"/tx.out; then
				echo "$label: not tried: $(tail -1 "$tmp"/tx.out)"
				refused=1
			else
				bad "$label: size $s: the sender failed: $(tail -2 "$tmp"/tx.out)"
			fi
			return
		fi
		wait $rpid
		out=$(cat "$tmp"/rx.json)
		got=$(json_num packets "$out")
		if [ -n "$lossy" ]; then
			# UDP into QEMU: its 208 KiB socket buffer may overflow on a busy machine
			[ "${got:-0}" -ge $((N - N / 20)) ] && [ "$(json_num duplicates "$out")" = 0 ] &&
				[ "$(json_num reordered "$out")" = 0 ] ||
				bad "$label: size $s: $N sent, received: $out $(cat "$tmp"/rx.err)"
			[ "$got" = $N ] || echo "$label: size $s: $((N - got)) of $N lost in QEMU's UDP socket"
		else
			[ "$got" = $N ] && [ "$(json_num lost "$out")" = 0 ] &&
				[ "$(json_num duplicates "$out")" = 0 ] ||
				bad "$label: size $s: $N sent, received: $out $(cat "$tmp"/rx.err)"
		fi
	done
}

# 1. unix: -> stream server -> dgram -> udp:
qemu_hub "stream,id=s0,server=on,addr.type=unix,addr.path=$tmp/q.sock" \
	"dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=$base,remote.type=inet,remote.host=127.0.0.1,remote.port=$((base + 1))"
relay "unix->udp" "unix:$tmp/q.sock" "udp:127.0.0.1:$((base + 1)),listen"
qemu_stop
hexframes "$tmp"/d.pcap | cmp -s - "$tmp"/ref.hex || bad "unix->udp: QEMU relayed other bytes than uskb-pktgen built"
echo "unix: -> QEMU -> udp:: $SIZES bytes, $N each: counted, byte for byte"

# 2. udp: -> dgram -> stream server -> unix: (our client receives)
qemu_hub "stream,id=s0,server=on,addr.type=unix,addr.path=$tmp/q2.sock" \
	"dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=$((base + 2)),remote.type=inet,remote.host=127.0.0.1,remote.port=$((base + 3))"
relay "udp->unix" "udp:127.0.0.1:$((base + 2)),local=127.0.0.1:$((base + 3))" "unix:$tmp/q2.sock"
qemu_stop
all_built "$tmp"/s.pcap || bad "udp->unix: QEMU relayed other bytes than uskb-pktgen built"
echo "udp: -> QEMU -> unix:: counted, byte for byte"

# 3. tcp: (copy, zc, uring) -> stream server (inet) -> dgram -> udp:
for mode in copy zc uring; do
	qemu_hub "stream,id=s0,server=on,addr.type=inet,addr.host=127.0.0.1,addr.port=$((base + 4))" \
		"dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=$((base + 5)),remote.type=inet,remote.host=127.0.0.1,remote.port=$((base + 6))"
	relay "tcp,$mode->udp" "tcp:127.0.0.1:$((base + 4)),$mode" "udp:127.0.0.1:$((base + 6)),listen"
	qemu_stop
	[ -z "$refused" ] || continue
	hexframes "$tmp"/d.pcap | cmp -s - "$tmp"/ref.hex || bad "tcp,$mode->udp: other bytes than built"
	echo "tcp:,$mode -> QEMU -> udp:: counted, byte for byte"
done

# 4. udp: -> dgram -> QEMU as a stream client -> tcp:...,listen (QEMU 7.2 connects once, at
# start); each run starts its sequence again, so only the count says anything here
"$pg" -q --rx "tcp:127.0.0.1:$((base + 7)),listen" -n $((N * 4)) --duration 20 --json >"$tmp"/rx4.json 2>"$tmp"/rx4.err &
rpid=$!
sleep 0.3
qemu_hub "stream,id=s0,server=off,addr.type=inet,addr.host=127.0.0.1,addr.port=$((base + 7))" \
	"dgram,id=d0,local.type=inet,local.host=127.0.0.1,local.port=$((base + 8)),remote.type=inet,remote.host=127.0.0.1,remote.port=$((base + 9))"
for s in $SIZES; do
	# shellcheck disable=SC2046
	"$pg" -q -i "udp:127.0.0.1:$((base + 8)),local=127.0.0.1:$((base + 9))" -n $N $(frames $s) \
		--ratep "$(pace $s)" "flag NO_TIMESTAMP" >/dev/null 2>&1 || bad "udp->tcp listen: size $s: the sender failed"
	sleep 0.2
done
wait $rpid
qemu_stop
out=$(cat "$tmp"/rx4.json)
[ "$(json_num packets "$out")" -ge $((N * 4 - N * 4 / 20)) ] ||
	bad "udp->QEMU client->tcp listen: $((N * 4)) sent, received: $out $(cat "$tmp"/rx4.err)"
echo "udp: -> QEMU (stream client) -> tcp:,listen: $(json_num packets "$out") counted"

# 5. passt, as root, in a namespace whose default route goes through a veth
if [ "$(id -u)" != 0 ] || ! command -v passt >/dev/null; then
	echo "passt part skipped: $([ "$(id -u)" != 0 ] && echo "not root" || echo "no passt (scripts/deps.sh --interop)")"
else
	ns=up$(($$ % 100000))
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip -n "$ns" link add pa type veth peer name pb
	ip -n "$ns" addr add 198.18.2.1/24 dev pa
	ip -n "$ns" link set pa up
	ip -n "$ns" link set pb up
	ip -n "$ns" route add default via 198.18.2.2
	ip netns exec "$ns" passt -f -e -4 -1 -s "$tmp"/passt.sock >"$tmp"/passt.log 2>&1 &
	for _ in $(seq 100); do [ -S "$tmp"/passt.sock ] && break; sleep 0.05; done
	# the host side: a UDP socket in the namespace counts what passt delivers (not pktgen frames: "other")
	ip netns exec "$ns" "$pg" -q --rx "udp:0.0.0.0:17099,listen" --duration 3 --json >"$tmp"/prx.json 2>&1 &
	rpid=$!
	sleep 0.3
	"$pg" -q -i "unix:$tmp/passt.sock" -n 10 -s 200 -k -m 02:00:00:00:00:09 -d 198.18.2.2 -p 17099 \
		"src_min 198.18.2.1" "src_max 198.18.2.1" "udp_src_min 40000" "udp_src_max 40000" \
		>"$tmp"/ptx.out 2>&1 || bad "passt: the sender failed: $(tail -2 "$tmp"/ptx.out)"
	wait $rpid
	out=$(cat "$tmp"/prx.json)
	[ "$(json_num other "$out")" = 10 ] || bad "passt: 10 UDP frames sent to the gateway, the host socket got: $out ($(tail -3 "$tmp"/passt.log))"
	echo "passt: 10 frames from unix: -> $(json_num other "$out") UDP datagrams on the host side"
fi

[ $fail = 0 ] || exit 1
echo "sock-peers: all passed"
