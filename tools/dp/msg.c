/* SPDX-License-Identifier: MIT */
/*
 * Every netlink message uskb-dp reads or writes: upcalls (built by
 * uskb_ovs_upcall), FLOW_CMD_NEW and PACKET_CMD_EXECUTE (built here by the
 * handlers, parsed here by the datapath). Parsing and per-type validation
 * are libmnl's; on top of it this file checks what the datapath needs:
 * no attribute twice, none it does not know, lengths exact, the packet
 * last, the key in the datapath's own encoding, ports that exist.
 *
 * A message may be an skb whose packet lies in page frags: the parser is
 * given its linear head and its length, and insists that every attribute
 * header (and every attribute but the packet) lies in that head, so it
 * never reads past what it was given.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>

#include "dp.h"

#define VLAN_CFI 0x1000

struct walk {
	const uint8_t *head;
	size_t headlen, len;
	uint16_t family;
	struct dp_msg *m;
	const char *why;
	unsigned int seen; /* bit per attribute type */
	bool after_packet;
	size_t end; /* where the last attribute seen ends (aligned) */
};

/*
 * libmnl stops at the first attribute that does not fit, and calls that
 * the end: a parse is whole only when its attributes reach the end.
 */
static bool covered(const void *base, size_t len, const void *last_end)
{
	return (size_t)((const uint8_t *)last_end - (const uint8_t *)base) >= len;
}

static const void *attr_end(const struct nlattr *attr)
{
	return (const uint8_t *)attr + NLA_ALIGN(attr->nla_len);
}

static int msg_attr(const struct nlattr *attr, void *data)
{
	struct walk *w = data;
	unsigned int type = mnl_attr_get_type(attr);
	size_t off = (size_t)((const uint8_t *)attr - w->head);
	size_t end = off + NLA_ALIGN(attr->nla_len);

	w->end = end;
	if (w->after_packet)
		return w->why = "an attribute after the packet", MNL_CB_ERROR;
	if (type >= 32 || (w->seen & (1u << type)))
		return w->why = "an attribute twice, or one out of range", MNL_CB_ERROR;
	w->seen |= 1u << type;
	if (w->family == DP_FAMILY_PACKET && type == OVS_PACKET_ATTR_PACKET) {
		if (off + NLA_HDRLEN > w->headlen)
			return w->why = "the packet attribute's header is not in the head", MNL_CB_ERROR;
		if (mnl_attr_get_payload_len(attr) < ETH_HLEN)
			return w->why = "a packet shorter than an Ethernet header", MNL_CB_ERROR;
		/* libmnl allows the message's length rounded up: the packet may not */
		if (off + attr->nla_len > w->len || end < w->len)
			return w->why = "a packet attribute that is not the message's end", MNL_CB_ERROR;
		w->m->pkt_off = (unsigned int)(off + NLA_HDRLEN);
		w->m->pkt_len = mnl_attr_get_payload_len(attr);
		w->after_packet = true;
		return MNL_CB_STOP; /* the last: no header after it is read */
	}
	/* whole in the head, and so is the next attribute's header */
	if (off + attr->nla_len > w->headlen || (end < w->len && end + NLA_HDRLEN > w->headlen))
		return w->why = "an attribute past the message's head", MNL_CB_ERROR;
	if (w->family == DP_FAMILY_PACKET) {
		switch (type) {
		case OVS_PACKET_ATTR_KEY:
			if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0)
				return w->why = "a bad key nest", MNL_CB_ERROR;
			w->m->key = attr;
			return MNL_CB_OK;
		case OVS_PACKET_ATTR_ACTIONS:
			if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0)
				return w->why = "a bad actions nest", MNL_CB_ERROR;
			w->m->actions = attr;
			return MNL_CB_OK;
		case OVS_PACKET_ATTR_USERDATA:
			if (mnl_attr_validate(attr, MNL_TYPE_BINARY) < 0)
				return w->why = "bad userdata", MNL_CB_ERROR;
			w->m->userdata = attr;
			return MNL_CB_OK;
		case OVS_PACKET_ATTR_HASH:
			if (mnl_attr_validate(attr, MNL_TYPE_U64) < 0)
				return w->why = "a hash that is not 8 bytes", MNL_CB_ERROR;
			w->m->hash = mnl_attr_get_u64(attr);
			w->m->have_hash = true;
			return MNL_CB_OK;
		case OVS_PACKET_ATTR_PROBE:
			if (mnl_attr_validate(attr, MNL_TYPE_FLAG) < 0)
				return w->why = "a probe flag with a payload", MNL_CB_ERROR;
			return MNL_CB_OK;
		}
	} else {
		switch (type) {
		case OVS_FLOW_ATTR_KEY:
			if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0)
				return w->why = "a bad key nest", MNL_CB_ERROR;
			w->m->key = attr;
			return MNL_CB_OK;
		case OVS_FLOW_ATTR_ACTIONS:
			if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0)
				return w->why = "a bad actions nest", MNL_CB_ERROR;
			w->m->actions = attr;
			return MNL_CB_OK;
		case OVS_FLOW_ATTR_UFID:
			if (mnl_attr_get_payload_len(attr) < 1 || mnl_attr_get_payload_len(attr) > 16)
				return w->why = "a UFID not of 1 to 16 bytes", MNL_CB_ERROR;
			return MNL_CB_OK;
		case OVS_FLOW_ATTR_MASK:
			return w->why = "a flow mask: this datapath matches exactly", MNL_CB_ERROR;
		}
	}
	return w->why = "an attribute this datapath does not know", MNL_CB_ERROR;
}

