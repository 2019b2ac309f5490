/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A poll loop's accounting and idle policy (include/droce/poll.h).
 *
 * Why sleeps and not a fixed nap after N empty polls: what an empty poll
 * costs depends on the link (a memif poll is ~50 ns, an af_packet one a
 * system call), so the policy counts time, not polls. A ping-pong's round
 * trip (a few microseconds here) is far below spin_ns and never sleeps;
 * a quiet endpoint backs off to sleep_max_ns sleeps, each followed by one
 * poll, which is what keeps it under a few percent of its core.
 *
 * Waking without a lost wake-up: the loop announces it is about to sleep
 * (asleep = 1), then looks whether a wake came since its last step
 * (kicks changed); a waker counts its kick, then writes the eventfd only
 * if the loop announced a sleep. Both sides do store-then-load with
 * sequentially consistent atomics, so at least one of them sees the other:
 * either the loop skips the sleep or the waker writes the eventfd.
 */
#include <droce/params.h>
#include <droce/poll.h>

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define POLLER_MAX_FDS 4

struct droce_poller {
	/* The loop's thread only. */
	struct droce_poller_conf conf;
	/* Written by the loop's thread only, read by droce_poller_get_stats()
	 * from any (telemetry's publisher): relaxed atomics, plain moves on
	 * x86-64. */
	atomic_uint_fast64_t busy_ns, idle_ns, busy_polls, idle_polls, sleeps, sleep_ns, woken;
	uint64_t last;          /* now of the previous step, 0 before the first */
	unsigned last_work;     /* its work */
	uint64_t last_busy;     /* now of the last step with work */
	uint64_t nap;           /* the next sleep of the back-off */
	unsigned kicks_seen;
	unsigned n_fds;
	struct pollfd fds[1 + POLLER_MAX_FDS]; /* the eventfd, then the added */
	/* Shared with wakers, on a line of their own. */
	_Alignas(64) atomic_uint kicks;
	atomic_int asleep;
	int efd;
};

void droce_poller_conf_init(struct droce_poller_conf *c)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	c->idle = DROCE_IDLE_BUSY;
	c->spin_ns = DROCE_DEFAULT_IDLE_SPIN_NS;
	c->sleep_max_ns = DROCE_DEFAULT_IDLE_SLEEP_MAX_NS;
}

struct droce_poller *droce_poller_create(const struct droce_poller_conf *c)
{
	if (!c || (c->idle != DROCE_IDLE_BUSY && c->idle != DROCE_IDLE_ADAPTIVE)) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_poller *p = aligned_alloc(64, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	p->conf = *c;
	if (!p->conf.spin_ns)
		p->conf.spin_ns = DROCE_DEFAULT_IDLE_SPIN_NS;
	if (!p->conf.sleep_max_ns)
		p->conf.sleep_max_ns = DROCE_DEFAULT_IDLE_SLEEP_MAX_NS;
	p->nap = DROCE_DEFAULT_IDLE_SLEEP_MIN_NS;
	atomic_init(&p->kicks, 0);
	atomic_init(&p->busy_ns, 0);
	atomic_init(&p->idle_ns, 0);
	atomic_init(&p->busy_polls, 0);
	atomic_init(&p->idle_polls, 0);
	atomic_init(&p->sleeps, 0);
	atomic_init(&p->sleep_ns, 0);
	atomic_init(&p->woken, 0);
	atomic_init(&p->asleep, 0);
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0) {
		int e = errno;
		free(p);
		errno = e;
		return NULL;
	}
	p->fds[0] = (struct pollfd){.fd = p->efd, .events = POLLIN};
	return p;
}

void droce_poller_destroy(struct droce_poller *p)
{
	if (!p)
		return;
	close(p->efd);
	free(p);
}

int droce_poller_add_fd(struct droce_poller *p, int fd)
{
	if (!p || fd < 0)
		return -EINVAL;
	if (p->n_fds == POLLER_MAX_FDS)
		return -ENOSPC;
	p->fds[1 + p->n_fds++] = (struct pollfd){.fd = fd, .events = POLLIN};
	return 0;
}

