/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error paths of the libibverbs drop-in, end to end, written against the
 * system's <infiniband/verbs.h> and run over droce's libibverbs.so.1: two
 * processes (this one forks) over memif, the QP numbers exchanged on a
 * socketpair as a verbs program would on TCP.
 *
 * The client checks that protocol errors arrive as the IBV_WC_* statuses
 * rdma-core programs test for (IBTA 9.7.5.2: remote access NAK -> REM_ACCESS_ERR;
 * RNR NAKs past rnr_retry -> RNR_RETRY_EXC_ERR; no answer past retry_cnt ->
 * RETRY_EXC_ERR; 10.3.1: WRs of a QP in ERR complete with WR_FLUSH_ERR), and
 * that bad calls fail with rdma-core's errno, in rdma-core's convention
 * (NULL + errno, or the errno returned).
 *
 *   verbs_errors      (exit 0: every check passed; 1: a check failed)
 */
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

#include "vtest.h"

/* What one side tells the other. */
struct info {
	uint32_t qpn[3];
	uint32_t psn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	struct ibv_qp *qp[3];
};

static struct ibv_qp *make_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);
	if (!qp) {
		fprintf(stderr, "%s: create_qp: %s\n", side, strerror(errno));
		exit(1);
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
	if (r) {
		fprintf(stderr, "%s: INIT: %s\n", side, strerror(r));
		exit(1);
	}
	return qp;
}

