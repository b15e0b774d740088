/* SPDX-License-Identifier: MIT */
/*
 * The device commands (pktgen_if_write) as a function from a command line
 * to a device's parameters and its reply, with the kernel 6.1 words. One
 * table names every command with its handler and the fields it sets; the
 * engine only applies the outcome to its device.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pg.h"

#define PG_FLAG_NAME(name) #name,
const char *const __uskb_pg_flag_names[NR_PKT_FLAGS] = { PKT_FLAGS(PG_FLAG_NAME) };
#undef PG_FLAG_NAME

void __uskb_pg_defaults(struct pg_params *p)
{
	memset(p, 0, sizeof(*p));
	p->count = 1000;
	p->udp_src_min = p->udp_src_max = p->udp_dst_min = p->udp_dst_max = 9;
	p->vlan_id = p->svlan_id = USKB_PKTGEN_NO_VLAN;
	p->burst = 1;
	p->node = -1;
}

/* ---- the kernel's argument scanners ---- */

/* count_trail_chars(): the separators skipped around a name */
static size_t skip_sep(const char *s)
{
	size_t i = 0;

	while (s[i] == '"' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t' || s[i] == ' ' ||
	       s[i] == '=')
		i++;
	return i;
}

/* strn_len(): a word up to a separator (not '=') */
static size_t word_len(const char *s, size_t max)
{
	size_t i = 0;

	while (i < max && s[i] && s[i] != '"' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t' &&
	       s[i] != ' ')
		i++;
	return i;
}

void __uskb_pg_word(char *dst, size_t size, const char *s)
{
	size_t n = word_len(s, size - 1);

	memcpy(dst, s, n);
	dst[n] = 0;
}

const char *__uskb_pg_split(const char *buf, char *name, size_t size)
{
	size_t i = skip_sep(buf);

	__uskb_pg_word(name, size, buf + i);
	i += strlen(name);
	return buf + i + skip_sep(buf + i);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* hex32_arg(): up to @maxlen hex digits; returns the digit count */
static int hex32_arg(const char *s, int maxlen, uint32_t *v)
{
	int i;

	*v = 0;
	for (i = 0; i < maxlen && hexval((unsigned char)s[i]) >= 0; i++)
		*v = (*v << 4) | (uint32_t)hexval((unsigned char)s[i]);
	return i;
}

static bool mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6 ||
	    strlen(s) != 17)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

static bool node_possible(unsigned long long node)
{
	char path[64];
	struct stat st;

	if (node > 15) /* the zero pages are kept for nodes 0-15 */
		return false;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%llu", node);
	return stat(path, &st) == 0 || node == 0;
}

/* ---- the commands ---- */

struct arg;

/*
 * A command: its handler; for a numeric value the most digits it reads
 * (the dispatcher parses the number first); the field it sets, with its
 * width; a second field (0: none): the current value a change resets, or
 * for a VLAN tag's priority and CFI the tag's id; the largest value; and
 * the name the reply uses when it is not the command's.
 */
struct pg_cmd {
	const char *name;
	int (*fn)(struct arg *a);
	int digits;
	uint16_t off, off2;
	uint8_t width;
	unsigned long long max;
	const char *as;
};

/* One command being carried out. */
struct arg {
	struct pg_params *p;
	const struct pg_cmd *c;
	const char *v;	       /* the text after the name */
	unsigned long long n;  /* its number, for a command with digits */
	char *res;
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void reply(struct arg *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->res, a->len, fmt, ap);
	va_end(ap);
}

static void *field(const struct arg *a, size_t off)
{
	return (char *)a->p + off;
}

static const char *reply_name(const struct arg *a)
{
	return a->c->as ? a->c->as : a->c->name;
}

/*
 * num_arg(): up to @digits decimal digits. Unlike 6.1 (which reads "count x"
 * as 0 = forever), no digit at all is an error, and so is a digit left over
 * past @digits (the kernel silently read "vlan_id 40000" as 4000).
 */
static int num_arg(struct arg *a)
{
	const char *s = a->v, *name = a->c->name;
	int i, maxlen = a->c->digits;

	a->n = 0;
	for (i = 0; i < maxlen && isdigit((unsigned char)s[i]); i++) {
		unsigned long long dgt = (unsigned long long)(s[i] - '0');

		if (a->n > (UINT64_MAX - dgt) / 10) {
			reply(a, "ERROR: %s: the number is too big", name);
			return -ERANGE;
		}
		a->n = a->n * 10 + dgt;
	}
	if (i == 0) {
		reply(a, "ERROR: %s needs a decimal number", name);
		return -EINVAL;
	}
	if (isdigit((unsigned char)s[i])) {
		reply(a, "ERROR: %s: at most %d digits", name, maxlen);
		return -ERANGE;
	}
	return 0;
}

