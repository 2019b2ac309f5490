/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm ids over droce's CM: addresses, listen, connect, accept, reject,
 * disconnect, the QP helpers, and the pump that turns droce's connection
 * events into rdma_cm events (the mapping of Linux's cma_ib_handler: a
 * REQ is CONNECT_REQUEST on a new id; ESTABLISHED; REJECTED with the
 * reason as status; the CM's TIMEOUT is UNREACHABLE with -ETIMEDOUT;
 * DISCONNECTED; TIMEWAIT_EXIT). With the QP attached, as rdma_cm does,
 * the RTU is sent by the CM itself: no CONNECT_RESPONSE.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdmacm/cma.h"

#define PUMP_NS 100000L

static int sa_ip(const struct sockaddr *sa, uint8_t ip[16], uint16_t *port)
{
	memset(ip, 0, 16);
	*port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		memcpy(ip, &s->sin_addr, 4);
		*port = ntohs(s->sin_port);
		return 4;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		memcpy(ip, &s->sin6_addr, 16);
		*port = ntohs(s->sin6_port);
		return 6;
	}
	return 0;
}

static void set_sin(struct sockaddr *sa, const uint8_t ip[4], uint16_t port)
{
	struct sockaddr_in *s = (struct sockaddr_in *)sa;
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	memcpy(&s->sin_addr, ip, 4);
	s->sin_port = htons(port);
}

/* ------------------------------------------------------------ the pump -- */

static struct cma_id *child_of(struct cma_id *l, const struct droce_conn_event *ev)
{
	struct cma_id *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = l->id; /* verbs, channel, context, ps, port_num */
	c->id.qp = NULL;
	c->id.event = NULL;
	c->id.pd = cma.pd; /* the device's, as rdma-core's ucma_process_conn_req */
	c->id.send_cq = c->id.recv_cq = NULL;
	c->id.send_cq_channel = c->id.recv_cq_channel = NULL;
	c->id.srq = NULL;
	if (l->sync) {
		/* a synchronous listener's ids are synchronous: a channel of
		 * their own (rdma-core migrates them to a new one) */
		c->id.channel = rdma_create_event_channel();
		if (!c->id.channel) {
			free(c);
			return NULL;
		}
		c->sync = true;
	}
	c->listener = l;
	c->listen = -1;
	c->conn = ev->conn;
	c->req = *ev;
	c->state = CMA_REQUESTED;
	uint8_t me[4];
	cma.h->local_ip(cma.verbs, me);
	set_sin(&c->id.route.addr.src_addr, me, ev->local_port);
	set_sin(&c->id.route.addr.dst_addr, ev->peer.ip, ev->peer.port);
	((struct cma_channel *)c->id.channel)->n_ids++;
	cma.n_ids++;
	return c;
}

