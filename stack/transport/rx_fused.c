/* SPDX-License-Identifier: BSD-3-Clause */
#include "transport/rx_fused.h"


#include "wire/icrc_fast.h"
#include "wire/crc32.h"
#include "wire/hdr.h"

/* Would the responder take this frame, which passed the context's header
 * checks (destination IP, QP, P_Key, source: core/ctx.c rx_check), straight
 * to execute()'s WRITE branch? Mirrors responder.c's checks (state,
 * chk_psn, chk_op_seq, chk_op_valid, chk_length, chk_rkey's registration
 * check; chk_resource passes for a plain MIDDLE/LAST). Any doubt says no:
 * the old path is always correct. */
static bool placeable(const struct droce_qp *qp, const struct droce_pkt *pkt)
{
	const struct droce_opcode_info *oi = pkt->op;
	if (!(oi->flags & DROCE_OPF_WRITE) || (oi->flags & (DROCE_OPF_FIRST | DROCE_OPF_IMM)))
		return false;
	if (qp->state < DROCE_QPS_RTR || qp->state == DROCE_QPS_ERR || qp->tp.resp_err)
		return false;
	const struct droce_tp *t = &qp->tp;
	if (pkt->h.bth.psn != t->epsn || t->in_msg != DROCE_OPF_WRITE ||
	    !(qp->attr.qp_access_flags & DROCE_ACCESS_REMOTE_WRITE) || !t->wr_ptr)
		return false;
	/* chk_rkey's per-packet check: the region is still the one the FIRST
	 * was checked against (a deregistered one: the responder NAKs). */
	if (!droce_mr_ref_live(qp->ctx, t->wr_mr))
		return false;
	uint32_t plen = pkt->h.payload_len;
	/* The responder's PadCnt check (9.2.2): pad = what the length needs. */
	if (pkt->h.bth.pad != ((4u - (plen & 3u)) & 3u))
		return false;
	if (oi->flags & DROCE_OPF_LAST)
		return plen != 0 && plen <= qp->mtu && plen == t->wr_left;
	return plen == qp->mtu && plen <= t->wr_left;
}

int droce_tp_rx_fused(struct droce_qp *qp, struct droce_pkt *pkt, enum droce_l3 kind)
{
	struct droce_icrc_seeds *zs = &qp->ctx->icrc_seeds;
	if (pkt->h.payload_len < DROCE_RX_FUSED_MIN || zs->crc == droce_crc32_isal)
		return 0;
	if (!placeable(qp, pkt))
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
