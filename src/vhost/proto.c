/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user protocol (QEMU's docs/interop/vhost-user.rst), backend
 * side: a unix socket that one frontend at a time connects to, its
 * messages (features, the memory table as file descriptors to map, ring
 * sizes, addresses, bases, kick and call eventfds, enable), and the loop
 * that serves the socket and the transmit queues' kicks.
 *
 * What the frontend sends is checked before it is used: sizes against the
 * message, region counts and file descriptors against each other, regions
 * for overflow and overlap, ring sizes for range and power of two. A bad
 * message gets a NAK (with REPLY_ACK) or closes the connection; the
 * backend goes on listening.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/unixpath.h"
#include "uskb/dev.h"
#include "vhost/priv.h"

/* vhost-user requests (the frontend's) */
enum {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
};

#define VU_VERSION 0x1
#define VU_REPLY 0x4
#define VU_NEED_REPLY 0x8
#define VU_F_PROTOCOL_FEATURES 30
#define VU_PROTOCOL_F_REPLY_ACK 3
#define VU_VRING_NOFD (1u << 8)
#define VU_MAX_FDS 8

/* packed: inside a message they start at byte 20 */
struct vu_region {
	uint64_t gpa, size, uva, mmap_offset;
} __attribute__((packed));

struct vu_msg {
	uint32_t request, flags, size;
	union {
		uint64_t u64;
		struct vu_state {
			uint32_t index, num;
		} state;
		struct vu_addr {
			uint32_t index, flags;
			uint64_t desc, used, avail, log;
		} addr;
		struct {
			uint32_t nregions, padding;
			struct vu_region r[VH_MAX_REGIONS];
		} mem;
	} p;
} __attribute__((packed));

#define VU_HDR 12u

/*
 * VIRTIO_F_IN_ORDER: buffers go back in the order they came, which the
 * order rule (transmit) and the receive path (avail order) keep anyway;
 * a driver then need not walk its free list (DPDK's in-order paths).
 */
static const uint64_t offered_always = (1ull << VIRTIO_NET_F_CSUM) | (1ull << VIRTIO_NET_F_GUEST_CSUM) |
				       (1ull << VIRTIO_NET_F_MRG_RXBUF) | (1ull << VIRTIO_RING_F_EVENT_IDX) |
				       (1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << VIRTIO_F_VERSION_1) |
				       (1ull << VIRTIO_F_IN_ORDER) | (1ull << VU_F_PROTOCOL_FEATURES);

/*
 * and TSO when the device takes TCP GSO frames (it segments them: tap:)
 * and finishes their checksums, as a netdev's TSO needs its CSUM
 */
static uint64_t offered(const struct uskb_vhost *vh)
{
	uint32_t df = vh->cfg.dev->features;
	uint64_t f = offered_always;

	if ((df & USKB_DEV_F_TSO) && (df & USKB_DEV_F_IP_CSUM))
		f |= 1ull << VIRTIO_NET_F_HOST_TSO4;
	if ((df & USKB_DEV_F_TSO) && (df & USKB_DEV_F_IPV6_CSUM))
		f |= 1ull << VIRTIO_NET_F_HOST_TSO6;
	if (f & ((1ull << VIRTIO_NET_F_HOST_TSO4) | (1ull << VIRTIO_NET_F_HOST_TSO6)))
		f |= 1ull << VIRTIO_NET_F_HOST_ECN;
	return f;
}
static const uint64_t offered_protocol = 1ull << VU_PROTOCOL_F_REPLY_ACK;

static __thread char new_err[256];

/* a queue as a new connection finds it: its counters go on (they are the backend's) */
static void queue_reset(struct vh_queue *q, unsigned int idx)
{
	struct uskb_vhost_qstats st = q->st;

	memset(q, 0, sizeof(*q));
	q->idx = idx;
	q->kick_fd = q->call_fd = q->err_fd = -1;
	q->st = st;
	q->st.errors = 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* every chain of a kept record is back */
static bool kept_done(const struct vh_kept *k)
{
	for (uint32_t i = k->tail; i != k->head; i++)
		if (!atomic_load_explicit(&k->pend[i % k->num].done, memory_order_acquire))
			return false;
	return true;
}

/*
 * Free the kept chains the device has completed since (a record once all
 * of its are), and unmap the guest memory they pointed into; how many
 * records remain. Memory goes with the record its connection's regions
 * joined, and only once no record without regions is left (a queue of the
 * same connection whose frags may point into it).
 */
static unsigned int reap_kept(struct uskb_vhost *vh)
{
	unsigned int left = 0, bare = 0;

	for (int pass = 0; pass < 2; pass++) {
		struct vh_kept **pp = &vh->kept;

		left = 0;
		while (*pp) {
			struct vh_kept *k = *pp;

			if ((k->nregions && (pass == 0 || bare)) || !kept_done(k)) {
				bare += pass == 0 && !k->nregions;
				left++;
				pp = &k->next;
				continue;
			}
			for (unsigned int r = 0; r < k->nregions; r++) {
				__uskb_vh_guard_del(k->reg[r].map);
				munmap(k->reg[r].map, k->reg[r].map_len);
			}
			free(k->pend);
			*pp = k->next;
			free(k);
		}
	}
	return left;
}

/* the guest's memory goes: nothing may point into it any more */
static void unmap_all(struct uskb_vhost *vh)
{
	if (vh->keep_maps) {
		/*
		 * Chains that never came back: their memory goes with them, not
		 * under a frag (without a record, out of memory: never)
		 */
		if (vh->kept && !vh->kept->nregions) {
			memcpy(vh->kept->reg, vh->reg, vh->nregions * sizeof(vh->reg[0]));
			vh->kept->nregions = vh->nregions;
			/* a SIGBUS there is no later frontend's doing */
			for (unsigned int i = 0; i < vh->nregions; i++)
				__uskb_vh_guard_move(vh->reg[i].map, &vh->kept->lost);
		}
		vh->nregions = 0;
		vh->keep_maps = false;
		atomic_store(&vh->mem_lost, false);
		return;
	}
	for (unsigned int i = 0; i < vh->nregions; i++) {
		__uskb_vh_guard_del(vh->reg[i].map);
		munmap(vh->reg[i].map, vh->reg[i].map_len);
	}
	vh->nregions = 0;
	atomic_store(&vh->mem_lost, false);
}

static void stop_queues(struct uskb_vhost *vh)
{
	for (unsigned int i = 0; i < VH_MAX_QUEUES; i++)
		__uskb_vh_queue_stop(vh, &vh->q[i]);
}

/* back to no owner (RESET_OWNER, a disconnect): stop, wait for the device, unmap, forget */
static void reset_state(struct uskb_vhost *vh)
{
	stop_queues(vh);
	unmap_all(vh);
	for (unsigned int i = 0; i < VH_MAX_QUEUES; i++) {
		struct vh_queue *q = &vh->q[i];

		close_fd(&q->kick_fd);
		close_fd(&q->call_fd);
		close_fd(&q->err_fd);
		queue_reset(q, i);
	}
	vh->features = vh->protocol_features = 0;
	vh->owner = false;
	atomic_store(&vh->connected, false);
	__uskb_vh_publish(vh);
}

static void disconnect(struct uskb_vhost *vh)
{
	reset_state(vh);
	close_fd(&vh->cfd);
}

/*
 * The control socket's bound: a message must arrive whole, and a reply be
 * taken, within a second. A frontend that stalls mid-message or does not
 * read its replies loses its connection, not the loop (nor the others
 * waiting, the stats, -t or the signals).
 */
#define VU_CTL_MS 1000

/* poll the control socket for @events until @deadline (ns); false: it did not come */
static bool ctl_wait(struct uskb_vhost *vh, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = vh->cfd, .events = events };
		uint64_t now = uskb_mono_ns();
		int r;

		if (now >= deadline)
			return false;
		r = poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

static int reply(struct uskb_vhost *vh, const struct vu_msg *m, const void *payload, uint32_t size)
{
	struct vu_msg r = { .request = m->request, .flags = VU_VERSION | VU_REPLY, .size = size };
	uint64_t deadline = uskb_mono_ns() + VU_CTL_MS * 1000000ull;
	size_t sent = 0, len = VU_HDR + size;

	memcpy(&r.p, payload, size);
	while (sent < len) {
		ssize_t n = send(vh->cfd, (char *)&r + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -EIO;
		if (!ctl_wait(vh, POLLOUT, deadline)) {
			fprintf(stderr, "uskb-vhost: the frontend takes no replies (none for %u ms): closing\n",
				VU_CTL_MS);
			return -EIO;
		}
	}
	return 0;
}

static int set_mem_table(struct uskb_vhost *vh, const struct vu_msg *m, int *fds, unsigned int nfds)
{
	struct vh_region reg[VH_MAX_REGIONS];
	unsigned int n = m->p.mem.nregions;

	if (m->size < 8 || n == 0 || n > VH_MAX_REGIONS || m->size < 8 + n * sizeof(struct vu_region) ||
	    nfds != n) {
		fprintf(stderr, "uskb-vhost: SET_MEM_TABLE: %u regions, %u fds, %u bytes: refused\n", n, nfds,
			m->size);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct vu_region *r = &m->p.mem.r[i];

		if (!r->size || r->gpa + r->size < r->gpa || r->uva + r->size < r->uva ||
		    r->mmap_offset + r->size < r->mmap_offset || r->size > (1ull << 40)) {
			fprintf(stderr, "uskb-vhost: SET_MEM_TABLE: region %u is bad\n", i);
			return -EINVAL;
		}
		for (unsigned int j = 0; j < i; j++) {
			const struct vu_region *o = &m->p.mem.r[j];

			if (r->gpa < o->gpa + o->size && o->gpa < r->gpa + r->size) {
				fprintf(stderr, "uskb-vhost: SET_MEM_TABLE: regions %u and %u overlap\n", j, i);
				return -EINVAL;
			}
		}
	}
	/* a region past the end of its file would map, then fault (SIGBUS) when read */
	for (unsigned int i = 0; i < n; i++) {
		const struct vu_region *r = &m->p.mem.r[i];
		struct stat st;

		if (fstat(fds[i], &st) || (uint64_t)st.st_size < r->mmap_offset + r->size) {
			fprintf(stderr, "uskb-vhost: SET_MEM_TABLE: region %u ends past its file\n", i);
			return -EINVAL;
		}
	}
	/* the old table goes only once nothing points into it */
	atomic_store(&vh->connected, false);
	stop_queues(vh);
	unmap_all(vh);
	/* what the device completed since of earlier connections' kept chains goes now */
	reap_kept(vh);
	for (unsigned int i = 0; i < n; i++) {
		const struct vu_region *r = &m->p.mem.r[i];
		size_t len = (size_t)(r->mmap_offset + r->size);
		void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);

		if (map == MAP_FAILED || __uskb_vh_guard_add(map, len, &vh->mem_lost)) {
			int err = map == MAP_FAILED ? errno : ENOSPC;

			if (map != MAP_FAILED)
				munmap(map, len);
			fprintf(stderr, "uskb-vhost: SET_MEM_TABLE: mapping region %u (%zu bytes): %s\n", i, len,
				strerror(err));
			while (i--) {
				__uskb_vh_guard_del(reg[i].map);
				munmap(reg[i].map, reg[i].map_len);
			}
			return -err;
		}
		reg[i] = (struct vh_region){ .gpa = r->gpa, .size = r->size, .uva = r->uva,
					     .host = (uint8_t *)map + r->mmap_offset, .map = map, .map_len = len };
	}
	memcpy(vh->reg, reg, n * sizeof(reg[0]));
	vh->nregions = n;
	atomic_store(&vh->connected, true);
	for (unsigned int i = 0; i < VH_MAX_QUEUES; i++)
		__uskb_vh_queue_start(vh, &vh->q[i]);
	return 0;
}

static struct vh_queue *queue_of(struct uskb_vhost *vh, uint32_t index)
{
	return index < VH_MAX_QUEUES ? &vh->q[index] : NULL;
}

static void set_fd(int *slot, int fd)
{
	close_fd(slot);
	*slot = fd;
}

/* one message; 0, -errno for a NAK, 1 to close the connection, 2 when it was answered already */
static int handle(struct uskb_vhost *vh, struct vu_msg *m, int *fds, unsigned int *nfds)
{
	struct vh_queue *q = NULL;
	uint64_t u;

	switch (m->request) {
	case VU_GET_FEATURES:
		u = offered(vh);
		return reply(vh, m, &u, 8) ? 1 : 2;
	case VU_SET_FEATURES:
		if (m->size < 8 || (m->p.u64 & ~offered(vh))) {
			if (m->size < 8)
				fprintf(stderr, "uskb-vhost: SET_FEATURES refused: no value\n");
			else
				fprintf(stderr, "uskb-vhost: SET_FEATURES refused: bits %#llx were not offered\n",
					(unsigned long long)(m->p.u64 & ~offered(vh)));
			return -EINVAL;
		}
		vh->features = m->p.u64;
		vh->hdr_len = vh->features & ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_NET_F_MRG_RXBUF)) ?
				      sizeof(struct virtio_net_hdr_mrg_rxbuf) : sizeof(struct virtio_net_hdr);
		/* without the protocol features a ring is enabled once kicked */
		return 0;
	case VU_GET_PROTOCOL_FEATURES:
		u = offered_protocol;
		return reply(vh, m, &u, 8) ? 1 : 2;
	case VU_SET_PROTOCOL_FEATURES:
		if (m->size < 8 || (m->p.u64 & ~offered_protocol)) {
			if (m->size < 8)
				fprintf(stderr, "uskb-vhost: SET_PROTOCOL_FEATURES refused: no value\n");
			else
				fprintf(stderr, "uskb-vhost: SET_PROTOCOL_FEATURES refused: bits %#llx were "
						"not offered\n", (unsigned long long)(m->p.u64 & ~offered_protocol));
			return -EINVAL;
		}
		vh->protocol_features = m->p.u64;
		return 0;
	case VU_SET_OWNER:
		vh->owner = true;
		return 0;
	case VU_RESET_OWNER:
		reset_state(vh);
		return 0;
	case VU_GET_QUEUE_NUM:
		u = VH_MAX_QUEUES / 2;
		return reply(vh, m, &u, 8) ? 1 : 2;
	case VU_SET_MEM_TABLE: {
		int err = set_mem_table(vh, m, fds, *nfds);

		for (unsigned int i = 0; i < *nfds; i++)
			close(fds[i]); /* the mappings stay */
		*nfds = 0;
		return err;
	}
	case VU_SET_LOG_BASE:
	case VU_SET_LOG_FD:
		/* live migration's dirty log: not offered (no LOG_ALL, no LOG_SHMFD) */
		fprintf(stderr, "uskb-vhost: %s refused: dirty logging is not supported\n",
			m->request == VU_SET_LOG_BASE ? "SET_LOG_BASE" : "SET_LOG_FD");
		return -ENOTSUP;
	default:
		break;
	}
	/* the ring messages: a queue index first */
	if (m->size < 8 || !(q = queue_of(vh, m->request == VU_SET_VRING_KICK || m->request == VU_SET_VRING_CALL ||
						     m->request == VU_SET_VRING_ERR ?
					     (uint32_t)(m->p.u64 & 0xff) : m->p.state.index))) {
		fprintf(stderr, "uskb-vhost: request %u for a queue this backend does not have\n", m->request);
		return -EINVAL;
	}
	switch (m->request) {
	case VU_SET_VRING_NUM:
		if (q->started || !m->p.state.num || m->p.state.num > VH_MAX_RING ||
		    (m->p.state.num & (m->p.state.num - 1)))
			return -EINVAL;
		if (q->num != m->p.state.num) {
			free(q->pend);
			q->pend = NULL;
		}
		q->num = (uint16_t)m->p.state.num;
		return 0;
	case VU_SET_VRING_ADDR:
		if (m->size < sizeof(struct vu_addr) || q->started)
			return -EINVAL;
		q->desc_uva = m->p.addr.desc;
		q->avail_uva = m->p.addr.avail;
		q->used_uva = m->p.addr.used;
		q->have_addr = true;
		return __uskb_vh_queue_start(vh, q) ? -EINVAL : 0;
	case VU_SET_VRING_BASE:
		if (q->started || m->p.state.num > 0xffff)
			return -EINVAL;
		q->last_avail = (uint16_t)m->p.state.num;
		return 0;
	case VU_GET_VRING_BASE: {
		struct vu_state st = { m->p.state.index, 0 };

		/*
		 * Stop: the device's completions first, then where the guest is
		 * to go on. The ring starts again only with a new address and
		 * kick (QEMU re-enables it before it sends them).
		 */
		__uskb_vh_queue_stop(vh, q);
		q->broken = false;
		q->kicked = false;
		q->have_addr = false;
		close_fd(&q->kick_fd);
		st.num = q->last_avail;
		return reply(vh, m, &st, sizeof(st)) ? 1 : 2;
	}
	case VU_SET_VRING_KICK:
	case VU_SET_VRING_CALL:
	case VU_SET_VRING_ERR: {
		int fd = -1;

		if (!(m->p.u64 & VU_VRING_NOFD)) {
			if (*nfds != 1)
				return -EINVAL;
			fd = fds[0];
			*nfds = 0;
		}
		if (m->request == VU_SET_VRING_KICK) {
			set_fd(&q->kick_fd, fd);
			q->kicked = true;
			if (fd >= 0)
				fcntl(fd, F_SETFL, O_NONBLOCK);
			if (!(vh->features & (1ull << VU_F_PROTOCOL_FEATURES)))
				q->enabled = true;
			return __uskb_vh_queue_start(vh, q) ? -EINVAL : 0;
		}
		set_fd(m->request == VU_SET_VRING_CALL ? &q->call_fd : &q->err_fd, fd);
		return 0;
	}
	case VU_SET_VRING_ENABLE:
		q->enabled = m->p.state.num != 0;
		if (q->enabled)
			return __uskb_vh_queue_start(vh, q) ? -EINVAL : 0;
		/* disabled: nothing more is taken (its chains wait in the ring) until it is enabled again */
		__uskb_vh_queue_stop(vh, q);
		return 0;
	default:
		fprintf(stderr, "uskb-vhost: request %u is not supported\n", m->request);
		return -ENOTSUP;
	}
}

