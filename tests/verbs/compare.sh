#!/usr/bin/env bash
# A measurement, not a test (docs/benchmarks.md quotes it):
# perftest over droce's libibverbs beside droce-perf, both ends over memif.
#
# Like with like:
#  - pinned: each tool's server on CPU $CMP_SERVER_CPU (default 0), its
#    client on $CMP_CLIENT_CPU (default 1), one CPU per process and every
#    thread of it there: droce-perf by `taskset` and EAL `-l N`; perftest by
#    `droce-run --cpu N` (taskset, and DROCE_LCORE=N for its progress
#    thread; the library keeps EAL inside the program's CPUs);
#  - the same memif port on both: both start EAL through droce_eal_init()
#    (stack/net/port/eal_args.c: bsize 8192, the PMD's default rings, burst 32),
#    the same message size, iteration count, send queue depth (128 on
#    both: perftest's and droce-perf's defaults) and path MTU (4096);
#  - the same figures: "BW average" is, in both, bytes over the time from
#    the client's first post to its last completion (MB = 2^20 bytes);
#    write_lat's t_typical is the median and t_avg the mean of the
#    half round trips (a post and a wait for the peer's WRITE), 2000
#    iterations or more;
#  - rounds alternate the order (odd: droce-perf first, even: perftest
#    first), so drift in the machine's load falls on both; each round's
#    ratio pairs two neighbouring runs.
# What is not the same: perftest's write_bw asks a completion for every
# 100th WRITE (its cq_mod) where droce-perf asks one for each; and it
# writes every 64 KB message from and to one 64 KB buffer (its cycle
# buffer is a page) where droce-perf cycles over 128 slots (8 MB), which
# favours perftest in the caches.
#
# With BEFORE_LIB (the directory of another build's libibverbs.so.1) each
# round also runs the two perftest tools over that library: a before/after
# of a change to the verbs layer, side by side. CMP_PIN=0: no pinning (the
# figures of earlier sessions).
#   tests/verbs/compare.sh BUILD_DIR [ROUNDS] [ITERS_BW] [ITERS_LAT] [BEFORE_LIB]
set -u
build=${1:?build dir}; rounds=${2:-3}; nbw=${3:-2000}; nlat=${4:-2000}; before=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
perf=$build/apps/droce-perf/droce-perf
scpu=${CMP_SERVER_CPU:-0}; ccpu=${CMP_CLIENT_CPU:-1}; pin=${CMP_PIN:-1}
work=$(mktemp -d /tmp/droce-cmp-XXXXXX)
trap 'rm -rf "$work"' EXIT
tcp=$((20000 + $$ % 20000))

# The command prefixes of each side (ROLE = s | c), pinned or not.
dp() { # droce-perf
  local cpu=$scpu; [ "$1" = c ] && cpu=$ccpu
  if [ "$pin" = 1 ]; then echo "taskset -c $cpu $perf -l $cpu --"; else echo "$perf --"; fi
}
ib() { # perftest over the library in directory $2
  local cpu=$scpu; [ "$1" = c ] && cpu=$ccpu
  local r="$here/../../scripts/droce-run --lib $2"
  # A library older than a08acd9 lets EAL float the program's thread:
  # there, EAL's own -l pins it (the same placement).
  local old=""; [ "$2" = "$before" ] && old="env DROCE_EAL=-l$cpu "
  if [ "$pin" = 1 ]; then echo "$old$r --cpu $cpu"; else echo "$r"; fi
}

