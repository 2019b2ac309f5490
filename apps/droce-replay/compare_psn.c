/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "compare by-psn": the comparison of a scenario derived from a capture of
 * a lossy link (pcap/README.md). There the order and the number of each
 * side's retransmissions follow its timers, its window, when its poll loop
 * ran and what the network lost behind the capture point, none of which
 * the protocol defines, and a replay can reproduce only approximately. What
 * the protocol does define is compared per PSN (IBTA 9.7.1: a PSN names
 * one packet of a conversation, every copy of it is the same packet):
 *
 * requests (droce is the requester):
 *   - every request droce sends is, at its PSN, the packet the side sent
 *     there (opcode, headers, payload), or a READ re-requested from
 *     mid-message: the same READ's R_Key, its VA and length moved on by
 *     the packets before (9.7.5.1.5);
 *   - droce sends each new PSN in sequence, none past the side's last one
 *     (a PSN of the side's range no copy of which was captured is not
 *     compared: the capture cannot say what it carried);
 *   - droce sends every PSN the side sent (a re-request the side made at
 *     a PSN droce had no need to re-request from excepted, if it is one:
 *     the READ's R_Key, VA and length moved on by the packets before).
 * responses (droce is the responder):
 *   - READ response payload and atomic original values at each PSN are
 *     the side's; droce answers every PSN the side answered;
 *   - error NAKs (invalid request, remote access, remote operation) are
 *     the side's, in order;
 *   - where droce and the side both positively ACK a PSN, the MSN agrees;
 *   - an RNR NAK carries the side's timer;
 *   - the conversation ends in the same place: the highest PSN either
 *     acknowledges (an ACK, a READ's last response, an atomic ACK, or the
 *     PSN before a NAK or RNR NAK) and its MSN are the same.
 * Sequence NAKs and RNR NAKs themselves, and how many ACKs there are, are
 * not compared: which packets a responder saw out of sequence depends on
 * what the network lost and reordered before it and on the bursts its poll
 * loop took, which the capture does not show for a side behind the
 * network, nor exactly for one in front of it.
 */
#include <stdlib.h>
#include <string.h>

#include "compare_int.h"
#include "pmap.h"

static uint32_t psn_add(uint32_t a, uint32_t n)
{
	return droce_psn_add(a, n);
}

/* The path MTU of the scenario's QP whose peer this stream goes to (0: none). */
static unsigned stream_mtu(const struct droce_rp_scenario *s, const struct key *k)
{
	size_t alen = s->ip_version == 4 ? 4 : 16;
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].peer_qpn == k->dqpn && !memcmp(s->qps[i].peer_ip, k->ip, alen))
			return s->qps[i].mtu;
	return 0;
}

static uint32_t npkts(uint32_t len, unsigned mtu)
{
	return len && mtu ? (len + mtu - 1) / mtu : 1;
}

/* How many PSNs a packet takes: a READ request one per response packet (9.7.4.1.2). */
static uint32_t span(const struct item *i, unsigned mtu)
{
	if (i->p.h.bth.opcode == DROCE_OP_RC_RDMA_READ_REQUEST)
		return npkts(i->p.h.ext.reth.dma_len, mtu);
	return 1;
}

static bool is_read_resp(const struct item *i)
{
	return (i->p.op->flags & DROCE_OPF_READ) && (i->p.op->flags & DROCE_OPF_RESP);
}

/* The items of stream @p k in @p l, in order. */
static size_t *stream_items(const struct list *l, const struct key *k, size_t *n)
{
	size_t *v = malloc((l->n + 1) * sizeof(*v));
	*n = 0;
	for (size_t i = 0; v && i < l->n; i++)
		if (droce_rp_in_stream(&l->it[i], k))
			v[(*n)++] = i;
	return v;
}

/* Distance of @p psn from @p base in PSN space. */
static uint32_t off(uint32_t base, uint32_t psn)
{
	return (psn - base) & DROCE_PSN_MASK;
}

struct psnmap {
	struct hmap first;           /* PSN + 1 -> index of the first expected item there */
	struct hmap copies;          /* copy << 24 | PSN, + 1 -> index of that copy */
	struct hmap sent;            /* PSN + 1 -> droce sent one there */
	uint32_t lo, hi;             /* the stream's first PSN, and the one after its last */
	bool any;
};

