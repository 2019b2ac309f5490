/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A memif peer that vanishes mid-burst.
 *
 * DPDK 22.11's memif PMD ends a connection on the EAL interrupt thread:
 * when the control socket reads EOF, memif_disconnect() clears the
 * CONNECTED flag and the link status, then munmap()s the shared regions
 * (memif_free_regions). Its TX and RX bursts test CONNECTED once, on
 * entry, and then read the ring and copy into or out of the regions: a
 * poll thread inside a burst at that moment faults (SIGSEGV in
 * eth_memif_tx / eth_memif_rx). The PMD is a shared library of the
 * distribution, so the race has to be handled from outside, and from
 * outside there is nothing to lock against: memif raises no ethdev event
 * on disconnect (it never calls rte_eth_dev_callback_process), its
 * control channel's interrupt handle and callback are private, and the
 * regions are its own mmap()s of memfds, known to no DPDK API.
 *
 * So the burst is made fault-contained: a sigsetjmp() before it (without
 * the signal mask: no system call, a few dozen instructions per burst),
 * the jump buffer armed in a thread-local pointer for the burst's
 * duration, and a SIGSEGV handler that jumps back only when the faulting
 * thread is inside such a burst AND that port's link is already down.
 * memif_disconnect() stores the link status before it unmaps, and the
 * munmap's TLB shootdown makes that store visible to the faulting CPU
 * before the fault, so a fault from this race always finds the link
 * down. Every other SIGSEGV (another thread, no burst, a link still up)
 * goes to the handler installed before ours, or to the default action:
 * a real bug crashes as it would have.
 *
 * What a cut-short burst leaves: the PMD takes no lock in its bursts and
 * the fault is in its copy or ring access, never inside the mempool, so
 * the pools stay consistent; but it had freed (TX) or allocated (RX)
 * some of the burst's mbufs, and which is unknown. The caller forgets
 * the whole burst: at most one batch of mbufs leaked per disconnect,
 * never one freed twice. What is not covered: the unmapped range taken
 * by a new mapping in the instants between the munmap and the poll
 * thread's next access (then the access does not fault); nothing in the
 * interrupt thread's disconnect maps memory, but another thread could.
 *
 * The handler and the previous action are process-wide by nature (one
 * per signal); the armed burst is per thread. One handler serves every
 * port of every context of the process.
 */
#include "net/port/port_guard.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <rte_ethdev.h>

struct armed_burst {
	sigjmp_buf jb;
	uint16_t port_id;
};

/* initial-exec: the handler reads it without a TLS allocation, even on a
 * thread that never ran a burst (libdroce may be dlopen()ed). */
static __thread struct armed_burst *volatile armed __attribute__((tls_model("initial-exec")));
static struct sigaction prev;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc;

static bool link_down(uint16_t port_id)
{
	/* memif's link_update does nothing in a primary process: this is
	 * a load of the status memif_disconnect() stored. */
	struct rte_eth_link l;
	memset(&l, 0, sizeof(l));
	return rte_eth_link_get_nowait(port_id, &l) == 0 && l.link_status == RTE_ETH_LINK_DOWN;
}

/* The previous handler runs as the kernel would have run it (its
 * sa_mask and, without SA_NODEFER, the signal itself blocked for its
 * duration; SA_RESETHAND: the default action from its entry on), not
 * under our mask: a handler that counts on SIGSEGV being blocked, or on
 * being called only once, sees what it asked for. */
static void call_prev(int sig, siginfo_t *si, void *uc)
{
	sigset_t m = prev.sa_mask, old;
	if (!(prev.sa_flags & SA_NODEFER))
		sigaddset(&m, sig);
	struct sigaction now = prev;
	if (prev.sa_flags & SA_RESETHAND) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
	}
	pthread_sigmask(SIG_BLOCK, &m, &old);
	if (now.sa_flags & SA_SIGINFO)
		now.sa_sigaction(sig, si, uc);
	else
		now.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void pass_on(int sig, siginfo_t *si, void *uc)
{
	if ((prev.sa_flags & SA_SIGINFO) ? prev.sa_sigaction != NULL
					 : prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		call_prev(sig, si, uc);
		return;
	}
	/* The default action: reset it, and let the faulting instruction run
	 * again (a signal that was sent, not a fault, is raised again). */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	if (si == NULL || si->si_code <= 0)
		raise(sig);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	struct armed_burst *a = armed;
	if (a != NULL && si != NULL && si->si_code > 0 && link_down(a->port_id)) {
		armed = NULL;
		siglongjmp(a->jb, 1);
	}
	pass_on(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	/* NODEFER: the jump out of the handler skips the kernel's mask
	 * restore, and the burst's sigsetjmp saved no mask: SIGSEGV must not
	 * stay blocked on that thread. ONSTACK: an alternate stack set up by
	 * someone else (a sanitizer) is used, as theirs would be. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	init_rc = sigaction(SIGSEGV, &sa, &prev) == 0 ? 0 : -errno;
}

int droce_port_guard_init(void)
{
	pthread_once(&once, install);
	return init_rc;
}

int droce_port_guard_tx(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct armed_burst a;
	a.port_id = port_id;
	if (sigsetjmp(a.jb, 0) != 0)
		return -1;
	armed = &a;
	uint16_t sent = rte_eth_tx_burst(port_id, queue, pkts, n);
	armed = NULL;
	return sent;
}

int droce_port_guard_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	struct armed_burst a;
	a.port_id = port_id;
	if (sigsetjmp(a.jb, 0) != 0)
		return -1;
	armed = &a;
	uint16_t got = rte_eth_rx_burst(port_id, queue, pkts, n);
	armed = NULL;
	return got;
}
