/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's random draws. Two kinds:
 *   - droce_ctx_rand(): xorshift64*, fast, for what only needs spread (UDP
 *     source port entropy, the MR slot search's start);
 *   - droce_key_permute(): what must not be guessed (R_Keys): SipHash-2-4
 *     (Aumasson and Bernstein's keyed PRF) as the round function of a
 *     Feistel network over the key bits, keyed by a 128-bit secret. A
 *     permutation, so the keys of one slot's successive registrations are
 *     all different until the counter wraps, and unpredictable to anyone who
 *     does not hold the secret, however many other keys they saw.
 * Both are seeded from getrandom(2) unless the caller gives a seed
 * (simulation and replay repeat a run exactly).
 */
#include <errno.h>
#include <sys/random.h>

#include "base/splitmix64.h"
#include "core/core_int.h"
#include "core/rand.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3)                                                             \
	do {                                                                                 \
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                    \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                       \
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                       \
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                    \
	} while (0)

/* SipHash-2-4 of one 8-byte message word. */
uint64_t droce_siphash64(const uint64_t k[2], uint64_t m)
{
	uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL, v1 = k[1] ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL, v3 = k[1] ^ 0x7465646279746573ULL;
	uint64_t b = (uint64_t)8 << 56; /* message length in the last byte */
	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#define FEISTEL_ROUNDS 6

uint32_t droce_key_permute(const uint64_t k[2], uint32_t tweak, uint32_t x, unsigned bits)
{
	/* Halves of a and b bits (b >= a); each round replaces the half it
	 * does not read, so every round is invertible whatever the sizes. */
	unsigned a = bits / 2, b = bits - a;
	uint32_t lo = x & ((1u << a) - 1), hi = (x >> a) & ((1u << b) - 1);
	for (unsigned r = 0; r < FEISTEL_ROUNDS; r++) {
		uint64_t m = (uint64_t)tweak << 32 | (uint64_t)r << 24;
		if (r & 1) {
			hi ^= (uint32_t)droce_siphash64(k, m | lo) & ((1u << b) - 1);
		} else {
			lo ^= (uint32_t)droce_siphash64(k, m | hi) & ((1u << a) - 1);
		}
	}
	return hi << a | lo;
}

int droce_ctx_seed(struct droce_ctx *ctx, uint64_t seed)
{
	uint64_t w[3];
	if (seed) {
		for (unsigned i = 0; i < 3; i++)
			w[i] = droce_splitmix64(&seed); /* a caller's seed spread into three words */
	} else {
		/* Without a seed nothing may follow from what a peer can see (the
		 * address, the time): the kernel's CSPRNG, as Linux draws its
		 * own PSNs and keys. */
		size_t got = 0;
		while (got < sizeof(w)) {
			ssize_t r = getrandom((uint8_t *)w + got, sizeof(w) - got, 0);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			got += (size_t)r;
		}
	}
	ctx->rng = w[0] ? w[0] : 1;
	ctx->key_secret[0] = w[1];
	ctx->key_secret[1] = w[2];
	return 0;
}

/* xorshift64*: per context, seeded. */
uint64_t droce_ctx_rand(struct droce_ctx *ctx)
{
	uint64_t x = ctx->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ctx->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}
