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

/**
 * Create the comm-core state for @p ctx with @p n_chan channels whose rings
 * hold @p depth entries each (a power of two; 0 = 1024).
 * @return NULL with errno EINVAL (no ctx, n_chan 0 or > 64, depth not a power of two) or ENOMEM.
 */
struct droce_comm *droce_comm_create(struct droce_ctx *ctx, unsigned n_chan, unsigned depth);

/** Free it (the context is not touched). */
void droce_comm_destroy(struct droce_comm *comm);

/** Channel @p i, or NULL when out of range. */
struct droce_chan *droce_comm_chan(struct droce_comm *comm, unsigned i);

/**
 * Deliver @p cq's completions to @p chan. Call before the threads start.
 * @return 0, -EINVAL (NULL), -EBUSY (bound already), -ENOSPC (too many CQs).
 */
int droce_comm_bind_cq(struct droce_comm *comm, struct droce_cq *cq, struct droce_chan *chan);

/**
 * Comm-core side: move posted WRs from every channel into their QPs, run
 * one droce_ctx_poll(ctx, now), and move completions of bound CQs into
 * their channels (a full channel leaves them in the CQ: backpressure).
 * @return work done (WRs moved + completions moved + the poll's count).
 */
unsigned droce_comm_poll(struct droce_comm *comm, uint64_t now);

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
