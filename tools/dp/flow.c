/* SPDX-License-Identifier: MIT */
/*
 * The flow table: exact match on the whole key, one table per datapath
 * thread. Only its thread reads or writes it (flows come to it as
 * FLOW_CMD_NEW messages through its reply rings), so lookups take no lock
 * and no atomic: the kernel needs RCU because any CPU may receive any
 * packet; here a port queue is one thread's, and a key holds its port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>

#include "dp.h"

uint32_t key_hash(const struct uskb_ovs_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < sizeof(*k); i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32));
}
_Static_assert(sizeof(struct uskb_ovs_key) % 8 == 0, "key_hash reads the key in words");

int table_init(struct table *tab, unsigned int limit)
{
	uint32_t n = 1024;

	while (n < limit && n < (1u << 22))
		n <<= 1;
	tab->bucket = calloc(n, sizeof(*tab->bucket));
	if (!tab->bucket)
		return -ENOMEM;
	tab->mask = n - 1;
	tab->count = 0;
	return 0;
}

void table_destroy(struct table *tab)
{
	for (uint32_t i = 0; tab->bucket && i <= tab->mask; i++) {
		struct flow *f = tab->bucket[i], *next;

		for (; f; f = next) {
			next = f->next;
			free(f);
		}
	}
	free(tab->bucket);
	tab->bucket = NULL;
	tab->count = 0;
}

struct flow *table_lookup(struct table *tab, const struct uskb_ovs_key *key, uint32_t hash)
{
	for (struct flow *f = tab->bucket[hash & tab->mask]; f; f = f->next)
		if (f->hash == hash && !memcmp(&f->key, key, sizeof(*key)))
			return f;
	return NULL;
}

static struct flow *flow_new(const struct uskb_ovs_key *key, uint32_t hash, const struct actions *a)
{
	struct flow *f = malloc(offsetof(struct flow, acts) + ACTIONS_SIZE(a->n));

	if (!f)
		return NULL;
	f->key = *key;
	f->hash = hash;
	f->packets = f->bytes = 0;
	f->created_ns = f->used_ns = now_ns();
	memcpy(&f->acts, a, ACTIONS_SIZE(a->n));
	return f;
}

int table_insert(struct table *tab, const struct uskb_ovs_key *key, const struct actions *a,
		 unsigned int limit)
{
	uint32_t hash = key_hash(key);
	struct flow **pp, *f;

	for (pp = &tab->bucket[hash & tab->mask]; *pp; pp = &(*pp)->next) {
		struct flow *old = *pp;

		if (old->hash != hash || memcmp(&old->key, key, sizeof(*key)))
			continue;
		/* a second miss raced the first one's flow: the newest actions win */
		if (a->n <= old->acts.n) {
			memcpy(&old->acts, a, ACTIONS_SIZE(a->n));
			return -EEXIST;
		}
		f = flow_new(key, hash, a);
		if (!f)
			return -ENOMEM;
		f->next = old->next;
		*pp = f;
		free(old);
		return -EEXIST;
	}
	if (tab->count >= limit)
		return -ENOSPC;
	f = flow_new(key, hash, a);
	if (!f)
		return -ENOMEM;
	f->next = tab->bucket[hash & tab->mask];
	tab->bucket[hash & tab->mask] = f;
	tab->count++;
	return 0;
}

unsigned int table_expire(struct table *tab, uint64_t older_than_ns)
{
	unsigned int gone = 0;

	for (uint32_t i = 0; i <= tab->mask; i++) {
		struct flow **pp = &tab->bucket[i];

		while (*pp) {
			struct flow *f = *pp;

			if (f->used_ns < older_than_ns) {
				*pp = f->next;
				free(f);
				gone++;
			} else {
				pp = &f->next;
			}
		}
	}
	tab->count -= gone;
	return gone;
}

/* ---- printing, in ovs-dpctl dump-flows' words ---- */

