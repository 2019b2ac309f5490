/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets (rdma-core's sockets over RDMA) are not in the drop-in: every
 * call fails with ENOSYS. Declared here without <rdma/rsocket.h> as
 * returning long: on x86-64 the caller reads -1 from rax whatever the
 * argument list, which is all a failing call needs to give.
 */
#include <errno.h>

#define R(n) __attribute__((visibility("default"))) long n(void); \
	long n(void) { errno = ENOSYS; return -1; }

R(rsocket) R(rbind) R(rlisten) R(raccept) R(rconnect) R(rshutdown) R(rclose)
R(rrecv) R(rrecvfrom) R(rrecvmsg) R(rsend) R(rsendto) R(rsendmsg) R(rread) R(rreadv)
R(rwrite) R(rwritev) R(rpoll) R(rselect) R(rgetpeername) R(rgetsockname) R(rsetsockopt)
R(rgetsockopt) R(rfcntl) R(riomap) R(riounmap) R(riowrite)
