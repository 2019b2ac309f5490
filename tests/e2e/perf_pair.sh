#!/usr/bin/env bash
# e2e: droce-perf server and client as two processes over memif (no
# hugepages), one TEST at several sizes, each run with --check; both
# processes must exit 0. Extra droce-perf options follow the sizes.
#   perf_pair.sh DROCE_PERF TEST SIZES [droce-perf options...]
# SIZES is a comma list (1,4K,1M). Bounded by `timeout` per run.
set -u
perf=$1; test=$2; sizes=$3; shift 3
work=$(mktemp -d /tmp/droce-perf-XXXXXX)
trap 'kill $spid 2>/dev/null; rm -rf "$work"' EXIT
port=$((20000 + $$ % 20000))
rc=0
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
for size in ${sizes//,/ }; do
  iters=200
  case $size in *M) iters=20 ;; esac
  case $test in *_lat) iters=$((iters / 2)) ;; esac
  sock=$work/memif-$size.sock
  timeout 60 "$perf" "$test" --memif "server,socket=$sock" -s "$size" -n "$iters" -p "$port" \
    --check --timeout 10 "$@" >"$work/server.out" 2>&1 &
  spid=$!
  wait_sock "$sock"
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
  if ! grep -q '"check": *"ok"' "$work/client.json"; then
    echo "FAIL: $test size $size: JSON check is not ok"; cat "$work/client.json"; rc=1; continue
  fi
  # Every QP of the client (the requester) measured its RTT and reports the
  # timeout and window it uses. With --impair a QP may end with
  # no sample at all: Karn's rule takes none from a resent packet, and at
  # 1 MB with 1% loss every message of a QP can be resent (seen in 1 of 4
  # runs). The runs without --impair require a sample on every QP; the
  # sampler itself is tested in tests/unit and tests/sim.
  impaired=0
  case " $* " in *" --impair "*) impaired=1 ;; esac
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
  grep -E '^ *[0-9]+ +[0-9]+ ' "$work/client.out" | sed "s/^/$test $* : /"
  grep -E 'Counters' "$work/client.out" | sed "s/^/$test: /"
  port=$((port + 1))
done
exit $rc