/* a number up to max into a field of 2, 4 or 8 bytes */
static int set_num(struct arg *a)
{
	const struct pg_cmd *c = a->c;
	void *f = field(a, c->off);

	if (a->n > c->max) {
		reply(a, "ERROR: %s: %llu is out of range", c->name, a->n);
		return -ERANGE;
	}
	if (c->width == 8)
		*(uint64_t *)f = a->n;
	else if (c->width == 4)
		*(uint32_t *)f = (uint32_t)a->n;
	else
		*(uint16_t *)f = (uint16_t)a->n;
	reply(a, "OK: %s=%llu", c->name, a->n);
	return 0;
}

/* src/dst_mac_count: a new count starts the addresses over */
static int set_mac_count(struct arg *a)
{
	if (a->n <= a->c->max && *(uint32_t *)field(a, a->c->off) != a->n)
		*(uint32_t *)field(a, a->c->off2) = 0;
	return set_num(a);
}

/* a packet size: below 14 + 20 + 8 it is that */
static int size_arg(struct arg *a)
{
	if (a->n < 14 + 20 + 8)
		a->n = 14 + 20 + 8;
	if (a->n > 65535) {
		reply(a, "ERROR: %s: %llu is out of range", a->c->name, a->n);
		return -ERANGE;
	}
	return 0;
}

/* min_pkt_size, max_pkt_size: a new value is also the current size */
static int set_size(struct arg *a)
{
	unsigned int *f = field(a, a->c->off);
	int err = size_arg(a);

	if (err)
		return err;
	if (a->n != *f)
		*f = a->p->cur_pkt_size = (unsigned int)a->n;
	reply(a, "OK: %s=%u", a->c->name, *f);
	return 0;
}

/* pkt_size: min, max and current */
static int set_pkt_size(struct arg *a)
{
	struct pg_params *p = a->p;
	int err = size_arg(a);

	if (err)
		return err;
	if (a->n != p->min_pkt_size)
		p->min_pkt_size = p->max_pkt_size = p->cur_pkt_size = (unsigned int)a->n;
	reply(a, "OK: pkt_size=%u", p->min_pkt_size);
	return 0;
}

/* udp_src/dst_min/max: a new value is also the current port */
static int set_port(struct arg *a)
{
	uint16_t *f = field(a, a->c->off);

	if (a->n > 65535) {
		reply(a, "ERROR: %s: %llu is not a port", a->c->name, a->n);
		return -ERANGE;
	}
	if (a->n != *f)
		*f = *(uint16_t *)field(a, a->c->off2) = (uint16_t)a->n;
	reply(a, "OK: %s=%u", a->c->name, *f);
	return 0;
}

static int set_debug(struct arg *a)
{
	reply(a, "OK: debug=%u", (unsigned int)a->n);
	return 0;
}

static int set_delay(struct arg *a)
{
	a->p->delay = a->n == 0x7FFFFFFF ? UINT64_MAX : a->n;
	reply(a, "OK: delay=%" PRIu64, a->p->delay);
	return 0;
}

/* rate and ratep: above 0 ("300M" reads as 300, as in the kernel) */
static int rate_arg(struct arg *a)
{
	if (!a->n) {
		reply(a, "ERROR: %s must be above 0", a->c->name);
		return -EINVAL;
	}
	reply(a, "OK: rate=%llu", a->n);
	return 0;
}

/* rate: Mb/s of min_pkt_size packets, as the delay */
static int set_rate(struct arg *a)
{
	int err = rate_arg(a);

	if (!err)
		a->p->delay = (uint64_t)a->p->min_pkt_size * 8 * 1000 / a->n;
	return err;
}

/* ratep: packets per second, as the delay */
static int set_ratep(struct arg *a)
{
	int err = rate_arg(a);

	if (!err)
		a->p->delay = 1000000000ull / a->n;
	return err;
}

