/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded soak: N messages of random operations (SEND,
 * SEND_WITH_IMM, WRITE, WRITE_WITH_IMM, READ, FETCH_ADD, CMP_SWP) and random
 * sizes (0 .. 8000 bytes), up to 16 in flight per flow, over an impaired
 * link (default: 1% loss, 1% reordering, 0.1% duplication in both
 * directions, MTU 1024). Every completion must be SUCCESS and in order,
 * every byte written, read or received is verified against the pattern of
 * its message, every atomic against a model executed in post order.
 *
 * A flow is one requester QP and its responder; flows run at the same time
 * on several QP pairs and, with bidir=1, in both directions (each side is
 * requester and responder at once).
 *
 *   test_transport_soak [key=value ...]
 *     messages=N (100000; env DROCE_SOAK_MESSAGES)  seed=N (1)  mtu=256..4096 (1024)
 *     impair=SPEC (drop=0.01,reorder=0.01,dup=0.001; the seed is added per direction)
 *     qps=N (1..4)  bidir=0|1  inflight=1..16
 *     recvs=1..64 (64): receive WQEs kept posted; few means RNR NAKs under load
 *     ipv6=0|1: RoCEv2 over IPv6   cc=NAME: congestion control (stack/cc), default the context's
 *     delay=NS (0): one-way link latency; timeout=T (8): local ACK timeout exponent
 *     (4.096 us * 2^T; below the round trip, every message also times out spuriously)
 *   Two bare numbers are taken as messages and seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "check.h"
#include "pair.h"

#define SLOTS 16
#define SLOT 8192u
#define NRECV 64
#define NATOMIC 16
#define MAXLEN 8000u
#define MAXFLOWS 8
#define RQ_CAP 64

static struct {
	unsigned long messages;
	uint64_t seed;
	unsigned mtu;
	char impair[200];
	unsigned qps;
	int bidir;
	unsigned inflight;
	unsigned recvs;
	uint64_t delay;      /* one-way link latency, ns */
	unsigned timeout;    /* local ACK timeout exponent */
	int ipv6;
	char cc[32];
} g = {100000, 1, 1024, "drop=0.01,reorder=0.01,dup=0.001", 1, 0, SLOTS, NRECV, 0, 8, 0, ""};

/* With DROCE_SOAK_DUMP set: the tap records, and a failure prints the last frames. */
static struct pair *g_pair;

static void dump_tail(void)
{
	if (g_pair && g_pair->record)
		rec_dump(g_pair, g_pair->nrec > 400 ? g_pair->nrec - 400 : 0);
}

struct msg {
	uint64_t id;
	enum droce_wr_opcode op;
	uint32_t len;
	unsigned slot;
	unsigned counter;      /* atomics */
	uint64_t expect_orig;  /* atomics */
	uint32_t imm;
};

/* One requester QP sending to one responder QP. */
struct flow {
	unsigned no;
	struct droce_qp *qp;          /* requester */
	struct droce_qp *rqp;         /* responder (its receive queue) */
	struct droce_cq *scq, *rcq;   /* requester's send CQ, responder's receive CQ */
	struct droce_mr *lmr, *rmr;   /* local (requester) and remote (responder) memory */
	uint8_t *l, *r;
	uint64_t model[NATOMIC];
	struct msg inflight[SLOTS];   /* FIFO in post order */
	unsigned fhead, fcount;
	bool slot_busy[SLOTS];
	struct msg rq[RQ_CAP];        /* receive-consuming messages in post order */
	unsigned rqhead, rqcount;
	uint64_t rng, bytes;
	unsigned long posted, done, recvd, quota;
};

