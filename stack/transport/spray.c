/* SPDX-License-Identifier: BSD-3-Clause */
/* sr-spray: a QP's packets over DROCE_SR_PATHS UDP source ports, and the
 * per-path signal that moves a path (spray.h). */
#include "transport/spray.h"

#include "wire/psn.h"

_Static_assert(DROCE_SR_PATHS == DROCE_SPRAY_PATHS, "one path count");
/* Resends in a row on one path that move it to a new source port. */
#define PATH_MOVE_STREAK 3u

/* A17.5.1.1: RoCEv2's source ports 0xC000..0xFFFF carry flow entropy; each
 * path's is a hash of the QP's own and the path (and its re-draws), so a
 * seeded run repeats. */
static uint16_t path_draw(const struct droce_qp *qp, unsigned i, unsigned gen)
{
	uint32_t h = (uint32_t)qp->tmpl.net.sport * 0x9E3779B1u ^ (i + 1u) * 0x85EBCA77u ^
		     (gen + 1u) * 0xC2B2AE3Du;
	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return (uint16_t)(0xC000u | (h & 0x3FFFu));
}

static void path_move(struct droce_qp *qp, unsigned i);

void droce_sr_rts(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	for (unsigned i = 0; i < DROCE_SR_PATHS; i++) {
		t->sr->path_sport[i] = i ? path_draw(qp, i, 0) : qp->tmpl.net.sport;
		qp->stats.spray_sport[i] = t->sr->path_sport[i];
	}
	t->sr->lost_streak = 0;
	t->sr->dl_una = t->sr->tx_base;
	t->sr->reo_mult = 1;
}


/* The per-path signal: a resend counts against the path its PSN took.
 * Resends come in PSN order, so a dead or overfull path (every packet on
 * it lost, as a failed link or a tail-dropping queue does) makes resends
 * in a row on one path, which random loss rarely does: that path moves to
 * a new source port, i.e. very likely another ECMP choice. */
void droce_spray_resent(struct droce_qp *qp, uint32_t psn)
{
	struct droce_tp *t = &qp->tp;
	unsigned i = psn % DROCE_SR_PATHS;
	qp->stats.spray_resent[i]++;
	if (t->sr->lost_path == i && t->sr->lost_streak) {
		t->sr->lost_streak++;
	} else {
		t->sr->lost_path = (uint8_t)i;
		t->sr->lost_streak = 1;
	}
	if (t->sr->lost_streak >= PATH_MOVE_STREAK) {
		t->sr->lost_streak = 0;
		path_move(qp, i);
	}
}

/* ------------------------------------------- time-based loss detection -- */

#define SLOT(psn) ((psn) % DROCE_SR_BITS)

static bool bit(const uint64_t *m, uint32_t psn)
{
	return (m[SLOT(psn) / 64u] >> (SLOT(psn) % 64u)) & 1u;
}

static void bit_put(uint64_t *m, uint32_t psn, bool v)
{
	uint64_t b = 1ull << (SLOT(psn) % 64u);
	m[SLOT(psn) / 64u] = v ? m[SLOT(psn) / 64u] | b : m[SLOT(psn) / 64u] & ~b;
}

static bool is_sacked(const struct droce_tp *t, uint32_t psn)
{
	int32_t off = droce_psn_diff(psn, t->sr->tx_base);
	return off >= 0 && (uint32_t)off < DROCE_SR_BITS &&
	       (t->sr->tx_map[(uint32_t)off / 64u] >> ((uint32_t)off % 64u)) & 1u;
}

static void path_move(struct droce_qp *qp, unsigned i)
{
	struct droce_tp *t = &qp->tp;
	t->sr->path_gen++;
	t->sr->path_sport[i] = path_draw(qp, i, t->sr->path_gen);
	qp->stats.spray_sport[i] = t->sr->path_sport[i];
	qp->stats.spray_moves++;
	t->sr->path_wait[i] = 0;
	t->sr->path_rtt[i] = 0; /* a new ECMP choice: its delay is unknown */
	t->sr->path_moved[i] = t->sr->path_sent[i] + 1; /* what was sent before took the old port */
}

/* PSN p (sent at ts[p]) is known delivered at @p now: a sample for the
 * paths and RACK. @return its RTT when it was sent once (Karn), else 0. */
