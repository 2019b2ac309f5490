/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many-QP engine benchmark: two contexts back to back in
 * memory on one thread, N QP pairs, every QP of side A streaming RDMA
 * WRITEs of SIZE bytes to its peer on side B. Reports the aggregate write
 * throughput at each N and its ratio to N = 1, and the memory each QP costs
 * at that N, from the engine's own structures and from malloc's count.
 *
 *   droce-bench-manyqp [-t SECONDS] [-n COUNT[:SQ_DEPTH]]... [-s SIZE]
 *                      [-d SQ_DEPTH] [-i INLINE] [-r ROUNDS] [-w]
 *
 * -w: after every poll, ask both contexts for droce_ctx_next_deadline(), as
 * a loop that sleeps until the next deadline (or a simulator) does.
 *
 * The default counts are 1:256, 1, 100, 1000, 10000: one QP with the deep SQ
 * of droce-bench-engine (its best) and every count with SQ_DEPTH (16) per QP.
 * Ratios are to the best one-QP line, so shallow queues cannot flatter the
 * many-QP figures.
 *
 * The counts run interleaved, ROUNDS times (1, 100, 1000, 10000, 1, 100, ...),
 * so that the load of a shared machine hits every count alike; the table
 * gives each count's median round and the ratio of medians.
 *
 * What stays the same across counts, so that only the number of QPs
 * varies: the SQ depth of each QP, the message size, and the memory the
 * payload is read from and written to (NSLOT buffers of SIZE bytes on each
 * side, used round-robin by all QPs: the working set of the data does not
 * grow with N, only the engine's per-QP state does). The application posts
 * to a QP only when one of its completions arrives (it never walks the QPs).
 */
#include <errno.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <droce/droce.h>

#include "core/core_int.h"
#include "slot_link.h"

#define NSLOT 64u
#define MAX_COUNTS 16
#define MAX_ROUNDS 15

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t pow2(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

struct cfg {
	double secs;
	uint32_t size, depth, inline_max;
	bool ask_deadline;
};

struct count {
	uint32_t n, depth;
};

struct result {
	double gbps, mps;
	double qp_struct_bytes;  /* per QP, from the engine's structure sizes */
	double qp_malloc_bytes;  /* per QP, malloc's in-use bytes after / before creating them */
	unsigned long long retrans;
	double setup_ms, teardown_ms; /* creating + connecting, destroying all QPs (both sides) */
};

struct side {
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_mr *mr;
	uint8_t *mem;
	struct droce_qp **qp;
};

static int connect_qp(struct droce_qp *qp, uint32_t dqpn, int i)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE;
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = DROCE_MTU_4096;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.ip_version = 4;
	a.ah_attr.dst_ip[0] = 10;
	a.ah_attr.dst_ip[3] = (uint8_t)(2 - i);
	a.ah_attr.dscp = 26;
	a.ah_attr.ttl = 64;
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					    DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					    DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER))
		return -1;
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					       DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					       DROCE_QP_MAX_QP_RD_ATOMIC);
}

/* Post @p k writes on QP @p q of side A, the last one signaled. */
static int post(struct side *s, uint32_t q, unsigned k, const struct cfg *c, uint64_t *slot)
{
	for (unsigned j = 0; j < k; j++) {
		uint64_t b = (*slot)++ % NSLOT;
		struct droce_sge sge = { (uintptr_t)s[0].mem + b * c->size, c->size, s[0].mr->lkey };
		struct droce_send_wr wr, *bad;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = q;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = DROCE_WR_RDMA_WRITE;
		wr.send_flags = j == k - 1 ? DROCE_SEND_SIGNALED : 0;
		wr.wr.rdma.remote_addr = (uintptr_t)s[1].mem + b * c->size;
		wr.wr.rdma.rkey = s[1].mr->rkey;
		if (droce_post_send(s[0].qp[q], &wr, &bad))
			return -1;
	}
	return 0;
}

static volatile uint64_t deadline_sink; /* keeps -w's calls */

