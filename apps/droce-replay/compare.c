/* SPDX-License-Identifier: BSD-3-Clause */
#include "compare.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compare_int.h"
#include "frames.h"
#include "pmap.h"
#include "wire/hdr.h"

/*
 * Coalescing (IBTA 9.7.5.1.1: one ACK may acknowledge every packet before
 * it): a positive ACK followed by another ACKNOWLEDGE frame for the same QP
 * (ACK, RNR NAK or NAK, each of which acknowledges the PSNs before its own),
 * with no other response for that QP in between, carries nothing the later
 * one does not. Drop it. NAKs themselves are never dropped.
 */
static void coalesce(struct list *l)
{
	struct { uint32_t qpn; bool later_ack; } st[256];
	unsigned nst = 0;
	for (size_t k = l->n; k-- > 0;) {
		struct item *i = &l->it[k];
		if (!i->p.op || is_cnp(i) || i->lost || i->late)
			continue;
		unsigned s;
		for (s = 0; s < nst; s++)
			if (st[s].qpn == i->p.h.bth.dqpn)
				break;
		if (s == nst) {
			if (nst == 256)
				continue;
			st[nst].qpn = i->p.h.bth.dqpn;
			st[nst++].later_ack = false;
		}
		if (is_ack_frame(i)) {
			if (is_pos_ack(i))
				i->dropped = st[s].later_ack;
			st[s].later_ack = true;
		} else if (i->p.op->flags & DROCE_OPF_RESP) {
			/* a READ response or atomic ACK ends the run; the side's
			 * own requests belong to the other direction */
			st[s].later_ack = false;
		}
	}
}

static int add(struct list *l, const uint8_t *data, uint32_t len, unsigned num, uint64_t t)
{
	struct item *ni = realloc(l->it, (l->n + 1) * sizeof(*ni));
	if (!ni)
		return -1;
	l->it = ni;
	struct item *i = &l->it[l->n++];
	memset(i, 0, sizeof(*i));
	i->data = data;
	i->len = len;
	i->num = num;
	i->t_ns = t;
	i->r = droce_parse(data, len, &i->p, 0);
	return 0;
}

/* The items of one stream, in order; with send-ahead, which move forward and where each PSN last is. */
struct sview {
	size_t *at;                  /* indexes into the list */
	size_t n;
	bool *fwd;                   /* fwd[i]: item i's PSN is past item i-1's (no go-back there) */
	struct hmap last;            /* PSN + 1 -> position of its last item */
};


static int sview_make(const struct list *l, const struct key *k, bool seq, struct sview *v)
{
	memset(v, 0, sizeof(*v));
	v->at = malloc((l->n + 1) * sizeof(*v->at));
	v->fwd = seq ? calloc(l->n + 1, sizeof(*v->fwd)) : NULL;
	if (!v->at || (seq && !v->fwd))
		return -ENOMEM;
	uint32_t prev = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (!droce_rp_in_stream(&l->it[i], k))
			continue;
		if (seq) {
			uint32_t psn = l->it[i].p.h.bth.psn;
			if (hput(&v->last, (uint64_t)psn + 1, v->n))
				return -ENOMEM;
			v->fwd[v->n] = v->n > 0 && droce_rp_psn_before(prev, psn);
			prev = psn;
		}
		v->at[v->n++] = i;
	}
	return 0;
}

static void sview_free(struct sview *v)
{
	free(v->at);
	free(v->fwd);
	hfree(&v->last);
}

/*
 * At a difference between position @p i of @p a and @p j of @p b: @p b
 * runs on where @p a goes back (a go-back-N after a NAK), and @p a still
 * has @p b's PSN from @p i on: @p b's packet went out ahead of @p a's pace.
 */
static bool ran_ahead(const struct sview *a, size_t i, const struct sview *b, size_t j,
		      const struct item *bi)
{
	size_t *l = hget(&a->last, (uint64_t)bi->p.h.bth.psn + 1);
	return i < a->n && !a->fwd[i] && b->fwd[j] && l && *l >= i;
}

/*
 * Compare one stream of expected and sent frames, in order. With
 * "allow send-ahead" (a requester's stream in a lossy capture), where the
 * two differ because one goes back (go-back-N after a NAK) while the other
 * still runs on, the packets of the one running on went out ahead of the
 * other's pace: how far a requester gets before a NAK reaches it is its
 * window and its link, not the protocol. They are passed over when the
 * other stream has their PSNs later, where they are compared; a packet
 * droce sends once, out of order, or with other contents is still a
 * difference.
 */
