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

/* ---------------------------------------------------------- describing -- */

static void sp(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (s->n < sizeof(s->b)) {
		int k = vsnprintf(s->b + s->n, sizeof(s->b) - s->n, fmt, ap);
		if (k > 0)
			s->n += (size_t)k;
		if (s->n >= sizeof(s->b))
			s->n = sizeof(s->b) - 1;
	}
	va_end(ap);
}

static const char *aeth_kind(uint8_t syn)
{
	switch (syn & DROCE_AETH_TYPE_MASK) {
	case DROCE_AETH_ACK: return "ACK";
	case DROCE_AETH_RNR_NAK: return "RNR_NAK";
	case DROCE_AETH_NAK: return "NAK";
	default: return "RESERVED";
	}
}

static const char *nak_name(uint8_t v)
{
	static const char *const n[] = { "PSN_SEQ_ERR", "INVALID_REQ", "REMOTE_ACCESS",
					 "REMOTE_OP", "INVALID_RD_REQ" };
	return v < 5 ? n[v] : "?";
}

static void describe(struct sbuf *s, const struct item *i)
{
	if (!i->p.op) {
		sp(s, "not RoCE (%s, %u bytes)", droce_parse_result_name(i->r), i->len);
		return;
	}
	const struct droce_hdrs *h = &i->p.h;
	sp(s, "%s dqpn=%#x psn=%u", i->p.op->name, h->bth.dqpn, h->bth.psn);
	if (h->bth.se)
		sp(s, " SE");
	if (h->bth.ack_req)
		sp(s, " A");
	unsigned hd = i->p.op->hdrs;
	if (hd & DROCE_HDR_AETH) {
		uint8_t syn = h->ext.aeth.syndrome;
		sp(s, " %s", aeth_kind(syn));
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_NAK)
			sp(s, "(%s)", nak_name(syn & DROCE_AETH_VALUE_MASK));
		else
			sp(s, "(%u)", syn & DROCE_AETH_VALUE_MASK);
		sp(s, " msn=%u", h->ext.aeth.msn);
	}
	if (hd & DROCE_HDR_RETH)
		sp(s, " reth=%#" PRIx64 "/%#x/%u", h->ext.reth.va, h->ext.reth.rkey, h->ext.reth.dma_len);
	if (hd & DROCE_HDR_ATOMIC)
		sp(s, " atomic=%#" PRIx64 "/%#x swap_add=%#" PRIx64 " cmp=%#" PRIx64, h->ext.atomic.va,
		   h->ext.atomic.rkey, h->ext.atomic.swap_add, h->ext.atomic.compare);
	if (hd & DROCE_HDR_AACK)
		sp(s, " orig=%#" PRIx64, h->ext.atomic_ack);
	if (hd & DROCE_HDR_IMM)
		sp(s, " imm=%#x", h->ext.imm);
	if (hd & DROCE_HDR_IETH)
		sp(s, " inv_rkey=%#x", h->ext.ieth_rkey);
	if (i->p.op->flags & DROCE_OPF_PAYLOAD)
		sp(s, " len=%u", h->payload_len);
	if (i->r != DROCE_PARSE_OK)
		sp(s, " [%s]", droce_parse_result_name(i->r));
}

/* -------------------------------------------------------------- diffing -- */

#define DIFF(cond, ...)                 \
	do {                            \
		if (cond) {             \
			if (d->n)       \
				sp(d, "; "); \
			sp(d, __VA_ARGS__); \
			nd++;           \
		}                       \
	} while (0)

static void fmt_ip(const struct droce_net_fields *n, const uint8_t *ip, char *b, size_t len)
{
	droce_rp_fmt_ip(n->ip_version, ip, b, len);
}

