/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/icrc.h"

#include <string.h>

#include "wire/crc32.h"
#include "wire/hdr.h"

/* 8 (LRH stand-in) + 40 (IPv6/GRH) + 8 (UDP) + 12 (BTH). */
#define MASKED_MAX 68u

uint32_t droce_icrc_update(uint32_t crc, const void *data, size_t len)
{
	/* VPCLMULQDQ folding where the CPU has it, ISA-L elsewhere (crc32.h). */
	return droce_crc32(crc, data, len);
}

uint32_t droce_icrc_begin(const uint8_t *l3, enum droce_l3 kind, size_t len)
{
	uint8_t m[MASKED_MAX];
	size_t ip_len = kind == DROCE_L3_IPV4 ? sizeof(struct droce_ipv4_hdr)
					      : sizeof(struct droce_ipv6_hdr);
	size_t udp_len = kind == DROCE_L3_GRH ? 0 : sizeof(struct droce_udp_hdr);
	size_t pre = ip_len + udp_len + sizeof(struct droce_bth);
	uint8_t *ip = m + 8;

	memset(m, 0xFF, 8);
	memcpy(ip, l3, pre);
	if (kind == DROCE_L3_IPV4) {
		ip[1] = 0xFF;              /* TOS: DSCP and ECN change in flight */
		ip[8] = 0xFF;              /* TTL */
		ip[10] = ip[11] = 0xFF;    /* header checksum */
	} else {
		ip[0] |= 0x0F;             /* traffic class, high nibble */
		ip[1] = ip[2] = ip[3] = 0xFF; /* traffic class low nibble, flow label */
		ip[7] = 0xFF;              /* hop limit */
	}
	if (udp_len)
		ip[ip_len + 6] = ip[ip_len + 7] = 0xFF; /* UDP checksum */
	ip[ip_len + udp_len + 4] = 0xFF;           /* BTH resv8a: FECN, BECN */

	uint32_t crc = droce_icrc_update(0, m, 8 + pre);
	return len > pre ? droce_icrc_update(crc, l3 + pre, len - pre) : crc;
}
