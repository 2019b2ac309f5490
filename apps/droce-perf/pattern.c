/* SPDX-License-Identifier: BSD-3-Clause */
#include "pattern.h"

void pattern_fill(uint8_t *buf, size_t len, uint64_t iter)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern_byte(iter, i);
}

long pattern_check(const uint8_t *buf, size_t len, uint64_t iter)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern_byte(iter, i))
			return (long)i;
	return -1;
}
