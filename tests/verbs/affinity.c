/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs program pinned by its user (taskset, sched_setaffinity) stays
 * pinned over droce: ibv_open_device() starts EAL, which would otherwise
 * let its main thread float over every CPU (stack/net/port/eal_args.c), and
 * the progress thread must stay inside the program's CPUs too
 * (docs/verbs.md "How it runs"). Built against <infiniband/verbs.h> and
 * linked with droce's libibverbs.so.1.
 *
 *   verbs_affinity    (exit 0: pinned before and after; 1: a check failed;
 *                      77: fewer than two CPUs, nothing to check)
 */
#include <dirent.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	failures += !ok;
}

/* Every thread of this process allowed on @p cpu only? Names the others. */
static int threads_on(int cpu)
{
	DIR *d = opendir("/proc/self/task");
	int ok = d != NULL;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		cpu_set_t s;
		CPU_ZERO(&s);
		if (sched_getaffinity(atoi(e->d_name), sizeof(s), &s))
			continue; /* the thread ended meanwhile */
		char name[64] = "?", path[300];
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(name, sizeof(name), f))
				name[strcspn(name, "\n")] = 0;
			fclose(f);
		}
		int only = CPU_COUNT(&s) == 1 && CPU_ISSET(cpu, &s);
		printf("     thread %s (%s): %d CPUs%s\n", e->d_name, name, CPU_COUNT(&s),
		       only ? "" : ", not only the program's");
		/* EAL's own control threads (interrupts, telemetry) sleep; what
		 * runs the program is its main thread and the progress thread. */
		if (!strncmp(name, "eal-intr", 8) || !strncmp(name, "telemetry", 9) ||
		    !strncmp(name, "rte_mp", 6))
			continue;
		ok &= only;
	}
	if (d)
		closedir(d);
	return ok;
}

int main(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("SKIP: one CPU, nothing to pin against\n");
		return 77;
	}
	/* The last CPU: EAL's own default (-l 0) must not pass for a pin. */
	cpu_set_t s;
	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof(s), &s)) {
		perror("sched_getaffinity");
		return 1;
	}
	int cpu = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &s))
			cpu = i;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s)) {
		perror("sched_setaffinity");
		return 1;
	}
	char sock[64];
	snprintf(sock, sizeof(sock), "memif:server,socket=/tmp/droce-affinity-%d.sock", (int)getpid());
	setenv("DROCE_PORT", sock, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);

	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	check(ctx != NULL, "droce0 opens");
	if (!ctx)
		return 1;
	/* The progress thread starts polling once a QP exists; a CQ and a
	 * QP make sure it runs (and has pinned itself, if it does). */
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	check(qp != NULL, "a PD, a CQ and an RC QP");
	usleep(200000);
	printf("     the program pinned itself to CPU %d\n", cpu);
	check(threads_on(cpu), "after ibv_open_device, the program's threads run on its CPU only");
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return failures ? 1 : 0;
}
