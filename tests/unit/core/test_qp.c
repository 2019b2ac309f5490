/* SPDX-License-Identifier: BSD-3-Clause */
/* QP: creation limits, the IBTA 11.2.5.1 transition table and masks, value
 * ranges, posting rules per state, flush on ERR, query. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <unistd.h>

#include "core/core_int.h"
#include "pair.h"
#include "wire/build.h"
#include "wire/opcode.h"

struct fx {
	struct tl_pair *l;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *qp;
	uint8_t buf[256];
	struct droce_mr *mr;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->l = calloc(1, sizeof(*f->l));
	f->ctx = bed_ctx(f->l, 0);
	f->cq = droce_create_cq(f->ctx, 64);
	struct droce_qp_init_attr ia = { .send_cq = f->cq, .recv_cq = f->cq };
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	ia.cap.max_inline_data = 32;
	f->qp = droce_create_qp(f->ctx, &ia);
	f->mr = droce_reg_mr(f->ctx, f->buf, sizeof(f->buf), DROCE_ACCESS_LOCAL_WRITE);
	*state = f;
	return f->qp && f->mr ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	droce_destroy_qp(f->qp);
	droce_destroy_cq(f->cq);
	droce_ctx_destroy(f->ctx);
	free(f->l);
	free(f);
	return 0;
}

#define INIT_MASK (DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY)
#define RTR_MASK (DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN | \
		  DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER)
#define RTS_MASK (DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT | \
		  DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC)

static void good_attr(struct droce_qp_attr *a, enum droce_qp_state s)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	a->qp_access_flags = DROCE_ACCESS_REMOTE_WRITE;
	a->pkey = 0xFFFF;
	a->path_mtu = DROCE_MTU_1024;
	a->dest_qp_num = 77;
	a->rq_psn = 0x123456;
	a->sq_psn = 0xABCDEF;
	a->max_dest_rd_atomic = 4;
	a->max_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->ah_attr.ip_version = 4;
	a->ah_attr.dst_ip[0] = 10;
	a->ah_attr.dscp = 26;
	a->ah_attr.ttl = 64;
}

static void test_qpn_and_create_errors(void **state)
{
	struct fx *f = *state;
	uint32_t n = droce_qp_num(f->qp);
	assert_true(n > 1 && n <= 0xFFFFFF);
	struct droce_qp_init_attr ia = { .send_cq = f->cq, .recv_cq = NULL };
	errno = 0;
	assert_null(droce_create_qp(f->ctx, &ia));
	assert_int_equal(errno, EINVAL);
	ia.recv_cq = f->cq;
	ia.cap.max_send_sge = DROCE_QP_MAX_SGE + 1;
	assert_null(droce_create_qp(f->ctx, &ia));
	assert_int_equal(errno, EINVAL);
	ia.cap.max_send_sge = 0;
	struct droce_qp *q2 = droce_create_qp(f->ctx, &ia);
	assert_non_null(q2);
	assert_int_not_equal(droce_qp_num(q2), n);
	struct droce_qp_attr a;
	assert_int_equal(droce_query_qp(q2, &a, 0), 0);
	assert_int_equal(a.qp_state, DROCE_QPS_RESET);
	assert_int_equal(a.cap.max_send_wr, DROCE_DEFAULT_MAX_SEND_WR);
	assert_int_equal(droce_destroy_qp(q2), 0);
	assert_int_equal(droce_destroy_qp(NULL), -EINVAL);
}

/* A destroyed QP's number does not come back with the next QP (a late
 * packet or CM message of the old connection would reach the new one):
 * QPNs rotate through the table, a number returns only after every other
 * free one was handed out; with the table full, ENOMEM. */
