/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The libibverbs drop-in (docs/verbs.md): rdma-core's verbs API, with the
 * struct layouts of the system's <infiniband/verbs.h>, as a thin layer over
 * droce's public API (include/droce/) and one DPDK port (stack/net).
 *
 * Objects: every ibv_* object handed to the application is the first member
 * of a dv_* wrapper, so the inline functions of verbs.h (which read
 * qp->context->ops.post_send and the like) see exactly the layout they were
 * compiled against, and we get our state back with a cast.
 *
 * Threads: a droce context is driven by one thread at a time
 * (docs/architecture.md, principle 1). Here two threads may want it: the application inside a verbs
 * call, and the progress thread that keeps the port and the responder going
 * while the application is not calling (perftest's servers wait in a TCP
 * read during a WRITE test; ib_write_lat spins on memory). They take turns
 * through dv_lock(): the application announces itself (want) and the
 * progress thread steps aside between two polls, so a verbs call waits at
 * most one poll iteration.
 *
 * Globals: ibv_get_device_list() has no handle to hang state on, so the one
 * device (droce0), its configuration and the EAL/port state live in one
 * process-wide struct dv_device. Everything else hangs off the context.
 */
#ifndef DROCE_VERBS_DV_H
#define DROCE_VERBS_DV_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include <droce/comm.h>
#include <droce/droce.h>

#include "verbs/ack_hold.h"
#include "verbs/pace.h"
#include "verbs/xlate.h"

struct droce_port;

/* Device limits, as droce's engine checks them (stack/core/qp.c, cq.c). */
#define DV_MAX_QP_WR 65536u
#define DV_MAX_SGE 8u
#define DV_MAX_INLINE 4096u
#define DV_MAX_CQE (1u << 24)
/** Smallest CQ granted (create_cq rounds cqe + 1 up to a power of two). */
#define DV_MIN_CQE 64u
#define DV_MAX_RD_ATOMIC 16u
/** ibv_device_attr.vendor_id: no IEEE OUI, the value rxe reports. */
#define DV_VENDOR_ID 0xFFFFFFu
#define DV_MAX_QP 16384u
#define DV_MAX_MR 4096u
#define DV_MAX_MSG (1u << 31)
/** Shared receive queues (srq.c): how many, WQEs each (droce's SRQ ring). */
#define DV_MAX_SRQ 1024u
#define DV_MAX_SRQ_WR 65535u
/** Sends in a row, with no poll_cq between, that each run a poll of the
 *  engine (backend_thread.c); later ones only queue their WR. */
#define DV_POST_DRIVES 64u
/** Asynchronous events held for ibv_get_async_event (async.c). */
#define DV_ASYNC_DEPTH 256u
/** How long modify_qp(RTR) waits for the peer's ARP answer. */
#define DV_ARP_TIMEOUT_NS 5000000000ull

/** The configuration read from the environment (env.c). */
struct dv_config {
	char port_kind[8];      /**< "memif", "iface" or "vdev" */
	char port_arg[512];     /**< what follows the colon */
	uint8_t ip[4];          /**< DROCE_IP */
	int lcore;              /**< DROCE_LCORE, -1 = not pinned */
	int comm_core;          /**< DROCE_COMM_CORE, -1 = inline progress */
	char eal[1024];         /**< DROCE_EAL, split on blanks */
	double port_wait_s;     /**< DROCE_PORT_WAIT: the port may take this long to start */
	uint8_t idle;           /**< DROCE_IDLE: enum droce_idle_mode, default busy */
	int transport;          /**< DROCE_TRANSPORT: enum droce_transport of every RC QP */
};

/** DROCE_PORT_WAIT's default: a memif client waits this long for its server. */
#define DV_PORT_WAIT_S 10.0

/**
 * Parse the environment through @p get (getenv in the library, a table in
 * tests). @return 0, or -EINVAL with a one-line reason in @p err.
 */
