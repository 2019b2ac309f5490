/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's random draws (core/rand.c): a fast generator for spread,
 * a keyed permutation for what must not be guessed.
 */
#ifndef DROCE_CORE_RAND_H
#define DROCE_CORE_RAND_H

#include <stdint.h>

struct droce_ctx;

/** SipHash-2-4 of the 8-byte word @p m under the 128-bit key @p k. */
uint64_t droce_siphash64(const uint64_t k[2], uint64_t m);

/**
 * A keyed permutation of the @p bits-bit values (8 <= bits <= 31): a Feistel
 * network with SipHash rounds, keyed by @p k and @p tweak (up to 32 bits).
 * Distinct @p x give distinct results for the same key and tweak.
 */
uint32_t droce_key_permute(const uint64_t k[2], uint32_t tweak, uint32_t x, unsigned bits);

/**
 * Seed @p ctx's generator and key secret: from @p seed (repeatable), or from
 * getrandom(2) when it is 0. @return 0 or a negative errno.
 */
int droce_ctx_seed(struct droce_ctx *ctx, uint64_t seed);

#endif
