/* SPDX-License-Identifier: MIT */
/*
 * The pktgen packet builder against the kernel's own frames: every frame of
 * every golden capture (test/golden/) is rebuilt with uskb_pktgen_build()
 * and compared byte for byte (the timestamp is taken from the frame).
 */
#include <arpa/inet.h>
#include "t.h"

struct config {
	const char *name;
	unsigned int pkt_size;
	int nfrags;
	bool ipv6, udpcsum;
	uint32_t features; /* of the transmitting device (veth: offload on) */
	int nr_labels;
	uint32_t labels[2];
	uint16_t vlan_id, vlan_p, svlan_id;
};

static const struct config configs[] = {
	{ "a_pkt_size60", 60, 0, false, false, 0, 0, { 0 }, 0xffff, 0, 0xffff },
	{ "b_pkt_size100_frags1", 100, 1, false, false, 0, 0, { 0 }, 0xffff, 0, 0xffff },
	{ "c_pkt_size1000_frags4_udpcsum", 1000, 4, false, true,
	  USKB_DEV_F_SG | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM, 0, { 0 }, 0xffff, 0, 0xffff },
	{ "c2_pkt_size1000_frags4_udpcsum_txcsum_off", 1000, 4, false, true, USKB_DEV_F_SG, 0,
	  { 0 }, 0xffff, 0, 0xffff },
	{ "d_ipv6_pkt_size100", 100, 0, true, false, 0, 0, { 0 }, 0xffff, 0, 0xffff },
	{ "d2_ipv6_pkt_size100_udpcsum", 100, 0, true, true,
	  USKB_DEV_F_SG | USKB_DEV_F_IP_CSUM | USKB_DEV_F_IPV6_CSUM, 0, { 0 }, 0xffff, 0, 0xffff },
	{ "e_vlan5_p3_svlan7", 60, 0, false, false, 0, 0, { 0 }, 5, 3, 7 },
	{ "f_mpls_2labels", 60, 0, false, false, 0, 2, { 0x0001000a, 0x0002000b }, 0xffff, 0,
	  0xffff },
};

int main(void)
{
	unsigned int c;
	long frames = 0;

	for (c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		const struct config *cf = &configs[c];
		struct uskb_dev dev = { .features = cf->features };
		struct uskb_pktgen_pkt p = { 0 };
		char path[256];
		unsigned char hdr[24], frame[2048], built[2048];
		uint32_t rec[4];
		FILE *f;
		int i = 0, bad = 0;

		snprintf(path, sizeof(path), "test/golden/%s.pcap", cf->name);
		f = fopen(path, "rb");
		if (!f) {
			fprintf(stderr, "%s: %s missing\n", cf->name, path);
			t_failures++;
			continue;
		}
		CHECK(fread(hdr, sizeof(hdr), 1, f) == 1);
		p.pkt_size = cf->pkt_size;
		p.nfrags = cf->nfrags;
		p.ipv6 = cf->ipv6;
		p.udpcsum = cf->udpcsum;
		memcpy(p.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
		memcpy(p.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
		inet_pton(AF_INET, "198.18.0.1", &p.saddr);
		inet_pton(AF_INET, "198.18.0.2", &p.daddr);
		inet_pton(AF_INET6, "fd00::1", p.saddr6);
		inet_pton(AF_INET6, "fd00::2", p.daddr6);
		p.udp_src = p.udp_dst = 9;
		p.nr_labels = cf->nr_labels;
		memcpy(p.labels, cf->labels, sizeof(cf->labels));
		p.vlan_id = cf->vlan_id;
		p.vlan_p = cf->vlan_p;
		p.svlan_id = cf->svlan_id;
		while (fread(rec, sizeof(rec), 1, f) == 1 && rec[2] <= sizeof(frame) &&
		       fread(frame, rec[2], 1, f) == 1) {
			unsigned int pgh = 14 + (unsigned int)cf->nr_labels * 4 +
					   (cf->vlan_id != 0xffff ? 4 : 0) +
					   (cf->svlan_id != 0xffff ? 4 : 0) + (cf->ipv6 ? 40 : 20) + 8;
			struct uskb *skb;
			uint32_t v;

			memcpy(&v, frame + pgh + 8, 4);
			p.tv_sec = ntohl(v);
			memcpy(&v, frame + pgh + 12, 4);
			p.tv_usec = ntohl(v);
			p.seq_num = (uint32_t)i + 1;
			p.ip_id = (uint16_t)i;
			skb = uskb_pktgen_build(&p, &dev, uskb_zero_page());
			CHECK(skb != NULL);
			if (!skb)
				break;
			CHECK_EQ(uskb_shinfo(skb)->nr_frags, cf->nfrags);
			if (skb->len != rec[2] || uskb_copy_bits(skb, 0, built, (int)skb->len) ||
			    memcmp(built, frame, rec[2])) {
				unsigned int k = 0;

				while (k < rec[2] && k < skb->len && built[k] == frame[k])
					k++;
				if (!bad++)
					fprintf(stderr, "%s frame %d: len %u vs %u, first difference at byte %u\n",
						cf->name, i, skb->len, rec[2], k);
				t_failures++;
			}
			uskb_free(skb);
			i++;
		}
		fclose(f);
		CHECK_EQ(i, 20);
		printf("%-45s %d frames %s\n", cf->name, i, bad ? "DIFFER" : "identical");
		frames += i;
	}
	printf("%ld kernel frames rebuilt\n", frames);

	/* sizes where the kernel's frag split would overrun a page: the frame
	 * still has exactly the length its headers say, no frag above a page */
	{
		static const unsigned int sizes[][2] = { { 12345, 3 }, { 65385, 16 }, { 65535, 17 },
							  { 60, 17 }, { 4200, 1 }, { 9000, 2 } };
		struct uskb_dev dev = { .features = USKB_DEV_F_SG };
		struct uskb_pktgen_pkt p = { .vlan_id = 0xffff, .svlan_id = 0xffff };

		for (unsigned int k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct uskb *skb;

			p.pkt_size = sizes[k][0];
			p.nfrags = (int)sizes[k][1];
			skb = uskb_pktgen_build(&p, &dev, uskb_zero_page());
			CHECK(skb != NULL);
			if (!skb)
				continue;
			CHECK_EQ(skb->len, p.pkt_size < 58 ? 58 : p.pkt_size);
			CHECK(uskb_shinfo(skb)->nr_frags <= p.nfrags);
			for (int f = 0; f < uskb_shinfo(skb)->nr_frags; f++)
				CHECK(uskb_shinfo(skb)->frags[f].len <= USKB_PAGE_SIZE);
			uskb_free(skb);
		}
		p.pkt_size = 65536;
		errno = 0;
		CHECK(uskb_pktgen_build(&p, &dev, uskb_zero_page()) == NULL && errno == EINVAL);
	}
	return t_end("pktgen-build");
}
