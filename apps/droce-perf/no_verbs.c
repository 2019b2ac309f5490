/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf built without libibverbs: --backend verbs says so. */
#include "perf.h"

const struct perf_backend *const perf_backend_verbs = NULL;
