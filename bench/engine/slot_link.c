/* SPDX-License-Identifier: BSD-3-Clause */
#include "slot_link.h"

#include <errno.h>
#include <string.h>

static int ml_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	(void)now;
	struct end *e = priv;
	struct dir *d = &e->l->d[e->side];
	if (d->count == SLOTS)
		return -ENOBUFS;
	unsigned s = (d->head + d->count) % SLOTS;
	d->len[s] = bench_frame_copy(d->buf[s], f);
	d->count++;
	return 0;
}

static unsigned ml_rx(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	(void)now;
	struct end *e = priv;
	struct dir *d = &e->l->d[1 - e->side];
	unsigned k;
	for (k = 0; k < n && k < d->count; k++) {
		unsigned s = (d->head + k) % SLOTS;
		f[k].data = d->buf[s];
		f[k].len = d->len[s];
		f[k].handle = NULL;
	}
	return k;
}

static void ml_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	(void)f;
	struct end *e = priv;
	struct dir *d = &e->l->d[1 - e->side];
	d->head = (d->head + n) % SLOTS;
	d->count -= n;
}

const struct droce_link_ops slot_link_ops = {.tx = ml_tx, .rx_burst = ml_rx, .rx_release = ml_release};
