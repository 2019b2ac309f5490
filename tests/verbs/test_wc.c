/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The work-completion tables of the verbs drop-in (stack/verbs/cq.c): every
 * droce status and opcode maps to the IBV_WC_* value rdma-core programs test
 * for, whatever numbers droce's own enums carry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verbs/dv.h"

static void test_status(void **state)
{
	static const struct {
		enum droce_wc_status d;
		enum ibv_wc_status i;
	} map[] = {
		{DROCE_WC_SUCCESS, IBV_WC_SUCCESS},
		{DROCE_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR},
		{DROCE_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR},
		{DROCE_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR},
		{DROCE_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR},
		{DROCE_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR},
		{DROCE_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR},
		{DROCE_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR},
		{DROCE_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR},
		{DROCE_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR},
		{DROCE_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR},
		{DROCE_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR},
		{DROCE_WC_REM_ABORT_ERR, IBV_WC_REM_ABORT_ERR},
		{DROCE_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR},
	};
	for (unsigned k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
		struct droce_wc in = {.wr_id = 7, .status = map[k].d, .opcode = DROCE_WC_SEND};
		struct ibv_wc out;
		memset(&out, 0xa5, sizeof(out));
		dv_wc_convert(&in, &out);
		assert_int_equal(out.status, map[k].i);
		assert_int_equal(out.wr_id, 7);
	}
	/* A value droce may add later is an error, never success. */
	struct droce_wc in = {.status = (enum droce_wc_status)200};
	struct ibv_wc out;
	dv_wc_convert(&in, &out);
	assert_int_equal(out.status, IBV_WC_GENERAL_ERR);
}

static void test_opcode_and_fields(void **state)
{
	static const struct {
		enum droce_wc_opcode d;
		enum ibv_wc_opcode i;
	} map[] = {
		{DROCE_WC_SEND, IBV_WC_SEND},
		{DROCE_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE},
		{DROCE_WC_RDMA_READ, IBV_WC_RDMA_READ},
		{DROCE_WC_COMP_SWAP, IBV_WC_COMP_SWAP},
		{DROCE_WC_FETCH_ADD, IBV_WC_FETCH_ADD},
		{DROCE_WC_RECV, IBV_WC_RECV},
		{DROCE_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM},
	};
	for (unsigned k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
		struct droce_wc in = {.opcode = map[k].d};
		struct ibv_wc out;
		dv_wc_convert(&in, &out);
		assert_int_equal(out.opcode, map[k].i);
	}
	struct droce_wc in = {.wr_id = 0x1122334455667788ull, .status = DROCE_WC_SUCCESS,
			      .opcode = DROCE_WC_RECV, .byte_len = 4096, .imm_data = 0x01020304,
			      .qp_num = 0x123456, .src_qp = 0x654321, .wc_flags = DROCE_WC_WITH_IMM,
			      .vendor_err = 3};
	struct ibv_wc out;
	dv_wc_convert(&in, &out);
	assert_true(out.wr_id == 0x1122334455667788ull);
	assert_int_equal(out.byte_len, 4096);
	assert_int_equal(out.imm_data, 0x01020304); /* network order value, untouched */
	assert_int_equal(out.wc_flags, IBV_WC_WITH_IMM);
	assert_int_equal(out.qp_num, 0x123456);
	assert_int_equal(out.src_qp, 0x654321);
	assert_int_equal(out.vendor_err, 3);
	in.wc_flags = 0;
	dv_wc_convert(&in, &out);
	assert_int_equal(out.wc_flags, 0);
	assert_int_equal(out.imm_data, 0);
}

/* A UD receive reports the RoCE L3 type in sl, as mlx5 (2 = IPv4): UCX's
 * ud_verbs reads sl & 7 to find the destination address in the GRH area
 * and drops every datagram it reads as IPv6 (sl 0). RC receives keep 0. */
static void test_ud_sl(void **state)
{
	(void)state;
	struct droce_wc in = {.status = DROCE_WC_SUCCESS, .opcode = DROCE_WC_RECV,
			      .wc_flags = DROCE_WC_GRH, .byte_len = 48, .src_qp = 7};
	struct ibv_wc out;
	dv_wc_convert(&in, &out);
	assert_true(out.wc_flags & IBV_WC_GRH);
	assert_int_equal(out.sl & 7, 2);
	assert_int_equal(out.src_qp, 7);
	in.wc_flags = 0;
	dv_wc_convert(&in, &out);
	assert_int_equal(out.sl, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_opcode_and_fields),
		cmocka_unit_test(test_ud_sl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
