/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's objects as data, below transport/ and core/: each header
 * names the layer that writes its fields. Nothing here calls a function of
 * core/ or transport/ (the MR lookup, the CQ push and the drop counter are
 * inline data operations), so both layers include it and the calls go one
 * way only: core/ -> transport/ (transport/tp.h).
 *
 * Counters (sq_* / rq_*) are free-running uint32_t; a slot is counter & mask.
 */
#ifndef DROCE_MODEL_MODEL_H
#define DROCE_MODEL_MODEL_H

#include "model/ah.h"
#include "model/cq.h"
#include "model/ctx.h"
#include "model/drop.h"
#include "model/event.h"
#include "model/mr.h"
#include "model/pd.h"
#include "model/qp.h"
#include "model/seg.h"
#include "model/service.h"
#include "model/srq.h"
#include "model/timers.h"
#include "model/tp.h"
#include "model/wqe.h"
#include "wire/bytes.h"
#include "wire/fields.h"
#include "wire/hdr.h"
#include "wire/parse.h"

#endif
