/* SPDX-License-Identifier: BSD-3-Clause */
#include "derive.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cm/mad.h"
#include "derive_cm.h"
#include "frames.h"
#include "pmap.h"
#include "scenario.h"
#include "wire/hdr.h"

#define PSN_MASK 0xFFFFFFu
#define MAX_CONNS DROCE_RP_MAX_QPS
#define MAX_REGIONS (DROCE_RP_MAX_MRS - 3)
#define MAX_REGION_LEN (16u << 20)

/* a < b in 24-bit PSN space (IBTA 9.7.1: half the space is "behind"). */
static bool psn_lt(uint32_t a, uint32_t b)
{
	uint32_t d = (b - a) & PSN_MASK;
	return d != 0 && d < 0x800000u;
}

static uint32_t psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & PSN_MASK;
}

static uint64_t hkey(int conn, unsigned kind, uint32_t psn)
{
	return ((uint64_t)(unsigned)conn << 32 | (uint64_t)kind << 24 | psn) + 1;
}

/* hkey kinds */
#define HK_COUNT_REQ  0u             /* pcount index, requests */
#define HK_COUNT_RESP 1u             /* pcount index, responses */
#define HK_OWN_REQ    2u             /* the side's latest request frame at a PSN */
#define HK_ACC_NAK    3u             /* the side NAKed a request at a PSN for access */

struct fr {
	const struct droce_rp_frame *f;
	struct droce_pkt p;
	enum droce_parse_result r;
	enum droce_rp_role role;
	int conn;
	bool first;                  /* the first visible copy of an own request PSN */
	bool gone;                   /* a peer frame the side's receive shim dropped */
	uint64_t t_seen;             /* a peer NAK: when the side got it (0: its capture time) */
};

struct conn {
	uint32_t local_qpn, peer_qpn;
	bool local_known, peer_known;
	uint8_t peer_ip[16];
	uint8_t peer_mac[6];
	bool any_peer;               /* frames to the side on this connection */
	bool own_started, peer_started;
	uint32_t sq_psn, rq_psn, own_next, peer_next;
	bool sq_early, rq_early;     /* a PSN before the first seen starts the sequence */
	uint32_t sq_min, rq_min;     /* that PSN (start_psns) */
	uint32_t own_cur;            /* PSN after the side's last request packet */
	uint32_t epoch;              /* how often the side went back (go-back-N) */
	uint32_t resp_epoch;         /* how often it answered a READ again */
	bool nak_pending;            /* the peer NAKed nak_psn; the side has not gone back yet */
	uint32_t nak_psn;
	size_t nak_frame;            /* that NAK */
	uint64_t trig_t;             /* when the side last got a NAK or a READ response (0: never) */
	uint64_t ack_t;              /* when the side last got a positive answer (its timer restarts) */
	uint64_t peer_t;             /* when the side last got anything on this connection */
	uint64_t nak_t;              /* when it last got a NAK or an RNR NAK */
	size_t trig_frame;
	uint32_t acked_by_peer;      /* highest PSN the peer acknowledged */
	bool any_acked_by_peer;
	uint32_t acked_by_own;
	bool any_acked_by_own;
	bool error_nak;              /* an error NAK either way: completions not derived */
	bool resp_dead;              /* the side NAKed an error: its responder QP is in ERR */
	bool timeout_retx;           /* the side resent a request on its own: a timeout */
	uint8_t timeout;             /* the timeout exponent its gaps agree on */
	unsigned tvotes[32];         /* timer-driven go-backs per exponent */
	unsigned max_resends;        /* most timer-driven resends of one PSN */
	bool gave_up;                /* retries exhausted: completions not derived */
	bool rnr_seen;
	uint8_t min_rnr_timer;
	bool any_msn;                /* the side has answered with an AETH */
	uint32_t msn_max;            /* the highest MSN it sent so far, in capture order */
	unsigned mtu;
	unsigned seg_max, max_payload;
	int cur_own, cur_peer;       /* message being assembled, -1 none */
};

enum mkind { M_SEND, M_WRITE, M_READ, M_CAS, M_FAA };

struct msg {
	int conn;
	bool own;                    /* sent by the side (droce as requester) */
	enum mkind kind;
	bool has_imm, complete, dropped, has_orig, applied;
	bool err_recv;               /* dropped for an error NAK the side sent where it had a receive */
	uint32_t imm;
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey, dma_len;
	uint64_t compare, swap_add, orig;
	uint8_t *data;               /* payload (send/write) or response bytes (own read) */
	size_t len, cap;
	uint64_t t_ns;
	uint64_t rnr_t;              /* the side RNR-NAKed this SEND: post its receive after */
	bool rnr;
	uint64_t local_off;          /* in src / dst / rq */
	uint64_t wr_id;
	uint32_t req_seq;            /* region store count when the request executed */
	bool solicited;
	size_t first_idx;            /* its first frame */
	uint32_t resp_next;          /* peer READ: the side's next response PSN */
	bool resp_started;
	bool dup_pending;            /* the peer asked again (from dup_psn); the side has not answered */
	uint32_t dup_psn;
};

/* How many copies of a request/response PSN the side sent (visible or lost). */
struct pcount {
	int conn;
	bool resp;
	uint32_t psn;
	unsigned n;
};

/* A packet of the side's the capture lacks: its copy-th transmission was lost. */
struct dlost {
	int conn;
	bool resp;
	uint32_t psn;
	unsigned copy;
	uint32_t epoch;              /* the side's go-backs on the connection when it went missing */
	unsigned late;               /* it showed up after all, delayed on the wire: that frame (0: lost) */
};

struct region {
	uint32_t rkey;
	uint64_t lo, hi;
	unsigned access;
	uint8_t *init, *shadow;
	uint8_t *known, *written;    /* one byte per byte: simple and small enough */
	uint8_t *iset;               /* init[] holds a value seen on the wire */
	uint32_t *kseq, *wseq;       /* store sequence when first known / last written */
};

struct dctx {
	const struct droce_rp_capture *cap;
	int ipv;
	uint8_t ip[16];
	uint8_t mac[6];
	bool has_mac;
	struct fr *fr;
	size_t nfr;
	struct conn conns[MAX_CONNS];
	unsigned nconns;
	struct msg *msgs;
	size_t nmsgs;
	struct region regions[MAX_REGIONS];
	unsigned nregions;
	unsigned ignored_ud, skipped_cnp[64], nskipped_cnp, retrans_own;
	struct droce_rp_cm cm;       /* the rdma_cm handshakes the side took part in */
	int cm_of[MAX_CONNS];        /* conns[i]'s handshake in cm.c[], or -1 */
	uint32_t seq;                /* counts stores into the regions */
	struct pcount *pc;
	size_t npc, cappc;
	struct hmap map;             /* HK_* */
	size_t *reads;               /* the side's READ request frames */
	size_t nreads;
	bool acc_naks_known;
	size_t capmsgs;
	struct dlost *lost;
	size_t nlost;
	/* a NAK the side got after frames of its own, or a request of the
	 * peer's it took later than captured (held behind the capture point) */
	struct { unsigned frame; uint64_t at; bool req; } *cross;
	const char *impair;          /* the side's receive-side shim, or NULL */
	size_t ncross;
	char *err;
	size_t errlen;
};

