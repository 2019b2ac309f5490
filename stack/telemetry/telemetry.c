/* SPDX-License-Identifier: BSD-3-Clause */
/* droce's commands on DPDK's telemetry socket (telemetry.h). */
#include "telemetry/telemetry.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "net/port/port.h"

/* The QPs one snapshot keeps (a telemetry array holds 512 entries; the
 * counts say how many there are in all). */
#define SNAP_QPS 512u

struct qp_snap {
	uint32_t qpn;
	struct droce_qp_stats st;
	char cc[16];
};

struct snap {
	uint64_t at;              /* the poll thread's now when taken */
	struct droce_ctx_stats ctx;
	bool has_port;
	struct droce_port_stats port;
	bool has_loop;
	struct droce_poller_stats loop;
	uint64_t busy_pct;        /* busy share of the loop since the previous snapshot */
	unsigned nqps_all, nqps;
	struct qp_snap qps[SNAP_QPS];
};

struct droce_telemetry {
	uint64_t next;            /* poll thread only: when to publish again */
	struct droce_ctx *ctx;
	struct droce_port *port;
	const struct droce_poller *poller;
	uint64_t prev_busy, prev_idle; /* poll thread only: the loop at the previous snapshot */
	struct droce_qp **scratch;/* poll thread only: droce_ctx_qps() */
	unsigned scratch_n;
	char name[32];
	struct snap *work;        /* poll thread only: filled, then swapped in */
	struct snap *pub;         /* under tel_reg.lock; NULL until the first publish */
	struct snap *spare;       /* the second buffer, until the first publish takes it */
	struct droce_telemetry *next_t;
};

/* The process's telemetry: DPDK's commands are process-wide, so are the
 * contexts they answer for. */
static struct {
	pthread_mutex_t lock;
	bool registered;
	struct droce_telemetry *head;
} tel_reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void take(struct droce_telemetry *t, struct snap *s, uint64_t now)
{
	s->at = now;
	droce_ctx_get_stats(t->ctx, &s->ctx);
	s->has_port = t->port && droce_port_get_stats(t->port, &s->port) == 0;
	s->has_loop = t->poller && droce_poller_get_stats(t->poller, &s->loop) == 0;
	if (s->has_loop) {
		/* The share of a recent window, as DPDK's lcore busyness: what
		 * an operator watching a core wants, not the run's average. */
		uint64_t db = s->loop.busy_ns - t->prev_busy, di = s->loop.idle_ns - t->prev_idle;
		s->busy_pct = db + di ? (db * 100 + (db + di) / 2) / (db + di) : 0;
		t->prev_busy = s->loop.busy_ns;
		t->prev_idle = s->loop.idle_ns;
	}
	unsigned n = droce_ctx_qps(t->ctx, NULL, 0);
	if (n > t->scratch_n) {
		struct droce_qp **q = realloc(t->scratch, (size_t)n * sizeof(*q));
		if (q) {
			t->scratch = q;
			t->scratch_n = n;
		}
	}
	unsigned got = droce_ctx_qps(t->ctx, t->scratch, t->scratch_n);
	s->nqps_all = n;
	s->nqps = 0;
	for (unsigned i = 0; i < got && s->nqps < SNAP_QPS; i++) {
		struct qp_snap *q = &s->qps[s->nqps++];
		q->qpn = droce_qp_num(t->scratch[i]);
		droce_qp_get_stats(t->scratch[i], &q->st);
		snprintf(q->cc, sizeof(q->cc), "%s", droce_qp_cc_name(t->scratch[i]));
	}
}

void droce_telemetry_publish(struct droce_telemetry *t, uint64_t now)
{
	if (!t || now < t->next)
		return;
	t->next = now + DROCE_TELEMETRY_INTERVAL_NS;
	take(t, t->work, now);
	pthread_mutex_lock(&tel_reg.lock);
	struct snap *old = t->pub;
	t->pub = t->work;
	t->work = old ? old : t->spare;
	t->spare = NULL;
	pthread_mutex_unlock(&tel_reg.lock);
}

