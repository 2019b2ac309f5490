/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hosts: one real droce context each, over a struct droce_link whose tx()
 * copies the frame into a simulator packet and queues it on the host's NIC
 * port, and whose rx_burst() hands out the frames the fabric delivered.
 * The NIC queue holds NIC_DEPTH frames; beyond that tx() says -ENOBUFS, as
 * a full descriptor ring would, and the host is polled again once the
 * queue has drained to half (PFC pauses reach the engine this way).
 *
 * A host is polled only when something happened to it: a frame arrived,
 * its NIC drained, or the context's own next deadline (ACK timeout, RNR
 * wait, pacing: droce_ctx_next_deadline) came due. Nothing scans all hosts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define NIC_DEPTH 16u
#define WC_BATCH 32
#define SIM_BUF (64u * 1024u)
#define RECV_DEPTH 64u    /* WRITE with immediate (allreduce) takes one per message */
#define SEND_DEPTH 128u   /* workload.c keeps at most MAX_OUT = 128 WRs posted */

static int sim_tx(void *link, const struct droce_tx_frame *f, uint64_t now)
{
	struct host *h = link;
	struct sim *s = h->sim;
	struct port *nic = &h->node->ports[0];
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	if (len > SIM_MAX_FRAME)
		return -EMSGSIZE;
	if (nic->qpkts >= NIC_DEPTH) {
		h->nic_full = true;
		return -ENOBUFS;
	}
	struct pkt *k = pkt_alloc(s);
	if (!k)
		return -ENOBUFS;
	uint8_t *d = k->data;
	memcpy(d, f->hdr, f->hdr_len);
	d += f->hdr_len;
	for (unsigned i = 0; i < f->nseg; i++) {
		memcpy(d, f->seg[i].addr, f->seg[i].len);
		d += f->seg[i].len;
	}
	memcpy(d, f->trailer, f->trailer_len);
	k->len = len;
	s->frames++;
	/* --drop-tail: lose the last packet of each connection's first flow,
	 * once (a lost tail: nothing behind it to trigger a sequence NAK). */
	if (s->o.drop_tail && len > 54 && k->data[42] >= 0x06 && k->data[42] <= 0x0B) {
		uint32_t dqpn = (uint32_t)k->data[47] << 16 | (uint32_t)k->data[48] << 8 | k->data[49];
		uint32_t psn = (uint32_t)k->data[51] << 16 | (uint32_t)k->data[52] << 8 | k->data[53];
		uint32_t dip = (uint32_t)k->data[30] << 24 | (uint32_t)k->data[31] << 16 |
			       (uint32_t)k->data[32] << 8 | k->data[33];
		for (unsigned i = 0; i < h->nconns; i++) {
			struct conn *c = h->conns[i];
			if (c->dst->ip == dip && droce_qp_num(c->rqp) == dqpn && !c->tail_dropped &&
			    psn == c->tail_psn) {
				c->tail_dropped = true;
				s->tail_drops++;
				pkt_free(s, k);
				return 0;
			}
		}
	}
	port_enqueue(s, nic, k);
	return 0;
}

static unsigned sim_rx_burst(void *link, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct host *h = link;
	unsigned got = 0;
	while (got < n && h->rx_head) {
		struct pkt *k = h->rx_head;
		h->rx_head = k->next;
		f[got].data = k->data;
		f[got].len = k->len;
		f[got].handle = k;
		got++;
	}
	if (!h->rx_head)
		h->rx_tail = NULL;
	h->rx_count -= got;
	return got;
}

static void sim_rx_release(void *link, struct droce_rx_frame *f, unsigned n)
{
	struct host *h = link;
	for (unsigned i = 0; i < n; i++)
		pkt_free(h->sim, f[i].handle);
}

/* The NIC's time held by PFC: what the ACK timer leaves out (link.h). */
static uint64_t sim_paused_ns(void *link, uint64_t now)
{
	const struct port *nic = &((struct host *)link)->node->ports[0];
	return nic->paused_ns + (nic->paused ? now - nic->paused_since : 0);
}

static const struct droce_link_ops sim_link_ops = {
	.tx = sim_tx,
	.rx_burst = sim_rx_burst,
	.rx_release = sim_rx_release,
	.paused_ns = sim_paused_ns,
};

