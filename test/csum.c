/* SPDX-License-Identifier: MIT */
/*
 * Checksums: RFC 1071 examples, the fast sum against the byte-at-a-time
 * reference at every alignment, block combination, pseudo headers, and
 * checksum_help on paged packets whose checksums tshark must accept.
 */
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"

static void test_rfc1071(void)
{
	/* RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 */
	static const unsigned char b[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uskb_sum16 c = uskb_csum_fold(uskb_csum_partial(b, sizeof(b), 0));
	unsigned char out[2];

	memcpy(out, &c, 2);
	CHECK(out[0] == 0x22 && out[1] == 0x0d); /* ~0xddf2 on the wire */
	CHECK_EQ(uskb_csum_fold(uskb_csum_partial_ref(b, sizeof(b), 0)), c);
	/* a buffer that includes its own checksum sums to zero */
	{
		unsigned char all[10];

		memcpy(all, b, 8);
		memcpy(all + 8, out, 2);
		CHECK_EQ(uskb_csum_fold(uskb_csum_partial(all, 10, 0)), 0);
	}
	/* odd length: the last byte is padded on the right (high byte on the wire) */
	{
		static const unsigned char o[] = { 0x12, 0x34, 0x56 };
		/* 0x1234 + 0x5600 = 0x6834 -> ~ = 0x97cb */
		c = uskb_csum_fold(uskb_csum_partial(o, 3, 0));
		memcpy(out, &c, 2);
		CHECK(out[0] == 0x97 && out[1] == 0xcb);
	}
}

static void test_vs_reference(void)
{
	static unsigned char buf[4096 + 16];
	unsigned int seed, off, len;

	for (seed = 0; seed < 4; seed++) {
		t_fill(buf, sizeof(buf), seed * 77 + 1);
		if (seed == 3)
			memset(buf, 0xff, sizeof(buf)); /* maximal carries */
		for (off = 0; off < 9; off++)
			for (len = 0; len < 300; len++)
				CHECK_EQ(uskb_csum_fold(uskb_csum_partial(buf + off, len, seed * 0x12345)),
					 uskb_csum_fold(uskb_csum_partial_ref(buf + off, len, seed * 0x12345)));
		CHECK_EQ(uskb_csum_fold(uskb_csum_partial(buf + 3, 4096, 0)),
			 uskb_csum_fold(uskb_csum_partial_ref(buf + 3, 4096, 0)));
	}
	/* combining block sums at odd and even offsets */
	t_fill(buf, 1000, 9);
	for (off = 0; off < 40; off++) {
		uskb_wsum a = uskb_csum_partial(buf, off, 0);
		uskb_wsum b = uskb_csum_partial(buf + off, 1000 - off, 0);

		CHECK_EQ(uskb_csum_fold(uskb_csum_block_add(a, b, (int)off)),
			 uskb_csum_fold(uskb_csum_partial(buf, 1000, 0)));
		/* ones' complement has two zeros: compare modulo 0xffff */
		CHECK_EQ(uskb_csum_fold(uskb_csum_block_sub(uskb_csum_partial(buf, 1000, 0), b,
							     (int)off)) % 0xffff,
			 uskb_csum_fold(a) % 0xffff);
	}
}

/* ---- packets checked by an independent decoder ---- */

struct pcap_w {
	FILE *f;
};

/* ip_fast_csum (inline word sum) equals csum_fold(csum_partial) for every header length */
static void test_ip_fast_csum(void)
{
	unsigned char h[60];

	for (int round = 0; round < 20000; round++) {
		unsigned int ihl = 5 + (unsigned int)round % 11;

		t_fill(h, sizeof(h), (unsigned int)round + 1);
		if (round % 7 == 0)
			memset(h, 0xff, sizeof(h)); /* carries everywhere */
		CHECK_EQ(uskb_ip_fast_csum(h, ihl), uskb_csum_fold(uskb_csum_partial(h, ihl * 4, 0)));
	}
	/* and a header that verifies to zero once its sum is stored */
	t_fill(h, 20, 99);
	h[10] = h[11] = 0;
	{
		uint16_t c = uskb_ip_fast_csum(h, 5);

		memcpy(h + 10, &c, 2);
		CHECK_EQ(uskb_ip_fast_csum(h, 5), 0);
	}
}

static void pcap_open(struct pcap_w *w, const char *path)
{
	uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };

	w->f = fopen(path, "wb");
	fwrite(hdr, sizeof(hdr), 1, w->f);
}

