/* SPDX-License-Identifier: BSD-3-Clause */
/* Selective repeat: the responder's bitmap, the SACK, resend-only-missing (sr.h). */
#include "transport/sr.h"

#include "transport/spray.h"

#include "wire/psn.h"

/* ------------------------------------------------------------ bitmaps -- */

static bool map_test(const uint64_t *m, uint32_t i)
{
	return i < DROCE_SR_BITS && (m[i / 64u] >> (i % 64u)) & 1u;
}

static void map_set(uint64_t *m, uint32_t i)
{
	if (i < DROCE_SR_BITS)
		m[i / 64u] |= 1ull << (i % 64u);
}

/* Bit i becomes bit i - n (the base moved n PSNs on). */
static void map_shift(uint64_t *m, uint32_t n)
{
	if (n >= DROCE_SR_BITS) {
		for (unsigned w = 0; w < DROCE_SR_WORDS; w++)
			m[w] = 0;
		return;
	}
	unsigned wn = n / 64u, bn = n % 64u;
	for (unsigned w = 0; w < DROCE_SR_WORDS; w++) {
		uint64_t lo = w + wn < DROCE_SR_WORDS ? m[w + wn] : 0;
		uint64_t hi = w + wn + 1 < DROCE_SR_WORDS ? m[w + wn + 1] : 0;
		m[w] = bn ? (lo >> bn) | (hi << (64u - bn)) : lo;
	}
}

/* ---------------------------------------------------------- responder -- */

/* The responder's bitmap starts at ePSN. */
static void rx_sync(struct droce_tp *t)
{
	int32_t d = droce_psn_diff(t->epsn, t->sr->rx_base);
	if (d > 0)
		map_shift(t->sr->rx_map, (uint32_t)d);
	if (d != 0)
		t->sr->rx_base = t->epsn;
}

static int imm_find(const struct droce_tp *t, uint32_t psn)
{
	for (unsigned i = 0; i < DROCE_SR_IMM; i++)
		if (t->sr->rx_imm[i].used && t->sr->rx_imm[i].psn == psn)
			return (int)i;
	return -1;
}

static void imm_forget_before(struct droce_tp *t)
{
	/* entries ePSN passed in order (a resend executed there) */
	for (unsigned i = 0; i < DROCE_SR_IMM; i++)
		if (t->sr->rx_imm[i].used && droce_psn_diff(t->sr->rx_imm[i].psn, t->epsn) < 0)
			t->sr->rx_imm[i].used = false;
}

bool droce_sr_resp_ooo(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct droce_tp *t = &qp->tp;
	uint32_t psn = pkt->h.bth.psn;
	rx_sync(t);
	if (droce_psn_diff(droce_psn_add(psn, 1), t->sr->rx_hi) > 0)
		t->sr->rx_hi = droce_psn_add(psn, 1);
	uint32_t off = (uint32_t)droce_psn_diff(psn, t->sr->rx_base);
	if (map_test(t->sr->rx_map, off)) {
		qp->stats.dup_reqs++; /* placed already: a needless resend */
		return false;
	}
	bool ok = pkt->h.bth.opcode == DROCE_OP_RC_RDMA_WRITE_ONLY;
	if (pkt->h.bth.opcode == DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) {
		imm_forget_before(t);
		for (unsigned i = 0; !ok && i < DROCE_SR_IMM; i++)
			ok = !t->sr->rx_imm[i].used; /* room to keep its immediate */
	}
	if (!ok || off >= DROCE_SR_BITS) {
		qp->stats.sr_ooo_dropped++;
		return false;
	}
	return true;
}