static int map_expected(const struct list *e, const size_t *ve, size_t ne, unsigned mtu,
			struct psnmap *m)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < ne; i++) {
		const struct item *x = &e->it[ve[i]];
		uint32_t psn = x->p.h.bth.psn;
		if (!m->any) {
			m->any = true;
			m->lo = psn;
			m->hi = psn_add(psn, span(x, mtu));
		} else if (droce_rp_psn_before(psn, m->lo)) {
			m->lo = psn; /* its first packets lost before the capture point */
		}
		uint32_t end = psn_add(psn, span(x, mtu));
		if (droce_rp_psn_before(m->hi, end))
			m->hi = end;
		unsigned copy = 0;
		while (hget(&m->copies, ((uint64_t)copy << 24 | psn) + 1))
			copy++;
		if (hput(&m->copies, ((uint64_t)copy << 24 | psn) + 1, ve[i]))
			return -1;
		if (!copy && hput(&m->first, (uint64_t)psn + 1, ve[i]))
			return -1;
	}
	return 0;
}

static void map_free(struct psnmap *m)
{
	hfree(&m->first);
	hfree(&m->copies);
	hfree(&m->sent);
}

static bool in_range(const struct psnmap *m, uint32_t psn)
{
	return m->any && off(m->lo, psn) < off(m->lo, m->hi);
}

/* An expected READ request @p r whose later PSN @p psn droce re-requests with @p g (9.7.5.1.5). */
static bool re_request_of(const struct item *r, const struct item *g, unsigned mtu)
{
	if (r->p.h.bth.opcode != DROCE_OP_RC_RDMA_READ_REQUEST ||
	    g->p.h.bth.opcode != DROCE_OP_RC_RDMA_READ_REQUEST || !mtu)
		return false;
	uint32_t k = off(r->p.h.bth.psn, g->p.h.bth.psn);
	const struct droce_ext_fields *a = &r->p.h.ext, *b = &g->p.h.ext;
	return k > 0 && k < npkts(a->reth.dma_len, mtu) && b->reth.rkey == a->reth.rkey &&
	       b->reth.va == a->reth.va + (uint64_t)k * mtu &&
	       (uint64_t)b->reth.dma_len + (uint64_t)k * mtu == a->reth.dma_len;
}

/* The expected READ request whose response PSNs cover @p psn (not its first), or NULL. */
static const struct item *read_covering(const struct list *e, const size_t *ve, size_t ne,
					uint32_t psn, unsigned mtu)
{
	for (size_t i = 0; i < ne; i++) {
		const struct item *r = &e->it[ve[i]];
		if (r->p.h.bth.opcode != DROCE_OP_RC_RDMA_READ_REQUEST)
			continue;
		uint32_t k = off(r->p.h.bth.psn, psn);
		if (k > 0 && k < npkts(r->p.h.ext.reth.dma_len, mtu))
			return r;
	}
	return NULL;
}

static void report(FILE *out, const char *tag, const struct item *e, const struct item *g,
		   unsigned checks, const char *why)
{
	if (!out)
		return;
	char who[64];
	if (e && g) {
		struct sbuf d = { .n = 0 };
		droce_rp_diff(e, g, checks, &d);
		snprintf(who, sizeof(who), "capture #%u / droce #%u:", e->num, g->num);
		if (why && !*why) { /* a match */
			droce_rp_print_item(out, tag, who, g);
			return;
		}
		droce_rp_print_item(out, tag, who, e);
		droce_rp_print_item(out, "", "               got:", g);
		fprintf(out, "           -> %s%s\n", why ? why : d.b, why ? "" : " (by PSN)");
	} else {
		const struct item *i = e ? e : g;
		snprintf(who, sizeof(who), "%s #%u:", e ? "capture" : "droce", i->num);
		droce_rp_print_item(out, tag, who, i);
		if (why)
			fprintf(out, "           -> %s\n", why);
	}
}

/*
 * The side's copy at the PSN of @p g that droce's frame differs from
 * (@p same decides), or NULL when it agrees with all of them: every copy
 * of a PSN is the same packet, so droce's must equal each.
 */
static const struct item *differing_copy(const struct list *e, const struct psnmap *m,
					 const struct item *g,
					 bool (*same)(const struct item *, const struct item *, unsigned),
					 unsigned checks)
{
	for (unsigned copy = 0;; copy++) {
		size_t *x = hget(&m->copies, ((uint64_t)copy << 24 | g->p.h.bth.psn) + 1);
		if (!x)
			return NULL;
		if (!same(&e->it[*x], g, checks))
			return &e->it[*x];
	}
}

static bool same_request(const struct item *e, const struct item *g, unsigned checks)
{
	struct sbuf d = { .n = 0 };
	return droce_rp_diff(e, g, checks, &d) == 0;
}

/* A READ response: which packet of the READ starts a response depends on
 * where the re-request started, the bytes at a PSN do not; an atomic
 * answered again carries the current MSN. */
