/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf command line, perftest-shaped:
 *   droce-perf [EAL args --] TEST [options] [SERVER]
 */
#ifndef DROCE_PERF_OPTS_H
#define DROCE_PERF_OPTS_H

#include <stdbool.h>
#include <stdint.h>

enum perf_test {
	PERF_WRITE_BW,
	PERF_READ_BW,
	PERF_SEND_BW,
	PERF_WRITE_LAT,
	PERF_READ_LAT,
	PERF_SEND_LAT,
	PERF_ATOMIC_LAT,
};

/** The stack a run goes through: droce over a DPDK port, or rdma-core. */
enum perf_backend_kind {
	PERF_BACKEND_DROCE,
	PERF_BACKEND_VERBS,
};

#define PERF_MAX_SIZE (8u * 1024u * 1024u)
#define PERF_MAX_QPS 16384u

struct perf_opts {
	enum perf_test test;
	const char *server;        /* NULL: we are the server */
	const char *peer;          /* --peer: the side-channel client a server serves, or NULL */
	uint32_t size;             /* -s */
	bool all_sizes;            /* -a: 2 B .. 8 MB, powers of two */
	uint64_t iters;            /* -n */
	double duration;           /* -D seconds, 0 = use iters */
	unsigned qps;              /* -q */
	unsigned tx_depth;         /* -t */
	unsigned mtu;              /* -m bytes */
	uint16_t port;             /* -p side channel TCP port */
	bool report_gbits;
	const char *json;          /* --json FILE */
	bool check;                /* --check */
	const char *impair;        /* --impair spec */
	const char *ip;            /* --ip: our own address on the port */
	const char *memif;         /* --memif server|client[,socket=PATH] */
	const char *iface;         /* --iface IFNAME */
	const char *capture;       /* --capture FILE */
	double timeout;            /* --timeout: no progress for this long = dead peer */
	double port_wait;          /* --port-wait: the port may take this long to start */
	uint8_t qp_timeout;        /* -u: IBTA local ACK timeout exponent (4.096 us * 2^N) */
	const char *cc;            /* --cc: congestion control algorithm */
	uint32_t window;           /* --window: per-QP send window ceiling, packets (0 = default) */
	uint8_t timeout_mode;      /* --timeout-mode: enum droce_timeout_mode, 0 = the default */
	uint8_t transport;         /* --transport: enum droce_transport (both sides the same) */
	bool window_tune;          /* --window-tune: window follows the measured BDP */
	enum perf_backend_kind backend; /* --backend droce|verbs */
	const char *ib_dev;        /* --ib-dev: verbs device (default: the first) */
	int gid_index;             /* --gid-index: -1 = the first IPv4-mapped RoCEv2 GID */
	unsigned ib_port;          /* --ib-port: verbs port number (default 1) */
	bool cm;                   /* --cm: connect the QPs through droce's CM over QP1 */
	const char *cm_peer;       /* --cm=ADDR: the server's droce address (client) */
	uint8_t idle;              /* --idle: enum droce_idle_mode (droce/poll.h), default busy */
};

/** Is @p t a bandwidth test? */
static inline bool perf_is_bw(enum perf_test t)
{
	return t <= PERF_SEND_BW;
}

/** perftest-style name, e.g. "write_bw". */
const char *perf_test_name(enum perf_test t);

/**
 * Parse the arguments after the EAL's "--" (or all of them when there is
 * none). @p err receives a message on failure.
 * @return 0, 1 when --help was printed, -EINVAL on a bad command line.
 */
int perf_opts_parse(int argc, char **argv, struct perf_opts *o, char *err, unsigned errlen);

/** Print usage to stdout. */
void perf_usage(const char *prog);

#endif
