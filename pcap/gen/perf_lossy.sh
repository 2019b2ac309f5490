#!/usr/bin/env bash
# Real lossy captures from droce itself: droce-perf server
# and client over memif, both receiving through `--impair` (seeded loss and
# reordering behind the capture point), each writing `--capture`. For each
# TEST the client's capture becomes pcap/lossy/perf-TEST.pcap, with
# perf-TEST.sides naming both sides and the impairment each received
# through, and perf-TEST-client.scn / perf-TEST-server.scn derived from it
# (`droce-replay --derive ... --impair SPEC`). tests/pcap/lossy.py derives
# and replays both sides again; the scenarios replay in suite pcap. Not run
# by the tests (real time, real processes): run by hand, check, commit.
#   pcap/gen/perf_lossy.sh BUILD_DIR [OUT_DIR]
set -u
build=$1
out=${2:-$(cd "$(dirname "$0")/.." && pwd)/lossy}
perf=$build/apps/droce-perf/droce-perf
mkdir -p "$out"
work=$(mktemp -d /tmp/droce-lossy-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
port=$((21000 + $$ % 20000))
srv_imp=drop=0.02,reorder=0.01,seed=11
cli_imp=drop=0.02,reorder=0.01,seed=12
# TEST SIZE ITERS: small enough for a fixture under 100 KB at a 256-byte MTU
for spec in write_bw:2048:16 read_bw:2048:16 send_bw:1024:24 atomic_lat:8:40; do
  IFS=: read -r test size iters <<<"$spec"
  sock=$work/$test.sock
  timeout 60 "$perf" "$test" --memif "server,socket=$sock" -s "$size" -n "$iters" -m 256 -t 8 \
    -p "$port" --check --timeout 10 --impair "$srv_imp" --capture "$work/$test-srv.pcap" \
    >"$work/$test-srv.out" 2>&1 &
  spid=$!
  for _ in $(seq 200); do
    { [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } && break
    sleep 0.05
  done
  sleep 0.3
  timeout 60 "$perf" "$test" --memif "client,socket=$sock" -s "$size" -n "$iters" -m 256 -t 8 \
    -p "$port" --check --timeout 10 --impair "$cli_imp" --capture "$work/$test-cli.pcap" 127.0.0.1 \
    >"$work/$test-cli.out" 2>&1
  crc=$?
  wait $spid
  src=$?
  spid=
  port=$((port + 1))
  if [ $crc != 0 ] || [ $src != 0 ]; then
    echo "FAIL: $test: client exit $crc, server exit $src"; grep -v '^EAL' "$work/$test-cli.out"; exit 1
  fi
  cp "$work/$test-cli.pcap" "$out/perf-$test.pcap"
  {
    echo "# droce-perf $test -s $size -n $iters -m 256 -t 8 over memif, captured by the client"
    echo "# (pcap/gen/perf_lossy.sh); each side received through --impair behind its capture point"
    echo "198.18.0.2 impair=$cli_imp  # the client: its own capture"
    echo "198.18.0.1 impair=$srv_imp  # the server: seen from the client's end of the link"
  } >"$out/perf-$test.sides"
  for role in client:198.18.0.2:$cli_imp server:198.18.0.1:$srv_imp; do
    IFS=: read -r name ip imp <<<"$role"
    "$build/apps/droce-replay/droce-replay" --derive "$out/perf-$test.pcap" --side "$ip" --impair "$imp" |
      sed "s|^capture .*|capture perf-$test.pcap|" >"$out/perf-$test-$name.scn" || exit 1
  done
  echo "perf-$test: $(stat -c %s "$out/perf-$test.pcap") bytes; $(grep -h 'Counters' "$work/$test-cli.out")"
done
