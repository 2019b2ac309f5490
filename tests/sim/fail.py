#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Suite sim: link failures in droce-sim (--fail, --rehash), one case per test.

    fail.py DROCE_SIM CASE

A leaf-spine fabric (2 leaves x 4 hosts, 2 spines), a permutation of 8 MB
flows, go-back-N with the adaptive ACK timeout; leaf0's uplink to spine0
fails at 200 us. Every case compares with the same run without a failure,
in the same test (nothing here depends on wall time).
"""
import json
import subprocess
import sys

SIM = sys.argv[1]
CASE = sys.argv[2]
BASE = ["--leaf-spine", "2,2,4", "--cc", "dcqcn", "--timeout-mode", "adaptive",
        "--workload", "permutation:8388608", "--seed", "5"]
DOWN = 200000
failed = False


def run(extra, check=True):
    cmd = [SIM, "--quiet", "--json", "-"] + BASE + extra
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if not check:
        return p
    if p.returncode:
        print(p.stderr)
        sys.exit("droce-sim exited %d" % p.returncode)
    d = json.loads(p.stdout)
    print("  " + ", ".join("%s=%s" % (k, d.get(k)) for k in
                           ["sim_ns", "flows_done", "link_drops", "timeouts", "retransmits",
                            "wc_errors", "max_stall_ns", "goodput_gbps"]), flush=True)
    d["nflows"] = len(d["flows"])
    return d


def expect(cond, what):
    global failed
    print(("  ok: " if cond else "  FAILED: ") + what, flush=True)
    failed |= not cond


ref = run([])
expect(ref["link_drops"] == 0 and ref["flows_done"] == ref["nflows"],
       "without a failure nothing is lost on a link and every flow ends")

if CASE == "outage":
    # Down for 1 ms, then up; no rehash: what was hashed onto the dead
    # uplink waits for the link, then go-back-N resends it.
    d = run(["--fail", "leaf0-spine0@%d:%d" % (DOWN, DOWN + 1000000)])
    expect(d["flows_done"] == d["nflows"] and d["wc_errors"] == 0,
           "every flow ends once the link is back, no completion error")
    expect(d["link_drops"] > 0, "frames were lost on the dead link")
    expect(d["max_stall_ns"] >= 900000,
           "a flow hashed onto it delivered nothing for about the outage (>= 0.9 ms)")
    expect(d["retransmits"] >= d["link_drops"],
           f"go-back-N resent at least the {d['link_drops']} frames the link lost "
           f"({d['retransmits']} packets)")
elif CASE == "blackhole":
    # Down for good, no rehash: ECMP keeps hashing onto it.
    d = run(["--fail", "leaf0-spine0@%d" % DOWN, "--duration", "5000000"])
    expect(d["flows_done"] < d["nflows"], "flows hashed onto the dead uplink never end")
    expect(d["link_drops"] > 0 and d["max_stall_ns"] >= 4000000,
           "their frames are lost and they stall until the end of the run")
elif CASE == "rehash":
    # Down for good; the leaves leave it out 50 us later.
    out = run(["--fail", "leaf0-spine0@%d:%d" % (DOWN, DOWN + 1000000)])
    d = run(["--fail", "leaf0-spine0@%d" % DOWN, "--rehash", "50000", "--duration", "30000000"])
    expect(d["flows_done"] == d["nflows"] and d["wc_errors"] == 0,
           "every flow ends over the surviving spine, no completion error")
    expect(0 < d["link_drops"] < out["link_drops"],
           "fewer frames lost than in a 1 ms outage without rehash")
    expect(d["max_stall_ns"] < out["max_stall_ns"],
           "the longest stall is shorter than the outage's")
    again = run(["--fail", "leaf0-spine0@%d" % DOWN, "--rehash", "50000", "--duration", "30000000"])
    d.pop("wall_s"), again.pop("wall_s")
    expect(d == again, "the same seed gives the same run")
elif CASE == "host":
    d = run(["--fail", "h1@%d:%d" % (DOWN, DOWN + 300000)])
    expect(d["flows_done"] == d["nflows"] and d["link_drops"] > 0,
           "a host link down for 300 us loses frames; every flow still ends")
elif CASE == "bad":
    for spec in ["leaf9-spine0@100", "leaf0-spine0", "h99@100", "leaf0-spine0@200:100", "bogus@1"]:
        p = run(["--fail", spec], check=False)
        expect(p.returncode != 0, "--fail %s is refused" % spec)
else:
    sys.exit("unknown case " + CASE)
sys.exit(1 if failed else 0)
