/* SPDX-License-Identifier: BSD-3-Clause */
/* Start EAL with the vector of eal_args.c (see eal.h). */
#include "net/port/eal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_eal.h>
#include <rte_errno.h>

int droce_eal_init(const char *prog, int user_argc, char *const *user_argv,
		   const struct droce_eal_opts *opts)
{
	struct droce_eal_argv a;
	int rc = droce_eal_build_argv(prog, user_argc, user_argv, opts, &a);
	if (rc != 0)
		return rc;
	if (getenv("DROCE_EAL_VERBOSE") != NULL) {
		fprintf(stderr, "droce: EAL arguments:");
		for (int i = 0; i < a.argc; i++)
			fprintf(stderr, " %s", a.argv[i]);
		fprintf(stderr, "\n");
	}
	/* rte_eal_init may permute argv; hand it a copy of the pointers. */
	char *argv[DROCE_EAL_MAX_ARGS + 1];
	for (int i = 0; i <= a.argc; i++)
		argv[i] = a.argv[i];
	int n = rte_eal_init(a.argc, argv);
	/* EAL copies what it keeps (devargs, prefixes) while parsing. */
	droce_eal_argv_free(&a);
	if (n < 0)
		return rte_errno > 0 ? -rte_errno : -EINVAL;
	return 0;
}
