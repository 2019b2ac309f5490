#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""DDP step time, droce beside Gloo, interleaved in one run.

  DDP_STEPS=50 scripts/droce-python tests/python/launch.py 2 python/bench/ddp_step.py

The model of tests/python/ddp_rank.py (a small MLP on synthetic data) with
a wider hidden layer (DDP_HIDDEN, default 1024: about 4.4 MB of gradients
per step, in buckets of DDP_BUCKET_MB, default 1) and batches of DDP_BATCH
(default 16) rows, so that a step is not all compute (Debian's torch
multiplies with the reference BLAS). One intra-op thread per rank
(OMP_NUM_THREADS, as torchrun sets). Two DDP replicas of the same model,
one over Gloo, one over droce, trained step by step in turns (Gloo first
on even steps, droce first on odd ones), each step timed after a barrier
of its group; rank 0 prints the median step of each and the load average.
The losses of the two must agree at every step (the python suite checks
that more strictly; here it guards the figure).
"""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import droce.torch  # noqa: F401  registers the backend

rank = int(os.environ["RANK"])
# one intra-op thread per rank unless told, as torchrun sets for several
# ranks per host: the ranks share the cores, and each rank's backend thread
# (droce's worker, Gloo's) needs one too
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
STEPS = int(os.environ.get("DDP_STEPS", "50"))
H = int(os.environ.get("DDP_HIDDEN", "1024"))
BUCKET = float(os.environ.get("DDP_BUCKET_MB", "1"))
BATCH = int(os.environ.get("DDP_BATCH", "16"))
dist.init_process_group("droce", init_method="env://", timeout=timedelta(seconds=600))
gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=600))


def make(pg):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, H), nn.ReLU(), nn.Linear(H, H), nn.ReLU(),
                          nn.Linear(H, 8))
    ddp = DDP(model, process_group=pg, bucket_cap_mb=BUCKET)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)


reps = {"gloo": make(gloo), "droce": make(None)}
grads = sum(p.numel() for p in reps["droce"][0].parameters()) * 4
g = torch.Generator().manual_seed(100 + rank)
times = {"gloo": [], "droce": []}
if rank == 0:
    print(f"# DDP {STEPS} steps, {grads} bytes of gradients, buckets {BUCKET} MB, batch {BATCH}, "
          f"{torch.get_num_threads()} intra-op thread(s), "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
for s in range(STEPS):
    x = torch.randn(BATCH, 32, generator=g)
    y = torch.randn(BATCH, 8, generator=g)
    loss = {}
    for name in (("gloo", "droce") if s % 2 == 0 else ("droce", "gloo")):
        ddp, opt = reps[name]
        dist.barrier(group=gloo if name == "gloo" else None)
        t0 = time.perf_counter()
        out = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        out.backward()
        opt.step()
        times[name].append(time.perf_counter() - t0)
        loss[name] = out.item()
    torch.testing.assert_close(torch.tensor(loss["droce"]), torch.tensor(loss["gloo"]),
                               rtol=1e-5, atol=1e-6)
med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
if rank == 0:
    print(f"ddp_step_ms gloo {med['gloo']:.2f} droce {med['droce']:.2f} "
          f"ratio {med['gloo'] / med['droce']:.2f}; load average after {os.getloadavg()[0]:.2f}",
          flush=True)
dist.destroy_process_group()
