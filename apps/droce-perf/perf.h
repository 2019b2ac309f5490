/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf's shared state: one context on one port, N QPs connected to the
 * peer through the side channel, one registered buffer per QP.
 */
#ifndef DROCE_PERF_H
#define DROCE_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

#include "net/sidechan.h"
#include "net/tsc.h"
#include "opts.h"
#include "report.h"

struct droce_port;
struct droce_capture;
struct droce_impair_link;
struct droce_impair;

struct perf_qp {
	struct droce_qp *qp;
	uint8_t *buf;              /* local buffer: slots * slot_size bytes */
	struct droce_mr *mr;
	struct droce_sc_mr remote; /* the peer's buffer for this QP */
	uint64_t posted, completed; /* WRs in the current size */
	uint32_t peer_qpn;
};

struct perf {
	struct perf_opts o;
	bool server;
	struct droce_port *port;
	struct droce_capture *cap;
	struct droce_impair_link *imp;
	struct droce_impair *impair;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct perf_qp qp[PERF_MAX_QPS];
	uint32_t slot_size;        /* largest message of the run */
	uint32_t slots;            /* message slots per QP buffer */
	uint32_t mtu;              /* negotiated path MTU, bytes */
	struct droce_sc sc;
	struct droce_tsc clock;    /* perf_now: TSC -> ns (net/tsc.h) */
	bool check_failed;
	char check_msg[160];
};

/** Nanoseconds since start, from the TSC: the one clock read per loop turn. */
uint64_t perf_now(const struct perf *p);

/** EAL, port, context, QPs, side channel, RTR/RTS and the ready handshake. @return 0 or -errno (message printed). */
int perf_setup(struct perf *p, int eal_argc, char **eal_argv, const char *prog);
void perf_teardown(struct perf *p);
/** One line of port counters. */
void perf_print_port(const struct perf *p);

/** Sizes the run covers: -s, or 2..8M with -a. @return count written to @p sizes. */
unsigned perf_sizes(const struct perf_opts *o, uint32_t *sizes, unsigned max);

/**
 * Poll once and watch the side channel: @return 1 when the peer said it is
 * done, -ECONNRESET when it vanished, 0 otherwise.
 */
int perf_peer_event(struct perf *p);

/** Record a --check failure (first one wins) and print it. */
void perf_check_fail(struct perf *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Fill the JSON counters from the context and QPs. */
void perf_counters(const struct perf *p, struct perf_counters *c);

/** Server: post receives and fill READ targets before the ready handshake. */
int perf_server_prepare(struct perf *p);
/** The one receive of the latency tests (slot 0 of QP 0). */
int perf_lat_post_recv(struct perf *p);

int perf_run_bw(struct perf *p, uint32_t size, struct bw_result *out);
int perf_serve_bw(struct perf *p);
int perf_run_lat(struct perf *p, uint32_t size, struct lat_result *out);
int perf_serve_lat(struct perf *p, const uint32_t *sizes, unsigned n_sizes);

#endif
