/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --check: buffers filled with a pattern keyed by the iteration, so a byte
 * that lands in the wrong message, at the wrong offset or not at all shows.
 */
#ifndef DROCE_PERF_PATTERN_H
#define DROCE_PERF_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/** 8-byte word @p word of message @p iter; byte k of it is bits 8k..8k+7. */
static inline uint64_t pattern_word(uint64_t iter, size_t word)
{
	uint64_t x = (iter + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)word * 0xBF58476D1CE4E5B9ull;
	return x ^ (x >> 29);
}

/** Byte @p off of message @p iter. */
static inline uint8_t pattern_byte(uint64_t iter, size_t off)
{
	return (uint8_t)(pattern_word(iter, off >> 3) >> ((off & 7) * 8));
}

void pattern_fill(uint8_t *buf, size_t len, uint64_t iter);

/**
 * Fill @p buf with the complement of message @p iter's pattern: every byte
 * differs from the one pattern_check() expects, so a transfer that leaves
 * any byte untouched (a READ that writes nothing, a short or truncated
 * one) fails the check instead of finding the bytes an earlier pass left.
 */
void pattern_poison(uint8_t *buf, size_t len, uint64_t iter);

/** @return -1 when every byte matches, else the offset of the first mismatch. */
long pattern_check(const uint8_t *buf, size_t len, uint64_t iter);

#endif