/* The context a command names (",NAME"), or the first; under tel_reg.lock. */
static struct droce_telemetry *find(const char *params, const char **rest)
{
	*rest = NULL;
	char name[32] = "";
	if (params && *params >= '0' && *params <= '9' && !strchr(params, ',')) {
		*rest = params; /* "QPN" alone: of the first context (names start with a letter) */
	} else if (params && *params) {
		const char *comma = strchr(params, ',');
		size_t n = comma ? (size_t)(comma - params) : strlen(params);
		if (n >= sizeof(name))
			return NULL;
		memcpy(name, params, n);
		name[n] = 0;
		*rest = comma ? comma + 1 : NULL;
	}
	for (struct droce_telemetry *t = tel_reg.head; t; t = t->next_t)
		if (!name[0] || !strcmp(name, t->name))
			return t;
	return NULL;
}

/* The snapshot of the context @p params names, copied out of the lock:
 * a command never holds it while it formats. @return 0, or -EINVAL. */
static int snapshot_of(const char *params, struct snap *out, char *name, const char **rest)
{
	pthread_mutex_lock(&tel_reg.lock);
	struct droce_telemetry *t = find(params, rest);
	if (t && t->pub) {
		*out = *t->pub;
		snprintf(name, 32, "%s", t->name);
	}
	bool ok = t && t->pub;
	pthread_mutex_unlock(&tel_reg.lock);
	return ok ? 0 : -EINVAL;
}

static int body_ctx(const struct snap *s, const char *name, const char *rest, struct rte_tel_data *d)
{
	(void)rest;
	(void)name;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", name);
	rte_tel_data_add_dict_u64(d, "at_ns", s->at);
	rte_tel_data_add_dict_u64(d, "rx_frames", s->ctx.rx_frames);
	rte_tel_data_add_dict_u64(d, "tx_frames", s->ctx.tx_frames);
	rte_tel_data_add_dict_u64(d, "tx_busy", s->ctx.tx_busy);
	rte_tel_data_add_dict_u64(d, "not_roce", s->ctx.not_roce);
	rte_tel_data_add_dict_u64(d, "qps", s->nqps_all);
	if (s->has_loop) {
		rte_tel_data_add_dict_string(d, "idle_policy", droce_idle_mode_name(s->loop.idle));
		rte_tel_data_add_dict_u64(d, "busy_pct", s->busy_pct);
		rte_tel_data_add_dict_u64(d, "busy_ns", s->loop.busy_ns);
		rte_tel_data_add_dict_u64(d, "idle_ns", s->loop.idle_ns);
		rte_tel_data_add_dict_u64(d, "busy_polls", s->loop.busy_polls);
		rte_tel_data_add_dict_u64(d, "idle_polls", s->loop.idle_polls);
		rte_tel_data_add_dict_u64(d, "sleeps", s->loop.sleeps);
	}
	struct rte_tel_data *drops = rte_tel_data_alloc();
	if (drops) {
		rte_tel_data_start_dict(drops);
		for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++) {
			const char *n = droce_drop_reason_name(i);
			if (!n)
				break;
			if (s->ctx.drop[i])
				rte_tel_data_add_dict_u64(drops, n, s->ctx.drop[i]);
		}
		rte_tel_data_add_dict_container(d, "drops", drops, 0);
	}
	return 0;
}

static int body_qp_list(const struct snap *s, const char *name, const char *rest, struct rte_tel_data *d)
{
	(void)rest;
	(void)name;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "count", s->nqps_all);
	struct rte_tel_data *a = rte_tel_data_alloc();
	if (a) {
		rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
		for (unsigned i = 0; i < s->nqps; i++)
			rte_tel_data_add_array_u64(a, s->qps[i].qpn);
		rte_tel_data_add_dict_container(d, "qpns", a, 0);
	}
	return 0;
}

