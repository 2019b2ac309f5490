#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Both ends of the Python API test (run_pair.py api): connect with private
data, SEND with immediate from a numpy array, RDMA WRITE with immediate into
a bytearray, RDMA READ back, a torch tensor sent zero copy, a write with a
wrong rkey completing as REM_ACCESS_ERR (raised as CompletionError), a
registered bytearray refusing to resize, a poll that times out."""
import sys

import numpy

import droce

PORT = 7472
N = 4096
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


role = sys.argv[1]
ctx = droce.Context()
qp = ctx.create_qp(droce.QP_TYPE_RC)
pattern = bytes((i * 7 + 3) & 0xff for i in range(N))

if role == "server":
    window = bytearray(N)                               # the peer writes and reads here
    wmr = ctx.register_memory(window)
    arr = numpy.zeros(256, dtype=numpy.float64)
    amr = qp.register_memory(arr)
    qp.post_recv(amr, wr_id=1)
    qp.post_recv(wmr, length=0, wr_id=2)                # the WRITE with immediate takes one
    rb = droce.RemoteBuffer(wmr.addr, wmr.rkey, wmr.length)
    droce_listener = ctx.listen(PORT)
    droce_listener.accept(qp, timeout=30, private_data=rb.pack())
    check(qp.peer_private_data[:5] == b"hello", "the client's private data")
    wc = qp.poll_completion(timeout=30)
    check(wc.wr_id == 1 and wc.opcode == droce.WC_RECV and wc.byte_len == 2048, f"recv {wc}")
    check(wc.imm == 0x12345678, f"imm {wc.imm}")
    check(numpy.array_equal(arr, numpy.arange(256, dtype=numpy.float64) / 4), "array received")
    wc = qp.poll_completion(timeout=30)
    check(wc.wr_id == 2 and wc.opcode == droce.WC_RECV_RDMA_WITH_IMM and wc.imm == 42, f"write {wc}")
    check(bytes(window) == pattern, "the peer's RDMA WRITE landed")
    try:
        window.append(0)
        check(False, "a registered bytearray resized")
    except BufferError:
        checks += 1
    import torch
    t = torch.arange(100, dtype=torch.int32) * 3
    tmr = ctx.register_memory(t)
    check(tmr.addr == t.data_ptr() and tmr.length == 400 and tmr.obj is t, "tensor registered in place")
    qp.post_send(tmr, wr_id=3)
    wc = qp.poll_completion(timeout=30)
    check(wc.opcode == droce.WC_SEND, f"send {wc}")
    qp.wait_disconnect(timeout=30)
    wmr.close()
    window.append(0)                                    # deregistered: free again
    checks += 1
else:
    try:
        qp.poll_completion(timeout=0.05)
        check(False, "a completion from nowhere")
    except TimeoutError:
        checks += 1
    qp.connect(droce.Address(sys.argv[2], PORT), timeout=30, private_data=b"hello")
    rb = droce.RemoteBuffer.unpack(qp.peer_private_data)
    check(rb.length == N, f"remote buffer {rb}")
    arr = numpy.arange(256, dtype=numpy.float64) / 4
    qp.post_send(qp.register_memory(arr), imm=0x12345678, wr_id=10)
    check(qp.poll_completion(timeout=30).opcode == droce.WC_SEND, "send done")
    src = ctx.register_memory(pattern)                  # bytes: read-only, fine to send from
    qp.post_write(src, rb, imm=42, wr_id=11)
    check(qp.poll_completion(timeout=30).opcode == droce.WC_RDMA_WRITE, "write done")
    back = bytearray(N)
    bmr = ctx.register_memory(back)
    qp.post_read(bmr, rb, wr_id=12)
    wc = qp.poll_completion(timeout=30)
    check(wc.opcode == droce.WC_RDMA_READ and bytes(back) == pattern, "read back what was written")
    import torch
    t = torch.zeros(100, dtype=torch.int32)
    tmr = ctx.register_memory(t)
    qp.post_recv(tmr, wr_id=13)
    wc = qp.poll_completion(timeout=30)
    check(wc.wr_id == 13 and torch.equal(t, torch.arange(100, dtype=torch.int32) * 3), "tensor received")
    bmr.close()
    try:
        qp.post_read(bmr, rb)
        check(False, "posted from a closed region")
    except ValueError:
        checks += 1
    try:
        qp.post_write(src, (rb.addr, rb.rkey ^ 0x5a5a), length=64, wr_id=14)
        qp.poll_completion(timeout=30)
        check(False, "a wrong rkey was accepted")
    except droce.CompletionError as e:
        check(e.status == droce.WC_REM_ACCESS_ERR and e.completion.wr_id == 14, f"error {e}")
    qp.disconnect()
ctx.close()
print(f"api {role}: {checks} checks passed", flush=True)
