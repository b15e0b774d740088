/* SPDX-License-Identifier: MIT */
/*
 * Sending on an xdp-live: device: the kernel replays the run's first
 * packet and a BPF program (bpf/pktgen_live.c, linked in as an ELF image)
 * makes each copy the next packet, stepping the header state as
 * mod_cur_headers() would here. This file checks that the device's
 * commands are ones the program can do, builds the frame, loads the
 * program with its state, and sends a number of packets per call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg.h"

/* the commands the program cannot do: NULL, or the first one set (a name for the result line) */
static const char *live_refuse(const struct pg_dev *d)
{
	/* (QUEUE_MAP_CPU is what the kernel does: a CPU's frames go out on its queue) */
	static const uint32_t unsupported = F_TXSIZE_RND | F_MPLS_RND | F_QUEUE_MAP_RND | F_IPSEC |
					    F_VID_RND | F_SVID_RND;
	const struct pg_params *p = &d->p;

	if (p->flags & unsupported) {
		for (int i = 0; i < NR_PKT_FLAGS; i++)
			if (p->flags & unsupported & (1u << i))
				return __uskb_pg_flag_names[i];
	}
	if (p->nfrags > 0)
		return "frags";
	if (p->n_imix)
		return "imix_weights";
	if (p->min_pkt_size != p->max_pkt_size)
		return "min_pkt_size/max_pkt_size (a size range)";
	if (p->clone_skb > 0)
		return "clone_skb";
	if (p->burst > 1)
		return "burst";
	if (p->queue_map_min != p->queue_map_max)
		return "queue_map_min/queue_map_max (a queue range)";
	if (p->xmit_mode != M_START_XMIT)
		return "xmit_mode";
	return NULL;
}

#ifndef USKB_HAVE_XDP_LIVE

int __uskb_pg_live_start(struct pg_dev *d)
{
	const char *cmd = live_refuse(d);

	snprintf(d->result, RESULT_SZ, "ERROR: %s: this uskb was built without the live program "
		 "(it needs clang and libbpf-dev)%s%s", d->odevname, cmd ? "; nor could it do " : "",
		 cmd ? cmd : "");
	return -EOPNOTSUPP;
}

int __uskb_pg_live_send(struct pg_dev *d, uint32_t *n, uint64_t *ok)
{
	(void)d, (void)n;
	*ok = 0;
	return -EOPNOTSUPP;
}

void __uskb_pg_live_stop(struct pg_dev *d)
{
	(void)d;
}

void __uskb_pg_live_free(struct uskb_pktgen *pg)
{
	(void)pg;
}

uint64_t __uskb_pg_live_halted(const struct pg_dev *d)
{
	(void)d;
	return 0;
}

void __uskb_pg_live_account(struct pg_dev *d, uint64_t ok)
{
	(void)d, (void)ok;
}

uint64_t __uskb_pg_live_unaccounted(const struct pg_dev *d)
{
	(void)d;
	return 0;
}

#else

#include <stdarg.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../bpf/pktgen_live.h"

/* bpf/pktgen_live.c compiled (live_obj.S) */
extern const unsigned char __uskb_pg_live_obj[] USKB_HIDDEN;
extern const unsigned char __uskb_pg_live_obj_end[] USKB_HIDDEN;

#define LIVE_FRAME_MAX 3520 /* a page less XDP's headroom and the shared info */
#define LIVE_BATCH 64	    /* frames the kernel sends per batch, a power of two (xdp-trafficgen: 64; 256 measured no better) */
/*
 * Each call of more than one packet costs the kernel two changes of its
 * XDP dispatcher (the program in at the start, out at the end), each an
 * expedited grace period and a text poke that interrupts every CPU: ~1.5 ms
 * a call on this 2-CPU VM, serialised between threads by a global mutex.
 * So an unpaced run's calls last about LIVE_CALL_NS (0.15 % of overhead;
 * with two threads into the stack 2 s calls sent 5.6 % more than 100 ms
 * ones). A count is never overshot (calls are sized), and a stop does not
 * wait for the call: the stop word makes the program drop the rest of it,
 * which the kernel runs through ~4x faster than it sends (LIVE_CALL_MAX
 * bounds it: a stop took ~90 ms at 20 Mpps, ~40 ms into the stack).
 */
