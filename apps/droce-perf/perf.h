/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf's shared state: one backend (droce over a DPDK port, or
 * rdma-core's libibverbs), N QPs connected to the peer through the side
 * channel, one registered buffer per QP. The tests (bw.c, lat.c) speak the
 * droce work-request and completion types; each backend maps them to its
 * stack (backend_droce.c, backend_verbs.c).
 */
#ifndef DROCE_PERF_H
#define DROCE_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

#include "net/sidechan/sidechan.h"
#include "net/port/tsc.h"
#include "opts.h"
#include "report.h"

struct perf;

struct perf_qp {
	uint8_t *buf;              /* local buffer: slots * slot_size bytes */
	size_t buf_len;
	uint32_t lkey, rkey;       /* of our buffer */
	uint32_t qpn;              /* ours */
	struct droce_sc_mr remote; /* the peer's buffer for this QP */
	uint64_t posted, completed; /* WRs in the current size */
	uint64_t wr_seq, wc_seq;    /* latency tests: sends posted and completed, all sizes */
	uint32_t peer_qpn;
	bool queued;                /* bandwidth client: on the refill queue */
};

/** What the peer needs to reach us, as a backend found it. */
struct perf_local {
	uint8_t ip_version;        /* 4 or 6 */
	uint8_t ip[16];
	uint8_t mac[6];
	uint32_t mtu;              /* largest path MTU we can do, bytes */
};

/**
 * A stack droce-perf runs over. Calls return 0 or -errno and print their
 * own message on failure.
 */
struct perf_backend {
	const char *name;
	/** Device/port, context, CQ of @p cq_depth; fill @p me. Sets tsc_hz. */
	int (*open)(struct perf *p, int eal_argc, char **eal_argv, const char *prog,
		    unsigned cq_depth, struct perf_local *me);
	/** QP @p i in INIT with p->qp[i].buf registered: fills qpn, lkey, rkey. */
	int (*create_qp)(struct perf *p, unsigned i);
	/** QP @p i to RTR and RTS towards @p peer at @p mtu bytes, our first PSN @p psn. */
	int (*connect_qp)(struct perf *p, unsigned i, const struct droce_sc_info *peer,
			  uint32_t psn, uint32_t mtu);
	/** --cm: start the CM (the server listens), before the side channel
	 * connects. NULL: the backend has no CM. */
	int (*cm_open)(struct perf *p);
	/** --cm: connect (client) or accept (server) every QP through the CM:
	 * fills qp[].remote, peer_qpn and p->mtu, QPs in RTS. */
	int (*cm_connect)(struct perf *p);
	/** @return 0, -ENOMEM when the send queue is full, another -errno. */
	int (*post_send)(struct perf *p, unsigned i, struct droce_send_wr *wr);
	int (*post_recv)(struct perf *p, unsigned i, struct droce_recv_wr *wr);
	/** Run the stack once at @p now (ns) and take up to @p max completions. @return n or -errno. */
	int (*poll)(struct perf *p, uint64_t now, struct droce_wc *wc, int max);
	/** Called while the side channel waits; NULL when the stack runs by itself. */
	void (*idle)(void *p);
	/** Before the side channel closes: push out what is queued (bounded). */
	void (*flush)(struct perf *p);
	void (*counters)(const struct perf *p, struct perf_counters *c);
	/** One line of device/port counters (may print nothing). */
	void (*print_port)(const struct perf *p);
	/** The measured part of a run starts (@p start) or ends after @p ops
	 * operations: the poll-stage trace (include/droce/trace.h) is reset,
	 * or read into p->stages. NULL: the backend has no such trace. */
	void (*stage_mark)(struct perf *p, bool start, uint64_t ops);
	/** Destroy everything open() and create_qp() made. Safe after a partial set-up. */
	void (*close)(struct perf *p);
};

extern const struct perf_backend perf_backend_droce;
/** NULL when droce-perf was built without libibverbs. */
extern const struct perf_backend *const perf_backend_verbs;

struct perf {
	struct perf_opts o;
	bool server;
	const struct perf_backend *be;
	void *bk;                  /* the backend's own state */
	struct perf_qp *qp;         /* o.qps of them */
	uint32_t slot_size;        /* largest message of the run */
	uint32_t slots;            /* message slots per QP buffer */
	uint32_t mtu;              /* negotiated path MTU, bytes */
	struct droce_sc sc;
	uint64_t tsc_hz;           /* set by the backend's open */
	struct droce_tsc clock;    /* perf_now: TSC -> ns (net/port/tsc.h) */
	bool check_failed;
	char check_msg[160];
	/* QPN -> index + 1 of qp[] (0: empty), open addressing, a power of
	 * two >= 2 x o.qps: a completion finds its QP in O(1) at any count. */
	uint32_t *qp_map;
	uint32_t qp_map_mask;
	/* the poll-stage trace of the last measured run (stages.c) */
	struct droce_stage_stats stages;
	uint64_t stage_ops;        /* operations it covered (round trips, messages) */
	bool have_stages;
};

/** The QP of ours with number @p qpn, NULL if none. */
static inline struct perf_qp *perf_qp_of(const struct perf *p, uint32_t qpn)
{
	for (uint32_t h = (qpn * 2654435761u) & p->qp_map_mask;; h = (h + 1) & p->qp_map_mask) {
		uint32_t v = p->qp_map[h];
		if (!v)
			return NULL;
		if (p->qp[v - 1].qpn == qpn)
			return &p->qp[v - 1];
	}
}

/** Nanoseconds since start, from the TSC: the one clock read per loop turn. */
uint64_t perf_now(const struct perf *p);

/** Backend, buffers, QPs, side channel, RTR/RTS. @return 0 or -errno (message printed). */
int perf_setup(struct perf *p, int eal_argc, char **eal_argv, const char *prog);
void perf_teardown(struct perf *p);
/** Build p->qp_map from the QPNs create_qp filled. @return 0 or -ENOMEM. */
int perf_qp_map_build(struct perf *p);
/** One line of port counters. */
void perf_print_port(const struct perf *p);
/** Mark the measured part of a run (stages.c): a no-op unless the backend
 * has the poll-stage trace. */
void perf_stage_mark(struct perf *p, bool start, uint64_t ops);
/** The stage line, nanoseconds per operation (prints nothing without a trace). */
void perf_print_stages(const struct perf *p);

/** Sizes the run covers: -s, or 2..8M with -a. @return count written to @p sizes. */
unsigned perf_sizes(const struct perf_opts *o, uint32_t *sizes, unsigned max);

/**
 * Watch the side channel: @return 1 when the peer said it is done,
 * -ECONNRESET when it vanished, 0 otherwise.
 */
int perf_peer_event(struct perf *p);

/** Record a --check failure (first one wins) and print it. */
void perf_check_fail(struct perf *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Fill the JSON counters from the backend. */
void perf_counters(const struct perf *p, struct perf_counters *c);
/** Free what perf_counters allocated. */
void perf_counters_free(struct perf_counters *c);

/** Server: post receives and fill READ targets before the ready handshake. */
int perf_server_prepare(struct perf *p);
/** The one receive of the latency tests (slot 0 of QP 0). */
int perf_lat_post_recv(struct perf *p);

int perf_run_bw(struct perf *p, uint32_t size, struct bw_result *out);
int perf_serve_bw(struct perf *p, const uint32_t *sizes, unsigned n_sizes);
int perf_run_lat(struct perf *p, uint32_t size, struct lat_result *out);
int perf_serve_lat(struct perf *p, const uint32_t *sizes, unsigned n_sizes);

#endif
