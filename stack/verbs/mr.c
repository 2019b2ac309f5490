/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains and memory regions, onto droce's own (droce_alloc_pd,
 * droce_reg_mr_pd): the engine compares a QP's PD with the region's in
 * every L_Key and R_Key check (IBTA 10.6.3.2), and ibv_dealloc_pd is EBUSY
 * while anything is in the PD, as rdma-core's. Access flags are translated
 * (IBTA 10.6.3.1: remote write and atomic need local write, which droce
 * checks and we report as EINVAL, as the kernel does).
 *
 * Fork (ibv_fork_init): droce reads and writes registered memory by its
 * virtual address from the parent's own threads, so copy-on-write keeps the
 * parent right; what a child must not do is use the device, whose port
 * queues live in DPDK memory the child shares with the parent. Fork is
 * therefore not "unneeded": without ibv_fork_init (or RDMAV_FORK_SAFE /
 * IBV_FORK_SAFE in the environment, as rdma-core reads them) the report is
 * IBV_FORK_DISABLED; with it, registered memory is marked MADV_DONTFORK as
 * rdma-core marks it, so a child does not inherit a copy of buffers the
 * parent's engine keeps writing.
 */
#include "verbs/dv.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Process-wide, as rdma-core's: fork safety is a property of the process. */
static atomic_int fork_on;
static atomic_long live_mrs;

static int fork_env(void)
{
	return getenv("RDMAV_FORK_SAFE") || getenv("IBV_FORK_SAFE");
}

DV_EXPORT int ibv_fork_init(void)
{
	if (atomic_load(&fork_on))
		return 0;
	/* rdma-core: too late once memory is registered. */
	if (atomic_load(&live_mrs))
		return EINVAL;
	atomic_store(&fork_on, 1);
	return 0;
}

DV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return atomic_load(&fork_on) || fork_env() ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

/* madvise on the whole pages of [addr, addr + len). @return 0 or errno. */
static int fork_advise(void *addr, size_t len, int advice)
{
	if (!len || !(atomic_load(&fork_on) || fork_env()))
		return 0;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~(pg - 1);
	uintptr_t e = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);
	return madvise((void *)a, e - a, advice) ? errno : 0;
}

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
	struct dv_context *c = dv_ctx(ic);
	dv_lock(c);
	pd->dpd = droce_alloc_pd(c->dctx);
	int e = errno;
	dv_unlock(c);
	if (!pd->dpd) {
		free(pd);
		errno = e;
		return NULL;
	}
	pd->ibpd.context = ic;
	return &pd->ibpd;
}

DV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	if (!ibpd)
		return EINVAL;
	struct dv_pd *pd = (struct dv_pd *)ibpd;
	struct dv_context *c = dv_ctx(ibpd->context);
	dv_lock(c);
	int r = droce_dealloc_pd(pd->dpd); /* -EBUSY while an MR, QP or AH is in it */
	dv_unlock(c);
	if (r)
		return -r;
	free(pd);
	return 0;
}

/* Flags droce implements, and the optional ones rdma-core lets a device
 * ignore (IBV_ACCESS_OPTIONAL_RANGE, e.g. relaxed ordering). */
#define KNOWN_ACCESS (DV_ACCESS_KNOWN | IBV_ACCESS_MW_BIND)

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
	/* Memory droce cannot reach fails here, as pinning fails in a kernel
	 * driver (reach.c): EFAULT now, not a fault in a later transfer. */
	int e = dv_mem_reachable(addr, len, a & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_ATOMIC));
	if (e) {
		errno = e;
		return NULL;
	}
	unsigned da = dv_access_to_droce(a);
	struct dv_context *c = dv_ctx(pd->context);
	struct dv_mr *mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	e = fork_advise(addr, len, MADV_DONTFORK);
	if (e) {
		free(mr);
		errno = e;
		return NULL;
	}
	dv_lock(c);
	mr->dmr = droce_reg_mr_pd(((struct dv_pd *)pd)->dpd, addr, len, da);
	e = errno;
	dv_unlock(c);
	if (!mr->dmr) {
		fork_advise(addr, len, MADV_DOFORK);
		free(mr);
		errno = e;
		return NULL;
	}
	atomic_fetch_add(&live_mrs, 1);
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
	/* (A range registered twice loses DONTFORK with its first region: the
	 * child then inherits a copy, which costs the parent nothing.) */
	fork_advise(ibmr->addr, ibmr->length, MADV_DOFORK);
	atomic_fetch_sub(&live_mrs, 1);
	free(mr);
	return 0;
}
