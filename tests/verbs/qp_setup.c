/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What setting up many RC QPs costs the application's thread in the
 * drop-in, without a wall-clock bound: one process on a memif server port
 * with no peer (the port turns frames to our own address around), perftest's
 * QP shape (ib_write_bw: send depth 128, receive depth 512, one SGE), each QP
 * taken RESET -> INIT -> RTR -> RTS against itself.
 *
 *  - No sleep or wait per QP: the calling thread's voluntary context
 *    switches (getrusage RUSAGE_THREAD; a yield to a lock holder is
 *    involuntary and not counted) over the setup of LARGE QPs stay below
 *    LARGE / 8. A verb that hands its work to the progress thread and
 *    sleeps until it is done, or naps a tick, blocks once per call at
 *    least: 4 * LARGE here.
 *  - No per-QP cost that grows with the QPs already there (a linear scan):
 *    the thread's CPU time per QP over the last quarter of LARGE QPs is at
 *    most 3x that over SMALL, both in one run (1.1-1.5 measured; a scan of
 *    the live QPs at 0.1 us each made it 4.5). CPU time, not wall time:
 *    the load of a shared machine changes neither the instructions nor,
 *    much, their time.
 *
 *   verbs_qp_setup            the checks above (SMALL 64, LARGE 1024)
 *   verbs_qp_setup mem N      N QPs only: resident memory per QP (VmRSS
 *                             before and after creating and connecting them)
 *
 * Prints each phase's figures (wall time for reading, never checked).
 * Built against <infiniband/verbs.h>, linked with droce's libibverbs.so.1.
 * Exits 0 printing "qp_setup: ok", or names what failed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define SMALL 64u
#define LARGE 1024u

static int failures;

#define CHECK(c, ...)                                                              \
	do {                                                                       \
		if (!(c)) {                                                        \
			failures++;                                                \
			fprintf(stderr, "qp_setup: FAIL (%s:%d): ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                              \
			fprintf(stderr, "\n");                                     \
		}                                                                  \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "qp_setup: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double clock_s(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The calling thread's voluntary context switches so far. */
static long blocked(void)
{
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_nvcsw;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* RESET -> INIT -> RTR -> RTS, the QP its own peer (as perftest's attributes). */
static void connect_self(struct ibv_qp *qp, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

struct phase {
	double cpu_s, wall_s;
	double last_cpu_s; /* the last quarter's QPs */
	long blocked;
	long rss_kb; /* resident growth */
};

/* Create and connect @p n QPs on @p cq (kept in @p qps). */
static struct phase setup(struct ibv_pd *pd, struct ibv_cq *cq, const union ibv_gid *gid,
			  struct ibv_qp **qps, unsigned n)
{
	struct phase p;
	long rss0 = rss_kb(), b0 = blocked();
	double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
	double c3 = c0;
	for (unsigned i = 0; i < n; i++) {
		if (i == n - n / 4)
			c3 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 128, .max_recv_wr = 512,
						      .max_send_sge = 1, .max_recv_sge = 1}};
		qps[i] = ibv_create_qp(pd, &ia);
		if (!qps[i])
			die("ibv_create_qp");
		connect_self(qps[i], gid);
	}
	p.cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	p.last_cpu_s = c0 + p.cpu_s - c3;
	p.wall_s = clock_s(CLOCK_MONOTONIC) - w0;
	p.blocked = blocked() - b0;
	p.rss_kb = rss_kb() - rss0;
	return p;
}

static void teardown(struct ibv_qp **qps, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ibv_destroy_qp(qps[i]))
			die("ibv_destroy_qp");
}

static void print(const char *what, unsigned n, const struct phase *p)
{
	printf("qp_setup: %s %u QPs: thread CPU %.1f us per QP, wall %.1f us per QP, "
	       "blocked %ld times, RSS +%ld KB (%.1f KB per QP)\n",
	       what, n, p->cpu_s * 1e6 / n, p->wall_s * 1e6 / n, p->blocked, p->rss_kb,
	       (double)p->rss_kb / n);
}

int main(int argc, char **argv)
{
	unsigned mem_n = 0;
	if (argc > 2 && !strcmp(argv[1], "mem"))
		mem_n = (unsigned)strtoul(argv[2], NULL, 10);
	char port[128];
	snprintf(port, sizeof(port), "memif:server,socket=/tmp/droce-verbs-qpsetup-%d.sock",
		 (int)getpid());
	setenv("DROCE_PORT", port, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);
	int nd = 0;
	struct ibv_device **list = ibv_get_device_list(&nd);
	if (!list || nd != 1) {
		fprintf(stderr, "qp_setup: no droce0\n");
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		die("ibv_open_device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4096, NULL, NULL, 0) : NULL;
	if (!cq)
		die("pd/cq");
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("ibv_query_gid");
	unsigned cap = mem_n ? mem_n : LARGE;
	struct ibv_qp **qps = calloc(cap, sizeof(*qps));
	if (!qps)
		die("calloc");

	if (mem_n) {
		long before = rss_kb();
		struct phase p = setup(pd, cq, &gid, qps, mem_n);
		print("mem", mem_n, &p);
		printf("qp_setup: VmRSS %ld KB before, %ld KB after %u QPs: %.1f KB per QP\n", before,
		       before + p.rss_kb, mem_n, (double)p.rss_kb / mem_n);
		double d0 = clock_s(CLOCK_MONOTONIC);
		teardown(qps, mem_n);
		printf("qp_setup: destroyed %u QPs in %.3f s\n", mem_n, clock_s(CLOCK_MONOTONIC) - d0);
	} else {
		/* A first round untimed: the allocator's and the pools' first
		 * touches are not a per-QP cost. */
		struct phase p = setup(pd, cq, &gid, qps, SMALL);
		teardown(qps, SMALL);
		struct phase s = setup(pd, cq, &gid, qps, SMALL);
		teardown(qps, SMALL);
		struct phase l = setup(pd, cq, &gid, qps, LARGE);
		teardown(qps, LARGE);
		(void)p;
		print("small", SMALL, &s);
		print("large", LARGE, &l);
		/* The last quarter of the large set (QPs 768..1023 there) against
		 * the whole small set: where a scan of the QPs would cost most. */
		double ratio = (l.last_cpu_s / (LARGE / 4)) / (s.cpu_s / SMALL);
		printf("qp_setup: CPU per QP, QPs %u..%u against the first %u: %.2f\n", LARGE - LARGE / 4,
		       LARGE - 1, SMALL, ratio);
		CHECK(l.blocked < (long)(LARGE / 8),
		      "the thread blocked %ld times setting up %u QPs (create + 3 modify each): "
		      "a verb waits for someone",
		      l.blocked, LARGE);
		CHECK(ratio <= 3.0,
		      "CPU per QP near %u QPs is %.2fx that of the first %u: a cost that grows with the QPs",
		      LARGE, ratio, SMALL);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	if (failures)
		return 1;
	printf("qp_setup: ok\n");
	return 0;
}
