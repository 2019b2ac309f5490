/* SPDX-License-Identifier: BSD-3-Clause */
#include "aeth_desc.h"

#include <stdio.h>

#include "wire/hdr.h"

/* IBTA vol 1 9.7.5.2.8 table 45: RNR NAK timer field encoding, microseconds. */
static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* IBTA vol 1 9.7.7.2.2 table 44: credit count encoding (code 31: invalid). */
static const int32_t ack_credits[32] = {
	0, 1, 2, 3, 4, 6, 8, 12,
	16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072,
	4096, 6144, 8192, 12288, 16384, 24576, 32768, -1,
};

uint32_t droce_dump_rnr_timer_us(uint8_t code)
{
	return rnr_timer_us[code & DROCE_AETH_VALUE_MASK];
}

int32_t droce_dump_ack_credits(uint8_t code)
{
	return ack_credits[code & DROCE_AETH_VALUE_MASK];
}

static const char *nak_name(uint8_t code)
{
	switch (code) {
	case DROCE_NAK_PSN_SEQ_ERR: return "PSN sequence error";
	case DROCE_NAK_INVALID_REQ: return "invalid request";
	case DROCE_NAK_REMOTE_ACCESS: return "remote access error";
	case DROCE_NAK_REMOTE_OP: return "remote operational error";
	case DROCE_NAK_INVALID_RD_REQ: return "invalid RD request";
	default: return NULL; /* 5-31: reserved */
	}
}

const char *droce_dump_aeth_describe(uint8_t syndrome, char *buf, size_t n)
{
	uint8_t v = syndrome & DROCE_AETH_VALUE_MASK;

	switch (syndrome & DROCE_AETH_TYPE_MASK) {
	case DROCE_AETH_ACK: {
		int32_t cr = droce_dump_ack_credits(v);
		if (cr < 0)
			snprintf(buf, n, "ACK credits=%u (invalid)", v);
		else
			snprintf(buf, n, "ACK credits=%u (%d)", v, cr);
		break;
	}
	case DROCE_AETH_RNR_NAK: {
		uint32_t us = droce_dump_rnr_timer_us(v);
		snprintf(buf, n, "RNR NAK timer=%u (%u.%02u ms)", v, us / 1000,
			 (us % 1000) / 10);
		break;
	}
	case DROCE_AETH_NAK: {
		const char *name = nak_name(v);
		if (name)
			snprintf(buf, n, "NAK %s", name);
		else
			snprintf(buf, n, "NAK reserved code=%u", v);
		break;
	}
	default: /* 0x40: reserved (9.3.5: bits 6:5 = 10b) */
		snprintf(buf, n, "reserved syndrome=0x%02x", syndrome);
		break;
	}
	/* Bit 7 of the syndrome is reserved (0) by table 43; show it if set. */
	if (syndrome & 0x80u) {
		size_t used = 0;
		while (used < n && buf[used])
			used++;
		if (used < n)
			snprintf(buf + used, n - used, " (syndrome bit 7 set)");
	}
	return buf;
}
