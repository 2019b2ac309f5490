/* SPDX-License-Identifier: BSD-3-Clause */
/* The in-process memif benches' wait for their ports 0 .. n-1 to come up. */
#ifndef DROCE_BENCH_MEMIF_LINKS_UP_H
#define DROCE_BENCH_MEMIF_LINKS_UP_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

/** Poll every millisecond for up to 5 s: @return whether all @p n links are up. */
static inline bool bench_links_up(uint16_t n)
{
	for (int t = 0; t < 5000; t++) {
		uint16_t up = 0;
		for (uint16_t i = 0; i < n; i++) {
			struct rte_eth_link l;
			up += rte_eth_link_get_nowait(i, &l) == 0 && l.link_status;
		}
		if (up == n)
			return true;
		rte_delay_us_sleep(1000);
	}
	return false;
}

#endif
