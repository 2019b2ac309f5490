/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fault-contained burst (stack/net/port/port_guard.c) keeps a real
 * crash a crash. Each case runs in a child process forked after EAL
 * start-up, on a net_ring port made from two rte_rings (opened as the
 * stack opens a port); a burst given a
 * packet array on a PROT_NONE page faults inside the PMD (rte_ring reads
 * or writes the array), which is what memif does when its regions are
 * unmapped. The parent checks how the child ended:
 *  - a fault outside any burst, one inside a burst whose link is up, and
 *    a SIGSEGV sent with kill(): the child dies of SIGSEGV, the default
 *    action (so a core is written where cores are enabled);
 *  - a fault outside a burst with a handler installed before the guard:
 *    that handler runs;
 *  - a fault inside a burst whose link is down (the memif race): the burst
 *    returns -1, the child lives on (the control: the faults above are
 *    ones the guard could take back).
 * Every child is waited for at most CHILD_WAIT_S and then killed: a
 * handler that returns into the faulting instruction forever is a failure,
 * not a hang.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "net/port/port.h"
#include "net/port/port_guard.h"

#define CHILD_WAIT_S 10
#define EXIT_PREV_HANDLER 42
#define EXIT_PREV_AS_ASKED 43
#define EXIT_PREV_NOT_AS_ASKED 44

struct fixture {
	uint16_t port_id;
	struct rte_ring *rx, *tx;
	struct rte_mbuf **bad; /* a PROT_NONE page: any access faults */
};

static struct fixture fx;

typedef int child_fn(void);

