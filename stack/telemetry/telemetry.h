/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce on DPDK's telemetry socket (dpdk-telemetry.py): the commands
 *   /droce/ctx           context counters, drop reasons, the poll loop's busy share
 *   /droce/qp/list       the QPNs (the first 512) and how many there are
 *   /droce/qp/info,QPN   one QP: state, PSNs, packets, retransmits, RTT,
 *                        ACK timeout, window, cc rate
 *   /droce/port          the DPDK port's counters
 *   /droce/cc            per QP: cc, window, rate, RTT (the first 256)
 * each with an optional ",NAME" of the context (default: the first opened).
 *
 * One context is driven by one thread and the telemetry thread answers on
 * its own, so the commands never read the engine: the poll thread publishes
 * a snapshot (droce_telemetry_publish(), a compare when not due), and the
 * commands answer from the last one, under a lock held only to copy it.
 */
#ifndef DROCE_TELEMETRY_TELEMETRY_H
#define DROCE_TELEMETRY_TELEMETRY_H

#include <stdint.h>

#include <droce/droce.h>

struct droce_port;
struct droce_telemetry;

/** How often the poll thread refreshes the snapshot (ns of its `now`). */
#define DROCE_TELEMETRY_INTERVAL_NS 100000000ull

/**
 * Put @p ctx (and its @p port, or NULL) on the telemetry socket under
 * @p name (<= 31 characters, starting with a letter). Registers the /droce commands the first
 * time. @return the handle, or NULL with errno set (ENOMEM, EINVAL).
 */
struct droce_telemetry *droce_telemetry_open(struct droce_ctx *ctx, struct droce_port *port,
					     const char *name);

/** From the context's poll thread: refresh the snapshot when the last one
 * is older than DROCE_TELEMETRY_INTERVAL_NS at @p now (else one compare).
 * NULL: nothing. */
void droce_telemetry_publish(struct droce_telemetry *t, uint64_t now);

/** The poll loop's accounting (droce/poll.h) to show in /droce/ctx: its
 * idle policy, busy and idle time, and the busy share over the last
 * snapshot interval. From the poll thread; NULL on either side: nothing. */
void droce_telemetry_set_poller(struct droce_telemetry *t, const struct droce_poller *pl);

/** Off the socket and freed (the commands then answer without it). */
void droce_telemetry_close(struct droce_telemetry *t);

#endif
