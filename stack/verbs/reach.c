/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether memory handed to ibv_reg_mr can be reached (docs/nccl.md).
 * A kernel driver pins the pages of an MR (ib_umem_get) and fails with
 * EFAULT when a page is not mapped, or is not writable for an MR that
 * allows writes (LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC). droce pins
 * nothing and would fault on such memory in the middle of a transfer, so it
 * makes the same check at registration from /proc/self/maps: every byte of
 * the range in mappings that allow reading (and writing when asked). CUDA
 * device pointers are addresses in ranges the CUDA driver reserves
 * PROT_NONE, so NCCL with GPUDirect on gets EFAULT, as from a NIC without
 * peer-memory support, and uses host memory instead.
 * What it cannot see: memory unmapped after registration (a kernel-pinned
 * MR keeps its pages; droce's does not: the program must keep it mapped).
 */
#include "verbs/dv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int dv_mem_reachable(const void *addr, size_t len, bool write)
{
	if (len == 0)
		return 0;
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;
	if (hi < lo)
		return EFAULT;
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0; /* no /proc: nothing to check against (as before) */
	char line[512];
	uintptr_t at = lo;
	/* The lines are sorted by address and do not overlap. */
	while (at < hi && fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		char perm[5];
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &s, &e, perm) != 3)
			continue;
		if (!strchr(line, '\n')) {
			/* a path longer than the buffer: skip the rest of it */
			int ch;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
		}
		if (e <= at)
			continue;
		if (s > at)
			break; /* a hole */
		if (perm[0] != 'r' || (write && perm[1] != 'w'))
			break;
		at = e;
	}
	fclose(f);
	return at >= hi ? 0 : EFAULT;
}
