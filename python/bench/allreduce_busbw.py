#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""all_reduce bus bandwidth, droce (memif) beside Gloo (TCP loopback), one run.

  scripts/droce-python tests/python/launch.py 2 python/bench/allreduce_busbw.py [--iters N]

Every rank times all_reduce of float32 tensors from 4 KB to 64 MB on both
groups, interleaved: per size, iteration i runs droce then Gloo when i is
even and Gloo then droce when it is odd (so that neither always goes first
after the other's traffic), each timed call after a barrier of its own
group. Rank 0 prints the median per size: the time and the bus bandwidth
(bytes / time x 2(n-1)/n, NCCL's convention: what each rank's link carries
in a ring), Gloo's time over droce's (ratio), the median CPU time rank 0's
process (all its threads: droce's worker, Gloo's) spent per call in us
(droce_cpu, gloo_cpu: on a loaded machine the wall time is mostly waiting
for a core, the CPU time is what the backend itself costs), and the load
average before and after. Every result is
checked: the inputs are small integers, so the float32 sums are exact.
"""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import droce.torch  # noqa: F401  registers the backend

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=int(os.environ.get("BENCH_ITERS", "20")))
ap.add_argument("--min", type=int, default=4096)
ap.add_argument("--max", type=int, default=64 << 20)
args = ap.parse_args()
rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("droce", init_method="env://", timeout=timedelta(seconds=600))
gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=600))
groups = {"droce": None, "gloo": gloo}
sizes = []
s = args.min
while s <= args.max:
    sizes.append(s)
    s *= 4
if rank == 0:
    print(f"# {n} ranks, float32 sum, median of {args.iters} interleaved; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'bytes':>10} {'droce_us':>10} {'droce_busbw_GBs':>16} {'gloo_us':>10} "
          f"{'gloo_busbw_GBs':>15} {'ratio':>6} {'droce_cpu':>9} {'gloo_cpu':>9}", flush=True)
# Every element of rank r is r + 1 (+ the element's index mod 7 on rank 0):
# the sum is n(n+1)/2 + i mod 7, exact in float32 at these sizes.
want_base = n * (n + 1) // 2


def one(name, inp, t):
    t.copy_(inp)
    dist.barrier(group=groups[name])
    c0, t0 = time.process_time(), time.perf_counter()
    dist.all_reduce(t, group=groups[name])
    return time.perf_counter() - t0, time.process_time() - c0


for size in sizes:
    count = size // 4
    inp = torch.full((count,), float(rank + 1))
    if rank == 0:
        inp += torch.arange(count) % 7
    want = want_base + (torch.arange(count) % 7).float()
    t = torch.empty(count)
    res = {"droce": [], "gloo": []}
    cpu = {"droce": [], "gloo": []}
    for name in groups:  # warm-up, and registration of this size's tensors
        for _ in range(2):
            one(name, inp, t)
        if not torch.equal(t, want):
            raise SystemExit(f"{name} all_reduce of {size} bytes: wrong result")
    for i in range(args.iters):
        for name in (("droce", "gloo") if i % 2 == 0 else ("gloo", "droce")):
            w, c = one(name, inp, t)
            res[name].append(w)
            cpu[name].append(c)
            if not torch.equal(t, want):
                raise SystemExit(f"{name} all_reduce of {size} bytes: wrong result")
    med = {k: sorted(v)[len(v) // 2] for k, v in res.items()}
    cmed = {k: sorted(v)[len(v) // 2] for k, v in cpu.items()}
    if rank == 0:
        bus = lambda sec: size / sec * 2 * (n - 1) / n / 1e9  # noqa: E731
        print(f"{size:>10} {med['droce'] * 1e6:>10.1f} {bus(med['droce']):>16.3f} "
              f"{med['gloo'] * 1e6:>10.1f} {bus(med['gloo']):>15.3f} "
              f"{med['gloo'] / med['droce']:>6.2f} {cmed['droce'] * 1e6:>9.0f} "
              f"{cmed['gloo'] * 1e6:>9.0f}", flush=True)
if rank == 0:
    print(f"# load average after {os.getloadavg()[0]:.2f}", flush=True)
dist.destroy_process_group()
