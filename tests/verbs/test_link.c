/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs' link (stack/verbs/ack_hold.c): pure ACKs produced while the
 * application polls wait, at most the hold time, for a request to leave
 * with; everything else is flushed as the port would. Over a fake inner
 * link that records what each flush pushes out.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verbs/ack_hold.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

#define HOLD 4000u

/* The inner link: frames queued since its last flush, and each flush. */
struct fake {
	unsigned queued, flushes, last_burst, sent;
	int refuse;
};

static int f_tx(void *p, const struct droce_tx_frame *f, uint64_t now)
{
	struct fake *k = p;
	(void)f, (void)now;
	if (k->refuse)
		return -ENOBUFS;
	k->queued++;
	return 0;
}

static void f_flush(void *p, uint64_t now)
{
	struct fake *k = p;
	(void)now;
	k->flushes++;
	k->last_burst = k->queued;
	k->sent += k->queued;
	k->queued = 0;
}

static unsigned f_rx(void *p, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	(void)p, (void)f, (void)n, (void)now;
	return 0;
}

static const struct droce_link_ops fake_ops = {.tx = f_tx, .tx_flush = f_flush, .rx_burst = f_rx};

/* A RoCEv2 header: Ethernet (optionally 802.1Q), IPv4 or IPv6, UDP, BTH,
 * and an AETH with @p syndrome when @p aeth. */
struct hdr {
	uint8_t b[128];
	uint32_t len;
};

static struct hdr make(uint8_t opcode, bool aeth, uint8_t syndrome, bool vlan, bool v6)
{
	struct hdr h;
	memset(&h, 0, sizeof(h));
	uint32_t o = 12;
	if (vlan) {
		h.b[o] = 0x81, h.b[o + 1] = 0x00;
		o += 4;
	}
	h.b[o] = v6 ? 0x86 : 0x08, h.b[o + 1] = v6 ? 0xDD : 0x00;
	o += 2;
	h.b[o] = v6 ? 0x60 : 0x45;
	o += v6 ? 40 : 20;
	o += 8; /* UDP */
	h.b[o] = opcode;
	o += DROCE_BTH_LEN;
	if (aeth) {
		h.b[o] = syndrome;
		o += DROCE_AETH_LEN;
	}
	h.len = o;
	return h;
}

static struct droce_tx_frame frame(const struct hdr *h, uint32_t payload)
{
	static uint8_t data[256];
	struct droce_tx_frame f = {.hdr = h->b, .hdr_len = h->len, .trailer_len = 4};
	if (payload) {
		f.nseg = 1;
		f.seg[0].addr = data;
		f.seg[0].len = payload;
		f.payload_len = payload;
	}
	return f;
}

struct fix {
	struct fake k;
	struct dv_link l;
	struct droce_link link;
};

static void setup_fix(struct fix *x)
{
	memset(x, 0, sizeof(*x));
	x->link = dv_link_init(&x->l, (struct droce_link){.ops = &fake_ops, .priv = &x->k}, HOLD);
}

static void tx(struct fix *x, const struct hdr *h, uint32_t payload, uint64_t now)
{
	struct droce_tx_frame f = frame(h, payload);
	assert_int_equal(x->link.ops->tx(x->link.priv, &f, now), 0);
}

static void flush(struct fix *x, uint64_t now)
{
	x->link.ops->tx_flush(x->link.priv, now);
}

static void test_classify(void **state)
{
	(void)state;
	struct hdr ack = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_ACK | 0x1F, false, false);
	struct hdr vlan = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_ACK, true, false);
	struct hdr v6 = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_ACK, false, true);
	struct hdr nak = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_NAK | 0x00, false, false);
	struct hdr rnr = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_RNR_NAK | 0x0E, false, false);
	struct hdr aack = make(DROCE_OP_RC_ATOMIC_ACKNOWLEDGE, true, DROCE_AETH_ACK, false, false);
	struct hdr rd = make(DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, true, DROCE_AETH_ACK, false, false);
	struct hdr wr = make(DROCE_OP_RC_RDMA_WRITE_ONLY, false, 0, false, false);
	struct droce_tx_frame f;
	f = frame(&ack, 0), assert_true(dv_frame_is_ack(&f));
	f = frame(&vlan, 0), assert_true(dv_frame_is_ack(&f));
	f = frame(&v6, 0), assert_true(dv_frame_is_ack(&f));
	f = frame(&nak, 0), assert_false(dv_frame_is_ack(&f));
	f = frame(&rnr, 0), assert_false(dv_frame_is_ack(&f));
	f = frame(&aack, 0), assert_false(dv_frame_is_ack(&f));
	f = frame(&rd, 64), assert_false(dv_frame_is_ack(&f));
	f = frame(&wr, 0), assert_false(dv_frame_is_ack(&f));
	/* Cut short before the AETH: not an ACK we could read. */
	ack.len -= 2;
	f = frame(&ack, 0), assert_false(dv_frame_is_ack(&f));
}

