#!/usr/bin/env bash
# e2e: droce-perf write_bw --check between the two ends of a veth pair over
# af_packet (a real kernel path), while tshark captures one end: every RoCE
# frame must decode, none malformed. Skips (77) without root/veth/tshark.
set -u
perf=$1
tag=$$
va=drva$((tag % 100000))
vb=drvb$((tag % 100000))
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-vperf-XXXXXX)
cleanup() {
  for p in ${spid:-} ${tpid:-}; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  ip link del "$va" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if [ "$(id -u)" != 0 ] || ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
  echo "SKIP: cannot create a veth pair (needs root)"
  exit 77
fi
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
for v in $va $vb; do
  ip link set "$v" up
  # the kernel keeps quiet on these ends: no IPv6 autoconf chatter
  sysctl -qw "net.ipv6.conf.$v.disable_ipv6=1" 2>/dev/null
done
tshark -i "$va" -w "$work/veth.pcapng" -q >"$work/tshark.out" 2>&1 &
tpid=$!
# tshark says "Capturing on" once its capture runs
wait_ready $tpid "$work/tshark.out" "^Capturing on" || { cat "$work/tshark.out"; exit 1; }
port=$(free_port)
timeout 60 "$perf" write_bw --iface "$va" --ip 10.66.0.1 -s 64K -n 300 -p "$port" --check \
  --timeout 10 >"$work/server.out" 2>&1 &
spid=$!
wait_ready $spid "$work/server.out" "^ Waiting for a client" "" "$port" || { cat "$work/server.out"; exit 1; }
timeout 60 "$perf" write_bw --iface "$vb" --ip 10.66.0.2 -s 64K -n 300 -p "$port" --check \
  --timeout 10 127.0.0.1 >"$work/client.out" 2>&1
crc=$?
wait "$spid"; src=$?; spid=
# tshark stops cleanly on SIGINT, writing out what it captured
kill -INT "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null; tpid=
grep -v '^EAL' "$work/client.out" | tail -6
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: client exit $crc, server exit $src"; grep -v '^EAL' "$work/server.out" | tail; exit 1
fi
total=$(tshark -r "$work/veth.pcapng" -Y infiniband 2>/dev/null | wc -l)
bad=$(tshark -r "$work/veth.pcapng" -Y 'infiniband && (_ws.malformed || _ws.expert.severity == error)' 2>/dev/null | wc -l)
echo "tshark: $total RoCE frames decoded on $va, $bad malformed"
[ "$total" -gt 0 ] || { echo "FAIL: tshark saw no RoCE frame"; exit 1; }
[ "$bad" = 0 ] || { echo "FAIL: malformed RoCE frames"; exit 1; }
echo "PASS: write_bw --check over af_packet/veth, capture clean"