void droce_sr_resp_placed(struct droce_qp *qp, const struct droce_pkt *pkt)
{
	struct droce_tp *t = &qp->tp;
	uint32_t psn = pkt->h.bth.psn;
	map_set(t->sr->rx_map, (uint32_t)droce_psn_diff(psn, t->sr->rx_base));
	qp->stats.sr_ooo_placed++;
	if (pkt->h.bth.opcode != DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
		return;
	for (unsigned i = 0; i < DROCE_SR_IMM; i++) {
		if (!t->sr->rx_imm[i].used) {
			t->sr->rx_imm[i].used = true;
			t->sr->rx_imm[i].psn = psn;
			t->sr->rx_imm[i].imm = pkt->h.ext.imm;
			t->sr->rx_imm[i].len = pkt->h.ext.reth.dma_len;
			return;
		}
	}
}

void droce_sr_resp_take(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	int k = imm_find(t, t->epsn);
	if (k >= 0)
		t->sr->rx_imm[k].used = false;
	map_shift(t->sr->rx_map, 1);
	t->epsn = t->ack_psn = t->sr->rx_base = droce_psn_add(t->epsn, 1);
	t->msn = (t->msn + 1) & DROCE_MSN_MASK;
}

bool droce_sr_resp_advance(struct droce_qp *qp, bool *imm_at, struct droce_sr_imm *imm)
{
	struct droce_tp *t = &qp->tp;
	bool moved = false;
	*imm_at = false;
	if (droce_psn_diff(t->epsn, t->sr->rx_hi) > 0)
		t->sr->rx_hi = t->epsn; /* a READ took PSNs past everything seen */
	rx_sync(t);
	/* Every placed packet is a WRITE_ONLY: one message each (9.7.5.1.1
	 * MSN), executed now that every PSN before it is; one with immediate
	 * waits for its receive WQE. */
	while (t->sr->rx_map[0] & 1u) {
		int k = imm_find(t, t->epsn);
		if (k >= 0) {
			*imm_at = true;
			imm->imm = t->sr->rx_imm[k].imm;
			imm->len = t->sr->rx_imm[k].len;
			return true;
		}
		droce_sr_resp_take(qp);
		moved = true;
	}
	return moved;
}

bool droce_sr_resp_sack(struct droce_qp *qp, uint32_t ack_psn, uint8_t out[DROCE_SACK_LEN])
{
	struct droce_tp *t = &qp->tp;
	if (droce_psn_diff(t->sr->rx_hi, t->epsn) <= 0)
		return false; /* nothing seen past ePSN: a plain ACK says it all */
	rx_sync(t);
	struct droce_sack s = {.hi_psn = t->sr->rx_hi};
	uint32_t first = droce_psn_add(ack_psn, 1);
	for (uint32_t i = 0; i < DROCE_SACK_BITS; i++) {
		int32_t off = droce_psn_diff(droce_psn_add(first, i), t->sr->rx_base);
		if (off >= 0 && map_test(t->sr->rx_map, (uint32_t)off))
			s.map[i / 64u] |= 1ull << (i % 64u);
	}
	droce_sack_build(out, &s);
	qp->stats.sack_sent++;
	return true;
}

/* ---------------------------------------------------------- requester -- */

/* The requester's bitmap starts at una_psn. */
static void tx_sync(struct droce_tp *t)
{
	int32_t d = droce_psn_diff(t->una_psn, t->sr->tx_base);
	if (d > 0) {
		map_shift(t->sr->tx_map, (uint32_t)d);
		t->sr->tx_base = t->una_psn;
	}
	if (droce_psn_diff(t->sr->resent_to, t->una_psn) < 0)
		t->sr->resent_to = t->una_psn;
	if (droce_psn_diff(t->sr->peer_hi, t->una_psn) < 0)
		t->sr->peer_hi = t->una_psn;
}

static bool sacked(const struct droce_tp *t, uint32_t psn)
{
	int32_t off = droce_psn_diff(psn, t->sr->tx_base);
	return off >= 0 && map_test(t->sr->tx_map, (uint32_t)off);
}

uint32_t droce_sr_flight(const struct droce_qp *qp)
{
	uint32_t cap = DROCE_DEFAULT_SR_FLIGHT_PKTS < DROCE_SR_BITS ? DROCE_DEFAULT_SR_FLIGHT_PKTS
								      : DROCE_SR_BITS;
	if (!qp->rtt.samples || !qp->rtt.min_ns)
		return cap;
	/* IRN's BDP cap: the line rate over the base RTT, in packets. */
	double bdp = qp->ctx->p.line_rate_gbps / 8.0 * (double)qp->rtt.min_ns;
	uint64_t pkts = (uint64_t)(bdp / qp->mtu) + 1u;
	if (pkts < 8)
		pkts = 8; /* a few packets at least, or a SACK never sees past a hole */
	return pkts < cap ? (uint32_t)pkts : cap;
}

void droce_sr_on_sack(struct droce_qp *qp, uint32_t ack_psn, const struct droce_sack *s, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	qp->stats.sack_rcvd++;
	tx_sync(t);
	/* Bits only ever say "placed": an old SACK is stale, never wrong. A bit
	 * for a PSN not yet sent is a lie (or a peer's bug): kept, it would
	 * mark that PSN placed before it ever left, and its loss would go
	 * unrepaired. Only [una, snd_max) is taken; the rest is counted. */
	uint32_t first = droce_psn_add(ack_psn, 1);
	int32_t sent = droce_psn_diff(t->snd_max, first); /* bits below this are PSNs sent */
	for (uint32_t w = 0; w < DROCE_SACK_BITS / 64u; w++) {
		for (uint64_t m = s->map[w]; m; m &= m - 1) {
			uint32_t i = w * 64u + (uint32_t)__builtin_ctzll(m);
			if ((int32_t)i >= sent) {
				qp->stats.sack_bad_bits++;
				continue;
			}
			int32_t off = droce_psn_diff(droce_psn_add(first, i), t->sr->tx_base);
			if (off >= 0)
				map_set(t->sr->tx_map, (uint32_t)off);
		}
	}
	uint32_t hi = s->hi_psn;
	if (droce_psn_diff(hi, t->snd_max) > 0)
		hi = t->snd_max; /* never past what was sent */
	if (droce_psn_diff(hi, t->sr->peer_hi) > 0)
		t->sr->peer_hi = hi;
	/* A hole the responder has seen DUPTHRESH PSNs past is lost (reordering
	 * shallower than that resends nothing). When nothing new can go out
	 * (the flight is at its cap, which counts from the hole, or every
	 * posted WQE is sent), no later packet will ever make the count: then
	 * any hole below what the responder has seen is (RFC 5827's early
	 * retransmit), or only the ACK timeout would repair it. */
	bool stuck = t->sq_new == qp->sq_tail ||
		     (uint32_t)droce_psn_diff(t->snd_max, t->una_psn) >= droce_sr_flight(qp);
	uint32_t lost_end;
	if (qp->transport == DROCE_TRANSPORT_SR_SPRAY)
		droce_spray_on_sack(qp, now);
	if (qp->transport == DROCE_TRANSPORT_SR_SPRAY && qp->rtt.min_ns)
		/* Sprayed paths of different delay reorder by their delay
		 * difference, whatever the PSN count: loss by time (spray.c). */
		lost_end = droce_spray_lost_end(qp, stuck, now);
	else
		lost_end = stuck ? t->sr->peer_hi
				 : droce_psn_add(t->sr->peer_hi,
						 DROCE_PSN_MASK + 1u - DROCE_DEFAULT_SR_DUPTHRESH);
	if (droce_psn_diff(lost_end, t->sr->resent_to) <= 0)
		return;
	uint32_t p = t->sr->resent_to;
	while (droce_psn_diff(p, lost_end) < 0 && sacked(t, p))
		p = droce_psn_add(p, 1);
	if (droce_psn_diff(p, lost_end) >= 0)
		return;
	t->sr->resent_to = lost_end;
	if (t->sr->round) {
		/* The cursor is still resending the last round's holes, all
		 * before these: it goes on to them. */
		t->sr->resend_end = lost_end;
		return;
	}
	qp->stats.sr_rounds++;
	if (qp->transport == DROCE_TRANSPORT_SR_SPRAY)
		droce_spray_round(qp);
	qp->cc->on_loss(&qp->ccs, false, now);
	if (droce_psn_diff(t->cur_psn, p) < 0 && droce_psn_diff(t->cur_psn, t->snd_max) < 0) {
		/* A go-back is already resending from before the hole. */
		return;
	}
	t->sr->round = true;
	t->sr->resend_end = lost_end;
	droce_req_rewind(qp, p);
	droce_tmr_rewound(qp, now);
}

void droce_sr_renege(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	for (unsigned w = 0; w < DROCE_SR_WORDS; w++)
		t->sr->tx_map[w] = 0;
	t->sr->peer_hi = t->una_psn;
	qp->stats.sack_reneged++;
}

void droce_sr_go_back(struct droce_qp *qp, uint32_t psn)
{
	struct droce_tp *t = &qp->tp;
	t->sr->round = false;
	t->sr->resent_to = t->una_psn;
	/* The responder asks for @p psn again (an RNR NAK for a WRITE with
	 * immediate it placed ahead and has no receive WQE for): not SACKed. */
	tx_sync(t);
	int32_t off = droce_psn_diff(psn, t->sr->tx_base);
	if (off >= 0 && (uint32_t)off < DROCE_SR_BITS)
		t->sr->tx_map[off / 64] &= ~(1ull << (off % 64));
}

enum droce_sr_tx droce_sr_tx_check(struct droce_qp *qp, uint32_t psn)
{
	struct droce_tp *t = &qp->tp;
	tx_sync(t);
	if (t->sr->round && droce_psn_diff(psn, t->sr->resend_end) >= 0) {
		t->sr->round = false;
		return DROCE_SR_JUMP;
	}
	if (sacked(t, psn)) {
		qp->stats.sr_skipped++;
		return DROCE_SR_SKIP;
	}
	if (qp->transport == DROCE_TRANSPORT_SR_SPRAY)
		droce_spray_resent(qp, psn);
	return DROCE_SR_SEND;
}
