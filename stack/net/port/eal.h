/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * EAL convenience for applications: an EAL argument vector that works for
 * two processes on one machine with no extra arguments, and the shortcuts
 * `--memif server|client[,socket=PATH]` and `--iface IFNAME`.
 *
 * What droce_eal_build_argv() adds to the user's own EAL arguments, only
 * when the user did not say otherwise:
 *  - `--in-memory` (with hugepages) or `--no-shconf` (with --no-huge, which
 *    EAL refuses to combine with --in-memory): no shared runtime files, so
 *    any number of droce processes coexist (unless the user gave
 *    --file-prefix, --in-memory, --no-shconf or --proc-type);
 *  - `--no-huge -m MB`: when no hugetlbfs with free pages is mounted (unless
 *    the user gave --no-huge, -m, --socket-mem or --huge-dir);
 *  - `--lcores=(0-N)@(0-N)`: every lcore may run on every CPU, instead of
 *    EAL pinning the main thread of every process to CPU 0 (unless the user
 *    gave -l, -c or --lcores);
 *  - `--no-pci`: for vdev-only runs (a shortcut or a --vdev given and no
 *    -a/--allow/-b/--block);
 *  - `--vdev=net_memif0,role=R,socket=PATH,bsize=8192` for --memif,
 *    `--vdev=net_af_packet0,iface=IF,...` for --iface.
 *
 * Building the vector needs no EAL (unit-tested); droce_eal_init() runs it.
 */
#ifndef DROCE_NET_PORT_EAL_H
#define DROCE_NET_PORT_EAL_H

#include <stdbool.h>

/** Default memif control socket (DPDK's own default, /run/memif.sock, needs root). */
#define DROCE_EAL_MEMIF_SOCKET "/tmp/droce-memif.sock"
/** memif packet buffer size: one buffer holds a jumbo RoCE frame (see eal_args.c). */
#define DROCE_EAL_MEMIF_BSIZE 8192u
/** EAL memory (MB) requested with --no-huge. */
#define DROCE_EAL_NO_HUGE_MB 256
#define DROCE_EAL_MAX_ARGS 64

/** Shortcuts and overrides. Zero-initialise, then set what you need. */
struct droce_eal_opts {
	const char *memif;     /**< "server" or "client", optionally ",socket=PATH" */
	const char *iface;     /**< af_packet interface name */
	unsigned queues;       /**< queue pairs for the shortcut vdev; 0 = 1 */
	int hugepages;         /**< 0 auto-detect, 1 present, -1 absent (tests) */
	unsigned no_huge_mb;   /**< memory with --no-huge; 0 = DROCE_EAL_NO_HUGE_MB */
	unsigned ncpus;        /**< CPUs to float lcores over; 0 = the online CPUs (tests) */
};

/** An argument vector and the strings it owns. */
struct droce_eal_argv {
	int argc;
	char *argv[DROCE_EAL_MAX_ARGS + 1]; /**< NULL-terminated */
	char *owned[DROCE_EAL_MAX_ARGS];    /**< strings built here, freed by _free() */
	unsigned n_owned;
	bool no_huge;          /**< --no-huge is in effect (added or given) */
	bool vdev_only;        /**< --no-pci was added */
};

/**
 * Build the EAL vector: @p prog, then @p user_argv (the user's EAL
 * arguments, before "--"), then the additions described in the file comment.
 * @return 0; -EINVAL (bad --memif spec, empty --iface, NULL arguments);
 *         -E2BIG (more than DROCE_EAL_MAX_ARGS arguments); -ENOMEM.
 */
int droce_eal_build_argv(const char *prog, int user_argc, char *const *user_argv,
			 const struct droce_eal_opts *opts, struct droce_eal_argv *out);

/** Free the strings of a vector. */
void droce_eal_argv_free(struct droce_eal_argv *a);

/**
 * Whether hugepages can be used: a hugetlbfs mount listed in @p mounts
 * (normally /proc/mounts) and free pages in some
 * @p sysfs_dir/hugepages-SIZE/free_hugepages (normally
 * /sys/kernel/mm/hugepages). NULL arguments take the normal paths.
 */
bool droce_eal_hugepages_usable(const char *mounts, const char *sysfs_dir);

/**
 * Build the vector and start EAL with it (rte_eal_init). Prints the vector
 * when the environment variable DROCE_EAL_VERBOSE is set.
 * @return 0, or a negative errno (the build errors, or rte_errno of a
 *         failed rte_eal_init).
 */
int droce_eal_init(const char *prog, int user_argc, char *const *user_argv,
		   const struct droce_eal_opts *opts);

#endif
