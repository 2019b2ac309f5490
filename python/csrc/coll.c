/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives over droce (coll.h): the mesh of ports and QPs, chunked
 * transfer by RDMA WRITE with immediate into credit-counted slots, and the
 * algorithms (ring and recursive doubling all_reduce, binomial tree and
 * pipelined chain broadcast, ring all_gather and reduce_scatter, pairwise
 * all_to_all, dissemination barrier).
 */
#include "coll.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <droce/droce.h>
#include <droce/dpdk.h>

#include "mux.h"

#define MAX_RANKS ((int)DROCE_MUX_MAX)
/* The immediate: stream (8 bits), last chunk of its message (1), length (23). */
#define IMM_LAST (1u << 23)
#define IMM_LEN_MASK (IMM_LAST - 1)
#define IMM(stream, last, len) (((uint32_t)(stream) << 24) | ((last) ? IMM_LAST : 0) | (uint32_t)(len))
#define STREAM_COLL 0
#define STREAM_P2P(tag) (0x80 | ((unsigned)(tag) & 0x7f))
/* wr_id: kind in the top byte, the peer below it. */
enum { WR_DATA = 1, WR_CREDIT = 2, WR_RECV = 3 };
#define WRID(kind, peer) (((uint64_t)(kind) << 56) | ((uint64_t)(peer) << 40))
/* Idle polls before a nap, and the nap: short enough for a ping-pong step,
 * long enough that four ranks on two cores let each other run. */
#define IDLE_SPINS 64u
#define NAP_NS 20000L
/* Shutdown: poll on this long after the last barrier (the peers' last ACKs). */
#define LINGER_NS 50000000ull
#define LINK_WAIT_NS 10000000000ull
/* Shutdown: how long the last barrier and the store's goodbyes may take. */
#define SHUTDOWN_WAIT_NS 10000000000ull
#define RECV_SPARE 8u

struct aside {
	struct aside *next;
	uint32_t imm;
	uint8_t data[];
};

struct chunk {
	const uint8_t *p;
	uint32_t lkey;
	uint32_t imm;
};

struct peer {
	struct droce_qp *qp;
	uint32_t qpn, psn;             /* ours: the peer's RTR takes it, our RTS too */
	uint8_t mac[6], ip[4];
	uint64_t r_slots, r_credit;    /* where we write at the peer */
	uint32_t r_slots_rkey, r_credit_rkey;
	uint8_t *slots;                /* where the peer writes to us */
	uint32_t *imm;                 /* immediates of arrived chunks, by slot */
	uint64_t queued, sent, done;   /* chunks to the peer: enqueued, posted, completed */
	uint64_t arrived, consumed, credit_posted;
	unsigned credits_inflight;
	struct chunk *q;               /* chunks queued, not yet posted: q[q_head..q_tail) */
	size_t q_head, q_tail, q_cap;
	struct aside *aside, **aside_end;
	int want;                      /* stream the running operation takes from it; -1 none */
};

struct qp_info {
	uint32_t qpn, psn, mtu, slot_bytes, slots, rkey_slots, rkey_credit, pad;
	uint64_t addr_slots, addr_credit;
	uint8_t mac[6], ip[4], pad2[6];
};

struct dcoll {
	struct dcoll_conf c;
	int rank, size;
	struct droce_dpdk_port *ports[MAX_RANKS];
	unsigned nports;
	struct droce_mux mux;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct peer *peers;
	uint8_t *slot_area;
	size_t slot_area_len;
	struct droce_mr *slot_mr;
	volatile uint64_t *credit;     /* credit[j]: how many of our chunks j has freed */
	struct droce_mr *credit_mr;
	uint8_t *small;                /* barrier tokens */
	struct droce_mr *small_mr;
	uint8_t mac[6], ip[4];
	bool op_active;
	int any_next; /* the peer a receive from any source picked last */
	unsigned idle;
	uint64_t deadline;
	int failed;
	char err[256];
	struct dcoll_stats st;
};

static int fail(struct dcoll *d, int rc, const char *fmt, ...)
{
	if (!d->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->err, sizeof(d->err), fmt, ap);
		va_end(ap);
		d->failed = rc;
	}
	return d->failed;
}

const char *dcoll_error(const struct dcoll *d)
{
	return d->failed ? d->err : "no error";
}

void dcoll_conf_init(struct dcoll_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->slot_bytes = 256u * 1024u;
	c->slots = 8;
	c->small_max = 64u * 1024u;
	c->timeout_ns = 300ull * 1000000000ull;
}

void dcoll_get_stats(const struct dcoll *d, struct dcoll_stats *out)
{
	*out = d->st;
}

static void nap(struct dcoll *d)
{
	struct timespec ts = {0, NAP_NS};
	nanosleep(&ts, NULL);
	d->st.naps++;
}

/* ------------------------------------------------------------- transfer -- */

static int post_recv(struct dcoll *d, int j)
{
	struct droce_recv_wr wr = {.wr_id = WRID(WR_RECV, j), .num_sge = 0}, *bad;
	return droce_post_recv(d->peers[j].qp, &wr, &bad);
}

static int post_chunk(struct dcoll *d, int j, const struct chunk *c)
{
	struct peer *p = &d->peers[j];
	uint32_t len = c->imm & IMM_LEN_MASK;
	struct droce_sge sge = {(uintptr_t)c->p, len, c->lkey};
	struct droce_send_wr wr = {
		.wr_id = WRID(WR_DATA, j), .sg_list = &sge, .num_sge = len ? 1 : 0,
		.send_flags = DROCE_SEND_SIGNALED, .imm_data = c->imm,
	};
	if (len) {
		wr.opcode = DROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = p->r_slots + (p->sent % d->c.slots) * d->c.slot_bytes;
		wr.wr.rdma.rkey = p->r_slots_rkey;
	} else {
		/* nothing to place: the immediate alone, in a SEND of no bytes */
		wr.opcode = DROCE_WR_SEND_WITH_IMM;
	}
	struct droce_send_wr *bad;
	return droce_post_send(p->qp, &wr, &bad);
}

