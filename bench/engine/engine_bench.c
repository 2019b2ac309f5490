/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine benchmark: two contexts back to back in memory,
 * side A streaming RDMA WRITEs to side B. No DPDK: an in-memory link that
 * copies each frame into a slot, as a NIC would DMA it.
 *
 *   droce-bench-engine [-t SECONDS] [-s SIZE]... [-m MTU] [-q DEPTH] [-b BURST]
 *                      [-T [-c CPU_A,CPU_B]]
 *
 * Default: one thread (one core) runs requester, responder and completer of
 * both sides (slot_link.c). Reports, per message size: messages/s, request
 * packets/s, all frames/s (requests + ACKs), and payload Gbit/s.
 *
 * -T: each side on its own thread, pinned to its own CPU (-c, default 0,1),
 * the two joined by one single-producer/single-consumer ring per direction
 * (spsc_link.c): the "per core" figure. Reports the pair's
 * messages/s and, per side, the messages per second of the polls that
 * found work (what that side's core does when it never waits: its
 * capacity), the share of the run those polls took (the side near 100% is
 * the limit) and the thread's CPU share (below 100%: the machine's other
 * load took the core away).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <droce/droce.h>

#include "slot_link.h"
#include "spsc_link.h"


static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct side {
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *mem;
};

static int connect_qp(struct side *s, struct side *peer, int i, enum droce_mtu mtu)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ;
	if (droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = droce_qp_num(peer->qp);
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.ip_version = 4;
	a.ah_attr.dst_ip[0] = 10;
	a.ah_attr.dst_ip[3] = (uint8_t)(2 - i);
	a.ah_attr.dscp = 26;
	a.ah_attr.ttl = 64;
	if (droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					       DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					       DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER))
		return -1;
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
						  DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
						  DROCE_QP_MAX_QP_RD_ATOMIC);
}

#define SIG_EVERY 32u

struct cfg {
	uint32_t size, depth, burst;
	double secs;
	enum droce_mtu mtu;
	bool threads;
	int cpu[2];
};

/* Both sides over @p ops (priv[i] is side i's end of the link), connected. */
static int setup(struct side s[2], const struct cfg *c, const struct droce_link_ops *ops,
		 void *priv[2])
{
	size_t memlen = (size_t)c->size * 4 + 4096;
	memset(s, 0, 2 * sizeof(*s));
	for (int i = 0; i < 2; i++) {
		struct droce_ctx_params p;
		droce_ctx_params_init(&p);
		p.ip[0] = 10;
		p.ip[3] = (uint8_t)(1 + i);
		p.mac[5] = (uint8_t)(1 + i);
		p.link.ops = ops;
		p.burst = c->burst;
		p.link.priv = priv[i];
		s[i].ctx = droce_ctx_create(&p);
		if (!s[i].ctx)
			break;
		s[i].cq = droce_create_cq(s[i].ctx, 65536);
		struct droce_qp_init_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = s[i].cq;
		ia.cap.max_send_wr = c->depth;
		s[i].qp = s[i].cq ? droce_create_qp(s[i].ctx, &ia) : NULL;
		s[i].mem = calloc(1, memlen);
		s[i].mr = s[i].mem ? droce_reg_mr(s[i].ctx, s[i].mem, memlen,
						  DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
							  DROCE_ACCESS_REMOTE_READ)
				   : NULL;
		if (!s[i].cq || !s[i].qp || !s[i].mr)
			break;
	}
	if (!s[0].mr || !s[1].mr) {
		fprintf(stderr, "setup failed: %s\n", strerror(errno));
		return -1;
	}
	if (connect_qp(&s[0], &s[1], 0, c->mtu) || connect_qp(&s[1], &s[0], 1, c->mtu)) {
		fprintf(stderr, "connect failed\n");
		return -1;
	}
	return 0;
}

static void teardown(struct side s[2])
{
	for (int i = 0; i < 2; i++) {
		if (s[i].qp)
			droce_destroy_qp(s[i].qp);
		if (s[i].mr)
			droce_dereg_mr(s[i].mr);
		if (s[i].cq)
			droce_destroy_cq(s[i].cq);
		if (s[i].ctx)
			droce_ctx_destroy(s[i].ctx);
		free(s[i].mem);
	}
}

