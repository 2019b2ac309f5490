/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE placement order (stack/transport/place.h): every byte below a
 * given offset is stored before any byte at or above it, as a NIC's DMA
 * writes land, so a program that polls a flag a peer writes last (NCCL's
 * FIFO slots: the 8-byte idx at offset 40 of each 64-byte slot, up to 8
 * slots in one WRITE) never sees the flag before the rest.
 *
 * How the order is seen: the destination ends at a PROT_NONE page, k bytes
 * before the end of the copy; the copy faults on its first store past the
 * page boundary, and whatever it stored until then stays. In order, that
 * is exactly the k bytes below the boundary. glibc's memcpy fails this (at
 * 512 bytes it stores its first 32 bytes last).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "transport/place.h"

static sigjmp_buf jb;

static void on_fault(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* Copy @p n bytes to @p dst; @return 1 when the copy faulted. */
static struct {
	uint8_t *dst;
	const uint8_t *src;
	size_t n;
} job;

static int __attribute__((noinline)) copy_faults(void)
{
	if (sigsetjmp(jb, 1))
		return 1;
	droce_place(job.dst, job.src, job.n);
	return 0;
}

static void test_place_copies(void **state)
{
	(void)state;
	uint8_t src[4200], dst[4300];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131u + 7u);
	for (size_t off = 0; off < 32; off++)
		for (size_t n = 0; n < 4100; n += n < 130 ? 1 : 61) {
			memset(dst, 0x5a, sizeof(dst));
			droce_place(dst + off, src + (n % 13), n);
			assert_memory_equal(dst + off, src + (n % 13), n);
			for (size_t i = 0; i < off; i++)
				assert_int_equal(dst[i], 0x5a);
			for (size_t i = off + n; i < sizeof(dst); i++)
				assert_int_equal(dst[i], 0x5a);
		}
}

static void test_place_in_ascending_order(void **state)
{
	(void)state;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + pg, pg, PROT_NONE), 0);
	static uint8_t src[4096];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7u + 1u);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	unsigned cases = 0, faults = 0;
	/* NCCL's FIFO writes: 1..8 slots of 64 bytes, and more; the fault at
	 * every 8-byte offset (a flag's place) below the end. */
	for (size_t n = 16; n <= 1024; n += 8)
		for (size_t k = 8; k < n; k += 8) {
			uint8_t *dst = m + pg - k;
			memset(m, 0, pg);
			job.dst = dst;
			job.src = src;
			job.n = n;
			faults += (unsigned)copy_faults();
			size_t j = 0;
			while (j < k && dst[j] == src[j])
				j++;
			if (j != k)
				fail_msg("%zu-byte copy, fault at %zu: only %zu bytes below it stored", n, k, j);
			cases++;
		}
	assert_int_equal(sigaction(SIGSEGV, &old, NULL), 0);
	assert_int_equal(faults, cases);
	munmap(m, 2 * pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_place_copies),
		cmocka_unit_test(test_place_in_ascending_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