/* One event of droce's CM (mu and the context's lock held). */
static void dispatch(const struct droce_conn_event *ev)
{
	if (getenv("DROCE_RDMACM_DEBUG"))
		fprintf(stderr, "rdmacm: %s conn %d listen %d -> id %p\n", droce_conn_event_str(ev->type),
			ev->conn, ev->listen_id,
			(unsigned)ev->conn < CMA_MAX_CONNS ? (void *)cma.by_conn[ev->conn] : NULL);
	if (ev->type == DROCE_CONN_REQUEST) {
		unsigned li = (unsigned)ev->listen_id;
		struct cma_id *l = li < 2 * CMA_MAX_CONNS ? cma.by_listen[li] : NULL;
		if (!l && li < 2 * CMA_MAX_CONNS && cma.orphan_since[li] && cma.n_held < CMA_HELD) {
			cma.held_at[cma.n_held] = cma.h->now(cma.verbs);
			cma.held[cma.n_held++] = *ev; /* for the port's next listener */
			return;
		}
		struct cma_id *c = l && (unsigned)ev->conn < CMA_MAX_CONNS ? child_of(l, ev) : NULL;
		if (!c) {
			droce_reject(cma.ctx, ev->conn, NULL, 0, cma.h->now(cma.verbs));
			return;
		}
		cma.by_conn[ev->conn] = c;
		cma_post(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, ev);
		return;
	}
	struct cma_id *c = (unsigned)ev->conn < CMA_MAX_CONNS ? cma.by_conn[ev->conn] : NULL;
	if (!c)
		return;
	switch (ev->type) {
	case DROCE_CONN_ESTABLISHED:
		c->state = CMA_CONNECTED;
		/* the active side of a connection without a QP on its id sent
		 * the RTU itself (rdma_establish): rdma_cm reports nothing then */
		if (!(c->no_qp && c->active))
			cma_post(c, RDMA_CM_EVENT_ESTABLISHED, 0, ev);
		return;
	case DROCE_CONN_RESPONSE:
		cma_post(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, ev);
		return;
	case DROCE_CONN_REJECTED:
		cma_post(c, RDMA_CM_EVENT_REJECTED, ev->status, ev);
		break;
	case DROCE_CONN_TIMEOUT:
		cma_post(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
		break;
	case DROCE_CONN_UNREACHABLE:
		cma_post(c, RDMA_CM_EVENT_UNREACHABLE, ev->status, NULL);
		break;
	case DROCE_CONN_ERROR:
		cma_post(c, RDMA_CM_EVENT_CONNECT_ERROR, ev->status, NULL);
		break;
	case DROCE_CONN_DISCONNECTED:
		c->state = CMA_DISCONNECTED;
		cma_post(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		return; /* TIMEWAIT_EXIT follows */
	case DROCE_CONN_TIMEWAIT_EXIT:
		cma_post(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL);
		break;
	case DROCE_CONN_REQUEST:
		return;
	}
	c->conn = -1; /* that was the connection's last event */
	cma.by_conn[ev->conn] = NULL;
}

/* Queue @p c for the pump's address / route step (mu held). */
static void query(struct cma_id *c)
{
	for (struct cma_id *q = cma.queries; q; q = q->next_query)
		if (q == c)
			return;
	c->next_query = cma.queries;
	cma.queries = c;
}

static void unquery(struct cma_id *c)
{
	for (struct cma_id **p = &cma.queries; *p; p = &(*p)->next_query)
		if (*p == c) {
			*p = c->next_query;
			return;
		}
}

/* Held REQs and orphaned listeners past their time: REJ, unlisten (mu and lock held). */
static void expire_orphans(uint64_t now)
{
	for (unsigned i = 0; i < cma.n_held;) {
		if (now - cma.held_at[i] < CMA_ORPHAN_NS) {
			i++;
			continue;
		}
		droce_reject(cma.ctx, cma.held[i].conn, NULL, 0, now);
		cma.held[i] = cma.held[--cma.n_held];
		cma.held_at[i] = cma.held_at[cma.n_held];
	}
	for (unsigned l = 0; l < 2 * CMA_MAX_CONNS; l++)
		if (cma.orphan_since[l] && now - cma.orphan_since[l] >= CMA_ORPHAN_NS) {
			droce_unlisten(cma.ctx, (int)l);
			cma.orphan_since[l] = 0;
		}
}

/* The resolutions under way (mu and the context's lock held). */
static void run_queries(uint64_t now)
{
	for (struct cma_id **p = &cma.queries; *p;) {
		struct cma_id *c = *p;
		int r = 0;
		if (c->state == CMA_ADDR_QUERY) {
			uint8_t ip[16], mac[6];
			uint16_t port;
			sa_ip(&c->id.route.addr.dst_addr, ip, &port);
			r = cma.h->resolve(cma.verbs, 4, ip, mac, now);
			if (r == -EAGAIN && now < c->deadline) {
				p = &c->next_query;
				continue;
			}
			c->state = r ? CMA_BOUND : CMA_ADDR;
			cma_post(c, r ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
				 r == -EAGAIN ? -ETIMEDOUT : r, NULL);
		} else {
			c->state = CMA_ROUTE;
			cma_post(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
		}
		*p = c->next_query;
	}
}

static void *pump_main(void *arg)
{
	struct timespec ts = {0, PUMP_NS};
	for (;;) {
		pthread_mutex_lock(&cma.mu);
		if (cma.stop) {
			pthread_mutex_unlock(&cma.mu);
			return NULL;
		}
		if (!cma.n_ids && !cma.n_held) {
			/* every id gone (and no REQ held for a listener to come): the
			 * application is closing; a poll now could meet a memif peer
			 * that already left (docs/usage.md) */
			pthread_mutex_unlock(&cma.mu);
			nanosleep(&ts, NULL);
			continue;
		}
		cma.h->lock(cma.verbs);
		uint64_t now = cma.h->now(cma.verbs);
		droce_ctx_poll(cma.ctx, now);
		run_queries(now);
		expire_orphans(now);
		struct droce_conn_event ev;
		while (droce_get_cm_event(cma.ctx, &ev) == 1)
			dispatch(&ev);
		cma.h->unlock(cma.verbs);
		pthread_mutex_unlock(&cma.mu);
		nanosleep(&ts, NULL);
	}
}

/* When the library goes (exit, or a dlclose by a program or middleware
 * that unloads its plugins): the pump must not run code of ours once it
 * is unmapped. It ends at its next look (at most one poll); joined with a
 * bound, in case a thread that exits holds mu. DROCE_VERBS_STATS: the
 * counters of the context rdma_cm used (a program such as an MPI rank
 * never closes it), which is how the tests see traffic crossed droce. */
__attribute__((destructor)) static void cma_fini(void)
{
	pthread_mutex_lock(&cma.mu);
	cma.stop = true;
	bool up = cma.pump_up;
	cma.pump_up = false;
	pthread_mutex_unlock(&cma.mu);
	if (up) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 1;
		pthread_timedjoin_np(cma.pump, NULL, &t);
	}
	struct droce_ctx_stats st;
	if (getenv("DROCE_VERBS_STATS") && cma.ctx && !droce_ctx_get_stats(cma.ctx, &st)) {
		struct droce_cm_counters k;
		memset(&k, 0, sizeof(k));
		droce_cm_get_counters(cma.ctx, &k);
		fprintf(stderr, "droce: librdmacm: context rx %llu, tx %llu frames; CM MADs rx %llu, "
			"tx %llu; %u connection ids in use\n",
			(unsigned long long)st.rx_frames, (unsigned long long)st.tx_frames,
			(unsigned long long)k.mads_rx, (unsigned long long)k.mads_tx, k.conns);
	}
}

/* A CM timing variable (docs/rdmacm.md): rdma_cm's defaults (timeout 20,
 * ~4.3 s, 15 retries: a minute before a silent peer is UNREACHABLE) unless
 * set; a bad value is named and ignored. */
static void env_u8(const char *name, unsigned max, uint8_t *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return;
	char *end;
	unsigned long x = strtoul(v, &end, 10);
	if (*end || x > max) {
		fprintf(stderr, "droce: %s=%s is not 0..%u: ignored\n", name, v, max);
		return;
	}
	*out = (uint8_t)x;
}

int cma_device(void)
{
	if (cma.cm_open)
		return 0;
	if (cma.stop)
		return ENODEV;
	cma.h = droce_verbs_cm_hooks();
	/* an open of our own, as rdma-core's librdmacm (ucma_open_device): the
	 * drop-in shares the port with the application's opens */
	if (!cma.verbs) {
		int n = 0;
		struct ibv_device **list = ibv_get_device_list(&n);
		if (!list || n < 1) {
			if (list)
				ibv_free_device_list(list);
			return ENODEV;
		}
		cma.verbs = ibv_open_device(list[0]);
		int e = errno;
		ibv_free_device_list(list);
		if (!cma.verbs)
			return e ? e : ENODEV;
	}
	cma.ctx = cma.h->dctx(cma.verbs);
	if (!cma.ctx)
		return ENODEV;
	if (!cma.pd && !(cma.pd = ibv_alloc_pd(cma.verbs)))
		return errno ? errno : ENOMEM;
	struct droce_cm_conf c;
	droce_cm_conf_init(&c);
	env_u8("DROCE_CM_RESPONSE_TIMEOUT", 31, &c.response_timeout);
	env_u8("DROCE_CM_RETRIES", 15, &c.max_cm_retries);
	c.resolve = cma.h->resolve;
	c.resolve_arg = cma.verbs;
	c.max_conns = CMA_MAX_CONNS;
	c.event_queue = 2 * CMA_MAX_CONNS;
	/* TIMEWAIT of the order of the kernel's (its cm timewait follows the
	 * ACK delay and packet lifetime: a large fraction of a second), not
	 * droce's default few ms: programs such as rping tear down after
	 * DISCONNECTED and do not expect TIMEWAIT_EXIT meanwhile (rping's CM
	 * thread then reads a channel its main thread has destroyed) */
	c.timewait_ns = CMA_TIMEWAIT_NS;
	cma.h->lock(cma.verbs);
	int r = droce_cm_open(cma.ctx, &c);
	cma.h->unlock(cma.verbs);
	if (r)
		return -r;
	cma.cm_open = true;
	if (pthread_create(&cma.pump, NULL, pump_main, NULL) == 0)
		cma.pump_up = true;
	return 0;
}

/* Poll until the CM has handed every queued MAD to QP1 (bounded): a DREQ
 * or REJ queued by rdma_disconnect/reject/destroy_id must leave even when
 * the program exits right after (the lock held). */
static void flush_mads(struct ibv_context *v)
{
	struct droce_cm_counters k;
	for (int i = 0; i < 1000 && !droce_cm_get_counters(cma.ctx, &k) && k.mads_pending; i++)
		droce_ctx_poll(cma.ctx, cma.h->now(v));
	droce_ctx_poll(cma.ctx, cma.h->now(v)); /* and the frames out of the port */
}

/* ----------------------------------------------------------------- ids -- */

CMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	if (!id)
		return cma_fail(EINVAL);
	if (ps != RDMA_PS_TCP)
		return cma_fail(ENOSYS); /* UDP/IB port spaces need SIDR (docs/rdmacm.md) */
	struct cma_id *c = calloc(1, sizeof(*c));
	if (!c)
		return cma_fail(ENOMEM);
	if (!channel) {
		/* a synchronous id (rdma-core's rdma_create_id with no channel):
		 * a channel of its own, each call waits for its event */
		channel = rdma_create_event_channel();
		if (!channel) {
			free(c);
			return -1;
		}
		c->sync = true;
	}
	c->id.channel = channel;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = IBV_QPT_RC;
	c->conn = c->listen = -1;
	pthread_mutex_lock(&cma.mu);
	((struct cma_channel *)channel)->n_ids++;
	cma.n_ids++;
	pthread_mutex_unlock(&cma.mu);
	*id = &c->id;
	return 0;
}

/* The device behind an id from its first address on: id->verbs and the
 * device's PD in id->pd, as rdma-core sets them at bind/resolve (mu held). */
static int attach(struct cma_id *c)
{
	int r = cma_device();
	if (r)
		return r;
	c->id.verbs = cma.verbs;
	if (!c->id.pd)
		c->id.pd = cma.pd;
	c->id.port_num = 1;
	return 0;
}

CMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = (struct cma_id *)id;
	uint8_t ip[16];
	uint16_t port;
	if (!c || !addr || sa_ip(addr, ip, &port) != 4)
		return cma_fail(!c || !addr ? EINVAL : EAFNOSUPPORT);
	pthread_mutex_lock(&cma.mu);
	int r = attach(c);
	uint8_t me[4];
	if (!r) {
		cma.h->local_ip(cma.verbs, me);
		static const uint8_t any[4];
		/* droce0 has one address; a loopback one binds to the device
		 * as the kernel's cma_bind_loopback does (libfabric's verbs
		 * provider binds 127.0.0.1 when given no address) */
		if (memcmp(ip, any, 4) && memcmp(ip, me, 4) && ip[0] != 127)
			r = EADDRNOTAVAIL;
	}
	if (!r && !port) {
		/* port 0: an ephemeral one now, as the kernel's cma_alloc_any_port
		 * (a listener's address is handed to peers: rxm over verbs) */
		if (!cma.next_port)
			cma.next_port = (unsigned)getpid() * 7919u;
		port = (uint16_t)(CMA_EPHEMERAL_LO + cma.next_port++ % CMA_EPHEMERAL_N);
		c->auto_port = true;
	}
	if (!r) {
		set_sin(&id->route.addr.src_addr, me, port);
		c->state = CMA_BOUND;
	}
	pthread_mutex_unlock(&cma.mu);
	return r ? cma_fail(r) : 0;
}

CMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *c = (struct cma_id *)id;
	uint8_t ip[16];
	uint16_t port;
	if (!c || !dst_addr)
		return cma_fail(EINVAL);
	if (sa_ip(dst_addr, ip, &port) != 4)
		return cma_fail(EAFNOSUPPORT);
	if (src_addr && c->state == CMA_IDLE && rdma_bind_addr(id, src_addr))
		return -1;
	pthread_mutex_lock(&cma.mu);
	int r = attach(c);
	if (!r) {
		if (c->state == CMA_IDLE) {
			uint8_t me[4];
			cma.h->local_ip(cma.verbs, me);
			set_sin(&id->route.addr.src_addr, me, 0);
		}
		if (ip[0] == 127) /* loopback: ourselves (the port turns it around) */
			cma.h->local_ip(cma.verbs, ip);
		set_sin(&id->route.addr.dst_addr, ip, port);
		/* ARP on the port, asynchronously as the kernel's rdma_resolve_addr:
		 * the pump asks until the MAC is known (ADDR_RESOLVED) or the
		 * timeout passed (ADDR_ERROR) */
		c->state = CMA_ADDR_QUERY;
		c->deadline = cma.h->now(cma.verbs) +
			      (uint64_t)(timeout_ms > 0 ? timeout_ms : 2000) * 1000000u;
		query(c);
	}
	pthread_mutex_unlock(&cma.mu);
	return r ? cma_fail(r) : cma_complete(c);
}

CMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma.mu);
	int r = c->state == CMA_ADDR ? 0 : EINVAL;
	if (!r) {
		/* RoCE has no path records to ask for: the route is the address,
		 * reported from the pump (asynchronously, as the kernel does) */
		c->state = CMA_ROUTE_QUERY;
		id->route.num_paths = 0;
		query(c);
	}
	pthread_mutex_unlock(&cma.mu);
	return r ? cma_fail(r) : cma_complete(c);
}

CMA_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || c->state != CMA_BOUND)
		return cma_fail(EINVAL);
	uint8_t ip[16];
	uint16_t port;
	sa_ip(&id->route.addr.src_addr, ip, &port);
	pthread_mutex_lock(&cma.mu);
	cma.h->lock(cma.verbs);
	int l = -1;
	for (unsigned i = 0; i < 2 * CMA_MAX_CONNS && l < 0; i++)
		if (cma.orphan_since[i] && cma.orphan_port[i] == port)
			l = (int)i; /* the port's previous listener: adopt it, and its held REQs */
	if (l >= 0) {
		cma.orphan_since[l] = 0;
	} else {
		l = droce_listen(cma.ctx, port);
		/* an ephemeral port someone listens on already: the next one */
		for (unsigned t = 0; l == -EADDRINUSE && c->auto_port && t < 64; t++) {
			port = (uint16_t)(CMA_EPHEMERAL_LO + cma.next_port++ % CMA_EPHEMERAL_N);
			l = droce_listen(cma.ctx, port);
			if (l >= 0)
				((struct sockaddr_in *)&id->route.addr.src_addr)->sin_port = htons(port);
		}
	}
	if (l >= 0 && (unsigned)l < 2 * CMA_MAX_CONNS) {
		c->listen = l;
		c->state = CMA_LISTEN;
		cma.by_listen[l] = c;
		for (unsigned i = 0; i < cma.n_held;) {
			if (cma.held[i].listen_id != l) {
				i++;
				continue;
			}
			struct droce_conn_event ev = cma.held[i];
			cma.held[i] = cma.held[--cma.n_held];
			cma.held_at[i] = cma.held_at[cma.n_held];
			dispatch(&ev);
		}
	}
	cma.h->unlock(cma.verbs);
	pthread_mutex_unlock(&cma.mu);
	return l < 0 ? cma_fail(-l) : 0;
}

