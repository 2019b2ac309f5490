/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bandwidth tests (write_bw, read_bw, send_bw): the client keeps tx_depth
 * messages in flight per QP; the server serves (receives for send_bw, and for
 * write_bw --check, where each WRITE carries its iteration as immediate data).
 */
#include "perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "pattern.h"

static inline uint8_t *slot_ptr(const struct perf *p, const struct perf_qp *q, uint64_t slot)
{
	return q->buf + slot * p->slot_size;
}

/*
 * --check on a client completion: the send queue of an RC QP completes its
 * work requests in the order they were posted (IBTA vol 1 10.8, completion ordering), so the
 * wr_id of QP q's next completion is the count it completed before: a
 * missing, repeated or reordered completion shows. A READ also reports the
 * bytes it placed (byte_len, as rdma-core's providers fill it) and its
 * target must now hold the server's pattern of that slot.
 */
static void check_send_wc(struct perf *p, struct perf_qp *q, const struct droce_wc *wc,
			  uint32_t size)
{
	if (wc->wr_id != q->completed) {
		perf_check_fail(p, "%s: QP %u completed wr %llu, expected wr %llu (%s)",
				perf_test_name(p->o.test), q->qpn, (unsigned long long)wc->wr_id,
				(unsigned long long)q->completed,
				wc->wr_id < q->completed ? "a repeated completion" : "one went missing");
		return;
	}
	if (p->o.test != PERF_READ_BW)
		return;
	if (wc->byte_len != size) {
		perf_check_fail(p, "read_bw: iteration %llu: byte_len %u, expected %u",
				(unsigned long long)wc->wr_id, wc->byte_len, size);
		return;
	}
	uint64_t slot = wc->wr_id % p->slots;
	long bad = pattern_check(slot_ptr(p, q, slot), size, slot);
	if (bad >= 0)
		perf_check_fail(p, "read_bw: iteration %llu, byte %ld of %u differs",
				(unsigned long long)wc->wr_id, bad, size);
}

static int post_one(struct perf *p, struct perf_qp *q, uint32_t size)
{
	uint64_t iter = q->posted;
	uint64_t slot = iter % p->slots;
	struct droce_sge sge = {(uint64_t)(uintptr_t)slot_ptr(p, q, slot), size, q->lkey};
	struct droce_send_wr wr = {0};

	wr.wr_id = iter;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = DROCE_SEND_SIGNALED;
	switch (p->o.test) {
	case PERF_WRITE_BW:
		wr.opcode = p->o.check ? DROCE_WR_RDMA_WRITE_WITH_IMM : DROCE_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = q->remote.addr + slot * p->slot_size;
		wr.wr.rdma.rkey = q->remote.rkey;
		break;
	case PERF_READ_BW:
		wr.opcode = DROCE_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = q->remote.addr + slot * p->slot_size;
		wr.wr.rdma.rkey = q->remote.rkey;
		break;
	default:
		wr.opcode = p->o.check ? DROCE_WR_SEND_WITH_IMM : DROCE_WR_SEND;
		break;
	}
	if (p->o.check) {
		wr.imm_data = (uint32_t)iter;
		/* A READ's target is poisoned first: the server's slot holds the
		 * same pattern on every pass, so only a READ that rewrote every
		 * byte passes the check at its completion. */
		if (p->o.test == PERF_READ_BW)
			pattern_poison(slot_ptr(p, q, slot), size, slot);
		else
			pattern_fill(slot_ptr(p, q, slot), size, iter);
	}
	int r = p->be->post_send(p, (unsigned)(q - p->qp), &wr);
	if (r == 0)
		q->posted++;
	return r;
}

