/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-sim: a deterministic discrete-event fabric simulator whose hosts are
 * real droce contexts (docs/sim.md). One virtual clock (ns) drives every
 * context through droce_ctx_poll(ctx, now); frames cross modelled links
 * (rate, propagation delay) and output-queued switches (tail drop, RED-style
 * ECN marking, optional PFC). Everything random comes from seeded generators
 * and the event queue breaks ties by insertion order, so one seed gives one
 * run, byte for byte.
 */
#ifndef DROCE_SIM_H
#define DROCE_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <droce/droce.h>

/* ------------------------------------------------------------ options -- */

enum sim_wl { WL_INCAST, WL_PERMUTATION, WL_ALLTOALL, WL_ALLREDUCE, WL_MIX };

/* A link that goes down at `down` and, if `up` is not 0, up again then:
 * a leaf-spine uplink (leaf a, spine b) or a host's link (host a). */
#define SIM_MAX_FAILS 8u
struct sim_fail {
	bool host;                 /* host a's link; else leaf a - spine b */
	unsigned a, b;
	uint64_t down, up;
};

struct sim_opts {
	unsigned hosts;            /* star: hosts on one switch (0 = what the workload needs) */
	unsigned leaves, spines, per_leaf; /* leaf-spine when leaves > 0 */
	double rate_gbps;
	uint64_t delay_ns;         /* propagation delay of every link */
	uint64_t buffer;           /* bytes per switch egress port */
	uint64_t kmin, kmax;       /* RED ECN thresholds, bytes (kmax 0 = no marking) */
	double pmax;
	uint64_t xoff, xon;        /* PFC thresholds per ingress port, bytes (0 = off) */
	double loss;               /* random loss per frame a host sends */
	unsigned mtu;
	const char *cc;
	const char *timeout_mode;  /* NULL = the engine's default */
	int transport;             /* --transport: enum droce_transport of every QP */
	bool window_tune;          /* window follows the measured BDP */
	enum sim_wl wl;
	unsigned wl_n;             /* incast: senders */
	uint64_t wl_bytes;         /* flow/message bytes (mix: LONG) */
	uint64_t wl_short;         /* mix: SHORT */
	double wl_rate;            /* mix: short messages per second, whole fabric */
	uint64_t wl_stagger;       /* incast: sender i starts at i * stagger ns */
	uint64_t duration;         /* 0 = until every flow is done */
	uint64_t seed;
	uint64_t sample_ns;        /* CSV sampling interval */
	bool drop_tail;            /* lose the last packet of each flow's first message once */
	struct sim_fail fails[SIM_MAX_FAILS];
	unsigned nfails;
	uint64_t rehash_ns;        /* ECMP leaves a dead uplink out this long after it fails
				      (and takes it back as long after it is up); UINT64_MAX: never */
	const char *json, *csv, *plot;
	bool quiet;
};

int sim_parse_args(struct sim_opts *o, int argc, char **argv);
void sim_usage(FILE *out);

/* -------------------------------------------------------------- events -- */

enum ev_type { EV_ARRIVE, EV_TX_DONE, EV_POLL, EV_PAUSE, EV_START, EV_SAMPLE, EV_LINK,
	       EV_ROUTE };

struct event {
	uint64_t t, seq;
	uint8_t type;
	uint8_t arg;               /* EV_PAUSE: 1 = XOFF, 0 = XON; EV_LINK, EV_ROUTE: 1 = down */
	void *obj;                 /* port, host or flow */
	struct pkt *pkt;           /* EV_ARRIVE */
};

struct evq {
	struct event *h;
	size_t n, cap;
	uint64_t seq;
};

int evq_push(struct evq *q, uint64_t t, uint8_t type, void *obj, struct pkt *pkt, uint8_t arg);
bool evq_pop(struct evq *q, struct event *out);

/* ------------------------------------------------------------- fabric -- */

#define SIM_MAX_FRAME 4400u

struct pkt {
	struct pkt *next;
	uint32_t len;
	uint16_t in_port;          /* ingress port at the current switch (PFC accounting) */
	uint8_t data[SIM_MAX_FRAME];
};

struct node;

/* An egress port and the link it drives. */
struct port {
	struct node *node;
	uint16_t idx;
	struct node *peer;
	uint16_t peer_port;
	double ns_per_byte;
	uint64_t delay;
	struct pkt *head, *tail;
	uint64_t qbytes, qpkts;
	bool busy, paused;
	uint64_t paused_ns, paused_since; /* time paused before the current pause; its start */
	bool down;                 /* the link is down: what it sends or carries is lost */
	/* statistics */
	uint64_t tx_bytes, tx_frames, busy_ns, max_q, drops, marks;
	uint64_t qhist[256];       /* ns spent at each depth, buffer/256 buckets (time-weighted) */
	uint64_t qhist_n;          /* ns accounted */
	uint64_t q_since;          /* time of the last depth change */
	char name[40];
};

enum node_kind { NODE_HOST, NODE_SWITCH };

struct sim;

struct node {
	enum node_kind kind;
	unsigned id;               /* host index, or switch index */
	unsigned nports;
	struct port *ports;
	/* switch only */
	uint64_t *in_bytes;        /* PFC: bytes buffered per ingress port */
	bool *pause_sent;
	unsigned level;            /* 0: star or leaf, 1: spine */
	struct host *host;         /* host only */
	struct sim *sim;
};

