/* SPDX-License-Identifier: BSD-3-Clause */
/* The polynomial arithmetic behind the folding constants: used by the
 * generator (bench/icrc/crc32_gen.c) and by the test that checks its output. */
#include "wire/crc32.h"

/* P(x) = x^32 + 0x04C11DB7 (the low 32 terms, normal order). */
#define POLY_NORMAL 0x04C11DB7u

uint32_t droce_crc32_xpow_mod(unsigned n)
{
	uint32_t v = 1; /* x^0 */
	while (n--)
		v = (v << 1) ^ (v & 0x80000000u ? POLY_NORMAL : 0);
	return v;
}

uint64_t droce_crc32_barrett_mu(void)
{
	/* Long division of x^64 by P, one quotient bit per step. */
	const uint64_t p = 0x100000000ull | POLY_NORMAL;
	uint64_t rem = 0, q = 0;
	for (int bit = 64; bit >= 0; bit--) {
		rem = (rem << 1) | (bit == 64); /* the dividend's only term */
		q <<= 1;
		if (rem & 0x100000000ull) {
			rem ^= p;
			q |= 1;
		}
	}
	return q;
}

uint64_t droce_crc32_reflect(uint64_t v, unsigned width)
{
	uint64_t r = 0;
	for (unsigned i = 0; i < width; i++)
		if (v >> i & 1)
			r |= 1ull << (width - 1 - i);
	return r;
}
