#!/usr/bin/env bash
# e2e: the droce-perf server killed mid-run; the client must notice the dead
# peer and exit non-zero within its --timeout (plus start-up slack), through
# its QP's RETRY_EXC_ERR completion.
set -u
perf=$1
tmo=5
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
kill_mid_run() {
  work=$(mktemp -d /tmp/droce-kill-XXXXXX)
  port=$(free_port)
  sock=$work/memif.sock
  "$perf" write_bw --memif "server,socket=$sock" -s 64K -D 60 -p "$port" --timeout $tmo \
    >"$work/server.out" 2>&1 &
  spid=$!
  wait_ready $spid "$work/server.out" "^ Waiting for a client" "$sock" "$port" || { cat "$work/server.out"; return 1; }
  start=$(date +%s)
  timeout 60 "$perf" write_bw --memif "client,socket=$sock" -s 64K -D 60 -p "$port" \
    --timeout $tmo 127.0.0.1 >"$work/client.out" 2>&1 &
  cpid=$!
  # killed mid-run: once the two are connected and the transfer runs
  wait_ready $cpid "$work/server.out" "Connected: " "" "" 30 || { cat "$work/server.out" "$work/client.out"; return 1; }
  kill -9 "$spid"
  killed=$(date +%s)
  wait "$cpid"
  crc=$?
  end=$(date +%s)
  grep -v '^EAL' "$work/client.out" | tail -5
  if [ $crc = 0 ]; then echo "FAIL: client exited 0 although its server died"; return 1; fi
  # A crash is a failure: the memif regions unmapped under a burst when
  # the peer's socket closes are taken back by the port's burst guard
  # (stack/net/port/port_guard.c), the cut-short burst counted.
  if [ $crc = 139 ]; then echo "FAIL: client crashed (SIGSEGV) after its memif peer was killed"; return 1; fi
  if [ $crc = 124 ]; then echo "FAIL: client still running 60 s after start (killed by timeout)"; return 1; fi
  # The engine must end the run, not droce-perf's own --timeout: a peer that
  # vanished completes the outstanding work RETRY_EXC_ERR (IBTA 9.7.6.1.3)
  # whether the link still takes frames or refuses them all (a dead memif).
  # (On a loaded machine the server may die before the client connected:
  # then there is no QP to judge.)
  if grep -q "Connected:" "$work/client.out" &&
     ! grep -q "completion error: transport retry counter exceeded" "$work/client.out"; then
    echo "FAIL: no RETRY_EXC_ERR completion: the QP stayed in RTS, droce-perf's --timeout ended the run"
    return 1
  fi
  took=$((end - killed))
  if [ $took -gt $((tmo + 5)) ]; then echo "FAIL: client took $took s to give up (timeout $tmo s)"; return 1; fi
  echo "PASS: client exited $crc $took s after the server was killed (started $((killed - start)) s before)"
}
spid= work=
trap 'kill -9 $spid 2>/dev/null; rm -rf "$work"' EXIT
kill_mid_run
