/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The examples' link: two contexts in one process joined by a frame FIFO
 * each way, the same struct droce_link a DPDK port provides (the library's
 * own in-memory link is internal; an application writes four callbacks).
 */
#ifndef EXAMPLES_FIFO_LINK_H
#define EXAMPLES_FIFO_LINK_H

#include <string.h>

#include <droce/droce.h>

#define FIFO_Q 256
#define FIFO_FRAME_MAX 4352
struct fifo {
	uint8_t frame[FIFO_Q][FIFO_FRAME_MAX];
	uint32_t len[FIFO_Q];
	unsigned head, tail;
};
/** One end: what it sends goes to @c tx, what it receives comes from @c rx. */
struct fifo_end {
	struct fifo *tx, *rx;
};

static int fifo_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	struct fifo *q = ((struct fifo_end *)priv)->tx;
	(void)now; /* a link that paces or timestamps would use it */
	if (q->tail - q->head == FIFO_Q)
		return -105; /* -ENOBUFS: the context keeps the frame and retries */
	uint8_t *d = q->frame[q->tail % FIFO_Q];
	uint32_t n = f->hdr_len;
	memcpy(d, f->hdr, f->hdr_len);
	for (unsigned i = 0; i < f->nseg; i++) { /* payload, read from registered memory */
		memcpy(d + n, f->seg[i].addr, f->seg[i].len);
		n += f->seg[i].len;
	}
	memcpy(d + n, f->trailer, f->trailer_len);
	q->len[q->tail++ % FIFO_Q] = n + f->trailer_len;
	return 0;
}

static unsigned fifo_rx(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct fifo *q = ((struct fifo_end *)priv)->rx;
	unsigned k = 0;
	(void)now;
	for (; k < n && q->head + k != q->tail; k++) {
		f[k].data = q->frame[(q->head + k) % FIFO_Q];
		f[k].len = q->len[(q->head + k) % FIFO_Q];
	}
	return k;
}

static void fifo_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	(void)f; /* the frames are the n oldest, in order */
	((struct fifo_end *)priv)->rx->head += n;
}

static const struct droce_link_ops fifo_ops = {
	.tx = fifo_tx, .rx_burst = fifo_rx, .rx_release = fifo_release};

#endif