/* One writer: a load and a store, no locked add. */
static void add(atomic_uint_fast64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/* Sleep up to @p ns unless a wake came since the last step. */
static void nap(struct droce_poller *p, uint64_t ns)
{
	atomic_store(&p->asleep, 1);
	if (atomic_load(&p->kicks) != p->kicks_seen) {
		atomic_store(&p->asleep, 0);
		return;
	}
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
	int r = ppoll(p->fds, 1 + p->n_fds, &ts, NULL);
	atomic_store(&p->asleep, 0);
	add(&p->sleeps, 1);
	add(&p->sleep_ns, ns);
	if (r > 0) {
		add(&p->woken, 1);
		uint64_t v;
		if (p->fds[0].revents & POLLIN)
			(void)!read(p->efd, &v, sizeof(v)); /* drained; EAGAIN if a racing reader won */
	}
}

void droce_poller_step(struct droce_poller *p, uint64_t now, unsigned work, uint64_t deadline)
{
	if (!p)
		return;
	if (p->last && now >= p->last) {
		uint64_t d = now - p->last;
		if (p->last_work) {
			add(&p->busy_ns, d);
			add(&p->busy_polls, 1);
		} else {
			add(&p->idle_ns, d);
			add(&p->idle_polls, 1);
		}
	}
	p->last = now;
	p->last_work = work;
	if (work || !p->last_busy) {
		p->last_busy = now;
		p->nap = DROCE_DEFAULT_IDLE_SLEEP_MIN_NS;
	}
	if (p->conf.idle == DROCE_IDLE_ADAPTIVE && !work && now - p->last_busy >= p->conf.spin_ns &&
	    deadline > now) {
		uint64_t ns = p->nap;
		if (deadline - now < ns)
			ns = deadline - now;
		p->nap = p->nap * 2 > p->conf.sleep_max_ns ? p->conf.sleep_max_ns : p->nap * 2;
		nap(p, ns);
	}
	/* A wake from here on (during the next iteration's poll) keeps the
	 * next step from sleeping. */
	p->kicks_seen = atomic_load(&p->kicks);
}

void droce_poller_wake(struct droce_poller *p)
{
	/* conf never changes after create: a busy loop never sleeps, and its
	 * wakers pay one compare. */
	if (!p || p->conf.idle == DROCE_IDLE_BUSY)
		return;
	atomic_fetch_add(&p->kicks, 1);
	if (atomic_load(&p->asleep)) {
		uint64_t one = 1;
		(void)!write(p->efd, &one, sizeof(one));
	}
}

int droce_poller_get_stats(const struct droce_poller *p, struct droce_poller_stats *out)
{
	if (!p || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->busy_ns = atomic_load_explicit(&p->busy_ns, memory_order_relaxed);
	out->idle_ns = atomic_load_explicit(&p->idle_ns, memory_order_relaxed);
	out->busy_polls = atomic_load_explicit(&p->busy_polls, memory_order_relaxed);
	out->idle_polls = atomic_load_explicit(&p->idle_polls, memory_order_relaxed);
	out->sleeps = atomic_load_explicit(&p->sleeps, memory_order_relaxed);
	out->sleep_ns = atomic_load_explicit(&p->sleep_ns, memory_order_relaxed);
	out->woken = atomic_load_explicit(&p->woken, memory_order_relaxed);
	out->idle = p->conf.idle;
	return 0;
}

int droce_idle_mode_parse(const char *s, uint8_t *out)
{
	if (!s || !out)
		return -EINVAL;
	if (!strcmp(s, "busy"))
		*out = DROCE_IDLE_BUSY;
	else if (!strcmp(s, "adaptive"))
		*out = DROCE_IDLE_ADAPTIVE;
	else
		return -EINVAL;
	return 0;
}

const char *droce_idle_mode_name(unsigned mode)
{
	return mode == DROCE_IDLE_BUSY ? "busy" : mode == DROCE_IDLE_ADAPTIVE ? "adaptive" : "?";
}
