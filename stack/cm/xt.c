/* SPDX-License-Identifier: BSD-3-Clause */
/* droce's transport-mode extension in CM private data (cm/xt.h, docs/cm.md). */
#include <errno.h>
#include <string.h>

#include "cm/xt.h"

static const uint8_t xt_magic[4] = {'D', 'R', 'X', 'T'};

size_t droce_cm_xt_put(uint8_t *pd, size_t size, size_t used, unsigned mode)
{
	if (!pd || size < DROCE_CM_XT_LEN || used > size - DROCE_CM_XT_LEN ||
	    mode > DROCE_CM_XT_MODE_MAX)
		return 0;
	memset(pd + used, 0, size - used);
	uint8_t *x = pd + size - DROCE_CM_XT_LEN;
	memcpy(x, xt_magic, sizeof(xt_magic));
	x[4] = DROCE_CM_XT_VERSION;
	x[5] = (uint8_t)mode;
	return size;
}

int droce_cm_xt_get(const uint8_t *pd, size_t len, unsigned *mode)
{
	if (!pd || len < DROCE_CM_XT_LEN)
		return 0;
	const uint8_t *x = pd + len - DROCE_CM_XT_LEN;
	if (memcmp(x, xt_magic, sizeof(xt_magic)))
		return 0;
	if (x[4] == 0 || (x[4] == DROCE_CM_XT_VERSION && x[5] > DROCE_CM_XT_MODE_MAX))
		return -EPROTO;
	*mode = x[5] > DROCE_CM_XT_MODE_MAX ? DROCE_CM_XT_MODE_MAX : x[5];
	return 1;
}

void droce_cm_xt_clear(uint8_t *pd, size_t len)
{
	if (pd && len >= DROCE_CM_XT_LEN)
		memset(pd + len - DROCE_CM_XT_LEN, 0, DROCE_CM_XT_LEN);
}
