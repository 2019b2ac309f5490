/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-replay's engine-free parts: the scenario parser (and its file:line
 * errors), peer-frame rewriting, the semantic comparison (what it ignores,
 * what it catches, ACK coalescing), and derivation from a fixture capture.
 * DROCE_PCAP_DIR names the project's pcap/ directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture.h"
#include "compare.h"
#include "derive.h"
#include "frames.h"
#include "scenario.h"
#include "wire/build.h"
#include "wire/bytes.h"
#include "wire/hdr.h"

#define HEAD "capture x.pcap\nip 10.0.0.1\nmac 02:00:00:00:00:01\n"
#define QP "qp q local=0x12 peer=0x34 peer-ip=10.0.0.2 peer-mac=02:00:00:00:00:02 rq-psn=5 mtu=256\n"

static int parse(const char *text, struct droce_rp_scenario **s, char *err, size_t n)
{
	return droce_rp_scenario_parse(text, "/d/t.scn", s, err, n);
}

static void test_parse_ok(void **state)
{
	(void)state;
	struct droce_rp_scenario *s = NULL;
	char err[256] = "";
	int r = parse(HEAD QP
		      "mr r addr=0x1000 len=64 rkey=0x99 access=lw,rw\n"
		      "fill r 0 hex:0102\n"
		      "fill r 8 pattern:inc:4\n"
		      "fill r 16 byte:0xab:2\n"
		      "fill r 20 text:hi\n"
		      "recv q wr=3 mr=r off=32 len=16 at=1.5us\n"
		      "post q wr=4 op=write-imm mr=r off=0 len=8 raddr=0x5000 rkey=7 imm=0x10 at=2ms unsignaled\n"
		      "expect-mem r 0 hex:0102  # comment\n"
		      "expect-wc q recv wr=3 status=SUCCESS opcode=recv len=16\n"
		      "skip-frame 3 4\nallow ack-coalescing\nallow send-ahead\ncheck credits ackreq\ndrain 5ms\n"
		      "expect-gap 2 3 10us\n",
		      &s, err, sizeof(err));
	assert_int_equal(r, 0);
	assert_string_equal(s->capture, "/d/x.pcap");
	assert_int_equal(s->nqps, 1);
	assert_int_equal(s->qps[0].rq_psn, 5);
	assert_int_equal(s->qps[0].mtu, 256);
	assert_int_equal(s->mrs[0].rkey, 0x99);
	assert_true(s->mrs[0].has_rkey);
	const uint8_t want[] = { 1, 2, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0xab, 0xab, 0, 0, 'h', 'i' };
	assert_memory_equal(s->mrs[0].init, want, sizeof(want));
	assert_int_equal(s->nwrs, 2);
	assert_true(s->wrs[0].is_recv);
	assert_int_equal(s->wrs[0].at_ns, 1500);
	assert_int_equal(s->wrs[1].at_ns, 2000000);
	assert_int_equal(s->wrs[1].op, DROCE_RP_OP_WRITE_IMM);
	assert_int_equal(s->wrs[1].imm, 0x10);
	assert_true(s->wrs[1].flags & DROCE_RP_WR_UNSIGNALED);
	assert_int_equal(s->nskip, 2);
	assert_true(s->allow_ack_coalescing);
	assert_true(s->allow_send_ahead);
	assert_int_equal(s->checks, DROCE_RP_CHECK_CREDITS | DROCE_RP_CHECK_ACKREQ);
	assert_int_equal(s->drain_ns, 5000000);
	assert_true(s->check_wcs);
	assert_int_equal(s->ngaps, 1);
	assert_int_equal(s->gaps[0].a, 2);
	assert_int_equal(s->gaps[0].b, 3);
	assert_int_equal(s->gaps[0].min_ns, 10000);
	droce_rp_scenario_free(s);
}

/* Every error names the file and the line. */
static void expect_error(const char *text, const char *where, const char *what)
{
	struct droce_rp_scenario *s = NULL;
	char err[256] = "";
	assert_int_equal(parse(text, &s, err, sizeof(err)), -EINVAL);
	assert_null(s);
	if (!strstr(err, where) || !strstr(err, what))
		fail_msg("error '%s' lacks '%s' or '%s'", err, where, what);
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_error(HEAD "frobnicate\n", "/d/t.scn:4:", "unknown directive");
	expect_error(HEAD QP "qp q local=0x13 peer=1 peer-ip=10.0.0.2 peer-mac=02:00:00:00:00:02\n",
		     "/d/t.scn:5:", "defined twice");
	expect_error(HEAD "qp q local=0x12 peer=0x34 peer-ip=10.0.0.2 peer-mac=02:00:00:00:00:02 mtu=300\n",
		     "/d/t.scn:4:", "mtu 300");
	expect_error(HEAD "qp q local=0x1000000 peer=1 peer-ip=10.0.0.2 peer-mac=02:00:00:00:00:02\n",
		     ":4:", "larger than");
	expect_error(HEAD QP "recv nope wr=1\n", ":5:", "no qp named 'nope'");
	expect_error(HEAD QP "post q wr=1 op=send mr=zz len=1\n", ":5:", "no mr named 'zz'");
	expect_error(HEAD QP "mr r addr=0 len=4\nfill r 2 hex:010203\n", ":6:", "overrun");
	expect_error(HEAD QP "mr r addr=0 len=4\nfill r 0 hex:0g\n", ":6:", "not a hex byte");
	expect_error(HEAD QP "post q wr=1 op=read\n", ":5:", "missing raddr=");
	expect_error(HEAD QP "post q wr=1 op=send bogus=1\n", ":5:", "unknown option 'bogus'");
	expect_error(HEAD QP "mr r addr=0 len=8 access=rw\n", ":5:", "need lw");
	expect_error(HEAD QP "recv q wr=1 at=3 parsecs\n", ":5:", "unknown option");
	expect_error(HEAD QP "recv q wr=1 at=3fortnights\n", ":5:", "unknown unit");
	expect_error(HEAD QP "expect-wc q send wr=1 status=FINE\n", ":5:", "unknown status");
	expect_error(HEAD QP "mr a addr=0 len=8 rkey=5\nmr b addr=64 len=8 rkey=5\n", ":6:", "already used by mr a");
	expect_error(HEAD QP "expect-gap 3 2 1us\n", ":5:", "A must come before B");
	expect_error(HEAD QP "expect-gap 1 2\n", ":5:", "expect-gap FRAME_A FRAME_B TIME");
	expect_error("ip 10.0.0.1\nmac 02:00:00:00:00:01\n", "/d/t.scn", "no 'capture' line");
	expect_error("capture a\nqp q local=1 peer=2\n", ":2:", "'ip' line must come first");
	expect_error(HEAD QP "lost q sideways 5\n", ":5:", "lost QP req|resp PSN");
	expect_error(HEAD QP "lost nope req 5\n", ":5:", "unknown qp 'nope'");
	expect_error(HEAD QP "lost q req 0x1000000\n", ":5:", "larger than");
	expect_error(HEAD QP "lost q req 5 twice=1\n", ":5:", "unknown option 'twice=1'");
	expect_error(HEAD QP "deliver 0 at=1us\n", ":5:", "numbered from 1");
	expect_error(HEAD QP "deliver 3\n", ":5:", "deliver FRAME at=TIME");
	expect_error(HEAD QP "impair\n", ":5:", "impair SPEC");
	expect_error(HEAD QP "check migreq bits\n", ":5:", "unknown field 'bits'");
	expect_error(HEAD QP "pace responses\n", ":5:", "only 'pace requests'");
	expect_error(HEAD QP "late 0\n", ":5:", "numbered from 1");
	expect_error(HEAD QP "late 3 k=1\n", ":5:", "late FRAME [copy=K]");
	expect_error(HEAD QP "allow everything\n", ":5:", "'allow send-ahead'");
}

