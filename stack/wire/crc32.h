/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC-32 as the ICRC needs it (IBTA vol 1 Annex A17.4.5 / 7.8.1: the
 * Ethernet CRC, reflected polynomial 0xEDB88320, init and final xor all
 * ones), chained like zlib's crc32(): pass the previous result, 0 to start.
 *
 * Three implementations, one answer (tests/unit/wire/test_icrc_vpclmul.c
 * checks every length 0..9000 at every alignment 0..63):
 *  - droce_crc32_vpclmul512: our own folding with VPCLMULQDQ on 512-bit
 *    AVX-512 registers, for CPUs that have them;
 *  - droce_crc32_vpclmul: the same folding on 256-bit AVX2 registers
 *    (stack/wire/crc32_vpclmul.c), for CPUs with AVX2 + VPCLMULQDQ only;
 *  - droce_crc32_isal: ISA-L's crc32_gzip_refl, everywhere else.
 * droce_crc32() picks one at run time from cpuid (via the compiler's
 * __builtin_cpu_supports, which runs cpuid and xgetbv once at start-up), so
 * the rest of the build stays generic x86-64.
 */
#ifndef DROCE_WIRE_CRC32_H
#define DROCE_WIRE_CRC32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint32_t droce_crc32_fn(uint32_t crc, const void *data, size_t len);

/** ISA-L's CRC (the fallback). */
uint32_t droce_crc32_isal(uint32_t crc, const void *data, size_t len);

/**
 * VPCLMULQDQ folding. Only call it when droce_crc32_have_vpclmul() is true
 * (it executes AVX2 and VPCLMULQDQ instructions).
 */
uint32_t droce_crc32_vpclmul(uint32_t crc, const void *data, size_t len);

/**
 * The same folding on 512-bit registers (AVX-512F/VL/BW + VPCLMULQDQ); only
 * call it when droce_crc32_have_vpclmul512() is true. Below 512 bytes it
 * runs droce_crc32_vpclmul.
 */
uint32_t droce_crc32_vpclmul512(uint32_t crc, const void *data, size_t len);

/** Does this CPU (and OS: AVX-512 state enabled) run droce_crc32_vpclmul512? */
bool droce_crc32_have_vpclmul512(void);

/**
 * Fused CRC-and-copy: copy @p len bytes from @p src to @p dst (which must
 * not overlap) and return the CRC of them chained on @p crc, reading @p src
 * once (each 32-byte load feeds both the store and the fold). Only call it
 * when droce_crc32_have_vpclmul() is true; droce_crc32_copy() dispatches.
 */
uint32_t droce_crc32_copy_vpclmul(uint32_t crc, void *dst, const void *src, size_t len);

/** Lengths droce_crc32_or_vpclmul() folds in registers (below: a masked copy first). */
#define DROCE_CRC32_OR_MAX 256u

/**
 * The CRC of @p len bytes at @p data, chained on @p crc, as if their first
 * 64 bytes had been OR-ed with @p mask first: the ICRC of a frame read in
 * place, its variant fields set to ones in registers (wire/icrc_fast.c).
 * @p mask is 80 bytes: the 64 that apply, then 16 zero bytes (the tail's
 * overlapping load reads up to there). 16 <= len < DROCE_CRC32_OR_MAX
 * stays in registers; other lengths are right too, through a masked copy.
 * Only call it when droce_crc32_have_vpclmul() is true.
 */
uint32_t droce_crc32_or_vpclmul(uint32_t crc, const void *data, size_t len, const uint8_t *mask);

/** Does this CPU (and OS: AVX state enabled) run droce_crc32_vpclmul? */
bool droce_crc32_have_vpclmul(void);

/**
 * The implementation a context uses: vpclmul512 when the CPU has AVX-512
 * VPCLMULQDQ, else vpclmul when it has AVX2 + VPCLMULQDQ, else ISA-L. The
 * environment may ask for less: DROCE_CRC=isal or DROCE_CRC=vpclmul (for
 * side-by-side figures and for testing each path on a CPU that has all).
 */
droce_crc32_fn *droce_crc32_select(void);

/** "vpclmul512", "vpclmul" or "isal": the name of what droce_crc32_select() returns. */
const char *droce_crc32_name(droce_crc32_fn *fn);

/** The dispatched CRC: vpclmul where the CPU has it, ISA-L elsewhere. */
static inline uint32_t droce_crc32(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2")) {
		if (__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
			return droce_crc32_vpclmul512(crc, data, len);
		return droce_crc32_vpclmul(crc, data, len);
	}
#endif
	return droce_crc32_isal(crc, data, len);
}

/** The fused CRC-and-copy where the CPU has VPCLMULQDQ, else memcpy + ISA-L. */
uint32_t droce_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);

/*
 * Folding constants (what stack/wire/crc32_consts.h holds, and how the
 * generator bench/icrc/crc32_gen.c and the unit test compute them).
 */

/** x^n mod P(x), P the CRC-32 polynomial, in normal bit order (bit d = x^d). */
uint32_t droce_crc32_xpow_mod(unsigned n);

/** floor(x^64 / P(x)), 33 bits, normal bit order: Barrett's mu. */
uint64_t droce_crc32_barrett_mu(void);

/** Reverse the low @p width bits of @p v. */
uint64_t droce_crc32_reflect(uint64_t v, unsigned width);

#endif
