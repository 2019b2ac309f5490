/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL argument construction; no DPDK needed (see eal.h). */
#include "net/port/eal.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool droce_eal_hugepages_usable(const char *mounts, const char *sysfs_dir)
{
	FILE *f = fopen(mounts ? mounts : "/proc/mounts", "r");
	if (f == NULL)
		return false;
	char line[512];
	bool mounted = false;
	while (!mounted && fgets(line, sizeof(line), f) != NULL) {
		char dev[128], dir[256], type[64];
		if (sscanf(line, "%127s %255s %63s", dev, dir, type) == 3 &&
		    strcmp(type, "hugetlbfs") == 0)
			mounted = true;
	}
	fclose(f);
	if (!mounted)
		return false;
	const char *sd = sysfs_dir ? sysfs_dir : "/sys/kernel/mm/hugepages";
	DIR *d = opendir(sd);
	if (d == NULL)
		return false;
	bool free_pages = false;
	struct dirent *de;
	while (!free_pages && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "hugepages-", 10) != 0)
			continue;
		char path[768];
		snprintf(path, sizeof(path), "%s/%s/free_hugepages", sd, de->d_name);
		FILE *p = fopen(path, "r");
		if (p == NULL)
			continue;
		unsigned long n = 0;
		if (fscanf(p, "%lu", &n) == 1 && n > 0)
			free_pages = true;
		fclose(p);
	}
	closedir(d);
	return free_pages;
}

/* Whether the user gave an option (as "--opt", "--opt=..." or "-o..."). */
static bool has_opt(int argc, char *const *argv, const char *opt)
{
	size_t n = strlen(opt);
	for (int i = 0; i < argc; i++) {
		if (argv[i] == NULL || strncmp(argv[i], opt, n) != 0)
			continue;
		char c = argv[i][n];
		/* "--vdev" matches "--vdev" and "--vdev=x"; short "-a" also "-a0000:..." */
		if (c == '\0' || c == '=' || (opt[1] != '-'))
			return true;
	}
	return false;
}

static int push(struct droce_eal_argv *a, char *s)
{
	if (a->argc >= DROCE_EAL_MAX_ARGS)
		return -E2BIG;
	a->argv[a->argc++] = s;
	a->argv[a->argc] = NULL;
	return 0;
}

