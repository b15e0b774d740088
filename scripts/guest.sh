#!/bin/sh
# SPDX-License-Identifier: MIT
# A small Linux guest for the vhost tests: Debian's kernel and a busybox
# initramfs whose /init loads virtio-net, pings a peer, sends UDP datagrams,
# serves a file over HTTP, prints its counters and powers off.
#   scripts/guest.sh [DIR]     (default: $USKB_GUEST_DIR or /var/tmp/uskb-guest)
#   scripts/guest.sh --accel [DIR]
# Prints DIR on success (DIR/vmlinuz, DIR/initramfs.cpio.gz); kept there, so
# a second call costs nothing. The packages are only downloaded and
# unpacked (apt-get download), never installed: the host's /boot stays as
# it is. Exit 1 with a message when the archive cannot be reached.
# With --accel it prints QEMU's accelerator options for that guest instead:
# "-accel kvm -cpu max,-arch-capabilities" when a KVM guest boots the
# kernel here (a boot without a root file system must reach its panic
# within 30 s), else "-accel tcg -cpu max". /dev/kvm alone does not tell:
# under nested KVM on this project's AMD VMs, QEMU 7.2 aborts setting MSR
# 0x10a, and with that MSR hidden the guest's kernel hangs before its first
# line. The answer is kept in DIR/accel for this boot, this kernel, these
# options and this QEMU (a KVM boot slowed past 30 s by load stays TCG
# until then). USKB_GUEST_ACCEL=kvm or tcg answers without the probe.
# The guest's kernel command line takes gip= (its address/prefix), gpeer=
# (the address it pings and sends to), gcount= (pings and datagrams),
# gsize= (ping payload) and gtcp= (0, the default: nothing; else a file of
# that many KiB of zeros served by busybox httpd as http://GIP/zero, until a
# connection to the guest's TCP port 5002 says it was fetched, or 60 s).
set -eu
accel=0
[ "${1:-}" = --accel ] && { accel=1; shift; }
dir=${1:-${USKB_GUEST_DIR:-/var/tmp/uskb-guest}}
kvm_opts="-accel kvm -cpu max,-arch-capabilities"
tcg_opts="-accel tcg -cpu max"

# what the caller asked for: DIR, or the accelerator's options
done_ok() {
	[ $accel = 1 ] || { echo "$dir"; exit 0; }
	case ${USKB_GUEST_ACCEL:-} in
	kvm) echo "$kvm_opts"; exit 0 ;;
	tcg) echo "$tcg_opts"; exit 0 ;;
	esac
	if [ ! -w /dev/kvm ] || ! command -v qemu-system-x86_64 >/dev/null; then
		echo "$tcg_opts"
		exit 0
	fi
	key="$(cat /proc/sys/kernel/random/boot_id) $(md5sum <"$dir/vmlinuz" | cut -c1-32)"
	key="$key $kvm_opts $(qemu-system-x86_64 --version | head -1)"
	# one read of the kept answer (another caller may be replacing it)
	k="" o=""
	{ read -r k && read -r o; } <"$dir/accel" 2>/dev/null || true
	if [ "$k" = "$key" ] && { [ "$o" = "$kvm_opts" ] || [ "$o" = "$tcg_opts" ]; }; then
		echo "$o"
		exit 0
	fi
	# shellcheck disable=SC2086 # the options are words
	if timeout 30 qemu-system-x86_64 -machine q35 $kvm_opts -m 128 -nographic -no-reboot \
		-kernel "$dir/vmlinuz" -append "console=ttyS0 panic=-1" </dev/null 2>&1 |
		grep -q "Kernel panic"; then
		o=$kvm_opts
	else
		o=$tcg_opts
	fi
	# replaced whole, so a reader sees the old answer or the new; not kept if DIR is read-only
	{ printf '%s\n%s\n' "$key" "$o" >"$dir/accel.$$" && mv -f "$dir/accel.$$" "$dir/accel"; } \
		2>/dev/null || rm -f "$dir/accel.$$" 2>/dev/null || true
	echo "$o"
	exit 0
}

