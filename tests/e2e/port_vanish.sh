#!/usr/bin/env bash
# e2e: a memif peer vanishing mid-burst, N times (default 10): the sink
# drains until it shuts its end of the control connection, so the
# sender's poll thread is copying into the shared regions when DPDK's
# interrupt thread unmaps them (port_vanish.c). The sender must survive
# every round (no SIGSEGV) and see its link go down. Bounded: each round
# is a few seconds, each process under `timeout`. With Debian's
# dpdk-telemetry.py the sender's /droce/port is read after each round: its
# tx_faulted, tx_abandoned and rx_faulted must be the counts the sender
# printed, and not all zero in a round where the port contained a fault.
set -u
prog=$1
rounds=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-vanish-XXXXXX)
spid= cpid=
pfx=droce-vanish-$$
trap 'kill -9 $spid $cpid 2>/dev/null; rm -rf "$work" /var/run/dpdk/$pfx' EXIT
tool=$(command -v dpdk-telemetry.py) || tool=
[ -n "$tool" ] || echo "note: dpdk-telemetry.py not found (Debian package dpdk): /droce/port not read"
# the sender's counters on its telemetry socket -> "tx_faulted tx_abandoned rx_faulted"
read_port() {
  echo /droce/port | timeout 10 /usr/bin/python3 "$tool" -f "$pfx" >"$work/tel.out" 2>&1
  tail -n 1 "$work/tel.out" | /usr/bin/python3 -c 'import json, sys
try:
    p = json.loads(sys.stdin.read())["/droce/port"]
    print(p["tx_faulted"], p["tx_abandoned"], p["rx_faulted"])
except Exception as e:
    print("unreadable:", e)'
}
crashed=0 failed=0 contained=0 tel_bad=0 tel_moved=0
for r in $(seq 1 "$rounds"); do
  sock=$work/m$r.sock
  timeout 30 "$prog" --memif "server,socket=$sock" --ip 10.97.0.1 --sink --ms 150 \
    --seconds 20 >"$work/sink.out" 2>&1 &
  spid=$!
  wait_ready $spid "$work/sink.out" "^port_vanish: port [0-9]+ up" "$sock" ||
    { cat "$work/sink.out"; exit 1; }
  # emptied first: the background job truncates it only once it runs, and
  # the last round's "telemetry: up" must not be taken for this one's
  : >"$work/send.out"
  timeout 30 "$prog" --file-prefix "$pfx" -- --memif "client,socket=$sock" --ip 10.97.0.2 \
    --send 10.97.0.1 --seconds 20 --linger "$work/read$r" >"$work/send.out" 2>&1 &
  cpid=$!
  tel=
  if wait_ready $cpid "$work/send.out" "^telemetry: up" "" "" 30 >/dev/null && [ -n "$tool" ]; then
    tel=$(read_port)
  fi
  touch "$work/read$r"
  wait $cpid
  rc=$?
  cpid=
  wait $spid
  src=$?
  line=$(grep -h "^send:" "$work/send.out")
  echo "round $r: sender exit $rc ${line:+($line)}; $(grep -h '^sink:' "$work/sink.out")"
  case $line in *"faulted tx 0 "*"rx 0") ;; *"faulted"*) contained=$((contained + 1)) ;; esac
  if [ -n "$tool" ] && [ $rc = 0 ]; then # (a crash is counted below)
    want=$(sed -n 's/.*faulted tx \([0-9]*\) (\([0-9]*\) frames abandoned) rx \([0-9]*\).*/\1 \2 \3/p' <<<"$line")
    echo "  /droce/port: tx_faulted tx_abandoned rx_faulted ${tel:-(not read: no \"telemetry: up\")}"
    if [ "$tel" != "$want" ]; then
      tel_bad=$((tel_bad + 1))
      echo "  /droce/port does not show the sender's counters ($want); the tool said:"
      [ -z "$tel" ] || sed "s/^/    /" "$work/tel.out"
    elif [ "$tel" != "0 0 0" ]; then
      tel_moved=$((tel_moved + 1))
    fi
  fi
  if [ $rc = 139 ] || [ $rc = 135 ]; then
    crashed=$((crashed + 1))
  elif [ $rc != 0 ] || [ $src != 0 ]; then
    failed=$((failed + 1))
    grep -v '^EAL' "$work/send.out" "$work/sink.out" | tail -8
  fi
done
echo "$crashed of $rounds rounds crashed the sender, $failed failed otherwise; in $contained the port contained a fault"
[ -z "$tool" ] || echo "/droce/port showed the fault counters moved in $tel_moved rounds, wrong in $tel_bad"
[ $tel_bad = 0 ] || { echo "FAIL: /droce/port did not show the port's fault counters"; exit 1; }
[ $crashed = 0 ] || { echo "FAIL: the sender died (SIGSEGV/SIGBUS) when its memif peer vanished"; exit 1; }
[ $failed = 0 ] || { echo "FAIL: a round did not end as it should (see above)"; exit 1; }
echo "PASS: the sender survived its memif peer vanishing mid-burst $rounds times"
