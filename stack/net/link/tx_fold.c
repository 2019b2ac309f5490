/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/link/tx_fold.h"

#include "wire/crc32.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

uint32_t droce_tx_fold_copy(uint8_t *dst, const struct droce_tx_frame *f, uint32_t crc)
{
	uint8_t *o = dst;
	for (unsigned i = 0; i < f->nseg; i++) {
		crc = droce_crc32_copy(crc, o, f->seg[i].addr, f->seg[i].len);
		o += f->seg[i].len;
	}
	unsigned pad = f->trailer_len - DROCE_ICRC_LEN;
	if (pad != 0) /* the pad's zero bytes (none at a 4-byte multiple: skip the call) */
		crc = droce_crc32_copy(crc, o, f->trailer, pad);
	droce_icrc_store(o + pad, crc);
	return (uint32_t)(o - dst) + f->trailer_len;
}