/* Responder memory: SLOTS write/read slots, NRECV receive buffers, NATOMIC counters. */
#define R_RECV ((size_t)SLOTS * SLOT)
#define R_ATOMIC (R_RECV + (size_t)NRECV * SLOT)
#define R_LEN (R_ATOMIC + NATOMIC * 8)
/* Requester memory: SLOTS slots and an 8-byte atomic result per slot. */
#define L_ATOMIC ((size_t)SLOTS * SLOT)
#define L_LEN (L_ATOMIC + SLOTS * 8)

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static enum droce_wr_opcode pick_op(uint64_t r)
{
	unsigned x = (unsigned)(r % 100);
	if (x < 30) return DROCE_WR_RDMA_WRITE;
	if (x < 50) return DROCE_WR_SEND;
	if (x < 70) return DROCE_WR_RDMA_READ;
	if (x < 80) return DROCE_WR_RDMA_WRITE_WITH_IMM;
	if (x < 85) return DROCE_WR_SEND_WITH_IMM;
	if (x < 95) return DROCE_WR_ATOMIC_FETCH_AND_ADD;
	return DROCE_WR_ATOMIC_CMP_AND_SWP;
}

static uint32_t pick_len(uint64_t r)
{
	unsigned x = (unsigned)(r % 100);
	uint32_t v = (uint32_t)(r >> 32);
	if (x < 40) return v % 65;
	if (x < 75) return 65 + v % (1100 - 65);
	return 1100 + v % (MAXLEN - 1100 + 1);
}

/* Pattern key of message @p id of flow @p no: distinct across flows. */
static uint64_t key(const struct flow *f, uint64_t id)
{
	return ((uint64_t)f->no << 48) ^ id;
}

static void flow_init(struct pair *p, struct flow *f, unsigned no, struct conn *c, int req,
		      const struct conn_opts *o)
{
	int rsp = 1 - req;

	memset(f, 0, sizeof(*f));
	f->no = no;
	f->qp = c->qp[req];
	f->rqp = c->qp[rsp];
	f->scq = c->scq[req];
	f->rcq = c->rcq[rsp];
	f->lmr = pair_mr(p, req, L_LEN, o->access, 0);
	f->rmr = pair_mr(p, rsp, R_LEN, o->access, 0);
	f->l = f->lmr->addr;
	f->r = f->rmr->addr;
	f->rng = g.seed * 0x1000193u + 7 + no * 0x51ED27ull;
	for (unsigned i = 0; i < NATOMIC; i++) {
		f->model[i] = rng_next(&f->rng);
		memcpy(f->r + R_ATOMIC + i * 8, &f->model[i], 8);
	}
	for (unsigned i = 0; i < g.recvs; i++)
		assert_int_equal(post_recv_buf(f->rqp, i, f->rmr, R_RECV + i * SLOT, SLOT), 0);
}

