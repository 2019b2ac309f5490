/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sr-spray's loss by time (transport/spray.h, docs/transport.md
 * "Selective repeat"), on one QP's transport state with no link: the test
 * sends PSNs through droce_sr_sport() at chosen times, writes the SACK
 * scoreboard as droce_sr_on_sack() would, and reads what the per-PSN
 * send-time ring makes of it:
 *   - a hole is lost only once a packet sent after it was delivered and it
 *     has been out for that packet's RTT plus the reordering window
 *     (RFC 8985 6.2), at once when nothing new can go out;
 *   - the newest PSN sent once and delivered is the QP's RTT sample, a
 *     resent one never is (Karn), and a slot reused by a later PSN is not
 *     taken for the PSN it held before;
 *   - a path whose last two packets are lost by time moves to a new source
 *     port before its next packet leaves; one random loss moves nothing;
 *   - a path whose RTT is over twice the fastest path's moves, one path per
 *     smoothed RTT at most.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/spray.h"
#include "wire/psn.h"

#define US 1000ull
#define GAP 100ull  /* ns between two packets: 4 KB at about 330 Gbit/s */
#define RTT (8 * US)

static struct droce_qp *qp_new(void)
{
	struct droce_qp *qp = calloc(1, sizeof(*qp));
	assert_non_null(qp);
	qp->transport = DROCE_TRANSPORT_SR_SPRAY;
	assert_int_equal(droce_tp_fit(qp, qp->transport, 0), 0);
	qp->tmpl.net.sport = 0xC123;
	droce_sr_rts(qp);
	return qp;
}

static void qp_free(struct droce_qp *qp)
{
	droce_tp_release(qp);
	free(qp);
}

/* A copy of @p qp with its own selective-repeat state. */
static struct droce_qp *qp_clone(const struct droce_qp *qp)
{
	struct droce_qp *c = qp_new();
	struct droce_tp_sr *sr = c->tp.sr;
	*c = *qp;
	*sr = *qp->tp.sr;
	c->tp.sr = sr;
	return c;
}

/* PSNs [from, to) leave GAP apart from @p t0, as the requester sends them. */
static uint64_t send(struct droce_qp *qp, uint32_t from, uint32_t to, uint64_t t0)
{
	struct droce_tp *t = &qp->tp;
	for (uint32_t p = from; p != to; p = droce_psn_add(p, 1), t0 += GAP) {
		droce_sr_sport(qp, p, t0);
		if (droce_psn_diff(droce_psn_add(p, 1), t->snd_max) > 0)
			t->snd_max = droce_psn_add(p, 1);
	}
	return t0;
}

/* The responder has everything below @p una and the PSNs @p sacked[] of
 * [una, hi): the scoreboard droce_sr_on_sack() keeps. */
static void sack(struct droce_qp *qp, uint32_t una, uint32_t hi, const uint32_t *sacked, unsigned n)
{
	struct droce_tp *t = &qp->tp;
	t->una_psn = t->sr->tx_base = una;
	memset(t->sr->tx_map, 0, sizeof(t->sr->tx_map));
	for (unsigned i = 0; i < n; i++) {
		uint32_t off = (uint32_t)droce_psn_diff(sacked[i], una);
		t->sr->tx_map[off / 64] |= 1ull << (off % 64);
	}
	t->sr->peer_hi = hi;
	if (droce_psn_diff(t->sr->resent_to, una) < 0)
		t->sr->resent_to = una;
}

/* PSN 4 of 0..15 lost, the rest delivered: lost by time, not before. */
static void test_hole_lost_by_time(void **state)
{
	(void)state;
	struct droce_qp *qp = qp_new();
	uint64_t t0 = 10 * US, ts4 = t0 + 4 * GAP;
	send(qp, 0, 16, t0);
	uint32_t got[11];
	for (unsigned i = 0; i < 11; i++)
		got[i] = 5 + i;
	sack(qp, 4, 16, got, 11);
	/* PSN 15 (sent at t0 + 15 GAP) is delivered one RTT later. */
	uint64_t now = t0 + 15 * GAP + RTT;
	droce_spray_on_sack(qp, now);
	assert_int_equal(qp->rtt.samples, 1);
	assert_int_equal(qp->rtt.min_ns, RTT); /* the newest delivered, sent once */
	/* PSN 4 has been out for RTT + 1.1 us: within PSN 12's RTT on its
	 * path (RTT + 0.3 us) plus the window (min RTT / 4 = 2 us). */
	assert_int_equal(droce_spray_lost_end(qp, false, now), 4);
	/* Stuck (nothing new can go out): no window, lost now. */
	assert_int_equal(droce_spray_lost_end(qp, true, now), 16);
	/* Just inside, then past the window: lost, everything after SACKed. */
	assert_int_equal(droce_spray_lost_end(qp, false, ts4 + RTT + 3 * GAP + 2 * US - 1), 4);
	assert_int_equal(droce_spray_lost_end(qp, false, ts4 + RTT + 3 * GAP + 2 * US), 16);
	qp_free(qp);
}

/* A resent PSN's delivery is no RTT sample (Karn): which copy arrived? */
static void test_resend_no_sample(void **state)
{
	(void)state;
	struct droce_qp *qp = qp_new();
	uint64_t t0 = 10 * US;
	uint64_t t = send(qp, 0, 8, t0);
	send(qp, 3, 4, t + 5 * US); /* PSN 3 again */
	uint32_t got[] = {4, 5, 6, 7};
	sack(qp, 3, 8, got, 4);
	droce_spray_on_sack(qp, t0 + 7 * GAP + RTT);
	assert_int_equal(qp->rtt.samples, 1);
	assert_int_equal(qp->rtt.min_ns, RTT); /* PSN 7's */
	/* The resend of 3 is delivered: only the ambiguous 3 is new. */
	sack(qp, 8, 8, NULL, 0);
	droce_spray_on_sack(qp, t + 5 * US + 2 * RTT);
	assert_int_equal(qp->rtt.samples, 1);
	assert_int_equal(qp->rtt.min_ns, RTT);
	qp_free(qp);
}

