#!/usr/bin/env bash
# suite middleware: a program in one process on a port with no peer: a
# memif server nobody connects to, and DPDK's null PMD (which drops every
# frame it is given). Passes when the program's output matches WANT and
# droce's counters (DROCE_VERBS_STATS) show its frames turned around inside
# the port: as many received as sent (at least MIN), and where the port's
# line says so, every one looped back. With no peer, a received frame can
# only be one of ours.
#   loopback.sh DROCE_RUN MIN WANT PROGRAM [ARGS...]
set -u
run=$1; min=$2; want=$3; shift 3
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1"; exit 77; }
work=$(mktemp -d /tmp/droce-loop-XXXXXX)
trap 'rm -rf "$work"' EXIT
rc=0
for port in "memif:server,socket=$work/memif.sock" vdev:net_null0; do
  DROCE_VERBS_STATS=1 timeout 60 "$run" --port "$port" --ip 198.18.0.1 "$@" >"$work/out" 2>&1
  r=$?
  line=$(grep -E '(context: rx|context rx) [0-9]+, tx [0-9]+ frames' "$work/out" | tail -1)
  read -r rx tx <<<"$(sed -E 's/.*context:? rx ([0-9]+), tx ([0-9]+) frames.*/\1 \2/' <<<"$line")"
  loop=$(sed -n -E 's/.*looped back ([0-9]+).*/\1/p' <<<"$line")
  if [ $r != 0 ] || ! grep -q -E "$want" "$work/out"; then
    echo "FAIL: $port: exit $r, or no '$want'"; rc=1
  elif [ -z "$rx" ] || [ "$tx" -lt "$min" ] || [ "$rx" != "$tx" ] || { [ -n "$loop" ] && [ "$loop" != "$tx" ]; }; then
    echo "FAIL: $port: counters '$line' (want every frame back, >= $min)"; rc=1
  else
    echo "ok: $port: $tx frames sent, $rx received${loop:+, $loop looped back in the port}"
  fi
  grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU|^droce: QP 0x' "$work/out"
done
exit $rc