static void flow_post(struct flow *f)
{
	while (f->fcount < g.inflight && f->posted < f->quota) {
		struct msg m;
		unsigned s = 0;
		uint64_t r1 = rng_next(&f->rng), r2 = rng_next(&f->rng);
		uint64_t raddr;
		int rc;

		while (f->slot_busy[s])
			s++;
		memset(&m, 0, sizeof(m));
		m.id = f->posted;
		m.op = pick_op(r1);
		m.len = pick_len(r2);
		m.slot = s;
		m.imm = (uint32_t)(r1 >> 32);
		raddr = (uint64_t)(uintptr_t)(f->r + s * SLOT);
		switch (m.op) {
		case DROCE_WR_RDMA_READ:
			fill_pattern(f->r + s * SLOT, m.len, key(f, m.id));
			memset(f->l + s * SLOT, 0, m.len);
			rc = post_rdma(f->qp, m.op, m.id, f->lmr, s * SLOT, m.len, raddr, f->rmr->rkey,
				       DROCE_SEND_SIGNALED, 0);
			break;
		case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		case DROCE_WR_ATOMIC_CMP_AND_SWP: {
			uint64_t add = rng_next(&f->rng), swap = rng_next(&f->rng), cmp;
			m.counter = (unsigned)(r2 % NATOMIC);
			m.len = 8;
			m.expect_orig = f->model[m.counter];
			cmp = (r2 >> 8) & 1 ? f->model[m.counter] : add;
			if (m.op == DROCE_WR_ATOMIC_FETCH_AND_ADD)
				f->model[m.counter] += add;
			else if (f->model[m.counter] == cmp)
				f->model[m.counter] = swap;
			rc = post_atomic(f->qp, m.op, m.id, f->lmr, L_ATOMIC + s * 8,
					 (uint64_t)(uintptr_t)(f->r + R_ATOMIC + m.counter * 8),
					 f->rmr->rkey,
					 m.op == DROCE_WR_ATOMIC_FETCH_AND_ADD ? add : cmp, swap);
			break;
		}
		default:
			fill_pattern(f->l + s * SLOT, m.len, key(f, m.id));
			rc = post_rdma(f->qp, m.op, m.id, f->lmr, s * SLOT, m.len, raddr, f->rmr->rkey,
				       DROCE_SEND_SIGNALED, m.imm);
			if (m.op != DROCE_WR_RDMA_WRITE) {
				assert_true(f->rqcount < RQ_CAP);
				f->rq[(f->rqhead + f->rqcount++) % RQ_CAP] = m;
			}
			break;
		}
		if (rc)
			fail_msg("flow %u: post of message %lu (op %d) failed: %d", f->no, f->posted,
				 m.op, rc);
		f->slot_busy[s] = true;
		f->inflight[(f->fhead + f->fcount++) % SLOTS] = m;
		f->posted++;
	}
}

