/* SPDX-License-Identifier: BSD-3-Clause */
#include "frame.h"

#include <arpa/inet.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

/*
 * Workaround for stack/wire (reported to its owner): droce_parse() returns
 * IP_FRAGMENT for every fragmented IPv4 UDP packet before it looks at the
 * UDP port, so fragmented DNS, NFS or VXLAN traffic would count as malformed
 * RoCE. Only a first fragment (offset 0) addressed to port 4791 is known to
 * be RoCE; later fragments carry no UDP header and cannot be told apart.
 * parse_ipv4() has checked the 20-byte header and IHL >= 20 already.
 */
static bool fragment_is_roce(const struct droce_pkt *p)
{
	const uint8_t *ip = p->frame + p->l3_off;
	size_t avail = p->frame_len - p->l3_off;
	size_t ihl = (ip[0] & 0x0Fu) * 4u;

	if (droce_get_be16(ip + 6) & 0x1FFFu) /* fragment offset */
		return false;
	return avail >= ihl + 4 && droce_get_be16(ip + ihl + 2) == DROCE_UDP_PORT;
}

/*
 * Check the ICRC of a frame the parser rejected after it had located the IP
 * payload: the parser stops at the first failure, but the ICRC position only
 * depends on the IP length (A17.4.5), so it can still be reported.
 */
static bool late_icrc_ok(const struct droce_dump_frame *f)
{
	const struct droce_pkt *p = &f->pkt;
	const struct droce_net_fields *n = &p->h.net;
	enum droce_l3 kind = n->ip_version == 4 ? DROCE_L3_IPV4
			   : n->rocev1          ? DROCE_L3_GRH
						: DROCE_L3_IPV6;
	size_t pre = (kind == DROCE_L3_IPV4 ? sizeof(struct droce_ipv4_hdr)
					    : sizeof(struct droce_ipv6_hdr)) +
		     (kind == DROCE_L3_GRH ? 0 : sizeof(struct droce_udp_hdr)) +
		     DROCE_BTH_LEN;
	size_t end = (size_t)p->l3_off + p->l3_len;

	if (end > p->frame_len || p->l3_len < pre + DROCE_ICRC_LEN)
		return false;
	uint32_t crc = droce_icrc_begin(p->frame + p->l3_off, kind,
					p->l3_len - DROCE_ICRC_LEN);
	return crc == droce_icrc_load(p->frame + end - DROCE_ICRC_LEN);
}

void droce_dump_decode(struct droce_dump_frame *f, const uint8_t *frame, size_t len)
{
	struct droce_pkt *p = &f->pkt;
	enum droce_parse_result r = droce_parse(frame, len, p, 0);

	if (r == DROCE_PARSE_IP_FRAGMENT && !fragment_is_roce(p))
		r = DROCE_PARSE_NOT_ROCE;

	f->result = r;
	f->roce = r != DROCE_PARSE_NOT_ROCE;
	/* The parser fills each layer before checking the next, so the
	 * offsets it has set say how far it got (parse.h: "the fields decoded
	 * before it are valid"). */
	f->has_ip = p->h.net.ip_version != 0;
	f->has_bth = p->bth_off != 0;
	f->has_udp = !p->h.net.rocev1 && (f->has_bth || r == DROCE_PARSE_UDP_LEN);
	f->has_ext = p->op && (p->payload_off != 0 || r == DROCE_PARSE_TRUNC_ICRC);
	f->has_payload = r == DROCE_PARSE_OK || r == DROCE_PARSE_BAD_ICRC;
	if (r == DROCE_PARSE_OK)
		f->icrc_ok = true;
	else if (f->roce && r != DROCE_PARSE_BAD_ICRC && (f->has_bth || f->has_udp))
		f->icrc_ok = late_icrc_ok(f);
	else
		f->icrc_ok = false;
	if (f->has_payload)
		droce_dump_mad_decode(&f->mad, p);
	else
		f->mad.present = false;
}

const char *droce_dump_addr(const struct droce_dump_frame *f, bool src, char *buf)
{
	const struct droce_net_fields *n = &f->pkt.h.net;
	const uint8_t *a = src ? n->src_ip : n->dst_ip;

	if (!f->has_ip || !inet_ntop(n->ip_version == 4 ? AF_INET : AF_INET6, a, buf,
				     DROCE_DUMP_ADDR_LEN))
		strcpy(buf, "?");
	return buf;
}