int msg_parse(const uint8_t *head, size_t headlen, size_t len, struct dp_msg *m,
	      const char **why)
{
	const size_t hdr = NLMSG_HDRLEN + GENL_HDRLEN + sizeof(struct ovs_header);
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)head;
	const struct genlmsghdr *g;
	struct walk w = { .head = head, .headlen = headlen, .len = len, .m = m };
	int ret;

	memset(m, 0, sizeof(*m));
	if (headlen > len || headlen < hdr || len > 0x7fffffff) {
		*why = "shorter than its headers";
		return -EINVAL;
	}
	if (!mnl_nlmsg_ok(nlh, (int)len) || nlh->nlmsg_len != len) {
		*why = "nlmsg_len is not the message's length";
		return -EINVAL;
	}
	m->family = w.family = nlh->nlmsg_type;
	m->pid = nlh->nlmsg_pid;
	if (m->family != DP_FAMILY_PACKET && m->family != DP_FAMILY_FLOW) {
		*why = "not an ovs_packet or ovs_flow message";
		return -EINVAL;
	}
	g = mnl_nlmsg_get_payload(nlh);
	m->genl_cmd = g->cmd;
	if (len > hdr && headlen < hdr + NLA_HDRLEN) {
		*why = "the first attribute's header is not in the head";
		return -EINVAL;
	}
	w.end = hdr;
	ret = mnl_attr_parse(nlh, GENL_HDRLEN + sizeof(struct ovs_header), msg_attr, &w);
	if ((ret != MNL_CB_OK && ret != MNL_CB_STOP) || w.end < len) {
		*why = w.why ? w.why : "an attribute that does not fit the message";
		return -EINVAL;
	}
	if (!m->key) {
		*why = "no key";
		return -EINVAL;
	}
	if (m->family == DP_FAMILY_PACKET && !m->pkt_len) {
		*why = "no packet";
		return -EINVAL;
	}
	return 0;
}

/* ---- keys ---- */

static const uint8_t key_size[OVS_KEY_ATTR_MAX + 1] = {
	[OVS_KEY_ATTR_RECIRC_ID] = 4, [OVS_KEY_ATTR_DP_HASH] = 4, [OVS_KEY_ATTR_PRIORITY] = 4,
	[OVS_KEY_ATTR_IN_PORT] = 4,   [OVS_KEY_ATTR_SKB_MARK] = 4, [OVS_KEY_ATTR_ETHERNET] = 12,
	[OVS_KEY_ATTR_ETHERTYPE] = 2, [OVS_KEY_ATTR_VLAN] = 2,	   [OVS_KEY_ATTR_IPV4] = 12,
	[OVS_KEY_ATTR_IPV6] = 40,     [OVS_KEY_ATTR_IPV6_EXTHDRS] = 2, [OVS_KEY_ATTR_ARP] = 24,
	[OVS_KEY_ATTR_TCP] = 4,	      [OVS_KEY_ATTR_TCP_FLAGS] = 2, [OVS_KEY_ATTR_UDP] = 4,
	[OVS_KEY_ATTR_SCTP] = 4,
	[OVS_KEY_ATTR_ICMP] = 2,      [OVS_KEY_ATTR_ICMPV6] = 2,   [OVS_KEY_ATTR_ND] = 28,
};

