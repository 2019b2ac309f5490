#!/usr/bin/env bash
# e2e: the port alone over memif (two processes): 50000 RoCE frames with
# 4 KB payload attached zero-copy must arrive intact (ICRC checked), in
# order, none lost. Bounded by `timeout`.
set -u
blast=$1
count=${2:-50000}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-blast-XXXXXX)
trap 'kill $rpid 2>/dev/null; rm -rf "$work"' EXIT
timeout 60 "$blast" --memif "server,socket=$work/memif.sock" --ip 10.98.0.1 --recv \
  --count "$count" --seconds 40 >"$work/recv.out" 2>&1 &
rpid=$!
wait_ready $rpid "$work/recv.out" "^port_blast: port [0-9]+ up" "$work/memif.sock" || { cat "$work/recv.out"; exit 1; }
timeout 60 "$blast" --memif "client,socket=$work/memif.sock" --ip 10.98.0.2 --send 10.98.0.1 \
  --count "$count" --seconds 40 >"$work/send.out" 2>&1
src=$?
wait $rpid
rrc=$?
grep -h "^send\|^recv" "$work/send.out" "$work/recv.out"
[ $src = 0 ] || { echo "FAIL: sender exited $src"; cat "$work/send.out"; exit 1; }
[ $rrc = 0 ] || { echo "FAIL: receiver exited $rrc (loss, reordering or corruption)"; cat "$work/recv.out"; exit 1; }
echo "PASS: $count frames over memif, none lost, in order, ICRC good"