/* Plain ACKs (no SACK) bring the cumulative ACK far past the ring's last
 * look; the slots of PSNs that old hold later PSNs' send times, some of
 * packets still in flight. */
static void test_ring_slot_reused(void **state)
{
	(void)state;
	struct droce_qp *qp = qp_new();
	uint64_t t0 = 10 * US;
	send(qp, 0, 300, t0);
	/* 0..279 delivered, 280 lost, 281..284 SACKed, 285..299 in flight. */
	uint32_t got[] = {281, 282, 283, 284};
	sack(qp, 280, 285, got, 4);
	droce_spray_on_sack(qp, t0 + 284 * GAP + RTT);
	/* PSN 43's slot holds PSN 299's send time: taken for 43, its "RTT"
	 * would be 1.5 us, less than any round trip. */
	assert_int_equal(qp->rtt.samples, 1);
	assert_int_equal(qp->rtt.min_ns, RTT);
	qp_free(qp);
}

/* Path 2 (PSNs 2, 10, 18, ...) dies: every packet on it lost, the others
 * delivered. The next packet on it must not follow 10 and 18. */
static void test_dead_path_moves_at_once(void **state)
{
	(void)state;
	struct droce_qp *qp = qp_new();
	uint64_t t0 = 10 * US, ts18 = t0 + 18 * GAP;
	send(qp, 0, 26, t0);
	uint32_t got[32];
	unsigned n = 0;
	for (uint32_t p = 3; p < 26; p++)
		if (p % DROCE_SR_PATHS != 2)
			got[n++] = p;
	sack(qp, 2, 26, got, n);
	droce_spray_on_sack(qp, t0 + 25 * GAP + RTT);
	uint16_t old = qp->tp.sr->path_sport[2];
	/* Within RACK's window for 18 (RTT + min RTT / 4) 26 takes path 2 as
	 * it is; past it, 10 and 18 are both lost by time and the path moves
	 * before 26 leaves on it. */
	struct droce_qp *early = qp_clone(qp);
	assert_int_equal(droce_sr_sport(early, 26, ts18 + RTT + 2 * US - 1), old);
	assert_int_equal(early->stats.spray_moves, 0);
	qp_free(early);
	uint16_t sp = droce_sr_sport(qp, 26, ts18 + RTT + 2 * US);
	assert_int_not_equal(sp, old);
	assert_int_equal(sp, qp->tp.sr->path_sport[2]);
	assert_int_equal(qp->stats.spray_moves, 1);
	qp_free(qp);
}

/* One packet of path 2 lost (random loss), long past its window: the
 * path stays. */
static void test_one_loss_no_move(void **state)
{
	(void)state;
	struct droce_qp *qp = qp_new();
	uint64_t t0 = 10 * US;
	send(qp, 0, 26, t0);
	uint32_t got[] = {19, 20, 21, 22, 23, 24, 25};
	sack(qp, 18, 26, got, 7);
	droce_spray_on_sack(qp, t0 + 25 * GAP + RTT);
	uint64_t now = t0 + 25 * GAP + RTT + 5 * US;
	assert_true(droce_psn_diff(droce_spray_lost_end(qp, false, now), 18) > 0); /* lost */
	uint16_t old = qp->tp.sr->path_sport[2];
	assert_int_equal(droce_sr_sport(qp, 26, now), old);
	assert_int_equal(qp->stats.spray_moves, 0);
	qp_free(qp);
}

/* Path 5 behind a queue: twice and more the fastest path's RTT. */
static void test_slow_path_moves(void **state)
{
	(void)state;
	struct droce_qp *qp = qp_new();
	uint64_t now = 100 * US;
	for (unsigned i = 0; i < DROCE_SR_PATHS; i++)
		qp->tp.sr->path_rtt[i] = RTT + i * 100;
	qp->rtt.srtt_ns = RTT;
	qp->tp.sr->path_rtt[5] = 2 * RTT; /* exactly twice: stays */
	droce_spray_on_sack(qp, now);
	assert_int_equal(qp->stats.spray_moves, 0);
	uint16_t old = qp->tp.sr->path_sport[5];
	qp->tp.sr->path_rtt[5] = 2 * RTT + 1;
	droce_spray_on_sack(qp, now);
	assert_int_equal(qp->stats.spray_moves, 1);
	assert_int_not_equal(qp->tp.sr->path_sport[5], old);
	/* Measured again, still slow: not before a smoothed RTT has passed. */
	qp->tp.sr->path_rtt[5] = 3 * RTT;
	droce_spray_on_sack(qp, now + RTT - 1);
	assert_int_equal(qp->stats.spray_moves, 1);
	droce_spray_on_sack(qp, now + RTT);
	assert_int_equal(qp->stats.spray_moves, 2);
	qp_free(qp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hole_lost_by_time),
		cmocka_unit_test(test_resend_no_sample),
		cmocka_unit_test(test_ring_slot_reused),
		cmocka_unit_test(test_dead_path_moves_at_once),
		cmocka_unit_test(test_one_loss_no_move),
		cmocka_unit_test(test_slow_path_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
