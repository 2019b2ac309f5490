/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 24-bit PSN arithmetic (IBTA 9.7.1: PSNs wrap modulo 2^24; a PSN is
 * "ahead" when it lies within 2^23 after another).
 */
#ifndef DROCE_WIRE_PSN_H
#define DROCE_WIRE_PSN_H

#include <stdint.h>

#include "wire/hdr.h"

/** Signed distance a - b in the 24-bit PSN space, in [-2^23, 2^23). */
static inline int32_t droce_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & DROCE_PSN_MASK;
	return d & 0x800000u ? (int32_t)d - 0x1000000 : (int32_t)d;
}

static inline uint32_t droce_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & DROCE_PSN_MASK;
}

#endif
