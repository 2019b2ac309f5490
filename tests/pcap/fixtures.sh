#!/usr/bin/env bash
# The committed fixtures are exactly what pcap/gen/gen_fixtures.py writes:
# regenerate into WORKDIR and compare byte for byte (and no stray fixture).
#   fixtures.sh PYTHON GEN_SCRIPT PCAP_DIR WORKDIR
set -u
py=$1 gen=$2 pcapdir=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
"$py" "$gen" "$work" >/dev/null || { echo "FAIL: $gen did not run"; exit 1; }
fail=0
for f in "$work"/*; do
  b=$(basename "$f")
  cmp -s "$f" "$pcapdir/$b" || { echo "FAIL: pcap/$b differs from what the generator writes (regenerate and commit)"; fail=1; }
done
for f in "$pcapdir"/*.pcap "$pcapdir"/*.scn; do
  b=$(basename "$f")
  [ -e "$work/$b" ] || { echo "FAIL: pcap/$b is not made by the generator"; fail=1; }
  sz=$(stat -c %s "$f"); [ "$sz" -lt 102400 ] || { echo "FAIL: pcap/$b is $sz bytes (fixtures stay < 100 KB)"; fail=1; }
done
[ $fail -eq 0 ] && echo "ok: $(ls "$work" | wc -l) fixture files match the generator, each < 100 KB"
exit $fail
