/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the impairment shim (stack/net/diag/impair.c) and the in-memory link
 * pair (stack/net/link/memlink.c): spec parsing, rule matching, seeded
 * probabilities, hold/release order, FIFO bounds, copies, taps and counters.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/diag/impair.h"
#include "net/link/memlink.h"
#include "wire/build.h"
#include "wire/parse.h"

/* ------------------------------------------------------------ helpers -- */

/* Build a RoCEv2 IPv4 frame with the given opcode, PSN and payload size. */
static size_t mkframe_ip(uint8_t *buf, size_t cap, uint8_t opcode, uint32_t psn, uint32_t plen,
			 uint8_t ipv, uint8_t ecn)
{
	struct droce_hdrs h;
	uint8_t payload[2048];

	memset(&h, 0, sizeof(h));
	memset(payload, 0xA5, sizeof(payload));
	memcpy(h.net.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(h.net.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	h.net.ip_version = ipv;
	memcpy(h.net.src_ip, "\x0a\x00\x00\x01", 4);
	memcpy(h.net.dst_ip, "\x0a\x00\x00\x02", 4);
	h.net.ttl = 64;
	h.net.dscp = 26;
	h.net.ecn = ecn;
	h.net.sport = 0xC000;
	h.net.dport = 4791;
	h.bth.opcode = opcode;
	h.bth.pkey = 0xFFFF;
	h.bth.dqpn = 0x12;
	h.bth.psn = psn;
	h.payload_len = plen;
	return droce_build_frame(buf, cap, &h, plen ? payload : NULL);
}

static size_t mkframe(uint8_t *buf, size_t cap, uint8_t opcode, uint32_t psn, uint32_t plen)
{
	return mkframe_ip(buf, cap, opcode, psn, plen, 4, 0);
}

static struct droce_impair *mk(const char *spec)
{
	struct droce_impair_spec s;
	char err[128];
	assert_int_equal(droce_impair_parse(spec, &s, err, sizeof(err)), 0);
	struct droce_impair *imp = droce_impair_create(&s);
	assert_non_null(imp);
	return imp;
}

/* -------------------------------------------------------------- parse -- */

static void test_parse_full(void **state)
{
	struct droce_impair_spec s;
	char err[128];

	assert_int_equal(droce_impair_parse("drop=0.01,reorder=0.02,dup=0.001,corrupt=1,seed=42",
					    &s, err, sizeof(err)), 0);
	assert_true(s.drop == 0.01);
	assert_true(s.reorder == 0.02);
	assert_true(s.dup == 0.001);
	assert_true(s.corrupt == 1.0);
	assert_true(s.seed == 42);
	assert_int_equal(s.reorder_depth, DROCE_IMPAIR_DEFAULT_REORDER_DEPTH);

	assert_int_equal(droce_impair_parse("seed=0x10,reorder_depth=5", &s, err, sizeof(err)), 0);
	assert_true(s.seed == 16);
	assert_int_equal(s.reorder_depth, 5);
	assert_int_equal(droce_impair_parse("ecn=0.25", &s, err, sizeof(err)), 0);
	assert_true(s.ecn == 0.25);
	assert_true(s.drop == 0.0);

	assert_int_equal(droce_impair_parse("", &s, err, sizeof(err)), 0);
	assert_true(s.drop == 0.0 && s.dup == 0.0 && s.seed == 0);
	assert_int_equal(droce_impair_parse(NULL, &s, NULL, 0), 0);
}

static void test_parse_errors(void **state)
{
	static const struct { const char *spec, *needle; } bad[] = {
		{"drop=1.5", "probability"},
		{"drop=-0.1", "probability"},
		{"drop=", "bad value"},
		{"drop=0.1x", "probability"},
		{"drop=nan", "probability"},
		{"loss=0.1", "unknown key 'loss'"},
		{"drop", "not key=value"},
		{"drop=0.1,,dup=0.1", "empty item"},
		{"drop=0.1,", "trailing"},
		{"drop=0.1,drop=0.2", "twice"},
		{"seed=-1", "unsigned integer"},
		{"seed=12a", "unsigned integer"},
		{"seed=99999999999999999999999", "unsigned integer"},
		{"reorder_depth=0", "out of range"},
		{"reorder_depth=65", "out of range"},
		{"ecn=2", "probability"},
	};
	struct droce_impair_spec s = {.drop = 0.5};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[160] = "";
		int rc = droce_impair_parse(bad[i].spec, &s, err, sizeof(err));
		if (rc != -EINVAL || !strstr(err, bad[i].needle))
			fail_msg("spec '%s': rc %d, reason '%s' (wanted '%s')", bad[i].spec, rc,
				 err, bad[i].needle);
	}
	/* out untouched on failure */
	assert_true(s.drop == 0.5);
	assert_int_equal(droce_impair_parse("x", NULL, NULL, 0), -EINVAL);
}

static void test_create_rejects_bad_spec(void **state)
{
	struct droce_impair_spec s = {.drop = 2.0, .reorder_depth = 1};
	errno = 0;
	assert_null(droce_impair_create(&s));
	assert_int_equal(errno, EINVAL);
	s.drop = 0;
	s.reorder_depth = 0;
	assert_null(droce_impair_create(&s));
	struct droce_impair *imp = droce_impair_create(NULL);
	assert_non_null(imp);
	assert_int_equal(droce_impair_set_spec(imp, &s), -EINVAL);
	droce_impair_destroy(imp);
	droce_impair_destroy(NULL);
}

/* -------------------------------------------------------------- rules -- */

static void test_rule_nth(void **state)
{
	struct droce_impair *imp = droce_impair_create(NULL);
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_DROP, .match = DROCE_IMPAIR_M_NTH, .nth = 3};
	uint8_t f[128];
	size_t len = mkframe(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 1, 8);

	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	for (unsigned i = 1; i <= 5; i++) {
		struct droce_impair_verdict v = droce_impair_decide(imp, f, (uint32_t)len, NULL);
		assert_int_equal(v.action, i == 3 ? DROCE_IMPAIR_DROP : DROCE_IMPAIR_PASS);
		assert_false(v.corrupted);
	}
	struct droce_impair_stats st;
	droce_impair_get_stats(imp, &st);
	assert_int_equal(st.frames, 5);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.passed, 4);
	assert_int_equal(droce_impair_rule_hits(imp, 0), 1);
	assert_int_equal(droce_impair_rule_hits(imp, 1), 0);
	droce_impair_destroy(imp);
}

