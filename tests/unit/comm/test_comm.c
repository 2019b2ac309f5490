/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The comm-core model end to end: a comm thread drives two contexts joined
 * by an in-memory link; an application thread on the other core posts SENDs
 * and RDMA WRITEs with immediate through its channel of context A and takes
 * the completions, while the receiving side's receives go through a channel
 * of context B. Every byte is verified; no locks anywhere.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <droce/droce.h>

#include "net/link/memlink.h"

#define MSGS 20000u
#define MSG_SIZE 1000u
#define SLOTS 64u

struct side {
	struct droce_ctx *ctx;
	struct droce_comm *comm;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *buf;
};

struct world {
	struct droce_memlink *ml;
	struct side s[2];
	_Atomic int stop;
	uint64_t rx_deadline; /* the receiver gives up here: a slow run fails, never hangs */
	_Atomic unsigned long long bad, recv_done, send_done;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void make_side(struct world *w, unsigned i)
{
	struct side *s = &w->s[i];
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = 4;
	uint8_t ip[4] = {10, 9, 0, (uint8_t)(1 + i)};
	memcpy(p.ip, ip, 4);
	uint8_t mac[6] = {2, 0, 0, 0, 9, (uint8_t)(1 + i)};
	memcpy(p.mac, mac, 6);
	p.link = droce_memlink_end(w->ml, i);
	p.seed = 100 + i;
	s->ctx = droce_ctx_create(&p);
	assert_non_null(s->ctx);
	s->cq = droce_create_cq(s->ctx, 4096);
	assert_non_null(s->cq);
	s->buf = calloc(SLOTS, MSG_SIZE);
	s->mr = droce_reg_mr(s->ctx, s->buf, SLOTS * MSG_SIZE,
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	assert_non_null(s->mr);
	struct droce_qp_init_attr ia = {.send_cq = s->cq, .recv_cq = s->cq,
					.cap = {.max_send_wr = SLOTS, .max_recv_wr = SLOTS,
						.max_send_sge = 1, .max_recv_sge = 1}};
	s->qp = droce_create_qp(s->ctx, &ia);
	assert_non_null(s->qp);
	s->comm = droce_comm_create(s->ctx, 1, 256);
	assert_non_null(s->comm);
	assert_int_equal(droce_comm_bind_cq(s->comm, s->cq, droce_comm_chan(s->comm, 0)), 0);
	assert_int_equal(droce_comm_bind_cq(s->comm, s->cq, droce_comm_chan(s->comm, 0)), -EBUSY);
}

static void connect_side(struct world *w, unsigned i)
{
	struct side *s = &w->s[i], *peer = &w->s[1 - i];
	struct droce_qp_attr a = {0};
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE;
	a.pkey = DROCE_DEFAULT_PKEY;
	assert_int_equal(droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = DROCE_MTU_1024;
	a.dest_qp_num = droce_qp_num(peer->qp);
	a.rq_psn = 1000u * (2 - i);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.ip_version = 4;
	uint8_t ip[4] = {10, 9, 0, (uint8_t)(2 - i)};
	memcpy(a.ah_attr.dst_ip, ip, 4);
	uint8_t mac[6] = {2, 0, 0, 0, 9, (uint8_t)(2 - i)};
	memcpy(a.ah_attr.dst_mac, mac, 6);
	a.ah_attr.ttl = 64;
	assert_int_equal(droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					 DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					 DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 1000u * (1 + i);
	a.timeout = 8;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	assert_int_equal(droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					 DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					 DROCE_QP_MAX_QP_RD_ATOMIC), 0);
}

/* The comm core: the only thread that touches either context. */
static void *comm_core(void *arg)
{
	struct world *w = arg;
	while (!atomic_load(&w->stop)) {
		uint64_t now = now_ns();
		droce_comm_poll(w->s[0].comm, now);
		droce_comm_poll(w->s[1].comm, now);
	}
	return NULL;
}

static uint8_t byte_of(uint64_t msg, unsigned off)
{
	return (uint8_t)(msg * 131u + off * 7u + 1u);
}

/* Spins while the command ring is full, but not past the stop: once the
 * comm core has left nobody drains the ring (a slow run must fail, not hang). */
static void post_recv(struct world *w, struct droce_chan *ch, struct side *b, uint64_t slot)
{
	struct droce_sge sge = {(uint64_t)(uintptr_t)(b->buf + slot * MSG_SIZE), MSG_SIZE, b->mr->lkey};
	struct droce_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
	while (droce_chan_post_recv(ch, b->qp, &wr) == -EAGAIN && !atomic_load(&w->stop))
		;
}

/* The receiving application thread: posts receives on B, verifies SENDs. */
static void *receiver(void *arg)
{
	struct world *w = arg;
	struct side *b = &w->s[1];
	struct droce_chan *ch = droce_comm_chan(b->comm, 0);
	for (uint64_t s = 0; s < SLOTS; s++)
		post_recv(w, ch, b, s);
	uint64_t got = 0;
	while (got < MSGS && !atomic_load(&w->stop) && now_ns() < w->rx_deadline) {
		struct droce_wc wc[16];
		int n = droce_chan_poll_cq(ch, 16, wc);
		if (n == 0)
			sched_yield(); /* three spinning threads on two cores: let the comm core run */
		for (int k = 0; k < n; k++) {
			uint64_t msg = wc[k].imm_data;
			uint8_t *d = b->buf + wc[k].wr_id * MSG_SIZE;
			if (wc[k].status != DROCE_WC_SUCCESS || wc[k].byte_len != MSG_SIZE ||
			    !(wc[k].wc_flags & DROCE_WC_WITH_IMM))
				atomic_fetch_add(&w->bad, 1);
			else
				for (unsigned o = 0; o < MSG_SIZE; o++)
					if (d[o] != byte_of(msg, o)) {
						atomic_fetch_add(&w->bad, 1);
						break;
					}
			got++;
			post_recv(w, ch, b, wc[k].wr_id);
		}
	}
	atomic_store(&w->recv_done, got);
	return NULL;
}

static void test_comm_core_send_with_imm(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	w->ml = droce_memlink_create(NULL);
	assert_non_null(w->ml);
	make_side(w, 0);
	make_side(w, 1);
	connect_side(w, 0);
	connect_side(w, 1);

	pthread_t core, rx;
	w->rx_deadline = now_ns() + 90ull * 1000000000ull; /* a hang bound, not a speed limit */
	assert_int_equal(pthread_create(&core, NULL, comm_core, w), 0);
	assert_int_equal(pthread_create(&rx, NULL, receiver, w), 0);

	/* This thread is the sending application on A. */
	struct side *a = &w->s[0];
	struct droce_chan *ch = droce_comm_chan(a->comm, 0);
	uint64_t posted = 0, done = 0, t_end = now_ns() + 80ull * 1000000000ull;
	while (done < MSGS && now_ns() < t_end) {
		if (posted < MSGS && posted - done < SLOTS) {
			uint64_t slot = posted % SLOTS;
			uint8_t *d = a->buf + slot * MSG_SIZE;
			for (unsigned o = 0; o < MSG_SIZE; o++)
				d[o] = byte_of(posted, o);
			struct droce_sge sge = {(uint64_t)(uintptr_t)d, MSG_SIZE, a->mr->lkey};
			struct droce_send_wr wr = {.wr_id = posted, .sg_list = &sge, .num_sge = 1,
						   .opcode = DROCE_WR_SEND_WITH_IMM, .imm_data = (uint32_t)posted,
						   .send_flags = DROCE_SEND_SIGNALED};
			if (droce_chan_post_send(ch, a->qp, &wr) == 0)
				posted++;
		}
		struct droce_wc wc[16];
		int n = droce_chan_poll_cq(ch, 16, wc);
		if (n == 0)
			sched_yield();
		for (int k = 0; k < n; k++) {
			if (wc[k].status != DROCE_WC_SUCCESS || wc[k].wr_id != done)
				atomic_fetch_add(&w->bad, 1); /* completions come back in order */
			done++;
		}
	}
	/* A WR the QP refuses (bad opcode) comes back as a LOC_QP_OP_ERR completion. */
	struct droce_send_wr badwr = {.wr_id = 424242, .opcode = (enum droce_wr_opcode)99};
	assert_int_equal(droce_chan_post_send(ch, a->qp, &badwr), 0);
	struct droce_wc wc;
	int n = 0;
	for (uint64_t t = now_ns() + 5000000000ull; n == 0 && now_ns() < t;)
		n = droce_chan_poll_cq(ch, 1, &wc);
	pthread_join(rx, NULL);
	atomic_store(&w->stop, 1);
	pthread_join(core, NULL);

	assert_int_equal(done, MSGS);
	assert_int_equal(atomic_load(&w->recv_done), MSGS);
	assert_int_equal(atomic_load(&w->bad), 0);
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 424242);
	assert_int_equal(wc.status, DROCE_WC_LOC_QP_OP_ERR);
	assert_int_equal(wc.vendor_err, EINVAL);

	for (unsigned i = 0; i < 2; i++) {
		droce_comm_destroy(w->s[i].comm);
		droce_ctx_destroy(w->s[i].ctx);
		free(w->s[i].buf);
	}
	droce_memlink_destroy(w->ml);
	free(w);
}

/*
 * More than the 64 channels and 256 CQs the comm once had, allocated as
 * they are asked for, and a CQ's channel taken back (unbind) and serving
 * the next CQ: its completions, not the old one's (the verbs' comm-core
 * mode gives each CQ a channel and reuses it after ibv_destroy_cq).
 */
static void test_comm_channels_reclaimed(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	w->ml = droce_memlink_create(NULL);
	make_side(w, 0);
	struct droce_ctx *ctx = w->s[0].ctx;
	errno = 0;
	assert_null(droce_comm_create(ctx, DROCE_COMM_MAX_CHAN + 1, 64));
	assert_int_equal(errno, EINVAL);
	struct droce_comm *c = droce_comm_create(ctx, 300, 64);
	assert_non_null(c);
	assert_null(droce_comm_chan(c, 300));
	struct droce_chan *last = droce_comm_chan(c, 299);
	assert_non_null(last);
	assert_ptr_equal(droce_comm_chan(c, 299), last);
	enum { NCQ = 300 };
	static struct droce_cq *cq[NCQ];
	for (unsigned i = 0; i < NCQ; i++) {
		cq[i] = droce_create_cq(ctx, 16);
		assert_non_null(cq[i]);
		/* 200 channels, the last 100 CQs sharing some of them */
		assert_int_equal(droce_comm_bind_cq(c, cq[i], droce_comm_chan(c, i % 200)), 0);
	}
	assert_int_equal(droce_comm_unbind_cq(c, cq[5]), 0);
	assert_int_equal(droce_comm_unbind_cq(c, cq[5]), -ENOENT);
	assert_int_equal(droce_comm_unbind_cq(c, NULL), -EINVAL);
	assert_int_equal(droce_destroy_cq(cq[5]), 0);
	/* Channel 205 % 200 = 5 still serves cq[205]: unbind it too. */
	assert_int_equal(droce_comm_unbind_cq(c, cq[205]), 0);
	struct droce_cq *fresh = droce_create_cq(ctx, 16);
	assert_non_null(fresh);
	struct droce_chan *ch5 = droce_comm_chan(c, 5);
	assert_int_equal(droce_comm_bind_cq(c, fresh, ch5), 0);
	/* A QP on the fresh CQ, in ERR: a receive posted through channel 5 is
	 * flushed into the fresh CQ and must come back on channel 5. */
	struct droce_qp_init_attr ia = {.send_cq = fresh, .recv_cq = fresh,
					.cap = {.max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1}};
	struct droce_qp *qp = droce_create_qp(ctx, &ia);
	assert_non_null(qp);
	struct droce_qp_attr a = {0};
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE;
	a.pkey = DROCE_DEFAULT_PKEY;
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY), 0);
	a.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE), 0);
	struct droce_recv_wr rwr = {.wr_id = 777};
	assert_int_equal(droce_chan_post_recv(ch5, qp, &rwr), 0);
	struct droce_wc wc;
	int n = 0;
	for (int i = 0; i < 100 && n == 0; i++) {
		droce_comm_poll(c, now_ns());
		n = droce_chan_poll_cq(ch5, 1, &wc);
	}
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 777);
	assert_int_equal(wc.status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(droce_destroy_qp(qp), 0);
	droce_comm_destroy(c);
	droce_comm_destroy(w->s[0].comm);
	droce_ctx_destroy(ctx);
	free(w->s[0].buf);
	droce_memlink_destroy(w->ml);
	free(w);
}

