/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the CM state machine under attack (stack/cm): a
 * server CM with a listener, a legitimate client CM connecting to it, and
 * an attacker whose MADs the input writes: any message type, from one of
 * eight addresses of its own or spoofing the client's or the server's,
 * with IDs that are made up, or the ones an on-path observer saw (never
 * both of a connection's at once: that attacker is out of scope, see
 * docs/security.md). The input, 4 bytes a step, interleaves the attacker,
 * the legitimate MADs both ways, the consumers (accept, reject, establish,
 * disconnect, connect again) and the clock. After every step, beyond no
 * crash and no undefined behaviour (-fsanitize=fuzzer,address,undefined):
 *  - the server holds at most max_half_open passive connections not yet
 *    established, at most max_per_source from one address;
 *  - every timer is bounded: no wait a peer asked for exceeds the
 *    caps (max_peer_timeout, our response timeout, the MRA service
 *    timeout, TIMEWAIT), and a REQ the consumer has not answered has a
 *    deadline;
 *  - an MRA never gives a connection its peer's ID: the client's remote
 *    ID is 0 or the server's real one;
 *  - once both sides are established, nothing the attacker sends ends or
 *    changes the connection (only the consumers' own disconnect does);
 *  - every MAD either CM emits decodes, every event names a valid id.
 * A violated check aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"
#include "cm/cm_int.h"
#include "cm/mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "fuzz_cm: check failed: %s: ", #cond); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			abort();                                             \
		}                                                            \
	} while (0)

#define IDS 16u
#define HALF_OPEN 8u
#define PER_SOURCE 3u
#define FIFO 32u
#define LIFETIME 10000ull
#define TIMEWAIT 100000ull

struct end {
	struct droce_cm *cm;
	struct droce_cm_addr addr;
	uint8_t q[FIFO][DROCE_MAD_LEN]; /* legitimate MADs on their way to the other end */
	unsigned head, len;
};

struct world {
	struct end srv, cli;
	uint64_t now;
	int cli_id, srv_id;            /* the legitimate connection, -1 when none */
	bool up;                       /* both ESTABLISHED */
	uint32_t cli_lcid, srv_lcid;   /* what the wire showed */
	uint32_t srv_lcids[8];         /* every ID the server's REPs to this REQ gave (a
					  connection evicted and made again gives a new one) */
	unsigned n_srv_lcids;
	uint32_t up_rcid_cli, up_rcid_srv;
};

static struct droce_cm *make(const struct droce_cm_addr *a, uint64_t seed)
{
	struct droce_cm_params p;
	memset(&p, 0, sizeof(p));
	p.local = *a;
	p.seed = seed;
	p.ca_guid = seed;
	p.max_ids = IDS;
	p.mad_queue = 16;
	p.event_queue = 16;
	p.response_timeout = 8;
	p.max_cm_retries = 2;
	p.packet_lifetime_ns = LIFETIME;
	p.timewait_ns = TIMEWAIT;
	p.max_half_open = HALF_OPEN;
	p.max_per_source = PER_SOURCE;
	p.max_peer_timeout = 12;
	p.rej_rate = 4;
	struct droce_cm *cm = droce_cm_create(&p);
	CHECK(cm != NULL, "create");
	return cm;
}

/* Legitimate MADs: decoded (must be), remembered for delivery, IDs noted. */
static void drain(struct world *w, struct end *e)
{
	struct droce_cm_out o;
	struct droce_cm_msg m;
	while (droce_cm_pop_mad(e->cm, &o)) {
		enum droce_mad_result r = droce_mad_decode(o.mad, sizeof(o.mad), &m);
		CHECK(r == DROCE_MAD_OK, "the CM sent a MAD it refuses: %s", droce_mad_result_name(r));
		struct end *to = e == &w->srv ? &w->cli : &w->srv;
		if (!droce_cm_addr_eq(&o.dst, &to->addr))
			continue; /* to the attacker's addresses: nobody answers */
		if (e == &w->cli && m.hdr.attr_id == DROCE_CM_ATTR_REQ)
			w->cli_lcid = m.u.req.local_comm_id;
		if (e == &w->srv && m.hdr.attr_id == DROCE_CM_ATTR_REP && m.u.rep.remote_comm_id == w->cli_lcid)
		{
			/* not a REP to a REQ spoofed in the client's name */
			w->srv_lcid = m.u.rep.local_comm_id;
			w->srv_lcids[w->n_srv_lcids++ % 8] = m.u.rep.local_comm_id;
		}
		if (e->len < FIFO)
			memcpy(e->q[(e->head + e->len++) % FIFO], o.mad, DROCE_MAD_LEN);
	}
}

