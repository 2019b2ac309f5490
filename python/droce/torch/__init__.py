# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's distributed backend "droce": importing this module registers it.

    import droce.torch, torch.distributed as dist
    dist.init_process_group("droce", init_method="env://")   # MASTER_ADDR/PORT, RANK, WORLD_SIZE

Every rank is one droce context; by default the ranks of one host reach each
other over one memif link per pair (nothing to configure), DROCE_TORCH_PORT
puts every rank on one DPDK port instead. Options (environment):
DROCE_TORCH_PORT, DROCE_TORCH_IP, DROCE_TORCH_SLOT_BYTES, DROCE_TORCH_SLOTS,
DROCE_TORCH_SMALL_MAX, DROCE_TORCH_CC, DROCE_TORCH_VERBOSE, DROCE_EAL
(docs/python.md).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Dict

import torch.distributed as dist

from . import _c10d

__all__ = ["create_process_group", "stats"]


def create_process_group(store: dist.Store, rank: int, size: int,
                         timeout: timedelta) -> dist.ProcessGroup:
    """What torch.distributed calls for backend "droce" (through register_backend)."""
    return _c10d.create_process_group(store, rank, size, timeout)


def stats(pg: dist.ProcessGroup | None = None) -> Dict[str, int]:
    """Transfer counters of a droce group (the default group when pg is None)."""
    if pg is None:
        pg = dist.distributed_c10d._get_default_group()
    return _c10d.stats(pg)


if "DROCE" not in dist.Backend._plugins:
    dist.Backend.register_backend("droce", create_process_group)
