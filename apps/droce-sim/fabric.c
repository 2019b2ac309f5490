/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fabric: nodes (hosts and switches) joined by full-duplex links, one
 * egress port per direction. A port serialises one frame at a time at the
 * link rate (wire bytes: the frame plus 24 bytes of FCS, preamble and
 * inter-frame gap) and the frame arrives at the peer after the propagation
 * delay (store and forward). Switches are output-queued:
 *   - tail drop when an egress queue would exceed --buffer bytes;
 *   - RED-style ECN on enqueue (the DCQCN paper's marking, Zhu et al. 2015
 *     section 3.1): queue <= KMIN never marks, >= KMAX always, between them
 *     with probability PMAX * (q - KMIN) / (KMAX - KMIN); only ECT frames,
 *     IP ECN set to CE (the ICRC masks the ECN bits, the IPv4 checksum is
 *     patched as RFC 1624 does);
 *   - PFC (802.1Qbb, one priority): bytes buffered per ingress port; above
 *     XOFF the switch pauses the upstream port, below XON resumes it.
 * A leaf-spine fabric routes up by an ECMP hash of the UDP source port (and
 * the addresses), down by the destination address.
 *
 * Links fail (--fail): a link that is down loses every frame it would send
 * and every frame on its wire, both ways. ECMP goes on hashing onto a dead
 * uplink, as a switch does until its routing learns of the failure: with
 * --rehash NS a leaf leaves the dead uplink out of its ECMP group NS after the
 * failure (and a leaf whose destination sits behind a dead spine downlink
 * leaves that spine out for it), hashing over the survivors (modulo their
 * count, so other flows may move too), and takes it back NS after the link
 * is up again. Without --rehash it never does: traffic hashed onto the dead
 * path is lost until the link comes back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define WIRE_OVERHEAD 24u  /* FCS 4 + preamble/SFD 8 + IFG 12 */
#define ETH_LEN 14u
#define IP_OFF ETH_LEN

uint32_t ip_of_host(unsigned h)
{
	return 0x0A000000u | (h + 1);
}

unsigned host_of_ip(uint32_t ip)
{
	return (ip & 0x00FFFFFFu) - 1;
}

struct pkt *pkt_alloc(struct sim *s)
{
	struct pkt *k = s->free_pkts;
	if (k) {
		s->free_pkts = k->next;
		return k;
	}
	return malloc(sizeof(*k));
}