static void test_qpn_not_reused_at_once(void **state)
{
	struct fx *f = *state;
	struct droce_qp_init_attr ia = { .send_cq = f->cq, .recv_cq = f->cq };
	uint32_t seen[64];
	unsigned n = 0;
	struct droce_qp *q = droce_create_qp(f->ctx, &ia);
	assert_non_null(q);
	seen[n++] = droce_qp_num(q);
	for (unsigned i = 0; i < 40; i++) {
		assert_int_equal(droce_destroy_qp(q), 0);
		q = droce_create_qp(f->ctx, &ia);
		assert_non_null(q);
		for (unsigned j = 0; j < n; j++)
			assert_int_not_equal(droce_qp_num(q), seen[j]);
		seen[n++] = droce_qp_num(q);
	}
	assert_int_equal(droce_destroy_qp(q), 0);
	/* A small table: every free number is used once before one returns. */
	struct tl_pair *l = calloc(1, sizeof(*l));
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.max_qps = 3;
	p.seed = 9;
	l->end[0].pair = l;
	p.link.ops = &tl_ops;
	p.link.priv = &l->end[0];
	struct droce_ctx *ctx = droce_ctx_create(&p);
	struct droce_cq *cq = droce_create_cq(ctx, 8);
	ia.send_cq = ia.recv_cq = cq;
	struct droce_qp *a = droce_create_qp(ctx, &ia), *b = droce_create_qp(ctx, &ia);
	uint32_t an = droce_qp_num(a), bn = droce_qp_num(b);
	assert_int_equal(droce_destroy_qp(a), 0);
	struct droce_qp *c = droce_create_qp(ctx, &ia);
	assert_true(droce_qp_num(c) != an && droce_qp_num(c) != bn);
	struct droce_qp *d = droce_create_qp(ctx, &ia); /* the only free slot left: a's */
	/* the same index (the QPN's low bits: 3 QPs + 2 fit 3 bits), a new
	 * random tag above it: a's QPN does not come back with its slot */
	assert_int_equal(droce_qp_num(d) & 7u, an & 7u);
	assert_int_not_equal(droce_qp_num(d), an);
	errno = 0;
	assert_null(droce_create_qp(ctx, &ia));
	assert_int_equal(errno, ENOMEM);
	droce_ctx_destroy(ctx);
	free(l);
}

/* A path MTU above what the link carries is refused (its full-size frames
 * would be dropped and every message over one packet fail). */
static void test_path_mtu_capped_by_link(void **state)
{
	(void)state;
	struct tl_pair *l = calloc(1, sizeof(*l));
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.seed = 9;
	p.max_mtu = DROCE_MTU_1024;
	l->end[0].pair = l;
	p.link.ops = &tl_ops;
	p.link.priv = &l->end[0];
	struct droce_ctx *ctx = droce_ctx_create(&p);
	assert_non_null(ctx);
	struct droce_cq *cq = droce_create_cq(ctx, 8);
	struct droce_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq };
	struct droce_qp *q = droce_create_qp(ctx, &ia);
	struct droce_qp_attr a;
	good_attr(&a, DROCE_QPS_INIT);
	assert_int_equal(droce_modify_qp(q, &a, INIT_MASK), 0);
	good_attr(&a, DROCE_QPS_RTR);
	a.path_mtu = DROCE_MTU_2048;
	assert_int_equal(droce_modify_qp(q, &a, RTR_MASK), -EINVAL);
	a.path_mtu = DROCE_MTU_1024;
	assert_int_equal(droce_modify_qp(q, &a, RTR_MASK), 0);
	droce_ctx_destroy(ctx);
	p.max_mtu = 9;
	errno = 0;
	assert_null(droce_ctx_create(&p));
	assert_int_equal(errno, EINVAL);
	free(l);
}

static void test_legal_path_and_query(void **state)
{
	struct fx *f = *state;
	struct droce_qp_attr a, q;
	good_attr(&a, DROCE_QPS_INIT);
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK), 0);
	a.qp_state = DROCE_QPS_INIT; /* INIT -> INIT */
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS), 0);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), 0);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), 0);
	assert_int_equal(droce_query_qp(f->qp, &q, 0), 0);
	assert_int_equal(q.qp_state, DROCE_QPS_RTS);
	assert_int_equal(q.dest_qp_num, 77);
	assert_int_equal(q.rq_psn, 0x123456);
	assert_int_equal(q.sq_psn, 0xABCDEF);
	assert_int_equal(q.path_mtu, DROCE_MTU_1024);
	assert_int_equal(q.timeout, 14);
	assert_int_equal(q.min_rnr_timer, 12);
	assert_int_equal(q.cap.max_send_wr, 4);
	/* RTS -> RTS with an allowed attribute; RTS -> SQD -> RTS. */
	a.min_rnr_timer = 3;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE | DROCE_QP_MIN_RNR_TIMER), 0);
	a.qp_state = DROCE_QPS_SQD;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	/* any -> ERR, ERR -> RESET, RESET -> INIT again. */
	a.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), -EINVAL);
	a.qp_state = DROCE_QPS_RESET;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_INIT;
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK), 0);
	assert_string_equal(droce_qp_state_str(DROCE_QPS_RTS), "RTS");
	assert_string_equal(droce_qp_state_str(DROCE_QPS_SQE), "SQE");
	assert_string_equal(droce_qp_state_str((enum droce_qp_state)99), "UNKNOWN");
}

/* A QP carries selective repeat's state only once it chooses sr, and the
 * READ/atomic replay ring and response queue only once it accepts READs
 * or atomics: 10 k go-back-N WRITE QPs do not spread their hot state over
 * 10 k x 10 KB. */
