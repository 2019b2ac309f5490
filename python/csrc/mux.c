/* SPDX-License-Identifier: BSD-3-Clause */
/* One link over several, routed by destination MAC (mux.h). */
#include "mux.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

void droce_mux_init(struct droce_mux *m)
{
	memset(m, 0, sizeof(*m));
}

int droce_mux_add(struct droce_mux *m, struct droce_link inner, const uint8_t peer_mac[6])
{
	if (!m || !inner.ops || !inner.ops->tx || !inner.ops->rx_burst || !peer_mac)
		return -EINVAL;
	if (m->n == DROCE_MUX_MAX)
		return -ENOSPC;
	m->inner[m->n] = inner;
	memcpy(m->peer_mac[m->n], peer_mac, 6);
	return (int)m->n++;
}

/* The port toward the frame's destination MAC (Ethernet bytes 0..5); -1 for
 * a group address (sent everywhere), -2 for a MAC nobody has. */
static int route(const struct droce_mux *m, const uint8_t *hdr, uint32_t len)
{
	if (len < 6)
		return -2;
	if (hdr[0] & 1)
		return -1;
	for (unsigned i = 0; i < m->n; i++)
		if (!memcmp(m->peer_mac[i], hdr, 6))
			return (int)i;
	return -2;
}

static int mux_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	struct droce_mux *m = priv;
	int k = route(m, f->hdr, f->hdr_len);
	if (k >= 0)
		return m->inner[k].ops->tx(m->inner[k].priv, f, now);
	if (k == -2) {
		/* as a switch without a route: the transport's retry covers it */
		m->tx_unroutable++;
		return 0;
	}
	m->tx_broadcast++;
	for (unsigned i = 0; i < m->n; i++)
		(void)m->inner[i].ops->tx(m->inner[i].priv, f, now);
	return 0;
}

static int mux_tx_fold(void *priv, const struct droce_tx_frame *f, uint32_t crc, uint64_t now)
{
	struct droce_mux *m = priv;
	int k = route(m, f->hdr, f->hdr_len);
	if (k >= 0)
		return m->inner[k].ops->tx_fold(m->inner[k].priv, f, crc, now);
	if (k == -2) {
		m->tx_unroutable++;
		return 0;
	}
	m->tx_broadcast++;
	for (unsigned i = 0; i < m->n; i++)
		(void)m->inner[i].ops->tx_fold(m->inner[i].priv, f, crc, now);
	return 0;
}

static void mux_flush(void *priv, uint64_t now)
{
	struct droce_mux *m = priv;
	for (unsigned i = 0; i < m->n; i++)
		if (m->inner[i].ops->tx_flush)
			m->inner[i].ops->tx_flush(m->inner[i].priv, now);
}

static unsigned mux_rx(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct droce_mux *m = priv;
	unsigned got = 0;
	m->burst_n = 0;
	for (unsigned j = 0; j < m->n && got < n; j++) {
		unsigned i = (m->next + j) % m->n;
		unsigned k = m->inner[i].ops->rx_burst(m->inner[i].priv, f + got, n - got, now);
		if (!k)
			continue;
		m->burst_from[m->burst_n] = (uint8_t)i;
		m->burst_cnt[m->burst_n++] = k;
		got += k;
	}
	if (m->n)
		m->next = (m->next + 1) % m->n;
	return got;
}

/* The context gives a burst back whole, in the array it was filled in
 * (core/ctx.c): each inner link gets its own stretch of it. */
static void mux_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	struct droce_mux *m = priv;
	unsigned off = 0;
	for (unsigned b = 0; b < m->burst_n && off < n; b++) {
		const struct droce_link *l = &m->inner[m->burst_from[b]];
		unsigned k = m->burst_cnt[b] < n - off ? m->burst_cnt[b] : n - off;
		if (l->ops->rx_release)
			l->ops->rx_release(l->priv, f + off, k);
		off += k;
	}
	m->burst_n = 0;
}

static const struct droce_link_ops mux_ops = {
	.tx = mux_tx, .tx_flush = mux_flush, .rx_burst = mux_rx, .rx_release = mux_release,
};
static const struct droce_link_ops mux_fold_ops = {
	.tx = mux_tx, .tx_flush = mux_flush, .rx_burst = mux_rx, .rx_release = mux_release,
	.tx_fold = mux_tx_fold,
};

struct droce_link droce_mux_link(struct droce_mux *m)
{
	bool fold = m->n > 0;
	for (unsigned i = 0; i < m->n; i++)
		fold = fold && m->inner[i].ops->tx_fold;
	return (struct droce_link){.ops = fold ? &mux_fold_ops : &mux_ops, .priv = m};
}
