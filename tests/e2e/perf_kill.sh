#!/usr/bin/env bash
# e2e: the droce-perf server killed mid-run; the client must notice the dead
# peer and exit non-zero within its --timeout (plus start-up slack), through
# its QP's RETRY_EXC_ERR completion.
set -u
perf=$1
tmo=5
work=$(mktemp -d /tmp/droce-kill-XXXXXX)
trap 'kill -9 $spid 2>/dev/null; rm -rf "$work"' EXIT
# memif: the client must start after the server created its socket and
# started its port (a client that connects too early never comes up). DPDK's
# memif socket is abstract by default: look for it in /proc/net/unix.
wait_sock() {
  for _ in $(seq 200); do
    { [ -S "$1" ] || grep -q "@$1\$" /proc/net/unix; } && break
    sleep 0.05
  done
  sleep 0.3
}
port=$((40000 + $$ % 20000))
sock=$work/memif.sock
"$perf" write_bw --memif "server,socket=$sock" -s 64K -D 60 -p "$port" --timeout $tmo \
  >"$work/server.out" 2>&1 &
spid=$!
wait_sock "$sock"
start=$(date +%s)
timeout 60 "$perf" write_bw --memif "client,socket=$sock" -s 64K -D 60 -p "$port" \
  --timeout $tmo 127.0.0.1 >"$work/client.out" 2>&1 &
cpid=$!
sleep 3
kill -9 "$spid"
killed=$(date +%s)
wait "$cpid"
crc=$?
end=$(date +%s)
grep -v '^EAL' "$work/client.out" | tail -5
if [ $crc = 0 ]; then echo "FAIL: client exited 0 although its server died"; exit 1; fi
if [ $crc = 124 ]; then echo "FAIL: client still running 60 s after start (killed by timeout)"; exit 1; fi
# The engine must end the run, not droce-perf's own --timeout: a peer that
# vanished completes the outstanding work RETRY_EXC_ERR (IBTA 9.7.6.1.3)
# whether the link still takes frames or refuses them all (a dead memif).
# (On a loaded machine the server may die before the client connected:
# then there is no QP to judge.)
if grep -q "Connected:" "$work/client.out" &&
   ! grep -q "completion error: transport retry counter exceeded" "$work/client.out"; then
  echo "FAIL: no RETRY_EXC_ERR completion: the QP stayed in RTS, droce-perf's --timeout ended the run"
  exit 1
fi
took=$((end - killed))
if [ $took -gt $((tmo + 5)) ]; then echo "FAIL: client took $took s to give up (timeout $tmo s)"; exit 1; fi
echo "PASS: client exited $crc $took s after the server was killed (started $((killed - start)) s before)"
