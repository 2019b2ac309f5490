#!/usr/bin/env bash
# e2e: two droce ports over memif (two processes, no hugepages needed):
# the client resolves the server by ARP and sends 4000-byte echo requests
# (jumbo frames, data attached zero-copy); the server answers. The client's
# capture must hold 3 echo replies with good ICMP checksums (tshark, when
# installed). Bounded by `timeout`; removes its socket and files.
set -u
responder=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-memif-XXXXXX)
sock=$work/memif.sock
cleanup() {
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

timeout 40 "$responder" --memif "server,socket=$sock" --ip 10.99.0.1 --pings 3 --seconds 30 \
  >"$work/server.out" 2>&1 &
spid=$!
wait_ready $spid "$work/server.out" "^port [0-9]+ driver" "$sock" || { cat "$work/server.out"; exit 1; }
timeout 40 "$responder" --memif "client,socket=$sock" --ip 10.99.0.2 --ping 10.99.0.1 \
  --pings 3 --size 4000 --seconds 30 --capture "$work/client.pcap" >"$work/client.out" 2>&1
crc=$?
wait "$spid"
src=$?
spid=
echo "--- server"; cat "$work/server.out"
echo "--- client"; cat "$work/client.out"
[ $crc = 0 ] || { echo "FAIL: client exited $crc"; exit 1; }
[ $src = 0 ] || { echo "FAIL: server exited $src"; exit 1; }
grep -q "roce_mtu 4096" "$work/client.out" || { echo "FAIL: memif port not carrying 4 KB RoCE MTU"; exit 1; }
grep -q "(3 zero-copy, 3/3 buffers released)" "$work/client.out" || {
  echo "FAIL: the 3 requests were not sent zero-copy, or their buffers not all released"; exit 1; }
if command -v tshark >/dev/null; then
  good=$(tshark -r "$work/client.pcap" -Y 'icmp.type == 0 && icmp.checksum.status == 1 && frame.len == 4042' 2>/dev/null | wc -l)
  [ "$good" = 3 ] || { echo "FAIL: capture holds $good good 4042-byte echo replies, expected 3";
    tshark -r "$work/client.pcap" -V -Y icmp 2>/dev/null | grep -i checksum | head; exit 1; }
  echo "capture: 3 echo replies of 4042 bytes with good checksums"
fi
echo "PASS: memif ping with 4000-byte data, zero-copy TX"
