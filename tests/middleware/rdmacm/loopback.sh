#!/usr/bin/env bash
# suite middleware: loopback.c in one process on a port with no peer: a
# memif server nobody connects to, and DPDK's null PMD (which drops every
# frame it is given). Passes when the program prints "loopback: ok" and
# droce's counters (DROCE_VERBS_STATS) show its frames looped back inside
# the port: none reached the link, none were lost.
#   loopback.sh DROCE_RUN PROGRAM
set -u
run=$1; prog=$2
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1"; exit 77; }
work=$(mktemp -d /tmp/droce-loop-XXXXXX)
trap 'rm -rf "$work"' EXIT
rc=0
for port in "memif:server,socket=$work/memif.sock" vdev:net_null0; do
  DROCE_VERBS_STATS=1 timeout 60 "$run" --port "$port" --ip 198.18.0.1 "$prog" >"$work/out" 2>&1
  r=$?
  line=$(grep -E 'context: rx [0-9]+, tx [0-9]+ frames' "$work/out")
  read -r rx tx loop <<<"$(sed -E 's/.*rx ([0-9]+), tx ([0-9]+) frames.*looped back ([0-9]+).*/\1 \2 \3/' <<<"$line")"
  if [ $r != 0 ] || ! grep -q '^loopback: ok' "$work/out"; then
    echo "FAIL: $port: exit $r"; rc=1
  elif [ -z "$loop" ] || [ "$loop" -lt 100 ] || [ "$rx" != "$tx" ] || [ "$loop" != "$tx" ]; then
    echo "FAIL: $port: counters '$line' (want every frame looped back, >= 100)"; rc=1
  else
    echo "ok: $port: $tx frames sent, $rx received, $loop looped back in the port"
  fi
  grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU|^droce: QP 0x' "$work/out"
done
exit $rc
