/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/crc32.h"

#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx"))) static inline void clear_upper(void)
{
	_mm256_zeroupper();
}
#endif

uint32_t droce_crc32_isal(uint32_t crc, const void *data, size_t len)
{
	/* crc32_gzip_refl chains like zlib's crc32(): pass the previous result. */
	uint32_t r = crc32_gzip_refl(crc, (const unsigned char *)data, len);
#if defined(__x86_64__)
	/* ISA-L's AVX-512 path (crc32_gzip_refl_by16_10, what it dispatches to
	 * on a CPU with AVX-512 VPCLMULQDQ) returns with the upper halves of
	 * the vector registers dirty, and ISA-L leaves VZEROUPPER to the caller
	 * (intel/isa-l issue #24). Every legacy-SSE instruction after it then
	 * pays a false dependency: on this Xeon a 48 + 300 byte ICRC went from
	 * ~50 to ~270 ns. VZEROUPPER costs about a cycle. */
	if (__builtin_cpu_supports("avx"))
		clear_upper();
#endif
	return r;
}

bool droce_crc32_have_vpclmul(void)
{
#if defined(__x86_64__)
	/* libgcc's cpuid probe also checks XCR0 (OS saves the AVX state). */
	return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2") &&
	       __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#else
	return false;
#endif
}

bool droce_crc32_have_vpclmul512(void)
{
#if defined(__x86_64__)
	return droce_crc32_have_vpclmul() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#else
	return false;
#endif
}

droce_crc32_fn *droce_crc32_select(void)
{
	const char *e = getenv("DROCE_CRC");
	if (e && strcmp(e, "isal") == 0)
		return droce_crc32_isal;
	if (droce_crc32_have_vpclmul512() && !(e && strcmp(e, "vpclmul") == 0))
		return droce_crc32_vpclmul512;
	return droce_crc32_have_vpclmul() ? droce_crc32_vpclmul : droce_crc32_isal;
}

uint32_t droce_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	if (droce_crc32_have_vpclmul())
		return droce_crc32_copy_vpclmul(crc, dst, src, len);
	memcpy(dst, src, len);
	return droce_crc32_isal(crc, src, len);
}

const char *droce_crc32_name(droce_crc32_fn *fn)
{
	return fn == droce_crc32_vpclmul512 ? "vpclmul512"
	       : fn == droce_crc32_vpclmul ? "vpclmul" : "isal";
}