static uint64_t delivered(struct droce_qp *qp, uint32_t psn, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	uint64_t ts = t->sr->tx_ts[SLOT(psn)];
	if (!ts || now < ts)
		return 0;
	uint64_t rtt = now - ts;
	uint64_t min = qp->rtt.min_ns;
	if (bit(t->sr->tx_again, psn)) {
		/* Delivered sooner after its resend than any round trip takes:
		 * the first copy arrived, the resend was spurious and the
		 * reordering window too small (RFC 8985 6.2 grows it on DSACK;
		 * droce has none, the timing says it). */
		if (min && rtt < min / 2) {
			if (t->sr->reo_mult < 16)
				t->sr->reo_mult++;
			t->sr->reo_calm = 0;
			return 0;
		}
		if (min && rtt < min)
			return 0; /* ambiguous: no sample */
	} else {
		unsigned i = psn % DROCE_SR_PATHS;
		t->sr->path_rtt[i] = t->sr->path_rtt[i] ? (7 * t->sr->path_rtt[i] + rtt) / 8 : rtt;
		/* Everything sent on path i before ts is delivered or lost; what
		 * is still out on it was sent after. */
		if (t->sr->path_wait[i] && t->sr->path_wait[i] <= ts)
			t->sr->path_wait[i] = t->sr->path_sent[i] > ts ? ts + 1 : 0;
	}
	if (ts > t->sr->rack_ts) {
		t->sr->rack_ts = ts;
		t->sr->rack_rtt = rtt;
	}
	return bit(t->sr->tx_again, psn) ? 0 : rtt;
}

/* RFC 8985 6.2: PSN p, not SACKed, is lost when a packet sent after it was
 * delivered and it has been out for longer than that one's RTT plus the
 * reordering window: a quarter of the min RTT to start (paths of different
 * delay reorder by their delay difference, not by a PSN count), grown on a
 * spurious resend, at most the smoothed RTT. RACK's RTT is that of the
 * newest delivery, which on sprayed paths may have taken a shorter queue:
 * p is given its own path's smoothed RTT when that is longer (a slower
 * path is not a lossy one). @p stuck: nothing new can go out, so no later
 * SACK may come to look again (droce has no RACK reordering timer, 6.3):
 * neither the window nor the path's RTT is waited for then. */
static bool rack_lost(const struct droce_qp *qp, uint32_t p, bool stuck, uint64_t now)
{
	const struct droce_tp *t = &qp->tp;
	uint64_t ts = t->sr->tx_ts[SLOT(p)];
	if (is_sacked(t, p) || !ts || ts > t->sr->rack_ts)
		return false;
	uint64_t rtt = t->sr->rack_rtt, reo = 0;
	if (!stuck) {
		reo = qp->rtt.min_ns * (t->sr->reo_mult ? t->sr->reo_mult : 1u) / 4u;
		if (qp->rtt.srtt_ns && reo > qp->rtt.srtt_ns)
			reo = qp->rtt.srtt_ns;
		if (t->sr->path_rtt[p % DROCE_SR_PATHS] > rtt)
			rtt = t->sr->path_rtt[p % DROCE_SR_PATHS];
	}
	return now >= ts + rtt + reo;
}

/* The packet before @p psn on its path, sent on the path's current port and
 * not yet known delivered, is lost by RACK's rule, and so is the one before
 * it: two in a row, which 1 % random loss makes once in 10^4. The path is
 * dead (a failed link, a black hole) or its queue overflows, and @p psn
 * must not follow them. */
static bool path_dead(const struct droce_qp *qp, uint32_t psn, uint64_t now)
{
	const struct droce_tp *t = &qp->tp;
	uint32_t p = psn;
	for (unsigned k = 0; k < 2; k++) {
		p = droce_psn_add(p, DROCE_PSN_MASK + 1u - DROCE_SR_PATHS);
		if (droce_psn_diff(p, t->una_psn) < 0 || droce_psn_diff(p, t->snd_max) >= 0 ||
		    t->sr->tx_ts[SLOT(p)] < t->sr->path_moved[psn % DROCE_SR_PATHS] ||
		    !rack_lost(qp, p, false, now))
			return false;
	}
	return true;
}

uint16_t droce_sr_sport(struct droce_qp *qp, uint32_t psn, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	unsigned i = psn % DROCE_SR_PATHS;
	if (now == 0)
		now = 1; /* 0 means "no send time" in the ring */
	/* A path whose last packets are lost by time takes no more: it moves
	 * before this one leaves, not after its resends make a streak. */
	if (path_dead(qp, psn, now))
		path_move(qp, i);
	qp->stats.spray_pkts[i]++;
	bit_put(t->sr->tx_again, psn, droce_psn_diff(psn, t->snd_max) < 0);
	if (droce_psn_diff(psn, t->snd_max) >= 0)
		bit_put(t->sr->dl_seen, psn, false);
	t->sr->tx_ts[SLOT(psn)] = now;
	t->sr->path_sent[i] = now;
	if (!t->sr->path_wait[i])
		t->sr->path_wait[i] = now;
	return t->sr->path_sport[i];
}

/* A path whose smoothed RTT is far above the fastest path's sits behind a
 * long queue the others avoid (8 ports over a few spines rarely spread
 * evenly): it moves, at most one path per smoothed RTT so that the new
 * choice is measured before the next. */