static void mac(FILE *f, const uint8_t *m)
{
	fprintf(f, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void ip4(FILE *f, uint32_t be)
{
	const uint8_t *b = (const uint8_t *)&be;

	fprintf(f, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
}

static void ip6(FILE *f, const uint8_t *a)
{
	char s[INET6_ADDRSTRLEN];

	fputs(inet_ntop(AF_INET6, a, s, sizeof(s)) ? s : "?", f);
}

static const char *frag_name(uint8_t frag)
{
	return frag == OVS_FRAG_TYPE_FIRST ? "first" : frag == OVS_FRAG_TYPE_LATER ? "later" : "no";
}

void key_print(FILE *f, const struct uskb_ovs_key *k)
{
	uint16_t type = ntohs(k->eth_type);

	if (k->recirc_id)
		fprintf(f, "recirc_id(%#x),", k->recirc_id);
	if (k->priority)
		fprintf(f, "skb_priority(%#x),", k->priority);
	fprintf(f, "in_port(%u),", k->in_port);
	if (k->mark)
		fprintf(f, "skb_mark(%#x),", k->mark);
	fputs("eth(src=", f);
	mac(f, k->eth_src);
	fputs(",dst=", f);
	mac(f, k->eth_dst);
	fputs("),", f);
	if (k->vlan_tci)
		fprintf(f, "%s(vid=%u,pcp=%u),encap(", k->vlan_tpid == htons(ETH_P_8021AD) ? "svlan" : "vlan",
			ntohs(k->vlan_tci) & 0xfff, ntohs(k->vlan_tci) >> 13);
	if (k->cvlan_tci)
		fprintf(f, "vlan(vid=%u,pcp=%u),encap(", ntohs(k->cvlan_tci) & 0xfff,
			ntohs(k->cvlan_tci) >> 13);
	if (type == ETH_P_802_2)
		fputs("eth_type(802.2)", f);
	else
		fprintf(f, "eth_type(0x%04x)", type);
	if (type == ETH_P_IP) {
		fputs(",ipv4(src=", f);
		ip4(f, k->addr.ipv4.src);
		fputs(",dst=", f);
		ip4(f, k->addr.ipv4.dst);
		fprintf(f, ",proto=%u,tos=%#x,ttl=%u,frag=%s)", k->ip_proto, k->ip_tos, k->ip_ttl,
			frag_name(k->ip_frag));
	} else if (type == ETH_P_IPV6) {
		fputs(",ipv6(src=", f);
		ip6(f, k->addr.ipv6.src);
		fputs(",dst=", f);
		ip6(f, k->addr.ipv6.dst);
		fprintf(f, ",label=%#x,proto=%u,tclass=%#x,hlimit=%u,frag=%s)", ntohl(k->ipv6_label),
			k->ip_proto, k->ip_tos, k->ip_ttl, frag_name(k->ip_frag));
	} else if (type == ETH_P_ARP || type == ETH_P_RARP) {
		fputs(",arp(sip=", f);
		ip4(f, k->addr.ipv4.src);
		fputs(",tip=", f);
		ip4(f, k->addr.ipv4.dst);
		fprintf(f, ",op=%u,sha=", k->ip_proto);
		mac(f, k->arp_sha);
		fputs(",tha=", f);
		mac(f, k->arp_tha);
		fputs(")", f);
	}
	if ((type == ETH_P_IP || type == ETH_P_IPV6) && k->ip_frag != OVS_FRAG_TYPE_LATER) {
		if (k->ip_proto == 6)
			fprintf(f, ",tcp(src=%u,dst=%u),tcp_flags(%#x)", ntohs(k->tp_src),
				ntohs(k->tp_dst), ntohs(k->tcp_flags));
		else if (k->ip_proto == 17)
			fprintf(f, ",udp(src=%u,dst=%u)", ntohs(k->tp_src), ntohs(k->tp_dst));
		else if (k->ip_proto == 132)
			fprintf(f, ",sctp(src=%u,dst=%u)", ntohs(k->tp_src), ntohs(k->tp_dst));
		else if (k->ip_proto == 1 && type == ETH_P_IP)
			fprintf(f, ",icmp(type=%u,code=%u)", ntohs(k->tp_src), ntohs(k->tp_dst));
		else if (k->ip_proto == 58 && type == ETH_P_IPV6)
			fprintf(f, ",icmpv6(type=%u,code=%u)", ntohs(k->tp_src), ntohs(k->tp_dst));
	}
	if (k->cvlan_tci)
		fputs(")", f);
	if (k->vlan_tci)
		fputs(")", f);
}

void actions_print(FILE *f, const struct actions *a)
{
	if (!a->n)
		fputs("drop", f);
	for (int i = 0; i < a->n; i++) {
		const struct action *x = &a->a[i];

		if (i)
			fputc(',', f);
		switch (x->type) {
		case OVS_ACTION_ATTR_OUTPUT:
			fprintf(f, "%u", x->port);
			break;
		case OVS_ACTION_ATTR_PUSH_VLAN:
			fprintf(f, "push_vlan(vid=%u,pcp=%u)", ntohs(x->tci) & 0xfff, ntohs(x->tci) >> 13);
			break;
		case OVS_ACTION_ATTR_POP_VLAN:
			fputs("pop_vlan", f);
			break;
		case OVS_ACTION_ATTR_USERSPACE:
			fprintf(f, "userspace(userdata_len=%u)",
				a->udlen >= NLA_HDRLEN ? a->udlen - NLA_HDRLEN : 0);
			break;
		}
	}
}

void flow_print(FILE *f, const struct flow *fl, uint64_t now)
{
	key_print(f, &fl->key);
	fprintf(f, ", packets:%" PRIu64 ", bytes:%" PRIu64 ", used:", fl->packets, fl->bytes);
	if (fl->packets)
		fprintf(f, "%.3fs", (double)(now - fl->used_ns) / 1e9);
	else
		fputs("never", f);
	fputs(", actions:", f);
	actions_print(f, &fl->acts);
	fputc('\n', f);
}