#define LIVE_CALL_NS 1000000000
#define LIVE_CALL_MIN 4096
#define LIVE_CALL_MAX (1u << 23)

struct pg_live {
	struct bpf_object *obj;
	int prog_fd;
	struct pgl_shared *sh; /* the program's .bss, mapped */
	size_t sh_len;
	uint64_t frames;       /* sh->st.frames as last accounted */
	uint32_t aborted;      /* sh->st.aborted as last seen */
	uint32_t call;	       /* packets per unpaced call, sized to last LIVE_CALL_NS */
	unsigned int len;
	unsigned char frame[LIVE_FRAME_MAX];
};

/*
 * libbpf's messages while loading: the first warning kept, for the result
 * line; all of them on stderr with USKB_LIBBPF_LOG set (the verifier's log).
 * libbpf has one print function per process: loads are serialized here.
 */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static char load_msg[160];

static int load_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	va_list again;
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	va_copy(again, ap);
	if (getenv("USKB_LIBBPF_LOG"))
		vfprintf(stderr, fmt, again);
	va_end(again);
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	if (n && !load_msg[0]) /* the first says what failed; the rest follow from it */
		snprintf(load_msg, sizeof(load_msg), "%s", line);
	return 0;
}

/* the 16-bit words of @len bytes as they lie in memory, summed (an odd last byte padded) */
/* CLOCK_TAI - CLOCK_REALTIME in ns (the program reads TAI) */
static int64_t tai_offset(void)
{
	struct timespec r, t;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_TAI, &t);
	return ((int64_t)t.tv_sec - (int64_t)r.tv_sec) * 1000000000 + (t.tv_nsec - r.tv_nsec);
}

static void live_free(struct pg_live *l)
{
	if (!l)
		return;
	if (l->sh)
		munmap(l->sh, l->sh_len);
	bpf_object__close(l->obj);
	free(l);
}

/*
 * The instance's stop word, made once (pg->lock held): a one-word array
 * map every live program shares, mapped here. 0 or -errno.
 */
static int live_stop_word(struct uskb_pktgen *pg)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	uint32_t *w;
	int fd;

	w = atomic_load(&pg->live_stop);
	if (w) { /* this run's start: a word a stop left set after the last run's end goes */
		__atomic_store_n(w, atomic_load(&pg->stop), __ATOMIC_RELAXED);
		return 0;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uskb_pg_stop", 4, 4, 1, &o);
	if (fd < 0)
		return -errno;
	w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	pg->live_stop_fd = fd;
	atomic_store(&pg->live_stop, w);
	/* (after it is there: a stop meanwhile either sees it or has set stop) */
	__atomic_store_n(w, atomic_load(&pg->stop), __ATOMIC_RELAXED);
	return 0;
}

void __uskb_pg_live_free(struct uskb_pktgen *pg)
{
	uint32_t *w = atomic_exchange(&pg->live_stop, NULL); /* gone for a late stop first */

	if (w)
		munmap(w, 4096);
	if (pg->live_stop_fd >= 0)
		close(pg->live_stop_fd);
}

