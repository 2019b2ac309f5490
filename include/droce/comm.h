/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The comm-core execution model: a context runs on a dedicated core (the
 * comm core) and application threads on other cores post work requests and
 * take completions through lock-free single-producer/single-consumer rings,
 * one pair per application thread (a channel). No locks on the hot path.
 *
 * The other model needs none of this: the application calls
 * droce_ctx_poll() in its own loop and uses verbs.h directly.
 *
 * Ownership: everything in verbs.h stays owned by the comm core thread after
 * setup. An application thread only calls the droce_chan_* functions on its
 * own channel. QPs, CQs and MRs are created before the threads start (or by
 * the comm core thread), and each CQ is bound to exactly one channel.
 *
 * Errors: a WR the comm core cannot post (droce_post_send/recv returns an
 * error) comes back as a completion on the channel with status
 * DROCE_WC_LOC_QP_OP_ERR and vendor_err = the positive errno, since the
 * application's post returned long before.
 */
#ifndef DROCE_COMM_H
#define DROCE_COMM_H

#include <stdint.h>

#include <droce/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_comm;
struct droce_chan;

/** Most SGEs a WR posted through a channel may carry. */
#define DROCE_CHAN_MAX_SGE 4

/** Most channels a comm may have. */
#define DROCE_COMM_MAX_CHAN 4096

/**
 * Create the comm-core state for @p ctx with up to @p n_chan channels whose
 * rings hold @p depth entries each (a power of two; 0 = 1024). A channel's
 * rings (about depth * 250 bytes) are allocated when droce_comm_chan()
 * first returns it, and the comm core looks only at channels handed out.
 * @return NULL with errno EINVAL (no ctx, n_chan 0 or > DROCE_COMM_MAX_CHAN,
 * depth not a power of two) or ENOMEM.
 */
struct droce_comm *droce_comm_create(struct droce_ctx *ctx, unsigned n_chan, unsigned depth);

/** Free it (the context is not touched). */
void droce_comm_destroy(struct droce_comm *comm);

/** Channel @p i (allocated by the first call), or NULL when out of range
 *  (or out of memory: errno ENOMEM). Not concurrent with droce_comm_poll(). */
struct droce_chan *droce_comm_chan(struct droce_comm *comm, unsigned i);

/**
 * Deliver @p cq's completions to @p chan (several CQs may share one).
 * Not concurrent with droce_comm_poll().
 * @return 0, -EINVAL (NULL), -EBUSY (bound already), -ENOMEM.
 */
int droce_comm_bind_cq(struct droce_comm *comm, struct droce_cq *cq, struct droce_chan *chan);

/**
 * Stop delivering @p cq's completions, before droce_destroy_cq(): its
 * channel may then serve another CQ. Completions already in the channel's
 * ring stay there. Not concurrent with droce_comm_poll().
 * @return 0, -EINVAL (NULL), -ENOENT (not bound).
 */
int droce_comm_unbind_cq(struct droce_comm *comm, struct droce_cq *cq);

/**
 * Comm-core side: move posted WRs from every channel into their QPs, run
 * one droce_ctx_poll(ctx, now), and move completions of bound CQs into
 * their channels (a full channel leaves them in the CQ: backpressure).
 * @return work done (WRs moved + completions moved + the poll's count).
 */
unsigned droce_comm_poll(struct droce_comm *comm, uint64_t now);

/**
 * Step @p p (poll.h) at the end of every droce_comm_poll(): the comm core's
 * busy/idle accounting and, under DROCE_IDLE_ADAPTIVE, its sleeps (bounded
 * by the context's next timer); droce_chan_post_send/recv, and a
 * droce_chan_poll_cq() that frees ring room, wake it. NULL: none (the
 * default, polling as fast as the caller loops). Before the application
 * threads use their channels; @p p outlives the comm or is detached first.
 * @return 0 or -EINVAL (NULL comm).
 */
struct droce_poller;
int droce_comm_set_poller(struct droce_comm *comm, struct droce_poller *p);

/**
 * Comm-core side: destroy @p qp (droce_destroy_qp) and drop every command
 * for it still waiting in a channel's ring (a full completion ring leaves
 * commands there), as a destroyed QP's outstanding WRs are dropped without
 * completions. Use it instead of droce_destroy_qp for a QP posted to through
 * channels: a command left behind would run against the freed QP.
 * @return droce_destroy_qp's result, or -EINVAL (NULL).
 */
int droce_comm_destroy_qp(struct droce_comm *comm, struct droce_qp *qp);

/**
 * Comm-core side: destroy @p ah (droce_destroy_ah); a send command naming it
 * that still waits in a ring completes with DROCE_WC_LOC_QP_OP_ERR
 * (vendor_err EINVAL) instead of being posted. WRs already posted keep the
 * handle alive until they have left (verbs.h).
 * @return droce_destroy_ah's result, or -EINVAL (NULL).
 */
int droce_comm_destroy_ah(struct droce_comm *comm, struct droce_ah *ah);

/**
 * Application side: queue one send WR (copied, SGEs included) for @p qp.
 * wr->next is ignored. @return 0, -EAGAIN (ring full: poll completions and
 * retry), -EINVAL (NULL, more than DROCE_CHAN_MAX_SGE SGEs).
 */
int droce_chan_post_send(struct droce_chan *chan, struct droce_qp *qp, const struct droce_send_wr *wr);

/** Application side: queue one receive WR. Same returns as droce_chan_post_send(). */
int droce_chan_post_recv(struct droce_chan *chan, struct droce_qp *qp, const struct droce_recv_wr *wr);

/** Application side: take up to @p n completions. @return the count (0 when none). */
int droce_chan_poll_cq(struct droce_chan *chan, int n, struct droce_wc *wc);

#ifdef __cplusplus
}
#endif

#endif
