/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One service per context run from its poll loop: the hook through which
 * a layer above core/ (the CM service, stack/cm/svc.c, which owns QP1) is
 * driven by droce_ctx_poll() without core/ calling up by name. core/ knows
 * only these three callbacks; the service uses the public API.
 */
#ifndef DROCE_MODEL_SERVICE_H
#define DROCE_MODEL_SERVICE_H

#include <stdint.h>

struct droce_ctx;

struct droce_ctx_service {
	/** Each droce_ctx_poll(), after RX and timers, before the QPs transmit,
	 * so what it posts leaves in the same poll. @return work done (0: idle). */
	unsigned (*poll)(void *arg, uint64_t now);
	/** Its earliest deadline (UINT64_MAX: none), folded into droce_ctx_next_deadline(). */
	uint64_t (*next_deadline)(const void *arg);
	/** droce_ctx_destroy(), before the context's QPs, CQs and MRs are freed. */
	void (*destroy)(void *arg);
	void *arg;
};

/**
 * Install @p s on @p ctx (copied), or with NULL remove the current one.
 * @return 0, -EINVAL (NULL ctx, no poll callback), -EEXIST (one is installed).
 */
int droce_ctx_set_service(struct droce_ctx *ctx, const struct droce_ctx_service *s);

/** The installed service's arg when its poll callback is @p poll, else NULL. */
void *droce_ctx_service_arg(const struct droce_ctx *ctx, unsigned (*poll)(void *, uint64_t));

#endif
