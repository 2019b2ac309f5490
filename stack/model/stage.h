/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll-stage trace's marks (include/droce/trace.h). Off (no
 * DROCE_STAGE_TRACE), every mark is empty and struct droce_stage_acc has
 * no members read: the hot path pays nothing. On, a mark reads the cycle
 * counter and charges the time since the last mark to the stage that ran;
 * the poll's own stages are kept apart until the poll ends, then go to
 * their stages if it did work, or whole to IDLE if it found nothing.
 *
 * This is the one place below the apps that reads a clock: the engine's
 * time is its caller's (now), but a breakdown of where a poll's time goes
 * cannot be measured from outside the poll.
 */
#ifndef DROCE_MODEL_STAGE_H
#define DROCE_MODEL_STAGE_H

#include <droce/trace.h>

#include <stdint.h>

struct droce_stage_acc {
	uint64_t t0;                            /* the last mark */
	uint8_t cur;                            /* the stage running since */
	uint64_t poll[DROCE_STAGE_COUNT];       /* this poll's, not yet charged */
	struct droce_stage_stats s;
};

#ifdef DROCE_STAGE_TRACE

#include <time.h>

static inline uint64_t droce_stage_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Enter stage @p s; @return the stage left (to come back to it). */
static inline uint8_t droce_stage_enter(struct droce_stage_acc *a, uint8_t s)
{
	uint64_t t = droce_stage_clock();
	uint8_t was = a->cur;
	if (a->t0) {
		if (was == DROCE_STAGE_CALLER)
			a->s.cycles[was] += t - a->t0; /* between polls: never idle */
		else
			a->poll[was] += t - a->t0;
	}
	a->t0 = t;
	a->cur = s;
	a->s.entries[s]++;
	return was;
}

/* The poll ends, with @p work done: charge its stages, back to the caller. */
static inline void droce_stage_poll_end(struct droce_stage_acc *a, unsigned work)
{
	droce_stage_enter(a, DROCE_STAGE_CALLER);
	a->s.entries[DROCE_STAGE_CALLER]--; /* not a stage change of the poll's */
	uint64_t sum = 0;
	for (unsigned i = 1; i < DROCE_STAGE_COUNT; i++) {
		if (work)
			a->s.cycles[i] += a->poll[i];
		else
			sum += a->poll[i];
		a->poll[i] = 0;
	}
	if (work) {
		a->s.work_polls++;
	} else {
		a->s.cycles[DROCE_STAGE_IDLE] += sum;
		a->s.idle_polls++;
	}
}

#else

static inline uint8_t droce_stage_enter(struct droce_stage_acc *a, uint8_t s)
{
	(void)a;
	(void)s;
	return 0;
}

static inline void droce_stage_poll_end(struct droce_stage_acc *a, unsigned work)
{
	(void)a;
	(void)work;
}

#endif

#define DROCE_STAGE_ENTER(acc, s) droce_stage_enter((acc), (s))
#define DROCE_STAGE_BACK(acc, was) ((void)droce_stage_enter((acc), (was)))
#define DROCE_STAGE_POLL_END(acc, work) droce_stage_poll_end((acc), (work))

#endif
