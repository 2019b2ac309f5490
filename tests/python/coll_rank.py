#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the collectives test: every collective of the droce backend
against Gloo on the same inputs in the same process (integers exact, floats
within the reduction-order tolerance of their type), and against a
reference each rank computes from every rank's seeded inputs where Gloo
has no such operation. Run by launch.py at 2 and 4 ranks."""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import droce.torch

rank = int(os.environ["RANK"])
n = int(os.environ["WORLD_SIZE"])
dist.init_process_group("droce", init_method="env://", timeout=timedelta(seconds=180))
gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=180))
R = dist.ReduceOp
TOL = {torch.float32: (2e-5, 2e-5), torch.float64: (1e-12, 1e-12),
       torch.float16: (4e-3, 4e-3), torch.bfloat16: (3e-2, 3e-2)}
checks = 0


def data(dtype, numel, r, salt=0, op=R.SUM):
    g = torch.Generator().manual_seed(7919 * r + 31 * numel + salt)
    if dtype.is_floating_point:
        x = torch.rand(numel, generator=g, dtype=torch.float64)
        x = 0.75 + x * 0.5 if op == R.PRODUCT else x * 2 - 1
    else:
        x = torch.randint(-2, 3, (numel,), generator=g) if op == R.PRODUCT else \
            torch.randint(-1000, 1000, (numel,), generator=g)
    return x.to(dtype)


def same(what, got, want):
    global checks
    checks += 1
    if got.dtype.is_floating_point:
        rtol, atol = TOL[got.dtype]
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")
    elif not torch.equal(got, want):
        bad = (got != want).nonzero()[:5].flatten().tolist()
        raise AssertionError(f"{what}: differs at {bad}: {got[bad]} vs {want[bad]}")


def reference(dtype, numel, op, salt=0):
    acc = None
    for r in range(n):
        x = data(dtype, numel, r, salt, op)
        x = x.double() if dtype.is_floating_point else x.long()
        acc = x if acc is None else {R.SUM: torch.add, R.PRODUCT: torch.mul, R.MIN: torch.minimum,
                                     R.MAX: torch.maximum}[op](acc, x)
    return acc.to(dtype)


# all_reduce: every type and op, sizes on both sides of the ring threshold (64 KB)
for dtype in [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]:
    for opname, op in [("sum", R.SUM), ("product", R.PRODUCT), ("min", R.MIN), ("max", R.MAX)]:
        es = torch.tensor([], dtype=dtype).element_size()
        for numel in [1, 13, 5000, 65536 // es, 65536 // es + 1, 70001]:
            x = data(dtype, numel, rank, 0, op)
            a, b = x.clone(), x.clone()
            dist.all_reduce(a, op=op)
            try:
                dist.all_reduce(b, op=op, group=gloo)
                same(f"all_reduce {dtype} {opname} {numel} vs gloo", a, b)
            except RuntimeError as e:
                # Gloo has no bfloat16 ("Invalid scalar type"): the reference below
                if not any(m in str(e) for m in ("Invalid scalar type", "Unsupported",
                                                 "not supported")):
                    raise
            same(f"all_reduce {dtype} {opname} {numel} vs reference", a, reference(dtype, numel, op))

# a non-contiguous tensor, and async operations waited together
x = data(torch.float32, 2000, rank).view(40, 50).t()
a, b = x.clone(), x.clone()
dist.all_reduce(a)
dist.all_reduce(b, group=gloo)
same("all_reduce non-contiguous", a, b)
xs = [data(torch.float64, 3000 * (i + 1), rank, i) for i in range(4)]
works = [dist.all_reduce(t, async_op=True) for t in xs]
for i, w in enumerate(works):
    w.wait()
    assert w.is_completed()
    same(f"async all_reduce {i}", xs[i], reference(torch.float64, 3000 * (i + 1), R.SUM, i))

# broadcast from every root, tree (small) and chain (large)
for root in range(n):
    for numel in [10, 100000]:
        x = data(torch.float32, numel, root, 5)
        a = x.clone() if rank == root else torch.zeros(numel)
        b = a.clone()
        dist.broadcast(a, root)
        dist.broadcast(b, root, group=gloo)
        same(f"broadcast root {root} {numel}", a, b)
        same(f"broadcast root {root} {numel} vs reference", a, x)

# all_gather (list and into one tensor)
for numel in [3, 1000, 50000]:
    x = data(torch.int64, numel, rank, 9)
    a = [torch.empty(numel, dtype=torch.int64) for _ in range(n)]
    b = [torch.empty(numel, dtype=torch.int64) for _ in range(n)]
    dist.all_gather(a, x)
    dist.all_gather(b, x, group=gloo)
    for j in range(n):
        same(f"all_gather {numel} block {j}", a[j], b[j])
    flat = torch.empty(n * numel, dtype=torch.int64)
    dist.all_gather_into_tensor(flat, x)
    same(f"all_gather_into_tensor {numel}", flat, torch.cat(b))

# reduce_scatter (list and tensor) against Gloo's all_reduce of the blocks
for dtype in [torch.float32, torch.int32]:
    for numel in [4, 20000]:
        blocks = [data(dtype, numel, rank, 20 + j) for j in range(n)]
        out = torch.empty(numel, dtype=dtype)
        dist.reduce_scatter(out, [t.clone() for t in blocks])
        full = torch.cat(blocks)
        dist.all_reduce(full, group=gloo)
        want = full[rank * numel:(rank + 1) * numel]
        same(f"reduce_scatter {dtype} {numel}", out, want)
        out2 = torch.empty(numel, dtype=dtype)
        dist.reduce_scatter_tensor(out2, torch.cat(blocks))
        same(f"reduce_scatter_tensor {dtype} {numel}", out2, want)

# all_to_all_single: even, and uneven splits with empty ones (MoE dispatch)
W = 5
x = data(torch.float32, n * 6 * W, rank, 40).view(n * 6, W)
a, b = torch.empty_like(x), torch.empty_like(x)
dist.all_to_all_single(a, x)
dist.all_to_all_single(b, x, group=gloo)
same("all_to_all_single even", a, b)


def rows(src, dst):
    return (src * 7 + dst * 3) % 4


for salt in range(3):
    ins = [rows(rank, j) for j in range(n)]
    outs = [rows(j, rank) for j in range(n)]
    x = data(torch.float64, sum(ins) * W, rank, 50 + salt).view(-1, W)
    a = torch.empty(sum(outs), W, dtype=torch.float64)
    b = torch.empty_like(a)
    dist.all_to_all_single(a, x, outs, ins)
    dist.all_to_all_single(b, x, outs, ins, group=gloo)
    same(f"all_to_all_single uneven {salt}", a, b)

# all_to_all (lists): block j of rank r is data(r, 60 + j)
ins = [data(torch.int32, 100 + j, rank, 60 + j) for j in range(n)]
outs = [torch.empty(100 + rank, dtype=torch.int32) for _ in range(n)]
dist.all_to_all(outs, ins)
for j in range(n):
    same(f"all_to_all from {j}", outs[j], data(torch.int32, 100 + rank, j, 60 + rank))

# gather and scatter, every root
for root in range(n):
    x = data(torch.float32, 777, rank, 80 + root)
    a = [torch.empty(777) for _ in range(n)] if rank == root else None
    b = [torch.empty(777) for _ in range(n)] if rank == root else None
    dist.gather(x, a, dst=root)
    dist.gather(x, b, dst=root, group=gloo)
    if rank == root:
        for j in range(n):
            same(f"gather root {root} from {j}", a[j], b[j])
    ins = [data(torch.int64, 500, root, 90 + j) for j in range(n)] if rank == root else None
    a, b = torch.empty(500, dtype=torch.int64), torch.empty(500, dtype=torch.int64)
    dist.scatter(a, ins, src=root)
    dist.scatter(b, [t.clone() for t in ins] if ins else None, src=root, group=gloo)
    same(f"scatter root {root}", a, b)
    same(f"scatter root {root} vs reference", a, data(torch.int64, 500, root, 90 + rank))

# send/recv round the ring; two tags received in the other order than sent
nxt, prv = (rank + 1) % n, (rank - 1) % n
t1, t2 = data(torch.float32, 3000, rank, 70), data(torch.float32, 70000, rank, 71)
sends = [dist.isend(t1, nxt, tag=1), dist.isend(t2, nxt, tag=2)]
r2, r1 = torch.empty(70000), torch.empty(3000)
dist.recv(r2, prv, tag=2)
dist.recv(r1, prv, tag=1)
for w in sends:
    w.wait()
same("recv tag 1", r1, data(torch.float32, 3000, prv, 70))
same("recv tag 2", r2, data(torch.float32, 70000, prv, 71))

# recv from any source: every other rank sends rank 0 two messages of tag 5
# (behind a tag 6 one that rank 0 receives last, by source); rank 0 learns
# each sender from recv's return value and checks the data against it
if rank == 0:
    got = []
    for _ in range(2 * (n - 1)):
        t = torch.empty(4100, dtype=torch.int32)
        src = dist.recv(t, tag=5)
        k = sum(1 for g in got if g == src)
        same(f"recv any source: message {k} from {src}", t, data(torch.int32, 4100, src, 76 + k))
        got.append(src)
    assert sorted(got) == sorted(list(range(1, n)) * 2), got
    for j in range(1, n):
        t = torch.empty(300)
        assert dist.recv(t, j, tag=6) == j
        same(f"recv tag 6 from {j} after the any-source ones", t, data(torch.float32, 300, j, 78))
else:
    ws = [dist.isend(data(torch.float32, 300, rank, 78), 0, tag=6)]
    ws += [dist.isend(data(torch.int32, 4100, rank, 76 + k), 0, tag=5) for k in range(2)]
    for w in ws:
        w.wait()

# barrier, and a refused type fails cleanly on every rank
dist.barrier()
try:
    dist.all_reduce(torch.ones(3, dtype=torch.bool))
    raise AssertionError("bool all_reduce should be refused")
except RuntimeError as e:
    assert "not supported" in str(e), e
dist.barrier()

s = droce.torch.stats()
assert s["ring_ops"] > 0 and s["rd_ops"] > 0, s
print(f"rank {rank}: {checks} checks passed against gloo/reference; {s}", flush=True)
dist.destroy_process_group()
