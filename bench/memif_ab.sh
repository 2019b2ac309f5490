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
# rows "A all 12.3": the median/best arithmetic is bench/ab_stats.py's
python3 "$(dirname "$0")/ab_stats.py" <(awk '{print $1, "all", $2}' "$out") A B Gbit/s
