#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Linux guest on uskb-vhost: QEMU (TCG when there is no KVM) boots
# Debian's kernel with a busybox initramfs (scripts/guest.sh); its own
# virtio-net driver pings, and sends UDP datagrams, through uskb-vhost and
# the tap: device into a network namespace this test creates and removes
# (198.18.3.0/24):
#  - every ping is answered (out through the guest's transmit, back through
#    its receive);
#  - every datagram reaches the namespace's kernel (its UDP NoPorts count);
#  - what the guest counts matches what uskb-vhost counts, both ways.
# Needs root; skips (77) without it, without qemu-system-x86_64, or when the
# guest's packages cannot be downloaded.
set -u
source "$(dirname "$0")/net-common.bash" g
vht=${USKB_VHOST:-$here/../tools/uskb-vhost}
command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64 (scripts/deps.sh --interop)"; exit 77; }
guest=$("$root/scripts/guest.sh" 2>&1) || { echo "no guest: $guest"; exit 77; }
ns=$p-ns tap=${p}t
tmp=$(mktemp -d /tmp/uskb-guest.XXXXXX)
vp=""
cleanup() {
	[ -n "$vp" ] && kill "$vp" 2>/dev/null && wait "$vp" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
json_num() { sed -n "s/.*\"$1\": \\([0-9]*\\).*/\\1/p" <<<"$2" | head -1; }
noports() { ip netns exec "$ns" awk '/^Udp: [0-9]/ { print $3 }' /proc/net/snmp; }

ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link set lo up
ip netns exec "$ns" ip tuntap add dev "$tap" mode tap
ip -n "$ns" addr add 198.18.3.1/24 dev "$tap"
ip -n "$ns" link set "$tap" up
before=$(noports)

ip netns exec "$ns" "$vht" -s "$tmp/vh.sock" -d "tap:$tap" --stats 0 --json >"$tmp/vh.json" 2>"$tmp/vh.err" &
vp=$!
for _ in $(seq 50); do [ -S "$tmp/vh.sock" ] && break; sleep 0.1; done
accel=tcg
[ -w /dev/kvm ] && accel=kvm
# vectors=0: QEMU 7.2 under TCG crashes setting up MSI-X notifiers for vhost-user (INTx works)
timeout 240 qemu-system-x86_64 -machine q35,memory-backend=mem -accel $accel -cpu max -m 256 -smp 1 \
	-object memory-backend-memfd,id=mem,size=256M,share=on \
	-nographic -no-reboot -kernel "$guest/vmlinuz" -initrd "$guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 ipv6.disable=1 gip=198.18.3.2/24 gpeer=198.18.3.1 gcount=10" \
	-chardev socket,id=c0,path="$tmp/vh.sock" -netdev vhost-user,id=n0,chardev=c0 \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,romfile=,vectors=0 </dev/null >"$tmp/guest.log" 2>&1 ||
	bad "qemu exit $?: $(tail -5 "$tmp/guest.log")"
kill -INT $vp
wait $vp || bad "uskb-vhost exit $?: $(cat "$tmp/vh.err")"
vp=""
final=$(grep '"final": true' "$tmp/vh.json")
after=$(noports)

grep -q "GUEST: 10 packets transmitted, 10 packets received" "$tmp/guest.log" ||
	bad "ping: $(grep 'GUEST' "$tmp/guest.log" | tail -3)"
[ $((after - before)) = 10 ] || bad "10 datagrams sent, the namespace got $((after - before))"
res=$(grep -o 'GUEST-RESULT.*' "$tmp/guest.log" | tr -d '\r')
grx=$(sed -n 's/.*rx_packets=\([0-9]*\).*/\1/p' <<<"$res") gtx=$(sed -n 's/.*tx_packets=\([0-9]*\).*/\1/p' <<<"$res")
vtx=$(json_num packets "$final") vrx=$(json_num rx_packets "$final")
# the guest counts a transmit when it is given back: some may still be out when it prints
[ -n "$grx" ] && [ "$grx" = "$vrx" ] && [ "$gtx" -le "$vtx" ] && [ "$gtx" -ge 20 ] ||
	bad "counts: the guest says $res, uskb-vhost took $vtx and gave $vrx: $final"
echo "a Linux guest ($accel): 10 pings answered, 10 datagrams into the namespace; guest rx $grx = uskb-vhost's $vrx, guest tx $gtx of uskb-vhost's $vtx"

[ $fail = 0 ] && echo "vhost-guest: ok" || echo "vhost-guest: $fail failure(s)"
[ $fail = 0 ]