static void slow_path_move(struct droce_qp *qp, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	uint64_t lo = UINT64_MAX, hi = 0;
	unsigned slow = 0;
	if (!qp->rtt.srtt_ns || now < t->sr->slow_move_at + qp->rtt.srtt_ns)
		return;
	for (unsigned i = 0; i < DROCE_SR_PATHS; i++) {
		uint64_t r = t->sr->path_rtt[i];
		if (!r)
			return; /* not every path measured */
		lo = r < lo ? r : lo;
		if (r > hi) {
			hi = r;
			slow = i;
		}
	}
	if (hi > 2 * lo) {
		t->sr->slow_move_at = now;
		path_move(qp, slow);
	}
}

/* The newest packet sent once among those just delivered, and its RTT. */
struct sample {
	uint64_t ts, rtt;
};

static void take(struct droce_qp *qp, uint32_t psn, uint64_t now, struct sample *best)
{
	uint64_t rtt = delivered(qp, psn, now);
	if (rtt && qp->tp.sr->tx_ts[SLOT(psn)] > best->ts) {
		best->ts = qp->tp.sr->tx_ts[SLOT(psn)];
		best->rtt = rtt;
	}
}

void droce_spray_on_sack(struct droce_qp *qp, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	/* The cumulative ACK delivered everything below una_psn, the SACK the
	 * bits: each newly delivered PSN is one sample. */
	struct sample best = {0, 0};
	uint32_t p = t->sr->dl_una;
	/* Plain ACKs (no SACK: nothing out of order) do not come here, so
	 * dl_una may be far behind: a slot holds PSN p only while nothing
	 * DROCE_SR_BITS past it was sent, older slots hold later PSNs' times. */
	if (droce_psn_diff(t->snd_max, p) > (int32_t)DROCE_SR_BITS)
		p = droce_psn_add(t->snd_max, DROCE_PSN_MASK + 1u - DROCE_SR_BITS);
	for (; droce_psn_diff(p, t->una_psn) < 0; p = droce_psn_add(p, 1)) {
		if (!bit(t->sr->dl_seen, p))
			take(qp, p, now, &best);
		bit_put(t->sr->dl_seen, p, false);
	}
	t->sr->dl_una = t->una_psn;
	for (p = t->una_psn; droce_psn_diff(p, t->sr->peer_hi) < 0; p = droce_psn_add(p, 1)) {
		if (is_sacked(t, p) && !bit(t->sr->dl_seen, p)) {
			bit_put(t->sr->dl_seen, p, true);
			take(qp, p, now, &best);
		}
	}
	/* The QP's RTT (and so the min RTT RACK and the BDP cap start from):
	 * the AckReq timings forget everything from a resend round's first
	 * hole on (Karn, rtt.h), and a sprayed QP's reordering starts rounds
	 * before its first AckReq is ACKed, so it may go without a sample for
	 * hundreds of microseconds. The ring times each PSN and knows which
	 * were sent once: the newest of them delivered is one sample per
	 * SACK, as the AckReq timing takes one per ACK. */
	if (best.rtt)
		droce_rtt_sample(&qp->rtt, best.rtt);

	/* A dead path (a failed link, a black hole): nothing sent on it has
	 * been delivered for a few RTTs while packets sent later on other
	 * paths were. It moves to a new source port at once, not after its
	 * resends make a streak. */
	uint64_t base = t->sr->rack_rtt > qp->rtt.min_ns ? t->sr->rack_rtt : qp->rtt.min_ns;
	for (unsigned i = 0; base && i < DROCE_SR_PATHS; i++) {
		uint64_t w = t->sr->path_wait[i];
		if (w && w < t->sr->rack_ts && now > w + 4 * base)
			path_move(qp, i);
	}
	slow_path_move(qp, now);
}

uint32_t droce_spray_lost_end(struct droce_qp *qp, bool stuck, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	uint32_t p;
	/* A resend lost again (its path dead, or full) is found the same
	 * way, by its resend's time: the next round starts from it, not after
	 * an ACK timeout. Resends go out in PSN order too. */
	if (!t->sr->round) {
		for (p = t->una_psn; droce_psn_diff(p, t->sr->resent_to) < 0; p = droce_psn_add(p, 1)) {
			if (is_sacked(t, p))
				continue;
			if (rack_lost(qp, p, stuck, now))
				t->sr->resent_to = p;
			break;
		}
	}
	/* First sends go out in PSN order, so from resent_to on the lost PSNs
	 * are a prefix of the holes. */
	for (p = t->sr->resent_to; droce_psn_diff(p, t->sr->peer_hi) < 0; p = droce_psn_add(p, 1)) {
		if (!is_sacked(t, p) && !rack_lost(qp, p, stuck, now))
			break;
	}
	return p;
}

void droce_spray_round(struct droce_qp *qp)
{
	/* RFC 8985 6.2: the window shrinks back after 16 recoveries with no
	 * spurious resend. */
	struct droce_tp *t = &qp->tp;
	if (++t->sr->reo_calm >= 16) {
		t->sr->reo_calm = 0;
		if (t->sr->reo_mult > 1)
			t->sr->reo_mult--;
	}
}
