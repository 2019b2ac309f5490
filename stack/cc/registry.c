/* SPDX-License-Identifier: BSD-3-Clause */
#include "cc/cc.h"

#include <string.h>

const struct droce_cc_algo *const droce_cc_registry[] = {
	&droce_cc_fixed,
	&droce_cc_aimd,
	&droce_cc_dcqcn,
	&droce_cc_swift,
	NULL,
};

const struct droce_cc_algo *droce_cc_find(const char *name)
{
	if (!name)
		return &droce_cc_fixed;
	for (unsigned i = 0; droce_cc_registry[i]; i++)
		if (strcmp(droce_cc_registry[i]->name, name) == 0)
			return droce_cc_registry[i];
	return NULL;
}
