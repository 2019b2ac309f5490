/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One crafted frame per parse result of DROCE_PARSE_REASONS, asserting that
 * exact result. The tests are generated from the X-macro: a reason added to
 * the list without a crafted frame here fails its test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/build.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

#define BUF 4096

/* A valid frame to start from; returns its length. */
static size_t base(uint8_t *buf, uint8_t opc, enum wt_l3 l3, bool vlan, uint32_t plen,
		   struct droce_hdrs *h)
{
	struct wt_rng r = { 0xC0FFEE + opc + plen };
	uint8_t payload[64];

	assert_true(plen <= sizeof(payload));
	wt_random_hdrs(&r, h, opc, l3, vlan, plen);
	wt_rng_fill(&r, payload, plen);
	size_t len = droce_build_frame(buf, BUF, h, payload);
	assert_int_not_equal(len, 0);
	struct droce_pkt p;
	assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_OK);
	return len;
}

/* Offsets in a frame built by base() without a VLAN tag. */
#define L3 14u
#define UDP4 (L3 + 20u)
#define BTH4 (UDP4 + 8u)
#define UDP6 (L3 + 40u)

/*
 * Write into @p buf a frame that parse must reject with @p reason and
 * return its length. Extra frames for the same reason are checked inline.
 */
static size_t craft(enum droce_parse_result reason, uint8_t *buf)
{
	struct droce_hdrs h;
	struct droce_pkt p;
	size_t len;

	switch (reason) {
	case DROCE_PARSE_OK:
		return base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, true, 13, &h);
	case DROCE_PARSE_NOT_ROCE: {
		/* ARP, ICMP, IPv6 TCP: classified, not malformed */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + 12, DROCE_ETHERTYPE_ARP);
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_NOT_ROCE);
		droce_put_be16(buf + 12, DROCE_ETHERTYPE_IPV4);
		buf[L3 + 9] = DROCE_IPPROTO_ICMP;
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_NOT_ROCE);
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV6, false, 8, &h);
		buf[L3 + 6] = 6; /* TCP */
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_NOT_ROCE);
		/* fragmented non-RoCE UDP (DNS, NFS, VXLAN) is not malformed
		 * RoCE: a first fragment to another port ... */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + L3 + 6, 0x2000); /* MF, offset 0 */
		droce_put_be16(buf + UDP4 + 2, 53);
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_NOT_ROCE);
		/* ... and a later fragment, which has no UDP header at all
		 * (even if its first bytes happen to read as port 4791) */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + L3 + 6, 0x2000 | 185); /* MF, offset 1480 */
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_NOT_ROCE);
		droce_put_be16(buf + L3 + 6, 185); /* last fragment */
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_NOT_ROCE);
		/* IPv4 UDP to another port */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + UDP4 + 2, 4792);
		return len;
	}
	case DROCE_PARSE_TRUNC_ETH:
		base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		return 13;
	case DROCE_PARSE_TRUNC_VLAN:
		base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, true, 8, &h);
		return 17;
	case DROCE_PARSE_TRUNC_IP:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV6, false, 8, &h);
		assert_int_equal(droce_parse(buf, L3 + 39, &p, 0), DROCE_PARSE_TRUNC_IP);
		base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		return L3 + 19;
	case DROCE_PARSE_BAD_IP_VERSION:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV6, false, 8, &h);
		buf[L3] = (uint8_t)(0x40 | (buf[L3] & 0x0F));
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_BAD_IP_VERSION);
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		buf[L3] = 0x65;
		return len;
	case DROCE_PARSE_BAD_IHL:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		buf[L3] = 0x44;
		return len;
	case DROCE_PARSE_IPV4_OPTIONS:
		/* insert one 4-byte option word (four NOPs) after the IPv4 header */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		memmove(buf + UDP4 + 4, buf + UDP4, len - UDP4);
		memset(buf + UDP4, 1, 4);
		buf[L3] = 0x46;
		droce_put_be16(buf + L3 + 2, (uint16_t)(droce_get_be16(buf + L3 + 2) + 4));
		return len + 4;
	case DROCE_PARSE_IP_FRAGMENT:
		/* the first fragment of a packet to UDP 4791: RoCE, but RoCE is
		 * never fragmented (the sender sets DF) */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + L3 + 6, 0x2000); /* MF, offset 0 */
		return len;
	case DROCE_PARSE_IP_LEN:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + L3 + 2, 27);
		return len;
	case DROCE_PARSE_LEN_BEYOND_FRAME:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV6, true, 8, &h);
		droce_put_be16(buf + L3 + 4 + 4, (uint16_t)(droce_get_be16(buf + L3 + 4 + 4) + 1));
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_LEN_BEYOND_FRAME);
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + L3 + 2, (uint16_t)(droce_get_be16(buf + L3 + 2) + 1));
		return len;
	case DROCE_PARSE_TRUNC_UDP:
		/* IPv6 whose payload length leaves no room for UDP */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV6, false, 8, &h);
		droce_put_be16(buf + L3 + 4, 7);
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_TRUNC_UDP);
		/* IPv4 frame cut inside the UDP header */
		base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		return UDP4 + 7;
	case DROCE_PARSE_UDP_LEN:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		droce_put_be16(buf + UDP4 + 4, (uint16_t)(droce_get_be16(buf + UDP4 + 4) - 4));
		return len;
	case DROCE_PARSE_BAD_GRH_NEXT:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_ROCEV1, false, 8, &h);
		buf[L3 + 6] = DROCE_IPPROTO_UDP;
		return len;
	case DROCE_PARSE_TRUNC_BTH:
		/* IP and UDP lengths end 11 bytes into the BTH */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 0, &h);
		droce_put_be16(buf + L3 + 2, 20 + 8 + 11);
		droce_put_be16(buf + UDP4 + 4, 8 + 11);
		return len;
	case DROCE_PARSE_UNKNOWN_OPCODE:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		buf[BTH4] = 0x15;
		return len;
	case DROCE_PARSE_BAD_TVER:
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		buf[BTH4 + 1] |= 1;
		return len;
	case DROCE_PARSE_TRUNC_EXT:
		/* a SEND_ONLY with no payload relabelled as a WRITE_ONLY: no room
		 * for the 16-byte RETH before the end of the IP packet */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 0, &h);
		buf[BTH4] = DROCE_OP_RC_RDMA_WRITE_ONLY;
		return len;
	case DROCE_PARSE_TRUNC_ICRC:
		/* relabelled as SEND_LAST_WITH_IMMEDIATE: the 4 bytes that were
		 * the ICRC now hold ImmDt, nothing is left for the ICRC */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 0, &h);
		buf[BTH4] = DROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE;
		return len;
	case DROCE_PARSE_UNEXPECTED_PAYLOAD:
		/* 8 payload bytes relabelled as an ACK: 4 go to the AETH, 4 remain */
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8, &h);
		buf[BTH4] = DROCE_OP_RC_ACKNOWLEDGE;
		return len;
	case DROCE_PARSE_PAD_TOO_LONG:
		len = base(buf, DROCE_OP_RC_ACKNOWLEDGE, WT_IPV4, false, 0, &h);
		buf[BTH4 + 1] |= 1 << DROCE_BTH_PAD_SHIFT;
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_PAD_TOO_LONG);
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 2, &h);
		/* pad 3 fits in the 4 bytes of payload + pad: structurally fine,
		 * the ICRC (which covers the BTH) catches it */
		buf[BTH4 + 1] |= 3 << DROCE_BTH_PAD_SHIFT;
		assert_int_equal(droce_parse(buf, len, &p, 0), DROCE_PARSE_BAD_ICRC);
		len = base(buf, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 0, &h);
		buf[BTH4 + 1] |= 3 << DROCE_BTH_PAD_SHIFT;
		return len;
	case DROCE_PARSE_BAD_ICRC:
		len = base(buf, DROCE_OP_RC_RDMA_WRITE_ONLY, WT_IPV4, false, 8, &h);
		buf[len - 5] ^= 0x80; /* last payload byte */
		return len;
	case DROCE_PARSE__COUNT:
		break;
	}
	fail_msg("no crafted frame for %s", droce_parse_result_name(reason));
	return 0;
}