static void test_rule_opcode_psn_count(void **state)
{
	struct droce_impair *imp = droce_impair_create(NULL);
	/* drop the first 2 WRITE_MIDDLE frames with PSN 7 */
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_DROP,
				      .match = DROCE_IMPAIR_M_OPCODE | DROCE_IMPAIR_M_PSN,
				      .opcode = DROCE_OP_RC_RDMA_WRITE_MIDDLE, .psn = 7, .count = 2};
	uint8_t mid7[128], mid8[128], first7[128];
	uint32_t l1 = (uint32_t)mkframe(mid7, sizeof(mid7), DROCE_OP_RC_RDMA_WRITE_MIDDLE, 7, 16);
	uint32_t l2 = (uint32_t)mkframe(mid8, sizeof(mid8), DROCE_OP_RC_RDMA_WRITE_MIDDLE, 8, 16);
	uint32_t l3 = (uint32_t)mkframe(first7, sizeof(first7), DROCE_OP_RC_RDMA_WRITE_FIRST, 7, 16);

	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(droce_impair_decide(imp, mid8, l2, NULL).action, DROCE_IMPAIR_PASS);
	assert_int_equal(droce_impair_decide(imp, first7, l3, NULL).action, DROCE_IMPAIR_PASS);
	assert_int_equal(droce_impair_decide(imp, mid7, l1, NULL).action, DROCE_IMPAIR_DROP);
	assert_int_equal(droce_impair_decide(imp, mid7, l1, NULL).action, DROCE_IMPAIR_DROP);
	assert_int_equal(droce_impair_decide(imp, mid7, l1, NULL).action, DROCE_IMPAIR_PASS);
	assert_int_equal(droce_impair_rule_hits(imp, 0), 2);

	/* count 0: every match; a non-RoCE frame never matches an opcode rule */
	droce_impair_clear_rules(imp);
	r.count = 0;
	r.match = DROCE_IMPAIR_M_OPCODE;
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(droce_impair_decide(imp, mid8, l2, NULL).action, DROCE_IMPAIR_DROP);
	uint8_t junk[60] = {0};
	assert_int_equal(droce_impair_decide(imp, junk, sizeof(junk), NULL).action, DROCE_IMPAIR_PASS);
	assert_int_equal(droce_impair_decide(imp, junk, 3, NULL).action, DROCE_IMPAIR_PASS);

	/* DQPN match */
	droce_impair_clear_rules(imp);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_DUP, .match = DROCE_IMPAIR_M_DQPN, .dqpn = 0x13};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(droce_impair_decide(imp, mid8, l2, NULL).action, DROCE_IMPAIR_PASS);
	r.dqpn = 0x12;
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(droce_impair_decide(imp, mid8, l2, NULL).action, DROCE_IMPAIR_DUP);
	droce_impair_destroy(imp);
}

static void test_rule_validation(void **state)
{
	struct droce_impair *imp = droce_impair_create(NULL);
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_HOLD, .hold = 0};

	assert_int_equal(droce_impair_add_rule(imp, &r), -EINVAL);
	r.hold = DROCE_IMPAIR_MAX_HELD + 1;
	assert_int_equal(droce_impair_add_rule(imp, &r), -EINVAL);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_PASS};
	assert_int_equal(droce_impair_add_rule(imp, &r), -EINVAL);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_DROP, .psn = 1u << 24};
	assert_int_equal(droce_impair_add_rule(imp, &r), -EINVAL);
	assert_int_equal(droce_impair_add_rule(NULL, &r), -EINVAL);
	r.psn = 0;
	for (unsigned i = 0; i < DROCE_IMPAIR_MAX_RULES; i++)
		assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(droce_impair_add_rule(imp, &r), -ENOSPC);
	droce_impair_destroy(imp);
}

