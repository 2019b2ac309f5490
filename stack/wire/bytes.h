/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Big-endian loads and stores on raw bytes. Wire code never casts a frame
 * pointer to a multi-byte integer: frames may be unaligned (Ethernet's 14-byte
 * header puts IP at offset 14) and the sanitizer build would flag it.
 */
#ifndef DROCE_WIRE_BYTES_H
#define DROCE_WIRE_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t droce_get_be16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t droce_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t droce_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t droce_get_be64(const uint8_t *p)
{
	return (uint64_t)droce_get_be32(p) << 32 | droce_get_be32(p + 4);
}

static inline void droce_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void droce_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void droce_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void droce_put_be64(uint8_t *p, uint64_t v)
{
	droce_put_be32(p, (uint32_t)(v >> 32));
	droce_put_be32(p + 4, (uint32_t)v);
}

/* Two addresses equal, IPv4 in the first 4 bytes: a fixed-size compare per
 * packet on the receive path, not a libc memcmp call. */
static inline bool droce_ip_eq(const uint8_t *a, const uint8_t *b, bool v4)
{
	uint64_t x[2], y[2];
	if (v4) {
		uint32_t u, v;
		memcpy(&u, a, 4);
		memcpy(&v, b, 4);
		return u == v;
	}
	memcpy(x, a, 16);
	memcpy(y, b, 16);
	return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

#endif