/* the program and its maps; 0, or -errno with libbpf's reason in @why (@len bytes) */
static int live_load(struct pg_live *l, int stop_fd, unsigned int cflows, bool step, char *why,
		     size_t len)
{
	/* the program that steps headers, or the short one (see bpf/pktgen_live.c) */
	const char *pname = step ? "pktgen_live" : "pktgen_live_fixed";
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "uskb_pktgen");
	libbpf_print_fn_t old;
	struct bpf_program *prog;
	struct bpf_map *m;
	size_t sz = 0;
	int err;

	pthread_mutex_lock(&load_lock);
	load_msg[0] = 0;
	old = libbpf_set_print(load_print);
	l->obj = bpf_object__open_mem(__uskb_pg_live_obj,
				      (size_t)(__uskb_pg_live_obj_end - __uskb_pg_live_obj), &oo);
	err = libbpf_get_error(l->obj);
	if (err) {
		l->obj = NULL;
		goto out;
	}
	m = bpf_object__find_map_by_name(l->obj, "flows");
	err = m ? bpf_map__set_max_entries(m, cflows ? cflows : 1) : -ENOENT;
	m = bpf_object__find_map_by_name(l->obj, "stop");
	if (!err)
		err = m ? bpf_map__reuse_fd(m, stop_fd) : -ENOENT;
	/* only the one this device runs is verified and loaded */
	bpf_object__for_each_program(prog, l->obj)
		if (!err)
			err = bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), pname));
	if (!err)
		err = bpf_object__load(l->obj);
	if (err)
		goto out;
	prog = bpf_object__find_program_by_name(l->obj, pname);
	l->prog_fd = prog ? bpf_program__fd(prog) : -ENOENT;
	err = l->prog_fd < 0 ? l->prog_fd : 0;
	/*
	 * The kernel's .bss, mapped here (libbpf keeps its own copy unless a
	 * skeleton loads the object): what the engine writes, the program reads.
	 */
	bpf_object__for_each_map(m, l->obj) {
		const char *name = bpf_map__name(m);
		size_t n = strlen(name);
		void *p;

		if (err || !bpf_map__is_internal(m) || n < 4 || strcmp(name + n - 4, ".bss"))
			continue;
		if (bpf_map__value_size(m) < sizeof(*l->sh) || !(bpf_map__map_flags(m) & BPF_F_MMAPABLE))
			break;
		sz = ((size_t)bpf_map__value_size(m) + 4095) & ~(size_t)4095;
		p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
		if (p == MAP_FAILED) {
			err = -errno;
			break;
		}
		l->sh = p;
		l->sh_len = sz;
	}
	if (!l->sh && !load_msg[0])
		snprintf(load_msg, sizeof(load_msg), "the program's state cannot be mapped (.bss)");
	if (!err && !l->sh)
		err = -ENOENT;
out:
	libbpf_set_print(old);
	snprintf(why, len, "%s", load_msg);
	pthread_mutex_unlock(&load_lock);
	return err < 0 ? err : -err;
}