static void test_rule_corrupt_in_place(void **state)
{
	struct droce_impair *imp = droce_impair_create(NULL);
	uint8_t f[128], orig[128];
	uint32_t len = (uint32_t)mkframe(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 5, 16);
	struct droce_pkt pkt;
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_CORRUPT, .match = DROCE_IMPAIR_M_PSN,
				      .psn = 5, .count = 1, .offset = len - 10, .xor_mask = 0x01};
	struct droce_impair_rule d = {.action = DROCE_IMPAIR_DUP, .match = DROCE_IMPAIR_M_PSN,
				      .psn = 5, .count = 1};

	memcpy(orig, f, len);
	assert_int_equal(droce_parse(f, len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(droce_impair_add_rule(imp, &d), 0);
	/* corrupt and a verdict on the same frame: both apply */
	struct droce_impair_verdict v = droce_impair_decide(imp, f, len, NULL);
	assert_int_equal(v.action, DROCE_IMPAIR_DUP);
	assert_true(v.corrupted);
	assert_int_equal(f[len - 10], orig[len - 10] ^ 0x01);
	assert_memory_equal(f, orig, len - 10);
	assert_int_equal(droce_parse(f, len, &pkt, 0), DROCE_PARSE_BAD_ICRC);
	/* count 1: the next frame is untouched */
	memcpy(f, orig, len);
	v = droce_impair_decide(imp, f, len, NULL);
	assert_int_equal(v.action, DROCE_IMPAIR_PASS);
	assert_false(v.corrupted);
	assert_memory_equal(f, orig, len);
	struct droce_impair_stats st;
	droce_impair_get_stats(imp, &st);
	assert_int_equal(st.corrupted, 1);
	assert_int_equal(st.duplicated, 1);
	assert_int_equal(st.rule_hits, 2);
	droce_impair_destroy(imp);
}

static void test_hold_release_order(void **state)
{
	struct droce_impair *imp = droce_impair_create(NULL);
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_HOLD, .match = DROCE_IMPAIR_M_NTH,
				      .nth = 1, .hold = 2};
	uint8_t f[128];
	uint32_t len = (uint32_t)mkframe(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 0, 4);
	int tag[5];
	void *out[8];

	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	r.nth = 2;
	r.hold = 1;
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);

	struct droce_impair_verdict v = droce_impair_decide(imp, f, len, &tag[1]);
	assert_int_equal(v.action, DROCE_IMPAIR_HOLD);
	assert_int_equal(v.hold, 2);
	assert_int_equal(droce_impair_release(imp, out, 8), 0);
	v = droce_impair_decide(imp, f, len, &tag[2]);   /* frame 1 waits 1 more */
	assert_int_equal(v.action, DROCE_IMPAIR_HOLD);
	assert_int_equal(droce_impair_held(imp), 2);
	assert_int_equal(droce_impair_release(imp, out, 8), 0);
	v = droce_impair_decide(imp, f, len, &tag[3]);   /* both now due, oldest first */
	assert_int_equal(v.action, DROCE_IMPAIR_PASS);
	assert_int_equal(droce_impair_release(imp, out, 1), 1);
	assert_ptr_equal(out[0], &tag[1]);
	assert_int_equal(droce_impair_release(imp, out, 8), 1);
	assert_ptr_equal(out[0], &tag[2]);
	assert_int_equal(droce_impair_held(imp), 0);

	/* flush takes frames not yet due */
	r.nth = 4;
	r.hold = 10;
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(droce_impair_decide(imp, f, len, &tag[4]).action, DROCE_IMPAIR_HOLD);
	assert_int_equal(droce_impair_release(imp, out, 8), 0);
	assert_int_equal(droce_impair_flush(imp, out, 8), 1);
	assert_ptr_equal(out[0], &tag[4]);
	struct droce_impair_stats st;
	droce_impair_get_stats(imp, &st);
	assert_int_equal(st.held, 3);
	assert_int_equal(st.released, 3);
	droce_impair_destroy(imp);
}

