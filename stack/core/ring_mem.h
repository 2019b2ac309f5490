/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory for the rings the poll loop writes (send and receive queues,
 * completion queues, shared receive queues): zeroed and every page
 * touched at create. calloc's pages are only mapped when first written,
 * so without this the first pass of posts and completions through a ring
 * page-faults on the data path: at 10 k QPs with 128 send slots each and
 * a 1.28 M-entry CQ, 400 MB of zeroed pages faulted in over the first
 * seconds of traffic, 12% of the poll core's samples in the kernel's
 * clear_page. A NIC's queues are pinned at create too.
 */
#ifndef DROCE_CORE_RING_MEM_H
#define DROCE_CORE_RING_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/** @p n entries of @p size bytes, zeroed and resident; NULL on failure
 * (never NULL for n * size == 0: a ring may have no bytes, as an inline
 * area of 0). */
static inline void *droce_ring_calloc(size_t n, size_t size)
{
	size_t len = n * size;
	if (!len)
		len = 1;
	uint8_t *p = calloc(1, len);
	/* A write per page (calloc may hand out untouched zero pages, and
	 * the compiler may turn malloc + memset into calloc). */
	for (size_t i = 0; p && i < len; i += 4096)
		((volatile uint8_t *)p)[i] = 0;
	if (p) /* the last page (p need not be page-aligned) */
		((volatile uint8_t *)p)[len - 1] = 0;
	return p;
}

#endif
