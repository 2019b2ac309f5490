/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues through the verbs, in one process on a memif
 * server port with no peer (the port turns frames to our own address
 * around): one SRQ serves an RC QP and a UD QP at once; SENDs from a
 * sender of each kind land in the SRQ's WQEs, every byte checked, and
 * complete on the receiving QP's CQ naming that QP; the armed limit raises
 * IBV_EVENT_SRQ_LIMIT_REACHED once, naming the SRQ, and reads 0 after;
 * ibv_post_recv on a QP on the SRQ is EINVAL; destroy_srq while QPs use it
 * is EBUSY. "verbs_srq comm" runs the same in DROCE_COMM_CORE mode (the
 * last CPU), where the post and poll verbs cross the comm-core rings.
 * Built against <infiniband/verbs.h>, linked with droce's libibverbs.so.1.
 * Exits 0 printing "srq: ok", or names what failed.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "loop_env.h"

#define SLOT 2048u      /* one SRQ WQE's buffer */
#define N_WQE 8u        /* posted to the SRQ */
#define LIMIT 4u        /* armed: fires once fewer are left */
#define N_MSG 3u        /* SENDs per QP type: 6 WQEs taken, 2 left */
#define GRH 40u         /* a UD receive's GRH area */
#define QKEY 0x11111111u

static int failures;