static void test_hold_overflow_passes(void **state)
{
	struct droce_impair *imp = mk("reorder=1,reorder_depth=64,seed=3");
	uint8_t f[128];
	uint32_t len = (uint32_t)mkframe(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 0, 4);
	unsigned held = 0, passed = 0;
	void *out[DROCE_IMPAIR_MAX_HELD];

	/* never release: the table fills, then frames pass through */
	for (unsigned i = 0; i < DROCE_IMPAIR_MAX_HELD + 10; i++) {
		struct droce_impair_verdict v = droce_impair_decide(imp, f, len, NULL);
		held += v.action == DROCE_IMPAIR_HOLD;
		passed += v.action == DROCE_IMPAIR_PASS;
	}
	assert_int_equal(held, DROCE_IMPAIR_MAX_HELD);
	assert_int_equal(passed, 10);
	struct droce_impair_stats st;
	droce_impair_get_stats(imp, &st);
	assert_int_equal(st.hold_overflow, 10);
	assert_int_equal(droce_impair_flush(imp, out, DROCE_IMPAIR_MAX_HELD), DROCE_IMPAIR_MAX_HELD);
	droce_impair_destroy(imp);
}

/* ------------------------------------------------------ probabilities -- */

static void run_stream(const char *spec, unsigned n, uint8_t *actions, unsigned *counts)
{
	struct droce_impair *imp = mk(spec);
	uint8_t f[128];
	uint32_t len = (uint32_t)mkframe(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 0, 4);
	void *out[DROCE_IMPAIR_MAX_HELD];

	memset(counts, 0, 5 * sizeof(*counts));
	for (unsigned i = 0; i < n; i++) {
		struct droce_impair_verdict v = droce_impair_decide(imp, f, len, NULL);
		actions[i] = (uint8_t)(v.action | (v.corrupted ? 0x80 : 0));
		counts[v.action]++;
		counts[4] += (unsigned)v.corrupted;
		droce_impair_release(imp, out, DROCE_IMPAIR_MAX_HELD);
	}
	droce_impair_destroy(imp);
}

static void test_probabilities_seeded(void **state)
{
	enum { N = 100000 };
	static uint8_t a1[N], a2[N], a3[N];
	unsigned c1[5], c2[5], c3[5];

	run_stream("drop=0.1,dup=0.05,reorder=0.02,corrupt=0.03,seed=7", N, a1, c1);
	run_stream("drop=0.1,dup=0.05,reorder=0.02,corrupt=0.03,seed=7", N, a2, c2);
	run_stream("drop=0.1,dup=0.05,reorder=0.02,corrupt=0.03,seed=8", N, a3, c3);
	/* same seed, same decisions; another seed, other decisions */
	assert_memory_equal(a1, a2, N);
	assert_memory_not_equal(a1, a3, N);
	/* rates within 5 sigma of the expectation */
	assert_in_range(c1[DROCE_IMPAIR_DROP], 10000 - 475, 10000 + 475);
	/* dup and hold are drawn among the frames not dropped */
	assert_in_range(c1[DROCE_IMPAIR_DUP], 4500 - 320, 4500 + 320);
	assert_in_range(c1[DROCE_IMPAIR_HOLD], 1710 - 205, 1710 + 205);
	assert_in_range(c1[4], 3000 - 270, 3000 + 270);

	unsigned c0[5];
	run_stream("seed=7", 1000, a1, c0);
	assert_int_equal(c0[DROCE_IMPAIR_PASS], 1000);
	assert_int_equal(c0[4], 0);
	run_stream("drop=1", 1000, a1, c0);
	assert_int_equal(c0[DROCE_IMPAIR_DROP], 1000);
}

static void test_random_corrupt_skips_ethernet(void **state)
{
	struct droce_impair *imp = mk("corrupt=1,seed=99");
	uint8_t f[128], orig[128];
	uint32_t len = (uint32_t)mkframe(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 0, 32);

	memcpy(orig, f, len);
	for (int i = 0; i < 1000; i++) {
		struct droce_impair_verdict v;
		unsigned diff = 0;
		memcpy(f, orig, len);
		v = droce_impair_decide(imp, f, len, NULL);
		assert_true(v.corrupted);
		assert_memory_equal(f, orig, 14);
		for (uint32_t j = 14; j < len; j++)
			diff += f[j] != orig[j];
		assert_int_equal(diff, 1);
	}
	droce_impair_destroy(imp);
}

static void test_action_names(void **state)
{
	assert_string_equal(droce_impair_action_name(DROCE_IMPAIR_DROP), "DROP");
	assert_string_equal(droce_impair_action_name(DROCE_IMPAIR_HOLD), "HOLD");
	assert_string_equal(droce_impair_action_name((enum droce_impair_action)99), "UNKNOWN");
}


