/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/build.h"

#include <string.h>

#include "wire/build_bth.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

/* RFC 1071 one's complement sum over the 20-byte IPv4 header. */
static uint16_t ipv4_csum(const uint8_t *ip)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < 20; i += 2)
		sum += droce_get_be16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t hdrs_len(const struct droce_hdrs *h, const struct droce_opcode_info *oi)
{
	size_t l3 = h->net.ip_version == 4 ? 20u : 40u;
	size_t l4 = h->net.rocev1 ? 0u : 8u;
	return droce_build_l3_off(h) + l3 + l4 + oi->hdr_len;
}

size_t droce_frame_len(const struct droce_hdrs *h)
{
	const struct droce_opcode_info *oi = droce_opcode_info(h->bth.opcode);
	if (!oi)
		return 0;
	return hdrs_len(h, oi) + h->payload_len + droce_pad_count(h->payload_len) +
	       DROCE_ICRC_LEN;
}

size_t droce_build_hdrs(uint8_t *buf, size_t cap, const struct droce_hdrs *h)
{
	const struct droce_net_fields *n = &h->net;
	const struct droce_bth_fields *b = &h->bth;
	const struct droce_opcode_info *oi = droce_opcode_info(b->opcode);

	if (!oi || (n->ip_version != 4 && n->ip_version != 6) ||
	    (n->rocev1 && n->ip_version != 6))
		return 0;
	size_t hlen = hdrs_len(h, oi);
	if (cap < hlen)
		return 0;
	uint8_t pad = droce_pad_count(h->payload_len);
	/* Bytes after the IP (or GRH) header: UDP, BTH, ext, payload, pad, ICRC. */
	size_t l4_len = hlen - droce_build_l3_off(h) - (n->ip_version == 4 ? 20u : 40u) +
			(size_t)h->payload_len + pad + DROCE_ICRC_LEN;
	/* The 16-bit IP length field is the only limit: IPv4 total length
	 * counts its own header, IPv6 / GRH payload length does not. */
	if ((n->ip_version == 4 ? 20u : 0u) + l4_len > 0xFFFFu)
		return 0;

	uint8_t *p = buf;
	memcpy(p, n->dst_mac, 6);
	memcpy(p + 6, n->src_mac, 6);
	p += 12;
	if (n->has_vlan) {
		droce_put_be16(p, DROCE_ETHERTYPE_VLAN);
		droce_put_be16(p + 2, n->vlan_tci);
		p += 4;
	}
	uint16_t etype = n->rocev1 ? DROCE_ETHERTYPE_ROCEV1
			 : n->ip_version == 4 ? DROCE_ETHERTYPE_IPV4 : DROCE_ETHERTYPE_IPV6;
	droce_put_be16(p, (uint16_t)etype);
	p += 2;

	uint8_t tc = (uint8_t)(n->dscp << 2 | (n->ecn & 3u));
	if (n->ip_version == 4) {
		p[0] = 0x45;
		p[1] = tc;
		droce_put_be16(p + 2, (uint16_t)(20u + l4_len));
		droce_put_be16(p + 4, n->ip_id);
		droce_put_be16(p + 6, 0x4000); /* DF: RoCE is never fragmented */
		p[8] = n->ttl;
		p[9] = DROCE_IPPROTO_UDP;
		p[10] = p[11] = 0;
		memcpy(p + 12, n->src_ip, 4);
		memcpy(p + 16, n->dst_ip, 4);
		droce_put_be16(p + 10, ipv4_csum(p));
		p += 20;
	} else {
		droce_put_be32(p, 6u << 28 | (uint32_t)tc << 20 | (n->flow_label & 0xFFFFFu));
		droce_put_be16(p + 4, (uint16_t)l4_len);
		p[6] = n->rocev1 ? DROCE_GRH_NEXT_BTH : DROCE_IPPROTO_UDP;
		p[7] = n->ttl;
		memcpy(p + 8, n->src_ip, 16);
		memcpy(p + 24, n->dst_ip, 16);
		p += 40;
	}
	if (!n->rocev1) {
		droce_put_be16(p, n->sport);
		droce_put_be16(p + 2, DROCE_UDP_PORT);
		droce_put_be16(p + 4, (uint16_t)l4_len);
		droce_put_be16(p + 6, 0); /* A17.4.2: UDP checksum 0 is allowed */
		p += 8;
	}

	droce_write_bth_ext(p, h, oi, pad);
	return hlen;
}

size_t droce_build_trailer(uint8_t *out, uint32_t crc, uint32_t payload_len)
{
	static const uint8_t zeros[3];
	uint8_t pad = droce_pad_count(payload_len);

	if (pad) {
		crc = droce_icrc_update(crc, zeros, pad);
		memset(out, 0, pad);
	}
	droce_icrc_store(out + pad, crc);
	return pad + DROCE_ICRC_LEN;
}

size_t droce_build_frame(uint8_t *buf, size_t cap, const struct droce_hdrs *h,
			 const void *payload)
{
	size_t flen = droce_frame_len(h);
	if (flen == 0 || cap < flen)
		return 0;
	size_t hlen = droce_build_hdrs(buf, cap, h);
	if (hlen == 0)
		return 0;
	if (h->payload_len)
		memcpy(buf + hlen, payload, h->payload_len);
	size_t l3_off = droce_build_l3_off(h);
	uint32_t crc = droce_icrc_begin(buf + l3_off, droce_build_l3_kind(h), hlen + h->payload_len - l3_off);
	return hlen + h->payload_len + droce_build_trailer(buf + hlen + h->payload_len, crc,
							   h->payload_len);
}
