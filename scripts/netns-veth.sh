#!/bin/sh
# SPDX-License-Identifier: MIT
# A private test network: two network namespaces joined by a veth pair,
# addresses from 198.18.0.0/15 (RFC 2544 benchmarking), permanent
# neighbour entries, optional queues, an optional XDP program that drops
# everything on the receiving side and an optional tc program that drops
# everything leaving the sending side.
#
#   scripts/netns-veth.sh up   [-p PREFIX] [-q QUEUES] [-x | -g] [-s]
#   scripts/netns-veth.sh down [-p PREFIX]
#   scripts/netns-veth.sh show [-p PREFIX]
#
#   PREFIX-a  holds PREFIX0  02:00:00:00:00:01  198.18.0.1/24  fd00::1/64
#   PREFIX-b  holds PREFIX1  02:00:00:00:00:02  198.18.0.2/24  fd00::2/64
#
# -p PREFIX  names (default uskb; at most 10 characters)
# -q N       N TX and RX queues on each end (default 1)
# -x         attach an XDP program dropping every frame to PREFIX1
# -g         attach an XDP program passing every frame on to PREFIX1's stack:
#            a veth takes frames sent by XDP (xdp-live:) only with an XDP
#            program (or GRO) on (bpf/xdp_pass.c)
# -s         a sink on the sending side: a tc clsact egress program on PREFIX0
#            drops every frame it sends, so zero-copy sends complete without
#            the copy a receiver on this host would take (bpf/tc_drop.c)
#
# Needs root (CAP_NET_ADMIN). Run a command inside with
#   ip netns exec uskb-a uskb-pktgen -i packet:uskb0 ...
# "down" removes the namespaces and with them the pair and any XDP program.
# uskb-pktgen --veth makes its pair for a run with this script (PREFIX
# uvPID), installed as PREFIX/share/uskb/netns-veth.sh.
set -eu

cmd=${1:-}
[ $# -gt 0 ] && shift
prefix=uskb queues=1 xdp=0 sink=0
while getopts "p:q:xgs" o; do
	case $o in
	p) prefix=$OPTARG ;;
	q) queues=$OPTARG ;;
	x) xdp=1 ;;
	g) xdp=2 ;;
	s) sink=1 ;;
	*) echo "usage: $0 up|down|show [-p PREFIX] [-q QUEUES] [-x | -g] [-s]" >&2; exit 2 ;;
	esac