static uint64_t max_wait(const struct droce_cm *cm)
{
	uint8_t t = cm->p.max_peer_timeout;
	if (cm->p.response_timeout > t)
		t = cm->p.response_timeout;
	if (cm->p.mra_service_timeout > t)
		t = cm->p.mra_service_timeout;
	uint64_t w = droce_cm_timeout_ns(t) + 2 * cm->p.packet_lifetime_ns;
	return w > cm->p.timewait_ns ? w : cm->p.timewait_ns;
}

static void check_end(struct world *w, const struct end *e)
{
	const struct droce_cm *cm = e->cm;
	unsigned half = 0, per[256] = {0};
	for (unsigned i = 0; i < IDS; i++) {
		const struct cm_id *c = &cm->ids[i];
		CHECK((unsigned)c->state < DROCE_CM__STATE_COUNT, "state %d", (int)c->state);
		if (c->state == DROCE_CM_IDLE)
			continue;
		if (c->deadline)
			CHECK(c->deadline <= w->now + max_wait(cm), "id %u waits %llu ns", i,
			      (unsigned long long)(c->deadline - w->now));
		bool ho = !c->active && (c->state == DROCE_CM_REQ_RCVD || c->state == DROCE_CM_MRA_REQ_SENT ||
					 c->state == DROCE_CM_REP_SENT || c->state == DROCE_CM_MRA_REP_RCVD);
		if (!ho)
			continue;
		CHECK(c->deadline != 0, "half-open id %u has no timer", i);
		half++;
		per[c->peer.ip[3]]++;
		CHECK(per[c->peer.ip[3]] <= PER_SOURCE, "source .%u holds %u", c->peer.ip[3],
		      per[c->peer.ip[3]]);
	}
	CHECK(half <= HALF_OPEN, "%u half-open", half);
	CHECK(droce_cm_mads_queued(cm) <= 16, "queue");
}

static void take_events(struct world *w, struct end *e, bool answer, uint8_t x)
{
	struct droce_cm_event ev;
	static const struct droce_cm_qp_attr qp_s = {.qpn = 0x17, .start_psn = 0x654321};
	while (droce_cm_pop_event(e->cm, &ev)) {
		CHECK((unsigned)ev.type <= DROCE_CM_EV_TIMEWAIT_EXIT, "event %d", (int)ev.type);
		CHECK(ev.id >= 0 && (unsigned)ev.id < IDS, "event id %d", ev.id);
		bool legit_peer = droce_cm_addr_eq(&ev.peer, e == &w->srv ? &w->cli.addr : &w->srv.addr);
		int *mine = e == &w->srv ? &w->srv_id : &w->cli_id;
		switch (ev.type) {
		case DROCE_CM_EV_CONNECT_REQUEST:
			/* the server answers its legitimate client (accept), the
			 * rest as the input says (accept or leave waiting) */
			if (legit_peer && w->srv_id < 0 && droce_cm_accept(e->cm, w->now, ev.id, &qp_s, NULL, 0) == 0)
				w->srv_id = ev.id;
			else if (!legit_peer && answer && (x & 1))
				(void)droce_cm_accept(e->cm, w->now, ev.id, &qp_s, NULL, 0);
			break;
		case DROCE_CM_EV_CONNECT_RESPONSE:
			if (ev.id == w->cli_id)
				CHECK(droce_cm_establish(e->cm, w->now, ev.id) == 0, "establish");
			break;
		case DROCE_CM_EV_ESTABLISHED:
			break;
		default:
			/* the legitimate connection ends: only allowed before it is
			 * up on both sides, or by the consumers (w->up cleared) */
			if (ev.id == *mine) {
				CHECK(!w->up, "the attacker ended an established connection (%s)",
				      droce_cm_event_name(ev.type));
				if (ev.type != DROCE_CM_EV_DISCONNECTED)
					*mine = -1;
			}
			break;
		}
	}
}

