/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC-32 (reflected 0xEDB88320) by carry-less folding, after Intel's "Fast
 * CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction"
 * (2009), on 256-bit registers: VPCLMULQDQ multiplies both 128-bit lanes of
 * a ymm register at once, so four accumulators fold 128 bytes per step.
 *
 * Bit order: a 16-byte chunk loaded little-endian holds the coefficient of
 * x^(127-k) in bit k (the reflected CRC's order: bit 0 of the first byte is
 * the highest-degree term). Folding a lane forward by F bits replaces it by
 * H * (x^(F+63) mod P) ^ L * (x^(F-1) mod P), H and L its two qwords; the
 * result is congruent to the lane moved F bits later and is xored into the
 * data there. Constants: stack/wire/crc32_consts.h (bench/icrc/crc32_gen.c).
 *
 * Only this file is compiled for AVX2 + VPCLMULQDQ (target attribute); the
 * caller checks droce_crc32_have_vpclmul() first. Reads stay inside
 * [data, data + len): the tail is read with one overlapping 16-byte load
 * that ends at the last byte.
 */
#include "wire/crc32.h"

#include <string.h>

#if defined(__x86_64__)

#include <immintrin.h>

#include "wire/crc32_consts.h"

#define TARGET __attribute__((target("avx2,pclmul,vpclmulqdq,sse4.1")))

/* Below 16 bytes there is no lane to fold. */
#define MIN_FOLD 16u

TARGET static inline __m256i fold256(__m256i a, __m256i k)
{
	return _mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00),
				_mm256_clmulepi64_epi128(a, k, 0x11));
}

TARGET static inline __m128i fold128(__m128i a, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

TARGET static inline __m256i k256(uint64_t hi, uint64_t lo)
{
	return _mm256_set_epi64x((long long)lo, (long long)hi, (long long)lo, (long long)hi);
}

/* 128-bit state X -> CRC register: X * x^32 mod P (init/xorout applied by
 * the caller). 128 -> 96 bits: high qword H times x^96 mod P, plus L * x^32;
 * 96 -> 64: the top 32 bits times x^64 mod P; then Barrett: q = floor(W_hi *
 * mu / x^32), remainder = low 32 bits of W ^ q * P. */
TARGET static inline uint32_t reduce128(__m128i x)
{
	const __m128i red = _mm_set_epi64x((long long)DROCE_CRC32_RED64, (long long)DROCE_CRC32_RED96);
	const __m128i bar = _mm_set_epi64x((long long)DROCE_CRC32_POLY, (long long)DROCE_CRC32_MU);
	const __m128i lo32 = _mm_set_epi32(0, 0, 0, -1);

	__m128i z = _mm_xor_si128(_mm_clmulepi64_si128(x, red, 0x00), _mm_srli_si128(x, 8));
	__m128i w = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(z, lo32), red, 0x10),
				  _mm_srli_si128(z, 4));
	__m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(w, lo32), bar, 0x00), lo32);
	__m128i r = _mm_xor_si128(w, _mm_clmulepi64_si128(q, bar, 0x10));
	return (uint32_t)_mm_extract_epi32(r, 1);
}

/* pshufb masks: 16 x 0x80 (zero), 0..15, 16 x 0x80. */
static const uint8_t shuf[48] __attribute__((aligned(16))) = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/*
 * The last r (1..15) bytes T after state x (which stands for the data up to
 * @p end - r): the stream x ++ T re-cut into 16-byte chunks is
 * (zeros ++ x[0..r)) and (x[r..16) ++ T); leading zeros change no CRC
 * polynomial. The second chunk's T comes from a 16-byte load ending at @p end.
 */
TARGET static inline __m128i fold_tail(__m128i x, __m128i last, size_t r, __m128i k128)
{
	__m128i mshl = _mm_loadu_si128((const __m128i *)(shuf + r));      /* i >= 16-r: x[i-(16-r)] */
	__m128i mshr = _mm_loadu_si128((const __m128i *)(shuf + 16 + r)); /* i < 16-r: x[i+r] */
	__m128i c1 = _mm_shuffle_epi8(x, mshl);
	__m128i c2 = _mm_blendv_epi8(last, _mm_shuffle_epi8(x, mshr), mshl);
	return _mm_xor_si128(fold128(c1, k128), c2);
}

/*
 * 16 bytes at p + off, with @p mask's bytes at the same offsets OR-ed in
 * when there is a mask and the load starts inside its first 64 bytes
 * (droce_crc32_or_vpclmul: the mask has 16 zero bytes after those, so a
 * load that starts at 48..63 reads no byte past it).
 */