/* read and serve one message; false: the connection is over */
static bool serve_one(struct uskb_vhost *vh)
{
	struct vu_msg m;
	int fds[VU_MAX_FDS];
	unsigned int nfds = 0;
	char cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = { &m, VU_HDR };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(vh->cfd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	uint64_t deadline = uskb_mono_ns() + VU_CTL_MS * 1000000ull;
	bool ok = true, ack;
	int r;

	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			unsigned int k = (unsigned int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (unsigned int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (nfds < VU_MAX_FDS)
					fds[nfds++] = fd;
				else
					close(fd);
			}
		}
	if (n != VU_HDR || (m.flags & 0x3) != VU_VERSION || m.size > sizeof(m.p) || (mh.msg_flags & MSG_CTRUNC)) {
		fprintf(stderr, "uskb-vhost: a bad message header (%zd bytes, version %u, size %u): closing\n", n,
			m.flags & 3, m.size);
		ok = false;
		goto out;
	}
	for (uint32_t got = 0; got < m.size;) {
		n = recv(vh->cfd, (char *)&m.p + got, m.size - got, MSG_DONTWAIT);
		if (n > 0) {
			got += (uint32_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || errno != EAGAIN) {
			ok = false;
			goto out;
		}
		if (!ctl_wait(vh, POLLIN, deadline)) {
			fprintf(stderr, "uskb-vhost: request %u: %u of its %u bytes came within %u ms: closing\n",
				m.request, got, m.size, VU_CTL_MS);
			ok = false;
			goto out;
		}
	}
	/*
	 * REPLY_ACK as it stood before the message or after it: RESET_OWNER
	 * clears it and still owes its ack; SET_PROTOCOL_FEATURES may set it
	 */
	ack = vh->protocol_features & (1ull << VU_PROTOCOL_F_REPLY_ACK);
	r = handle(vh, &m, fds, &nfds);
	ack = ack || (vh->protocol_features & (1ull << VU_PROTOCOL_F_REPLY_ACK));
	if (r == 1) {
		ok = false;
	} else if (r != 2 && (m.flags & VU_NEED_REPLY) && ack) {
		/* (a request that has a reply of its own gets no ack besides) */
		uint64_t status = r ? 1 : 0;

		if (reply(vh, &m, &status, 8))
			ok = false;
	}
out:
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	return ok;
}

struct uskb_vhost *uskb_vhost_new(const struct uskb_vhost_config *cfg)
{
	struct uskb_vhost *vh;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int claim;

	if (!cfg || !cfg->socket || !cfg->dev) {
		snprintf(new_err, sizeof(new_err), "a socket path and a device are needed");
		errno = EINVAL;
		return NULL;
	}
	if (strlen(cfg->socket) >= sizeof(sa.sun_path)) {
		snprintf(new_err, sizeof(new_err), "%s: a socket path of at most %zu bytes", cfg->socket,
			 sizeof(sa.sun_path) - 1);
		errno = ENAMETOOLONG;
		return NULL;
	}
	/* a crashed run's socket goes; a live backend's, or a file, stays */
	claim = uskb_unix_path_claim(cfg->socket, SOCK_STREAM);
	if (claim) {
		snprintf(new_err, sizeof(new_err), claim == -EADDRINUSE ?
			 "%s: a live process serves this socket (another uskb-vhost?): not taken over" :
			 claim == -ENOTSOCK ? "%s: something other than a socket is there: left alone" :
			 "%s: %s", cfg->socket, strerror(-claim));
		errno = -claim;
		return NULL;
	}
	vh = calloc(1, sizeof(*vh));
	if (!vh || !(vh->path = strdup(cfg->socket))) {
		free(vh);
		snprintf(new_err, sizeof(new_err), "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	vh->cfg = *cfg;
	if (!vh->cfg.copybreak)
		vh->cfg.copybreak = 256;
	if (!vh->cfg.max_pend)
		vh->cfg.max_pend = 128;
	vh->cfd = -1;
	pthread_mutex_init(&vh->stats_lock, NULL);
	for (unsigned int i = 0; i < VH_MAX_QUEUES; i++)
		queue_reset(&vh->q[i], i);
	strcpy(sa.sun_path, cfg->socket);
	vh->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vh->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (vh->stop_fd < 0 || vh->lfd < 0 || bind(vh->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(vh->lfd, 1)) {
		int err = errno;

		snprintf(new_err, sizeof(new_err), "%s: %s", cfg->socket, strerror(err));
		if (vh->lfd >= 0)
			close(vh->lfd);
		if (vh->stop_fd >= 0)
			close(vh->stop_fd);
		pthread_mutex_destroy(&vh->stats_lock);
		free(vh->path);
		free(vh);
		errno = err;
		return NULL;
	}
	return vh;
}

const char *uskb_vhost_strerror(const struct uskb_vhost *vh)
{
	static __thread char copy[sizeof(vh->err)];

	if (!vh)
		return new_err;
	pthread_mutex_lock((pthread_mutex_t *)&vh->stats_lock);
	memcpy(copy, vh->err, sizeof(copy));
	pthread_mutex_unlock((pthread_mutex_t *)&vh->stats_lock);
	return copy;
}

bool uskb_vhost_connected(const struct uskb_vhost *vh)
{
	return atomic_load(&vh->connected);
}

uint64_t uskb_vhost_abandoned(const struct uskb_vhost *vh)
{
	return atomic_load_explicit(&vh->abandoned, memory_order_relaxed);
}

void uskb_vhost_stop(struct uskb_vhost *vh)
{
	/* (both async-signal-safe: a signal handler may call this) */
	atomic_store_explicit(&vh->stopping, true, memory_order_relaxed);
	(void)eventfd_write(vh->stop_fd, 1);
}

bool uskb_vhost_get_stats(const struct uskb_vhost *vh, unsigned int q, struct uskb_vhost_qstats *st)
{
	if (q >= VH_MAX_QUEUES)
		return false;
	pthread_mutex_lock((pthread_mutex_t *)&vh->stats_lock);
	*st = vh->pub[q];
	pthread_mutex_unlock((pthread_mutex_t *)&vh->stats_lock);
	return true;
}

/* the lower device receives: its frames go to the guest */
static bool receives(const struct uskb_vhost *vh)
{
	return vh->cfg.dev->nrxqueues > 0 && vh->cfg.dev->ops->rx;
}

/*
 * Wait for the socket, the stop eventfd and the kicks (@wait ms), and serve
 * what came: accept, every message waiting, the kicks read. 1, 0 when
 * stopped, or -errno.
 */
static int wait_events(struct uskb_vhost *vh, int wait)
{
	struct pollfd pfd[2 + VH_MAX_QUEUES];
	unsigned int n = 0, qi[2 + VH_MAX_QUEUES];
	uint64_t v;

	pfd[n++] = (struct pollfd){ .fd = vh->stop_fd, .events = POLLIN };
	pfd[n++] = (struct pollfd){ .fd = vh->cfd >= 0 ? vh->cfd : vh->lfd, .events = POLLIN };
	for (unsigned int i = 0; i < VH_MAX_QUEUES; i++) {
		struct vh_queue *q = &vh->q[i];

		if (!q->started || q->broken || q->kick_fd < 0 || (!(i & 1) && !receives(vh)))
			continue;
		qi[n] = i;
		pfd[n++] = (struct pollfd){ .fd = q->kick_fd, .events = POLLIN };
	}
	if (poll(pfd, n, wait) < 0)
		return errno == EINTR ? 1 : -errno;
	if (pfd[0].revents & POLLIN) {
		(void)eventfd_read(vh->stop_fd, &v);
		return 0;
	}
	/* the kicks first: a message may close or replace a kick fd */
	for (unsigned int k = 2; k < n; k++)
		if ((pfd[k].revents & POLLIN) && vh->q[qi[k]].kick_fd == pfd[k].fd)
			(void)eventfd_read(pfd[k].fd, &v);
	if (pfd[1].revents) {
		if (vh->cfd < 0) {
			vh->cfd = accept4(vh->lfd, NULL, NULL, SOCK_CLOEXEC);
			atomic_store(&vh->mem_lost, false);
		} else {
			/* the messages waiting, then the rings: at most 64 (a flood holds nothing up) */
			unsigned int served = 0;

			do {
				if (!serve_one(vh)) {
					disconnect(vh);
					break;
				}
			} while (++served < 64 && poll(&pfd[1], 1, 0) == 1 && (pfd[1].revents & POLLIN));
		}
	}
	return 1;
}

int uskb_vhost_run(struct uskb_vhost *vh, int timeout_ms)
{
	uint64_t deadline = timeout_ms >= 0 ? uskb_mono_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
	uint64_t busy_ns = (uint64_t)vh->cfg.busy_poll_us * 1000;
	bool again = true; /* the last round moved something: there may be more (it stops at VH_WEIGHT) */
	struct pollfd sp = { .fd = vh->stop_fd, .events = POLLIN };

	/* a stop taken by an earlier call is over; one still pending is not */
	if (poll(&sp, 1, 0) != 1)
		atomic_store_explicit(&vh->stopping, false, memory_order_relaxed);

	for (;;) {
		uint64_t now = uskb_mono_ns();
		bool work = false, spun = vh->spinning; /* (the last round, maybe of the last call) */

		if (timeout_ms >= 0 && now >= deadline)
			return 0;
		/* a region's file shrank under it (guard.c): zeros there now; this frontend goes */
		if (uskb_unlikely(atomic_load_explicit(&vh->mem_lost, memory_order_relaxed)) && vh->cfd >= 0) {
			fprintf(stderr, "uskb-vhost: the frontend's memory file shrank under its mapping (SIGBUS "
					"in guest memory): closing\n");
			disconnect(vh);
		}
		vh->spinning = now < vh->spin_until;
		/* spinning, the socket and the stop are looked at every 64 rounds, without a wait */
		if (!vh->spinning || !(++vh->spins % 64)) {
			int wait = 100, r;

			for (unsigned int i = 0; i < VH_MAX_QUEUES; i++) {
				const struct vh_queue *q = &vh->q[i];

				/* chains out, the receive queue (no fd to wait on here): look every ms */
				if (q->started && !q->broken && (q->pend_head != q->pend_tail || q->nbacklog ||
								 q->kick_fd < 0 || (!(i & 1) && receives(vh))))
					wait = 1;
			}
			/*
			 * No sleep before a round that found nothing asked for kicks:
			 * after work, and just after spinning.
			 */
			if (vh->spinning || spun || again)
				wait = 0;
			if (timeout_ms >= 0 && (deadline - now) / 1000000 < (uint64_t)wait)
				wait = (int)((deadline - now) / 1000000);
			r = wait_events(vh, wait);
			if (r <= 0)
				return r;
		}
		for (unsigned int i = 0; i < VH_MAX_QUEUES; i++) {
			struct vh_queue *q = &vh->q[i];

			if (!q->started || q->broken)
				continue;
			if (!(i & 1)) {
				if (receives(vh))
					work |= __uskb_vh_rx(vh, q);
				continue;
			}
			if (q->pend_head != q->pend_tail)
				uskb_dev_flush(vh->cfg.dev, 0);
			work |= __uskb_vh_tx(vh, q);
		}
		if (work || !vh->spinning || !(vh->spins % 64))
			__uskb_vh_publish(vh);
		again = work;
		if (work && busy_ns)
			vh->spin_until = uskb_mono_ns() + busy_ns;
		if (vh_limited(vh, &vh->q[1]) && vh->q[1].pend_head == vh->q[1].pend_tail)
			return 0;
	}
}

void uskb_vhost_free(struct uskb_vhost *vh)
{
	if (!vh)
		return;
	disconnect(vh);
	close(vh->lfd);
	close(vh->stop_fd);
	unlink(vh->path);
	if (reap_kept(vh)) {
		/* completions of chains the device never gave back still reach their entries */
		fprintf(stderr, "uskb-vhost: the device never completed some chains: the backend's memory is left\n");
		return;
	}
	pthread_mutex_destroy(&vh->stats_lock);
	free(vh->path);
	free(vh);
}