/* The lossy-capture directives and the policy check. */
static void test_parse_lossy(void **state)
{
	(void)state;
	struct droce_rp_scenario *s = NULL;
	char err[256] = "";
	assert_int_equal(parse(HEAD QP "lost q req 7 copy=1\nlost q resp 9\ndeliver 4 at=12us\n"
			       "impair drop=0.02,reorder=0.01,seed=3\ncheck migreq\npace requests\nlate 6 copy=1\n",
			       &s, err, sizeof(err)), 0);
	assert_int_equal(s->nlost, 2);
	assert_int_equal(s->lost[0].qp, 0);
	assert_false(s->lost[0].resp);
	assert_int_equal(s->lost[0].psn, 7);
	assert_int_equal(s->lost[0].copy, 1);
	assert_true(s->lost[1].resp);
	assert_int_equal(s->lost[1].copy, 0);
	assert_int_equal(s->ndelivers, 1);
	assert_int_equal(s->delivers[0].frame, 4);
	assert_int_equal(s->delivers[0].at_ns, 12000);
	assert_string_equal(s->impair, "drop=0.02,reorder=0.01,seed=3");
	assert_int_equal(s->checks, DROCE_RP_CHECK_MIGREQ);
	assert_true(s->pace_requests);
	assert_int_equal(s->nlates, 1);
	assert_int_equal(s->lates[0].frame, 6);
	assert_int_equal(s->lates[0].copy, 1);
	droce_rp_scenario_free(s);
}

/* ---------------------------------------------------------- frames -- */

/* Overrides for the next build(): BTH MigReq and the AtomicETH compare field. */
static bool g_migreq;
static uint64_t g_compare;

static size_t build(uint8_t *buf, uint8_t opcode, uint32_t psn, uint32_t msn, uint8_t syn,
		    uint16_t sport, uint8_t ttl)
{
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	const uint8_t a[4] = { 10, 0, 0, 1 }, b[4] = { 10, 0, 0, 2 };
	h.net.ip_version = 4;
	memcpy(h.net.src_ip, a, 4);
	memcpy(h.net.dst_ip, b, 4);
	h.net.ttl = ttl;
	h.net.sport = sport;
	h.net.ip_id = sport;
	h.bth.opcode = opcode;
	h.bth.pkey = 0xFFFF;
	h.bth.dqpn = 0x34;
	h.bth.psn = psn;
	h.ext.aeth.syndrome = syn;
	h.ext.aeth.msn = msn;
	h.ext.reth.va = 0x1000;
	h.ext.reth.rkey = 0x99;
	h.ext.reth.dma_len = 4;
	h.bth.migreq = g_migreq;
	h.ext.atomic.va = 0x2000;
	h.ext.atomic.rkey = 0x99;
	h.ext.atomic.swap_add = 5;
	h.ext.atomic.compare = g_compare;
	h.payload_len = opcode == DROCE_OP_RC_RDMA_WRITE_ONLY ? 4 : 0;
	static const uint8_t pl[4] = { 1, 2, 3, 4 };
	size_t n = droce_build_frame(buf, 256, &h, pl);
	assert_true(n > 0);
	return n;
}

struct fixture {
	uint8_t buf[16][256];
	struct droce_rp_frame f[16];
	struct droce_rp_capture cap;
	struct droce_rp_sent got[16];
	size_t ngot;
	struct droce_rp_scenario *s;
};

static void fx_init(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	char err[256];
	assert_int_equal(parse(HEAD QP, &fx->s, err, sizeof(err)), 0);
	fx->s->ip_version = 4;
	const uint8_t own[4] = { 10, 0, 0, 1 };
	memcpy(fx->s->ip, own, 4);
	fx->cap.f = fx->f;
}

