/* SPDX-License-Identifier: BSD-3-Clause */
#include "pattern.h"

#include <endian.h>
#include <string.h>

/* The pattern is defined per 8-byte word (pattern.h): fill and check a
 * word at a time, so --check costs about a memcpy, not a byte loop. In
 * memory the word is little-endian: byte k is bits 8k..8k+7. */
static inline uint64_t memory_word(uint64_t iter, size_t word)
{
	return htole64(pattern_word(iter, word));
}

void pattern_fill(uint8_t *buf, size_t len, uint64_t iter)
{
	size_t w = 0, words = len / 8;
	for (; w < words; w++) {
		uint64_t v = memory_word(iter, w);
		memcpy(buf + w * 8, &v, 8);
	}
	for (size_t i = w * 8; i < len; i++)
		buf[i] = pattern_byte(iter, i);
}

void pattern_poison(uint8_t *buf, size_t len, uint64_t iter)
{
	size_t w = 0, words = len / 8;
	for (; w < words; w++) {
		uint64_t v = ~memory_word(iter, w);
		memcpy(buf + w * 8, &v, 8);
	}
	for (size_t i = w * 8; i < len; i++)
		buf[i] = (uint8_t)~pattern_byte(iter, i);
}

long pattern_check(const uint8_t *buf, size_t len, uint64_t iter)
{
	size_t w = 0, words = len / 8;
	for (; w < words; w++) {
		uint64_t v = memory_word(iter, w), got;
		memcpy(&got, buf + w * 8, 8);
		if (got != v)
			break;
	}
	for (size_t i = w * 8; i < len; i++)
		if (buf[i] != pattern_byte(iter, i))
			return (long)i;
	return -1;
}