/* The ping-pong case: an ACK made inside poll_cq leaves with the reply. */
static void test_ack_rides_with_request(void **state)
{
	(void)state;
	struct fix x;
	setup_fix(&x);
	struct hdr ack = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_ACK, false, false);
	struct hdr wr = make(DROCE_OP_RC_RDMA_WRITE_ONLY, false, 0, false, false);
	dv_link_app_polling(&x.l, true);
	tx(&x, &ack, 0, 1000);
	flush(&x, 1000);
	assert_int_equal(x.k.flushes, 0);
	assert_int_equal(dv_link_held_since(&x.l) & ~1ull, 1000);
	flush(&x, 1000 + HOLD - 1); /* the next empty poll: still held */
	assert_int_equal(x.k.flushes, 0);
	dv_link_app_polling(&x.l, false);
	/* post_send: the request goes, and the ACK in the same burst. */
	tx(&x, &wr, 8, 2000);
	flush(&x, 2000);
	assert_int_equal(x.k.flushes, 1);
	assert_int_equal(x.k.last_burst, 2);
	assert_int_equal(x.l.piggybacked, 1);
	assert_int_equal(x.l.expired, 0);
	assert_int_equal(dv_link_held_since(&x.l), 0);
}

/* Nobody answers: the ACK leaves at the hold time, alone. */
static void test_hold_expires(void **state)
{
	(void)state;
	struct fix x;
	setup_fix(&x);
	struct hdr ack = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_ACK, false, false);
	dv_link_app_polling(&x.l, true);
	tx(&x, &ack, 0, 0);
	flush(&x, 0);
	assert_int_equal(x.k.flushes, 0);
	assert_int_not_equal(dv_link_held_since(&x.l), 0); /* due at 0 + HOLD */
	tx(&x, &ack, 0, 100); /* a second one waits with the first */
	flush(&x, 100);
	assert_int_equal(x.k.flushes, 0);
	flush(&x, HOLD);
	assert_int_equal(x.k.flushes, 1);
	assert_int_equal(x.k.last_burst, 2);
	assert_int_equal(x.l.expired, 2);
	assert_int_equal(dv_link_held_since(&x.l), 0);
}

/* Outside the application's polls (progress thread, control verbs), and
 * with anything but pure ACKs in the batch, a flush is a flush. */
static void test_no_hold(void **state)
{
	(void)state;
	struct fix x;
	setup_fix(&x);
	struct hdr ack = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_ACK, false, false);
	struct hdr nak = make(DROCE_OP_RC_ACKNOWLEDGE, true, DROCE_AETH_NAK, false, false);
	struct hdr rd = make(DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, true, DROCE_AETH_ACK, false, false);
	tx(&x, &ack, 0, 0);
	flush(&x, 0);
	assert_int_equal(x.k.flushes, 1);
	dv_link_app_polling(&x.l, true);
	tx(&x, &nak, 0, 10);
	flush(&x, 10);
	assert_int_equal(x.k.flushes, 2);
	tx(&x, &ack, 0, 20);
	tx(&x, &rd, 64, 20); /* a READ response waits for nobody */
	flush(&x, 20);
	assert_int_equal(x.k.flushes, 3);
	assert_int_equal(x.k.last_burst, 2);
	assert_int_equal(x.l.held_polls, 0);
	/* A frame the port refused is not counted as queued. */
	x.k.refuse = 1;
	struct droce_tx_frame f = frame(&ack, 0);
	assert_int_equal(x.link.ops->tx(x.link.priv, &f, 30), -ENOBUFS);
	x.k.refuse = 0;
	flush(&x, 30);
	assert_int_equal(x.k.flushes, 4);
	assert_int_equal(x.l.held_polls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_ack_rides_with_request),
		cmocka_unit_test(test_hold_expires),
		cmocka_unit_test(test_no_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