static int set_clone_skb(struct arg *a)
{
	struct pg_params *p = a->p;

	if (a->n > 0 && (p->xmit_mode == M_NETIF_RECEIVE || !p->shared_skbs)) {
		reply(a, "ERROR: clone_skb needs a device that takes shared skbs (xmit_mode start_xmit)");
		return -ENOTSUP;
	}
	if (a->n > 0 && p->n_imix) {
		reply(a, "ERROR: clone_skb cannot be used with imix_weights");
		return -EINVAL;
	}
	if (a->n > INT32_MAX) {
		reply(a, "ERROR: clone_skb: %llu is out of range", a->n);
		return -ERANGE;
	}
	p->clone_skb = (int)a->n;
	reply(a, "OK: clone_skb=%d", p->clone_skb);
	return 0;
}

static int set_burst(struct arg *a)
{
	struct pg_params *p = a->p;

	if (a->n > 1 && (p->xmit_mode == M_QUEUE_XMIT ||
			 (p->xmit_mode == M_START_XMIT && !p->shared_skbs))) {
		reply(a, "ERROR: burst needs a device that takes shared skbs (not queue_xmit)");
		return -ENOTSUP;
	}
	if (a->n > 1u << 20) {
		reply(a, "ERROR: burst: %llu is out of range", a->n);
		return -ERANGE;
	}
	p->burst = a->n < 1 ? 1 : (unsigned int)a->n;
	reply(a, "OK: burst=%u", p->burst);
	return 0;
}

static int set_node(struct arg *a)
{
	if (node_possible(a->n)) {
		a->p->node = (int)a->n;
		reply(a, "OK: node=%d", a->p->node);
	} else {
		reply(a, "ERROR: node not possible");
	}
	return 0;
}

static int set_flows(struct arg *a)
{
	a->p->cflows = a->n > MAX_CFLOWS ? MAX_CFLOWS : (unsigned int)a->n;
	reply(a, "OK: flows=%u", a->p->cflows);
	return 0;
}

static int set_xmit_mode(struct arg *a)
{
	struct pg_params *p = a->p;
	char f[32];

	__uskb_pg_word(f, sizeof(f), a->v);
	if (!strcmp(f, "start_xmit")) {
		p->xmit_mode = M_START_XMIT;
	} else if (!strcmp(f, "netif_receive")) {
		if (p->clone_skb > 0) {
			reply(a, "ERROR: netif_receive cannot be used with clone_skb");
			return -ENOTSUP;
		}
		p->xmit_mode = M_NETIF_RECEIVE;
		p->last_ok = true;
		p->clone_skb = 0;
	} else if (!strcmp(f, "queue_xmit")) {
		p->xmit_mode = M_QUEUE_XMIT;
		p->last_ok = true;
	} else {
		reply(a, "xmit_mode -:%s:- unknown\nAvailable modes: start_xmit, netif_receive, queue_xmit\n",
		      f);
		return -EINVAL;
	}
	reply(a, "OK: xmit_mode=%s", f);
	return 0;
}

/* a flag's bit (0: unknown); "!NAME" and FLOW_RND turn @disable over */
static uint32_t read_flag(const char *f, bool *disable)
{
	if (f[0] == '!') {
		*disable = true;
		f++;
	}
	for (int i = 0; i < NR_PKT_FLAGS; i++) {
		if ((1u << i) == F_IPSEC)
			continue;
		if (!*disable && (1u << i) == F_IPV6) /* IPV6 can only be cleared */
			continue;
		if (!strcmp(f, __uskb_pg_flag_names[i]))
			return 1u << i;
	}
	if (!strcmp(f, "FLOW_RND")) {
		*disable = !*disable;
		return F_FLOW_SEQ;
	}
	return 0;
}

static int set_flag(struct arg *a)
{
	char f[32];
	bool disable = false;
	uint32_t flag;

	__uskb_pg_word(f, sizeof(f), a->v);
	flag = read_flag(f, &disable);
	if (!flag) {
		reply(a,
		      "Flag -:%s:- unknown\nAvailable flags, (prepend ! to un-set flag):\n"
		      "IPSRC_RND, IPDST_RND, UDPSRC_RND, UDPDST_RND, MACSRC_RND, MACDST_RND, "
		      "TXSIZE_RND, IPV6, MPLS_RND, VID_RND, SVID_RND, FLOW_SEQ, FLOW_RND, "
		      "QUEUE_MAP_RND, QUEUE_MAP_CPU, UDPCSUM, NO_TIMESTAMP, NODE, SHARED\n",
		      f);
		return -EINVAL;
	}
	if (disable)
		a->p->flags &= ~flag;
	else
		a->p->flags |= flag;
	reply(a, "OK: flags=0x%x", a->p->flags);
	return 0;
}

