/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): tiny, seedable with any value, and the same
 * stream for the same seed everywhere, which is what the seeded parts of
 * droce need (the impairment shim, the CM's identifiers from a given seed,
 * droce-sim, the tests): a seed reproduces a run. Not a cryptographic
 * generator: values an attacker must not guess come from getrandom().
 */
#ifndef DROCE_BASE_SPLITMIX64_H
#define DROCE_BASE_SPLITMIX64_H

#include <stdint.h>

/** The next value of the stream whose state is @p s. */
static inline uint64_t droce_splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/** Uniform in [0, 1) with 53 bits of the stream @p s. */
static inline double droce_splitmix64_unit(uint64_t *s)
{
	return (double)(droce_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