static int post_credit(struct dcoll *d, int j)
{
	struct peer *p = &d->peers[j];
	uint64_t v = p->consumed;
	struct droce_sge sge = {(uintptr_t)&v, sizeof(v), 0};
	struct droce_send_wr wr = {
		.wr_id = WRID(WR_CREDIT, j), .sg_list = &sge, .num_sge = 1,
		.opcode = DROCE_WR_RDMA_WRITE,
		.send_flags = DROCE_SEND_SIGNALED | DROCE_SEND_INLINE,
	};
	wr.wr.rdma.remote_addr = p->r_credit;
	wr.wr.rdma.rkey = p->r_credit_rkey;
	struct droce_send_wr *bad;
	int r = droce_post_send(p->qp, &wr, &bad);
	if (!r) {
		p->credit_posted = v;
		p->credits_inflight++;
		d->st.credits_sent++;
	}
	return r;
}

/* The head chunk of @p p goes aside (copied out, its slot freed). */
static int set_aside(struct dcoll *d, struct peer *p)
{
	uint32_t imm = p->imm[p->consumed % d->c.slots];
	uint32_t len = imm & IMM_LEN_MASK;
	struct aside *a = malloc(sizeof(*a) + len);
	if (!a)
		return -ENOMEM;
	a->next = NULL;
	a->imm = imm;
	memcpy(a->data, p->slots + (p->consumed % d->c.slots) * d->c.slot_bytes, len);
	*p->aside_end = a;
	p->aside_end = &a->next;
	p->consumed++;
	d->st.set_aside++;
	return 0;
}

static void on_wc(struct dcoll *d, const struct droce_wc *wc)
{
	unsigned kind = (unsigned)(wc->wr_id >> 56);
	int j = (int)((wc->wr_id >> 40) & 0xffff);
	if (j < 0 || j >= d->size || j == d->rank) {
		fail(d, -EIO, "completion for no peer (wr_id %#llx)", (unsigned long long)wc->wr_id);
		return;
	}
	struct peer *p = &d->peers[j];
	if (wc->status != DROCE_WC_SUCCESS) {
		fail(d, -EIO, "rank %d, QP to rank %d: %s (vendor %u)", d->rank, j,
		     droce_wc_status_str(wc->status), wc->vendor_err);
		return;
	}
	switch (kind) {
	case WR_DATA:
		p->done++;
		break;
	case WR_CREDIT:
		p->credits_inflight--;
		break;
	case WR_RECV:
		if (!(wc->wc_flags & DROCE_WC_WITH_IMM) || p->arrived - p->consumed >= d->c.slots) {
			fail(d, -EPROTO, "rank %d: a message from rank %d without room", d->rank, j);
			return;
		}
		p->imm[p->arrived % d->c.slots] = wc->imm_data;
		p->arrived++;
		d->st.chunks_rcvd++;
		if (post_recv(d, j))
			fail(d, -EIO, "rank %d: cannot post a receive", d->rank);
		break;
	default:
		fail(d, -EIO, "unknown completion %#llx", (unsigned long long)wc->wr_id);
	}
}

/* One turn: the context's poll, completions, queued chunks and credits out,
 * strangers' point-to-point chunks aside. @return the work done. */
static unsigned progress(struct dcoll *d)
{
	unsigned work = droce_ctx_poll(d->ctx, droce_dpdk_now());
	struct droce_wc wc[32];
	int n = droce_poll_cq(d->cq, 32, wc);
	if (n < 0) {
		fail(d, -EIO, "rank %d: completion queue overflow", d->rank);
		return 0;
	}
	for (int i = 0; i < n; i++)
		on_wc(d, &wc[i]);
	work += (unsigned)n;
	for (int j = 0; j < d->size; j++) {
		if (j == d->rank)
			continue;
		struct peer *p = &d->peers[j];
		while (p->q_head < p->q_tail && p->sent - d->credit[j] < d->c.slots) {
			if (post_chunk(d, j, &p->q[p->q_head]))
				break; /* send queue full: the next turn */
			p->q_head++;
			p->sent++;
			d->st.chunks_sent++;
			work++;
		}
		if (p->q_head == p->q_tail)
			p->q_head = p->q_tail = 0;
		if (p->consumed != p->credit_posted && p->credits_inflight < 2 && !post_credit(d, j))
			work++;
		/* a point-to-point chunk nobody waits for now must not hold the
		 * slot ring: the peer's other messages may be behind it */
		while (d->op_active && p->arrived > p->consumed) {
			unsigned s = p->imm[p->consumed % d->c.slots] >> 24;
			if (s == STREAM_COLL || (int)s == p->want)
				break;
			if (set_aside(d, p)) {
				fail(d, -ENOMEM, "rank %d: out of memory", d->rank);
				break;
			}
			work++;
		}
	}
	if (work) {
		d->idle = 0;
	} else if (++d->idle >= IDLE_SPINS) {
		d->idle = 0;
		nap(d);
	}
	return work;
}

unsigned dcoll_idle(struct dcoll *d)
{
	return d->failed ? 0 : progress(d);
}

static int check(struct dcoll *d)
{
	if (d->failed)
		return d->failed;
	if (droce_dpdk_now() > d->deadline)
		return fail(d, -ETIMEDOUT, "rank %d: operation timed out", d->rank);
	return 0;
}

/* Queue @p len bytes at @p src (registered, @p lkey) to peer @p j.
 * @return the ticket: done >= ticket once the message has left. */
static uint64_t isend(struct dcoll *d, int j, unsigned stream, const void *src, size_t len,
		      uint32_t lkey)
{
	struct peer *p = &d->peers[j];
	size_t n = len ? (len + d->c.slot_bytes - 1) / d->c.slot_bytes : 1;
	if (p->q_tail + n > p->q_cap) {
		size_t cap = p->q_cap ? p->q_cap : 64;
		while (cap < p->q_tail + n)
			cap *= 2;
		struct chunk *q = realloc(p->q, cap * sizeof(*q));
		if (!q) {
			fail(d, -ENOMEM, "rank %d: out of memory", d->rank);
			return 0;
		}
		p->q = q;
		p->q_cap = cap;
	}
	const uint8_t *s = src;
	for (size_t i = 0; i < n; i++) {
		size_t off = i * d->c.slot_bytes;
		size_t cl = len - off < d->c.slot_bytes ? len - off : d->c.slot_bytes;
		p->q[p->q_tail++] = (struct chunk){s + off, lkey, IMM(stream, i == n - 1, cl)};
	}
	p->queued += n;
	return p->queued;
}

static int wait_sent(struct dcoll *d, int j, uint64_t ticket)
{
	while (d->peers[j].done < ticket) {
		int r = check(d);
		if (r)
			return r;
		progress(d);
	}
	return 0;
}