static int dfail(struct dctx *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, d->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static size_t alen(const struct dctx *d)
{
	return d->ipv == 4 ? 4 : 16;
}

static int new_conn(struct dctx *d)
{
	if (d->nconns == MAX_CONNS)
		return -1;
	struct conn *c = &d->conns[d->nconns];
	memset(c, 0, sizeof(*c));
	c->cur_own = c->cur_peer = -1;
	c->min_rnr_timer = 0xFF;
	return (int)d->nconns++;
}

static int new_msg(struct dctx *d, int conn, bool own, enum mkind k, const struct fr *f)
{
	if (d->nmsgs == d->capmsgs) {
		size_t nc = d->capmsgs ? 2 * d->capmsgs : 64;
		struct msg *nm = realloc(d->msgs, nc * sizeof(*nm));
		if (!nm)
			return -1;
		d->msgs = nm;
		d->capmsgs = nc;
	}
	struct msg *m = &d->msgs[d->nmsgs];
	memset(m, 0, sizeof(*m));
	m->conn = conn;
	m->own = own;
	m->kind = k;
	m->first_psn = m->last_psn = f->p.h.bth.psn;
	m->t_ns = f->f->t_ns;
	m->first_idx = (size_t)(f - d->fr);
	return (int)d->nmsgs++;
}

static int msg_append(struct msg *m, const uint8_t *p, size_t n)
{
	if (!n)
		return 0;
	if (m->len + n > m->cap) {
		size_t nc = m->cap ? m->cap : 256;
		while (nc < m->len + n)
			nc *= 2;
		uint8_t *nd = realloc(m->data, nc);
		if (!nd)
			return -1;
		m->data = nd;
		m->cap = nc;
	}
	memcpy(m->data + m->len, p, n);
	m->len += n;
	return 0;
}

/* ------------------------------------------------------------ pairing -- */

static int conn_by_local(struct dctx *d, uint32_t qpn)
{
	for (unsigned i = 0; i < d->nconns; i++)
		if (d->conns[i].local_known && d->conns[i].local_qpn == qpn)
			return (int)i;
	return -1;
}

/* The latest connection (generation) to a peer QPN. */
static int conn_by_peer(struct dctx *d, uint32_t qpn, const uint8_t *ip)
{
	for (unsigned i = d->nconns; i-- > 0;)
		if (d->conns[i].peer_known && d->conns[i].peer_qpn == qpn &&
		    !memcmp(d->conns[i].peer_ip, ip, alen(d)))
			return (int)i;
	return -1;
}

/*
 * Pair the side's local QPNs (named by the peer's frames) with the peer's
 * QPNs (named by the side's frames): a request and its response carry the
 * same PSN (IBTA 9.7.5.1), one in each direction.
 */
static int pair_qps(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->role != DROCE_RP_OWN && a->role != DROCE_RP_PEER)
			continue;
		uint32_t q = a->p.h.bth.dqpn;
		const uint8_t *pip = a->role == DROCE_RP_OWN ? a->p.h.net.dst_ip : a->p.h.net.src_ip;
		int c = a->role == DROCE_RP_OWN ? conn_by_peer(d, q, pip) : conn_by_local(d, q);
		if (c >= 0)
			continue;
		/* Find the frame the other way with the same PSN and the opposite
		 * role: a response after its request, a request before its
		 * response, nearest first, on QPNs not paired elsewhere. */
		bool req = a->p.op && (a->p.op->flags & DROCE_OPF_REQ);
		bool cnp = a->p.op && (a->p.op->flags & DROCE_OPF_CNP);
		int other = -1;
		for (size_t k = 1; k <= d->nfr && other < 0 && !cnp && a->p.op; k++) {
			if (req ? i + k >= d->nfr : k > i)
				break;
			size_t j = req ? i + k : i - k;
			struct fr *b = &d->fr[j];
			if (b->role == a->role || (b->role != DROCE_RP_OWN && b->role != DROCE_RP_PEER) ||
			    !b->p.op || b->p.h.bth.psn != a->p.h.bth.psn ||
			    (b->p.op->flags & DROCE_OPF_CNP))
				continue;
			bool breq = (b->p.op->flags & DROCE_OPF_REQ) != 0;
			if (breq == req)
				continue;
			int bc = b->role == DROCE_RP_OWN
					 ? conn_by_peer(d, b->p.h.bth.dqpn, b->p.h.net.dst_ip)
					 : conn_by_local(d, b->p.h.bth.dqpn);
			if (bc >= 0)
				continue; /* already paired with another QP */
			other = (int)j;
		}
		uint32_t local = 0, peer = 0;
		bool lk = false, pk = false;
		if (a->role == DROCE_RP_OWN) {
			peer = q;
			pk = true;
			if (other >= 0) {
				local = d->fr[other].p.h.bth.dqpn;
				lk = true;
			}
		} else {
			local = q;
			lk = true;
			if (other >= 0) {
				peer = d->fr[other].p.h.bth.dqpn;
				pk = true;
			}
		}
		/* The other half may already have a connection of its own. */
		int ca = lk ? conn_by_local(d, local) : -1;
		int cb = pk ? conn_by_peer(d, peer, pip) : -1;
		c = ca >= 0 ? ca : cb;
		if (c < 0 && (c = new_conn(d)) < 0)
			return dfail(d, "more than %d connections", MAX_CONNS);
		struct conn *cn = &d->conns[c];
		if (lk && !cn->local_known) {
			cn->local_qpn = local;
			cn->local_known = true;
		}
		if (pk && !cn->peer_known) {
			cn->peer_qpn = peer;
			cn->peer_known = true;
		}
		memcpy(cn->peer_ip, pip, alen(d));
	}
	/* Leftovers: one unpaired local QPN and one unpaired peer QPN to the
	 * same peer are the two halves of one connection. */
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *a = &d->conns[i];
		if (a->local_known && a->peer_known)
			continue;
		for (unsigned j = i + 1; j < d->nconns; j++) {
			struct conn *b = &d->conns[j];
			if (b->local_known == a->local_known || b->peer_known == b->local_known ||
			    memcmp(a->peer_ip, b->peer_ip, alen(d)))
				continue;
			if (!a->local_known) {
				a->local_qpn = b->local_qpn;
				a->local_known = true;
			} else {
				a->peer_qpn = b->peer_qpn;
				a->peer_known = true;
			}
			*b = d->conns[--d->nconns];
			break;
		}
	}
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *c = &d->conns[i];
		if (!c->peer_known)
			return dfail(d, "frames reach local QPN %#x but the side never sends on that "
				     "connection: the peer's QPN cannot be inferred", c->local_qpn);
	}
	/* Assign frames. */
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		a->conn = -1;
		if (a->role == DROCE_RP_OWN)
			a->conn = conn_by_peer(d, a->p.h.bth.dqpn, a->p.h.net.dst_ip);
		else if (a->role == DROCE_RP_PEER)
			a->conn = conn_by_local(d, a->p.h.bth.dqpn);
		if (a->conn >= 0 && a->role == DROCE_RP_PEER)
			d->conns[a->conn].any_peer = true;
	}
	return 0;
}

/* A local QPN for a connection the peer never addresses: unused by any. */
static uint32_t synth_qpn(struct dctx *d)
{
	for (uint32_t q = 0x100;; q++) {
		bool used = false;
		for (unsigned i = 0; i < d->nconns; i++)
			used |= d->conns[i].local_known && d->conns[i].local_qpn == q;
		if (!used)
			return q;
	}
}

static bool valid_mtu(unsigned m)
{
	return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096;
}

static int infer_mtu(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op)
			continue;
		struct conn *c = &d->conns[a->conn];
		unsigned fl = a->p.op->flags, pl = a->p.h.payload_len;
		if (pl > c->max_payload)
			c->max_payload = pl;
		/* FIRST and MIDDLE packets carry exactly one path MTU (9.7.7). */
		if ((fl & DROCE_OPF_PAYLOAD) && (fl & (DROCE_OPF_FIRST | DROCE_OPF_MIDDLE)) &&
		    !(fl & DROCE_OPF_LAST)) {
			if (c->seg_max && pl != c->seg_max)
				return dfail(d, "frame %u: FIRST/MIDDLE payload %u differs from an earlier "
					     "%u: no single path MTU", a->f->num, pl, c->seg_max);
			c->seg_max = pl;
		}
	}
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *c = &d->conns[i];
		if (c->seg_max) {
			if (!valid_mtu(c->seg_max))
				return dfail(d, "QP %#x: segments of %u bytes: not a path MTU (256..4096)",
					     c->peer_qpn, c->seg_max);
			c->mtu = c->seg_max;
		} else {
			c->mtu = 4096; /* nothing was segmented: any MTU >= the largest packet */
			if (c->max_payload > 4096)
				return dfail(d, "QP %#x: a %u-byte packet is larger than any path MTU",
					     c->peer_qpn, c->max_payload);
		}
	}
	return 0;
}

