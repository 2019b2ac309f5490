/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The VPCLMULQDQ CRCs (stack/wire/crc32_vpclmul.c, 256- and 512-bit) against ISA-L's, which
 * droce's ICRC used before it: the same value for every length 0..9000 at
 * every alignment 0..63 and random chaining values; reads stay inside the
 * buffer (guard pages on both sides); chaining over cuts equals one shot;
 * the committed folding constants are what the polynomial gives; the
 * fused CRC-and-copy equals memcpy + ISA-L and writes nothing else; and the
 * dispatcher falls back to ISA-L when asked (DROCE_CRC=isal); and both
 * return with the vector registers' upper halves clean (XINUSE), so the
 * legacy-SSE code after them pays no false dependency. Skips the
 * vpclmul cases, saying so, on a CPU without AVX2 + VPCLMULQDQ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "wire/crc32.h"
#include "wire/crc32_consts.h"
#include "wire_test_util.h"

#define MAX_LEN 9000u
#define MAX_ALIGN 64u

static bool have(void)
{
	if (droce_crc32_have_vpclmul())
		return true;
	printf("SKIP: this CPU has no AVX2 + VPCLMULQDQ; droce_crc32_vpclmul not run\n");
	return false;
}

/* The folding CRCs this CPU runs: the 256-bit one, and the 512-bit one when
 * it has AVX-512 VPCLMULQDQ (said when not). */
static unsigned impls(droce_crc32_fn **fn, const char **name)
{
	unsigned n = 0;
	fn[n] = droce_crc32_vpclmul;
	name[n++] = "vpclmul";
	if (droce_crc32_have_vpclmul512()) {
		fn[n] = droce_crc32_vpclmul512;
		name[n++] = "vpclmul512";
	} else {
		printf("note: no AVX-512 VPCLMULQDQ here; droce_crc32_vpclmul512 not run\n");
	}
	return n;
}

static void test_every_length_every_alignment(void **state)
{
	(void)state;
	if (!have()) {
		skip();
		return;
	}
	struct wt_rng r = { wt_seed("vpclmul_lengths", 0x5EED0101) };
	uint8_t *buf = malloc(MAX_LEN + MAX_ALIGN);
	assert_non_null(buf);
	wt_rng_fill(&r, buf, MAX_LEN + MAX_ALIGN);
	unsigned long bad = 0;
	droce_crc32_fn *fn[2];
	const char *name[2];
	unsigned nf = impls(fn, name);
	for (unsigned a = 0; a < MAX_ALIGN; a++) {
		for (size_t n = 0; n <= MAX_LEN; n++) {
			/* 0 (a fresh CRC), ~0, and random chaining values. */
			uint32_t seed = n % 3 == 0 ? 0 : n % 3 == 1 ? 0xFFFFFFFFu : (uint32_t)wt_rng_next(&r);
			uint32_t want = droce_crc32_isal(seed, buf + a, n);
			for (unsigned k = 0; k < nf; k++) {
				uint32_t got = fn[k](seed, buf + a, n);
				if (got != want && bad++ < 5)
					print_error("align %u len %zu seed %08x: %s %08x isal %08x\n", a, n,
						    seed, name[k], got, want);
			}
		}
	}
	free(buf);
	assert_int_equal(bad, 0);
}

/* Buffers that end right at a PROT_NONE page and start right after one: a
 * read outside [p, p + n) faults. */
static void test_reads_stay_inside(void **state)
{
	(void)state;
	if (!have()) {
		skip();
		return;
	}
	long pg = sysconf(_SC_PAGESIZE);
	size_t span = 4 * (size_t)pg;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	uint8_t *lo = m + pg, *hi = m + 3 * pg; /* data pages [lo, hi) */
	assert_int_equal(mprotect(m, (size_t)pg, PROT_NONE), 0);
	assert_int_equal(mprotect(hi, (size_t)pg, PROT_NONE), 0);
	struct wt_rng r = { wt_seed("vpclmul_guard", 0x5EED0102) };
	wt_rng_fill(&r, lo, (size_t)(hi - lo));
	droce_crc32_fn *fn[2];
	const char *name[2];
	unsigned nf = impls(fn, name);
	for (size_t n = 0; n <= (size_t)(hi - lo); n += n < 600 ? 1 : 37) {
		for (unsigned k = 0; k < nf; k++) {
			assert_int_equal(fn[k](0, hi - n, n), droce_crc32_isal(0, hi - n, n));
			assert_int_equal(fn[k](0, lo, n), droce_crc32_isal(0, lo, n));
		}
	}
	munmap(m, span);
}

