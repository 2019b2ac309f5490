#!/usr/bin/env bash
# Instructions per message of the write_bw SENDER over memif, which the
# machine's load does not change: the client runs under valgrind's callgrind
# (the server natively), counting only the transmit path: droce_tp_xmit
# (headers, ICRC, the port's tx with memif's TX burst and the free of the
# mbufs it sent) and the port's tx_flush. Polling, ACK processing and
# start-up are left out: waiting on a peer that another job delays would
# add spinning, not work. Two runs, (instructions of the N1 run - those of
# the N0 run) / (N1 - N0). Under valgrind the CPU shows no AVX-512 and no
# VPCLMULQDQ, so the ICRC is ISA-L's SSE path and droce_crc32_copy is
# memcpy + that CRC: the figure counts the TX path's work (mbufs, segments,
# memif's copy loop), not the vector CRC's speed.
#   bench/memif_instr.sh [--loop] [-q QPS] [-t DEPTH] SIDE [SIZE [N0 N1]]
# SIDE: "[VAR=VALUE,...:]BINARY[@VDEVARGS]" (bench/memif_side.sh).
# --loop counts the client's whole run loop instead (perf_run_bw: posting,
# the context's poll with RX, ACKs and TX, completions), per message: what
# a message costs the sender with QPS queue pairs (N0, N1 are per QP). The
# slow valgrind client keeps every QP's queue full, so it seldom polls
# empty and the figure is work, not waiting.
# e.g. bench/memif_instr.sh build/apps/droce-perf/droce-perf 65536 200 1000
# --cache adds callgrind's cache simulation and prints the last-level
# misses (data reads + writes) per message beside the instructions: what a
# bigger footprint (more QPs, more buffers) costs, which instructions miss.
#      bench/memif_instr.sh --loop -q 1024 build/apps/droce-perf/droce-perf 4096 4 12
set -euo pipefail
loop="" qps=1 depth="" cache=""
while [ $# -gt 0 ]; do
  case $1 in
    --cache) cache=1; shift ;;
    --loop) loop=1; shift ;;
    -q) qps=$2; shift 2 ;;
    -t) depth=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then
  sed -n 2,24p "$0" >&2
  exit 2
fi
toggles=(--toggle-collect=droce_tp_xmit --toggle-collect=port_tx_flush)
what="transmit path"
if [ -n "$loop" ]; then toggles=(--toggle-collect=perf_run_bw); what="whole client loop"; fi
if [ -n "$cache" ]; then toggles+=(--cache-sim=yes); fi
spec=$1 size=${2:-65536} n0=${3:-200} n1=${4:-1000}
here=$(dirname "$0")
. "$here/memif_side.sh"
side_parse "$spec"
tmp=$(mktemp -d)
trap 'side_server_wait; rm -rf "$tmp"' EXIT
port=$((30000 + $$ % 20000))

run() { # N: prints "instructions retransmitted-packets"
  local n=$1
  port=$((port + 1))
  local sock=$tmp/m$port.sock
  # -u 20: a 4 s ACK timeout, so the slow (valgrind) sender retransmits nothing
  local -a t=(write_bw -s "$size" -n "$n" -q "$qps" ${depth:+-t "$depth"} -u 20 --timeout 60 -p "$port")
  side_server "$sock" "$tmp/srv.out" "${t[@]}"
  side_args client "$sock" "${t[@]}"
  timeout 600 env "${side_env[@]}" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$n" \
    "${toggles[@]}" \
    "$side_bin" -l 1 "${side_args[@]}" 127.0.0.1 >"$tmp/cli.out" 2>&1 || {
    echo "client failed (n=$n):" >&2
    tail -20 "$tmp/cli.out" >&2
    exit 1
  }
  side_server_wait
  local ins rtx ll
  # Collected : Ir [Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw] (with --cache-sim)
  read -r -a ev < <(sed -n 's/.*Collected : //p' "$tmp/cli.out" | head -1)
  ins=${ev[0]} ll=$(( ${ev[7]:-0} + ${ev[8]:-0} ))
  rtx=$(sed -n 's/.*Counters: retransmits \([0-9]*\).*/\1/p' "$tmp/cli.out" | head -1)
  # the loop's own instructions (perf_run_bw and what is inlined into it,
  # without the calls it makes): the benchmark's cost per message, which
  # spinning on an empty link barely changes
  local own
  own=$(callgrind_annotate --inclusive=no "$tmp/cg.$n" 2>/dev/null |
    sed -n 's/^ *\([0-9,]*\) .*perf_run_bw.*/\1/p' | head -1 | tr -d ,)
  echo "$ins ${rtx:-?} $ll ${own:-0}"
}
read -r i0 r0 l0 o0 < <(run "$n0")
read -r i1 r1 l1 o1 < <(run "$n1")
python3 - "$size" "$n0" "$n1" "$i0" "$i1" "$r0" "$r1" "$spec" "$qps" "$what" "$l0" "$l1" "$cache" "$o0" "$o1" <<'PY'
import sys
size, n0, n1, i0, i1 = map(int, sys.argv[1:6])
r0, r1, spec, qps, what = sys.argv[6:11]
l0, l1, cache = int(sys.argv[11]), int(sys.argv[12]), sys.argv[13]
o0, o1 = int(sys.argv[14]), int(sys.argv[15])
m = (n1 - n0) * int(qps)
if what == "whole client loop":
    what += " (perf_run_bw's own %.0f)" % ((o1 - o0) / m)
print("%s: %d B write_bw sender, %s QP(s), %s: %.0f instructions/message (%.3f per byte)%s over %d messages; "
      "retransmitted packets %s / %s" % (spec, size, qps, what, (i1 - i0) / m,
                                          (i1 - i0) / m / size,
                                          ", %.1f last-level data misses/message" % ((l1 - l0) / m)
                                          if cache else "", m, r0, r1))
PY
