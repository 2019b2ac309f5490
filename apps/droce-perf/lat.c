/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Latency tests. write_lat and send_lat are ping-pong (perftest reports
 * RTT/2); read_lat and atomic_lat time one operation (full RTT).
 * write_lat detects arrival by polling the last byte of the message, like
 * perftest: the responder places packets in PSN order, so once the last
 * byte is there the message is.
 */
#include "perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

#define RX_SLOT 0
#define TX_SLOT 1

static uint8_t *slot(const struct perf *p, unsigned s)
{
	return p->qp[0].buf + (size_t)s * p->slot_size;
}

/* The byte that marks message @p iter's arrival: never 0, never the previous one. */
static uint8_t marker(uint64_t iter)
{
	return (uint8_t)(iter % 255 + 1);
}

static int post(struct perf *p, enum droce_wr_opcode op, uint32_t size)
{
	struct perf_qp *q = &p->qp[0];
	bool into_rx = op == DROCE_WR_RDMA_READ || op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
	struct droce_sge sge = {(uint64_t)(uintptr_t)slot(p, into_rx ? RX_SLOT : TX_SLOT), size, q->lkey};
	struct droce_send_wr wr = {0};
	wr.wr_id = q->wr_seq; /* counts every send of the run: ids never repeat across sizes */
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = DROCE_SEND_SIGNALED;
	if (op == DROCE_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = q->remote.addr;
		wr.wr.atomic.rkey = q->remote.rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = q->remote.addr; /* the peer's RX slot */
		wr.wr.rdma.rkey = q->remote.rkey;
	}
	int r = p->be->post_send(p, 0, &wr);
	if (!r)
		q->wr_seq++;
	return r;
}

int perf_lat_post_recv(struct perf *p)
{
	struct perf_qp *q = &p->qp[0];
	struct droce_sge sge = {(uint64_t)(uintptr_t)slot(p, RX_SLOT), p->slot_size, q->lkey};
	struct droce_recv_wr wr = {.wr_id = 0, .sg_list = &sge, .num_sge = 1};
	return p->be->post_recv(p, 0, &wr);
}

/* Fill the outgoing message for @p iter: pattern, then the marker in its last byte. */
static void prepare(struct perf *p, uint32_t size, uint64_t iter)
{
	uint8_t *b = slot(p, TX_SLOT);
	if (p->o.check)
		pattern_fill(b, size, iter);
	b[size - 1] = marker(iter);
}

static void verify(struct perf *p, uint32_t size, uint64_t iter)
{
	if (!p->o.check || size < 2)
		return;
	long bad = pattern_check(slot(p, RX_SLOT), size - 1, iter);
	if (bad >= 0)
		perf_check_fail(p, "%s: iteration %llu, byte %ld of %u differs",
				perf_test_name(p->o.test), (unsigned long long)iter, bad, size);
}

/*
 * Poll until the event of @p iter happened: the marker byte (write_lat), a
 * receive completion (send_lat) or the send completion (read/atomic).
 * Send completions of ping-pong tests are consumed on the way. With
 * --check, each send completion must be the next one posted (an RC send
 * queue completes in posting order, IBTA vol 1 10.8) and the awaited
 * completion's byte_len the size: a repeated, lost or short one shows.
 * @return 0, 1 when the server learned the client is done, or -errno.
 */
static int wait_for(struct perf *p, uint32_t size, uint64_t iter, bool want_recv,
		    bool want_send)
{
	struct perf_qp *q = &p->qp[0];
	const uint64_t want_id = q->wr_seq - 1; /* read/atomic: the one just posted */
	uint64_t t0 = perf_now(p), timeout = (uint64_t)(p->o.timeout * 1e9);
	volatile uint8_t *last = slot(p, RX_SLOT) + size - 1;
	struct droce_wc wc[16];

	for (uint64_t turn = 1;; turn++) {
		uint64_t now = perf_now(p);
		bool got = false;
		int n = p->be->poll(p, now, wc, 16);
		if (n < 0) {
			fprintf(stderr, "droce-perf: completion queue: %s\n", strerror(-n));
			return n;
		}
		for (int k = 0; k < n; k++) {
			if (wc[k].status != DROCE_WC_SUCCESS) {
				fprintf(stderr, "droce-perf: completion error: %s\n",
					droce_wc_status_str(wc[k].status));
				return -EIO;
			}
			if (wc[k].opcode == DROCE_WC_RECV) {
				if (p->o.check && want_recv && wc[k].byte_len != size)
					perf_check_fail(p, "%s: iteration %llu: received %u bytes, expected %u",
							perf_test_name(p->o.test), (unsigned long long)iter,
							wc[k].byte_len, size);
				got |= want_recv;
			} else {
				if (p->o.check && wc[k].wr_id != q->wc_seq)
					perf_check_fail(p, "%s: send completion of wr %llu, expected wr %llu",
							perf_test_name(p->o.test),
							(unsigned long long)wc[k].wr_id,
							(unsigned long long)q->wc_seq);
				if (p->o.check && want_send && wc[k].wr_id == want_id && wc[k].byte_len != size)
					perf_check_fail(p, "%s: iteration %llu: byte_len %u, expected %u",
							perf_test_name(p->o.test), (unsigned long long)iter,
							wc[k].byte_len, size);
				q->wc_seq++;
				got |= want_send && wc[k].wr_id == want_id;
			}
		}
		if (got || (!want_recv && !want_send && *last == marker(iter)))
			return 0;
		if (now - t0 > timeout) {
			fprintf(stderr, "droce-perf: nothing for %.1f s at iteration %llu: peer gone?\n",
				p->o.timeout, (unsigned long long)iter);
			return -ETIMEDOUT;
		}
		if ((turn & 0x3FF) == 0) {
			int e = perf_peer_event(p);
			if (e)
				return e < 0 ? e : 1;
		}
	}
}