static unsigned compare_stream(const struct list *e, const struct list *g, const struct key *k,
			       unsigned checks, bool ahead_ok, FILE *out, uint64_t *sent_at,
			       size_t nsent_at)
{
	unsigned bad = 0;
	bool seq = ahead_ok && k->req;
	struct sview ve, vg;
	if (sview_make(e, k, seq, &ve) || sview_make(g, k, seq, &vg)) {
		sview_free(&ve);
		sview_free(&vg);
		if (out)
			fprintf(out, "out of memory\n");
		return 1;
	}
	size_t i = 0, j = 0;
	while (i < ve.n || j < vg.n) {
		char who[64];
		const struct item *ei = i < ve.n ? &e->it[ve.at[i]] : NULL;
		const struct item *gi = j < vg.n ? &g->it[vg.at[j]] : NULL;
		if (ei && gi) {
			struct sbuf d = { .n = 0 };
			unsigned nd = droce_rp_diff(ei, gi, checks, &d);
			if (nd && seq && ran_ahead(&ve, i, &vg, j, gi)) {
				snprintf(who, sizeof(who), "droce #%u:", gi->num);
				if (out)
					droce_rp_print_item(out, "early", who, gi);
				j++;
				continue;
			}
			if (nd && seq && ran_ahead(&vg, j, &ve, i, ei)) {
				snprintf(who, sizeof(who), "capture #%u:", ei->num);
				if (out)
					droce_rp_print_item(out, "early", who, ei);
				i++;
				continue;
			}
			if (ei->num < nsent_at)
				sent_at[ei->num] = gi->t_ns;
			snprintf(who, sizeof(who), "capture #%u / droce #%u:", ei->num, gi->num);
			if (nd) {
				bad++;
				if (out) {
					droce_rp_print_item(out, "DIFF", who, ei);
					droce_rp_print_item(out, "", "               got:", gi);
					fprintf(out, "           -> %s\n", d.b);
				}
			} else if (out) {
				droce_rp_print_item(out, "ok", who, gi);
			}
			i++;
			j++;
		} else if (ei) {
			bad++;
			snprintf(who, sizeof(who), "capture #%u:", ei->num);
			if (out)
				droce_rp_print_item(out, "MISSING", who, ei);
			i++;
		} else {
			bad++;
			snprintf(who, sizeof(who), "droce #%u:", gi->num);
			if (out)
				droce_rp_print_item(out, "EXTRA", who, gi);
			j++;
		}
	}
	sview_free(&ve);
	sview_free(&vg);
	return bad;
}

/*
 * An ACK droce sent that coalescing took out of the stream comparison is
 * still checked where the capture has an ACKNOWLEDGE for the same QP and
 * PSN: droce's must then carry the same syndrome kind and MSN (one of the
 * capture's, if it has several). Coalescing excuses how many ACKs, never
 * what an ACK says.
 */
static unsigned check_coalesced(const struct list *e, const struct list *g, unsigned checks, FILE *out)
{
	unsigned bad = 0;
	for (size_t ig = 0; ig < g->n; ig++) {
		const struct item *gi = &g->it[ig];
		if (!gi->dropped)
			continue;
		const struct item *cand = NULL;
		bool same = false;
		for (size_t ie = 0; ie < e->n && !same; ie++) {
			const struct item *ei = &e->it[ie];
			if (!is_pos_ack(ei) || ei->p.h.bth.dqpn != gi->p.h.bth.dqpn ||
			    ei->p.h.bth.psn != gi->p.h.bth.psn)
				continue;
			struct sbuf d = { .n = 0 };
			cand = ei;
			same = droce_rp_diff(ei, gi, checks, &d) == 0;
		}
		if (!cand || same)
			continue;
		bad++;
		if (out) {
			struct sbuf d = { .n = 0 };
			char who[64];
			droce_rp_diff(cand, gi, checks, &d);
			snprintf(who, sizeof(who), "capture #%u / droce #%u:", cand->num, gi->num);
			droce_rp_print_item(out, "DIFF", who, cand);
			droce_rp_print_item(out, "", "               got:", gi);
			fprintf(out, "           -> %s (a coalesced ACK still says the same)\n", d.b);
		}
	}
	return bad;
}

/*
 * "expect-gap A B TIME": droce sent its match of capture frame B at least
 * TIME after frame A (a peer frame: when it was delivered, its capture time;
 * a frame of the side: when droce sent its match). Timers (RNR wait, ACK
 * timeout) are checked this way.
 */
