#!/usr/bin/env bash
# Regenerate the figures of docs/cc.md: figures.sh BUILD_DIR [OUT_DIR]
# (OUT_DIR defaults to docs/img). Each figure is one droce-sim command;
# the JSON summaries land next to the plots.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
sim=${1:-$here/build}/apps/droce-sim/droce-sim
out=${2:-$here/docs/img}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

fig() { # NAME droce-sim-args...
  local name=$1; shift
  "$sim" --quiet --json "$tmp/$name.json" --csv "$tmp/$name" --plot "$tmp/$name.png" "$@"
  cp "$tmp/$name.png/flows.png" "$out/$name-rates.png"
  cp "$tmp/$name.png/queues.png" "$out/$name-queue.png"
  echo "$name: droce-sim $*"
}

incast=(--workload incast:16:64000000 --rate 100 --buffer 1048576 --ecn 5120,204800,0.01 --sample 100000)
fig incast-dcqcn "${incast[@]}" --cc dcqcn --pfc 32768,16384
fig incast-fixed "${incast[@]}" --cc fixed --duration 100000000
fig incast-swift "${incast[@]}" --cc swift
fig convergence --workload incast:3:2000000000:30000000 --duration 150000000 --cc dcqcn \
  --pfc 262144,131072 --sample 200000