int perf_run_bw(struct perf *p, uint32_t size, struct bw_result *out)
{
	const uint64_t iters = p->o.iters;
	const uint64_t dur_ns = (uint64_t)(p->o.duration * 1e9);
	const uint64_t timeout_ns = (uint64_t)(p->o.timeout * 1e9);
	const unsigned inflight = perf_bw_flow(&p->o, p->slots).inflight;
	uint64_t total = 0, want = dur_ns ? UINT64_MAX : iters * p->o.qps;
	/* Peak: the best rate over windows of 1/20 of the run (at least tx_depth messages). */
	uint64_t win = want == UINT64_MAX ? 4096 : want / 20;
	if (win < inflight)
		win = inflight;
	uint64_t win_start_n = 0, win_start_t, t_start, t_end, last_progress;
	double peak = 0;
	struct droce_wc wc[64];

	/* The QPs with room to post, each once: all at the start, then a QP
	 * again when a completion of its own made room. A turn of the loop
	 * costs what its completions brought, not a walk over every QP, and
	 * the QPs are served in the order their room appeared. */
	unsigned *refill = malloc(sizeof(*refill) * p->o.qps);
	unsigned r_head = 0, r_n = p->o.qps;
	uint64_t outstanding = 0;
	if (!refill)
		return -ENOMEM;
	for (unsigned i = 0; i < p->o.qps; i++) {
		p->qp[i].posted = p->qp[i].completed = 0;
		p->qp[i].queued = true;
		refill[i] = i;
	}
	int ret = 0;
	perf_stage_mark(p, true, 0);
	t_start = win_start_t = last_progress = t_end = perf_now(p);
	for (;;) {
		uint64_t now = perf_now(p);
		bool posting = dur_ns ? now - t_start < dur_ns : true;
		for (unsigned left = posting ? r_n : 0; left; left--) {
			unsigned i = refill[r_head];
			struct perf_qp *q = &p->qp[i];
			int r = 0;
			while (q->posted - q->completed < inflight && (dur_ns || q->posted < iters)) {
				r = post_one(p, q, size);
				if (r)
					break;
				outstanding++;
			}
			if (r && r != -ENOMEM) {
				fprintf(stderr, "droce-perf: post_send: %s\n", strerror(-r));
				ret = r;
				goto out;
			}
			r_head = r_head + 1 == p->o.qps ? 0 : r_head + 1;
			r_n--;
			if (r == -ENOMEM) { /* the send queue is full: again next turn */
				unsigned tail = r_head + r_n;
				refill[tail >= p->o.qps ? tail - p->o.qps : tail] = i;
				r_n++;
			} else {
				q->queued = false;
			}
		}
		int n = p->be->poll(p, now, wc, 64);
		if (n < 0) {
			fprintf(stderr, "droce-perf: completion queue: %s\n", strerror(-n));
			ret = n;
			goto out;
		}
		for (int k = 0; k < n; k++) {
			struct perf_qp *q = perf_qp_of(p, wc[k].qp_num);
			if (wc[k].status != DROCE_WC_SUCCESS || !q) {
				fprintf(stderr, "droce-perf: completion error: %s (wr %llu, QP %u)\n",
					droce_wc_status_str(wc[k].status),
					(unsigned long long)wc[k].wr_id, wc[k].qp_num);
				ret = -EIO;
				goto out;
			}
			if (p->o.check)
				check_send_wc(p, q, &wc[k], size);
			q->completed++;
			outstanding--;
			total++;
			if (!q->queued) {
				unsigned tail = r_head + r_n;
				refill[tail >= p->o.qps ? tail - p->o.qps : tail] = (unsigned)(q - p->qp);
				r_n++;
				q->queued = true;
			}
		}
		if (n > 0) {
			last_progress = t_end = now;
			if (total - win_start_n >= win) {
				double rate = (double)(total - win_start_n) / (double)(now - win_start_t + 1);
				if (rate > peak)
					peak = rate;
				win_start_n = total;
				win_start_t = now;
			}
		}
		if (!outstanding && (total >= want || (dur_ns && now - t_start >= dur_ns)))
			break;
		if (now - last_progress > timeout_ns) {
			fprintf(stderr, "droce-perf: no completion for %.1f s: peer gone?\n", p->o.timeout);
			ret = -ETIMEDOUT;
			goto out;
		}
		if ((total & 0xFF) == 0 && perf_peer_event(p) < 0) {
			fprintf(stderr, "droce-perf: the server went away\n");
			ret = -ECONNRESET;
			goto out;
		}
	}
out:
	free(refill);
	if (ret)
		return ret;
	perf_stage_mark(p, false, total);
	double ns = (double)(t_end - t_start + 1);
	double avg = (double)total / ns; /* messages per ns */
	if (peak < avg)
		peak = avg;
	out->bytes = size;
	out->iterations = total;
	out->bw_avg_gbps = avg * size * 8.0;
	out->bw_peak_gbps = peak * size * 8.0;
	out->msg_rate_mpps = avg * 1e3;
	return 0;
}

