/* SPDX-License-Identifier: MIT */
/* The device layer and its built-in devices: null and pcap. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <sys/time.h>

#include "internal.h"
#include "uskb/dev.h"

/* why the calling thread's last open failed */
static __thread char dev_err[256];

extern const struct uskb_dev_ops uskb_packet_ops __hidden;
extern const struct uskb_dev_ops uskb_xdp_ops __hidden;

int uskb_dev_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dev_err, sizeof(dev_err), fmt, ap);
	va_end(ap);
	return -err;
}

int uskb_dev_probe_ether(struct uskb_dev *dev, int fd, const char *type, const char *ifname)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		return uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	if (!(ifr.ifr_flags & IFF_UP))
		return uskb_dev_fail(ENETDOWN, "%s:%s: the interface is down (ip link set %s up)", type,
				     ifname, ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		return uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		return uskb_dev_fail(EINVAL, "%s:%s: not an Ethernet interface", type, ifname);
	memcpy(dev->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		return uskb_dev_fail(errno, "%s:%s: %s", type, ifname, strerror(errno));
	dev->mtu = (unsigned int)ifr.ifr_mtu;
	return 0;
}

void uskb_dev_rx_skb(struct uskb_dev *dev, struct uskb *skb)
{
	skb->dev = dev;
	uskb_reset_mac_header(skb);
	if (skb->len >= 14)
		memcpy(&skb->protocol, skb->data + 12, 2);
}

unsigned int uskb_dev_if_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned int n = 1;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (char *)&ch;
	if (fd >= 0 && !ioctl(fd, SIOCETHTOOL, &ifr)) {
		unsigned int rt = ch.rx_count < ch.tx_count ? ch.rx_count : ch.tx_count;

		n = ch.combined_count + rt;
		if (!n)
			n = 1;
	}
	if (fd >= 0)
		close(fd);
	return n;
}

bool uskb_dev_too_long(unsigned int mtu, const struct uskb *skb)
{
	unsigned int limit = mtu + 14;
	unsigned char type[2];

	if (skb->len < 14 || uskb_copy_bits(skb, 12, type, 2))
		return true;
	if ((type[0] == 0x81 && type[1] == 0x00) || (type[0] == 0x88 && type[1] == 0xa8))
		limit += 4;
	return skb->len > limit;
}

const char *uskb_dev_strerror(void)
{
	return dev_err[0] ? dev_err : "no error";
}

/* ---- null: consumes everything (pktgen to a dummy device) ---- */

/* "null" or "null:nocsum" (no checksum offload: senders compute UDP sums) */
static int null_open(struct uskb_dev *dev, const char *arg)
{
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM |
			USKB_DEV_F_ZEROCOPY | USKB_DEV_F_TX_SKB_SHARING;
	if (arg && !strcmp(arg, "nocsum")) {
		dev->features &= ~(uint32_t)(USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM);
	} else if (arg && *arg) {
		return uskb_dev_fail(EINVAL, "null: the only option is nocsum (got \"%s\")", arg);
	}
	return 0;
}

static void null_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
		      int *res)
{
	int i;

	(void)dev;
	(void)queue;
	for (i = 0; i < n; i++) {
		res[i] = USKB_XMIT_OK;
		uskb_consume(skbs[i]);
	}
}

/* ---- pcap: every frame to a file ---- */

struct pcap_priv {
	FILE *f;
	unsigned char buf[65536];
};

static int pcap_open(struct uskb_dev *dev, const char *arg)
{
	/* classic pcap: magic, v2.4, GMT offset 0, sigfigs 0, snaplen, LINKTYPE_ETHERNET */
	static const uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };
	struct pcap_priv *p;

	if (!arg || !*arg)
		return uskb_dev_fail(EINVAL, "pcap: give a file, as in pcap:out.pcap");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->f = fopen(arg, "wb");
	if (!p->f) {
		int err = errno;

		free(p);
		return uskb_dev_fail(err, "pcap: cannot create %s: %s", arg, strerror(err));
	}
	if (fwrite(hdr, sizeof(hdr), 1, p->f) != 1) {
		fclose(p->f);
		free(p);
		return uskb_dev_fail(EIO, "pcap: cannot write %s", arg);
	}
	dev->priv = p;
	/* a capture file takes anything, as the NIC would: SG, no offloads */
	dev->features = USKB_DEV_F_SG | USKB_DEV_F_ZEROCOPY | USKB_DEV_F_TX_SKB_SHARING;
	return 0;
}