static void test_state_allocated_on_demand(void **state)
{
	struct fx *f = *state;
	struct droce_qp_attr a;
	assert_true(sizeof(*f->qp) < 4096);
	good_attr(&a, DROCE_QPS_INIT);
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK), 0);
	a.qp_state = DROCE_QPS_RTR;
	a.max_dest_rd_atomic = 0;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), 0);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), 0);
	assert_null(f->qp->tp.sr);
	assert_null(f->qp->tp.rd);
	/* SQD -> SQD raises it: allocated then (11.2.5.1 allows it there). */
	a.qp_state = DROCE_QPS_SQD;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	a.max_dest_rd_atomic = 2;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE | DROCE_QP_MAX_DEST_RD_ATOMIC), 0);
	assert_non_null(f->qp->tp.rd);
	assert_null(f->qp->tp.sr);
	/* Back through RESET: sr chosen in INIT is there before RTR needs it. */
	a.qp_state = DROCE_QPS_RESET;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_INIT;
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK), 0);
	assert_int_equal(droce_qp_set_transport(f->qp, DROCE_TRANSPORT_SR), 0);
	assert_non_null(f->qp->tp.sr);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), 0);
	assert_int_equal(f->qp->tp.sr->rx_base, a.rq_psn);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), 0);
	assert_int_equal(f->qp->tp.sr->tx_base, a.sq_psn);
}

/* Pages of [p, p + len) not resident in memory. */
static size_t pages_missing(const void *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1), end = (uintptr_t)p + len;
	size_t n = (end - a + pg - 1) / pg, missing = 0;
	unsigned char *v = calloc(n, 1);
	assert_int_equal(mincore((void *)a, end - a, v), 0);
	for (size_t i = 0; i < n; i++)
		missing += !(v[i] & 1);
	free(v);
	return missing;
}

/* The rings the poll loop writes are resident from create: the first pass
 * of posts and completions takes no page fault (a MB-sized calloc is an
 * untouched mapping until then). */
static void test_rings_resident_at_create(void **state)
{
	struct fx *f = *state;
	struct droce_cq *cq = droce_create_cq(f->ctx, 1u << 16);
	assert_non_null(cq);
	struct droce_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq };
	ia.cap.max_send_wr = 4096;
	ia.cap.max_recv_wr = 4096;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 256;
	struct droce_qp *qp = droce_create_qp(f->ctx, &ia);
	assert_non_null(qp);
	assert_int_equal(pages_missing(qp->sq, 4096 * sizeof(*qp->sq)), 0);
	assert_int_equal(pages_missing(qp->rq, 4096 * sizeof(*qp->rq)), 0);
	assert_int_equal(pages_missing(qp->inline_buf, 4096 * 256), 0);
	assert_int_equal(pages_missing(cq->ring, (1u << 16) * sizeof(*cq->ring)), 0);
	droce_destroy_qp(qp);
	droce_destroy_cq(cq);
}

static void test_illegal_transitions_and_masks(void **state)
{
	struct fx *f = *state;
	struct droce_qp_attr a;
	good_attr(&a, DROCE_QPS_RTR);
	/* Skipping states. */
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), -EINVAL);
	a.qp_state = DROCE_QPS_SQD;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), -EINVAL);
	/* RESET -> INIT: missing required ACCESS_FLAGS; a forbidden extra. */
	a.qp_state = DROCE_QPS_INIT;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY), -EINVAL);
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK | DROCE_QP_SQ_PSN), -EINVAL);
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK), 0);
	/* INIT -> RTR: each required attribute missing in turn. */
	a.qp_state = DROCE_QPS_RTR;
	const unsigned req[] = { DROCE_QP_AV, DROCE_QP_PATH_MTU, DROCE_QP_DEST_QPN, DROCE_QP_RQ_PSN,
				 DROCE_QP_MAX_DEST_RD_ATOMIC, DROCE_QP_MIN_RNR_TIMER };
	for (unsigned i = 0; i < sizeof(req) / sizeof(req[0]); i++)
		assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK & ~req[i]), -EINVAL);
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK | DROCE_QP_TIMEOUT), -EINVAL);
	/* Values out of range. */
	a.path_mtu = (enum droce_mtu)6;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.path_mtu = (enum droce_mtu)0;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.path_mtu = DROCE_MTU_4096;
	a.rq_psn = 1u << 24;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.rq_psn = 0;
	a.dest_qp_num = 1u << 24;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.dest_qp_num = 5;
	a.min_rnr_timer = 32;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.min_rnr_timer = 1;
	a.ah_attr.ip_version = 6; /* context is IPv4 */
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), -EINVAL);
	a.ah_attr.ip_version = 4;
	struct droce_qp_attr q;
	droce_query_qp(f->qp, &q, 0);
	assert_int_equal(q.qp_state, DROCE_QPS_INIT); /* nothing applied */
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), 0);
	/* RTR -> RTS: ranges and missing attributes. */
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK & ~DROCE_QP_SQ_PSN), -EINVAL);
	a.retry_cnt = 8;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), -EINVAL);
	a.retry_cnt = 7;
	a.rnr_retry = 8;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), -EINVAL);
	a.rnr_retry = 7;
	a.timeout = 32;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), -EINVAL);
	a.timeout = 0;
	a.max_rd_atomic = DROCE_QP_MAX_RD_ATOMIC + 1;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), -EINVAL);
	a.max_rd_atomic = 1;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), 0);
	/* RTS -> RTS may not change the PSN or path. */
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN), -EINVAL);
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_PATH_MTU), -EINVAL);
	assert_int_equal(droce_modify_qp(NULL, &a, 0), -EINVAL);
}