static int post_recv_slot(struct perf *p, struct perf_qp *q, uint64_t slot)
{
	struct droce_sge sge = {(uint64_t)(uintptr_t)slot_ptr(p, q, slot), p->slot_size, q->lkey};
	struct droce_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
	return p->be->post_recv(p, (unsigned)(q - p->qp), &wr);
}

int perf_server_prepare(struct perf *p)
{
	unsigned recvs = perf_bw_flow(&p->o, p->slots).recvs;

	/* READ targets hold a pattern keyed by slot, which the client checks. */
	if (p->o.test == PERF_READ_BW || p->o.test == PERF_READ_LAT)
		for (unsigned i = 0; i < p->o.qps; i++)
			for (uint64_t s = 0; s < p->slots; s++)
				pattern_fill(slot_ptr(p, &p->qp[i], s), p->slot_size, s);
	if (p->o.test == PERF_SEND_LAT)
		return perf_lat_post_recv(p);
	if (recvs)
		for (unsigned i = 0; i < p->o.qps; i++)
			for (uint64_t s = 0; s < recvs; s++)
				if (post_recv_slot(p, &p->qp[i], s))
					return -EIO;
	return 0;
}

/*
 * --check on a server receive: the WRITE landed at the slot of its
 * iteration, the SEND in the receive buffer. The client's iterations restart
 * at 0 with each size; an RC responder delivers in PSN order (IBTA vol 1
 * 9.7.5), so on each QP the immediates count 0, 1, ... iters - 1 per size:
 * a lost, repeated or reordered delivery shows, and byte_len is the size of
 * the current round.
 */
static void check_recv_wc(struct perf *p, struct perf_qp *q, const struct droce_wc *wc,
			  const uint32_t *sizes, unsigned n_sizes)
{
	const bool counted = p->o.duration <= 0;
	uint64_t got = q->completed, iters = p->o.iters;
	uint64_t iter = wc->imm_data;
	uint8_t *data = p->o.test == PERF_WRITE_BW ? slot_ptr(p, q, iter % p->slots)
						   : slot_ptr(p, q, wc->wr_id);

	if (!(wc->wc_flags & DROCE_WC_WITH_IMM)) {
		perf_check_fail(p, "completion without immediate data");
		return;
	}
	if (counted) {
		unsigned round = (unsigned)(got / iters);
		uint64_t want = got % iters;
		if (round >= n_sizes) {
			perf_check_fail(p, "%s: QP %u: delivery %llu past the %llu the client sends",
					perf_test_name(p->o.test), q->qpn, (unsigned long long)got + 1,
					(unsigned long long)(iters * n_sizes));
			return;
		}
		if (iter != (uint32_t)want) {
			perf_check_fail(p, "%s: QP %u delivered iteration %llu, expected %llu",
					perf_test_name(p->o.test), q->qpn, (unsigned long long)iter,
					(unsigned long long)want);
			return;
		}
		if (wc->byte_len != sizes[round]) {
			perf_check_fail(p, "%s: iteration %llu: byte_len %u, expected %u",
					perf_test_name(p->o.test), (unsigned long long)iter,
					wc->byte_len, sizes[round]);
			return;
		}
	} else if (got > 0 && iter != 0 && iter != (uint32_t)(q->posted + 1)) {
		/* duration mode: the count of each round is the client's; each
		 * delivery follows the last one or starts a new size */
		perf_check_fail(p, "%s: QP %u delivered iteration %llu after %llu",
				perf_test_name(p->o.test), q->qpn, (unsigned long long)iter,
				(unsigned long long)q->posted);
		return;
	}
	q->posted = iter; /* the server's last delivered iteration */
	long bad = pattern_check(data, wc->byte_len, iter);
	if (bad >= 0)
		perf_check_fail(p, "%s: iteration %llu, byte %ld of %u differs",
				perf_test_name(p->o.test), (unsigned long long)iter, bad,
				wc->byte_len);
}