# the version of /init below: a change rebuilds the initramfs (the packages stay)
ver=4
if [ -s "$dir/vmlinuz" ] && [ -s "$dir/initramfs.cpio.gz" ] && [ "$(cat "$dir/init.version" 2>/dev/null)" = $ver ]; then
	done_ok
fi
mkdir -p "$dir/debs"
cd "$dir/debs"
if ! ls linux-image-*.deb >/dev/null 2>&1 || ! ls busybox-static_*.deb >/dev/null 2>&1; then
	# the kernel package linux-image-amd64 depends on (its name has the version)
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
	if [ -z "$kpkg" ]; then
		timeout 120 apt-get update -qq >/dev/null 2>&1 || true
		kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
	fi
	[ -n "$kpkg" ] || { echo "guest.sh: no linux-image-amd64 in the package lists (apt-get update?)" >&2; exit 1; }
	# (bounded: a mirror that stalls costs the test its skip, not the suite its time)
	timeout 150 apt-get download "$kpkg" busybox-static >/dev/null 2>&1 ||
		{ echo "guest.sh: apt-get download $kpkg busybox-static failed (or took 150 s)" >&2; exit 1; }
fi
rm -rf "$dir/kpkg" "$dir/bbpkg" "$dir/root"
dpkg-deb -x linux-image-*.deb "$dir/kpkg"
dpkg-deb -x busybox-static_*.deb "$dir/bbpkg"
kv=$(ls "$dir/kpkg/lib/modules")
r=$dir/root
mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/lib/modules" "$r/var/log" "$r/etc"
cp "$dir/bbpkg/bin/busybox" "$r/bin/"
for a in $("$r/bin/busybox" --list); do
	[ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
done
mods="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net"
for m in $mods; do
	f=$(find "$dir/kpkg/lib/modules/$kv" -name "$m.ko" | head -1)
	[ -n "$f" ] || { echo "guest.sh: no $m.ko in $kpkg" >&2; exit 1; }
	cp "$f" "$r/lib/modules/"
done
cat >"$r/init" <<EOF
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
: \${gip:=198.18.3.2/24} \${gpeer:=198.18.3.1} \${gcount:=10} \${gsize:=200} \${gtcp:=0}
for m in $mods; do insmod /lib/modules/\$m.ko || echo "GUEST: insmod \$m failed"; done
i=0; while [ ! -e /sys/class/net/eth0 ] && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done
[ -e /sys/class/net/eth0 ] || { echo "GUEST: no eth0"; poweroff -f; }
ip link set lo up; ip link set eth0 up; ip addr add \$gip dev eth0
ping -c \$gcount -s \$gsize -i 0.1 -W 3 \$gpeer | sed 's/^/GUEST: /'
# UDP: busybox's nc has no -u; remote syslog sends one datagram per logger call
syslogd -n -R \$gpeer:5514 & sl=\$!; sleep 0.3
n=0; while [ \$n -lt \$gcount ]; do logger -t uskb "datagram \$n"; n=\$((n+1)); done
sleep 1; kill \$sl
# TCP: a file over HTTP (large writes: with TSO, frames of up to 64 KiB), until the peer says it has it
if [ \$gtcp -gt 0 ]; then
	mkdir -p /www; dd if=/dev/zero of=/www/zero bs=1024 count=\$gtcp 2>/dev/null
	httpd -p 80 -h /www
	echo "GUEST: httpd up"
	timeout 60 nc -l -p 5002 >/dev/null 2>&1
	echo "GUEST: tcp done"
fi
set -- \$(grep eth0: /proc/net/dev | tr ':' ' ')
# the virtio feature bits the driver took (one character a bit, from bit 0)
echo "GUEST-RESULT rx_packets=\$3 tx_packets=\${11} features=\$(cat /sys/class/net/eth0/device/features)"
poweroff -f
EOF
chmod +x "$r/init"
cp "$dir/kpkg/boot/vmlinuz-$kv" "$dir/vmlinuz"
(cd "$r" && find . | "$dir/bbpkg/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -9) >"$dir/initramfs.cpio.gz.new"
mv "$dir/initramfs.cpio.gz.new" "$dir/initramfs.cpio.gz"
echo $ver >"$dir/init.version"
rm -rf "$dir/kpkg" "$dir/bbpkg"
done_ok