static void test_post_rules(void **state)
{
	struct fx *f = *state;
	struct droce_sge sge = { (uintptr_t)f->buf, 16, f->mr->lkey };
	struct droce_send_wr sw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				    .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED };
	struct droce_recv_wr rw = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	struct droce_send_wr *sbad = NULL;
	struct droce_recv_wr *rbad = NULL;
	/* RESET: neither queue takes work (10.8.1). */
	assert_int_equal(droce_post_send(f->qp, &sw, &sbad), -EINVAL);
	assert_ptr_equal(sbad, &sw);
	assert_int_equal(droce_post_recv(f->qp, &rw, &rbad), -EINVAL);
	assert_ptr_equal(rbad, &rw);
	struct droce_qp_attr a;
	good_attr(&a, DROCE_QPS_INIT);
	assert_int_equal(droce_modify_qp(f->qp, &a, INIT_MASK), 0);
	/* INIT: RQ yes, SQ no. */
	assert_int_equal(droce_post_recv(f->qp, &rw, &rbad), 0);
	sbad = NULL;
	assert_int_equal(droce_post_send(f->qp, &sw, &sbad), -EINVAL);
	assert_ptr_equal(sbad, &sw);
	/* RQ: too many SGEs; RQ full (depth 4). */
	rw.num_sge = 3;
	assert_int_equal(droce_post_recv(f->qp, &rw, &rbad), -EINVAL);
	rw.num_sge = 1;
	for (int i = 0; i < 3; i++)
		assert_int_equal(droce_post_recv(f->qp, &rw, &rbad), 0);
	assert_int_equal(droce_post_recv(f->qp, &rw, &rbad), -ENOMEM);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTR_MASK), 0);
	assert_int_equal(droce_post_send(f->qp, &sw, &sbad), -EINVAL);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->qp, &a, RTS_MASK), 0);
	/* RTS: bad WRs. The second WR of a chain fails: bad_wr points at it. */
	struct droce_send_wr w2 = sw;
	w2.num_sge = 3;
	sw.next = &w2;
	assert_int_equal(droce_post_send(f->qp, &sw, &sbad), -EINVAL);
	assert_ptr_equal(sbad, &w2);
	sw.next = NULL;
	w2 = sw;
	w2.opcode = (enum droce_wr_opcode)42;
	assert_int_equal(droce_post_send(f->qp, &w2, &sbad), -EINVAL);
	w2 = sw;
	w2.send_flags |= DROCE_SEND_INLINE;
	sge.length = 33; /* max_inline 32 */
	assert_int_equal(droce_post_send(f->qp, &w2, &sbad), -EINVAL);
	sge.length = 8;
	w2.opcode = DROCE_WR_ATOMIC_FETCH_AND_ADD;
	w2.send_flags = 0;
	w2.wr.atomic.remote_addr = 4; /* not 8-aligned */
	assert_int_equal(droce_post_send(f->qp, &w2, &sbad), -EINVAL);
	w2.wr.atomic.remote_addr = 8;
	sge.length = 4; /* atomic needs 8 bytes */
	assert_int_equal(droce_post_send(f->qp, &w2, &sbad), -EINVAL);
	sge.length = 16;
	/* SQ full: 4 deep, nothing moves (no polling); the first WR of the
	 * failed chain above was posted (verbs: WRs before *bad_wr are). */
	for (int i = 0; i < 3; i++)
		assert_int_equal(droce_post_send(f->qp, &sw, &sbad), 0);
	assert_int_equal(droce_post_send(f->qp, &sw, &sbad), -ENOMEM);
	/* ERR flushes everything outstanding, signaled or not, and new posts. */
	a.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(f->qp, &a, DROCE_QP_STATE), 0);
	struct droce_wc wc[16];
	int n = droce_poll_cq(f->cq, 16, wc);
	assert_int_equal(n, 8); /* 4 sends + 4 receives */
	for (int i = 0; i < n; i++)
		assert_int_equal(wc[i].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(droce_post_send(f->qp, &sw, &sbad), 0);
	assert_int_equal(droce_post_recv(f->qp, &rw, &rbad), 0);
	n = droce_poll_cq(f->cq, 16, wc);
	assert_int_equal(n, 2);
	assert_int_equal(wc[0].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].opcode, DROCE_WC_SEND);
	assert_int_equal(wc[1].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].opcode, DROCE_WC_RECV);
}

