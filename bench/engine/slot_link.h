/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The benchmarks' in-memory link (engine_bench.c, manyqp_bench.c): two
 * directions of SLOTS frame slots; tx copies header, payload segments and
 * trailer into the next slot, as a NIC would DMA it; rx hands the peer's
 * slots out in order. One thread, no locking, no DPDK.
 */
#ifndef DROCE_BENCH_SLOT_LINK_H
#define DROCE_BENCH_SLOT_LINK_H

#include <stdint.h>
#include <string.h>

#include <droce/link.h>

#define SLOTS 1024
#define SLOT_BYTES 4400

struct dir {
	uint8_t (*buf)[SLOT_BYTES]; /* SLOTS of them, the caller allocates */
	uint32_t len[SLOTS];
	unsigned head, count;
};

struct link {
	struct dir d[2];
};

/** One side of a link: the `priv` of slot_link_ops. */
struct end {
	struct link *l;
	int side;
};

extern const struct droce_link_ops slot_link_ops;

/** Copy @p f (headers, payload segments, trailer) to @p b, as a NIC's DMA
 * would gather it (both benchmark links). @return the frame's length. */
static inline uint32_t bench_frame_copy(uint8_t *b, const struct droce_tx_frame *f)
{
	uint32_t o = f->hdr_len;
	memcpy(b, f->hdr, f->hdr_len);
	for (unsigned i = 0; i < f->nseg; i++) {
		memcpy(b + o, f->seg[i].addr, f->seg[i].len);
		o += f->seg[i].len;
	}
	memcpy(b + o, f->trailer, f->trailer_len);
	return o + f->trailer_len;
}

#endif
