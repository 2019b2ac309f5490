#!/usr/bin/env bash
# suite verbs: droce's CM resends an unanswered REQ as docs/rdmacm.md says:
# DROCE_CM_RETRIES more times, each after the CM response timeout
# (4.096 us x 2^DROCE_CM_RESPONSE_TIMEOUT), then RDMA_CM_EVENT_UNREACHABLE.
# The server (reconnect.c vanish) stops dead when the REQ arrives; the run
# goes over af_packet on a veth pair so tcpdump sees every REQ on the wire.
# The count must be exact; the spacing at least the timeout (a timer never
# fires early) and at most 10 x it (generous for a loaded machine).
#   resend.sh DROCE_RUN RECONNECT
set -u
run=$1; reconnect=$2
here=$(cd "$(dirname "$0")" && pwd)
for t in tcpdump tshark rping; do
  command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
tag=$$
va=dcra$((tag % 100000)); vb=dcrb$((tag % 100000))
work=$(mktemp -d /tmp/droce-resend-XXXXXX)
tpid=
trap '[ -n "$tpid" ] && kill $tpid 2>/dev/null; ip link del "$va" 2>/dev/null; rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ] || ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
  echo "SKIP: cannot create a veth pair (needs root)"; exit 77
fi
for v in $va $vb; do sysctl -qw "net.ipv6.conf.$v.disable_ipv6=1" 2>/dev/null; ip link set "$v" up; done
retries=3 rto=14
tcpdump -i "$va" -s 9216 -U -w "$work/cm.pcap" udp port 4791 2>"$work/tcpdump.err" &
tpid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.05; done
PAIR_REFUSED=1 PAIR_PORTS="iface:$va iface:$vb" PAIR_IPS="198.18.1.1 198.18.1.2" \
  DROCE_CM_RESPONSE_TIMEOUT=$rto DROCE_CM_RETRIES=$retries \
  "$here/../verbs/pair.sh" "$run" --cmds "$reconnect vanish 198.18.1.1 PORT 1" \
  "rping -c -a 198.18.1.1 -p PORT -C 1" 'RDMA_CM_EVENT_UNREACHABLE, error -110' >"$work/pair.out" 2>&1
prc=$?
kill -INT $tpid 2>/dev/null; wait $tpid 2>/dev/null; tpid=
cat "$work/pair.out"
[ $prc = 0 ] || { echo "FAIL: the pair run failed"; exit 1; }
times=$(tshark -n -r "$work/cm.pcap" -d udp.port==4791,infiniband \
  -Y 'ip.src == 198.18.1.2 && infiniband.mad.attributeid == 0x0010' -T fields -e frame.time_relative 2>/dev/null)
n=$(echo "$times" | grep -c .)
echo "REQs from the client: $n at $(echo $times)"
rc=0
[ "$n" = $((retries + 1)) ] || { echo "FAIL: $n REQs on the wire, want 1 + DROCE_CM_RETRIES = $((retries + 1))"; rc=1; }
if ! echo "$times" | awk -v t="$(awk -v e=$rto 'BEGIN {print 4.096e-6 * 2 ^ e}')" '
    NR > 1 { d = $1 - p; printf "  gap %.3f s (timeout %.3f s)\n", d, t; if (d < t * 0.99 || d > t * 10) bad = 1 }
    { p = $1 } END { exit bad }'; then
  echo "FAIL: a REQ was resent before its timeout or long after it"; rc=1
fi
[ $rc = 0 ] && echo "ok: $n REQs, each resent after the $rto response timeout, then UNREACHABLE"
exit $rc
