#!/usr/bin/env bash
# suite verbs: NCCL's IB transport call sequence (tests/verbs/nccl_seq.c)
# over droce's libibverbs, two processes over memif through scripts/droce-run.
#   nccl_seq.sh DROCE_RUN NCCL_SEQ pair     receiver (memif server) + sender
#   nccl_seq.sh DROCE_RUN NCCL_SEQ comm     the same in DROCE_COMM_CORE mode,
#                                           70 extra CQs made and freed twice
#   nccl_seq.sh DROCE_RUN NCCL_SEQ unload   one process dlcloses both libraries
# DROCE_VERBS_LIB (set by meson) is droce's library directory. Both ends
# exit without ibv_close_device, as NCCL does; each must exit 0 by itself,
# and droce's exit handler must report the device it found still open.
set -u
run=$1; seq=$2; what=${3:-pair}
work=$(mktemp -d /tmp/droce-nccl-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
sock=$work/memif.sock
export DROCE_VERBS_STATS=1
export NCCL_SEQ_LIBDIR=$DROCE_VERBS_LIB
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU' "$1"; }
# No core files from a crash we report anyway.
ulimit -c 0

if [ "$what" = unload ]; then
  timeout 60 "$run" --port "memif:server,socket=$sock" --ip 198.18.0.1 \
    "$seq" unload >"$work/unload.out" 2>&1
  rc=$?
  quiet "$work/unload.out"
  if [ $rc != 0 ]; then echo "FAIL: nccl_seq unload exited $rc"; exit 1; fi
  grep -q '^nccl_seq unload: OK' "$work/unload.out" || { echo "FAIL: no OK line"; exit 1; }
  exit 0
fi

extra=(); comm=(); ccomm=()
if [ "$what" = comm ]; then
  extra=(--cqs 70); comm=(--comm-core 0); ccomm=(--comm-core $(( $(nproc) - 1 )))
fi
# The receiver finds the library as NCCL does without NCCL_IBVERBS_LIB
# (dlopen "libibverbs.so" first: droce's directory must hold that name);
# the sender gets the NCCL_IBVERBS_LIB scripts/droce-run sets.
timeout 90 "$run" "${comm[@]}" --port "memif:server,socket=$sock" --ip 198.18.0.1 \
  env -u NCCL_IBVERBS_LIB "$seq" recv --tcp 0 "${extra[@]}" >"$work/recv.out" 2>&1 &
spid=$!
# The receiver listens for the out-of-band connection on a free port once
# its device is open (its memif socket exists by then): wait for it.
tcp=
for _ in $(seq 1200); do
  tcp=$(sed -n 's/^note recv: out-of-band TCP port \([0-9]*\)$/\1/p' "$work/recv.out")
  [ -n "$tcp" ] && break
  kill -0 $spid 2>/dev/null || break
  sleep 0.05
done
if [ -z "$tcp" ]; then
  wait $spid; echo "FAIL: the receiver never listened (exit $?)"; quiet "$work/recv.out"; spid=; exit 1
fi
timeout 90 "$run" "${ccomm[@]}" --port "memif:client,socket=$sock" --ip 198.18.0.2 \
  env NCCL_SEQ_WANT_ENV_LIB=1 "$seq" send --tcp "$tcp" "${extra[@]}" 127.0.0.1 >"$work/send.out" 2>&1
crc=$?
wait $spid
src=$?
spid=
echo "--- receiver"; quiet "$work/recv.out"
echo "--- sender"; quiet "$work/send.out"
rc=0
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: sender exit $crc, receiver exit $src"
  rc=1
fi
for s in recv send; do
  grep -q "^nccl_seq $s: OK" "$work/$s.out" || { echo "FAIL: $s printed no OK line"; rc=1; }
  # The library's exit handler (DROCE_VERBS_STATS): the device left open
  # was closed in order, its progress thread stopped.
  grep -q 'droce: droce0 still open at exit' "$work/$s.out" ||
    { echo "FAIL: $s: droce did not close the device left open at exit"; rc=1; }
  if grep -q -i -E 'segmentation|core dumped|aborted' "$work/$s.out"; then
    echo "FAIL: $s crashed"; rc=1
  fi
done
grep -q 'dlopen("libibverbs.so") loaded' "$work/recv.out" ||
  { echo "FAIL: the receiver did not find droce's library as libibverbs.so"; rc=1; }
if [ "$what" = comm ]; then
  for s in recv send; do
    grep -q 'progress: comm core' "$work/$s.out" || { echo "FAIL: $s not in comm-core mode"; rc=1; }
  done
fi
exit $rc
