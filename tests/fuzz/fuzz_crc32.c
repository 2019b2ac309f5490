/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: droce's VPCLMULQDQ CRC-32s (stack/wire/crc32_vpclmul.c, 256 and 512 bits)
 * must equal ISA-L's on any bytes, at any offset, from any chaining value,
 * and over any cut into two calls; the fused CRC-and-copy must give the
 * same CRC and exactly the bytes; the masked in-place CRC of the ICRC
 * (droce_crc32_or_vpclmul) must equal ISA-L over the masked copy. The first 5 input bytes choose the seed
 * (4) and the cut (1); the rest is the data, copied to a buffer of exactly
 * its size so AddressSanitizer sees any read past either end.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/crc32.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Without VPCLMULQDQ there is nothing to compare: say so and exit 77
 * (tests/fuzz/run and scripts/test show it as a skip) instead of passing
 * a run that tested nothing. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!droce_crc32_have_vpclmul()) {
		printf("SKIP: fuzz_crc32: this CPU has no VPCLMULQDQ, the code under test cannot run\n");
		fflush(stdout);
		exit(77);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!droce_crc32_have_vpclmul() || size < 5)
		return 0;
	uint32_t seed = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
			(uint32_t)data[3] << 24;
	size_t n = size - 5;
	size_t cut = n ? data[4] % (n + 1) : 0;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 5, n);
	uint32_t want = droce_crc32_isal(seed, buf, n);
	uint32_t got = droce_crc32_vpclmul(seed, buf, n);
	uint32_t two = droce_crc32_vpclmul(droce_crc32_vpclmul(seed, buf, cut), buf + cut, n - cut);
	if (droce_crc32_have_vpclmul512() && droce_crc32_vpclmul512(seed, buf, n) != want) {
		fprintf(stderr, "fuzz_crc32: vpclmul512, %zu bytes, differs\n", n);
		abort();
	}
	uint8_t *dst = malloc(n ? n : 1);
	if (!dst) {
		free(buf);
		return 0;
	}
	uint32_t copied = droce_crc32_copy_vpclmul(seed, dst, buf, n);
	if (copied != want || memcmp(dst, buf, n) != 0) {
		fprintf(stderr, "fuzz_crc32: copy of %zu bytes: crc %08x want %08x\n", n, copied, want);
		abort();
	}
	free(dst);
	/* The ICRC's in-place masked CRC: a mask made of the data's own bytes
	 * (rotated), OR-ed into the first 64, against ISA-L over that copy. */
	uint8_t mask[80] = { 0 }, *m = malloc(n ? n : 1);
	if (!m) {
		free(buf);
		return 0;
	}
	for (size_t i = 0; i < 64 && n; i++)
		mask[i] = buf[(i + 7) % n] & buf[(i + 3) % n];
	for (size_t i = 0; i < n; i++)
		m[i] = (uint8_t)(buf[i] | (i < 64 ? mask[i] : 0));
	uint32_t ored = droce_crc32_or_vpclmul(seed, buf, n, mask), owant = droce_crc32_isal(seed, m, n);
	free(m);
	if (ored != owant) {
		fprintf(stderr, "fuzz_crc32: or-mask, %zu bytes: crc %08x want %08x\n", n, ored, owant);
		abort();
	}
	free(buf);
	if (got != want || two != want) {
		fprintf(stderr, "fuzz_crc32: len %zu seed %08x cut %zu: vpclmul %08x / %08x, isal %08x\n", n,
			seed, cut, got, two, want);
		abort();
	}
	return 0;
}
