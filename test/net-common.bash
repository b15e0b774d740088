# SPDX-License-Identifier: MIT
# Sourced by the root-only network tests (test/net-*.sh):
# finds the tool and scripts/netns-veth.sh from build/test/ (or
# build/VARIANT/test/), skips (exit 77) without root, iproute2 or network
# namespaces, and picks the test's name prefix P (one letter + the pid).
#   source "$(dirname "$0")/net-common.bash" LETTER
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.bash"
root=$(cd "$here/../.." && pwd)
[ -f "$root/scripts/netns-veth.sh" ] || root=$(cd "$here/../../.." && pwd)
pg=${USKB_PKTGEN:-$here/../tools/uskb-pktgen}
net=$root/scripts/netns-veth.sh
[ "$(id -u)" = 0 ] || { echo "not root: the veth tests need CAP_NET_ADMIN"; exit 77; }
command -v ip >/dev/null || { echo "no ip (iproute2)"; exit 77; }
p=$1$(($$ % 100000))
ip netns add "$p-probe" 2>/dev/null || { echo "cannot create network namespaces here"; exit 77; }
ip netns del "$p-probe"
# Packet sockets in netns $1 with a real filter (more than one instruction).
filtered_sockets() {
	ip netns exec "$1" ss -0 -b 2>/dev/null | grep -Ec 'bpf filter \(([2-9]|[1-9][0-9]+)\)'
}
# Wait (up to 15 s) until a tshark started in netns $1, its stderr in $2,
# captures through its own filter; $3: filtered_sockets before it started;
# $4: its pid (1 at once if it ended: it could not capture).
# libpcap attaches a drop-all filter (one instruction) before the real one
# and drops what arrives in between, after tshark has said "Capturing on":
# a sender started then loses its frames. So wait for one more packet
# socket with a longer filter. Where ss cannot list packet sockets (no ss,
# no packet_diag), half a second after "Capturing on" has to do.
capture_ready() {
	for _ in $(seq 150); do
		if grep -q "Capturing on" "$2" 2>/dev/null; then
			[ "$(filtered_sockets "$1")" -gt "$3" ] && return 0
			if ! ip netns exec "$1" ss -0 2>/dev/null | grep -q p_raw; then
				sleep 0.5
				return 0
			fi
		fi
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
