#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""droce-sim evaluation of the transports, side by side (docs/cc.md).

    eval.py DROCE_SIM [TRANSPORT,...] [--out DIR] [--md]

One row per figure, one column per transport, every run the same seed.
TRANSPORT names droce-sim's --transport value; "gbn" (go-back-N, the
default) runs without the option, so the script works on a droce-sim that
has none. A transport mode adds its name to the list, nothing else.
--md prints the table as markdown (for docs/cc.md).

Figures:
  ls-perm-4x8      leaf-spine 4 leaves x 8 hosts, 2 spines, permutation of 8 MB: Jain, bottleneck util
  ls-perm-8x16     8 x 16, 4 spines, 2 MB each: Jain, util
  loss-2h-1%       2 hosts (incast:1), 1 % random loss, 10 ms: goodput
  loss-2h-0.1%     the same at 0.1 %
  loss-ls-1%       leaf-spine 4,2,8 permutation, 1 % loss, 10 ms: goodput
  loss-ls-0.1%     the same at 0.1 %
  incast-16        16:1 incast without PFC, 2 MB each, swift: drops, FCT p50/p99
  allreduce-16     ring allreduce over 16 hosts (leaf-spine 4,2,4), 16 MB: busbw
  spine-fail       leaf-spine 2,2,4 permutation of 8 MB, leaf0-spine0 fails at 200 us
                   (ECMP rehash after 50 us): time from the failure until goodput is
                   back within 10 % of the level it settles at after it (the median
                   from the failure until the first flow ends: what the surviving
                   paths carry), and the longest stall of a flow (one hashed onto
                   the dead uplink: go-back-N waits for its timer, then ECMP's rehash)
"""
import json
import os
import subprocess
import sys
import tempfile

SEED = "5"
SAMPLE_NS = 10000
DOWN = 200000

FIGURES = [
    ("ls-perm-4x8", ["--leaf-spine", "4,2,8", "--cc", "dcqcn", "--pfc", "32768,16384",
                     "--workload", "permutation:8388608"], ("jain", "link_util")),
    ("ls-perm-8x16", ["--leaf-spine", "8,4,16", "--cc", "dcqcn", "--pfc", "32768,16384",
                      "--workload", "permutation:2097152"], ("jain", "link_util")),
    ("loss-2h-1%", ["--workload", "incast:1:100000000", "--loss", "0.01",
                    "--duration", "10000000"], ("goodput_gbps",)),
    ("loss-2h-0.1%", ["--workload", "incast:1:100000000", "--loss", "0.001",
                      "--duration", "10000000"], ("goodput_gbps",)),
    ("loss-ls-1%", ["--leaf-spine", "4,2,8", "--workload", "permutation:50000000",
                    "--loss", "0.01", "--duration", "10000000"], ("goodput_gbps",)),
    ("loss-ls-0.1%", ["--leaf-spine", "4,2,8", "--workload", "permutation:50000000",
                      "--loss", "0.001", "--duration", "10000000"], ("goodput_gbps",)),
    ("incast-16", ["--workload", "incast:16:2097152", "--cc", "swift"],
     ("drops", "fct_p50_us", "fct_p99_us")),
    ("allreduce-16", ["--leaf-spine", "4,2,4", "--cc", "dcqcn", "--pfc", "32768,16384",
                      "--workload", "allreduce:16777216"], ("busbw_gbps",)),
    ("spine-fail", ["--leaf-spine", "2,2,4", "--cc", "dcqcn", "--workload", "permutation:8388608",
                    "--fail", "leaf0-spine0@%d" % DOWN, "--rehash", "50000",
                    "--sample", str(SAMPLE_NS), "--duration", "20000000"],
     ("recovery_us", "max_stall_us", "link_drops")),
]
COMMON = ["--timeout-mode", "adaptive", "--seed", SEED]


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


def derive(d):
    d["max_stall_us"] = d.get("max_stall_ns", 0) / 1e3
    fct = [f["fct_us"] for f in d["flows"] if f["fct_us"] > 0]
    d["fct_p50_us"], d["fct_p99_us"] = pct(fct, 0.5), pct(fct, 0.99)
    series = d.get("goodput_series_gbps")
    if series:
        k0 = DOWN // SAMPLE_NS
        after = series[k0:]
        # the level the fabric settles at after the failure: the median of
        # the samples from the failure until the first flow ends
        first_end = min((f["start_us"] + f["fct_us"] for f in d["flows"] if f["fct_us"] > 0),
                        default=len(series) * SAMPLE_NS / 1e3)
        k1 = max(k0 + 1, int(first_end * 1e3 // SAMPLE_NS))
        level = pct(series[k0:k1], 0.5)
        rec = next((i for i, g in enumerate(after) if i and g >= 0.9 * level), None)
        d["recovery_us"] = rec * SAMPLE_NS / 1e3 if rec is not None else float("nan")
    return d


def run(sim, out, name, transport, args):
    path = os.path.join(out, f"{name}-{transport}.json")
    cmd = [sim, "--quiet", "--json", path] + args + COMMON
    if transport != "gbn":
        cmd += ["--transport", transport]
    subprocess.run(cmd, check=True, timeout=600)
    with open(path) as f:
        return derive(json.load(f))


def main():
    argv = sys.argv[1:]
    md = "--md" in argv
    argv = [a for a in argv if a != "--md"]
    out = None
    if "--out" in argv:
        i = argv.index("--out")
        out = argv[i + 1]
        del argv[i:i + 2]
    sim = argv[0]
    transports = argv[1].split(",") if len(argv) > 1 else ["gbn"]
    out = out or tempfile.mkdtemp(prefix="droce-eval-")
    os.makedirs(out, exist_ok=True)
    rows = []
    for name, args, keys in FIGURES:
        res = {t: run(sim, out, name, t, args) for t in transports}
        for k in keys:
            rows.append((name, k, [res[t].get(k, float("nan")) for t in transports]))
            if not md:
                print(f"{name:14} {k:12} " + " ".join(f"{v:>10.4g}" for v in rows[-1][2]),
                      flush=True)
    if md:
        print("| figure | metric | " + " | ".join(transports) + " |")
        print("|---|---|" + "---|" * len(transports))
        for name, k, vals in rows:
            print(f"| {name} | {k} | " + " | ".join(f"{v:.4g}" for v in vals) + " |")


if __name__ == "__main__":
    main()