/* Server side of the bandwidth tests; receives were posted by perf_server_prepare(). */
int perf_serve_bw(struct perf *p, const uint32_t *sizes, unsigned n_sizes)
{
	struct droce_wc wc[64];
	uint64_t served = 0;
	const bool receives = perf_bw_flow(&p->o, p->slots).recvs > 0;
	int idle_after_done = -1; /* >= 0: the client is done; polls with nothing left */

	for (unsigned i = 0; i < p->o.qps; i++)
		p->qp[i].posted = p->qp[i].completed = 0;
	perf_stage_mark(p, true, 0);
	for (uint64_t turn = 0;; turn++) {
		int n = p->be->poll(p, perf_now(p), wc, 64);
		if (n < 0) {
			fprintf(stderr, "droce-perf: completion queue: %s\n", strerror(-n));
			return n;
		}
		for (int k = 0; k < n; k++) {
			struct perf_qp *q = perf_qp_of(p, wc[k].qp_num);
			if (wc[k].status != DROCE_WC_SUCCESS || !q) {
				fprintf(stderr, "droce-perf: completion error: %s\n",
					droce_wc_status_str(wc[k].status));
				return -EIO;
			}
			if (p->o.check)
				check_recv_wc(p, q, &wc[k], sizes, n_sizes);
			q->completed++;
			served++;
			if (post_recv_slot(p, q, wc[k].wr_id)) {
				fprintf(stderr, "droce-perf: post_recv failed\n");
				return -EIO;
			}
		}
		/* The client is done once its last message completed, which the
		 * responder reported before it ACKed: drain what is still queued. */
		if (idle_after_done >= 0) {
			idle_after_done = n ? 0 : idle_after_done + 1;
			if (idle_after_done > 64)
				break;
			continue;
		}
		if ((turn & 0x3FF) == 0) {
			int e = perf_peer_event(p);
			if (e < 0) {
				fprintf(stderr, "droce-perf: the client went away\n");
				return e;
			}
			if (e > 0)
				idle_after_done = 0;
		}
	}
	/* The stage trace per message: what the client sent by iterations
	 * (a -D run's count is the client's; none here) */
	perf_stage_mark(p, false, p->o.duration > 0 ? 0 : p->o.iters * p->o.qps * n_sizes);
	/* Every delivery counted: none missing at the end of the run. */
	if (p->o.check && receives && p->o.duration <= 0)
		for (unsigned i = 0; i < p->o.qps; i++)
			if (p->qp[i].completed != p->o.iters * n_sizes)
				perf_check_fail(p, "%s: QP %u: %llu deliveries, the client sent %llu",
						perf_test_name(p->o.test), p->qp[i].qpn,
						(unsigned long long)p->qp[i].completed,
						(unsigned long long)(p->o.iters * n_sizes));
	printf(" Served %s: %llu receive completions\n", perf_test_name(p->o.test),
	       (unsigned long long)served);
	return 0;
}
