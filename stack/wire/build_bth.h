/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writing the BTH and the extension headers the opcode table names, at the
 * table's offsets (IBTA 9.2, 9.3). Inline: it is the per-packet part of
 * building a frame, shared by droce_build_hdrs() and the QP's header-image
 * fast path (stack/core/qp.c), which must stay byte-identical to it.
 */
#ifndef DROCE_WIRE_BUILD_BTH_H
#define DROCE_WIRE_BUILD_BTH_H

#include <stdint.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/fields.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

/** Write the BTH at @p p, pad count @p pad, then @p oi's extension headers. */
static inline void droce_write_bth_ext(uint8_t *p, const struct droce_hdrs *h,
				       const struct droce_opcode_info *oi, uint8_t pad)
{
	const struct droce_bth_fields *b = &h->bth;
	const struct droce_ext_fields *e = &h->ext;

	p[0] = b->opcode;
	p[1] = (uint8_t)((b->se ? DROCE_BTH_SE : 0) | (b->migreq ? DROCE_BTH_MIGREQ : 0) |
			 pad << DROCE_BTH_PAD_SHIFT | (b->tver & DROCE_BTH_TVER_MASK));
	droce_put_be16(p + 2, b->pkey);
	/* resv8a + DestQP and AckReq + PSN as two 32-bit words: a 24-bit field
	 * written byte by byte costs three shifts and stores, on every frame. */
	droce_put_be32(p + 4, (uint32_t)((b->fecn ? DROCE_BTH_FECN : 0) | (b->becn ? DROCE_BTH_BECN : 0)) << 24 |
				      (b->dqpn & DROCE_QPN_MASK));
	droce_put_be32(p + 8, (uint32_t)(b->ack_req ? DROCE_BTH_ACKREQ : 0) << 24 | (b->psn & DROCE_PSN_MASK));

	/* The data path's headers first (RETH, AETH), then one test for all
	 * the others, which most frames do not carry: not eight tests a frame. */
	uint16_t hd = oi->hdrs;
	if (hd & DROCE_HDR_RETH) {
		uint8_t *r = p + oi->off_reth;
		droce_put_be64(r, e->reth.va);
		droce_put_be32(r + 8, e->reth.rkey);
		droce_put_be32(r + 12, e->reth.dma_len);
	}
	if (hd & DROCE_HDR_AETH)
		droce_put_be32(p + oi->off_aeth, (uint32_t)e->aeth.syndrome << 24 | (e->aeth.msn & DROCE_MSN_MASK));
	if (!(hd & ~(DROCE_HDR_RETH | DROCE_HDR_AETH)))
		return;
	if (hd & DROCE_HDR_DETH) {
		uint8_t *d = p + oi->off_deth;
		droce_put_be32(d, e->deth.qkey);
		droce_put_be32(d + 4, e->deth.sqpn & DROCE_QPN_MASK); /* reserved byte, then SrcQP */
	}
	if (hd & DROCE_HDR_ATOMIC) {
		uint8_t *a = p + oi->off_atomic;
		droce_put_be64(a, e->atomic.va);
		droce_put_be32(a + 8, e->atomic.rkey);
		droce_put_be64(a + 12, e->atomic.swap_add);
		droce_put_be64(a + 20, e->atomic.compare);
	}
	if (hd & DROCE_HDR_AACK)
		droce_put_be64(p + oi->off_aack, e->atomic_ack);
	if (hd & DROCE_HDR_IMM)
		droce_put_be32(p + oi->off_imm, e->imm);
	if (hd & DROCE_HDR_IETH)
		droce_put_be32(p + oi->off_ieth, e->ieth_rkey);
	if (hd & DROCE_HDR_CNP)
		memset(p + DROCE_OFF_CNP(hd), 0, DROCE_CNP_LEN);
}

#endif