/* How a child ended: its wait status, or -1 when it had to be killed. */
static int run_child(child_fn *fn)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* No core files from the cases that must crash; the signal
		 * that ended the child is what is checked. */
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		/* The test runner's own handler is not inherited as the one
		 * the guard finds: a process starts with the default. */
		signal(SIGSEGV, SIG_DFL);
		_exit(fn());
	}
	int st = 0;
	for (unsigned i = 0; i < CHILD_WAIT_S * 100; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return st;
		struct timespec nap = {0, 10000000};
		nanosleep(&nap, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void assert_died_of_segv(int st)
{
	assert_int_not_equal(st, -1); /* ended by itself */
	if (!WIFSIGNALED(st))
		fail_msg("child exited %d instead of dying of SIGSEGV", WEXITSTATUS(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);
}

static void assert_exited(int st, int code)
{
	assert_int_not_equal(st, -1);
	if (WIFSIGNALED(st))
		fail_msg("child died of signal %d instead of exiting %d", WTERMSIG(st), code);
	assert_int_equal(WEXITSTATUS(st), code);
}

static void touch_bad(void)
{
	*(volatile uintptr_t *)fx.bad = 1;
}

static int fault_outside_burst(void)
{
	if (droce_port_guard_init() != 0)
		return 2;
	/* A burst that ended normally first: nothing of it stays armed. */
	struct rte_mbuf *none[1];
	if (droce_port_guard_rx(fx.port_id, 0, none, 1) != 0)
		return 3;
	touch_bad();
	return 0;
}

static int fault_in_burst_link_up(void)
{
	if (droce_port_guard_init() != 0)
		return 2;
	droce_port_guard_tx(fx.port_id, 0, fx.bad, 4);
	return 0;
}

static int fault_in_burst_link_down(void)
{
	if (droce_port_guard_init() != 0 || rte_eth_dev_set_link_down(fx.port_id) != 0)
		return 2;
	if (droce_port_guard_tx(fx.port_id, 0, fx.bad, 4) != -1)
		return 3;
	/* RX writes the array: one mbuf-sized pointer waits on the ring. */
	if (rte_ring_enqueue(fx.rx, (void *)fx.bad) != 0)
		return 4;
	if (droce_port_guard_rx(fx.port_id, 0, fx.bad, 4) != -1)
		return 5;
	return 0;
}

static int segv_sent(void)
{
	if (droce_port_guard_init() != 0)
		return 2;
	kill(getpid(), SIGSEGV);
	return 0;
}

static void prev_handler(int sig)
{
	(void)sig;
	_exit(EXIT_PREV_HANDLER);
}

static int fault_with_prev_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = prev_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0 || droce_port_guard_init() != 0)
		return 2;
	touch_bad();
	return 0;
}

/* Installed with SIGUSR1 in its mask and SA_RESETHAND: when it runs,
 * SIGUSR1 and SIGSEGV are blocked and SIGSEGV is back to the default. */
static void prev_handler_resethand(int sig)
{
	sigset_t m;
	struct sigaction now;
	pthread_sigmask(SIG_BLOCK, NULL, &m);
	sigaction(sig, NULL, &now);
	bool ok = sigismember(&m, SIGUSR1) == 1 && sigismember(&m, SIGSEGV) == 1 &&
		  !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
	_exit(ok ? EXIT_PREV_AS_ASKED : EXIT_PREV_NOT_AS_ASKED);
}

static int fault_with_prev_resethand(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = prev_handler_resethand;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	if (sigaction(SIGSEGV, &sa, NULL) != 0 || droce_port_guard_init() != 0)
		return 2;
	touch_bad();
	return 0;
}

static void test_fault_outside_burst_kills(void **state)
{
	(void)state;
	assert_died_of_segv(run_child(fault_outside_burst));
}

static void test_fault_in_burst_link_up_kills(void **state)
{
	(void)state;
	assert_died_of_segv(run_child(fault_in_burst_link_up));
}

static void test_segv_sent_kills(void **state)
{
	(void)state;
	assert_died_of_segv(run_child(segv_sent));
}

static void test_fault_goes_to_prev_handler(void **state)
{
	(void)state;
	assert_exited(run_child(fault_with_prev_handler), EXIT_PREV_HANDLER);
}

static void test_prev_handler_gets_its_mask_and_flags(void **state)
{
	(void)state;
	assert_exited(run_child(fault_with_prev_resethand), EXIT_PREV_AS_ASKED);
}

static void test_fault_in_burst_link_down_contained(void **state)
{
	(void)state;
	assert_exited(run_child(fault_in_burst_link_down), 0);
}

int main(void)
{
	char *eal[] = {"test_port_guard", "--no-huge", "--no-pci", "--no-shconf", "-m", "256",
		       "--log-level=*:error", NULL};
	if (rte_eal_init(7, eal) < 0) {
		fprintf(stderr, "SKIP: EAL does not start here\n");
		return 77;
	}
	fx.rx = rte_ring_create("guard_rx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	fx.tx = rte_ring_create("guard_tx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	int pid = fx.rx && fx.tx ? rte_eth_from_rings("guard", &fx.rx, 1, &fx.tx, 1, SOCKET_ID_ANY)
				 : -1;
	void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct droce_port *port = NULL;
	if (pid >= 0) {
		/* configured and started as the stack does it */
		struct droce_port_conf c;
		droce_port_conf_init(&c);
		c.port_id = (uint16_t)pid;
		c.rx_desc = 64;
		c.tx_desc = 64;
		port = droce_port_open(&c);
	}
	if (port == NULL || page == MAP_FAILED) {
		fprintf(stderr, "net_ring port or page: %s\n", strerror(errno));
		return 1;
	}
	fx.port_id = (uint16_t)pid;
	fx.bad = page;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_outside_burst_kills),
		cmocka_unit_test(test_fault_in_burst_link_up_kills),
		cmocka_unit_test(test_segv_sent_kills),
		cmocka_unit_test(test_fault_goes_to_prev_handler),
		cmocka_unit_test(test_prev_handler_gets_its_mask_and_flags),
		cmocka_unit_test(test_fault_in_burst_link_down_contained),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	droce_port_close(port);
	rte_eal_cleanup();
	return rc;
}
