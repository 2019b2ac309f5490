/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: the entry points; the frames of the side, then each phase in order (derive_int.h). */
#include "derive.h"
#include "derive_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int droce_rp_derive(const struct droce_rp_capture *cap, const char *cap_path, const char *ip,
		    FILE *out, char *err, size_t errlen)
{
	return droce_rp_derive_impaired(cap, cap_path, ip, NULL, NULL, out, err, errlen);
}

int droce_rp_derive_impaired(const struct droce_rp_capture *cap, const char *cap_path,
			     const char *ip, const char *impair, const bool *gone, FILE *out,
			     char *err, size_t errlen)
{
	struct dctx *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r = 0;
	d->cap = cap;
	d->err = err;
	d->errlen = errlen;
	d->ipv = droce_rp_parse_ip(ip, d->ip);
	if (!d->ipv) {
		r = drv_dfail(d, "--side %s: not an IPv4 or IPv6 address", ip);
		goto out;
	}
	d->fr = calloc(cap->n + 1, sizeof(*d->fr));
	if (!d->fr) {
		r = -ENOMEM;
		goto out;
	}
	unsigned own = 0, peer = 0, v1 = 0;
	for (size_t i = 0; i < cap->n; i++) {
		struct fr *a = &d->fr[d->nfr];
		a->f = &cap->f[i];
		a->gone = gone && gone[i];
		a->role = droce_rp_classify(a->f, d->ipv, d->ip, &a->p, &a->r);
		a->conn = -1;
		if (a->role == DROCE_RP_OTHER) {
			const struct droce_net_fields *n = &a->p.h.net;
			if (droce_rp_is_roce(a->r) && n->rocev1 &&
			    (!memcmp(n->src_ip, d->ip, 16) || !memcmp(n->dst_ip, d->ip, 16)))
				v1++;
			continue;
		}
		if (a->role == DROCE_RP_IGNORED) {
			d->ignored_ud++;
			/* a MAD with a bad ICRC never reached the CM (A17.4.5) */
			if (a->r == DROCE_PARSE_OK &&
			    (r = droce_rp_cm_add(&d->cm, &a->p, a->f->num, d->ip, d->err, d->errlen)))
				goto out;
			continue;
		}
		if (a->r != DROCE_PARSE_OK) {
			/* Kept: the replay feeds bad frames and expects droce to drop them. */
			d->nfr++;
			continue;
		}
		enum droce_service svc = droce_opcode_service(a->p.h.bth.opcode);
		if (svc != DROCE_SVC_RC && svc != DROCE_SVC_CNP) {
			r = drv_dfail(d, "frame %u: unsupported opcode %s: droce implements RC only", a->f->num,
				  a->p.op->name);
			goto out;
		}
		if (a->role == DROCE_RP_OWN) {
			own++;
			if (!d->has_mac) {
				memcpy(d->mac, a->p.h.net.src_mac, 6);
				d->has_mac = true;
			}
		} else {
			peer++;
		}
		d->nfr++;
	}
	/* Every time derive writes is a frame's time, or one nanosecond
	 * after one (a receive after the RNR NAK it answers, a delivery
	 * after the frame it crossed): a frame at or past the scenario's
	 * bound would be written as a time the reader refuses. Only a
	 * broken or forged clock spans 31 years. */
	for (size_t i = 0; i < d->nfr; i++)
		if (d->fr[i].f->t_ns >= DROCE_RP_TIME_MAX_NS) {
			r = drv_dfail(d, "frame %u is %.3g s after the capture's first frame: a scenario's "
				      "times end at %.0e ns (about 31 years); the capture's clock is broken",
				      d->fr[i].f->num, (double)d->fr[i].f->t_ns / 1e9,
				      (double)DROCE_RP_TIME_MAX_NS);
			goto out;
		}
	if (!own && !peer) {
		if (v1)
			r = drv_dfail(d, "%s: only RoCEv1 (GRH over Ethernet) traffic: droce speaks RoCEv2", ip);
		else if (d->ignored_ud)
			r = drv_dfail(d, "%s: only QP1/UD traffic (%u CM MADs): nothing for an RC scenario", ip,
				  d->ignored_ud);
		else
			r = drv_dfail(d, "no RoCE traffic for %s in %s", ip, cap_path);
		goto out;
	}
	if (!own) {
		r = drv_dfail(d, "%s sends no RC frames in %s: its answers are not in the capture, "
			  "there is nothing to compare droce with", ip, cap_path);
		goto out;
	}
	if ((r = drv_pair_qps(d)))
		goto out;
	/* Peer MACs: from the side's own frames. */
	for (size_t i = 0; i < d->nfr; i++)
		if (d->fr[i].role == DROCE_RP_OWN && d->fr[i].conn >= 0)
			memcpy(d->conns[d->fr[i].conn].peer_mac, d->fr[i].p.h.net.dst_mac, 6);
	if ((r = drv_infer_mtu(d)) || (r = drv_cm_attrs(d)) || (r = drv_collect_regions(d)) ||
	    (drv_start_psns(d), (r = drv_own_requests(d))) || (r = drv_walk(d)) || (r = drv_check_msns(d)) ||
	    (r = drv_cm_psns(d)))
		goto out;
	d->impair = impair;
	drv_emit(d, cap_path, ip, out);
out:
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; i < d->nmsgs; i++)
		free(d->msgs[i].data);
	free(d->msgs);
	for (unsigned i = 0; i < d->nregions; i++) {
		free(d->regions[i].init);
		free(d->regions[i].shadow);
		free(d->regions[i].known);
		free(d->regions[i].written);
		free(d->regions[i].iset);
		free(d->regions[i].kseq);
		free(d->regions[i].wseq);
	}
	free(d->pc);
	hfree(&d->map);
	free(d->reads);
	free(d->lost);
	free(d->cross);
	free(d->fr);
	free(d);
	return r;
}
