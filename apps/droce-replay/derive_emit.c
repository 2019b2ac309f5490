/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: writing the scenario (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- output -- */

static void put_hex(FILE *out, const uint8_t *b, size_t n)
{
	fputs("hex:", out);
	for (size_t k = 0; k < n; k++)
		fprintf(out, "%02x", b[k]);
}

static void put_time(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 "ns", ns);
}

/* Runs of bytes where @p mask is set (NULL: non-zero bytes of @p b). */
static void put_runs(FILE *out, const char *dir, const char *mr, const uint8_t *b,
		     const uint8_t *mask, size_t n)
{
	size_t k = 0;
	while (k < n) {
		while (k < n && !(mask ? mask[k] : b[k]))
			k++;
		size_t s = k;
		while (k < n && (mask ? mask[k] : b[k]))
			k++;
		if (k > s) {
			fprintf(out, "%s %s %zu ", dir, mr, s);
			put_hex(out, b + s, k - s);
			fputc('\n', out);
		}
	}
}

static void put_mac(FILE *out, const uint8_t *m)
{
	fprintf(out, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static const char *access_str(unsigned a, char *b)
{
	b[0] = 0;
	if (a & DROCE_RP_ACC_LW)
		strcat(b, "lw,");
	if (a & DROCE_RP_ACC_RW)
		strcat(b, "rw,");
	if (a & DROCE_RP_ACC_RR)
		strcat(b, "rr,");
	if (a & DROCE_RP_ACC_RA)
		strcat(b, "ra,");
	if (b[0])
		b[strlen(b) - 1] = 0;
	else
		strcpy(b, "none");
	return b;
}

#define SRC_ADDR 0x10000000u
#define DST_ADDR 0x20000000u
#define RQ_ADDR  0x30000000u

static uint64_t align64(uint64_t x)
{
	return (x + 63) & ~(uint64_t)63;
}

/*
 * Does the capture show a lossy link: a request PSN sent more than once
 * (either way), a sequence or RNR NAK, or a packet of the side's missing?
 * Then the replay is compared by PSN ("compare by-psn", compare_psn.c):
 * which copies of a packet went out, and when, follows each side's timers,
 * window and poll loop, and what the network lost beyond the capture
 * point, which the protocol does not define.
 */
bool drv_lossy(struct dctx *d)
{
	if (d->retrans_own || d->nlost)
		return true;
	struct hmap seen = { 0 };
	bool yes = false;
	for (size_t i = 0; i < d->nfr && !yes; i++) {
		const struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || (a->p.op->flags & DROCE_OPF_CNP))
			continue;
		if (a->p.op->flags & DROCE_OPF_REQ) {
			uint64_t k = hkey(a->conn, a->role == DROCE_RP_OWN ? HK_COUNT_REQ : HK_COUNT_RESP,
					  a->p.h.bth.psn);
			yes = hget(&seen, k) != NULL;
			if (hput(&seen, k, i))
				yes = true; /* out of memory: the careful answer */
		} else if (a->p.op->hdrs & DROCE_HDR_AETH) {
			uint8_t syn = a->p.h.ext.aeth.syndrome;
			yes = (syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_RNR_NAK ||
			      syn == (DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR);
		}
	}
	hfree(&seen);
	return yes;
}

/*
 * How long connection @p ci ran, from the side's first request to the last
 * frame on it. A replay compared by PSN feeds the peer's answers as
 * captured, whatever droce resends: answers to packets droce sends later
 * than the side did, or to re-requests it makes elsewhere, are stale for
 * it and restart no timer. So droce's ACK timeout is raised until seven
 * expiries take longer than the whole conversation (rxe, the side here,
 * counts a retry count of 7 as "forever"): the replay then does not end in
 * RETRY_EXC_ERR where the side did not; its timer resends are not compared.
 */
static uint64_t conversation_span(const struct dctx *d, unsigned ci)
{
	uint64_t first = 0, last = 0;
	bool out = false;
	for (size_t i = 0; i < d->nfr; i++) {
		const struct fr *a = &d->fr[i];
		if (a->conn != (int)ci || !a->p.op || a->gone)
			continue;
		uint64_t t = a->t_seen ? a->t_seen : a->f->t_ns;
		if (!out && a->role == DROCE_RP_OWN && (a->p.op->flags & DROCE_OPF_REQ)) {
			out = true;
			first = t;
		}
		if (out && t > last)
			last = t;
	}
	return out && last > first ? last - first : 0;
}

/*
 * An rdma_cm handshake fixes the RC QP pair and its path MTU (12.6.5,
 * 12.6.8): each complete one must name a QP pair the RC frames use (a
 * capture whose handshake and data disagree is not one conversation), and
 * where nothing was segmented its MTU is the REQ's, not a guess.
 */
int drv_cm_attrs(struct dctx *d)
{
	for (unsigned i = 0; i < MAX_CONNS; i++)
		d->cm_of[i] = -1;
	for (unsigned k = 0; k < d->cm.n; k++) {
		const struct droce_rp_cm_conn *h = &d->cm.c[k];
		if (!droce_rp_cm_complete(h))
			continue;
		int found = -1;
		for (unsigned i = 0; i < d->nconns && found < 0; i++) {
			const struct conn *c = &d->conns[i];
			if (!memcmp(c->peer_ip, h->peer_ip, 16) && c->peer_known &&
			    c->peer_qpn == h->peer_qpn && (!c->local_known || c->local_qpn == h->side_qpn))
				found = (int)i;
		}
		if (found < 0)
			return drv_dfail(d, "frames %u/%u: rdma_cm connects the side's QPN %#x to the "
				     "peer's %#x, but no RC conversation of the capture uses that pair",
				     h->req_frame, h->rep_frame, h->side_qpn, h->peer_qpn);
		struct conn *c = &d->conns[found];
		c->local_qpn = h->side_qpn;
		c->local_known = true;
		d->cm_of[found] = (int)k;
		unsigned mtu = 128u << h->path_mtu;
		if (c->seg_max > mtu)
			return drv_dfail(d, "QP %#x: segments of %u bytes beyond the path MTU %u its REQ "
				     "(frame %u) set", c->peer_qpn, c->seg_max, mtu, h->req_frame);
		if (!c->seg_max && c->max_payload <= mtu)
			c->mtu = mtu;
	}
	return 0;
}

/*
 * The starting PSNs the handshake set (derive_cm.h: as Linux's CM applies
 * them): checked against the RC frames where the side or the peer sent
 * requests, taken from the handshake where one of them never did (a
 * passive side that only answers has no request of its own to show its
 * send queue's PSN).
 */
int drv_cm_psns(struct dctx *d)
{
	for (unsigned i = 0; i < d->nconns; i++) {
		if (d->cm_of[i] < 0)
			continue;
		struct conn *c = &d->conns[i];
		const struct droce_rp_cm_conn *h = &d->cm.c[d->cm_of[i]];
		unsigned from = h->active ? h->rep_frame : h->req_frame;
		unsigned to = h->active ? h->req_frame : h->rep_frame;
		if (c->own_started && c->sq_psn != h->side_sq_psn)
			return drv_dfail(d, "QP %#x: the side's requests start at PSN %u, the %s (frame %u) "
				     "set %u", c->local_qpn, c->sq_psn, h->active ? "REP" : "REQ", from,
				     h->side_sq_psn);
		if (c->peer_started && c->rq_psn != h->side_rq_psn)
			return drv_dfail(d, "QP %#x: the peer's requests start at PSN %u, the %s (frame %u) "
				     "set %u", c->local_qpn, c->rq_psn, h->active ? "REQ" : "REP", to,
				     h->side_rq_psn);
		if (!c->own_started)
			c->sq_psn = h->side_sq_psn;
		if (!c->peer_started)
			c->rq_psn = h->side_rq_psn;
	}
	return 0;
}

static void emit_cm(const struct dctx *d, FILE *out)
{
	char ipb[64];
	fprintf(out, "# %u QP1/UD frames (%u rdma_cm MADs) are not replayed: the RC QPs are set up "
		"as the handshake set them.\n", d->ignored_ud, d->cm.mads);
	for (unsigned k = 0; k < d->cm.n; k++) {
		const struct droce_rp_cm_conn *h = &d->cm.c[k];
		fprintf(out, "# rdma_cm with %s, the side %s: REQ frame %u",
			droce_rp_fmt_ip(d->ipv, h->peer_ip, ipb, sizeof(ipb)),
			h->active ? "active" : "passive", h->req_frame);
		if (h->rep_frame)
			fprintf(out, ", REP %u (side QPN %#x sq-psn %u rq-psn %u, peer QPN %#x, MTU %u)",
				h->rep_frame, h->side_qpn, h->side_sq_psn, h->side_rq_psn, h->peer_qpn,
				128u << h->path_mtu);
		if (h->rej_frame)
			fprintf(out, ", REJ %u (reason %u: %s)", h->rej_frame, h->rej_reason,
				droce_cm_rej_reason_str(h->rej_reason));
		if (h->rtu_frame)
			fprintf(out, ", RTU %u", h->rtu_frame);
		if (h->dreq_frame)
			fprintf(out, ", DREQ %u", h->dreq_frame);
		if (h->drep_frame)
			fprintf(out, ", DREP %u", h->drep_frame);
		fputs("\n", out);
	}
}

/* The header: where the scenario comes from, the side's address, its shim. */
static void emit_head(struct dctx *d, const char *cap_path, const char *side, FILE *out)
{
	fprintf(out, "# Derived by droce-replay --derive from %s, side %s.\n", cap_path, side);
	fprintf(out, "# droce plays %s; the peer's frames are replayed to it.\n", side);
	if (d->ignored_ud)
		emit_cm(d, out);
	fprintf(out, "capture %s\n", cap_path);
	fprintf(out, "ip %s\n", side);
	if (d->impair && d->impair[0])
		fprintf(out, "# the side received through droce's shim behind the capture point\n"
			"impair %s\n", d->impair);
	fputs("mac ", out);
	put_mac(out, d->mac);
	fputc('\n', out);
}

/* One qp line per connection: QPNs, the peer, PSNs, MTU, the timers the
 * capture shows. @return whether the side acknowledged anything. */
static bool emit_qps(struct dctx *d, bool by_psn, FILE *out)
{
	char ipb[64];
	bool any_ack_by_own = false;
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *c = &d->conns[i];
		if (!c->local_known) {
			c->local_qpn = drv_synth_qpn(d);
			c->local_known = true;
		}
		any_ack_by_own |= c->any_acked_by_own;
		fprintf(out, "qp qp%u local=%#x peer=%#x peer-ip=%s peer-mac=", i, c->local_qpn,
			c->peer_qpn, droce_rp_fmt_ip(d->ipv, c->peer_ip, ipb, sizeof(ipb)));
		put_mac(out, c->peer_mac);
		fprintf(out, " sq-psn=%u rq-psn=%u mtu=%u", c->sq_psn, c->rq_psn, c->mtu);
		/* No resend on a timer in the capture: timeout=0 (never) keeps
		 * droce from retransmitting into silence. Otherwise the gaps
		 * give the exponent. */
		bool unacked = c->own_started &&
			       (!c->any_acked_by_peer || c->acked_by_peer != psn_add(c->own_next, DROCE_PSN_MASK));
		if (c->timeout_retx) {
			/* a side that gave up keeps its timer: droce must give up too */
			if (by_psn && !(unacked && c->max_resends <= 7)) {
				uint64_t span = conversation_span(d, i);
				while (c->timeout < 31 && 7 * (4096ull << c->timeout) <= span)
					c->timeout++;
			}
			fprintf(out, " timeout=%u", c->timeout);
			/* Resent and still unacknowledged when the capture ends:
			 * the side gave up after that many retries (9.7.6.1.3). */
			if (unacked && c->max_resends <= 7) {
				fprintf(out, " retry=%u", c->max_resends);
				c->gave_up = true;
			}
		} else
			fprintf(out, " timeout=0");
		if (c->rnr_seen && c->min_rnr_timer != 0xFF)
			fprintf(out, " min-rnr-timer=%u", c->min_rnr_timer);
		fputc('\n', out);
	}
	if (d->retrans_own)
		fprintf(out, "# the side resent %u requests; timeout= is inferred from the gaps of those\n"
			"# not prompted by a NAK\n", d->retrans_own);
	return any_ack_by_own;
}

/* The regions the peer names, with what the capture shows of them, and the
 * side's local buffers laid out. */
static void emit_regions(struct dctx *d, FILE *out)
{
	/* Regions the peer names. */
	char ab[32];
	for (unsigned i = 0; i < d->nregions; i++) {
		struct region *r = &d->regions[i];
		fprintf(out, "mr r%u addr=%#" PRIx64 " len=%" PRIu64 " rkey=%#x access=%s\n", i, r->lo,
			r->hi - r->lo, r->rkey, access_str(r->access, ab));
		char name[16];
		snprintf(name, sizeof(name), "r%u", i);
		put_runs(out, "fill", name, r->init, NULL, (size_t)(r->hi - r->lo));
	}
	/* Local buffers: sources of the side's sends/writes, sinks of its
	 * reads/atomics, and receive buffers for the peer's SENDs. */
	uint64_t src_len = 0, dst_len = 0, rq_len = 0;
	bool need_src = false, need_dst = false, need_rq = false;
	for (size_t i = 0; i < d->nmsgs; i++) {
		struct msg *m = &d->msgs[i];
		if ((m->dropped && !m->err_recv) || !m->complete)
			continue;
		if (m->own && (m->kind == M_SEND || m->kind == M_WRITE)) {
			m->local_off = src_len;
			src_len = align64(src_len + m->len);
			need_src = true;
		} else if (m->own) {
			m->local_off = dst_len;
			dst_len = align64(dst_len + (m->kind == M_READ ? m->dma_len : 8));
			need_dst = true;
		} else if (m->kind == M_SEND) {
			m->local_off = rq_len;
			rq_len = align64(rq_len + m->len);
			need_rq = true;
		}
	}
	/* Zero-length messages only: their WRs still name the region. */
	if (need_src && !src_len)
		src_len = 64;
	if (need_dst && !dst_len)
		dst_len = 64;
	if (need_rq && !rq_len)
		rq_len = 64;
	if (src_len) {
		fprintf(out, "mr src addr=%#x len=%" PRIu64 " access=lw\n", SRC_ADDR, src_len);
		for (size_t i = 0; i < d->nmsgs; i++) {
			struct msg *m = &d->msgs[i];
			if (m->own && m->complete && !m->dropped &&
			    (m->kind == M_SEND || m->kind == M_WRITE) && m->len) {
				fprintf(out, "fill src %" PRIu64 " ", m->local_off);
				put_hex(out, m->data, m->len);
				fputc('\n', out);
			}
		}
	}
	if (dst_len)
		fprintf(out, "mr dst addr=%#x len=%" PRIu64 " access=lw\n", DST_ADDR, dst_len);
	if (rq_len)
		fprintf(out, "mr rq addr=%#x len=%" PRIu64 " access=lw\n", RQ_ADDR, rq_len);
}

static void emit_work(struct dctx *d, FILE *out)
{
	/* Receives, then work requests, each at the time the capture shows.
	 * A receive queue is consumed in order (9.7.5.2.8, 10.8.3): a receive
	 * the side lacked until its RNR NAK was posted after every receive
	 * before it, and every one after it was posted later still, or the
	 * later messages would have taken it. */
	uint64_t wr = 1, rq_floor[MAX_CONNS] = { 0 };
	for (size_t i = 0; i < d->nmsgs; i++) {
		struct msg *m = &d->msgs[i];
		if (m->own || (m->dropped && !m->err_recv) || !m->complete)
			continue;
		bool consumes = m->kind == M_SEND || (m->kind == M_WRITE && m->has_imm);
		if (!consumes)
			continue;
		uint64_t at = 0;
		for (size_t j = 0; j < d->nmsgs; j++)
			if (d->msgs[j].rnr && d->msgs[j].conn == m->conn &&
			    d->msgs[j].first_psn == m->first_psn && d->msgs[j].rnr_t + 1 > at)
				at = d->msgs[j].rnr_t + 1;
		if (at < rq_floor[m->conn])
			at = rq_floor[m->conn];
		rq_floor[m->conn] = at;
		fprintf(out, "recv qp%d wr=%" PRIu64, m->conn, wr);
		if (m->kind == M_SEND)
			fprintf(out, " mr=rq off=%" PRIu64 " len=%zu", m->local_off, m->len);
		if (at) {
			fputs(" at=", out);
			put_time(out, at);
		}
		fputc('\n', out);
		m->local_off = m->kind == M_SEND ? m->local_off : 0;
		m->wr_id = wr++;
	}
	for (size_t i = 0; i < d->nmsgs; i++) {
		struct msg *m = &d->msgs[i];
		if (!m->own || m->dropped || !m->complete)
			continue;
		static const char *const ops[] = { "send", "write", "read", "cas", "faa" };
		const char *op = ops[m->kind];
		if (m->has_imm)
			op = m->kind == M_SEND ? "send-imm" : "write-imm";
		fprintf(out, "post qp%d wr=%" PRIu64 " op=%s", m->conn, wr, op);
		if (m->kind == M_SEND || m->kind == M_WRITE)
			fprintf(out, " mr=src off=%" PRIu64 " len=%zu", m->local_off, m->len);
		else
			fprintf(out, " mr=dst off=%" PRIu64 " len=%u", m->local_off,
				m->kind == M_READ ? m->dma_len : 8);
		if (m->kind != M_SEND)
			fprintf(out, " raddr=%#" PRIx64 " rkey=%#x", m->va, m->rkey);
		if (m->has_imm)
			fprintf(out, " imm=%#x", m->imm);
		if (m->kind == M_CAS)
			fprintf(out, " compare=%#" PRIx64 " swap=%#" PRIx64, m->compare, m->swap_add);
		if (m->kind == M_FAA)
			fprintf(out, " add=%#" PRIx64, m->swap_add);
		if (m->solicited)
			fputs(" solicited", out);
		fputs(" at=", out);
		put_time(out, m->t_ns);
		fputc('\n', out);
		m->wr_id = wr++;
	}
}

static void emit_expect_mem(struct dctx *d, FILE *out)
{
	/* Expected memory. */
	for (unsigned i = 0; i < d->nregions; i++) {
		struct region *r = &d->regions[i];
		char name[16];
		snprintf(name, sizeof(name), "r%u", i);
		put_runs(out, "expect-mem", name, r->shadow, r->written, (size_t)(r->hi - r->lo));
	}
	for (size_t i = 0; i < d->nmsgs; i++) {
		struct msg *m = &d->msgs[i];
		if (m->dropped || !m->complete)
			continue;
		if (m->own && m->kind == M_READ && m->len) {
			fprintf(out, "expect-mem dst %" PRIu64 " ", m->local_off);
			put_hex(out, m->data, m->len);
			fputc('\n', out);
		} else if (m->own && (m->kind == M_CAS || m->kind == M_FAA) && m->has_orig) {
			uint8_t b[8];
			drv_put_le64(b, m->orig);
			fprintf(out, "expect-mem dst %" PRIu64 " ", m->local_off);
			put_hex(out, b, 8);
			fputc('\n', out);
		} else if (!m->own && m->kind == M_SEND && m->len) {
			fprintf(out, "expect-mem rq %" PRIu64 " ", m->local_off);
			put_hex(out, m->data, m->len);
			fputc('\n', out);
		}
	}
}

static void emit_completions(struct dctx *d, FILE *out)
{
	/* Completions, where the capture settles them: an acknowledged
	 * request succeeded; an acknowledged SEND filled its receive. Error
	 * flows (NAKs other than PSN sequence) are left unchecked. */
	bool err = false, gave_up = false;
	for (unsigned i = 0; i < d->nconns; i++) {
		err |= d->conns[i].error_nak;
		gave_up |= d->conns[i].gave_up;
	}
	if (err) {
		fputs("# completions not derived: the capture has an error NAK\n", out);
	} else if (gave_up) {
		fputs("# completions not derived: requests resent and never acknowledged (the side\n"
		      "# gave up, or the capture stopped first: the wire cannot tell)\n", out);
	} else {
		unsigned nwc = 0;
		for (size_t i = 0; i < d->nmsgs; i++) {
			struct msg *m = &d->msgs[i];
			if (m->dropped || !m->complete)
				continue;
			struct conn *c = &d->conns[m->conn];
			if (m->own) {
				if (!c->any_acked_by_peer || psn_lt(c->acked_by_peer, m->last_psn))
					continue;
				static const char *const wops[] = { "send", "write", "read", "cas", "faa" };
				fprintf(out, "expect-wc qp%d send wr=%" PRIu64 " status=SUCCESS opcode=%s\n",
					m->conn, m->wr_id, wops[m->kind]);
				nwc++;
			} else if (m->kind == M_SEND || (m->kind == M_WRITE && m->has_imm)) {
				if (!c->any_acked_by_own || psn_lt(c->acked_by_own, m->last_psn))
					continue;
				fprintf(out, "expect-wc qp%d recv wr=%" PRIu64 " status=SUCCESS opcode=%s",
					m->conn, m->wr_id, m->kind == M_SEND ? "recv" : "recv-imm");
				if (m->kind == M_SEND)
					fprintf(out, " len=%zu", m->len);
				if (m->has_imm)
					fprintf(out, " imm=%#x", m->imm);
				fputc('\n', out);
				nwc++;
			}
		}
		if (!nwc)
			fputs("expect-wc none\n", out);
	}
}

/* What the comparison allows, and the frames it must treat apart: late,
 * lost, delivered out of capture order, CNPs droce does not send. */
static void emit_allowances(struct dctx *d, bool any_ack_by_own, bool by_psn, FILE *out)
{
	if (any_ack_by_own)
		fputs("# how many packets one ACK covers is the responder's choice (IBTA 9.7.5.1.1)\n"
		      "allow ack-coalescing\n", out);
	if (d->retrans_own)
		fputs("# how far a requester runs before a NAK reaches it and it goes back is its\n"
		      "# window and its link's pace, not the protocol\n"
		      "allow send-ahead\n"
		      "# and its timers run from when it sent: droce sends no request earlier than the\n"
		      "# side's of the same rank did\n"
		      "pace requests\n", out);
	if (by_psn)
		fputs("# a lossy link: each packet is compared at its PSN, not where or how often it was\n"
		      "# resent (IBTA 9.7.1: every copy of a PSN is the same packet)\n"
		      "compare by-psn\n", out);
	for (size_t i = 0; i < d->ncross; i++) {
		fprintf(out, "deliver %u at=", d->cross[i].frame);
		put_time(out, d->cross[i].at);
		fputs(d->cross[i].req
			      ? "  # the side took this copy only just before answering it (held behind\n"
				"# the capture point past its refusals: no later copy is captured)\n"
			      : "  # the side got this only after sending the frames the capture shows after it\n"
				"# (they crossed on the wire)\n",
		      out);
	}
	bool said = false;
	for (size_t i = 0; i < d->nlost; i++) {
		const struct dlost *l = &d->lost[i];
		/* A request PSN inside a READ's response range is no packet. */
		if (l->late) {
			fprintf(out, "late %u copy=%u  # delayed on the wire, not lost: compared out of place\n",
				l->late, l->copy);
			continue;
		}
		if (!l->resp && !drv_own_frame_at(d, l->conn, l->psn))
			continue;
		if (!said)
			fputs("# packets of the side the capture lacks (lost before the capture point)\n", out);
		said = true;
		fprintf(out, "lost qp%d %s %u copy=%u\n", l->conn, l->resp ? "resp" : "req", l->psn, l->copy);
	}
	for (unsigned i = 0; i < d->nskipped_cnp; i++)
		fprintf(out, "skip-frame %u  # CNP with no CE-marked frame before it: droce only "
			"notifies congestion it saw (A17.9.2)\n", d->skipped_cnp[i]);
}

void drv_emit(struct dctx *d, const char *cap_path, const char *side, FILE *out)
{
	bool by_psn = drv_lossy(d);
	emit_head(d, cap_path, side, out);
	bool any_ack_by_own = emit_qps(d, by_psn, out);
	emit_regions(d, out);
	emit_work(d, out);
	emit_expect_mem(d, out);
	emit_completions(d, out);
	emit_allowances(d, any_ack_by_own, by_psn, out);
}