int hosts_create(struct sim *s)
{
	s->hosts = calloc(s->nhosts, sizeof(*s->hosts));
	if (!s->hosts)
		return -ENOMEM;
	for (unsigned i = 0; i < s->nhosts; i++) {
		struct host *h = &s->hosts[i];
		h->sim = s;
		h->id = i;
		h->node = &s->hnodes[i];
		h->node->host = h;
		h->poll_at = h->timer_at = UINT64_MAX;
		h->ip = ip_of_host(i);
		struct droce_ctx_params p;
		droce_ctx_params_init(&p);
		p.ip_version = 4;
		p.ip[0] = (uint8_t)(h->ip >> 24);
		p.ip[1] = (uint8_t)(h->ip >> 16);
		p.ip[2] = (uint8_t)(h->ip >> 8);
		p.ip[3] = (uint8_t)h->ip;
		p.mac[0] = 0x02;
		p.mac[4] = (uint8_t)(i >> 8);
		p.mac[5] = (uint8_t)i;
		p.link.ops = &sim_link_ops;
		p.link.priv = h;
		p.seed = s->o.seed * 0x9E3779B97F4A7C15ULL + i + 1;
		p.cc = s->o.cc;
		p.line_rate_gbps = s->o.rate_gbps;
		if (s->o.timeout_mode)
			p.timeout_mode = strcmp(s->o.timeout_mode, "adaptive") == 0
						 ? DROCE_TIMEOUT_ADAPTIVE : DROCE_TIMEOUT_IBTA;
		p.window_tune = s->o.window_tune;
		p.max_mrs = 16; /* one MR per host */
		h->ctx = droce_ctx_create(&p);
		if (!h->ctx)
			return -errno;
		/* Drained after every poll, which completes at most 2 bursts of
		 * ACKs, each covering at most one receive burst of WRs: 16 K is ample (an
		 * overflow would show as wc_errors, never silently). */
		h->scq = droce_create_cq(h->ctx, 16384);
		h->rcq = droce_create_cq(h->ctx, 16384);
		h->buflen = SIM_BUF;
		h->buf = calloc(1, h->buflen);
		if (!h->scq || !h->rcq || !h->buf)
			return -ENOMEM;
		h->mr = droce_reg_mr(h->ctx, h->buf, h->buflen,
				     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
		if (!h->mr)
			return -ENOMEM;
	}
	return 0;
}

void hosts_destroy(struct sim *s)
{
	for (unsigned i = 0; s->hosts && i < s->nhosts; i++) {
		struct host *h = &s->hosts[i];
		if (h->ctx)
			droce_ctx_destroy(h->ctx);
		while (h->rx_head) {
			struct pkt *k = h->rx_head;
			h->rx_head = k->next;
			pkt_free(s, k);
		}
		free(h->buf);
		free(h->conns);
	}
	free(s->hosts);
}

static enum droce_mtu mtu_enum(unsigned b)
{
	switch (b) {
	case 256: return DROCE_MTU_256;
	case 512: return DROCE_MTU_512;
	case 1024: return DROCE_MTU_1024;
	case 2048: return DROCE_MTU_2048;
	default: return DROCE_MTU_4096;
	}
}

/* Queues sized to what the workloads use: a 64-host all-to-all has 126 QPs
 * per host, and the defaults (256 WRs, 256 inline bytes a slot) would cost
 * ~150 KB each. */
static struct droce_qp *make_qp(struct host *h)
{
	struct droce_qp_init_attr ia = {.send_cq = h->scq, .recv_cq = h->rcq};
	ia.cap.max_send_wr = SEND_DEPTH;
	ia.cap.max_recv_wr = RECV_DEPTH;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 16;
	return droce_create_qp(h->ctx, &ia);
}

static int qp_connect(struct sim *s, struct droce_qp *qp, struct host *peer, uint32_t dqpn,
		      uint16_t sport)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE;
	a.pkey = 0xFFFF;
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY))
		return -EINVAL;
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = mtu_enum(s->o.mtu);
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.ip_version = 4;
	a.ah_attr.dst_ip[0] = (uint8_t)(peer->ip >> 24);
	a.ah_attr.dst_ip[1] = (uint8_t)(peer->ip >> 16);
	a.ah_attr.dst_ip[2] = (uint8_t)(peer->ip >> 8);
	a.ah_attr.dst_ip[3] = (uint8_t)peer->ip;
	a.ah_attr.dst_mac[0] = 0x02;
	a.ah_attr.dst_mac[4] = (uint8_t)(peer->id >> 8);
	a.ah_attr.dst_mac[5] = (uint8_t)peer->id;
	a.ah_attr.dscp = 26;
	a.ah_attr.ttl = 64;
	a.ah_attr.udp_sport = sport;
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					 DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					 DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER))
		return -EINVAL;
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					 DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					 DROCE_QP_MAX_QP_RD_ATOMIC))
		return -EINVAL;
	return 0;
}

static int post_recvs(struct droce_qp *qp, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct droce_recv_wr wr = {.wr_id = 0, .num_sge = 0}, *bad;
		if (droce_post_recv(qp, &wr, &bad))
			return -ENOMEM;
	}
	return 0;
}