/* Expected frames: the capture's frames from the side (10.0.0.1). */
static void fx_expect(struct fixture *fx, uint8_t op, uint32_t psn, uint32_t msn, uint8_t syn)
{
	size_t i = fx->cap.n++;
	fx->f[i].num = (unsigned)i + 1;
	fx->f[i].data = fx->buf[i];
	fx->f[i].len = (uint32_t)build(fx->buf[i], op, psn, msn, syn, 1000, 64);
}

static void fx_got(struct fixture *fx, uint8_t op, uint32_t psn, uint32_t msn, uint8_t syn,
		   uint16_t sport, uint8_t ttl)
{
	size_t i = fx->ngot++;
	fx->got[i].data = fx->buf[8 + i];
	fx->got[i].len = (uint32_t)build(fx->buf[8 + i], op, psn, msn, syn, sport, ttl);
}

static void test_compare_ignores_and_catches(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK | 0x1F);
	/* Other UDP port, TTL, IP ID and credit count: the same answer. */
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK | 3, 555, 17);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	/* ... unless asked. */
	fx.s->checks = DROCE_RP_CHECK_CREDITS;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	fx.s->checks = DROCE_RP_CHECK_SPORT;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	fx.s->checks = 0;
	/* A different MSN is a difference. */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 2, DROCE_AETH_ACK | 0x1F, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	/* A bad ICRC on droce's frame is a difference. */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK | 0x1F, 1000, 64);
	fx.buf[8][fx.got[0].len - 1] ^= 1;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	/* A missing frame and an extra frame are differences. */
	fx.ngot = 0;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 8, 1, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	/* NAK code and PSN. */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	droce_rp_scenario_free(fx.s);
}

/*
 * The requester's policy: a NIC that sets MigReq on every
 * packet (HiRoCE, ConnectX), AckReq where it likes and real ACK credits
 * answers the same as droce; only "check migreq/ackreq/credits" (what
 * --strict turns on) compares them.
 */
static void test_compare_policy(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	g_migreq = true;
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK | 0x0A);
	g_migreq = false;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK | 0x1F, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	fx.s->checks = DROCE_RP_CHECK_MIGREQ;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	fx.s->checks = DROCE_RP_CHECK_STRICT;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	/* droce with MigReq=1 (as the transport will send) matches too. */
	fx.s->checks = 0;
	fx.ngot = 0;
	g_migreq = true;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 7, 1, DROCE_AETH_ACK | 0x1F, 1000, 64);
	g_migreq = false;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	droce_rp_scenario_free(fx.s);
}

/*
 * A FETCH_ADD's compare field carries no meaning (IBTA 9.4.5: only
 * COMPARE_SWAP uses it) and rxe fills it with whatever was in the work
 * request: it is not compared. A COMPARE_SWAP's is.
 */
static void test_compare_fetch_add_compare_field(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	g_compare = 0xdeadbeefcafef00dull;
	fx_expect(&fx, DROCE_OP_RC_FETCH_ADD, 3, 0, 0);
	g_compare = 0;
	fx_got(&fx, DROCE_OP_RC_FETCH_ADD, 3, 0, 0, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	fx.cap.n = 0;
	fx.ngot = 0;
	g_compare = 0xdeadbeefcafef00dull;
	fx_expect(&fx, DROCE_OP_RC_COMPARE_SWAP, 3, 0, 0);
	g_compare = 0;
	fx_got(&fx, DROCE_OP_RC_COMPARE_SWAP, 3, 0, 0, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	droce_rp_scenario_free(fx.s);
}

/*
 * "lost QP req PSN copy=K": droce's K-th frame with that PSN to the QP's
 * peer is the one the capture lacks, and is not compared; the rest are.
 */
static void test_compare_lost(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	/* The capture: PSN 1 missing (lost before the capture point), then go-back-N from 1. */
	fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 2, 0, 0);
	fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 1, 0, 0);
	fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 2, 0, 0);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 1, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 2, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 1, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 2, 0, 0, 1000, 64);
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	struct droce_rp_lost l = { .qp = 0, .resp = false, .psn = 1, .copy = 0 };
	fx.s->lost = &l;
	fx.s->nlost = 1;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	/* The wrong copy excused: the first PSN 1 is then compared with PSN 2. */
	l.copy = 1;
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	/* A loss droce has no frame for is itself a difference. */
	l.copy = 0;
	l.psn = 9;
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	/* A response loss never excuses a request. */
	l.psn = 1;
	l.resp = true;
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	fx.s->lost = NULL;
	fx.s->nlost = 0;
	droce_rp_scenario_free(fx.s);
}

/*
 * "allow send-ahead": how far a requester runs before it goes back after a
 * NAK is its pace. The capture: 1 2, NAK, 2 3 4; droce ran on to 4 first.
 */
/* "late N copy=K": the side's frame N came late through the network, compared out of place. */
static void test_compare_late(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	/* the capture: 1, 3, 2 (2 overtaken by 3) */
	fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 1, 0, 0);
	fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 3, 0, 0);
	fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 2, 0, 0);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 1, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 2, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 3, 0, 0, 1000, 64);
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	struct droce_rp_late lt = { .frame = 3, .copy = 0 };
	fx.s->lates = &lt;
	fx.s->nlates = 1;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	/* droce never sending it is still a difference */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 1, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 3, 0, 0, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	fx.s->lates = NULL;
	fx.s->nlates = 0;
	droce_rp_scenario_free(fx.s);
}

