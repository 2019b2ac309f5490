/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/icrc_fast.h"

#include <string.h>

#define ZBLOCK 256u   /* ISA-L's fast path starts here */

void droce_icrc_seeds_init(struct droce_icrc_seeds *s)
{
	uint32_t t[256];
	uint8_t inv[256];
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
		t[i] = c;
		inv[c >> 24] = (uint8_t)i; /* top bytes of the table are a permutation */
	}
	/* r_k: the register k zero bytes before the initial 0xFFFFFFFF. One zero
	 * byte maps r to (r >> 8) ^ t[r & 0xFF]; undo it through the top byte. */
	s->crc = droce_crc32_select();
	memset(s->mem, 0, sizeof(s->mem));
	static const uint8_t ones[8] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
	s->c8 = droce_crc32_isal(0, ones, sizeof(ones));
	/* The bits masked_prefix() sets, as masks over the bytes from l3. */
	memset(s->mask, 0, sizeof(s->mask));
	uint8_t *m4 = s->mask[DROCE_L3_IPV4];
	m4[1] = m4[8] = m4[10] = m4[11] = 0xFF;    /* TOS, TTL, header checksum */
	m4[20 + 6] = m4[20 + 7] = 0xFF;            /* UDP checksum */
	m4[20 + 8 + 4] = 0xFF;                     /* BTH resv8a */
	for (unsigned k = DROCE_L3_IPV6; k <= DROCE_L3_GRH; k++) {
		uint8_t *m6 = s->mask[k];
		m6[0] = 0x0F;                      /* traffic class, high nibble */
		m6[1] = m6[2] = m6[3] = 0xFF;      /* the rest of it, flow label */
		m6[7] = 0xFF;                      /* hop limit */
		size_t udp = k == DROCE_L3_GRH ? 0 : 8;
		if (udp)
			m6[40 + 6] = m6[40 + 7] = 0xFF;
		m6[40 + udp + 4] = 0xFF;
	}
	uint32_t r = 0xFFFFFFFFu;
	for (unsigned k = 0; k < 256; k++) {
		s->seed[k] = ~r; /* crc32_gzip_refl(seed) starts from ~seed */
		uint32_t i = inv[r >> 24];
		r = ((r ^ t[i]) << 8) | i;
	}
}

/* 8 bytes standing for the LRH, then the IP/UDP/BTH prefix to mask. */
static size_t masked_prefix(uint8_t *dst, const uint8_t *l3, enum droce_l3 kind)
{
	size_t ip_len = kind == DROCE_L3_IPV4 ? 20u : 40u;
	size_t udp_len = kind == DROCE_L3_GRH ? 0u : 8u;
	size_t pre = ip_len + udp_len + 12u;
	uint8_t *ip = dst + 8;

	memset(dst, 0xFF, 8);
	/* Constant sizes: a variable one compiles to `rep movsq` here (the
	 * destination's alignment is known), whose start-up cost more than
	 * the copy itself on every frame, sent and received. */
	if (kind == DROCE_L3_IPV4)
		memcpy(ip, l3, 20 + 8 + 12);
	else if (kind == DROCE_L3_IPV6)
		memcpy(ip, l3, 40 + 8 + 12);
	else
		memcpy(ip, l3, 40 + 12);
	if (kind == DROCE_L3_IPV4) {
		ip[1] = 0xFF;           /* TOS */
		ip[8] = 0xFF;           /* TTL */
		ip[10] = ip[11] = 0xFF; /* header checksum */
	} else {
		ip[0] |= 0x0F;          /* traffic class high nibble */
		ip[1] = ip[2] = ip[3] = 0xFF; /* traffic class low nibble, flow label */
		ip[7] = 0xFF;           /* hop limit */
	}
	if (udp_len)
		ip[ip_len + 6] = ip[ip_len + 7] = 0xFF; /* UDP checksum */
	ip[ip_len + udp_len + 4] = 0xFF;           /* BTH resv8a */
	return 8 + pre;
}

