/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The copying half of droce_link_ops.tx_fold, shared by the links that
 * offer it (the DPDK port in copy mode, the in-memory link).
 */
#ifndef DROCE_NET_LINK_TX_FOLD_H
#define DROCE_NET_LINK_TX_FOLD_H

#include <stdint.h>

#include <droce/link.h>

/**
 * Copy @p f's payload segments and pad to @p dst (the byte after its
 * headers), folding the ICRC from @p crc (the running ICRC of the masked
 * headers) over them as they are copied, and store the ICRC after them.
 * The caller checked f->trailer_len is the pad (0-3) + DROCE_ICRC_LEN.
 * @return the bytes written: payload + pad + ICRC.
 */
uint32_t droce_tx_fold_copy(uint8_t *dst, const struct droce_tx_frame *f, uint32_t crc);

#endif