static void test_compare_send_ahead(void **state)
{
	(void)state;
	static const uint32_t cap[] = { 1, 2, 2, 3, 4 }, ahead[] = { 1, 2, 3, 4, 2, 3, 4 },
			      wrong[] = { 1, 2, 3, 9, 2, 3, 4 }, short_[] = { 1, 2, 3, 4, 2, 4 };
	struct { const uint32_t *psn; size_t n; unsigned plain, allowed; } c[] = {
		{ ahead, 7, 1, 0 },  /* ran ahead: a difference only without the allowance */
		{ wrong, 7, 1, 1 },  /* a PSN the side never sends: always a difference */
		{ short_, 6, 1, 1 }, /* 3 not resent: always a difference */
		{ cap, 5, 0, 0 },
	};
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct fixture fx;
		fx_init(&fx);
		for (size_t i = 0; i < 5; i++)
			fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, cap[i], 0, 0);
		for (size_t i = 0; i < c[k].n; i++)
			fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, c[k].psn[i], 0, 0, 1000, 64);
		unsigned plain = droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL);
		fx.s->allow_send_ahead = true;
		unsigned allowed = droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL);
		if ((plain > 0) != (c[k].plain > 0) || (allowed > 0) != (c[k].allowed > 0))
			fail_msg("case %zu: %u differences plain, %u with send-ahead", k, plain, allowed);
		droce_rp_scenario_free(fx.s);
	}
	/* and the other way: the side ran further than droce */
	struct fixture fx;
	fx_init(&fx);
	static const uint32_t far[] = { 1, 2, 3, 4, 2, 3, 4 }, slow[] = { 1, 2, 2, 3, 4 };
	for (size_t i = 0; i < 7; i++)
		fx_expect(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, far[i], 0, 0);
	for (size_t i = 0; i < 5; i++)
		fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, slow[i], 0, 0, 1000, 64);
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	fx.s->allow_send_ahead = true;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	droce_rp_scenario_free(fx.s);
}

/* The comparison of a replay in "compare by-psn" mode and without, on a fixture of frames. */
static void by_psn_case(const uint8_t *ops, const uint32_t *psns, const uint32_t *msns,
			const uint8_t *syns, size_t ne, const uint8_t *gops, const uint32_t *gpsns,
			const uint32_t *gmsns, const uint8_t *gsyns, size_t ng, unsigned *plain,
			unsigned *by_psn)
{
	struct fixture fx;
	fx_init(&fx);
	for (size_t i = 0; i < ne; i++)
		fx_expect(&fx, ops[i], psns[i], msns ? msns[i] : 0, syns ? syns[i] : 0);
	for (size_t i = 0; i < ng; i++)
		fx_got(&fx, gops[i], gpsns[i], gmsns ? gmsns[i] : 0, gsyns ? gsyns[i] : 0, 1000, 64);
	*plain = droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL);
	fx.s->by_psn = true;
	*by_psn = droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, getenv("RP_SHOW") ? stderr : NULL);
	droce_rp_scenario_free(fx.s);
}

/*
 * "compare by-psn" (a lossy link's capture): the side resent PSN 2, droce
 * resends differently. Passes; what still fails: a new PSN out of
 * sequence, a PSN never sent, one past the side's last. Responses: the
 * same end (last PSN acknowledged, its MSN) passes however many ACKs and
 * NAKs came before; another end, another MSN or a missing error NAK fail.
 */
static void test_compare_by_psn(void **state)
{
	(void)state;
	const uint8_t W = DROCE_OP_RC_RDMA_WRITE_ONLY, A = DROCE_OP_RC_ACKNOWLEDGE;
	const uint8_t w[8] = { W, W, W, W, W, W, W, W };
	static const uint32_t cap[] = { 1, 2, 2, 3 };
	struct { const uint32_t *psn; size_t n; bool ok; } rq[] = {
		{ (const uint32_t[]){ 1, 2, 3, 2, 3 }, 5, true },  /* went back later, further */
		{ (const uint32_t[]){ 1, 2, 3 }, 3, true },        /* no resend at all */
		{ (const uint32_t[]){ 1, 3, 2 }, 3, false },       /* 3 before 2: out of sequence */
		{ (const uint32_t[]){ 1, 2 }, 2, false },          /* 3 never sent */
		{ (const uint32_t[]){ 1, 2, 3, 4 }, 4, false },    /* 4: past the side's last */
	};
	for (size_t k = 0; k < sizeof(rq) / sizeof(rq[0]); k++) {
		unsigned plain, bp;
		by_psn_case(w, cap, NULL, NULL, 4, w, rq[k].psn, NULL, NULL, rq[k].n, &plain, &bp);
		if ((bp == 0) != rq[k].ok)
			fail_msg("requests case %zu: %u differences by PSN", k, bp);
		if (k == 0 && plain == 0)
			fail_msg("requests case 0 should differ in order without by-psn");
	}
	const uint8_t ack = DROCE_AETH_ACK, seq = DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR,
		      inv = DROCE_AETH_NAK | DROCE_NAK_INVALID_REQ;
	const uint8_t a[4] = { A, A, A, A };
	static const uint32_t ep[] = { 1, 2, 3 }, em[] = { 1, 1, 2 };
	const uint8_t es[] = { ack, seq, ack };
	struct { uint32_t psn, msn; uint8_t syn; bool ok; } rs[] = {
		{ 3, 2, DROCE_AETH_ACK, true },   /* one ACK for all: the same end */
		{ 2, 1, DROCE_AETH_ACK, false },  /* ends before the side's end */
		{ 3, 3, DROCE_AETH_ACK, false },  /* the same PSN with another MSN */
	};
	for (size_t k = 0; k < sizeof(rs) / sizeof(rs[0]); k++) {
		unsigned plain, bp;
		by_psn_case(a, ep, em, es, 3, a, &rs[k].psn, &rs[k].msn, &rs[k].syn, 1, &plain, &bp);
		if ((bp == 0) != rs[k].ok)
			fail_msg("responses case %zu: %u differences by PSN", k, bp);
	}
	/* an error NAK of the side's droce does not send */
	static const uint32_t np[] = { 1, 2 }, nm[] = { 1, 1 };
	const uint8_t ns[] = { ack, inv };
	unsigned plain, bp;
	by_psn_case(a, np, nm, ns, 2, a, np, nm, (const uint8_t[]){ ack, ack }, 2, &plain, &bp);
	assert_true(bp > 0);
	by_psn_case(a, np, nm, ns, 2, a, np, nm, ns, 2, &plain, &bp);
	assert_int_equal(bp, 0);
}

