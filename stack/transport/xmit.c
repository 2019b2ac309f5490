/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's output stage: the QP's header template (and its byte
 * image for the fast path), header build, ICRC and the hand-off of one
 * frame to the link (zero-copy: payload segments point into registered
 * memory, principle 6, docs/architecture.md). The one place a frame of a QP leaves.
 */
#include <errno.h>
#include <string.h>

#include "transport/tp_int.h"
#include "wire/build.h"
#include "wire/build_bth.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/opcode.h"

/* A17.5.1.1: the UDP source port carries flow entropy; RoCE uses 0xC000..0xFFFF. */
static uint16_t udp_sport(const struct droce_qp *qp)
{
	if (qp->attr.ah_attr.udp_sport)
		return qp->attr.ah_attr.udp_sport;
	uint32_t h = (qp->qpn * 0x9E3779B1u) ^ (qp->attr.dest_qp_num * 0x85EBCA77u);
	h ^= h >> 15;
	return (uint16_t)(0xC000u | (h & 0x3FFFu));
}

void droce_tp_build_template(struct droce_qp *qp)
{
	const struct droce_ctx *ctx = qp->ctx;
	const struct droce_ah_attr *ah = &qp->attr.ah_attr;
	struct droce_hdrs *h = &qp->tmpl;

	memset(h, 0, sizeof(*h));
	memcpy(h->net.dst_mac, ah->dst_mac, 6);
	memcpy(h->net.src_mac, ctx->p.mac, 6);
	h->net.ip_version = ctx->p.ip_version;
	memcpy(h->net.src_ip, ctx->p.ip, 16);
	memcpy(h->net.dst_ip, ah->dst_ip, 16);
	h->net.dscp = ah->dscp;
	h->net.ecn = 2; /* ECT(0): ECN-capable transport, so switches mark, not drop (A17.9) */
	h->net.ttl = ah->ttl ? ah->ttl : DROCE_DEFAULT_TTL;
	h->net.sport = udp_sport(qp);
	h->bth.pkey = qp->attr.pkey;
	h->bth.dqpn = qp->attr.dest_qp_num;
	/* 9.2.4 / 17.2.8: MigReq tells the responder the requester's path
	 * migration state: 1 once MIGRATED (no alternate path armed), which is
	 * droce's state from RTR on (no APM), as ConnectX sends it. */
	h->bth.migreq = qp->mig_state == DROCE_MIG_MIGRATED;

	/* The bytes before the BTH are the same in every packet but for the
	 * IP and UDP lengths (and the IPv4 checksum): keep them as an image. */
	uint8_t buf[DROCE_HDR_SCRATCH];
	struct droce_hdrs t = *h;
	t.bth.opcode = DROCE_OP_RC_ACKNOWLEDGE;
	t.payload_len = 0;
	qp->img_len = 0;
	size_t hl = droce_build_hdrs(buf, sizeof(buf), &t);
	size_t l3 = droce_build_l3_off(&t);
	size_t n = l3 + (t.net.ip_version == 4 ? 20u : 40u) + 8u;
	if (!hl || t.net.rocev1 || n > sizeof(qp->img))
		return;
	memcpy(qp->img, buf, n);
	qp->img_len = (uint8_t)n;
	if (t.net.ip_version == 4) {
		uint8_t *ip = qp->img + l3;
		ip[2] = ip[3] = 0;
		ip[10] = ip[11] = 0;
		uint32_t sum = 0;
		for (unsigned i = 0; i < 20; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		qp->img_csum = sum;
	}
}

/* droce_build_hdrs() for this QP's packets: the image, lengths and checksum
 * patched, then the BTH and extension headers at the opcode table's offsets.
 * Byte-identical to droce_build_hdrs (tests/unit/core/test_qp.c). Inline:
 * it runs once per frame sent. */
static inline __attribute__((always_inline)) size_t build_fast(const struct droce_qp *qp, uint8_t *buf,
							     const struct droce_hdrs *h)
{
	const struct droce_opcode_info *oi = droce_opcode_info(h->bth.opcode);
	if (!oi || !qp->img_len || h->net.ecn != qp->tmpl.net.ecn)
		return droce_build_hdrs(buf, DROCE_HDR_SCRATCH, h);
	size_t n = qp->img_len;
	uint8_t pad = droce_pad_count(h->payload_len);
	uint32_t udp_len = 8u + oi->hdr_len + h->payload_len + pad + DROCE_ICRC_LEN;
	/* The whole 64-byte image, not its n bytes: a constant size compiles
	 * to four 16-byte moves, a variable one to `rep movsq`, whose start-up
	 * was 9% of a 64 B engine run. The bytes past n are
	 * overwritten by the BTH below; buf holds DROCE_HDR_SCRATCH >= 64. */
	_Static_assert(sizeof(qp->img) == 64 && DROCE_HDR_SCRATCH >= 64, "image copy size");
	memcpy(buf, qp->img, sizeof(qp->img));
	uint8_t *udp = buf + n - 8;
	if (qp->tmpl.net.ip_version == 4) {
		uint8_t *ip = udp - 20;
		uint32_t tot = 20u + udp_len;
		uint32_t sum = qp->img_csum + tot;
		while (sum >> 16)
			sum = (sum & 0xFFFFu) + (sum >> 16);
		droce_put_be16(ip + 2, (uint16_t)tot);
		droce_put_be16(ip + 10, (uint16_t)~sum);
	} else {
		droce_put_be16(udp - 40 + 4, (uint16_t)udp_len);
	}
	droce_put_be16(udp + 4, (uint16_t)udp_len);
	droce_write_bth_ext(buf + n, h, oi, pad);
	return n + oi->hdr_len;
}

size_t droce_qp_build_hdrs(const struct droce_qp *qp, uint8_t *buf, const struct droce_hdrs *h)
{
	return build_fast(qp, buf, h);
}

int droce_tp_xmit(struct droce_qp *qp, const struct droce_hdrs *h,
		  const struct droce_seg *seg, unsigned nseg, uint64_t now)
{
	struct droce_ctx *ctx = qp->ctx;
	struct droce_tx_frame f;
	size_t hl = build_fast(qp, ctx->scratch, h);
	if (!hl)
		return -EINVAL;
	if (h->net.sport != qp->tmpl.net.sport && qp->img_len) /* sr-spray: the image has the QP's */
		droce_put_be16(ctx->scratch + qp->img_len - 8, h->net.sport);
	size_t l3 = droce_build_l3_off(h);
	f.hdr = ctx->scratch;
	f.hdr_len = (uint32_t)hl;
	f.nseg = (uint8_t)nseg;
	for (unsigned i = 0; i < nseg; i++) {
		f.seg[i].addr = seg[i].ptr;
		f.seg[i].len = seg[i].len;
	}
	f.payload_len = h->payload_len;
	unsigned pad = droce_pad_count(h->payload_len);
	/* A link that copies the payload anyway folds its ICRC into that copy
	 * (droce_link_ops.tx_fold): here only the headers' part. */
	const struct droce_link_ops *ops = ctx->link.ops;
	bool fold = ops->tx_fold != NULL && h->payload_len > DROCE_ICRC_FAST_MAX;
	uint32_t crc = droce_icrc_tx(&ctx->icrc_seeds, ctx->scratch + l3, droce_build_l3_kind(h), hl - l3, f.seg,
				     fold ? 0 : nseg, fold ? 0 : h->payload_len, fold ? 0 : pad);
	memset(f.trailer, 0, 4); /* the pad (0-3 bytes): a constant size, no libc call per frame */
	if (!fold)
		droce_icrc_store(f.trailer + pad, crc);
	f.trailer_len = (uint8_t)(pad + DROCE_ICRC_LEN);
	int rc = fold ? ops->tx_fold(ctx->link.priv, &f, crc, now) : ops->tx(ctx->link.priv, &f, now);
	if (rc)
		return rc;
	ctx->stats.tx_frames++;
	qp->stats.tx_pkts++;
	qp->stats.tx_bytes += h->payload_len;
	return 0;
}

int droce_tp_xmit_tail(struct droce_qp *qp, const struct droce_hdrs *h, const uint8_t *tail,
		       uint32_t len, uint64_t now)
{
	struct droce_ctx *ctx = qp->ctx;
	struct droce_hdrs t = *h;
	t.payload_len = len; /* the IP and UDP lengths count it */
	size_t hl = build_fast(qp, ctx->scratch, &t);
	if (!hl || (len & 3u) || hl + len > sizeof(ctx->scratch))
		return -EINVAL;
	memcpy(ctx->scratch + hl, tail, len);
	size_t l3 = droce_build_l3_off(&t);
	struct droce_tx_frame f;
	f.hdr = ctx->scratch;
	f.hdr_len = (uint32_t)(hl + len);
	f.nseg = 0;
	f.payload_len = 0;
	uint32_t crc = droce_icrc_tx(&ctx->icrc_seeds, ctx->scratch + l3, droce_build_l3_kind(&t),
				     hl + len - l3, f.seg, 0, 0, 0);
	memset(f.trailer, 0, 4);
	droce_icrc_store(f.trailer, crc);
	f.trailer_len = DROCE_ICRC_LEN;
	int rc = ctx->link.ops->tx(ctx->link.priv, &f, now);
	if (rc)
		return rc;
	ctx->stats.tx_frames++;
	qp->stats.tx_pkts++;
	return 0;
}