TARGET static inline __m128i ld16(const uint8_t *p, size_t off, const uint8_t *mask)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(p + off));
	if (mask && off < 64)
		v = _mm_or_si128(v, _mm_loadu_si128((const __m128i *)(mask + off)));
	return v;
}

/*
 * Loads for the folding loops. With a destination (the fused CRC-and-copy)
 * every 32 or 16 bytes loaded are stored there too, so the data is read
 * once: the copy and the CRC share the load.
 */
#define LD256(off) ld256(p + (off), q ? q + (off) : NULL)
#define LD128(off) ld128(p + (off), q ? q + (off) : NULL)

TARGET static inline __m256i ld256(const uint8_t *s, uint8_t *d)
{
	__m256i v = _mm256_loadu_si256((const __m256i *)s);
	if (d)
		_mm256_storeu_si256((__m256i *)d, v);
	return v;
}

TARGET static inline __m128i ld128(const uint8_t *s, uint8_t *d)
{
	__m128i v = _mm_loadu_si128((const __m128i *)s);
	if (d)
		_mm_storeu_si128((__m128i *)d, v);
	return v;
}

/*
 * 32 bytes or more from *pp: fold in 256-bit registers, four accumulators
 * (128 bytes a step) from 256 bytes on, and return one 128-bit lane that
 * stands for everything consumed; *pp (and *qq, the copy's destination,
 * when not NULL) move past it (< 32 bytes remain).
 */
TARGET static inline __attribute__((always_inline)) __m128i
fold_wide(const uint8_t **pp, uint8_t **qq, const uint8_t *end, __m128i init, __m128i k128)
{
	const uint8_t *p = *pp;
	uint8_t *q = *qq;
	const __m256i k2 = k256(DROCE_CRC32_FOLD256_HI, DROCE_CRC32_FOLD256_LO);
	__m256i y = _mm256_xor_si256(LD256(0), _mm256_zextsi128_si256(init));

	if (end - p >= 256) {
		const __m256i k1024 = k256(DROCE_CRC32_FOLD1024_HI, DROCE_CRC32_FOLD1024_LO);
		__m256i a0 = y, a1 = LD256(32), a2 = LD256(64), a3 = LD256(96);
		for (p += 128, q = q ? q + 128 : NULL; end - p >= 128; p += 128, q = q ? q + 128 : NULL) {
			a0 = _mm256_xor_si256(fold256(a0, k1024), LD256(0));
			a1 = _mm256_xor_si256(fold256(a1, k1024), LD256(32));
			a2 = _mm256_xor_si256(fold256(a2, k1024), LD256(64));
			a3 = _mm256_xor_si256(fold256(a3, k1024), LD256(96));
		}
		/* Four accumulators into one in a single multiply's latency:
		 * each moves to a3's place (768, 512, 256 bits on). */
		y = _mm256_xor_si256(
			_mm256_xor_si256(fold256(a0, k256(DROCE_CRC32_FOLD768_HI, DROCE_CRC32_FOLD768_LO)),
					 fold256(a1, k256(DROCE_CRC32_FOLD512_HI, DROCE_CRC32_FOLD512_LO))),
			_mm256_xor_si256(fold256(a2, k2), a3));
	} else {
		p += 32;
		q = q ? q + 32 : NULL;
	}
	for (; end - p >= 32; p += 32, q = q ? q + 32 : NULL)
		y = _mm256_xor_si256(fold256(y, k2), LD256(0));
	*pp = p;
	*qq = q;
	/* Two lanes into one: the first lane is 128 bits ahead of the second. */
	return _mm_xor_si128(fold128(_mm256_castsi256_si128(y), k128), _mm256_extracti128_si256(y, 1));
}

/* From a 128-bit state standing for the data up to @p p: the 16-byte folds,
 * the tail, Barrett, and clean upper register halves for the caller. */
TARGET static inline __attribute__((always_inline)) uint32_t
finish(__m128i x, const uint8_t *p, uint8_t *q, const uint8_t *end, __m128i k128)
{
	for (; end - p >= 16; p += 16, q = q ? q + 16 : NULL)
		x = _mm_xor_si128(fold128(x, k128), LD128(0));
	if (end != p) {
		if (q)
			memcpy(q, p, (size_t)(end - p));
		x = fold_tail(x, _mm_loadu_si128((const __m128i *)(end - 16)), (size_t)(end - p), k128);
	}
	uint32_t r = ~reduce128(x);
	/* Leave the upper register halves clean for the caller's SSE code
	 * (the compiler adds this itself only when optimising). */
	_mm256_zeroupper();
	return r;
}

static const uint64_t kshort[DROCE_CRC32_SHORT_CHUNKS][2] __attribute__((aligned(16))) =
	DROCE_CRC32_SHORT_CONSTS;

