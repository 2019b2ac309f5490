/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/neigh/icmp.h"

#include <string.h>

#include "net/neigh/classify.h"
#include "wire/bytes.h"
#include "wire/hdr.h"

#define ICMP_ECHO_REPLY 0u
#define ICMP_ECHO_REQUEST 8u
#define ICMP_HDR_LEN 8u
#define MIN_FRAME 60u
#define REPLY_TTL 64u

size_t droce_icmp_echo_reply(const uint8_t *frame, size_t len, const uint8_t our_mac[6],
			     const uint8_t our_ip[4], uint8_t *out, size_t cap,
			     struct droce_icmp_stats *st)
{
	struct droce_icmp_stats dummy;
	if (st == NULL)
		st = &dummy;
	if (frame == NULL || our_mac == NULL || our_ip == NULL) {
		st->rx_bad++;
		return 0;
	}
	size_t l3 = droce_net_l3_off(frame, len);
	if (len < l3 + 20 || droce_get_be16(frame + l3 - 2) != DROCE_ETHERTYPE_IPV4) {
		st->rx_bad++;
		return 0;
	}
	const uint8_t *ip = frame + l3;
	size_t ihl = (size_t)(ip[0] & 0x0Fu) * 4u;
	size_t tot = droce_get_be16(ip + 2);
	if ((ip[0] >> 4) != 4 || ihl < 20 || tot < ihl + ICMP_HDR_LEN || tot > len - l3 ||
	    ip[9] != DROCE_IPPROTO_ICMP || droce_inet_csum(ip, ihl) != 0) {
		st->rx_bad++;
		return 0;
	}
	/* A fragment (MF set or an offset) cannot be answered from one frame. */
	if ((droce_get_be16(ip + 6) & 0x3FFFu) != 0) {
		st->rx_bad++;
		return 0;
	}
	const uint8_t *icmp = ip + ihl;
	size_t icmp_len = tot - ihl;
	if (memcmp(ip + 16, our_ip, 4) != 0 || icmp[0] != ICMP_ECHO_REQUEST || icmp[1] != 0) {
		st->rx_ignored++;
		return 0;
	}
	if (droce_inet_csum(icmp, icmp_len) != 0) {
		st->rx_bad++;
		return 0;
	}
	size_t rlen = l3 + 20 + icmp_len;
	size_t wire = rlen < MIN_FRAME ? MIN_FRAME : rlen;
	if (out == NULL || cap < wire) {
		st->rx_ignored++;
		return 0;
	}
	memset(out + rlen, 0, wire - rlen);
	memcpy(out, frame + 6, 6);      /* back to the sender's MAC */
	memcpy(out + 6, our_mac, 6);
	memcpy(out + 12, frame + 12, l3 - 12); /* tag (if any) and ethertype */
	uint8_t *rip = out + l3;
	rip[0] = 0x45;
	rip[1] = ip[1];
	droce_put_be16(rip + 2, (uint16_t)(20 + icmp_len));
	memcpy(rip + 4, ip + 4, 2);     /* keep the ID */
	droce_put_be16(rip + 6, 0);
	rip[8] = REPLY_TTL;
	rip[9] = DROCE_IPPROTO_ICMP;
	droce_put_be16(rip + 10, 0);
	memcpy(rip + 12, our_ip, 4);
	memcpy(rip + 16, ip + 12, 4);
	droce_put_be16(rip + 10, droce_inet_csum(rip, 20));
	uint8_t *ric = rip + 20;
	memmove(ric, icmp, icmp_len);
	ric[0] = ICMP_ECHO_REPLY;
	ric[1] = 0;
	droce_put_be16(ric + 2, 0);
	droce_put_be16(ric + 2, droce_inet_csum(ric, icmp_len));
	st->rx_echo++;
	return wire;
}
