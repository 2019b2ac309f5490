/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The environment of a one-process test of the drop-in: a memif server
 * port of its own with no peer (the port turns frames to its own address
 * around), and with @p comm the DROCE_COMM_CORE model on the last CPU.
 * Before the first ibv_get_device_list().
 */
#ifndef DROCE_TESTS_VERBS_LOOP_ENV_H
#define DROCE_TESTS_VERBS_LOOP_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* @p name keeps the socket apart from other tests' (DPDK's memif socket
 * is abstract: no file is left), the pid from other runs'. */
static inline void loop_env(const char *name, int comm)
{
	char port[128], cpu[24];
	snprintf(port, sizeof(port), "memif:server,socket=/tmp/droce-verbs-%s-%d.sock", name,
		 (int)getpid());
	setenv("DROCE_PORT", port, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);
	if (comm) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		snprintf(cpu, sizeof(cpu), "%ld", n > 1 ? n - 1 : 0);
		setenv("DROCE_COMM_CORE", cpu, 1);
	}
}

#endif