static int wait_all(struct dcoll *d)
{
	for (int j = 0; j < d->size; j++)
		if (j != d->rank) {
			int r = wait_sent(d, j, d->peers[j].queued);
			if (r)
				return r;
		}
	return 0;
}

/*
 * Receive one message of @p len bytes of @p stream from @p j into @p dst:
 * copied, or reduced with @p fn (elements of @p esize). With @p wj >= 0,
 * chunk k is applied only once our chunk wticket + k to @p wj has left
 * (the region it overwrites was the source of that chunk).
 */
static int recv_msg(struct dcoll *d, int j, unsigned stream, void *dst, size_t len, size_t esize,
		    dcoll_reduce_fn fn, void *arg, int wj, uint64_t wticket)
{
	struct peer *p = &d->peers[j];
	size_t off = 0;
	uint64_t k = 0;
	p->want = (int)stream;
	for (;;) {
		struct aside *a = NULL, **pa = &p->aside;
		const uint8_t *src = NULL;
		uint32_t imm = 0;
		while (*pa && ((*pa)->imm >> 24) != stream)
			pa = &(*pa)->next;
		if (*pa) {
			a = *pa;
			*pa = a->next;
			if (p->aside_end == &a->next)
				p->aside_end = pa;
			imm = a->imm;
			src = a->data;
		} else {
			while (p->arrived > p->consumed && (p->imm[p->consumed % d->c.slots] >> 24) != stream)
				if (set_aside(d, p))
					return fail(d, -ENOMEM, "rank %d: out of memory", d->rank);
			if (p->arrived == p->consumed) {
				int r = check(d);
				if (r)
					return r;
				progress(d);
				continue;
			}
			imm = p->imm[p->consumed % d->c.slots];
			src = p->slots + (p->consumed % d->c.slots) * d->c.slot_bytes;
		}
		size_t cl = imm & IMM_LEN_MASK;
		bool last = imm & IMM_LAST;
		if (off + cl > len || (last && off + cl != len) || (!last && off + cl == len) ||
		    (esize && cl % esize)) {
			free(a);
			p->want = -1;
			return fail(d, -EPROTO, "rank %d: rank %d sent %s than the %zu bytes expected",
				    d->rank, j, off + cl > len || !last ? "more" : "less", len);
		}
		if (wj >= 0) {
			int r = wait_sent(d, wj, wticket + k);
			if (r) {
				free(a);
				return r;
			}
		}
		if (fn)
			fn((uint8_t *)dst + off, src, cl / esize, arg);
		else if (cl)
			memcpy((uint8_t *)dst + off, src, cl);
		off += cl;
		k++;
		if (a)
			free(a);
		else
			p->consumed++;
		if (last)
			break;
	}
	p->want = -1;
	return 0;
}

/* ------------------------------------------------------------ operations -- */