struct key_tb {
	const struct nlattr *a[OVS_KEY_ATTR_MAX + 1];
	const char *why;
	const void *end;
};

static int key_attr(const struct nlattr *attr, void *data)
{
	struct key_tb *tb = data;
	unsigned int type = mnl_attr_get_type(attr);

	tb->end = attr_end(attr);
	if (type > OVS_KEY_ATTR_MAX || (type != OVS_KEY_ATTR_ENCAP && !key_size[type]))
		return tb->why = "a key attribute this datapath does not know", MNL_CB_ERROR;
	if (tb->a[type])
		return tb->why = "a key attribute twice", MNL_CB_ERROR;
	if (type == OVS_KEY_ATTR_ENCAP ? mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0
				       : mnl_attr_get_payload_len(attr) != key_size[type])
		return tb->why = "a key attribute of the wrong size", MNL_CB_ERROR;
	tb->a[type] = attr;
	return MNL_CB_OK;
}

static uint32_t u32_of(const struct nlattr *a)
{
	return a ? mnl_attr_get_u32(a) : 0;
}

static uint16_t u16_of(const struct nlattr *a)
{
	return a ? mnl_attr_get_u16(a) : 0;
}

/* one level of a key; @depth 0 is the top, 1 and 2 inside VLAN encaps */
static int key_level(const struct nlattr *nest, struct uskb_ovs_key *k, int depth,
		     const char **why)
{
	struct key_tb tb = { .end = mnl_attr_get_payload(nest) };
	const struct nlattr *const *a = tb.a;
	uint16_t type;

	if (mnl_attr_parse_nested(nest, key_attr, &tb) != MNL_CB_OK ||
	    !covered(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), tb.end)) {
		*why = tb.why ? tb.why : "a key attribute that does not fit its nest";
		return -EINVAL;
	}
	if (depth == 0) {
		if (!a[OVS_KEY_ATTR_ETHERNET]) {
			*why = "a key without ETHERNET";
			return -EINVAL;
		}
		k->recirc_id = u32_of(a[OVS_KEY_ATTR_RECIRC_ID]);
		k->dp_hash = u32_of(a[OVS_KEY_ATTR_DP_HASH]);
		k->priority = u32_of(a[OVS_KEY_ATTR_PRIORITY]);
		k->in_port = u32_of(a[OVS_KEY_ATTR_IN_PORT]);
		k->mark = u32_of(a[OVS_KEY_ATTR_SKB_MARK]);
		memcpy(k->eth_src, mnl_attr_get_payload(a[OVS_KEY_ATTR_ETHERNET]), 6);
		memcpy(k->eth_dst, (const uint8_t *)mnl_attr_get_payload(a[OVS_KEY_ATTR_ETHERNET]) + 6, 6);
	} else if (a[OVS_KEY_ATTR_ETHERNET] || a[OVS_KEY_ATTR_IN_PORT]) {
		*why = "metadata inside an encap";
		return -EINVAL;
	}
	if (a[OVS_KEY_ATTR_VLAN]) {
		uint16_t tpid = u16_of(a[OVS_KEY_ATTR_ETHERTYPE]), tci = u16_of(a[OVS_KEY_ATTR_VLAN]);

		if (depth >= 2 || !a[OVS_KEY_ATTR_ENCAP]) {
			*why = "a VLAN without its encap, or a third one";
			return -EINVAL;
		}
		if (depth == 0)
			k->vlan_tpid = tpid, k->vlan_tci = tci;
		else
			k->cvlan_tpid = tpid, k->cvlan_tci = tci;
		if (!tci) { /* a tag cut short: nothing follows it */
			k->eth_type = tpid ? tpid : htons(ETH_P_8021Q);
			return 0;
		}
		return key_level(a[OVS_KEY_ATTR_ENCAP], k, depth + 1, why);
	}
	if (a[OVS_KEY_ATTR_ENCAP]) {
		*why = "an encap without a VLAN";
		return -EINVAL;
	}
	k->eth_type = a[OVS_KEY_ATTR_ETHERTYPE] ? u16_of(a[OVS_KEY_ATTR_ETHERTYPE]) : htons(ETH_P_802_2);
	type = ntohs(k->eth_type);
	if (a[OVS_KEY_ATTR_IPV4]) {
		const struct ovs_key_ipv4 *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_IPV4]);

		if (type != ETH_P_IP)
			goto mismatch;
		k->addr.ipv4.src = v->ipv4_src;
		k->addr.ipv4.dst = v->ipv4_dst;
		k->ip_proto = v->ipv4_proto;
		k->ip_tos = v->ipv4_tos;
		k->ip_ttl = v->ipv4_ttl;
		k->ip_frag = v->ipv4_frag;
	}
	if (a[OVS_KEY_ATTR_IPV6]) {
		const struct ovs_key_ipv6 *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_IPV6]);

		if (type != ETH_P_IPV6)
			goto mismatch;
		memcpy(k->addr.ipv6.src, v->ipv6_src, 16);
		memcpy(k->addr.ipv6.dst, v->ipv6_dst, 16);
		k->ipv6_label = v->ipv6_label;
		k->ip_proto = v->ipv6_proto;
		k->ip_tos = v->ipv6_tclass;
		k->ip_ttl = v->ipv6_hlimit;
		k->ip_frag = v->ipv6_frag;
		k->ipv6_exthdrs = u16_of(a[OVS_KEY_ATTR_IPV6_EXTHDRS]);
	}
	if (a[OVS_KEY_ATTR_ARP]) {
		const struct ovs_key_arp *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_ARP]);

		if (type != ETH_P_ARP && type != ETH_P_RARP)
			goto mismatch;
		k->addr.ipv4.src = v->arp_sip;
		k->addr.ipv4.dst = v->arp_tip;
		k->ip_proto = (uint8_t)ntohs(v->arp_op);
		memcpy(k->arp_sha, v->arp_sha, 6);
		memcpy(k->arp_tha, v->arp_tha, 6);
	}
	if (a[OVS_KEY_ATTR_TCP]) {
		const struct ovs_key_tcp *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_TCP]);

		k->tp_src = v->tcp_src, k->tp_dst = v->tcp_dst;
		k->tcp_flags = u16_of(a[OVS_KEY_ATTR_TCP_FLAGS]);
	}
	if (a[OVS_KEY_ATTR_UDP]) {
		const struct ovs_key_udp *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_UDP]);

		k->tp_src = v->udp_src, k->tp_dst = v->udp_dst;
	}
	if (a[OVS_KEY_ATTR_SCTP]) {
		const struct ovs_key_sctp *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_SCTP]);

		k->tp_src = v->sctp_src, k->tp_dst = v->sctp_dst;
	}
	if (a[OVS_KEY_ATTR_ICMP] || a[OVS_KEY_ATTR_ICMPV6]) {
		const uint8_t *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_ICMP] ? a[OVS_KEY_ATTR_ICMP]
									  : a[OVS_KEY_ATTR_ICMPV6]);

		k->tp_src = htons(v[0]), k->tp_dst = htons(v[1]);
	}
	if (a[OVS_KEY_ATTR_ND]) {
		const struct ovs_key_nd *v = mnl_attr_get_payload(a[OVS_KEY_ATTR_ND]);

		memcpy(k->nd_target, v->nd_target, 16);
		memcpy(k->arp_sha, v->nd_sll, 6);
		memcpy(k->arp_tha, v->nd_tll, 6);
	}
	return 0;
