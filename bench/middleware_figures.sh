#!/usr/bin/env bash
# Middleware figures, droce beside TCP in one run (docs/middleware.md,
# "Same-run figures"); root (droce-run --sysfs), Debian's ucx-utils and
# openmpi-bin, a build with tests/middleware/mpi_allreduce_bw.
#
#   bench/middleware_figures.sh [--build DIR] [--rounds N] [--quick]
#
# Per round, every case runs over droce and over TCP, one after the other
# (droce first in odd rounds, TCP first in even ones); each table cell is
# the median over the rounds (default 3):
#   ucx_perftest put_bw (UCT, zcopy) at 4 KB, 64 KB, 1 MB: rc_verbs on
#     droce0:1 against UCX's tcp on lo; MB/s, overall
#   ucx_perftest tag_lat (UCP) at 8 B, 4 KB, 64 KB: UCX_TLS=rc_verbs,ud_verbs:aux
#     against UCX_TLS=tcp; us, median
#   mpi_allreduce_bw, 2 ranks, 1 KB..16 MB: Open MPI pml ucx on rc_verbs
#     (btl self only) against pml ob1 with btl tcp,self on lo; bus GB/s
# The server (rank 0) is pinned to CPU 0, the client (rank 1) to CPU 1, on
# both sides of every comparison. --quick: 1 round, fewer sizes. The load
# average is printed at the start and the end: on a shared machine the
# figures mean little, and the ratios in one run are what to read.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$here/build
rounds=3
quick=
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=1; rounds=1; shift ;;
    -h|--help) sed -n 2,22p "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for p in ucx_perftest mpirun unshare taskset; do
  command -v $p >/dev/null || { echo "middleware_figures: $p is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "middleware_figures: droce-run --sysfs needs root" >&2; exit 2; }
run=$here/scripts/droce-run
bw=$build/tests/middleware/mpi_allreduce_bw
[ -x "$bw" ] || { echo "middleware_figures: no $bw (build with Open MPI's headers)" >&2; exit 2; }
export DROCE_VERBS_LIB=${DROCE_VERBS_LIB:-$build/stack/verbs/lib}
work=$(mktemp -d /tmp/droce-mw-fig-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
export TMPDIR=$work
unset UCX_TLS UCX_NET_DEVICES
export DROCE_VERBS_STATS=1
export DROCE_EAL="${DROCE_EAL:+$DROCE_EAL }--log-level=pmd.net.memif:debug"
tcp=$((20000 + $$ % 20000))
pair=0

put_sizes=(4096 65536 1048576); lat_sizes=(8 4096 65536)
[ -n "$quick" ] && { put_sizes=(65536 1048576); lat_sizes=(8 65536); }

# one ucx_perftest pair; prints the client's Final line (empty on failure)
# args: droce|tcp uct|ucp TEST SIZE
ucx_pair() {
  local side=$1 api=$2 test=$3 size=$4 try
  local args=(-t "$test" -s "$size" -n "$([ "$test" = tag_lat ] && echo 2000 || echo 1000)")
  local senv=(env) cenv=(env) spre cpre
  if [ "$side" = droce ]; then
    [ "$api" = uct ] && args+=(-x rc_verbs -d droce0:1 -D zcopy) ||
      { senv+=(UCX_TLS=rc_verbs,ud_verbs:aux); cenv+=(UCX_TLS=rc_verbs,ud_verbs:aux); }
  else
    [ "$api" = uct ] && args+=(-x tcp -d lo -D zcopy) ||
      { senv+=(UCX_TLS=tcp UCX_NET_DEVICES=lo); cenv+=(UCX_TLS=tcp UCX_NET_DEVICES=lo); }
  fi
  for try in 1 2 3 4; do
    pair=$((pair + 1))
    local sock=$work/m$pair.sock port=$((tcp + pair))
    if [ "$side" = droce ]; then
      spre=("$run" --sysfs --cpu 0 --port "memif:server,socket=$sock" --ip 198.18.0.1)
      cpre=("$run" --sysfs --cpu 1 --port "memif:client,socket=$sock" --ip 198.18.0.2)
    else
      spre=(taskset -c 0); cpre=(taskset -c 1)
    fi
    timeout 120 "${senv[@]}" "${spre[@]}" ucx_perftest -p "$port" >"$work/s.out" 2>&1 &
    spid=$!
    for _ in $(seq 600); do
      { [ "$side" = tcp ] || grep -q '^droce: droce0 open' "$work/s.out"; } &&
        ss -ltn 2>/dev/null | grep -q ":$port " && break
      sleep 0.05
    done
    timeout 120 "${cenv[@]}" "${cpre[@]}" ucx_perftest 127.0.0.1 -p "$port" "${args[@]}" \
      >"$work/c.out" 2>&1
    wait $spid; spid=
    if grep -q '^Final:' "$work/c.out"; then
      grep '^Final:' "$work/c.out" | tail -1
      return
    fi
    # the memif start-up race of tests/middleware/ucx.sh: run again
    grep -q -E 'memif_connect_client\(\): Failed to connect socket|Disconnect received: ID not found' \
      "$work/c.out" "$work/s.out" || break
  done
  echo "middleware_figures: ucx_perftest $test $size over $side failed:" >&2
  grep -v -E '^(EAL|TELEMETRY|rte_pmd|memif_|Frame size)' "$work/c.out" | tail -5 >&2
}

# one mpirun of mpi_allreduce_bw; prints "bytes busbw" lines
mpi_run() {
  local side=$1 try
  local common=(--allow-run-as-root --oversubscribe --map-by core --bind-to core)
  for try in 1 2 3; do
    rm -f "$work"/rank*.err "$work/m.sock"
    if [ "$side" = droce ]; then
      timeout 300 mpirun "${common[@]}" --mca pml ucx --mca btl self --mca pml_ucx_devices any \
        --mca pml_ucx_tls any --mca osc ^ucx -x UCX_TLS=rc_verbs,ud_verbs:aux -x DROCE_VERBS_STATS \
        -x TMPDIR -x DROCE_EAL -x DROCE_VERBS_LIB \
        -np 1 "$here/tests/middleware/mpi_rank.sh" "$run" "$work" server "$bw" : \
        -np 1 "$here/tests/middleware/mpi_rank.sh" "$run" "$work" client "$bw" >"$work/mpi.out" 2>&1
    else
      timeout 300 mpirun "${common[@]}" --mca pml ob1 --mca btl tcp,self \
        --mca btl_tcp_if_include lo -np 2 "$bw" >"$work/mpi.out" 2>&1
    fi
    if grep -q 'all bytes match' "$work/mpi.out"; then
      awk '/^ +[0-9]+ +[0-9]+ /{print $1, $4}' "$work/mpi.out"
      return
    fi
    grep -q -E 'memif_connect_client\(\): Failed to connect socket|Disconnect received: ID not found' \
      "$work"/rank*.err 2>/dev/null || break
  done
  echo "middleware_figures: mpi_allreduce_bw over $side failed:" >&2
  tail -5 "$work/mpi.out" >&2
}

# one ucx_perftest test at each size, both sides in the round's order
# args: uct|ucp TEST FIELD SIZE...  (FIELD: the Final line's column to keep)
ucx_case() {
  local api=$1 test=$2 field=$3 s side v
  shift 3
  for s in "$@"; do
    for side in "${sides[@]}"; do
      v=$(ucx_pair "$side" "$api" "$test" "$s" | awk -v f="$field" '{print $f}')
      [ -n "$v" ] && echo "${test}_$s $side $v" >>"$res"
    done
  done
}

# results: one line per measurement, "case side value"
res=$work/results
: >"$res"
echo "# middleware_figures: $rounds round(s), load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M) UTC"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then sides=(droce tcp); else sides=(tcp droce); fi
  ucx_case uct put_bw 7 "${put_sizes[@]}"   # Final: field 7, overall MB/s
  ucx_case ucp tag_lat 3 "${lat_sizes[@]}"  # field 3, the median latency
  for side in "${sides[@]}"; do
    mpi_run "$side" | while read -r b v; do echo "allreduce_$b $side $v"; done >>"$res"
  done
  echo "# round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

python3 - "$res" "$rounds" <<'EOF'
import sys
from collections import defaultdict
vals = defaultdict(list)
order = []
for line in open(sys.argv[1]):
    case, side, v = line.split()
    if case not in order:
        order.append(case)
    vals[(case, side)].append(float(v))
def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None
def size(b):
    b = int(b)
    return f"{b >> 20} MB" if b >= 1 << 20 else f"{b >> 10} KB" if b >= 1024 else f"{b} B"
print("| figure | droce | TCP | droce/TCP | rounds |")
print("|---|---|---|---|---|")
for case in order:
    kind, b = case.rsplit("_", 1)
    d, t = med(vals[(case, "droce")]), med(vals[(case, "tcp")])
    name = {"put_bw": "ucx_perftest put_bw (UCT zcopy), MB/s",
            "tag_lat": "ucx_perftest tag_lat (UCP), us",
            "allreduce": "MPI_Allreduce bus bandwidth, GB/s"}[kind]
    f = (lambda x: f"{x:.3f}") if kind != "put_bw" else (lambda x: f"{x:.0f}")
    ratio = ("" if d is None or t is None or not t or not d else
             f"{d / t:.2f}" if kind != "tag_lat" else f"{d / t:.2f} (lower is better)")
    print(f"| {name} {size(b)} | {f(d) if d is not None else 'failed'} | "
          f"{f(t) if t is not None else 'failed'} | {ratio} | "
          f"{len(vals[(case, 'droce')])}/{len(vals[(case, 'tcp')])} |")
EOF
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