/*
 * Short buffers (m = 1..15 whole 16-byte chunks): instead of a chain of
 * m - 1 dependent folds, move every chunk to the last one's place at once,
 * chunk j by 128 * (m - 1 - j) bits with its own constant, and xor: the
 * multiplies are independent, so a 128-byte buffer costs about one
 * multiply's latency instead of seven (small packets are all fixed cost).
 */
TARGET static inline __attribute__((always_inline)) __m128i
fold_short(const uint8_t *p, size_t m, __m128i init, const uint8_t *mask)
{
	__m128i last = ld16(p, 16 * (m - 1), mask);
	if (m == 1)
		return _mm_xor_si128(last, init);
	__m128i acc0 = fold128(_mm_xor_si128(ld16(p, 0, mask), init),
			       _mm_load_si128((const __m128i *)kshort[m - 1]));
	__m128i acc1 = last;
	for (size_t j = 1; j + 1 < m; j++) {
		__m128i f = fold128(ld16(p, 16 * j, mask),
				    _mm_load_si128((const __m128i *)kshort[m - 1 - j]));
		if (j & 1)
			acc1 = _mm_xor_si128(acc1, f);
		else
			acc0 = _mm_xor_si128(acc0, f);
	}
	return _mm_xor_si128(acc0, acc1);
}

/* The CRC of [data, data + len), copied to @p dst on the way when not NULL. */
TARGET static inline __attribute__((always_inline)) uint32_t
crc_body(uint32_t crc, const void *data, size_t len, uint8_t *dst)
{
	const uint8_t *p = data;
	uint8_t *q = dst;
	const uint8_t *end = p + len;
	const __m128i k128 = _mm_set_epi64x((long long)DROCE_CRC32_FOLD128_LO,
					    (long long)DROCE_CRC32_FOLD128_HI);
	/* The register's initial value (~crc: init all ones) xors into the
	 * first 32 message bits. */
	const __m128i init = _mm_cvtsi32_si128((int)~crc);
	__m128i x;

	if (!dst && len < 16 * DROCE_CRC32_SHORT_CHUNKS) {
		size_t m = len / 16;
		x = fold_short(p, m, init, NULL);
		return finish(x, p + 16 * m, NULL, end, k128);
	}
	if (len >= 32) {
		x = fold_wide(&p, &q, end, init, k128);
	} else {
		x = _mm_xor_si128(LD128(0), init);
		p += 16;
		q = q ? q + 16 : NULL;
	}
	return finish(x, p, q, end, k128);
}

TARGET uint32_t droce_crc32_vpclmul(uint32_t crc, const void *data, size_t len)
{
	if (len < MIN_FOLD)
		return droce_crc32_isal(crc, data, len);
	return crc_body(crc, data, len, NULL);
}

TARGET uint32_t droce_crc32_copy_vpclmul(uint32_t crc, void *dst, const void *src, size_t len)
{
	if (len < MIN_FOLD) {
		memcpy(dst, src, len);
		return droce_crc32_isal(crc, src, len);
	}
	return crc_body(crc, src, len, dst);
}

/*
 * The ICRC's masked header read in place (wire/icrc_fast.c): the short
 * path above with @p mask OR-ed into the first 64 bytes as they are loaded,
 * so the variant fields (A17.4.5) need no masked copy of the frame.
 */
TARGET uint32_t droce_crc32_or_vpclmul(uint32_t crc, const void *data, size_t len,
				       const uint8_t *mask)
{
	const uint8_t *p = data;
	if (len < MIN_FOLD || len >= DROCE_CRC32_OR_MAX) {
		/* Outside the short path: the masked copy of what the mask covers
		 * (zeroed first: GCC cannot see that only n bytes are read). */
		uint8_t m[64] = { 0 };
		size_t n = len < 64 ? len : 64;
		for (size_t i = 0; i < n; i++)
			m[i] = p[i] | mask[i];
		crc = droce_crc32_vpclmul(crc, m, n);
		return len > n ? droce_crc32_vpclmul(crc, p + n, len - n) : crc;
	}
	const __m128i k128 = _mm_set_epi64x((long long)DROCE_CRC32_FOLD128_LO,
					    (long long)DROCE_CRC32_FOLD128_HI);
	size_t m = len / 16, r = len % 16;
	__m128i x = fold_short(p, m, _mm_cvtsi32_si128((int)~crc), mask);
	if (r)
		x = fold_tail(x, ld16(p, len - 16, mask), r, k128);
	uint32_t res = ~reduce128(x);
	_mm256_zeroupper();
	return res;
}

