#!/usr/bin/env bash
# suite verbs: Debian's unmodified ibv_ud_pingpong (UD QPs, address
# handles, the 40-byte GRH area in every receive buffer) between two droce
# processes over memif (pair.sh), with a message of SIZE bytes.
#   ud_pingpong.sh DROCE_RUN SIZE|mtu [ARGS...]
# "mtu": the port's active MTU as ibv_devinfo reports it over droce, and
# the program must also refuse one byte more (UD messages are one packet,
# at most the port MTU: ud_pingpong checks it before it opens a QP).
set -u
run=$1; size=$2; shift 2
here=$(dirname "$0")
for p in ibv_ud_pingpong ibv_devinfo; do
  command -v $p >/dev/null || { echo "SKIP: $p is not installed (Debian: ibverbs-utils)"; exit 77; }
done
if [ "$size" = mtu ]; then
  # Both probes must run over droce's library (LD_DEBUG=libs), as the pair does.
  lib=$(cd "${DROCE_VERBS_LIB:-/nonexistent}" 2>/dev/null && pwd) ||
    { echo "SKIP: no droce libibverbs.so.1 (DROCE_VERBS_LIB)"; exit 77; }
  work=$(mktemp -d /tmp/droce-udmtu-XXXXXX)
  trap 'rm -rf "$work"' EXIT
  sock=$work/memif.sock
  info=$(LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/devinfo.ld" timeout 30 "$run" \
    --port "memif:server,socket=$sock" --ip 198.18.0.1 ibv_devinfo 2>&1)
  size=$(echo "$info" | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]\+\).*/\1/p' | head -1)
  [ -n "$size" ] || { echo "FAIL: no active_mtu in ibv_devinfo's output:"; echo "$info"; exit 1; }
  echo "port active_mtu: $size"
  out=$(LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/refused.ld" timeout 30 "$run" \
    --port "memif:server,socket=$sock" --ip 198.18.0.1 \
    ibv_ud_pingpong -d droce0 -g 0 -s $((size + 1)) 2>&1)
  prc=$?
  for probe in devinfo refused; do
    grep -q "calling init: $lib/libibverbs.so.1\$" "$work/$probe".ld.* 2>/dev/null ||
      { echo "FAIL: the $probe probe did not load droce's libibverbs.so.1 ($lib)"; exit 1; }
  done
  if [ $prc = 0 ] || ! echo "$out" | grep -q "larger than port MTU ($size)"; then
    echo "FAIL: ibv_ud_pingpong -s $((size + 1)) was not refused for the port MTU (exit $prc):"
    echo "$out"
    exit 1
  fi
  rm -rf "$work"; trap - EXIT # exec below runs no trap
fi
exec "$here/pair.sh" "$run" ibv_ud_pingpong -d droce0 -g 0 -c -s "$size" "$@"
