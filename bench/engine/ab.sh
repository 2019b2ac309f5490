#!/usr/bin/env bash
# Side-by-side A/B of two engine-benchmark builds on a shared machine:
# alternate them ROUNDS times in one run and print, per message size, the
# median and the best msg/s of each (the best is the least disturbed by
# other load; both are printed so neither is cherry-picked).
#   bench/engine/ab.sh BEFORE_BIN AFTER_BIN ROUNDS [droce-bench-engine options]
# e.g. bench/engine/ab.sh /tmp/before build/bench/engine/droce-bench-engine 7 -t 0.5 -s 64
# Either "binary" may be "ENV=VALUE:path" to run it with one variable set
# (DROCE_CRC=isal:build/bench/engine/droce-bench-engine).
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n 2,10p "$0" >&2
  exit 2
fi
a=$1 b=$2 rounds=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { # label spec args...
  local label=$1 spec=$2
  shift 2
  if [[ $spec == *=*:* ]]; then
    env "${spec%%:*}" "${spec#*:}" "$@"
  else
    "$spec" "$@"
  fi | awk -v l="$label" '/ B /{print l, $1, $3}' >>"$out"
}
echo "# load average at start: $(cat /proc/loadavg)"
for ((i = 0; i < rounds; i++)); do
  run before "$a" "$@"
  run after "$b" "$@"
done
echo "# load average at end: $(cat /proc/loadavg)"
python3 "$(dirname "$0")/../ab_stats.py" "$out" before after size
