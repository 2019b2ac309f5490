/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM state machine (stack/cm/cm.c) stepped between two endpoints through
 * an in-memory MAD channel on a virtual clock, in the shape of lwIP's
 * crafted-segment tests: after every step the states, the events and the
 * MADs on the wire are checked. The channel can drop or duplicate the next
 * MADs of a given kind in a given direction.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cm/cm.h"
#include "cm/mad.h"
#include "req_mad.h"
#include "wire/bytes.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

#define MS 1000000ull

struct side {
	struct droce_cm *cm;
	struct droce_cm_addr addr;
	unsigned sent[32];   /* MADs put on the wire, per attribute & 0x1F */
	unsigned drop[32];   /* drop the next N of this attribute */
	unsigned dup[32];    /* deliver the next N of this attribute twice */
	unsigned dropped;
	enum droce_cm_rx last_rx;
	uint8_t last[32][DROCE_MAD_LEN]; /* the last MAD put on the wire, per attribute */
};

struct world {
	uint64_t now;
	struct side a, b;    /* a: active (198.18.0.1), b: passive (198.18.0.2) */
	bool b_gone;         /* b vanished: MADs to it are lost, it sends none */
};

static struct droce_cm *make_cm(const uint8_t ip[4], uint64_t guid, uint64_t seed)
{
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local.ip_version = 4;
	memcpy(p.local.ip, ip, 4);
	p.ca_guid = guid;
	p.seed = seed;
	p.max_ids = 8;
	p.response_timeout = 10;   /* 4.2 ms */
	p.max_cm_retries = 3;
	p.packet_lifetime_ns = 100000;
	p.timewait_ns = 5 * MS;
	struct droce_cm *cm = droce_cm_create(&p);
	assert_non_null(cm);
	return cm;
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	static const uint8_t ia[4] = { 198, 18, 0, 1 }, ib[4] = { 198, 18, 0, 2 };
	w->now = 1000 * MS;
	w->a.addr.ip_version = w->b.addr.ip_version = 4;
	memcpy(w->a.addr.ip, ia, 4);
	memcpy(w->b.addr.ip, ib, 4);
	w->a.cm = make_cm(ia, 0x0202020202020201ull, 1);
	w->b.cm = make_cm(ib, 0x0202020202020202ull, 2);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	droce_cm_destroy(w->a.cm);
	droce_cm_destroy(w->b.cm);
	free(w);
	return 0;
}

/* Move every queued MAD from @p from to @p to, through the drop/dup filters. */
static unsigned deliver(struct world *w, struct side *from, struct side *to)
{
	struct droce_cm_out o;
	unsigned n = 0;
	while (droce_cm_pop_mad(from->cm, &o)) {
		uint16_t attr = droce_get_be16(o.mad + 16);
		assert_int_equal(o.dqpn, 1);
		assert_int_equal(o.qkey, DROCE_QP1_QKEY);
		assert_memory_equal(o.dst.ip, to->addr.ip, 4);
		from->sent[attr & 0x1F]++;
		memcpy(from->last[attr & 0x1F], o.mad, DROCE_MAD_LEN);
		if (w->b_gone && (from == &w->b || to == &w->b))
			continue;
		if (from->drop[attr & 0x1F]) {
			from->drop[attr & 0x1F]--;
			from->dropped++;
			continue;
		}
		unsigned copies = 1;
		if (from->dup[attr & 0x1F]) {
			from->dup[attr & 0x1F]--;
			copies = 2;
		}
		for (unsigned k = 0; k < copies; k++)
			to->last_rx = droce_cm_input(to->cm, w->now, &from->addr, o.qkey, o.mad,
						     DROCE_MAD_LEN);
		n++;
	}
	return n;
}

/* Deliver until both directions are quiet. */
static void pump(struct world *w)
{
	for (int i = 0; i < 100; i++)
		if (deliver(w, &w->a, &w->b) + deliver(w, &w->b, &w->a) == 0)
			return;
	fail_msg("the two CMs keep talking");
}

/* Advance the clock by @p ns, run both timers, deliver. */
static void advance(struct world *w, uint64_t ns)
{
	w->now += ns;
	droce_cm_poll(w->a.cm, w->now);
	droce_cm_poll(w->b.cm, w->now);
	pump(w);
}

/* Advance to the next timer of either side (bounded). */
static void next_timer(struct world *w)
{
	uint64_t t = droce_cm_next_timer(w->a.cm), tb = droce_cm_next_timer(w->b.cm);
	if (tb < t)
		t = tb;
	assert_true(t != UINT64_MAX);
	assert_true(t >= w->now);
	advance(w, t - w->now);
}

static struct droce_cm_event expect_event(struct droce_cm *cm, enum droce_cm_event_type t)
{
	struct droce_cm_event ev;
	if (!droce_cm_pop_event(cm, &ev))
		fail_msg("no event, want %s", droce_cm_event_name(t));
	if (ev.type != t)
		fail_msg("event %s, want %s", droce_cm_event_name(ev.type), droce_cm_event_name(t));
	return ev;
}

static void expect_no_event(struct droce_cm *cm)
{
	struct droce_cm_event ev;
	if (droce_cm_pop_event(cm, &ev))
		fail_msg("unexpected event %s", droce_cm_event_name(ev.type));
}

#define ASSERT_STATE(cm, id, st)                                                           \
	do {                                                                               \
		enum droce_cm_state s_ = droce_cm_id_state(cm, id);                         \
		if (s_ != (st))                                                            \
			fail_msg("id %d is %s, want %s", id, droce_cm_state_name(s_),       \
				 droce_cm_state_name(st));                                  \
	} while (0)

static const struct droce_cm_qp_attr qp_a = {
	.qpn = 0x000011, .start_psn = 0xe1a47d, .path_mtu = 3, .responder_resources = 4,
	.initiator_depth = 2, .retry_count = 7, .rnr_retry_count = 6, .local_ack_timeout = 19,
};
static const struct droce_cm_qp_attr qp_b = {
	.qpn = 0x000017, .start_psn = 0x8c84dd, .responder_resources = 8, .initiator_depth = 8,
	.rnr_retry_count = 5,
};

static int connect_a(struct world *w, uint16_t port, const char *pd)
{
	struct droce_cm_connect_param cp = {
		.dst = w->b.addr, .dst_port = port, .src_port = 0x93d7, .qp = qp_a,
		.private_data = pd, .private_data_len = pd ? strlen(pd) + 1 : 0,
	};
	int id = droce_cm_connect(w->a.cm, w->now, &cp);
	assert_true(id >= 0);
	ASSERT_STATE(w->a.cm, id, DROCE_CM_REQ_SENT);
	return id;
}

/* Listen on b, connect from a, up to b's CONNECT_REQUEST. */
static int to_req_rcvd(struct world *w, int *a_id)
{
	int l = droce_cm_listen(w->b.cm, 7471);
	assert_true(l >= 0);
	ASSERT_STATE(w->b.cm, l, DROCE_CM_LISTEN);
	*a_id = connect_a(w, 7471, "hello");
	pump(w);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	assert_int_equal(ev.listen_id, l);
	ASSERT_STATE(w->b.cm, ev.id, DROCE_CM_REQ_RCVD);
	return ev.id;
}

/* Full handshake; returns b's id. */
static int establish(struct world *w, int *a_id)
{
	int b_id = to_req_rcvd(w, a_id);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b_id, &qp_b, "yes", 4), 0);
	ASSERT_STATE(w->b.cm, b_id, DROCE_CM_REP_SENT);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, *a_id), 0);
	expect_event(w->a.cm, DROCE_CM_EV_ESTABLISHED);
	pump(w);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	ASSERT_STATE(w->a.cm, *a_id, DROCE_CM_ESTABLISHED);
	ASSERT_STATE(w->b.cm, b_id, DROCE_CM_ESTABLISHED);
	return b_id;
}

