#!/usr/bin/env bash
# e2e: droce's commands on DPDK's telemetry socket from the libibverbs
# drop-in, read with Debian's dpdk-telemetry.py while an unmodified
# ib_write_bw (perftest) runs over memif through scripts/droce-run, with
# DROCE_IDLE=adaptive: once with the progress thread, once in comm-core
# mode (DROCE_COMM_CORE). Mid-run, /droce/ctx of each side must name the
# idle policy and carry the poll loop's busy share, and between two reads
# its frame counters and loop time must move; at exit DROCE_VERBS_STATS
# must print the loop's busy/idle line.
# -D 20: the reads happen well before either side closes its device (a
# closed context leaves the socket: its commands then answer null).
#   verbs_telemetry.sh DROCE_RUN     (DROCE_VERBS_LIB: the library directory)
set -u
run=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
tool=$(command -v dpdk-telemetry.py) || { echo "SKIP: dpdk-telemetry.py not found (Debian package dpdk)"; exit 77; }
command -v ib_write_bw >/dev/null || { echo "SKIP: ib_write_bw not found (Debian package perftest)"; exit 77; }
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1 (DROCE_VERBS_LIB)"; exit 77; }
py=/usr/bin/python3
work=$(mktemp -d /tmp/droce-vtel-XXXXXX)
pfx=droce-vtel-$$
spid= cpid=
trap 'kill $spid $cpid 2>/dev/null; rm -rf "$work" /var/run/dpdk/$pfx-*' EXIT
export DROCE_VERBS_LIB=$lib DROCE_VERBS_STATS=1 DROCE_IDLE=adaptive
q() { echo "$2" | timeout 10 "$py" "$tool" -f "$1" 2>&1 | tail -n 1; }
rc=0
for mode in progress comm; do
  sc=() cc=()
  [ $mode = comm ] && { sc=(--comm-core 0); cc=(--comm-core $(( $(nproc) - 1 ))); }
  sock=$work/memif-$mode.sock
  port=$(free_port)
  DROCE_EAL="--file-prefix $pfx-$mode-s" timeout 60 "$run" "${sc[@]}" --port "memif:server,socket=$sock" \
    --ip 198.18.0.1 ib_write_bw -D 20 -p "$port" >"$work/server.out" 2>&1 &
  spid=$!
  if ! wait_ready $spid "$work/server.out" '^droce: droce0 open' "$sock" "$port"; then
    echo "FAIL: $mode: the server did not come up"; cat "$work/server.out"; rc=1; continue
  fi
  DROCE_EAL="--file-prefix $pfx-$mode-c" timeout 60 "$run" "${cc[@]}" --port "memif:client,socket=$sock" \
    --ip 198.18.0.2 ib_write_bw -D 20 -p "$port" 127.0.0.1 >"$work/client.out" 2>&1 &
  cpid=$!
  # Bounded wait until the client's context has a QP that sends.
  ok=0
  for _ in $(seq 100); do
    q "$pfx-$mode-c" /droce/ctx >"$work/c1.json"
    if "$py" -c 'import json,sys; d=list(json.load(open(sys.argv[1])).values())[0]; sys.exit(0 if d and d["qps"] >= 1 and d["tx_frames"] > 0 else 1)' "$work/c1.json" 2>/dev/null; then
      ok=1; break
    fi
    sleep 0.1
  done
  if [ $ok = 0 ]; then
    echo "FAIL: $mode: the client's /droce/ctx never showed a QP sending: $(cat "$work/c1.json")"; rc=1
  else
    q "$pfx-$mode-s" /droce/ctx >"$work/s1.json"
    sleep 1
    q "$pfx-$mode-c" /droce/ctx >"$work/c2.json"
    q "$pfx-$mode-s" /droce/ctx >"$work/s2.json"
    "$py" - "$work" "$mode" <<'PY' || rc=1
import json, os, sys
w, mode = sys.argv[1], sys.argv[2]
def j(n):
    with open(os.path.join(w, n)) as f:
        return list(json.load(f).values())[0]
bad = []
def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + mode + ": " + what)
    if not cond:
        bad.append(what)
for side, frames in (("c", "tx_frames"), ("s", "rx_frames")):
    a, b = j(side + "1.json"), j(side + "2.json")
    name = "client" if side == "c" else "server"
    if not a or not b:
        check(False, "%s's /droce/ctx answers (%r, %r)" % (name, a, b))
        continue
    check(b[frames] > a[frames] and b["at_ns"] > a["at_ns"],
          "%s's %s moves between two reads (%d -> %d)" % (name, frames, a[frames], b[frames]))
    check(b.get("idle_policy") == "adaptive", "%s's /droce/ctx names DROCE_IDLE (%s)" % (name, b.get("idle_policy")))
    check("busy_pct" in b and 0 <= b["busy_pct"] <= 100,
          "%s's /droce/ctx has the loop's busy share (%s%%)" % (name, b.get("busy_pct")))
    check(b["busy_ns"] + b["idle_ns"] > a["busy_ns"] + a["idle_ns"] and b["busy_ns"] > a["busy_ns"],
          "%s's loop time moves and some of it is busy" % name)
sys.exit(1 if bad else 0)
PY
  fi
  wait $cpid; crc=$?
  wait $spid; src=$?
  spid= cpid=
  if [ $crc != 0 ] || [ $src != 0 ]; then
    echo "FAIL: $mode: client exit $crc, server exit $src"
    echo "--- client"; cat "$work/client.out"; echo "--- server"; cat "$work/server.out"; rc=1; continue
  fi
  for side in client server; do
    grep -q '^droce: poll loop: idle adaptive, busy [0-9.]*%' "$work/$side.out" ||
      { echo "FAIL: $mode: $side's DROCE_VERBS_STATS has no poll loop line"; rc=1; }
  done
  grep -h '^droce: poll loop' "$work/client.out" "$work/server.out"
done
[ $rc = 0 ] && echo "ok: drop-in telemetry"
exit $rc