/* IPv4 header checksum over @p ihl bytes at @p ip is valid. */
static int ipv4_csum_ok(const uint8_t *ip)
{
	uint32_t sum = 0, ihl = (ip[0] & 0x0Fu) * 4u;
	for (uint32_t i = 0; i < ihl; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return sum == 0xFFFFu;
}

/* ECN marking (A17.9): ECT packets become CE, Not-ECT ones are left alone; the ICRC still holds. */
static void test_ecn_marking(void **state)
{
	struct droce_impair *imp = mk("ecn=1,seed=4");
	struct droce_pkt pkt;
	uint8_t f[256], orig[256];
	uint32_t len;

	/* IPv4 ECT(0) */
	len = (uint32_t)mkframe_ip(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 3, 20, 4, 2);
	memcpy(orig, f, len);
	assert_true(ipv4_csum_ok(f + 14));
	struct droce_impair_verdict v = droce_impair_decide(imp, f, len, NULL);
	assert_true(v.ecn_marked);
	assert_int_equal(v.action, DROCE_IMPAIR_PASS);
	assert_int_equal(droce_parse(f, len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(pkt.h.net.ecn, 3);
	assert_int_equal(pkt.h.net.dscp, 26);
	assert_true(ipv4_csum_ok(f + 14));
	/* only the TOS byte and the checksum changed */
	for (uint32_t i = 0; i < len; i++)
		if (i != 15 && i != 24 && i != 25)
			assert_int_equal(f[i], orig[i]);
	/* Not-ECT: untouched */
	len = (uint32_t)mkframe_ip(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 3, 20, 4, 0);
	memcpy(orig, f, len);
	v = droce_impair_decide(imp, f, len, NULL);
	assert_false(v.ecn_marked);
	assert_memory_equal(f, orig, len);
	/* IPv6 ECT(1) */
	len = (uint32_t)mkframe_ip(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 3, 20, 6, 1);
	v = droce_impair_decide(imp, f, len, NULL);
	assert_true(v.ecn_marked);
	assert_int_equal(droce_parse(f, len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(pkt.h.net.ecn, 3);
	assert_int_equal(pkt.h.net.dscp, 26);
	struct droce_impair_stats st;
	droce_impair_get_stats(imp, &st);
	assert_int_equal(st.ecn_marked, 2);
	droce_impair_destroy(imp);

	/* a rule marks the Nth frame; ecn=P draws do not disturb the drop stream */
	imp = droce_impair_create(NULL);
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_MARK_ECN, .match = DROCE_IMPAIR_M_NTH, .nth = 2};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	len = (uint32_t)mkframe_ip(f, sizeof(f), DROCE_OP_RC_SEND_ONLY, 3, 20, 4, 2);
	memcpy(orig, f, len);
	assert_false(droce_impair_decide(imp, f, len, NULL).ecn_marked);
	assert_true(droce_impair_decide(imp, f, len, NULL).ecn_marked);
	droce_impair_destroy(imp);

	uint8_t a1[2000], a2[2000];
	unsigned c1[5], c2[5];
	run_stream("drop=0.3,seed=9", 2000, a1, c1);
	run_stream("drop=0.3,ecn=0.5,seed=9", 2000, a2, c2);
	assert_memory_equal(a1, a2, 2000);
}

/* ------------------------------------------------------------ memlink -- */

struct tap_log {
	unsigned n;
	enum droce_memlink_dir dir[64];
	enum droce_impair_action fate[64];
	uint32_t psn[64];
	int corrupted[64];
	int icrc_ok[64];
};

static void tap_fn(void *arg, enum droce_memlink_dir dir, const uint8_t *frame, uint32_t len,
		   enum droce_impair_action fate, int corrupted)
{
	struct tap_log *t = arg;
	struct droce_pkt pkt;
	if (t->n >= 64)
		return;
	t->dir[t->n] = dir;
	t->fate[t->n] = fate;
	t->corrupted[t->n] = corrupted;
	t->icrc_ok[t->n] = droce_parse(frame, len, &pkt, 0) == DROCE_PARSE_OK;
	t->psn[t->n] = pkt.h.bth.psn;
	t->n++;
}

/* Send a frame split as hdr / two payload segments / trailer, like the engine does. */
static int send_split(struct droce_link *l, uint32_t psn, uint32_t plen, uint8_t fill)
{
	struct droce_hdrs h;
	uint8_t hdr[128], payload[1024];
	struct droce_tx_frame f;
	uint32_t crc;
	size_t hl;

	memset(&h, 0, sizeof(h));
	memset(payload, fill, sizeof(payload));
	h.net.ip_version = 4;
	h.net.ttl = 64;
	h.net.dport = 4791;
	h.bth.opcode = DROCE_OP_RC_SEND_ONLY;
	h.bth.pkey = 0xFFFF;
	h.bth.psn = psn;
	h.payload_len = plen;
	hl = droce_build_hdrs(hdr, sizeof(hdr), &h);
	assert_true(hl > 0);
	crc = droce_icrc_begin(hdr + droce_build_l3_off(&h), droce_build_l3_kind(&h),
			       hl - droce_build_l3_off(&h));
	crc = droce_icrc_update(crc, payload, plen);
	memset(&f, 0, sizeof(f));
	f.hdr = hdr;
	f.hdr_len = (uint32_t)hl;
	f.nseg = 2;
	f.seg[0].addr = payload;
	f.seg[0].len = plen / 2;
	f.seg[1].addr = payload + plen / 2;
	f.seg[1].len = plen - plen / 2;
	f.payload_len = plen;
	f.trailer_len = (uint8_t)droce_build_trailer(f.trailer, crc, plen);
	return l->ops->tx(l->priv, &f, 0);
}

static void test_memlink_roundtrip(void **state)
{
	struct droce_memlink_params p = {.depth = 4};
	struct droce_memlink *ml = droce_memlink_create(&p);
	struct droce_link a = droce_memlink_end(ml, 0), b = droce_memlink_end(ml, 1);
	struct droce_rx_frame rx[8];
	struct droce_pkt pkt;
	struct tap_log log = {0};

	assert_non_null(ml);
	droce_memlink_set_tap(ml, tap_fn, &log);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(send_split(&a, 100 + i, 101 + i, (uint8_t)i), 0);
	/* bounded FIFO */
	assert_int_equal(send_split(&a, 104, 10, 0), -ENOBUFS);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 4);
	/* nothing comes back on the sender's own end */
	assert_int_equal(a.ops->rx_burst(a.priv, rx, 8, 0), 0);

	unsigned n = b.ops->rx_burst(b.priv, rx, 3, 0);
	assert_int_equal(n, 3);
	assert_int_equal(droce_memlink_outstanding(ml, DROCE_MEMLINK_0_TO_1), 3);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(droce_parse(rx[i].data, rx[i].len, &pkt, 0), DROCE_PARSE_OK);
		assert_int_equal(pkt.h.bth.psn, 100 + i);
		assert_int_equal(pkt.h.payload_len, 101 + i);
		for (uint32_t j = 0; j < pkt.h.payload_len; j++)
			assert_int_equal(pkt.payload[j], i);
	}
	b.ops->rx_release(b.priv, rx, n);
	assert_int_equal(droce_memlink_outstanding(ml, DROCE_MEMLINK_0_TO_1), 0);
	assert_int_equal(b.ops->rx_burst(b.priv, rx, 8, 0), 1);
	b.ops->rx_release(b.priv, rx, 1);
	assert_int_equal(b.ops->rx_burst(b.priv, rx, 8, 0), 0);

	/* the other direction */
	assert_int_equal(send_split(&b, 7, 1, 9), 0);
	assert_int_equal(a.ops->rx_burst(a.priv, rx, 8, 0), 1);
	assert_int_equal(droce_parse(rx[0].data, rx[0].len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(pkt.h.bth.psn, 7);
	a.ops->rx_release(a.priv, rx, 1);

	struct droce_memlink_stats st;
	assert_int_equal(droce_memlink_get_stats(ml, DROCE_MEMLINK_0_TO_1, &st), 0);
	assert_int_equal(st.tx_frames, 4);
	assert_int_equal(st.rx_frames, 4);
	assert_int_equal(st.tx_nobufs, 1);
	assert_int_equal(st.tx_bytes, st.rx_bytes);
	assert_int_equal(droce_memlink_get_stats(ml, 2, &st), -EINVAL);

	assert_int_equal(log.n, 5);
	assert_int_equal(log.dir[4], DROCE_MEMLINK_1_TO_0);
	assert_int_equal(log.psn[4], 7);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(log.fate[i], DROCE_IMPAIR_PASS);
		assert_true(log.icrc_ok[i]);
	}
	droce_memlink_destroy(ml);
}

static void test_memlink_too_big(void **state)
{
	struct droce_memlink_params p = {.depth = 4, .max_frame = 128};
	struct droce_memlink *ml = droce_memlink_create(&p);
	struct droce_link a = droce_memlink_end(ml, 0);
	struct droce_memlink_stats st;

	assert_int_equal(send_split(&a, 1, 200, 0), -EMSGSIZE);
	assert_int_equal(send_split(&a, 1, 20, 0), 0);
	droce_memlink_get_stats(ml, DROCE_MEMLINK_0_TO_1, &st);
	assert_int_equal(st.tx_too_big, 1);
	assert_int_equal(st.tx_frames, 1);
	droce_memlink_destroy(ml);

	p.max_frame = 10;
	errno = 0;
	assert_null(droce_memlink_create(&p));
	assert_int_equal(errno, EINVAL);
}

static void test_memlink_impaired(void **state)
{
	struct droce_memlink *ml = droce_memlink_create(NULL);
	struct droce_link a = droce_memlink_end(ml, 0), b = droce_memlink_end(ml, 1);
	struct droce_impair *imp = droce_impair_create(NULL);
	struct droce_rx_frame rx[16];
	struct droce_pkt pkt;
	struct tap_log log = {0};
	struct droce_impair_rule r;
	uint32_t got[16];
	unsigned n;

	droce_memlink_set_tap(ml, tap_fn, &log);
	assert_int_equal(droce_memlink_set_impair(ml, DROCE_MEMLINK_0_TO_1, imp), 0);
	/* PSN 1 dropped, PSN 2 duplicated, PSN 3 held for 2 frames, PSN 4 corrupted */
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_DROP, .match = DROCE_IMPAIR_M_PSN, .psn = 1};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_DUP, .match = DROCE_IMPAIR_M_PSN, .psn = 2};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_HOLD, .match = DROCE_IMPAIR_M_PSN, .psn = 3, .hold = 2};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_CORRUPT, .match = DROCE_IMPAIR_M_PSN, .psn = 4, .offset = 60};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);

	for (uint32_t psn = 0; psn <= 6; psn++)
		assert_int_equal(send_split(&a, psn, 64, (uint8_t)psn), 0);
	n = b.ops->rx_burst(b.priv, rx, 16, 0);
	for (unsigned i = 0; i < n; i++) {
		enum droce_parse_result pr = droce_parse(rx[i].data, rx[i].len, &pkt, 0);
		got[i] = pkt.h.bth.psn | (pr == DROCE_PARSE_BAD_ICRC ? 0x100u : 0);
	}
	b.ops->rx_release(b.priv, rx, n);
	/* 0, 2, 2 (dup), 4 (corrupt), 5, 3 (after two later frames), 6 */
	static const uint32_t want[] = {0, 2, 2, 0x104, 5, 3, 6};
	assert_int_equal(n, 7);
	assert_memory_equal(got, want, sizeof(want));

	/* the tap saw what the sender sent, with its fate */
	assert_int_equal(log.n, 7);
	static const enum droce_impair_action fates[] = {DROCE_IMPAIR_PASS, DROCE_IMPAIR_DROP,
		DROCE_IMPAIR_DUP, DROCE_IMPAIR_HOLD, DROCE_IMPAIR_PASS, DROCE_IMPAIR_PASS, DROCE_IMPAIR_PASS};
	for (unsigned i = 0; i < 7; i++) {
		assert_int_equal(log.psn[i], i);
		assert_int_equal(log.fate[i], fates[i]);
		assert_true(log.icrc_ok[i]);   /* bytes before the corruption */
		assert_int_equal(log.corrupted[i], i == 4);
	}

	struct droce_memlink_stats st;
	droce_memlink_get_stats(ml, DROCE_MEMLINK_0_TO_1, &st);
	assert_int_equal(st.tx_frames, 7);
	assert_int_equal(st.rx_frames, 7);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.duplicated, 1);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.corrupted, 1);

	/* a frame held with nothing after it arrives when the receiver finds the FIFO empty */
	droce_impair_clear_rules(imp);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_HOLD, .hold = 5, .count = 1};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(send_split(&a, 9, 8, 0), 0);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 1);
	assert_true(droce_memlink_next_ready(ml, DROCE_MEMLINK_0_TO_1) == 0);
	n = b.ops->rx_burst(b.priv, rx, 16, 0);
	assert_int_equal(n, 1);
	assert_int_equal(droce_parse(rx[0].data, rx[0].len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(pkt.h.bth.psn, 9);
	b.ops->rx_release(b.priv, rx, n);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 0);

	/* with idle flushing off, a held frame waits for its later frames however long */
	assert_int_equal(droce_memlink_set_flush_idle(ml, DROCE_MEMLINK_0_TO_1, 0), 0);
	droce_impair_clear_rules(imp);
	r = (struct droce_impair_rule){.action = DROCE_IMPAIR_HOLD, .hold = 2, .count = 1};
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(send_split(&a, 20, 8, 0), 0);
	assert_true(droce_memlink_next_ready(ml, DROCE_MEMLINK_0_TO_1) == UINT64_MAX);
	assert_int_equal(b.ops->rx_burst(b.priv, rx, 16, 0), 0);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 1);
	assert_int_equal(send_split(&a, 21, 8, 0), 0);
	n = b.ops->rx_burst(b.priv, rx, 16, 0);
	assert_int_equal(n, 1);
	b.ops->rx_release(b.priv, rx, n);
	assert_int_equal(send_split(&a, 22, 8, 0), 0);
	n = b.ops->rx_burst(b.priv, rx, 16, 0);
	assert_int_equal(n, 2); /* 22, then 20 */
	assert_int_equal(droce_parse(rx[1].data, rx[1].len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(pkt.h.bth.psn, 20);
	b.ops->rx_release(b.priv, rx, n);
	assert_int_equal(droce_memlink_set_flush_idle(ml, DROCE_MEMLINK_0_TO_1, 1), 0);
	assert_int_equal(droce_memlink_set_flush_idle(ml, 3, 1), -EINVAL);

	/* frames held when the shim is removed are delivered, not lost */
	r.count = 0;
	droce_impair_clear_rules(imp);
	assert_int_equal(droce_impair_add_rule(imp, &r), 0);
	assert_int_equal(send_split(&a, 10, 8, 0), 0);
	assert_int_equal(droce_memlink_set_impair(ml, DROCE_MEMLINK_0_TO_1, NULL), 0);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 1);
	n = b.ops->rx_burst(b.priv, rx, 16, 0);
	assert_int_equal(n, 1);
	b.ops->rx_release(b.priv, rx, n);
	assert_int_equal(droce_memlink_set_impair(ml, 5, NULL), -EINVAL);

	droce_memlink_destroy(ml);
	droce_impair_destroy(imp);
}

