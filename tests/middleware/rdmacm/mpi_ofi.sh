#!/usr/bin/env bash
# suite middleware: Open MPI 4.1, two ranks of mpi_check.c (ping-pong 8 B ..
# 4 MB, MPI_Allreduce 1 KB .. 16 MB, every byte checked) over pml cm / mtl
# ofi with libfabric's verbs provider (verbs;ofi_rxm), each rank on droce0
# over one memif link (rank 0 the server, rank 1 the client), Debian's
# packages unmodified, scripts/droce-run around each rank. The provider
# finds droce0 by a kernel interface's address: both ranks run in a network
# namespace of their own whose veth holds both addresses (mpirun's own
# out-of-band traffic stays on that namespace's interfaces). Passes when
# mpirun exits 0, rank 0 printed "mpi_check: ok", and each rank's droce
# counters (DROCE_VERBS_STATS, printed by librdmacm at exit) show at least
# MIN_FRAMES frames each way: the data crossed droce, not shared memory or TCP.
#   mpi_ofi.sh DROCE_RUN PROGRAM MIN_FRAMES
set -u
run=$1; prog=$2; min=$3
command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed (openmpi-bin)"; exit 77; }
[ -n "${DROCE_VERBS_LIB:-}" ] && [ -e "$DROCE_VERBS_LIB/librdmacm.so.1" ] ||
  { echo "SKIP: no droce librdmacm.so.1"; exit 77; }
work=$(mktemp -d /tmp/droce-mpi-XXXXXX)
ns=droce-mpi-$$-$RANDOM
trap 'ip netns del "$ns" 2>/dev/null; rm -rf "$work"' EXIT
ip netns add "$ns" 2>/dev/null || { echo "SKIP: cannot make a network namespace (root needed)"; exit 77; }
ip -n "$ns" link set lo up
ip -n "$ns" link add mw0 type veth peer name mw1 &&
  ip -n "$ns" addr add 198.18.0.1/24 dev mw0 && ip -n "$ns" addr add 198.18.0.2/24 dev mw0 &&
  ip -n "$ns" link set mw1 up && ip -n "$ns" link set mw0 up ||
  { echo "FAIL: cannot give the namespace an interface with both addresses"; exit 1; }
sock=$work/memif.sock
# both ranks start at once: rank 1's memif client waits for rank 0's server
# (DROCE_PORT_WAIT). -x applies to its own application context only.
ip netns exec "$ns" timeout 240 mpirun --allow-run-as-root --oversubscribe --tag-output \
  --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include 'verbs;ofi_rxm' \
  -np 1 -x DROCE_VERBS_STATS=1 -x DROCE_VERBS_LIB \
    "$run" --port "memif:server,socket=$sock" --ip 198.18.0.1 "$prog" : \
  -np 1 -x DROCE_VERBS_STATS=1 -x DROCE_VERBS_LIB \
    "$run" --port "memif:client,socket=$sock" --ip 198.18.0.2 "$prog" >"$work/out" 2>&1
rc=$?
frames() { # rank -> "rx tx" from its librdmacm line
  grep -a -E "^\[1,$1\]<stderr>:droce: librdmacm: context rx [0-9]+, tx [0-9]+ frames" "$work/out" |
    sed -E 's/.*context rx ([0-9]+), tx ([0-9]+) frames.*/\1 \2/' | tail -1
}
read -r rx0 tx0 <<<"$(frames 0)"
read -r rx1 tx1 <<<"$(frames 1)"
res=0
if [ $rc != 0 ]; then
  echo "FAIL: mpirun exit $rc"; res=1
elif ! grep -a -q '^\[1,0\]<stdout>:mpi_check: ok' "$work/out"; then
  echo "FAIL: rank 0 did not print 'mpi_check: ok'"; res=1
elif [ -z "$rx0" ] || [ -z "$rx1" ] || [ "$rx0" -lt "$min" ] || [ "$tx0" -lt "$min" ] ||
     [ "$rx1" -lt "$min" ] || [ "$tx1" -lt "$min" ]; then
  echo "FAIL: droce's counters: rank 0 rx ${rx0:-?} tx ${tx0:-?}, rank 1 rx ${rx1:-?} tx ${tx1:-?} frames; want >= $min"
  res=1
else
  echo "ok: Open MPI over mtl ofi (verbs;ofi_rxm) on droce0: both ranks checked every byte, mpirun exit 0;"
  echo "    droce carried rank 0 rx $rx0 tx $tx0, rank 1 rx $rx1 tx $tx1 frames (>= $min)"
fi
grep -a -v -E '<stderr>:(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU|droce: QP 0x' "$work/out" | tail -40
exit $res