static void test_compare_coalescing(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 2, 2, DROCE_AETH_ACK);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK, 1000, 64);
	/* Not allowed: one ACK differs, two are missing. */
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 3);
	fx.s->allow_ack_coalescing = true;
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	/* The last ACK of the run is still compared. */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 2, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	/* An extra ACK droce sends for a PSN the capture ACKs must agree with it. */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 7, DROCE_AETH_ACK, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1);
	/* A NAK is never coalesced away. */
	fx.ngot = 0;
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 2, 1, DROCE_AETH_NAK, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 2);
	/* Another response between ACKs ends the run: the ACK before it counts. */
	fx.ngot = 0;
	fx.cap.n = 0;
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK);
	fx_expect(&fx, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 2, 2, DROCE_AETH_ACK);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK);
	fx_got(&fx, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 2, 2, DROCE_AETH_ACK, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK, 1000, 64);
	assert_true(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL) > 0);
	/* The side's own requests do not: they are the other direction. */
	fx.ngot = 0;
	fx.cap.n = 0;
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_RDMA_WRITE_ONLY, 9, 0, 0, 1000, 64);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 3, 3, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 1); /* the extra WRITE */
	droce_rp_scenario_free(fx.s);
}

/* Order matters within a QP, not across QPs (IBTA 9.5 orders per QP). */
static void set_dqpn(uint8_t *f, uint32_t len, uint32_t dqpn)
{
	struct droce_pkt p;
	assert_int_equal(droce_parse(f, len, &p, 0), DROCE_PARSE_OK);
	droce_put_be24(f + p.bth_off + 5, dqpn);
	assert_int_equal(droce_rp_fix_icrc(f, len), 0);
}

static void test_compare_per_qp_order(void **state)
{
	(void)state;
	struct fixture fx;
	fx_init(&fx);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK);
	fx_expect(&fx, DROCE_OP_RC_ACKNOWLEDGE, 5, 1, DROCE_AETH_ACK);
	set_dqpn(fx.buf[1], fx.f[1].len, 0x35);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 5, 1, DROCE_AETH_ACK, 1000, 64);
	set_dqpn(fx.buf[8], fx.got[0].len, 0x35);
	fx_got(&fx, DROCE_OP_RC_ACKNOWLEDGE, 1, 1, DROCE_AETH_ACK, 1000, 64);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 0);
	/* the same two frames on one QP in the other order: two differences */
	set_dqpn(fx.buf[1], fx.f[1].len, 0x34);
	set_dqpn(fx.buf[8], fx.got[0].len, 0x34);
	assert_int_equal(droce_rp_compare(fx.s, &fx.cap, fx.got, fx.ngot, NULL), 2);
	droce_rp_scenario_free(fx.s);
}

static void test_rewrite(void **state)
{
	(void)state;
	struct droce_rp_scenario *s;
	char err[256];
	assert_int_equal(parse(HEAD QP "mr r addr=0x1000 len=64 rkey=0x99\n", &s, err, sizeof(err)), 0);
	struct droce_rp_map map = { .qpn = { 0x777 }, .rkey = { 0xabcdef }, .addr = { 0x55550000 } };
	uint8_t f[256];
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	h.net.ip_version = 4;
	h.bth.opcode = DROCE_OP_RC_RDMA_WRITE_ONLY;
	h.bth.dqpn = 0x12;
	h.ext.reth.va = 0x1010;
	h.ext.reth.rkey = 0x99;
	h.ext.reth.dma_len = 4;
	h.payload_len = 4;
	size_t n = droce_build_frame(f, sizeof(f), &h, "abcd");
	assert_int_equal(droce_rp_rewrite(f, n, s, &map), 2);
	struct droce_pkt p;
	assert_int_equal(droce_parse(f, n, &p, 0), DROCE_PARSE_OK); /* ICRC recomputed */
	assert_int_equal(p.h.bth.dqpn, 0x777);
	assert_int_equal(p.h.ext.reth.rkey, 0xabcdef);
	assert_int_equal(p.h.ext.reth.va, 0x55550010);
	/* A UDP checksum the sender filled in (tcpdump on a bridge) is not
	 * left stale: over IPv4 it becomes 0, "none" (RFC 768). */
	n = droce_build_frame(f, sizeof(f), &h, "abcd");
	droce_put_be16(f + 14 + 20 + 6, 0x1234);
	assert_int_equal(droce_rp_rewrite(f, n, s, &map), 2);
	assert_int_equal(droce_get_be16(f + 14 + 20 + 6), 0);
	assert_int_equal(droce_parse(f, n, &p, 0), DROCE_PARSE_OK);
	/* A frame captured with a bad ICRC keeps a bad one. */
	n = droce_build_frame(f, sizeof(f), &h, "abcd");
	f[n - 1] ^= 0xFF;
	assert_int_equal(droce_rp_rewrite(f, n, s, &map), 2);
	assert_int_equal(droce_parse(f, n, &p, 0), DROCE_PARSE_BAD_ICRC);
	/* An unknown rkey stays as it is. */
	h.ext.reth.rkey = 0x98;
	n = droce_build_frame(f, sizeof(f), &h, "abcd");
	assert_int_equal(droce_rp_rewrite(f, n, s, &map), 1);
	assert_int_equal(droce_parse(f, n, &p, 0), DROCE_PARSE_OK);
	assert_int_equal(p.h.ext.reth.rkey, 0x98);
	assert_int_equal(p.h.ext.reth.va, 0x1010);
	droce_rp_scenario_free(s);
}

