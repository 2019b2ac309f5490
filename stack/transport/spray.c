/* SPDX-License-Identifier: BSD-3-Clause */
/* sr-spray: a QP's packets over DROCE_SR_PATHS UDP source ports, and the
 * per-path signal that moves a path (spray.h). */
#include "transport/spray.h"

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

void droce_sr_rts(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	for (unsigned i = 0; i < DROCE_SR_PATHS; i++) {
		t->sr.path_sport[i] = i ? path_draw(qp, i, 0) : qp->tmpl.net.sport;
		qp->stats.spray_sport[i] = t->sr.path_sport[i];
	}
	t->sr.lost_streak = 0;
}

uint16_t droce_sr_sport(struct droce_qp *qp, uint32_t psn)
{
	unsigned i = psn % DROCE_SR_PATHS;
	qp->stats.spray_pkts[i]++;
	return qp->tp.sr.path_sport[i];
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
	if (t->sr.lost_path == i && t->sr.lost_streak) {
		t->sr.lost_streak++;
	} else {
		t->sr.lost_path = (uint8_t)i;
		t->sr.lost_streak = 1;
	}
	if (t->sr.lost_streak >= PATH_MOVE_STREAK) {
		t->sr.lost_streak = 0;
		t->sr.path_gen++;
		t->sr.path_sport[i] = path_draw(qp, i, t->sr.path_gen);
		qp->stats.spray_sport[i] = t->sr.path_sport[i];
		qp->stats.spray_moves++;
	}
}
