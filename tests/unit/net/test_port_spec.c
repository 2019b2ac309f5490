/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port specs as devargs (stack/net/port/port_spec.c, droce/dpdk.h), without
 * EAL: the three kinds DROCE_PORT names, the memif buffer size, and every
 * malformed spec refused rather than passed on to DPDK.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <droce/dpdk.h>

static void test_memif(void **state)
{
	(void)state;
	char b[DROCE_PORT_SPEC_MAX];
	int n = droce_port_spec_devargs("memif:server,socket=/x/y.sock", 3, b, sizeof(b));
	assert_int_equal(n, (int)strlen(b));
	assert_string_equal(b, "net_memif3,role=server,socket=/x/y.sock,bsize=8192");
	n = droce_port_spec_devargs("memif:client", 0, b, sizeof(b));
	assert_true(n > 0);
	assert_string_equal(b, "net_memif0,role=client,socket=/tmp/droce-memif.sock,bsize=8192");
}

static void test_iface_vdev(void **state)
{
	(void)state;
	char b[DROCE_PORT_SPEC_MAX];
	assert_true(droce_port_spec_devargs("iface:veth0", 1, b, sizeof(b)) > 0);
	assert_string_equal(b, "net_af_packet1,iface=veth0,blocksz=4096,framesz=2048,framecnt=2048,"
			       "qpairs=1");
	assert_true(droce_port_spec_devargs("vdev:net_pcap0,iface=eth0", 7, b, sizeof(b)) > 0);
	assert_string_equal(b, "net_pcap0,iface=eth0");
}

static void test_refused(void **state)
{
	(void)state;
	char b[DROCE_PORT_SPEC_MAX];
	const char *bad[] = {
		"", "memif", "memif:", "memif:servers", "memif:serve", "memif:server,", "memif:server,sock=/a",
		"memif:server,socket=", "memif:client,socket=/a,zero-copy=yes", "iface:", "iface:a,b",
		"vdev:", "vdev:,x", "pcap:x", "MEMIF:server",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(droce_port_spec_devargs(bad[i], 0, b, sizeof(b)), -EINVAL);
	assert_int_equal(droce_port_spec_devargs(NULL, 0, b, sizeof(b)), -EINVAL);
	assert_int_equal(droce_port_spec_devargs("memif:server", 0, NULL, 8), -EINVAL);
	/* one byte short of the string and its terminator */
	int n = droce_port_spec_devargs("vdev:net_null0", 0, b, sizeof(b));
	assert_int_equal(n, 9);
	assert_int_equal(droce_port_spec_devargs("vdev:net_null0", 0, b, 9), -ENAMETOOLONG);
	assert_int_equal(droce_port_spec_devargs("vdev:net_null0", 0, b, 10), 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif),
		cmocka_unit_test(test_iface_vdev),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
