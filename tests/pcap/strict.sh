#!/usr/bin/env bash
# The requester's policy: a NIC that sets MigReq on every
# packet, AckReq on a SEND_FIRST and real ACK credit counts (pcap/nic-hiroce*,
# as a Huawei HiRoCE card does) replays green by default, and --strict
# reports each of those fields. MigReq both ways: whichever MigReq droce
# sends (0 today, 1 once it follows the QP's path migration state as
# ConnectX does), --strict finds it differing from the MigReq=1 NIC or from
# the MigReq=0 (rxe-like) fixtures, and the default mode accepts both.
#   strict.sh DROCE_REPLAY PCAP_DIR WORKDIR
set -u
replay=$1 pcapdir=$2 work=$3
mkdir -p "$work"
fail=0
for s in nic-hiroce nic-hiroce-peer resp-send req-send; do
  if ! "$replay" "$pcapdir/$s.scn" >"$work/$s.out" 2>&1; then
    echo "FAIL: $s does not replay green by default:"; cat "$work/$s.out"; fail=1
  fi
  "$replay" --strict "$pcapdir/$s.scn" >"$work/$s.strict" 2>&1
  echo $? >"$work/$s.rc"
done
want() { # scenario, field text that --strict must report
  if [ "$(cat "$work/$1.rc")" != 1 ] || ! grep -q -- "-> .*$2" "$work/$1.strict"; then
    echo "FAIL: --strict on $1 does not report '$2' (exit $(cat "$work/$1.rc")):"; cat "$work/$1.strict"; fail=1
  else
    echo "ok   --strict on $1 reports $2"
  fi
}
want nic-hiroce 'AETH credit value'
want nic-hiroce-peer 'AckReq: expected 1, got 0'
if cat "$work/nic-hiroce.strict" "$work/nic-hiroce-peer.strict" "$work/resp-send.strict" \
     "$work/req-send.strict" | grep -q -- '-> .*MigReq: expected'; then
  echo "ok   --strict reports MigReq against a NIC that sets it differently from droce"
else
  echo "FAIL: --strict reports no MigReq difference, though the fixtures set both values"; fail=1
fi
exit $fail
