#!/usr/bin/env bash
# Derive at test time a scenario for every side of every capture in
# ../shared/pcap-corpus that sends RC RoCE frames to another host
# (droce-replay --sides), then replay it: each must match. Nothing from the
# corpus is copied into the project; scenarios are written to WORKDIR only.
#   corpus.sh DROCE_REPLAY SHARED_CORPUS WORKDIR
# Exit 77 (skip) when the corpus is absent.
set -u
replay=$1 corpus=$2 work=$3
if [ ! -d "$corpus" ]; then
  echo "skip: $corpus absent (a clone without ../shared): nothing to derive from"
  exit 77
fi
mkdir -p "$work"
fail=0 n=0
for cap in "$corpus"/*.pcap "$corpus"/*.pcapng; do
  [ -e "$cap" ] || continue
  base=$(basename "$cap"); base=${base%.*}
  sides=$("$replay" --sides "$cap") || { echo "FAIL $base: --sides"; fail=1; continue; }
  [ -n "$sides" ] || { echo "note $base: no address sends RC frames to another host"; continue; }
  for side in $sides; do
    n=$((n + 1))
    scn=$work/$base-$side.scn
    if ! "$replay" --derive "$cap" --side "$side" >"$scn" 2>"$scn.err"; then
      echo "FAIL $base side $side: derive: $(cat "$scn.err")"; fail=1; continue
    fi
    if "$replay" "$scn" >"$scn.out" 2>&1; then
      echo "ok   $base side $side"
    else
      echo "FAIL $base side $side (exit $?):"; cat "$scn.out"; fail=1
    fi
  done
done
echo "$n derived scenarios"
[ $n -gt 0 ] || { echo "FAIL: no scenario derived"; fail=1; }
exit $fail