static void test_bad_lkey_completes_loc_prot(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 1, 2);
	assert_non_null(bd);
	uint8_t buf[64];
	struct droce_sge sge = { (uintptr_t)buf, 16, 0x12345678 };
	struct droce_send_wr sw = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				    .opcode = DROCE_WR_RDMA_WRITE, .send_flags = 0 };
	struct droce_send_wr *bad;
	assert_int_equal(droce_post_send(bd->s[0].qp, &sw, &bad), 0);
	bed_run(bd, 100, UINT64_MAX);
	struct droce_wc wc;
	assert_int_equal(droce_poll_cq(bd->s[0].scq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, DROCE_WC_LOC_PROT_ERR);
	struct droce_qp_attr a;
	droce_query_qp(bd->s[0].qp, &a, 0);
	assert_int_equal(a.qp_state, DROCE_QPS_ERR);
	bed_free(bd);
}

/* The per-QP fast header builder writes exactly what droce_build_hdrs writes. */
static void test_fast_headers_equal(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 1, 2);
	assert_non_null(bd);
	struct droce_qp *qp = bd->s[0].qp;
	const uint8_t ops[] = { DROCE_OP_RC_SEND_FIRST, DROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE,
				DROCE_OP_RC_RDMA_WRITE_FIRST, DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
				DROCE_OP_RC_RDMA_READ_REQUEST, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE,
				DROCE_OP_RC_ACKNOWLEDGE, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE,
				DROCE_OP_RC_COMPARE_SWAP, DROCE_OP_CNP };
	const uint32_t lens[] = { 0, 1, 3, 64, 1023, 1024 };
	for (unsigned o = 0; o < sizeof(ops); o++)
		for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			struct droce_hdrs h = qp->tmpl;
			h.bth.opcode = ops[o];
			h.bth.psn = 0xABCDE0 + l;
			h.bth.ack_req = l & 1;
			h.bth.se = (l & 2) != 0;
			h.bth.becn = ops[o] == DROCE_OP_CNP;
			if (ops[o] == DROCE_OP_CNP)
				h.net.ecn = 0;
			h.ext.reth.va = 0x1122334455667788ull;
			h.ext.reth.rkey = 0x12345678;
			h.ext.reth.dma_len = 5000;
			h.ext.atomic.va = 0x8877665544332211ull;
			h.ext.atomic.rkey = 0x87654321;
			h.ext.atomic.swap_add = 5;
			h.ext.atomic.compare = 6;
			h.ext.aeth.syndrome = 0x1F;
			h.ext.aeth.msn = 0x123;
			h.ext.atomic_ack = 99;
			h.ext.imm = 0xCAFEBABE;
			h.payload_len = (droce_opcode_info(ops[o])->flags & DROCE_OPF_PAYLOAD) ? lens[l] : 0;
			uint8_t a[DROCE_HDR_SCRATCH], b[DROCE_HDR_SCRATCH];
			memset(a, 0xAA, sizeof(a));
			memset(b, 0xAA, sizeof(b));
			size_t na = droce_qp_build_hdrs(qp, a, &h);
			size_t nb = droce_build_hdrs(b, sizeof(b), &h);
			assert_true(na > 0);
			assert_int_equal(na, nb);
			assert_memory_equal(a, b, na);
		}
	bed_free(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_qpn_and_create_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qpn_not_reused_at_once, setup, teardown),
		cmocka_unit_test(test_path_mtu_capped_by_link),
		cmocka_unit_test_setup_teardown(test_legal_path_and_query, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_allocated_on_demand, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rings_resident_at_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_illegal_transitions_and_masks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_rules, setup, teardown),
		cmocka_unit_test(test_bad_lkey_completes_loc_prot),
		cmocka_unit_test(test_fast_headers_equal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