/* One attacker MAD, made from 4 input bytes. */
static void attack(struct world *w, const uint8_t *in)
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	static const uint16_t attrs[] = {DROCE_CM_ATTR_REQ, DROCE_CM_ATTR_MRA, DROCE_CM_ATTR_REJ,
					 DROCE_CM_ATTR_REP, DROCE_CM_ATTR_RTU, DROCE_CM_ATTR_DREQ,
					 DROCE_CM_ATTR_DREP};
	uint16_t attr = attrs[in[1] % 7];
	bool to_cli = in[1] & 0x80;
	struct end *to = to_cli ? &w->cli : &w->srv;
	struct droce_cm_addr src = to_cli ? w->srv.addr : w->cli.addr; /* spoofed ... */
	if ((in[2] & 3) != 0) /* ... or one of its own eight */
		src.ip[3] = (uint8_t)(100 + (in[2] >> 5));
	/* the victim's own ID when observed (either one, never both) */
	uint32_t seen = to_cli ? w->cli_lcid : w->srv_lcid;
	uint32_t their = in[3] & 1 ? seen : (uint32_t)in[3] << 24 | in[2] << 8 | in[1];
	uint32_t mine = (uint32_t)in[2] << 16 | in[3] << 4 | 1;
	if (mine == (to_cli ? w->srv_lcid : w->cli_lcid))
		mine ^= 2;
	droce_mad_hdr_init(&m.hdr, attr, (uint64_t)in[2] << 40 | their);
	switch (attr) {
	case DROCE_CM_ATTR_REQ: {
		struct droce_cm_req *r = &m.u.req;
		r->local_comm_id = mine;
		r->service_id = droce_cm_tcp_service_id(in[3] & 2 ? 7471 : in[3]);
		/* never the client's GUID: a REQ naming the client's QPN and
		 * GUID ends its connection as stale (12.9.8.3.1), which needs
		 * what only an on-path observer has */
		r->local_ca_guid = 0x100 | in[2];
		r->local_qpn = mine & 0xFFFFFF;
		r->path_mtu = 3;
		r->local_cm_response_timeout = in[3] & 31;
		r->remote_cm_response_timeout = in[2] & 31;
		r->max_cm_retries = in[3] & 15;
		struct droce_cma_hdr h = {.version = DROCE_CMA_VERSION, .ip_version = 4, .src_port = 9};
		memcpy(h.src_ip, src.ip, 4);
		memcpy(h.dst_ip, to->addr.ip, 4);
		droce_cma_hdr_encode(r->private_data, &h);
		break;
	}
	case DROCE_CM_ATTR_MRA:
		m.u.mra.local_comm_id = mine;
		m.u.mra.remote_comm_id = their;
		m.u.mra.msg_mraed = in[2] & 1 ? DROCE_CM_MSG_REP : DROCE_CM_MSG_REQ;
		m.u.mra.service_timeout = in[3] & 31;
		break;
	case DROCE_CM_ATTR_REJ:
		m.u.rej.local_comm_id = mine;
		m.u.rej.remote_comm_id = their;
		m.u.rej.msg_rejected = in[2] % 3;
		m.u.rej.reason = in[3] & 1 ? DROCE_CM_REJ_TIMEOUT : DROCE_CM_REJ_STALE_CONN;
		break;
	case DROCE_CM_ATTR_REP:
		/* a made-up ID only: a REP that answers a REQ seen on the wire
		 * is the peer as far as IBTA can tell (docs/security.md) */
		m.u.rep.local_comm_id = mine;
		m.u.rep.remote_comm_id = (uint32_t)in[3] << 24 | in[2] << 8 | in[1];
		m.u.rep.local_qpn = mine & 0xFFFFFF;
		break;
	case DROCE_CM_ATTR_RTU:
		m.u.rtu.local_comm_id = mine;
		m.u.rtu.remote_comm_id = their;
		break;
	case DROCE_CM_ATTR_DREQ:
		m.u.dreq.local_comm_id = mine;
		m.u.dreq.remote_comm_id = their;
		break;
	default:
		m.u.drep.local_comm_id = mine;
		m.u.drep.remote_comm_id = their;
		break;
	}
	uint8_t mad[DROCE_MAD_LEN];
	if (droce_mad_encode(mad, sizeof(mad), &m) != DROCE_MAD_LEN)
		return;
	static const uint8_t hw[6] = {2, 0, 0, 0, 0, 0x66};
	enum droce_cm_rx r = droce_cm_input_hw(to->cm, w->now, &src, in[0] & 0x40 ? hw : NULL,
					       DROCE_QP1_QKEY, mad, DROCE_MAD_LEN);
	CHECK((unsigned)r < DROCE_CM_RX__COUNT, "rx %d", (int)r);
}

static void deliver(struct world *w, struct end *from)
{
	struct end *to = from == &w->srv ? &w->cli : &w->srv;
	if (!from->len)
		return;
	enum droce_cm_rx r = droce_cm_input(to->cm, w->now, &from->addr, DROCE_QP1_QKEY,
					    from->q[from->head], DROCE_MAD_LEN);
	CHECK((unsigned)r < DROCE_CM_RX__COUNT, "rx %d", (int)r);
	from->head = (from->head + 1) % FIFO;
	from->len--;
}

