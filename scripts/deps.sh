#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages uskb builds, tests, fuzzes and benchmarks with
# (libxdp-dev and libbpf-dev for the xdp: device, liburing-dev for the
# socket devices' uring mode),
# when they are missing. Idempotent; needs root (or sudo) only to install.
#   scripts/deps.sh           build + test dependencies
#   scripts/deps.sh --bench   also the benchmark peers (libdpdk-dev; dpdk-dev for dpdk-testpmd; netsniff-ng for trafgen; iperf3;
#                             openvswitch-switch for bench/dp: its userspace datapath runs without the kernel module)
#   scripts/deps.sh --interop the peers the socket devices are tested against (qemu-system-x86, passt)
set -eu

pkgs="build-essential pkg-config clang libclang-rt-14-dev valgrind tshark iproute2 libxdp-dev libbpf-dev liburing-dev libmnl-dev man-db bpftool gdb"
for a in "$@"; do
	case $a in
	--bench) pkgs="$pkgs libdpdk-dev dpdk-dev netsniff-ng iperf3 openvswitch-switch" ;;
	--interop) pkgs="$pkgs qemu-system-x86 passt" ;;
	*) echo "usage: $0 [--bench] [--interop]" >&2; exit 2 ;;
	esac
done

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "scripts/deps.sh: installing:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "scripts/deps.sh: not root and no sudo; please install:$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# tshark asks whether non-root users may capture; answer no without a prompt
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