/* A CRC chained over any cut of a buffer equals the CRC of the whole, and
 * both equal zlib's (an independent implementation). */
static void test_chaining(void **state)
{
	(void)state;
	if (!have()) {
		skip();
		return;
	}
	struct wt_rng r = { wt_seed("vpclmul_chain", 0x5EED0103) };
	static uint8_t buf[9000];
	wt_rng_fill(&r, buf, sizeof(buf));
	droce_crc32_fn *fn[2];
	const char *name[2];
	unsigned nf = impls(fn, name);
	for (int i = 0; i < 2000; i++) {
		size_t n = wt_rng_below(&r, sizeof(buf) + 1);
		size_t cut = wt_rng_below(&r, (uint32_t)n + 1);
		for (unsigned k = 0; k < nf; k++) {
			uint32_t whole = fn[k](0, buf, n);
			uint32_t two = fn[k](fn[k](0, buf, cut), buf + cut, n - cut);
			assert_int_equal(whole, two);
			assert_int_equal(whole, (uint32_t)crc32(0L, buf, (uInt)n));
		}
	}
	/* The CRC-32 check value (the catalogue's "check" for CRC-32/ISO-HDLC),
	 * padded to reach the folding path: zero bytes first change nothing only
	 * for init 0, so check the 9-byte string directly too. */
	assert_int_equal(droce_crc32_vpclmul(0, "123456789", 9), 0xCBF43926u);
	const char *s = "123456789123456789123456789123456789"; /* 36 bytes */
	assert_int_equal(droce_crc32_vpclmul(0, s, 36), (uint32_t)crc32(0L, (const Bytef *)s, 36));
}

/* The committed constants are what the polynomial gives (so the generator
 * bench/icrc/crc32_gen.c and stack/wire/crc32_consts.h cannot drift). */
static uint64_t fold(unsigned e)
{
	return droce_crc32_reflect(droce_crc32_xpow_mod(e), 32) << 32;
}

static uint64_t red(unsigned e)
{
	return droce_crc32_reflect(droce_crc32_xpow_mod(e), 32) << 1;
}

static void test_constants(void **state)
{
	(void)state;
	assert_int_equal(droce_crc32_barrett_mu(), 0x104D101DFull); /* floor(x^64 / P) */
	assert_int_equal(DROCE_CRC32_FOLD2048_HI, fold(2048 + 63));
	assert_int_equal(DROCE_CRC32_FOLD2048_LO, fold(2048 - 1));
	assert_int_equal(DROCE_CRC32_FOLD1536_HI, fold(1536 + 63));
	assert_int_equal(DROCE_CRC32_FOLD1536_LO, fold(1536 - 1));
	assert_int_equal(DROCE_CRC32_FOLD1024_HI, fold(1024 + 63));
	assert_int_equal(DROCE_CRC32_FOLD1024_LO, fold(1024 - 1));
	assert_int_equal(DROCE_CRC32_FOLD768_HI, fold(768 + 63));
	assert_int_equal(DROCE_CRC32_FOLD768_LO, fold(768 - 1));
	assert_int_equal(DROCE_CRC32_FOLD512_HI, fold(512 + 63));
	assert_int_equal(DROCE_CRC32_FOLD512_LO, fold(512 - 1));
	assert_int_equal(DROCE_CRC32_FOLD256_HI, fold(256 + 63));
	assert_int_equal(DROCE_CRC32_FOLD256_LO, fold(256 - 1));
	assert_int_equal(DROCE_CRC32_FOLD128_HI, fold(128 + 63));
	assert_int_equal(DROCE_CRC32_FOLD128_LO, fold(128 - 1));
	static const uint64_t ks[DROCE_CRC32_SHORT_CHUNKS][2] = DROCE_CRC32_SHORT_CONSTS;
	for (unsigned d = 1; d < DROCE_CRC32_SHORT_CHUNKS; d++) {
		assert_int_equal(ks[d][0], fold(128 * d + 63));
		assert_int_equal(ks[d][1], fold(128 * d - 1));
	}
	assert_int_equal(DROCE_CRC32_RED96, red(96));
	assert_int_equal(DROCE_CRC32_RED64, red(64));
	assert_int_equal(DROCE_CRC32_MU, droce_crc32_reflect(droce_crc32_barrett_mu(), 33));
	assert_int_equal(DROCE_CRC32_POLY, 0x1DB710641ull);
	/* x^32 mod P is P's low terms; x^31 is itself. */
	assert_int_equal(droce_crc32_xpow_mod(32), 0x04C11DB7u);
	assert_int_equal(droce_crc32_xpow_mod(31), 0x80000000u);
}