#define CHECK(c, ...)                                                          \
	do {                                                                   \
		if (!(c)) {                                                    \
			failures++;                                            \
			fprintf(stderr, "srq: FAIL (%s:%d): ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
		}                                                              \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "srq: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
			      struct ibv_srq *srq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia = {.send_cq = scq, .recv_cq = rcq, .srq = srq, .qp_type = t,
				      .cap = {.max_send_wr = 8, .max_recv_wr = srq ? 0 : 8,
					      .max_send_sge = 1, .max_recv_sge = srq ? 0 : 1}};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die(t == IBV_QPT_UD ? "create UD QP" : "create RC QP");
	return qp;
}

static void rc_connect(struct ibv_qp *qp, uint32_t peer, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("RC INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer;
	a.rq_psn = 100 + peer;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid; /* the same GID: the peer is this port */
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RC RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100 + qp->qp_num;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RC RTS");
}

static void ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD RTS");
}

/* Message k of a kind: its length and its byte. */
static uint32_t msg_len(int ud, unsigned k)
{
	return (ud ? 50u : 100u) + k;
}

static uint8_t msg_byte(int ud, unsigned k)
{
	return (uint8_t)((ud ? 'a' : 'A') + k);
}

/* Poll @p cq until @p n completions are in @p wc, at most 10 s. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int got = 0;
	double end = now_s() + 10;
	while (got < n && now_s() < end) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return r;
		got += r;
	}
	return got;
}

/* The next async event of type @p type within @p ms (others acked on the way). */
static int wait_event(struct ibv_context *ctx, enum ibv_event_type type, struct ibv_async_event *out,
		      int ms)
{
	double end = now_s() + ms / 1000.0;
	while (now_s() < end) {
		struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
		if (poll(&p, 1, 50) != 1)
			continue;
		struct ibv_async_event ev;
		if (ibv_get_async_event(ctx, &ev))
			return -1;
		if (ev.event_type == type) {
			*out = ev;
			return 0;
		}
		ibv_ack_async_event(&ev);
	}
	return -1;
}

int main(int argc, char **argv)
{
	int comm = argc > 1 && !strcmp(argv[1], "comm");
	loop_env("srq", comm);
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n != 1) {
		fprintf(stderr, "srq: no droce0\n");
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		die("open");
	struct ibv_device_attr da;
	CHECK(!ibv_query_device(ctx, &da) && da.max_srq > 0 && da.max_srq_wr > 0 && da.max_srq_sge > 0,
	      "query_device: max_srq %d, max_srq_wr %d, max_srq_sge %d", da.max_srq, da.max_srq_wr,
	      da.max_srq_sge);
	/* Which model runs: the comm-core rings carry fewer SGEs per WR than
	 * the engine takes (docs/verbs.md), and query_device says so. */
	CHECK(comm ? da.max_sge < 8 : da.max_sge == 8, "max_sge %d: not the %s model", da.max_sge,
	      comm ? "comm-core" : "progress-thread");
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("query_gid");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	uint8_t *rbuf = calloc(N_WQE, SLOT), *sbuf = calloc(2 * N_MSG, SLOT);
	if (!pd || !scq || !rcq || !rbuf || !sbuf)
		die("pd, CQs, buffers");
	struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, N_WQE * SLOT, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *smr = ibv_reg_mr(pd, sbuf, 2 * N_MSG * SLOT, 0);
	if (!rmr || !smr)
		die("reg_mr");
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = N_WQE, .max_sge = 1}};
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	if (!srq)
		die("create_srq");

	/* The receivers on the SRQ; a sender of each kind with queues of its own. */
	struct ibv_qp *rc_rx = make_qp(pd, scq, rcq, srq, IBV_QPT_RC);
	struct ibv_qp *rc_tx = make_qp(pd, scq, scq, NULL, IBV_QPT_RC);
	struct ibv_qp *ud_rx = make_qp(pd, scq, rcq, srq, IBV_QPT_UD);
	struct ibv_qp *ud_tx = make_qp(pd, scq, scq, NULL, IBV_QPT_UD);
	rc_connect(rc_rx, rc_tx->qp_num, &gid);
	rc_connect(rc_tx, rc_rx->qp_num, &gid);
	ud_ready(ud_rx);
	ud_ready(ud_tx);
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1, .grh = {.dgid = gid, .hop_limit = 64}};
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("create_ah");

	/* A QP on an SRQ has no receive queue of its own (as rxe). */
	struct ibv_sge rs = {.addr = (uintptr_t)rbuf, .length = SLOT, .lkey = rmr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *rbad = NULL;
	CHECK(ibv_post_recv(rc_rx, &rw, &rbad) == EINVAL && rbad == &rw,
	      "post_recv on a QP on the SRQ: EINVAL");

	/* The WQEs, one list, then the limit armed. */
	struct ibv_sge sges[N_WQE];
	struct ibv_recv_wr wrs[N_WQE];
	for (unsigned i = 0; i < N_WQE; i++) {
		sges[i] = (struct ibv_sge){.addr = (uintptr_t)(rbuf + i * SLOT), .length = SLOT,
					   .lkey = rmr->lkey};
		wrs[i] = (struct ibv_recv_wr){.wr_id = 100 + i, .sg_list = &sges[i], .num_sge = 1,
					      .next = i + 1 < N_WQE ? &wrs[i + 1] : NULL};
	}
	if (ibv_post_srq_recv(srq, wrs, &rbad))
		die("post_srq_recv");
	struct ibv_srq_attr lim = {.srq_limit = LIMIT};
	CHECK(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == 0, "modify_srq(limit %u)", LIMIT);
	struct ibv_srq_attr q;
	CHECK(!ibv_query_srq(srq, &q) && q.srq_limit == LIMIT && q.max_wr >= N_WQE,
	      "query_srq: limit %u, max_wr %u", q.srq_limit, q.max_wr);
	CHECK(ibv_destroy_srq(srq) == EBUSY, "destroy_srq with QPs on it: EBUSY");

	/* N_MSG SENDs on each sender, every one signalled. */
	for (int ud = 0; ud < 2; ud++)
		for (unsigned k = 0; k < N_MSG; k++) {
			uint8_t *b = sbuf + (ud * N_MSG + k) * SLOT;
			memset(b, msg_byte(ud, k), msg_len(ud, k));
			struct ibv_sge s = {.addr = (uintptr_t)b, .length = msg_len(ud, k),
					    .lkey = smr->lkey};
			struct ibv_send_wr w = {.wr_id = (uint64_t)(ud * N_MSG + k), .sg_list = &s,
						.num_sge = 1, .opcode = IBV_WR_SEND,
						.send_flags = IBV_SEND_SIGNALED},
					   *bad;
			if (ud) {
				w.wr.ud.ah = ah;
				w.wr.ud.remote_qpn = ud_rx->qp_num;
				w.wr.ud.remote_qkey = QKEY;
			}
			if (ibv_post_send(ud ? ud_tx : rc_tx, &w, &bad))
				die("post_send");
		}
	struct ibv_wc wc[2 * N_MSG];
	int got = poll_n(scq, wc, 2 * N_MSG);
	CHECK(got == 2 * N_MSG, "send completions: %d of %u", got, 2 * N_MSG);
	for (int i = 0; i < got; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS, "send %llu: %s", (unsigned long long)wc[i].wr_id,
		      ibv_wc_status_str(wc[i].status));

	/* Each message in an SRQ WQE, on the receive CQ, naming its QP. */
	got = poll_n(rcq, wc, 2 * N_MSG);
	CHECK(got == 2 * N_MSG, "receive completions: %d of %u", got, 2 * N_MSG);
	unsigned seen[2] = {0, 0}, used = 0;
	for (int i = 0; i < got; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV,
		      "receive %d: %s, opcode %d", i, ibv_wc_status_str(wc[i].status), wc[i].opcode);
		unsigned slot = (unsigned)(wc[i].wr_id - 100);
		CHECK(wc[i].wr_id >= 100 && slot < N_WQE && !(used & (1u << slot)),
		      "receive %d: wr_id %llu (an SRQ WQE's, once)", i, (unsigned long long)wc[i].wr_id);
		if (slot >= N_WQE)
			continue;
		used |= 1u << slot;
		int ud = wc[i].qp_num == ud_rx->qp_num;
		CHECK(ud || wc[i].qp_num == rc_rx->qp_num, "receive %d: qp_num %#x", i, wc[i].qp_num);
		CHECK(!ud || (wc[i].wc_flags & IBV_WC_GRH), "UD receive %d: no GRH flag", i);
		uint32_t len = wc[i].byte_len - (ud ? GRH : 0);
		unsigned k = len - msg_len(ud, 0);
		CHECK(k < N_MSG && !(seen[ud] & (1u << k)), "receive %d: %u bytes", i, wc[i].byte_len);
		if (k >= N_MSG)
			continue;
		seen[ud] |= 1u << k;
		const uint8_t *p = rbuf + slot * SLOT + (ud ? GRH : 0);
		for (uint32_t j = 0; j < len; j++)
			if (p[j] != msg_byte(ud, k)) {
				CHECK(0, "receive %d (%s %u): byte %u is %#x", i, ud ? "UD" : "RC", k, j, p[j]);
				break;
			}
	}
	CHECK(seen[0] == (1u << N_MSG) - 1 && seen[1] == (1u << N_MSG) - 1,
	      "messages seen: RC %#x, UD %#x", seen[0], seen[1]);

	/* 6 of 8 taken: fewer than 4 left, the limit fired once and reads 0. */
	struct ibv_async_event ev;
	int have = wait_event(ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &ev, 5000) == 0;
	CHECK(have, "no IBV_EVENT_SRQ_LIMIT_REACHED");
	if (have) {
		CHECK(ev.element.srq == srq, "the limit event names another SRQ");
		ibv_ack_async_event(&ev);
	}
	CHECK(!ibv_query_srq(srq, &q) && q.srq_limit == 0, "limit after the event: %u", q.srq_limit);

	ibv_destroy_qp(rc_rx);
	ibv_destroy_qp(rc_tx);
	ibv_destroy_qp(ud_rx);
	ibv_destroy_qp(ud_tx);
	ibv_destroy_ah(ah);
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq once its QPs are gone");
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(rbuf);
	free(sbuf);
	if (failures)
		return 1;
	printf("srq: ok (%s)\n", comm ? "comm core" : "progress thread");
	return 0;
}