static void test_comm_create_rejects(void **state)
{
	errno = 0;
	assert_null(droce_comm_create(NULL, 1, 64));
	assert_int_equal(errno, EINVAL);
	struct droce_chan *ch = NULL;
	struct droce_send_wr wr = {0};
	assert_int_equal(droce_chan_post_send(ch, NULL, &wr), -EINVAL);
}

/* ------------------------------------------- destroy with commands queued -- */

/* One context without a peer, one CQ bound to the only channel of a comm
 * core whose rings hold two entries: two refusals fill its completion ring. */
struct lone {
	struct droce_memlink *ml;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_comm *comm;
	struct droce_chan *ch;
};

static void lone_init(struct lone *l)
{
	l->ml = droce_memlink_create(NULL);
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.link = droce_memlink_end(l->ml, 0);
	p.seed = 5;
	l->ctx = droce_ctx_create(&p);
	assert_non_null(l->ctx);
	l->cq = droce_create_cq(l->ctx, 64);
	l->comm = droce_comm_create(l->ctx, 1, 2);
	l->ch = droce_comm_chan(l->comm, 0);
	assert_int_equal(droce_comm_bind_cq(l->comm, l->cq, l->ch), 0);
}

static void lone_fini(struct lone *l)
{
	droce_comm_destroy(l->comm);
	droce_ctx_destroy(l->ctx);
	droce_memlink_destroy(l->ml);
}

