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
 * 512 bytes it stores its first 32 bytes last). The same is checked of the
 * responder itself, on the pair test bed: B's context runs in a child that
 * the fault ends, its target memory MAP_SHARED so the parent sees what the
 * child had stored.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pair.h"
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

static void child_fault(int sig)
{
	(void)sig;
	_exit(42);
}

/* An RDMA WRITE of @p len bytes whose target runs into a PROT_NONE page
 * @p k bytes in: every byte below k - @p slack must be in place when it
 * faults (the fused copy's stores are 32-byte vectors). */
static void responder_case(enum droce_mtu mtu, uint32_t len, size_t k, size_t slack)
{
	struct pair p;
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 0, 4, NULL};
	pair_init(&p, &po);
	struct conn c;
	struct conn_opts o;
	conn_opts_default(&o);
	o.mtu = mtu;
	pair_connect(&p, &c, &o);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, len, o.access, 0);
	fill_pattern(amr->addr, len, 7);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t boundary = (k + pg - 1) / pg * pg, size = boundary + len + pg;
	uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + boundary, size - boundary, PROT_NONE), 0);
	uint8_t *target = m + boundary - k;
	struct droce_mr *bmr = droce_reg_mr(p.ctx[SIDE_B], m, size, o.access);
	assert_non_null(bmr);
	assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, amr, 0, len,
				   (uint64_t)(uintptr_t)target, bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = child_fault;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, NULL);
		pair_run(&p, 1000000000ull);
		_exit(0); /* the WRITE went through without touching the page: wrong */
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 42)
		fail_msg("%u-byte WRITE (MTU %u), fault %zu bytes in: the child did not fault (status %#x)",
			 len, droce_mtu_bytes(mtu), k, (unsigned)st);
	const uint8_t *want = amr->addr;
	size_t j = 0;
	while (j < k && target[j] == want[j])
		j++;
	if (j + slack < k)
		fail_msg("%u-byte WRITE (MTU %u), fault %zu bytes in: only %zu bytes below it placed", len,
			 droce_mtu_bytes(mtu), k, j);
	assert_int_equal(droce_dereg_mr(bmr), 0);
	pair_fini(&p);
	munmap(m, size);
}

static void test_responder_places_in_order(void **state)
{
	(void)state;
	/* NCCL's FIFO writes: 8 slots in one WRITE ONLY, the fault at a slot's
	 * flag and at slot boundaries. */
	responder_case(DROCE_MTU_1024, 512, 40, 0);
	responder_case(DROCE_MTU_1024, 512, 64, 0);
	responder_case(DROCE_MTU_1024, 512, 448 + 40, 0);
	responder_case(DROCE_MTU_4096, 4096, 2048 + 64, 0);
	responder_case(DROCE_MTU_1024, 4096, 1000, 0); /* in the FIRST packet */
	/* MIDDLE/LAST packets placed while their ICRC is folded (rx_fused.c):
	 * in ascending order, 32 bytes per store. */
	responder_case(DROCE_MTU_1024, 4096, 1024 + 640, 32);
	responder_case(DROCE_MTU_1024, 4096, 3072 + 8, 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_place_copies),
		cmocka_unit_test(test_place_in_ascending_order),
		cmocka_unit_test(test_responder_places_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