wait_sock() {
  for _ in $(seq 200); do grep -q "@$1\$" /proc/net/unix && break; sleep 0.05; done; sleep 0.3
}
# pair SERVER_CMD... :: CLIENT_CMD... : client output on stdout. A pair
# whose client printed no result is run again (at most 3 times, new socket
# and TCP port: the commands name them through @SOCK@ and @TCP@), and says
# so on stderr with the client's first complaint.
pair() {
  local s=() c=() seen=0 try sock=$work/m$((RANDOM)).sock
  for try in 1 2 3; do
    s=(); c=(); seen=0
    for a in "$@"; do
      a=${a//@SOCK@/$sock}; a=${a//@TCP@/$tcp}; a=${a//@JSON@/$work/c.json}
      if [ "$a" = "::" ]; then seen=1; continue; fi
      if [ $seen = 0 ]; then s+=("$a"); else c+=("$a"); fi
    done
    rm -f "$work/c.json"
    timeout 120 "${s[@]}" >"$work/s.out" 2>&1 &
    local sp=$!
    wait_sock "$sock"
    timeout 120 "${c[@]}" >"$work/c.out" 2>&1
    wait $sp
    tcp=$((tcp + 1)); sock=$sock.$try
    if grep -q -E '^ *(8|65536) +[0-9]+ +[0-9.]+' "$work/c.out"; then
      cat "$work/c.out"
      timeouts
      return
    fi
    echo "$(echo "${c[*]}" | grep -o -m1 -E '(ib_)?write_(bw|lat)' | head -1): no result (try $try):" \
      "$(grep -h -i -E 'fail|error|couldn' "$work/c.out" "$work/s.out" | grep -v -m1 'mp action' | head -1)" >&2
  done
  echo "no result"
}
# The client's retransmission timeouts (67 ms each at perftest's and
# droce-perf's default -u 14: one in a run of a few hundred milliseconds
# is most of the difference between two runs): droce-perf's --json, the
# library's DROCE_VERBS_STATS line.
timeouts() {
  local t
  if [ -s "$work/c.json" ]; then
    t=$(grep -o '"timeout": [0-9]*' "$work/c.json" | head -1 | grep -o '[0-9]*$')
  else
    t=$(grep -o 'retransmits [0-9]* (timeout [0-9]*' "$work/c.out" | grep -o '[0-9]*$' | head -1)
  fi
  echo "TIMEOUTS ${t:--}"
}
export DROCE_VERBS_STATS=1
median() { sort -g | awk '{v[NR]=$1} END {if (!NR) print "-"; else printf "%.2f\n", (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b}'; }

# One measurement: TOOL (dp | ib) TEST (bw | lat) [LIBDIR]. Prints the
# figure(s) and the client's timeouts ("-" where none): bw "MB/s T",
# lat "typical average T".
m() {
  local size=65536 n=$nbw s c
  [ "$2" = lat ] && size=8 n=$nlat
  if [ "$1" = dp ]; then
    s="$(dp s) write_$2 --memif server,socket=@SOCK@"; c="$(dp c) write_$2 --memif client,socket=@SOCK@"
    c="$c --json @JSON@"
  else
    s="$(ib s "$3") --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_$2 -d droce0 -x 0"
    c="$(ib c "$3") --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_$2 -d droce0 -x 0"
  fi
  # shellcheck disable=SC2086
  pair $s -s $size -n $n -p @TCP@ :: $c -s $size -n $n -p @TCP@ 127.0.0.1 |
    awk -v size=$size '$1 == size {bw = $4; t = $5; a = $6} $1 == "TIMEOUTS" {o = $2}
      END {o = o != "" ? o : "-"
           if (size == 65536) print (bw ? bw : "-"), o; else print (t ? t " " a : "- -"), o}'
}

lib=$build/stack/verbs/lib
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)," \
  "$( [ "$pin" = 1 ] && echo "servers on CPU $scpu, clients on CPU $ccpu" || echo "not pinned")," \
  "write_bw -s 65536 -n $nbw, write_lat -s 8 -n $nlat"
hdr="round | order | droce-perf bw MB/s (timeouts) | ib_write_bw MB/s (timeouts) | bw ratio | droce-perf lat typ / avg us (timeouts) | ib_write_lat typ / avg us (timeouts) | typ ratio | avg ratio"
[ -n "$before" ] && hdr="$hdr | before: ib_write_bw | before: ib_write_lat typ / avg"
echo "$hdr"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    order="dp,ib"; pb=$(m dp bw); ibw=$(m ib bw "$lib"); pl=$(m dp lat); il=$(m ib lat "$lib")
  else
    order="ib,dp"; ibw=$(m ib bw "$lib"); pb=$(m dp bw); il=$(m ib lat "$lib"); pl=$(m dp lat)
  fi
  bb="- -"; bl="- - -"
  if [ -n "$before" ]; then bb=$(m ib bw "$before"); bl=$(m ib lat "$before"); fi
  # columns: 1 round, 2-3 dp bw/timeouts, 4-5 ib bw/t, 6-8 dp typ/avg/t,
  # 9-11 ib typ/avg/t, 12-13 before bw/t, 14-16 before typ/avg/t
  echo "$r $pb $ibw $pl $il $bb $bl" >>"$work/rows"
  echo "$r $order $pb $ibw $pl $il $bb $bl" | awk -v before="$before" '
    function q(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b) }
    { row = $1 " | " $2 " | " $3 " (" $4 ") | " $5 " (" $6 ") | " q($5, $3) " | " $7 " / " $8 " (" $9 ") | " \
        $10 " / " $11 " (" $12 ") | " q($10, $7) " | " q($11, $8)
      if (before != "") row = row " | " $13 " (" $14 ") | " $15 " / " $16 " (" $17 ")"
      print row }'
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
col() { awk -v c="$1" '$c != "-" {print $c}' "$work/rows" | median; }
# per-round ratios; CLEAN=1: only rounds where neither run had a timeout
rcol() {
  awk -v a="$1" -v b="$2" -v ta="$3" -v tb="$4" -v clean="${5:-0}" \
    '$a != "-" && $b != "-" && $b > 0 && (!clean || ($ta == 0 && $tb == 0)) {print $a / $b}' "$work/rows" | median
}
printf 'median | | %s | %s | %s | %s / %s | %s / %s | %s | %s\n' "$(col 2)" "$(col 4)" \
  "$(ratio "$(col 4)" "$(col 2)")" "$(col 6)" "$(col 7)" "$(col 9)" "$(col 10)" \
  "$(ratio "$(col 9)" "$(col 6)")" "$(ratio "$(col 10)" "$(col 7)")"
echo "median of the per-round ratios: bw $(rcol 4 2 5 3), lat typical $(rcol 9 6 11 8), lat avg $(rcol 10 7 11 8)"
echo "the same over the rounds where neither run had a timeout: bw $(rcol 4 2 5 3 1), lat typical $(rcol 9 6 11 8 1), lat avg $(rcol 10 7 11 8 1)"
if [ -n "$before" ]; then
  echo "before ($before): ib_write_bw $(col 12) MB/s (ratio $(ratio "$(col 12)" "$(col 2)")), ib_write_lat typical $(col 14) us (ratio $(ratio "$(col 14)" "$(col 6)")), avg $(col 15) us"
fi
echo "targets: bw ratio >= 0.9, lat typical ratio <= 1.1"