/* Derive from a generated fixture and parse the result back. */
static char *derive_text(const char *name, const char *side, int *rc, char *err, size_t errlen)
{
	const char *dir = getenv("DROCE_PCAP_DIR");
	assert_non_null(dir);
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct droce_rp_capture cap;
	assert_int_equal(droce_rp_capture_load(path, &cap, err, errlen), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	assert_non_null(m);
	*rc = droce_rp_derive(&cap, path, side, m, err, errlen);
	fclose(m);
	droce_rp_capture_free(&cap);
	return text;
}

static void test_derive_responder(void **state)
{
	(void)state;
	char err[512];
	int rc;
	char *text = derive_text("resp-read.pcap", "10.0.0.1", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	struct droce_rp_scenario *s;
	if (droce_rp_scenario_parse(text, "derived", &s, err, sizeof(err)))
		fail_msg("derived scenario does not parse: %s\n%s", err, text);
	assert_int_equal(s->nqps, 1);
	assert_int_equal(s->qps[0].local_qpn, 0x12);
	assert_int_equal(s->qps[0].peer_qpn, 0x34);
	assert_int_equal(s->qps[0].rq_psn, 10);
	assert_int_equal(s->qps[0].mtu, 256);
	assert_int_equal(s->nmrs, 1);
	assert_int_equal(s->mrs[0].rkey, 0x1234);
	assert_int_equal(s->mrs[0].addr, 0x7F0000001000);
	assert_true(s->mrs[0].access & DROCE_RP_ACC_RR);
	assert_false(s->mrs[0].access & DROCE_RP_ACC_RW);
	/* READ response payloads became the region's contents (generator: i*7+9). */
	assert_int_equal(s->mrs[0].init[0], 9);
	assert_int_equal(s->mrs[0].init[599], (uint8_t)(599 * 7 + 9));
	assert_int_equal(s->mrs[0].init[700], (uint8_t)(700 * 7 + 9));
	droce_rp_scenario_free(s);
	free(text);
}

static void test_derive_requester(void **state)
{
	(void)state;
	char err[512];
	int rc;
	char *text = derive_text("req-atomic.pcap", "10.0.0.1", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	struct droce_rp_scenario *s;
	if (droce_rp_scenario_parse(text, "derived", &s, err, sizeof(err)))
		fail_msg("derived scenario does not parse: %s\n%s", err, text);
	assert_int_equal(s->nwrs, 2);
	assert_int_equal(s->wrs[0].op, DROCE_RP_OP_CAS);
	assert_int_equal(s->wrs[0].compare, 1);
	assert_int_equal(s->wrs[0].swap_add, 2);
	assert_int_equal(s->wrs[1].op, DROCE_RP_OP_FAA);
	assert_int_equal(s->wrs[1].swap_add, 7);
	assert_int_equal(s->nwcs, 2);
	/* the peer's original values are the expected local memory */
	assert_true(s->nmems >= 2);
	droce_rp_scenario_free(s);
	free(text);
}

static void test_derive_refuses(void **state)
{
	(void)state;
	char err[512];
	int rc;
	free(derive_text("resp-read.pcap", "10.9.9.9", &rc, err, sizeof(err)));
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, "no RoCE traffic for 10.9.9.9"));
	free(derive_text("resp-read.pcap", "not-an-ip", &rc, err, sizeof(err)));
	assert_int_equal(rc, -EINVAL);
	/* The peer sends requests but its answers... the peer side never
	 * answers itself here: deriving the peer's side is refused unless it
	 * sends RC frames (it does: requests), so this one works. */
	free(derive_text("resp-read.pcap", "10.0.0.2", &rc, err, sizeof(err)));
	assert_int_equal(rc, 0);
}

/* Refusals on captures built in memory: UC, a silent side, RoCEv1. */
static int derive_one(uint8_t opcode, bool v1, bool from_side, char *err, size_t errlen)
{
	uint8_t buf[256];
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	h.net.ip_version = v1 ? 6 : 4;
	h.net.rocev1 = v1;
	const uint8_t a[16] = { 10, 0, 0, 1 }, b[16] = { 10, 0, 0, 2 };
	memcpy(h.net.src_ip, from_side ? a : b, 16);
	memcpy(h.net.dst_ip, from_side ? b : a, 16);
	if (v1) {
		memset(h.net.src_ip, 0, 16);
		memset(h.net.dst_ip, 0, 16);
		h.net.src_ip[15] = 1;
		h.net.dst_ip[15] = 2;
	}
	h.bth.opcode = opcode;
	h.bth.pkey = 0xFFFF;
	h.bth.dqpn = 0x34;
	h.payload_len = 4;
	struct droce_rp_frame f = { .num = 1, .t_ns = 0, .data = buf };
	f.len = f.orig_len = (uint32_t)droce_build_frame(buf, sizeof(buf), &h, "abcd");
	assert_true(f.len > 0);
	struct droce_rp_capture cap = { .f = &f, .n = 1, .linktype = 1 };
	FILE *null = fopen("/dev/null", "w");
	assert_non_null(null);
	int r = droce_rp_derive(&cap, "mem", v1 ? "::1" : "10.0.0.1", null, err, errlen);
	fclose(null);
	return r;
}

static void test_derive_refuses_unsupported(void **state)
{
	(void)state;
	char err[512];
	assert_int_equal(derive_one(DROCE_OP_UC_SEND_ONLY, false, true, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unsupported opcode UC_SEND_ONLY"));
	assert_int_equal(derive_one(DROCE_OP_RC_SEND_ONLY, false, false, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sends no RC frames"));
	assert_int_equal(derive_one(DROCE_OP_RC_SEND_ONLY, true, true, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "RoCEv1"));
	assert_int_equal(derive_one(DROCE_OP_RC_SEND_ONLY, false, true, err, sizeof(err)), 0);
}

/* Memory changed off the wire is refused; a WRITE passing a READ is not. */
struct mframe {
	uint8_t op;
	bool from_side;
	uint32_t psn;
	const char *payload;
};

/* AETH syndromes of the next derive_text_of()'s frames (all 0, ACK, by default). */
static uint8_t g_mf_syn[16];
/* Their AETH MSNs, when g_mf_msns (else 1). */
static uint32_t g_mf_msn[16];
static bool g_mf_msns;
/* Their capture times in ns, when g_mf_timed (else frame i at i us). */
static uint64_t g_mf_t[16];
static bool g_mf_timed;

/* Derive from frames @p mf; the scenario goes to @p text (NULL: discarded). */
static int derive_text_of(const struct mframe *mf, unsigned n, char *err, size_t errlen, char *text,
			  size_t textlen)
{
	static uint8_t buf[16][256];
	struct droce_rp_frame f[16];
	assert_true(n <= 16);
	const uint8_t side[16] = { 10, 0, 0, 1 }, peer[16] = { 10, 0, 0, 2 };
	for (unsigned i = 0; i < n; i++) {
		struct droce_hdrs h;
		memset(&h, 0, sizeof(h));
		h.net.ip_version = 4;
		memcpy(h.net.src_ip, mf[i].from_side ? side : peer, 16);
		memcpy(h.net.dst_ip, mf[i].from_side ? peer : side, 16);
		h.bth.opcode = mf[i].op;
		h.bth.pkey = 0xFFFF;
		h.bth.dqpn = mf[i].from_side ? 0x34 : 0x12;
		h.bth.psn = mf[i].psn;
		h.ext.reth.va = 0x1000;
		h.ext.reth.rkey = 0x99;
		h.ext.reth.dma_len = 4;
		h.ext.aeth.msn = g_mf_msns ? g_mf_msn[i] : 1;
		h.ext.aeth.syndrome = g_mf_syn[i];
		h.payload_len = mf[i].payload ? 4 : 0;
		f[i] = (struct droce_rp_frame){ .num = i + 1, .t_ns = g_mf_timed ? g_mf_t[i] : i * 1000, .data = buf[i] };
		f[i].len = f[i].orig_len = (uint32_t)droce_build_frame(buf[i], 256, &h, mf[i].payload);
		assert_true(f[i].len > 0);
	}
	struct droce_rp_capture cap = { .f = f, .n = n, .linktype = 1 };
	FILE *o = text ? fmemopen(text, textlen, "w") : fopen("/dev/null", "w");
	assert_non_null(o);
	int r = droce_rp_derive(&cap, "mem", "10.0.0.1", o, err, errlen);
	fclose(o);
	return r;
}

static int derive_frames(const struct mframe *mf, unsigned n, char *err, size_t errlen)
{
	return derive_text_of(mf, n, err, errlen, NULL, 0);
}

/*
 * The side's requests with a gap (PSN 1 lost before the capture point),
 * the peer's NAK for it, the go-back-N resend: the lost copy is named, the
 * message is built from the resend, nothing is refused. A resend with
 * other bytes than the first copy is refused.
 */
static void test_derive_lossy(void **state)
{
	(void)state;
	char err[512] = "", text[8192];
	const struct mframe gap[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 0, "abcd" },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 2, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 0, NULL },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 1, "efgh" },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 2, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 2, NULL },
	};
	assert_int_equal(derive_text_of(gap, 6, err, sizeof(err), text, sizeof(text)), 0);
	if (getenv("RP_SHOW"))
		fputs(text, stderr);
	assert_non_null(strstr(text, "lost qp0 req 1 copy=0"));
	assert_non_null(strstr(text, "fill src 0 hex:61626364"));
	assert_non_null(strstr(text, "fill src 64 hex:65666768")); /* from the resend */
	/* posted no later than the message behind it, whose packet went out first */
	assert_non_null(strstr(text, "post qp0 wr=2 op=write mr=src off=64 len=4 raddr=0x1000 rkey=0x99 at=1000ns"));
	assert_non_null(strstr(text, "expect-wc qp0 send wr=3"));
	const struct mframe other[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 0, "abcd" },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 0, "abXd" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 0, NULL },
	};
	assert_int_equal(derive_frames(other, 3, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "resent with other contents"));
}

