/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL argument construction (stack/net/port/eal_args.c), without starting EAL:
 * the defaults two processes on one machine need, the --memif and --iface
 * shortcuts, and what the user's own arguments switch off.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/port/eal.h"

static int count(const struct droce_eal_argv *a, const char *s)
{
	int n = 0;
	for (int i = 0; i < a->argc; i++)
		n += strcmp(a->argv[i], s) == 0;
	return n;
}

static const char *find_prefix(const struct droce_eal_argv *a, const char *p)
{
	for (int i = 0; i < a->argc; i++)
		if (strncmp(a->argv[i], p, strlen(p)) == 0)
			return a->argv[i];
	return NULL;
}

static void test_memif_defaults_no_huge(void **state)
{
	(void)state;
	struct droce_eal_opts o = {.memif = "server", .hugepages = -1, .ncpus = 4};
	struct droce_eal_argv a;
	assert_int_equal(droce_eal_build_argv("prog", 0, NULL, &o, &a), 0);
	assert_string_equal(a.argv[0], "prog");
	assert_null(a.argv[a.argc]);
	assert_int_equal(count(&a, "--vdev=net_memif0,role=server,socket=" DROCE_EAL_MEMIF_SOCKET
			       ",bsize=8192"), 1);
	assert_int_equal(count(&a, "--in-memory"), 0); /* EAL refuses it with --no-huge */
	assert_int_equal(count(&a, "--no-shconf"), 1);
	assert_int_equal(count(&a, "--no-huge"), 1);
	assert_int_equal(count(&a, "-m256"), 1);
	assert_int_equal(count(&a, "--no-pci"), 1);
	assert_int_equal(count(&a, "--lcores=(0-3)@(0-3)"), 1); /* not all on CPU 0 */
	assert_true(a.no_huge);
	assert_true(a.vdev_only);
	droce_eal_argv_free(&a);

	o.memif = "client,socket=/tmp/x.sock";
	o.hugepages = 1;
	assert_int_equal(droce_eal_build_argv("prog", 0, NULL, &o, &a), 0);
	assert_int_equal(count(&a, "--vdev=net_memif0,role=client,socket=/tmp/x.sock,bsize=8192"), 1);
	assert_int_equal(count(&a, "--no-huge"), 0);
	assert_int_equal(count(&a, "--in-memory"), 1);
	assert_int_equal(count(&a, "--no-shconf"), 0);
	assert_false(a.no_huge);
	droce_eal_argv_free(&a);
}

static void test_bad_specs(void **state)
{
	(void)state;
	struct droce_eal_argv a;
	const char *bad[] = {"", "master", "server,", "server,sock=/x", "server,socket=",
			     "client,socket=/a,role=x", "servers"};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct droce_eal_opts o = {.memif = bad[i], .hugepages = -1};
		assert_int_equal(droce_eal_build_argv("p", 0, NULL, &o, &a), -EINVAL);
		assert_int_equal(a.argc, 0);
	}
	struct droce_eal_opts o = {.iface = "", .hugepages = -1};
	assert_int_equal(droce_eal_build_argv("p", 0, NULL, &o, &a), -EINVAL);
	o.iface = "eth0,qpairs=9";
	assert_int_equal(droce_eal_build_argv("p", 0, NULL, &o, &a), -EINVAL);
	assert_int_equal(droce_eal_build_argv(NULL, 0, NULL, &o, &a), -EINVAL);
	char *many[DROCE_EAL_MAX_ARGS + 1];
	for (int i = 0; i <= DROCE_EAL_MAX_ARGS; i++)
		many[i] = "-v";
	assert_int_equal(droce_eal_build_argv("p", DROCE_EAL_MAX_ARGS, many, NULL, &a), -E2BIG);
}

static void test_iface_and_user_overrides(void **state)
{
	(void)state;
	struct droce_eal_opts o = {.iface = "veth0", .queues = 2, .hugepages = -1};
	char *user[] = {"-l", "1", "--file-prefix=mine", "--no-huge", "-m", "128"};
	struct droce_eal_argv a;
	assert_int_equal(droce_eal_build_argv("p", 6, user, &o, &a), 0);
	const char *v = find_prefix(&a, "--vdev=net_af_packet0,iface=veth0,");
	assert_non_null(v);
	assert_non_null(strstr(v, "qpairs=2"));
	assert_non_null(strstr(v, "framesz=2048"));
	/* user chose the file prefix and memory: nothing added for those */
	assert_int_equal(count(&a, "--in-memory"), 0);
	assert_int_equal(count(&a, "--no-shconf"), 0);
	assert_int_equal(count(&a, "--no-huge"), 1);
	assert_null(find_prefix(&a, "-m2"));
	assert_true(a.no_huge);
	assert_int_equal(count(&a, "--no-pci"), 1);
	assert_null(find_prefix(&a, "--lcores")); /* the user chose -l */
	/* user arguments come first, in order, right after the program */
	assert_string_equal(a.argv[1], "-l");
	assert_string_equal(a.argv[2], "1");
	droce_eal_argv_free(&a);

	/* a PCI device named by the user: no --no-pci, and no vdev added */
	char *pci[] = {"-a", "0000:3b:00.0"};
	assert_int_equal(droce_eal_build_argv("p", 2, pci, NULL, &a), 0);
	assert_int_equal(count(&a, "--no-pci"), 0);
	assert_null(find_prefix(&a, "--vdev"));
	assert_int_equal(count(&a, "--in-memory") + count(&a, "--no-shconf"), 1);
	droce_eal_argv_free(&a);

	/* the user's own --vdev is vdev-only too */
	char *vd[] = {"--vdev=net_ring0"};
	struct droce_eal_opts h = {.hugepages = 1};
	assert_int_equal(droce_eal_build_argv("p", 1, vd, &h, &a), 0);
	assert_int_equal(count(&a, "--no-pci"), 1);
	assert_int_equal(count(&a, "--no-huge"), 0);
	droce_eal_argv_free(&a);
}

static void test_hugepage_probe(void **state)
{
	(void)state;
	char dir[64], mounts[96], sub[160], fp[200];
	snprintf(dir, sizeof(dir), "/tmp/droce-eal-test-%d", (int)getpid());
	snprintf(mounts, sizeof(mounts), "%s/mounts", dir);
	snprintf(sub, sizeof(sub), "%s/hugepages-2048kB", dir);
	snprintf(fp, sizeof(fp), "%s/free_hugepages", sub);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	FILE *f = fopen(mounts, "w");
	fputs("proc /proc proc rw 0 0\n", f);
	fclose(f);
	f = fopen(fp, "w");
	fputs("16\n", f);
	fclose(f);
	assert_false(droce_eal_hugepages_usable(mounts, dir)); /* not mounted */
	f = fopen(mounts, "a");
	fputs("hugetlbfs /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n", f);
	fclose(f);
	assert_true(droce_eal_hugepages_usable(mounts, dir));
	f = fopen(fp, "w");
	fputs("0\n", f);
	fclose(f);
	assert_false(droce_eal_hugepages_usable(mounts, dir)); /* mounted, none free */
	assert_false(droce_eal_hugepages_usable("/nonexistent", dir));
	unlink(fp);
	rmdir(sub);
	unlink(mounts);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif_defaults_no_huge),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_iface_and_user_overrides),
		cmocka_unit_test(test_hugepage_probe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
