/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine under the verbs: EAL and the DPDK port (once per process), the
 * droce context (one per open device), the turn-taking lock of dv.h, the
 * start and end of the progress thread whose body is the backend's
 * (backend.h), and ARP resolution for modify_qp(RTR).
 */
#include "verbs/dv.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "net/port/eal.h"
#include "net/port/port.h"
#include "telemetry/telemetry.h"
#include "verbs/backend.h"

/* Spins on a held lock before yielding the CPU instead. */
#define LOCK_SPINS 2000u
/* Shutdown: how long queued frames may take to leave, and how long we stay
 * silent before the port can go away (docs/usage.md: a memif peer still
 * polling when we disconnect can crash in DPDK 22.11). */
#define CLOSE_FLUSH_NS 100000000ull
#define CLOSE_LINGER_US 100000u

uint64_t dv_now(const struct dv_context *c)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - c->tsc0) * c->ns_per_tsc);
}

void dv_lock(struct dv_context *c)
{
	/* Uncontended (the common case: the application alone), one atomic
	 * exchange; only a caller that finds the lock taken announces itself
	 * so that the progress thread steps aside. */
	if (!atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
		return;
	atomic_fetch_add_explicit(&c->want, 1, memory_order_relaxed);
	unsigned spins = 0;
	while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&c->lock, memory_order_relaxed)) {
			/* The holder may have been preempted on our CPU (more
			 * pollers than cores): let it run rather than spin out a
			 * whole time slice. */
			if (++spins < LOCK_SPINS)
				rte_pause();
			else
				sched_yield();
		}
	atomic_fetch_sub_explicit(&c->want, 1, memory_order_relaxed);
}

void dv_unlock(struct dv_context *c)
{
	/* The progress thread measures the application's absence from its
	 * last exit; while it holds the lock it drives anyway (progress_main),
	 * so the way in needs no stamp. */
	if (c->dctx)
		dv_async_collect(c); /* what the call raised (modify_qp to ERR, a poll) */
	atomic_store_explicit(&c->app_tsc, rte_get_tsc_cycles(), memory_order_relaxed);
	atomic_store_explicit(&c->lock, 0, memory_order_release);
}

void dv_app_sleeps(struct dv_context *c)
{
	/* A stamp at the start of the clock: away for as long as it can be. */
	atomic_store_explicit(&c->app_tsc, c->tsc0, memory_order_relaxed);
}

void dv_sleep_ns(long ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
	nanosleep(&ts, NULL);
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "droce: cannot pin the progress thread to CPU %d\n", cpu);
}

/*
 * Ask for a short scheduler slice (EEVDF, Linux 6.12+: sched_runtime of a
 * SCHED_OTHER thread is its slice). A waking thread with a shorter slice
 * may preempt the running one at once (PREEMPT_SHORT), so the progress
 * thread's nap ends on time even when the application spins on memory on
 * the same CPU. Older kernels ignore it.
 */
struct dv_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

static void short_slice(void)
{
	struct dv_sched_attr a = {.size = sizeof(a), .policy = SCHED_OTHER, .runtime = 100000};
	(void)syscall(SYS_sched_setattr, 0, &a, 0);
}

bool dv_try_take(struct dv_context *c)
{
	return !atomic_load_explicit(&c->want, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&c->lock, 1, memory_order_acquire);
}

void dv_give_back(struct dv_context *c)
{
	dv_async_collect(c);
	dv_async_link(c, dv_now(c));
	atomic_store_explicit(&c->lock, 0, memory_order_release);
}

uint64_t dv_away_ns(const struct dv_context *c)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() -
				   atomic_load_explicit(&c->app_tsc, memory_order_relaxed)) *
			  c->ns_per_tsc);
}

void dv_progress_begin(struct dv_context *c, int cpu)
{
	(void)c;
	/* Its own name, so that top and perf tell it from the application. */
	pthread_setname_np(pthread_self(), "droce-progress");
	if (cpu >= 0)
		pin(cpu);
	/* Sleeps of a few microseconds must be that, not the default 50 us slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	short_slice();
	/* An lcore id gives this thread its own mempool caches. */
	rte_thread_register();
}

