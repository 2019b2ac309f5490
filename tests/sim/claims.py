#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Suite sim: what droce-sim must show, one claim per test.

    claims.py DROCE_SIM CLAIM [OUTDIR]

Each claim runs droce-sim (real droce contexts on a simulated fabric) and
asserts on its JSON. Sizes are chosen so that every claim is in steady state
for most of its run yet finishes in seconds; the figures and plots of
docs/cc.md come from the same commands (tests/sim/figures.sh).
"""
import json
import os
import subprocess
import sys
import tempfile

SIM = sys.argv[1]
OUT = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="droce-sim-")
KMAX = 200 * 1024
INCAST = ["--workload", "incast:16:64000000", "--rate", "100", "--buffer", "1048576",
          "--ecn", "5120,204800,0.01"]


def run(args, name):
    path = os.path.join(OUT, name + ".json")
    cmd = [SIM, "--quiet", "--json", path] + args
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, timeout=300)
    with open(path) as f:
        d = json.load(f)
    keys = ["sim_ns", "wall_s", "frames", "goodput_gbps", "jain", "link_util", "queue_bytes",
            "drops", "retransmits", "timeouts", "cnps", "ecn_marked", "pause_frames",
            "mean_srtt_us", "algbw_gbps", "busbw_gbps"]
    print("  " + ", ".join(f"{k}={d[k]}" for k in keys if k in d), flush=True)
    return d


def check(cond, what):
    print(("  ok: " if cond else "  FAILED: ") + what, flush=True)
    if not cond:
        sys.exit(1)


def incast():
    """16:1 incast: dcqcn (PFC as deployed, rarely used) keeps the queue near
    KMAX with no loss, fair and at line rate; fixed windows without PFC drop
    and retransmit, and lose most of the goodput; fixed with PFC is lossless
    only by pausing, with the queue at XOFF instead of KMAX."""
    dc = run(INCAST + ["--cc", "dcqcn", "--pfc", "32768,16384"], "incast-dcqcn")
    fx = run(INCAST + ["--cc", "fixed"], "incast-fixed")
    fp = run(INCAST + ["--cc", "fixed", "--pfc", "32768,16384"], "incast-fixed-pfc")
    check(dc["flows_done"] == 16 and dc["drops"] == 0, "dcqcn: every flow done, no drops")
    check(dc["jain"] >= 0.95, f"dcqcn: Jain {dc['jain']} >= 0.95")
    check(dc["link_util"] >= 0.9, f"dcqcn: bottleneck utilisation {dc['link_util']} >= 0.9")
    check(dc["queue_bytes"]["p99"] <= 1.5 * KMAX,
          f"dcqcn: queue p99 {dc['queue_bytes']['p99']} <= 1.5 KMAX")
    check(dc["cnps"] > 0, "dcqcn: the notification points sent CNPs")
    check(fx["drops"] > 0 and fx["retransmits"] > 0, "fixed, no PFC: drops and retransmissions")
    check(fx["goodput_gbps"] < 0.5 * dc["goodput_gbps"],
          f"fixed, no PFC: goodput {fx['goodput_gbps']} < half of dcqcn's {dc['goodput_gbps']}")
    check(fp["drops"] == 0 and fp["pause_frames"] > 10 * max(dc["pause_frames"], 1),
          f"fixed + PFC: lossless by pausing ({fp['pause_frames']} pauses vs dcqcn's {dc['pause_frames']})")
    check(fp["queue_bytes"]["p99"] > 2 * dc["queue_bytes"]["p99"],
          "fixed + PFC: the queue sits far above dcqcn's")


def compose():
    """No PFC: dcqcn with the adaptive timeout loses only its start burst and
    then runs as it does with PFC; window tuning on top loses less still."""
    a = run(INCAST + ["--cc", "dcqcn", "--timeout-mode", "adaptive"], "incast-dcqcn-adaptive")
    b = run(INCAST + ["--cc", "dcqcn", "--timeout-mode", "adaptive", "--window-tune"],
            "incast-dcqcn-adaptive-tuned")
    for d, what in ((a, "dcqcn+adaptive"), (b, "dcqcn+adaptive+tuning")):
        check(d["flows_done"] == 16 and d["pause_frames"] == 0, f"{what}: all done, no PFC")
        check(d["jain"] >= 0.95 and d["link_util"] >= 0.9,
              f"{what}: Jain {d['jain']}, utilisation {d['link_util']}")
        check(d["queue_bytes"]["p99"] <= 1.5 * KMAX, f"{what}: queue p99 {d['queue_bytes']['p99']}")
    check(b["drops"] < a["drops"], f"tuning loses less of the start burst ({b['drops']} < {a['drops']})")


def swift():
    """The delay-based algorithm, no PFC: no loss, fair, line rate, and the
    RTT held near its target delay (15 us base + up to 10 us flow scaling)."""
    sw = run(INCAST + ["--cc", "swift"], "incast-swift")
    check(sw["flows_done"] == 16 and sw["drops"] == 0, "swift: every flow done, no drops")
    check(sw["jain"] >= 0.95, f"swift: Jain {sw['jain']} >= 0.95")
    check(sw["link_util"] >= 0.9, f"swift: utilisation {sw['link_util']} >= 0.9")
    check(15.0 <= sw["mean_srtt_us"] <= 2 * 25.0,
          f"swift: mean RTT {sw['mean_srtt_us']} us near the 15..25 us target")
    check(sw["queue_bytes"]["p99"] <= 12.5 * 2 * 25000,
          f"swift: queue p99 {sw['queue_bytes']['p99']} within 2 x target delay at line rate")


def timeout():
    """A lost tail packet: adaptive recovers within 10 RTTs, ibta after its
    67 ms; at 1% random loss adaptive delivers at least twice the goodput."""
    base = run(["--workload", "incast:1:1000000", "--timeout-mode", "adaptive"], "tail-none")
    ad = run(["--workload", "incast:1:1000000", "--drop-tail", "--timeout-mode", "adaptive"], "tail-adaptive")
    ib = run(["--workload", "incast:1:1000000", "--drop-tail", "--timeout-mode", "ibta"], "tail-ibta")
    rtt = ad["flows"][0]["srtt_us"]
    extra = ad["flows"][0]["fct_us"] - base["flows"][0]["fct_us"]
    check(ad["random_drops"] == 1 and ad["timeouts"] == 1, "adaptive: the tail was lost, one timeout")
    check(0 < extra <= 10 * rtt, f"adaptive: recovered {extra:.1f} us later, <= 10 RTTs ({10 * rtt:.1f} us)")
    check(ib["flows"][0]["fct_us"] >= 67108, f"ibta: recovered after the 67 ms timeout ({ib['flows'][0]['fct_us']} us)")
    lossy = ["--workload", "permutation:50000000", "--hosts", "8", "--loss", "0.01",
             "--duration", "10000000"]
    la = run(lossy + ["--timeout-mode", "adaptive"], "loss-adaptive")
    li = run(lossy + ["--timeout-mode", "ibta"], "loss-ibta")
    check(la["goodput_gbps"] >= 2 * li["goodput_gbps"],
          f"1% loss: adaptive goodput {la['goodput_gbps']} >= 2 x ibta's {li['goodput_gbps']}")


def window():
    """Window tuning: the window follows 2 x delivery rate x min RTT instead of
    the 2 MiB ceiling, at no cost to a lone flow, and an incast with fixed cc
    drops less for it."""
    one = ["--workload", "incast:1:32000000", "--cc", "fixed"]
    a = run(one, "window-fixed")
    b = run(one + ["--window-tune"], "window-tuned")
    w, rtt = b["flows"][0]["window_bytes"], b["flows"][0]["srtt_us"]
    bdp = 12.5 * rtt * 1000
    check(a["flows"][0]["window_bytes"] == 2097152, "untuned: the 2 MiB ceiling")
    check(0.5 * bdp <= w <= 3 * bdp, f"tuned: window {w} ~ 2 x BDP ({bdp:.0f} bytes at {rtt} us)")
    check(b["goodput_gbps"] >= 0.95 * a["goodput_gbps"], "tuned: a lone flow keeps its goodput")
    eight = ["--workload", "incast:8:8000000", "--cc", "fixed", "--timeout-mode", "adaptive"]
    c, d = run(eight, "window-incast"), run(eight + ["--window-tune"], "window-incast-tuned")
    check(d["drops"] < c["drops"], f"8:1 incast: tuned windows drop less ({d['drops']} < {c['drops']})")


def allreduce():
    """Ring allreduce over 8 hosts (nccl-tests' algbw/busbw): close to the
    link rate on one switch; on a 2-spine leaf-spine, ECMP spreads the two
    cross-leaf flows over both spines."""
    st = run(["--workload", "allreduce:64000000", "--hosts", "8", "--cc", "dcqcn"], "allreduce-star")
    ls = run(["--workload", "allreduce:64000000", "--leaf-spine", "2,2,4", "--cc", "dcqcn"], "allreduce-ls")
    check(st["busbw_gbps"] >= 90, f"star: busbw {st['busbw_gbps']} >= 90 of 100 Gbit/s")
    check(abs(st["algbw_gbps"] * 2 * 7 / 8 - st["busbw_gbps"]) < 0.01, "busbw = algbw * 2(n-1)/n")
    check(ls["busbw_gbps"] >= 70, f"leaf-spine: busbw {ls['busbw_gbps']} >= 70 of 100 Gbit/s")
    up = {l["name"]: l["bytes"] for l in ls["links"] if ">spine" in l["name"]}
    data = sorted(v for v in up.values() if v > 10_000_000)
    check(len(data) == 2, f"leaf-spine: data crosses on two uplinks {up}")
    a2a = run(["--workload", "alltoall:2000000", "--leaf-spine", "2,2,4", "--cc", "dcqcn",
               "--pfc", "32768,16384"], "alltoall-ls")
    sp = [l["bytes"] for l in a2a["links"] if l["name"].startswith("spine")]
    check(min(sp) > 0.5 * max(sp), f"alltoall: ECMP uses every spine link {sp}")
    check(a2a["flows_done"] == 56, "alltoall: 56 flows done")


def convergence():
    """DCQCN paper, fairness figure in shape: one flow; a second joins at
    30 ms, a third at 60 ms; each time the rates converge to the fair share
    (PFC only as a backstop: XOFF per ingress above KMAX, so ECN acts first)."""
    csv_dir = os.path.join(OUT, "conv-csv")
    d = run(["--workload", "incast:3:2000000000:30000000", "--duration", "150000000",
             "--cc", "dcqcn", "--pfc", "262144,131072", "--csv", csv_dir, "--sample", "200000"],
            "convergence")
    with open(os.path.join(csv_dir, "flows.csv")) as f:
        rows = [list(map(float, line.split(","))) for line in f.read().splitlines()[1:]]
    def mean(col, t0, t1):
        v = [r[col] for r in rows if t0 <= r[0] < t1]
        return sum(v) / len(v)
    # columns: t_us, h1>h0, h2>h0, h3>h0; flow k starts at (k-1) * 30 ms
    one = mean(1, 20000, 30000)
    two = [mean(c, 50000, 60000) for c in (1, 2)]
    joined = [mean(c, 62000, 64000) for c in (1, 2, 3)]
    three = [mean(c, 140000, 150000) for c in (1, 2, 3)]
    print(f"  rates: alone {one:.1f}; two {two}; just after the third joins {joined}; three {three}")
    check(one >= 85, "one flow alone near line rate")
    check(min(two) >= 0.85 * max(two) and sum(two) >= 85, "two flows converge to a fair share")
    check(max(joined) > 1.5 * min(joined), "the third flow joins far from the fair share")
    check(min(three) >= 0.8 * max(three) and sum(three) >= 85, "three flows converge to a fair share")
    check(d["drops"] == 0 and d["cnps"] > 0, "no drops; CNPs, not pauses, did it")
    check(d["pause_frames"] < d["cnps"], f"pauses {d['pause_frames']} < CNPs {d['cnps']}")


def determinism():
    """One seed, one output: two runs give the same JSON but for wall_s."""
    args = ["--workload", "mix:2000000:16384:200000", "--hosts", "8", "--loss", "0.001",
            "--duration", "2000000", "--seed", "7"]
    a, b = run(args, "det-a"), run(args, "det-b")
    a.pop("wall_s")
    b.pop("wall_s")
    check(a == b, "identical JSON apart from wall_s")
    c = run(args[:-1] + ["8"], "det-c")
    c.pop("wall_s")
    check(c != a, "another seed gives another run")
    check(a["short_fct_us"]["n"] > 100, f"mix: {a['short_fct_us']['n']} short messages finished")


def plots():
    """--csv and --plot write readable files."""
    csv_dir, png_dir = os.path.join(OUT, "plot-csv"), os.path.join(OUT, "plot-png")
    run(["--workload", "incast:4:4000000", "--csv", csv_dir, "--plot", png_dir], "plots")
    for name in ("flows.png", "queues.png"):
        p = os.path.join(png_dir, name)
        check(os.path.getsize(p) > 10000 and open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n", p + " is a PNG")
    with open(os.path.join(csv_dir, "flows.csv")) as f:
        head = f.readline().strip().split(",")
    check(head == ["t_us", "h1>h0", "h2>h0", "h3>h0", "h4>h0"], f"flows.csv columns {head}")


CLAIMS = {f.__name__: f for f in (incast, compose, swift, timeout, window, allreduce, convergence, determinism, plots)}

if __name__ == "__main__":
    CLAIMS[sys.argv[2]]()
