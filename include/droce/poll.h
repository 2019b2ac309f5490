/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A poll loop's accounting and idle policy. A thread that drives a context
 * (droce_ctx_poll(), droce_comm_poll()) calls droce_poller_step() once per
 * iteration with the time the iteration started and the work it did:
 *
 *   for (;;) {
 *           uint64_t now = my_clock_ns();
 *           unsigned n = droce_ctx_poll(ctx, now) + completions_taken;
 *           droce_poller_step(pl, now, n, droce_ctx_next_deadline(ctx));
 *   }
 *
 * Accounting, as DPDK's lcore busyness: the time from one step to the next
 * belongs to the iteration that started at the first; it counts as busy
 * when that iteration did work (frames received or sent, WRs moved,
 * completions taken), as idle when it found nothing. Time slept is idle.
 *
 * Idle policy (DROCE_IDLE_BUSY, the default: poll without pause, the
 * lowest latency and a whole core; DROCE_IDLE_ADAPTIVE: after spin_ns of
 * empty polls, sleep, from DROCE_DEFAULT_IDLE_SLEEP_MIN_NS doubling to
 * sleep_max_ns, never past the context's next timer deadline, so that ACK
 * timeouts and pacing fire on time). A sleep ends early when another
 * thread calls droce_poller_wake() (its posted work) or a descriptor given
 * to droce_poller_add_fd() becomes readable (a port's Rx interrupt). The
 * first iteration with work returns the loop to busy polling.
 *
 * Time is the caller's (nanoseconds of any monotonic clock); the poller
 * reads no clock itself. One poller per loop thread: droce_poller_wake()
 * and droce_poller_get_stats() are the only calls made from other threads.
 */
#ifndef DROCE_POLL_H
#define DROCE_POLL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a poll loop does when it finds nothing to do. */
enum droce_idle_mode {
	DROCE_IDLE_BUSY = 0,     /**< keep polling (the whole core, lowest latency) */
	DROCE_IDLE_ADAPTIVE = 1, /**< spin a while, then sleep until work, a wake or a timer */
};

struct droce_poller_conf {
	uint8_t idle;            /**< enum droce_idle_mode */
	uint64_t spin_ns;        /**< adaptive: poll this long after the last work before
				      sleeping; 0 = DROCE_DEFAULT_IDLE_SPIN_NS */
	uint64_t sleep_max_ns;   /**< adaptive: longest sleep; 0 = DROCE_DEFAULT_IDLE_SLEEP_MAX_NS */
};

/** The loop's time, split by what its iterations did. */
struct droce_poller_stats {
	uint64_t busy_ns;        /**< in iterations that did work */
	uint64_t idle_ns;        /**< in iterations that found none (sleeps included) */
	uint64_t busy_polls, idle_polls; /**< iterations of each kind */
	uint64_t sleeps;         /**< adaptive: sleeps taken */
	uint64_t sleep_ns;       /**< ... and their total length as asked (an early wake cuts it) */
	uint64_t woken;          /**< sleeps ended by droce_poller_wake() or an added descriptor */
	uint8_t idle;            /**< enum droce_idle_mode in force */
};

/** Fill @p c with the defaults (DROCE_IDLE_BUSY). */
void droce_poller_conf_init(struct droce_poller_conf *c);

/**
 * @return a poller, or NULL with errno EINVAL (NULL @p c, unknown idle mode)
 * or the errno of eventfd(2) / malloc (ENOMEM).
 */
struct droce_poller *droce_poller_create(const struct droce_poller_conf *c);

/** Free it (NULL: nothing). */
void droce_poller_destroy(struct droce_poller *p);

/**
 * After one iteration of the loop, from the loop's thread: account the
 * time since the previous step to that one's work, then, under
 * DROCE_IDLE_ADAPTIVE and when nothing has been done for spin_ns, sleep
 * until @p deadline (ns, same clock; UINT64_MAX: no timer), at most the
 * current back-off step, or until woken.
 * @p now the time the iteration started, @p work what it did (0: nothing).
 */
void droce_poller_step(struct droce_poller *p, uint64_t now, unsigned work, uint64_t deadline);

/**
 * From any thread, after queueing work for the loop (a WR in a ring): end
 * its sleep, or keep it from starting one. One atomic add and a load when
 * the loop is not asleep, a write(2) to an eventfd when it is.
 */
void droce_poller_wake(struct droce_poller *p);

/**
 * Also end sleeps when @p fd becomes readable (poll(2) POLLIN): a port's Rx
 * interrupt descriptor, an application's own eventfd. The poller neither
 * reads nor closes it. @return 0, -EINVAL (NULL, fd < 0), -ENOSPC (4 already).
 */
int droce_poller_add_fd(struct droce_poller *p, int fd);

/** Copy the counters, from any thread (each read atomically; the set is
 * not one instant's). @return 0 or -EINVAL. */
int droce_poller_get_stats(const struct droce_poller *p, struct droce_poller_stats *out);

/** "busy" or "adaptive" to @p out. @return 0, or -EINVAL for anything else. */
int droce_idle_mode_parse(const char *s, uint8_t *out);

/** "busy", "adaptive", or "?" for a value that is neither. */
const char *droce_idle_mode_name(unsigned mode);

#ifdef __cplusplus
}
#endif

#endif
