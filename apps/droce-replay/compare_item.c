/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What compare.c and compare_psn.c share (compare_int.h): a frame described
 * in words, two frames' field-by-field difference, the stream a frame
 * belongs to.
 */
#include "compare_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

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