int dv_config_parse(struct dv_config *c, const char *(*get)(const char *name),
		    char *err, unsigned errlen);

/** @return true when the EAL arguments @p argv choose the lcores (-l, -c, --lcores). */
bool dv_eal_names_cores(int argc, char *const *argv);
/**
 * The EAL argument that keeps EAL's main thread (the application's, which
 * calls ibv_open_device) inside the CPUs it may run on: "--lcores=0@(a,b,...)"
 * into @p buf. @p online: the CPUs the machine has.
 * @return 1 written; 0 when @p set holds every CPU (nothing to keep);
 *         -E2BIG when @p len is too small.
 */
int dv_lcores_arg(const cpu_set_t *set, long online, char *buf, size_t len);

struct dv_context;
struct dv_backend;

/* DROCE_COMM_CORE mode (backend_comm.c): channels (one per live CQ, reused once
 * the CQ is destroyed), ring depth, and the largest inline payload and SGE
 * count a WR may carry through a ring. */
#define DV_COMM_CHANNELS 1024u
#define DV_COMM_DEPTH 1024u
#define DV_COMM_MAX_INLINE 256u
/** Inline bounce slots per channel: twice the ring, so that the slot a
 *  post writes while the ring is full (it waits for room, backend_comm.c)
 *  is never the oldest queued command's. */
#define DV_COMM_BOUNCE (2u * DV_COMM_DEPTH)
/** Longest a post waits for ring room before it returns ENOMEM. */
#define DV_COMM_POST_WAIT_NS 1000000000ull

/** One comm-core channel as the verbs use it (backend_comm.c's). */
struct dv_chan {
	struct droce_chan *ch;
	atomic_int plock;           /**< producer side (posts) */
	atomic_int clock;           /**< consumer side (polls, event scans) */
	uint32_t produced;          /**< commands pushed: picks the bounce slot */
	uint8_t *bounce;            /**< DV_COMM_BOUNCE inline slots */
	bool used;                  /**< bound to a live CQ */
};

/** The one device of the process. */
struct dv_device {
	struct ibv_device ibdev;  /* first: ibv_device pointers are ours */
	/* Next, where rdma-core's verbs_device has its ops pointer: a
	 * provider asked about droce0 (libmlx5's mlx5dv_is_supported, which
	 * NCCL calls) reads cfg's first bytes, text, never its own ops. */
	struct dv_config cfg;
	bool configured;          /**< the environment parsed */
	bool stats;               /**< DROCE_VERBS_STATS: print QP counters at destroy */
	bool eal_up;              /**< EAL started (once per process) */
	struct droce_port *port;  /**< opened with the first context, kept until exit */
	uint8_t mac[6];
	uint16_t port_id;         /**< the DPDK port (link state for port events) */
	uint32_t roce_mtu;        /**< largest path MTU the port carries, bytes */
	struct dv_context *open;  /**< the open context (the engine), if any */
	pid_t eal_pid;            /**< the process that started EAL (lifecycle.c) */
	char sysfs[4096];         /**< the sysfs view's directory (sysfs.c), "" if none */
	pthread_mutex_t mu;       /**< guards the fields above (open/close) */
};

extern struct dv_device dv_dev;

struct dv_cq;

/** Asynchronous events on their way to ibv_get_async_event (async.c). */
struct dv_async {
	pthread_mutex_t mu;         /**< the queue (the application reads it unlocked from the context) */
	struct ibv_async_event q[DV_ASYNC_DEPTH];
	unsigned head, n;
	uint64_t lost;              /**< raised while the queue was full */
	int link_up;                /**< link state last seen, -1 before the first look */
	uint64_t link_next;         /**< when the progress thread looks again (dv_now) */
};

