/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the CM: the MAD codec and the state machine
 * (stack/cm). Any input must go through without a crash, an out-of-bounds
 * read or undefined behaviour (built with -fsanitize=fuzzer,address,undefined),
 * and on top of that:
 *  - the codec: the input as a MAD (and, when it is a RoCE frame carrying a
 *    UD SEND, its payload: the seeds hold the rxe captures' CM frames) gives
 *    a known result; an accepted MAD re-encodes to 256 bytes that decode to
 *    the same message and encode to the same bytes again;
 *  - the state machine: two CM endpoints start a real handshake and the
 *    input drives them in 3-byte steps (deliver the next MAD one way or the
 *    other, optionally with one byte flipped; advance the clock; act as a
 *    consumer: accept, reject, establish, disconnect, connect; inject with a
 *    wrong Q_Key or from a stranger). Every MAD either CM emits decodes OK,
 *    every event is a known type for a valid id, every id is in a known state.
 * A violated check aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"
#include "cm/mad.h"
#include "wire/opcode.h"
#include "wire/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "fuzz_mad: check failed: %s: ", #cond); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			abort();                                             \
		}                                                            \
	} while (0)

static void check_codec(const uint8_t *b, size_t n)
{
	struct droce_cm_msg m, m2;
	uint8_t e1[DROCE_MAD_LEN], e2[DROCE_MAD_LEN];
	enum droce_mad_result r = droce_mad_decode(b, n, &m);
	CHECK((unsigned)r < DROCE_MAD__COUNT, "result %d", (int)r);
	CHECK(droce_mad_result_name(r) && droce_mad_result_str(r), "names");
	if (r != DROCE_MAD_OK)
		return;
	CHECK(n == DROCE_MAD_LEN, "accepted %zu bytes", n);
	CHECK(droce_mad_encode(e1, sizeof(e1), &m) == DROCE_MAD_LEN, "encode refuses a decoded MAD");
	r = droce_mad_decode(e1, sizeof(e1), &m2);
	CHECK(r == DROCE_MAD_OK, "re-encoded MAD: %s", droce_mad_result_name(r));
	CHECK(memcmp(&m, &m2, sizeof(m)) == 0, "re-encoded MAD decodes differently");
	CHECK(droce_mad_encode(e2, sizeof(e2), &m2) == DROCE_MAD_LEN, "encode");
	CHECK(memcmp(e1, e2, sizeof(e1)) == 0, "encoding not stable");
	/* the common header's every field survives; only its reserved
	 * bytes 18-19 are written as zero (13.4.2) */
	CHECK(memcmp(e1, b, 18) == 0 && memcmp(e1 + 20, b + 20, 4) == 0, "MAD header changed");
}

#define FIFO 32

struct end {
	struct droce_cm *cm;
	struct droce_cm_addr addr;
	uint8_t q[FIFO][DROCE_MAD_LEN]; /* MADs on the wire towards the other end */
	unsigned head, len;
};

static void drain(struct end *e)
{
	struct droce_cm_out o;
	struct droce_cm_msg m;
	while (droce_cm_pop_mad(e->cm, &o)) {
		enum droce_mad_result r = droce_mad_decode(o.mad, sizeof(o.mad), &m);
		CHECK(r == DROCE_MAD_OK, "the CM sent a MAD it refuses: %s", droce_mad_result_name(r));
		CHECK(o.dqpn == DROCE_QP1 && o.qkey == DROCE_QP1_QKEY, "QP1 addressing");
		if (e->len < FIFO)
			memcpy(e->q[(e->head + e->len++) % FIFO], o.mad, DROCE_MAD_LEN);
	}
}

static int take_event(struct end *e, unsigned max_ids, struct droce_cm_event *ev)
{
	if (!droce_cm_pop_event(e->cm, ev))
		return 0;
	CHECK((unsigned)ev->type <= DROCE_CM_EV_TIMEWAIT_EXIT, "event %d", (int)ev->type);
	CHECK(ev->id >= 0 && (unsigned)ev->id < max_ids, "event id %d", ev->id);
	CHECK(ev->private_data_len <= DROCE_CM_PD_MAX, "private data %zu", ev->private_data_len);
	return 1;
}

static struct droce_cm *make(const struct droce_cm_addr *a, uint64_t seed)
{
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local = *a;
	p.seed = seed;
	p.max_ids = 4;
	p.mad_queue = 8;
	p.event_queue = 8;
	p.response_timeout = 8;
	p.max_cm_retries = 2;
	p.packet_lifetime_ns = 10000;
	p.timewait_ns = 100000;
	struct droce_cm *cm = droce_cm_create(&p);
	CHECK(cm != NULL, "create");
	return cm;
}