static void test_handshake(void **state)
{
	struct world *w = *state;
	int l = droce_cm_listen(w->b.cm, 7471);
	assert_int_equal(droce_cm_listen(w->b.cm, 7471), -EADDRINUSE);
	int a = connect_a(w, 7471, "hello");
	pump(w);
	assert_int_equal(w->a.sent[0x10], 1);

	/* passive: the REQ's QP attributes, addresses, ports and private data */
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	int b = ev.id;
	assert_int_equal(ev.listen_id, l);
	assert_memory_equal(ev.peer.ip, w->a.addr.ip, 4);
	assert_int_equal(ev.src_port, 0x93d7);
	assert_int_equal(ev.dst_port, 7471);
	assert_int_equal(ev.remote.qpn, qp_a.qpn);
	assert_int_equal(ev.remote.start_psn, qp_a.start_psn);
	assert_int_equal(ev.remote.path_mtu, 3);
	assert_int_equal(ev.remote.responder_resources, 4);
	assert_int_equal(ev.remote.initiator_depth, 2);
	assert_int_equal(ev.remote.retry_count, 7);
	assert_int_equal(ev.remote.rnr_retry_count, 6);
	assert_int_equal(ev.remote.local_ack_timeout, 19);
	assert_int_equal(ev.private_data_len, DROCE_CMA_REQ_USER_PD_LEN);
	assert_string_equal((const char *)ev.private_data, "hello");
	ASSERT_STATE(w->b.cm, b, DROCE_CM_REQ_RCVD);
	expect_no_event(w->a.cm);

	/* the REP: responder resources / initiator depth clamped (12.6.8) */
	assert_int_equal(droce_cm_establish(w->b.cm, w->now, b), -EBADFD);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, "yes", 4), 0);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), -EBADFD);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_REP_SENT);
	pump(w);
	ev = expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(ev.id, a);
	assert_int_equal(ev.remote.qpn, qp_b.qpn);
	assert_int_equal(ev.remote.start_psn, qp_b.start_psn);
	assert_int_equal(ev.remote.responder_resources, 2); /* a's initiator depth */
	assert_int_equal(ev.remote.initiator_depth, 4);     /* a's responder resources */
	assert_int_equal(ev.remote.rnr_retry_count, 5);
	assert_string_equal((const char *)ev.private_data, "yes");
	ASSERT_STATE(w->a.cm, a, DROCE_CM_REP_RCVD);

	/* the RTU */
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_ESTABLISHED);
	expect_event(w->a.cm, DROCE_CM_EV_ESTABLISHED);
	pump(w);
	ev = expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	assert_int_equal(ev.id, b);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_ESTABLISHED);
	assert_int_equal(droce_cm_stats(w->a.cm)->retransmits, 0);
	assert_int_equal(w->a.sent[0x14], 1);

	/* no timers left running while established */
	assert_true(droce_cm_next_timer(w->a.cm) == UINT64_MAX);
	assert_true(droce_cm_next_timer(w->b.cm) == UINT64_MAX);
	advance(w, 60000 * MS);
	expect_no_event(w->a.cm);
	expect_no_event(w->b.cm);
	assert_int_equal(w->a.sent[0x10] + w->b.sent[0x13], 2);
}

static void test_no_listener(void **state)
{
	struct world *w = *state;
	assert_true(droce_cm_listen(w->b.cm, 1) >= 0);
	int a = connect_a(w, 7471, NULL);
	pump(w);
	/* 12.6.7.2: reason 8, invalid service ID; no connection made on b */
	assert_int_equal(w->b.sent[0x12], 1);
	struct droce_cm_event ev = expect_event(w->a.cm, DROCE_CM_EV_REJECTED);
	assert_int_equal(ev.id, a);
	assert_int_equal(ev.reason, DROCE_CM_REJ_INVALID_SERVICE_ID);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_IDLE);
	expect_no_event(w->b.cm);
	assert_int_equal(droce_cm_stats(w->b.cm)->rx_result[DROCE_CM_RX_REJECTED], 1);
	/* and the active side stops resending */
	assert_true(droce_cm_next_timer(w->a.cm) == UINT64_MAX);
	assert_true(droce_cm_next_timer(w->b.cm) == UINT64_MAX);
}

static void test_consumer_reject(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_reject(w->b.cm, w->now, b, "busy", 5), 0);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_IDLE);
	pump(w);
	struct droce_cm_event ev = expect_event(w->a.cm, DROCE_CM_EV_REJECTED);
	assert_int_equal(ev.reason, DROCE_CM_REJ_CONSUMER_DEFINED);
	assert_string_equal((const char *)ev.private_data, "busy");
	ASSERT_STATE(w->a.cm, a, DROCE_CM_IDLE);
	assert_true(droce_cm_next_timer(w->a.cm) == UINT64_MAX);
}

static void test_active_rejects_rep(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(droce_cm_reject(w->a.cm, w->now, a, NULL, 0), 0);
	pump(w);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_REJECTED);
	assert_int_equal(ev.id, b);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_IDLE);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_IDLE);
}

/* A lost REP is resent by b's timer; a lost REQ by a's. */
static void test_lost_rep_and_req(void **state)
{
	struct world *w = *state;
	assert_true(droce_cm_listen(w->b.cm, 7471) >= 0);
	w->a.drop[0x10] = 1;
	int a = connect_a(w, 7471, NULL);
	pump(w);
	expect_no_event(w->b.cm);
	next_timer(w); /* a resends the REQ */
	assert_int_equal(w->a.sent[0x10], 2);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	int b = ev.id;
	w->b.drop[0x13] = 1;
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_no_event(w->a.cm);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_REQ_SENT);
	/* both timers fire at once (b armed its REP timer when a resent the
	 * REQ, with the same timeout): b resends the REP from its timer and
	 * again for a's resent REQ; a takes the first, counts the second */
	next_timer(w);
	ev = expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(ev.remote.qpn, qp_b.qpn);
	assert_int_equal(w->a.sent[0x10], 3);
	assert_int_equal(w->b.sent[0x13], 3);
	assert_int_equal(droce_cm_stats(w->a.cm)->rx_result[DROCE_CM_RX_DUPLICATE], 1);
	expect_no_event(w->a.cm);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	pump(w);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_ESTABLISHED);
	expect_no_event(w->b.cm); /* the duplicate REQ made no second connection */
}

/* A duplicate REQ while b's consumer thinks: MRA; once accepted: the REP again. */
static void test_duplicate_req(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	/* a's REQ timer fires: b answers the resent REQ with an MRA */
	next_timer(w);
	assert_int_equal(w->a.sent[0x10], 2);
	assert_int_equal(w->b.sent[0x11], 1);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_MRA_REQ_SENT);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_MRA_REQ_RCVD);
	expect_no_event(w->b.cm);
	/* the MRA's service timeout (2^12 * 4 us = 16.8 ms) holds a's REQ back
	 * beyond its own 4.2 ms response timeout */
	advance(w, 10 * MS);
	assert_int_equal(w->a.sent[0x10], 2);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	w->b.drop[0x13] = 1;
	pump(w);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_MRA_REQ_RCVD);
	/* the REP was lost; a's next REQ gets it resent at once */
	w->now = droce_cm_next_timer(w->a.cm);
	droce_cm_poll(w->a.cm, w->now);
	pump(w);
	assert_int_equal(w->a.sent[0x10], 3);
	assert_int_equal(w->b.sent[0x13], 2);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(droce_cm_stats(w->b.cm)->dup_answers, 2);
	/* a REQ duplicated on the wire after that: answered, no new connection */
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	pump(w);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	expect_no_event(w->b.cm);
}

/* a's consumer is slow to confirm the REP: b's resent REP is answered with
 * an MRA (message REP), which holds b's resends back; then the RTU. */
static void test_mra_for_rep(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	next_timer(w); /* b resends the REP */
	assert_int_equal(w->b.sent[0x13], 2);
	assert_int_equal(w->a.sent[0x11], 1);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_MRA_REP_SENT);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_MRA_REP_RCVD);
	advance(w, 10 * MS); /* beyond b's 4.4 ms REP timeout, within the MRA's 16.8 ms */
	assert_int_equal(w->b.sent[0x13], 2);
	expect_no_event(w->a.cm);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	expect_event(w->a.cm, DROCE_CM_EV_ESTABLISHED);
	pump(w);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_ESTABLISHED);
	assert_true(droce_cm_next_timer(w->b.cm) == UINT64_MAX);
}

/* The MRA's service timeout runs out: b resends its REP, a resends its MRA. */
static void test_mra_for_rep_expires(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	next_timer(w);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_MRA_REP_RCVD);
	next_timer(w); /* 16.8 ms later */
	assert_int_equal(w->b.sent[0x13], 3);
	assert_int_equal(w->a.sent[0x11], 2);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_MRA_REP_RCVD);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_MRA_REP_SENT);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	pump(w);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
}

