/* SPDX-License-Identifier: BSD-3-Clause */
/* Context: parameters, creation errors, cc registry, drops by reason, idle deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cc/cc.h"
#include "core/core_int.h"
#include "pair.h"
#include "wire/build.h"
#include "wire/opcode.h"

static void test_params_and_create_errors(void **state)
{
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	assert_int_equal(p.burst, DROCE_DEFAULT_BURST);
	assert_int_equal(p.ip_version, 4);
	assert_null(p.link.ops);
	errno = 0;
	assert_null(droce_ctx_create(&p)); /* no link */
	assert_int_equal(errno, EINVAL);
	struct tl_pair *l = calloc(1, sizeof(*l));
	l->end[0].pair = l;
	p.link.ops = &tl_ops;
	p.link.priv = &l->end[0];
	p.ip_version = 5;
	assert_null(droce_ctx_create(&p));
	p.ip_version = 6;
	p.cc = "no-such-cc";
	assert_null(droce_ctx_create(&p));
	assert_int_equal(errno, EINVAL);
	p.cc = "aimd";
	struct droce_ctx *ctx = droce_ctx_create(&p);
	assert_non_null(ctx);
	assert_int_equal(droce_ctx_next_deadline(ctx), UINT64_MAX);
	assert_int_equal(droce_ctx_poll(ctx, 5), 0);
	/* A CQ left behind is destroyed with the context (ASan checks). */
	assert_non_null(droce_create_cq(ctx, 8));
	assert_int_equal(droce_ctx_destroy(ctx), 0);
	assert_int_equal(droce_ctx_destroy(NULL), -EINVAL);
	assert_ptr_equal(droce_cc_find(NULL), &droce_cc_fixed);
	assert_ptr_equal(droce_cc_find("aimd"), &droce_cc_aimd);
	free(l);
}

/* Frames the context must count and drop: bad ICRC, unknown QPN, other host,
 * not RoCE. */
static void test_drops_by_reason(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 1, 2);
	assert_non_null(bd);
	struct droce_hdrs h = bd->s[0].qp->tmpl;
	h.bth.opcode = DROCE_OP_RC_SEND_ONLY;
	h.bth.psn = 2;
	h.payload_len = 4;
	uint8_t f[256];
	size_t n = droce_build_frame(f, sizeof(f), &h, "abcd");
	assert_true(n > 0);
	struct tl_dir *d = &bd->link->dir[0];
	/* 1: corrupt payload byte; 2: unknown QPN; 3: other host; 4: ARP. */
	memcpy(d->buf[0], f, n);
	d->buf[0][n - 6] ^= 1;
	d->len[0] = (uint32_t)n;
	h.bth.dqpn = 0x777777;
	d->len[1] = (uint32_t)droce_build_frame(d->buf[1], TL_FRAME, &h, "abcd");
	h.bth.dqpn = droce_qp_num(bd->s[1].qp);
	h.net.dst_ip[3] = 99;
	d->len[2] = (uint32_t)droce_build_frame(d->buf[2], TL_FRAME, &h, "abcd");
	memset(d->buf[3], 0, 60);
	d->buf[3][12] = 0x08;
	d->buf[3][13] = 0x06;
	d->len[3] = 60;
	d->count = 4;
	droce_ctx_poll(bd->s[1].ctx, bd->now);
	struct droce_ctx_stats st;
	droce_ctx_get_stats(bd->s[1].ctx, &st);
	assert_int_equal(st.rx_frames, 4);
	assert_int_equal(st.drop[DROCE_DROP_PARSE_BAD_ICRC], 1);
	assert_int_equal(st.drop[DROCE_DROP_UNKNOWN_QPN], 1);
	assert_int_equal(st.drop[DROCE_DROP_DST_IP], 1);
	assert_int_equal(st.not_roce, 1);
	struct droce_qp_stats qs;
	droce_qp_get_stats(bd->s[1].qp, &qs);
	assert_int_equal(qs.rx_pkts, 0); /* nothing reached the responder */
	bed_free(bd);
}

/* ECN CE on a request: counted, answered by one CNP, which the peer's cc sees. */
static void test_ecn_cnp(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 1, 2);
	assert_non_null(bd);
	uint8_t buf[64];
	struct droce_mr *mr = droce_reg_mr(bd->s[1].ctx, buf, sizeof(buf),
					   DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	struct droce_hdrs h = bd->s[0].qp->tmpl;
	h.net.ecn = 3;
	h.bth.opcode = DROCE_OP_RC_RDMA_WRITE_ONLY;
	h.bth.psn = 1;
	h.bth.ack_req = true;
	h.ext.reth.va = (uintptr_t)buf;
	h.ext.reth.rkey = mr->rkey;
	h.ext.reth.dma_len = 4;
	h.payload_len = 4;
	struct tl_dir *d = &bd->link->dir[0];
	d->len[0] = (uint32_t)droce_build_frame(d->buf[0], TL_FRAME, &h, "wxyz");
	d->count = 1;
	droce_ctx_poll(bd->s[1].ctx, bd->now);
	assert_memory_equal(buf, "wxyz", 4);
	struct droce_qp_stats qs;
	droce_qp_get_stats(bd->s[1].qp, &qs);
	assert_int_equal(qs.ecn_marked, 1);
	assert_int_equal(qs.cnp_sent, 1);
	assert_int_equal(qs.acks_sent, 1);
	droce_ctx_poll(bd->s[0].ctx, bd->now);
	droce_qp_get_stats(bd->s[0].qp, &qs);
	assert_int_equal(qs.cnp_rcvd, 1);
	droce_dereg_mr(mr);
	bed_free(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_and_create_errors),
		cmocka_unit_test(test_drops_by_reason),
		cmocka_unit_test(test_ecn_cnp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
