#!/usr/bin/env bash
# Side-by-side A/B of two droce-perf builds (or two settings) over memif:
# alternate them ROUNDS times in one run, each pair pinned as bench/compare.py
# pins it (server on CPU 0, client on CPU 1), and print each side's Gbit/s
# per round, then the median and the best (both, so neither is cherry-picked).
#   bench/memif_ab.sh A B ROUNDS [droce-perf test options]
# e.g. bench/memif_ab.sh /tmp/base/build/apps/droce-perf/droce-perf \
#        build/apps/droce-perf/droce-perf 5 write_bw -s 65536 -n 30000
# A side is "[VAR=VALUE,...:]BINARY[@VDEVARGS]" (bench/memif_side.sh), e.g.
# "build/apps/droce-perf/droce-perf@bsize=8192,rsize=8".
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n 2,10p "$0" >&2
  exit 2
fi
a=$1 b=$2 rounds=$3
shift 3
here=$(dirname "$0")
. "$here/memif_side.sh"
tmp=$(mktemp -d)
trap 'side_server_wait; rm -rf "$tmp"' EXIT
port=$((20000 + $$ % 20000))
out=$tmp/results

run() { # label spec test-args...
  local label=$1
  side_parse "$2"
  shift 2
  port=$((port + 1))
  local sock=$tmp/m$port.sock js=$tmp/c$port.json
  side_server "$sock" "$tmp/srv.out" "$@" -p "$port"
  side_args client "$sock" "$@" -p "$port"
  if timeout 120 env "${side_env[@]}" "$side_bin" -l 1 "${side_args[@]}" --json "$js" 127.0.0.1 \
      >"$tmp/cli.out" 2>&1 && [ -s "$js" ]; then
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=j["results"][0]; print(sys.argv[2], "%.3f" % r["bw_avg_gbps"])' \
      "$js" "$label" >>"$out"
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=j["results"][0]; t=j["counters"]["retransmits"]; print(sys.argv[2], "%.3f Gbit/s" % r["bw_avg_gbps"], "retransmits timeout %d nak %d" % (t["timeout"], t["nak"]))' \
      "$js" "$label"
  else
    echo "$label FAILED" | tee -a "$out"
    tail -5 "$tmp/cli.out" >&2
  fi
  side_server_wait
}
echo "# A = $a"
echo "# B = $b"
echo "# droce-perf $*"
echo "# load average at start: $(cat /proc/loadavg)"
for ((i = 0; i < rounds; i++)); do
  run A "$a" "$@"
  run B "$b" "$@"
done
echo "# load average at end: $(cat /proc/loadavg)"
python3 - "$out" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    who, v = line.split()
    if v != "FAILED":
        rows.setdefault(who, []).append(float(v))
for who in ("A", "B"):
    v = rows.get(who, [])
    if v:
        print("%s Gbit/s: median %.2f best %.2f (%s)" % (who, statistics.median(v), max(v),
              " ".join("%.2f" % x for x in v)))
if rows.get("A") and rows.get("B"):
    print("B/A: median %.2fx best %.2fx" % (statistics.median(rows["B"]) / statistics.median(rows["A"]),
          max(rows["B"]) / max(rows["A"])))
PY
