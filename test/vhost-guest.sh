#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Linux guest on uskb-vhost: QEMU (TCG when KVM does not work) boots
# Debian's kernel with a busybox initramfs (scripts/guest.sh); its own
# virtio-net driver pings, sends UDP datagrams and a TCP stream, through
# uskb-vhost and the tap: device (with csum: receive checksum offload) into
# a network namespace this test creates and removes (198.18.3.0/24):
#  - every ping is answered (out through the guest's transmit, back through
#    its receive);
#  - every datagram reaches the namespace's kernel (its UDP NoPorts count);
#  - the guest's driver took GUEST_CSUM and HOST_TSO4 (its feature bits);
#  - a 1 MiB file the namespace fetches from the guest's httpd arrives
#    whole, sent as TSO frames (the backend took frames far longer than the
#    MTU, which the tap's kernel segmented), the namespace's side of the
#    connection going to the guest through the tap's receive checksum
#    offload;
#  - what the guest counts matches what uskb-vhost counts, both ways.
# Needs root; skips (77) without it, without qemu-system-x86_64, or when the
# guest's packages cannot be downloaded.
set -u
source "$(dirname "$0")/net-common.bash" g
vht=${USKB_VHOST:-$here/../tools/uskb-vhost}
command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64 (scripts/deps.sh --interop)"; exit 77; }
guest=$("$root/scripts/guest.sh" 2>&1) || { echo "no guest: $guest"; exit 77; }
# KVM when a KVM guest boots here, else TCG (scripts/guest.sh --accel)
accel=$("$root/scripts/guest.sh" --accel) && [ -n "$accel" ] || accel="-accel tcg -cpu max"
an=${accel#-accel }
ns=$p-ns tap=${p}t
tmp=$(mktemp -d /tmp/uskb-guest.XXXXXX)
vp=""
qp=""
cleanup() {
	[ -n "$qp" ] && kill "$qp" 2>/dev/null && wait "$qp" 2>/dev/null
	[ -n "$vp" ] && kill "$vp" 2>/dev/null && wait "$vp" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
noports() { ip netns exec "$ns" awk '/^Udp: [0-9]/ { print $3 }' /proc/net/snmp; }

ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link set lo up
ip netns exec "$ns" ip tuntap add dev "$tap" mode tap || { echo "no tap device here (/dev/net/tun)"; exit 77; }
ip -n "$ns" addr add 198.18.3.1/24 dev "$tap"
ip -n "$ns" link set "$tap" up
before=$(noports)
# the TCP peer: busybox, from the guest's own packages
bb=$guest/root/bin/busybox
kib=1024

ip netns exec "$ns" "$vht" -s "$tmp/vh.sock" -d "tap:$tap,csum" --stats 0 --json >"$tmp/vh.json" 2>"$tmp/vh.err" &
vp=$!
for _ in $(seq 50); do
	[ -S "$tmp/vh.sock" ] && break
	kill -0 $vp 2>/dev/null || break
	sleep 0.1
done
[ -S "$tmp/vh.sock" ] || { echo "FAIL: uskb-vhost did not start: $(cat "$tmp/vh.err")"; exit 1; }
# vectors=0: QEMU 7.2 under TCG crashes setting up MSI-X notifiers for vhost-user (INTx works)
# shellcheck disable=SC2086 # the accelerator's options are words
timeout 240 qemu-system-x86_64 -machine q35,memory-backend=mem $accel -m 256 -smp 1 \
	-object memory-backend-memfd,id=mem,size=256M,share=on \
	-nographic -no-reboot -kernel "$guest/vmlinuz" -initrd "$guest/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1 ipv6.disable=1 gip=198.18.3.2/24 gpeer=198.18.3.1 gcount=10 gtcp=$kib" \
	-chardev socket,id=c0,path="$tmp/vh.sock" -netdev vhost-user,id=n0,chardev=c0 \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,romfile=,vectors=0 </dev/null >"$tmp/guest.log" 2>&1 &
qp=$!
# the guest's file, fetched once its httpd is up; then it is told so (a connection to its port 5002)
for _ in $(seq 900); do
	grep -q "GUEST: httpd up" "$tmp/guest.log" && break
	kill -0 $qp 2>/dev/null || break # (QEMU is gone: the guest did not get that far)
	sleep 0.2
done
if grep -q "GUEST: httpd up" "$tmp/guest.log"; then
	ip netns exec "$ns" timeout 60 "$bb" wget -q -O "$tmp/tcp.out" "http://198.18.3.2/zero" 2>"$tmp/tcp.err"
	ip netns exec "$ns" timeout 10 "$bb" nc 198.18.3.2 5002 </dev/null >/dev/null 2>&1
fi
wait $qp || bad "qemu exit $?: $(tail -5 "$tmp/guest.log")"
qp=""
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
got=$(stat -c %s "$tmp/tcp.out" 2>/dev/null)
[ "${got:-0}" = $((kib * 1024)) ] || bad "tcp: a file of $((kib * 1024)) bytes, the namespace got ${got:-0}: $(cat "$tmp/tcp.err")"
# the driver's feature bits: GUEST_CSUM (1) and HOST_TSO4 (11) taken
feat=$(sed -n 's/.*features=\([01]*\).*/\1/p' <<<"$res")
[ "${feat:1:1}" = 1 ] && [ "${feat:11:1}" = 1 ] || bad "features: the guest did not take GUEST_CSUM and HOST_TSO4: $feat"
# TSO: without it some 750 frames of at most 1514 bytes would carry the stream
vbytes=$(json_num bytes "$final")
[ -n "$vtx" ] && [ "$vtx" -gt 0 ] && [ $((vbytes / vtx)) -gt 3000 ] ||
	bad "tso: the guest's $vtx frames of $vbytes bytes are no longer than an MTU's"
echo "a Linux guest (${an%% *}): 10 pings answered, 10 datagrams into the namespace; guest rx $grx = uskb-vhost's $vrx, guest tx $gtx of uskb-vhost's $vtx"
echo "tcp: a file of $got bytes arrived; the guest's $vtx frames (pings, datagrams and the stream) average $((vbytes / vtx)) bytes (TSO); GUEST_CSUM and HOST_TSO4 negotiated"

[ $fail = 0 ] && echo "vhost-guest: ok" || echo "vhost-guest: $fail failure(s)"
[ $fail = 0 ]