int perf_run_lat(struct perf *p, uint32_t size, struct lat_result *out)
{
	const bool dur = p->o.duration > 0;
	const uint64_t n = dur ? 1u << 20 : p->o.iters;
	uint64_t *s = malloc(n * sizeof(*s));
	uint64_t t_end = perf_now(p) + (uint64_t)(p->o.duration * 1e9);
	uint64_t i;
	int r = 0;

	if (!s)
		return -ENOMEM;
	perf_stage_mark(p, true, 0);
	for (i = 0; i < n && (!dur || perf_now(p) < t_end); i++) {
		uint64_t t0 = perf_now(p);
		switch (p->o.test) {
		case PERF_WRITE_LAT:
			prepare(p, size, i);
			if ((r = post(p, DROCE_WR_RDMA_WRITE, size)) ||
			    (r = wait_for(p, size, i, false, false)))
				goto out;
			verify(p, size, i);
			break;
		case PERF_SEND_LAT:
			prepare(p, size, i);
			if ((r = post(p, DROCE_WR_SEND, size)) ||
			    (r = wait_for(p, size, i, true, false)))
				goto out;
			verify(p, size, i);
			if ((r = perf_lat_post_recv(p)))
				goto out;
			break;
		case PERF_READ_LAT:
			/* The server's slot 0 holds the same pattern every time: poison
			 * ours so that each READ must rewrite every byte to pass. */
			if (p->o.check)
				pattern_poison(slot(p, RX_SLOT), size, 0);
			if ((r = post(p, DROCE_WR_RDMA_READ, size)) ||
			    (r = wait_for(p, size, i, false, true)))
				goto out;
			if (p->o.check) {
				long bad = pattern_check(slot(p, RX_SLOT), size, 0);
				if (bad >= 0)
					perf_check_fail(p, "read_lat: iteration %llu, byte %ld differs",
							(unsigned long long)i, bad);
			}
			break;
		default: { /* atomic_lat: fetch-and-add 1, the old value counts iterations */
			if (p->o.check)
				memset(slot(p, RX_SLOT), 0xFF, 8); /* no iteration count: never returned */
			if ((r = post(p, DROCE_WR_ATOMIC_FETCH_AND_ADD, 8)) ||
			    (r = wait_for(p, 8, i, false, true)))
				goto out;
			uint64_t old;
			memcpy(&old, slot(p, RX_SLOT), 8);
			if (p->o.check && old != p->qp[0].completed)
				perf_check_fail(p, "atomic_lat: fetch-and-add returned %llu, expected %llu",
						(unsigned long long)old,
						(unsigned long long)p->qp[0].completed);
			p->qp[0].completed++;
			break;
		}
		}
		s[i] = perf_now(p) - t0;
	}
	perf_stage_mark(p, false, i);
	if (r == 1)
		r = -ECONNRESET;
	if (!r) {
		bool half = p->o.test == PERF_WRITE_LAT || p->o.test == PERF_SEND_LAT;
		r = lat_compute(s, i, half ? 0.5 : 1.0, out);
		out->bytes = size;
	}
out:
	free(s);
	return r;
}

/* Server: echo pings (write_lat, send_lat); otherwise just serve. */
int perf_serve_lat(struct perf *p, const uint32_t *sizes, unsigned n_sizes)
{
	int r = 0;

	if (p->o.test != PERF_WRITE_LAT && p->o.test != PERF_SEND_LAT)
		return perf_serve_bw(p, sizes, n_sizes);
	for (unsigned z = 0; z < n_sizes; z++) {
		uint32_t size = sizes[z];
		uint64_t n = p->o.duration > 0 ? UINT64_MAX : p->o.iters;
		perf_stage_mark(p, true, 0);
		for (uint64_t i = 0; i < n; i++) {
			bool send = p->o.test == PERF_SEND_LAT;
			r = wait_for(p, size, i, send, false);
			if (r) {
				perf_stage_mark(p, false, i);
				return r == 1 ? 0 : r;
			}
			verify(p, size, i);
			if (send && (r = perf_lat_post_recv(p)))
				return r;
			prepare(p, size, i);
			if ((r = post(p, send ? DROCE_WR_SEND : DROCE_WR_RDMA_WRITE, size)))
				return r;
		}
		perf_stage_mark(p, false, n);
	}
	/* Wait for the client's "done" while our last pong completes. */
	for (uint64_t turn = 1;; turn++) {
		struct droce_wc wc[16];
		(void)p->be->poll(p, perf_now(p), wc, 16);
		if ((turn & 0x3FF) == 0 && (r = perf_peer_event(p)))
			return r < 0 ? r : 0;
	}
}