/* b disconnects before the RTU while a's consumer still holds the REP:
 * a must not go on to ESTABLISHED against a peer that left. */
static void test_dreq_before_rtu(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(droce_cm_disconnect(w->b.cm, w->now, b), 0);
	pump(w);
	struct droce_cm_event ev = expect_event(w->a.cm, DROCE_CM_EV_DISCONNECTED);
	assert_int_equal(ev.id, a);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_TIMEWAIT);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), -EBADFD);
	expect_event(w->b.cm, DROCE_CM_EV_DISCONNECTED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_TIMEWAIT);
}

/* The RTU is lost: b resends its REP, a answers with the RTU again. */
static void test_lost_rtu(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	w->a.drop[0x14] = 1;
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_ESTABLISHED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_REP_SENT);
	next_timer(w);
	assert_int_equal(w->b.sent[0x13], 2);
	assert_int_equal(w->a.sent[0x14], 2);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	expect_no_event(w->a.cm); /* no second ESTABLISHED on a */
}

/* Every RTU is lost: b gives up on its REP and says so with a REJ
 * (timeout, message REP); a, which thought it was established, must not
 * keep a half-open QP: it is told DISCONNECTED. */
static void test_all_rtus_lost(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	w->a.drop[0x14] = 100;
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	expect_event(w->a.cm, DROCE_CM_EV_ESTABLISHED);
	pump(w);
	for (int i = 0; i < 20 && droce_cm_id_state(w->b.cm, b) != DROCE_CM_IDLE; i++)
		next_timer(w);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(ev.state, DROCE_CM_REP_SENT);
	assert_int_equal(w->a.sent[0x14], 4); /* the RTU, then one per resent REP */
	ev = expect_event(w->a.cm, DROCE_CM_EV_DISCONNECTED);
	assert_int_equal(ev.id, a);
	assert_int_equal(ev.reason, DROCE_CM_REJ_TIMEOUT);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_TIMEWAIT);
}

/* Every RTU is lost but data arrives on b's QP: its COMM_EST
 * (droce_cm_comm_est) makes it ESTABLISHED, the REP stops being resent,
 * nothing times out, and a late RTU is a duplicate. */
static void test_comm_est(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	assert_int_equal(droce_cm_comm_est(w->b.cm, w->now, b), -EBADFD); /* no REP yet */
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	w->a.drop[0x14] = 100;
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), 0);
	expect_event(w->a.cm, DROCE_CM_EV_ESTABLISHED);
	pump(w);
	assert_int_equal(droce_cm_comm_est(w->a.cm, w->now, a), -EBADFD); /* active side */
	assert_int_equal(droce_cm_comm_est(w->b.cm, w->now, -1), -EINVAL);
	assert_int_equal(droce_cm_comm_est(w->b.cm, w->now, b), 0);
	expect_event(w->b.cm, DROCE_CM_EV_ESTABLISHED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_ESTABLISHED);
	assert_int_equal(droce_cm_comm_est(w->b.cm, w->now, b), -EBADFD);
	assert_int_equal(droce_cm_next_timer(w->b.cm), UINT64_MAX); /* no REP resend armed */
	unsigned reps = w->b.sent[0x13];
	w->a.drop[0x14] = 0;
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), -EBADFD);
	pump(w);
	assert_int_equal(w->b.sent[0x13], reps);
	expect_no_event(w->a.cm);
	expect_no_event(w->b.cm);
}

/* b's consumer never answers and every MRA is lost: a gives up and its REJ
 * (timeout) must free b's side although a never learnt b's communication
 * ID: the REJ names a by its CA GUID in the ARI (12.6.7.2, as the kernel). */
static void test_timeout_rej_frees_passive(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	w->b.drop[0x11] = 100;
	for (int i = 0; i < 20 && droce_cm_id_state(w->a.cm, a) != DROCE_CM_IDLE; i++)
		next_timer(w);
	expect_event(w->a.cm, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(w->a.sent[0x12], 1);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_REJECTED);
	assert_int_equal(ev.id, b);
	assert_int_equal(ev.reason, DROCE_CM_REJ_TIMEOUT);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_IDLE);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), -EINVAL);
}

/* a restarts (its CM state lost) and connects again with the same QPN
 * while b still holds the old connection: b refuses the new REQ as stale
 * (REJ 10) and ends the old, half-open one with a DREQ (12.6.7.2 reason 10, 12.9, as the
 * kernel's cm_match_req). A REQ resent into TIMEWAIT is stale too. */
static void test_stale_connection(void **state)
{
	struct world *w = *state;
	int a;
	int b = establish(w, &a);
	droce_cm_destroy(w->a.cm);
	static const uint8_t ia[4] = { 198, 18, 0, 1 };
	w->a.cm = make_cm(ia, 0x0202020202020201ull, 77);
	int a2 = connect_a(w, 7471, NULL);
	pump(w);
	struct droce_cm_event ev = expect_event(w->a.cm, DROCE_CM_EV_REJECTED);
	assert_int_equal(ev.id, a2);
	assert_int_equal(ev.reason, DROCE_CM_REJ_STALE_CONN);
	expect_no_event(w->b.cm);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_DREQ_SENT);
	for (int i = 0; i < 20 && droce_cm_id_state(w->b.cm, b) == DROCE_CM_DREQ_SENT; i++)
		next_timer(w);
	expect_event(w->b.cm, DROCE_CM_EV_DISCONNECTED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_TIMEWAIT);

	/* while b's old connection is in TIMEWAIT its QPN is still stale: REJ
	 * 10; the same REQ with a fresh QPN is a new connection */
	struct droce_cm_msg m;
	uint8_t buf[DROCE_MAD_LEN];
	int a3 = connect_a(w, 7471, NULL);
	struct droce_cm_out o;
	assert_int_equal(droce_cm_pop_mad(w->a.cm, &o), 1);
	assert_int_equal(droce_cm_input(w->b.cm, w->now, &w->a.addr, DROCE_QP1_QKEY, o.mad, DROCE_MAD_LEN),
			 DROCE_CM_RX_REJECTED);
	struct droce_cm_out rej;
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &rej), 1);
	assert_int_equal(droce_mad_decode(rej.mad, DROCE_MAD_LEN, &m), DROCE_MAD_OK);
	assert_int_equal(m.u.rej.reason, DROCE_CM_REJ_STALE_CONN);
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &m), DROCE_MAD_OK);
	m.u.req.local_qpn = 0x99;
	droce_mad_encode(buf, sizeof(buf), &m);
	assert_int_equal(droce_cm_input(w->b.cm, w->now, &w->a.addr, DROCE_QP1_QKEY, buf, DROCE_MAD_LEN),
			 DROCE_CM_RX_OK);
	expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_TIMEWAIT);
	(void)a3;
}

/* The passive side vanishes: a's REQ is resent max_cm_retries times, then TIMEOUT. */
static void test_peer_vanishes_before_rep(void **state)
{
	struct world *w = *state;
	assert_true(droce_cm_listen(w->b.cm, 7471) >= 0);
	w->b_gone = true;
	int a = connect_a(w, 7471, NULL);
	pump(w);
	for (int i = 0; i < 3; i++) {
		next_timer(w);
		expect_no_event(w->a.cm);
		ASSERT_STATE(w->a.cm, a, DROCE_CM_REQ_SENT);
	}
	next_timer(w);
	struct droce_cm_event ev = expect_event(w->a.cm, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(ev.id, a);
	assert_int_equal(ev.state, DROCE_CM_REQ_SENT);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_IDLE);
	assert_int_equal(w->a.sent[0x10], 4); /* the REQ and 3 retries */
	assert_int_equal(w->a.sent[0x12], 1); /* a REJ "timeout" so the peer frees too */
	assert_int_equal(droce_cm_stats(w->a.cm)->retransmits, 3);
	assert_true(droce_cm_next_timer(w->a.cm) == UINT64_MAX);
}

/* The active side vanishes after the REQ: b resends its REP, then TIMEOUT:
 * the consumer is told and no half-open connection stays behind. */