/* what the program starts from: the configuration and the state before the first packet */
static void live_setup(struct pg_live *l, const struct pg_dev *d, const struct pg_params *p0,
		       uint16_t ip_id0, uint16_t nh, uint16_t th)
{
	struct pgl_cfg *c = &l->sh->cfg;
	struct pgl_state *s = &l->sh->st;
	const struct pg_params *p = &d->p;
	uint32_t f = p->flags;
	unsigned int ulen = l->len - th;

	memset(l->sh, 0, sizeof(*l->sh));
	c->flags = (f & F_IPV6 ? PGL_IPV6 : 0) | (f & F_IPSRC_RND ? PGL_IPSRC_RND : 0) |
		   (f & F_IPDST_RND ? PGL_IPDST_RND : 0) | (f & F_UDPSRC_RND ? PGL_UDPSRC_RND : 0) |
		   (f & F_UDPDST_RND ? PGL_UDPDST_RND : 0) | (f & F_UDPCSUM ? PGL_UDPCSUM : 0) |
		   (f & F_NO_TIMESTAMP ? PGL_NO_TIMESTAMP : 0) | (f & F_FLOW_SEQ ? PGL_FLOW_SEQ : 0) |
		   (f & F_MACSRC_RND ? PGL_MACSRC_RND : 0) | (f & F_MACDST_RND ? PGL_MACDST_RND : 0) |
		   (!IN6_IS_ADDR_UNSPECIFIED(&p->min_in6_daddr) ? PGL_DST6_RND : 0);
	c->len = l->len;
	c->nh = nh;
	c->th = th;
	memcpy(c->src_mac, p->src_mac, 6);
	memcpy(c->dst_mac, p->dst_mac, 6);
	c->src_mac_count = p->src_mac_count;
	c->dst_mac_count = p->dst_mac_count;
	c->udp_src_min = p->udp_src_min;
	c->udp_src_max = p->udp_src_max;
	c->udp_dst_min = p->udp_dst_min;
	c->udp_dst_max = p->udp_dst_max;
	c->src_min = ntohl(p->src_min.addr);
	c->src_max = ntohl(p->src_max.addr);
	c->dst_min = ntohl(p->dst_min.addr);
	c->dst_max = ntohl(p->dst_max.addr);
	memcpy(c->min6, &p->min_in6_daddr, 16);
	memcpy(c->max6, &p->max_in6_daddr, 16);
	c->cflows = p->cflows;
	c->lflow = p->lflow;
	if (__uskb_pg_headers_vary(d))
		c->flags |= PGL_STEP;
	/* the checksums' bases, folded (uskb_csum_partial sums words in memory order, as the program) */
	if (!(f & F_IPV6)) {
		/* the header but id (4) and checksum (10); the addresses (12..19) unless they change */
		const unsigned char *iph = l->frame + nh;
		uskb_wsum ws = uskb_csum_partial(iph, 4, 0);

		ws = uskb_csum_partial(iph + 6, 4, ws);
		if (!(c->flags & PGL_STEP))
			ws = uskb_csum_partial(iph + 12, 8, ws);
		c->ipsum = (uint16_t)~uskb_csum_fold(ws);
	}
	if (f & F_UDPCSUM) {
		/*
		 * The pseudo header's protocol and length, its addresses unless
		 * they change (the IPv6 source never does); the UDP header and
		 * data but checksum (6), sequence and time (12..23), and the
		 * ports when they change. The data last: its length may be odd.
		 */
		const unsigned char *udp = l->frame + th;
		uint16_t w[2] = { htons(17), htons((uint16_t)ulen) };
		uskb_wsum ws = uskb_csum_partial(w, sizeof(w), 0);

		if (f & F_IPV6)
			ws = uskb_csum_partial(l->frame + nh + 8, c->flags & PGL_STEP ? 16 : 32, ws);
		else if (!(c->flags & PGL_STEP))
			ws = uskb_csum_partial(l->frame + nh + 12, 8, ws);
		if (!(c->flags & PGL_STEP))
			ws = uskb_csum_partial(udp, 4, ws);
		ws = uskb_csum_partial(udp + 4, 2, ws);
		ws = uskb_csum_partial(udp + 8, 4, ws);
		ws = uskb_csum_partial(udp + 24, ulen - 24, ws);
		c->udpsum = (uint16_t)~uskb_csum_fold(ws);
	}
	c->tai_off = tai_offset();
	c->batch_mask = LIVE_BATCH - 1;
	s->ts_every = 1;
	s->seq_base = d->seq_num;
	s->ip_id_base = ip_id0;
	s->cur_saddr = p0->cur_saddr;
	s->cur_daddr = p0->cur_daddr;
	memcpy(s->cur_daddr6, &p0->cur_in6_daddr, 16);
	s->cur_udp_src = p0->cur_udp_src;
	s->cur_udp_dst = p0->cur_udp_dst;
	s->cur_src_mac_offset = p0->cur_src_mac_offset;
	s->cur_dst_mac_offset = p0->cur_dst_mac_offset;
}

int __uskb_pg_live_start(struct pg_dev *d)
{
	const char *cmd = live_refuse(d);
	struct pg_params p0;
	struct pg_live *l;
	struct uskb *skb;
	uint16_t ip_id0 = d->ip_id, nh, th;
	char why[160] = "";
	int err;

	if (cmd) {
		snprintf(d->result, RESULT_SZ, "ERROR: %s cannot do %s (the kernel replays one frame "
			 "per packet): use xdp:%s for it", d->odevname, cmd,
			 strchr(d->nd->dev->name, ':') ? strchr(d->nd->dev->name, ':') + 1 : "IFNAME");
		return -EOPNOTSUPP;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(d->result, RESULT_SZ, "Error starting");
		return -ENOMEM;
	}
	/* the first packet, built as every device's; the program starts from the state before it */
	p0 = d->p;
	skb = __uskb_pg_build_next(d); /* (pg->lock is held: the result is ours to write) */
	if (!skb) {
		snprintf(d->result, RESULT_SZ, "No memory");
		d->ip_id = ip_id0;
		free(l);
		return -ENOMEM;
	}
	l->len = skb->len;
	nh = (uint16_t)(skb->network_header - skb->mac_header);
	th = (uint16_t)(skb->transport_header - skb->mac_header);
	if (l->len > LIVE_FRAME_MAX || th + 8u + sizeof(struct pg_hdr) > l->len || th > 255 ||
	    nh + ((d->p.flags & F_IPV6) ? 40u : 20u) > l->len) {
		snprintf(d->result, RESULT_SZ, "ERROR: %s: a frame of %u bytes is not one the live program "
			 "takes (at most %u, headers within its first 255)", d->odevname, l->len,
			 LIVE_FRAME_MAX);
		uskb_free(skb);
		free(l);
		d->ip_id = ip_id0;
		return -EMSGSIZE;
	}
	uskb_copy_bits(skb, 0, l->frame, (int)l->len);
	uskb_free(skb);
	err = live_stop_word(d->t->pg);
	if (!err)
		err = live_load(l, d->t->pg->live_stop_fd, d->p.cflows, __uskb_pg_headers_vary(d), why,
				sizeof(why));
	if (err) {
		snprintf(d->result, RESULT_SZ, "ERROR: %s: loading the live program: %s%s%s", d->odevname,
			 strerror(-err), why[0] ? ": " : "", why);
		live_free(l);
		d->ip_id = ip_id0;
		return err;
	}
	live_setup(l, d, &p0, ip_id0, nh, th);
	d->ip_id = ip_id0;
	d->last_pkt_size = l->len;
	d->built_nfrags = 0;
	l->call = 65536;
	d->live = l;
	return 0;
}

