/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A scatter/gather segment of application memory (a WQE's SGE resolved to
 * a host pointer at post time, with the registration it was resolved
 * under) and the two walks over a list of them. Written by core/
 * (posting); read by transport/.
 */
#ifndef DROCE_MODEL_SEG_H
#define DROCE_MODEL_SEG_H

#include <stdint.h>
#include <string.h>

#include <droce/link.h>

/** Most SGEs per WQE (a frame references at most DROCE_TX_MAX_SEG segments). */
#define DROCE_QP_MAX_SGE DROCE_TX_MAX_SEG

/** The registration a pointer into an MR was resolved under: the slot and
 * its generation, which changes at deregistration (model/mr.h
 * droce_mr_ref_live), so deregistration stops a message under way (IBTA
 * 10.6.3.2: a deregistered region is not accessible). */
struct droce_mr_ref {
	uint32_t slot;        /* MR table slot, or DROCE_MR_REF_NONE (the QP's inline copy) */
	uint32_t gen;         /* the slot's generation when resolved */
};
#define DROCE_MR_REF_NONE UINT32_MAX

struct droce_seg {
	uint8_t *ptr;
	uint32_t len;
	struct droce_mr_ref mr;   /* checked before each access (droce_segs_live) */
};

/** Copy @p len bytes from @p src into the segments, starting @p off bytes in. */
static inline void droce_seg_copy_in(const struct droce_seg *s, unsigned n, uint32_t off,
				     const uint8_t *src, uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (off >= s[i].len) {
			off -= s[i].len;
			continue;
		}
		uint32_t k = s[i].len - off < len ? s[i].len - off : len;
		memcpy(s[i].ptr + off, src, k);
		src += k;
		len -= k;
		off = 0;
	}
}

/** Describe bytes [off, off+len) of the segments as at most n segments in @p out. @return count. */
static inline unsigned droce_seg_slice(const struct droce_seg *s, unsigned n, uint32_t off,
				       uint32_t len, struct droce_seg *out)
{
	/* The usual packet: inside the first segment (what the loop below
	 * gives then, without walking it). */
	if (n && len && (uint64_t)off + len <= s[0].len) {
		out[0].ptr = s[0].ptr + off;
		out[0].len = len;
		return 1;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < n && len; i++) {
		if (off >= s[i].len) {
			off -= s[i].len;
			continue;
		}
		uint32_t c = s[i].len - off < len ? s[i].len - off : len;
		out[k].ptr = s[i].ptr + off;
		out[k].len = c;
		k++;
		len -= c;
		off = 0;
	}
	return k;
}

#endif
