#!/usr/bin/env bash
# The comparison bites: a copy of a capture with one ACK's MSN changed (its
# ICRC recomputed, so the frame is valid) must make droce-replay report a
# mismatch (exit 1) naming the MSN, while the untouched capture matches.
#   tamper.sh DROCE_REPLAY TAMPER_MSN PCAP_DIR SHARED_CORPUS WORKDIR
# Runs on the project's own fixture always, and on the rxe capture of
# ../shared/pcap-corpus when it is there (derived at test time, never copied).
set -u
replay=$1 tamper=$2 pcapdir=$3 corpus=$4 work=$5
mkdir -p "$work"
fail=0

# check NAME SCENARIO SIDE_IP: SCENARIO must match; its capture with the
# side's first ACK tampered must not.
check() {
  local name=$1 scn=$2 side=$3
  local cap orig tampered
  cap=$(sed -n 's/^capture[[:space:]]\+//p' "$scn" | head -1)
  case $cap in /*) orig=$cap ;; *) orig=$(dirname "$scn")/$cap ;; esac
  tampered=$work/$name-tampered.pcap
  if ! "$replay" "$scn" >"$work/$name-orig.txt" 2>&1; then
    echo "FAIL $name: the untouched scenario does not match (see $work/$name-orig.txt)"
    cat "$work/$name-orig.txt"
    fail=1
    return
  fi
  local frame
  if ! frame=$("$tamper" "$orig" "$tampered" "$side"); then
    echo "FAIL $name: no ACK from $side to tamper"; fail=1; return
  fi
  sed "s|^capture[[:space:]].*|capture $tampered|" "$scn" >"$work/$name-tampered.scn"
  "$replay" "$work/$name-tampered.scn" >"$work/$name-tampered.txt" 2>&1
  local rc=$?
  if [ $rc -ne 1 ]; then
    echo "FAIL $name: tampered capture (frame $frame MSN+1) gave exit $rc, want 1"
    cat "$work/$name-tampered.txt"; fail=1; return
  fi
  # The mismatch must be frame $frame's and about its MSN: the report's
  # "DIFF capture #N / droce #M: ..." line, then "-> MSN: expected" before
  # the next DIFF (any MSN complaint about another frame does not count).
  if ! awk -v want="capture #${frame} /" '
      /^ *DIFF / { here = index($0, want) > 0 }
      here && /-> MSN: expected/ { found = 1 }
      END { exit !found }' "$work/$name-tampered.txt"; then
    echo "FAIL $name: mismatch reported, but not the MSN of frame $frame"
    cat "$work/$name-tampered.txt"; fail=1; return
  fi
  echo "ok   $name: frame $frame MSN+1 caught:"
  grep -B2 "MSN: expected" "$work/$name-tampered.txt"
}

check fixture-resp-send "$pcapdir/resp-send.scn" 10.0.0.1

rxe=$corpus/rxe-write-read-ecn.pcap
if [ -r "$rxe" ]; then
  if "$replay" --derive "$rxe" --side 192.168.65.4 >"$work/rxe.scn"; then
    check rxe-write-read-ecn "$work/rxe.scn" 192.168.65.4
  else
    echo "FAIL: cannot derive a scenario from $rxe"; fail=1
  fi
else
  echo "note: $corpus absent: the rxe capture part is skipped (the fixture part ran)"
fi
exit $fail