static int run(uint32_t n, const struct cfg *c, struct result *res)
{
	if (n == 0 || c->depth < 2)
		return -1;
	static struct link l;
	static struct end ends[2];
	struct side s[2];
	size_t memlen = (size_t)c->size * NSLOT;
	unsigned sig = c->depth / 2; /* a completion every half SQ: the other half stays in flight */

	memset(&l, 0, sizeof(l));
	memset(s, 0, sizeof(s));
	for (int i = 0; i < 2; i++) {
		l.d[i].buf = calloc(SLOTS, SLOT_BYTES);
		ends[i].l = &l;
		ends[i].side = i;
		struct droce_ctx_params p;
		droce_ctx_params_init(&p);
		p.ip[0] = 10;
		p.ip[3] = (uint8_t)(1 + i);
		p.mac[5] = (uint8_t)(1 + i);
		p.link.ops = &slot_link_ops;
		p.link.priv = &ends[i];
		p.max_qps = n;
		s[i].ctx = droce_ctx_create(&p);
		/* Side A: at most depth/sig = 2 signaled WRs in flight per QP. */
		s[i].cq = s[i].ctx ? droce_create_cq(s[i].ctx, 2 * n + 64) : NULL;
		s[i].mem = calloc(1, memlen);
		s[i].mr = s[i].cq ? droce_reg_mr(s[i].ctx, s[i].mem, memlen,
						 DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE)
				  : NULL;
		s[i].qp = calloc(n, sizeof(*s[i].qp));
		if (!l.d[i].buf || !s[i].mr || !s[i].mem || !s[i].qp) {
			fprintf(stderr, "setup failed: %s\n", strerror(errno));
			return -1;
		}
	}
	struct mallinfo2 m0 = mallinfo2();
	uint64_t ts0 = now_ns();
	for (uint32_t q = 0; q < n; q++) {
		for (int i = 0; i < 2; i++) {
			struct droce_qp_init_attr ia;
			memset(&ia, 0, sizeof(ia));
			ia.send_cq = ia.recv_cq = s[i].cq;
			ia.cap.max_send_wr = c->depth;
			ia.cap.max_recv_wr = 1; /* WRITEs consume no receive WQE */
			ia.cap.max_send_sge = 1;
			ia.cap.max_recv_sge = 1;
			ia.cap.max_inline_data = c->inline_max;
			s[i].qp[q] = droce_create_qp(s[i].ctx, &ia);
			if (!s[i].qp[q]) {
				fprintf(stderr, "QP %u: %s\n", q, strerror(errno));
				return -1;
			}
		}
		if (connect_qp(s[0].qp[q], droce_qp_num(s[1].qp[q]), 0) ||
		    connect_qp(s[1].qp[q], droce_qp_num(s[0].qp[q]), 1)) {
			fprintf(stderr, "connect failed\n");
			return -1;
		}
	}
	res->setup_ms = (double)(now_ns() - ts0) / 1e6;
	struct mallinfo2 m1 = mallinfo2();
	res->qp_malloc_bytes = (double)(m1.uordblks - m0.uordblks) / (2.0 * n);
	/* The QP object and its rings, plus the context's slots for it (QP
	 * table, timer heap entry and index, run_timers' scratch) and the two
	 * CQ entries side A keeps room for. */
	res->qp_struct_bytes =
		(double)(sizeof(struct droce_qp) + pow2(c->depth) * sizeof(struct droce_swqe) +
			 pow2(1) * sizeof(struct droce_rwqe) + (size_t)pow2(c->depth) * c->inline_max) +
		(double)(sizeof(struct droce_qp *) + sizeof(struct droce_timer_ent) + 2 * sizeof(uint32_t)) +
		(double)(2 * n + 64) * sizeof(struct droce_wc) / n / 2.0;

	uint32_t qpn0 = droce_qp_num(s[0].qp[0]);
	uint64_t slot = 0, done = 0;
	for (uint32_t q = 0; q < n; q++)
		if (post(s, q, sig, c, &slot) || post(s, q, sig, c, &slot))
			return -1;
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(c->secs * 1e9), t = t0;
	struct droce_wc wc[64];
	unsigned iter = 0;
	while (t < end) {
		droce_ctx_poll(s[0].ctx, t);
		droce_ctx_poll(s[1].ctx, t);
		if (c->ask_deadline) {
			uint64_t d = droce_ctx_next_deadline(s[0].ctx);
			uint64_t e = droce_ctx_next_deadline(s[1].ctx);
			deadline_sink += d < e ? d : e;
		}
		int k = droce_poll_cq(s[0].cq, 64, wc);
		if (k < 0) {
			fprintf(stderr, "CQ overflow\n");
			return -1;
		}
		for (int i = 0; i < k; i++) {
			if (wc[i].status != DROCE_WC_SUCCESS) {
				fprintf(stderr, "completion error: %s\n", droce_wc_status_str(wc[i].status));
				return -1;
			}
			done += sig;
			uint32_t q = wc[i].qp_num - qpn0;
			if (q >= n || post(s, q, sig, c, &slot))
				return -1;
		}
		if ((++iter & 63) == 0)
			t = now_ns();
	}
	t = now_ns();
	double el = (double)(t - t0) / 1e9;
	res->gbps = (double)done * c->size * 8 / el / 1e9;
	res->mps = (double)done / el;
	res->retrans = 0;
	for (uint32_t q = 0; q < n; q++) {
		struct droce_qp_stats qs;
		droce_qp_get_stats(s[0].qp[q], &qs);
		res->retrans += qs.retrans_pkts;
	}
	/* Every QP still has work queued (on the ready list): the teardown an
	 * application that stops mid-stream does. */
	uint64_t td0 = now_ns();
	for (int i = 0; i < 2; i++)
		for (uint32_t q = 0; q < n; q++)
			droce_destroy_qp(s[i].qp[q]);
	res->teardown_ms = (double)(now_ns() - td0) / 1e6;
	for (int i = 0; i < 2; i++) {
		droce_ctx_destroy(s[i].ctx); /* its MR and CQ with it */
		free(s[i].qp);
		free(s[i].mem);
		free(l.d[i].buf);
	}
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct cfg c = { .secs = 1.0, .size = 4096, .depth = 16, .inline_max = 64 };
	struct count counts[MAX_COUNTS];
	unsigned ncounts = 0, rounds = 3;
	int o;
	while ((o = getopt(argc, argv, "t:n:s:d:i:r:wh")) != -1) {
		switch (o) {
		case 't': c.secs = atof(optarg); break;
		case 'n': {
			char *e;
			unsigned long v = strtoul(optarg, &e, 0), d = 0;
			if (*e == ':')
				d = strtoul(e + 1, NULL, 0);
			if (ncounts < MAX_COUNTS && v > 0 && v <= (1u << 20))
				counts[ncounts++] = (struct count){ (uint32_t)v, (uint32_t)d };
			break;
		}
		case 's': c.size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': c.depth = (uint32_t)atoi(optarg); break;
		case 'i': c.inline_max = (uint32_t)atoi(optarg); break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		case 'w': c.ask_deadline = true; break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-n COUNT]... [-s SIZE] [-d SQ_DEPTH] [-i INLINE] [-r ROUNDS] [-w]\n",
				argv[0]);
			return o == 'h' ? 0 : 2;
		}
	}
	if (c.depth < 2)
		c.depth = 2;
	if (!ncounts) {
		counts[ncounts++] = (struct count){ 1, 256 };
		counts[ncounts++] = (struct count){ 1, 0 };
		counts[ncounts++] = (struct count){ 100, 0 };
		counts[ncounts++] = (struct count){ 1000, 0 };
		counts[ncounts++] = (struct count){ 10000, 0 };
	}
	for (unsigned i = 0; i < ncounts; i++)
		if (counts[i].depth < 2)
			counts[i].depth = c.depth;
	if (c.inline_max == 0)
		c.inline_max = 1; /* 0 asks the engine for its default */
	if (rounds < 1)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	if (c.size == 0 || c.size > 1u << 20)
		c.size = 4096;
	printf("droce many-QP benchmark: 2 contexts, 1 thread, RDMA WRITE %u B A->B on every QP, "
	       "MTU 4096, inline %u, %.1f s per run, %u interleaved rounds%s\n",
	       c.size, c.inline_max, c.secs, rounds,
	       c.ask_deadline ? ", next deadline asked after every poll" : "");
	static struct result r[MAX_ROUNDS][MAX_COUNTS];
	for (unsigned k = 0; k < rounds; k++)
		for (unsigned i = 0; i < ncounts; i++) {
			struct cfg ci = c;
			ci.depth = counts[i].depth;
			if (run(counts[i].n, &ci, &r[k][i]))
				return 1;
			printf("round %u  %6u QPs  SQ %4u  %8.2f Gbit/s  %10.0f msg/s  retrans %llu  "
			       "setup %.1f ms  teardown %.1f ms\n",
			       k + 1, counts[i].n, ci.depth, r[k][i].gbps, r[k][i].mps, r[k][i].retrans,
			       r[k][i].setup_ms, r[k][i].teardown_ms);
			fflush(stdout);
		}
	double med[MAX_COUNTS], lo[MAX_COUNTS], hi[MAX_COUNTS], base = 0;
	for (unsigned i = 0; i < ncounts; i++) {
		double g[MAX_ROUNDS];
		for (unsigned k = 0; k < rounds; k++)
			g[k] = r[k][i].gbps;
		qsort(g, rounds, sizeof(g[0]), cmp_d);
		med[i] = rounds % 2 ? g[rounds / 2] : (g[rounds / 2 - 1] + g[rounds / 2]) / 2;
		lo[i] = g[0];
		hi[i] = g[rounds - 1];
		if (counts[i].n == 1 && med[i] > base)
			base = med[i];
	}
	printf("\n| QP pairs | SQ depth per QP | aggregate write_bw %u B, Gbit/s (median of %u; min..max) | "
	       "ratio to the best 1-QP line | memory per QP, engine structures | memory per QP, malloc |\n"
	       "|---:|---:|---:|---:|---:|---:|\n",
	       c.size, rounds);
	for (unsigned i = 0; i < ncounts; i++)
		printf("| %u | %u | %.2f (%.2f..%.2f) | %s%.2f | %.0f B | %.0f B |\n", counts[i].n,
		       counts[i].depth, med[i], lo[i], hi[i], base > 0 ? "" : "n/a ",
		       base > 0 ? med[i] / base : 0, r[0][i].qp_struct_bytes, r[0][i].qp_malloc_bytes);
	return 0;
}
