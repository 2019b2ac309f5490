#!/usr/bin/env bash
# Instructions per burst of memif's TX and RX bursts with the burst guard
# (stack/net/port/port_guard.c) and without, which the machine's load does
# not change: droce-bench-memif-guard under valgrind's callgrind, each
# function's inclusive instructions / its ROUNDS calls (the burst's own
# function: the guard, or none, around rte_eth_tx_burst / rte_eth_rx_burst
# and memif's copy of 32 x 64 B frames). Two runs, (ROUNDS1 run - ROUNDS0
# run) / (ROUNDS1 - ROUNDS0): start-up and the first bursts left out.
#   bench/memif/guard_instr.sh [BINARY [ROUNDS0 ROUNDS1]]
# e.g. bench/memif/guard_instr.sh build/bench/memif/droce-bench-memif-guard 1000 11000
set -euo pipefail
bin=${1:-build/bench/memif/droce-bench-memif-guard} r0=${2:-1000} r1=${3:-11000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# inclusive instructions of every call to FUNCTION (any clone of it, as
# foo.constprop.0), from the call records of its callers: "cfn=", "calls=",
# then the calls' cost line
calls_cost() { # CALLGRIND_OUT FUNCTION...
  python3 - "$@" <<'PY'
import re, sys
names, cost, callee, take = {}, {}, None, False
want = sys.argv[2:]
for line in open(sys.argv[1]):
    m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3).strip().split(".")[0]
        if m.group(1) == "cfn":
            callee = names.get(m.group(2))
        continue
    if line.startswith("calls="):
        take = callee in want
        continue
    if take:
        cost[callee] = cost.get(callee, 0) + int(line.split()[1])
        take = False
print(" ".join(str(cost.get(f, 0)) for f in want))
PY
}
run() { # ROUNDS -> "tx_plain rx_plain tx_guarded rx_guarded" inclusive instructions
  timeout 600 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" "$bin" "$1" \
    >"$tmp/out.$1" 2>&1 || { tail -20 "$tmp/out.$1" >&2; exit 1; }
  calls_cost "$tmp/cg.$1" tx_plain rx_plain tx_guarded rx_guarded
}
read -r a0 b0 c0 d0 < <(run "$r0")
read -r a1 b1 c1 d1 < <(run "$r1")
python3 - "$r0" "$r1" "$a0" "$b0" "$c0" "$d0" "$a1" "$b1" "$c1" "$d1" <<'PY'
import sys
r0, r1 = int(sys.argv[1]), int(sys.argv[2])
v0 = list(map(int, sys.argv[3:7]))
v1 = list(map(int, sys.argv[7:11]))
per = [(b - a) / (r1 - r0) for a, b in zip(v0, v1)]
for k, what in ((0, "TX"), (1, "RX")):
    print("%s burst of 32 x 64 B on memif: %.1f instructions plain, %.1f guarded: the guard adds "
          "%.1f per burst (%.2f per frame), over %d bursts" %
          (what, per[k], per[k + 2], per[k + 2] - per[k], (per[k + 2] - per[k]) / 32, r1 - r0))
PY