static void pcap_close(struct uskb_dev *dev)
{
	struct pcap_priv *p = dev->priv;

	fclose(p->f);
	free(p);
}

static void pcap_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n,
		      int *res)
{
	struct pcap_priv *p = dev->priv;
	struct timeval tv;
	int i;

	(void)queue;
	gettimeofday(&tv, NULL);
	for (i = 0; i < n; i++) {
		struct uskb *skb = skbs[i];
		unsigned int caplen = skb->len < sizeof(p->buf) ? skb->len : sizeof(p->buf);
		uint32_t rec[4] = { (uint32_t)tv.tv_sec, (uint32_t)tv.tv_usec, caplen, skb->len };

		/* head, frags and frag_list, in order */
		if (uskb_copy_bits(skb, 0, p->buf, (int)caplen) ||
		    fwrite(rec, sizeof(rec), 1, p->f) != 1 || fwrite(p->buf, caplen, 1, p->f) != 1)
			res[i] = USKB_XMIT_DROP;
		else
			res[i] = USKB_XMIT_OK;
		uskb_consume(skb);
	}
}

static const struct uskb_dev_ops null_ops = { .type = "null", .open = null_open, .xmit = null_xmit };
static const struct uskb_dev_ops pcap_ops = {
	.type = "pcap", .open = pcap_open, .close = pcap_close, .xmit = pcap_xmit
};
static const struct uskb_dev_ops *const builtin[] = { &null_ops, &pcap_ops, &uskb_packet_ops,
							 &uskb_xdp_ops };

struct uskb_dev *uskb_dev_open(const char *spec)
{
	const struct uskb_dev_ops *ops;
	const char *colon, *arg = NULL;
	struct uskb_dev *dev;
	size_t tlen;
	unsigned int i;
	int err;

