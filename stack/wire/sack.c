/* SPDX-License-Identifier: BSD-3-Clause */
/* droce's SACK block after an RC_ACKNOWLEDGE's AETH (sack.h, docs/wire.md). */
#include "wire/sack.h"

#include "wire/bytes.h"

void droce_sack_build(uint8_t *out, const struct droce_sack *s)
{
	droce_put_be16(out, DROCE_SACK_MAGIC);
	out[2] = DROCE_SACK_VERSION;
	out[3] = DROCE_SACK_BITS / 8u;
	droce_put_be32(out + 4, s->hi_psn & 0xFFFFFFu);
	for (unsigned i = 0; i < DROCE_SACK_BITS / 8u; i++)
		out[8 + i] = (uint8_t)(s->map[i / 8u] >> (8u * (i % 8u)));
}

bool droce_sack_parse(const uint8_t *in, size_t len, struct droce_sack *s)
{
	if (len != DROCE_SACK_LEN || droce_get_be16(in) != DROCE_SACK_MAGIC ||
	    in[2] != DROCE_SACK_VERSION || in[3] != DROCE_SACK_BITS / 8u || in[4] != 0)
		return false;
	s->hi_psn = droce_get_be32(in + 4) & 0xFFFFFFu;
	for (unsigned w = 0; w < DROCE_SACK_BITS / 64u; w++)
		s->map[w] = 0;
	for (unsigned i = 0; i < DROCE_SACK_BITS / 8u; i++)
		s->map[i / 8u] |= (uint64_t)in[8 + i] << (8u * (i % 8u));
	return true;
}
