/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The link the verbs give their droce context: the port's, with one change,
 * an ACK held back for the application's next request (docs/verbs.md
 * "Speed").
 *
 * Why: a ping-pong over verbs (ib_write_lat, ibv_rc_pingpong) waits in
 * ibv_poll_cq() for its send's ACK, then waits for the peer's reply
 * outside any verbs call (ib_write_lat spins on its buffer). Sent at once,
 * the ACK reaches the peer alone; the peer's poll_cq returns and the reply
 * that follows a microsecond later lands while the peer's application is
 * away, so only the peer's progress thread (asleep between naps) can take
 * it: a wake-up on the critical path of every half round trip. Held until
 * this side posts its reply, the ACK goes out in the same burst as the
 * request, and the peer's poll_cq, still waiting for that ACK, receives
 * both and places the reply before it returns. The progress thread is off
 * the path.
 *
 * IBTA 9.7.5.1.1 lets a responder coalesce acknowledgements, and an ACK
 * held for microseconds is far inside any requester's ACK timeout. Only
 * pure ACKs are held (NAKs, RNR NAKs, read and atomic responses go at once,
 * and so does everything else queued with them), only while the
 * application itself polls (poll_cq, get_cq_event: the thread that is about
 * to answer), and never longer than DV_ACK_HOLD_NS: the next poll after
 * that, any post or control verb, and the progress thread's first poll send
 * it.
 */
#include "verbs/ack_hold.h"

#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

/* The BTH offset of an Ethernet frame's RoCEv2 header, or 0. */
static uint32_t bth_offset(const uint8_t *h, uint32_t len)
{
	uint32_t l3 = 14;
	if (len < l3)
		return 0;
	uint16_t et = droce_get_be16(h + 12);
	if (et == DROCE_ETHERTYPE_VLAN) {
		l3 += 4;
		if (len < l3)
			return 0;
		et = droce_get_be16(h + 16);
	}
	if (et == DROCE_ETHERTYPE_IPV4 && len > l3)
		return l3 + (h[l3] & 0x0Fu) * 4u + 8u; /* IP header, UDP */
	if (et == DROCE_ETHERTYPE_IPV6)
		return l3 + 40u + 8u;
	return 0;
}

bool dv_frame_is_ack(const struct droce_tx_frame *f)
{
	if (f->payload_len || f->nseg)
		return false;
	uint32_t bth = bth_offset(f->hdr, f->hdr_len);
	if (!bth || f->hdr_len < bth + DROCE_BTH_LEN + DROCE_AETH_LEN)
		return false;
	uint8_t syndrome = f->hdr[bth + DROCE_BTH_LEN];
	return f->hdr[bth] == DROCE_OP_RC_ACKNOWLEDGE &&
	       (syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK;
}

static int hold_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	struct dv_link *l = priv;
	int r = l->inner.ops->tx(l->inner.priv, f, now);
	if (r)
		return r;
	if (dv_frame_is_ack(f)) {
		if (!l->acks)
			l->acks_t0 = now;
		l->acks++;
	} else {
		l->others++;
	}
	return 0;
}

static void hold_flush(void *priv, uint64_t now)
{
	struct dv_link *l = priv;
	if (l->app_polling && l->acks && !l->others && now - l->acks_t0 < l->hold_ns) {
		l->held_polls++;
		l->app_held = true;
		/* Never 0: a clock at 0 is the first nanosecond of the context. */
		atomic_store_explicit(&l->held_since, l->acks_t0 | 1, memory_order_relaxed);
		return;
	}
	if (l->acks) {
		if (l->others && l->app_held)
			l->piggybacked += l->acks;
		else if (l->app_held)
			l->expired += l->acks;
	}
	l->acks = l->others = 0;
	l->app_held = false;
	atomic_store_explicit(&l->held_since, 0, memory_order_relaxed);
	if (l->inner.ops->tx_flush)
		l->inner.ops->tx_flush(l->inner.priv, now);
}

static unsigned hold_rx_burst(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct dv_link *l = priv;
	return l->inner.ops->rx_burst(l->inner.priv, f, n, now);
}

static void hold_rx_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	struct dv_link *l = priv;
	if (l->inner.ops->rx_release)
		l->inner.ops->rx_release(l->inner.priv, f, n);
}

static const struct droce_link_ops hold_ops = {
	.tx = hold_tx,
	.tx_flush = hold_flush,
	.rx_burst = hold_rx_burst,
	.rx_release = hold_rx_release,
};

struct droce_link dv_link_init(struct dv_link *l, struct droce_link inner, uint64_t hold_ns)
{
	*l = (struct dv_link){.inner = inner, .hold_ns = hold_ns};
	atomic_init(&l->held_since, 0);
	return (struct droce_link){.ops = &hold_ops, .priv = l};
}

void dv_link_app_polling(struct dv_link *l, bool on)
{
	l->app_polling = on;
}
