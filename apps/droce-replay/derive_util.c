/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: the derivation's bookkeeping: its error message,
 * new connections and messages (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drv_dfail(struct dctx *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, d->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

size_t drv_alen(const struct dctx *d)
{
	return d->ipv == 4 ? 4 : 16;
}

int drv_new_conn(struct dctx *d)
{
	if (d->nconns == MAX_CONNS)
		return -1;
	struct conn *c = &d->conns[d->nconns];
	memset(c, 0, sizeof(*c));
	c->cur_own = c->cur_peer = -1;
	c->min_rnr_timer = 0xFF;
	return (int)d->nconns++;
}

int drv_new_msg(struct dctx *d, int conn, bool own, enum mkind k, const struct fr *f)
{
	if (d->nmsgs == d->capmsgs) {
		size_t nc = d->capmsgs ? 2 * d->capmsgs : 64;
		struct msg *nm = realloc(d->msgs, nc * sizeof(*nm));
		if (!nm)
			return -1;
		d->msgs = nm;
		d->capmsgs = nc;
	}
	struct msg *m = &d->msgs[d->nmsgs];
	memset(m, 0, sizeof(*m));
	m->conn = conn;
	m->own = own;
	m->kind = k;
	m->first_psn = m->last_psn = f->p.h.bth.psn;
	m->t_ns = f->f->t_ns;
	m->first_idx = (size_t)(f - d->fr);
	return (int)d->nmsgs++;
}

int drv_msg_append(struct msg *m, const uint8_t *p, size_t n)
{
	if (!n)
		return 0;
	if (m->len + n > m->cap) {
		size_t nc = m->cap ? m->cap : 256;
		while (nc < m->len + n)
			nc *= 2;
		uint8_t *nd = realloc(m->data, nc);
		if (!nd)
			return -1;
		m->data = nd;
		m->cap = nc;
	}
	memcpy(m->data + m->len, p, n);
	m->len += n;
	return 0;
}

void drv_msg_take_ext(struct msg *m, const struct fr *a, const struct droce_opcode_info *oi)
{
	if (oi->hdrs & DROCE_HDR_RETH) {
		m->va = a->p.h.ext.reth.va;
		m->rkey = a->p.h.ext.reth.rkey;
		m->dma_len = a->p.h.ext.reth.dma_len;
	}
	if (oi->hdrs & DROCE_HDR_ATOMIC) {
		m->va = a->p.h.ext.atomic.va;
		m->rkey = a->p.h.ext.atomic.rkey;
		m->compare = a->p.h.ext.atomic.compare;
		m->swap_add = a->p.h.ext.atomic.swap_add;
	}
	if (oi->hdrs & DROCE_HDR_IMM) {
		m->has_imm = true;
		m->imm = a->p.h.ext.imm;
	}
}