	dev_err[0] = 0;
	if (!spec || !*spec) {
		errno = -uskb_dev_fail(EINVAL, "no device given");
		return NULL;
	}
	colon = strchr(spec, ':');
	tlen = colon ? (size_t)(colon - spec) : strlen(spec);
	if (colon)
		arg = colon + 1;
	for (i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (strlen(builtin[i]->type) == tlen && !strncmp(spec, builtin[i]->type, tlen))
			break;
	if (i == sizeof(builtin) / sizeof(builtin[0])) {
		if (!colon && if_nametoindex(spec)) {
			/* a bare interface name: packet:IFNAME */
			ops = &uskb_packet_ops;
			arg = spec;
		} else {
			errno = -uskb_dev_fail(EINVAL, "unknown device \"%s\": use null, pcap:FILE, "
						       "packet:IFNAME, xdp:IFNAME or an interface name", spec);
			return NULL;
		}
	} else {
		ops = builtin[i];
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	snprintf(dev->name, sizeof(dev->name), "%s", spec);
	dev->ops = ops;
	dev->mtu = 1500;
	dev->nqueues = 1;
	dev->rx_patience_ms = 100;
	memcpy(dev->mac, "\x02\x00\x00\x00\x00\x01", 6);
	err = dev->ops->open(dev, arg);
	if (err) {
		free(dev);
		errno = -err;
		return NULL;
	}
	dev->qstats = aligned_alloc(64, dev->nqueues * sizeof(*dev->qstats));
	if (!dev->qstats) {
		if (dev->ops->close)
			dev->ops->close(dev);
		free(dev);
		errno = ENOMEM;
		return NULL;
	}
	memset(dev->qstats, 0, dev->nqueues * sizeof(*dev->qstats));
	return dev;
}

void uskb_dev_close(struct uskb_dev *dev)
{
	if (!dev)
		return;
	if (dev->ops->close)
		dev->ops->close(dev);
	free(dev->qstats);
	free(dev);
}

int uskb_dev_xmit(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int n, int *res)
{
	int local[64], i, ok = 0, dropped = 0, done = 0;
	unsigned int lens[64];
	struct uskb_dev_stats *q;
	uint64_t bytes = 0;

	if (uskb_unlikely(queue >= dev->nqueues))
		uskb_bug("dev_xmit", NULL, "%s has no queue %u", dev->name, queue);
	/* in chunks of 64: the lengths are read before the device consumes the skbs */
	while (done < n) {
		int k = n - done < 64 ? n - done : 64;
		int *r = res ? res + done : local;

		for (i = 0; i < k; i++) {
			struct uskb *skb = skbs[done + i];

			/* a nonlinear skb needs a scatter-gather device (the stack linearizes) */
			if (uskb_unlikely(uskb_is_nonlinear(skb) && !(dev->features & USKB_DEV_F_SG)))
				uskb_bug("dev_xmit", skb, "paged skb to %s, which has no SG", dev->name);
			lens[i] = skb->len;
		}
		dev->ops->xmit(dev, queue, skbs + done, k, r);
		for (i = 0; i < k; i++) {
			if (r[i] == USKB_XMIT_OK) {
				ok++;
				bytes += lens[i];
			} else if (r[i] == USKB_XMIT_DROP) {
				dropped++;
			}
		}
		done += k;
	}
	if (uskb_unlikely(!dev->qstats)) /* a device built by hand, without counters */
		return ok;
	q = &dev->qstats[queue];
	dev_stat_add(&q->tx_packets, (uint64_t)ok);
	dev_stat_add(&q->tx_bytes, bytes);
	dev_stat_add(&q->tx_dropped, (uint64_t)dropped);
	dev_stat_add(&q->tx_busy, (uint64_t)(n - ok - dropped));
	return ok;
}

int uskb_dev_rx(struct uskb_dev *dev, unsigned int queue, struct uskb **skbs, int max,
		int timeout_ms)
{
	uint64_t bytes = 0;
	int n, i;

	if (!dev->ops->rx)
		return -EOPNOTSUPP;
	if (uskb_unlikely(queue >= dev->nqueues))
		uskb_bug("dev_rx", NULL, "%s has no queue %u", dev->name, queue);
	if (queue >= dev->nrxqueues)
		return -EOPNOTSUPP;
	if (max <= 0)
		return 0;
	n = dev->ops->rx(dev, queue, skbs, max, timeout_ms);
	for (i = 0; i < n; i++)
		bytes += skbs[i]->len;
	if (n > 0 && dev->qstats) {
		dev_stat_add(&dev->qstats[queue].rx_packets, (uint64_t)n);
		dev_stat_add(&dev->qstats[queue].rx_bytes, bytes);
	}
	return n;
}

void uskb_dev_get_stats(const struct uskb_dev *dev, int queue, struct uskb_dev_stats *st)
{
	unsigned int q = queue < 0 ? 0 : (unsigned int)queue;
	unsigned int end = queue < 0 ? dev->nqueues : q + 1;

	memset(st, 0, sizeof(*st));
	if (end > dev->nqueues || !dev->qstats)
		return;
	for (; q < end; q++) {
		const uint64_t *from = (const uint64_t *)&dev->qstats[q];
		uint64_t *to = (uint64_t *)st;

		/* relaxed loads: each counter has one writer, and a moment's figure is enough */
		for (size_t i = 0; i < offsetof(struct uskb_dev_stats, rx_orphaned) / 8 + 1; i++)
			to[i] += __atomic_load_n(&from[i], __ATOMIC_RELAXED);
	}
}

void uskb_dev_flush(struct uskb_dev *dev, unsigned int queue)
{
	if (dev->ops->flush)
		dev->ops->flush(dev, queue);
}
