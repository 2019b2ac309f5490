/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce's transport-mode extension in CM private data (docs/cm.md,
 * "Transport-mode extension"): the active side offers the loss-recovery
 * mode it wants (enum droce_transport) in the last 8 bytes of the REQ's
 * consumer private data, the passive side answers in the last 8 bytes of
 * the REP's. IBTA vol 1 12.6.5 / 12.6.8 leave private data to the
 * consumer; a peer that is not droce passes these bytes to its application
 * untouched and answers nothing, which leaves both sides at go-back-N.
 *
 *   byte 0..3  magic 'D' 'R' 'X' 'T'
 *   byte 4     version (1)
 *   byte 5     mode (0 gbn, 1 sr, 2 sr-spray)
 *   byte 6..7  reserved: sent 0, ignored
 *
 * Bytes only: no context, no QP.
 */
#ifndef DROCE_CM_XT_H
#define DROCE_CM_XT_H

#include <stddef.h>
#include <stdint.h>

#define DROCE_CM_XT_LEN 8u
#define DROCE_CM_XT_VERSION 1u
/** The highest mode this build knows (enum droce_transport). */
#define DROCE_CM_XT_MODE_MAX 2u

/**
 * Put @p mode in the tail of a private-data area of @p size bytes whose
 * first @p used bytes are the consumer's; the bytes between are zeroed.
 * @return the length to send (@p size), or 0 when the consumer's data
 *         leaves no room (nothing written: no offer, no answer).
 */
size_t droce_cm_xt_put(uint8_t *pd, size_t size, size_t used, unsigned mode);

/**
 * Read the extension from the tail of @p pd (@p len bytes, the whole area
 * the message carries).
 * @return 1 (@p mode set), 0 (no magic: no extension), -EPROTO (the magic
 *         with version 0 or, in version 1, a mode this build does not know:
 *         the caller counts it and takes go-back-N). A later version is read
 *         as version 1 with its mode clamped to the highest known.
 */
int droce_cm_xt_get(const uint8_t *pd, size_t len, unsigned *mode);

/** Zero the extension in @p pd (@p len bytes) so the consumer sees only its peer's data. */
void droce_cm_xt_clear(uint8_t *pd, size_t len);

#endif
