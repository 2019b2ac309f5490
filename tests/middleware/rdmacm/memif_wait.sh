#!/usr/bin/env bash
# suite middleware: a memif client that starts before its server waits for
# it (bounded), so two ranks can open droce0 at the same instant:
#  - droce-perf: the client's port asks again (--port-wait, default 10 s);
#    the server is started only once the client said it is waiting, then
#    write_bw --check must pass on both;
#  - the libibverbs drop-in: ibv_devinfo as the client (DROCE_PORT_WAIT,
#    default 10 s) opens droce0 once the server is there;
#  - with DROCE_PORT_WAIT=0 a client without a server fails at once.
#   memif_wait.sh DROCE_PERF DROCE_RUN
set -u
perf=$1; run=$2
work=$(mktemp -d /tmp/droce-wait-XXXXXX)
spid=; cpid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; [ -n "$cpid" ] && kill $cpid 2>/dev/null; rm -rf "$work"' EXIT
port=$((20000 + $$ % 20000))
waiting='does not start yet: asking again'
# until FILE shows the client's waiting line (the client is then surely first)
until_waiting() {
  for _ in $(seq 600); do
    grep -q "$waiting" "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
rc=0

sock=$work/perf.sock
timeout 60 "$perf" write_bw --memif "client,socket=$sock" -s 65536 -n 50 -p "$port" --check \
  --timeout 20 127.0.0.1 >"$work/pc.out" 2>&1 & cpid=$!
if until_waiting "$work/pc.out" $cpid; then
  timeout 60 "$perf" write_bw --memif "server,socket=$sock" -s 65536 -n 50 -p "$port" --check \
    --timeout 20 >"$work/ps.out" 2>&1 & spid=$!
  wait $cpid; crc=$?; cpid=
  wait $spid; src=$?; spid=
  if [ $crc != 0 ] || [ $src != 0 ]; then
    echo "FAIL: droce-perf client first: client exit $crc, server exit $src"; rc=1
  else
    echo "ok: droce-perf: the client waited for its server, write_bw --check passed on both"
  fi
else
  echo "FAIL: droce-perf's memif client did not wait for its server"; rc=1
fi
grep -v '^EAL' "$work/pc.out" | tail -5

lib=${DROCE_VERBS_LIB:-}
if [ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] && command -v ibv_devinfo >/dev/null; then
  sock=$work/verbs.sock
  timeout 60 "$run" --port "memif:client,socket=$sock" --ip 198.18.0.2 ibv_devinfo -d droce0 \
    >"$work/vc.out" 2>&1 & cpid=$!
  if until_waiting "$work/vc.out" $cpid; then
    # a server that holds droce0 open (waits for a pingpong client that never comes)
    timeout 60 "$run" --port "memif:server,socket=$sock" --ip 198.18.0.1 \
      ibv_rc_pingpong -d droce0 -g 0 -p "$port" >"$work/vs.out" 2>&1 & spid=$!
    wait $cpid; crc=$?; cpid=
    kill $spid 2>/dev/null; wait $spid 2>/dev/null; spid=
    if [ $crc != 0 ] || ! grep -q 'PORT_ACTIVE' "$work/vc.out"; then
      echo "FAIL: ibv_devinfo as a memif client first: exit $crc"; rc=1
    else
      echo "ok: the drop-in: ibv_devinfo waited for its server and opened droce0"
    fi
  else
    echo "FAIL: the drop-in's memif client did not wait for its server"; rc=1
  fi
  grep -v '^EAL' "$work/vc.out" | grep -v '^\s' | tail -4
  t0=$(date +%s)
  DROCE_PORT_WAIT=0 timeout 30 "$run" --port "memif:client,socket=$work/none.sock" --ip 198.18.0.2 \
    ibv_devinfo -d droce0 >"$work/v0.out" 2>&1
  r=$?; t=$(( $(date +%s) - t0 ))
  if [ $r = 0 ] || [ $r = 124 ] || grep -q "$waiting" "$work/v0.out"; then
    echo "FAIL: DROCE_PORT_WAIT=0 without a server: exit $r after $t s (want a failure at once)"; rc=1
  else
    echo "ok: DROCE_PORT_WAIT=0 without a server: failed at once (exit $r, $t s)"
  fi
else
  echo "(the drop-in's part skipped: no libibverbs.so.1 of droce or no ibv_devinfo)"
fi
exit $rc