/*
 * The side's MSNs must agree with the messages derive modelled (9.7.5.1.1):
 * an ACK claiming one message more than the capture shows is refused with
 * the frame named. An RNR NAK overtaken on the wire (its MSN below one the
 * side already sent) refuses nothing: both SENDs keep their receives.
 */
static void test_derive_msn(void **state)
{
	(void)state;
	char err[512] = "", text[8192];
	const struct mframe two[] = {
		{ DROCE_OP_RC_SEND_ONLY, false, 0, "abcd" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 0, NULL },
		{ DROCE_OP_RC_SEND_ONLY, false, 1, "efgh" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 1, NULL },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 1, NULL },
	};
	g_mf_msns = true;
	g_mf_msn[1] = 1;
	g_mf_msn[3] = 2;
	g_mf_msn[4] = 1;
	g_mf_syn[4] = 0x20 | 12; /* RNR NAK, sent before the ACK, captured after it */
	int rc = derive_text_of(two, 5, err, sizeof(err), text, sizeof(text));
	if (getenv("RP_SHOW"))
		fputs(text, stderr);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(text, "recv qp0 wr=2 mr=rq"));
	assert_non_null(strstr(text, "expect-wc qp0 recv wr=2 status=SUCCESS"));
	assert_non_null(strstr(text, "min-rnr-timer=12"));
	g_mf_msn[3] = 3; /* one message more than the capture shows */
	g_mf_syn[4] = 0;
	g_mf_msn[4] = 3;
	rc = derive_frames(two, 5, err, sizeof(err));
	g_mf_msns = false;
	memset(g_mf_msn, 0, sizeof(g_mf_msn));
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, "frame 4: the side's ACK of PSN 1 carries MSN 3"));
}