static void test_peer_vanishes_after_req(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	droce_cm_destroy(w->a.cm); /* a is gone for good */
	static const uint8_t ia[4] = { 198, 18, 0, 1 };
	w->a.cm = make_cm(ia, 0x0202020202020201ull, 99); /* a new process, new IDs */
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	expect_no_event(w->a.cm);
	/* the new a knows none of it: every REP is counted and dropped */
	assert_int_equal(droce_cm_stats(w->a.cm)->rx_result[DROCE_CM_RX_NO_MATCH], 1);
	for (int i = 0; i < 20 && droce_cm_id_state(w->b.cm, b) != DROCE_CM_IDLE; i++)
		next_timer(w);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(ev.id, b);
	assert_int_equal(ev.state, DROCE_CM_REP_SENT);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_IDLE);
	/* the REQ's max CM retries (3) bound the REP resends */
	assert_int_equal(w->b.sent[0x13], 4);
	assert_int_equal(w->b.sent[0x12], 1);
	expect_no_event(w->b.cm);
}

static void test_disconnect(void **state)
{
	struct world *w = *state;
	int a;
	int b = establish(w, &a);
	assert_int_equal(droce_cm_disconnect(w->a.cm, w->now, a), 0);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_DREQ_SENT);
	pump(w);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_DISCONNECTED);
	assert_int_equal(ev.id, b);
	ev = expect_event(w->a.cm, DROCE_CM_EV_DISCONNECTED);
	assert_int_equal(ev.id, a);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_TIMEWAIT);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_TIMEWAIT);
	assert_int_equal(droce_cm_disconnect(w->a.cm, w->now, a), -EBADFD);
	/* a's REQ, delayed in the network until now: the connection it asks
	 * for is in TIMEWAIT, so it is stale (REJ 10), not a new one */
	assert_int_equal(droce_cm_input(w->b.cm, w->now, &w->a.addr, DROCE_QP1_QKEY, w->a.last[0x10],
					DROCE_MAD_LEN), DROCE_CM_RX_REJECTED);
	struct droce_cm_out o;
	struct droce_cm_msg m;
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &o), 1);
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &m), DROCE_MAD_OK);
	assert_int_equal(m.hdr.attr_id, DROCE_CM_ATTR_REJ);
	assert_int_equal(m.u.rej.reason, DROCE_CM_REJ_STALE_CONN);
	expect_no_event(w->b.cm);
	/* TIMEWAIT ends by itself */
	advance(w, 5 * MS);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_IDLE);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_IDLE);
	/* the QPs may be reused now (rdma_cm's TIMEWAIT_EXIT): the last event */
	ev = expect_event(w->a.cm, DROCE_CM_EV_TIMEWAIT_EXIT);
	assert_int_equal(ev.id, a);
	ev = expect_event(w->b.cm, DROCE_CM_EV_TIMEWAIT_EXIT);
	assert_int_equal(ev.id, b);
	expect_no_event(w->a.cm);
	expect_no_event(w->b.cm);
}

/* A lost DREP: a resends the DREQ, b (in TIMEWAIT) answers it again. */
static void test_lost_drep(void **state)
{
	struct world *w = *state;
	int a;
	int b = establish(w, &a);
	w->a.drop[0x16] = 1;
	assert_int_equal(droce_cm_disconnect(w->b.cm, w->now, b), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_DISCONNECTED);
	expect_no_event(w->b.cm);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_DREQ_SENT);
	next_timer(w);
	assert_int_equal(w->b.sent[0x15], 2);
	assert_int_equal(w->a.sent[0x16], 2);
	expect_event(w->b.cm, DROCE_CM_EV_DISCONNECTED);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_TIMEWAIT);
	expect_no_event(w->a.cm);
}

/* The peer vanishes while connected: our DREQ times out, we still leave. */
static void test_dreq_timeout(void **state)
{
	struct world *w = *state;
	int a;
	establish(w, &a);
	w->b_gone = true;
	assert_int_equal(droce_cm_disconnect(w->a.cm, w->now, a), 0);
	pump(w);
	for (int i = 0; i < 3; i++) {
		next_timer(w);
		expect_no_event(w->a.cm);
	}
	next_timer(w);
	expect_event(w->a.cm, DROCE_CM_EV_DISCONNECTED);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_TIMEWAIT);
	assert_int_equal(w->a.sent[0x15], 4);
	next_timer(w);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_IDLE);
}

/* Both sides disconnect at once. */
static void test_simultaneous_dreq(void **state)
{
	struct world *w = *state;
	int a;
	int b = establish(w, &a);
	assert_int_equal(droce_cm_disconnect(w->a.cm, w->now, a), 0);
	assert_int_equal(droce_cm_disconnect(w->b.cm, w->now, b), 0);
	pump(w);
	expect_event(w->a.cm, DROCE_CM_EV_DISCONNECTED);
	expect_event(w->b.cm, DROCE_CM_EV_DISCONNECTED);
	expect_no_event(w->a.cm);
	expect_no_event(w->b.cm);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_TIMEWAIT);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_TIMEWAIT);
}

static void inject(struct world *w, struct side *to, const uint8_t *mad, uint32_t qkey,
		   enum droce_cm_rx want)
{
	const struct droce_cm_addr *src = to == &w->a ? &w->b.addr : &w->a.addr;
	enum droce_cm_rx got = droce_cm_input(to->cm, w->now, src, qkey, mad, DROCE_MAD_LEN);
	if (got != want)
		fail_msg("%s, want %s", droce_cm_rx_name(got), droce_cm_rx_name(want));
}

/* Bad input: each counted with its reason, no state change, no crash. */
static void test_bad_input(void **state)
{
	struct world *w = *state;
	int a;
	int b = establish(w, &a);
	struct droce_cm_msg m;
	uint8_t buf[DROCE_MAD_LEN];
	const struct droce_cm_stats *sb = droce_cm_stats(w->b.cm);

	/* a garbage MAD, a wrong Q_Key, a short MAD */
	memset(buf, 0x5A, sizeof(buf));
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_BAD_MAD);
	assert_int_equal(sb->mad_bad[DROCE_MAD_BAD_BASE_VERSION], 1);
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_DREQ, 1);
	m.u.dreq.remote_comm_id = 0x12345678;
	droce_mad_encode(buf, sizeof(buf), &m);
	inject(w, &w->b, buf, 0x12345678, DROCE_CM_RX_BAD_QKEY);
	assert_int_equal(droce_cm_input(w->b.cm, w->now, &w->a.addr, DROCE_QP1_QKEY, buf, 100),
			 DROCE_CM_RX_BAD_MAD);
	assert_int_equal(sb->mad_bad[DROCE_MAD_TRUNCATED], 1);
	/* a DREQ for a communication ID nobody has */
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_NO_MATCH);
	/* an unknown attribute */
	buf[17] = 0x30;
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_BAD_MAD);
	assert_int_equal(sb->mad_bad[DROCE_MAD_UNKNOWN_ATTR], 1);

	/* b's real connection, named by a third host: WRONG_PEER */
	droce_cm_disconnect(w->a.cm, w->now, a);
	struct droce_cm_out o;
	assert_int_equal(droce_cm_pop_mad(w->a.cm, &o), 1);
	struct droce_cm_addr evil = w->a.addr;
	evil.ip[3] = 66;
	assert_int_equal(droce_cm_input(w->b.cm, w->now, &evil, DROCE_QP1_QKEY, o.mad, DROCE_MAD_LEN),
			 DROCE_CM_RX_WRONG_PEER);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_ESTABLISHED);
	/* an RTU while established: nothing to do */
	memset(&m, 0, sizeof(m));
	droce_mad_decode(o.mad, DROCE_MAD_LEN, &m);
	struct droce_cm_msg rtu;
	memset(&rtu, 0, sizeof(rtu));
	droce_mad_hdr_init(&rtu.hdr, DROCE_CM_ATTR_RTU, 1);
	rtu.u.rtu.local_comm_id = m.u.dreq.local_comm_id;
	rtu.u.rtu.remote_comm_id = m.u.dreq.remote_comm_id;
	droce_mad_encode(buf, sizeof(buf), &rtu);
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_DUPLICATE);
	/* a REJ while established is not obeyed */
	struct droce_cm_msg rej;
	memset(&rej, 0, sizeof(rej));
	droce_mad_hdr_init(&rej.hdr, DROCE_CM_ATTR_REJ, 1);
	rej.u.rej.local_comm_id = m.u.dreq.local_comm_id;
	rej.u.rej.remote_comm_id = m.u.dreq.remote_comm_id;
	rej.u.rej.reason = DROCE_CM_REJ_TIMEOUT;
	droce_mad_encode(buf, sizeof(buf), &rej);
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_BAD_STATE);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_ESTABLISHED);
	expect_no_event(w->b.cm);
	/* the real DREQ still works */
	inject(w, &w->b, o.mad, DROCE_QP1_QKEY, DROCE_CM_RX_OK);
	expect_event(w->b.cm, DROCE_CM_EV_DISCONNECTED);
	assert_int_equal(sb->rx, 2 + 9); /* the handshake's REQ and RTU, 9 injected */
	assert_int_equal(sb->rx_result[DROCE_CM_RX_BAD_MAD], 3);
	assert_int_equal(sb->rx_result[DROCE_CM_RX_BAD_QKEY], 1);
	assert_int_equal(sb->rx_result[DROCE_CM_RX_NO_MATCH], 1);
	assert_int_equal(sb->rx_result[DROCE_CM_RX_WRONG_PEER], 1);
}

