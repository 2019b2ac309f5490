#!/usr/bin/env bash
# Selective repeat's frames decode in tshark without a malformed field:
# the committed fixture pcap/sr/sr-write-loss.pcap and a fresh one from the
# transport test bed (the same loss under sr and under gbn). Under sr every
# WRITE packet is a WRITE_ONLY with a RETH and one ACK carries the 40-byte
# SACK block (102-byte frame); under gbn the WRITE is FIRST/MIDDLE/LAST and
# no ACK carries anything after its AETH.
#   sr_tshark.sh TEST_TRANSPORT_SR FIXTURE
set -u
bin=$1; fixture=$2
command -v tshark >/dev/null || { echo "SKIP: no tshark"; exit 77; }
work=$(mktemp -d /tmp/droce-sr-tshark-XXXXXX)
trap 'rm -rf "$work"' EXIT
DROCE_TEST_PCAP=$work/sr DROCE_TEST_ONLY=test_sr_resends_only_the_lost \
  timeout 60 "$bin" >"$work/log" 2>&1 || { echo "FAIL: the test bed run"; cat "$work/log"; exit 1; }
rc=0
check() { # FILE MODE
  local f=$1 mode=$2 v
  v=$(tshark -n -V -r "$f" 2>&1) || { echo "FAIL: tshark on $f"; rc=1; return; }
  if grep -qiE 'malformed|Expert Info \((Error|Warning)' <<<"$v"; then
    echo "FAIL: $f: tshark reports:"; grep -iE -B3 'malformed|Expert Info' <<<"$v" | head -20; rc=1
  fi
  local only first sack acks
  only=$(tshark -n -r "$f" -Y 'infiniband.bth.opcode == 10' 2>/dev/null | wc -l)
  first=$(tshark -n -r "$f" -Y 'infiniband.bth.opcode == 6' 2>/dev/null | wc -l)
  acks=$(tshark -n -r "$f" -Y 'infiniband.bth.opcode == 17' 2>/dev/null | wc -l)
  sack=$(tshark -n -r "$f" -Y 'infiniband.bth.opcode == 17 && frame.len == 102' 2>/dev/null | wc -l)
  echo "$f ($mode): $only WRITE_ONLY, $first WRITE_FIRST, $acks ACKs, $sack with a SACK block"
  if [ "$mode" = sr ]; then
    [ "$only" -ge 17 ] && [ "$first" = 0 ] && [ "$sack" -ge 1 ] || { echo "FAIL: $f is not selective repeat's wire"; rc=1; }
  else
    [ "$only" = 0 ] && [ "$first" -ge 1 ] && [ "$sack" = 0 ] && [ "$acks" -ge 1 ] || { echo "FAIL: $f is not go-back-N's wire"; rc=1; }
  fi
}
check "$fixture" sr
check "$work/sr.0.pcap" sr
check "$work/sr.1.pcap" gbn
exit $rc
