/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-context window knob (droce_ctx_params.window_pkts) bounds the
 * packets a QP has in flight: with the peer silent, exactly that many leave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <droce/droce.h>

#include "net/link/memlink.h"

static struct droce_qp *make_qp(struct droce_ctx *ctx, struct droce_cq **cq)
{
	*cq = droce_create_cq(ctx, 64);
	struct droce_qp_init_attr ia = {.send_cq = *cq, .recv_cq = *cq};
	struct droce_qp *qp = droce_create_qp(ctx, &ia);
	assert_non_null(qp);
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .pkey = 0xFFFF,
				  .qp_access_flags = DROCE_ACCESS_REMOTE_WRITE};
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = DROCE_MTU_1024;
	a.dest_qp_num = 77;
	a.ah_attr.ip_version = 4;
	a.ah_attr.dst_ip[0] = 10;
	a.ah_attr.dst_ip[3] = 2;
	a.ah_attr.ttl = 64;
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					 DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					 DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					 DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					 DROCE_QP_MAX_QP_RD_ATOMIC), 0);
	return qp;
}

/* Packets a 64 KB WRITE puts on the wire before any ACK, with this window. */
static unsigned in_flight(uint32_t window_pkts)
{
	struct droce_memlink *ml = droce_memlink_create(NULL);
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip[0] = 10;
	p.ip[3] = 1;
	p.link = droce_memlink_end(ml, 0);
	p.window_pkts = window_pkts;
	struct droce_ctx *ctx = droce_ctx_create(&p);
	assert_non_null(ctx);
	static uint8_t buf[65536];
	struct droce_mr *mr = droce_reg_mr(ctx, buf, sizeof(buf), DROCE_ACCESS_LOCAL_WRITE);
	struct droce_cq *cq;
	struct droce_qp *qp = make_qp(ctx, &cq);
	struct droce_sge sge = {(uint64_t)(uintptr_t)buf, sizeof(buf), mr->lkey};
	struct droce_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = DROCE_WR_RDMA_WRITE, .send_flags = DROCE_SEND_SIGNALED}, *bad;
	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x1234;
	assert_int_equal(droce_post_send(qp, &wr, &bad), 0);
	for (int i = 0; i < 10; i++)
		droce_ctx_poll(ctx, 1000u * (uint64_t)(i + 1)); /* well inside the ACK timeout */
	unsigned n = droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1);
	droce_ctx_destroy(ctx);
	droce_memlink_destroy(ml);
	return n;
}

static void test_window_bounds_in_flight(void **state)
{
	assert_int_equal(in_flight(4), 4);
	assert_int_equal(in_flight(17), 17);
	assert_int_equal(in_flight(0), 64); /* default (512) is above the 64 packets of the message */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_bounds_in_flight),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
