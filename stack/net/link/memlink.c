/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In-memory link pair (see memlink.h). Each direction owns a pool of
 * fixed-size slots, a free stack and a FIFO ring of slot pointers; a slot is
 * the handle the impairment shim holds and rx_burst() hands out.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "net/link/memlink.h"
#include "net/link/tx_fold.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

struct slot {
	uint8_t *data;
	uint32_t len;
	uint64_t ready;           /* earliest time the receiver may see it */
};

struct dir {
	struct slot *slots;
	uint8_t *mem;
	struct slot **free;       /* stack */
	unsigned nfree;
	struct slot **fifo;       /* ring of nslots entries */
	unsigned head, count;
	unsigned nslots;
	unsigned outstanding;     /* handed out by rx_burst, not yet released */
	int keep_held;            /* do not flush held frames when the FIFO runs dry */
	uint64_t delay;           /* one-way latency, ns */
	struct droce_impair *imp;
	struct droce_memlink_stats st;
};

struct end {
	struct droce_memlink *ml;
	unsigned idx;
};

struct droce_memlink {
	uint32_t depth, max_frame;
	struct dir dir[2];
	struct end end[2];
	uint8_t *scratch;         /* pristine copy for the tap when a shim may corrupt */
	droce_memlink_tap_fn tap;
	void *tap_arg;
};

static void dir_free(struct dir *d)
{
	free(d->slots);
	free(d->mem);
	free(d->free);
	free(d->fifo);
}

static int dir_init(struct dir *d, unsigned nslots, uint32_t max_frame)
{
	memset(d, 0, sizeof(*d));
	d->nslots = nslots;
	d->slots = calloc(nslots, sizeof(*d->slots));
	d->mem = malloc((size_t)nslots * max_frame);
	d->free = calloc(nslots, sizeof(*d->free));
	d->fifo = calloc(nslots, sizeof(*d->fifo));
	if (!d->slots || !d->mem || !d->free || !d->fifo) {
		dir_free(d);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nslots; i++) {
		d->slots[i].data = d->mem + (size_t)i * max_frame;
		d->free[i] = &d->slots[nslots - 1 - i];
	}
	d->nfree = nslots;
	return 0;
}

static struct slot *slot_get(struct dir *d)
{
	return d->nfree ? d->free[--d->nfree] : NULL;
}

static void slot_put(struct dir *d, struct slot *s)
{
	d->free[d->nfree++] = s;
}

static void fifo_push(struct dir *d, struct slot *s)
{
	/* Never full: the ring has a place for every slot of the pool. */
	d->fifo[(d->head + d->count) % d->nslots] = s;
	d->count++;
}

static struct slot *fifo_pop(struct dir *d)
{
	struct slot *s = d->fifo[d->head];
	d->head = (d->head + 1) % d->nslots;
	d->count--;
	return s;
}

static void deliver_due(struct dir *d, int all)
{
	void *h[DROCE_IMPAIR_MAX_HELD];
	unsigned n;

	if (!d->imp)
		return;
	n = all ? droce_impair_flush(d->imp, h, DROCE_IMPAIR_MAX_HELD)
		: droce_impair_release(d->imp, h, DROCE_IMPAIR_MAX_HELD);
	for (unsigned i = 0; i < n; i++)
		fifo_push(d, h[i]);
}

/* ------------------------------------------------------------ link ops -- */

/* tx() and tx_fold(): with @p fold, the ICRC is chained from @p crc over
 * the payload and pad as they are copied into the slot (droce_link_ops). */