static void qp_dict(struct rte_tel_data *d, const struct qp_snap *q)
{
	const struct droce_qp_stats *st = &q->st;
	rte_tel_data_add_dict_u64(d, "qpn", q->qpn);
	rte_tel_data_add_dict_string(d, "state", droce_qp_state_str((enum droce_qp_state)st->qp_state));
	rte_tel_data_add_dict_u64(d, "psn_next", st->psn_next);
	rte_tel_data_add_dict_u64(d, "psn_una", st->psn_una);
	rte_tel_data_add_dict_u64(d, "psn_expected", st->psn_expected);
	rte_tel_data_add_dict_u64(d, "tx_pkts", st->tx_pkts);
	rte_tel_data_add_dict_u64(d, "tx_bytes", st->tx_bytes);
	rte_tel_data_add_dict_u64(d, "rx_pkts", st->rx_pkts);
	rte_tel_data_add_dict_u64(d, "rx_bytes", st->rx_bytes);
	rte_tel_data_add_dict_u64(d, "retrans_pkts", st->retrans_pkts);
	rte_tel_data_add_dict_u64(d, "retrans_timeout", st->retrans_timeout);
	rte_tel_data_add_dict_u64(d, "retrans_nak", st->retrans_nak);
	rte_tel_data_add_dict_u64(d, "rnr_nak_sent", st->rnr_nak_sent);
	rte_tel_data_add_dict_u64(d, "rnr_nak_rcvd", st->rnr_nak_rcvd);
	rte_tel_data_add_dict_u64(d, "drops", st->drops);
	rte_tel_data_add_dict_u64(d, "rtt_min_ns", st->rtt_min_ns);
	rte_tel_data_add_dict_u64(d, "rtt_srtt_ns", st->rtt_srtt_ns);
	rte_tel_data_add_dict_u64(d, "rto_ns", st->rto_ns);
	rte_tel_data_add_dict_u64(d, "window_bytes", st->window_bytes);
	rte_tel_data_add_dict_u64(d, "cc_rate_mbps", st->cc_rate_mbps);
	rte_tel_data_add_dict_string(d, "cc", q->cc);
}

static int body_qp_info(const struct snap *s, const char *name, const char *rest, struct rte_tel_data *d)
{
	(void)name;
	if (!rest || !*rest)
		return -EINVAL;
	char *end;
	unsigned long qpn = strtoul(rest, &end, 0);
	if (*end)
		return -EINVAL;
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].qpn == qpn) {
			rte_tel_data_start_dict(d);
			qp_dict(d, &s->qps[i]);
			return 0;
		}
	return -EINVAL;
}

static int body_port(const struct snap *s, const char *name, const char *rest, struct rte_tel_data *d)
{
	(void)rest;
	(void)name;
	if (!s->has_port)
		return -EINVAL;
	const struct droce_port_stats *st = &s->port;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "rx_frames", st->rx_frames);
	rte_tel_data_add_dict_u64(d, "rx_bytes", st->rx_bytes);
	rte_tel_data_add_dict_u64(d, "rx_roce", st->rx_roce);
	rte_tel_data_add_dict_u64(d, "rx_not_ours", st->rx_not_ours);
	rte_tel_data_add_dict_u64(d, "rx_other", st->rx_other);
	rte_tel_data_add_dict_u64(d, "rx_stash_drop", st->rx_stash_drop);
	rte_tel_data_add_dict_u64(d, "tx_frames", st->tx_frames);
	rte_tel_data_add_dict_u64(d, "tx_bytes", st->tx_bytes);
	rte_tel_data_add_dict_u64(d, "tx_bursts", st->tx_bursts);
	rte_tel_data_add_dict_u64(d, "tx_zc_frames", st->tx_zc_frames);
	rte_tel_data_add_dict_u64(d, "tx_nobufs", st->tx_nobufs);
	rte_tel_data_add_dict_u64(d, "tx_ctrl", st->tx_ctrl);
	/* bursts cut short by a memif peer's regions unmapped under them
	 * (stack/net/port/port_guard.c), and the frames forgotten with them */
	rte_tel_data_add_dict_u64(d, "tx_faulted", st->tx_faulted);
	rte_tel_data_add_dict_u64(d, "tx_abandoned", st->tx_abandoned);
	rte_tel_data_add_dict_u64(d, "rx_faulted", st->rx_faulted);
	return 0;
}

