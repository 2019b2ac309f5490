/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress thread's pace (engine.c runs it; docs/verbs.md "How it
 * runs" and "Speed").
 *
 * The window. The progress thread leaves the context to an application
 * that left a verbs call less than active_ns ago: one in a poll_cq loop
 * drives the engine itself, and two pollers per process would only fight
 * over the lock and the CPUs. The window adapts: it starts at
 * PACE_ACTIVE_MIN_NS and doubles, up to PACE_ACTIVE_MAX_NS, each time the
 * progress thread steps in while the application is away and finds nothing
 * to do (a ping-pong whose replies all arrive inside poll_cq, ack_hold.c); it
 * drops back to the minimum as soon as stepping in finds work (a program
 * that waits on memory for a peer's WRITE, or one whose peer does not hold
 * its ACKs).
 *
 * The nap while the application drives. Each look at the application's
 * clock is a wake-up, and on a CPU the application shares (a pinned run:
 * one CPU per process, progress thread included) a wake-up preempts it:
 * the short slice asked for in engine.c makes sure of that. Looking every
 * window (5 us) while ib_write_bw's client posts and polls, or while
 * ib_write_lat's replies arrive inside poll_cq, is up to 200,000
 * preemptions a second for nothing. So the nap doubles, from the window up
 * to PACE_DRIVE_NAP_MAX_NS (5,000 looks a second), for as long as every
 * look finds the application driving, and starts again from the window
 * when a look finds it gone (the thread steps in) or finds ACKs it held
 * past their time; a look that sees ACKs held comes back when they are
 * due (ack_hold.c's hold, 4 us). The price is reaction time: an application
 * that stops calling after a long stretch of driving is noticed up to
 * PACE_DRIVE_NAP_MAX_NS later (the first WRITE of a bandwidth test, once;
 * a ping-pong reply that missed poll_cq, 0.02-0.09 % of ib_write_lat's
 * iterations on 2 loaded CPUs). get_cq_event() marks the application away
 * before it sleeps (cq.c).
 *
 * Stepping in: busy polls follow each other, PACE_BUSY_STREAK at most
 * before a nap; an idle poll naps PACE_IDLE_NAP_NS (PACE_IDLE_LONG_NS after
 * PACE_IDLE_LONG of them), or the ACK hold when ACKs wait for a request.
 * Naps rather than spins: a thread that mostly sleeps has used less than
 * its share of the CPU, so when it wakes the scheduler lets it in at once
 * (EEVDF lag), even while the application spins on memory on the same CPU
 * (ib_write_lat); a spinning one has used its share and waits for the
 * application's time slice to end (ms). Measured on 2 cores: 2 us naps,
 * typical 5 ms; 10 us naps, ~20-40 us.
 */
#include "verbs/pace.h"

void dv_pace_init(struct dv_pace *p)
{
	*p = (struct dv_pace){.active_ns = PACE_ACTIVE_MIN_NS, .drive_nap_ns = PACE_ACTIVE_MIN_NS};
}

uint64_t dv_pace_driving(struct dv_pace *p, uint64_t away_ns, bool flushed, uint64_t due_in_ns)
{
	p->looks++;
	if (flushed)
		p->drive_nap_ns = p->active_ns;
	uint64_t nap = p->drive_nap_ns;
	/* Never before the window can have run out. */
	if (away_ns < p->active_ns && p->active_ns - away_ns > nap)
		nap = p->active_ns - away_ns;
	/* ACKs held for a request leave in time if the application stops
	 * calling: back when they are due. Most of the time the application
	 * has sent them by then (a ping-pong holds one for about a
	 * microsecond per round trip), so the look is not counted against the
	 * nap, which neither grows nor shrinks. */
	if (due_in_ns && due_in_ns < nap)
		return due_in_ns;
	p->drive_nap_ns = p->drive_nap_ns * 2 > PACE_DRIVE_NAP_MAX_NS ? PACE_DRIVE_NAP_MAX_NS
								      : p->drive_nap_ns * 2;
	return nap;
}

uint64_t dv_pace_stepped_in(struct dv_pace *p, unsigned n, bool recent, bool held,
			    uint64_t hold_ns)
{
	p->polls++;
	p->busy_polls += n != 0;
	if (recent)
		p->active_ns = n ? PACE_ACTIVE_MIN_NS
				 : (p->active_ns * 2 > PACE_ACTIVE_MAX_NS ? PACE_ACTIVE_MAX_NS
									  : p->active_ns * 2);
	/* The application was away: the next time it drives, look often. */
	p->drive_nap_ns = p->active_ns;
	if (n) {
		p->idle = 0;
		if (++p->busy < PACE_BUSY_STREAK)
			return 0;
		p->busy = 0;
		return PACE_IDLE_NAP_NS;
	}
	p->busy = 0;
	if (held)
		return hold_ns; /* ACKs held for the application's next request: back when due */
	return ++p->idle >= PACE_IDLE_LONG ? PACE_IDLE_LONG_NS : PACE_IDLE_NAP_NS;
}
