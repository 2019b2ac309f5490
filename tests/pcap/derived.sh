#!/usr/bin/env bash
# Self-consistency of --derive: a scenario derived from each of the project's
# own fixtures for droce's side (the 'ip' of the scenario next to it) must
# parse and replay to a match, just as that hand-written scenario does.
#   derived.sh DROCE_REPLAY PCAP_DIR WORKDIR
set -u
replay=$1 pcapdir=$2 work=$3
mkdir -p "$work"
fail=0 n=0
for cap in "$pcapdir"/*.pcap; do
  base=$(basename "$cap" .pcap)
  n=$((n + 1))
  side=$(sed -n 's/^ip[[:space:]]\+//p' "$pcapdir/$base.scn" | head -1)
  if ! "$replay" --derive "$cap" --side "$side" >"$work/$base.scn" 2>"$work/$base.err"; then
    echo "FAIL $base: derive: $(cat "$work/$base.err")"; fail=1; continue
  fi
  if "$replay" "$work/$base.scn" >"$work/$base.out" 2>&1; then
    echo "ok   $base"
  else
    echo "FAIL $base (exit $?):"; cat "$work/$base.scn" "$work/$base.out"; fail=1
  fi
done
[ $n -gt 0 ] || { echo "FAIL: no fixtures in $pcapdir"; fail=1; }

# -w writes the replayed conversation: readable, both sides in it, and
# itself a capture a scenario can be derived from and replayed against.
if "$replay" -w "$work/conv.pcap" "$pcapdir/req-read.scn" >/dev/null &&
   [ "$("$replay" --sides "$work/conv.pcap" | wc -l)" -eq 2 ] &&
   "$replay" --derive "$work/conv.pcap" --side 10.0.0.1 >"$work/conv.scn" &&
   "$replay" "$work/conv.scn" >/dev/null; then
  echo "ok   -w conversation of req-read derives and replays"
else
  echo "FAIL: -w conversation of req-read"; fail=1
fi
exit $fail
