/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/crc32.h"

#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>

uint32_t droce_crc32_isal(uint32_t crc, const void *data, size_t len)
{
	/* crc32_gzip_refl chains like zlib's crc32(): pass the previous result. */
	return crc32_gzip_refl(crc, (const unsigned char *)data, len);
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

droce_crc32_fn *droce_crc32_select(void)
{
	const char *e = getenv("DROCE_CRC");
	if (e && strcmp(e, "isal") == 0)
		return droce_crc32_isal;
	return droce_crc32_have_vpclmul() ? droce_crc32_vpclmul : droce_crc32_isal;
}

const char *droce_crc32_name(droce_crc32_fn *fn)
{
	return fn == droce_crc32_vpclmul ? "vpclmul" : "isal";
}