static void conn_param(const struct rdma_conn_param *in, struct droce_conn_param *out)
{
	droce_conn_param_init(out);
	if (!in)
		return;
	out->private_data = in->private_data;
	out->private_data_len = in->private_data_len;
	out->responder_resources = in->responder_resources > 16 ? 16 : in->responder_resources;
	out->initiator_depth = in->initiator_depth > 16 ? 16 : in->initiator_depth;
	out->retry_count = in->retry_count > 7 ? 7 : in->retry_count;
	out->rnr_retry_count = in->rnr_retry_count > 7 ? 7 : in->rnr_retry_count;
	out->qp_num = in->qp_num;
}

CMA_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || c->state != CMA_ROUTE)
		return cma_fail(EINVAL);
	struct droce_qp *dqp = id->qp ? cma.h->dqp(id->qp) : NULL;
	if (id->qp && !dqp)
		return cma_fail(EINVAL); /* a QP of another device */
	/* no QP on the id: the REQ names conn_param.qp_num, the application
	 * moves its QP itself (CONNECT_RESPONSE, rdma_init_qp_attr, rdma_establish) */
	if (!dqp && (!param || !param->qp_num))
		return cma_fail(EINVAL);
	struct droce_addr dst = {.ip_version = 4};
	sa_ip(&id->route.addr.dst_addr, dst.ip, &dst.port);
	struct droce_conn_param cp;
	conn_param(param, &cp);
	struct ibv_port_attr pa;
	if (ibv_query_port(id->verbs, 1, &pa) == 0 && pa.active_mtu)
		cp.path_mtu = (uint8_t)pa.active_mtu;
	uint16_t sport;
	uint8_t sip[16];
	sa_ip(&id->route.addr.src_addr, sip, &sport);
	cp.src_port = sport;
	pthread_mutex_lock(&cma.mu);
	cma.h->lock(id->verbs);
	uint64_t now = cma.h->now(id->verbs);
	int r = dqp ? droce_connect(dqp, &dst, &cp, now) : droce_connect_qpn(cma.ctx, &dst, &cp, now);
	cma.h->unlock(id->verbs);
	if (r >= 0) {
		c->conn = r;
		c->state = CMA_CONNECTING;
		c->no_qp = !dqp;
		c->active = true;
		cma.by_conn[r] = c;
	}
	pthread_mutex_unlock(&cma.mu);
	return r < 0 ? cma_fail(-r) : cma_complete(c);
}

