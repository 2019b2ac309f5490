#!/usr/bin/env bash
# e2e: droce-perf --cm over memif: the QPs are connected by droce's CM over
# QP1 (REQ/REP/RTU as UD SENDs to QP 1), not by the side channel's INFO
# exchange.
#  1. write_bw -q 4 with --check and a capture on the client: both sides say
#     they connected through the CM; in the capture (tshark's CM dissector)
#     4 REQs for service ID port -p, 4 REPs, 4 RTUs, no MAD malformed, and
#     the client's data frames go to exactly the QPNs the REPs named.
#  2. --transport sr on the client only, through drops and reordering,
#     every byte checked: the CM agrees on selective repeat (the REQ's offer,
#     the REP's answer), so both sides say they came up in sr, and both show
#     SACK traffic (the server sends SACKs, the client takes them).
#  3. A server that cannot carry the client's path MTU rejects its REQ
#     (REJ 28 with a reason the client prints); both exit non-zero in bounded
#     time.
#   perf_cm.sh DROCE_PERF
set -u
perf=$1
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
work=$(mktemp -d /tmp/droce-perf-cm-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
port=$(free_port)
# run NAME SERVER_OPTS -- CLIENT_OPTS: sets crc/src
run() {
  local name=$1; shift
  local sopts=() copts=()
  while [ "$1" != -- ]; do sopts+=("$1"); shift; done; shift
  copts=("$@")
  local sock=$work/$name.sock
  timeout 60 "$perf" write_bw --memif "server,socket=$sock" -p "$port" --timeout 10 --cm \
    "${sopts[@]}" >"$work/$name.server" 2>&1 &
  spid=$!
  wait_ready $spid "$work/$name.server" "^ Waiting for a client" "$sock" "$port" || cat "$work/$name.server"
  timeout 60 "$perf" write_bw --memif "client,socket=$sock" -p "$port" --timeout 10 --cm \
    "${copts[@]}" 127.0.0.1 >"$work/$name.client" 2>&1
  crc=$?
  wait $spid; src=$?; spid=
  port=$(free_port)
}
show() { echo "--- client"; grep -v '^EAL' "$work/$1.client"; echo "--- server"; grep -v '^EAL' "$work/$1.server"; }
rc=0

cmport=$port
run ok -s 4K -n 200 -q 4 --check -- -s 4K -n 200 -q 4 --check --capture "$work/client.pcap"
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: write_bw -q 4 --cm: client exit $crc, server exit $src"; show ok; exit 1
fi
grep -q 'Connected through the CM (QP1): 4 QP(s)' "$work/ok.client" &&
  grep -q 'Connected through the CM (QP1): 4 QP(s)' "$work/ok.server" &&
  grep -q 'Check: ok' "$work/ok.client" ||
  { echo "FAIL: --cm run did not connect through the CM or failed its check"; show ok; exit 1; }
grep -E '^ *[0-9]+ +[0-9]+ ' "$work/ok.client" | sed 's/^/write_bw -q 4 --cm: /'
tsh() { tshark -r "$work/client.pcap" -d udp.port==4791,infiniband "$@" 2>/dev/null; }
attrs=$(tsh -Y 'infiniband.bth.destqp == 1' -T fields -e infiniband.mad.attributeid | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
echo "CM MADs in the capture: $attrs"
[ "$attrs" = "0x0010x4 0x0013x4 0x0014x4 " ] || { echo "FAIL: expected 4 REQ, 4 REP, 4 RTU"; rc=1; }
sids=$(tsh -Y 'infiniband.cm.req.serviceid' -T fields -e infiniband.cm.req.serviceid.dport | sort -u)
[ -n "$sids" ] && [ "$((sids))" = "$cmport" ] || { echo "FAIL: REQ service ID ports '$sids', want $cmport"; rc=1; }
bad=$(tsh -Y 'infiniband && (_ws.malformed || _ws.expert.severity == error)' | wc -l)
[ "$bad" = 0 ] || { echo "FAIL: $bad malformed frames"; rc=1; }
repqpns=$(tsh -Y 'infiniband.cm.rep.localqpn' -T fields -e infiniband.cm.rep.localqpn | sort -u | tr '\n' ' ')
# RDMA WRITE FIRST .. ONLY_WITH_IMMEDIATE (opcodes 6..11) from the client
dataqpns=$(tsh -Y 'ip.src == 198.18.0.2 && infiniband.bth.opcode >= 6 && infiniband.bth.opcode <= 11' \
  -T fields -e infiniband.bth.destqp | sort -u | tr '\n' ' ')
echo "REP QPNs: $repqpns; the client's WRITEs went to: $dataqpns"
[ -n "$repqpns" ] && [ "$repqpns" = "$dataqpns" ] || { echo "FAIL: data QPNs are not the REPs'"; rc=1; }

imp=(--impair drop=0.01,reorder=0.05,seed=7)
run sr -s 64K -n 200 -q 2 --check "${imp[@]}" -- -s 64K -n 200 -q 2 --check --transport sr "${imp[@]}"
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: --transport sr on the client only: client exit $crc, server exit $src"; show sr; rc=1
else
  for side in client server; do
    grep -q 'Connected through the CM (QP1): 2 QP(s), port [0-9]*, transport sr x2$' "$work/sr.$side" ||
      { echo "FAIL: the $side did not come up in sr on both QPs"; show sr; rc=1; }
  done
  grep -q 'Check: ok' "$work/sr.client" || { echo "FAIL: sr run failed its check"; show sr; rc=1; }
  # SACKs sent by the server's responder, received by the client's requester
  sacks() { sed -n 's/.*SACKs sent\/rcvd \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$work/sr.$1" | tail -1; }
  read -r ssent _ < <(sacks server)
  read -r _ crcvd < <(sacks client)
  echo "sr on the client only: server SACKs sent ${ssent:-none}, client SACKs received ${crcvd:-none}"
  [ "${ssent:-0}" -gt 0 ] && [ "${crcvd:-0}" -gt 0 ] || { echo "FAIL: no SACKs both ways"; show sr; rc=1; }
fi

run mtu -m 1024 -- -m 4096
if [ $crc = 0 ] || [ $src = 0 ]; then
  echo "FAIL: an MTU the server cannot carry: client exit $crc, server exit $src (both must fail)"; show mtu; rc=1
elif ! grep -q 'REJECTED (reason 28: path MTU above the server' "$work/mtu.client"; then
  echo "FAIL: the client does not say the server rejected it"; show mtu; rc=1
else
  echo "MTU 4096 to a 1024 server: rejected, both exited $crc/$src"
fi
exit $rc