/* Side A's work request, RDMA WRITE of the whole size from A's MR to B's. */
static void write_wr(const struct side s[2], uint32_t size, struct droce_sge *sge,
		     struct droce_send_wr *wr)
{
	*sge = (struct droce_sge){ (uintptr_t)s[0].mem, size, s[0].mr->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = DROCE_WR_RDMA_WRITE;
	wr->wr.rdma.remote_addr = (uintptr_t)s[1].mem;
	wr->wr.rdma.rkey = s[1].mr->rkey;
}

/* Keep A's SQ full (outstanding = posted - done; done counts in SIG_EVERY
 * steps, one signaled WQE in SIG_EVERY). */
static void post_some(const struct side *a, struct droce_send_wr *wr, uint64_t *posted,
		      uint64_t done, uint32_t depth)
{
	while (*posted - done < depth - SIG_EVERY) {
		struct droce_send_wr *bad;
		wr->wr_id = *posted;
		wr->send_flags = (*posted % SIG_EVERY == SIG_EVERY - 1) ? DROCE_SEND_SIGNALED : 0;
		if (droce_post_send(a->qp, wr, &bad))
			break;
		(*posted)++;
	}
}

/* Reap A's completions. @return messages completed, or -1 (error printed). */
static int reap(const struct side *a, uint64_t *done)
{
	struct droce_wc wc[64];
	int n = droce_poll_cq(a->cq, 64, wc);
	if (n < 0) {
		fprintf(stderr, "CQ overflow\n");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != DROCE_WC_SUCCESS) {
			fprintf(stderr, "completion error: %s\n", droce_wc_status_str(wc[i].status));
			return -1;
		}
		*done += SIG_EVERY;
	}
	return n;
}

static void print_verbose(const struct side s[2], uint64_t done, double el)
{
	if (!getenv("DROCE_BENCH_VERBOSE"))
		return;
	struct droce_ctx_stats cs[2];
	droce_ctx_get_stats(s[0].ctx, &cs[0]);
	droce_ctx_get_stats(s[1].ctx, &cs[1]);
	fprintf(stderr, "  messages %llu in %.6f s\n", (unsigned long long)done, el);
	for (int i = 0; i < 2; i++) {
		fprintf(stderr, "  side %c: rx %llu tx %llu tx_busy %llu", 'A' + i,
			(unsigned long long)cs[i].rx_frames, (unsigned long long)cs[i].tx_frames,
			(unsigned long long)cs[i].tx_busy);
		for (unsigned r = 0; droce_drop_reason_name(r); r++)
			if (cs[i].drop[r])
				fprintf(stderr, " %s %llu", droce_drop_reason_name(r),
					(unsigned long long)cs[i].drop[r]);
		fprintf(stderr, "\n");
	}
}

/* Both contexts on this thread, over slot_link.c (the earlier figures' mode). */
static int run_one_thread(const struct cfg *c)
{
	static struct link l;
	static struct end ends[2];
	struct side s[2];
	void *priv[2] = { &ends[0], &ends[1] };
	memset(&l, 0, sizeof(l));
	for (int i = 0; i < 2; i++) {
		l.d[i].buf = calloc(SLOTS, SLOT_BYTES);
		ends[i].l = &l;
		ends[i].side = i;
	}
	int rc = setup(s, c, &slot_link_ops, priv);
	if (rc)
		goto out;

	struct droce_sge sge;
	struct droce_send_wr wr;
	write_wr(s, c->size, &sge, &wr);
	uint64_t posted = 0, done = 0, t0 = now_ns(), end = t0 + (uint64_t)(c->secs * 1e9), t = t0;
	unsigned iter = 0;
	while (t < end) {
		post_some(&s[0], &wr, &posted, done, c->depth);
		droce_ctx_poll(s[0].ctx, t);
		droce_ctx_poll(s[1].ctx, t);
		if (reap(&s[0], &done) < 0) {
			rc = -1;
			goto out;
		}
		if ((++iter & 63) == 0)
			t = now_ns();
	}
	t = now_ns();
	double el = (double)(t - t0) / 1e9;
	struct droce_ctx_stats a, b;
	struct droce_qp_stats qa;
	droce_ctx_get_stats(s[0].ctx, &a);
	droce_ctx_get_stats(s[1].ctx, &b);
	droce_qp_get_stats(s[0].qp, &qa);
	double req_pps = (double)qa.tx_pkts / el;
	double all_fps = (double)(a.tx_frames + b.tx_frames) / el;
	double gbps = (double)done * c->size * 8 / el / 1e9;
	printf("%8u B  %10.0f msg/s  %10.3f Mpps requests  %10.3f Mpps all frames (incl %llu ACKs)  %8.2f Gbit/s payload  retrans %llu\n",
	       c->size, (double)done / el, req_pps / 1e6, all_fps / 1e6,
	       (unsigned long long)b.tx_frames, gbps, (unsigned long long)qa.retrans_pkts);
	print_verbose(s, done, el);
out:
	teardown(s);
	for (int i = 0; i < 2; i++)
		free(l.d[i].buf);
	return rc;
}