static void test_dispatch(void **state)
{
	(void)state;
	unsetenv("DROCE_CRC");
	droce_crc32_fn *best = droce_crc32_select();
	droce_crc32_fn *want = droce_crc32_have_vpclmul512() ? droce_crc32_vpclmul512
			       : droce_crc32_have_vpclmul() ? droce_crc32_vpclmul : droce_crc32_isal;
	assert_ptr_equal(best, want);
	assert_string_equal(droce_crc32_name(best), want == droce_crc32_vpclmul512 ? "vpclmul512"
						    : want == droce_crc32_vpclmul ? "vpclmul" : "isal");
	setenv("DROCE_CRC", "isal", 1);
	assert_ptr_equal(droce_crc32_select(), droce_crc32_isal);
	setenv("DROCE_CRC", "vpclmul", 1);
	assert_ptr_equal(droce_crc32_select(), droce_crc32_have_vpclmul() ? droce_crc32_vpclmul
									   : droce_crc32_isal);
	unsetenv("DROCE_CRC");
	uint8_t b[300];
	memset(b, 0xA5, sizeof(b));
	assert_int_equal(droce_crc32(0, b, sizeof(b)), droce_crc32_isal(0, b, sizeof(b)));
}

/* The fused CRC-and-copy: the CRC of ISA-L, the bytes of memcpy, nothing
 * written outside [dst, dst + len), every length 0..9000, every source
 * alignment 0..63 against a destination alignment that walks differently. */
static void test_copy_every_length(void **state)
{
	(void)state;
	if (!have()) {
		skip();
		return;
	}
	struct wt_rng r = { wt_seed("vpclmul_copy", 0x5EED0104) };
	size_t cap = MAX_LEN + 2 * MAX_ALIGN + 64;
	uint8_t *src = malloc(cap), *dst = malloc(cap);
	assert_non_null(src);
	assert_non_null(dst);
	wt_rng_fill(&r, src, cap);
	unsigned long bad = 0;
	for (unsigned a = 0; a < MAX_ALIGN; a++) {
		unsigned da = (a * 37u + 5u) % MAX_ALIGN;
		for (size_t n = 0; n <= MAX_LEN; n += (a & 7) ? 97 : 1) {
			memset(dst, 0xEE, cap);
			uint32_t seed = (uint32_t)wt_rng_next(&r);
			uint32_t got = droce_crc32_copy_vpclmul(seed, dst + 32 + da, src + a, n);
			if (got != droce_crc32_isal(seed, src + a, n) ||
			    memcmp(dst + 32 + da, src + a, n) != 0) {
				if (bad++ < 5)
					print_error("copy: align %u/%u len %zu wrong\n", a, da, n);
				continue;
			}
			for (size_t i = 0; i < 32 + da; i++)
				bad += dst[i] != 0xEE;
			for (size_t i = 32 + da + n; i < cap; i++)
				bad += dst[i] != 0xEE;
		}
	}
	/* The dispatched entry point gives the same. */
	uint32_t want = droce_crc32_isal(7, src, 5000);
	assert_int_equal(droce_crc32_copy(7, dst, src, 5000), want);
	assert_memory_equal(dst, src, 5000);
	free(src);
	free(dst);
	assert_int_equal(bad, 0);
}

