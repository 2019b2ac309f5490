#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Interleaved A/B runs of droce-bench-engine binaries on a shared machine.

usage: bench/engine/bestof.py ROUNDS NAME=PATH [NAME=PATH ...]

Each round runs `PATH -t 0.5 -s SIZE` for every binary in turn, for 64 B and
64 KB, so the machine's load falls on all of them alike; prints the median and
the best request-packet rate of each. Compare ratios, not absolute figures.
"""
import re
import subprocess
import sys

rounds = int(sys.argv[1])
bins = [a.split('=', 1) for a in sys.argv[2:]]
sizes = ['64', '65536']
vals = {}
for _ in range(rounds):
    for s in sizes:
        for name, path in bins:
            out = subprocess.run([path, '-t', '0.5', '-s', s], capture_output=True, text=True,
                                 check=True).stdout
            v = float(re.search(r'([\d.]+) Mpps requests', out).group(1))
            vals.setdefault((name, s), []).append(v)
for s in sizes:
    for name, _ in bins:
        v = sorted(vals[(name, s)])
        print(f"{s:>6} B {name:8s} median {v[len(v) // 2]:.3f} Mpps, best {v[-1]:.3f} (n={len(v)})")
