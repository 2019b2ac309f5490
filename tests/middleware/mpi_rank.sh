#!/usr/bin/env bash
# One rank of tests/middleware/mpi.sh, as mpirun starts it:
#   mpi_rank.sh DROCE_RUN WORK server|client PROGRAM
# Rank 0 is droce0's memif server; rank 1 starts once rank 0's droce0 is
# open (DROCE_VERBS_STATS says so in its log), so that its memif client
# finds a started server. Each rank's stderr goes to WORK/rankN.err.
set -u
run=$1; work=$2; role=$3; shift 3
if [ "$role" = server ]; then
  exec "$run" --sysfs --port "memif:server,socket=$work/m.sock" --ip 198.18.0.1 "$@" 2>"$work/rank0.err"
fi
for _ in $(seq 1200); do
  grep -q '^droce: droce0 open' "$work/rank0.err" 2>/dev/null && break
  sleep 0.05
done
exec "$run" --sysfs --port "memif:client,socket=$work/m.sock" --ip 198.18.0.2 "$@" 2>"$work/rank1.err"
