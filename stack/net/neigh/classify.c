/* SPDX-License-Identifier: BSD-3-Clause */
#include "net/neigh/classify.h"

#include "wire/bytes.h"
#include "wire/hdr.h"

#define IPV6_NEXT_UDP 17u

static const char *const class_names[] = {
#define X(n, s) #n,
	DROCE_NET_CLASSES(X)
#undef X
};

const char *droce_net_class_name(enum droce_net_class c)
{
	return (unsigned)c < DROCE_NET__COUNT ? class_names[c] : "?";
}

size_t droce_net_l3_off(const uint8_t *frame, size_t len)
{
	if (len >= 18 && droce_get_be16(frame + 12) == DROCE_ETHERTYPE_VLAN)
		return 18;
	return 14;
}

static enum droce_net_class classify_ipv4(const uint8_t *ip, size_t len)
{
	if (len < 20 || (ip[0] >> 4) != 4)
		return DROCE_NET_RUNT;
	size_t ihl = (size_t)(ip[0] & 0x0Fu) * 4u;
	if (ihl < 20 || len < ihl)
		return DROCE_NET_RUNT;
	uint8_t proto = ip[9];
	if (proto == DROCE_IPPROTO_ICMP)
		return DROCE_NET_ICMP;
	if (proto != DROCE_IPPROTO_UDP)
		return DROCE_NET_OTHER_IPV4;
	if (len < ihl + 8)
		return DROCE_NET_RUNT;
	return droce_get_be16(ip + ihl + 2) == DROCE_UDP_PORT ? DROCE_NET_ROCEV2_IPV4
							       : DROCE_NET_OTHER_IPV4;
}

static enum droce_net_class classify_ipv6(const uint8_t *ip, size_t len)
{
	if (len < 40 || (ip[0] >> 4) != 6)
		return DROCE_NET_RUNT;
	if (ip[6] != IPV6_NEXT_UDP)
		return DROCE_NET_OTHER_IPV6;
	if (len < 48)
		return DROCE_NET_RUNT;
	return droce_get_be16(ip + 40 + 2) == DROCE_UDP_PORT ? DROCE_NET_ROCEV2_IPV6
							      : DROCE_NET_OTHER_IPV6;
}

enum droce_net_class droce_net_classify(const uint8_t *frame, size_t len)
{
	if (frame == NULL || len < 14)
		return DROCE_NET_RUNT;
	size_t l3 = droce_net_l3_off(frame, len);
	if (len < l3)
		return DROCE_NET_RUNT;
	uint16_t et = droce_get_be16(frame + l3 - 2);
	switch (et) {
	case DROCE_ETHERTYPE_IPV4:
		return classify_ipv4(frame + l3, len - l3);
	case DROCE_ETHERTYPE_IPV6:
		return classify_ipv6(frame + l3, len - l3);
	case DROCE_ETHERTYPE_ARP:
		return DROCE_NET_ARP;
	case DROCE_ETHERTYPE_ROCEV1:
		return DROCE_NET_ROCEV1;
	default:
		return DROCE_NET_OTHER;
	}
}

uint16_t droce_inet_csum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;
	size_t i = 0;
	for (; i + 1 < len; i += 2)
		sum += droce_get_be16(p + i);
	if (i < len)
		sum += (uint32_t)p[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}