/* One context, no peer: a QP in RESET refuses every send, so each command
 * becomes a completion on the channel. With the channel's completion ring
 * full, the comm core takes no command (a refusal must have somewhere to
 * go): commands for a QP stay in the command ring. Destroying that QP
 * through droce_comm_destroy_qp() drops them (verbs: a destroyed QP's
 * outstanding WRs complete no more); the next polls must not touch the
 * freed QP (under ASan, droce_destroy_qp in its place is a
 * heap-use-after-free in droce_post_send) and deliver nothing for it. */
static void test_comm_destroy_qp_with_commands_queued(void **state)
{
	(void)state;
	struct lone l;
	lone_init(&l);
	struct droce_comm *comm = l.comm;
	struct droce_chan *ch = l.ch;
	struct droce_qp_init_attr ia = {.send_cq = l.cq, .recv_cq = l.cq};
	struct droce_qp *keep = droce_create_qp(l.ctx, &ia), *gone = droce_create_qp(l.ctx, &ia);
	assert_non_null(keep);
	assert_non_null(gone);
	struct droce_send_wr wr = {.opcode = DROCE_WR_SEND};
	/* Two refusals fill the completion ring. */
	for (unsigned i = 0; i < 2; i++) {
		wr.wr_id = 100 + i;
		assert_int_equal(droce_chan_post_send(ch, keep, &wr), 0);
	}
	droce_comm_poll(comm, 1);
	/* Two commands for the QP about to go: they stay in the ring. */
	for (unsigned i = 0; i < 2; i++) {
		wr.wr_id = 200 + i;
		assert_int_equal(droce_chan_post_send(ch, gone, &wr), 0);
	}
	droce_comm_poll(comm, 2);
	assert_int_equal(droce_chan_post_send(ch, gone, &wr), -EAGAIN);
	assert_int_equal(droce_comm_destroy_qp(comm, gone), 0);
	struct droce_wc wc[4];
	assert_int_equal(droce_chan_poll_cq(ch, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 100);
	assert_int_equal(wc[1].wr_id, 101);
	for (unsigned i = 0; i < 4; i++)
		droce_comm_poll(comm, 3 + i);
	assert_int_equal(droce_chan_poll_cq(ch, 4, wc), 0);
	/* The ring works on: a command for the QP that stayed is refused as before. */
	wr.wr_id = 300;
	assert_int_equal(droce_chan_post_send(ch, keep, &wr), 0);
	droce_comm_poll(comm, 10);
	assert_int_equal(droce_chan_poll_cq(ch, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 300);
	assert_int_equal(wc[0].status, DROCE_WC_LOC_QP_OP_ERR);
	lone_fini(&l);
}

/* droce_comm_set_poller: every droce_comm_poll() steps the poller with its
 * work at its now (a refused command is work: it moved), and an idle one
 * under DROCE_IDLE_ADAPTIVE sleeps once past spin_ns. */
static void test_comm_poller_steps(void **state)
{
	(void)state;
	struct lone l;
	lone_init(&l);
	struct droce_poller_conf pc;
	droce_poller_conf_init(&pc);
	pc.idle = DROCE_IDLE_ADAPTIVE;
	pc.spin_ns = 1000;
	struct droce_poller *pl = droce_poller_create(&pc);
	assert_non_null(pl);
	assert_int_equal(droce_comm_set_poller(NULL, pl), -EINVAL);
	assert_int_equal(droce_comm_set_poller(l.comm, pl), 0);
	struct droce_qp_init_attr ia = {.send_cq = l.cq, .recv_cq = l.cq};
	struct droce_qp *qp = droce_create_qp(l.ctx, &ia);
	struct droce_send_wr wr = {.opcode = DROCE_WR_SEND, .wr_id = 1};
	assert_int_equal(droce_chan_post_send(l.ch, qp, &wr), 0);
	assert_true(droce_comm_poll(l.comm, 10000) > 0); /* the refusal */
	assert_int_equal(droce_comm_poll(l.comm, 10500), 0);
	assert_int_equal(droce_comm_poll(l.comm, 12000), 0); /* 2 us quiet: sleeps */
	struct droce_poller_stats st;
	assert_int_equal(droce_poller_get_stats(pl, &st), 0);
	assert_int_equal(st.busy_ns, 500);
	assert_int_equal(st.idle_ns, 1500);
	assert_int_equal(st.busy_polls, 1);
	assert_int_equal(st.sleeps, 1);
	struct droce_wc wc[2];
	assert_int_equal(droce_chan_poll_cq(l.ch, 2, wc), 1);
	droce_comm_set_poller(l.comm, NULL);
	droce_poller_destroy(pl);
	lone_fini(&l);
}

/* The same for an address handle: a queued send naming a handle destroyed
 * through droce_comm_destroy_ah() is refused (LOC_QP_OP_ERR, vendor_err
 * EINVAL), never posted with the freed handle. */
static void test_comm_destroy_ah_with_commands_queued(void **state)
{
	(void)state;
	struct lone l;
	lone_init(&l);
	struct droce_comm *comm = l.comm;
	struct droce_chan *ch = l.ch;
	struct droce_qp_init_attr ia = {.send_cq = l.cq, .recv_cq = l.cq, .qp_type = DROCE_QPT_UD};
	struct droce_qp *qp = droce_create_qp(l.ctx, &ia);
	assert_non_null(qp);
	struct droce_ah_attr aa = {.ip_version = 4};
	struct droce_ah *ah = droce_create_ah(l.ctx, &aa);
	assert_non_null(ah);
	struct droce_send_wr wr = {.opcode = DROCE_WR_SEND};
	wr.wr.ud.ah = ah;
	/* The QP is in RESET: two refusals fill the completion ring. */
	for (unsigned i = 0; i < 2; i++) {
		wr.wr_id = 100 + i;
		assert_int_equal(droce_chan_post_send(ch, qp, &wr), 0);
	}
	droce_comm_poll(comm, 1);
	wr.wr_id = 200;
	assert_int_equal(droce_chan_post_send(ch, qp, &wr), 0);
	droce_comm_poll(comm, 2);
	assert_int_equal(droce_comm_destroy_ah(comm, ah), 0);
	struct droce_wc wc[4];
	assert_int_equal(droce_chan_poll_cq(ch, 4, wc), 2);
	droce_comm_poll(comm, 3);
	assert_int_equal(droce_chan_poll_cq(ch, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 200);
	assert_int_equal(wc[0].status, DROCE_WC_LOC_QP_OP_ERR);
	assert_int_equal(wc[0].vendor_err, EINVAL);
	assert_int_equal(droce_comm_destroy_qp(comm, qp), 0);
	lone_fini(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comm_create_rejects),
		cmocka_unit_test(test_comm_channels_reclaimed),
		cmocka_unit_test(test_comm_core_send_with_imm),
		cmocka_unit_test(test_comm_destroy_qp_with_commands_queued),
		cmocka_unit_test(test_comm_destroy_ah_with_commands_queued),
		cmocka_unit_test(test_comm_poller_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