static int ml_send(void *priv, const struct droce_tx_frame *f, bool fold, uint32_t crc,
		   uint64_t now)
{
	struct end *e = priv;
	struct droce_memlink *ml = e->ml;
	struct dir *d = &ml->dir[e->idx];
	struct droce_impair_verdict v = {.action = DROCE_IMPAIR_PASS};
	struct slot *s;
	uint64_t total = (uint64_t)f->hdr_len + f->trailer_len;
	uint32_t off;

	for (unsigned i = 0; i < f->nseg && i < DROCE_TX_MAX_SEG; i++)
		total += f->seg[i].len;
	if (f->nseg > DROCE_TX_MAX_SEG || total > ml->max_frame ||
	    f->trailer_len > sizeof(f->trailer) || (fold && f->trailer_len < DROCE_ICRC_LEN)) {
		d->st.tx_too_big++;
		return -EMSGSIZE;
	}
	if (d->count >= ml->depth || !(s = slot_get(d))) {
		d->st.tx_nobufs++;
		return -ENOBUFS;
	}
	if (f->hdr_len)
		memcpy(s->data, f->hdr, f->hdr_len);
	off = f->hdr_len;
	if (fold) {
		off += droce_tx_fold_copy(s->data + off, f, crc);
	} else {
		for (unsigned i = 0; i < f->nseg; i++) {
			if (f->seg[i].len)
				memcpy(s->data + off, f->seg[i].addr, f->seg[i].len);
			off += f->seg[i].len;
		}
		if (f->trailer_len)
			memcpy(s->data + off, f->trailer, f->trailer_len);
		off += f->trailer_len;
	}
	s->len = off;
	s->ready = now + d->delay;
	d->st.tx_frames++;
	d->st.tx_bytes += s->len;

	if (d->imp) {
		if (ml->tap)
			memcpy(ml->scratch, s->data, s->len);
		v = droce_impair_decide(d->imp, s->data, s->len, s);
	}
	if (ml->tap)
		ml->tap(ml->tap_arg, (enum droce_memlink_dir)e->idx,
			d->imp ? ml->scratch : s->data, s->len, v.action, v.corrupted);
	if (v.corrupted)
		d->st.corrupted++;
	if (v.ecn_marked)
		d->st.ecn_marked++;

	switch (v.action) {
	case DROCE_IMPAIR_DROP:
		d->st.dropped++;
		slot_put(d, s);
		break;
	case DROCE_IMPAIR_HOLD:
		d->st.held++;     /* the shim has the slot now */
		break;
	case DROCE_IMPAIR_DUP: {
		struct slot *c = slot_get(d);
		fifo_push(d, s);
		if (c) {
			memcpy(c->data, s->data, s->len);
			c->len = s->len;
			c->ready = s->ready;
			fifo_push(d, c);
			d->st.duplicated++;
		} else {
			d->st.dup_nobufs++;
		}
		break;
	}
	default:
		fifo_push(d, s);
		break;
	}
	deliver_due(d, 0);
	return 0;
}

static int ml_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	return ml_send(priv, f, false, 0, now);
}

static int ml_tx_fold(void *priv, const struct droce_tx_frame *f, uint32_t crc, uint64_t now)
{
	return ml_send(priv, f, true, crc, now);
}

static unsigned ml_rx_burst(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct end *e = priv;
	struct dir *d = &e->ml->dir[1 - e->idx];
	unsigned got = 0;

	/* Nothing else is coming: late frames arrive now rather than never. */
	if (d->count == 0 && !d->keep_held)
		deliver_due(d, 1);
	/* FIFO order; a frame still on the wire (delay) holds back those behind it */
	while (got < n && d->count && d->fifo[d->head]->ready <= now) {
		struct slot *s = fifo_pop(d);
		f[got].data = s->data;
		f[got].len = s->len;
		f[got].handle = s;
		d->st.rx_frames++;
		d->st.rx_bytes += s->len;
		got++;
	}
	d->outstanding += got;
	return got;
}

static void ml_rx_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	struct end *e = priv;
	struct dir *d = &e->ml->dir[1 - e->idx];

	for (unsigned i = 0; i < n; i++) {
		if (f[i].handle) {
			slot_put(d, f[i].handle);
			f[i].handle = NULL;
			d->outstanding--;
		}
	}
}

static const struct droce_link_ops memlink_ops = {
	.tx = ml_tx,
	.tx_flush = NULL,
	.rx_burst = ml_rx_burst,
	.rx_release = ml_rx_release,
	.tx_fold = ml_tx_fold,
};

/* ---------------------------------------------------------------- API -- */

struct droce_memlink *droce_memlink_create(const struct droce_memlink_params *p)
{
	struct droce_memlink *ml;
	uint32_t depth = p && p->depth ? p->depth : DROCE_MEMLINK_DEFAULT_DEPTH;
	uint32_t max_frame = p && p->max_frame ? p->max_frame : DROCE_MEMLINK_DEFAULT_MAX_FRAME;
	unsigned nslots;