mismatch:
	*why = "an L3 attribute that does not match the ethertype";
	return -EINVAL;
}

int msg_key(const struct nlattr *nest, struct uskb_ovs_key *k, const char **why)
{
	memset(k, 0, sizeof(*k));
	return key_level(nest, k, 0, why);
}

int msg_key_exact(const struct nlattr *nest, struct uskb_ovs_key *k, const char **why)
{
	struct uskb *check;
	int ret = msg_key(nest, k, why);

	if (ret)
		return ret;
	/*
	 * A flow must match the keys the datapath extracts: its key must be
	 * the datapath's own encoding of one, as the upcall carried it.
	 */
	check = uskb_alloc(USKB_OVS_KEY_ATTR_MAX_SIZE + 64);
	if (!check) {
		*why = "out of memory";
		return -ENOMEM;
	}
	ret = uskb_ovs_key_put(check, k, mnl_attr_get_type(nest));
	if (ret || check->len != (unsigned int)NLA_ALIGN(nest->nla_len) ||
	    memcmp(check->data + NLA_HDRLEN, mnl_attr_get_payload(nest),
		   nest->nla_len - NLA_HDRLEN)) {
		*why = "a key that is not in the datapath's encoding (attributes missing, extra or out of order)";
		ret = -EINVAL;
	}
	uskb_free(check);
	return ret;
}