/* an IPv4 end of a range ("" unsets it); a change is also the current address */
static int set_ip4(struct arg *a)
{
	struct pg_ip4 *f = field(a, a->c->off);
	char buf[sizeof(f->str)];
	struct in_addr in;

	__uskb_pg_word(buf, sizeof(buf), a->v);
	if (buf[0] && inet_pton(AF_INET, buf, &in) != 1) {
		reply(a, "ERROR: %s: not an IPv4 address: \"%s\"", a->c->name, buf);
		return -EINVAL;
	}
	if (strcmp(buf, f->str)) {
		strcpy(f->str, buf);
		f->addr = buf[0] ? in.s_addr : 0;
		*(uint32_t *)field(a, a->c->off2) = f->addr;
	}
	reply(a, "OK: %s=%s", reply_name(a), f->str);
	return 0;
}

/* an IPv6 address, and the current one when the command has it; sets IPV6 */
static int set_ip6(struct arg *a)
{
	struct in6_addr *f = field(a, a->c->off);
	char buf[128], out[INET6_ADDRSTRLEN];

	__uskb_pg_word(buf, sizeof(buf), a->v);
	if (inet_pton(AF_INET6, buf, f) != 1) {
		reply(a, "ERROR: %s: not an IPv6 address: \"%s\"", a->c->name, buf);
		return -EINVAL;
	}
	a->p->flags |= F_IPV6;
	if (a->c->off2)
		*(struct in6_addr *)field(a, a->c->off2) = *f;
	reply(a, "OK: %s=%s", a->c->name, pg_ip6_fmt(out, f));
	return 0;
}

static int set_mac(struct arg *a)
{
	uint8_t *m = field(a, a->c->off);
	char vs[32], out[18];

	__uskb_pg_word(vs, sizeof(vs), a->v);
	if (!mac_parse(vs, m)) {
		reply(a, "ERROR: %s: not a MAC address: \"%s\"", a->c->name, vs);
		return -EINVAL;
	}
	pg_mac_fmt(out, m);
	reply(a, "OK: %s %s", reply_name(a), out);
	return 0;
}

static int clear_counters(struct arg *a)
{
	reply(a, "OK: Clearing counters.\n");
	return PG_CLEAR_COUNTERS;
}

/* mpls L1,L2,... (hex, at most 16; "mpls 0" turns MPLS off) */
static int set_mpls(struct arg *a)
{
	struct pg_params *p = a->p;
	uint32_t labels[16];
	unsigned int n = 0;
	size_t i = 0, len;

	for (;;) {
		uint32_t v;
		int k = hex32_arg(a->v + i, 8, &v);

		if (k <= 0) {
			reply(a, "ERROR: mpls wants hex labels, as in \"mpls 0001000a,0002000b\"");
			return -EINVAL;
		}
		if (n == 16) {
			reply(a, "ERROR: mpls: at most 16 labels");
			return -E2BIG;
		}
		labels[n++] = v;
		i += (size_t)k;
		if (a->v[i] != ',')
			break;
		i++;
	}
	if (n == 1 && labels[0] == 0) {
		p->nr_labels = 0;
	} else {
		for (unsigned int k = 0; k < n; k++) {
			p->labels[k] = labels[k];
			if (labels[k] & 0x100) /* a bottom-of-stack bit asks for random labels */
				p->flags |= F_MPLS_RND;
		}
		p->nr_labels = n;
	}
	reply(a, "OK: mpls=");
	for (unsigned int k = 0; k < p->nr_labels && (len = strlen(a->res)) + 1 < a->len; k++)
		snprintf(a->res + len, a->len - len, "%08x%s", p->labels[k],
			 k == p->nr_labels - 1 ? "" : ",");
	if (p->nr_labels && p->vlan_id != USKB_PKTGEN_NO_VLAN)
		p->vlan_id = p->svlan_id = USKB_PKTGEN_NO_VLAN; /* MPLS turns VLAN/SVLAN off */
	return 0;
}

/* vlan_id, svlan_id (which needs a vlan_id): out of range turns both tags off */
static int set_vlan_id(struct arg *a)
{
	struct pg_params *p = a->p;
	uint16_t *f = field(a, a->c->off);

	if (a->n <= 4095 &&
	    (!a->c->off2 || *(uint16_t *)field(a, a->c->off2) != USKB_PKTGEN_NO_VLAN)) {
		*f = (uint16_t)a->n;
		p->nr_labels = 0; /* VLAN turns MPLS off */
		reply(a, "OK: %s=%u", a->c->name, (unsigned int)a->n);
	} else {
		p->vlan_id = p->svlan_id = USKB_PKTGEN_NO_VLAN;
	}
	return 0;
}