static size_t prefix_len(enum droce_l3 kind)
{
	return (kind == DROCE_L3_IPV4 ? 20u : 40u) + (kind == DROCE_L3_GRH ? 0u : 8u) + 12u;
}

/* CRC of mem[ZBLOCK .. ZBLOCK + len): the ZBLOCK bytes before it are zero. */
static uint32_t crc_short(const struct droce_icrc_seeds *zs, const uint8_t *mem, size_t len)
{
	if (len >= ZBLOCK || zs->crc != droce_crc32_isal)
		return zs->crc(0, mem + ZBLOCK, len);
	size_t k = ZBLOCK - len;
	return zs->crc(zs->seed[k], mem + ZBLOCK - k, ZBLOCK);
}

uint32_t droce_icrc_tx(struct droce_icrc_seeds *zs, const uint8_t *l3, enum droce_l3 kind,
		       size_t l3_hdr_len, const struct droce_tx_seg *seg, unsigned nseg,
		       uint32_t payload_len, unsigned pad)
{
	if (zs->crc != droce_crc32_isal && l3_hdr_len + payload_len + pad < DROCE_CRC32_OR_MAX) {
		/* Headers as built and the payload gathered behind them, the
		 * variant fields masked in registers: one CRC call, no byte
		 * stores in front of its loads. */
		uint8_t *b = zs->mem;
		size_t o = l3_hdr_len;
		memcpy(b, l3, o);
		for (unsigned i = 0; i < nseg; i++) {
			memcpy(b + o, seg[i].addr, seg[i].len);
			o += seg[i].len;
		}
		memset(b + o, 0, 4); /* the pad: constant size; mem has room */
		return droce_crc32_or_vpclmul(zs->c8, b, o + pad, zs->mask[kind]);
	}
	uint8_t *mem = zs->mem;
	uint8_t *buf = mem + ZBLOCK;
	size_t pre = prefix_len(kind);
	size_t o = masked_prefix(buf, l3, kind);
	size_t ext = l3_hdr_len - pre;

	if (ext > 256) /* cannot happen: extension headers are at most 28 bytes */
		return 0;
	memcpy(buf + o, l3 + pre, ext);
	o += ext;
	if (payload_len <= DROCE_ICRC_FAST_MAX) {
		for (unsigned i = 0; i < nseg; i++) {
			memcpy(buf + o, seg[i].addr, seg[i].len);
			o += seg[i].len;
		}
		memset(buf + o, 0, 4); /* the pad: constant size (no libc call); mem has room */
		return crc_short(zs, mem, o + pad);
	}
	uint32_t crc = crc_short(zs, mem, o);
	for (unsigned i = 0; i < nseg; i++)
		crc = zs->crc(crc, seg[i].addr, seg[i].len);
	if (pad) {
		static const uint8_t zeros[4];
		crc = zs->crc(crc, zeros, pad);
	}
	return crc;
}

uint32_t droce_icrc_rx(struct droce_icrc_seeds *zs, const uint8_t *l3, enum droce_l3 kind,
		       size_t len)
{
	size_t pre = prefix_len(kind);
	if (len < pre)
		return 0;
	/* Short frames in place: no copy, the variant fields masked in registers. */
	if (zs->crc != droce_crc32_isal && len < DROCE_CRC32_OR_MAX)
		return droce_crc32_or_vpclmul(zs->c8, l3, len, zs->mask[kind]);
	uint8_t *mem = zs->mem;
	uint8_t *buf = mem + ZBLOCK;
	size_t o = masked_prefix(buf, l3, kind);
	size_t rest = len - pre;
	if (o + rest <= 8 + 256 + DROCE_ICRC_FAST_MAX) {
		memcpy(buf + o, l3 + pre, rest);
		return crc_short(zs, mem, o + rest);
	}
	uint32_t crc = crc_short(zs, mem, o);
	return zs->crc(crc, l3 + pre, rest);
}