void pkt_free(struct sim *s, struct pkt *k)
{
	k->next = s->free_pkts;
	s->free_pkts = k;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void port_init(struct port *p, struct node *n, unsigned idx, const struct sim_opts *o)
{
	memset(p, 0, sizeof(*p));
	p->node = n;
	p->idx = (uint16_t)idx;
	p->ns_per_byte = 8.0 / o->rate_gbps;
	p->delay = o->delay_ns;
}

static void connect(struct node *a, unsigned pa, struct node *b, unsigned pb)
{
	a->ports[pa].peer = b;
	a->ports[pa].peer_port = (uint16_t)pb;
	b->ports[pb].peer = a;
	b->ports[pb].peer_port = (uint16_t)pa;
}

static int node_init(struct sim *s, struct node *n, enum node_kind k, unsigned id, unsigned nports)
{
	n->kind = k;
	n->id = id;
	n->nports = nports;
	n->sim = s;
	n->ports = calloc(nports, sizeof(*n->ports));
	if (k == NODE_SWITCH) {
		n->in_bytes = calloc(nports, sizeof(*n->in_bytes));
		n->pause_sent = calloc(nports, sizeof(*n->pause_sent));
	}
	if (!n->ports || (k == NODE_SWITCH && (!n->in_bytes || !n->pause_sent)))
		return -ENOMEM;
	for (unsigned i = 0; i < nports; i++)
		port_init(&n->ports[i], n, i, &s->o);
	return 0;
}

int fabric_build(struct sim *s)
{
	const struct sim_opts *o = &s->o;
	unsigned L = o->leaves, S = o->spines, H = o->per_leaf;
	s->nswitches = L ? L + S : 1;
	s->switches = calloc(s->nswitches, sizeof(*s->switches));
	s->hnodes = calloc(s->nhosts, sizeof(*s->hnodes));
	if (!s->switches || !s->hnodes)
		return -ENOMEM;
	for (unsigned h = 0; h < s->nhosts; h++) {
		if (node_init(s, &s->hnodes[h], NODE_HOST, h, 1))
			return -ENOMEM;
		snprintf(s->hnodes[h].ports[0].name, sizeof(s->hnodes[h].ports[0].name), "h%u.up", h);
	}
	if (!L) {
		struct node *sw = &s->switches[0];
		if (node_init(s, sw, NODE_SWITCH, 0, s->nhosts))
			return -ENOMEM;
		for (unsigned h = 0; h < s->nhosts; h++) {
			connect(&s->hnodes[h], 0, sw, h);
			snprintf(sw->ports[h].name, sizeof(sw->ports[h].name), "sw>h%u", h);
		}
		return 0;
	}
	for (unsigned l = 0; l < L; l++) {
		struct node *lf = &s->switches[l];
		if (node_init(s, lf, NODE_SWITCH, l, H + S))
			return -ENOMEM;
		for (unsigned h = 0; h < H; h++) {
			connect(&s->hnodes[l * H + h], 0, lf, h);
			snprintf(lf->ports[h].name, sizeof(lf->ports[h].name), "leaf%u>h%u", l, l * H + h);
		}
	}
	for (unsigned sp = 0; sp < S; sp++) {
		struct node *sn = &s->switches[L + sp];
		if (node_init(s, sn, NODE_SWITCH, L + sp, L))
			return -ENOMEM;
		sn->level = 1;
		for (unsigned l = 0; l < L; l++) {
			connect(&s->switches[l], H + sp, sn, l);
			snprintf(s->switches[l].ports[H + sp].name, sizeof(s->switches[l].ports[H + sp].name),
				 "leaf%u>spine%u", l, sp);
			snprintf(sn->ports[l].name, sizeof(sn->ports[l].name), "spine%u>leaf%u", sp, l);
		}
	}
	return 0;
}

static void free_queue(struct sim *s, struct port *p)
{
	while (p->head) {
		struct pkt *k = p->head;
		p->head = k->next;
		pkt_free(s, k);
	}
}

/* The port of one end of the failing link: the leaf's uplink, or the host's NIC. */
static struct port *fail_port(struct sim *s, const struct sim_fail *f)
{
	if (f->host)
		return &s->hnodes[f->a].ports[0];
	return &s->switches[f->a].ports[s->o.per_leaf + f->b];
}

int fabric_schedule_fails(struct sim *s)
{
	const struct sim_opts *o = &s->o;
	for (unsigned i = 0; i < o->nfails; i++) {
		const struct sim_fail *f = &o->fails[i];
		if (f->host ? f->a >= s->nhosts : !o->leaves || f->a >= o->leaves || f->b >= o->spines) {
			errno = EINVAL;
			return -EINVAL;
		}
		if (!f->host && !s->ecmp_out && o->rehash_ns != UINT64_MAX) {
			s->ecmp_out = calloc((size_t)o->leaves * o->spines, sizeof(*s->ecmp_out));
			if (!s->ecmp_out)
				return -ENOMEM;
		}
		if (evq_push(&s->q, f->down, EV_LINK, (void *)f, NULL, 1) ||
		    (f->up && evq_push(&s->q, f->up, EV_LINK, (void *)f, NULL, 0)))
			return -ENOMEM;
	}
	return 0;
}

void fabric_free(struct sim *s)
{
	free(s->ecmp_out);
	for (unsigned i = 0; i < s->nswitches; i++) {
		for (unsigned j = 0; j < s->switches[i].nports; j++)
			free_queue(s, &s->switches[i].ports[j]);
		free(s->switches[i].ports);
		free(s->switches[i].in_bytes);
		free(s->switches[i].pause_sent);
	}
	for (unsigned i = 0; s->hnodes && i < s->nhosts; i++) {
		free_queue(s, &s->hnodes[i].ports[0]);
		free(s->hnodes[i].ports);
	}
	free(s->switches);
	free(s->hnodes);
	while (s->free_pkts) {
		struct pkt *k = s->free_pkts;
		s->free_pkts = k->next;
		free(k);
	}
}

/* Time-weighted queue depth: the time since the last change at the old depth. */
void port_account(struct sim *s, struct port *p)
{
	if (p->node->kind != NODE_SWITCH)
		return;
	uint64_t dt = s->now - p->q_since;
	unsigned b = (unsigned)(p->qbytes * 256 / (s->o.buffer ? s->o.buffer : 1));
	p->qhist[b > 255 ? 255 : b] += dt;
	p->qhist_n += dt;
	p->q_since = s->now;
}

/* Start the next frame if the port is idle, not paused and has one. */
static void port_kick(struct sim *s, struct port *p)
{
again:
	if (p->busy || p->paused || !p->head)
		return;
	struct pkt *k = p->head;
	p->head = k->next;
	if (!p->head)
		p->tail = NULL;
	port_account(s, p);
	p->qbytes -= k->len;
	p->qpkts--;
	struct node *n = p->node;
	if (n->kind == NODE_SWITCH) {
		uint16_t in = k->in_port;
		n->in_bytes[in] -= k->len;
		if (n->pause_sent[in] && n->in_bytes[in] <= s->o.xon) {
			/* XON to the port feeding this ingress. */
			struct port *in_p = &n->ports[in];
			n->pause_sent[in] = false;
			s->pause_frames++;
			evq_push(&s->q, s->now + in_p->delay, EV_PAUSE,
				 &in_p->peer->ports[in_p->peer_port], NULL, 0);
		}
	}
	if (p->down) {
		/* The frame leaves for a dead link: lost, as is the wire time. */
		s->link_drops++;
		pkt_free(s, k);
		goto again;
	}
	uint64_t ser = (uint64_t)((double)(k->len + WIRE_OVERHEAD) * p->ns_per_byte + 0.5);
	if (!ser)
		ser = 1;
	p->busy = true;
	p->busy_ns += ser;
	p->tx_bytes += k->len;
	p->tx_frames++;
	k->in_port = p->peer_port;
	evq_push(&s->q, s->now + ser, EV_TX_DONE, p, NULL, 0);
	evq_push(&s->q, s->now + ser + p->delay, EV_ARRIVE, p->peer, k, 0);
}

/* RFC 1624: HC' = ~(~HC + ~m + m') for the 16-bit word holding TOS. */
static void set_ce(uint8_t *ip)
{
	uint16_t old = (uint16_t)(ip[0] << 8 | ip[1]);
	ip[1] |= 3u;
	uint16_t neu = (uint16_t)(ip[0] << 8 | ip[1]);
	uint32_t sum = (uint16_t)~(ip[10] << 8 | ip[11]);
	sum += (uint16_t)~old;
	sum += neu;
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	uint16_t hc = (uint16_t)~sum;
	ip[10] = (uint8_t)(hc >> 8);
	ip[11] = (uint8_t)hc;
}

void port_enqueue(struct sim *s, struct port *p, struct pkt *k)
{
	struct node *n = p->node;
	if (n->kind == NODE_SWITCH) {
		if (p->qbytes + k->len > s->o.buffer) {
			p->drops++;
			s->drops++;
			pkt_free(s, k);
			return;
		}
		uint8_t *ip = k->data + IP_OFF;
		if (s->o.kmax && (ip[0] >> 4) == 4 && (ip[1] & 3u) && (ip[1] & 3u) != 3u) {
			bool mark;
			if (p->qbytes <= s->o.kmin)
				mark = false;
			else if (p->qbytes >= s->o.kmax)
				mark = true;
			else
				mark = sim_uniform(s) < s->o.pmax * (double)(p->qbytes - s->o.kmin) /
							 (double)(s->o.kmax - s->o.kmin);
			if (mark) {
				set_ce(ip);
				p->marks++;
				s->ecn_marked++;
			}
		}
		uint16_t in = k->in_port;
		n->in_bytes[in] += k->len;
		if (s->o.xoff && !n->pause_sent[in] && n->in_bytes[in] >= s->o.xoff) {
			struct port *in_p = &n->ports[in];
			n->pause_sent[in] = true;
			s->pause_frames++;
			evq_push(&s->q, s->now + in_p->delay, EV_PAUSE,
				 &in_p->peer->ports[in_p->peer_port], NULL, 1);
		}
	}
	k->next = NULL;
	port_account(s, p);
	if (p->tail)
		p->tail->next = k;
	else
		p->head = k;
	p->tail = k;
	p->qbytes += k->len;
	p->qpkts++;
	if (p->qbytes > p->max_q)
		p->max_q = p->qbytes;
	port_kick(s, p);
}

/* ECMP: a mix of the UDP source port (the entropy RoCEv2 puts there,
 * A17.5.1.1) and the addresses, so flows of different hosts spread too. */
static unsigned ecmp(const struct pkt *k, unsigned n)
{
	const uint8_t *ip = k->data + IP_OFF;
	uint32_t src = rd32(ip + 12), dst = rd32(ip + 16);
	uint32_t sport = (uint32_t)ip[20] << 8 | ip[21];
	uint64_t h = (uint64_t)sport * 0x9E3779B97F4A7C15ULL ^ (uint64_t)src * 0xC2B2AE3D27D4EB4FULL ^
		     (uint64_t)dst * 0x165667B19E3779F9ULL;
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ULL;
	h ^= h >> 32;
	return (unsigned)(h % n);
}

/* The spine a leaf sends @p k up through, toward @p dst_leaf: the ECMP hash
 * over the spines its routing has (every spine unless --rehash took some
 * out; none left: all of them, the frame is lost on its dead link). */
static unsigned up_port(struct sim *s, unsigned leaf, unsigned dst_leaf, const struct pkt *k)
{
	unsigned S = s->o.spines;
	if (!s->ecmp_out)
		return ecmp(k, S);
	unsigned ok[64], n = 0;
	for (unsigned sp = 0; sp < S && n < 64; sp++)
		if (!s->ecmp_out[leaf * S + sp] && !s->ecmp_out[dst_leaf * S + sp])
			ok[n++] = sp;
	return n ? ok[ecmp(k, n)] : ecmp(k, S);
}

static void switch_rx(struct sim *s, struct node *sw, struct pkt *k)
{
	const struct sim_opts *o = &s->o;
	if (k->len < IP_OFF + 20 || (k->data[IP_OFF] >> 4) != 4) {
		pkt_free(s, k); /* the simulator only carries IPv4 RoCEv2 */
		return;
	}
	/* Random loss, once per frame: on the link out of the sending host. */
	if (o->loss > 0 && sw->ports[k->in_port].peer->kind == NODE_HOST && sim_uniform(s) < o->loss) {
		s->random_drops++;
		pkt_free(s, k);
		return;
	}
	unsigned d = host_of_ip(rd32(k->data + IP_OFF + 16));
	if (d >= s->nhosts) {
		pkt_free(s, k);
		return;
	}
	unsigned out;
	if (!o->leaves)
		out = d;
	else if (sw->level == 1)
		out = d / o->per_leaf;
	else if (d / o->per_leaf == sw->id)
		out = d % o->per_leaf;
	else
		out = o->per_leaf + up_port(s, sw->id, d / o->per_leaf, k);
	port_enqueue(s, &sw->ports[out], k);
}

void fabric_event(struct sim *s, const struct event *e)
{
	switch (e->type) {
	case EV_ARRIVE: {
		struct node *n = e->obj;
		if (n->ports[e->pkt->in_port].down) {
			/* It was on the wire when the link went down. */
			s->link_drops++;
			pkt_free(s, e->pkt);
			break;
		}
		if (n->kind == NODE_SWITCH)
			switch_rx(s, n, e->pkt);
		else
			host_deliver(s, n->host, e->pkt);
		break;
	}
	case EV_TX_DONE: {
		struct port *p = e->obj;
		p->busy = false;
		if (p->node->kind == NODE_HOST)
			host_nic_drained(s, p->node->host);
		port_kick(s, p);
		break;
	}
	case EV_PAUSE: {
		struct port *p = e->obj;
		bool xoff = e->arg != 0;
		if (xoff && !p->paused)
			p->paused_since = s->now;
		else if (!xoff && p->paused)
			p->paused_ns += s->now - p->paused_since;
		p->paused = xoff;
		port_kick(s, p);
		break;
	}
	case EV_LINK: {
		const struct sim_fail *f = e->obj;
		struct port *p = fail_port(s, f);
		struct port *q = &p->peer->ports[p->peer_port];
		p->down = q->down = e->arg != 0;
		if (!p->down) {
			port_kick(s, p);
			port_kick(s, q);
		}
		if (s->o.rehash_ns != UINT64_MAX && !f->host)
			evq_push(&s->q, s->now + s->o.rehash_ns, EV_ROUTE, e->obj, NULL, e->arg);
		break;
	}
	case EV_ROUTE: {
		const struct sim_fail *f = e->obj;
		s->ecmp_out[f->a * s->o.spines + f->b] = e->arg != 0;
		break;
	}
	default:
		break;
	}
}
