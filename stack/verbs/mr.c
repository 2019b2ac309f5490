/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains and memory regions. droce keys MRs per context and has
 * no PD object, so a PD is bookkeeping only; MRs map onto droce_reg_mr()
 * with the access flags translated (IBTA 10.6.3.1: remote write and atomic
 * need local write, which droce checks and we report as EINVAL, as the
 * kernel does).
 */
#include "verbs/dv.h"

#include <errno.h>
#include <stdlib.h>

DV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ic)
{
	if (!ic) {
		errno = EINVAL;
		return NULL;
	}
	struct dv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = ic;
	return &pd->ibpd;
}

DV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!pd)
		return EINVAL;
	free(pd);
	return 0;
}

/* Flags droce implements, and the optional ones rdma-core lets a device
 * ignore (IBV_ACCESS_OPTIONAL_RANGE, e.g. relaxed ordering). */
#define KNOWN_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		      IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access)
{
	if (!pd || (!addr && len)) {
		errno = EINVAL;
		return NULL;
	}
	unsigned a = (unsigned)access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	if (a & ~(unsigned)KNOWN_ACCESS) {
		/* Zero-based, on-demand paging, ...: not in droce. MW_BIND is
		 * accepted, as on every rdma-core device: it only allows
		 * binding memory windows, of which droce has none. */
		errno = EINVAL;
		return NULL;
	}
	if ((uintptr_t)addr != iova) {
		/* droce addresses remote memory by virtual address only. */
		errno = EOPNOTSUPP;
		return NULL;
	}
	unsigned da = 0;
	if (a & IBV_ACCESS_LOCAL_WRITE)
		da |= DROCE_ACCESS_LOCAL_WRITE;
	if (a & IBV_ACCESS_REMOTE_WRITE)
		da |= DROCE_ACCESS_REMOTE_WRITE;
	if (a & IBV_ACCESS_REMOTE_READ)
		da |= DROCE_ACCESS_REMOTE_READ;
	if (a & IBV_ACCESS_REMOTE_ATOMIC)
		da |= DROCE_ACCESS_REMOTE_ATOMIC;
	struct dv_context *c = dv_ctx(pd->context);
	struct dv_mr *mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	dv_lock(c);
	mr->dmr = droce_reg_mr(c->dctx, addr, len, da);
	int e = errno;
	dv_unlock(c);
	if (!mr->dmr) {
		free(mr);
		errno = e;
		return NULL;
	}
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = len;
	mr->ibmr.lkey = mr->dmr->lkey;
	mr->ibmr.rkey = mr->dmr->rkey;
	return &mr->ibmr;
}

/* verbs.h turns ibv_reg_mr() into a macro over __ibv_reg_mr() when the
 * access argument is not a constant; the exported symbol is the function. */
#undef ibv_reg_mr
DV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return reg(pd, addr, len, (uintptr_t)addr, access);
}

#undef ibv_reg_mr_iova
DV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					 int access)
{
	return reg(pd, addr, len, iova, access);
}

DV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					  unsigned int access)
{
	return reg(pd, addr, len, iova, (int)access);
}

DV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	if (!ibmr)
		return EINVAL;
	struct dv_mr *mr = (struct dv_mr *)ibmr;
	struct dv_context *c = dv_ctx(ibmr->context);
	dv_lock(c);
	int r = droce_dereg_mr(mr->dmr);
	dv_unlock(c);
	if (r)
		return -r;
	free(mr);
	return 0;
}