void dv_progress_end(void)
{
	rte_thread_unregister();
}

static int post_srq(void *srq, struct droce_recv_wr *wr, struct droce_recv_wr **bad)
{
	return droce_post_srq_recv(srq, wr, bad);
}

int dv_post_srq_locked(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dv_srq *s = (struct dv_srq *)ibsrq;
	return dv_post_recv_locked(s->c, wr, bad, post_srq, s->dsrq);
}

static void *progress_main(void *arg)
{
	struct dv_context *c = arg;
	c->be->run(c);
	return NULL;
}

int dv_post_recv_locked(struct dv_context *c, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
			int (*post)(void *obj, struct droce_recv_wr *wr, struct droce_recv_wr **bad),
			void *obj)
{
	int r = 0;
	dv_lock(c);
	for (; wr; wr = wr->next) {
		struct droce_recv_wr d = {.wr_id = wr->wr_id,
					  .sg_list = (struct droce_sge *)wr->sg_list,
					  .num_sge = wr->num_sge};
		struct droce_recv_wr *dbad;
		r = -post(obj, &d, &dbad);
		if (r) {
			*bad = wr;
			break;
		}
	}
	dv_unlock(c);
	return r;
}

/* Split DROCE_EAL on blanks into @p v (pointers into @p buf). */
static int split(char *buf, char **v, int max)
{
	int n = 0;
	for (char *s = strtok(buf, " \t"); s; s = strtok(NULL, " \t")) {
		if (n == max)
			return -1;
		v[n++] = s;
	}
	return n;
}

