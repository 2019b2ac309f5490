#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the DDP test: the same small model on the same synthetic data
trained with DistributedDataParallel over Gloo, then over droce; the losses
of every step and the final parameters must agree (two ranks: each gradient
element is a0 + a1 either way). Run by launch.py at 2 ranks."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import droce.torch

rank = int(os.environ["RANK"])
n = int(os.environ["WORLD_SIZE"])
STEPS = int(os.environ.get("DDP_STEPS", "10"))
dist.init_process_group("droce", init_method="env://", timeout=timedelta(seconds=180))
gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=180))


def train(pg):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 8))
    with torch.no_grad():  # DDP must broadcast rank 0's parameters to make these equal
        for p in model.parameters():
            p.add_(rank)
    ddp = DDP(model, process_group=pg, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    losses, times = [], []
    for _ in range(STEPS):
        x = torch.randn(64, 32, generator=g)
        y = torch.randn(64, 8, generator=g)
        t0 = time.perf_counter()
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    return losses, [p.detach().clone() for p in model.parameters()], times


lg, pg_, tg = train(gloo)
ld, pd, td = train(None)
for s, (a, b) in enumerate(zip(lg, ld)):
    print(f"step {s}: loss gloo {a:.9f} droce {b:.9f}", flush=True)
torch.testing.assert_close(torch.tensor(ld), torch.tensor(lg), rtol=1e-6, atol=1e-7)
for a, b in zip(pd, pg_):
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
# every rank ends with the same model
flat = torch.cat([p.flatten() for p in pd])
other = flat.clone()
dist.broadcast(other, 0, group=gloo)
torch.testing.assert_close(flat, other, rtol=0, atol=0)
print(f"rank {rank}: {STEPS} DDP steps, losses equal to gloo's; median step "
      f"gloo {sorted(tg)[len(tg) // 2] * 1e3:.2f} ms, droce {sorted(td)[len(td) // 2] * 1e3:.2f} ms "
      f"(unpinned, shared cores: not a benchmark)", flush=True)
dist.destroy_process_group()