/* REQs b refuses: no private-data header, wrong transport, no room. */
static void test_bad_req(void **state)
{
	struct world *w = *state;
	assert_true(droce_cm_listen(w->b.cm, 7471) >= 0);
	int a = connect_a(w, 7471, NULL);
	struct droce_cm_out o;
	assert_int_equal(droce_cm_pop_mad(w->a.cm, &o), 1);
	struct droce_cm_msg m, rej;
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &m), DROCE_MAD_OK);
	uint8_t buf[DROCE_MAD_LEN];

	struct droce_cm_msg bad = m;
	bad.u.req.private_data[0] = 7; /* rdma_cm header version 7 */
	droce_mad_encode(buf, sizeof(buf), &bad);
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_REJECTED);
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &o), 1);
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &rej), DROCE_MAD_OK);
	assert_int_equal(rej.hdr.attr_id, DROCE_CM_ATTR_REJ);
	assert_int_equal(rej.u.rej.reason, DROCE_CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(rej.u.rej.remote_comm_id, m.u.req.local_comm_id);
	assert_int_equal(rej.u.rej.local_comm_id, 0);
	assert_int_equal(rej.u.rej.msg_rejected, DROCE_CM_MSG_REQ);
	assert_int_equal(rej.hdr.tid, m.hdr.tid);

	bad = m;
	bad.u.req.transport_type = 1; /* UC */
	droce_mad_encode(buf, sizeof(buf), &bad);
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_REJECTED);
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &o), 1);
	droce_mad_decode(o.mad, DROCE_MAD_LEN, &rej);
	assert_int_equal(rej.u.rej.reason, DROCE_CM_REJ_INVALID_TRANSPORT_TYPE);

	bad = m;
	bad.u.req.service_id = 0x0000000001110000ull | 7471; /* UDP port space */
	droce_mad_encode(buf, sizeof(buf), &bad);
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_REJECTED);
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &o), 1);
	droce_mad_decode(o.mad, DROCE_MAD_LEN, &rej);
	assert_int_equal(rej.u.rej.reason, DROCE_CM_REJ_INVALID_SERVICE_ID);

	/* b has 8 slots, one is the listener: the 8th REQ finds no room */
	for (uint32_t i = 0; i < 8; i++) {
		bad = m;
		bad.u.req.local_comm_id = 0x1000 + i;
		bad.u.req.local_qpn = 0x2000 + i; /* one QP each, or they are stale */
		droce_mad_encode(buf, sizeof(buf), &bad);
		inject(w, &w->b, buf, DROCE_QP1_QKEY, i < 7 ? DROCE_CM_RX_OK : DROCE_CM_RX_REJECTED);
	}
	while (droce_cm_pop_mad(w->b.cm, &o))
		droce_mad_decode(o.mad, DROCE_MAD_LEN, &rej);
	assert_int_equal(rej.u.rej.reason, DROCE_CM_REJ_NO_RESOURCES);
	expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	(void)a;
}

static void test_api_errors(void **state)
{
	struct world *w = *state;
	struct droce_cm_connect_param cp = { .dst = w->b.addr, .dst_port = 1, .qp = qp_a };
	char big[57] = { 0 };
	cp.private_data = big;
	cp.private_data_len = sizeof(big);
	assert_int_equal(droce_cm_connect(w->a.cm, w->now, &cp), -EINVAL);
	cp.private_data_len = 56;
	cp.qp.path_mtu = 6;
	assert_int_equal(droce_cm_connect(w->a.cm, w->now, &cp), -EINVAL);
	cp.qp.path_mtu = 3;
	cp.qp.qpn = 1u << 24;
	assert_int_equal(droce_cm_connect(w->a.cm, w->now, &cp), -EINVAL);
	cp.qp.qpn = 1;
	cp.dst.ip_version = 6;
	assert_int_equal(droce_cm_connect(w->a.cm, w->now, &cp), -EINVAL);
	cp.dst.ip_version = 5;
	assert_int_equal(droce_cm_connect(w->a.cm, w->now, &cp), -EINVAL);
	assert_int_equal(droce_cm_accept(w->a.cm, w->now, 0, &qp_b, NULL, 0), -EINVAL);
	assert_int_equal(droce_cm_accept(w->a.cm, w->now, -1, &qp_b, NULL, 0), -EINVAL);
	assert_int_equal(droce_cm_accept(w->a.cm, w->now, 1000, &qp_b, NULL, 0), -EINVAL);
	assert_int_equal(droce_cm_reject(w->a.cm, w->now, 3, NULL, 0), -EINVAL);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, 3), -EINVAL);
	assert_int_equal(droce_cm_disconnect(w->a.cm, w->now, 3), -EINVAL);
	cp.dst.ip_version = 4;
	int a = droce_cm_connect(w->a.cm, w->now, &cp);
	assert_true(a >= 0);
	assert_int_equal(droce_cm_disconnect(w->a.cm, w->now, a), -EBADFD);
	assert_int_equal(droce_cm_establish(w->a.cm, w->now, a), -EBADFD);
	assert_int_equal(droce_cm_reject(w->a.cm, w->now, a, NULL, 0), -EBADFD);
	/* slots run out */
	int n = 1;
	while (droce_cm_connect(w->a.cm, w->now, &cp) >= 0)
		n++;
	assert_int_equal(n, 8);
	assert_int_equal(droce_cm_connect(w->a.cm, w->now, &cp), -ENOSPC);
	assert_int_equal(droce_cm_listen(w->a.cm, 9), -ENOSPC);

	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	errno = 0;
	assert_null(droce_cm_create(&p)); /* no IP version */
	assert_int_equal(errno, EINVAL);
	p.local.ip_version = 4;
	p.max_cm_retries = 16;
	assert_null(droce_cm_create(&p));
	assert_string_equal(droce_cm_state_name(DROCE_CM_MRA_REQ_RCVD), "MRA_REQ_RCVD");
	assert_string_equal(droce_cm_state_name(DROCE_CM__STATE_COUNT), "INVALID");
	assert_string_equal(droce_cm_rx_name(DROCE_CM_RX_BAD_QKEY), "BAD_QKEY");
}

/* Queues that fill up lose MADs and events, counted, never overrun. */
static void test_queue_full(void **state)
{
	struct world *w = *state;
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local = w->a.addr;
	p.max_ids = 8;
	p.mad_queue = 2;
	struct droce_cm *cm = droce_cm_create(&p);
	assert_non_null(cm);
	struct droce_cm_connect_param cp = { .dst = w->b.addr, .dst_port = 1, .qp = qp_a };
	for (int i = 0; i < 5; i++)
		assert_true(droce_cm_connect(cm, w->now, &cp) >= 0);
	assert_int_equal(droce_cm_stats(cm)->mad_queue_full, 3);
	struct droce_cm_out o;
	int n = 0;
	while (droce_cm_pop_mad(cm, &o))
		n++;
	assert_int_equal(n, 2);
	droce_cm_destroy(cm);
}

/* The whole handshake over IPv6: GIDs and the rdma_cm header carry the
 * 16-byte addresses. */