int dv_engine_start(struct dv_device *d)
{
	if (!d->eal_up) {
		char buf[sizeof(d->cfg.eal)], vdev[sizeof(d->cfg.port_arg) + 8];
		char *v[DROCE_EAL_MAX_ARGS];
		strcpy(buf, d->cfg.eal);
		int n = split(buf, v, DROCE_EAL_MAX_ARGS - 5);
		if (n < 0) {
			fprintf(stderr, "droce: DROCE_EAL has too many arguments\n");
			return E2BIG;
		}
		bool loglevel = false;
		for (int i = 0; i < n; i++)
			loglevel |= !strncmp(v[i], "--log-level", 11);
		if (!loglevel && !getenv("DROCE_EAL_VERBOSE"))
			v[n++] = "--log-level=lib.eal:error";
		/* A program its user pinned (taskset) stays pinned: EAL sets
		 * its main thread's affinity, the calling thread's, and by
		 * default (eal.h) to every CPU. The progress thread inherits
		 * the result (or takes DROCE_LCORE). */
		char lcores[1024];
		cpu_set_t mine;
		CPU_ZERO(&mine);
		if (!dv_eal_names_cores(n, v) && !sched_getaffinity(0, sizeof(mine), &mine) &&
		    dv_lcores_arg(&mine, sysconf(_SC_NPROCESSORS_ONLN), lcores, sizeof(lcores)) == 1)
			v[n++] = lcores;
		struct droce_eal_opts eo = {0};
		if (!strcmp(d->cfg.port_kind, "memif")) {
			eo.memif = d->cfg.port_arg;
		} else if (!strcmp(d->cfg.port_kind, "iface")) {
			eo.iface = d->cfg.port_arg;
		} else {
			snprintf(vdev, sizeof(vdev), "--vdev=%s", d->cfg.port_arg);
			v[n++] = vdev;
		}
		int r = droce_eal_init("droce-verbs", n, v, &eo);
		if (r) {
			fprintf(stderr, "droce: EAL start failed: %s\n", strerror(-r));
			return -r;
		}
		d->eal_up = true;
		d->eal_pid = getpid();
	}
	if (d->port)
		return 0;
	uint16_t port_id = (uint16_t)rte_eth_find_next(0);
	if (port_id >= RTE_MAX_ETHPORTS) {
		fprintf(stderr, "droce: DROCE_PORT gave no DPDK port\n");
		return ENODEV;
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	pc.port_id = port_id;
	pc.ip_version = 4;
	memcpy(pc.ip, d->cfg.ip, 4);
	pc.start_wait_ns = (uint64_t)(d->cfg.port_wait_s * 1e9);
	pc.start_needs_link = !strcmp(d->cfg.port_kind, "memif") && !strncmp(d->cfg.port_arg, "client", 6);
	d->port = droce_port_open(&pc);
	if (!d->port) {
		int e = errno ? errno : ENODEV;
		fprintf(stderr, "droce: port %u: %s\n", port_id, strerror(e));
		return e;
	}
	struct droce_port_info info;
	droce_port_get_info(d->port, &info);
	memcpy(d->mac, info.mac, 6);
	d->port_id = info.port_id;
	d->roce_mtu = info.roce_mtu;
	return 0;
}

/* What dv_engine_open made after the context, and the context: its way
 * out on an error and dv_engine_close's end. @return @p e. */
static int undo_open(struct dv_context *c, int e)
{
	droce_telemetry_close(c->tel);
	c->tel = NULL;
	droce_poller_destroy(c->poller);
	c->poller = NULL;
	droce_ctx_destroy(c->dctx);
	c->dctx = NULL;
	return e;
}

int dv_engine_open(struct dv_context *c)
{
	struct dv_device *d = c->dev;
	c->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	c->tsc0 = rte_get_tsc_cycles();
	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	cp.ip_version = 4;
	memcpy(cp.ip, d->cfg.ip, 4);
	memcpy(cp.mac, d->mac, 6);
	cp.link = c->be->hold_acks
			  ? dv_link_init(&c->link, droce_port_link(d->port), DV_ACK_HOLD_NS)
			  : droce_port_link(d->port);
	/* No seed: the context draws its keys from getrandom(2) (a TSC value
	 * is guessable to within a few bits by anyone who knows the uptime). */
	cp.max_mtu = (uint8_t)droce_mtu_of_bytes(d->roce_mtu);
	cp.max_qps = DV_MAX_QP;
	cp.max_mrs = DV_MAX_MR;
	c->dctx = droce_ctx_create(&cp);
	if (!c->dctx)
		return errno ? errno : ENOMEM;
	c->port = d->port;
	struct droce_poller_conf plc;
	droce_poller_conf_init(&plc);
	plc.idle = d->cfg.idle;
	c->poller = droce_poller_create(&plc);
	if (!c->poller)
		return undo_open(c, errno ? errno : ENOMEM);
	/* dpdk-telemetry.py -f PREFIX reads /droce/ctx etc. while it runs. */
	c->tel = droce_telemetry_open(c->dctx, c->port, "droce0");
	droce_telemetry_set_poller(c->tel, c->poller);
	/* Pinned by its user (taskset, or DROCE_EAL -l): poll_cq need not
	 * yield (cq.c). The progress thread inherits the opener's CPU. */
	cpu_set_t mine;
	CPU_ZERO(&mine);
	c->app_pinned = !sched_getaffinity(0, sizeof(mine), &mine) && CPU_COUNT(&mine) == 1 &&
			(d->cfg.lcore < 0 || CPU_ISSET(d->cfg.lcore, &mine));
	int e = c->be->open(c);
	if (e)
		return undo_open(c, e);
	/* The link as it is at open is the baseline: every change after it
	 * is a port event, even one before the progress thread's first look. */
	dv_async_link(c, dv_now(c));
	atomic_init(&c->lock, 0);
	atomic_init(&c->want, 0);
	atomic_init(&c->stop, false);
	atomic_init(&c->n_qps, 0);
	atomic_init(&c->app_tsc, 0);
	if (pthread_create(&c->thread, NULL, progress_main, c)) {
		c->be->close(c);
		return undo_open(c, EAGAIN);
	}
	c->have_thread = true;
	if (d->stats)
		c->be->report(c, true);
	return 0;
}

/* DROCE_VERBS_STATS: the context's drop reasons and the port's TX refusals. */
static void print_drops(const struct dv_context *c)
{
	struct droce_ctx_stats cs;
	struct droce_port_stats ps;
	if (droce_ctx_get_stats(c->dctx, &cs) || droce_port_get_stats(c->port, &ps))
		return;
	fprintf(stderr, "droce: context: rx %llu, tx %llu frames, tx busy %llu; port: tx refused %llu, "
		"looped back %llu, bursts cut short by the peer's unmap tx %llu (%llu frames) rx %llu",
		(unsigned long long)cs.rx_frames, (unsigned long long)cs.tx_frames,
		(unsigned long long)cs.tx_busy, (unsigned long long)ps.tx_nobufs,
		(unsigned long long)ps.tx_loopback, (unsigned long long)ps.tx_faulted,
		(unsigned long long)ps.tx_abandoned, (unsigned long long)ps.rx_faulted);
	for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++) {
		const char *name = droce_drop_reason_name(i);
		if (!name)
			break;
		if (cs.drop[i])
			fprintf(stderr, ", drop %s %llu", name, (unsigned long long)cs.drop[i]);
	}
	fprintf(stderr, "\n");
	fprintf(stderr, "droce: ACKs held for a request: %llu left with one, %llu alone (%llu polls held)\n",
		(unsigned long long)c->link.piggybacked, (unsigned long long)c->link.expired,
		(unsigned long long)c->link.held_polls);
	struct droce_poller_stats l;
	if (!droce_poller_get_stats(c->poller, &l)) {
		uint64_t all = l.busy_ns + l.idle_ns;
		fprintf(stderr, "droce: poll loop: idle %s, busy %.1f%% (%.3f s busy, %.3f s idle; "
			"%llu busy, %llu empty polls), %llu sleeps (%llu woken early)\n",
			droce_idle_mode_name(l.idle), all ? 100.0 * (double)l.busy_ns / (double)all : 0.0,
			(double)l.busy_ns / 1e9, (double)l.idle_ns / 1e9, (unsigned long long)l.busy_polls,
			(unsigned long long)l.idle_polls, (unsigned long long)l.sleeps,
			(unsigned long long)l.woken);
	}
	c->be->report(c, false);
}

