/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program that fills every send queue before it polls (perftest's bw
 * loop: -q QPs x -t WRs on one send CQ, then ibv_poll_cq): ibv_post_send
 * may refuse a WR only when its own QP's queue is full (ENOMEM), however
 * many QPs share the CQ. In DROCE_COMM_CORE mode ("post_burst comm") all of
 * them cross one channel, whose command ring (DV_COMM_DEPTH, 1024) is
 * smaller than the WRs posted here, and whose completion ring fills too
 * while nothing polls. One process on a memif server port with no peer
 * (the port turns frames to our own address around): N_QP RC pairs,
 * N_WR inline RDMA WRITEs on each sender, all signalled, posted without
 * a poll in between; then every completion, and every byte written
 * (inline data is copied at post time: a bounce slot rewritten while its
 * command waited would show here). Exits 0 printing "PASS", or names what
 * failed.
 */
#include <stdint.h>
#include <time.h>

#include "loop_env.h"
#include "vtest.h"

#define N_QP 4u
#define N_WR 640u   /* per QP: 2560 in all, past 2 x the ring */
#define LEN 64u     /* inline bytes per WRITE */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* WRITE k's byte j: k itself in the first four, so that no two WRITEs
 * carry the same bytes, then a pattern of both. */
static uint8_t pat(unsigned k, unsigned j)
{
	return (uint8_t)(j < 4 ? k >> (8 * j) : k * 131u + j * 7u + 1u);
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr ia = {.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = N_WR, .max_recv_wr = 1,
					      .max_send_sge = 1, .max_recv_sge = 1,
					      .max_inline_data = LEN}};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("create_qp");
	return qp;
}

int main(int argc, char **argv)
{
	int comm = argc > 1 && !strcmp(argv[1], "comm");
	side = comm ? "comm" : "thread";
	loop_env("burst", comm);
	struct ibv_context *ctx = open_droce();
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("query_gid");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, (int)(N_QP * N_WR), NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, (int)N_QP, NULL, NULL, 0);
	size_t bytes = (size_t)N_QP * N_WR * LEN;
	uint8_t *rbuf = calloc(1, bytes), *sbuf = malloc(LEN);
	if (!pd || !scq || !rcq || !rbuf || !sbuf)
		die("pd, CQs, buffers");
	struct ibv_mr *mr = ibv_reg_mr(pd, rbuf, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("reg_mr");
	struct ibv_qp *tx[N_QP], *rx[N_QP];
	for (unsigned q = 0; q < N_QP; q++) {
		tx[q] = rc_qp(pd, scq, rcq);
		rx[q] = rc_qp(pd, rcq, rcq);
	}
	for (unsigned q = 0; q < N_QP; q++) {
		rc_to_rts(tx[q], rx[q]->qp_num, &gid);
		rc_to_rts(rx[q], tx[q]->qp_num, &gid);
	}

	/* Round robin over the QPs, as perftest's loop; the source buffer is
	 * rewritten before every post: only the copy made at post time may
	 * reach the wire. */
	unsigned posted = 0;
	int err = 0;
	for (unsigned i = 0; i < N_WR && !err; i++)
		for (unsigned q = 0; q < N_QP && !err; q++) {
			unsigned k = q * N_WR + i;
			for (unsigned j = 0; j < LEN; j++)
				sbuf[j] = pat(k, j);
			struct ibv_sge s = {.addr = (uintptr_t)sbuf, .length = LEN};
			struct ibv_send_wr w = {.wr_id = k, .sg_list = &s, .num_sge = 1,
						.opcode = IBV_WR_RDMA_WRITE,
						.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
						.wr.rdma = {.remote_addr = (uintptr_t)(rbuf + (size_t)k * LEN),
							    .rkey = mr->rkey}},
					   *bad;
			err = ibv_post_send(tx[q], &w, &bad);
			posted += !err;
		}
	CHECK(posted == N_QP * N_WR, "%u of %u WRITEs posted before a poll (post_send %d: %s)", posted,
	      N_QP * N_WR, err, err ? strerror(err) : "ok");

	unsigned done = 0, bad_status = 0;
	double end = now_s() + 20;
	while (done < posted && now_s() < end) {
		struct ibv_wc wc[32];
		int r = ibv_poll_cq(scq, 32, wc);
		if (r < 0)
			break;
		for (int i = 0; i < r; i++)
			bad_status += wc[i].status != IBV_WC_SUCCESS;
		done += (unsigned)r;
	}
	CHECK(done == posted && !bad_status, "%u of %u completions, %u not successful", done, posted,
	      bad_status);

	unsigned wrong = 0, first = UINT32_MAX;
	for (unsigned n = 0; n < posted; n++) {
		unsigned k = (n % N_QP) * N_WR + n / N_QP; /* the n-th posted */
		for (unsigned j = 0; j < LEN; j++)
			if (rbuf[(size_t)k * LEN + j] != pat(k, j)) {
				wrong++;
				first = first < k ? first : k;
				break;
			}
	}
	CHECK(!wrong, "%u of %u WRITEs landed with other bytes (first: %u)", wrong, posted, first);

	for (unsigned q = 0; q < N_QP; q++) {
		ibv_destroy_qp(tx[q]);
		ibv_destroy_qp(rx[q]);
	}
	ibv_dereg_mr(mr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(rbuf);
	free(sbuf);
	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
