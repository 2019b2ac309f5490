/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stranger's rdma_cm REQ for the CM tests (test_cm.c, test_cm_api.c):
 * communication ID @p lcid (also its TID, QPN and the low half of its CA
 * GUID), for TCP port @p port of @p dst, from @p src, with the rdma_cm
 * header A11 requires; the rest zero. Encoded into @p mad.
 */
#ifndef DROCE_TESTS_CM_REQ_MAD_H
#define DROCE_TESTS_CM_REQ_MAD_H

#include <stdint.h>
#include <string.h>

#include "cm/mad.h"

static inline void test_req_mad(uint8_t mad[DROCE_MAD_LEN], const uint8_t src[4], const uint8_t dst[4],
				uint16_t port, uint32_t lcid)
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REQ, lcid);
	m.u.req.local_comm_id = lcid;
	m.u.req.service_id = droce_cm_tcp_service_id(port);
	m.u.req.local_ca_guid = 0x0202020202020000ull | lcid;
	m.u.req.local_qpn = lcid & 0xFFFFFF;
	m.u.req.path_mtu = 3;
	m.u.req.local_cm_response_timeout = 14;
	struct droce_cma_hdr h = {.version = DROCE_CMA_VERSION, .ip_version = 4, .src_port = 1};
	memcpy(h.src_ip, src, 4);
	memcpy(h.dst_ip, dst, 4);
	droce_cma_hdr_encode(m.u.req.private_data, &h);
	droce_mad_encode(mad, DROCE_MAD_LEN, &m);
}

#endif
