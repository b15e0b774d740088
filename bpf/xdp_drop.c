/* SPDX-License-Identifier: MIT */
/*
 * XDP program for the receiving end of a test veth pair: count and drop
 * every frame, so that the receiver is never the bottleneck of a
 * transmit benchmark. Built with clang -target bpf (scripts/netns-veth.sh).
 */
#include <linux/bpf.h>

__attribute__((section("xdp"), used)) int xdp_drop(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_DROP;
}

__attribute__((section("license"), used)) char _license[] = "Dual MIT/GPL";
