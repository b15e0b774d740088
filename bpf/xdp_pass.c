/* SPDX-License-Identifier: MIT */
/*
 * XDP program for the receiving end of a test veth pair: pass every frame
 * on to the stack. A veth takes frames sent to it by XDP (XDP_TX or a
 * redirect, as the xdp-live: device sends) only while it runs an XDP
 * program of its own or has GRO on; this is the program that changes
 * nothing else (scripts/netns-veth.sh -g).
 */
#include <linux/bpf.h>

__attribute__((section("xdp"), used)) int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

__attribute__((section("license"), used)) char _license[] = "Dual MIT/GPL";
