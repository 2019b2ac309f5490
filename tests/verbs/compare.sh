#!/usr/bin/env bash
# A measurement, not a test (issue 9 item 6; docs/benchmarks.md quotes it):
# perftest over droce's libibverbs beside droce-perf, both ends over memif.
#
# Like with like:
#  - pinned: each tool's server on CPU $CMP_SERVER_CPU (default 0), its
#    client on $CMP_CLIENT_CPU (default 1), one CPU per process and every
#    thread of it there: droce-perf by `taskset` and EAL `-l N`; perftest by
#    `droce-run --cpu N` (taskset, and DROCE_LCORE=N for its progress
#    thread; the library keeps EAL inside the program's CPUs);
#  - the same memif port on both: both start EAL through droce_eal_init()
#    (stack/net/eal_args.c: bsize 8192, the PMD's default rings, burst 32),
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
  echo "no result"
}
median() { sort -g | awk '{v[NR]=$1} END {if (!NR) print "nan"; else print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b}'; }

# One measurement each: its figure(s) on stdout ("-" when none).
m_dp_bw() {
  # shellcheck disable=SC2046
  pair $(dp s) write_bw --memif server,socket=@SOCK@ -s 65536 -n $nbw -p @TCP@ :: \
       $(dp c) write_bw --memif client,socket=@SOCK@ -s 65536 -n $nbw -p @TCP@ 127.0.0.1 |
    awk '$1==65536 {v=$4} END {print v ? v : "-"}'
}
m_ib_bw() { # LIBDIR
  # shellcheck disable=SC2046
  pair $(ib s "$1") --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_bw -d droce0 -x 0 -s 65536 -n $nbw -p @TCP@ :: \
       $(ib c "$1") --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_bw -d droce0 -x 0 -s 65536 -n $nbw -p @TCP@ 127.0.0.1 |
    awk '$1==65536 {v=$4} END {print v ? v : "-"}'
}
m_dp_lat() {
  # shellcheck disable=SC2046
  pair $(dp s) write_lat --memif server,socket=@SOCK@ -s 8 -n $nlat -p @TCP@ :: \
       $(dp c) write_lat --memif client,socket=@SOCK@ -s 8 -n $nlat -p @TCP@ 127.0.0.1 |
    awk '$1==8 {t=$5; a=$6} END {print t ? t " " a : "- -"}'
}
m_ib_lat() { # LIBDIR
  # shellcheck disable=SC2046
  pair $(ib s "$1") --port memif:server,socket=@SOCK@ --ip 198.18.0.1 ib_write_lat -d droce0 -x 0 -s 8 -n $nlat -p @TCP@ :: \
       $(ib c "$1") --port memif:client,socket=@SOCK@ --ip 198.18.0.2 ib_write_lat -d droce0 -x 0 -s 8 -n $nlat -p @TCP@ 127.0.0.1 |
    awk '$1==8 {t=$5; a=$6} END {print t ? t " " a : "- -"}'
}

lib=$build/stack/verbs/lib
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)," \
  "$( [ "$pin" = 1 ] && echo "servers on CPU $scpu, clients on CPU $ccpu" || echo "not pinned")," \
  "write_bw -s 65536 -n $nbw, write_lat -s 8 -n $nlat"
hdr="round | order | droce-perf bw MB/s | ib_write_bw MB/s | bw ratio | droce-perf lat typ/avg us | ib_write_lat typ/avg us | typ ratio | avg ratio"
[ -n "$before" ] && hdr="$hdr | before: ib_write_bw | ib_write_lat typ/avg"
echo "$hdr"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    order="dp,ib"; pb=$(m_dp_bw); ibw=$(m_ib_bw "$lib"); pl=$(m_dp_lat); il=$(m_ib_lat "$lib")
  else
    order="ib,dp"; ibw=$(m_ib_bw "$lib"); pb=$(m_dp_bw); il=$(m_ib_lat "$lib"); pl=$(m_dp_lat)
  fi
  bb="-"; bl="- -"
  if [ -n "$before" ]; then bb=$(m_ib_bw "$before"); bl=$(m_ib_lat "$before"); fi
  set -- $pl; pt=$1 pa=$2; set -- $il; it=$1 ia=$2
  echo "$r $pb $ibw $pt $pa $it $ia $bb $bl" >>"$work/rows"
  row="$r | $order | $pb | $ibw | $(ratio "$ibw" "$pb") | $pt / $pa | $it / $ia | $(ratio "$it" "$pt") | $(ratio "$ia" "$pa")"
  [ -n "$before" ] && row="$row | $bb | ${bl/ / / }"
  echo "$row"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
col() { awk -v c="$1" '$c != "-" {print $c}' "$work/rows" | median; }
rcol() { awk -v a="$1" -v b="$2" '$a != "-" && $b != "-" && $b > 0 {print $a / $b}' "$work/rows" | median; }
printf 'median | | %s | %s | %s | %s / %s | %s / %s | %s | %s\n' "$(col 2)" "$(col 3)" \
  "$(ratio "$(col 3)" "$(col 2)")" "$(col 4)" "$(col 5)" "$(col 6)" "$(col 7)" \
  "$(ratio "$(col 6)" "$(col 4)")" "$(ratio "$(col 7)" "$(col 5)")"
printf 'median of the per-round ratios: bw %.2f, lat typical %.2f, lat avg %.2f\n' \
  "$(rcol 3 2)" "$(rcol 6 4)" "$(rcol 7 5)"
if [ -n "$before" ]; then
  echo "before ($before): ib_write_bw $(col 8) MB/s (ratio $(ratio "$(col 8)" "$(col 2)")), ib_write_lat typical $(col 9) us (ratio $(ratio "$(col 9)" "$(col 4)")), avg $(col 10) us"
fi
echo "targets (issue 9 item 6): bw ratio >= 0.9, lat typical ratio <= 1.1"