/* RTR then RTS toward @p dest, with the retry settings under test. */
static int connect_qp(struct ibv_qp *qp, const struct info *peer, uint32_t dest, uint32_t my_psn,
		      uint8_t timeout, uint8_t retry, uint8_t rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.rq_psn = peer->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = peer->gid, .sgid_index = 0, .hop_limit = 1}},
	};
	int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	struct ibv_qp_attr b = {.qp_state = IBV_QPS_RTS, .sq_psn = my_psn, .timeout = timeout,
				.retry_cnt = retry, .rnr_retry = rnr_retry, .max_rd_atomic = 1};
	return ibv_modify_qp(qp, &b, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void open_side(struct side *s)
{
	s->ctx = open_droce();
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->buf = calloc(1, 4096);
	s->mr = ibv_reg_mr(s->pd, s->buf, 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->pd || !s->cq || !s->mr) {
		fprintf(stderr, "%s: pd/cq/mr: %s\n", side, strerror(errno));
		exit(1);
	}
}

static void close_side(struct side *s)
{
	for (int i = 0; i < 3; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
	free(s->buf);
}

static void my_info(struct side *s, struct info *me, uint32_t psn)
{
	memset(me, 0, sizeof(*me));
	for (int i = 0; i < 3; i++)
		me->qpn[i] = s->qp[i] ? s->qp[i]->qp_num : 0;
	me->psn = psn;
	me->rkey = s->mr->rkey;
	me->addr = (uint64_t)(uintptr_t)s->buf;
	if (ibv_query_gid(s->ctx, 1, 0, &me->gid)) {
		fprintf(stderr, "%s: query_gid failed\n", side);
		exit(1);
	}
}

/* Wait (bounded) for one completion. @return 1 with @p wc, 0 on timeout. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int seconds)
{
	time_t end = time(NULL) + seconds;
	while (time(NULL) <= end) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n == 1)
			return 1;
		if (n < 0)
			return 0;
	}
	return 0;
}

/* The responder: QP 0 takes RDMA (remote access errors come from a bad
 * rkey), QP 1 never posts a receive (RNR). It only has to stay up. */
static int server(int fd)
{
	side = "server";
	struct side s = {0};
	open_side(&s);
	char go = 1;
	xsend(fd, &go, 1); /* the memif socket exists: the client may start */
	s.qp[0] = make_qp(&s);
	s.qp[1] = make_qp(&s);
	struct info me, peer;
	my_info(&s, &me, 0x100);
	xsend(fd, &me, sizeof(me));
	xrecv(fd, &peer, sizeof(peer));
	int r = connect_qp(s.qp[0], &peer, peer.qpn[0], me.psn, 14, 7, 7);
	if (!r)
		r = connect_qp(s.qp[1], &peer, peer.qpn[1], me.psn, 14, 7, 7);
	CHECK(r == 0, "RTR/RTS: %s", strerror(r));
	/* Both QPs in RTS before the client's first packet: a bad-rkey WRITE
	 * that reached QP 0 in RTR would move it to ERR (IBTA 9.9.3, a class C
	 * error: remote access) and fail our own RTR->RTS. */
	char ready = 1;
	xsend(fd, &ready, 1);
	char done;
	xrecv(fd, &done, 1);
	close_side(&s);
	return failures ? 1 : 0;
}

static void bad_calls(struct side *s)
{
	int nd = 0;
	struct ibv_device **list = ibv_get_device_list(&nd);
	/* a second open shares the engine: a context of its own, closed again
	 * without touching the first */
	struct ibv_context *again = nd == 1 ? ibv_open_device(list[0]) : NULL;
	CHECK(again && again != s->ctx && again->device == s->ctx->device && !ibv_close_device(again),
	      "open_device while open: a second context, closed (%s)", strerror(errno));
	ibv_free_device_list(list);
	struct ibv_qp_init_attr uc = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_UC,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	errno = 0;
	CHECK(!ibv_create_qp(s->pd, &uc) && errno == EOPNOTSUPP, "create_qp(UC): NULL, EOPNOTSUPP (%s)",
	      strerror(errno));
	errno = 0;
	CHECK(!ibv_create_qp(s->pd, NULL) && errno == EINVAL, "create_qp(NULL attr): NULL, EINVAL");
	char b[64];
	errno = 0;
	CHECK(!ibv_reg_mr(s->pd, b, sizeof(b), IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL,
	      "reg_mr(REMOTE_WRITE without LOCAL_WRITE): NULL, EINVAL (%s)", strerror(errno));
	errno = 0;
	CHECK(!ibv_reg_mr(s->pd, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE | (1 << 19)) && errno == EINVAL,
	      "reg_mr(unknown access flag): NULL, EINVAL (%s)", strerror(errno));
	errno = 0;
	CHECK(!ibv_create_cq(s->ctx, 0, NULL, NULL, 0) && errno == EINVAL, "create_cq(0 entries): NULL, EINVAL");
	/* rdma-core's codes and attributes. */
	errno = 0;
	int rr = ibv_rereg_mr(s->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(rr < 0 && errno == EOPNOTSUPP, "rereg_mr: negative, EOPNOTSUPP (%d, %s)", rr, strerror(errno));
	errno = 0;
	rr = ibv_rereg_mr(s->mr, 1 << 20, NULL, NULL, 0, 0);
	CHECK(rr == IBV_REREG_MR_ERR_INPUT && errno == EINVAL, "rereg_mr(unknown flag): ERR_INPUT, EINVAL");
	struct ibv_mr *mwb = ibv_reg_mr(s->pd, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(mwb != NULL, "reg_mr(MW_BIND): accepted (%s)", strerror(errno));
	if (mwb)
		ibv_dereg_mr(mwb);
	struct ibv_device_attr_ex dx;
	CHECK(ibv_query_device_ex(s->ctx, NULL, &dx) == 0 && dx.orig_attr.vendor_id != 0 &&
		      dx.phys_port_cnt_ex == 1 && dx.orig_attr.phys_port_cnt == 1 &&
		      dx.orig_attr.max_srq > 0,
	      "query_device_ex: vendor_id %#x, phys_port_cnt_ex %u, max_srq %d", dx.orig_attr.vendor_id,
	      dx.phys_port_cnt_ex, dx.orig_attr.max_srq);
	/* Shared receive queues (rdma-core's codes; rxe's behaviour). */
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 0, .max_sge = 1}};
	errno = 0;
	CHECK(!ibv_create_srq(s->pd, &sa) && errno == EINVAL, "create_srq(max_wr 0): NULL, EINVAL");
	sa.attr.max_wr = 4;
	sa.attr.srq_limit = 3; /* ignored at create: unarmed */
	struct ibv_srq *srq = ibv_create_srq(s->pd, &sa);
	CHECK(srq && sa.attr.max_wr >= 4, "create_srq: an SRQ (%s)", strerror(errno));
	if (srq) {
		struct ibv_srq_attr q;
		CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr == 4 && q.srq_limit == 0,
		      "query_srq: max_wr 4, unarmed");
		q.srq_limit = 5;
		CHECK(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT) == EINVAL, "modify_srq(limit > max_wr): EINVAL");
		q.max_wr = 64;
		CHECK(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR) == 0, "modify_srq(max_wr 64): 0");
		struct ibv_qp_init_attr qs = {.send_cq = s->cq, .recv_cq = s->cq, .srq = srq,
					      .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 1, .max_send_sge = 1}};
		struct ibv_qp *sq = ibv_create_qp(s->pd, &qs);
		CHECK(sq && qs.cap.max_recv_wr == 0, "create_qp on an SRQ: max_recv_wr 0");
		CHECK(ibv_destroy_srq(srq) == EBUSY, "destroy_srq with a QP on it: EBUSY");
		if (sq)
			CHECK(ibv_destroy_qp(sq) == 0, "destroy_qp on an SRQ: 0");
		CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq: 0");
	}
	struct ibv_srq_init_attr_ex sx = {.attr = {.max_wr = 2, .max_sge = 1}, .pd = s->pd,
					  .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
					  .srq_type = IBV_SRQT_XRC};
	errno = 0;
	CHECK(!ibv_create_srq_ex(s->ctx, &sx) && errno == EOPNOTSUPP, "create_srq_ex(XRC): NULL, EOPNOTSUPP");
	sx.srq_type = IBV_SRQT_BASIC;
	struct ibv_srq *bsrq = ibv_create_srq_ex(s->ctx, &sx);
	CHECK(bsrq != NULL, "create_srq_ex(basic): an SRQ");
	if (bsrq)
		CHECK(ibv_destroy_srq(bsrq) == 0, "destroy_srq: 0");
	union ibv_gid g;
	CHECK(ibv_query_gid(s->ctx, 1, 1, &g) == -1, "query_gid(index 1): -1");
	struct ibv_port_attr pa;
	CHECK(ibv_query_port(s->ctx, 2, &pa) == EINVAL, "query_port(port 2): EINVAL");
	/* rdma-core: a PD in use cannot be freed; a region of another PD is not
	 * the QP's (IBTA 10.6.3.2: its L_Key completes LOC_PROT_ERR). */
	struct ibv_pd *pd2 = ibv_alloc_pd(s->ctx);
	struct ibv_mr *mr2 = pd2 ? ibv_reg_mr(pd2, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE) : NULL;
	CHECK(mr2 && ibv_dealloc_pd(pd2) == EBUSY, "dealloc_pd with an MR in it: EBUSY");
	CHECK(mr2 && mr2->pd == pd2 && mr2->lkey != s->mr->lkey, "reg_mr in a second PD");
	CHECK(mr2 && !ibv_dereg_mr(mr2) && !ibv_dealloc_pd(pd2), "dealloc_pd once empty: 0");
	/* A child shares the parent's DPDK memory: fork is not "unneeded". It
	 * is ENABLED when something called ibv_fork_init() first (DPDK's mlx5
	 * driver does, at load, when it is installed), else DISABLED, and then
	 * too late to enable with memory registered (rdma-core: EINVAL). */
	enum ibv_fork_status fs = ibv_is_fork_initialized();
	CHECK(fs == IBV_FORK_DISABLED || fs == IBV_FORK_ENABLED, "is_fork_initialized: %d, not UNNEEDED",
	      (int)fs);
	CHECK(ibv_fork_init() == (fs == IBV_FORK_ENABLED ? 0 : EINVAL),
	      "fork_init with memory registered: 0 when enabled already, else EINVAL");

	struct ibv_qp *qp = make_qp(s); /* in INIT */
	struct ibv_sge sge = {.addr = (uintptr_t)s->buf, .length = 8, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_send_wr *bad = NULL;
	int r = ibv_post_send(qp, &wr, &bad);
	CHECK(r == EINVAL && bad == &wr, "post_send in INIT: EINVAL, bad_wr set (%d)", r);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	CHECK(r == EINVAL, "modify_qp INIT->RTS: EINVAL (%d)", r);
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY);
	CHECK(r == EINVAL, "modify_qp with QKEY on RC: EINVAL (%d)", r);
	struct ibv_qp_init_attr ia;
	r = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	CHECK(r == 0 && a.qp_state == IBV_QPS_INIT, "query_qp after refused modifies: INIT");
	wr.opcode = (enum ibv_wr_opcode)99;
	struct ibv_qp_attr rst = {.qp_state = IBV_QPS_RESET};
	CHECK(ibv_modify_qp(qp, &rst, IBV_QP_STATE) == 0, "modify_qp INIT->RESET: 0");
	bad = NULL;
	CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL && bad == &wr, "post_send in RESET: EINVAL");
	struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *rbad = NULL;
	CHECK(ibv_post_recv(qp, &rwr, &rbad) == EINVAL && rbad == &rwr, "post_recv in RESET: EINVAL");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp: 0");

	/* UD: address handles need a GRH with an IPv4-mapped GID;
	 * a UD QP takes SEND with an AH only, and QKEY at RESET->INIT. */
	struct ibv_ah_attr aha = {.is_global = 0, .port_num = 1};
	errno = 0;
	CHECK(!ibv_create_ah(s->pd, &aha) && errno == EINVAL, "create_ah without GRH: NULL, EINVAL (%s)",
	      strerror(errno));
	aha.is_global = 1;
	memset(&aha.grh.dgid, 0x11, sizeof(aha.grh.dgid));
	errno = 0;
	CHECK(!ibv_create_ah(s->pd, &aha) && errno == EINVAL, "create_ah, GID not IPv4-mapped: NULL, EINVAL");
	CHECK(ibv_destroy_ah(NULL) == EINVAL, "destroy_ah(NULL): EINVAL");
	struct ibv_qp_init_attr uda = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_UD,
				       .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					       .max_recv_sge = 1}};
	struct ibv_qp *ud = ibv_create_qp(s->pd, &uda);
	CHECK(ud && ud->qp_type == IBV_QPT_UD, "create_qp(UD): a UD QP");
	if (ud) {
		struct ibv_qp_attr ua = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
					 .qkey = 0x11111111};
		r = ibv_modify_qp(ud, &ua, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
		CHECK(r == EINVAL, "modify_qp UD RESET->INIT without QKEY: EINVAL (%d)", r);
		r = ibv_modify_qp(ud, &ua, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
		CHECK(r == 0, "modify_qp UD RESET->INIT with QKEY: 0 (%d)", r);
		ua.qp_state = IBV_QPS_RTR;
		ua.dest_qp_num = 5;
		r = ibv_modify_qp(ud, &ua, IBV_QP_STATE | IBV_QP_DEST_QPN);
		CHECK(r == EINVAL, "modify_qp UD INIT->RTR with DEST_QPN: EINVAL (%d)", r);
		CHECK(ibv_modify_qp(ud, &ua, IBV_QP_STATE) == 0, "modify_qp UD INIT->RTR: 0");
		ua.qp_state = IBV_QPS_RTS;
		ua.sq_psn = 1;
		CHECK(ibv_modify_qp(ud, &ua, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "modify_qp UD RTR->RTS: 0");
		struct ibv_qp_init_attr uia;
		r = ibv_query_qp(ud, &ua, IBV_QP_QKEY, &uia);
		CHECK(r == 0 && ua.qkey == 0x11111111 && uia.qp_type == IBV_QPT_UD, "query_qp UD: Q_Key, type");
		struct ibv_send_wr uw = {.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
		uw.wr.ud.ah = NULL;
		uw.wr.ud.remote_qpn = 5;
		r = ibv_post_send(ud, &uw, &bad);
		CHECK(r == EINVAL && bad == &uw, "post_send UD without an AH: EINVAL (%d)", r);
		CHECK(ibv_destroy_qp(ud) == 0, "destroy_qp(UD): 0");
	}
	CHECK(!ibv_create_ah_from_wc(s->pd, &(struct ibv_wc){0}, &(struct ibv_grh){0}, 1) && errno == EINVAL,
	      "create_ah_from_wc without IBV_WC_GRH: NULL, EINVAL");
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded"),
	      "wc_status_str(RETRY_EXC_ERR)");
}

static int client(int fd)
{
	side = "client";
	struct side s = {0};
	open_side(&s);
	bad_calls(&s);
	for (int i = 0; i < 3; i++)
		s.qp[i] = make_qp(&s);
	struct info me, peer;
	my_info(&s, &me, 0x200);
	xrecv(fd, &peer, sizeof(peer));
	xsend(fd, &me, sizeof(me));
	/* QP 0 -> server QP 0; QP 1 -> server QP 1 with rnr_retry 0; QP 2 ->
	 * a QPN the server does not have, short timeout, one retry. */
	int r = connect_qp(s.qp[0], &peer, peer.qpn[0], me.psn, 14, 7, 7);
	CHECK(r == 0, "QP0 RTR/RTS: %s", strerror(r));
	r = connect_qp(s.qp[1], &peer, peer.qpn[1], me.psn, 14, 7, 0);
	CHECK(r == 0, "QP1 RTR/RTS: %s", strerror(r));
	r = connect_qp(s.qp[2], &peer, peer.qpn[1] + 1000, me.psn, 8, 1, 7);
	CHECK(r == 0, "QP2 RTR/RTS: %s", strerror(r));
	char ready;
	xrecv(fd, &ready, 1); /* the server's QPs are in RTS */

	struct ibv_sge sge = {.addr = (uintptr_t)s.buf, .length = 8, .lkey = s.mr->lkey};
	struct ibv_wc wc;

	/* Remote access error, then flush: a WRITE with a wrong rkey, a good
	 * WRITE behind it, and a receive posted once the QP is in ERR. */
	struct ibv_send_wr w2 = {.wr_id = 12, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = peer.addr, .rkey = peer.rkey}};
	struct ibv_send_wr w1 = w2;
	w1.wr_id = 11;
	w1.wr.rdma.rkey = peer.rkey ^ 0x5a5a5a;
	w1.next = &w2;
	struct ibv_send_wr *bad = NULL;
	r = ibv_post_send(s.qp[0], &w1, &bad);
	CHECK(r == 0, "post two WRITEs: %d", r);
	CHECK(wait_wc(s.cq, &wc, 10) && wc.wr_id == 11 && wc.status == IBV_WC_REM_ACCESS_ERR,
	      "bad rkey: wr 11 %s", ibv_wc_status_str(wc.status));
	CHECK(wait_wc(s.cq, &wc, 10) && wc.wr_id == 12 && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "WRITE behind it: wr 12 %s", ibv_wc_status_str(wc.status));
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	CHECK(ibv_query_qp(s.qp[0], &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_ERR,
	      "QP in ERR after the error (state %d)", qa.qp_state);
	struct ibv_recv_wr rw = {.wr_id = 13, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *rbad = NULL;
	CHECK(ibv_post_recv(s.qp[0], &rw, &rbad) == 0, "post_recv in ERR: accepted");
	CHECK(wait_wc(s.cq, &wc, 10) && wc.wr_id == 13 && wc.status == IBV_WC_WR_FLUSH_ERR &&
		      wc.opcode == IBV_WC_RECV,
	      "receive in ERR: wr 13 %s", ibv_wc_status_str(wc.status));
	w2.wr_id = 14;
	w2.next = NULL;
	CHECK(ibv_post_send(s.qp[0], &w2, &bad) == 0 && wait_wc(s.cq, &wc, 10) && wc.wr_id == 14 &&
		      wc.status == IBV_WC_WR_FLUSH_ERR,
	      "send in ERR: wr 14 %s", ibv_wc_status_str(wc.status));

	/* RNR retry exceeded: the server never posts a receive. */
	struct ibv_send_wr sw = {.wr_id = 21, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	CHECK(ibv_post_send(s.qp[1], &sw, &bad) == 0, "post SEND to a QP without receives");
	CHECK(wait_wc(s.cq, &wc, 10) && wc.wr_id == 21 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
	      "no receive, rnr_retry 0: wr 21 %s", ibv_wc_status_str(wc.status));

	/* Retry exceeded: nobody answers for that QPN. */
	sw.wr_id = 31;
	CHECK(ibv_post_send(s.qp[2], &sw, &bad) == 0, "post SEND to a QPN nobody has");
	CHECK(wait_wc(s.cq, &wc, 20) && wc.wr_id == 31 && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "no answer, retry_cnt 1: wr 31 %s", ibv_wc_status_str(wc.status));

	char done = 1;
	xsend(fd, &done, 1);
	close_side(&s);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	char sock[128];
	snprintf(sock, sizeof(sock), "/tmp/droce-verbs-errors-%d.sock", (int)getpid());
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	char spec[200];
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		alarm(60);
		close(sv[0]);
		snprintf(spec, sizeof(spec), "memif:server,socket=%s", sock);
		setenv("DROCE_PORT", spec, 1);
		setenv("DROCE_IP", "198.18.0.1", 1);
		_exit(server(sv[1]));
	}
	alarm(60);
	close(sv[1]);
	char go;
	xrecv(sv[0], &go, 1);
	usleep(300000); /* the server's memif socket is listening */
	snprintf(spec, sizeof(spec), "memif:client,socket=%s", sock);
	setenv("DROCE_PORT", spec, 1);
	setenv("DROCE_IP", "198.18.0.2", 1);
	return finish(pid, client(sv[0]));
}
