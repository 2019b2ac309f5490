#!/usr/bin/env bash
# e2e: droce-perf server and client as two processes over memif (no
# hugepages), one TEST at several sizes, each run with --check; both
# processes must exit 0. Extra droce-perf options follow the sizes.
#   perf_pair.sh DROCE_PERF TEST SIZES [droce-perf options...]
# SIZES is a comma list (1,4K,1M). Bounded by `timeout` per run.
# With --impair, the run must also show that the impairment and the
# recovery took place (both sides' --json, summed over the sizes): frames
# dropped and reordered by the shim, and packets retransmitted. A clean
# finish with --check after that means the losses were repaired.
set -u
perf=$1; test=$2; sizes=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-perf-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
impaired=0
case " $* " in *" --impair "*) impaired=1 ;; esac
sr=0
case " $* " in *" --transport sr"*) sr=1 ;; esac
rc=0
for size in ${sizes//,/ }; do
  iters=200
  case $size in *M) iters=20 ;; esac
  case $test in *_lat) iters=$((iters / 2)) ;; esac
  # one 8-byte atomic per round trip: enough of them that 1% loss is
  # certain to hit some (about 20 of 2000 frames)
  [ $impaired = 1 ] && [ "$test" = atomic_lat ] && iters=1000
  sock=$work/memif-$size.sock
  port=$(free_port)
  rm -f "$work/client.json" "$work/server.json"
  timeout 60 "$perf" "$test" --memif "server,socket=$sock" -s "$size" -n "$iters" -p "$port" \
    --check --timeout 10 --json "$work/server.json" "$@" >"$work/server.out" 2>&1 &
  spid=$!
  # The client starts once the server's port is up and its side channel
  # listens ("Waiting for a client" is printed after both).
  if ! wait_ready $spid "$work/server.out" '^ Waiting for a client' "$sock" "$port"; then
    echo "FAIL: $test size $size: the server did not come up"; grep -v '^EAL' "$work/server.out"
    rc=1; continue
  fi
  timeout 60 "$perf" "$test" --memif "client,socket=$sock" -s "$size" -n "$iters" -p "$port" \
    --check --timeout 10 --json "$work/client.json" "$@" 127.0.0.1 >"$work/client.out" 2>&1
  crc=$?
  wait $spid
  src=$?
  spid=
  if [ $crc != 0 ] || [ $src != 0 ]; then
    echo "FAIL: $test size $size $*: client exit $crc, server exit $src"
    echo "--- client"; grep -v '^EAL' "$work/client.out"
    echo "--- server"; grep -v '^EAL' "$work/server.out"
    rc=1
    continue
  fi
  if ! grep -q '"check": *"ok"' "$work/client.json" || ! grep -q '"check": *"ok"' "$work/server.json"; then
    echo "FAIL: $test size $size: JSON check is not ok"; cat "$work/client.json" "$work/server.json"; rc=1; continue
  fi
  # Every QP of the client (the requester) measured its RTT and reports the
  # timeout and window it uses. With --impair a QP may end with
  # no sample at all: Karn's rule takes none from a resent packet, and at
  # 1 MB with 1% loss every message of a QP can be resent (seen in 1 of 4
  # runs). The runs without --impair require a sample on every QP; the
  # sampler itself is tested in tests/unit and tests/sim.
  if ! /usr/bin/python3 - "$work/client.json" "$impaired" <<'PY'
import json, sys
qps = json.load(open(sys.argv[1]))["qps"]
impaired = sys.argv[2] == "1"
def sane(q):
    return q["timeout_us"] > 0 and q["window_pkts"] > 0 and (
        q["rtt_samples"] == 0 or 0 < q["rtt_min_us"] <= q["rtt_srtt_us"] + q["rtt_var_us"] * 4)
sampled = [q["rtt_samples"] > 0 for q in qps]
ok = qps and all(sane(q) for q in qps) and (impaired or all(sampled))
sys.exit(0 if ok else 1)
PY
  then
    echo "FAIL: $test size $size: per-QP RTT/timeout/window missing"; cat "$work/client.json"; rc=1; continue
  fi
  # this size's impairment and retransmissions, both sides, for the sum below
  /usr/bin/python3 - "$work/client.json" "$work/server.json" >>"$work/impair.txt" <<'PY'
import json, sys
t = [0, 0, 0, 0, 0, 0]
for path in sys.argv[1:]:
    c = json.load(open(path))["counters"]
    i = c.get("impair", {})
    t[0] += i.get("frames", 0); t[1] += i.get("dropped", 0); t[2] += i.get("reordered", 0)
    t[3] += c["retransmits"]["packets"]
    s = c.get("selective_repeat", {})
    t[4] += s.get("placed_out_of_order", 0); t[5] += s.get("sacks_received", 0)
print(*t)
PY
  grep -E '^ *[0-9]+ +[0-9]+ ' "$work/client.out" | sed "s/^/$test $* : /"
  grep -E 'Counters|Impair|Selective|Paths' "$work/client.out" "$work/server.out" | sed "s|^$work/|$test: |"
done
if [ $rc = 0 ] && [ $impaired = 1 ]; then
  read -r frames dropped reordered retrans placed sacks < <(awk '{for (i = 1; i <= 6; i++) t[i] += $i}
    END {print t[1] + 0, t[2] + 0, t[3] + 0, t[4] + 0, t[5] + 0, t[6] + 0}' "$work/impair.txt")
  echo "impairment over all sizes, both sides: $frames frames, $dropped dropped, $reordered reordered; $retrans packets retransmitted"
  if [ "$frames" = 0 ] || [ "$dropped" = 0 ] || [ "$reordered" = 0 ]; then
    echo "FAIL: $test $*: the impairment shim dropped or reordered nothing: the loss test tested no loss"; rc=1
  elif [ "$retrans" = 0 ]; then
    echo "FAIL: $test $*: $dropped frames dropped and nothing retransmitted: no recovery took place"; rc=1
  elif [ $sr = 1 ]; then
    # selective repeat: the requester took SACKs; a WRITE or SEND stream
    # (the client requests) was placed out of order at the server
    echo "selective repeat: $placed packets placed out of order, $sacks SACKs received"
    if [ "$sacks" = 0 ]; then
      echo "FAIL: $test $*: no SACK received: selective repeat did not run"; rc=1
    elif [ "$test" = write_bw ] && [ "$placed" = 0 ]; then
      echo "FAIL: $test $*: nothing placed out of order"; rc=1
    fi
  fi
fi
exit $rc