static struct droce_mr *reg(struct dcoll *d, const void *p, size_t len)
{
	struct droce_mr *mr = droce_reg_mr(d->ctx, (void *)(uintptr_t)p, len ? len : 1,
					   DROCE_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail(d, -ENOMEM, "rank %d: cannot register %zu bytes", d->rank, len);
	return mr;
}

static int begin(struct dcoll *d)
{
	if (d->failed)
		return d->failed;
	d->op_active = true;
	d->deadline = droce_dpdk_now() + d->c.timeout_ns;
	return 0;
}

static int end(struct dcoll *d, int r, struct droce_mr *a, struct droce_mr *b)
{
	if (!r)
		r = wait_all(d);
	/* on failure the QPs may still read these: leave them registered */
	if (!r) {
		if (a)
			droce_dereg_mr(a);
		if (b)
			droce_dereg_mr(b);
	}
	d->op_active = false;
	return r ? r : d->failed;
}

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

static int ring_allreduce(struct dcoll *d, uint8_t *buf, size_t count, size_t es, uint32_t lkey,
			  dcoll_reduce_fn fn, void *arg)
{
	int n = d->size, r = d->rank, next = mod(r + 1, n), prev = mod(r - 1, n);
	size_t off[MAX_RANKS + 1], cnt[MAX_RANKS];
	uint64_t tick[MAX_RANKS] = {0};
	for (int i = 0, o = 0; i < n; i++) {
		cnt[i] = count / (size_t)n + ((size_t)i < count % (size_t)n);
		off[i] = (size_t)o;
		o += (int)cnt[i];
	}
	/* reduce-scatter: after n-1 steps chunk r holds every rank's */
	for (int s = 0; s < n - 1; s++) {
		int cs = mod(r - 1 - s, n), cr = mod(r - 2 - s, n);
		tick[cs] = isend(d, next, STREAM_COLL, buf + off[cs] * es, cnt[cs] * es, lkey);
		int rc = recv_msg(d, prev, STREAM_COLL, buf + off[cr] * es, cnt[cr] * es, es, fn, arg, -1, 0);
		if (rc)
			return rc;
	}
	/* all-gather: the reduced chunks go round */
	for (int s = 0; s < n - 1; s++) {
		int cs = mod(r - s, n), cr = mod(r - s - 1, n);
		isend(d, next, STREAM_COLL, buf + off[cs] * es, cnt[cs] * es, lkey);
		uint64_t t = tick[cr];
		size_t cb = cnt[cr] * es, nch = cb ? (cb + d->c.slot_bytes - 1) / d->c.slot_bytes : 1;
		/* chunk cr was the source of an earlier send: it must have left */
		int rc = recv_msg(d, prev, STREAM_COLL, buf + off[cr] * es, cnt[cr] * es, es, NULL, NULL,
				  t ? next : -1, t ? t - nch + 1 : 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* Recursive doubling (the non-power-of-two ranks folded in first, as MPICH
 * does): every step exchanges the whole buffer with one partner. For sizes
 * that fit the peer's slots at once, so no step waits on a credit. */
static int rd_allreduce(struct dcoll *d, uint8_t *buf, size_t count, size_t es, uint32_t lkey,
			dcoll_reduce_fn fn, void *arg)
{
	int n = d->size, r = d->rank, p2 = 1;
	size_t len = count * es;
	size_t nch = (len + d->c.slot_bytes - 1) / d->c.slot_bytes;
	while (p2 * 2 <= n)
		p2 *= 2;
	int rem = n - p2, nr;
	if (r < 2 * rem) {
		if (r % 2 == 0) {
			isend(d, r + 1, STREAM_COLL, buf, len, lkey);
			int rc = wait_all(d);
			return rc ? rc : recv_msg(d, r + 1, STREAM_COLL, buf, len, es, NULL, NULL, -1, 0);
		}
		int rc = recv_msg(d, r - 1, STREAM_COLL, buf, len, es, fn, arg, -1, 0);
		if (rc)
			return rc;
		nr = r / 2;
	} else {
		nr = r - rem;
	}
	for (int mask = 1; mask < p2; mask <<= 1) {
		int np = nr ^ mask, partner = np < rem ? np * 2 + 1 : np + rem;
		uint64_t t = isend(d, partner, STREAM_COLL, buf, len, lkey);
		int rc = recv_msg(d, partner, STREAM_COLL, buf, len, es, fn, arg, partner, t - nch + 1);
		if (rc)
			return rc;
	}
	if (r < 2 * rem)
		isend(d, r - 1, STREAM_COLL, buf, len, lkey);
	return 0;
}

int dcoll_allreduce(struct dcoll *d, void *buf, size_t count, size_t esize, dcoll_reduce_fn fn,
		    void *arg)
{
	if (!esize || !fn || (count && !buf))
		return -EINVAL;
	int r = begin(d);
	if (r || d->size == 1 || !count)
		return r ? r : end(d, 0, NULL, NULL);
	size_t len = count * esize;
	struct droce_mr *mr = reg(d, buf, len);
	if (!mr)
		return end(d, d->failed, NULL, NULL);
	if (len <= d->c.small_max) {
		d->st.rd_ops++;
		r = rd_allreduce(d, buf, count, esize, mr->lkey, fn, arg);
	} else {
		d->st.ring_ops++;
		r = ring_allreduce(d, buf, count, esize, mr->lkey, fn, arg);
	}
	return end(d, r, mr, NULL);
}

int dcoll_broadcast(struct dcoll *d, void *buf, size_t bytes, int root)
{
	if (root < 0 || root >= d->size || (bytes && !buf))
		return -EINVAL;
	int rc = begin(d);
	if (rc || d->size == 1 || !bytes)
		return rc ? rc : end(d, 0, NULL, NULL);
	struct droce_mr *mr = reg(d, buf, bytes);
	if (!mr)
		return end(d, d->failed, NULL, NULL);
	int n = d->size, vr = mod(d->rank - root, n);
	uint8_t *b = buf;
	if (bytes <= d->c.small_max) {
		/* binomial tree: from the parent, then to the children, farthest first */
		int mask = 1;
		for (; mask < n; mask <<= 1)
			if (vr & mask) {
				rc = recv_msg(d, mod(vr - mask + root, n), STREAM_COLL, b, bytes, 0, NULL, NULL, -1, 0);
				break;
			}
		for (mask >>= 1; !rc && mask > 0; mask >>= 1)
			if (vr + mask < n)
				isend(d, mod(vr + mask + root, n), STREAM_COLL, b, bytes, mr->lkey);
	} else {
		/* a chain root, root+1, ...: each slot-sized piece forwarded as it lands */
		int prev = mod(d->rank - 1, n), next = mod(d->rank + 1, n);
		for (size_t off = 0; !rc && off < bytes; off += d->c.slot_bytes) {
			size_t pl = bytes - off < d->c.slot_bytes ? bytes - off : d->c.slot_bytes;
			if (vr != 0)
				rc = recv_msg(d, prev, STREAM_COLL, b + off, pl, 0, NULL, NULL, -1, 0);
			if (!rc && vr != n - 1)
				isend(d, next, STREAM_COLL, b + off, pl, mr->lkey);
		}
	}
	return end(d, rc, mr, NULL);
}

int dcoll_allgather(struct dcoll *d, const void *in, void *out, size_t bytes)
{
	if ((bytes && (!in || !out)))
		return -EINVAL;
	int rc = begin(d);
	if (rc || !bytes)
		return rc ? rc : end(d, 0, NULL, NULL);
	int n = d->size, r = d->rank, next = mod(r + 1, n), prev = mod(r - 1, n);
	uint8_t *o = out;
	if (o + (size_t)r * bytes != in)
		memmove(o + (size_t)r * bytes, in, bytes);
	if (n == 1)
		return end(d, 0, NULL, NULL);
	struct droce_mr *mr = reg(d, out, bytes * (size_t)n);
	if (!mr)
		return end(d, d->failed, NULL, NULL);
	for (int s = 0; !rc && s < n - 1; s++) {
		int cs = mod(r - s, n), cr = mod(r - s - 1, n);
		isend(d, next, STREAM_COLL, o + (size_t)cs * bytes, bytes, mr->lkey);
		rc = recv_msg(d, prev, STREAM_COLL, o + (size_t)cr * bytes, bytes, 0, NULL, NULL, -1, 0);
	}
	return end(d, rc, mr, NULL);
}

int dcoll_reduce_scatter(struct dcoll *d, const void *in, void *out, size_t count, size_t es,
			 dcoll_reduce_fn fn, void *arg)
{
	if (!es || !fn || (count && (!in || !out)))
		return -EINVAL;
	int rc = begin(d);
	if (rc || !count)
		return rc ? rc : end(d, 0, NULL, NULL);
	int n = d->size, r = d->rank, next = mod(r + 1, n), prev = mod(r - 1, n);
	size_t bl = count * es;
	if (n == 1) {
		memmove(out, in, bl);
		return end(d, 0, NULL, NULL);
	}
	/* the inputs are not ours to reduce into: a working copy */
	uint8_t *w = malloc(bl * (size_t)n);
	if (!w)
		return end(d, fail(d, -ENOMEM, "rank %d: out of memory", r), NULL, NULL);
	memcpy(w, in, bl * (size_t)n);
	struct droce_mr *mr = reg(d, w, bl * (size_t)n);
	if (!mr) {
		free(w);
		return end(d, d->failed, NULL, NULL);
	}
	for (int s = 0; !rc && s < n - 1; s++) {
		int cs = mod(r - 1 - s, n), cr = mod(r - 2 - s, n);
		isend(d, next, STREAM_COLL, w + (size_t)cs * bl, bl, mr->lkey);
		rc = recv_msg(d, prev, STREAM_COLL, w + (size_t)cr * bl, bl, es, fn, arg, -1, 0);
	}
	rc = end(d, rc, mr, NULL);
	if (!rc)
		memcpy(out, w + (size_t)r * bl, bl);
	if (!rc)
		free(w); /* else the QP may still read it */
	return rc;
}

int dcoll_alltoallv(struct dcoll *d, const void *in, const size_t *soff, const size_t *slen,
		    void *out, const size_t *roff, const size_t *rlen)
{
	int n = d->size, r = d->rank;
	if (!soff || !slen || !roff || !rlen)
		return -EINVAL;
	if (slen[r] != rlen[r])
		return -EINVAL;
	int rc = begin(d);
	if (rc)
		return rc;
	size_t in_end = 0, out_end = 0;
	for (int j = 0; j < n; j++) {
		if (slen[j] && soff[j] + slen[j] > in_end)
			in_end = soff[j] + slen[j];
		if (rlen[j] && roff[j] + rlen[j] > out_end)
			out_end = roff[j] + rlen[j];
	}
	if (slen[r])
		memmove((uint8_t *)out + roff[r], (const uint8_t *)in + soff[r], slen[r]);
	if (n == 1)
		return end(d, 0, NULL, NULL);
	struct droce_mr *mi = in_end ? reg(d, in, in_end) : NULL;
	if (in_end && !mi)
		return end(d, d->failed, NULL, NULL);
	for (int s = 1; s < n; s++) {
		int to = mod(r + s, n);
		isend(d, to, STREAM_COLL, (const uint8_t *)in + soff[to], slen[to], mi ? mi->lkey : 0);
	}
	for (int s = 1; !rc && s < n; s++) {
		int from = mod(r - s, n);
		rc = recv_msg(d, from, STREAM_COLL, (uint8_t *)out + roff[from], rlen[from], 0, NULL, NULL,
			      -1, 0);
	}
	return end(d, rc, mi, NULL);
}

/* gather and scatter: the root talks to every rank directly (its sends all
 * queued at once, its receives in rank order). */
int dcoll_gather(struct dcoll *d, const void *in, void *out, size_t bytes, int root)
{
	int n = d->size, r = d->rank;
	if (root < 0 || root >= n || (bytes && (!in || (r == root && !out))))
		return -EINVAL;
	int rc = begin(d);
	if (rc || !bytes)
		return rc ? rc : end(d, 0, NULL, NULL);
	if (r != root) {
		struct droce_mr *mr = reg(d, in, bytes);
		if (!mr)
			return end(d, d->failed, NULL, NULL);
		isend(d, root, STREAM_COLL, in, bytes, mr->lkey);
		return end(d, 0, mr, NULL);
	}
	memmove((uint8_t *)out + (size_t)r * bytes, in, bytes);
	for (int j = 0; !rc && j < n; j++)
		if (j != r)
			rc = recv_msg(d, j, STREAM_COLL, (uint8_t *)out + (size_t)j * bytes, bytes, 0, NULL,
				      NULL, -1, 0);
	return end(d, rc, NULL, NULL);
}

int dcoll_scatter(struct dcoll *d, const void *in, void *out, size_t bytes, int root)
{
	int n = d->size, r = d->rank;
	if (root < 0 || root >= n || (bytes && (!out || (r == root && !in))))
		return -EINVAL;
	int rc = begin(d);
	if (rc || !bytes)
		return rc ? rc : end(d, 0, NULL, NULL);
	if (r != root)
		return end(d, recv_msg(d, root, STREAM_COLL, out, bytes, 0, NULL, NULL, -1, 0), NULL, NULL);
	struct droce_mr *mr = n > 1 ? reg(d, in, bytes * (size_t)n) : NULL;
	if (n > 1 && !mr)
		return end(d, d->failed, NULL, NULL);
	for (int j = 0; j < n; j++)
		if (j != r)
			isend(d, j, STREAM_COLL, (const uint8_t *)in + (size_t)j * bytes, bytes, mr->lkey);
	memmove(out, (const uint8_t *)in + (size_t)r * bytes, bytes);
	return end(d, 0, mr, NULL);
}

int dcoll_barrier(struct dcoll *d)
{
	int rc = begin(d);
	if (rc)
		return rc;
	/* dissemination: round k, a token to rank + 2^k, one from rank - 2^k */
	for (int k = 1; !rc && k < d->size; k <<= 1) {
		isend(d, mod(d->rank + k, d->size), STREAM_COLL, d->small, 4, d->small_mr->lkey);
		rc = recv_msg(d, mod(d->rank - k, d->size), STREAM_COLL, d->small + 8, 4, 0, NULL, NULL,
			      -1, 0);
	}
	return end(d, rc, NULL, NULL);
}

int dcoll_send(struct dcoll *d, int peer, const void *buf, size_t bytes, int tag)
{
	if (peer < 0 || peer >= d->size || peer == d->rank || (bytes && !buf))
		return -EINVAL;
	int rc = begin(d);
	if (rc)
		return rc;
	struct droce_mr *mr = bytes ? reg(d, buf, bytes) : NULL;
	if (bytes && !mr)
		return end(d, d->failed, NULL, NULL);
	uint64_t t = isend(d, peer, STREAM_P2P(tag), buf, bytes, mr ? mr->lkey : 0);
	rc = wait_sent(d, peer, t);
	return end(d, rc, mr, NULL);
}

int dcoll_recv(struct dcoll *d, int peer, void *buf, size_t bytes, int tag)
{
	if (peer < 0 || peer >= d->size || peer == d->rank || (bytes && !buf))
		return -EINVAL;
	int rc = begin(d);
	if (rc)
		return rc;
	rc = recv_msg(d, peer, STREAM_P2P(tag), buf, bytes, 0, NULL, NULL, -1, 0);
	return end(d, rc, NULL, NULL);
}

/* Whether the next chunk of @p stream from @p j is here (set aside, or at
 * the head of the slots once the chunks ahead of it are set aside). */
static int p2p_waiting(struct dcoll *d, int j, unsigned stream)
{
	struct peer *p = &d->peers[j];
	for (struct aside *a = p->aside; a; a = a->next)
		if ((a->imm >> 24) == stream)
			return 1;
	while (p->arrived > p->consumed && (p->imm[p->consumed % d->c.slots] >> 24) != stream)
		if (set_aside(d, p))
			return fail(d, -ENOMEM, "rank %d: out of memory", d->rank);
	return p->arrived > p->consumed;
}

int dcoll_recv_any(struct dcoll *d, void *buf, size_t bytes, int tag, int *src)
{
	if (bytes && !buf)
		return -EINVAL;
	int rc = begin(d);
	if (rc)
		return rc;
	unsigned stream = STREAM_P2P(tag);
	/* every peer's chunks of this tag stay in its slots until one is picked */
	for (int j = 0; j < d->size; j++)
		if (j != d->rank)
			d->peers[j].want = (int)stream;
	int from = -1;
	/* the peers are looked at from the one after the last picked, so that
	 * one sender that never pauses cannot starve the others */
	while (from < 0 && !rc) {
		for (int k = 1; k <= d->size && from < 0; k++) {
			int j = mod(d->any_next + k, d->size);
			if (j == d->rank)
				continue;
			int w = p2p_waiting(d, j, stream);
			if (w < 0)
				rc = w;
			else if (w)
				from = j;
		}
		if (from < 0 && !rc) {
			rc = check(d);
			if (!rc)
				progress(d);
		}
	}
	for (int j = 0; j < d->size; j++)
		if (j != d->rank)
			d->peers[j].want = -1;
	if (!rc) {
		d->any_next = from;
		*src = from;
		rc = recv_msg(d, from, stream, buf, bytes, 0, NULL, NULL, -1, 0);
	}
	return end(d, rc, NULL, NULL);
}

/* ----------------------------------------------------------------- setup -- */

static int sset(struct dcoll *d, const char *fmt, int a, int b, const void *v, size_t len)
{
	char key[96];
	snprintf(key, sizeof(key), fmt, a, b);
	return d->c.store.set(d->c.store.arg, key, v, len);
}

static int sget(struct dcoll *d, const char *fmt, int a, int b, void *v, size_t len)
{
	char key[96];
	snprintf(key, sizeof(key), fmt, a, b);
	int r = d->c.store.get(d->c.store.arg, key, v, len, d->c.timeout_ns);
	return r < 0 ? r : 0;
}

static void rank_addr(int r, uint8_t mac[6], uint8_t ip[4])
{
	/* RFC 2544 benchmark addresses, one per rank; a locally administered
	 * MAC until the port's own is known */
	const uint8_t m[6] = {0x02, 'd', 'r', 0, (uint8_t)(r >> 8), (uint8_t)r};
	memcpy(mac, m, 6);
	ip[0] = 198;
	ip[1] = 18;
	ip[2] = (uint8_t)(r / 250);
	ip[3] = (uint8_t)(r % 250 + 1);
}

static int parse_ip4(const char *s, uint8_t ip[4])
{
	unsigned a, b, c, e;
	char x;
	if (!s || sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &e, &x) != 4 || a > 255 || b > 255 || c > 255 ||
	    e > 255)
		return -EINVAL;
	ip[0] = (uint8_t)a, ip[1] = (uint8_t)b, ip[2] = (uint8_t)c, ip[3] = (uint8_t)e;
	return 0;
}

static int open_mesh(struct dcoll *d)
{
	char token[64] = {0};
	if (d->rank == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(token, sizeof(token), "%ld-%ld", (long)getpid(), (long)(ts.tv_nsec ^ ts.tv_sec));
		if (sset(d, "droce/token%d%d", 0, 0, token, strlen(token) + 1))
			return fail(d, -EIO, "store: cannot set the token");
	} else if (sget(d, "droce/token%d%d", 0, 0, token, sizeof(token) - 1)) {
		return fail(d, -ETIMEDOUT, "store: no token from rank 0");
	}
	uint8_t unused[6];
	int port_of[MAX_RANKS];
	rank_addr(d->rank, unused, d->ip);
	/* Each pair (i < j) has its memif link, i the server: servers first,
	 * then "up" in the store, then the clients toward lower ranks, each
	 * after its server said it is up (a client that starts first never
	 * comes up, docs/usage.md). */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && sset(d, "droce/up/%d%.0d", d->rank, 0, "1", 2))
			return fail(d, -EIO, "store: cannot set up/%d", d->rank);
		for (int j = 0; j < d->size; j++) {
			if (j == d->rank || (pass == 0) != (j > d->rank))
				continue;
			char u[4];
			if (pass == 1 && sget(d, "droce/up/%d%.0d", j, 0, u, sizeof(u)))
				return fail(d, -ETIMEDOUT, "store: rank %d never came up", j);
			char spec[160];
			int lo = d->rank < j ? d->rank : j, hi = d->rank < j ? j : d->rank;
			snprintf(spec, sizeof(spec), "memif:%s,socket=/droce-torch-%s-%d-%d",
				 d->rank < j ? "server" : "client", token, lo, hi);
			struct droce_dpdk_port_conf pc = {.spec = spec, .ip_version = 4};
			memcpy(pc.ip, d->ip, 4);
			struct droce_dpdk_port *port = droce_dpdk_port_open(&pc);
			if (!port)
				return fail(d, -errno, "rank %d: memif port to rank %d (%s): %s", d->rank, j,
					    spec, strerror(errno));
			port_of[j] = (int)d->nports;
			d->ports[d->nports++] = port;
			/* the peer sends to this port's MAC (memif has no MAC to set;
			 * the port drops unicast frames for any other) */
			uint8_t mac[6];
			droce_dpdk_port_mac(port, mac);
			if (d->nports == 1)
				memcpy(d->mac, mac, 6);
			if (sset(d, "droce/mac/%d/%d", d->rank, j, mac, 6))
				return fail(d, -EIO, "store: cannot publish a MAC");
		}
	}
	for (int j = 0; j < d->size; j++) {
		if (j == d->rank)
			continue;
		uint8_t pm[6];
		if (sget(d, "droce/mac/%d/%d", j, d->rank, pm, 6))
			return fail(d, -ETIMEDOUT, "store: no MAC from rank %d", j);
		rank_addr(j, d->peers[j].mac, d->peers[j].ip);
		memcpy(d->peers[j].mac, pm, 6);
		droce_dpdk_port_add_neighbour(d->ports[port_of[j]], d->peers[j].ip, pm);
		if (droce_mux_add(&d->mux, droce_dpdk_port_link(d->ports[port_of[j]]), pm) < 0)
			return fail(d, -EINVAL, "rank %d: two peers behind one MAC", d->rank);
	}
	uint64_t end = droce_dpdk_now() + LINK_WAIT_NS;
	for (unsigned i = 0; i < d->nports; i++)
		while (!droce_dpdk_port_up(d->ports[i])) {
			if (droce_dpdk_now() > end)
				return fail(d, -ETIMEDOUT, "rank %d: a memif link stayed down", d->rank);
			nap(d);
		}
	return 0;
}

static int open_one_port(struct dcoll *d)
{
	if (parse_ip4(d->c.ip, d->ip))
		return fail(d, -EINVAL, "rank %d: a port needs an IPv4 address (DROCE_IP), got '%s'",
			    d->rank, d->c.ip ? d->c.ip : "");
	struct droce_dpdk_port_conf pc = {.spec = d->c.port, .ip_version = 4,
					   .link_wait_ns = LINK_WAIT_NS};
	memcpy(pc.ip, d->ip, 4);
	struct droce_dpdk_port *port = droce_dpdk_port_open(&pc);
	if (!port)
		return fail(d, -errno, "rank %d: port %s: %s", d->rank, d->c.port, strerror(errno));
	d->ports[d->nports++] = port;
	droce_dpdk_port_mac(port, d->mac);
	return 0;
}

static int open_qps(struct dcoll *d, unsigned mtu)
{
	size_t per = (size_t)d->c.slots * d->c.slot_bytes;
	for (int j = 0; j < d->size; j++) {
		if (j == d->rank)
			continue;
		struct peer *p = &d->peers[j];
		struct droce_qp_init_attr ia = {
			.send_cq = d->cq, .recv_cq = d->cq, .qp_type = DROCE_QPT_RC,
			.cap = {.max_send_wr = d->c.slots + 8, .max_recv_wr = d->c.slots + RECV_SPARE,
				.max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64},
		};
		p->qp = droce_create_qp(d->ctx, &ia);
		if (!p->qp)
			return fail(d, -errno, "rank %d: QP to rank %d: %s", d->rank, j, strerror(errno));
		struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .pkey = DROCE_DEFAULT_PKEY,
					  .qp_access_flags = DROCE_ACCESS_REMOTE_WRITE};
		if (droce_modify_qp(p->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY | DROCE_QP_ACCESS_FLAGS))
			return fail(d, -EIO, "rank %d: QP to rank %d: INIT refused", d->rank, j);
		for (unsigned i = 0; i < d->c.slots + RECV_SPARE; i++)
			if (post_recv(d, j))
				return fail(d, -EIO, "rank %d: cannot post receives", d->rank);
		p->qpn = droce_qp_num(p->qp);
		p->slots = d->slot_area + (size_t)j * per;
		struct qp_info me = {
			.qpn = p->qpn, .psn = (uint32_t)(droce_dpdk_now() ^ ((uint32_t)j << 12)) & 0xffffff,
			.mtu = mtu, .slot_bytes = (uint32_t)d->c.slot_bytes, .slots = d->c.slots,
			.rkey_slots = d->slot_mr->rkey, .rkey_credit = d->credit_mr->rkey,
			.addr_slots = (uintptr_t)p->slots, .addr_credit = (uintptr_t)&d->credit[j],
		};
		memcpy(me.mac, d->mac, 6);
		memcpy(me.ip, d->ip, 4);
		p->credit_posted = 0;
		p->want = -1;
		p->aside_end = &p->aside;
		p->psn = me.psn;
		if (sset(d, "droce/qp/%d/%d", d->rank, j, &me, sizeof(me)))
			return fail(d, -EIO, "store: cannot publish QP %d/%d", d->rank, j);
	}
	for (int j = 0; j < d->size; j++) {
		if (j == d->rank)
			continue;
		struct peer *p = &d->peers[j];
		struct qp_info them;
		if (sget(d, "droce/qp/%d/%d", j, d->rank, &them, sizeof(them)))
			return fail(d, -ETIMEDOUT, "store: no QP from rank %d", j);
		if (them.slot_bytes != d->c.slot_bytes || them.slots != d->c.slots)
			return fail(d, -EINVAL, "rank %d and rank %d disagree on the slots (%u x %u vs %u x %zu)",
				    j, d->rank, them.slots, them.slot_bytes, d->c.slots, d->c.slot_bytes);
		p->r_slots = them.addr_slots;
		p->r_slots_rkey = them.rkey_slots;
		p->r_credit = them.addr_credit;
		p->r_credit_rkey = them.rkey_credit;
		/* the mesh knows each link's MAC already (open_mesh); one port: the peer's */
		if (d->c.port)
			memcpy(p->mac, them.mac, 6);
		memcpy(p->ip, them.ip, 4);
		unsigned m = them.mtu < mtu ? them.mtu : mtu;
		enum droce_mtu em = DROCE_MTU_256;
		while (em < DROCE_MTU_4096 && droce_mtu_bytes(em + 1) <= m)
			em++;
		struct droce_qp_attr a = {0};
		a.qp_state = DROCE_QPS_RTR;
		a.path_mtu = em;
		a.dest_qp_num = them.qpn;
		a.rq_psn = them.psn;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
		a.ah_attr.ip_version = 4;
		memcpy(a.ah_attr.dst_ip, them.ip, 4);
		memcpy(a.ah_attr.dst_mac, p->mac, 6);
		a.ah_attr.dscp = DROCE_DEFAULT_DSCP;
		a.ah_attr.ttl = DROCE_DEFAULT_TTL;
		if (droce_modify_qp(p->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				    DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
				    DROCE_QP_MIN_RNR_TIMER))
			return fail(d, -EIO, "rank %d: QP to rank %d: RTR refused", d->rank, j);
		struct droce_qp_attr s = {0};
		s.qp_state = DROCE_QPS_RTS;
		s.sq_psn = p->psn;
		/* 4.096 us * 2^16 = 268 ms, 7 retries: a rank descheduled on a
		 * shared core for a second is not a dead peer */
		s.timeout = 16;
		s.retry_cnt = 7;
		s.rnr_retry = 7;
		s.max_rd_atomic = 1;
		if (droce_modify_qp(p->qp, &s, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
				    DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC))
			return fail(d, -EIO, "rank %d: QP to rank %d: RTS refused", d->rank, j);
		if (d->c.port)
			droce_dpdk_port_add_neighbour(d->ports[0], them.ip, them.mac);
	}
	/* nobody sends before every QP is in RTR: a request to a QP still in
	 * INIT would be dropped and cost an ACK timeout */
	if (sset(d, "droce/rts/%d%.0d", d->rank, 0, "1", 2))
		return fail(d, -EIO, "store: cannot set rts/%d", d->rank);
	for (int j = 0; j < d->size; j++) {
		char u[4];
		if (j != d->rank && sget(d, "droce/rts/%d%.0d", j, 0, u, sizeof(u)))
			return fail(d, -ETIMEDOUT, "store: rank %d never reached RTS", j);
	}
	return 0;
}

