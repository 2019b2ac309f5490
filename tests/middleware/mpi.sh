#!/usr/bin/env bash
# suite middleware: Open MPI 4.1 (Debian's openmpi-bin), two ranks of our
# PROGRAM (mpi_check, mpi_allreduce_bw) over pml ucx on droce0, UCX on rc_verbs (ud_verbs for UCP's
# wireup), btl self only: no shared memory, no TCP byte transport. Each
# rank runs under scripts/droce-run --sysfs (tests/middleware/mpi_rank.sh);
# the case passes when mpirun exits 0, the program says every byte matched,
# and each rank's droce context counted at least the frames the transfers
# need (DROCE_VERBS_STATS), so the data crossed droce.
#   mpi.sh DROCE_RUN PROGRAM
set -u
run=$1; prog=$2
for p in mpirun unshare; do
  command -v $p >/dev/null || { echo "SKIP: $p is not installed (Debian: openmpi-bin)"; exit 77; }
done
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: droce-run --sysfs needs root (a private mount namespace)"
  exit 77
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/droce-mw-mpi-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work DROCE_VERBS_STATS=1
export DROCE_EAL="${DROCE_EAL:+$DROCE_EAL }--log-level=pmd.net.memif:debug"
# pml_ucx_devices: Open MPI 4.1 takes pml ucx only on devices named mlx*
# unless told; rc_verbs for the data, ud_verbs as UCP's wireup transport.
mca=(--mca pml ucx --mca btl self --mca pml_ucx_devices any --mca pml_ucx_tls any
     --mca osc ^ucx -x UCX_TLS=rc_verbs,ud_verbs:aux -x DROCE_VERBS_STATS -x TMPDIR -x DROCE_EAL)
[ -n "${DROCE_VERBS_LIB:-}" ] && mca+=(-x DROCE_VERBS_LIB)
for try in 1 2 3; do
  rm -f "$work"/rank*.err
  timeout 240 mpirun --allow-run-as-root --oversubscribe "${mca[@]}" \
    -np 1 "$here/mpi_rank.sh" "$run" "$work" server "$prog" : \
    -np 1 "$here/mpi_rank.sh" "$run" "$work" client "$prog" >"$work/mpirun.out" 2>&1
  rc=$?
  [ $rc = 0 ] && break
  # The start-up race of the two memif ends (see ucx.sh): run again.
  grep -q -E 'memif_connect_client\(\): Failed to connect socket|Disconnect received: ID not found' \
    "$work"/rank*.err 2>/dev/null || break
  echo "note: the memif client met its server before the server's port started (start-up race): run again"
done
frames() { sed -n -E "s/^droce: context: rx ([0-9]+), tx ([0-9]+) frames.*/\\$2/p" "$1" 2>/dev/null | tail -1; }
ok=1
[ $rc = 0 ] || ok=0
grep -q 'all bytes match' "$work/mpirun.out" || ok=0
# 4 rounds of 8 B .. 4 MB each way (22 MB) and allreduce 1 KB .. 16 MB:
# more than 4000 frames each way at the 4 KB MTU, whichever side's READ
# or WRITE UCX's rendezvous moves them with.
for r in 0 1; do
  tx=$(frames "$work/rank$r.err" 2); rx=$(frames "$work/rank$r.err" 1)
  echo "rank $r: droce frames tx ${tx:-?} rx ${rx:-?}"
  [ "${tx:-0}" -ge 4000 ] && [ "${rx:-0}" -ge 4000 ] || ok=0
done
if [ $ok = 0 ]; then
  cat "$work/mpirun.out" | tail -40
  for r in 0 1; do echo "--- rank $r"; grep -v -E '^(EAL|TELEMETRY|rte_pmd|memif_|Frame size)' "$work/rank$r.err" | tail -20; done
  echo "FAIL: Open MPI pml ucx over rc_verbs on droce0 (mpirun exit $rc)"
  exit 1
fi
grep -E '^(mpi_check|mpi_allreduce_bw|#| +[0-9])' "$work/mpirun.out"
echo "PASS: Open MPI 2 ranks, pml ucx over rc_verbs on droce0"