static void test_ipv6(void **state)
{
	(void)state;
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local.ip_version = 6;
	p.local.ip[0] = 0xFD;
	p.local.ip[15] = 1;
	p.seed = 5;
	struct droce_cm *a = droce_cm_create(&p);
	struct droce_cm_addr aa = p.local;
	p.local.ip[15] = 2;
	p.seed = 6;
	struct droce_cm *b = droce_cm_create(&p);
	struct droce_cm_addr ba = p.local;
	assert_non_null(a);
	assert_non_null(b);
	int l = droce_cm_listen(b, 4791);
	struct droce_cm_connect_param cp = { .dst = ba, .dst_port = 4791, .src_port = 7, .qp = qp_a };
	int ia = droce_cm_connect(a, 0, &cp);
	assert_true(ia >= 0);
	struct droce_cm_out o;
	struct droce_cm_msg m;
	assert_int_equal(droce_cm_pop_mad(a, &o), 1);
	assert_memory_equal(o.dst.ip, ba.ip, 16);
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &m), DROCE_MAD_OK);
	assert_memory_equal(m.u.req.primary.local_gid, aa.ip, 16);
	assert_memory_equal(m.u.req.primary.remote_gid, ba.ip, 16);
	struct droce_cma_hdr h;
	assert_int_equal(droce_cma_hdr_decode(m.u.req.private_data, DROCE_CM_REQ_PD_LEN, &h), 0);
	assert_int_equal(h.ip_version, 6);
	assert_memory_equal(h.src_ip, aa.ip, 16);
	assert_int_equal(droce_cm_input(b, 0, &aa, DROCE_QP1_QKEY, o.mad, DROCE_MAD_LEN), DROCE_CM_RX_OK);
	struct droce_cm_event ev;
	assert_int_equal(droce_cm_pop_event(b, &ev), 1);
	assert_int_equal(ev.type, DROCE_CM_EV_CONNECT_REQUEST);
	assert_int_equal(ev.listen_id, l);
	assert_memory_equal(ev.peer.ip, aa.ip, 16);
	assert_int_equal(droce_cm_accept(b, 0, ev.id, &qp_b, NULL, 0), 0);
	assert_int_equal(droce_cm_pop_mad(b, &o), 1);
	assert_int_equal(droce_cm_input(a, 0, &ba, DROCE_QP1_QKEY, o.mad, DROCE_MAD_LEN), DROCE_CM_RX_OK);
	assert_int_equal(droce_cm_pop_event(a, &ev), 1);
	assert_int_equal(ev.type, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(droce_cm_establish(a, 0, ia), 0);
	assert_int_equal(droce_cm_pop_mad(a, &o), 1);
	assert_int_equal(droce_cm_input(b, 0, &aa, DROCE_QP1_QKEY, o.mad, DROCE_MAD_LEN), DROCE_CM_RX_OK);
	assert_int_equal(droce_cm_pop_event(b, &ev), 1);
	assert_int_equal(ev.type, DROCE_CM_EV_ESTABLISHED);
	droce_cm_destroy(a);
	droce_cm_destroy(b);
}

/* ---- against rxe's rdma_cm (the shared captures) ---- */

struct rxe_hs {
	unsigned n;
	uint8_t mad[5][DROCE_MAD_LEN];
};

static void grab(const struct wt_frame *f, void *arg)
{
	struct rxe_hs *hs = arg;
	struct droce_pkt p;
	if (strcmp(f->file, "rxe-write-read-ecn.pcap") != 0 || hs->n == 5 ||
	    droce_parse(f->data, f->len, &p, 0) != DROCE_PARSE_OK ||
	    p.h.bth.opcode != DROCE_OP_UD_SEND_ONLY || p.h.payload_len != DROCE_MAD_LEN)
		return;
	memcpy(hs->mad[hs->n++], p.payload, DROCE_MAD_LEN);
}

/* Our passive side takes rxe's REQ, our REP carries what rxe's does; our
 * active side's REQ, to the same peer, matches rxe's in every field that is
 * not an identifier, and takes rxe's REP. */
static void test_against_rxe(void **state)
{
	(void)state;
	struct rxe_hs hs = { 0 };
	if (wt_corpus_for_each(grab, &hs) < 0)
		skip();
	assert_int_equal(hs.n, 5);
	static const uint8_t act[4] = { 192, 168, 65, 5 }, pas[4] = { 192, 168, 65, 4 };
	struct droce_cm_addr aa = { .ip_version = 4 }, pa = { .ip_version = 4 };
	memcpy(aa.ip, act, 4);
	memcpy(pa.ip, pas, 4);
	struct droce_cm_msg rreq, rrep, ours;
	assert_int_equal(droce_mad_decode(hs.mad[0], DROCE_MAD_LEN, &rreq), DROCE_MAD_OK);
	assert_int_equal(droce_mad_decode(hs.mad[1], DROCE_MAD_LEN, &rrep), DROCE_MAD_OK);

	/* passive: rxe's REQ -> CONNECT_REQUEST with rxe's QP */
	struct droce_cm *b = make_cm(pas, 0x505400fffebf4369ull, 3);
	assert_true(droce_cm_listen(b, 0x1d2f) >= 0);
	assert_int_equal(droce_cm_input(b, 0, &aa, DROCE_QP1_QKEY, hs.mad[0], DROCE_MAD_LEN),
			 DROCE_CM_RX_OK);
	struct droce_cm_event ev;
	assert_int_equal(droce_cm_pop_event(b, &ev), 1);
	assert_int_equal(ev.type, DROCE_CM_EV_CONNECT_REQUEST);
	assert_int_equal(ev.src_port, 0x93d7);
	assert_int_equal(ev.remote.qpn, 0x11);
	assert_int_equal(ev.remote.start_psn, 0xe1a47d);
	assert_int_equal(ev.remote.path_mtu, 3);
	assert_int_equal(ev.remote.retry_count, 7);
	assert_int_equal(ev.remote.rnr_retry_count, 7);
	assert_int_equal(ev.remote.local_ack_timeout, 0x13);
	struct droce_cm_qp_attr q = { .qpn = rrep.u.rep.local_qpn, .start_psn = rrep.u.rep.starting_psn,
				      .responder_resources = 1, .initiator_depth = 1,
				      .rnr_retry_count = 7 };
	assert_int_equal(droce_cm_accept(b, 0, ev.id, &q, rrep.u.rep.private_data,
					 DROCE_CM_REP_PD_LEN), 0);
	struct droce_cm_out o;
	assert_int_equal(droce_cm_pop_mad(b, &o), 1);
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &ours), DROCE_MAD_OK);
	/* rxe's REP but for our own communication ID and TID: byte for byte */
	struct droce_cm_msg want = rrep;
	want.u.rep.local_comm_id = ours.u.rep.local_comm_id;
	uint8_t wbuf[DROCE_MAD_LEN];
	droce_mad_encode(wbuf, sizeof(wbuf), &want);
	assert_memory_equal(wbuf, o.mad, DROCE_MAD_LEN);
	droce_cm_destroy(b);

	/* active: our REQ to the same listener, rxe's REP back */
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local = aa;
	p.ca_guid = rreq.u.req.local_ca_guid;
	p.seed = 4;
	p.flow_label = rreq.u.req.primary.flow_label;
	struct droce_cm *a = droce_cm_create(&p); /* rdma_cm's defaults: timeout 20, 15 retries */
	assert_non_null(a);
	struct droce_cm_connect_param cp = {
		.dst = pa, .dst_port = 0x1d2f, .src_port = 0x93d7,
		.qp = { .qpn = 0x11, .start_psn = 0xe1a47d, .path_mtu = 3, .responder_resources = 1,
			.initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7,
			.local_ack_timeout = 0x13 },
	};
	int ia = droce_cm_connect(a, 0, &cp);
	assert_true(ia >= 0);
	assert_int_equal(droce_cm_pop_mad(a, &o), 1);
	assert_int_equal(droce_mad_decode(o.mad, DROCE_MAD_LEN, &ours), DROCE_MAD_OK);
	want = rreq;
	want.hdr.tid = ours.hdr.tid;
	want.u.req.local_comm_id = ours.u.req.local_comm_id;
	droce_mad_encode(wbuf, sizeof(wbuf), &want);
	assert_memory_equal(wbuf, o.mad, DROCE_MAD_LEN);

	rrep.u.rep.remote_comm_id = ours.u.req.local_comm_id;
	droce_mad_encode(wbuf, sizeof(wbuf), &rrep);
	assert_int_equal(droce_cm_input(a, 0, &pa, DROCE_QP1_QKEY, wbuf, DROCE_MAD_LEN), DROCE_CM_RX_OK);
	assert_int_equal(droce_cm_pop_event(a, &ev), 1);
	assert_int_equal(ev.type, DROCE_CM_EV_CONNECT_RESPONSE);
	assert_int_equal(ev.remote.qpn, 0x11);
	assert_int_equal(ev.remote.start_psn, 0x8c84dd);
	assert_int_equal(droce_cm_establish(a, 0, ia), 0);
	/* our RTU is rxe's RTU for these IDs */
	assert_int_equal(droce_cm_pop_mad(a, &o), 1);
	struct droce_cm_msg rrtu;
	assert_int_equal(droce_mad_decode(hs.mad[2], DROCE_MAD_LEN, &rrtu), DROCE_MAD_OK);
	rrtu.hdr.tid = ours.hdr.tid;
	rrtu.u.rtu.local_comm_id = ours.u.req.local_comm_id;
	droce_mad_encode(wbuf, sizeof(wbuf), &rrtu);
	assert_memory_equal(wbuf, o.mad, DROCE_MAD_LEN);
	droce_cm_destroy(a);
}