CMA_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || c->state != CMA_REQUESTED || c->conn < 0)
		return cma_fail(EINVAL);
	struct droce_qp *dqp = id->qp ? cma.h->dqp(id->qp) : NULL;
	if ((id->qp && !dqp) || (!dqp && (!param || !param->qp_num)))
		return cma_fail(EINVAL);
	struct droce_conn_param cp;
	conn_param(param, &cp);
	pthread_mutex_lock(&cma.mu);
	cma.h->lock(id->verbs);
	int r = droce_accept(cma.ctx, c->conn, dqp, &cp, cma.h->now(id->verbs));
	cma.h->unlock(id->verbs);
	if (!r) {
		c->state = CMA_ACCEPTED;
		c->no_qp = !dqp;
	}
	pthread_mutex_unlock(&cma.mu);
	return r ? cma_fail(-r) : cma_complete(c);
}

CMA_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t len)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || c->state != CMA_REQUESTED || c->conn < 0)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma.mu);
	cma.h->lock(id->verbs);
	int r = droce_reject(cma.ctx, c->conn, private_data, len, cma.h->now(id->verbs));
	flush_mads(id->verbs);
	cma.h->unlock(id->verbs);
	cma.by_conn[c->conn] = NULL;
	c->conn = -1;
	c->state = CMA_DISCONNECTED;
	pthread_mutex_unlock(&cma.mu);
	return r ? cma_fail(-r) : 0;
}

CMA_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || c->conn < 0)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma.mu);
	cma.h->lock(id->verbs);
	int r = droce_disconnect(cma.ctx, c->conn, cma.h->now(id->verbs));
	flush_mads(id->verbs);
	cma.h->unlock(id->verbs);
	pthread_mutex_unlock(&cma.mu);
	/* a disconnect already under way, or the peer's DREQ first: as the kernel, not an error */
	if (r && r != -EBADFD)
		return cma_fail(-r);
	/* a synchronous id waits for its DISCONNECTED (rdma-core's ucma_complete) */
	return r ? 0 : cma_complete(c);
}

