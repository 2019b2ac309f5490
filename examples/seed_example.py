#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The seed's example over droce: a float32 array from one process to the other.

The seed's code, with `import rdma` become droce and the two-process setup
(which side listens, which one connects, which one sends) around it:

  scripts/droce-python --port memif:server,socket=/tmp/seed.sock --ip 198.18.0.1 \\
      examples/seed_example.py server
  scripts/droce-python --port memif:client,socket=/tmp/seed.sock --ip 198.18.0.2 \\
      examples/seed_example.py client 198.18.0.1

The server prints what it received: `received [0.0, 0.5, 1.0, ...]`.
"""
import json
import sys

import numpy

import droce as rdma

PORT = 7471
N = 1024

role = sys.argv[1] if len(sys.argv) > 1 else "server"
ctx = rdma.Context()                                   # port and ip from DROCE_PORT, DROCE_IP
qp = ctx.create_qp(rdma.QP_TYPE_RC)
if role == "server":
    numpy_array = numpy.zeros(N, dtype=numpy.float32)
    mr = qp.register_memory(numpy_array)
    qp.post_recv(mr)                                   # before the peer can send
    ctx.listen(PORT).accept(qp)
    wc = qp.poll_completion(timeout=30)
    print("received", json.dumps(numpy_array.tolist()), flush=True)
    print(f"completion: {wc.status_str}, {wc.byte_len} bytes", flush=True)
    qp.wait_disconnect(timeout=10)
else:
    numpy_array = numpy.arange(N, dtype=numpy.float32) * 0.5
    qp.connect(rdma.Address(sys.argv[2] if len(sys.argv) > 2 else "198.18.0.1", PORT))
    mr = qp.register_memory(numpy_array)
    qp.post_send(mr)
    wc = qp.poll_completion(timeout=30)
    print(f"sent {N} floats: {wc.status_str}", flush=True)
    qp.disconnect()
ctx.close()
