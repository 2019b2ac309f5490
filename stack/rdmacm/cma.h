/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The librdmacm drop-in (docs/rdmacm.md): rdma-core's rdma_cm API with the
 * struct layouts of the system's <rdma/rdma_cma.h>, over droce's own CM
 * (include/droce/cm.h) on the context of the libibverbs drop-in, reached
 * through its hook table (verbs/cm_hook.h).
 *
 * One device context of its own (an ibv_open_device() of the verbs
 * drop-in's one device, which shares the port with any open of the
 * application's) and its protection domain, opened on the first id that
 * needs it, as rdma-core's librdmacm has one per device; its CM service
 * started with it. A pump
 * thread takes the context's lock every 100 us, runs a poll and turns the
 * CM's events into rdma_cm events on the ids' channels (each an eventfd
 * counting queued events, so poll() on channel->fd works as with the kernel).
 * One mutex (cma.mu) guards ids, channels and tables; it is taken before
 * the context's lock, never inside it.
 */
#ifndef DROCE_RDMACM_CMA_H
#define DROCE_RDMACM_CMA_H

#include <pthread.h>
#include <stdbool.h>

#include <rdma/rdma_cma.h>

#include <droce/droce.h>

#include "verbs/cm_hook.h"

#define CMA_EXPORT __attribute__((visibility("default")))
#define CMA_MAX_CONNS 256u
#define CMA_HELD 64u
#define CMA_TIMEWAIT_NS 500000000ull
#define CMA_EPHEMERAL_LO 32768u /* Linux's default ip_local_port_range */
#define CMA_EPHEMERAL_N 28232u
#define CMA_ORPHAN_NS 1000000000ull /* how long a destroyed listener's port waits for a new one */

struct cma_event {
	struct rdma_cm_event ev;          /* first: the application's pointer */
	struct cma_event *next;
	struct cma_id *out;               /* handed out by rdma_get_cm_event, not acked yet:
					     the id it names (rdma_destroy_id waits for it) */
	uint8_t pd[DROCE_CONN_PD_MAX];
};

struct cma_channel {
	struct rdma_event_channel ch;     /* first */
	struct cma_event *head, *tail;
	unsigned n_ids;
	unsigned readers;                 /* threads inside rdma_get_cm_event on it */
	bool dead;                        /* destroyed while one was: kept for it */
};

enum cma_state { CMA_IDLE, CMA_BOUND, CMA_LISTEN, CMA_ADDR_QUERY, CMA_ADDR, CMA_ROUTE_QUERY,
		 CMA_ROUTE, CMA_CONNECTING, CMA_REQUESTED, CMA_ACCEPTED, CMA_CONNECTED,
		 CMA_DISCONNECTED };

struct cma_id {
	struct rdma_cm_id id;             /* first */
	enum cma_state state;
	int conn;                         /* droce connection id, -1 */
	int listen;                       /* droce listener id, -1 */
	struct cma_id *listener;          /* a passive id's listener */
	bool sync;                        /* created without a channel: id.channel is its own and
					     each call waits for its event (rdma-core's sync ids) */
	bool no_qp;                       /* connect/accept named conn_param.qp_num, no QP on the id */
	bool active;                      /* rdma_connect()ed */
	bool own_cqs;                     /* rdma_create_qp made the id's CQs */
	bool auto_port;                   /* bound to port 0: an ephemeral port was chosen */
	struct ibv_qp_init_attr *ep_attr; /* rdma_create_ep listener: the QP rdma_get_request makes */
	struct droce_conn_event req;      /* a passive id: its REQUEST, held again if its listener
					     goes before the application took it */
	unsigned events_out;              /* its events handed out and not acked yet */
	uint64_t deadline;                /* ADDR_QUERY: give up resolving (ns) */
	struct cma_id *next_query;        /* in cma.queries while ADDR/ROUTE_QUERY */
};

struct cma {
	pthread_mutex_t mu;
	pthread_cond_t acked;             /* an event was acked (rdma_destroy_id waits on it) */
	const struct droce_verbs_cm_hooks *h;
	struct ibv_context *verbs;        /* the device, opened once */
	struct ibv_pd *pd;                /* its PD: id->pd from bind/resolve on (as rdma-core) */
	struct droce_ctx *ctx;
	bool cm_open;
	struct cma_id *by_conn[CMA_MAX_CONNS];
	struct cma_id *by_listen[2 * CMA_MAX_CONNS];
	unsigned n_ids;                   /* the pump polls only while ids exist */
	struct cma_id *queries;           /* address and route resolutions under way */
	/* A listener destroyed is kept a while (orphan) with the REQs that
	 * reach it held, so a program that re-listens on the port (perftest
	 * -R: its control listener, then its data listener) gets them instead
	 * of its peer getting REJ 8 in between. */
	uint64_t orphan_since[2 * CMA_MAX_CONNS]; /* 0: not an orphan */
	uint16_t orphan_port[2 * CMA_MAX_CONNS];
	struct droce_conn_event held[CMA_HELD];
	uint64_t held_at[CMA_HELD];
	unsigned n_held;
	pthread_t pump;
	bool pump_up;
	bool stop;                        /* the library is going: the pump ends */
	unsigned next_port;               /* ephemeral ports for binds to port 0 */
};

extern struct cma cma;

/** Open the device and start its CM and the pump (mu held). @return 0 or errno. */
int cma_device(void);
/** Queue an event on @p id's channel (mu held). */
void cma_post(struct cma_id *id, enum rdma_cm_event_type type, int status,
	      const struct droce_conn_event *src);
/** errno = @p e, return -1: rdma_cm's convention. */
int cma_fail(int e);
/** A synchronous id: wait for its next event (left on id->event) and turn
 * its status into the call's result, as rdma-core's ucma_complete(). An
 * asynchronous id: 0 at once. mu not held. */
int cma_complete(struct cma_id *c);
/** Move @p c to channel @p to with its queued events (mu held). */
void cma_move_events(struct cma_id *c, struct cma_channel *to);

#endif