static void run_cm(const uint8_t *data, size_t size)
{
	static struct end ends[2]; /* large; reset below for every input */
	struct end *a = &ends[0], *b = &ends[1];
	uint64_t now = 1000000000ull;
	memset(ends, 0, sizeof(ends));
	a->addr.ip_version = b->addr.ip_version = 4;
	a->addr.ip[0] = b->addr.ip[0] = 198;
	a->addr.ip[1] = b->addr.ip[1] = 18;
	a->addr.ip[3] = 1;
	b->addr.ip[3] = 2;
	a->cm = make(&a->addr, 1);
	b->cm = make(&b->addr, 2);
	CHECK(droce_cm_listen(b->cm, 7471) >= 0, "listen");
	struct droce_cm_connect_param cp = {
		.dst = b->addr, .dst_port = 7471, .src_port = 1,
		.qp = { .qpn = 0x11, .start_psn = 0x123456, .path_mtu = 3, .responder_resources = 1,
			.initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7 },
	};
	const struct droce_cm_qp_attr qp_b = { .qpn = 0x17, .start_psn = 0x654321 };
	uint8_t pd[DROCE_CM_PD_MAX];
	for (size_t k = 0; k < sizeof(pd); k++)
		pd[k] = size ? data[k % size] : 0;
	CHECK(droce_cm_connect(a->cm, now, &cp) >= 0, "connect");
	drain(a);

	for (size_t i = 0; i + 3 <= size; i += 3) {
		uint8_t ctl = data[i], pos = data[i + 1], x = data[i + 2];
		struct end *from = ctl & 0x10 ? b : a, *to = from == a ? b : a;
		struct droce_cm_event ev;
		switch (ctl & 7) {
		case 0: /* deliver the next MAD, maybe with one byte flipped */
		case 1:
			if (from->len) {
				uint8_t *mad = from->q[from->head];
				if (ctl & 8)
					mad[pos] ^= x;
				enum droce_cm_rx r = droce_cm_input(to->cm, now, &from->addr,
								    DROCE_QP1_QKEY, mad, DROCE_MAD_LEN);
				CHECK((unsigned)r < DROCE_CM_RX__COUNT, "rx %d", (int)r);
				from->head = (from->head + 1) % FIFO;
				from->len--;
			}
			break;
		case 2: /* time passes */
			now += ((uint64_t)pos + 1) << (x & 15) << 10;
			droce_cm_poll(a->cm, now);
			droce_cm_poll(b->cm, now);
			CHECK(droce_cm_next_timer(a->cm) > now && droce_cm_next_timer(b->cm) > now,
			      "a timer due after poll");
			break;
		case 3: /* the consumer of one end answers its next event */
			if (take_event(from, 4, &ev)) {
				if (ev.type == DROCE_CM_EV_CONNECT_REQUEST)
					(void)(x & 1 ? droce_cm_accept(from->cm, now, ev.id, &qp_b, pd, pos % 200)
						     : droce_cm_reject(from->cm, now, ev.id, pd, pos % 150));
				else if (ev.type == DROCE_CM_EV_CONNECT_RESPONSE)
					(void)(x & 1 ? droce_cm_establish(from->cm, now, ev.id)
						     : droce_cm_reject(from->cm, now, ev.id, NULL, 0));
			}
			break;
		case 4: /* any call on any id: must fail cleanly when not valid */
			switch (x & 3) {
			case 0: (void)droce_cm_disconnect(from->cm, now, pos % 6 - 1); break;
			case 1: (void)droce_cm_accept(from->cm, now, pos % 6 - 1, &qp_b, NULL, 0); break;
			case 2: (void)droce_cm_establish(from->cm, now, pos % 6 - 1); break;
			default: (void)droce_cm_reject(from->cm, now, pos % 6 - 1, NULL, 0); break;
			}
			break;
		case 5:
			cp.dst_port = x & 1 ? 7471 : pos;
			(void)droce_cm_connect(from->cm, now, &cp);
			break;
		case 6: /* the next MAD with a wrong Q_Key, or from a stranger */
			if (from->len) {
				struct droce_cm_addr s = from->addr;
				s.ip[3] = pos;
				(void)droce_cm_input(to->cm, now, &s, x & 1 ? DROCE_QP1_QKEY : x,
						     from->q[from->head], DROCE_MAD_LEN);
			}
			break;
		default: /* the next MAD twice */
			if (from->len)
				for (int k = 0; k < 2; k++)
					(void)droce_cm_input(to->cm, now, &from->addr, DROCE_QP1_QKEY,
							     from->q[from->head], DROCE_MAD_LEN);
			break;
		}
		drain(a);
		drain(b);
		for (int id = -1; id <= 4; id++) {
			CHECK((unsigned)droce_cm_id_state(a->cm, id) < DROCE_CM__STATE_COUNT, "state");
			CHECK((unsigned)droce_cm_id_state(b->cm, id) < DROCE_CM__STATE_COUNT, "state");
		}
	}
	struct droce_cm_event ev;
	while (take_event(a, 4, &ev) || take_event(b, 4, &ev))
		;
	droce_cm_destroy(a->cm);
	droce_cm_destroy(b->cm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_codec(data, size);
	struct droce_pkt p;
	if (droce_parse(data, size, &p, DROCE_PARSE_F_NO_ICRC) == DROCE_PARSE_OK &&
	    (p.op->hdrs & DROCE_HDR_DETH))
		check_codec(p.payload, p.h.payload_len);
	run_cm(data, size);
	return 0;
}