/* ---- what a stranger on the network may make the CM do ---- */

/* The REQ a sent last (its communication ID and TID), as the wire shows it. */
static struct droce_cm_msg last_req(struct world *w)
{
	struct droce_cm_msg m;
	assert_int_equal(droce_mad_decode(w->a.last[0x10], DROCE_MAD_LEN, &m), DROCE_MAD_OK);
	return m;
}

/* A spoofed MRA (the ID read off the wire, a made-up Local Communication
 * ID, the longest service timeout) must neither become the peer's ID, so
 * that the real REP still matches, nor hold a's REQ back for 2.4 hours.
 * Before: a stored 0xdeadbeef as b's ID, refused b's REP as WRONG_PEER and
 * waited 2^31 * 4 us. */
static void test_spoofed_mra(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	struct droce_cm_msg req = last_req(w), m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_MRA, req.hdr.tid);
	m.u.mra.local_comm_id = 0xdeadbeef;
	m.u.mra.remote_comm_id = req.u.req.local_comm_id;
	m.u.mra.msg_mraed = DROCE_CM_MSG_REQ;
	m.u.mra.service_timeout = 31;
	uint8_t buf[DROCE_MAD_LEN];
	droce_mad_encode(buf, sizeof(buf), &m);
	inject(w, &w->a, buf, DROCE_QP1_QKEY, DROCE_CM_RX_OK);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_MRA_REQ_RCVD);
	/* capped at max_peer_timeout (21: 8.6 s) plus the round trip */
	assert_true(droce_cm_next_timer(w->a.cm) <= w->now + droce_cm_timeout_ns(21) + 2 * 100000);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, b, &qp_b, NULL, 0), 0);
	pump(w);
	assert_int_equal(w->a.last_rx, DROCE_CM_RX_OK);
	expect_event(w->a.cm, DROCE_CM_EV_CONNECT_RESPONSE);
	ASSERT_STATE(w->a.cm, a, DROCE_CM_REP_RCVD);
}

/* Without a seed, communication IDs come from getrandom(): two CMs made
 * alike (same address, same GUID) draw different ones. With a seed they
 * repeat exactly (the replay and the simulator depend on it). Before, seed
 * 0 gave every CM the same sequence. */
static void test_ids_unpredictable(void **state)
{
	(void)state;
	static const uint8_t ip[4] = {198, 18, 0, 9};
	struct droce_cm *x = make_cm(ip, 7, 0), *y = make_cm(ip, 7, 0);
	struct droce_cm *s1 = make_cm(ip, 7, 42), *s2 = make_cm(ip, 7, 42);
	struct droce_cm_connect_param cp = {.dst = {.ip_version = 4, .ip = {198, 18, 0, 1}},
					    .dst_port = 1, .qp = qp_a};
	struct droce_cm_out ox, oy, o1, o2;
	struct droce_cm_msg mx, my, m1, m2;
	unsigned same = 0;
	for (int i = 0; i < 4; i++) {
		assert_true(droce_cm_connect(x, 1, &cp) >= 0);
		assert_true(droce_cm_connect(y, 1, &cp) >= 0);
		assert_true(droce_cm_connect(s1, 1, &cp) >= 0);
		assert_true(droce_cm_connect(s2, 1, &cp) >= 0);
		droce_cm_pop_mad(x, &ox), droce_cm_pop_mad(y, &oy);
		droce_cm_pop_mad(s1, &o1), droce_cm_pop_mad(s2, &o2);
		droce_mad_decode(ox.mad, DROCE_MAD_LEN, &mx), droce_mad_decode(oy.mad, DROCE_MAD_LEN, &my);
		droce_mad_decode(o1.mad, DROCE_MAD_LEN, &m1), droce_mad_decode(o2.mad, DROCE_MAD_LEN, &m2);
		same += mx.u.req.local_comm_id == my.u.req.local_comm_id;
		assert_int_equal(m1.u.req.local_comm_id, m2.u.req.local_comm_id);
		assert_true(m1.hdr.tid == m2.hdr.tid);
		assert_int_not_equal(droce_cm_random(x), droce_cm_random(y));
	}
	assert_int_equal(same, 0);
	assert_int_equal(droce_cm_stats(x)->rng_fallback, 0);
	droce_cm_destroy(x), droce_cm_destroy(y), droce_cm_destroy(s1), droce_cm_destroy(s2);
}

/* A REQ the consumer never answers: after the MRA service timeout (12:
 * 16.8 ms here) the slot is free, the consumer gets TIMEOUT (state
 * REQ_RCVD) and the active side REJ 4. A resent REQ (answered with an
 * MRA) moves the deadline, but never past four spans after the first.
 * Before, the slot stayed in REQ_RCVD for ever. */
