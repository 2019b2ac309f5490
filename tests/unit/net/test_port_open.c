/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * include/droce/port.h (stack/net/port/port_open.c): specs that cannot name
 * a port fail with EINVAL before EAL starts; the first good spec starts EAL
 * (--no-huge: droce's defaults) and opens its device; a second spec of the
 * same driver is hot-plugged under the next free name (net_ring0, then
 * net_ring1), and a memif shortcut spec is hot-plugged from the vector the
 * shortcut makes; port:N of a missing port is ENODEV; the CM resolver
 * refuses IPv6. net_ring vdevs loop their TX back to RX inside this process.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_ethdev.h>

#include <droce/droce.h>

static const uint8_t ip_a[16] = {192, 168, 9, 1}, ip_b[16] = {192, 168, 9, 2};

static void bad_specs_fail_before_eal(void **state)
{
	(void)state;
	const char *bad[] = {"", "memif", ":x", "memif:", "bogus:x", "memif:listener,socket=/x",
			     "memif:serverx", "port:", "port:x1", "port:99999",
			     "averyveryverylongkind:x"};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(droce_port_create(bad[i], NULL, 4, ip_a));
		assert_int_equal(errno, EINVAL);
	}
	errno = 0;
	assert_null(droce_port_create(NULL, NULL, 4, ip_a));
	assert_int_equal(errno, EINVAL);
	assert_null(droce_port_create("vdev:net_ring0", NULL, 5, ip_a));
	assert_int_equal(errno, EINVAL);
	assert_null(droce_port_create("vdev:net_ring0", NULL, 4, NULL));
	assert_int_equal(errno, EINVAL);
	/* nothing above started EAL */
	assert_int_equal(rte_eth_dev_count_avail(), 0);
}

static void ports_from_specs(void **state)
{
	(void)state;
	struct droce_port *a = droce_port_create("vdev:net_ring0", "--log-level=lib.eal:error", 4, ip_a);
	assert_non_null(a);
	uint16_t id0, id1;
	assert_int_equal(rte_eth_dev_get_port_by_name("net_ring0", &id0), 0);
	/* EAL runs now: the same spec again is hot-plugged as net_ring1 */
	struct droce_port *b = droce_port_create("vdev:net_ring0", NULL, 4, ip_b);
	assert_non_null(b);
	assert_int_equal(rte_eth_dev_get_port_by_name("net_ring1", &id1), 0);
	assert_int_not_equal(id0, id1);
	assert_int_equal(rte_eth_dev_count_avail(), 2);

	uint8_t mac[6];
	struct rte_ether_addr ea;
	assert_int_equal(rte_eth_macaddr_get(id0, &ea), 0);
	assert_int_equal(droce_port_mac(a, mac), 0);
	assert_memory_equal(mac, ea.addr_bytes, 6);
	assert_int_equal(droce_port_mac(NULL, mac), -EINVAL);
	assert_int_equal(droce_port_mac(a, NULL), -EINVAL);
	struct droce_link l = droce_port_link(a);
	assert_non_null(l.ops);
	assert_ptr_equal(l.priv, a);
	assert_int_equal(droce_port_tx_pending(a), 0);

	/* the CM resolver: IPv4 goes to ARP, IPv6 has no neighbour discovery */
	uint8_t m[6];
	const uint8_t v6[16] = {0xfd};
	assert_int_equal(droce_port_cm_resolve(a, 6, v6, m, 0), -EAFNOSUPPORT);
	assert_int_equal(droce_port_cm_resolve(a, 7, v6, m, 0), -EINVAL);
	assert_int_not_equal(droce_port_cm_resolve(a, 4, ip_b, m, 0), -EINVAL);

	/* a shortcut spec into the running EAL: memif's vector, hot-plugged */
	char dir[] = "/tmp/droce-port-open-XXXXXX", spec[128];
	assert_non_null(mkdtemp(dir));
	snprintf(spec, sizeof(spec), "memif:server,socket=%s/m.sock", dir);
	struct droce_port *c = droce_port_create(spec, NULL, 4, ip_b);
	assert_non_null(c);
	uint16_t id2;
	assert_int_equal(rte_eth_dev_get_port_by_name("net_memif0", &id2), 0);
	assert_int_equal(rte_eth_dev_count_avail(), 3);
	droce_port_close(c);
	rmdir(dir);

	/* port:N names ports of the running EAL; a missing one is ENODEV */
	errno = 0;
	assert_null(droce_port_create("port:31", NULL, 4, ip_a));
	assert_int_equal(errno, ENODEV);

	droce_port_close(b);
	droce_port_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_specs_fail_before_eal),
		cmocka_unit_test(ports_from_specs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
