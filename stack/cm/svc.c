/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM service of a context: open/close, and the poll droce_ctx_poll()
 * runs (model/service.h): MADs that arrived go to the CM, its timers run,
 * its events become QP transitions and public events (svc_conn.c), and
 * the MADs it wants sent go to the datagram path. Nothing blocks; a MAD
 * the path cannot take now is held and offered again on the next poll
 * (the CM's own retries cover a MAD that is lost after all).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <droce/droce.h>

#include "cm/svc.h"
#include "model/model.h"
#include "model/service.h"

#define SVC_RESOLVE_RETRY_NS 1000000u /* ask the resolver again every 1 ms */

static const char *const ev_names[] = {
	[DROCE_CONN_REQUEST] = "REQUEST",
	[DROCE_CONN_ESTABLISHED] = "ESTABLISHED",
	[DROCE_CONN_REJECTED] = "REJECTED",
	[DROCE_CONN_DISCONNECTED] = "DISCONNECTED",
	[DROCE_CONN_TIMEOUT] = "TIMEOUT",
	[DROCE_CONN_UNREACHABLE] = "UNREACHABLE",
	[DROCE_CONN_ERROR] = "ERROR",
	[DROCE_CONN_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	[DROCE_CONN_RESPONSE] = "RESPONSE",
};

const char *droce_conn_event_str(enum droce_conn_event_type t)
{
	return (unsigned)t < sizeof(ev_names) / sizeof(ev_names[0]) && ev_names[t] ? ev_names[t]
										 : "UNKNOWN";
}

void droce_cm_conf_init(struct droce_cm_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->resolve_timeout_ns = 2000000000ull; /* rping's rdma_resolve_addr timeout */
	c->accept_resolve_timeout_ns = 500000000ull;
	c->max_conns = 64;
	c->event_queue = 64;
	c->response_timeout = 20;
	c->max_cm_retries = 15;
	c->transport_max = DROCE_TRANSPORT_SR_SPRAY;
}

void droce_conn_param_init(struct droce_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = DROCE_DEFAULT_MAX_RD_ATOMIC;
	p->initiator_depth = DROCE_DEFAULT_MAX_RD_ATOMIC;
	p->retry_count = DROCE_DEFAULT_RETRY_CNT;
	p->rnr_retry_count = DROCE_DEFAULT_RNR_RETRY;
	p->path_mtu = DROCE_MTU_1024;
	p->ack_timeout = DROCE_DEFAULT_TIMEOUT;
}

static unsigned svc_poll(void *arg, uint64_t now);

struct droce_cm_svc *droce_cm_svc_of(const struct droce_ctx *ctx)
{
	return droce_ctx_service_arg(ctx, svc_poll);
}

void droce_svc_push_event(struct droce_cm_svc *s, const struct droce_conn_event *ev)
{
	if (s->ev_len == s->conf.event_queue) {
		s->cnt.events_lost++;
		return;
	}
	s->evq[(s->ev_head + s->ev_len++) % s->conf.event_queue] = *ev;
}

static bool same_dst(const struct droce_cm_addr *a, const struct droce_cm_addr *b)
{
	return a->ip_version == b->ip_version && memcmp(a->ip, b->ip, a->ip_version == 4 ? 4 : 16) == 0;
}

static struct svc_park *park_of(struct droce_cm_svc *s, const struct droce_cm_addr *dst)
{
	for (unsigned i = 0; i < SVC_PARK_DESTS; i++)
		if (s->park[i].since && same_dst(&s->park[i].dst, dst))
			return &s->park[i];
	return NULL;
}

static void park_drop(struct droce_cm_svc *s, struct svc_park *pk)
{
	s->cnt.mad_park_drop += pk->len;
	s->parked -= pk->len;
	pk->since = 0;
	pk->len = pk->head = 0;
}

/* Park @p o behind its destination's other MADs. A full park drops the
 * destination that has waited longest (a MAC that answers comes within
 * milliseconds; the oldest is the likeliest never to). */
static void park_add(struct droce_cm_svc *s, const struct droce_cm_out *o, uint64_t now)
{
	struct svc_park *pk = park_of(s, &o->dst);
	if (!pk) {
		struct svc_park *oldest = &s->park[0];
		for (unsigned i = 0; i < SVC_PARK_DESTS && !pk; i++) {
			if (!s->park[i].since)
				pk = &s->park[i];
			else if (s->park[i].since < oldest->since)
				oldest = &s->park[i];
		}
		if (!pk) {
			park_drop(s, oldest);
			pk = oldest;
		}
		pk->dst = o->dst;
		pk->since = now ? now : 1;
	}
	if (pk->len == SVC_PARK_MADS) { /* the CM's retries resend what matters */
		s->cnt.mad_park_drop++;
		return;
	}
	pk->q[(pk->head + pk->len++) % SVC_PARK_MADS] = *o;
	s->parked++;
}

/* One MAD to the path. @return 0 (sent or dropped, counted), -EAGAIN (no
 * room: try again next poll), -EINPROGRESS (its MAC is being resolved). */
static int send_one(struct droce_cm_svc *s, const struct droce_cm_out *o, uint64_t now)
{
	int r = s->path.ops->send(s->path.priv, o, now);
	if (r == -EAGAIN || r == -EINPROGRESS)
		return r;
	if (r)
		s->cnt.mad_tx_drop++;
	else
		s->cnt.mads_tx++;
	return 0;
}

/* The parked MADs whose MAC came, oldest first per destination; the ones
 * that waited resolve_timeout_ns are dropped (the CM resends). */
static int send_parked(struct droce_cm_svc *s, uint64_t now, unsigned *n)
{
	for (unsigned i = 0; i < SVC_PARK_DESTS && s->parked; i++) {
		struct svc_park *pk = &s->park[i];
		while (pk->since && pk->len) {
			int r = send_one(s, &pk->q[pk->head], now);
			if (r == -EAGAIN)
				return r;
			if (r == -EINPROGRESS) {
				if (now - pk->since >= s->conf.resolve_timeout_ns)
					park_drop(s, pk);
				break;
			}
			pk->head = (pk->head + 1) % SVC_PARK_MADS;
			pk->len--;
			s->parked--;
			(*n)++;
		}
		if (pk->since && !pk->len)
			pk->since = 0;
	}
	return 0;
}

/* The MADs the CM wants sent, oldest first per destination: a MAD whose
 * MAC is being resolved is parked with its destination's (order kept per
 * destination) and the others go on; the one the path refuses for want of
 * room is held until it takes it. */
/* Whether @p o waits behind MADs parked for its destination (a MAD that
 * names its link address needs no resolution and waits for nobody). */
static bool behind_park(struct droce_cm_svc *s, const struct droce_cm_out *o)
{
	return s->parked && !o->has_dst_hw && park_of(s, &o->dst);
}

static unsigned send_mads(struct droce_cm_svc *s, uint64_t now)
{
	unsigned n = 0;
	if (s->have_held) {
		int r = behind_park(s, &s->held) ? -EINPROGRESS : send_one(s, &s->held, now);
		if (r == -EAGAIN)
			return n;
		if (r == -EINPROGRESS)
			park_add(s, &s->held, now);
		s->have_held = false;
		n++;
	}
	if (send_parked(s, now, &n) == -EAGAIN)
		return n;
	while (droce_cm_pop_mad(s->cm, &s->held)) {
		int r = behind_park(s, &s->held) ? -EINPROGRESS : send_one(s, &s->held, now);
		if (r == -EAGAIN) {
			s->have_held = true;
			return n;
		}
		if (r == -EINPROGRESS)
			park_add(s, &s->held, now);
		n++;
	}
	return n;
}

static unsigned svc_poll(void *arg, uint64_t now)
{
	struct droce_cm_svc *s = arg;
	unsigned n = 0;
	struct droce_mad_in in;
	s->last_poll = now;
	while (s->path.ops->recv(s->path.priv, &in, now) == 1) {
		s->cnt.mads_rx++;
		enum droce_cm_rx r = droce_cm_input_hw(s->cm, now, &in.src, in.has_src_hw ? in.src_hw : NULL,
						       in.qkey, in.mad, in.len);
		if (r != DROCE_CM_RX_OK)
			s->cnt.mads_bad++;
		if (r == DROCE_CM_RX_RATE_LIMITED)
			s->cnt.reqs_limited++;
		n++;
	}
	if (droce_cm_next_timer(s->cm) <= now)
		droce_cm_poll(s->cm, now);
	if (s->resolving)
		droce_svc_resolve_pending(s, now);
	if (s->accepting)
		droce_svc_comm_est(s, now);
	struct droce_cm_event ev;
	while (droce_cm_pop_event(s->cm, &ev) == 1) {
		droce_svc_on_cm_event(s, &ev, now);
		n++;
	}
	n += send_mads(s, now);
	s->cnt.retransmits = droce_cm_stats(s->cm)->retransmits;
	s->cnt.evicted = droce_cm_stats(s->cm)->evicted;
	return n;
}

static uint64_t svc_next(const void *arg)
{
	const struct droce_cm_svc *s = arg;
	if (s->have_held || droce_cm_mads_queued(s->cm))
		return 0; /* MADs wait (for room, or for the poll after a call): at once */
	uint64_t t = droce_cm_next_timer(s->cm);
	if ((s->resolving || s->parked) && s->last_poll + SVC_RESOLVE_RETRY_NS < t)
		t = s->last_poll + SVC_RESOLVE_RETRY_NS;
	return t;
}

static void svc_free(struct droce_cm_svc *s)
{
	if (!s)
		return;
	if (s->path.ops && s->path.ops->close)
		s->path.ops->close(s->path.priv);
	droce_cm_destroy(s->cm);
	free(s->park);
	free(s->conns);
	free(s->by_cm_id);
	free(s->evq);
	free(s);
}

static void svc_destroy(void *arg)
{
	struct droce_cm_svc *s = arg;
	droce_ctx_set_service(s->ctx, NULL);
	svc_free(s);
}

/* A EUI-64 from the MAC (ff:fe in the middle, the U/L bit flipped), as rxe
 * and mlx4 derive their node GUID. */
static uint64_t guid_from_mac(const uint8_t m[6])
{
	uint8_t g[8] = {(uint8_t)(m[0] ^ 2), m[1], m[2], 0xFF, 0xFE, m[3], m[4], m[5]};
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | g[i];
	return v;
}

int droce_cm_open_path(struct droce_ctx *ctx, const struct droce_cm_conf *c,
		       struct droce_mad_path path)
{
	struct droce_cm_svc *s = NULL;
	int r = -EINVAL;
	if (!ctx || !c || !c->resolve || c->max_cm_retries > 15 || c->response_timeout > 31 ||
	    c->max_peer_timeout > 31 || c->transport_max > DROCE_TRANSPORT_SR_SPRAY ||
	    !path.ops || !path.ops->send || !path.ops->recv)
		goto fail;
	r = -EEXIST;
	if (ctx->svc.poll)
		goto fail;
	r = -ENOMEM;
	if (!(s = calloc(1, sizeof(*s))))
		goto fail;
	s->ctx = ctx;
	s->path = path;
	s->conf = *c;
	struct droce_cm_conf def;
	droce_cm_conf_init(&def);
	if (!s->conf.max_conns)
		s->conf.max_conns = def.max_conns;
	if (!s->conf.event_queue)
		s->conf.event_queue = def.event_queue;
	if (!s->conf.resolve_timeout_ns)
		s->conf.resolve_timeout_ns = def.resolve_timeout_ns;
	if (!s->conf.accept_resolve_timeout_ns)
		s->conf.accept_resolve_timeout_ns = def.accept_resolve_timeout_ns;
	s->local.ip_version = ctx->p.ip_version;
	memcpy(s->local.ip, ctx->p.ip, 16);

	struct droce_cm_params cp;
	memset(&cp, 0, sizeof(cp));
	cp.local = s->local;
	cp.ca_guid = guid_from_mac(ctx->p.mac);
	cp.seed = c->seed; /* 0: getrandom(); never derived from the MAC a spoofer reads */
	/* listeners + connections, and as many again in TIMEWAIT */
	s->n_cm_ids = 2 * s->conf.max_conns;
	cp.max_ids = s->n_cm_ids;
	cp.mad_queue = 2 * s->conf.max_conns;
	cp.event_queue = 2 * s->conf.max_conns;
	cp.response_timeout = c->response_timeout;
	cp.max_cm_retries = c->max_cm_retries;
	cp.timewait_ns = c->timewait_ns;
	/* of the connection slots, a quarter stays for our own connects and
	 * established peers whatever a flood of REQs does, and one source
	 * holds at most half */
	cp.max_half_open = c->max_half_open ? c->max_half_open : (s->conf.max_conns * 3 + 3) / 4;
	cp.max_per_source = c->max_per_source ? c->max_per_source : (s->conf.max_conns + 1) / 2;
	cp.max_peer_timeout = c->max_peer_timeout;
	s->cm = droce_cm_create(&cp);
	s->park = calloc(SVC_PARK_DESTS, sizeof(*s->park));
	s->conns = calloc(s->conf.max_conns, sizeof(*s->conns));
	s->by_cm_id = malloc(s->n_cm_ids * sizeof(*s->by_cm_id));
	s->evq = calloc(s->conf.event_queue, sizeof(*s->evq));
	if (!s->cm || !s->park || !s->conns || !s->by_cm_id || !s->evq)
		goto fail;
	for (unsigned i = 0; i < s->n_cm_ids; i++)
		s->by_cm_id[i] = -1;
	struct droce_ctx_service hook = {
		.poll = svc_poll, .next_deadline = svc_next, .destroy = svc_destroy, .arg = s};
	r = droce_ctx_set_service(ctx, &hook);
	if (r)
		goto fail;
	return 0;
fail:
	if (s)
		svc_free(s);
	else if (path.ops && path.ops->close)
		path.ops->close(path.priv);
	return r;
}

int droce_cm_close(struct droce_ctx *ctx)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	if (!s)
		return -EINVAL;
	svc_destroy(s);
	return 0;
}

int droce_listen(struct droce_ctx *ctx, uint16_t port)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	if (!s)
		return -EINVAL;
	return droce_cm_listen(s->cm, port);
}

int droce_unlisten(struct droce_ctx *ctx, int listen_id)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	return s ? droce_cm_unlisten(s->cm, listen_id) : -EINVAL;
}

int droce_get_cm_event(struct droce_ctx *ctx, struct droce_conn_event *ev)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	if (!s || !ev)
		return -EINVAL;
	if (!s->ev_len)
		return 0;
	*ev = s->evq[s->ev_head];
	s->ev_head = (s->ev_head + 1) % s->conf.event_queue;
	s->ev_len--;
	return 1;
}

int droce_cm_get_counters(const struct droce_ctx *ctx, struct droce_cm_counters *out)
{
	const struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	if (!s || !out)
		return -EINVAL;
	*out = s->cnt;
	out->retransmits = droce_cm_stats(s->cm)->retransmits;
	out->evicted = droce_cm_stats(s->cm)->evicted;
	out->mads_pending = droce_cm_mads_queued(s->cm) + s->have_held + s->parked;
	out->conns = 0;
	for (unsigned i = 0; i < s->conf.max_conns; i++)
		out->conns += s->conns[i].state != SVC_FREE;
	return 0;
}