static bool same_answer(const struct item *e, const struct item *g, unsigned checks)
{
	if (is_read_resp(e) && is_read_resp(g))
		return e->p.h.payload_len == g->p.h.payload_len &&
		       !memcmp(e->p.payload, g->p.payload, e->p.h.payload_len);
	struct sbuf d = { .n = 0 };
	return e->p.h.bth.opcode == g->p.h.bth.opcode && e->p.h.ext.atomic_ack == g->p.h.ext.atomic_ack &&
	       droce_rp_diff(e, g, checks, &d) <= (e->p.h.ext.aeth.msn != g->p.h.ext.aeth.msn);
}

/* Record when droce sent its K-th copy of a PSN, for expect-gap (the capture's K-th). */
static void note_sent(const struct list *e, const struct psnmap *m, const struct item *g,
		      unsigned copy, uint64_t *sent_at, size_t nsent_at)
{
	size_t *x = hget(&m->copies, ((uint64_t)copy << 24 | g->p.h.bth.psn) + 1);
	if (x && e->it[*x].num < nsent_at && sent_at[e->it[*x].num] == UINT64_MAX)
		sent_at[e->it[*x].num] = g->t_ns;
}

static unsigned requests(const struct droce_rp_scenario *s, const struct list *e, const size_t *ve,
			 size_t ne, const struct list *g, const size_t *vg, size_t ng, unsigned mtu,
			 struct psnmap *m, FILE *out, uint64_t *sent_at, size_t nsent_at)
{
	unsigned bad = 0, unseen = 0;
	uint32_t next = m->lo;
	struct hmap copies = { 0 };
	for (size_t j = 0; j < ng; j++) {
		const struct item *gi = &g->it[vg[j]];
		uint32_t psn = gi->p.h.bth.psn;
		size_t *fi = hget(&m->first, (uint64_t)psn + 1);
		const struct item *ei = fi ? &e->it[*fi] : NULL;
		size_t *nc = hget(&copies, (uint64_t)psn + 1);
		unsigned copy = nc ? (unsigned)*nc : 0;
		if (hput(&copies, (uint64_t)psn + 1, copy + 1) || hput(&m->sent, (uint64_t)psn + 1, 1)) {
			bad++;
			break;
		}
		/* new PSNs go out in sequence (go-back-N resends what it sent) */
		bool fresh = !droce_rp_psn_before(psn, next);
		if (fresh && psn != next) {
			bad++;
			report(out, "DIFF", NULL, gi, s->checks, "a new PSN out of sequence");
		}
		if (fresh)
			next = psn_add(psn, span(gi, mtu));
		if (ei) {
			const struct item *x = differing_copy(e, m, gi, same_request, s->checks);
			if (x) {
				bad++;
				report(out, "DIFF", x, gi, s->checks, NULL);
			} else {
				note_sent(e, m, gi, copy, sent_at, nsent_at);
				if (out)
					report(out, "ok", ei, gi, s->checks, "");
			}
			continue;
		}
		const struct item *rd = read_covering(e, ve, ne, psn, mtu);
		if (rd && re_request_of(rd, gi, mtu)) {
			if (out)
				report(out, "ok", rd, gi, s->checks, "a re-request of its remaining bytes");
			continue;
		}
		if (!rd && in_range(m, psn)) {
			unseen++;
			continue;
		}
		bad++;
		report(out, "EXTRA", NULL, gi, s->checks,
		       rd ? "inside the READ of the capture frame named, and no re-request of its rest"
			  : "a PSN the side never sent");
	}
	hfree(&copies);
	for (size_t i = 0; i < ne; i++) {
		const struct item *ei = &e->it[ve[i]];
		uint32_t psn = ei->p.h.bth.psn;
		size_t *fi = hget(&m->first, (uint64_t)psn + 1);
		if (!fi || *fi != ve[i] || hget(&m->sent, (uint64_t)psn + 1))
			continue;
		/* a re-request of the side's from where droce had no need to;
		 * any other packet inside a READ's PSNs is one droce must send */
		const struct item *rd = read_covering(e, ve, ne, psn, mtu);
		if (rd && re_request_of(rd, ei, mtu))
			continue;
		bad++;
		report(out, "MISSING", ei, NULL, s->checks, "droce never sent this PSN");
	}
	if (unseen && out)
		fprintf(out, "  (%u requests of droce's at PSNs no copy of which the capture holds: not compared)\n",
			unseen);
	return bad;
}

