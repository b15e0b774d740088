/* SPDX-License-Identifier: MIT */
/*
 * The rules file (--rules FILE): the handlers' policy before the learning
 * switch. One rule per line, the first that matches wins, "#" starts a
 * comment:
 *
 *   [MATCH[,MATCH...]] actions=ACTION[,ACTION...]
 *
 * MATCH: in_port=N dl_src=MAC dl_dst=MAC dl_type=N dl_vlan=N nw_src=IPV4
 *        nw_dst=IPV4 nw_proto=N tp_src=N tp_dst=N, and the shorthands ip,
 *        ipv6, arp, icmp, tcp, udp (ovs-ofctl's names).
 * ACTION: output:N, drop, normal (the learning switch), push_vlan:VID[:PCP],
 *        pop_vlan, userspace[:TEXT] (an upcall carrying TEXT as userdata).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>

#include "dp.h"

enum {
	M_IN_PORT = 1 << 0, M_DL_SRC = 1 << 1, M_DL_DST = 1 << 2, M_DL_TYPE = 1 << 3,
	M_DL_VLAN = 1 << 4, M_NW_SRC = 1 << 5, M_NW_DST = 1 << 6, M_NW_PROTO = 1 << 7,
	M_TP_SRC = 1 << 8, M_TP_DST = 1 << 9,
};

struct rule {
	unsigned int match;
	struct uskb_ovs_key k; /* the values, in the key's byte order */
	uint16_t vid;
	bool normal;
	struct actions a;
};

static struct rule *rules;
static unsigned int nrules;

static int parse_mac(const char *s, uint8_t *m)
{
	unsigned int b[6];
	char end;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &end) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		m[i] = (uint8_t)b[i];
	}
	return 0;
}

static int parse_num(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	return (errno || end == s || *end || *v > max) ? -1 : 0;
}

static int parse_match(struct rule *r, char *tok, const char **why)
{
	char *val = strchr(tok, '=');
	unsigned long v;

	if (!val) {
		static const struct {
			const char *name;
			uint16_t type;
			uint8_t proto;
		} sh[] = { { "ip", ETH_P_IP, 0 },  { "ipv6", ETH_P_IPV6, 0 }, { "arp", ETH_P_ARP, 0 },
			   { "icmp", ETH_P_IP, 1 }, { "tcp", ETH_P_IP, 6 },	 { "udp", ETH_P_IP, 17 } };

		for (size_t i = 0; i < sizeof(sh) / sizeof(sh[0]); i++) {
			if (strcmp(tok, sh[i].name))
				continue;
			r->match |= M_DL_TYPE;
			r->k.eth_type = htons(sh[i].type);
			if (sh[i].proto) {
				r->match |= M_NW_PROTO;
				r->k.ip_proto = sh[i].proto;
			}
			return 0;
		}
		return *why = "an unknown match", -1;
	}
	*val++ = 0;
	if (!strcmp(tok, "in_port") && !parse_num(val, DP_MAX_PORTS, &v))
		r->match |= M_IN_PORT, r->k.in_port = (uint32_t)v;
	else if (!strcmp(tok, "dl_src") && !parse_mac(val, r->k.eth_src))
		r->match |= M_DL_SRC;
	else if (!strcmp(tok, "dl_dst") && !parse_mac(val, r->k.eth_dst))
		r->match |= M_DL_DST;
	else if (!strcmp(tok, "dl_type") && !parse_num(val, 0xffff, &v))
		r->match |= M_DL_TYPE, r->k.eth_type = htons((uint16_t)v);
	else if (!strcmp(tok, "dl_vlan") && !parse_num(val, 4095, &v))
		r->match |= M_DL_VLAN, r->vid = (uint16_t)v;
	else if (!strcmp(tok, "nw_src") && inet_pton(AF_INET, val, &r->k.addr.ipv4.src) == 1)
		r->match |= M_NW_SRC;
	else if (!strcmp(tok, "nw_dst") && inet_pton(AF_INET, val, &r->k.addr.ipv4.dst) == 1)
		r->match |= M_NW_DST;
	else if (!strcmp(tok, "nw_proto") && !parse_num(val, 255, &v))
		r->match |= M_NW_PROTO, r->k.ip_proto = (uint8_t)v;
	else if (!strcmp(tok, "tp_src") && !parse_num(val, 0xffff, &v))
		r->match |= M_TP_SRC, r->k.tp_src = htons((uint16_t)v);
	else if (!strcmp(tok, "tp_dst") && !parse_num(val, 0xffff, &v))
		r->match |= M_TP_DST, r->k.tp_dst = htons((uint16_t)v);
	else
		return *why = "an unknown match or a bad value", -1;
	return 0;
}