/* a tag's priority or CFI, when the tag is on */
static int set_tag_bits(struct arg *a)
{
	uint16_t *f = field(a, a->c->off), id = *(uint16_t *)field(a, a->c->off2);

	if (a->n <= a->c->max && id != USKB_PKTGEN_NO_VLAN) {
		*f = (uint16_t)a->n;
		reply(a, "OK: %s=%u", a->c->name, *f);
	} else {
		reply(a, "ERROR: %s must be 0-%u", a->c->name, (unsigned int)a->c->max);
	}
	return 0;
}

/* tos, traffic_class: two hex digits */
static int set_hex8(struct arg *a)
{
	uint32_t t;

	if (hex32_arg(a->v, 2, &t) == 2 && hexval((unsigned char)a->v[2]) < 0) {
		*(uint8_t *)field(a, a->c->off) = (uint8_t)t;
		reply(a, "OK: %s=0x%02x", a->c->name, t);
	} else {
		reply(a, "ERROR: %s must be 00-ff", a->c->name);
	}
	return 0;
}

static void fill_imix_distribution(struct pg_params *p)
{
	uint64_t total = 0, cum = 0, cumulative[MAX_IMIX];
	unsigned int i, j = 0;

	for (i = 0; i < p->n_imix; i++)
		total += p->imix[i].weight;
	for (i = 0; i + 1 < p->n_imix; i++) {
		cum += total ? p->imix[i].weight * IMIX_PRECISION / total : 0;
		cumulative[i] = cum;
	}
	cumulative[p->n_imix - 1] = IMIX_PRECISION;
	for (i = 0; i < IMIX_PRECISION; i++) {
		while (j + 1 < p->n_imix && i >= cumulative[j])
			j++;
		p->imix_dist[i] = (uint8_t)j;
	}
}

/* imix_weights S,W S,W ... (at most 20; sizes below 42 become 42); the reply stays as it was */
static int set_imix(struct arg *a)
{
	struct pg_params *p = a->p;
	struct imix_pkt e[MAX_IMIX];
	const char *s = a->v;
	unsigned int n = 0;

	if (p->clone_skb > 0) {
		reply(a, "ERROR: imix_weights cannot be used with clone_skb");
		return -EINVAL;
	}
	while (*s && *s != '\n') {
		char *end;
		unsigned long long size, weight;

		if (n == MAX_IMIX) {
			reply(a, "ERROR: imix_weights: at most %d entries", MAX_IMIX);
			return -E2BIG;
		}
		if (!isdigit((unsigned char)*s))
			goto bad;
		size = strtoull(s, &end, 10);
		if (*end != ',' || !isdigit((unsigned char)end[1]))
			goto bad;
		weight = strtoull(end + 1, &end, 10);
		if (size > 65535 || weight > 1000000)
			goto bad;
		e[n].size = size < 14 + 20 + 8 ? 14 + 20 + 8 : size;
		e[n].weight = weight;
		e[n].count_so_far = 0;
		n++;
		s = end;
		while (*s == ' ' || *s == '\t' || *s == '"')
			s++;
	}
	if (!n)
		goto bad;
	memcpy(p->imix, e, sizeof(e[0]) * n);
	p->n_imix = n;
	fill_imix_distribution(p);
	return 0;
bad:
	reply(a, "ERROR: imix_weights wants SIZE,WEIGHT pairs, as in \"imix_weights 64,7 576,4 1500,1\"");
	return -EINVAL;
}

#define FIELD(f) .off = offsetof(struct pg_params, f), .width = sizeof(((struct pg_params *)0)->f)
#define FIELD2(f) .off2 = offsetof(struct pg_params, f)
#define NUM(name, digits, f, mx) { name, set_num, digits, FIELD(f), .max = mx }