struct conn *conn_get(struct sim *s, unsigned src, unsigned dst, bool short_class)
{
	struct host *hs = &s->hosts[src], *hd = &s->hosts[dst];
	for (unsigned i = 0; i < hs->nconns; i++) {
		struct conn *c = hs->conns[i];
		if (c->dst == hd && c->short_class == short_class)
			return c;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->src = hs;
	c->dst = hd;
	c->short_class = short_class;
	c->sqp = make_qp(hs);
	c->rqp = make_qp(hd);
	if (!c->sqp || !c->rqp || droce_qp_set_transport(c->sqp, s->o.transport) ||
	    droce_qp_set_transport(c->rqp, s->o.transport))
		return NULL;
	uint16_t sa = (uint16_t)(0xC000u | (sim_rand(s) & 0x3FFFu));
	uint16_t sb = (uint16_t)(0xC000u | (sim_rand(s) & 0x3FFFu));
	if (qp_connect(s, c->sqp, hd, droce_qp_num(c->rqp), sa) ||
	    qp_connect(s, c->rqp, hs, droce_qp_num(c->sqp), sb) || post_recvs(c->rqp, RECV_DEPTH))
		return NULL;
	struct conn **v = realloc(hs->conns, (hs->nconns + 1) * sizeof(*v));
	if (!v)
		return NULL;
	hs->conns = v;
	hs->conns[hs->nconns++] = c;
	if (s->nconns == s->cconns) {
		unsigned cap = s->cconns ? 2 * s->cconns : 64;
		struct conn **w = realloc(s->conns, cap * sizeof(*w));
		if (!w)
			return NULL;
		s->conns = w;
		s->cconns = cap;
	}
	s->conns[s->nconns++] = c;
	return c;
}

void host_deliver(struct sim *s, struct host *h, struct pkt *k)
{
	k->next = NULL;
	if (h->rx_tail)
		h->rx_tail->next = k;
	else
		h->rx_head = k;
	h->rx_tail = k;
	h->rx_count++;
	host_wake(s, h, s->now);
}

/*
 * Two kinds of wake-up, so the queue holds at most one live deadline event
 * per host: a poll now (a frame arrived, the NIC drained, work was posted),
 * at most one per host per instant; and a poll at the context's next
 * deadline, pushed only when it is earlier than the one already pending (a
 * deadline that moved later is caught by the earlier event, which polls
 * and reschedules). Events superseded this way are skipped when they pop.
 */
void host_wake(struct sim *s, struct host *h, uint64_t t)
{
	if (t <= s->now) {
		if (h->poll_at == s->now)
			return;
		h->poll_at = s->now;
		evq_push(&s->q, s->now, EV_POLL, h, NULL, 0);
		return;
	}
	if (t >= h->timer_at)
		return;
	h->timer_at = t;
	evq_push(&s->q, t, EV_POLL, h, NULL, 1);
}

void host_nic_drained(struct sim *s, struct host *h)
{
	if (h->nic_full && h->node->ports[0].qpkts <= NIC_DEPTH / 2) {
		h->nic_full = false;
		host_wake(s, h, s->now);
	}
}

static unsigned drain_cqs(struct sim *s, struct host *h)
{
	struct droce_wc wc[WC_BATCH];
	unsigned total = 0;
	int n;
	while ((n = droce_poll_cq(h->scq, WC_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			workload_on_send_wc(s, h, &wc[i]);
		total += (unsigned)n;
	}
	while ((n = droce_poll_cq(h->rcq, WC_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			workload_on_recv_wc(s, h, &wc[i]);
		total += (unsigned)n;
	}
	return total;
}

void host_poll(struct sim *s, struct host *h)
{
	unsigned iter;
	for (iter = 0; iter < 4; iter++) {
		unsigned n = droce_ctx_poll(h->ctx, s->now);
		unsigned c = drain_cqs(s, h);
		if (!n && !c)
			break;
	}
	if (iter == 4 && !h->nic_full) {
		/* More to do: after the events due now. Virtual time must move
		 * on, though: an engine that always has work at one instant is
		 * a bug to report, not a run to wait for. */
		if (h->spin_t != s->now) {
			h->spin_t = s->now;
			h->spins = 0;
		}
		if (++h->spins > 1000000) {
			s->stuck = true;
			return;
		}
		host_wake(s, h, s->now);
		return;
	}
	uint64_t dl = droce_ctx_next_deadline(h->ctx);
	if (dl != UINT64_MAX)
		host_wake(s, h, dl > s->now ? dl : s->now + 1);
}
