#!/usr/bin/env bash
# pcap/sr/sr-write-loss.pcap: the wire of selective repeat between two droce
# QPs (docs/wire.md, "Selective repeat"), made by the transport test bed: a
# 16-packet RDMA WRITE as WRITE_ONLY packets with their own RETH, the 6th
# lost, the ACK with droce's SACK block behind its AETH, the one packet
# resent, the cumulative ACK. Addresses in the RETHs are the test process's.
#   pcap/gen/gen_sr.sh BUILD_DIR [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}; out=${2:-$here/pcap/sr/sr-write-loss.pcap}
work=$(mktemp -d /tmp/droce-sr-gen-XXXXXX)
trap 'rm -rf "$work"' EXIT
DROCE_TEST_PCAP=$work/sr DROCE_TEST_ONLY=test_sr_resends_only_the_lost \
  timeout 60 "$build/tests/unit/transport/test_transport_sr" >"$work/log" 2>&1 ||
  { cat "$work/log"; exit 1; }
cp "$work/sr.0.pcap" "$out"   # the sr run; sr.1.pcap is the same loss under gbn