static void test_reason(void **state)
{
	enum droce_parse_result want = *(const enum droce_parse_result *)*state;
	uint8_t *buf = malloc(BUF);
	struct droce_pkt p;

	assert_non_null(buf);
	size_t len = craft(want, buf);
	/* exact-size copy so an overread past the frame is caught by ASan */
	uint8_t *f = malloc(len ? len : 1);
	assert_non_null(f);
	memcpy(f, buf, len);
	enum droce_parse_result got = droce_parse(f, len, &p, 0);
	if (got != want)
		fail_msg("want %s, got %s", droce_parse_result_name(want),
			 droce_parse_result_name(got));
	/* without the ICRC check only BAD_ICRC changes (to OK) */
	got = droce_parse(f, len, &p, DROCE_PARSE_F_NO_ICRC);
	assert_int_equal(got, want == DROCE_PARSE_BAD_ICRC ? DROCE_PARSE_OK : want);
	if (want == DROCE_PARSE_BAD_ICRC) {
		/* a BAD_ICRC result has every field decoded */
		assert_int_equal(droce_parse(f, len, &p, 0), DROCE_PARSE_BAD_ICRC);
		assert_int_equal(p.h.bth.opcode, DROCE_OP_RC_RDMA_WRITE_ONLY);
		assert_int_equal(p.h.payload_len, 8);
		assert_int_not_equal(p.icrc, droce_icrc_begin(f + L3, DROCE_L3_IPV4, len - L3 - 4));
	}
	free(f);
	free(buf);
}

static void test_reason_names(void **state)
{
#define X(n, s)                                                                    \
	assert_string_equal(droce_parse_result_name(DROCE_PARSE_##n), #n);         \
	assert_string_equal(droce_parse_result_str(DROCE_PARSE_##n), s);
	DROCE_PARSE_REASONS(X)
#undef X
	assert_string_equal(droce_parse_result_name(DROCE_PARSE__COUNT), "INVALID");
	assert_string_equal(droce_parse_result_name((enum droce_parse_result)-1), "INVALID");
	assert_non_null(droce_parse_result_str(DROCE_PARSE__COUNT));
}

static const enum droce_parse_result reasons[] = {
#define X(n, s) DROCE_PARSE_##n,
	DROCE_PARSE_REASONS(X)
#undef X
};

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_names),
#define X(n, s)                                                                    \
	{ .name = "reason_" #n, .test_func = test_reason,                          \
	  .initial_state = (void *)&reasons[DROCE_PARSE_##n] },
		DROCE_PARSE_REASONS(X)
#undef X
	};
	return cmocka_run_group_tests_name("wire_parse_reject", tests, NULL, NULL);
}
