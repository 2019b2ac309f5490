/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * droce: a poll-mode userspace RoCEv2 stack. The one header applications include.
 */
#ifndef DROCE_H
#define DROCE_H

#include <droce/params.h>
#include <droce/link.h>
#include <droce/ctx.h>
#include <droce/verbs.h>
#include <droce/comm.h>
#include <droce/poll.h>
#include <droce/cm.h>
#include <droce/trace.h>

#endif
