/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's lifecycle (docs/nccl.md, "Exit and unload").
 *
 * Unload: libibverbs.so.1 and librdmacm.so.1 are linked -z nodelete
 * (stack/verbs/lib/meson.build), so dlclose() never unmaps them. A
 * destructor cannot make unloading safe: the DPDK libraries under us
 * start threads of their own (the EAL interrupt thread, the multi-process
 * and telemetry threads) that rte_eal_cleanup() does not all stop, and EAL
 * cannot start a second time in one process, so a program that dlclosed
 * droce and dlopened it again (Open MPI's components, NCCL's net plugins)
 * could not get a device back anyway. Kept mapped, a second dlopen finds
 * the same library with its device, and threads still running droce code
 * (the progress thread, librdmacm's pump) run code that is still there.
 *
 * Exit: a program may exit with the device open (NCCL never calls
 * ibv_close_device). This destructor then runs once, at exit, in the
 * process that opened it: it stops the progress thread before libc and
 * DPDK go away under it, sends what is queued (ACKs held for the
 * application's next request included, so the peer's last WRs complete),
 * and stays silent for the peer to take the last frames before the kernel
 * closes the port's socket. It keeps the context's lock and frees nothing:
 * another thread of the program may still be inside a verbs call, or
 * enter one, until the process ends; it waits there instead of touching a
 * freed context. A child that fork()ed and exits does nothing: the port,
 * its rings and the progress thread belong to its parent.
 */
#include "verbs/dv.h"

#include <stdio.h>
#include <unistd.h>

__attribute__((destructor)) static void dv_at_exit(void)
{
	struct dv_device *d = &dv_dev;
	/* A thread inside open/close holds it: leave that context alone. */
	if (pthread_mutex_trylock(&d->mu))
		return;
	struct dv_context *c = d->open;
	if (c && d->eal_pid == getpid()) {
		unsigned sent = dv_engine_exit(c);
		if (d->stats)
			fprintf(stderr, "droce: droce0 still open at exit: progress thread stopped, "
				"%u more frames moved, port quiet\n", sent);
	}
	/* Held from here on: no open or close races the end of the process. */
}
