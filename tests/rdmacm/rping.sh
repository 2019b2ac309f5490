#!/usr/bin/env bash
# suite verbs: unmodified rping (rdmacm-utils) between two droce processes
# over memif, both through droce's libibverbs.so.1 and librdmacm.so.1
# (scripts/droce-run puts both first): rdma_cm's address and route
# resolution, listen/connect/accept, the CM over QP1, SEND/RDMA READ/RDMA
# WRITE of every ping, disconnect. Both must exit 0 by themselves, each
# side must print every ping's data, and the client must have used our
# library (not rdma-core's, which finds no device here).
#   rping.sh DROCE_RUN COUNT [SIZE]
set -u
run=$1; count=$2; size=${3:-}
command -v rping >/dev/null || { echo "SKIP: rping is not installed (Debian: rdmacm-utils)"; exit 77; }
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/librdmacm.so.1" ] || { echo "SKIP: no droce librdmacm.so.1 (librdmacm-dev missing at build time)"; exit 77; }
work=$(mktemp -d /tmp/droce-rping-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
sock=$work/memif.sock
port=$((20000 + $$ % 20000))
sz=(); [ -n "$size" ] && sz=(-S "$size")
timeout 60 "$run" --port "memif:server,socket=$sock" --ip 198.18.0.1 \
  rping -s -a 198.18.0.1 -p "$port" -C "$count" -v "${sz[@]}" >"$work/server.out" 2>&1 &
spid=$!
for _ in $(seq 200); do
  { [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } && break
  sleep 0.05
done
sleep 0.3
LD_DEBUG=libs timeout 60 "$run" --port "memif:client,socket=$sock" --ip 198.18.0.2 \
  rping -c -a 198.18.0.1 -p "$port" -C "$count" -v "${sz[@]}" >"$work/client.out" 2>"$work/client.ld"
crc=$?
wait $spid
src=$?
spid=
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU' "$1"; }
rc=0
cpings=$(grep -c '^ping data: rdma-ping-' "$work/client.out")
spings=$(grep -c '^server ping data: rdma-ping-' "$work/server.out")
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: rping -C $count ${sz[*]}: client exit $crc, server exit $src"; rc=1
elif [ "$cpings" != "$count" ] || [ "$spings" != "$count" ]; then
  echo "FAIL: rping -C $count: client printed $cpings pings, server $spings"; rc=1
elif ! grep -q "calling init: $(cd "$lib" && pwd)/librdmacm.so.1" "$work/client.ld"; then
  echo "FAIL: the client did not load droce's librdmacm.so.1"; grep librdmacm "$work/client.ld" | head -3; rc=1
else
  echo "rping -C $count ${sz[*]}: $cpings pings each way, both exited 0, droce's librdmacm.so.1 loaded"
fi
[ $rc = 0 ] || { echo "--- client"; quiet "$work/client.out"; echo "--- server"; quiet "$work/server.out"; }
exit $rc