/** An open device context: the first open of the device, which owns the engine. */
struct dv_context {
	struct verbs_context vctx;  /* first; its last member is the ibv_context */
	struct dv_context *shared;  /**< itself (at the offset dv_alias has it) */
	unsigned opens;             /**< ibv_open_device()s not yet closed (dv_dev.mu) */
	struct dv_device *dev;
	struct droce_ctx *dctx;
	struct droce_port *port;
	struct dv_link link;        /**< the port's link, ACKs held (ack_hold.c; thread model) */
	/* The turn-taking of the file comment. */
	atomic_int lock;
	atomic_int want;
	atomic_bool stop;
	atomic_uint_fast64_t app_tsc; /**< when the application last left a verbs call */
	atomic_uint n_qps;          /**< the progress thread idles while 0 */
	const struct dv_backend *be; /**< the execution model, chosen at open (backend.h) */
	bool app_pinned;            /**< the opener runs on one CPU, the progress thread there too */
	unsigned posts_unpolled;    /**< sends posted since the last poll_cq (thread model; lock held) */
	bool have_thread;
	pthread_t thread;
	struct dv_pace pace;        /**< the progress thread's (pace.c); read after it ends */
	uint64_t tsc0;
	double ns_per_tsc;
	struct dv_cq *cqs;          /**< every CQ (events scan the armed ones) */
	/* The comm-core model's (backend_comm.c), unused by the other. */
	struct droce_comm *comm;
	struct droce_poller *poller;/**< the loop's busy/idle split and DROCE_IDLE; whoever polls */
	struct droce_telemetry *tel;/**< /droce/ on DPDK's telemetry socket (NULL: without) */
	struct dv_chan chan[DV_COMM_CHANNELS];
	unsigned n_chan;            /**< channels allocated (in use or free) */
	unsigned n_armed;           /**< CQs armed by req_notify_cq (lock held) */
	int async_fd;               /**< eventfd (semaphore): one count per event queued (async.c) */
	struct dv_async async;
};

/**
 * A further ibv_open_device() of the device while it is open: an
 * ibv_context of its own (objects made from it name it as their context,
 * as with rdma-core's distinct contexts) over the first open's engine, so
 * two components of one program (or librdmacm beside the application)
 * share the one port instead of the second getting EBUSY.
 */
struct dv_alias {
	struct verbs_context vctx;  /* first */
	struct dv_context *shared;  /**< the open that owns the engine */
};

_Static_assert(offsetof(struct dv_alias, shared) == offsetof(struct dv_context, shared),
	       "dv_ctx() reads shared at one offset for both");

/** The engine behind any droce ibv_context (the first open's, or an alias's). */
static inline struct dv_context *dv_ctx(struct ibv_context *c)
{
	return ((struct dv_alias *)((char *)c - offsetof(struct dv_alias, vctx.context)))->shared;
}

/* engine.c */
uint64_t dv_now(const struct dv_context *c);
void dv_lock(struct dv_context *c);
void dv_unlock(struct dv_context *c);
/** The application is about to sleep outside the verbs calls (get_cq_event):
 *  the progress thread may step in at its next look. */
void dv_app_sleeps(struct dv_context *c);
/** Take the context if the application neither holds nor wants it (the
 *  progress thread). */
bool dv_try_take(struct dv_context *c);
/** Give it back: the events it raised collected, the link state looked at. */
void dv_give_back(struct dv_context *c);
/** How long ago the application left its last verbs call. */
uint64_t dv_away_ns(const struct dv_context *c);
void dv_sleep_ns(long ns);
/** The progress thread's start (its name, pinned to @p cpu unless -1, a
 *  short scheduler slice, an lcore id) and end. */
void dv_progress_begin(struct dv_context *c, int cpu);
void dv_progress_end(void);
/** Post a list of receive WRs with @p post (droce_post_recv on a QP,
 *  droce_post_srq_recv on an SRQ) under dv_lock, *bad at the first refused.
 *  @return 0 or the positive errno. */
int dv_post_recv_locked(struct dv_context *c, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
			int (*post)(void *obj, struct droce_recv_wr *wr, struct droce_recv_wr **bad),
			void *obj);