	if (max_frame < 64 || max_frame > 65535 || depth > (1u << 20)) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * Slots for a full FIFO, a burst handed out to the receiver, frames
	 * held by the shim, and as many duplicates again.
	 */
	nslots = 2 * depth + 2 * DROCE_IMPAIR_MAX_HELD + 256;
	ml = calloc(1, sizeof(*ml));
	if (!ml) {
		errno = ENOMEM;
		return NULL;
	}
	ml->depth = depth;
	ml->max_frame = max_frame;
	ml->scratch = malloc(max_frame);
	if (!ml->scratch || dir_init(&ml->dir[0], nslots, max_frame) ||
	    dir_init(&ml->dir[1], nslots, max_frame)) {
		dir_free(&ml->dir[0]);
		dir_free(&ml->dir[1]);
		free(ml->scratch);
		free(ml);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < 2; i++) {
		ml->end[i].ml = ml;
		ml->end[i].idx = i;
	}
	return ml;
}

void droce_memlink_destroy(struct droce_memlink *ml)
{
	if (!ml)
		return;
	dir_free(&ml->dir[0]);
	dir_free(&ml->dir[1]);
	free(ml->scratch);
	free(ml);
}

struct droce_link droce_memlink_end(struct droce_memlink *ml, unsigned end)
{
	struct droce_link l = {.ops = &memlink_ops, .priv = &ml->end[end ? 1 : 0]};
	return l;
}

int droce_memlink_set_impair(struct droce_memlink *ml, enum droce_memlink_dir dir,
			     struct droce_impair *imp)
{
	if (!ml || (dir != DROCE_MEMLINK_0_TO_1 && dir != DROCE_MEMLINK_1_TO_0))
		return -EINVAL;
	deliver_due(&ml->dir[dir], 1);
	ml->dir[dir].imp = imp;
	return 0;
}

int droce_memlink_set_flush_idle(struct droce_memlink *ml, enum droce_memlink_dir dir, int on)
{
	if (!ml || (dir != DROCE_MEMLINK_0_TO_1 && dir != DROCE_MEMLINK_1_TO_0))
		return -EINVAL;
	ml->dir[dir].keep_held = !on;
	return 0;
}

void droce_memlink_set_tap(struct droce_memlink *ml, droce_memlink_tap_fn fn, void *arg)
{
	ml->tap = fn;
	ml->tap_arg = arg;
}

unsigned droce_memlink_pending(const struct droce_memlink *ml, enum droce_memlink_dir dir)
{
	const struct dir *d = &ml->dir[dir ? 1 : 0];
	return d->count + (d->imp ? droce_impair_held(d->imp) : 0);
}

uint64_t droce_memlink_next_ready(const struct droce_memlink *ml, enum droce_memlink_dir dir)
{
	const struct dir *d = &ml->dir[dir ? 1 : 0];
	if (d->count)
		return d->fifo[d->head]->ready;
	if (d->imp && !d->keep_held && droce_impair_held(d->imp))
		return 0; /* an idle receiver takes the held frames at once */
	return UINT64_MAX;
}

int droce_memlink_set_delay(struct droce_memlink *ml, enum droce_memlink_dir dir, uint64_t ns)
{
	if (!ml || (dir != DROCE_MEMLINK_0_TO_1 && dir != DROCE_MEMLINK_1_TO_0))
		return -EINVAL;
	ml->dir[dir].delay = ns;
	return 0;
}

unsigned droce_memlink_outstanding(const struct droce_memlink *ml, enum droce_memlink_dir dir)
{
	return ml->dir[dir ? 1 : 0].outstanding;
}

int droce_memlink_get_stats(const struct droce_memlink *ml, enum droce_memlink_dir dir,
			    struct droce_memlink_stats *out)
{
	if (!ml || !out || (dir != DROCE_MEMLINK_0_TO_1 && dir != DROCE_MEMLINK_1_TO_0))
		return -EINVAL;
	*out = ml->dir[dir].st;
	return 0;
}
