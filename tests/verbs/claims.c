/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two documented behaviours of the libibverbs drop-in, written against the
 * system's <infiniband/verbs.h> and run over droce's libibverbs.so.1 on a
 * memif port with no peer (docs/verbs.md):
 *  - ARP: the peer's MAC is resolved when the QP goes to RTR; an address
 *    nobody answers makes ibv_modify_qp() return ETIMEDOUT after the
 *    resolve timeout (5 s), not hang and not succeed;
 *  - CQ overflow: a CQ that receives more completions than it holds (here
 *    the receives a QP in ERR flushes, IBTA 10.3.1) overflows as droce's
 *    CQs do: ibv_poll_cq() returns a negative value (-EOVERFLOW) instead
 *    of a count, and the QP on it is in ERR.
 *   verbs_claims      (exit 0: every check passed; 1: a check failed)
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		printf((cond) ? "ok   " : "FAIL (%s:%d) ", __FILE__, __LINE__); \
		if (!(cond))                                             \
			failures++;                                      \
		printf(__VA_ARGS__);                                     \
		printf("\n");                                            \
		fflush(stdout);                                          \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, unsigned recvs)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 16, .max_recv_wr = recvs,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return NULL;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

int main(void)
{
	/* A memif server port whose socket lives in a directory of our own,
	 * with no client ever coming. */
	char dir[] = "/tmp/droce-verbs-claims-XXXXXX", port[96];
	if (!mkdtemp(dir)) {
		perror("verbs_claims: mkdtemp");
		return 1;
	}
	snprintf(port, sizeof(port), "memif:server,socket=%s/memif.sock", dir);
	setenv("DROCE_PORT", port, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n != 1 || strcmp(ibv_get_device_name(list[0]), "droce0")) {
		fprintf(stderr, "verbs_claims: no droce0 (%d devices)\n", n);
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	char *buf = calloc(1, 4096);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr) {
		fprintf(stderr, "verbs_claims: context/pd/cq/mr: %s\n", strerror(errno));
		return 1;
	}

	/* ARP towards an address no one answers (198.18.0.99 on a memif
	 * port without a peer). */
	struct ibv_qp *qp = rc_qp(pd, cq, 16);
	CHECK(qp != NULL, "an RC QP in INIT");
	if (qp) {
		union ibv_gid gid = {.raw = {[10] = 0xff, [11] = 0xff, [12] = 198, [13] = 18,
					     [14] = 0, [15] = 99}};
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = 2,
			.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
			.ah_attr = {.is_global = 1, .port_num = 1,
				    .grh = {.dgid = gid, .sgid_index = 0, .hop_limit = 1}},
		};
		double t0 = now_s();
		int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		double took = now_s() - t0;
		CHECK(r == ETIMEDOUT, "RTR towards an address nobody answers: %s (%d) after %.1f s",
		      r ? strerror(r) : "success", r, took);
		CHECK(took >= 4.0 && took < 30.0, "the ARP resolve gave up after its 5 s (%.1f s)", took);
		ibv_destroy_qp(qp);
	}

	/* CQ overflow: 200 receives flushed into a CQ granted 128 entries
	 * at most (cqe + 1 rounded up to a power of two). */
	qp = rc_qp(pd, cq, 256);
	CHECK(qp != NULL, "an RC QP with 256 receives");
	if (qp) {
		struct ibv_sge sge = {(uintptr_t)buf, 64, mr->lkey};
		int posted = 0;
		for (int i = 0; i < 200; i++) {
			struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;
			if (ibv_post_recv(qp, &wr, &bad))
				break;
			posted++;
		}
		CHECK(posted == 200 && (unsigned)cq->cqe < 200,
		      "200 receives posted, the CQ holds %d", cq->cqe);
		struct ibv_qp_attr e = {.qp_state = IBV_QPS_ERR};
		CHECK(ibv_modify_qp(qp, &e, IBV_QP_STATE) == 0, "QP to ERR: its receives flush");
		struct ibv_wc wc[16];
		int got = 0, r = 0;
		double end = now_s() + 10;
		while (now_s() < end) {
			r = ibv_poll_cq(cq, 16, wc);
			if (r < 0)
				break;
			got += r;
		}
		CHECK(r < 0, "ibv_poll_cq reports the overflow: %d (%s) after %d completions", r,
		      r < 0 ? strerror(-r) : "none", got);
		CHECK(r == -EOVERFLOW, "the overflow is -EOVERFLOW (%d)", r);
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;
		CHECK(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR,
		      "the QP is in ERR");
		ibv_destroy_qp(qp);
	}
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	rmdir(dir);
	printf("%s: %d check(s) failed\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