int __uskb_pg_live_send(struct pg_dev *d, uint32_t *np, uint64_t *ok)
{
	struct pg_live *l = d->live;
	struct pgl_state *s = &l->sh->st;
	uint64_t frames, t0 = 0, took;
	bool sized = *np >= l->call; /* a call of the run's own size: time it */
	uint32_t n;
	int err;

	if (sized) {
		*np = l->call;
		t0 = uskb_mono_ns();
	}
	n = *np;
	l->sh->cfg.tai_off = tai_offset(); /* the clock may have been set since */
	/* the kernel's batches start with the call: its first frame runs the per-batch work */
	s->call_base = s->frames;
	s->ts_next = s->frames;
	err = uskb_dev_xdp_run(d->nd->dev, d->cur_queue_map, l->prog_fd, l->frame, l->len, n,
			       LIVE_BATCH, (const volatile uint64_t *)&s->frames);
	frames = s->frames;
	/* the program could not write a frame (never, for one the engine built): no loop on it */
	if (uskb_unlikely(s->aborted != l->aborted) && !err) {
		l->aborted = s->aborted;
		err = -EBADMSG;
	}
	if (sized && !err && (took = uskb_mono_ns() - t0) > 0) {
		/* the next call's size from this one's rate, changed by at most 4x */
		uint64_t want = (uint64_t)n * LIVE_CALL_NS / took;

		want = want > 4ull * n ? 4ull * n : want < n / 4 ? n / 4 : want;
		l->call = (uint32_t)(want < LIVE_CALL_MIN ? LIVE_CALL_MIN :
				     want > LIVE_CALL_MAX ? LIVE_CALL_MAX : want);
	}
	*ok = frames - l->frames;
	return err;
}

void __uskb_pg_live_account(struct pg_dev *d, uint64_t ok)
{
	struct pg_live *l = d->live;
	const struct pgl_state *s = &l->sh->st;

	l->frames += ok;
	/* the state the device's file shows, as the program left it */
	d->seq_num = s->seq_base + (uint32_t)s->frames;
	d->ip_id = (uint16_t)(s->ip_id_base + (uint32_t)s->frames);
	d->p.cur_saddr = s->cur_saddr;
	d->p.cur_daddr = s->cur_daddr;
	memcpy(&d->p.cur_in6_daddr, s->cur_daddr6, 16);
	d->p.cur_udp_src = (uint16_t)s->cur_udp_src;
	d->p.cur_udp_dst = (uint16_t)s->cur_udp_dst;
	d->p.cur_src_mac_offset = s->cur_src_mac_offset;
	d->p.cur_dst_mac_offset = s->cur_dst_mac_offset;
	d->curfl = s->curfl;
	d->nflows = s->nflows;
}

uint64_t __uskb_pg_live_unaccounted(const struct pg_dev *d)
{
	return d->live ? __atomic_load_n(&d->live->sh->st.frames, __ATOMIC_RELAXED) - d->live->frames : 0;
}

uint64_t __uskb_pg_live_halted(const struct pg_dev *d)
{
	return d->live ? d->live->sh->st.halted_ns : 0;
}

void __uskb_pg_live_stop(struct pg_dev *d)
{
	live_free(d->live);
	d->live = NULL;
}

#endif
