/* SPDX-License-Identifier: BSD-3-Clause */
#include "transport/rx_fused.h"

#include <string.h>

#include "wire/icrc_fast.h"
#include "wire/crc32.h"
#include "wire/hdr.h"

/* Would rx_one and the responder take this frame straight to execute()'s
 * WRITE branch? Mirrors, check by check, ctx.c (destination IP, QP lookup,
 * P_Key: IBTA 10.9.3) and responder.c (state, chk_psn, chk_op_seq,
 * chk_op_valid, chk_length, chk_rkey's registration check; chk_resource
 * passes for a plain MIDDLE/LAST). Any doubt says no: the old path is
 * always correct. */
static struct droce_qp *target_qp(struct droce_ctx *ctx, const struct droce_pkt *pkt)
{
	const struct droce_opcode_info *oi = pkt->op;
	if (!(oi->flags & DROCE_OPF_WRITE) || (oi->flags & (DROCE_OPF_FIRST | DROCE_OPF_IMM)) ||
	    droce_opcode_service(pkt->h.bth.opcode) != DROCE_SVC_RC)
		return NULL;
	if (pkt->h.net.ip_version != ctx->p.ip_version ||
	    !droce_ip_eq(pkt->h.net.dst_ip, ctx->p.ip, ctx->p.ip_version == 4))
		return NULL;
	uint32_t idx = pkt->h.bth.dqpn - DROCE_QPN_BASE;
	struct droce_qp *qp = idx < ctx->p.max_qps ? ctx->qps[idx] : NULL;
	if (!qp)
		return NULL;
	uint16_t a = pkt->h.bth.pkey, b = qp->attr.pkey;
	if ((a & 0x7FFFu) != (b & 0x7FFFu) || !((a | b) & 0x8000u))
		return NULL;
	if (qp->state < DROCE_QPS_RTR || qp->state == DROCE_QPS_ERR || qp->tp.resp_err)
		return NULL;
	/* ctx.c's source check (issue 8 item 9): only the peer's frames are placed. */
	if (!droce_ip_eq(pkt->h.net.src_ip, qp->attr.ah_attr.dst_ip, ctx->p.ip_version == 4))
		return NULL;
	const struct droce_tp *t = &qp->tp;
	if (pkt->h.bth.psn != t->epsn || t->in_msg != DROCE_OPF_WRITE ||
	    !(qp->attr.qp_access_flags & DROCE_ACCESS_REMOTE_WRITE) || !t->wr_ptr)
		return NULL;
	/* chk_rkey's per-packet check: the region is still the one the FIRST
	 * was checked against (a deregistered one: the responder NAKs). */
	if (!droce_mr_ref_live(ctx, t->wr_mr))
		return NULL;
	uint32_t plen = pkt->h.payload_len;
	/* The responder's PadCnt check (9.2.2): pad = what the length needs. */
	if (pkt->h.bth.pad != ((4u - (plen & 3u)) & 3u))
		return NULL;
	if (oi->flags & DROCE_OPF_LAST) {
		if (plen == 0 || plen > qp->mtu || plen != t->wr_left)
			return NULL;
	} else if (plen != qp->mtu || plen > t->wr_left) {
		return NULL;
	}
	return qp;
}

int droce_tp_rx_fused(struct droce_ctx *ctx, struct droce_pkt *pkt, enum droce_l3 kind)
{
	struct droce_icrc_seeds *zs = &ctx->icrc_seeds;
	if (pkt->h.payload_len < DROCE_RX_FUSED_MIN || zs->crc == droce_crc32_isal)
		return 0;
	struct droce_qp *qp = target_qp(ctx, pkt);
	if (!qp)
		return 0;
	const uint8_t *l3 = pkt->frame + pkt->l3_off;
	/* Headers (masked) up to the payload, then the payload into its place,
	 * then the pad: the same bytes droce_icrc_rx covers, in one pass. */
	uint32_t crc = droce_icrc_rx(zs, l3, kind, pkt->payload_off - pkt->l3_off);
	crc = droce_crc32_copy_vpclmul(crc, qp->tp.wr_ptr, pkt->payload, pkt->h.payload_len);
	if (pkt->h.bth.pad)
		crc = zs->crc(crc, pkt->payload + pkt->h.payload_len, pkt->h.bth.pad);
	if (crc != pkt->icrc)
		return -1;
	pkt->placed = true;
	return 1;
}