static int push_fmt(struct droce_eal_argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Append a string built here; the vector owns it. */
static int push_fmt(struct droce_eal_argv *a, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EINVAL;
	char *s = strdup(buf);
	if (s == NULL)
		return -ENOMEM;
	if (a->n_owned >= DROCE_EAL_MAX_ARGS || push(a, s) != 0) {
		free(s);
		return -E2BIG;
	}
	a->owned[a->n_owned++] = s;
	return 0;
}

/* "server" | "client", then optionally ",socket=PATH". */
static int memif_vdev(struct droce_eal_argv *a, const char *spec, unsigned queues)
{
	const char *comma = strchr(spec, ',');
	size_t rl = comma ? (size_t)(comma - spec) : strlen(spec);
	const char *role;
	if (rl == 6 && strncmp(spec, "server", 6) == 0)
		role = "server";
	else if (rl == 6 && strncmp(spec, "client", 6) == 0)
		role = "client";
	else
		return -EINVAL;
	const char *sock = DROCE_EAL_MEMIF_SOCKET;
	if (comma != NULL) {
		if (strncmp(comma + 1, "socket=", 7) != 0 || comma[8] == '\0' ||
		    strchr(comma + 8, ',') != NULL)
			return -EINVAL;
		sock = comma + 8;
	}
	/* The number of queue pairs is what the application configures; the
	 * peer must configure the same. 8 KB buffers: a 4 KB RoCE frame fits
	 * one. With the default 2 KB buffers frames are chained over several
	 * descriptors, and DPDK 22.11's memif TX then overruns a nearly full
	 * ring (it counts a packet's first descriptor as free without checking:
	 * the peer receives split frames). */
	(void)queues;
	return push_fmt(a, "--vdev=net_memif0,role=%s,socket=%s,bsize=%u", role, sock,
			DROCE_EAL_MEMIF_BSIZE);
}

int droce_eal_build_argv(const char *prog, int user_argc, char *const *user_argv,
			 const struct droce_eal_opts *opts, struct droce_eal_argv *out)
{
	if (prog == NULL || out == NULL || user_argc < 0 || (user_argc > 0 && user_argv == NULL))
		return -EINVAL;
	static const struct droce_eal_opts none;
	if (opts == NULL)
		opts = &none;
	memset(out, 0, sizeof(*out));
	int rc = push(out, (char *)(uintptr_t)prog);
	for (int i = 0; rc == 0 && i < user_argc; i++)
		rc = push(out, user_argv[i]);
	if (rc != 0)
		goto fail;

	unsigned queues = opts->queues ? opts->queues : 1;
	bool shortcut = false;
	if (opts->memif != NULL) {
		rc = memif_vdev(out, opts->memif, queues);
		if (rc != 0)
			goto fail;
		shortcut = true;
	}
	if (opts->iface != NULL) {
		if (opts->iface[0] == '\0' || strchr(opts->iface, ',') != NULL) {
			rc = -EINVAL;
			goto fail;
		}
		/* DPDK 22.11's af_packet PMD caps frames at 1518 bytes (its
		 * max_rx_pktlen), so RoCE MTU 1024 is the most it carries: 2 KB
		 * ring frames (fit in a standard mbuf), 2048 of them. */
		rc = push_fmt(out,
			      "--vdev=net_af_packet0,iface=%s,blocksz=4096,framesz=2048,"
			      "framecnt=2048,qpairs=%u",
			      opts->iface, queues);
		if (rc != 0)
			goto fail;
		shortcut = true;
	}

	bool user_mem = has_opt(user_argc, user_argv, "--no-huge") ||
			has_opt(user_argc, user_argv, "-m") ||
			has_opt(user_argc, user_argv, "--socket-mem") ||
			has_opt(user_argc, user_argv, "--huge-dir");
	out->no_huge = has_opt(user_argc, user_argv, "--no-huge");
	if (!user_mem) {
		bool huge = opts->hugepages > 0 ||
			    (opts->hugepages == 0 && droce_eal_hugepages_usable(NULL, NULL));
		if (!huge) {
			rc = push(out, "--no-huge");
			if (rc == 0)
				rc = push_fmt(out, "-m%u",
					      opts->no_huge_mb ? opts->no_huge_mb
							       : DROCE_EAL_NO_HUGE_MB);
			if (rc != 0)
				goto fail;
			out->no_huge = true;
		}
	}

	/* No shared runtime files, so any number of droce processes coexist.
	 * --in-memory is refused with --no-huge (it implies legacy memory);
	 * --no-shconf is its equivalent there. */
	if (!has_opt(user_argc, user_argv, "--file-prefix") &&
	    !has_opt(user_argc, user_argv, "--in-memory") &&
	    !has_opt(user_argc, user_argv, "--no-shconf") &&
	    !has_opt(user_argc, user_argv, "--proc-type")) {
		rc = push(out, out->no_huge ? "--no-shconf" : "--in-memory");
		if (rc != 0)
			goto fail;
	}

	/* EAL pins its main thread to the first CPU: two droce processes on
	 * one machine would share CPU 0. Unless the user chose cores, let the
	 * lcores float over every CPU (the scheduler spreads busy pollers). */
	if (!has_opt(user_argc, user_argv, "-l") && !has_opt(user_argc, user_argv, "-c") &&
	    !has_opt(user_argc, user_argv, "--lcores")) {
		long n = opts->ncpus ? (long)opts->ncpus : sysconf(_SC_NPROCESSORS_ONLN);
		if (n > 1) {
			rc = push_fmt(out, "--lcores=(0-%ld)@(0-%ld)", n - 1, n - 1);
			if (rc != 0)
				goto fail;
		}
	}

	bool pci_named = has_opt(user_argc, user_argv, "-a") ||
			 has_opt(user_argc, user_argv, "--allow") ||
			 has_opt(user_argc, user_argv, "-b") ||
			 has_opt(user_argc, user_argv, "--block") ||
			 has_opt(user_argc, user_argv, "--no-pci");
	bool vdevs = shortcut || has_opt(user_argc, user_argv, "--vdev");
	if (vdevs && !pci_named) {
		rc = push(out, "--no-pci");
		if (rc != 0)
			goto fail;
		out->vdev_only = true;
	}
	return 0;

fail:
	droce_eal_argv_free(out);
	return rc;
}

void droce_eal_argv_free(struct droce_eal_argv *a)
{
	if (a == NULL)
		return;
	for (unsigned i = 0; i < a->n_owned; i++)
		free(a->owned[i]);
	memset(a, 0, sizeof(*a));
}
