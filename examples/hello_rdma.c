/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello_rdma: the droce API in one file. Two contexts in one process are
 * joined by a tiny link (fifo_link.h: a frame queue each way, the same
 * struct droce_link a DPDK port provides), then:
 *   register memory, create CQs and QPs, connect them (RESET->INIT->RTR->RTS),
 *   post a RECV, SEND a message, RDMA WRITE with immediate, RDMA READ it back,
 *   FETCH_AND_ADD a counter, and poll the completions.
 * Time is an argument: a virtual clock advances 1 us per loop turn.
 * Exit 0 when every check passes. Built by meson and run by the unit suite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <droce/droce.h>

#include "fifo_link.h"

/* ------------------------------------------------ one side */
struct side {
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t buf[8192];
};

static int open_side(struct side *s, struct fifo_end *e, uint8_t host)
{
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = 4;
	p.ip[0] = 10, p.ip[3] = host;
	uint8_t mac[6] = {2, 0, 0, 0, 0, host};
	memcpy(p.mac, mac, 6);
	p.link.ops = &fifo_ops;
	p.link.priv = e;
	s->ctx = droce_ctx_create(&p);
	s->cq = s->ctx ? droce_create_cq(s->ctx, 64) : NULL;
	s->mr = s->ctx ? droce_reg_mr(s->ctx, s->buf, sizeof(s->buf),
				      DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
				      DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC) : NULL;
	struct droce_qp_init_attr ia = {.send_cq = s->cq, .recv_cq = s->cq};
	s->qp = s->mr && s->cq ? droce_create_qp(s->ctx, &ia) : NULL;
	return s->qp ? 0 : -1;
}

/* What the side channel (droce-perf uses TCP) would carry: QPN, PSN, address. */
static int connect_qp(struct side *s, const struct side *peer, uint8_t peer_host,
		      uint32_t my_psn, uint32_t peer_psn)
{
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .pkey = DROCE_DEFAULT_PKEY,
				  .qp_access_flags = s->mr->access};
	int r = droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = DROCE_MTU_1024;
	a.dest_qp_num = droce_qp_num(peer->qp);
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.ip_version = 4;
	a.ah_attr.dst_ip[0] = 10, a.ah_attr.dst_ip[3] = peer_host;
	uint8_t mac[6] = {2, 0, 0, 0, 0, peer_host};
	memcpy(a.ah_attr.dst_mac, mac, 6);
	a.ah_attr.ttl = 64;
	r = r ? r : droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				    DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
				    DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return r ? r : droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN |
				       DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT |
				       DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC);
}

/* Drive both poll loops until @p cq yields a completion. */
static int wait_wc(struct side *s, struct side *t, struct droce_cq *cq, struct droce_wc *wc,
		   uint64_t *now)
{
	for (int turn = 0; turn < 1000000; turn++) {
		*now += 1000;
		droce_ctx_poll(s->ctx, *now);
		droce_ctx_poll(t->ctx, *now);
		int n = droce_poll_cq(cq, 1, wc);
		if (n == 1)
			return wc->status == DROCE_WC_SUCCESS ? 0 : -1;
	}
	return -1;
}

#define CHECK(c, what) do { if (!(c)) { fprintf(stderr, "hello_rdma: %s failed\n", what); return 1; } } while (0)

