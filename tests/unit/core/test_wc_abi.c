/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce's completion statuses and opcodes are ibverbs' own numbers
 * (enum ibv_wc_status / ibv_wc_opcode in rdma-core's <infiniband/verbs.h>),
 * so a program or a drop-in library can pass them through unchanged and a
 * number printed by one is read the same way by the other.
 * Only the header is used (no libibverbs to link).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include <droce/droce.h>

#define SAME(d, i) assert_int_equal((int)(d), (int)(i))

static void test_status_values(void **state)
{
	(void)state;
	SAME(DROCE_WC_SUCCESS, IBV_WC_SUCCESS);
	SAME(DROCE_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
	SAME(DROCE_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR);
	SAME(DROCE_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_EEC_OP_ERR);
	SAME(DROCE_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
	SAME(DROCE_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
	SAME(DROCE_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR);
	SAME(DROCE_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR);
	SAME(DROCE_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR);
	SAME(DROCE_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
	SAME(DROCE_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
	SAME(DROCE_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
	SAME(DROCE_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
	SAME(DROCE_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
	SAME(DROCE_WC_LOC_RDD_VIOL_ERR, IBV_WC_LOC_RDD_VIOL_ERR);
	SAME(DROCE_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR);
	SAME(DROCE_WC_REM_ABORT_ERR, IBV_WC_REM_ABORT_ERR);
	SAME(DROCE_WC_INV_EECN_ERR, IBV_WC_INV_EECN_ERR);
	SAME(DROCE_WC_INV_EEC_STATE_ERR, IBV_WC_INV_EEC_STATE_ERR);
	SAME(DROCE_WC_FATAL_ERR, IBV_WC_FATAL_ERR);
	SAME(DROCE_WC_RESP_TIMEOUT_ERR, IBV_WC_RESP_TIMEOUT_ERR);
	SAME(DROCE_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
}

static void test_opcode_values(void **state)
{
	(void)state;
	SAME(DROCE_WC_SEND, IBV_WC_SEND);
	SAME(DROCE_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
	SAME(DROCE_WC_RDMA_READ, IBV_WC_RDMA_READ);
	SAME(DROCE_WC_COMP_SWAP, IBV_WC_COMP_SWAP);
	SAME(DROCE_WC_FETCH_ADD, IBV_WC_FETCH_ADD);
	SAME(DROCE_WC_RECV, IBV_WC_RECV);
	SAME(DROCE_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
}

/* Every status droce names reads as rdma-core's ibv_wc_status_str() words
 * for the same number (the strings are libibverbs', checked by content). */
static void test_status_names(void **state)
{
	(void)state;
	assert_string_equal(droce_wc_status_str(DROCE_WC_LOC_PROT_ERR), "local protection error");
	assert_string_equal(droce_wc_status_str(DROCE_WC_BAD_RESP_ERR), "bad response error");
	assert_string_equal(droce_wc_status_str(DROCE_WC_REM_INV_RD_REQ_ERR),
			    "remote invalid RD request");
	for (int s = DROCE_WC_SUCCESS; s <= DROCE_WC_GENERAL_ERR; s++)
		assert_string_not_equal(droce_wc_status_str((enum droce_wc_status)s), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_values),
		cmocka_unit_test(test_opcode_values),
		cmocka_unit_test(test_status_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
