#!/usr/bin/env bash
# suites verbs, rdmacm: droce's CM resends an unanswered REQ as
# docs/rdmacm.md says: DROCE_CM_RETRIES more times, then a REJ (reason 4,
# timeout, IBTA 12.6.7.2) and RDMA_CM_EVENT_UNREACHABLE. Each wait is one
# period P = the CM response timeout (4.096 us x 2^DROCE_CM_RESPONSE_TIMEOUT)
# plus two packet lifetimes (1 ms each; IBTA 12.9, as the kernel's ib_cm
# arms its REQ timer).
# The server (reconnect.c vanish) stops dead when the REQ arrives; the run
# goes over af_packet on a veth pair so tcpdump sees every frame on the wire.
# What must hold, from the schedule alone:
#   - exactly 1 + DROCE_CM_RETRIES REQs, then exactly one REJ 4;
#   - each gap (REQ to REQ, last REQ to REJ) at least the response timeout
#     (IBTA: never before it; the 2 ms of packet lifetimes on top absorb the
#     moment between the timer's clock read and the frame on the wire), and
#     less than 2 P (a gap of two periods is an expiry that sent nothing).
# The capture is complete before it is counted: tcpdump runs in immediate
# mode (libpcap otherwise hands frames over a TPACKET_V3 block at a time,
# and an interrupt threw the unread block away: 1 to 4 of the 4 REQs, the
# REJ never), is stopped only once it holds the client's REJ, and must
# report no frame it took and did not write.
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
trap '[ -n "$tpid" ] && kill $tpid 2>/dev/null; ip link del "$va" 2>/dev/null; [ -n "${RESEND_KEEP:-}" ] && cp -r "$work" "$RESEND_KEEP"; rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ] || ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
  echo "SKIP: cannot create a veth pair (needs root)"; exit 77
fi
for v in $va $vb; do sysctl -qw "net.ipv6.conf.$v.disable_ipv6=1" 2>/dev/null; ip link set "$v" up; done
retries=${RESEND_RETRIES:-3} rto=14 lifetime_ms=1
cli=198.18.1.2
tcpdump -i "$va" -s 9216 -U --immediate-mode -w "$work/cm.pcap" udp port 4791 2>"$work/tcpdump.err" &
tpid=$!
for _ in $(seq 200); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.05; done
grep -q "listening on" "$work/tcpdump.err" || { echo "FAIL: tcpdump did not start"; cat "$work/tcpdump.err"; exit 1; }
PAIR_REFUSED=1 PAIR_PORTS="iface:$va iface:$vb" PAIR_IPS="198.18.1.1 $cli" \
  DROCE_CM_RESPONSE_TIMEOUT=$rto DROCE_CM_RETRIES=$retries \
  "$here/../verbs/pair.sh" "$run" --cmds "$reconnect vanish 198.18.1.1 PORT 1" \
  "rping -c -a 198.18.1.1 -p PORT -C 1" 'RDMA_CM_EVENT_UNREACHABLE, error -110' >"$work/pair.out" 2>&1
prc=$?
cat "$work/pair.out"
[ $prc = 0 ] || { echo "FAIL: the pair run failed"; exit 1; }
# the REJ is the last frame the client sends: the capture is stopped once
# it holds it (or after 10 s, and then it counts what it holds)
rej_seen() {
  tshark -n -r "$work/cm.pcap" -d udp.port==4791,infiniband \
    -Y "ip.src == $cli && infiniband.mad.attributeid == 0x0012" -T fields -e frame.number 2>/dev/null | grep -q .
}
for _ in $(seq 100); do rej_seen && break; sleep 0.1; done
kill -INT $tpid 2>/dev/null; wait $tpid 2>/dev/null; tpid=
cat "$work/tcpdump.err"
got=$(sed -n 's/^\([0-9]*\) packets\? captured.*/\1/p' "$work/tcpdump.err")
filt=$(sed -n 's/^\([0-9]*\) packets\? received by filter.*/\1/p' "$work/tcpdump.err")
[ -n "$got" ] && [ "$got" = "$filt" ] ||
  { echo "FAIL: the capture is incomplete: $got written of $filt the filter took"; exit 1; }
# the client's CM MADs in wire order: time, attribute (0x0010 REQ, 0x0012 REJ), REJ reason
tshark -n -r "$work/cm.pcap" -d udp.port==4791,infiniband -Y "ip.src == $cli && infiniband.mad" \
  -T fields -e frame.time_relative -e infiniband.mad.attributeid -e infiniband.cm.rej.reason \
  2>/dev/null >"$work/mads"
period=$(awk -v e=$rto -v l=$lifetime_ms 'BEGIN {printf "%.6f", 4.096e-6 * 2 ^ e + 2 * l / 1000}')
timeout=$(awk -v e=$rto 'BEGIN {printf "%.6f", 4.096e-6 * 2 ^ e}')
echo "the client's CM MADs (period $period s, response timeout $timeout s):"
cat "$work/mads"
awk -v n=$((retries + 1)) -v t=$timeout -v p=$period '
  $2 == "0x0010" { req++; if (rej) bad = bad "a REQ after the REJ; " }
  $2 == "0x0012" { rej++; if ($3 != "0x0004" && $3 != "4") bad = bad "REJ reason " $3 ", want 4 (timeout); " }
  $2 != "0x0010" && $2 != "0x0012" { bad = bad "MAD " $2 " (only REQs and a REJ); " }
  NR > 1 { d = $1 - prev; printf "  gap %.4f s\n", d
           if (d < t) bad = bad sprintf("gap %.4f s before the response timeout; ", d)
           if (d >= 2 * p) bad = bad sprintf("gap %.4f s of two periods or more; ", d) }
  { prev = $1 }
  END { if (req != n) bad = bad sprintf("%d REQs, want 1 + DROCE_CM_RETRIES = %d; ", req, n)
        if (rej != 1) bad = bad sprintf("%d REJs after them, want 1; ", rej)
        if (bad != "") { print "FAIL: " bad; exit 1 }
        printf "ok: %d REQs, then REJ 4, each after one period (%.4f s), then UNREACHABLE\n", req, p }' "$work/mads"
