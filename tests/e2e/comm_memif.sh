#!/usr/bin/env bash
# e2e: the comm-core model over memif, two processes (see comm_memif.c).
set -u
bin=$1
msgs=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-comm-XXXXXX)
trap 'kill $spid 2>/dev/null; rm -rf "$work"' EXIT
port=$(free_port)
timeout 60 "$bin" server "$work/memif.sock" "$port" "$msgs" >"$work/server.out" 2>&1 &
spid=$!
wait_ready $spid "$work/server.out" "" "$work/memif.sock" "$port" || { cat "$work/server.out"; exit 1; }
timeout 60 "$bin" client "$work/memif.sock" "$port" "$msgs" >"$work/client.out" 2>&1
crc=$?
wait $spid; src=$?; spid=
grep -hv '^EAL\|^TELEMETRY\|memif_probe\|Frame size' "$work/server.out" "$work/client.out"
[ $crc = 0 ] && [ $src = 0 ] || { echo "FAIL: client exit $crc, server exit $src"; exit 1; }
echo "PASS: comm-core model, $msgs messages over memif, every byte verified"
