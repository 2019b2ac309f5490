/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ibv <-> droce translations of the verbs drop-in (stack/verbs/xlate.c),
 * table by table, each way a mapping exists: every droce completion status
 * and opcode maps to the IBV_WC_* value rdma-core programs test for, and
 * QP states, access flags and MTUs map to droce and back to the value they
 * came from, whatever numbers either side's enums carry. The tables below
 * are written from <infiniband/verbs.h> and include/droce/verbs.h, not from
 * xlate.c: one wrong entry there fails its test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <errno.h>

#include <cmocka.h>

#include "verbs/xlate.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_status(void **state)
{
	(void)state;
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
		{DROCE_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_EEC_OP_ERR},
		{DROCE_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR},
		{DROCE_WC_LOC_RDD_VIOL_ERR, IBV_WC_LOC_RDD_VIOL_ERR},
		{DROCE_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR},
		{DROCE_WC_INV_EECN_ERR, IBV_WC_INV_EECN_ERR},
		{DROCE_WC_INV_EEC_STATE_ERR, IBV_WC_INV_EEC_STATE_ERR},
		{DROCE_WC_FATAL_ERR, IBV_WC_FATAL_ERR},
		{DROCE_WC_RESP_TIMEOUT_ERR, IBV_WC_RESP_TIMEOUT_ERR},
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
	(void)state;
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

static void test_qp_state(void **state)
{
	(void)state;
	static const struct {
		enum ibv_qp_state i;
		enum droce_qp_state d;
	} map[] = {
		{IBV_QPS_RESET, DROCE_QPS_RESET}, {IBV_QPS_INIT, DROCE_QPS_INIT},
		{IBV_QPS_RTR, DROCE_QPS_RTR},     {IBV_QPS_RTS, DROCE_QPS_RTS},
		{IBV_QPS_SQD, DROCE_QPS_SQD},     {IBV_QPS_SQE, DROCE_QPS_SQE},
		{IBV_QPS_ERR, DROCE_QPS_ERR},
	};
	for (unsigned k = 0; k < N(map); k++) {
		enum droce_qp_state d = (enum droce_qp_state)99;
		assert_int_equal(dv_qps_to_droce(map[k].i, &d), 0);
		assert_int_equal(d, map[k].d);
		assert_int_equal(dv_qps_from_droce(map[k].d), map[k].i);
	}
	enum droce_qp_state d;
	assert_int_equal(dv_qps_to_droce(IBV_QPS_UNKNOWN, &d), EINVAL);
	assert_int_equal(dv_qps_from_droce((enum droce_qp_state)99), IBV_QPS_UNKNOWN);
}

static void test_access(void **state)
{
	(void)state;
	static const struct {
		unsigned i, d;
	} map[] = {
		{IBV_ACCESS_LOCAL_WRITE, DROCE_ACCESS_LOCAL_WRITE},
		{IBV_ACCESS_REMOTE_WRITE, DROCE_ACCESS_REMOTE_WRITE},
		{IBV_ACCESS_REMOTE_READ, DROCE_ACCESS_REMOTE_READ},
		{IBV_ACCESS_REMOTE_ATOMIC, DROCE_ACCESS_REMOTE_ATOMIC},
	};
	unsigned all_i = 0, all_d = 0;
	for (unsigned k = 0; k < N(map); k++) {
		assert_int_equal(dv_access_to_droce(map[k].i), map[k].d);
		assert_int_equal(dv_access_from_droce(map[k].d), map[k].i);
		all_i |= map[k].i;
		all_d |= map[k].d;
	}
	/* Flags combine, both ways; the known set is exactly the table's. */
	assert_int_equal(dv_access_to_droce(all_i), all_d);
	assert_int_equal(dv_access_from_droce(all_d), all_i);
	assert_int_equal(DV_ACCESS_KNOWN, all_i);
	assert_int_equal(dv_access_to_droce(IBV_ACCESS_MW_BIND), 0);
}

static void test_mtu(void **state)
{
	(void)state;
	static const struct {
		enum ibv_mtu i;
		enum droce_mtu d;
		unsigned bytes;
	} map[] = {
		{IBV_MTU_256, DROCE_MTU_256, 256},    {IBV_MTU_512, DROCE_MTU_512, 512},
		{IBV_MTU_1024, DROCE_MTU_1024, 1024}, {IBV_MTU_2048, DROCE_MTU_2048, 2048},
		{IBV_MTU_4096, DROCE_MTU_4096, 4096},
	};
	for (unsigned k = 0; k < N(map); k++) {
		enum droce_mtu d = (enum droce_mtu)99;
		assert_int_equal(dv_mtu_to_droce(map[k].i, &d), 0);
		assert_int_equal(d, map[k].d);
		assert_int_equal(droce_mtu_bytes(d), map[k].bytes);
		assert_int_equal(dv_mtu_from_droce(map[k].d), map[k].i);
	}
	enum droce_mtu d;
	assert_int_equal(dv_mtu_to_droce((enum ibv_mtu)6, &d), EINVAL);
	assert_int_equal(dv_mtu_to_droce((enum ibv_mtu)0, &d), EINVAL);
}

static void test_send_wr(void **state)
{
	(void)state;
	static const struct {
		enum ibv_wr_opcode i;
		enum droce_wr_opcode d;
	} ops[] = {
		{IBV_WR_RDMA_WRITE, DROCE_WR_RDMA_WRITE},
		{IBV_WR_RDMA_WRITE_WITH_IMM, DROCE_WR_RDMA_WRITE_WITH_IMM},
		{IBV_WR_SEND, DROCE_WR_SEND},
		{IBV_WR_SEND_WITH_IMM, DROCE_WR_SEND_WITH_IMM},
		{IBV_WR_RDMA_READ, DROCE_WR_RDMA_READ},
		{IBV_WR_ATOMIC_CMP_AND_SWP, DROCE_WR_ATOMIC_CMP_AND_SWP},
		{IBV_WR_ATOMIC_FETCH_AND_ADD, DROCE_WR_ATOMIC_FETCH_AND_ADD},
	};
	for (unsigned k = 0; k < N(ops); k++) {
		enum droce_wr_opcode d = (enum droce_wr_opcode)99;
		assert_int_equal(dv_wr_opcode_to_droce(ops[k].i, &d), 0);
		assert_int_equal(d, ops[k].d);
	}
	enum droce_wr_opcode d;
	const enum ibv_wr_opcode none[] = {IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV,
					   IBV_WR_TSO};
	for (unsigned k = 0; k < N(none); k++)
		assert_int_equal(dv_wr_opcode_to_droce(none[k], &d), EINVAL);

	static const struct {
		unsigned i, d;
	} flags[] = {
		{IBV_SEND_FENCE, DROCE_SEND_FENCE},
		{IBV_SEND_SIGNALED, DROCE_SEND_SIGNALED},
		{IBV_SEND_SOLICITED, DROCE_SEND_SOLICITED},
		{IBV_SEND_INLINE, DROCE_SEND_INLINE},
	};
	for (unsigned k = 0; k < N(flags); k++) {
		unsigned f = 99;
		assert_int_equal(dv_send_flags_to_droce(flags[k].i, &f), 0);
		assert_int_equal(f, flags[k].d);
	}
	unsigned f;
	assert_int_equal(dv_send_flags_to_droce(IBV_SEND_IP_CSUM, &f), EINVAL);

	/* The whole WR: SGEs as they are, the remote address by opcode. */
	struct ibv_sge sge = {.addr = 0x1000, .length = 64, .lkey = 5};
	struct ibv_send_wr w = {.wr_id = 9, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				.imm_data = 0x0a0b0c0d};
	w.wr.rdma.remote_addr = 0xabcdef;
	w.wr.rdma.rkey = 77;
	struct droce_send_wr out;
	assert_int_equal(dv_send_to_droce(&w, false, &out), 0);
	assert_true(out.wr_id == 9);
	assert_ptr_equal(out.sg_list, (void *)&sge);
	assert_int_equal(out.num_sge, 1);
	assert_int_equal(out.opcode, DROCE_WR_RDMA_WRITE_WITH_IMM);
	assert_int_equal(out.send_flags, DROCE_SEND_SIGNALED);
	assert_int_equal(out.imm_data, 0x0a0b0c0d);
	assert_true(out.wr.rdma.remote_addr == 0xabcdef);
	assert_int_equal(out.wr.rdma.rkey, 77);

	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w.wr.atomic.remote_addr = 0x2000;
	w.wr.atomic.compare_add = 1;
	w.wr.atomic.swap = 2;
	w.wr.atomic.rkey = 3;
	assert_int_equal(dv_send_to_droce(&w, false, &out), 0);
	assert_true(out.wr.atomic.remote_addr == 0x2000 && out.wr.atomic.compare_add == 1 &&
		    out.wr.atomic.swap == 2);
	assert_int_equal(out.wr.atomic.rkey, 3);

	w.opcode = IBV_WR_SEND;
	w.wr.ud.remote_qpn = 0x4567;
	w.wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(dv_send_to_droce(&w, true, &out), 0);
	assert_int_equal(out.wr.ud.remote_qpn, 0x4567);
	assert_int_equal(out.wr.ud.remote_qkey, 0x11111111);
	assert_null(out.wr.ud.ah); /* the caller's to set */

	w.opcode = IBV_WR_LOCAL_INV;
	assert_int_equal(dv_send_to_droce(&w, false, &out), EINVAL);
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_IP_CSUM;
	assert_int_equal(dv_send_to_droce(&w, false, &out), EINVAL);
}

static void test_av(void **state)
{
	(void)state;
	struct ibv_ah_attr a = {.is_global = 1, .port_num = 1};
	const uint8_t ip[4] = {198, 18, 0, 2};
	dv_gid_from_ip(ip, &a.grh.dgid);
	a.grh.traffic_class = 26 << 2 | 1;
	a.grh.hop_limit = 17;
	struct droce_ah_attr d;
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(dv_av_to_droce(&a, &d), 0);
	assert_int_equal(d.ip_version, 4);
	assert_memory_equal(d.dst_ip, ip, 4);
	assert_int_equal(d.dscp, 26);
	assert_int_equal(d.ttl, 17);
	static const uint8_t zero[6];
	assert_memory_equal(d.dst_mac, zero, 6); /* the caller resolves it */
	struct ibv_ah_attr back;
	dv_av_from_droce(&d, &back);
	assert_int_equal(back.is_global, 1);
	assert_int_equal(back.port_num, 1);
	assert_memory_equal(back.grh.dgid.raw, a.grh.dgid.raw, 16);
	assert_int_equal(back.grh.traffic_class, 26 << 2); /* the ECN bits are the wire's */
	assert_int_equal(back.grh.hop_limit, 17);

	/* 0 keeps droce's defaults. */
	a.grh.traffic_class = 0;
	a.grh.hop_limit = 0;
	assert_int_equal(dv_av_to_droce(&a, &d), 0);
	assert_int_equal(d.dscp, DROCE_DEFAULT_DSCP);
	assert_int_equal(d.ttl, DROCE_DEFAULT_TTL);

	/* RoCEv2 needs the GRH, droce0's one GID and port, an IPv4-mapped GID. */
	struct ibv_ah_attr bad = a;
	bad.is_global = 0;
	assert_int_equal(dv_av_to_droce(&bad, &d), EINVAL);
	bad = a;
	bad.grh.sgid_index = 1;
	assert_int_equal(dv_av_to_droce(&bad, &d), EINVAL);
	bad = a;
	bad.port_num = 2;
	assert_int_equal(dv_av_to_droce(&bad, &d), EINVAL);
	bad = a;
	bad.grh.dgid.raw[10] = 0;
	assert_int_equal(dv_av_to_droce(&bad, &d), EINVAL);
}

static void test_gid(void **state)
{
	(void)state;
	const uint8_t ip[4] = {10, 1, 2, 3};
	union ibv_gid g;
	dv_gid_from_ip(ip, &g);
	const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
	assert_memory_equal(g.raw, want, 16);
	uint8_t back[4];
	assert_int_equal(dv_ip_from_gid(&g, back), 0);
	assert_memory_equal(back, ip, 4);
	g.raw[0] = 0xfe;
	assert_int_equal(dv_ip_from_gid(&g, back), -EINVAL);
}

static void test_caps(void **state)
{
	(void)state;
	struct ibv_qp_cap c = {.max_send_wr = 1, .max_recv_wr = 2, .max_send_sge = 3,
			       .max_recv_sge = 4, .max_inline_data = 5};
	struct droce_qp_cap d;
	dv_caps_to_droce(&c, &d);
	assert_int_equal(d.max_send_wr, 1);
	assert_int_equal(d.max_recv_wr, 2);
	assert_int_equal(d.max_send_sge, 3);
	assert_int_equal(d.max_recv_sge, 4);
	assert_int_equal(d.max_inline_data, 5);
	struct ibv_qp_cap back;
	memset(&back, 0, sizeof(back));
	dv_caps_from_droce(&d, &back);
	assert_memory_equal(&back, &c, sizeof(c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_opcode_and_fields),
		cmocka_unit_test(test_ud_sl),
		cmocka_unit_test(test_qp_state),
		cmocka_unit_test(test_access),
		cmocka_unit_test(test_mtu),
		cmocka_unit_test(test_send_wr),
		cmocka_unit_test(test_av),
		cmocka_unit_test(test_gid),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