int main(void)
{
	static struct fifo ab, ba;
	static struct fifo_end ea = {&ab, &ba}, eb = {&ba, &ab};
	static struct side a, b;
	struct droce_wc wc;
	uint64_t now = 0;

	CHECK(open_side(&a, &ea, 1) == 0 && open_side(&b, &eb, 2) == 0, "setup");
	CHECK(connect_qp(&a, &b, 2, 100, 200) == 0 && connect_qp(&b, &a, 1, 200, 100) == 0, "connect");

	/* SEND -> RECV */
	struct droce_sge rsge = {(uint64_t)(uintptr_t)b.buf, 64, b.mr->lkey};
	struct droce_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1}, *bad_r;
	CHECK(droce_post_recv(b.qp, &rwr, &bad_r) == 0, "post_recv");
	strcpy((char *)a.buf, "hello, RDMA");
	struct droce_sge ssge = {(uint64_t)(uintptr_t)a.buf, 12, a.mr->lkey};
	struct droce_send_wr swr = {.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
				    .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED}, *bad;
	CHECK(droce_post_send(a.qp, &swr, &bad) == 0, "post_send");
	CHECK(wait_wc(&a, &b, b.cq, &wc, &now) == 0 && wc.opcode == DROCE_WC_RECV && wc.byte_len == 12, "recv");
	CHECK(strcmp((char *)b.buf, "hello, RDMA") == 0, "received bytes");
	CHECK(wait_wc(&a, &b, a.cq, &wc, &now) == 0 && wc.wr_id == 2, "send completion");

	/* RDMA WRITE 3000 bytes (3 packets at MTU 1024) into b.buf + 1024 */
	for (int i = 0; i < 3000; i++)
		a.buf[1024 + i] = (uint8_t)i;
	struct droce_sge wsge = {(uint64_t)(uintptr_t)(a.buf + 1024), 3000, a.mr->lkey};
	struct droce_send_wr wwr = {.wr_id = 3, .sg_list = &wsge, .num_sge = 1,
				    .opcode = DROCE_WR_RDMA_WRITE, .send_flags = DROCE_SEND_SIGNALED};
	wwr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b.buf + 1024);
	wwr.wr.rdma.rkey = b.mr->rkey;
	CHECK(droce_post_send(a.qp, &wwr, &bad) == 0, "post write");
	CHECK(wait_wc(&a, &b, a.cq, &wc, &now) == 0 && wc.opcode == DROCE_WC_RDMA_WRITE, "write completion");
	CHECK(memcmp(a.buf + 1024, b.buf + 1024, 3000) == 0, "written bytes");

	/* RDMA READ them back into a.buf + 4096 */
	struct droce_sge gsge = {(uint64_t)(uintptr_t)(a.buf + 4096), 3000, a.mr->lkey};
	struct droce_send_wr gwr = {.wr_id = 4, .sg_list = &gsge, .num_sge = 1,
				    .opcode = DROCE_WR_RDMA_READ, .send_flags = DROCE_SEND_SIGNALED};
	gwr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b.buf + 1024);
	gwr.wr.rdma.rkey = b.mr->rkey;
	CHECK(droce_post_send(a.qp, &gwr, &bad) == 0, "post read");
	CHECK(wait_wc(&a, &b, a.cq, &wc, &now) == 0 && wc.opcode == DROCE_WC_RDMA_READ, "read completion");
	CHECK(memcmp(a.buf + 4096, b.buf + 1024, 3000) == 0, "read bytes");

	/* FETCH_AND_ADD 5 on a counter at b.buf + 7168 holding 37 */
	uint64_t counter = 37;
	memcpy(b.buf + 7168, &counter, 8);
	struct droce_sge fsge = {(uint64_t)(uintptr_t)(a.buf + 7168), 8, a.mr->lkey};
	struct droce_send_wr fwr = {.wr_id = 5, .sg_list = &fsge, .num_sge = 1,
				    .opcode = DROCE_WR_ATOMIC_FETCH_AND_ADD, .send_flags = DROCE_SEND_SIGNALED};
	fwr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)(b.buf + 7168);
	fwr.wr.atomic.rkey = b.mr->rkey;
	fwr.wr.atomic.compare_add = 5;
	CHECK(droce_post_send(a.qp, &fwr, &bad) == 0, "post fetch-add");
	CHECK(wait_wc(&a, &b, a.cq, &wc, &now) == 0 && wc.opcode == DROCE_WC_FETCH_ADD, "atomic completion");
	uint64_t old, val;
	memcpy(&old, a.buf + 7168, 8);
	memcpy(&val, b.buf + 7168, 8);
	CHECK(old == 37 && val == 42, "fetch-add values");

	struct droce_qp_stats st;
	droce_qp_get_stats(a.qp, &st);
	printf("hello_rdma: SEND, WRITE, READ and FETCH_AND_ADD done; A sent %llu packets, "
	       "received %llu\n", (unsigned long long)st.tx_pkts, (unsigned long long)st.rx_pkts);
	droce_ctx_destroy(a.ctx); /* destroys its QPs, CQs and MRs too */
	droce_ctx_destroy(b.ctx);
	return 0;
}