/* Differences of @p g from @p e; returns how many fields differ. */
unsigned droce_rp_diff(const struct item *e, const struct item *g, unsigned checks, struct sbuf *d)
{
	unsigned nd = 0;
	const struct droce_hdrs *eh = &e->p.h, *gh = &g->p.h;
	DIFF(g->r != DROCE_PARSE_OK, "droce's frame is bad: %s", droce_parse_result_str(g->r));
	if (!g->p.op || !e->p.op)
		return nd + (!g->p.op != !e->p.op);
	DIFF(eh->bth.opcode != gh->bth.opcode, "opcode: expected %s, got %s", e->p.op->name,
	     g->p.op->name);
	DIFF(eh->bth.dqpn != gh->bth.dqpn, "dest QPN: expected %#x, got %#x", eh->bth.dqpn, gh->bth.dqpn);
	DIFF(eh->bth.psn != gh->bth.psn, "PSN: expected %u, got %u", eh->bth.psn, gh->bth.psn);
	DIFF(eh->bth.se != gh->bth.se, "SE: expected %d, got %d", eh->bth.se, gh->bth.se);
	DIFF(eh->bth.pkey != gh->bth.pkey, "P_Key: expected %#x, got %#x", eh->bth.pkey, gh->bth.pkey);
	DIFF(eh->bth.becn != gh->bth.becn, "BECN: expected %d, got %d", eh->bth.becn, gh->bth.becn);
	DIFF(eh->bth.fecn != gh->bth.fecn, "FECN: expected %d, got %d", eh->bth.fecn, gh->bth.fecn);
	/* MigReq is the sender's path migration state (9.2.4: 1 until a
	 * migration is armed; ConnectX and HiRoCE send 1, rxe 0) and AckReq
	 * where the requester wants an ACK (9.7.5.1.1): its policy, compared
	 * only on request (--strict). */
	if (checks & DROCE_RP_CHECK_MIGREQ)
		DIFF(eh->bth.migreq != gh->bth.migreq, "MigReq: expected %d, got %d", eh->bth.migreq,
		     gh->bth.migreq);
	if (checks & DROCE_RP_CHECK_ACKREQ)
		DIFF(eh->bth.ack_req != gh->bth.ack_req, "AckReq: expected %d, got %d",
		     eh->bth.ack_req, gh->bth.ack_req);
	size_t alen = eh->net.ip_version == 4 ? 4 : 16;
	char a[64], b[64];
	if (eh->net.ip_version != gh->net.ip_version) {
		DIFF(1, "IP version: expected %u, got %u", eh->net.ip_version, gh->net.ip_version);
	} else {
		fmt_ip(&eh->net, eh->net.src_ip, a, sizeof(a));
		fmt_ip(&gh->net, gh->net.src_ip, b, sizeof(b));
		DIFF(memcmp(eh->net.src_ip, gh->net.src_ip, alen), "source IP: expected %s, got %s", a, b);
		fmt_ip(&eh->net, eh->net.dst_ip, a, sizeof(a));
		fmt_ip(&gh->net, gh->net.dst_ip, b, sizeof(b));
		DIFF(memcmp(eh->net.dst_ip, gh->net.dst_ip, alen), "dest IP: expected %s, got %s", a, b);
	}
	if (checks & DROCE_RP_CHECK_MAC) {
		DIFF(memcmp(eh->net.src_mac, gh->net.src_mac, 6), "source MAC differs");
		DIFF(memcmp(eh->net.dst_mac, gh->net.dst_mac, 6), "dest MAC differs");
	}
	if (checks & DROCE_RP_CHECK_ECN)
		DIFF(eh->net.ecn != gh->net.ecn, "ECN: expected %u, got %u", eh->net.ecn, gh->net.ecn);
	if (checks & DROCE_RP_CHECK_SPORT)
		DIFF(eh->net.sport != gh->net.sport, "UDP source port: expected %u, got %u",
		     eh->net.sport, gh->net.sport);
	unsigned common = e->p.op->hdrs & g->p.op->hdrs;
	if (common & DROCE_HDR_AETH) {
		uint8_t es = eh->ext.aeth.syndrome, gs = gh->ext.aeth.syndrome;
		bool eack = (es & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK;
		DIFF((es & DROCE_AETH_TYPE_MASK) != (gs & DROCE_AETH_TYPE_MASK),
		     "AETH: expected %s, got %s", aeth_kind(es), aeth_kind(gs));
		/* The low 5 bits of an ACK are the credit count (9.7.7.2.2):
		 * compared only on request. Of a NAK: the code; of an RNR NAK:
		 * the timer, both always compared. */
		if ((es & DROCE_AETH_TYPE_MASK) == (gs & DROCE_AETH_TYPE_MASK) &&
		    (!eack || (checks & DROCE_RP_CHECK_CREDITS)))
			DIFF((es & DROCE_AETH_VALUE_MASK) != (gs & DROCE_AETH_VALUE_MASK),
			     "AETH %s value: expected %u, got %u", eack ? "credit" : aeth_kind(es),
			     es & DROCE_AETH_VALUE_MASK, gs & DROCE_AETH_VALUE_MASK);
		DIFF(eh->ext.aeth.msn != gh->ext.aeth.msn, "MSN: expected %u, got %u",
		     eh->ext.aeth.msn, gh->ext.aeth.msn);
	}
	if (common & DROCE_HDR_RETH) {
		DIFF(eh->ext.reth.va != gh->ext.reth.va, "RETH VA: expected %#" PRIx64 ", got %#" PRIx64,
		     eh->ext.reth.va, gh->ext.reth.va);
		DIFF(eh->ext.reth.rkey != gh->ext.reth.rkey, "RETH rkey: expected %#x, got %#x",
		     eh->ext.reth.rkey, gh->ext.reth.rkey);
		DIFF(eh->ext.reth.dma_len != gh->ext.reth.dma_len, "RETH length: expected %u, got %u",
		     eh->ext.reth.dma_len, gh->ext.reth.dma_len);
	}
	if (common & DROCE_HDR_ATOMIC) {
		DIFF(eh->ext.atomic.va != gh->ext.atomic.va, "AtomicETH VA: expected %#" PRIx64 ", got %#" PRIx64,
		     eh->ext.atomic.va, gh->ext.atomic.va);
		DIFF(eh->ext.atomic.rkey != gh->ext.atomic.rkey, "AtomicETH rkey: expected %#x, got %#x",
		     eh->ext.atomic.rkey, gh->ext.atomic.rkey);
		DIFF(eh->ext.atomic.swap_add != gh->ext.atomic.swap_add,
		     "AtomicETH swap/add: expected %#" PRIx64 ", got %#" PRIx64, eh->ext.atomic.swap_add,
		     gh->ext.atomic.swap_add);
		/* Only COMPARE_SWAP reads the compare field (9.4.5); a
		 * FETCH_ADD's means nothing, and rxe leaves garbage there. */
		DIFF(eh->bth.opcode == DROCE_OP_RC_COMPARE_SWAP &&
		     eh->ext.atomic.compare != gh->ext.atomic.compare,
		     "AtomicETH compare: expected %#" PRIx64 ", got %#" PRIx64, eh->ext.atomic.compare,
		     gh->ext.atomic.compare);
	}
	if (common & DROCE_HDR_AACK)
		DIFF(eh->ext.atomic_ack != gh->ext.atomic_ack,
		     "AtomicAckETH: expected %#" PRIx64 ", got %#" PRIx64, eh->ext.atomic_ack, gh->ext.atomic_ack);
	if (common & DROCE_HDR_IMM)
		DIFF(eh->ext.imm != gh->ext.imm, "immediate: expected %#x, got %#x", eh->ext.imm, gh->ext.imm);
	if (common & DROCE_HDR_IETH)
		DIFF(eh->ext.ieth_rkey != gh->ext.ieth_rkey, "IETH rkey: expected %#x, got %#x",
		     eh->ext.ieth_rkey, gh->ext.ieth_rkey);
	if (e->p.op->flags & g->p.op->flags & DROCE_OPF_PAYLOAD) {
		if (eh->payload_len != gh->payload_len) {
			DIFF(1, "payload length: expected %u, got %u", eh->payload_len, gh->payload_len);
		} else {
			for (uint32_t k = 0; k < eh->payload_len; k++)
				if (e->p.payload[k] != g->p.payload[k]) {
					DIFF(1, "payload byte %u: expected %#04x, got %#04x", k,
					     e->p.payload[k], g->p.payload[k]);
					break;
				}
		}
	}
	return nd;
}

void droce_rp_print_item(FILE *out, const char *tag, const char *who, const struct item *i)
{
	struct sbuf s = { .n = 0 };
	describe(&s, i);
	fprintf(out, "  %-8s %s %s\n", tag, who, s.b);
}

/*
 * A stream: the requests, or the responses, to one destination QP (address
 * and QPN), CNPs apart. IBTA orders packets per QP and direction only (9.5:
 * a QP's requester and responder are independent, each with its own PSN
 * space); how droce interleaves its QPs, or its answers with its own
 * requests, is scheduling, so each stream is compared on its own.
 */
void droce_rp_key_of(const struct item *i, struct key *k)
{
	memset(k, 0, sizeof(*k));
	k->cnp = is_cnp(i);
	k->req = i->p.op && (i->p.op->flags & DROCE_OPF_REQ);
	k->dqpn = i->p.h.bth.dqpn;
	memcpy(k->ip, i->p.h.net.dst_ip, 16);
}

bool droce_rp_in_stream(const struct item *i, const struct key *k)
{
	struct key ik;
	if (!i->p.op || i->dropped || i->lost || i->late)
		return false;
	droce_rp_key_of(i, &ik);
	return !memcmp(&ik, k, sizeof(ik));
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
