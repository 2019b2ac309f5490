/* SPDX-License-Identifier: BSD-3-Clause */
/* The verbs drop-in's environment parsing and GID mapping (stack/verbs/env.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verbs/dv.h"

static const char *const *vars;

static const char *get(const char *name)
{
	for (unsigned i = 0; vars[i]; i += 2)
		if (!strcmp(vars[i], name))
			return vars[i + 1];
	return NULL;
}

static int parse(const char *const *v, struct dv_config *c, char *err)
{
	vars = v;
	return dv_config_parse(c, get, err, 256);
}

static void test_memif(void **state)
{
	const char *v[] = {"DROCE_PORT", "memif:client,socket=/tmp/a.sock", "DROCE_IP", "10.1.2.3",
			   "DROCE_LCORE", "3", "DROCE_EAL", "--log-level=8 -m 64", NULL};
	struct dv_config c;
	char err[256];
	assert_int_equal(parse(v, &c, err), 0);
	assert_string_equal(c.port_kind, "memif");
	assert_string_equal(c.port_arg, "client,socket=/tmp/a.sock");
	assert_memory_equal(c.ip, ((uint8_t[]){10, 1, 2, 3}), 4);
	assert_int_equal(c.lcore, 3);
	assert_int_equal(c.comm_core, -1);
	assert_string_equal(c.eal, "--log-level=8 -m 64");
	assert_true(c.port_wait_s == DV_PORT_WAIT_S);
	const char *w[] = {"DROCE_PORT", "memif:client", "DROCE_IP", "10.1.2.3", "DROCE_PORT_WAIT",
			   "2.5", NULL};
	assert_int_equal(parse(w, &c, err), 0);
	assert_true(c.port_wait_s == 2.5);
	assert_int_equal(c.idle, DROCE_IDLE_BUSY); /* DROCE_IDLE unset: today's loop */
	const char *i[] = {"DROCE_PORT", "memif:client", "DROCE_IP", "10.1.2.3", "DROCE_IDLE",
			   "adaptive", NULL};
	assert_int_equal(parse(i, &c, err), 0);
	assert_int_equal(c.idle, DROCE_IDLE_ADAPTIVE);
	assert_int_equal(c.transport, DROCE_TRANSPORT_GBN); /* unset: go-back-N */
	const char *t[] = {"DROCE_PORT", "memif:client", "DROCE_IP", "10.1.2.3", "DROCE_TRANSPORT",
			   "sr-spray", NULL};
	assert_int_equal(parse(t, &c, err), 0);
	assert_int_equal(c.transport, DROCE_TRANSPORT_SR_SPRAY);
}

static void test_kinds(void **state)
{
	struct dv_config c;
	char err[256];
	const char *a[] = {"DROCE_PORT", "iface:veth0", "DROCE_IP", "198.18.0.1", NULL};
	assert_int_equal(parse(a, &c, err), 0);
	assert_string_equal(c.port_kind, "iface");
	const char *b[] = {"DROCE_PORT", "vdev:net_pcap0,iface=eth0", "DROCE_IP", "198.18.0.1",
			   "DROCE_COMM_CORE", "1", NULL};
	assert_int_equal(parse(b, &c, err), 0);
	assert_string_equal(c.port_arg, "net_pcap0,iface=eth0");
	assert_int_equal(c.comm_core, 1);
}

static void test_bad(void **state)
{
	struct dv_config c;
	char err[256];
	const char *cases[][8] = {
		{"DROCE_IP", "198.18.0.1", NULL},
		{"DROCE_PORT", "memif:server", NULL},
		{"DROCE_PORT", "memif", "DROCE_IP", "198.18.0.1", NULL},
		{"DROCE_PORT", "memif:", "DROCE_IP", "198.18.0.1", NULL},
		{"DROCE_PORT", "memif:slave", "DROCE_IP", "198.18.0.1", NULL},
		{"DROCE_PORT", "memif:serverx", "DROCE_IP", "198.18.0.1", NULL},
		{"DROCE_PORT", "pci:0000:01:00.0", "DROCE_IP", "198.18.0.1", NULL},
		{"DROCE_PORT", "iface:eth0", "DROCE_IP", "fe80::1", NULL},
		{"DROCE_PORT", "iface:eth0", "DROCE_IP", "0.0.0.0", NULL},
		{"DROCE_PORT", "iface:eth0", "DROCE_IP", "239.1.1.1", NULL},
		{"DROCE_PORT", "iface:eth0", "DROCE_IP", "1.2.3.4", "DROCE_LCORE", "-1", NULL},
		{"DROCE_PORT", "iface:eth0", "DROCE_IP", "1.2.3.4", "DROCE_COMM_CORE", "2x", NULL},
		{"DROCE_PORT", "memif:client", "DROCE_IP", "1.2.3.4", "DROCE_PORT_WAIT", "-1", NULL},
		{"DROCE_PORT", "memif:client", "DROCE_IP", "1.2.3.4", "DROCE_PORT_WAIT", "5s", NULL},
		{"DROCE_PORT", "memif:client", "DROCE_IP", "1.2.3.4", "DROCE_IDLE", "sleepy", NULL},
		{"DROCE_PORT", "memif:client", "DROCE_IP", "1.2.3.4", "DROCE_TRANSPORT", "irn", NULL},
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		assert_int_equal(parse(cases[i], &c, err), -EINVAL);
		assert_true(strlen(err) > 10);
		assert_null(strchr(err, '\n'));
	}
}

static void test_gid(void **state)
{
	union ibv_gid g;
	uint8_t ip[4] = {198, 18, 0, 2}, back[4];
	dv_gid_from_ip(ip, &g);
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2};
	assert_memory_equal(g.raw, want, 16);
	assert_int_equal(dv_ip_from_gid(&g, back), 0);
	assert_memory_equal(back, ip, 4);
	g.raw[0] = 0xfe; /* a link-local IPv6 GID is not an IPv4 endpoint */
	assert_int_equal(dv_ip_from_gid(&g, back), -EINVAL);
}

static void test_lcores(void **state)
{
	cpu_set_t s;
	char buf[64];
	CPU_ZERO(&s);
	CPU_SET(1, &s);
	assert_int_equal(dv_lcores_arg(&s, 2, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "--lcores=0@(1)");
	CPU_SET(0, &s);
	/* Every CPU: nothing to keep, EAL's default stands. */
	assert_int_equal(dv_lcores_arg(&s, 2, buf, sizeof(buf)), 0);
	CPU_SET(5, &s);
	assert_int_equal(dv_lcores_arg(&s, 8, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "--lcores=0@(0,1,5)");
	assert_int_equal(dv_lcores_arg(&s, 8, buf, 16), -E2BIG);
	CPU_ZERO(&s);
	assert_int_equal(dv_lcores_arg(&s, 8, buf, sizeof(buf)), 0);

	char *a[] = {"--log-level=8", "-m", "64"};
	assert_false(dv_eal_names_cores(3, a));
	char *b[] = {"-m", "64", "-l", "3"}, *c[] = {"-l2"}, *d[] = {"-c", "0x3"},
	     *e[] = {"--lcores=0@1"}, *f[] = {"--lcoresx"};
	assert_true(dv_eal_names_cores(4, b));
	assert_true(dv_eal_names_cores(1, c));
	assert_true(dv_eal_names_cores(2, d));
	assert_true(dv_eal_names_cores(1, e));
	assert_false(dv_eal_names_cores(1, f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_gid),
		cmocka_unit_test(test_lcores),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
