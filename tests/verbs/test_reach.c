/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_reg_mr's reachability check (stack/verbs/reach.c): memory a kernel
 * driver could not pin (unmapped, PROT_NONE as a CUDA device-memory
 * reservation, read-only for a writable MR) is EFAULT; mapped memory of
 * any layout (several mappings, a page, a byte) is fine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "verbs/dv.h"

static void test_reachable(void **state)
{
	(void)state;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	/* Four pages: rw, rw (a separate mapping: different flags), ro, none. */
	uint8_t *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(madvise(m + pg, pg, MADV_DONTFORK), 0); /* splits the mapping */
	assert_int_equal(mprotect(m + 2 * pg, pg, PROT_READ), 0);
	assert_int_equal(mprotect(m + 3 * pg, pg, PROT_NONE), 0);

	assert_int_equal(dv_mem_reachable(m, 2 * pg, true), 0);
	assert_int_equal(dv_mem_reachable(m + pg - 1, 2, true), 0);
	assert_int_equal(dv_mem_reachable(m, 3 * pg, false), 0);
	assert_int_equal(dv_mem_reachable(m, 3 * pg, true), EFAULT);
	assert_int_equal(dv_mem_reachable(m + 2 * pg, 1, true), EFAULT);
	assert_int_equal(dv_mem_reachable(m + 2 * pg, pg, false), 0);
	assert_int_equal(dv_mem_reachable(m + 3 * pg, 1, false), EFAULT);
	assert_int_equal(dv_mem_reachable(m + 3 * pg - 1, 2, false), EFAULT);
	assert_int_equal(dv_mem_reachable(m, 4 * pg, false), EFAULT);
	/* Nothing to reach: fine, as rdma-core's zero-length MRs. */
	assert_int_equal(dv_mem_reachable(m + 3 * pg, 0, true), 0);
	assert_int_equal(dv_mem_reachable(NULL, 0, true), 0);
	/* Unmapped, and a range that wraps the address space. */
	assert_int_equal(munmap(m + 3 * pg, pg), 0);
	assert_int_equal(dv_mem_reachable(m + 3 * pg, pg, false), EFAULT);
	assert_int_equal(dv_mem_reachable(m, 4 * pg, false), EFAULT);
	assert_int_equal(dv_mem_reachable((void *)(UINTPTR_MAX - 10), 100, false), EFAULT);
	assert_int_equal(dv_mem_reachable(NULL, pg, false), EFAULT);
	/* The heap, the stack, static data. */
	static uint8_t data[100000];
	uint8_t stack[256];
	uint8_t *heap = malloc(1 << 20);
	assert_non_null(heap);
	assert_int_equal(dv_mem_reachable(data, sizeof(data), true), 0);
	assert_int_equal(dv_mem_reachable(stack, sizeof(stack), true), 0);
	assert_int_equal(dv_mem_reachable(heap, 1 << 20, true), 0);
	/* Code: readable, not writable. */
	assert_int_equal(dv_mem_reachable((const void *)(uintptr_t)&dv_mem_reachable, 16, false), 0);
	assert_int_equal(dv_mem_reachable((const void *)(uintptr_t)&dv_mem_reachable, 16, true), EFAULT);
	free(heap);
	munmap(m, 3 * pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reachable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
