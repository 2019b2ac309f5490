/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suite middleware: loopback and many opens, in one process, with no peer
 * on the link (loopback.sh runs it on a memif server nobody connects to
 * and on DPDK's null PMD, which drops what it is given):
 *  - droce0 opened twice (two components of one program): both opens work
 *    and share the port;
 *  - two RC QPs connected to each other with the same GID (ours), as NICs
 *    and rxe allow: once both on one context, once one on each open;
 *    RDMA WRITE, SEND and RDMA READ each way, every byte checked;
 *  - closing one open leaves the other working (a SEND after it).
 *   loopback
 * Exits 0 printing "loopback: ok", or names what failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define SZ 65536

static void die(const char *what)
{
	fprintf(stderr, "loopback: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "loopback: %s\n", what);
		exit(1);
	}
}

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* [0, SZ) out, [SZ, 2 SZ) in */
};

static void end_init(struct end *e, struct ibv_context *ctx)
{
	e->ctx = ctx;
	e->pd = ibv_alloc_pd(ctx);
	e->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!e->pd || !e->cq)
		die("pd/cq");
	struct ibv_qp_init_attr ia = {.send_cq = e->cq, .recv_cq = e->cq,
				      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
					      .max_recv_sge = 1},
				      .qp_type = IBV_QPT_RC, .sq_sig_all = 1};
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		die("ibv_create_qp");
	e->buf = aligned_alloc(4096, 2 * SZ);
	check(e->buf != NULL, "alloc");
	memset(e->buf, 0, 2 * SZ);
	e->mr = ibv_reg_mr(e->pd, e->buf, 2 * SZ,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!e->mr)
		die("ibv_reg_mr");
}

static void end_free(struct end *e)
{
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	free(e->buf);
}

/* RESET -> INIT -> RTR -> RTS toward @p peer, whose GID is ours. */
static void connect_to(struct end *e, const struct end *peer)
{
	union ibv_gid gid;
	if (ibv_query_gid(e->ctx, 1, 0, &gid))
		die("ibv_query_gid");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 100 + peer->qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid; /* the same GID: the peer is this port */
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100 + e->qp->qp_num;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 13u + seed + (i >> 9));
}

static int same(const uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(i * 13u + seed + (i >> 9)))
			return 0;
	return 1;
}

/* Wait for one completion of @p op on @p cq (bounded: the retry timer
 * would end a frame nobody receives in RETRY_EXC_ERR first). */
static void wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	for (long i = 0; i < 4000000000L; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "loopback: completion %s (opcode %d)\n",
				ibv_wc_status_str(wc.status), wc.opcode);
			exit(1);
		}
		check(wc.opcode == op, "unexpected completion opcode");
		return;
	}
	check(0, "no completion");
}

static void post(struct end *e, enum ibv_wr_opcode op, size_t off, const struct end *peer,
		 size_t roff)
{
	struct ibv_sge sg = {(uintptr_t)e->buf + off, SZ, e->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sg, .num_sge = 1, .opcode = op}, *bad;
	wr.wr.rdma.remote_addr = (uintptr_t)peer->buf + roff;
	wr.wr.rdma.rkey = peer->mr->rkey;
	if (ibv_post_send(e->qp, &wr, &bad))
		die("ibv_post_send");
}

static void recv_into(struct end *e)
{
	struct ibv_sge sg = {(uintptr_t)e->buf + SZ, SZ, e->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sg, .num_sge = 1}, *bad;
	if (ibv_post_recv(e->qp, &wr, &bad))
		die("ibv_post_recv");
}

/* WRITE, SEND and READ from @p a to @p b. */
static void exchange(struct end *a, struct end *b, unsigned seed)
{
	fill(a->buf, SZ, seed);
	memset(b->buf + SZ, 0, SZ);
	post(a, IBV_WR_RDMA_WRITE, 0, b, SZ);
	wait_wc(a->cq, IBV_WC_RDMA_WRITE);
	check(same(b->buf + SZ, SZ, seed), "RDMA WRITE: bytes differ");
	memset(b->buf + SZ, 0, SZ);
	fill(a->buf, SZ, seed + 1);
	recv_into(b);
	post(a, IBV_WR_SEND, 0, b, 0);
	wait_wc(a->cq, IBV_WC_SEND);
	wait_wc(b->cq, IBV_WC_RECV);
	check(same(b->buf + SZ, SZ, seed + 1), "SEND: bytes differ");
	fill(b->buf, SZ, seed + 2);
	memset(a->buf + SZ, 0, SZ);
	post(a, IBV_WR_RDMA_READ, SZ, b, 0);
	wait_wc(a->cq, IBV_WC_RDMA_READ);
	check(same(a->buf + SZ, SZ, seed + 2), "RDMA READ: bytes differ");
}

int main(void)
{
	alarm(60);
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	check(l && n == 1, "no droce0");
	struct ibv_context *c1 = ibv_open_device(l[0]);
	if (!c1)
		die("ibv_open_device");
	struct ibv_context *c2 = ibv_open_device(l[0]); /* a second component's */
	if (!c2)
		die("a second ibv_open_device");
	check(c1 != c2, "the second open returned the first context");

	struct end a, b;
	end_init(&a, c1);
	end_init(&b, c1);
	connect_to(&a, &b);
	connect_to(&b, &a);
	exchange(&a, &b, 1);
	exchange(&b, &a, 11);
	end_free(&a);
	end_free(&b);
	printf("loopback: two QPs of one context ok\n");

	end_init(&a, c1);
	end_init(&b, c2);
	connect_to(&a, &b);
	connect_to(&b, &a);
	exchange(&a, &b, 21);
	exchange(&b, &a, 31);
	end_free(&a);
	printf("loopback: QPs of two opens ok\n");

	/* the first open goes; the second keeps the port and the engine */
	if (ibv_close_device(c1))
		die("ibv_close_device");
	struct end d;
	end_init(&d, c2);
	connect_to(&d, &b);
	end_free(&b);
	end_init(&b, c2);
	connect_to(&b, &d);
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};
	if (ibv_modify_qp(d.qp, &r, IBV_QP_STATE))
		die("RESET");
	connect_to(&d, &b);
	exchange(&d, &b, 41);
	end_free(&d);
	end_free(&b);
	printf("loopback: after the first open closed ok\n");
	if (ibv_close_device(c2))
		die("the last ibv_close_device");
	ibv_free_device_list(l);
	printf("loopback: ok\n");
	return 0;
}