/** ibv_post_srq_recv in both models: an SRQ's WQEs under dv_lock (backend.h). */
int dv_post_srq_locked(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/** Start EAL and the port (first open). @return 0 or a positive errno. */
int dv_engine_start(struct dv_device *d);
/** Create the droce context, the backend's state (c->be, set by the caller)
 *  and the progress thread. @return 0 or a positive errno. */
int dv_engine_open(struct dv_context *c);
/** Stop the progress thread and destroy the droce context. */
void dv_engine_close(struct dv_context *c);
/** At exit with @p c open: stop the progress thread, send what is queued,
 *  go quiet; the lock stays held and nothing is freed (lifecycle.c).
 *  @return the frames the last polls moved. */
unsigned dv_engine_exit(struct dv_context *c);
/** Resolve @p ip to a MAC on the port, polling meanwhile. Lock held. @return 0 or positive errno. */
int dv_resolve(struct dv_context *c, const uint8_t ip[4], uint8_t mac[6]);

/** A protection domain: droce's own (droce_alloc_pd), enforced by the engine's key checks. */
struct dv_pd {
	struct ibv_pd ibpd;
	struct droce_pd *dpd;
};

struct dv_mr {
	struct ibv_mr ibmr;
	struct droce_mr *dmr;
};

/** A completion channel: an eventfd that get_cq_event() and the armed CQs share. */
struct dv_channel {
	struct ibv_comp_channel ch;
	unsigned n_cqs;
};

struct dv_cq {
	struct ibv_cq ibcq;
	struct dv_context *c;
	struct droce_cq *dcq;
	struct dv_channel *chan;
	struct dv_cq *next;         /**< in the context's list */
	struct dv_chan *cc;         /**< its comm-core channel (backend_comm.c) */
	unsigned users;             /**< QPs using it (lock held) */
	/* Completions taken out of the droce CQ while looking for an event,
	 * handed out first by poll_cq. */
	struct ibv_wc *stash;
	unsigned stash_cap, stash_head, stash_n;
	bool armed;
	uint64_t stash_in;          /**< completions ever moved into the stash */
	uint64_t arm_mark;          /**< stash_in when armed: more means an event */
	uint32_t events;            /**< events raised */
	uint32_t delivered;         /**< ... and handed out by get_cq_event() */
	int overflowed;
	unsigned empty_polls;       /**< poll_cq calls in a row that found nothing */
	uint32_t events_reported;   /**< async events handed out (destroy waits for their acks) */
};

struct dv_qp {
	struct ibv_qp ibqp;
	struct dv_context *c;
	struct droce_qp *dqp;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	bool ud;                    /**< IBV_QPT_UD: send WRs carry wr.ud */
	uint32_t events_reported;   /**< async events handed out (destroy waits for their acks) */
};

/** A shared receive queue (srq.c). */
struct dv_srq {
	struct ibv_srq ibsrq;
	struct dv_context *c;
	struct droce_srq *dsrq;
	uint32_t events_reported;
};

/** A UD address handle (ah.c). */
struct dv_ah {
	struct ibv_ah ibah;
	struct dv_context *c;
	struct droce_ah *dah;
};

/*
 * poll_cq calls in a row that find nothing before the caller gives up its
 * CPU once (sched_yield). A program spinning on poll_cq may share its CPU
 * with the very thread it waits for: its peer's application (two
 * processes on one machine), or a progress thread; without the yield that
 * thread only runs when the scheduler's tick or a wake-up preempts the
 * spinner. With no one else runnable the yield returns at once. On 2 cores
 * at load 14-16, 5 alternated runs, medians: ib_write_lat 8 B typical
 * 49.5 us without, 5.5 us with; ib_write_bw 64 KB 299 -> 776 MB/s.
 * A program pinned to one CPU (taskset -c N, with the progress thread
 * there too) does not yield: it has placed itself, its peer is not queued
 * behind it, and its own progress thread preempts it on waking (the short
 * slice, engine.c); a yield would only hand the CPU to whatever else runs
 * there, a time slice at a time.
 */
#define POLL_YIELD_AFTER 64u

/* Inline, as the rest of the poll path: every poll_cq runs them. */

/** Counts a poll_cq that found @p got completions: true once every
 *  POLL_YIELD_AFTER empty ones in a row (the caller then yields its CPU). */
static inline bool dv_poll_idle(struct dv_cq *cq, int got)
{
	if (got) {
		cq->empty_polls = 0;
		return false;
	}
	if (++cq->empty_polls < POLL_YIELD_AFTER)
		return false;
	cq->empty_polls = 0;
	return true;
}

/** dv_armed_check() of an armed CQ (stash.c). */
unsigned dv_armed_pull(struct dv_cq *cq);

/** An armed CQ's completions into its stash, its event raised if one came
 *  (stash.c). Lock held. @return completions moved. */
static inline unsigned dv_armed_check(struct dv_cq *cq)
{
	return cq->armed ? dv_armed_pull(cq) : 0;
}

/* qp.c: a GRH-routed RoCEv2 AV as droce's (xlate.h), the next hop
 * resolved. Lock held. @return 0 or a positive errno. */
int dv_av_resolve(struct dv_context *c, const struct ibv_ah_attr *ah, struct droce_ah_attr *d);

/* stash.c: a CQ's stash and its events (cq.c), below both backends. */
/** Fill @p cq's stash from @p src (droce_poll_cq or a channel's poll) on
 *  @p from. @return completions moved. */
unsigned dv_stash_fill(struct dv_cq *cq, int (*src)(void *from, int n, struct droce_wc *wc),
		       void *from);
/** Hand out up to @p n stashed completions. @return how many. */
int dv_stash_take(struct dv_cq *cq, int n, struct ibv_wc *wc);
/** Move completions of armed CQs into their stash; raise their channel. Lock held. */
unsigned dv_scan_armed(struct dv_context *c);

/* The context ops of cq.c (the post and poll ops are the backend's). */
int dv_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* srq.c */
struct ibv_srq *dv_create_srq_ex(struct ibv_context *ic, struct ibv_srq_init_attr_ex *ia);

/* async.c */
/** Set up the event queue. @return the async fd (eventfd), or -1 with errno. */
int dv_async_open(struct dv_context *c);
void dv_async_close(struct dv_context *c);
/** Move the engine's events to the queue, counting each on the fd. dv_lock held. @return events moved. */
unsigned dv_async_collect(struct dv_context *c);
/** Port events from the DPDK link state (the progress thread, now and then). */
void dv_async_link(struct dv_context *c, uint64_t now);
/** Drop the queued events of a QP, CQ or SRQ being destroyed. dv_lock held. */
void dv_async_forget(struct dv_context *c, const void *obj);
/** The object's count of events handed out, NULL for a port event. */
uint32_t *dv_async_reported(const struct ibv_async_event *ev);
/** Wait until *completed (acks) reaches *reported (events handed out). */
void dv_async_wait_acked(pthread_mutex_t *mu, pthread_cond_t *cond, const uint32_t *completed,
			 const uint32_t *reported);

/* sysfs.c */
/** Write the sysfs view of @p d (node GUID @p guid) into @p dir. @return 0 or -1 with errno. */
int dv_sysfs_write(struct dv_device *d, const char *dir, uint64_t guid);
/** At the first device list: into $DROCE_SYSFS, or a directory removed at exit. */
void dv_sysfs_init(struct dv_device *d, uint64_t guid);

/* device.c */
int dv_query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a, size_t len);
int dv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *a, size_t len);

/* reach.c: 0 when every byte of [addr, addr + len) is mapped readable (and
 * writable if @p write), else EFAULT, as pinning it in a kernel driver. */
int dv_mem_reachable(const void *addr, size_t len, bool write);

#define DV_EXPORT __attribute__((visibility("default")))

#endif