static int body_cc(const struct snap *s, const char *name, const char *rest, struct rte_tel_data *d)
{
	(void)rest;
	(void)name;
	rte_tel_data_start_dict(d);
	/* A dict holds 256 entries: the first 255 QPs, and how many in all. */
	rte_tel_data_add_dict_u64(d, "qps", s->nqps_all);
	for (unsigned i = 0; i < s->nqps && i < RTE_TEL_MAX_DICT_ENTRIES - 1; i++) {
		struct rte_tel_data *q = rte_tel_data_alloc();
		if (!q)
			break;
		rte_tel_data_start_dict(q);
		rte_tel_data_add_dict_string(q, "cc", s->qps[i].cc);
		rte_tel_data_add_dict_u64(q, "window_bytes", s->qps[i].st.window_bytes);
		rte_tel_data_add_dict_u64(q, "cc_rate_mbps", s->qps[i].st.cc_rate_mbps);
		rte_tel_data_add_dict_u64(q, "rtt_srtt_ns", s->qps[i].st.rtt_srtt_ns);
		rte_tel_data_add_dict_u64(q, "rto_ns", s->qps[i].st.rto_ns);
		char key[16];
		snprintf(key, sizeof(key), "%#x", s->qps[i].qpn);
		rte_tel_data_add_dict_container(d, key, q, 0);
	}
	return 0;
}

/* Every command: the snapshot of the context its parameters name, copied
 * out of the lock (a command never formats under it), then its body. */
#define CMD(n)                                                                        \
	static int cmd_##n(const char *cmd, const char *params, struct rte_tel_data *d) \
	{                                                                             \
		(void)cmd;                                                            \
		return answer(params, d, body_##n);                                \
	}

typedef int body_fn(const struct snap *s, const char *name, const char *rest, struct rte_tel_data *d);

static int answer(const char *params, struct rte_tel_data *d, body_fn *body)
{
	struct snap *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	char name[32];
	const char *rest;
	int r = snapshot_of(params, s, name, &rest);
	if (!r)
		r = body(s, name, rest, d);
	free(s);
	return r;
}

CMD(ctx)
CMD(qp_list)
CMD(qp_info)
CMD(port)
CMD(cc)

struct droce_telemetry *droce_telemetry_open(struct droce_ctx *ctx, struct droce_port *port,
					     const char *name)
{
	if (!ctx || !name || strlen(name) >= sizeof(((struct droce_telemetry *)0)->name)) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_telemetry *t = calloc(1, sizeof(*t));
	struct snap *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	if (!t || !a || !b) {
		free(t);
		free(a);
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	t->ctx = ctx;
	t->port = port;
	t->work = a;
	t->spare = b;
	snprintf(t->name, sizeof(t->name), "%s", name);
	pthread_mutex_lock(&tel_reg.lock);
	if (!tel_reg.registered) {
		rte_telemetry_register_cmd("/droce/ctx", cmd_ctx,
					   "droce context counters and drop reasons. Parameters: [name]");
		rte_telemetry_register_cmd("/droce/qp/list", cmd_qp_list,
					   "droce QPNs (the first 512) and their count. Parameters: [name]");
		rte_telemetry_register_cmd("/droce/qp/info", cmd_qp_info,
					   "one droce QP: state, PSNs, counters, RTT, window, cc rate. "
					   "Parameters: [name,]qpn");
		rte_telemetry_register_cmd("/droce/port", cmd_port,
					   "the DPDK port of a droce context. Parameters: [name]");
		rte_telemetry_register_cmd("/droce/cc", cmd_cc,
					   "droce congestion control per QP. Parameters: [name]");
		tel_reg.registered = true;
	}
	/* A first snapshot now, so the commands answer before the first poll. */
	take(t, t->spare, 0);
	t->pub = t->spare;
	t->spare = NULL;
	struct droce_telemetry **pp = &tel_reg.head;
	while (*pp)
		pp = &(*pp)->next_t;
	*pp = t;
	pthread_mutex_unlock(&tel_reg.lock);
	return t;
}

void droce_telemetry_set_poller(struct droce_telemetry *t, const struct droce_poller *pl)
{
	if (t)
		t->poller = pl;
}

void droce_telemetry_close(struct droce_telemetry *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&tel_reg.lock);
	for (struct droce_telemetry **pp = &tel_reg.head; *pp; pp = &(*pp)->next_t)
		if (*pp == t) {
			*pp = t->next_t;
			break;
		}
	pthread_mutex_unlock(&tel_reg.lock);
	free(t->pub);
	free(t->work);
	free(t->spare);
	free(t->scratch);
	free(t);
}