static void pcap_add(struct pcap_w *w, const struct uskb *skb)
{
	unsigned char buf[2048];
	uint32_t rec[4] = { 1, 0, skb->len, skb->len };

	uskb_copy_bits(skb, 0, buf, (int)skb->len);
	fwrite(rec, sizeof(rec), 1, w->f);
	fwrite(buf, skb->len, 1, w->f);
}

static struct uskb_page *payload_page;

static uint32_t rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static void wr16(void *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* Ethernet + IPv4/IPv6 + UDP in the head, @plen payload bytes in 3 frags. */
static struct uskb *build_udp(bool v6, unsigned int plen, bool software_partial)
{
	struct uskb *skb = uskb_alloc(128);
	unsigned char *eth, *ip, *udp;
	unsigned int iphl = v6 ? 40 : 20, ulen = 8 + plen, each = plen / 3;
	int i;

	uskb_reserve(skb, 64);
	eth = uskb_put_zero(skb, 14);
	memcpy(eth, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	eth[12] = v6 ? 0x86 : 0x08;
	eth[13] = v6 ? 0xdd : 0x00;
	ip = uskb_put_zero(skb, iphl);
	udp = uskb_put_zero(skb, 8);
	for (i = 0; i < 3; i++) {
		unsigned int l = i < 2 ? each : plen - 2 * each;

		uskb_page_get(payload_page);
		uskb_add_rx_frag(skb, i, payload_page, (int)(i * 1000 + 1), (int)l, l);
	}
	if (v6) {
		ip[0] = 0x60;
		wr16(ip + 4, htons((uint16_t)ulen));
		ip[6] = 17;
		ip[7] = 64;
		memcpy(ip + 8, "\xfd\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
		memcpy(ip + 24, "\xfd\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	} else {
		ip[0] = 0x45;
		wr16(ip + 2, htons((uint16_t)(20 + ulen)));
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, "\xc6\x12\x00\x01", 4); /* 198.18.0.1 */
		memcpy(ip + 16, "\xc6\x12\x00\x02", 4); /* 198.18.0.2 */
		wr16(ip + 10, uskb_ip_fast_csum(ip, 5));
	}
	wr16(udp + 0, htons(9));
	wr16(udp + 2, htons(9));
	wr16(udp + 4, htons((uint16_t)ulen));
	/* CHECKSUM_PARTIAL: the check field holds the pseudo header sum */
	if (v6)
		wr16(udp + 6, (uint16_t)~uskb_csum_ipv6_magic(ip + 8, ip + 24, ulen, 17, 0));
	else
		wr16(udp + 6, (uint16_t)~uskb_csum_tcpudp_magic(
			rd32(ip + 12), rd32(ip + 16), ulen, 17, 0));
	CHECK(uskb_partial_csum_set(skb, (uint16_t)(14 + iphl), 6));
	CHECK_EQ(skb->ip_summed, USKB_CHECKSUM_PARTIAL);
	CHECK_EQ(uskb_checksum_start_offset(skb), 14 + iphl);
	if (software_partial)
		uskb_shinfo(skb)->flags |= USKB_SKBFL_SHARED_FRAG; /* forces the linearize path */
	CHECK_EQ(uskb_checksum_help(skb), 0);
	CHECK_EQ(skb->ip_summed, USKB_CHECKSUM_NONE);
	if (software_partial)
		CHECK(!uskb_is_nonlinear(skb));
	else
		CHECK_EQ(uskb_shinfo(skb)->nr_frags, 3);
	/* verify ourselves: the UDP sum over pseudo header + datagram folds to 0 */
	{
		unsigned char *u = skb->data + 14 + iphl;
		uskb_wsum s = uskb_checksum(skb, 14 + (int)iphl, (int)ulen, 0);

		if (v6)
			CHECK_EQ(uskb_csum_ipv6_magic(skb->data + 22, skb->data + 38, ulen, 17, s), 0);
		else
			CHECK_EQ(uskb_csum_tcpudp_magic(rd32(skb->data + 26),
							rd32(skb->data + 30), ulen, 17, s),
				 0);
		CHECK(rd16(u + 6) != 0);
	}
	return skb;
}

static void test_checksum_help(void)
{
	struct uskb *skb;

	/* bad offsets are refused and change nothing */
	skb = uskb_alloc(100);
	uskb_put(skb, 40);
	CHECK(!uskb_partial_csum_set(skb, 39, 0));
	CHECK(!uskb_partial_csum_set(skb, 10, 29));
	CHECK(uskb_partial_csum_set(skb, 10, 28));
	skb->csum_offset = 40; /* result would land past the head */
	CHECK_EQ(uskb_checksum_help(skb), -EINVAL);
	CHECK_EQ(skb->ip_summed, USKB_CHECKSUM_PARTIAL);
	uskb_shinfo(skb)->gso_size = 1000; /* GSO packets are not summed here */
	CHECK_EQ(uskb_checksum_help(skb), -EINVAL);
	uskb_shinfo(skb)->gso_size = 0;
	skb->ip_summed = USKB_CHECKSUM_COMPLETE;
	CHECK_EQ(uskb_checksum_help(skb), 0);
	CHECK_EQ(skb->ip_summed, USKB_CHECKSUM_NONE);
	uskb_free(skb);
}

static void test_tshark(void)
{
	const char *path = "/tmp/uskb-csum-test.pcap";
	struct pcap_w w;
	char cmd[512], line[256];
	unsigned int sizes[] = { 1, 17, 300, 1000, 1400 };
	int i, good = 0, bad = 0, total = 0;
	FILE *p;

	pcap_open(&w, path);
	for (i = 0; i < 5; i++) {
		struct uskb *a = build_udp(false, sizes[i], i & 1);
		struct uskb *b = build_udp(true, sizes[i], !(i & 1));

		pcap_add(&w, a);
		pcap_add(&w, b);
		uskb_free(a);
		uskb_free(b);
	}
	/* negative control: a corrupted UDP checksum must be flagged bad */
	{
		struct uskb *corrupt = build_udp(false, 100, false);

		corrupt->data[14 + 20 + 6] ^= 0x5a;
		pcap_add(&w, corrupt);
		uskb_free(corrupt);
	}
	fclose(w.f);
	if (system("command -v tshark >/dev/null 2>&1")) {
		printf("tshark not installed: independent decoder check skipped\n");
		unlink(path);
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "tshark -n -r %s -o udp.check_checksum:TRUE -o ip.check_checksum:TRUE "
		 "-T fields -e ip.checksum.status -e udp.checksum.status 2>/dev/null",
		 path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		total++;
		/* status 1 = Good; IPv6 rows have no IP checksum field */
		if ((!strncmp(line, "1\t1", 3) || !strncmp(line, "\t1", 2)))
			good++;
		else if (!strncmp(line, "1\t0", 3))
			bad++;
		else
			fprintf(stderr, "tshark: %s", line);
	}
	if (p)
		pclose(p);
	printf("tshark accepted %d of %d packets\n", good, total);
	CHECK_EQ(total, 11);
	CHECK_EQ(good, 10);
	CHECK_EQ(bad, 1);
	unlink(path);
}

int main(void)
{
	payload_page = uskb_page_alloc(0);
	t_fill(uskb_page_address(payload_page), USKB_PAGE_SIZE, 3);
	test_rfc1071();
	test_vs_reference();
	test_ip_fast_csum();
	test_checksum_help();
	test_tshark();
	uskb_page_put(payload_page);
	return t_end("csum");
}
