/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checks run in a fixed order, outermost header first, each length checked
 * before the bytes behind it are read (the shape of rxe_recv.c's checks).
 */
#include "wire/parse.h"

#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"
#include "wire/sack.h"

static const char *const result_names[] = {
#define X(n, s) [DROCE_PARSE_##n] = #n,
	DROCE_PARSE_REASONS(X)
#undef X
};

static const char *const result_strs[] = {
#define X(n, s) [DROCE_PARSE_##n] = s,
	DROCE_PARSE_REASONS(X)
#undef X
};

const char *droce_parse_result_name(enum droce_parse_result r)
{
	return (unsigned)r < DROCE_PARSE__COUNT ? result_names[r] : "INVALID";
}

const char *droce_parse_result_str(enum droce_parse_result r)
{
	return (unsigned)r < DROCE_PARSE__COUNT ? result_strs[r] : "invalid result";
}

/* IPv4 (no options: A17.4.1 RoCEv2 packets carry none in practice, and a
 * fixed header lets the ICRC mask a fixed prefix). Sets *end to l3 + total length. */
static inline __attribute__((always_inline)) enum droce_parse_result
parse_ipv4(struct droce_pkt *p, size_t *end, bool full)
{
	const uint8_t *ip = p->frame + p->l3_off;
	size_t avail = p->frame_len - p->l3_off;
	struct droce_net_fields *n = &p->h.net;

	if (avail < sizeof(struct droce_ipv4_hdr))
		return DROCE_PARSE_TRUNC_IP;
	if ((ip[0] >> 4) != 4)
		return DROCE_PARSE_BAD_IP_VERSION;
	unsigned ihl = (ip[0] & 0x0Fu) * 4u;
	if (ihl < 20)
		return DROCE_PARSE_BAD_IHL;
	n->ip_version = 4;
	n->dscp = ip[1] >> 2;
	n->ecn = ip[1] & 3u;
	n->ip_id = droce_get_be16(ip + 4);
	n->ttl = ip[8];
	n->flow_label = 0;
	memcpy(n->src_ip, ip + 12, 4); /* the engine's source check reads it */
	memcpy(n->dst_ip, ip + 16, 4);
	if (ip[9] != DROCE_IPPROTO_UDP)
		return DROCE_PARSE_NOT_ROCE;
	/* A later fragment carries no UDP header, so nothing says it is RoCE:
	 * classify it (fragmented DNS, NFS, VXLAN...), do not count it as a
	 * malformed RoCE packet. */
	uint16_t frag = droce_get_be16(ip + 6);
	if (frag & 0x1FFFu)
		return DROCE_PARSE_NOT_ROCE;
	if (avail < ihl + sizeof(struct droce_udp_hdr))
		return DROCE_PARSE_TRUNC_UDP;
	if (droce_get_be16(ip + ihl + 2) != DROCE_UDP_PORT)
		return DROCE_PARSE_NOT_ROCE;
	/* A first fragment to 4791: RoCE, but RoCE is never fragmented
	 * (senders set DF) and the ICRC cannot be checked on a piece. */
	if (frag & 0x2000u)
		return DROCE_PARSE_IP_FRAGMENT;
	if (ihl != 20)
		return DROCE_PARSE_IPV4_OPTIONS;
	p->l3_len = droce_get_be16(ip + 2);
	if (p->l3_len < ihl + sizeof(struct droce_udp_hdr))
		return DROCE_PARSE_IP_LEN;
	if (p->l3_len > avail)
		return DROCE_PARSE_LEN_BEYOND_FRAME;
	*end = p->l3_off + p->l3_len;
	return DROCE_PARSE_OK;
}

/* IPv6 without extension headers, or a RoCEv1 GRH (same layout, IBTA 8.3). */
static inline __attribute__((always_inline)) enum droce_parse_result
parse_ipv6(struct droce_pkt *p, size_t *end, bool full)
{
	const uint8_t *ip = p->frame + p->l3_off;
	size_t avail = p->frame_len - p->l3_off;
	struct droce_net_fields *n = &p->h.net;

	if (avail < sizeof(struct droce_ipv6_hdr))
		return DROCE_PARSE_TRUNC_IP;
	if ((ip[0] >> 4) != 6)
		return DROCE_PARSE_BAD_IP_VERSION;
	uint32_t vtf = droce_get_be32(ip);
	uint8_t tc = (uint8_t)(vtf >> 20);
	n->ip_version = 6;
	n->dscp = tc >> 2;
	n->ecn = tc & 3u;
	n->flow_label = vtf & 0xFFFFFu;
	n->ttl = ip[7];
	n->ip_id = 0;
	memcpy(n->src_ip, ip + 8, 16);
	memcpy(n->dst_ip, ip + 24, 16);
	if (n->rocev1) {
		if (ip[6] != DROCE_GRH_NEXT_BTH)
			return DROCE_PARSE_BAD_GRH_NEXT;
	} else {
		if (ip[6] != DROCE_IPPROTO_UDP)
			return DROCE_PARSE_NOT_ROCE;
		if (avail < 40 + sizeof(struct droce_udp_hdr))
			return DROCE_PARSE_TRUNC_UDP;
		if (droce_get_be16(ip + 40 + 2) != DROCE_UDP_PORT)
			return DROCE_PARSE_NOT_ROCE;
	}
	p->l3_len = 40u + droce_get_be16(ip + 4);
	if (p->l3_len > avail)
		return DROCE_PARSE_LEN_BEYOND_FRAME;
	*end = p->l3_off + p->l3_len;
	return DROCE_PARSE_OK;
}

static inline __attribute__((always_inline)) void parse_ext(struct droce_pkt *p, const uint8_t *bth)
{
	const struct droce_opcode_info *oi = p->op;
	struct droce_ext_fields *e = &p->h.ext;

	/* The data path's headers first, then one test for the rest (as the
	 * builder, wire/build_bth.h). */
	uint16_t hd = oi->hdrs;
	if (hd & DROCE_HDR_RETH) {
		const uint8_t *r = bth + oi->off_reth;
		e->reth.va = droce_get_be64(r);
		e->reth.rkey = droce_get_be32(r + 8);
		e->reth.dma_len = droce_get_be32(r + 12);
	}
	if (hd & DROCE_HDR_AETH) {
		uint32_t a = droce_get_be32(bth + oi->off_aeth);
		e->aeth.syndrome = (uint8_t)(a >> 24);
		e->aeth.msn = a & DROCE_MSN_MASK;
	}
	if (!(hd & ~(DROCE_HDR_RETH | DROCE_HDR_AETH)))
		return;
	if (hd & DROCE_HDR_DETH) {
		const uint8_t *d = bth + oi->off_deth;
		e->deth.qkey = droce_get_be32(d);
		e->deth.sqpn = droce_get_be32(d + 4) & DROCE_QPN_MASK;
	}
	if (hd & DROCE_HDR_ATOMIC) {
		const uint8_t *a = bth + oi->off_atomic;
		e->atomic.va = droce_get_be64(a);
		e->atomic.rkey = droce_get_be32(a + 8);
		e->atomic.swap_add = droce_get_be64(a + 12);
		e->atomic.compare = droce_get_be64(a + 20);
	}
	if (hd & DROCE_HDR_AACK)
		e->atomic_ack = droce_get_be64(bth + oi->off_aack);
	if (hd & DROCE_HDR_IMM)
		e->imm = droce_get_be32(bth + oi->off_imm);
	if (hd & DROCE_HDR_IETH)
		e->ieth_rkey = droce_get_be32(bth + oi->off_ieth);
}

/*
 * One body for both entry points, so they run the same checks in the same
 * order: @p full (a constant at each call, so the compiler makes two copies)
 * says whether to clear the whole view first and decode the fields the
 * engine never reads (MAC addresses, source IP). The receive path's variant
 * leaves those alone and clears only the extension fields, whose unused
 * members the engine may read as zero.
 */
static inline __attribute__((always_inline)) enum droce_parse_result
parse_core(const uint8_t *frame, size_t len, struct droce_pkt *p, unsigned flags, bool full)
{
	struct droce_net_fields *n = &p->h.net;
	struct droce_bth_fields *b = &p->h.bth;
	enum droce_parse_result r;
	size_t off, end = 0;

	if (full) {
		memset(p, 0, sizeof(*p));
	} else {
		/* Only what an accepted frame may leave unset: a rejected one's
		 * view is not read (parse.h), and every other field is written on
		 * the way to DROCE_PARSE_OK. */
		memset(&p->h.ext, 0, sizeof(p->h.ext));
		p->placed = false;
		n->has_vlan = n->rocev1 = false;
		n->vlan_tci = 0;
	}
	p->frame = frame;
	p->frame_len = len;

	if (len < sizeof(struct droce_eth_hdr))
		return DROCE_PARSE_TRUNC_ETH;
	if (full) {
		memcpy(n->dst_mac, frame, 6);
		memcpy(n->src_mac, frame + 6, 6);
	}
	uint16_t etype = droce_get_be16(frame + 12);
	off = 14;
	if (etype == DROCE_ETHERTYPE_VLAN) {
		if (len < off + 4)
			return DROCE_PARSE_TRUNC_VLAN;
		n->has_vlan = true;
		n->vlan_tci = droce_get_be16(frame + off);
		etype = droce_get_be16(frame + off + 2);
		off += 4;
	}
	p->l3_off = (uint32_t)off;

	enum droce_l3 l3kind;
	if (etype == DROCE_ETHERTYPE_IPV4) {
		l3kind = DROCE_L3_IPV4;
		r = parse_ipv4(p, &end, full);
	} else if (etype == DROCE_ETHERTYPE_IPV6) {
		l3kind = DROCE_L3_IPV6;
		r = parse_ipv6(p, &end, full);
	} else if (etype == DROCE_ETHERTYPE_ROCEV1) {
		l3kind = DROCE_L3_GRH;
		n->rocev1 = true;
		r = parse_ipv6(p, &end, full);
	} else {
		return DROCE_PARSE_NOT_ROCE;
	}
	if (r != DROCE_PARSE_OK)
		return r;

	off = p->l3_off + (l3kind == DROCE_L3_IPV4 ? 20u : 40u);
	if (l3kind == DROCE_L3_GRH) {
		n->sport = n->dport = 0; /* RoCEv1: no UDP header */
	} else {
		/* The UDP header was bounds-checked by the IP parser against the
		 * frame; check it against the IP length too. */
		if (end < off + 8)
			return DROCE_PARSE_TRUNC_UDP;
		const uint8_t *udp = frame + off;
		n->sport = droce_get_be16(udp);
		n->dport = droce_get_be16(udp + 2);
		if (droce_get_be16(udp + 4) != end - off)
			return DROCE_PARSE_UDP_LEN;
		off += 8;
	}

	/* BTH (IBTA 9.2). */
	if (end < off + DROCE_BTH_LEN)
		return DROCE_PARSE_TRUNC_BTH;
	const uint8_t *bth = frame + off;
	p->bth_off = (uint32_t)off;
	b->opcode = bth[0];
	b->se = bth[1] & DROCE_BTH_SE;
	b->migreq = bth[1] & DROCE_BTH_MIGREQ;
	b->pad = (bth[1] & DROCE_BTH_PAD_MASK) >> DROCE_BTH_PAD_SHIFT;
	b->tver = bth[1] & DROCE_BTH_TVER_MASK;
	b->pkey = droce_get_be16(bth + 2);
	/* resv8a + DestQP and AckReq + PSN as two 32-bit words (cheaper than
	 * two 24-bit fields assembled byte by byte). */
	uint32_t w1 = droce_get_be32(bth + 4), w2 = droce_get_be32(bth + 8);
	b->fecn = (w1 >> 24) & DROCE_BTH_FECN;
	b->becn = (w1 >> 24) & DROCE_BTH_BECN;
	b->dqpn = w1 & DROCE_QPN_MASK;
	b->ack_req = (w2 >> 24) & DROCE_BTH_ACKREQ;
	b->psn = w2 & DROCE_PSN_MASK;
	p->op = droce_opcode_info(b->opcode);
	if (!p->op)
		return DROCE_PARSE_UNKNOWN_OPCODE;
	if (b->tver != 0) /* 9.2.3: a non-zero TVer is silently dropped */
		return DROCE_PARSE_BAD_TVER;

	/* Extension headers, then payload + pad + ICRC up to the IP length. */
	if (end < off + p->op->hdr_len)
		return DROCE_PARSE_TRUNC_EXT;
	parse_ext(p, bth);
	off += p->op->hdr_len;
	if (end < off + DROCE_ICRC_LEN)
		return DROCE_PARSE_TRUNC_ICRC;
	size_t body = end - DROCE_ICRC_LEN - off;
	p->payload_off = (uint32_t)off;
	p->payload = frame + off;
	/* An ACK carries nothing after its AETH, but for droce's SACK block
	 * between peers that agreed to selective repeat (wire/sack.h): that
	 * exact block, whole, with its magic; the transport drops it on a QP
	 * that did not agree. */
	if (!(p->op->flags & DROCE_OPF_PAYLOAD) && body != 0 &&
	    !(b->opcode == DROCE_OP_RC_ACKNOWLEDGE && b->pad == 0 &&
	      droce_sack_parse(frame + off, body, &(struct droce_sack){0})))
		return DROCE_PARSE_UNEXPECTED_PAYLOAD;
	if (b->pad > body)
		return DROCE_PARSE_PAD_TOO_LONG;
	p->h.payload_len = (uint32_t)(body - b->pad);
	p->icrc = droce_icrc_load(frame + end - DROCE_ICRC_LEN);

	if (!(flags & DROCE_PARSE_F_NO_ICRC)) {
		uint32_t crc = droce_icrc_begin(frame + p->l3_off, l3kind,
						end - DROCE_ICRC_LEN - p->l3_off);
		if (crc != p->icrc)
			return DROCE_PARSE_BAD_ICRC;
	}
	return DROCE_PARSE_OK;
}

enum droce_parse_result droce_parse(const uint8_t *frame, size_t len,
				    struct droce_pkt *pkt, unsigned flags)
{
	return parse_core(frame, len, pkt, flags, true);
}

enum droce_parse_result droce_parse_rx(const uint8_t *frame, size_t len, struct droce_pkt *pkt)
{
	return parse_core(frame, len, pkt, DROCE_PARSE_F_NO_ICRC, false);
}