/* What an acknowledging frame says: the highest PSN it acknowledges and the MSN it carries. */
static bool acked(const struct item *i, uint32_t *psn, uint32_t *msn)
{
	if (!(i->p.op->hdrs & DROCE_HDR_AETH))
		return false; /* READ_RESPONSE_MIDDLE */
	uint8_t syn = i->p.h.ext.aeth.syndrome, kind = syn & DROCE_AETH_TYPE_MASK;
	*msn = i->p.h.ext.aeth.msn;
	if (is_read_resp(i) && !(i->p.op->flags & DROCE_OPF_LAST))
		return false; /* READ_RESPONSE_FIRST: the READ is not done */
	if (kind == DROCE_AETH_ACK) {
		*psn = i->p.h.bth.psn;
		return true;
	}
	if (kind == DROCE_AETH_NAK || kind == DROCE_AETH_RNR_NAK) {
		/* a responder answers in order (9.7.5.2): a NAK of either kind
		 * acknowledges what came before the PSN it refuses */
		*psn = psn_add(i->p.h.bth.psn, DROCE_PSN_MASK);
		return true;
	}
	return false;
}

static bool error_nak(const struct item *i)
{
	if (!is_ack_frame(i))
		return false;
	uint8_t syn = i->p.h.ext.aeth.syndrome;
	return (syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_NAK &&
	       (syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR;
}

static bool rnr_nak(const struct item *i)
{
	return is_ack_frame(i) &&
	       (i->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_RNR_NAK;
}

/* The frame acknowledging the highest PSN (the last of those, at a tie), relative to @p base. */
static const struct item *final_ack(const struct list *l, const size_t *v, size_t n, uint32_t base)
{
	const struct item *best = NULL;
	uint32_t best_off = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t psn, msn;
		const struct item *x = &l->it[v[i]];
		if (!acked(x, &psn, &msn))
			continue;
		/* PSNs just before the base: a NAK for the first packet */
		uint32_t o = psn_add(off(base, psn), 1);
		if (!best || o >= best_off) {
			best = x;
			best_off = o;
		}
	}
	return best;
}

static unsigned responses(const struct droce_rp_scenario *s, const struct list *e, const size_t *ve,
			  size_t ne, const struct list *g, const size_t *vg, size_t ng, FILE *out,
			  uint64_t *sent_at, size_t nsent_at)
{
	unsigned bad = 0, unseen = 0;
	struct psnmap m;
	/* Data responses (READ responses, atomic ACKs) by PSN; the PSN range from every response. */
	size_t *vd = malloc((ne + 1) * sizeof(*vd)), nd = 0;
	if (!vd)
		return 1;
	for (size_t i = 0; i < ne; i++)
		if (!is_ack_frame(&e->it[ve[i]]))
			vd[nd++] = ve[i];
	if (map_expected(e, vd, nd, 0, &m)) {
		free(vd);
		return 1;
	}
	struct psnmap all;
	if (map_expected(e, ve, ne, 0, &all)) {
		free(vd);
		map_free(&m);
		return 1;
	}
	struct hmap copies = { 0 };
	const struct item *rnr_e = NULL;
	for (size_t i = 0; i < ne && !rnr_e; i++)
		if (rnr_nak(&e->it[ve[i]]))
			rnr_e = &e->it[ve[i]];
	size_t ie_err = 0;
	for (size_t j = 0; j < ng; j++) {
		const struct item *gi = &g->it[vg[j]];
		uint32_t psn = gi->p.h.bth.psn;
		if (is_ack_frame(gi)) {
			if (error_nak(gi)) {
				/* the next error NAK of the side's */
				while (ie_err < ne && !error_nak(&e->it[ve[ie_err]]))
					ie_err++;
				struct sbuf d = { .n = 0 };
				if (ie_err == ne) {
					bad++;
					report(out, "EXTRA", NULL, gi, s->checks, "an error NAK the side did not send");
				} else if (droce_rp_diff(&e->it[ve[ie_err]], gi, s->checks, &d)) {
					bad++;
					report(out, "DIFF", &e->it[ve[ie_err++]], gi, s->checks, NULL);
				} else {
					report(out, "ok", &e->it[ve[ie_err++]], gi, s->checks, "");
				}
			} else if (rnr_nak(gi) && rnr_e &&
				   (gi->p.h.ext.aeth.syndrome & DROCE_AETH_VALUE_MASK) !=
					   (rnr_e->p.h.ext.aeth.syndrome & DROCE_AETH_VALUE_MASK)) {
				bad++;
				report(out, "DIFF", rnr_e, gi, s->checks, "the RNR NAK's timer differs");
			} else if (is_pos_ack(gi)) {
				/* where both ACK a PSN, they agree on the MSN */
				const struct item *cand = NULL;
				bool same = false;
				for (size_t i = 0; i < ne && !same; i++) {
					const struct item *x = &e->it[ve[i]];
					if (!is_pos_ack(x) || x->p.h.bth.psn != psn)
						continue;
					cand = x;
					same = x->p.h.ext.aeth.msn == gi->p.h.ext.aeth.msn;
				}
				if (cand && !same) {
					bad++;
					report(out, "DIFF", cand, gi, s->checks, "the MSN of an ACK of the same PSN differs");
				}
			}
			continue;
		}
		size_t *fi = hget(&m.first, (uint64_t)psn + 1);
		size_t *nc = hget(&copies, (uint64_t)psn + 1);
		unsigned copy = nc ? (unsigned)*nc : 0;
		if (hput(&copies, (uint64_t)psn + 1, copy + 1) || hput(&m.sent, (uint64_t)psn + 1, 1)) {
			bad++;
			break;
		}
		if (!fi) {
			if (in_range(&all, psn)) {
				unseen++;
				continue;
			}
			bad++;
			report(out, "EXTRA", NULL, gi, s->checks, "a response at a PSN the side never answered");
			continue;
		}
		const struct item *ei = differing_copy(e, &m, gi, same_answer, s->checks);
		bool same = ei == NULL;
		if (same)
			ei = &e->it[*fi];
		if (!same) {
			bad++;
			report(out, "DIFF", ei, gi, s->checks, NULL);
		} else {
			note_sent(e, &m, gi, copy, sent_at, nsent_at);
			if (out)
				report(out, "ok", ei, gi, s->checks, "");
		}
	}
	hfree(&copies);
	for (size_t i = 0; i < nd; i++) {
		const struct item *ei = &e->it[vd[i]];
		size_t *fi = hget(&m.first, (uint64_t)ei->p.h.bth.psn + 1);
		if (fi && *fi == vd[i] && !hget(&m.sent, (uint64_t)ei->p.h.bth.psn + 1)) {
			bad++;
			report(out, "MISSING", ei, NULL, s->checks, "droce never answered this PSN");
		}
	}
	for (; ie_err < ne; ie_err++)
		if (error_nak(&e->it[ve[ie_err]])) {
			bad++;
			report(out, "MISSING", &e->it[ve[ie_err]], NULL, s->checks, "an error NAK droce did not send");
		}
	/* the same end: what is acknowledged last, with which MSN */
	uint32_t base = all.any ? psn_add(all.lo, DROCE_PSN_MASK) : 0;
	const struct item *fe = final_ack(e, ve, ne, base), *fg = NULL;
	uint32_t pe = 0, me = 0, pg = 0, mg = 0;
	/* droce's, in the half of PSN space around the side's end (9.7.1) */
	if (fe && acked(fe, &pe, &me))
		fg = final_ack(g, vg, ng, (pe - 0x400000u) & DROCE_PSN_MASK);
	if (fe && (!fg || (acked(fe, &pe, &me), acked(fg, &pg, &mg), pe != pg || me != mg))) {
		bad++;
		report(out, "DIFF", fe, fg, s->checks,
		       fg ? "the conversation ends elsewhere: the last PSN acknowledged, or its MSN, differs"
			  : "droce acknowledged nothing");
	} else if (fe && out) {
		report(out, "ok", fe, fg, s->checks, "the last PSN acknowledged and its MSN");
	}
	if (unseen && out)
		fprintf(out, "  (%u responses of droce's at PSNs the capture holds none of: not compared)\n", unseen);
	free(vd);
	map_free(&m);
	map_free(&all);
	return bad;
}

unsigned droce_rp_compare_psn(const struct droce_rp_scenario *s, const struct list *e,
			      const struct list *g, const struct key *k, FILE *out,
			      uint64_t *sent_at, size_t nsent_at)
{
	size_t ne, ng;
	size_t *ve = stream_items(e, k, &ne), *vg = stream_items(g, k, &ng);
	unsigned bad = 0;
	if (!ve || !vg) {
		bad = 1;
	} else if (k->req) {
		unsigned mtu = stream_mtu(s, k);
		struct psnmap m;
		if (map_expected(e, ve, ne, mtu, &m))
			bad = 1;
		else
			bad = requests(s, e, ve, ne, g, vg, ng, mtu, &m, out, sent_at, nsent_at);
		map_free(&m);
	} else {
		bad = responses(s, e, ve, ne, g, vg, ng, out, sent_at, nsent_at);
	}
	free(ve);
	free(vg);
	return bad;
}