static void connect_cli(struct world *w)
{
	struct droce_cm_connect_param cp = {
		.dst = w->srv.addr, .dst_port = 7471, .src_port = 1,
		.qp = {.qpn = 0x11, .start_psn = 0x123456, .path_mtu = 3, .responder_resources = 1,
		       .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7},
	};
	w->cli_id = droce_cm_connect(w->cli.cm, w->now, &cp);
	w->srv_id = -1;
	w->cli_lcid = w->srv_lcid = 0;
	w->n_srv_lcids = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct world w; /* large; reset for every input */
	memset(&w, 0, sizeof(w));
	w.now = 1000000000ull;
	w.srv.addr.ip_version = w.cli.addr.ip_version = 4;
	w.srv.addr.ip[0] = w.cli.addr.ip[0] = 198;
	w.srv.addr.ip[1] = w.cli.addr.ip[1] = 18;
	w.srv.addr.ip[3] = 2;
	w.cli.addr.ip[3] = 1;
	w.srv.cm = make(&w.srv.addr, 2);
	w.cli.cm = make(&w.cli.addr, 1);
	CHECK(droce_cm_listen(w.srv.cm, 7471) >= 0, "listen");
	connect_cli(&w);

	for (size_t i = 0; i + 4 <= size; i += 4) {
		const uint8_t *in = data + i;
		switch (in[0] & 7) {
		case 0:
		case 1:
		case 2:
			attack(&w, in);
			break;
		case 3:
			deliver(&w, &w.cli);
			deliver(&w, &w.srv);
			break;
		case 4: /* time passes */
			w.now += ((uint64_t)in[1] + 1) << (in[2] & 15) << 8;
			droce_cm_poll(w.srv.cm, w.now);
			droce_cm_poll(w.cli.cm, w.now);
			break;
		case 5: /* the consumers disconnect: the connection may end now */
			if (w.up && (in[1] & 1)) {
				w.up = false;
				(void)droce_cm_disconnect(in[1] & 2 ? w.srv.cm : w.cli.cm, w.now,
							  in[1] & 2 ? w.srv_id : w.cli_id);
			}
			break;
		case 6: /* the client connects again once its connection is over */
			if (w.cli_id < 0 || droce_cm_id_state(w.cli.cm, w.cli_id) == DROCE_CM_IDLE) {
				w.up = false;
				connect_cli(&w);
			}
			break;
		default: /* the server's consumer answers what waits */
			take_events(&w, &w.srv, true, in[1]);
			break;
		}
		drain(&w, &w.cli);
		drain(&w, &w.srv);
		take_events(&w, &w.cli, false, 0);
		take_events(&w, &w.srv, false, 0);
		drain(&w, &w.cli);
		drain(&w, &w.srv);
		/* the client never takes an MRA's word for the server's ID */
		if (w.cli_id >= 0 && droce_cm_id_state(w.cli.cm, w.cli_id) != DROCE_CM_IDLE) {
			const struct cm_id *c = &w.cli.cm->ids[w.cli_id];
			bool real = c->rcid == 0;
			for (unsigned k = 0; k < 8 && k < w.n_srv_lcids && !real; k++)
				real = c->rcid == w.srv_lcids[k];
			CHECK(real, "client's remote ID %#x is none the server gave", c->rcid);
		}
		bool both = w.cli_id >= 0 && w.srv_id >= 0 &&
			    droce_cm_id_state(w.cli.cm, w.cli_id) == DROCE_CM_ESTABLISHED &&
			    droce_cm_id_state(w.srv.cm, w.srv_id) == DROCE_CM_ESTABLISHED;
		if (both && !w.up) {
			w.up = true;
			w.up_rcid_cli = w.cli.cm->ids[w.cli_id].rcid;
			w.up_rcid_srv = w.srv.cm->ids[w.srv_id].rcid;
		}
		if (w.up) {
			CHECK(droce_cm_id_state(w.cli.cm, w.cli_id) == DROCE_CM_ESTABLISHED &&
				      droce_cm_id_state(w.srv.cm, w.srv_id) == DROCE_CM_ESTABLISHED,
			      "established connection moved: client %s, server %s",
			      droce_cm_state_name(droce_cm_id_state(w.cli.cm, w.cli_id)),
			      droce_cm_state_name(droce_cm_id_state(w.srv.cm, w.srv_id)));
			CHECK(w.cli.cm->ids[w.cli_id].rcid == w.up_rcid_cli &&
				      w.srv.cm->ids[w.srv_id].rcid == w.up_rcid_srv,
			      "remote IDs changed");
		}
		check_end(&w, &w.srv);
		check_end(&w, &w.cli);
	}
	droce_cm_destroy(w.srv.cm);
	droce_cm_destroy(w.cli.cm);
	return 0;
}