/*
 * The same folding on 512-bit registers (AVX-512 VPCLMULQDQ: four 128-bit
 * lanes per multiply), for CPUs that have it: four accumulators fold 256
 * bytes a step, VPTERNLOGQ does the three-way xor of the two products and
 * the data. Below 512 bytes the 256-bit path's cheaper set-up wins.
 */
#define TARGET512 __attribute__((target("avx512f,avx512vl,avx512bw,avx2,pclmul,vpclmulqdq,sse4.1")))

TARGET512 static inline __m512i k512(uint64_t hi, uint64_t lo)
{
	return _mm512_set_epi64((long long)lo, (long long)hi, (long long)lo, (long long)hi,
				(long long)lo, (long long)hi, (long long)lo, (long long)hi);
}

/* a folded by k, xored with d (0x96: a ^ b ^ c). */
TARGET512 static inline __m512i fold512(__m512i a, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
					 _mm512_clmulepi64_epi128(a, k, 0x11), d, 0x96);
}

TARGET512 uint32_t droce_crc32_vpclmul512(uint32_t crc, const void *data, size_t len)
{
	if (len < 512)
		return droce_crc32_vpclmul(crc, data, len);
	const uint8_t *p = data;
	const uint8_t *end = p + len;
	const __m128i k128 = _mm_set_epi64x((long long)DROCE_CRC32_FOLD128_LO,
					    (long long)DROCE_CRC32_FOLD128_HI);
	const __m512i k2048 = k512(DROCE_CRC32_FOLD2048_HI, DROCE_CRC32_FOLD2048_LO);
	const __m512i kz512 = k512(DROCE_CRC32_FOLD512_HI, DROCE_CRC32_FOLD512_LO);
	const __m512i zero = _mm512_setzero_si512();
	__m512i a0 = _mm512_xor_si512(_mm512_loadu_si512(p),
				      _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
	__m512i a1 = _mm512_loadu_si512(p + 64);
	__m512i a2 = _mm512_loadu_si512(p + 128);
	__m512i a3 = _mm512_loadu_si512(p + 192);
	for (p += 256; end - p >= 256; p += 256) {
		a0 = fold512(a0, k2048, _mm512_loadu_si512(p));
		a1 = fold512(a1, k2048, _mm512_loadu_si512(p + 64));
		a2 = fold512(a2, k2048, _mm512_loadu_si512(p + 128));
		a3 = fold512(a3, k2048, _mm512_loadu_si512(p + 192));
	}
	/* Into one register in one multiply's latency: a0, a1, a2 move 1536,
	 * 1024, 512 bits on, to a3's place. */
	__m512i z = _mm512_ternarylogic_epi64(
		fold512(a0, k512(DROCE_CRC32_FOLD1536_HI, DROCE_CRC32_FOLD1536_LO), zero),
		fold512(a1, k512(DROCE_CRC32_FOLD1024_HI, DROCE_CRC32_FOLD1024_LO), zero),
		fold512(a2, kz512, a3), 0x96);
	for (; end - p >= 64; p += 64)
		z = fold512(z, kz512, _mm512_loadu_si512(p));
	/* 512 -> 256 bits: lanes 0-1 are 256 bits ahead of lanes 2-3. */
	const __m256i k2 = k256(DROCE_CRC32_FOLD256_HI, DROCE_CRC32_FOLD256_LO);
	__m256i y = _mm256_xor_si256(fold256(_mm512_castsi512_si256(z), k2),
				     _mm512_extracti64x4_epi64(z, 1));
	for (; end - p >= 32; p += 32)
		y = _mm256_xor_si256(fold256(y, k2), _mm256_loadu_si256((const __m256i *)p));
	__m128i x = _mm_xor_si128(fold128(_mm256_castsi256_si128(y), k128),
				  _mm256_extracti128_si256(y, 1));
	return finish(x, p, NULL, end, k128);
}

#else /* not x86-64: never selected (droce_crc32_have_vpclmul() is false) */

uint32_t droce_crc32_vpclmul(uint32_t crc, const void *data, size_t len)
{
	return droce_crc32_isal(crc, data, len);
}

uint32_t droce_crc32_copy_vpclmul(uint32_t crc, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return droce_crc32_isal(crc, src, len);
}

uint32_t droce_crc32_vpclmul512(uint32_t crc, const void *data, size_t len)
{
	return droce_crc32_isal(crc, data, len);
}

uint32_t droce_crc32_or_vpclmul(uint32_t crc, const void *data, size_t len, const uint8_t *mask)
{
	const uint8_t *p = data;
	uint8_t m[64];
	size_t n = len < 64 ? len : 64;
	for (size_t i = 0; i < n; i++)
		m[i] = p[i] | mask[i];
	crc = droce_crc32_isal(crc, m, n);
	return len > n ? droce_crc32_isal(crc, p + n, len - n) : crc;
}

#endif
