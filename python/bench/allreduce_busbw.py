#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""all_reduce bus bandwidth, droce (memif) beside Gloo (TCP loopback), one run.

  scripts/droce-python tests/python/launch.py 2 python/bench/allreduce_busbw.py [--iters N]

Every rank
times all_reduce of float32 tensors from 4 KB to 64 MB on both groups,
alternating, and rank 0 prints the median per size: algorithm bandwidth
(bytes / time) and bus bandwidth (x 2(n-1)/n, NCCL's convention: what each
rank's link carries in a ring).
"""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import droce.torch

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=int(os.environ.get("BENCH_ITERS", "20")))
ap.add_argument("--max", type=int, default=64 << 20)
args = ap.parse_args()
rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("droce", init_method="env://", timeout=timedelta(seconds=600))
gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=600))
sizes = []
s = 4096
while s <= args.max:
    sizes.append(s)
    s *= 4
if rank == 0:
    print(f"# {n} ranks, float32 sum, median of {args.iters}")
    print(f"{'bytes':>10} {'droce_us':>10} {'droce_busbw_GBs':>16} {'gloo_us':>10} {'gloo_busbw_GBs':>15}")
for size in sizes:
    t = torch.ones(size // 4)
    res = {}
    for name, grp in [("droce", None), ("gloo", gloo)]:
        for _ in range(2):
            dist.all_reduce(t, group=grp)
        times = []
        for _ in range(args.iters):
            dist.barrier(group=grp)
            t0 = time.perf_counter()
            dist.all_reduce(t, group=grp)
            times.append(time.perf_counter() - t0)
        res[name] = sorted(times)[len(times) // 2]
    if rank == 0:
        bus = lambda sec: size / sec * 2 * (n - 1) / n / 1e9
        print(f"{size:>10} {res['droce'] * 1e6:>10.1f} {bus(res['droce']):>16.3f} "
              f"{res['gloo'] * 1e6:>10.1f} {bus(res['gloo']):>15.3f}", flush=True)
dist.destroy_process_group()
