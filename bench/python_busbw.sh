#!/usr/bin/env bash
# PyTorch figures, droce beside Gloo in one run (docs/python.md, "Figures"):
# all_reduce bus bandwidth 4 KB..64 MB at 2 ranks and at 4 (droce over the
# memif mesh, Gloo over TCP loopback, interleaved per iteration in the same
# process group, medians), then the DDP step time (both replicas stepped in
# turns). The ranks are not pinned: on a 2-core machine 4 ranks and their
# threads share the cores. The load average is printed with every table.
#
#   bench/python_busbw.sh [--build DIR] [--iters N] [--ranks "2 4"] [--ddp-steps N]
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$here/build iters=20 ranks="2 4" steps=50
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --ddp-steps) steps=$2; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
py=("$here/scripts/droce-python" --build "$build")
export DROCE_TEST_TIMEOUT=${DROCE_TEST_TIMEOUT:-900}
# rank 0's lines, without EAL's and the port's start-up notes
show() { sed -n -E 's/^\[0\] //p' | grep -v -E '^(EAL|TELEMETRY|rte_pmd|Frame size|droce: port|exit 0)'; }
for n in $ranks; do
  "${py[@]}" "$here/tests/python/launch.py" "$n" "$here/python/bench/allreduce_busbw.py" \
    --iters "$iters" | show
done
DDP_STEPS=$steps "${py[@]}" "$here/tests/python/launch.py" 2 "$here/python/bench/ddp_step.py" | show