static unsigned npkts(uint32_t len, unsigned mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

/* ------------------------------------------------------------ regions -- */

static struct region *region_of(struct dctx *d, uint32_t rkey)
{
	for (unsigned i = 0; i < d->nregions; i++)
		if (d->regions[i].rkey == rkey)
			return &d->regions[i];
	return NULL;
}

/* The side NAKed the peer's request at this PSN on this connection with an access error. */
static bool access_naked(struct dctx *d, int conn, uint32_t psn)
{
	if (!d->acc_naks_known) {
		d->acc_naks_known = true;
		for (size_t i = 0; i < d->nfr; i++) {
			struct fr *a = &d->fr[i];
			if (a->role == DROCE_RP_OWN && a->conn >= 0 && a->p.op &&
			    (a->p.op->hdrs & DROCE_HDR_AETH) &&
			    a->p.h.ext.aeth.syndrome == (DROCE_AETH_NAK | DROCE_NAK_REMOTE_ACCESS) &&
			    hput(&d->map, hkey(a->conn, HK_ACC_NAK, a->p.h.bth.psn), i))
				return false; /* out of memory: the replay will tell */
		}
	}
	return hget(&d->map, hkey(conn, HK_ACC_NAK, psn)) != NULL;
}

static int collect_regions(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->role != DROCE_RP_PEER || a->conn < 0 || !a->p.op)
			continue;
		unsigned hd = a->p.op->hdrs, fl = a->p.op->flags;
		uint64_t va;
		uint32_t rkey, len;
		unsigned acc;
		if (hd & DROCE_HDR_RETH) {
			va = a->p.h.ext.reth.va;
			rkey = a->p.h.ext.reth.rkey;
			len = a->p.h.ext.reth.dma_len;
			acc = (fl & DROCE_OPF_READ) ? DROCE_RP_ACC_RR : DROCE_RP_ACC_RW | DROCE_RP_ACC_LW;
		} else if (hd & DROCE_HDR_ATOMIC) {
			va = a->p.h.ext.atomic.va;
			rkey = a->p.h.ext.atomic.rkey;
			len = 8;
			acc = DROCE_RP_ACC_RA | DROCE_RP_ACC_LW;
		} else {
			continue;
		}
		/* A request the side refused for access must stay refused. */
		if (access_naked(d, a->conn, a->p.h.bth.psn))
			continue;
		struct region *r = region_of(d, rkey);
		if (!r) {
			if (d->nregions == MAX_REGIONS)
				return dfail(d, "more than %d rkeys", MAX_REGIONS);
			r = &d->regions[d->nregions++];
			memset(r, 0, sizeof(*r));
			r->rkey = rkey;
			r->lo = va;
			r->hi = va + len;
		}
		if (va < r->lo)
			r->lo = va;
		if (va + len > r->hi)
			r->hi = va + len;
		r->access |= acc;
		if (r->hi - r->lo > MAX_REGION_LEN)
			return dfail(d, "rkey %#x: addresses span more than %u MB", rkey,
				     MAX_REGION_LEN >> 20);
	}
	for (unsigned i = 0; i < d->nregions; i++) {
		struct region *r = &d->regions[i];
		r->lo &= ~(uint64_t)7; /* keep atomics 8-byte aligned */
		size_t n = (size_t)(r->hi - r->lo) + 1;
		r->init = calloc(1, n);
		r->shadow = calloc(1, n);
		r->known = calloc(1, n);
		r->written = calloc(1, n);
		r->iset = calloc(1, n);
		r->kseq = calloc(n, sizeof(*r->kseq));
		r->wseq = calloc(n, sizeof(*r->wseq));
		if (!r->init || !r->shadow || !r->known || !r->written || !r->iset || !r->kseq || !r->wseq)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The side's memory at [va, va+n) was @p b when a request that executed at
 * store count @p req_seq read it (a READ response, an atomic's original
 * value). Bytes nothing had put there by then give the initial contents.
 * Bytes something had put there and nothing overwrote since must match:
 * otherwise the memory changed off the wire (a local store by the
 * application), which no replay can reproduce. Bytes overwritten after the
 * request may show either value (IBTA lets a later WRITE pass an earlier
 * READ's data without a fence) and are not checked.
 * @return the offset of the first conflicting byte in @p b, or -1.
 */
static long learn(struct dctx *d, struct region *r, uint64_t va, const uint8_t *b, size_t n,
		  uint32_t req_seq)
{
	if (!r || va < r->lo || va + n > r->hi)
		return -1;
	size_t o = (size_t)(va - r->lo);
	for (size_t k = 0; k < n; k++) {
		size_t x = o + k;
		bool known_then = r->known[x] && r->kseq[x] <= req_seq;
		if (!known_then) {
			if (!r->iset[x]) {
				r->init[x] = b[k];
				r->iset[x] = 1;
			}
			if (!r->known[x]) {
				r->shadow[x] = b[k];
				r->known[x] = 1;
				r->kseq[x] = d->seq;
			}
		} else if (r->wseq[x] <= req_seq && r->shadow[x] != b[k]) {
			return (long)k;
		}
	}
	return -1;
}

static int off_wire(struct dctx *d, const struct fr *a, const struct region *r, uint64_t va, long k)
{
	return dfail(d, "frame %u: the side's memory at %#" PRIx64 " (rkey %#x) reads %#04x, but the "
		     "capture put %#04x there before: it changed off the wire (a local store), "
		     "which a replay cannot reproduce", a->f->num, va + (uint64_t)k, r->rkey,
		     a->p.payload ? a->p.payload[k] : 0, r->shadow[va + (uint64_t)k - r->lo]);
}

static void store(struct dctx *d, struct region *r, uint64_t va, const uint8_t *b, size_t n)
{
	if (!r || !n || va < r->lo || va + n > r->hi)
		return;
	size_t o = (size_t)(va - r->lo);
	d->seq++;
	memcpy(r->shadow + o, b, n);
	for (size_t k = 0; k < n; k++) {
		if (!r->known[o + k])
			r->kseq[o + k] = d->seq;
		r->wseq[o + k] = d->seq;
	}
	memset(r->known + o, 1, n);
	memset(r->written + o, 1, n);
}

static uint64_t le64(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static void put_le64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------------------------------------------------- the walk -- */

static int find_msg(struct dctx *d, int conn, bool own, uint32_t psn, bool range)
{
	for (size_t i = d->nmsgs; i-- > 0;) {
		struct msg *m = &d->msgs[i];
		if (m->conn != conn || m->own != own || m->dropped)
			continue;
		if (m->first_psn == psn)
			return (int)i;
		if (range && !psn_lt(psn, m->first_psn) && !psn_lt(m->last_psn, psn))
			return (int)i;
	}
	return -1;
}

/*
 * The peer's message the side refused at @p psn, its LAST, with an RNR NAK
 * before (its FIRST and MIDDLE placed, the message waiting for the LAST's
 * resend; own_response()), or -1. The side refuses that LAST again for
 * every copy of it that reaches it before it has a receive (9.7.5.2.8):
 * the resend after the RNR wait, or a copy netem delayed behind the capture
 * point, of which no frame shows between the two NAKs.
 */
static int find_refused(struct dctx *d, int conn, uint32_t psn)
{
	for (size_t i = d->nmsgs; i-- > 0;) {
		const struct msg *m = &d->msgs[i];
		if (m->conn == conn && !m->own && !m->dropped && m->rnr && !m->complete &&
		    psn_add(m->last_psn, 1) == psn)
			return (int)i;
	}
	return -1;
}

/* The side's latest request frame on this connection with this PSN before the one own_seq() is at. */
static const struct fr *own_frame_at(struct dctx *d, int conn, uint32_t psn)
{
	size_t *v = hget(&d->map, hkey(conn, HK_OWN_REQ, psn));
	return v ? &d->fr[*v] : NULL;
}

/* The same packet sent again: what the protocol defines is equal (a
 * FETCH_ADD's compare field is not: rxe sends whatever it holds, 9.4.5). */
static bool same_request(const struct fr *a, const struct fr *b)
{
	struct droce_ext_fields x = a->p.h.ext, y = b->p.h.ext;
	if (a->p.h.bth.opcode == DROCE_OP_RC_FETCH_ADD)
		x.atomic.compare = y.atomic.compare = 0;
	return a->p.h.bth.opcode == b->p.h.bth.opcode && a->p.h.payload_len == b->p.h.payload_len &&
	       !memcmp(a->p.payload, b->p.payload, a->p.h.payload_len) && !memcmp(&x, &y, sizeof(x));
}

static enum mkind kind_of(const struct droce_opcode_info *oi, uint8_t opcode)
{
	if (oi->flags & DROCE_OPF_SEND)
		return M_SEND;
	if (oi->flags & DROCE_OPF_WRITE)
		return M_WRITE;
	if (oi->flags & DROCE_OPF_READ)
		return M_READ;
	return opcode == DROCE_OP_RC_COMPARE_SWAP ? M_CAS : M_FAA;
}

static unsigned *count_of(struct dctx *d, int conn, bool resp, uint32_t psn)
{
	uint64_t k = hkey(conn, resp ? HK_COUNT_RESP : HK_COUNT_REQ, psn);
	size_t *v = hget(&d->map, k);
	if (v)
		return &d->pc[*v].n;
	if (d->npc == d->cappc) {
		size_t nc = d->cappc ? 2 * d->cappc : 256;
		struct pcount *np = realloc(d->pc, nc * sizeof(*np));
		if (!np)
			return NULL;
		d->pc = np;
		d->cappc = nc;
	}
	if (hput(&d->map, k, d->npc))
		return NULL;
	d->pc[d->npc] = (struct pcount){ .conn = conn, .resp = resp, .psn = psn, .n = 0 };
	return &d->pc[d->npc++].n;
}

/* The side sent a copy of this packet the capture lacks (lost before the capture point). */
static int add_lost(struct dctx *d, int conn, bool resp, uint32_t psn)
{
	unsigned *n = count_of(d, conn, resp, psn);
	struct dlost *nl = n ? realloc(d->lost, (d->nlost + 1) * sizeof(*nl)) : NULL;
	if (!nl)
		return -ENOMEM;
	d->lost = nl;
	d->lost[d->nlost++] = (struct dlost){ .conn = conn, .resp = resp, .psn = psn, .copy = (*n)++,
					      .epoch = resp ? d->conns[conn].resp_epoch
							    : d->conns[conn].epoch };
	return 0;
}

/*
 * The side's packet at @p idx (a request, or with @p resp a READ response)
 * lies behind its cursor @p cur and was never seen before, but it is
 * missing from a gap the side has not gone back over since, and the side's
 * next packet of that kind does not continue after this one: it was not
 * lost but delayed on the wire (netem's reorder in front of tcpdump).
 * @return that gap's entry, or NULL.
 */
static struct dlost *arrived_late(struct dctx *d, size_t idx, bool resp, uint32_t cur)
{
	const struct fr *a = &d->fr[idx];
	struct conn *c = &d->conns[a->conn];
	uint32_t psn = a->p.h.bth.psn;
	struct dlost *l = NULL;
	for (size_t i = d->nlost; i-- > 0 && !l;)
		if (d->lost[i].resp == resp && !d->lost[i].late && d->lost[i].conn == a->conn &&
		    d->lost[i].psn == psn)
			l = &d->lost[i];
	if (!l || l->epoch != (resp ? c->resp_epoch : c->epoch))
		return NULL;
	for (size_t j = idx + 1; j < d->nfr; j++) {
		const struct fr *b = &d->fr[j];
		if (b->role != DROCE_RP_OWN || b->conn != a->conn || !b->p.op ||
		    !(b->p.op->flags & DROCE_OPF_REQ) != resp || (b->p.op->flags & DROCE_OPF_CNP) ||
		    (resp && !(b->p.op->flags & DROCE_OPF_READ)))
			continue;
		/* a READ request takes a PSN per response packet (9.7.4.1.2):
		 * the side continues after it there */
		uint32_t next = psn_add(psn, !resp && (a->p.op->flags & DROCE_OPF_READ)
						     ? npkts(a->p.h.ext.reth.dma_len, c->mtu) : 1);
		return b->p.h.bth.psn == next && next != cur ? NULL : l;
	}
	return l;
}

/* The side's READ request frame @p idx, for read_covering(). */
static int add_read(struct dctx *d, size_t idx)
{
	size_t *nr = realloc(d->reads, (d->nreads + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	d->reads = nr;
	d->reads[d->nreads++] = idx;
	return 0;
}

/* An earlier visible READ request of the side's whose response PSNs cover @p psn (not its first). */
static const struct fr *read_covering(struct dctx *d, int conn, uint32_t psn)
{
	for (size_t r = d->nreads; r-- > 0;) {
		const struct fr *b = &d->fr[d->reads[r]];
		if (b->role != DROCE_RP_OWN || b->conn != conn || !b->p.op ||
		    b->p.h.bth.opcode != DROCE_OP_RC_RDMA_READ_REQUEST)
			continue;
		uint32_t n = npkts(b->p.h.ext.reth.dma_len, d->conns[conn].mtu);
		uint32_t k = (psn - b->p.h.bth.psn) & PSN_MASK;
		if (k > 0 && k < n)
			return b;
	}
	return NULL;
}

/*
 * A frame of the peer's that makes a requester go back: a NAK, an RNR NAK,
 * or a READ response (one out of order is an implied NAK, 9.7.5.2.2, and
 * makes rxe and droce re-request from the first missing packet; which one
 * was out of order for the side, the capture cannot always tell).
 * own_requests() keeps when the side last got one (conn.trig_t).
 */
static bool is_trigger(const struct fr *b)
{
	if (b->role != DROCE_RP_PEER || !b->p.op || b->gone || (b->p.op->flags & DROCE_OPF_REQ))
		return false;
	return (b->p.op->flags & DROCE_OPF_READ) ||
	       ((b->p.op->hdrs & DROCE_HDR_AETH) &&
		(b->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK);
}

/* Silence before a resend that no NAK explains: the ACK timer, whatever READ responses came before it. */
#define TIMER_SILENCE_NS 1000000u

/* The peer's frame @p j reached the side only after it sent @p a: deliver it then. */
/* "deliver" the peer's frame @p j at @p at (one entry per frame: the latest wins). */
static int set_deliver(struct dctx *d, size_t j, uint64_t at, bool req)
{
	unsigned nf = d->fr[j].f->num;
	size_t k;
	for (k = 0; k < d->ncross && d->cross[k].frame != nf; k++)
		;
	if (k == d->ncross) {
		void *nc = realloc(d->cross, (d->ncross + 1) * sizeof(*d->cross));
		if (!nc)
			return -ENOMEM;
		d->cross = nc;
		d->ncross++;
	}
	d->cross[k].frame = nf;
	d->cross[k].at = at;
	d->cross[k].req = req;
	d->fr[j].t_seen = at;
	return 0;
}

static int deliver_after(struct dctx *d, size_t j, const struct fr *a)
{
	if (set_deliver(d, j, a->f->t_ns + 1, false))
		return -ENOMEM;
	struct conn *c = &d->conns[d->fr[j].conn];
	if (c->trig_t && c->trig_frame == j)
		c->trig_t = d->fr[j].t_seen;
	return 0;
}

/*
 * The side resent @p a although the capture shows the peer acknowledging
 * it before (between the earlier copy @p prev and @p a): the side's timer
 * fired while that answer was on the wire (a capture far from the side),
 * so droce gets the answer after the resend.
 */
static int crossed_answers(struct dctx *d, const struct fr *prev, size_t idx)
{
	const struct fr *a = &d->fr[idx];
	size_t from = (size_t)(prev - d->fr);
	for (size_t j = from + 1; j < idx; j++) {
		const struct fr *b = &d->fr[j];
		if (b->role != DROCE_RP_PEER || b->conn != a->conn || !b->p.op || b->gone ||
		    (b->p.op->flags & (DROCE_OPF_REQ | DROCE_OPF_CNP)) ||
		    psn_lt(b->p.h.bth.psn, a->p.h.bth.psn))
			continue;
		bool pos = !(b->p.op->hdrs & DROCE_HDR_AETH) ||
			   (b->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK;
		if (pos && deliver_after(d, j, a))
			return -ENOMEM;
	}
	return 0;
}

/* How far before the first PSN seen a sequence may start: a gap no loss leaves is refused anyway. */
#define EARLY_MAX 4096u

/*
 * Where each PSN sequence starts. A capture of a lossy link may miss the
 * first packets of a conversation (lost before the capture point): the
 * first request seen is then a resend's successor, and its earlier PSNs
 * show up later, in the go-back-N resend. The sequence starts at the
 * earliest PSN of it the capture shows (within EARLY_MAX before the first
 * seen): the requests of either side, and the PSN of a sequence NAK the
 * side sent (9.7.5.2.2: the PSN it expected), which may name a packet no
 * copy of which was captured. Connections nobody answers on are left
 * alone: their PSNs may restart (several conversations, own_seq()).
 */
static void start_psns(struct dctx *d)
{
	bool own_seen[MAX_CONNS] = { false }, peer_seen[MAX_CONNS] = { false };
	for (size_t i = 0; i < d->nfr; i++) {
		const struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || a->gone ||
		    (a->p.op->flags & DROCE_OPF_CNP))
			continue;
		struct conn *c = &d->conns[a->conn];
		uint32_t psn = a->p.h.bth.psn;
		bool req = (a->p.op->flags & DROCE_OPF_REQ) != 0;
		bool seq_nak = a->role == DROCE_RP_OWN && !req && (a->p.op->hdrs & DROCE_HDR_AETH) &&
			       a->p.h.ext.aeth.syndrome == (DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR);
		if (!c->any_peer || (!req && !seq_nak))
			continue;
		bool own = a->role == DROCE_RP_OWN && req;
		bool *seen = own ? &own_seen[a->conn] : &peer_seen[a->conn];
		uint32_t *min = own ? &c->sq_min : &c->rq_min;
		if (!*seen) {
			if (seq_nak)
				continue; /* a NAK before any request: nothing to place it against */
			*seen = true;
			*min = psn;
			continue;
		}
		if (psn_lt(psn, *min) && ((*min - psn) & PSN_MASK) <= EARLY_MAX) {
			*min = psn;
			*(own ? &c->sq_early : &c->rq_early) = true;
		}
	}
}

/*
 * The side's request packet at @p idx, in capture order: where it lies in
 * the side's PSN sequence. A packet at the cursor continues it; one behind
 * is a retransmission (go-back-N after a NAK or a timeout, 9.7.6.1.3, or a
 * READ re-requested from mid-message, 9.7.5.1.5: its RETH moved on by the
 * packets already received); one ahead leaves a gap: the packets between
 * were sent and lost before the capture point (netem in front of tcpdump),
 * and droce will send them. A new packet sent after the peer NAKed an
 * earlier PSN and before the side went back crossed the NAK on the wire
 * (a capture far from the side), and so did a resend of a packet before
 * the NAK's PSN: droce gets that NAK only after them ("deliver").
 */
static int own_seq(struct dctx *d, size_t idx)
{
	struct fr *a = &d->fr[idx];
	struct conn *c = &d->conns[a->conn];
	uint32_t psn = a->p.h.bth.psn;
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t n = (oi->flags & DROCE_OPF_READ) ? npkts(a->p.h.ext.reth.dma_len, c->mtu) : 1;
	if (c->own_started && psn != c->own_cur && !c->any_peer) {
		const struct fr *prev = own_frame_at(d, a->conn, psn);
		if (!prev || !same_request(prev, a)) {
			/* Nobody answers on this connection and its PSNs restart:
			 * the capture holds several conversations to one QPN
			 * (synthetic vectors). Each gets a droce QP of its own. */
			int nc = new_conn(d);
			if (nc < 0)
				return dfail(d, "more than %d connections", MAX_CONNS);
			c = &d->conns[a->conn];
			struct conn *m = &d->conns[nc];
			m->peer_qpn = c->peer_qpn;
			m->peer_known = true;
			memcpy(m->peer_ip, c->peer_ip, 16);
			memcpy(m->peer_mac, c->peer_mac, 6);
			m->mtu = c->mtu;
			m->local_qpn = synth_qpn(d);
			m->local_known = true;
			for (size_t j = idx; j < d->nfr; j++)
				if (d->fr[j].conn == a->conn && d->fr[j].role == DROCE_RP_OWN)
					d->fr[j].conn = nc;
			c = m;
		}
	}
	if (!c->own_started) {
		c->own_started = true;
		c->sq_psn = c->own_cur = c->own_next = c->sq_early ? c->sq_min : psn;
	}
	if (psn_lt(psn, c->own_cur) && !own_frame_at(d, a->conn, psn) && !read_covering(d, a->conn, psn)) {
		struct dlost *l = arrived_late(d, idx, false, c->own_cur);
		if (l) {
			/* its copy is the one counted as lost: compared out of
			 * place; the cursor, and a NAK on its way, stay */
			l->late = a->f->num;
			a->first = true;
			/* a re-request of a READ's rest from mid-message may follow */
			if ((oi->flags & DROCE_OPF_READ) && add_read(d, idx))
				return -ENOMEM;
			return hput(&d->map, hkey(a->conn, HK_OWN_REQ, psn), idx);
		}
	}
	bool crossing = false;
	if (c->nak_pending) {
		/* A NAK at X acknowledges everything before X (9.7.5.2.2): a side
		 * that sends a new packet, or resends one before X, has not
		 * seen it yet. */
		if (psn != c->nak_psn && (psn == c->own_cur || psn_lt(psn, c->nak_psn)))
			crossing = true;
		else
			c->nak_pending = false;
	}
	if (crossing) {
		/* droce gets the NAK when this frame was sent, not before */
		if (deliver_after(d, c->nak_frame, a))
			return -ENOMEM;
	} else if (psn != c->own_cur && !psn_lt(psn, c->own_cur)) {
		uint32_t gap = (psn - c->own_cur) & PSN_MASK;
		if (gap > 4096)
			return dfail(d, "frame %u: PSN %u on QP %#x is %u packets past the sequence "
				     "(expected %u): no loss leaves such a gap", a->f->num, psn, c->peer_qpn,
				     gap, c->own_cur);
		for (uint32_t q = c->own_cur; q != psn; q = psn_add(q, 1))
			if (add_lost(d, a->conn, false, q))
				return -ENOMEM;
	}
	const struct fr *prev = own_frame_at(d, a->conn, psn);
	const struct fr *rd = prev ? NULL : read_covering(d, a->conn, psn);
	if (rd) {
		uint64_t k = (psn - rd->p.h.bth.psn) & PSN_MASK;
		const struct droce_hdrs *o = &rd->p.h, *h = &a->p.h;
		if ((oi->flags & DROCE_OPF_READ) && h->ext.reth.rkey == o->ext.reth.rkey &&
		    h->ext.reth.va == o->ext.reth.va + k * c->mtu &&
		    (uint64_t)h->ext.reth.dma_len + k * c->mtu == o->ext.reth.dma_len)
			prev = rd;
		else
			return dfail(d, "frame %u: PSN %u on QP %#x lies inside the READ of frame %u but is "
				     "no re-request of its remaining bytes", a->f->num, psn, c->peer_qpn,
				     rd->f->num);
	}
	if (psn_lt(psn, c->own_cur))
		c->epoch++; /* a go-back */
	if (prev && !rd && !same_request(prev, a))
		return dfail(d, "frame %u: PSN %u on QP %#x is resent with other contents than frame %u",
			     a->f->num, psn, c->peer_qpn, prev->f->num);
	if (prev && !crossing && !rd && c->trig_t <= prev->f->t_ns &&
	    crossed_answers(d, prev, idx))
		return -ENOMEM;
	if (prev) {
		d->retrans_own++;
		if (!crossing && psn != c->own_cur &&
		    (c->trig_t <= prev->f->t_ns ||
		     (c->nak_t <= prev->f->t_ns && a->f->t_ns - c->peer_t >= TIMER_SILENCE_NS))) {
			/* Not prompted by the peer (nothing since the last copy
			 * that makes a requester go back, or a silence no
			 * answer is followed by): the local ACK timer fired.
			 * It ran from when it last restarted: after the
			 * packet's last copy went out (T <= that gap), and at the
			 * last answer that made progress, if the last answer did
			 * (T >= the gap from it; an answer the side threw away
			 * restarted nothing). Each go-back votes for every
			 * exponent (4.096 us * 2^t, 9.7.6.1.3) between the two;
			 * the one most agree on wins, the larger at a tie. */
			uint64_t t_prev = a->f->t_ns > prev->f->t_ns ? a->f->t_ns - prev->f->t_ns : 0;
			uint64_t from = prev->f->t_ns > c->ack_t ? prev->f->t_ns : c->ack_t;
			uint64_t t_ack = a->f->t_ns > from ? a->f->t_ns - from : 0;
			uint8_t lo = 0, hi = 0;
			while (lo < 31 && (4096ull << (lo + 1)) <= t_ack)
				lo++;
			while (hi < 31 && (4096ull << (hi + 1)) <= t_prev)
				hi++;
			for (unsigned k = lo ? lo : 1; k <= hi; k++)
				c->tvotes[k]++;
			if (!hi)
				c->tvotes[1]++;
			c->timeout = 1;
			for (unsigned k = 1; k < 32; k++)
				if (c->tvotes[k] >= c->tvotes[c->timeout])
					c->timeout = (uint8_t)k;
			c->timeout_retx = true;
			unsigned k = 0;
			for (size_t j = 0; j < idx; j++)
				k += d->fr[j].role == DROCE_RP_OWN && d->fr[j].conn == a->conn &&
				     d->fr[j].p.op && (d->fr[j].p.op->flags & DROCE_OPF_REQ) &&
				     d->fr[j].p.h.bth.psn == psn;
			if (k > c->max_resends)
				c->max_resends = k;
		}
	} else {
		a->first = true; /* what the packet carries comes from here */
	}
	unsigned *cnt = count_of(d, a->conn, false, psn);
	if (!cnt || hput(&d->map, hkey(a->conn, HK_OWN_REQ, psn), idx))
		return -ENOMEM;
	(*cnt)++;
	if ((oi->flags & DROCE_OPF_READ) && add_read(d, idx))
		return -ENOMEM;
	c->own_cur = psn_add(psn, n);
	if (psn_lt(c->own_next, c->own_cur))
		c->own_next = c->own_cur;
	return 0;
}

/* The peer's NAKs in capture order: the side goes back when it gets one. */
static void peer_nak_seen(struct dctx *d, const struct fr *a, size_t idx)
{
	struct conn *c = &d->conns[a->conn];
	if (a->gone || !(a->p.op->hdrs & DROCE_HDR_AETH) || (a->p.op->flags & DROCE_OPF_REQ))
		return;
	uint8_t syn = a->p.h.ext.aeth.syndrome, k = syn & DROCE_AETH_TYPE_MASK;
	bool back = k == DROCE_AETH_RNR_NAK ||
		    (k == DROCE_AETH_NAK && (syn & DROCE_AETH_VALUE_MASK) == DROCE_NAK_PSN_SEQ_ERR);
	if (back && c->own_started && psn_lt(a->p.h.bth.psn, c->own_cur)) {
		c->nak_pending = true;
		c->nak_psn = a->p.h.bth.psn;
		c->nak_frame = idx;
	}
}

/* One of the side's messages from the first visible copy of each packet. */
static int own_build(struct dctx *d, size_t idx)
{
	struct fr *a = &d->fr[idx];
	struct conn *c = &d->conns[a->conn];
	uint32_t psn = a->p.h.bth.psn;
	const struct droce_opcode_info *oi = a->p.op;
	unsigned fl = oi->flags;
	int mi;
	if (fl & DROCE_OPF_FIRST) {
		if ((mi = new_msg(d, a->conn, true, kind_of(oi, a->p.h.bth.opcode), a)) < 0)
			return -ENOMEM;
		c->cur_own = mi;
	} else {
		mi = c->cur_own;
		if (mi < 0)
			return dfail(d, "frame %u: %s without a FIRST", a->f->num, oi->name);
	}
	struct msg *m = &d->msgs[mi];
	m->last_psn = psn;
	if (a->f->t_ns < m->t_ns)
		m->t_ns = a->f->t_ns;
	if (oi->hdrs & DROCE_HDR_RETH) {
		m->va = a->p.h.ext.reth.va;
		m->rkey = a->p.h.ext.reth.rkey;
		m->dma_len = a->p.h.ext.reth.dma_len;
	}
	if (oi->hdrs & DROCE_HDR_ATOMIC) {
		m->va = a->p.h.ext.atomic.va;
		m->rkey = a->p.h.ext.atomic.rkey;
		m->compare = a->p.h.ext.atomic.compare;
		m->swap_add = a->p.h.ext.atomic.swap_add;
	}
	if (oi->hdrs & DROCE_HDR_IMM) {
		m->has_imm = true;
		m->imm = a->p.h.ext.imm;
	}
	if (oi->hdrs & DROCE_HDR_IETH)
		return dfail(d, "frame %u: %s: droce's API has no SEND with invalidate", a->f->num, oi->name);
	if (a->p.h.bth.se)
		m->solicited = true;
	if ((fl & DROCE_OPF_PAYLOAD) && msg_append(m, a->p.payload, a->p.h.payload_len))
		return -ENOMEM;
	if (fl & DROCE_OPF_READ) {
		/* A READ takes one PSN per response packet (9.7.4.1.2). */
		m->last_psn = psn_add(psn, npkts(m->dma_len, c->mtu) - 1);
		free(m->data);
		m->data = calloc(1, m->dma_len + 1);
		m->cap = m->dma_len;
		m->len = 0;
		if (!m->data)
			return -ENOMEM;
	}
	if (fl & DROCE_OPF_LAST) {
		m->complete = true;
		c->cur_own = -1;
	}
	return 0;
}

/*
 * The side's requests: first their place in its PSN sequence, in capture
 * order (gaps, retransmissions, crossings, the ACK timeout), then its
 * messages from the first visible copy of each packet in PSN order, since
 * a packet lost before the capture point shows up only in a later
 * retransmission. A message is posted when its first visible packet went
 * out, and never after a message behind it.
 */
static int own_requests(struct dctx *d)
{
	int r;
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || (a->p.op->flags & DROCE_OPF_CNP))
			continue;
		if (a->role == DROCE_RP_PEER) {
			peer_nak_seen(d, a, i);
			if (!a->gone)
				d->conns[a->conn].peer_t = a->t_seen ? a->t_seen : a->f->t_ns;
			if (is_trigger(a)) {
				d->conns[a->conn].trig_t = a->t_seen ? a->t_seen : a->f->t_ns;
				d->conns[a->conn].trig_frame = i;
				if (!(a->p.op->flags & DROCE_OPF_READ))
					d->conns[a->conn].nak_t = d->conns[a->conn].trig_t;
			}
			if (!a->gone && !(a->p.op->flags & DROCE_OPF_REQ) &&
			    (!(a->p.op->hdrs & DROCE_HDR_AETH) ||
			     (a->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK))
				d->conns[a->conn].ack_t = a->t_seen ? a->t_seen : a->f->t_ns;
		}
		else if (a->role == DROCE_RP_OWN && (a->p.op->flags & DROCE_OPF_REQ) && (r = own_seq(d, i)))
			return r;
	}
	size_t *ord = calloc(d->nfr + 1, sizeof(*ord));
	if (!ord)
		return -ENOMEM;
	for (unsigned ci = 0; ci < d->nconns; ci++) {
		struct conn *c = &d->conns[ci];
		size_t n = 0;
		for (size_t i = 0; i < d->nfr; i++)
			if (d->fr[i].first && d->fr[i].conn == (int)ci)
				ord[n++] = i;
		/* insertion sort by distance from the first PSN: small captures */
		for (size_t i = 1; i < n; i++) {
			size_t v = ord[i], j = i;
			uint32_t dv = (d->fr[v].p.h.bth.psn - c->sq_psn) & PSN_MASK;
			while (j > 0 && ((d->fr[ord[j - 1]].p.h.bth.psn - c->sq_psn) & PSN_MASK) > dv) {
				ord[j] = ord[j - 1];
				j--;
			}
			ord[j] = v;
		}
		size_t first_msg = d->nmsgs;
		uint32_t expect = c->sq_psn;
		for (size_t i = 0; i < n; i++) {
			struct fr *a = &d->fr[ord[i]];
			uint32_t psn = a->p.h.bth.psn;
			if (psn != expect) {
				/* Never seen on the wire: the message around it is
				 * not known whole, droce is not asked to send it. */
				c->cur_own = -1;
				if (!(a->p.op->flags & DROCE_OPF_FIRST)) {
					expect = psn_add(psn, 1);
					continue;
				}
			}
			if ((r = own_build(d, ord[i]))) {
				free(ord);
				return r;
			}
			expect = (a->p.op->flags & DROCE_OPF_READ)
					 ? psn_add(psn, npkts(a->p.h.ext.reth.dma_len, c->mtu))
					 : psn_add(psn, 1);
		}
		if (c->cur_own >= 0) /* the capture stops in the middle of a message */
			c->cur_own = -1;
		for (size_t i = d->nmsgs; i-- > first_msg + 1;)
			if (d->msgs[i].t_ns < d->msgs[i - 1].t_ns)
				d->msgs[i - 1].t_ns = d->msgs[i].t_ns;
	}
	free(ord);
	return 0;
}

static void ack_by_peer(struct conn *c, uint32_t psn)
{
	if (!c->any_acked_by_peer || psn_lt(c->acked_by_peer, psn))
		c->acked_by_peer = psn;
	c->any_acked_by_peer = true;
}

/* The peer's response to the side's request. */
static int peer_response(struct dctx *d, struct fr *a)
{
	struct conn *c = &d->conns[a->conn];
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t psn = a->p.h.bth.psn;
	if (oi->hdrs & DROCE_HDR_AETH) {
		uint8_t syn = a->p.h.ext.aeth.syndrome;
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_NAK &&
		    (syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR)
			c->error_nak = true;
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK && oi->flags & DROCE_OPF_ACK)
			ack_by_peer(c, psn);
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_NAK &&
		    (syn & DROCE_AETH_VALUE_MASK) == DROCE_NAK_PSN_SEQ_ERR)
			ack_by_peer(c, psn_add(psn, PSN_MASK)); /* 9.7.5.2.2: acks up to PSN-1 */
	}
	if (oi->flags & DROCE_OPF_READ) {
		int mi = find_msg(d, a->conn, true, psn, true);
		if (mi < 0 || d->msgs[mi].kind != M_READ)
			return 0; /* a response to nothing we know: droce will drop it */
		struct msg *m = &d->msgs[mi];
		size_t off = (size_t)((psn - m->first_psn) & PSN_MASK) * c->mtu;
		size_t n = a->p.h.payload_len;
		if (off <= m->dma_len && n <= m->dma_len - off) {
			memcpy(m->data + off, a->p.payload, n);
			if (off + n > m->len)
				m->len = off + n;
		}
		if (oi->flags & DROCE_OPF_LAST)
			ack_by_peer(c, psn);
	}
	if (oi->hdrs & DROCE_HDR_AACK) {
		int mi = find_msg(d, a->conn, true, psn, false);
		if (mi >= 0) {
			d->msgs[mi].orig = a->p.h.ext.atomic_ack;
			d->msgs[mi].has_orig = true;
		}
		ack_by_peer(c, psn);
	}
	return 0;
}

/*
 * Did the side prompt the peer's resend @p a of a request whose first frame
 * is @p since (a NAK, an RNR NAK, a READ response or atomic ACK out of order
 * for it)? If not, the peer's ACK timer fired: the side's answer to the
 * original, which the capture does not show, was lost on the way.
 */
static bool prompted(struct dctx *d, const struct fr *a, size_t since)
{
	for (size_t j = since; j < d->nfr && &d->fr[j] != a; j++) {
		const struct fr *b = &d->fr[j];
		if (b->role != DROCE_RP_OWN || b->conn != a->conn || !b->p.op ||
		    (b->p.op->flags & (DROCE_OPF_REQ | DROCE_OPF_CNP)))
			continue;
		bool nak = (b->p.op->hdrs & DROCE_HDR_AETH) &&
			   (b->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK;
		if (nak || b->p.h.bth.opcode != DROCE_OP_RC_ACKNOWLEDGE)
			return true; /* a NAK, a READ response, an atomic ACK */
	}
	return false;
}

/*
 * The peer asks again for a READ or an atomic the side has answered: every
 * response packet of it the capture has not shown was sent and lost before
 * the capture point (the side answers a READ whole, 9.7.4.1.2, before it
 * takes the next request). droce sends them; they are not compared.
 */
static int lost_answers(struct dctx *d, const struct fr *a)
{
	int mi = find_msg(d, a->conn, false, a->p.h.bth.psn, true);
	if (mi < 0 || (d->msgs[mi].kind != M_READ && d->msgs[mi].kind != M_CAS &&
		       d->msgs[mi].kind != M_FAA))
		return 0;
	/* Only when the side had begun to answer the original: one it has
	 * not answered yet (a slow responder, a capture far from it) is
	 * answered now, nothing of it was lost. Settled when the side starts
	 * answering the duplicate: answers to the original may still follow
	 * in the capture (they crossed the request on the wire). */
	struct msg *m = &d->msgs[mi];
	if (m->resp_started || !prompted(d, a, m->first_idx)) {
		m->dup_pending = true;
		m->dup_psn = a->p.h.bth.psn;
	}
	return 0;
}

/* The side starts answering a duplicate of message @p m: whatever it never showed of the original was lost. */
static int settle_dup(struct dctx *d, struct msg *m, uint32_t psn)
{
	if (!m->dup_pending || psn != m->dup_psn)
		return 0;
	m->dup_pending = false;
	uint32_t from = m->resp_started ? m->resp_next : m->first_psn;
	for (uint32_t q = from; !psn_lt(m->last_psn, q) && !psn_lt(q, m->first_psn); q = psn_add(q, 1)) {
		unsigned *n = count_of(d, m->conn, true, q);
		if (!n)
			return -ENOMEM;
		if (!*n && add_lost(d, m->conn, true, q))
			return -ENOMEM;
		if (q == m->last_psn)
			break;
	}
	m->resp_next = psn;
	return 0;
}

/* The peer's request to the side: droce answers it as a responder. */
static int peer_request(struct dctx *d, struct fr *a)
{
	struct conn *c = &d->conns[a->conn];
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t psn = a->p.h.bth.psn;
	if (!c->peer_started) {
		c->peer_started = true;
		c->rq_psn = c->peer_next = c->rq_early ? c->rq_min : psn;
	}
	if (c->resp_dead)
		return 0; /* after an error NAK the QP is in ERR: nothing executes (9.7.5.2.x class C) */
	if (psn != c->peer_next && psn_lt(psn, c->peer_next) &&
	    (oi->flags & (DROCE_OPF_READ | DROCE_OPF_ATOMIC)))
		return lost_answers(d, a);
	if (psn != c->peer_next)
		return 0; /* duplicate or out of sequence: no new work for the side */
	unsigned fl = oi->flags;
	int mi;
	if (fl & DROCE_OPF_FIRST) {
		if ((mi = new_msg(d, a->conn, false, kind_of(oi, a->p.h.bth.opcode), a)) < 0)
			return -ENOMEM;
		c->cur_peer = mi;
	} else {
		mi = c->cur_peer;
		if (mi < 0)
			return 0; /* droce will NAK it as an invalid request */
	}
	struct msg *m = &d->msgs[mi];
	m->last_psn = psn;
	c->peer_next = psn_add(psn, 1);
	if (oi->hdrs & DROCE_HDR_RETH) {
		m->va = a->p.h.ext.reth.va;
		m->rkey = a->p.h.ext.reth.rkey;
		m->dma_len = a->p.h.ext.reth.dma_len;
	}
	if (oi->hdrs & DROCE_HDR_ATOMIC) {
		m->va = a->p.h.ext.atomic.va;
		m->rkey = a->p.h.ext.atomic.rkey;
		m->compare = a->p.h.ext.atomic.compare;
		m->swap_add = a->p.h.ext.atomic.swap_add;
	}
	if (oi->hdrs & DROCE_HDR_IMM) {
		m->has_imm = true;
		m->imm = a->p.h.ext.imm;
	}
	/* A SEND with invalidate is still a SEND for the receive queue; how the
	 * side answered it (droce NAKs it: no memory windows) is in the capture. */
	if (fl & DROCE_OPF_WRITE)
		store(d, region_of(d, m->rkey), m->va + m->len, a->p.payload, a->p.h.payload_len);
	if ((fl & DROCE_OPF_PAYLOAD) && msg_append(m, a->p.payload, a->p.h.payload_len))
		return -ENOMEM;
	m->req_seq = d->seq;
	if (fl & DROCE_OPF_READ) {
		c->peer_next = psn_add(psn, npkts(m->dma_len, c->mtu));
		m->last_psn = psn_add(psn, npkts(m->dma_len, c->mtu) - 1);
	}
	if (fl & DROCE_OPF_LAST) {
		m->complete = true;
		c->cur_peer = -1;
	}
	return 0;
}

/*
 * The side answers @p a (an ACK of its PSN, or a NAK or RNR NAK at it) and
 * so had taken every PSN up to @p upto, but the walk is behind: the side
 * took copies the capture showed earlier, when the walk, as the side then,
 * could not (refused for want of a receive, out of sequence). netem held
 * them behind the capture point until after the side's last refusal. Take
 * the latest copy of each missing PSN (all copies are the same packet,
 * 9.7.1) as the side did, just before its answer, and have the replay
 * deliver it then: fed when captured, droce would refuse it again.
 */
static int peer_request(struct dctx *d, struct fr *a);

static int catch_up(struct dctx *d, const struct fr *a, uint32_t upto)
{
	struct conn *c = &d->conns[a->conn];
	size_t idx = (size_t)(a - d->fr);
	while (c->peer_started && !c->resp_dead && !psn_lt(upto, c->peer_next) &&
	       ((upto - c->peer_next) & PSN_MASK) <= EARLY_MAX) {
		size_t j = idx;
		while (j-- > 0) {
			const struct fr *b = &d->fr[j];
			if (b->conn == a->conn && b->role == DROCE_RP_PEER && b->p.op &&
			    b->r == DROCE_PARSE_OK && !b->gone && (b->p.op->flags & DROCE_OPF_REQ) &&
			    b->p.h.bth.psn == c->peer_next)
				break;
		}
		if (j == (size_t)-1)
			return 0; /* no copy to take: the MSN check says what is missing */
		uint32_t was = c->peer_next;
		int r = peer_request(d, &d->fr[j]);
		if (r)
			return r;
		if (c->peer_next == was)
			return 0;
		if (set_deliver(d, j, a->f->t_ns, true))
			return -ENOMEM;
	}
	return 0;
}

/* The side's own response: what droce must answer. */
static int own_response(struct dctx *d, struct fr *a)
{
	struct conn *c = &d->conns[a->conn];
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t psn = a->p.h.bth.psn;
	if (oi->hdrs & DROCE_HDR_AETH) {
		uint8_t syn = a->p.h.ext.aeth.syndrome;
		uint8_t kind = syn & DROCE_AETH_TYPE_MASK;
		uint32_t msn = a->p.h.ext.aeth.msn & PSN_MASK;
		/* MSN counts the messages the side completed (9.7.5.1.1). An RNR
		 * NAK with less than the side already sent was overtaken on the
		 * wire (netem reorders in front of the capture): the message it
		 * refused was taken since, the NAK changes nothing now. */
		bool stale = c->any_msn && psn_lt(msn, c->msn_max);
		if (!c->any_msn || psn_lt(c->msn_max, msn))
			c->msn_max = msn;
		c->any_msn = true;
		if (a->p.h.bth.opcode == DROCE_OP_RC_ACKNOWLEDGE && !stale &&
		    (kind != DROCE_AETH_NAK || (syn & DROCE_AETH_VALUE_MASK) == DROCE_NAK_PSN_SEQ_ERR)) {
			int r = catch_up(d, a, kind == DROCE_AETH_ACK ? psn : psn_add(psn, PSN_MASK));
			if (r)
				return r;
		}
		if (kind == DROCE_AETH_RNR_NAK && stale) {
			c->rnr_seen = true;
			c->min_rnr_timer = syn & DROCE_AETH_VALUE_MASK;
		} else if (kind == DROCE_AETH_RNR_NAK) {
			/* The side had no receive posted: the message at this PSN
			 * was not taken; its retry is new work and its receive
			 * must be posted only after this NAK (9.7.5.2.8). */
			int mi = find_msg(d, a->conn, false, psn, true);
			if (mi < 0)
				mi = find_refused(d, a->conn, psn);
			struct msg *rm = mi >= 0 ? &d->msgs[mi] : NULL;
			if (rm && rm->first_psn != psn) {
				/* a WRITE with immediate refused at its LAST: its
				 * FIRST and MIDDLE were placed, the message goes on
				 * with the LAST's resend (9.7.5.2.8: the WQE is
				 * needed only there) */
				rm->rnr = true;
				rm->complete = false;
				rm->last_psn = psn_add(psn, PSN_MASK);
				size_t placed = (size_t)((psn - rm->first_psn) & PSN_MASK) * c->mtu;
				if (placed < rm->len)
					rm->len = placed;
			} else if (rm) {
				rm->dropped = true;
				rm->rnr = true;
			}
			/* Nor were the messages after it that the capture shows
			 * reaching the side before its NAK: out of sequence now
			 * (9.7.5.2.8), their resends are the messages. */
			for (size_t k = 0; k < d->nmsgs; k++) {
				struct msg *o = &d->msgs[k];
				if (!o->own && o->conn == a->conn && !o->dropped && psn_lt(psn, o->first_psn) &&
				    ((o->first_psn - psn) & PSN_MASK) <= EARLY_MAX)
					o->dropped = true;
			}
			c->rnr_seen = true;
			c->min_rnr_timer = syn & DROCE_AETH_VALUE_MASK;
			c->peer_next = psn;
			c->cur_peer = rm && !rm->dropped ? mi : -1;
			if (mi >= 0)
				d->msgs[mi].rnr_t = a->f->t_ns;
		} else if (kind == DROCE_AETH_NAK) {
			if ((syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR) {
				c->error_nak = true;
				c->resp_dead = true;
				int mi = find_msg(d, a->conn, false, psn, true);
				if (mi >= 0) {
					struct msg *m = &d->msgs[mi];
					m->dropped = true;
					/* responders look for the receive before the
					 * length (rxe's order, droce's): an error NAK at a
					 * packet that needs one means it had one */
					m->err_recv = psn == m->last_psn && m->complete &&
						      (m->kind == M_SEND || (m->kind == M_WRITE && m->has_imm));
				}
			}
		} else if (oi->flags & DROCE_OPF_ACK) {
			if (!c->any_acked_by_own || psn_lt(c->acked_by_own, psn))
				c->acked_by_own = psn;
			c->any_acked_by_own = true;
		}
	}
	if (oi->flags & DROCE_OPF_READ) {
		int mi = find_msg(d, a->conn, false, psn, true);
		if (mi < 0 || d->msgs[mi].kind != M_READ)
			return 0;
		struct msg *m = &d->msgs[mi];
		/* Response packets skipped within the READ were lost before
		 * the capture point (a READ is answered in order, 9.7.4.1.2). */
		if (!m->resp_started) {
			m->resp_started = true;
			m->resp_next = m->first_psn;
		}
		size_t off = (size_t)((psn - m->first_psn) & PSN_MASK) * c->mtu;
		struct region *r = region_of(d, m->rkey);
		if (psn_lt(psn, m->resp_next)) {
			/* before taking it as the answer to a duplicate */
			struct dlost *l = arrived_late(d, (size_t)(a - d->fr), true, m->resp_next);
			if (l) {
				l->late = a->f->num; /* delayed, not lost: its copy is counted */
				long k = learn(d, r, m->va + off, a->p.payload, a->p.h.payload_len,
					       m->req_seq);
				return k >= 0 ? off_wire(d, a, r, m->va + off, k) : 0;
			}
			c->resp_epoch++; /* answered again */
		}
		if (settle_dup(d, m, psn))
			return -ENOMEM;
		if (psn != m->resp_next && !psn_lt(psn, m->resp_next))
			for (uint32_t q = m->resp_next; q != psn; q = psn_add(q, 1))
				if (add_lost(d, a->conn, true, q))
					return -ENOMEM;
		unsigned *cnt = count_of(d, a->conn, true, psn);
		if (!cnt)
			return -ENOMEM;
		(*cnt)++;
		if (!psn_lt(psn_add(psn, 1), m->resp_next))
			m->resp_next = psn_add(psn, 1);
		long k = learn(d, r, m->va + off, a->p.payload, a->p.h.payload_len, m->req_seq);
		if (k >= 0)
			return off_wire(d, a, r, m->va + off, k);
	}
	if (oi->hdrs & DROCE_HDR_AACK) {
		int mi = find_msg(d, a->conn, false, psn, false);
		if (mi < 0)
			return 0;
		struct msg *m = &d->msgs[mi];
		if (settle_dup(d, m, psn))
			return -ENOMEM;
		if (!m->resp_started) {
			m->resp_started = true;
			m->resp_next = psn_add(psn, 1);
		}
		unsigned *cnt = count_of(d, a->conn, true, psn);
		if (!cnt)
			return -ENOMEM;
		(*cnt)++;
		struct region *r = region_of(d, m->rkey);
		uint8_t b[8];
		put_le64(b, a->p.h.ext.atomic_ack);
		if (!m->applied && learn(d, r, m->va, b, 8, m->req_seq) >= 0)
			return dfail(d, "frame %u: the atomic's original value %#" PRIx64 " is not what the "
				     "capture left at %#" PRIx64 " (rkey %#x): memory changed off the wire, "
				     "which a replay cannot reproduce", a->f->num, a->p.h.ext.atomic_ack,
				     m->va, m->rkey);
		if (!m->applied && r && m->va >= r->lo && m->va + 8 <= r->hi) {
			/* Execute once, duplicates answer from the cache (9.4.5). */
			uint64_t cur = le64(r->shadow + (m->va - r->lo));
			uint64_t nv = m->kind == M_CAS ? (cur == m->compare ? m->swap_add : cur)
						       : cur + m->swap_add;
			put_le64(b, nv);
			store(d, r, m->va, b, 8);
			m->applied = true;
		}
	}
	return 0;
}

/*
 * What the side's acknowledgements say it completed must be what the model
 * holds. Each ACK, RNR NAK and PSN-sequence NAK carries the side's MSN: the
 * number of the peer's messages it had completed (9.7.5.1.1), all of them
 * ending at or before an ACK's PSN (before a NAK's: 9.7.5.2.2). A receive
 * is posted for each completed SEND and WRITE with immediate, so a count
 * that disagrees means the walk lost or invented a message, whose receive
 * would be missing or extra in the scenario; say where instead of writing
 * a scenario droce cannot replay. The first such frame on a connection
 * gives the MSN the capture starts from (a capture may begin mid-way).
 */
static int check_msns(struct dctx *d)
{
	for (unsigned ci = 0; ci < d->nconns; ci++) {
		bool based = false;
		uint32_t base = 0;
		for (size_t i = 0; i < d->nfr; i++) {
			const struct fr *a = &d->fr[i];
			if (a->conn != (int)ci || a->role != DROCE_RP_OWN || !a->p.op ||
			    a->r != DROCE_PARSE_OK || a->p.h.bth.opcode != DROCE_OP_RC_ACKNOWLEDGE)
				continue;
			uint8_t syn = a->p.h.ext.aeth.syndrome;
			uint8_t kind = syn & DROCE_AETH_TYPE_MASK;
			bool nak = kind != DROCE_AETH_ACK;
			if (kind == DROCE_AETH_NAK && (syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR)
				continue; /* an error NAK: the flow stops there, completions are not derived */
			/* A duplicate's re-ACK names the last SEND, WRITE or atomic
			 * executed, and its MSN counts the READs after it too (C9-105;
			 * rxe and droce): those may be counted, nothing else. */
			uint32_t psn = a->p.h.bth.psn, n = 0, reads = 0;
			bool more = !nak;
			for (size_t k = 0; k < d->nmsgs; k++) {
				const struct msg *m = &d->msgs[k];
				if (m->own || m->conn != (int)ci || m->dropped || !m->complete)
					continue;
				if (psn_lt(m->last_psn, psn) || (!nak && m->last_psn == psn))
					n++;
				else if (more && m->kind == M_READ)
					reads++;
				else
					more = false;
			}
			uint32_t msn = a->p.h.ext.aeth.msn & PSN_MASK;
			if (!based) {
				base = (msn - n) & PSN_MASK;
				based = true;
			}
			uint32_t done = (msn - base) & PSN_MASK;
			if (done < n || done > n + reads)
				return dfail(d, "frame %u: the side's %s of PSN %u carries MSN %u: it had "
					     "completed %u of the peer's messages, the capture shows %u "
					     "(9.7.5.1.1)", a->f->num,
					     kind == DROCE_AETH_ACK ? "ACK" :
					     kind == DROCE_AETH_RNR_NAK ? "RNR NAK" : "NAK", psn, msn, done, n);
		}
	}
	return 0;
}

static int walk(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || a->gone)
			continue;
		unsigned fl = a->p.op->flags;
		int r = 0;
		if (fl & DROCE_OPF_CNP) {
			if (a->role == DROCE_RP_OWN) {
				/* droce notifies only on CE-marked frames (A17.9.2). */
				bool ce = false;
				for (size_t j = 0; j < i; j++)
					ce |= d->fr[j].role == DROCE_RP_PEER && d->fr[j].conn == a->conn &&
					      d->fr[j].p.h.net.ecn == 3;
				if (!ce && d->nskipped_cnp < 64)
					d->skipped_cnp[d->nskipped_cnp++] = a->f->num;
			}
			continue;
		}
		if (a->role == DROCE_RP_OWN && (fl & DROCE_OPF_REQ))
			r = 0; /* own_requests() */
		else if (a->role == DROCE_RP_OWN)
			r = own_response(d, a);
		else if (fl & DROCE_OPF_REQ)
			r = peer_request(d, a);
		else
			r = peer_response(d, a);
		if (r)
			return r;
	}
	return 0;
}

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
static bool lossy(struct dctx *d)
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
static int cm_attrs(struct dctx *d)
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
			return dfail(d, "frames %u/%u: rdma_cm connects the side's QPN %#x to the "
				     "peer's %#x, but no RC conversation of the capture uses that pair",
				     h->req_frame, h->rep_frame, h->side_qpn, h->peer_qpn);
		struct conn *c = &d->conns[found];
		c->local_qpn = h->side_qpn;
		c->local_known = true;
		d->cm_of[found] = (int)k;
		unsigned mtu = 128u << h->path_mtu;
		if (c->seg_max > mtu)
			return dfail(d, "QP %#x: segments of %u bytes beyond the path MTU %u its REQ "
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
static int cm_psns(struct dctx *d)
{
	for (unsigned i = 0; i < d->nconns; i++) {
		if (d->cm_of[i] < 0)
			continue;
		struct conn *c = &d->conns[i];
		const struct droce_rp_cm_conn *h = &d->cm.c[d->cm_of[i]];
		unsigned from = h->active ? h->rep_frame : h->req_frame;
		unsigned to = h->active ? h->req_frame : h->rep_frame;
		if (c->own_started && c->sq_psn != h->side_sq_psn)
			return dfail(d, "QP %#x: the side's requests start at PSN %u, the %s (frame %u) "
				     "set %u", c->local_qpn, c->sq_psn, h->active ? "REP" : "REQ", from,
				     h->side_sq_psn);
		if (c->peer_started && c->rq_psn != h->side_rq_psn)
			return dfail(d, "QP %#x: the peer's requests start at PSN %u, the %s (frame %u) "
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

static void emit(struct dctx *d, const char *cap_path, const char *side, FILE *out)
{
	char ipb[64];
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

	bool any_ack_by_own = false, by_psn = lossy(d);
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *c = &d->conns[i];
		if (!c->local_known) {
			c->local_qpn = synth_qpn(d);
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
			       (!c->any_acked_by_peer || c->acked_by_peer != psn_add(c->own_next, PSN_MASK));
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
	for (size_t i = 0; i < d->nmsgs; i++) {
		struct msg *m = &d->msgs[i];
		if ((m->dropped && !m->err_recv) || !m->complete)
			continue;
		if (m->own && (m->kind == M_SEND || m->kind == M_WRITE)) {
			m->local_off = src_len;
			src_len = align64(src_len + m->len);
		} else if (m->own) {
			m->local_off = dst_len;
			dst_len = align64(dst_len + (m->kind == M_READ ? m->dma_len : 8));
		} else if (m->kind == M_SEND) {
			m->local_off = rq_len;
			rq_len = align64(rq_len + m->len);
		}
	}
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
			put_le64(b, m->orig);
			fprintf(out, "expect-mem dst %" PRIu64 " ", m->local_off);
			put_hex(out, b, 8);
			fputc('\n', out);
		} else if (!m->own && m->kind == M_SEND && m->len) {
			fprintf(out, "expect-mem rq %" PRIu64 " ", m->local_off);
			put_hex(out, m->data, m->len);
			fputc('\n', out);
		}
	}

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
		if (!l->resp && !own_frame_at(d, l->conn, l->psn))
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

int droce_rp_derive(const struct droce_rp_capture *cap, const char *cap_path, const char *ip,
		    FILE *out, char *err, size_t errlen)
{
	return droce_rp_derive_impaired(cap, cap_path, ip, NULL, NULL, out, err, errlen);
}

int droce_rp_derive_impaired(const struct droce_rp_capture *cap, const char *cap_path,
			     const char *ip, const char *impair, const bool *gone, FILE *out,
			     char *err, size_t errlen)
{
	struct dctx *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r = 0;
	d->cap = cap;
	d->err = err;
	d->errlen = errlen;
	d->ipv = droce_rp_parse_ip(ip, d->ip);
	if (!d->ipv) {
		r = dfail(d, "--side %s: not an IPv4 or IPv6 address", ip);
		goto out;
	}
	d->fr = calloc(cap->n + 1, sizeof(*d->fr));
	if (!d->fr) {
		r = -ENOMEM;
		goto out;
	}
	unsigned own = 0, peer = 0, v1 = 0;
	for (size_t i = 0; i < cap->n; i++) {
		struct fr *a = &d->fr[d->nfr];
		a->f = &cap->f[i];
		a->gone = gone && gone[i];
		a->role = droce_rp_classify(a->f, d->ipv, d->ip, &a->p, &a->r);
		a->conn = -1;
		if (a->role == DROCE_RP_OTHER) {
			const struct droce_net_fields *n = &a->p.h.net;
			if (droce_rp_is_roce(a->r) && n->rocev1 &&
			    (!memcmp(n->src_ip, d->ip, 16) || !memcmp(n->dst_ip, d->ip, 16)))
				v1++;
			continue;
		}
		if (a->role == DROCE_RP_IGNORED) {
			d->ignored_ud++;
			/* a MAD with a bad ICRC never reached the CM (A17.4.5) */
			if (a->r == DROCE_PARSE_OK &&
			    (r = droce_rp_cm_add(&d->cm, &a->p, a->f->num, d->ip, d->err, d->errlen)))
				goto out;
			continue;
		}
		if (a->r != DROCE_PARSE_OK) {
			/* Kept: the replay feeds bad frames and expects droce to drop them. */
			d->nfr++;
			continue;
		}
		enum droce_service svc = droce_opcode_service(a->p.h.bth.opcode);
		if (svc != DROCE_SVC_RC && svc != DROCE_SVC_CNP) {
			r = dfail(d, "frame %u: unsupported opcode %s: droce implements RC only", a->f->num,
				  a->p.op->name);
			goto out;
		}
		if (a->role == DROCE_RP_OWN) {
			own++;
			if (!d->has_mac) {
				memcpy(d->mac, a->p.h.net.src_mac, 6);
				d->has_mac = true;
			}
		} else {
			peer++;
		}
		d->nfr++;
	}
	if (!own && !peer) {
		if (v1)
			r = dfail(d, "%s: only RoCEv1 (GRH over Ethernet) traffic: droce speaks RoCEv2", ip);
		else if (d->ignored_ud)
			r = dfail(d, "%s: only QP1/UD traffic (%u CM MADs): nothing for an RC scenario", ip,
				  d->ignored_ud);
		else
			r = dfail(d, "no RoCE traffic for %s in %s", ip, cap_path);
		goto out;
	}
	if (!own) {
		r = dfail(d, "%s sends no RC frames in %s: its answers are not in the capture, "
			  "there is nothing to compare droce with", ip, cap_path);
		goto out;
	}
	if ((r = pair_qps(d)))
		goto out;
	/* Peer MACs: from the side's own frames. */
	for (size_t i = 0; i < d->nfr; i++)
		if (d->fr[i].role == DROCE_RP_OWN && d->fr[i].conn >= 0)
			memcpy(d->conns[d->fr[i].conn].peer_mac, d->fr[i].p.h.net.dst_mac, 6);
	if ((r = infer_mtu(d)) || (r = cm_attrs(d)) || (r = collect_regions(d)) ||
	    (start_psns(d), (r = own_requests(d))) || (r = walk(d)) || (r = check_msns(d)) ||
	    (r = cm_psns(d)))
		goto out;
	d->impair = impair;
	emit(d, cap_path, ip, out);
out:
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; i < d->nmsgs; i++)
		free(d->msgs[i].data);
	free(d->msgs);
	for (unsigned i = 0; i < d->nregions; i++) {
		free(d->regions[i].init);
		free(d->regions[i].shadow);
		free(d->regions[i].known);
		free(d->regions[i].written);
		free(d->regions[i].iset);
		free(d->regions[i].kseq);
		free(d->regions[i].wseq);
	}
	free(d->pc);
	hfree(&d->map);
	free(d->reads);
	free(d->lost);
	free(d->cross);
	free(d->fr);
	free(d);
	return r;
}