static unsigned check_gaps(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap,
			   const uint64_t *sent_at, size_t n, FILE *out)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < s->ngaps; i++) {
		const struct droce_rp_gap *g = &s->gaps[i];
		if (g->a > cap->n || g->b > cap->n) {
			bad++;
			if (out)
				fprintf(out, "  FAIL     %s:%u: expect-gap names frame %u; the capture has %zu\n",
					s->path, g->line, g->a > cap->n ? g->a : g->b, cap->n);
			continue;
		}
		uint64_t ta = sent_at[g->a] != UINT64_MAX ? sent_at[g->a] : cap->f[g->a - 1].t_ns;
		uint64_t tb = g->b < n ? sent_at[g->b] : UINT64_MAX;
		if (tb == UINT64_MAX) {
			bad++;
			if (out)
				fprintf(out, "  FAIL     %s:%u: expect-gap: droce sent nothing matching frame %u\n",
					s->path, g->line, g->b);
			continue;
		}
		bool ok = tb >= ta && tb - ta >= g->min_ns;
		bad += !ok;
		if (out)
			fprintf(out, "  %-8s %s:%u: frame %u came %s%" PRIu64 " ns after frame %u (at least %" PRIu64 " ns)\n",
				ok ? "ok" : "DIFF", s->path, g->line, g->b, tb >= ta ? "" : "-",
				tb >= ta ? tb - ta : ta - tb, g->a, g->min_ns);
	}
	return bad;
}

/*
 * "lost QP req|resp PSN copy=K": the capture lacks the side's K-th copy of
 * that packet (lost between the side and the capture point), so droce's
 * K-th frame with that PSN in that stream (requests to the QP's peer, or
 * its READ responses and atomic ACKs) is taken out of the comparison. Its
 * later copies are compared as usual: a loss excuses one frame, never what
 * the retransmission says.
 * @return how many lost lines found no frame of droce's to excuse.
 */
static unsigned mark_lost(const struct droce_rp_scenario *s, struct list *g, FILE *out)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < s->nlost; i++) {
		const struct droce_rp_lost *l = &s->lost[i];
		const struct droce_rp_qp_spec *q = &s->qps[l->qp];
		size_t alen = s->ip_version == 4 ? 4 : 16;
		unsigned seen = 0;
		bool found = false;
		for (size_t k = 0; k < g->n && !found; k++) {
			struct item *it = &g->it[k];
			if (!it->p.op || is_cnp(it) || it->p.h.bth.dqpn != q->peer_qpn ||
			    memcmp(it->p.h.net.dst_ip, q->peer_ip, alen) || it->p.h.bth.psn != l->psn)
				continue;
			bool req = (it->p.op->flags & DROCE_OPF_REQ) != 0;
			if (req == l->resp || (l->resp && is_ack_frame(it)))
				continue;
			if (seen++ == l->copy) {
				it->lost = true;
				found = true;
			}
		}
		if (found) {
			if (out)
				fprintf(out, "  lost     %s:%u: droce's copy %u of %s PSN %u on %s (not in the capture)\n",
					s->path, l->line, l->copy, l->resp ? "response" : "request", l->psn, q->name);
		} else {
			bad++;
			if (out)
				fprintf(out, "  MISSING  %s:%u: droce sent no copy %u of %s PSN %u on %s, which the "
					"capture lost\n", s->path, l->line, l->copy,
					l->resp ? "response" : "request", l->psn, q->name);
		}
	}
	return bad;
}

/*
 * "late N copy=K": the side's frame N came late through the network; it is
 * compared with droce's K-th frame with that PSN in the same stream, which
 * then leaves the in-order comparison too.
 */
static unsigned match_late(const struct droce_rp_scenario *s, struct list *e, struct list *g,
			   unsigned checks, FILE *out)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < s->nlates; i++) {
		const struct droce_rp_late *lt = &s->lates[i];
		struct item *ei = NULL;
		for (size_t k = 0; k < e->n && !ei; k++)
			if (e->it[k].num == lt->frame && e->it[k].p.op)
				ei = &e->it[k];
		char who[64];
		if (!ei) {
			bad++;
			if (out)
				fprintf(out, "  FAIL     %s:%u: late: frame %u is no frame of the side's\n", s->path,
					lt->line, lt->frame);
			continue;
		}
		ei->late = true;
		struct key ek, gk;
		droce_rp_key_of(ei, &ek);
		struct item *gi = NULL;
		unsigned seen = 0;
		for (size_t k = 0; k < g->n && !gi; k++) {
			struct item *it = &g->it[k];
			if (!it->p.op || it->lost || it->late || it->p.h.bth.psn != ei->p.h.bth.psn)
				continue;
			droce_rp_key_of(it, &gk);
			if (!memcmp(&ek, &gk, sizeof(ek)) && seen++ == lt->copy)
				gi = it;
		}
		if (!gi) {
			bad++;
			snprintf(who, sizeof(who), "capture #%u:", ei->num);
			if (out)
				droce_rp_print_item(out, "MISSING", who, ei);
			continue;
		}
		gi->late = true;
		struct sbuf d = { .n = 0 };
		unsigned nd = droce_rp_diff(ei, gi, checks, &d);
		snprintf(who, sizeof(who), "capture #%u / droce #%u:", ei->num, gi->num);
		if (nd) {
			bad++;
			if (out) {
				droce_rp_print_item(out, "DIFF", who, ei);
				droce_rp_print_item(out, "", "               got:", gi);
				fprintf(out, "           -> %s (late)\n", d.b);
			}
		} else if (out) {
			droce_rp_print_item(out, "ok late", who, gi);
		}
	}
	return bad;
}

