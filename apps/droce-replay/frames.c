/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames.h"

#include <errno.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

bool droce_rp_is_roce(enum droce_parse_result r)
{
	/* Failures after the BTH was read still name a RoCE frame. */
	return r == DROCE_PARSE_OK || r == DROCE_PARSE_BAD_ICRC || r == DROCE_PARSE_TRUNC_EXT ||
	       r == DROCE_PARSE_TRUNC_ICRC || r == DROCE_PARSE_UNEXPECTED_PAYLOAD ||
	       r == DROCE_PARSE_PAD_TOO_LONG || r == DROCE_PARSE_BAD_TVER ||
	       r == DROCE_PARSE_UNKNOWN_OPCODE;
}

enum droce_rp_role droce_rp_classify(const struct droce_rp_frame *f, int ipv, const uint8_t ip[16],
				     struct droce_pkt *pkt, enum droce_parse_result *pr)
{
	memset(pkt, 0, sizeof(*pkt));
	*pr = droce_parse(f->data, f->len, pkt, 0);
	if (!droce_rp_is_roce(*pr))
		return DROCE_RP_OTHER;
	const struct droce_net_fields *n = &pkt->h.net;
	if (n->ip_version != ipv || n->rocev1)
		return DROCE_RP_OTHER;
	size_t alen = ipv == 4 ? 4 : 16;
	bool from = !memcmp(n->src_ip, ip, alen), to = !memcmp(n->dst_ip, ip, alen);
	if (!from && !to)
		return DROCE_RP_OTHER;
	/* QP1 (the CM's GSI QP) and UD carry connection management MADs:
	 * droce is RC only and its QPNs are never 0 or 1. */
	if (pkt->h.bth.dqpn <= 1 || droce_opcode_service(pkt->h.bth.opcode) == DROCE_SVC_UD)
		return DROCE_RP_IGNORED;
	if (from && to)
		return DROCE_RP_OTHER; /* a host talking to itself: no side to play */
	return from ? DROCE_RP_OWN : DROCE_RP_PEER;
}

static enum droce_l3 l3_kind(const struct droce_pkt *p)
{
	if (p->h.net.rocev1)
		return DROCE_L3_GRH;
	return p->h.net.ip_version == 4 ? DROCE_L3_IPV4 : DROCE_L3_IPV6;
}

int droce_rp_fix_icrc(uint8_t *frame, size_t len)
{
	struct droce_pkt p;
	enum droce_parse_result r = droce_parse(frame, len, &p, DROCE_PARSE_F_NO_ICRC);
	if (r != DROCE_PARSE_OK)
		return -EINVAL;
	size_t end = p.l3_off + p.l3_len;
	uint32_t crc = droce_icrc_begin(frame + p.l3_off, l3_kind(&p), end - DROCE_ICRC_LEN - p.l3_off);
	droce_icrc_store(frame + end - DROCE_ICRC_LEN, crc);
	return 0;
}

static int find_mr_by_rkey(const struct droce_rp_scenario *s, uint32_t rkey)
{
	for (unsigned i = 0; i < s->nmrs; i++)
		if (s->mrs[i].has_rkey && s->mrs[i].rkey == rkey)
			return (int)i;
	return -1;
}

/* Map an rkey + address pair; the address keeps its offset from the MR start
 * even when out of bounds, so a bounds violation stays one. */
static int map_key(uint8_t *rkey_p, uint8_t *va_p, const struct droce_rp_scenario *s,
		   const struct droce_rp_map *map)
{
	int mi = find_mr_by_rkey(s, droce_get_be32(rkey_p));
	if (mi < 0)
		return 0; /* an unknown rkey stays unknown: droce must reject it */
	droce_put_be32(rkey_p, map->rkey[mi]);
	if (va_p)
		droce_put_be64(va_p, droce_get_be64(va_p) - s->mrs[mi].addr + map->addr[mi]);
	return 1;
}

/*
 * A rewritten frame whose sender filled in the UDP checksum (tcpdump on a
 * bridge sees what the peer's kernel sent) must not carry a stale one:
 * over IPv4 it becomes 0, "no checksum" (RFC 768, which RoCEv2 senders
 * use); over IPv6, where 0 is not allowed (RFC 8200), it is recomputed.
 */
static void fix_udp_csum(uint8_t *frame, size_t len, const struct droce_pkt *p)
{
	uint8_t *udp = frame + p->bth_off - 8;
	if (!droce_get_be16(udp + 6) || p->bth_off - 8 + (size_t)droce_get_be16(udp + 4) > len)
		return;
	if (p->h.net.ip_version == 4) {
		droce_put_be16(udp + 6, 0);
		return;
	}
	const uint8_t *ip6 = frame + p->l3_off;
	uint32_t ulen = droce_get_be16(udp + 4), sum = 0;
	for (unsigned i = 8; i < 40; i += 2) /* source and destination addresses */
		sum += droce_get_be16(ip6 + i);
	sum += ulen + 17;
	droce_put_be16(udp + 6, 0);
	for (uint32_t i = 0; i + 1 < ulen; i += 2)
		sum += droce_get_be16(udp + i);
	if (ulen & 1)
		sum += (uint32_t)udp[ulen - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	uint16_t c = (uint16_t)~sum;
	droce_put_be16(udp + 6, c ? c : 0xFFFF);
}

int droce_rp_rewrite(uint8_t *frame, size_t len, const struct droce_rp_scenario *s,
		     const struct droce_rp_map *map)
{
	struct droce_pkt p;
	enum droce_parse_result r = droce_parse(frame, len, &p, 0);
	if (r != DROCE_PARSE_OK && r != DROCE_PARSE_BAD_ICRC)
		return -EINVAL;
	bool icrc_ok = r == DROCE_PARSE_OK;
	uint8_t *bth = frame + p.bth_off;
	int changed = 0;
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].local_qpn == p.h.bth.dqpn) {
			droce_put_be24(bth + 5, map->qpn[i]);
			changed++;
			break;
		}
	const struct droce_opcode_info *oi = p.op;
	if (oi->hdrs & DROCE_HDR_RETH)
		changed += map_key(bth + oi->off_reth + 8, bth + oi->off_reth, s, map);
	if (oi->hdrs & DROCE_HDR_ATOMIC)
		changed += map_key(bth + oi->off_atomic + 8, bth + oi->off_atomic, s, map);
	if (oi->hdrs & DROCE_HDR_IETH)
		changed += map_key(bth + oi->off_ieth, NULL, s, map);
	if (changed && icrc_ok)
		droce_rp_fix_icrc(frame, len);
	if (changed)
		fix_udp_csum(frame, len, &p);
	return changed;
}
