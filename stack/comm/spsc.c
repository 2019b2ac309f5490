/* SPDX-License-Identifier: BSD-3-Clause */
#include "comm/spsc.h"

#include <errno.h>

int droce_spsc_init(struct droce_spsc *r, void *mem, uint32_t slots, uint32_t slot_size)
{
	if (!r || !mem || slots < 2 || (slots & (slots - 1)) || slot_size == 0)
		return -EINVAL;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->tail_cache = 0;
	r->head_cache = 0;
	r->mask = slots - 1;
	r->slot_size = slot_size;
	r->slots = mem;
	return 0;
}