static int parse_action(struct rule *r, char *tok, const char **why)
{
	struct action *x;
	unsigned long v, pcp = 0;
	char *arg = strchr(tok, ':');

	if (arg)
		*arg++ = 0;
	if (!strcmp(tok, "normal") && !arg) {
		r->normal = true;
		return 0;
	}
	if (!strcmp(tok, "drop") && !arg)
		return 0;
	if (r->a.n == DP_MAX_ACTIONS)
		return *why = "more than 32 actions", -1;
	x = &r->a.a[r->a.n];
	memset(x, 0, sizeof(*x));
	if (!strcmp(tok, "output") && arg && !parse_num(arg, DP_MAX_PORTS, &v) && v) {
		x->type = OVS_ACTION_ATTR_OUTPUT;
		x->port = (uint32_t)v;
	} else if (!strcmp(tok, "push_vlan") && arg) {
		char *p = strchr(arg, ':');

		if (p)
			*p++ = 0;
		if (parse_num(arg, 4095, &v) || (p && parse_num(p, 7, &pcp)))
			return *why = "push_vlan wants VID[:PCP]", -1;
		x->type = OVS_ACTION_ATTR_PUSH_VLAN;
		x->tpid = htons(ETH_P_8021Q);
		x->tci = htons((uint16_t)(v | pcp << 13));
	} else if (!strcmp(tok, "pop_vlan") && !arg) {
		x->type = OVS_ACTION_ATTR_POP_VLAN;
	} else if (!strcmp(tok, "userspace")) {
		size_t len = arg ? strlen(arg) : 0;

		if (r->a.udlen || len > DP_MAX_USERDATA - NLA_HDRLEN)
			return *why = "one userspace action per rule, its text at most 60 bytes", -1;
		struct nlattr hdr = { .nla_len = (uint16_t)(NLA_HDRLEN + len),
				      .nla_type = OVS_USERSPACE_ATTR_USERDATA };

		x->type = OVS_ACTION_ATTR_USERSPACE;
		r->a.udlen = hdr.nla_len;
		memset(r->a.userdata, 0, sizeof(r->a.userdata));
		memcpy(r->a.userdata, &hdr, NLA_HDRLEN);
		if (len)
			memcpy(r->a.userdata + NLA_HDRLEN, arg, len);
	} else {
		return *why = "an unknown action or a bad argument", -1;
	}
	r->a.n++;
	return 0;
}

static int parse_line(struct rule *r, char *line, const char **why)
{
	char *acts = strstr(line, "actions="), *tok, *save;

	memset(r, 0, sizeof(*r));
	if (!acts)
		return *why = "no actions=", -1;
	*acts = 0;
	acts += strlen("actions=");
	for (tok = strtok_r(line, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		if (parse_match(r, tok, why))
			return -1;
	for (tok = strtok_r(acts, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save))
		if (parse_action(r, tok, why))
			return -1;
	if (r->normal && r->a.n)
		return *why = "normal goes alone", -1;
	return 0;
}

int rules_load(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned int lineno = 0;

	if (!f) {
		fprintf(stderr, "uskb-dp: --rules %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *p = line;
		const char *why = NULL;
		struct rule *grown;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fprintf(stderr, "uskb-dp: %s:%u: a line longer than %zu bytes\n", path, lineno,
				sizeof(line) - 2);
			fclose(f);
			return -1;
		}
		if (hash)
			*hash = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n')
			continue;
		grown = realloc(rules, (nrules + 1) * sizeof(*rules));
		if (!grown) {
			fprintf(stderr, "uskb-dp: %s: out of memory\n", path);
			fclose(f);
			return -1;
		}
		rules = grown;
		if (parse_line(&rules[nrules], p, &why)) {
			fprintf(stderr, "uskb-dp: %s:%u: %s\n", path, lineno, why);
			fclose(f);
			return -1;
		}
		nrules++;
	}
	/* a read that failed (a directory: EISDIR) is no empty rule set */
	if (ferror(f)) {
		fprintf(stderr, "uskb-dp: --rules %s: %s\n", path, strerror(errno));
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

int rules_match(const struct uskb_ovs_key *k, struct actions *a)
{
	for (unsigned int i = 0; i < nrules; i++) {
		const struct rule *r = &rules[i];
		unsigned int m = r->match;

		if (((m & M_IN_PORT) && k->in_port != r->k.in_port) ||
		    ((m & M_DL_SRC) && memcmp(k->eth_src, r->k.eth_src, 6)) ||
		    ((m & M_DL_DST) && memcmp(k->eth_dst, r->k.eth_dst, 6)) ||
		    ((m & M_DL_TYPE) && k->eth_type != r->k.eth_type) ||
		    ((m & M_DL_VLAN) && (!k->vlan_tci || (ntohs(k->vlan_tci) & 0xfff) != r->vid)) ||
		    /* as OpenFlow's prerequisites: nw_* on IPv4 (or ARP), tp_* on TCP/UDP/SCTP */
		    ((m & (M_NW_SRC | M_NW_DST)) && k->eth_type != htons(ETH_P_IP) &&
		     k->eth_type != htons(ETH_P_ARP)) ||
		    ((m & (M_TP_SRC | M_TP_DST)) &&
		     ((k->eth_type != htons(ETH_P_IP) && k->eth_type != htons(ETH_P_IPV6)) ||
		      (k->ip_proto != 6 && k->ip_proto != 17 && k->ip_proto != 132))) ||
		    ((m & M_NW_SRC) && k->addr.ipv4.src != r->k.addr.ipv4.src) ||
		    ((m & M_NW_DST) && k->addr.ipv4.dst != r->k.addr.ipv4.dst) ||
		    ((m & M_NW_PROTO) && k->ip_proto != r->k.ip_proto) ||
		    ((m & M_TP_SRC) && k->tp_src != r->k.tp_src) ||
		    ((m & M_TP_DST) && k->tp_dst != r->k.tp_dst))
			continue;
		if (r->normal)
			return -1;
		*a = r->a;
		return 1;
	}
	return 0;
}

void rules_free(void)
{
	free(rules);
	rules = NULL;
	nrules = 0;
}