void dv_engine_close(struct dv_context *c)
{
	if (c->have_thread) {
		atomic_store(&c->stop, true);
		pthread_join(c->thread, NULL);
		c->have_thread = false;
	}
	if (!c->dctx)
		return;
	uint64_t end = dv_now(c) + CLOSE_FLUSH_NS;
	while (droce_port_tx_pending(c->port) && dv_now(c) < end)
		droce_ctx_poll(c->dctx, dv_now(c));
	c->be->close(c);
	if (c->dev->stats)
		print_drops(c);
	undo_open(c, 0);
	rte_delay_us_sleep(CLOSE_LINGER_US);
}

unsigned dv_engine_exit(struct dv_context *c)
{
	if (c->have_thread) {
		atomic_store(&c->stop, true);
		pthread_join(c->thread, NULL);
		c->have_thread = false;
	}
	dv_lock(c);
	if (!c->dctx)
		return 0;
	/* Not an application poll: ACKs held for its next request leave now. */
	unsigned moved = 0;
	uint64_t end = dv_now(c) + CLOSE_FLUSH_NS;
	do
		moved += droce_ctx_poll(c->dctx, dv_now(c));
	while (droce_port_tx_pending(c->port) && dv_now(c) < end);
	rte_delay_us_sleep(CLOSE_LINGER_US);
	return moved;
}

int dv_resolve(struct dv_context *c, const uint8_t ip[4], uint8_t mac[6])
{
	uint64_t end = dv_now(c) + DV_ARP_TIMEOUT_NS;
	for (;;) {
		int r = droce_port_resolve(c->port, ip, mac, dv_now(c));
		if (r == 0)
			return 0;
		if (r != -EAGAIN)
			return -r;
		if (dv_now(c) > end)
			return ETIMEDOUT;
		droce_ctx_poll(c->dctx, dv_now(c));
	}
}