/* ------------------------------------------------ one thread per side -- */

struct thr {
	const struct cfg *c;
	struct side *s;           /* both sides; this thread drives s[me] */
	int me;
	_Atomic int *ready;       /* threads at the start line */
	_Atomic bool *stop;       /* A says when the time is up */
	int rc;
	uint64_t done;            /* A: messages completed */
	uint64_t polls, busy;     /* polls, and those that found work */
	uint64_t busy_ns;         /* time inside the polls that found work */
	double wall, cpu;         /* seconds: elapsed, this thread's CPU time */
};

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *side_main(void *arg)
{
	struct thr *th = arg;
	const struct cfg *c = th->c;
	struct side *me = &th->s[th->me];
	if (c->cpu[th->me] >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(c->cpu[th->me], &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			fprintf(stderr, "side %c: cannot pin to CPU %d (running unpinned)\n",
				'A' + th->me, c->cpu[th->me]);
	}
	atomic_fetch_add(th->ready, 1);
	while (atomic_load(th->ready) < 2)
		;
	struct droce_sge sge;
	struct droce_send_wr wr;
	write_wr(th->s, c->size, &sge, &wr);
	uint64_t posted = 0, t0 = now_ns(), end = t0 + (uint64_t)(c->secs * 1e9), t = t0;
	double c0 = cpu_s();
	/* The clock is read once per turn (about 35 ns here): the time of the
	 * turns that found work is what this side's work took, whatever the
	 * other side (or the machine's other load) left it waiting for. */
	for (;;) {
		if (th->me == 0) {
			if (t >= end)
				break;
			post_some(me, &wr, &posted, th->done, c->depth);
		} else if (atomic_load_explicit(th->stop, memory_order_relaxed)) {
			break;
		}
		unsigned k = droce_ctx_poll(me->ctx, t);
		if (th->me == 0) {
			int n = reap(me, &th->done);
			if (n < 0) {
				th->rc = -1;
				break;
			}
			k += (unsigned)n;
		}
		uint64_t t1 = now_ns();
		th->polls++;
		if (k) {
			th->busy++;
			th->busy_ns += t1 - t;
		}
		t = t1;
	}
	if (th->me == 0)
		atomic_store(th->stop, true);
	th->wall = (double)(now_ns() - t0) / 1e9;
	th->cpu = cpu_s() - c0;
	return NULL;
}

static int run_threads(const struct cfg *c)
{
	static struct spsc_link l;
	static struct spsc_end ends[2];
	struct side s[2];
	void *priv[2] = { &ends[0], &ends[1] };
	/* The largest frame: Ethernet + IPv6 + UDP + BTH + the longest
	 * extension headers (RETH + ImmDt), a packet's payload, pad and ICRC. */
	uint32_t mtu = droce_mtu_bytes(c->mtu);
	uint32_t frame_max = 14 + 40 + 8 + 12 + 16 + 4 + (c->size < mtu ? c->size : mtu) + 3 + 4;
	int lrc = spsc_link_init(&l, frame_max);
	if (lrc) {
		fprintf(stderr, "link: %s\n", strerror(-lrc));
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		ends[i].l = &l;
		ends[i].side = i;
	}
	int rc = setup(s, c, &spsc_link_ops, priv);
	if (rc)
		goto out;
	_Atomic int ready = 0;
	_Atomic bool stop = false;
	struct thr th[2];
	pthread_t tid[2];
	for (int i = 0; i < 2; i++) {
		th[i] = (struct thr){ .c = c, .s = s, .me = i, .ready = &ready, .stop = &stop };
		if (pthread_create(&tid[i], NULL, side_main, &th[i])) {
			fprintf(stderr, "pthread_create failed\n");
			if (i == 1) { /* A runs alone for its time, then stops */
				atomic_fetch_add(&ready, 1);
				pthread_join(tid[0], NULL);
			}
			rc = -1;
			goto out;
		}
	}
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	rc = th[0].rc;
	if (rc)
		goto out;
	/* B's messages: payload bytes its responder took, in messages. */
	struct droce_qp_stats qa, qb;
	droce_qp_get_stats(s[0].qp, &qa);
	droce_qp_get_stats(s[1].qp, &qb);
	double el = th[0].wall;
	double got[2] = { (double)th[0].done, c->size ? (double)qb.rx_bytes / c->size : 0 };
	printf("%8u B  %10.0f msg/s  (2 threads)", c->size, (double)th[0].done / el);
	for (int i = 0; i < 2; i++)
		printf("  side %c (CPU %d): %10.0f msg/s while busy, busy %5.1f%% of the time, %5.1f%% CPU",
		       'A' + i, c->cpu[i], th[i].busy_ns ? got[i] / ((double)th[i].busy_ns / 1e9) : 0,
		       100.0 * (double)th[i].busy_ns / 1e9 / th[i].wall, 100.0 * th[i].cpu / th[i].wall);
	printf("  retrans %llu\n", (unsigned long long)qa.retrans_pkts);
	print_verbose(s, th[0].done, el);
out:
	teardown(s);
	spsc_link_fini(&l);
	return rc;
}

int main(int argc, char **argv)
{
	struct cfg cf = { .secs = 2.0, .mtu = DROCE_MTU_4096, .depth = 256,
			  .burst = DROCE_DEFAULT_BURST, .cpu = { 0, 1 } };
	uint32_t sizes[16];
	unsigned nsizes = 0;
	int c;
	while ((c = getopt(argc, argv, "t:s:m:q:b:Tc:h")) != -1) {
		switch (c) {
		case 't': cf.secs = atof(optarg); break;
		case 's': if (nsizes < 16) sizes[nsizes++] = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': {
			unsigned m = (unsigned)atoi(optarg);
			cf.mtu = m == 256 ? DROCE_MTU_256 : m == 512 ? DROCE_MTU_512 : m == 1024 ? DROCE_MTU_1024
			       : m == 2048 ? DROCE_MTU_2048 : DROCE_MTU_4096;
			break;
		}
		case 'q': cf.depth = (uint32_t)atoi(optarg); break;
		case 'b': cf.burst = (uint32_t)atoi(optarg); break;
		case 'T': cf.threads = true; break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &cf.cpu[0], &cf.cpu[1]) != 2) {
				fprintf(stderr, "-c wants CPU_A,CPU_B (-1: not pinned)\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-s SIZE]... [-m MTU] [-q SQ_DEPTH] [-b BURST] [-T [-c CPU_A,CPU_B]]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!nsizes) {
		sizes[nsizes++] = 64;
		sizes[nsizes++] = 65536;
	}
	if (cf.depth < 2 * SIG_EVERY)
		cf.depth = 2 * SIG_EVERY;
	if (cf.threads)
		printf("droce engine benchmark: 2 contexts, 2 threads (side A on CPU %d, side B on CPU %d), SPSC link, RDMA WRITE A->B, MTU %u, SQ depth %u, burst %u, %.1f s per size\n",
		       cf.cpu[0], cf.cpu[1], droce_mtu_bytes(cf.mtu), cf.depth, cf.burst, cf.secs);
	else
		printf("droce engine benchmark: 2 contexts, 1 thread, RDMA WRITE A->B, MTU %u, SQ depth %u, burst %u, %.1f s per size\n",
		       droce_mtu_bytes(cf.mtu), cf.depth, cf.burst, cf.secs);
	for (unsigned i = 0; i < nsizes; i++) {
		cf.size = sizes[i];
		if (cf.threads ? run_threads(&cf) : run_one_thread(&cf))
			return 1;
	}
	return 0;
}
