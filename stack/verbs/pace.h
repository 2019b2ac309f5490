/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * When the progress thread polls and how long it naps (pace.c). Pure: time
 * comes in as arguments, so the unit suite steps it (tests/verbs/test_pace.c).
 */
#ifndef DROCE_VERBS_PACE_H
#define DROCE_VERBS_PACE_H

#include <stdbool.h>
#include <stdint.h>

/* The progress thread's nap after an idle poll, and after PACE_IDLE_LONG
 * idle polls in a row (a quiet link, ~1 s), a longer one. */
#define PACE_IDLE_NAP_NS 10000u
#define PACE_IDLE_LONG 100000u
#define PACE_IDLE_LONG_NS 200000u
/* Busy polls in a row before a nap all the same: a stream never keeps the
 * CPU from the application for long. */
#define PACE_BUSY_STREAK 64u
/* The window: the progress thread leaves the context to an application
 * that left a verbs call this recently (pace.c). */
#define PACE_ACTIVE_MIN_NS 5000u
#define PACE_ACTIVE_MAX_NS 100000u
/* An application that left a verbs call this recently is still around
 * (spinning on memory for the peer's WRITE, ib_write_lat): ACKs the
 * progress thread produces may wait for its next request as well. */
#define PACE_RECENT_NS 50000u
/* While the application drives, the progress thread looks again after a
 * nap that doubles from PACE_ACTIVE_MIN_NS up to this (pace.c). */
#define PACE_DRIVE_NAP_MAX_NS 200000u

struct dv_pace {
	uint64_t active_ns;    /**< the window */
	uint64_t drive_nap_ns; /**< next nap while the application drives */
	unsigned idle, busy;   /**< polls in a row that found nothing / work */
	/* Counters (DROCE_VERBS_STATS). */
	uint64_t looks;        /**< wake-ups that found the application driving */
	uint64_t polls, busy_polls; /**< polls when it was away; those that found work */
};

void dv_pace_init(struct dv_pace *p);

/** @return true when an application @p away_ns out of its last verbs call
 *  still drives the context (the progress thread keeps off it). */
static inline bool dv_pace_app_drives(const struct dv_pace *p, uint64_t away_ns)
{
	return away_ns < p->active_ns;
}

/**
 * The application drives. @p flushed: the progress thread had to send ACKs
 * the application held past their time (it stopped calling with ACKs
 * held). @p due_in_ns: ACKs are held and due in that long (0: none held).
 * @return how long to nap before looking again (ns).
 */
uint64_t dv_pace_driving(struct dv_pace *p, uint64_t away_ns, bool flushed, uint64_t due_in_ns);

/**
 * The progress thread stepped in and polled: @p n is what the poll did
 * (frames, completions moved), @p recent whether the application had left
 * its last verbs call less than PACE_RECENT_NS before, @p held whether ACKs
 * are held back for a request. @return how long to nap (ns; 0: poll again
 * at once), @p hold_ns being the ACK hold.
 */
uint64_t dv_pace_stepped_in(struct dv_pace *p, unsigned n, bool recent, bool held,
			    uint64_t hold_ns);

#endif