/* Slots are recycled: many more frames than slots go through. */
static void test_memlink_recycles(void **state)
{
	struct droce_memlink_params p = {.depth = 8};
	struct droce_memlink *ml = droce_memlink_create(&p);
	struct droce_link a = droce_memlink_end(ml, 0), b = droce_memlink_end(ml, 1);
	struct droce_impair *imp = mk("drop=0.1,dup=0.1,reorder=0.1,seed=5");
	struct droce_rx_frame rx[32];
	unsigned sent = 0, recv = 0;

	droce_memlink_set_impair(ml, DROCE_MEMLINK_0_TO_1, imp);
	for (unsigned round = 0; round < 2000; round++) {
		while (send_split(&a, sent & 0xFFFFFF, 16, 1) == 0)
			sent++;
		unsigned n = b.ops->rx_burst(b.priv, rx, 32, 0);
		recv += n;
		b.ops->rx_release(b.priv, rx, n);
	}
	unsigned n;
	while ((n = b.ops->rx_burst(b.priv, rx, 32, 0))) {
		recv += n;
		b.ops->rx_release(b.priv, rx, n);
	}
	struct droce_impair_stats st;
	droce_impair_get_stats(imp, &st);
	assert_true(sent > 10000);
	assert_int_equal(st.frames, sent);
	assert_int_equal(recv, sent - st.dropped + st.duplicated);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 0);
	droce_memlink_destroy(ml);
	droce_impair_destroy(imp);
}


