/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll loop's clock: the TSC, calibrated once (rte_get_tsc_hz), turned
 * into nanoseconds with one 64x64->128 multiply and a shift, no division,
 * no floating point and no system call per loop turn (principle 2, docs/architecture.md:
 * the loop reads the clock once per iteration and passes it in as `now`).
 * DPDK's EAL requires an invariant TSC on x86, so one calibration holds for
 * the life of the process.
 *
 * The conversion (droce_tsc_init / droce_tsc_ns) is plain arithmetic and
 * unit-tested without EAL (tests/unit/net/test_tsc.c); droce_tsc_now_ns
 * reads the counter.
 */
#ifndef DROCE_NET_PORT_TSC_H
#define DROCE_NET_PORT_TSC_H

#include <stdint.h>

#include <rte_cycles.h>

/* ns = (cycles * mult) >> DROCE_TSC_SHIFT. 32 bits of fraction: below
 * 1 ns of error per ~4 s of cycles at any rate from 1 MHz to 64 GHz, and
 * the 128-bit product cannot overflow for any 64-bit cycle count. */
#define DROCE_TSC_SHIFT 32

struct droce_tsc {
	uint64_t tsc0; /**< counter at the epoch (ns 0) */
	uint64_t mult; /**< 1e9 * 2^SHIFT / hz, rounded */
	uint64_t hz;
};

/** Epoch @p tsc0, rate @p hz (> 0) cycles per second. */
static inline void droce_tsc_init(struct droce_tsc *c, uint64_t hz, uint64_t tsc0)
{
	__extension__ typedef unsigned __int128 u128;
	c->tsc0 = tsc0;
	c->hz = hz;
	c->mult = (uint64_t)((((u128)1000000000u << DROCE_TSC_SHIFT) + hz / 2) / hz);
}

/** Nanoseconds from the epoch to counter value @p tsc (0 before it). */
static inline uint64_t droce_tsc_ns(const struct droce_tsc *c, uint64_t tsc)
{
	__extension__ typedef unsigned __int128 u128;
	uint64_t d = tsc > c->tsc0 ? tsc - c->tsc0 : 0;
	return (uint64_t)(((u128)d * c->mult) >> DROCE_TSC_SHIFT);
}

/** Calibrate from the EAL (after rte_eal_init) with the epoch now. */
static inline void droce_tsc_init_eal(struct droce_tsc *c)
{
	droce_tsc_init(c, rte_get_tsc_hz(), rte_rdtsc());
}

/** Nanoseconds since the epoch: one rdtsc, one multiply. */
static inline uint64_t droce_tsc_now_ns(const struct droce_tsc *c)
{
	return droce_tsc_ns(c, rte_rdtsc());
}

#endif
