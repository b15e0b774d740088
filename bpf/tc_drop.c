/* SPDX-License-Identifier: MIT */
/*
 * A tc clsact egress program that drops every frame: a sink that takes no
 * copy. Zero-copy sends through it complete as "not copied" (the kernel
 * frees the skb at egress), which a receiver on this host never gives:
 * there the kernel copies. Built with clang -target bpf (Makefile,
 * scripts/netns-veth.sh -s), attached with
 *   tc qdisc add dev IF clsact
 *   tc filter add dev IF egress bpf direct-action obj tc_drop.o sec tc
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

__attribute__((section("tc"), used)) int tc_drop(struct __sk_buff *skb)
{
	(void)skb;
	return TC_ACT_SHOT;
}

__attribute__((section("license"), used)) char _license[] = "Dual MIT/GPL";