/* ---------------------------------------------------------------- host -- */

struct conn;

struct host {
	struct sim *sim;
	unsigned id;
	struct node *node;         /* port 0: the NIC */
	struct droce_ctx *ctx;
	struct droce_cq *scq, *rcq;
	struct droce_mr *mr;
	uint8_t *buf;
	size_t buflen;
	struct pkt *rx_head, *rx_tail;
	unsigned rx_count;
	uint64_t poll_at;          /* an immediate poll is scheduled at this time (UINT64_MAX: none) */
	uint64_t timer_at;         /* the earliest deadline poll scheduled (UINT64_MAX: none) */
	bool nic_full;             /* the engine was told -ENOBUFS: wake it on drain */
	uint32_t ip;
	uint64_t spin_t, spins;    /* re-polls at one instant (livelock guard) */
	struct conn **conns;       /* connections with this host as sender */
	unsigned nconns;
	/* allreduce */
	unsigned ar_step;
	unsigned ar_recvd_n;       /* allreduce chunks received so far */
};

/* A connected QP pair src -> dst carrying flows in FIFO order. */
struct conn {
	struct host *src, *dst;
	struct droce_qp *sqp, *rqp;
	struct flow **q;           /* flows queued on this connection */
	unsigned nq, qhead, qcap;
	uint64_t posted, completed; /* bytes of the head flow */
	unsigned outstanding;      /* WRs posted, not completed */
	bool short_class;          /* mix: the short-message QP of this pair */
	uint64_t last_rx;          /* CSV: receiver bytes at the previous sample */
	uint64_t fail_rx, fail_t;  /* --fail: receiver bytes and time of its last progress */
	uint32_t tail_psn;         /* --drop-tail: PSN of the first flow's last packet */
	bool tail_dropped, tail_set;
};

struct flow {
	unsigned id;
	unsigned src, dst;
	uint64_t bytes, start, end; /* end 0: not done */
	uint64_t done_bytes;
	uint64_t retrans0, retrans;
	bool short_msg;
	bool with_imm;
	struct conn *conn;
};

struct sim {
	struct sim_opts o;
	struct evq q;
	uint64_t now;
	uint64_t rng;
	unsigned nhosts;
	struct host *hosts;
	unsigned nswitches;
	struct node *switches;
	struct node *hnodes;
	struct pkt *free_pkts;
	struct conn **conns;
	unsigned nconns, cconns;
	struct flow *flows;
	unsigned nflows, flows_done;
	uint64_t wc_errors;
	bool stuck;                /* a host re-polled without end at one instant */
	uint64_t events, frames, ecn_marked, drops, random_drops, pause_frames, tail_drops;
	uint64_t link_drops;       /* frames lost on links that were down */
	bool *ecmp_out;            /* [leaf * spines + spine]: ECMP leaves that uplink out */
	double *series;            /* --fail: goodput of every sample interval, Gbit/s */
	size_t nseries, cseries;
	uint64_t series_rx;        /* receiver bytes of all connections at the last sample */
	uint64_t max_stall;        /* longest time a connection with work delivered nothing */
	uint64_t ar_start, ar_end;
	bool ar_done;
	FILE *csv_flows, *csv_queues;
	struct port **sample_ports;
	unsigned nsample_ports;
	double wall_s;
};

uint64_t sim_rand(struct sim *s);
double sim_uniform(struct sim *s);

/* fabric.c */
int fabric_build(struct sim *s);
void fabric_free(struct sim *s);
void port_enqueue(struct sim *s, struct port *p, struct pkt *k);
void port_account(struct sim *s, struct port *p);
void fabric_event(struct sim *s, const struct event *e);
/** Schedule the --fail events. @return 0, or -EINVAL for a link the fabric lacks. */
int fabric_schedule_fails(struct sim *s);
struct pkt *pkt_alloc(struct sim *s);
void pkt_free(struct sim *s, struct pkt *k);
unsigned host_of_ip(uint32_t ip);
uint32_t ip_of_host(unsigned h);

/* host.c */
int hosts_create(struct sim *s);
void hosts_destroy(struct sim *s);
void host_deliver(struct sim *s, struct host *h, struct pkt *k);
void host_wake(struct sim *s, struct host *h, uint64_t t);
void host_poll(struct sim *s, struct host *h);
void host_nic_drained(struct sim *s, struct host *h);
struct conn *conn_get(struct sim *s, unsigned src, unsigned dst, bool short_class);

/* workload.c */
int workload_build(struct sim *s);
void workload_start(struct sim *s, struct flow *f);
void workload_on_send_wc(struct sim *s, struct host *h, const struct droce_wc *wc);
void workload_on_recv_wc(struct sim *s, struct host *h, const struct droce_wc *wc);
void conn_pump(struct sim *s, struct conn *c);
void workload_kickoff(struct sim *s);

/* report.c */
int report_open_csv(struct sim *s);
void report_sample(struct sim *s);
void report_close_csv(struct sim *s);
int report_json(struct sim *s, FILE *out);
int report_plot(struct sim *s);

#endif