/* ---- actions ---- */

struct act_walk {
	struct actions *a;
	unsigned int nports;
	const char *why;
	const void *end, *uend;
};

static int userspace_attr(const struct nlattr *attr, void *data)
{
	struct act_walk *w = data;

	w->uend = attr_end(attr);
	switch (mnl_attr_get_type(attr)) {
	case OVS_USERSPACE_ATTR_PID:
		if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
			return w->why = "a userspace pid that is not a u32", MNL_CB_ERROR;
		return MNL_CB_OK;
	case OVS_USERSPACE_ATTR_USERDATA:
		if (attr->nla_len > DP_MAX_USERDATA)
			return w->why = "userdata longer than 60 bytes", MNL_CB_ERROR;
		memcpy(w->a->userdata, attr, attr->nla_len);
		w->a->udlen = attr->nla_len;
		return MNL_CB_OK;
	}
	return w->why = "a userspace attribute this datapath does not know", MNL_CB_ERROR;
}

static int action_attr(const struct nlattr *attr, void *data)
{
	struct act_walk *w = data;
	struct action *x;
	unsigned int type = mnl_attr_get_type(attr);

	w->end = attr_end(attr);
	if (w->a->n == DP_MAX_ACTIONS)
		return w->why = "more than 32 actions", MNL_CB_ERROR;
	x = &w->a->a[w->a->n];
	memset(x, 0, sizeof(*x));
	x->type = (uint16_t)type;
	switch (type) {
	case OVS_ACTION_ATTR_OUTPUT:
		if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
			return w->why = "an output port that is not a u32", MNL_CB_ERROR;
		x->port = mnl_attr_get_u32(attr);
		if (x->port < 1 || x->port > w->nports)
			return w->why = "output to a port that does not exist", MNL_CB_ERROR;
		break;
	case OVS_ACTION_ATTR_PUSH_VLAN: {
		const struct ovs_action_push_vlan *v = mnl_attr_get_payload(attr);

		if (mnl_attr_get_payload_len(attr) != sizeof(*v))
			return w->why = "push_vlan of the wrong size", MNL_CB_ERROR;
		if ((v->vlan_tpid != htons(ETH_P_8021Q) && v->vlan_tpid != htons(ETH_P_8021AD)) ||
		    !(v->vlan_tci & htons(VLAN_CFI)))
			return w->why = "push_vlan without a VLAN TPID or the tag-present bit", MNL_CB_ERROR;
		x->tpid = v->vlan_tpid;
		x->tci = v->vlan_tci & htons((uint16_t)~VLAN_CFI);
		break;
	}
	case OVS_ACTION_ATTR_POP_VLAN:
		if (mnl_attr_validate(attr, MNL_TYPE_FLAG) < 0)
			return w->why = "pop_vlan with a payload", MNL_CB_ERROR;
		break;
	case OVS_ACTION_ATTR_USERSPACE:
		if (w->a->udlen || mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0)
			return w->why = "a bad userspace action, or a second one", MNL_CB_ERROR;
		w->uend = mnl_attr_get_payload(attr);
		if (mnl_attr_parse_nested(attr, userspace_attr, w) != MNL_CB_OK)
			return MNL_CB_ERROR;
		if (!covered(mnl_attr_get_payload(attr), mnl_attr_get_payload_len(attr), w->uend))
			return w->why = "a userspace attribute that does not fit its nest", MNL_CB_ERROR;
		if (!w->a->udlen) { /* an empty USERDATA marks "there was one" */
			struct nlattr empty = { .nla_len = NLA_HDRLEN, .nla_type = OVS_USERSPACE_ATTR_USERDATA };

			w->a->udlen = NLA_HDRLEN;
			memcpy(w->a->userdata, &empty, NLA_HDRLEN);
		}
		break;
	default:
		return w->why = "an action this datapath does not know", MNL_CB_ERROR;
	}
	w->a->n++;
	return MNL_CB_OK;
}