static bool skipped(const struct droce_rp_scenario *s, unsigned num)
{
	for (unsigned i = 0; i < s->nskip; i++)
		if (s->skip[i] == num)
			return true;
	return false;
}

unsigned droce_rp_compare(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap,
			  const struct droce_rp_sent *got, size_t ngot, FILE *out)
{
	struct list e = { 0 }, g = { 0 };
	unsigned bad = 0, not_roce = 0;
	for (size_t k = 0; s->expect_capture && k < cap->n; k++) {
		struct droce_pkt p;
		enum droce_parse_result r;
		if (droce_rp_classify(&cap->f[k], s->ip_version, s->ip, &p, &r) != DROCE_RP_OWN ||
		    skipped(s, cap->f[k].num))
			continue;
		if (add(&e, cap->f[k].data, cap->f[k].len, cap->f[k].num, cap->f[k].t_ns))
			goto nomem;
	}
	for (size_t k = 0; k < ngot; k++) {
		if (add(&g, got[k].data, got[k].len, (unsigned)k + 1, got[k].t_ns))
			goto nomem;
		if (!g.it[g.n - 1].p.op)
			not_roce++;
	}
	/* By PSN, which copy of a packet the capture lacks or saw late does not matter. */
	if (!s->by_psn) {
		bad += mark_lost(s, &g, out);
		bad += match_late(s, &e, &g, s->checks, out);
	}
	if (s->allow_ack_coalescing && !s->by_psn) {
		coalesce(&e);
		coalesce(&g);
	}
	if (out)
		fprintf(out, "frames: %zu expected, %zu sent by droce%s\n", e.n, g.n,
			s->by_psn ? " (compared by PSN)"
			: s->allow_ack_coalescing ? " (ACK coalescing allowed)" : "");
	/* When droce sent its match of each capture frame (UINT64_MAX: none). */
	size_t nsent_at = cap->n + 1;
	uint64_t *sent_at = malloc(nsent_at * sizeof(*sent_at));
	if (!sent_at)
		goto nomem;
	for (size_t k = 0; k < nsent_at; k++)
		sent_at[k] = UINT64_MAX;
	/* Every stream, in order of first appearance (expected first). */
	struct key *keys = calloc(e.n + g.n + 1, sizeof(*keys));
	size_t nkeys = 0;
	if (!keys) {
		free(sent_at);
		goto nomem;
	}
	for (size_t k = 0; k < e.n + g.n; k++) {
		const struct item *i = k < e.n ? &e.it[k] : &g.it[k - e.n];
		if (!i->p.op)
			continue;
		struct key ik;
		droce_rp_key_of(i, &ik);
		size_t j;
		for (j = 0; j < nkeys && memcmp(&keys[j], &ik, sizeof(ik)); j++)
			;
		if (j == nkeys)
			keys[nkeys++] = ik;
	}
	for (size_t j = 0; j < nkeys; j++)
		bad += s->by_psn && !keys[j].cnp
			       ? droce_rp_compare_psn(s, &e, &g, &keys[j], out, sent_at, nsent_at)
			       : compare_stream(&e, &g, &keys[j], s->checks, s->allow_send_ahead, out,
						sent_at, nsent_at);
	free(keys);
	bad += check_gaps(s, cap, sent_at, nsent_at, out);
	free(sent_at);
	if (s->allow_ack_coalescing && !s->by_psn)
		bad += check_coalesced(&e, &g, s->checks, out);
	if (not_roce && out)
		fprintf(out, "  (%u non-RoCE frames from droce not compared)\n", not_roce);
	free(e.it);
	free(g.it);
	return bad;
nomem:
	free(e.it);
	free(g.it);
	if (out)
		fprintf(out, "out of memory\n");
	return 1;
}