done
case $prefix in
*[!a-zA-Z0-9_]* | "") echo "$0: PREFIX must be letters, digits or _" >&2; exit 2 ;;
esac
[ ${#prefix} -le 10 ] || { echo "$0: PREFIX longer than 10 characters" >&2; exit 2; }
case $queues in
*[!0-9]* | "" | 0) echo "$0: -q wants a queue count from 1" >&2; exit 2 ;;
esac
na=$prefix-a nb=$prefix-b da=${prefix}0 db=${prefix}1

need_root() {
	[ "$(id -u)" = 0 ] || { echo "$0: needs root (CAP_NET_ADMIN) to create namespaces" >&2; exit 1; }
	command -v ip >/dev/null || { echo "$0: needs ip (apt-get install iproute2)" >&2; exit 1; }
}

bpf_object() { # NAME: built on demand, bpf/NAME.c -> build/bpf/NAME.o; installed: next to this script
	inst=$(cd "$(dirname "$0")" && pwd)/bpf/$1.o
	[ -f "$inst" ] && { echo "$inst"; return; }
	here=$(cd "$(dirname "$0")/.." && pwd)
	obj=$here/build/bpf/$1.o
	if [ ! -f "$obj" ] || [ "$here/bpf/$1.c" -nt "$obj" ]; then
		command -v clang >/dev/null || { echo "$0: -x, -g and -s need clang (scripts/deps.sh)" >&2; exit 1; }
		mkdir -p "$(dirname "$obj")"
		clang -O2 -target bpf -I"/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" \
			-c "$here/bpf/$1.c" -o "$obj"
	fi
	echo "$obj"
}

down() {
	ip netns del "$na" 2>/dev/null || true
	ip netns del "$nb" 2>/dev/null || true
}

case $cmd in
up)
	need_root
	if ip netns list | grep -qw "$na"; then
		echo "$0: $na exists: run '$0 down -p $prefix' first" >&2
		exit 1
	fi
	obj="" tcobj=""
	[ $xdp = 1 ] && obj=$(bpf_object xdp_drop)
	[ $xdp = 2 ] && obj=$(bpf_object xdp_pass)
	[ $sink = 1 ] && tcobj=$(bpf_object tc_drop)
	trap 'down' EXIT
	ip netns add "$na"
	ip netns add "$nb"
	ip -n "$na" link add "$da" numtxqueues "$queues" numrxqueues "$queues" type veth \
		peer name "$db" netns "$nb" numtxqueues "$queues" numrxqueues "$queues"
	ip -n "$na" link set "$da" address 02:00:00:00:00:01
	ip -n "$nb" link set "$db" address 02:00:00:00:00:02
	for side in "$na $da 198.18.0.1 fd00::1" "$nb $db 198.18.0.2 fd00::2"; do
		set -- $side
		ip -n "$1" link set lo up
		# quiet ends: no link-local address and no router solicitation; the
		# multicast listener reports for fd00::/64 go out at once, while the
		# pair is made, so that afterwards each end receives only what is sent
		ip netns exec "$1" sysctl -qw net.ipv6.conf."$2".addr_gen_mode=1 \
			net.ipv6.conf."$2".router_solicitations=0 net.ipv6.conf."$2".accept_ra=0 \
			net.ipv6.conf."$2".mldv2_unsolicited_report_interval=0 \
			net.ipv6.conf."$2".mldv1_unsolicited_report_interval=0
		ip -n "$1" addr add "$3/24" dev "$2"
		ip -n "$1" addr add "$4/64" dev "$2" nodad
		ip -n "$1" link set "$2" up
	done
	ip -n "$na" neigh replace 198.18.0.2 lladdr 02:00:00:00:00:02 dev "$da" nud permanent
	ip -n "$nb" neigh replace 198.18.0.1 lladdr 02:00:00:00:00:01 dev "$db" nud permanent
	ip -n "$na" neigh replace fd00::2 lladdr 02:00:00:00:00:02 dev "$da" nud permanent
	ip -n "$nb" neigh replace fd00::1 lladdr 02:00:00:00:00:01 dev "$db" nud permanent
	[ -n "$obj" ] && ip -n "$nb" link set dev "$db" xdp obj "$obj" sec xdp
	# the listener reports go out as the carrier comes up: wait until both ends
	# have received something and then nothing for 100 ms (at most 2 s)
	last="" still=0
	for _ in $(seq 100); do
		now=$(ip netns exec "$na" cat /sys/class/net/"$da"/statistics/rx_packets):$(
			ip netns exec "$nb" cat /sys/class/net/"$db"/statistics/rx_packets)
		case $now in 0:* | *:0) still=0 ;; "$last") still=$((still + 1)) ;; *) still=0 ;; esac
		[ $still -ge 5 ] && break
		last=$now
		sleep 0.02
	done
	# the sink after that: with it, nothing of this side reaches the other
	if [ -n "$tcobj" ]; then
		ip netns exec "$na" tc qdisc add dev "$da" clsact
		ip netns exec "$na" tc filter add dev "$da" egress bpf direct-action obj "$tcobj" sec tc
	fi
	trap - EXIT
	echo "$na/$da 198.18.0.1 <-> $nb/$db 198.18.0.2, $queues queue(s)$([ $xdp = 1 ] && echo ", XDP drop on $db")$([ $xdp = 2 ] && echo ", XDP pass on $db")$([ $sink = 1 ] && echo ", tc egress drop on $da")"
	;;
down)
	need_root
	down
	;;
show)
	for n in "$na" "$nb"; do
		ip netns list | grep -qw "$n" || { echo "$n: absent"; continue; }
		echo "== $n"
		ip -n "$n" -br addr
		ip -n "$n" -d link show | grep -o 'prog/xdp id [0-9]*' || true
	done
	;;
*)
	echo "usage: $0 up|down|show [-p PREFIX] [-q QUEUES] [-x] [-s]" >&2
	exit 2
	;;
esac