/* Receives at the responder, in order. @return how many. */
static int flow_receives(struct flow *f)
{
	struct droce_wc wc[32];
	int n = cq_drain(f->rcq, wc, 32);

	for (int i = 0; i < n; i++) {
		struct msg *m = &f->rq[f->rqhead];
		uint8_t *buf = f->r + R_RECV + wc[i].wr_id * SLOT;
		if (f->rqcount == 0)
			fail_msg("flow %u: receive completion with no message expected", f->no);
		if (wc[i].status != DROCE_WC_SUCCESS)
			fail_msg("flow %u message %llu: receive status %s", f->no,
				 (unsigned long long)m->id, droce_wc_status_str(wc[i].status));
		if (wc[i].byte_len != m->len)
			fail_msg("flow %u message %llu: byte_len %u, want %u", f->no,
				 (unsigned long long)m->id, wc[i].byte_len, m->len);
		if (m->op == DROCE_WR_RDMA_WRITE_WITH_IMM) {
			assert_int_equal(wc[i].opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
		} else {
			long bad;
			assert_int_equal(wc[i].opcode, DROCE_WC_RECV);
			bad = check_pattern(buf, m->len, key(f, m->id));
			if (bad >= 0)
				fail_msg("flow %u message %llu (SEND, %u bytes): byte %ld wrong", f->no,
					 (unsigned long long)m->id, m->len, bad);
			f->bytes += m->len;
		}
		if (m->op != DROCE_WR_SEND) {
			assert_true(wc[i].wc_flags & DROCE_WC_WITH_IMM);
			assert_int_equal(wc[i].imm_data, m->imm);
		}
		f->rqhead = (f->rqhead + 1) % RQ_CAP;
		f->rqcount--;
		f->recvd++;
		assert_int_equal(post_recv_buf(f->rqp, wc[i].wr_id, f->rmr,
					       R_RECV + wc[i].wr_id * SLOT, SLOT), 0);
	}
	return n;
}

/* Completions at the requester, in post order. @return how many. */
static int flow_completions(struct flow *f)
{
	struct droce_wc wc[32];
	int n = cq_drain(f->scq, wc, 32);

	for (int i = 0; i < n; i++) {
		struct msg *m = &f->inflight[f->fhead];
		long bad = -1;
		if (f->fcount == 0)
			fail_msg("flow %u: completion with nothing in flight", f->no);
		if (wc[i].wr_id != m->id || wc[i].status != DROCE_WC_SUCCESS) {
			dump_tail();
			fail_msg("flow %u: completion wr_id %llu status %s; want message %llu SUCCESS",
				 f->no, (unsigned long long)wc[i].wr_id,
				 droce_wc_status_str(wc[i].status), (unsigned long long)m->id);
		}
		switch (m->op) {
		case DROCE_WR_RDMA_READ:
			bad = check_pattern(f->l + m->slot * SLOT, m->len, key(f, m->id));
			f->bytes += m->len;
			break;
		case DROCE_WR_RDMA_WRITE:
		case DROCE_WR_RDMA_WRITE_WITH_IMM:
			bad = check_pattern(f->r + m->slot * SLOT, m->len, key(f, m->id));
			f->bytes += m->len;
			break;
		case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		case DROCE_WR_ATOMIC_CMP_AND_SWP: {
			uint64_t got;
			memcpy(&got, f->l + L_ATOMIC + m->slot * 8, 8);
			if (got != m->expect_orig)
				fail_msg("flow %u message %llu: atomic returned %llx, want %llx",
					 f->no, (unsigned long long)m->id, (unsigned long long)got,
					 (unsigned long long)m->expect_orig);
			f->bytes += 8;
			break;
		}
		default:
			break;
		}
		if (bad >= 0)
			fail_msg("flow %u message %llu (op %d, %u bytes): byte %ld wrong", f->no,
				 (unsigned long long)m->id, m->op, m->len, bad);
		f->slot_busy[m->slot] = false;
		f->fhead = (f->fhead + 1) % SLOTS;
		f->fcount--;
		f->done++;
	}
	return n;
}

static void flow_final(struct flow *f)
{
	assert_int_equal(f->rqcount, 0);
	assert_int_equal(f->fcount, 0);
	assert_int_equal(qp_state(f->qp), DROCE_QPS_RTS);
	assert_int_equal(qp_state(f->rqp), DROCE_QPS_RTS);
	for (unsigned i = 0; i < NATOMIC; i++) {
		uint64_t v;
		memcpy(&v, f->r + R_ATOMIC + i * 8, 8);
		if (v != f->model[i])
			fail_msg("flow %u: counter %u is %llx, the model says %llx", f->no, i,
				 (unsigned long long)v, (unsigned long long)f->model[i]);
	}
}

static void test_soak(void **state)
{
	struct pair p;
	struct conn c[4];
	struct conn_opts o;
	struct pair_opts po;
	char spec[2][256];
	struct flow *fl = calloc(MAXFLOWS, sizeof(*fl));
	unsigned nflows = 0;
	unsigned long done = 0, recvd = 0;
	uint64_t bytes = 0;
	struct timespec t0, t1;

	(void)state;
	assert_non_null(fl);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int d = 0; d < 2; d++)
		snprintf(spec[d], sizeof(spec[d]), "%s%sseed=%llu", g.impair, g.impair[0] ? "," : "",
			 (unsigned long long)(g.seed * 2 + 1 + (uint64_t)d));
	memset(&po, 0, sizeof(po));
	po.impair[0] = spec[0];
	po.impair[1] = spec[1];
	po.ip_version = g.ipv6 ? 6 : 4;
	po.cc = g.cc[0] ? g.cc : NULL;
	pair_init(&p, &po);
	p.record = getenv("DROCE_SOAK_DUMP") != NULL;
	p.max_iters = UINT64_MAX;
	g_pair = &p;
	droce_memlink_set_delay(p.ml, DROCE_MEMLINK_0_TO_1, g.delay);
	droce_memlink_set_delay(p.ml, DROCE_MEMLINK_1_TO_0, g.delay);
	conn_opts_default(&o);
	o.timeout = (uint8_t)g.timeout;
	o.mtu = g.mtu == 256 ? DROCE_MTU_256 : g.mtu == 512 ? DROCE_MTU_512
		: g.mtu == 2048 ? DROCE_MTU_2048 : g.mtu == 4096 ? DROCE_MTU_4096 : DROCE_MTU_1024;
	for (unsigned q = 0; q < g.qps; q++) {
		o.sq_psn[0] = (0xFFF000u + q * 0x10000u) & 0xFFFFFFu; /* wraps early on */
		o.sq_psn[1] = 0x400000u + q;
		pair_connect(&p, &c[q], &o);
		flow_init(&p, &fl[nflows], nflows + 1, &c[q], SIDE_A, &o);
		nflows++;
		if (g.bidir) {
			flow_init(&p, &fl[nflows], nflows + 1, &c[q], SIDE_B, &o);
			nflows++;
		}
	}
	for (unsigned i = 0; i < nflows; i++)
		fl[i].quota = g.messages / nflows + (i < g.messages % nflows);

	uint64_t last_progress = p.now;
	while (done < g.messages) {
		int progress = 0;
		unsigned moved;

		for (unsigned i = 0; i < nflows; i++)
			flow_post(&fl[i]);
		moved = pair_step(&p);
		for (unsigned i = 0; i < nflows; i++) {
			int r = flow_receives(&fl[i]);
			int n = flow_completions(&fl[i]);
			progress |= r | n;
			done += (unsigned long)n;
		}
		if (progress)
			last_progress = p.now;
		if (moved || progress)
			continue;
		if (!pair_advance(&p, UINT64_MAX) || p.now - last_progress > 60ull * 1000 * 1000 * 1000) {
			for (unsigned i = 0; i < nflows; i++)
				fprintf(stderr, "flow %u: %lu/%lu done, %u in flight, %u receives pending\n",
					fl[i].no, fl[i].done, fl[i].quota, fl[i].fcount, fl[i].rqcount);
			dump_tail();
			fail_msg("stalled after %lu of %lu messages", done, g.messages);
		}
	}
	pair_run(&p, 10ull * 1000 * 1000 * 1000);
	for (unsigned i = 0; i < nflows; i++) {
		assert_int_equal(flow_receives(&fl[i]), 0);
		flow_final(&fl[i]);
		recvd += fl[i].recvd;
		bytes += fl[i].bytes;
	}

	struct droce_impair_stats is[2];
	struct droce_qp_stats sa = qp_stats(c[0].qp[SIDE_A]), sb = qp_stats(c[0].qp[SIDE_B]);
	droce_impair_get_stats(p.imp[0], &is[0]);
	droce_impair_get_stats(p.imp[1], &is[1]);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("soak: %lu messages (%lu receives) on %u flow(s), MTU %u, %llu bytes verified, "
	       "seed %llu, impair '%s'\n", done, recvd, nflows, g.mtu, (unsigned long long)bytes,
	       (unsigned long long)g.seed, g.impair);
	printf("soak: A->B %llu frames, %llu dropped, %llu held, %llu duplicated, %llu corrupted; "
	       "B->A %llu frames, %llu dropped, %llu held, %llu duplicated, %llu corrupted\n",
	       (unsigned long long)is[0].frames, (unsigned long long)is[0].dropped,
	       (unsigned long long)is[0].held, (unsigned long long)is[0].duplicated,
	       (unsigned long long)is[0].corrupted,
	       (unsigned long long)is[1].frames, (unsigned long long)is[1].dropped,
	       (unsigned long long)is[1].held, (unsigned long long)is[1].duplicated,
	       (unsigned long long)is[1].corrupted);
	printf("soak: QP pair 0: A retrans %llu timeout rounds, %llu NAK rounds, %llu packets; "
	       "B dup %llu, out-of-seq %llu, seq NAKs %llu\n",
	       (unsigned long long)sa.retrans_timeout, (unsigned long long)sa.retrans_nak,
	       (unsigned long long)sa.retrans_pkts, (unsigned long long)sb.dup_reqs,
	       (unsigned long long)sb.out_of_seq,
	       (unsigned long long)sb.nak_sent[DROCE_NAK_PSN_SEQ_ERR]);
	printf("soak: QP pair 0: RNR NAKs %llu sent by B; ECN-marked %llu at B, CNPs %llu sent by B, %llu received by A\n",
	       (unsigned long long)sb.rnr_nak_sent, (unsigned long long)sb.ecn_marked,
	       (unsigned long long)sb.cnp_sent, (unsigned long long)sa.cnp_rcvd);
	printf("soak: virtual time %.3f s, wall time %.2f s\n", (double)(p.now - 1000000) / 1e9, wall);
	/* the impairment did happen, and was recovered from */
	struct droce_impair_spec sp;
	assert_int_equal(droce_impair_parse(spec[0], &sp, NULL, 0), 0);
	if (g.messages >= 1000 && sp.drop >= 0.005) {
		assert_true(is[0].dropped > 0 && is[1].dropped > 0);
		assert_true(sa.retrans_pkts > 0);
	}
	g_pair = NULL;
	pair_fini(&p);
	free(fl);
}

