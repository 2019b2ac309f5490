#!/usr/bin/env bash
# suite verbs: an unmodified rdma-core program, server and client, as two
# processes over memif with droce's libibverbs.so.1 (scripts/droce-run),
# no hugepages. Both must exit 0 by themselves and the client must print
# its results.
#   pair.sh DROCE_RUN PROGRAM [ARGS...]      (the client also gets 127.0.0.1)
# DROCE_VERBS_LIB (set by meson) is the library directory. PAIR_COMM_CORE=1
# runs both ends in DROCE_COMM_CORE mode (server on CPU 0, client on the last).
set -u
run=$1; prog=$2; shift 2
if ! command -v "$prog" >/dev/null; then
  echo "SKIP: $prog is not installed (Debian: ibverbs-utils / perftest)"
  exit 77
fi
work=$(mktemp -d /tmp/droce-verbs-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
sock=$work/memif.sock
tcp=$((20000 + $$ % 20000))
export DROCE_VERBS_STATS=1
scomm=(); ccomm=()
if [ "${PAIR_COMM_CORE:-0}" = 1 ]; then
  scomm=(--comm-core 0); ccomm=(--comm-core $(( $(nproc) - 1 )))
fi
# One server + client pair; sets crc and src (their exit codes).
run_pair() {
  timeout 60 "$run" "${scomm[@]}" --port "memif:server,socket=$sock" --ip 198.18.0.1 \
    "$prog" "$@" -p "$tcp" >"$work/server.out" 2>&1 &
  spid=$!
  # The memif client must start after the server's socket exists; DPDK's
  # socket is abstract by default: look for it in /proc/net/unix.
  for _ in $(seq 200); do
    { [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } && break
    sleep 0.05
  done
  sleep 0.3
  timeout 60 "$run" "${ccomm[@]}" --port "memif:client,socket=$sock" --ip 198.18.0.2 \
    "$prog" "$@" -p "$tcp" 127.0.0.1 >"$work/client.out" 2>&1
  crc=$?
  wait $spid
  src=$?
  spid=
}
# perftest times its run with a CPU clock it samples against gettimeofday
# once the test is over, and gives up ("Correlation coefficient r^2 ... <
# 0.9 / Can't produce a report", exit 1) when the samples scatter: a busy
# machine preempted it. That is perftest's own measurement, not droce's
# transfer, so such a pair runs again, at most twice more; any other
# failure stands.
clock_gave_up() {
  grep -q "Can't produce a report" "$work/client.out" "$work/server.out" &&
    ! grep -q -i -E 'fail|error|couldn|unable' "$work/client.out" "$work/server.out"
}
for try in 1 2 3; do
  run_pair "$@"
  { [ $crc = 0 ] && [ $src = 0 ]; } || ! clock_gave_up || [ $try = 3 ] && break
  echo "note: $prog could not sample its CPU clock (perftest's r^2 < 0.9, a busy machine): run again (try $((try + 1)))"
  sock=$work/memif$try.sock; tcp=$((tcp + 1))
done
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU' "$1"; }
rc=0
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: $prog $*: client exit $crc, server exit $src"
  rc=1
elif ! grep -q -E '^ *[0-9]+ +[0-9]+ +[0-9.]+|iters in [0-9.]+ seconds' "$work/client.out"; then
  echo "FAIL: $prog $*: the client printed no results"
  rc=1
fi
if [ "${PAIR_COMM_CORE:-0}" = 1 ]; then
  for f in "$work/server.out" "$work/client.out"; do
    grep -q 'progress: comm core' "$f" || { echo "FAIL: $(basename "$f" .out) did not run in comm-core mode"; rc=1; }
  done
fi
echo "--- client: $prog $* 127.0.0.1"; quiet "$work/client.out"
echo "--- server: $prog $*"; quiet "$work/server.out"
exit $rc