int msg_actions(const struct nlattr *nest, unsigned int nports, struct actions *a,
		const char **why)
{
	struct act_walk w = { .a = a, .nports = nports };

	memset(a, 0, sizeof(*a));
	if (!nest)
		return 0; /* no actions: drop */
	w.end = mnl_attr_get_payload(nest);
	if (mnl_attr_parse_nested(nest, action_attr, &w) != MNL_CB_OK ||
	    !covered(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), w.end)) {
		*why = w.why ? w.why : "an action that does not fit its nest";
		return -EINVAL;
	}
	return 0;
}

int msg_put_actions(struct uskb *msg, int attrtype, const struct actions *a)
{
	struct nlattr *nest = uskb_nla_nest_start_noflag(msg, attrtype);

	if (!nest)
		return -EMSGSIZE;
	for (int i = 0; i < a->n; i++) {
		const struct action *x = &a->a[i];
		int ret = 0;

		switch (x->type) {
		case OVS_ACTION_ATTR_OUTPUT:
			ret = uskb_nla_put_u32(msg, x->type, x->port);
			break;
		case OVS_ACTION_ATTR_PUSH_VLAN: {
			struct ovs_action_push_vlan v = { .vlan_tpid = x->tpid,
							  .vlan_tci = x->tci | htons(VLAN_CFI) };

			ret = uskb_nla_put(msg, x->type, sizeof(v), &v);
			break;
		}
		case OVS_ACTION_ATTR_POP_VLAN:
			ret = uskb_nla_put_flag(msg, x->type);
			break;
		case OVS_ACTION_ATTR_USERSPACE: {
			struct nlattr *u = uskb_nla_nest_start_noflag(msg, x->type);

			if (!u || uskb_nla_put_u32(msg, OVS_USERSPACE_ATTR_PID, 0) ||
			    uskb_nla_put(msg, OVS_USERSPACE_ATTR_USERDATA, a->udlen - NLA_HDRLEN,
					 a->userdata + NLA_HDRLEN) ||
			    uskb_nla_nest_end(msg, u) < 0)
				ret = -EMSGSIZE;
			break;
		}
		}
		if (ret) {
			uskb_nla_nest_cancel(msg, nest);
			return -EMSGSIZE;
		}
	}
	return uskb_nla_nest_end(msg, nest) < 0 ? -EMSGSIZE : 0;
}

/* the most bytes msg_put_actions writes */
#define ACTIONS_MAX_SIZE (NLA_HDRLEN + DP_MAX_ACTIONS * 8 + 2 * NLA_HDRLEN + 8 + DP_MAX_USERDATA)

struct uskb *msg_flow_new(uint32_t pid, const struct nlattr *key, const struct actions *a)
{
	struct uskb *msg = uskb_nlmsg_new(GENL_HDRLEN + sizeof(struct ovs_header) +
					  NLA_ALIGN(key->nla_len) + ACTIONS_MAX_SIZE);
	struct ovs_header *oh;