#if defined(__x86_64__)
/* XGETBV(1): which state components are in use (Intel SDM vol 1 13.6). */
static uint64_t xinuse(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}
#endif

/* droce_crc32_or_vpclmul (the ICRC's masked header read in place) equals
 * ISA-L over a copy with the mask OR-ed in, for every length 0..600 (the
 * register path below DROCE_CRC32_OR_MAX, the masked copy above), every
 * alignment 0..63, random masks and chaining values; it reads nothing past
 * the buffer's end (a PROT_NONE page right after it). */
static void test_or_mask(void **state)
{
	(void)state;
	if (!have()) {
		skip();
		return;
	}
	struct wt_rng r = { wt_seed("vpclmul_or", 0x5EED0105) };
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
	uint8_t *end = m + pg; /* data ends at the guard page */
	uint8_t mask[80], copy[700];
	unsigned long bad = 0;
	for (unsigned a = 0; a < MAX_ALIGN; a++) {
		for (size_t n = 0; n <= 600; n++) {
			uint8_t *p = end - n - a; /* alignment a, n bytes, then a bytes to the guard */
			wt_rng_fill(&r, p, n);
			wt_rng_fill(&r, mask, 64);
			if (n % 5 == 0)
				memset(mask, 0, 64); /* no mask: the plain CRC */
			memset(mask + 64, 0, 16);
			for (size_t i = 0; i < n; i++)
				copy[i] = (uint8_t)(p[i] | (i < 64 ? mask[i] : 0));
			uint32_t seed = n % 3 == 0 ? 0 : (uint32_t)wt_rng_next(&r);
			uint32_t want = droce_crc32_isal(seed, copy, n);
			uint32_t got = droce_crc32_or_vpclmul(seed, p, n, mask);
			if (got != want && bad++ < 5)
				print_error("align %u len %zu seed %08x: or %08x isal %08x\n", a, n, seed,
					    got, want);
			/* Right at the guard page too. */
			if (a == 0)
				continue;
			memmove(end - n, p, n);
			if (droce_crc32_or_vpclmul(seed, end - n, n, mask) != want && bad++ < 5)
				print_error("len %zu at the guard page: wrong\n", n);
		}
	}
	munmap(m, 2 * (size_t)pg);
	assert_int_equal(bad, 0);
}

/* Bit 2: upper halves of ymm0-15; bit 6: upper halves of zmm0-15 (the
 * registers legacy SSE code also writes; zmm16-31, bit 7, it cannot). */
#define DIRTY_UPPER 0x44u

static void test_leaves_upper_clean(void **state)
{
	(void)state;
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid_count(0xD, 1, &a, &b, &c, &d) || !(a & 4) || !__builtin_cpu_supports("avx")) {
		printf("SKIP: no XGETBV(1) or no AVX on this CPU\n");
		skip();
		return;
	}
	static uint8_t buf[4096];
	for (size_t n = 0; n <= sizeof(buf); n += n < 512 ? 1 : 509) {
		droce_crc32_isal(0, buf, n);
		assert_int_equal(xinuse() & DIRTY_UPPER, 0);
		if (droce_crc32_have_vpclmul()) {
			droce_crc32_vpclmul(0, buf, n);
			assert_int_equal(xinuse() & DIRTY_UPPER, 0);
		}
		if (droce_crc32_have_vpclmul512()) {
			droce_crc32_vpclmul512(0, buf, n);
			assert_int_equal(xinuse() & DIRTY_UPPER, 0);
		}
	}
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_every_length_every_alignment),
		cmocka_unit_test(test_reads_stay_inside),
		cmocka_unit_test(test_chaining),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_copy_every_length),
		cmocka_unit_test(test_or_mask),
		cmocka_unit_test(test_leaves_upper_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
