/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the drop-in's own test programs (errors.c, corners.c, retcodes.c)
 * share: a check that prints and counts, the socketpair the two
 * processes of a test talk over, and the open of droce0.
 */
#ifndef DROCE_TESTS_VERBS_VTEST_H
#define DROCE_TESTS_VERBS_VTEST_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static const char *side = "-"; /* which process speaks */

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			printf("ok   %s: ", side);                          \
		} else {                                                    \
			printf("FAIL %s (%s:%d): ", side, __FILE__, __LINE__); \
			failures++;                                         \
		}                                                           \
		printf(__VA_ARGS__);                                        \
		printf("\n");                                               \
		fflush(stdout);                                             \
	} while (0)

__attribute__((unused)) static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", side, what, strerror(errno));
	exit(1);
}

__attribute__((unused)) static void xsend(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("socketpair write");
}

__attribute__((unused)) static void xrecv(int fd, void *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r <= 0) {
			fprintf(stderr, "%s: peer went away\n", side);
			exit(1);
		}
		got += (size_t)r;
	}
}

/* The one device, droce0, opened; exits when there is none. */
__attribute__((unused)) static struct ibv_context *open_droce(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n != 1 || strcmp(ibv_get_device_name(list[0]), "droce0")) {
		fprintf(stderr, "%s: no droce0 (%d devices)\n", side, n);
		exit(1);
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		die("ibv_open_device");
	return ctx;
}

/* @p qp (RC, in RESET) to RTS towards @p peer on this same port (the same
 * GID: the port turns the frames around); exits on failure. */
__attribute__((unused)) static void rc_to_rts(struct ibv_qp *qp, uint32_t peer, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("RC INIT");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = peer, .rq_psn = 100, .max_dest_rd_atomic = 1,
				 .min_rnr_timer = 12,
				 .ah_attr = {.is_global = 1, .port_num = 1,
					     .grh = {.dgid = *gid, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RC RTR");
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = 100, .timeout = 14,
				 .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RC RTS");
}

/* fork() with a socketpair: the child gets *fd one end, the parent the
 * other. @return fork()'s value. */
__attribute__((unused)) static pid_t fork_pair(int *fd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	close(sv[pid == 0 ? 0 : 1]);
	*fd = sv[pid == 0 ? 1 : 0];
	return pid;
}

/* The end of a two-process test: wait for the child (the server) and
 * print the verdict. @return the exit code: 1 if a check or the child failed. */
__attribute__((unused)) static int finish(pid_t child, int rc)
{
	int st;
	waitpid(child, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL server exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		rc = 1;
	}
	printf("%s: %d failures\n", rc ? "FAIL" : "PASS", failures);
	return rc;
}

#endif