CMA_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	/* only for a connection without a QP on the id (rdma-core: EINVAL
	 * with one, whose RTU went when the REP arrived): the RTU, after the
	 * application moved its QP on CONNECT_RESPONSE */
	struct cma_id *c = (struct cma_id *)id;
	if (!c || id->qp || !c->no_qp || !c->active || c->conn < 0)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma.mu);
	cma.h->lock(id->verbs);
	int r = droce_conn_establish(cma.ctx, c->conn, cma.h->now(id->verbs));
	flush_mads(id->verbs);
	cma.h->unlock(id->verbs);
	if (!r)
		c->state = CMA_CONNECTED;
	pthread_mutex_unlock(&cma.mu);
	return r ? cma_fail(-r) : 0;
}

/* Forget @p c's connection, with a REJ or DREQ if the peer still waits
 * (mu held). */
static void drop_conn(struct cma_id *c)
{
	if (c->conn < 0 || (unsigned)c->conn >= CMA_MAX_CONNS || cma.by_conn[c->conn] != c)
		return;
	cma.h->lock(cma.verbs);
	uint64_t now = cma.h->now(cma.verbs);
	if (c->state == CMA_REQUESTED)
		droce_reject(cma.ctx, c->conn, NULL, 0, now);
	else if (c->state == CMA_CONNECTED || c->state == CMA_ACCEPTED)
		droce_disconnect(cma.ctx, c->conn, now);
	flush_mads(cma.verbs);
	cma.h->unlock(cma.verbs);
	cma.by_conn[c->conn] = NULL;
	c->conn = -1;
}

/* Free an id the application never saw, with its channel if its own (mu held). */
static void free_unseen(struct cma_id *c)
{
	drop_conn(c);
	struct cma_channel *ch = (struct cma_channel *)c->id.channel;
	ch->n_ids--;
	cma.n_ids--;
	if (c->sync) {
		close(ch->ch.fd);
		free(ch);
	}
	free(c);
}

CMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c)
		return cma_fail(EINVAL);
	if (id->event) {
		rdma_ack_cm_event(id->event); /* a synchronous id's last */
		id->event = NULL;
	}
	pthread_mutex_lock(&cma.mu);
	drop_conn(c);
	unquery(c);
	if (c->listen >= 0) {
		uint8_t ip[16];
		sa_ip(&id->route.addr.src_addr, ip, &cma.orphan_port[c->listen]);
		cma.orphan_since[c->listen] = cma.h->now(id->verbs) | 1;
		cma.by_listen[c->listen] = NULL;
	}
	/* events of this id still queued: drop them. A CONNECT_REQUEST a
	 * listener never handed out must not leak its new id and keep the
	 * peer waiting: the REQ is held for the port's next listener like
	 * one that arrives after this (at most CMA_ORPHAN_NS, then REJ), or
	 * rejected now when no room is left (the kernel's ucma destroys such
	 * ids, which rejects them) */
	struct cma_channel *ch = (struct cma_channel *)id->channel;
	for (struct cma_event **p = &ch->head; *p;) {
		struct cma_event *e = *p;
		bool req = e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id == id;
		if (e->ev.id != id && !req) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		if (req) {
			struct cma_id *child = (struct cma_id *)e->ev.id;
			if (c->listen >= 0 && cma.n_held < CMA_HELD && child->conn >= 0) {
				cma.held_at[cma.n_held] = cma.h->now(cma.verbs);
				cma.held[cma.n_held++] = child->req;
				cma.by_conn[child->conn] = NULL;
				child->conn = -1;
			}
			free_unseen(child);
		}
		free(e);
	}
	ch->tail = NULL;
	for (struct cma_event *e = ch->head; e; e = e->next)
		ch->tail = e;
	/* As rdma-core's: an event of this id that the application holds
	 * (another thread handling it: rping's CM thread reads event->id's
	 * context while its main thread destroys the id at exit) is acked
	 * before the id goes; freed now, the handler read freed memory. */
	while (c->events_out)
		pthread_cond_wait(&cma.acked, &cma.mu);
	ch->n_ids--;
	cma.n_ids--;
	free(c->ep_attr);
	pthread_mutex_unlock(&cma.mu);
	if (c->sync)
		rdma_destroy_event_channel(id->channel);
	free(c);
	return 0;
}

CMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? ((struct sockaddr_in *)&id->route.addr.src_addr)->sin_port : 0;
}

CMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? ((struct sockaddr_in *)&id->route.addr.dst_addr)->sin_port : 0;
}