static int open_all(struct dcoll *d)
{
	int r = droce_dpdk_init(d->c.eal);
	if (r)
		return fail(d, r, "EAL: %s", strerror(-r));
	droce_dpdk_thread_register();
	droce_mux_init(&d->mux);
	r = d->c.port ? open_one_port(d) : open_mesh(d);
	if (r)
		return r;
	unsigned mtu = 4096;
	for (unsigned i = 0; i < d->nports; i++) {
		unsigned m = droce_dpdk_port_roce_mtu(d->ports[i]);
		mtu = m < mtu ? m : mtu;
	}
	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	cp.ip_version = 4;
	memcpy(cp.ip, d->ip, 4);
	memcpy(cp.mac, d->mac, 6);
	cp.link = d->c.port ? droce_dpdk_port_link(d->ports[0]) : droce_mux_link(&d->mux);
	cp.max_qps = (uint32_t)d->size + 4;
	cp.max_mrs = 256;
	cp.cc = d->c.cc;
	cp.seed = droce_dpdk_now() ^ ((uint64_t)d->rank << 32);
	d->ctx = droce_ctx_create(&cp);
	if (!d->ctx)
		return fail(d, -errno, "context: %s", strerror(errno));
	d->cq = droce_create_cq(d->ctx, (unsigned)d->size * (2 * d->c.slots + 32));
	size_t per = (size_t)d->c.slots * d->c.slot_bytes;
	d->slot_area_len = per * (size_t)d->size;
	d->slot_area = aligned_alloc(4096, d->slot_area_len);
	d->credit = aligned_alloc(64, 64 * (((size_t)d->size * 8 + 63) / 64));
	d->small = aligned_alloc(64, 64);
	if (!d->cq || !d->slot_area || !d->credit || !d->small)
		return fail(d, -ENOMEM, "out of memory");
	memset((void *)d->credit, 0, (size_t)d->size * 8);
	memset(d->small, 0, 64);
	d->slot_mr = droce_reg_mr(d->ctx, d->slot_area, d->slot_area_len,
				  DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	d->credit_mr = droce_reg_mr(d->ctx, (void *)d->credit, (size_t)d->size * 8,
				    DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	d->small_mr = droce_reg_mr(d->ctx, d->small, 64, DROCE_ACCESS_LOCAL_WRITE);
	if (!d->slot_mr || !d->credit_mr || !d->small_mr)
		return fail(d, -ENOMEM, "cannot register the slots");
	for (int j = 0; j < d->size; j++) {
		d->peers[j].imm = calloc(d->c.slots, sizeof(uint32_t));
		if (!d->peers[j].imm)
			return fail(d, -ENOMEM, "out of memory");
	}
	r = open_qps(d, mtu);
	if (!r && d->c.verbose)
		fprintf(stderr, "droce: rank %d of %d up: %u port(s), MTU %u, %u slots of %zu bytes per peer\n",
			d->rank, d->size, d->nports, mtu, d->c.slots, d->c.slot_bytes);
	return r;
}

static void free_all(struct dcoll *d)
{
	if (d->ctx)
		droce_ctx_destroy(d->ctx); /* its QPs, CQ and MRs */
	for (unsigned i = 0; i < d->nports; i++)
		droce_dpdk_port_close(d->ports[i]);
	for (int j = 0; d->peers && j < d->size; j++) {
		struct peer *p = &d->peers[j];
		while (p->aside) {
			struct aside *a = p->aside;
			p->aside = a->next;
			free(a);
		}
		free(p->q);
		free(p->imm);
	}
	free(d->peers);
	free(d->slot_area);
	free((void *)d->credit);
	free(d->small);
	free(d);
}

struct dcoll *dcoll_create(const struct dcoll_conf *c, char *err, size_t errlen)
{
	if (!c || c->size < 1 || c->size > MAX_RANKS || c->rank < 0 || c->rank >= c->size ||
	    !c->store.set || !c->store.get || !c->slots || c->slot_bytes < 64 ||
	    c->slot_bytes > IMM_LEN_MASK || c->slot_bytes % 64) {
		snprintf(err, errlen, "bad configuration (ranks 1..%d, slot_bytes 64..%u, a multiple of 64)",
			 MAX_RANKS, IMM_LEN_MASK);
		errno = EINVAL;
		return NULL;
	}
	struct dcoll *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->c = *c;
	if (d->c.small_max > (size_t)d->c.slots * d->c.slot_bytes)
		d->c.small_max = (size_t)d->c.slots * d->c.slot_bytes;
	if (!d->c.timeout_ns)
		d->c.timeout_ns = 300ull * 1000000000ull;
	d->rank = c->rank;
	d->size = c->size;
	d->peers = calloc((size_t)c->size, sizeof(*d->peers));
	if (!d->peers) {
		free(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (c->size > 1 && open_all(d)) {
		snprintf(err, errlen, "%s", d->err);
		errno = -d->failed;
		free_all(d);
		return NULL;
	}
	return d;
}

void dcoll_destroy(struct dcoll *d)
{
	if (!d)
		return;
	if (d->size > 1 && d->ctx) {
		/* a peer that failed (or is stuck elsewhere) must not hold this
		 * one for the whole operation timeout */
		if (d->c.timeout_ns > SHUTDOWN_WAIT_NS)
			d->c.timeout_ns = SHUTDOWN_WAIT_NS;
		if (!d->failed)
			dcoll_barrier(d);
		/* our last ACKs and credits must reach the peers still in it */
		uint64_t end = droce_dpdk_now() + LINGER_NS;
		while (droce_dpdk_now() < end)
			progress(d);
		for (unsigned i = 0; i < d->nports; i++)
			while (droce_dpdk_port_tx_pending(d->ports[i]) && !d->failed)
				progress(d);
		/* nobody polls from here on; then the ports may go. A store
		 * that is gone (rank 0 left) means everyone got this far. */
		sset(d, "droce/bye/%d%.0d", d->rank, 0, "1", 2);
		for (int j = 0; j < d->size; j++) {
			char u[4];
			if (j != d->rank)
				sget(d, "droce/bye/%d%.0d", j, 0, u, sizeof(u));
		}
	}
	free_all(d);
}
