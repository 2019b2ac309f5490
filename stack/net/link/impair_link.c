/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/link/impair_link.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Records are the handles we give the context: each names the inner frame
 * (or a copy) behind one delivered frame. Held frames keep their record. */
#define N_REC (2u * DROCE_IMPAIR_MAX_HELD + 256u)
#define N_COPY 16u

struct rec {
	struct droce_rx_frame inner;  /* inner.handle == NULL: a copy */
	int copy;                     /* copy slot index, or -1 */
	struct rec *next_free;
};

struct droce_impair_link {
	struct droce_link inner;
	struct droce_impair *imp;
	struct rec rec[N_REC];
	struct rec *free_rec;
	uint8_t copy_used[N_COPY];
	uint8_t (*copy)[DROCE_IMPAIR_LINK_FRAME_MAX];
	uint64_t dup_skipped;
};

static struct rec *rec_get(struct droce_impair_link *il)
{
	struct rec *r = il->free_rec;
	if (r)
		il->free_rec = r->next_free;
	return r;
}

static void rec_put(struct droce_impair_link *il, struct rec *r)
{
	r->next_free = il->free_rec;
	il->free_rec = r;
}

/* Give the inner buffer (or the copy slot) back and recycle the record. */
static void rec_release(struct droce_impair_link *il, struct rec *r)
{
	if (r->copy >= 0)
		il->copy_used[r->copy] = 0;
	else if (il->inner.ops->rx_release)
		il->inner.ops->rx_release(il->inner.priv, &r->inner, 1);
	rec_put(il, r);
}

static int tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	struct droce_impair_link *il = priv;
	return il->inner.ops->tx(il->inner.priv, f, now);
}

static void tx_flush(void *priv, uint64_t now)
{
	struct droce_impair_link *il = priv;
	if (il->inner.ops->tx_flush)
		il->inner.ops->tx_flush(il->inner.priv, now);
}

static void deliver(struct droce_rx_frame *out, struct rec *r)
{
	out->data = r->inner.data;
	out->len = r->inner.len;
	out->handle = r;
}

/* A copy of @p r's bytes for a duplicate, or NULL. */
static struct rec *dup_of(struct droce_impair_link *il, const struct rec *r)
{
	if (r->inner.len > DROCE_IMPAIR_LINK_FRAME_MAX)
		return NULL;
	for (unsigned i = 0; i < N_COPY; i++) {
		if (il->copy_used[i])
			continue;
		struct rec *d = rec_get(il);
		if (!d)
			return NULL;
		il->copy_used[i] = 1;
		memcpy(il->copy[i], r->inner.data, r->inner.len);
		d->inner.data = il->copy[i];
		d->inner.len = r->inner.len;
		d->inner.handle = NULL;
		d->copy = (int)i;
		return d;
	}
	return NULL;
}

static unsigned rx_burst(void *priv, struct droce_rx_frame *out, unsigned n, uint64_t now)
{
	struct droce_impair_link *il = priv;
	struct droce_rx_frame in[64];
	unsigned k = 0;

	/* Worst case every frame is duplicated and held frames come due: ask
	 * the inner link for at most half, minus the held frames. */
	unsigned want = n / 2 ? n / 2 : 1;
	if (want > 64)
		want = 64;
	unsigned got = il->inner.ops->rx_burst(il->inner.priv, in, want, now);
	void *due[DROCE_IMPAIR_MAX_HELD];

	/* Idle input: held frames would wait forever for "later" frames, so
	 * deliver them now (still after everything that overtook them). */
	if (got == 0) {
		unsigned nd = droce_impair_flush(il->imp, due, n < DROCE_IMPAIR_MAX_HELD ? n : DROCE_IMPAIR_MAX_HELD);
		for (unsigned j = 0; j < nd; j++)
			deliver(&out[k++], due[j]);
		return k;
	}

	for (unsigned i = 0; i < got; i++) {
		struct rec *r = rec_get(il);
		if (!r) { /* cannot happen: N_REC covers held + a burst; be safe */
			if (il->inner.ops->rx_release)
				il->inner.ops->rx_release(il->inner.priv, &in[i], 1);
			continue;
		}
		r->inner = in[i];
		r->copy = -1;
		/* The shim corrupts in place: RX buffers are ours until released. */
		struct droce_impair_verdict v =
			droce_impair_decide(il->imp, (uint8_t *)(uintptr_t)in[i].data, in[i].len, r);
		switch (v.action) {
		case DROCE_IMPAIR_DROP:
			rec_release(il, r);
			break;
		case DROCE_IMPAIR_DUP: {
			deliver(&out[k++], r);
			struct rec *d = k < n ? dup_of(il, r) : NULL;
			if (d)
				deliver(&out[k++], d);
			else
				il->dup_skipped++;
			break;
		}
		case DROCE_IMPAIR_HOLD:
			break; /* the shim keeps r; it comes back from release() */
		default:
			deliver(&out[k++], r);
			break;
		}
		unsigned room = n - k < DROCE_IMPAIR_MAX_HELD ? n - k : DROCE_IMPAIR_MAX_HELD;
		unsigned nd = droce_impair_release(il->imp, due, room);
		for (unsigned j = 0; j < nd; j++)
			deliver(&out[k++], due[j]);
	}
	return k;
}

static void rx_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	struct droce_impair_link *il = priv;
	for (unsigned i = 0; i < n; i++)
		rec_release(il, f[i].handle);
}

static const struct droce_link_ops impair_link_ops = {
	.tx = tx,
	.tx_flush = tx_flush,
	.rx_burst = rx_burst,
	.rx_release = rx_release,
};

struct droce_impair_link *droce_impair_link_create(struct droce_link inner, struct droce_impair *imp)
{
	if (!inner.ops || !inner.ops->rx_burst || !inner.ops->tx || !imp) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_impair_link *il = calloc(1, sizeof(*il));
	if (!il)
		return NULL;
	il->copy = malloc(sizeof(*il->copy) * N_COPY);
	if (!il->copy) {
		free(il);
		errno = ENOMEM;
		return NULL;
	}
	il->inner = inner;
	il->imp = imp;
	for (unsigned i = 0; i < N_REC; i++)
		rec_put(il, &il->rec[i]);
	return il;
}

void droce_impair_link_destroy(struct droce_impair_link *il)
{
	if (!il)
		return;
	void *held[DROCE_IMPAIR_MAX_HELD];
	unsigned n = droce_impair_flush(il->imp, held, DROCE_IMPAIR_MAX_HELD);
	for (unsigned i = 0; i < n; i++)
		rec_release(il, held[i]);
	free(il->copy);
	free(il);
}

struct droce_link droce_impair_link_get(struct droce_impair_link *il)
{
	struct droce_link l = {.ops = &impair_link_ops, .priv = il};
	return l;
}

uint64_t droce_impair_link_dup_skipped(const struct droce_impair_link *il)
{
	return il->dup_skipped;
}
