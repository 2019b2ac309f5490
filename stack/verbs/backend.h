/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop-in's two execution models behind one table (docs/verbs.md,
 * "Progress"): who drives the droce context, and how the post and poll
 * verbs reach it.
 *
 *  - backend_thread.c: the application drives it inside its verbs calls,
 *    and a progress thread takes over while it is away (dv.h's turns);
 *  - backend_comm.c (DROCE_COMM_CORE=N): a thread pinned to CPU N alone
 *    drives it, and the post and poll verbs cross the lock-free rings of
 *    include/droce/comm.h.
 *
 * ibv_open_device chooses one from the environment, once; the context ops
 * (post_send, post_recv, post_srq_recv, poll_cq) are the table's own
 * functions, so the hot path pays no test of the model. The verbs call the
 * rest through c->be. Only <infiniband/verbs.h> and forward declarations:
 * the table names the drop-in's objects, it includes none of their files
 * (tests/unit/includes.sh).
 */
#ifndef DROCE_VERBS_BACKEND_H
#define DROCE_VERBS_BACKEND_H

#include <stdbool.h>

#include <infiniband/verbs.h>

struct dv_context;
struct dv_cq;
struct dv_qp;
struct droce_ah;

struct dv_backend {
	const char *name;
	/** Largest SGE count of a send or receive WR (query_device's max_sge). */
	unsigned max_sge;
	/** The port's link holds ACKs for the application's next request
	 *  (ack_hold.h): only where the application polls. */
	bool hold_acks;
	/** After the droce context exists: the model's own state. @return 0 or positive errno. */
	int (*open)(struct dv_context *c);
	/** Before the droce context goes; the progress thread has ended. */
	void (*close)(struct dv_context *c);
	/** The progress thread's body, until c->stop. */
	void (*run)(struct dv_context *c);
	/** DROCE_VERBS_STATS (stderr): which model, once the device is open
	 *  (@p opened), or its counters at close. */
	void (*report)(const struct dv_context *c, bool opened);
	/** One poll from a verbs call that waits for the engine (modify_qp,
	 *  get_cq_event with @p app_polls). Lock held. @return work done. */
	unsigned (*drive)(struct dv_context *c, bool app_polls);

	/* Objects: what the model needs besides droce's own create/destroy. */
	/** A new QP's capabilities: EINVAL for what a WR of this model cannot carry. */
	int (*check_caps)(const struct ibv_qp_cap *cap);
	/** A new CQ (lock held). @return 0 or positive errno. */
	int (*cq_bind)(struct dv_cq *cq);
	/** A CQ no QP uses, before droce destroys it (lock held). */
	void (*cq_unbind)(struct dv_cq *cq);
	/** Destroy the droce QP (lock held). @return 0 or negative errno. */
	int (*destroy_qp)(struct dv_qp *qp);
	/** Destroy the droce AH (lock held). @return 0 or negative errno. */
	int (*destroy_ah)(struct dv_context *c, struct droce_ah *ah);

	/* The data path: the context ops themselves. */
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	/** Move what @p cq's completions source holds into its stash (cq.c's
	 *  events). Lock held. @return completions moved. */
	unsigned (*pull)(struct dv_cq *cq);
};

extern const struct dv_backend dv_backend_thread;
extern const struct dv_backend dv_backend_comm;

#endif
