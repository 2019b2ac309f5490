#!/usr/bin/env bash
# A measurement, not a test (issue 9 item 6; docs/benchmarks.md quotes it):
# perftest over droce's libibverbs beside droce-perf, same size, same
# iterations, same memif pair, alternated ROUNDS times so both see the same
# machine load. Prints each run and the median of each, and the ratios.
# With BEFORE_LIB (the directory of another build's libibverbs.so.1), each
# round also runs the two perftest tools over that library: a before/after
# of a change to the verbs layer, side by side.
#   tests/verbs/compare.sh BUILD_DIR [ROUNDS] [ITERS_BW] [ITERS_LAT] [BEFORE_LIB]
set -u
build=${1:?build dir}; rounds=${2:-3}; nbw=${3:-2000}; nlat=${4:-2000}; before=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
run="$here/../../scripts/droce-run --lib $build/stack/verbs/lib"
runb="$here/../../scripts/droce-run --lib $before"
perf=$build/apps/droce-perf/droce-perf
work=$(mktemp -d /tmp/droce-cmp-XXXXXX)
trap 'rm -rf "$work"' EXIT
tcp=$((20000 + $$ % 20000))

wait_sock() {
  for _ in $(seq 200); do grep -q "@$1\$" /proc/net/unix && break; sleep 0.05; done; sleep 0.3
}
# pair SERVER_CMD... :: CLIENT_CMD... : client output on stdout. A pair
# whose client printed no result is run again (at most 3 times, new socket
# and TCP port: the commands name them through $sock and $tcp), and says so
# on stderr with the client's first complaint.
pair() {
  local s=() c=() seen=0 try
  for try in 1 2 3; do
    s=(); c=(); seen=0
    for a in "$@"; do
      a=${a//@SOCK@/$sock}; a=${a//@TCP@/$tcp}
      if [ "$a" = "::" ]; then seen=1; continue; fi
      if [ $seen = 0 ]; then s+=("$a"); else c+=("$a"); fi
    done
    timeout 120 "${s[@]}" >"$work/s.out" 2>&1 &
    local sp=$!
    wait_sock "$sock"
    timeout 120 "${c[@]}" >"$work/c.out" 2>&1
    wait $sp
    tcp=$((tcp + 1)); sock=$sock.$try
    if grep -q -E '^ *(8|65536) +[0-9]+ +[0-9.]+' "$work/c.out"; then
      cat "$work/c.out"
      return
    fi
    echo "$(echo "${c[*]}" | grep -o -m1 -E '(ib_)?write_(bw|lat)' | head -1): no result (try $try):" \
      "$(grep -h -i -m1 -E 'fail|error|couldn' "$work/c.out" "$work/s.out" | head -1)" >&2
  done
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
for r in $(seq "$rounds"); do
  sock=$work/m$r-a.sock
  pair $perf -- write_bw --memif server,socket=@SOCK@ -s 65536 -n $nbw -p @TCP@ :: \
       $perf -- write_bw --memif client,socket=@SOCK@ -s 65536 -n $nbw -p @TCP@ 127.0.0.1 |
    awk '$1==65536 {print $4}' | tee -a "$work/perf_bw"
  sock=$work/m$r-b.sock
  pair $run --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_bw -d droce0 -x 0 -s 65536 -n $nbw -p @TCP@ :: \
       $run --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_bw -d droce0 -x 0 -s 65536 -n $nbw -p @TCP@ 127.0.0.1 |
    awk '$1==65536 {print $4}' | tee -a "$work/ib_bw"
  sock=$work/m$r-c.sock
  pair $perf -- write_lat --memif server,socket=@SOCK@ -s 8 -n $nlat -p @TCP@ :: \
       $perf -- write_lat --memif client,socket=@SOCK@ -s 8 -n $nlat -p @TCP@ 127.0.0.1 |
    awk '$1==8 {print $5, $6}' | tee -a "$work/perf_lat"
  sock=$work/m$r-d.sock
  pair $run --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_lat -d droce0 -x 0 -s 8 -n $nlat -p @TCP@ :: \
       $run --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_lat -d droce0 -x 0 -s 8 -n $nlat -p @TCP@ 127.0.0.1 |
    awk '$1==8 {print $5, $6}' | tee -a "$work/ib_lat"
  [ -n "$before" ] || continue
  sock=$work/m$r-e.sock
  pair $runb --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_bw -d droce0 -x 0 -s 65536 -n $nbw -p @TCP@ :: \
       $runb --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_bw -d droce0 -x 0 -s 65536 -n $nbw -p @TCP@ 127.0.0.1 |
    awk '$1==65536 {print $4}' | sed 's/^/before /' | tee -a "$work/ib_bw_before"
  sock=$work/m$r-f.sock
  pair $runb --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_lat -d droce0 -x 0 -s 8 -n $nlat -p @TCP@ :: \
       $runb --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_lat -d droce0 -x 0 -s 8 -n $nlat -p @TCP@ 127.0.0.1 |
    awk '$1==8 {print $5, $6}' | sed 's/^/before /' | tee -a "$work/ib_lat_before"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
pb=$(median <"$work/perf_bw"); ib=$(median <"$work/ib_bw")
pt=$(awk '{print $1}' "$work/perf_lat" | median); it=$(awk '{print $1}' "$work/ib_lat" | median)
pa=$(awk '{print $2}' "$work/perf_lat" | median); ia=$(awk '{print $2}' "$work/ib_lat" | median)
echo "write_bw 64 KB, BW average MB/s (median of $rounds): droce-perf $pb, ib_write_bw $ib, ratio $(awk "BEGIN {printf \"%.2f\", $ib / $pb}")"
echo "write_lat 8 B, t_typical us (median of $rounds): droce-perf $pt, ib_write_lat $it, ratio $(awk "BEGIN {printf \"%.2f\", $it / $pt}")"
echo "write_lat 8 B, t_avg us (median of $rounds): droce-perf $pa, ib_write_lat $ia, ratio $(awk "BEGIN {printf \"%.2f\", $ia / $pa}")"
if [ -n "$before" ]; then
  bb=$(awk '{print $2}' "$work/ib_bw_before" | median)
  bt=$(awk '{print $2}' "$work/ib_lat_before" | median); ba=$(awk '{print $3}' "$work/ib_lat_before" | median)
  echo "before ($before): ib_write_bw $bb MB/s (ratio $(awk "BEGIN {printf \"%.2f\", $bb / $pb}")), ib_write_lat t_typical $bt us (ratio $(awk "BEGIN {printf \"%.2f\", $bt / $pt}")), t_avg $ba us"
fi