static void test_derive_off_wire(void **state)
{
	(void)state;
	char err[512];
	const struct mframe changed[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 0, "abcd" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 0, NULL },
		{ DROCE_OP_RC_RDMA_READ_REQUEST, false, 1, NULL },
		{ DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, true, 1, "abXd" },
	};
	assert_int_equal(derive_frames(changed, 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "changed off the wire"));
	const struct mframe same[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 0, "abcd" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 0, NULL },
		{ DROCE_OP_RC_RDMA_READ_REQUEST, false, 1, NULL },
		{ DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, true, 1, "abcd" },
	};
	assert_int_equal(derive_frames(same, 4, err, sizeof(err)), 0);
	/* READ, then a WRITE to the same bytes before the READ's response: the
	 * response may show either value (no fence), so old data is fine. */
	const struct mframe passed[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 0, "abcd" },
		{ DROCE_OP_RC_RDMA_READ_REQUEST, false, 1, NULL },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 2, "wxyz" },
		{ DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, true, 1, "abcd" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 2, NULL },
	};
	assert_int_equal(derive_frames(passed, 5, err, sizeof(err)), 0);
}

/*
 * The first packet of a conversation lost before the capture point: the
 * first request seen is its successor, the lost one shows up only in the
 * go-back-N resend after the responder's sequence NAK. The sequence starts
 * at the resent PSN, on both sides: as responder droce expects it first
 * (before: rq-psn 2, and droce NAKed the resend of 1 as a duplicate), as
 * requester droce sends it first and builds it from the resend.
 */
static void test_derive_starts_early(void **state)
{
	(void)state;
	char err[512] = "", text[8192];
	const uint8_t nak = DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR;
	const struct mframe resp[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 2, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 1, NULL },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 1, "efgh" },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 2, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 2, NULL },
	};
	memset(g_mf_syn, 0, sizeof(g_mf_syn));
	g_mf_syn[1] = nak;
	/* the side's MSNs: nothing completed at the NAK, both WRITEs at the ACK */
	g_mf_msns = true;
	memset(g_mf_msn, 0, sizeof(g_mf_msn));
	g_mf_msn[4] = 2;
	assert_int_equal(derive_text_of(resp, 5, err, sizeof(err), text, sizeof(text)), 0);
	if (getenv("RP_SHOW"))
		fputs(text, stderr);
	assert_non_null(strstr(text, " rq-psn=1 "));
	/* the side's NAK names the PSN it expected, though no copy was captured */
	const struct mframe resp_nak[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, false, 3, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 1, NULL },
		{ DROCE_OP_RC_ACKNOWLEDGE, true, 3, NULL },
	};
	memset(g_mf_msn, 0, sizeof(g_mf_msn));
	assert_int_equal(derive_text_of(resp_nak, 3, err, sizeof(err), text, sizeof(text)), 0);
	g_mf_msns = false;
	assert_non_null(strstr(text, " rq-psn=1 "));
	const struct mframe req[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 6, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 5, NULL },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 5, "efgh" },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 6, "ijkl" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 6, NULL },
	};
	g_mf_syn[1] = nak;
	assert_int_equal(derive_text_of(req, 5, err, sizeof(err), text, sizeof(text)), 0);
	if (getenv("RP_SHOW"))
		fputs(text, stderr);
	assert_non_null(strstr(text, " sq-psn=5 "));
	assert_non_null(strstr(text, "fill src 0 hex:65666768"));
	assert_non_null(strstr(text, "fill src 64 hex:696a6b6c"));
	assert_non_null(strstr(text, "expect-wc qp0 send wr=2"));
	memset(g_mf_syn, 0, sizeof(g_mf_syn));
}

/*
 * A lossy capture compared by PSN: the derived ACK timeout lets droce live
 * through the whole conversation (seven expiries longer than it), not only
 * its longest silence, since answers fed as captured restart no timer of
 * droce's when droce sent later than the side (test first: timeout=7, the
 * 3 ms silence, before; 9 for the 9 ms conversation after).
 */
static void test_derive_by_psn_timeout(void **state)
{
	(void)state;
	char err[512] = "", text[8192];
	const struct mframe f[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 0, "abcd" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 0, NULL },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 1, "efgh" },
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 1, NULL },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 2, "ijkl" },
		{ DROCE_OP_RC_RDMA_WRITE_ONLY, true, 2, "ijkl" }, /* its timer, nothing prompted it */
		{ DROCE_OP_RC_ACKNOWLEDGE, false, 2, NULL },
	};
	static const uint64_t t[] = { 0, 3000000, 3001000, 6000000, 6001000, 6011000, 9000000 };
	memcpy(g_mf_t, t, sizeof(t));
	g_mf_timed = true;
	assert_int_equal(derive_text_of(f, 7, err, sizeof(err), text, sizeof(text)), 0);
	g_mf_timed = false;
	if (getenv("RP_SHOW"))
		fputs(text, stderr);
	assert_non_null(strstr(text, "compare by-psn"));
	assert_non_null(strstr(text, " timeout=9\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_lossy),
		cmocka_unit_test(test_compare_ignores_and_catches),
		cmocka_unit_test(test_compare_policy),
		cmocka_unit_test(test_compare_fetch_add_compare_field),
		cmocka_unit_test(test_compare_lost),
		cmocka_unit_test(test_compare_late),
		cmocka_unit_test(test_compare_send_ahead),
		cmocka_unit_test(test_compare_by_psn),
		cmocka_unit_test(test_compare_coalescing),
		cmocka_unit_test(test_compare_per_qp_order),
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_derive_responder),
		cmocka_unit_test(test_derive_requester),
		cmocka_unit_test(test_derive_refuses),
		cmocka_unit_test(test_derive_refuses_unsupported),
		cmocka_unit_test(test_derive_off_wire),
		cmocka_unit_test(test_derive_lossy),
		cmocka_unit_test(test_derive_msn),
		cmocka_unit_test(test_derive_starts_early),
		cmocka_unit_test(test_derive_by_psn_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
