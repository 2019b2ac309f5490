/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the librdmacm drop-in (stack/rdmacm) needs of the libibverbs one:
 * the droce context and QP behind an ibv_context / ibv_qp, the context's
 * turn-taking lock, its clock and the port's ARP. Exported by
 * libibverbs.so.1 under the private version DROCE_VERBS_PRIVATE_1 (no
 * rdma-core program sees it); one table, so librdmacm binds one symbol.
 */
#ifndef DROCE_VERBS_CM_HOOK_H
#define DROCE_VERBS_CM_HOOK_H

#include <stdint.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>

struct droce_verbs_cm_hooks {
	unsigned version;                                     /* 1 */
	struct droce_ctx *(*dctx)(struct ibv_context *c);      /* NULL: not droce's */
	struct droce_qp *(*dqp)(struct ibv_qp *qp);
	void (*lock)(struct ibv_context *c);                   /* the application's turn */
	void (*unlock)(struct ibv_context *c);
	uint64_t (*now)(struct ibv_context *c);                /* ns, the context's clock */
	/** Non-blocking ARP on the port (lock held): 0, -EAGAIN, -errno. */
	int (*resolve)(void *ibv_context, uint8_t ip_version, const uint8_t ip[16],
		       uint8_t mac[6], uint64_t now);
	/** The device's IPv4 address (DROCE_IP). */
	void (*local_ip)(struct ibv_context *c, uint8_t ip[4]);
	/** The context the application opened already (one per device), or NULL. */
	struct ibv_context *(*open_context)(void);
};

const struct droce_verbs_cm_hooks *droce_verbs_cm_hooks(void);

#endif