static const struct pg_cmd cmds[] = {
	NUM("count", 20, count, UINT64_MAX),
	NUM("frags", 10, nfrags, INT32_MAX),
	NUM("flowlen", 10, lflow, UINT32_MAX),
	NUM("queue_map_min", 5, queue_map_min, 65535),
	NUM("queue_map_max", 5, queue_map_max, 65535),
	NUM("skb_priority", 9, skb_priority, UINT32_MAX),
	NUM("spi", 10, spi, UINT32_MAX),
	{ "src_mac_count", set_mac_count, 10, FIELD(src_mac_count), FIELD2(cur_src_mac_offset),
	  .max = UINT32_MAX },
	{ "dst_mac_count", set_mac_count, 10, FIELD(dst_mac_count), FIELD2(cur_dst_mac_offset),
	  .max = UINT32_MAX },
	{ "min_pkt_size", set_size, 10, FIELD(min_pkt_size) },
	{ "max_pkt_size", set_size, 10, FIELD(max_pkt_size) },
	{ "pkt_size", set_pkt_size, 10 },
	{ "imix_weights", set_imix },
	{ "debug", set_debug, 10 },
	{ "delay", set_delay, 20 },
	{ "rate", set_rate, 10 },
	{ "ratep", set_ratep, 10 },
	{ "udp_src_min", set_port, 10, FIELD(udp_src_min), FIELD2(cur_udp_src) },
	{ "udp_src_max", set_port, 10, FIELD(udp_src_max), FIELD2(cur_udp_src) },
	{ "udp_dst_min", set_port, 10, FIELD(udp_dst_min), FIELD2(cur_udp_dst) },
	{ "udp_dst_max", set_port, 10, FIELD(udp_dst_max), FIELD2(cur_udp_dst) },
	{ "clone_skb", set_clone_skb, 10 },
	{ "burst", set_burst, 10 },
	{ "node", set_node, 10 },
	{ "xmit_mode", set_xmit_mode },
	{ "flag", set_flag },
	{ "dst_min", set_ip4, 0, FIELD(dst_min), FIELD2(cur_daddr) },
	{ "dst", set_ip4, 0, FIELD(dst_min), FIELD2(cur_daddr), .as = "dst_min" },
	{ "dst_max", set_ip4, 0, FIELD(dst_max), FIELD2(cur_daddr) },
	{ "src_min", set_ip4, 0, FIELD(src_min), FIELD2(cur_saddr) },
	{ "src_max", set_ip4, 0, FIELD(src_max), FIELD2(cur_saddr) },
	{ "dst6", set_ip6, 0, FIELD(in6_daddr), FIELD2(cur_in6_daddr) },
	{ "dst6_min", set_ip6, 0, FIELD(min_in6_daddr), FIELD2(cur_in6_daddr) },
	{ "dst6_max", set_ip6, 0, FIELD(max_in6_daddr) },
	{ "src6", set_ip6, 0, FIELD(in6_saddr), FIELD2(cur_in6_saddr) },
	{ "dst_mac", set_mac, 0, FIELD(dst_mac), .as = "dstmac" },
	{ "src_mac", set_mac, 0, FIELD(src_mac), .as = "srcmac" },
	{ "clear_counters", clear_counters },
	{ "flows", set_flows, 10 },
	{ "mpls", set_mpls },
	{ "vlan_id", set_vlan_id, 4, FIELD(vlan_id) },
	{ "svlan_id", set_vlan_id, 4, FIELD(svlan_id), FIELD2(vlan_id) },
	{ "vlan_p", set_tag_bits, 1, FIELD(vlan_p), FIELD2(vlan_id), .max = 7 },
	{ "vlan_cfi", set_tag_bits, 1, FIELD(vlan_cfi), FIELD2(vlan_id), .max = 1 },
	{ "svlan_p", set_tag_bits, 1, FIELD(svlan_p), FIELD2(svlan_id), .max = 7 },
	{ "svlan_cfi", set_tag_bits, 1, FIELD(svlan_cfi), FIELD2(svlan_id), .max = 1 },
	{ "tos", set_hex8, 0, FIELD(tos) },
	{ "traffic_class", set_hex8, 0, FIELD(traffic_class) },
};

_Static_assert(offsetof(struct pg_params, flags) == 0, "0 must mean no second field");

int __uskb_pg_parse(struct pg_params *p, const char *cmd, char *result, size_t len)
{
	struct arg a = { .p = p, .res = result, .len = len };
	char name[16];

	a.v = __uskb_pg_split(cmd, name, sizeof(name));
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		int err;

		if (strcmp(name, cmds[k].name))
			continue;
		a.c = &cmds[k];
		if (a.c->digits && (err = num_arg(&a)) < 0)
			return err;
		return a.c->fn(&a);
	}
	reply(&a, "No such parameter \"%s\"", name);
	return -EINVAL;
}
