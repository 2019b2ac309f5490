/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Placement of incoming RDMA WRITE data in ascending address order, one
 * store per naturally aligned word, as a NIC's DMA writes land (PCIe posted
 * writes stay in order unless the MR asked for relaxed ordering).
 *
 * Why not memcpy: programs poll memory a peer writes. NCCL's sender spins
 * on the 8-byte flag at offset 40 of each 64-byte FIFO slot its receiver
 * RDMA WRITEs (up to 8 slots, 512 bytes, in one WRITE ONLY) and then reads
 * the slot's other fields: it needs every byte below a flag stored before
 * the flag. glibc's memcpy does not store in order: above 8 vectors it
 * loads the first vector, copies the rest, and stores the first vector last
 * (a 512-byte copy writes its first 32 bytes after its last ones).
 *
 * On x86-64 (TSO) stores become visible in program order, so ascending
 * aligned stores are enough; elsewhere each word is a release store.
 * Never a store that crosses a 16-byte boundary, so a flag that is 8-byte
 * aligned in the destination is written by one store.
 * The fused path (rx_fused.c, MIDDLE/LAST packets of 512 bytes or more)
 * copies with droce_crc32_copy(), which stores 32-byte vectors in ascending
 * order: the same order, at 32-byte grain (NCCL's FIFO writes, 512 bytes at
 * most in one WRITE ONLY, never take it).
 * tests/unit/transport/test_place.c checks the order with a fault at every
 * 8-byte offset of the destination, and the responder's with a fault
 * inside WRITEs the pair test bed delivers.
 */
#ifndef DROCE_TRANSPORT_PLACE_H
#define DROCE_TRANSPORT_PLACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

static inline void droce_place(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
#if defined(__x86_64__)
	/* The byte loops carry a compiler barrier: left alone, the compiler
	 * turns them (and the whole function) back into memcpy. */
	while (n && ((uintptr_t)d & 15)) {
		*d++ = *s++;
		n--;
		__asm__ volatile("" ::: "memory");
	}
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
		_mm_store_si128((__m128i *)d, a);
		_mm_store_si128((__m128i *)(d + 16), b);
		_mm_store_si128((__m128i *)(d + 32), c);
		_mm_store_si128((__m128i *)(d + 48), e);
	}
	for (; n >= 16; n -= 16, d += 16, s += 16)
		_mm_store_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
	while (n--) {
		*d++ = *s++;
		__asm__ volatile("" ::: "memory");
	}
#else
	while (n && ((uintptr_t)d & 7)) {
		__atomic_store_n(d++, *s++, __ATOMIC_RELEASE);
		n--;
	}
	for (; n >= 8; n -= 8, d += 8, s += 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		__atomic_store_n((uint64_t *)(void *)d, w, __ATOMIC_RELEASE);
	}
	while (n--)
		__atomic_store_n(d++, *s++, __ATOMIC_RELEASE);
#endif
}

#endif