	if (!msg)
		return NULL;
	oh = uskb_genlmsg_put(msg, pid, 0, DP_FAMILY_FLOW, sizeof(*oh),
			      NLM_F_REQUEST | NLM_F_CREATE, OVS_FLOW_CMD_NEW, OVS_FLOW_VERSION);
	if (!oh ||
	    uskb_nla_put(msg, OVS_FLOW_ATTR_KEY, key->nla_len - NLA_HDRLEN, mnl_attr_get_payload(key)) ||
	    msg_put_actions(msg, OVS_FLOW_ATTR_ACTIONS, a)) {
		uskb_free(msg);
		return NULL;
	}
	uskb_nlmsg_end(msg, (struct nlmsghdr *)msg->data);
	return msg;
}

struct uskb *msg_packet(struct uskb *msg, const struct dp_msg *m)
{
	struct uskb *p = uskb_clone(msg);

	if (!p)
		return NULL;
	uskb_pull(p, m->pkt_off);
	if (p->len > m->pkt_len && uskb_pskb_trim(p, m->pkt_len)) {
		uskb_free(p);
		return NULL;
	}
	uskb_reset_mac_header(p);
	uskb_copy_bits(p, 12, &p->protocol, 2); /* the head may hold none of it */
	return p;
}

struct uskb *msg_execute(struct uskb *upcall, const struct dp_msg *m, const struct actions *a)
{
	struct uskb *pkt = msg_packet(upcall, m), *msg;
	unsigned int hlen;
	struct ovs_header *oh;
	struct nlattr *nla;

	if (!pkt)
		return NULL;
	/*
	 * A zero-copy upcall's packet is all frags (its head went as frag 0):
	 * reference them all. skb_zerocopy_headlen() would say "copy it all"
	 * for a kmalloc head with nothing in it, as the kernel's does.
	 */
	hlen = uskb_headlen(pkt) ? uskb_zerocopy_headlen(pkt) : 0;
	msg = uskb_nlmsg_new(GENL_HDRLEN + sizeof(struct ovs_header) + NLA_ALIGN(m->key->nla_len) +
			     ACTIONS_MAX_SIZE + (unsigned int)uskb_nla_total_size((int)hlen));
	if (!msg)
		goto fail;
	/* the packet last, so that it can be referenced rather than copied */
	oh = uskb_genlmsg_put(msg, m->pid, 0, DP_FAMILY_PACKET, sizeof(*oh), NLM_F_REQUEST,
			      OVS_PACKET_CMD_EXECUTE, OVS_PACKET_VERSION);
	if (!oh ||
	    uskb_nla_put(msg, OVS_PACKET_ATTR_KEY, m->key->nla_len - NLA_HDRLEN,
			 mnl_attr_get_payload(m->key)) ||
	    msg_put_actions(msg, OVS_PACKET_ATTR_ACTIONS, a) ||
	    !(nla = uskb_nla_reserve(msg, OVS_PACKET_ATTR_PACKET, 0)))
		goto fail;
	nla->nla_len = (uint16_t)uskb_nla_attr_size((int)pkt->len);
	if (uskb_zerocopy(msg, pkt, (int)pkt->len, (int)hlen))
		goto fail;
	((struct nlmsghdr *)msg->data)->nlmsg_len = msg->len;
	uskb_free(pkt);
	return msg;
fail:
	uskb_free(msg);
	uskb_free(pkt);
	return NULL;
}

int msg_send(int fd, struct uskb *msg, int flags)
{
	const struct uskb_shared_info *sh = uskb_shinfo(msg);
	struct iovec iov[1 + USKB_MAX_SKB_FRAGS];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 1 + (size_t)sh->nr_frags };

	/* the head and each frag as they are: the kernel copies them into its skb */
	iov[0].iov_base = msg->data;
	iov[0].iov_len = uskb_headlen(msg);
	for (int i = 0; i < sh->nr_frags; i++) {
		iov[1 + i].iov_base = uskb_frag_address(&sh->frags[i]);
		iov[1 + i].iov_len = uskb_frag_size(&sh->frags[i]);
	}
	return sendmsg(fd, &mh, flags | MSG_NOSIGNAL) == (ssize_t)msg->len ? 0 : -1;
}