static void test_req_rcvd_deadline(void **state)
{
	struct world *w = *state;
	int a;
	int b = to_req_rcvd(w, &a);
	w->a.drop[0x10] = 100; /* a's resent REQs are lost: nothing moves the deadline */
	uint64_t t0 = w->now;
	while (droce_cm_id_state(w->b.cm, b) != DROCE_CM_IDLE && w->now < t0 + 100 * MS)
		advance(w, MS);
	ASSERT_STATE(w->b.cm, b, DROCE_CM_IDLE);
	assert_true(w->now - t0 >= 16 * MS && w->now - t0 <= 19 * MS);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(ev.id, b);
	assert_int_equal(ev.state, DROCE_CM_REQ_RCVD);
	assert_int_equal(w->b.sent[0x12], 1);
	struct droce_cm_msg rej;
	droce_mad_decode(w->b.last[0x12], DROCE_MAD_LEN, &rej);
	assert_int_equal(rej.u.rej.reason, DROCE_CM_REJ_TIMEOUT);
	assert_int_equal(droce_cm_stats(w->b.cm)->req_rcvd_timeouts, 1);
	ev = expect_event(w->a.cm, DROCE_CM_EV_REJECTED);
	assert_int_equal(ev.reason, DROCE_CM_REJ_TIMEOUT);

	/* resent REQs keep the consumer's time going, within the bound */
	struct world *v = w;
	v->a.drop[0x10] = 0;
	a = connect_a(v, 7471, NULL);
	pump(v);
	b = expect_event(v->b.cm, DROCE_CM_EV_CONNECT_REQUEST).id;
	t0 = v->now;
	bool gone = false;
	while (!gone && v->now < t0 + 200 * MS) {
		advance(v, MS);
		gone = droce_cm_pop_event(v->b.cm, &ev) == 1;
		if (gone)
			break;
		uint8_t again[DROCE_MAD_LEN];
		memcpy(again, v->a.last[0x10], DROCE_MAD_LEN);
		droce_cm_input(v->b.cm, v->now, &v->a.addr, DROCE_QP1_QKEY, again, DROCE_MAD_LEN);
	}
	assert_true(gone);
	assert_int_equal(ev.type, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(ev.id, b);
	assert_true(v->now - t0 > 17 * MS); /* moved on by the resends ... */
	assert_true(v->now - t0 <= 4 * 17 * MS + 2 * MS); /* ... within four spans */
}

/* A REQ asking for the longest waits (local CM response timeout 31,
 * 15 retries): our REP's retries follow our own caps, max_peer_timeout and
 * max_cm_retries (3 here). Before, b resent its REP 15 times 2.4 hours apart. */
static void test_peer_timeout_capped(void **state)
{
	struct world *w = *state;
	assert_true(droce_cm_listen(w->b.cm, 7471) >= 0);
	connect_a(w, 7471, NULL);
	struct droce_cm_out o;
	assert_int_equal(droce_cm_pop_mad(w->a.cm, &o), 1);
	struct droce_cm_msg m;
	droce_mad_decode(o.mad, DROCE_MAD_LEN, &m);
	m.u.req.local_cm_response_timeout = 31;
	m.u.req.max_cm_retries = 15;
	uint8_t buf[DROCE_MAD_LEN];
	droce_mad_encode(buf, sizeof(buf), &m);
	inject(w, &w->b, buf, DROCE_QP1_QKEY, DROCE_CM_RX_OK);
	struct droce_cm_event ev = expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	assert_int_equal(droce_cm_accept(w->b.cm, w->now, ev.id, &qp_b, NULL, 0), 0);
	while (droce_cm_pop_mad(w->b.cm, &o))
		;
	assert_true(droce_cm_next_timer(w->b.cm) <= w->now + droce_cm_timeout_ns(21) + 2 * 100000);
	unsigned reps = 0;
	for (int i = 0; i < 30 && droce_cm_id_state(w->b.cm, ev.id) != DROCE_CM_IDLE; i++) {
		uint64_t t = droce_cm_next_timer(w->b.cm);
		w->now = t;
		droce_cm_poll(w->b.cm, w->now);
		while (droce_cm_pop_mad(w->b.cm, &o))
			reps += droce_get_be16(o.mad + 16) == DROCE_CM_ATTR_REP;
	}
	ASSERT_STATE(w->b.cm, ev.id, DROCE_CM_IDLE);
	assert_int_equal(reps, 3);
	expect_event(w->b.cm, DROCE_CM_EV_TIMEOUT);
}

static void req_from(struct world *w, const uint8_t ip[4], uint32_t lcid, uint16_t port,
		     const uint8_t *hw, enum droce_cm_rx want)
{
	uint8_t buf[DROCE_MAD_LEN];
	test_req_mad(buf, ip, w->b.addr.ip, port, lcid);
	struct droce_cm_addr src = {.ip_version = 4};
	memcpy(src.ip, ip, 4);
	enum droce_cm_rx got = droce_cm_input_hw(w->b.cm, w->now, &src, hw, DROCE_QP1_QKEY, buf,
						 DROCE_MAD_LEN);
	if (got != want)
		fail_msg("REQ %#x: %s, want %s", lcid, droce_cm_rx_name(got), droce_cm_rx_name(want));
}

/* Half-open connections: one source holds at most max_per_source, all at
 * most max_half_open; a REQ beyond takes the oldest one's place (TIMEOUT
 * with reason 3 to the consumer, REJ 3 to that peer), so a flood never
 * locks a newcomer out. Before, the flood's REQs held every slot and the
 * newcomer got REJ 3 (with 8 slots) for as long as the flood lasted. */
static void test_half_open_limits(void **state)
{
	struct world *w = *state;
	droce_cm_destroy(w->b.cm);
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local = w->b.addr;
	p.seed = 3;
	p.max_ids = 16;
	p.max_half_open = 6;
	p.max_per_source = 3;
	w->b.cm = droce_cm_create(&p);
	assert_non_null(w->b.cm);
	assert_true(droce_cm_listen(w->b.cm, 7471) >= 0);
	static const uint8_t x[4] = {10, 0, 0, 1}, y[4] = {10, 0, 0, 2}, z[4] = {10, 0, 0, 3};
	struct droce_cm_event ev;
	int first = -1;
	for (uint32_t i = 1; i <= 3; i++) {
		req_from(w, x, 0x100 + i, 7471, NULL, DROCE_CM_RX_OK);
		ev = expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
		if (first < 0)
			first = ev.id;
		w->now += 1000;
	}
	/* x's fourth: its oldest makes room */
	req_from(w, x, 0x104, 7471, NULL, DROCE_CM_RX_OK);
	ev = expect_event(w->b.cm, DROCE_CM_EV_TIMEOUT);
	assert_int_equal(ev.id, first);
	assert_int_equal(ev.reason, DROCE_CM_REJ_NO_RESOURCES);
	expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	struct droce_cm_out o;
	struct droce_cm_msg rej;
	while (droce_cm_pop_mad(w->b.cm, &o))
		droce_mad_decode(o.mad, DROCE_MAD_LEN, &rej);
	assert_int_equal(rej.hdr.attr_id, DROCE_CM_ATTR_REJ);
	assert_int_equal(rej.u.rej.reason, DROCE_CM_REJ_NO_RESOURCES);
	assert_int_equal(rej.u.rej.remote_comm_id, 0x101);
	/* y fills the rest; then z's REQ takes the oldest of all (x's 0x102) */
	for (uint32_t i = 1; i <= 3; i++) {
		w->now += 1000;
		req_from(w, y, 0x200 + i, 7471, NULL, DROCE_CM_RX_OK);
		expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	}
	req_from(w, z, 0x301, 7471, NULL, DROCE_CM_RX_OK);
	ev = expect_event(w->b.cm, DROCE_CM_EV_TIMEOUT);
	assert_memory_equal(ev.peer.ip, x, 4);
	expect_event(w->b.cm, DROCE_CM_EV_CONNECT_REQUEST);
	assert_int_equal(droce_cm_stats(w->b.cm)->evicted, 2);
	assert_int_equal(droce_cm_stats(w->b.cm)->evicted_source, 1);
}

/* REJs to REQs that made no connection: to the frame's link source when
 * given (no resolution), and at most rej_rate (16) in a burst per source;
 * the rest dropped (RATE_LIMITED), the bucket refilling at 16/s. */
static void test_rej_rate_and_source(void **state)
{
	struct world *w = *state;
	static const uint8_t x[4] = {10, 0, 0, 1}, hw[6] = {2, 0xaa, 0, 0, 0, 9};
	struct droce_cm_out o;
	req_from(w, x, 0x11, 9, hw, DROCE_CM_RX_REJECTED);
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &o), 1);
	assert_true(o.has_dst_hw);
	assert_memory_equal(o.dst_hw, hw, 6);
	req_from(w, x, 0x12, 9, NULL, DROCE_CM_RX_REJECTED);
	assert_int_equal(droce_cm_pop_mad(w->b.cm, &o), 1);
	assert_false(o.has_dst_hw);
	for (uint32_t i = 0; i < 14; i++)
		req_from(w, x, 0x20 + i, 9, hw, DROCE_CM_RX_REJECTED);
	req_from(w, x, 0x40, 9, hw, DROCE_CM_RX_RATE_LIMITED);
	req_from(w, x, 0x41, 9, hw, DROCE_CM_RX_RATE_LIMITED);
	/* another source has its own bucket */
	static const uint8_t y[4] = {10, 0, 0, 2};
	req_from(w, y, 0x42, 9, hw, DROCE_CM_RX_REJECTED);
	/* a second later x has 16 again */
	w->now += 1000 * MS;
	for (uint32_t i = 0; i < 16; i++)
		req_from(w, x, 0x50 + i, 9, hw, DROCE_CM_RX_REJECTED);
	req_from(w, x, 0x70, 9, hw, DROCE_CM_RX_RATE_LIMITED);
	/* matched connections' MADs carry no link address */
	int a;
	w->now += 1000 * MS;
	while (droce_cm_pop_mad(w->b.cm, &o))
		;
	establish(w, &a);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_handshake),
		T(test_no_listener),
		T(test_consumer_reject),
		T(test_active_rejects_rep),
		T(test_lost_rep_and_req),
		T(test_duplicate_req),
		T(test_mra_for_rep),
		T(test_mra_for_rep_expires),
		T(test_dreq_before_rtu),
		T(test_lost_rtu),
		T(test_all_rtus_lost),
		T(test_comm_est),
		T(test_timeout_rej_frees_passive),
		T(test_stale_connection),
		T(test_peer_vanishes_before_rep),
		T(test_peer_vanishes_after_req),
		T(test_disconnect),
		T(test_lost_drep),
		T(test_dreq_timeout),
		T(test_simultaneous_dreq),
		T(test_bad_input),
		T(test_bad_req),
		T(test_api_errors),
		T(test_queue_full),
		T(test_ipv6),
		T(test_against_rxe),
		T(test_spoofed_mra),
		T(test_ids_unpredictable),
		T(test_req_rcvd_deadline),
		T(test_peer_timeout_capped),
		T(test_half_open_limits),
		T(test_rej_rate_and_source),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