static void parse_arg(const char *a, int pos)
{
	const char *eq = strchr(a, '=');
	if (!eq) {
		if (pos == 0)
			g.messages = strtoul(a, NULL, 0);
		else
			g.seed = strtoull(a, NULL, 0);
		return;
	}
	size_t k = (size_t)(eq - a);
	const char *v = eq + 1;
	if (k == 8 && !strncmp(a, "messages", k))
		g.messages = strtoul(v, NULL, 0);
	else if (k == 4 && !strncmp(a, "seed", k))
		g.seed = strtoull(v, NULL, 0);
	else if (k == 3 && !strncmp(a, "mtu", k))
		g.mtu = (unsigned)strtoul(v, NULL, 0);
	else if (k == 6 && !strncmp(a, "impair", k))
		snprintf(g.impair, sizeof(g.impair), "%s", v);
	else if (k == 3 && !strncmp(a, "qps", k))
		g.qps = (unsigned)strtoul(v, NULL, 0);
	else if (k == 5 && !strncmp(a, "bidir", k))
		g.bidir = atoi(v);
	else if (k == 8 && !strncmp(a, "inflight", k))
		g.inflight = (unsigned)strtoul(v, NULL, 0);
	else if (k == 5 && !strncmp(a, "recvs", k))
		g.recvs = (unsigned)strtoul(v, NULL, 0);
	else if (k == 5 && !strncmp(a, "delay", k))
		g.delay = strtoull(v, NULL, 0);
	else if (k == 7 && !strncmp(a, "timeout", k))
		g.timeout = (unsigned)strtoul(v, NULL, 0);
	else if (k == 4 && !strncmp(a, "ipv6", k))
		g.ipv6 = atoi(v);
	else if (k == 2 && !strncmp(a, "cc", k))
		snprintf(g.cc, sizeof(g.cc), "%s", v);
	else {
		fprintf(stderr, "unknown option %s\n", a);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("DROCE_SOAK_MESSAGES");
	int pos = 0;

	if (env)
		g.messages = strtoul(env, NULL, 0);
	for (int i = 1; i < argc; i++) {
		parse_arg(argv[i], pos);
		if (!strchr(argv[i], '='))
			pos++;
	}
	if (g.qps < 1 || g.qps > 4 || g.inflight < 1 || g.inflight > SLOTS || g.recvs < 1 ||
	    g.recvs > NRECV || g.timeout < 1 || g.timeout > 31) {
		fprintf(stderr, "qps must be 1..4, inflight 1..%u, recvs 1..%u\n", SLOTS, NRECV);
		return 2;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
