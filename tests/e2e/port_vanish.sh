#!/usr/bin/env bash
# e2e: a memif peer vanishing mid-burst, N times (default 10): the sink
# drains until it shuts its end of the control connection, so the
# sender's poll thread is copying into the shared regions when DPDK's
# interrupt thread unmaps them (port_vanish.c). The sender must survive
# every round (no SIGSEGV) and see its link go down. Bounded: each round
# is a few seconds, each process under `timeout`.
set -u
prog=$1
rounds=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-vanish-XXXXXX)
spid=
trap 'kill -9 $spid 2>/dev/null; rm -rf "$work"' EXIT
crashed=0 failed=0 contained=0
for r in $(seq 1 "$rounds"); do
  sock=$work/m$r.sock
  timeout 30 "$prog" --memif "server,socket=$sock" --ip 10.97.0.1 --sink --ms 150 \
    --seconds 20 >"$work/sink.out" 2>&1 &
  spid=$!
  wait_ready $spid "$work/sink.out" "^port_vanish: port [0-9]+ up" "$sock" ||
    { cat "$work/sink.out"; exit 1; }
  timeout 30 "$prog" --memif "client,socket=$sock" --ip 10.97.0.2 --send 10.97.0.1 \
    --seconds 20 >"$work/send.out" 2>&1
  rc=$?
  wait $spid
  src=$?
  line=$(grep -h "^send:" "$work/send.out")
  echo "round $r: sender exit $rc ${line:+($line)}; $(grep -h '^sink:' "$work/sink.out")"
  case $line in *"faulted tx 0 "*"rx 0") ;; *"faulted"*) contained=$((contained + 1)) ;; esac
  if [ $rc = 139 ] || [ $rc = 135 ]; then
    crashed=$((crashed + 1))
  elif [ $rc != 0 ] || [ $src != 0 ]; then
    failed=$((failed + 1))
    grep -v '^EAL' "$work/send.out" "$work/sink.out" | tail -8
  fi
done
echo "$crashed of $rounds rounds crashed the sender, $failed failed otherwise; in $contained the port contained a fault"
[ $crashed = 0 ] || { echo "FAIL: the sender died (SIGSEGV/SIGBUS) when its memif peer vanished"; exit 1; }
[ $failed = 0 ] || { echo "FAIL: a round did not end as it should (see above)"; exit 1; }
echo "PASS: the sender survived its memif peer vanishing mid-burst $rounds times"