/* A one-way delay: frames arrive at send time + delay, in order; next_ready says when. */
static void test_memlink_delay(void **state)
{
	struct droce_memlink *ml = droce_memlink_create(NULL);
	struct droce_link a = droce_memlink_end(ml, 0), b = droce_memlink_end(ml, 1);
	struct droce_rx_frame rx[8];
	struct droce_pkt pkt;
	struct droce_link *pa = &a;

	assert_int_equal(droce_memlink_set_delay(ml, DROCE_MEMLINK_0_TO_1, 1000), 0);
	assert_int_equal(droce_memlink_set_delay(ml, 7, 1000), -EINVAL);
	assert_true(droce_memlink_next_ready(ml, DROCE_MEMLINK_0_TO_1) == UINT64_MAX);
	/* sent at 100 and 600 */
	struct droce_hdrs h;
	uint8_t buf[256];
	for (uint32_t i = 0; i < 2; i++) {
		memset(&h, 0, sizeof(h));
		h.net.ip_version = 4;
		h.net.dport = 4791;
		h.bth.opcode = DROCE_OP_RC_SEND_ONLY;
		h.bth.psn = i;
		size_t len = droce_build_frame(buf, sizeof(buf), &h, NULL);
		struct droce_tx_frame f = {.hdr = buf, .hdr_len = (uint32_t)len};
		assert_int_equal(pa->ops->tx(pa->priv, &f, 100 + 500 * i), 0);
	}
	assert_true(droce_memlink_next_ready(ml, DROCE_MEMLINK_0_TO_1) == 1100);
	assert_int_equal(b.ops->rx_burst(b.priv, rx, 8, 1099), 0);
	assert_int_equal(b.ops->rx_burst(b.priv, rx, 8, 1100), 1);
	assert_int_equal(droce_parse(rx[0].data, rx[0].len, &pkt, 0), DROCE_PARSE_OK);
	assert_int_equal(pkt.h.bth.psn, 0);
	b.ops->rx_release(b.priv, rx, 1);
	assert_true(droce_memlink_next_ready(ml, DROCE_MEMLINK_0_TO_1) == 1600);
	assert_int_equal(b.ops->rx_burst(b.priv, rx, 8, 5000), 1);
	b.ops->rx_release(b.priv, rx, 1);
	/* the other direction has no delay */
	assert_true(droce_memlink_next_ready(ml, DROCE_MEMLINK_1_TO_0) == UINT64_MAX);
	droce_memlink_destroy(ml);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_full),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_create_rejects_bad_spec),
		cmocka_unit_test(test_rule_nth),
		cmocka_unit_test(test_rule_opcode_psn_count),
		cmocka_unit_test(test_rule_validation),
		cmocka_unit_test(test_rule_corrupt_in_place),
		cmocka_unit_test(test_hold_release_order),
		cmocka_unit_test(test_hold_overflow_passes),
		cmocka_unit_test(test_probabilities_seeded),
		cmocka_unit_test(test_random_corrupt_skips_ethernet),
		cmocka_unit_test(test_action_names),
		cmocka_unit_test(test_ecn_marking),
		cmocka_unit_test(test_memlink_roundtrip),
		cmocka_unit_test(test_memlink_too_big),
		cmocka_unit_test(test_memlink_impaired),
		cmocka_unit_test(test_memlink_recycles),
		cmocka_unit_test(test_memlink_delay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
