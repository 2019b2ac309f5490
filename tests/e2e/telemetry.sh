#!/usr/bin/env bash
# e2e: droce's commands on DPDK's telemetry socket, read with Debian's
# dpdk-telemetry.py while a droce-perf write_bw runs over memif: every
# command answers, and the counters move between two reads mid-run (the
# poll loop's busy share among them).
#   telemetry.sh DROCE_PERF
set -u
perf=$1
tool=$(command -v dpdk-telemetry.py) || { echo "SKIP: dpdk-telemetry.py not found (Debian package dpdk)"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
work=$(mktemp -d /tmp/droce-tel-XXXXXX)
pfx=droce-tel-$$
trap 'kill $spid $cpid 2>/dev/null; rm -rf "$work" /var/run/dpdk/$pfx-s /var/run/dpdk/$pfx-c' EXIT
port=$((20000 + $$ % 20000))
sock=$work/memif.sock
timeout 60 "$perf" --file-prefix "$pfx-s" -- write_bw --memif "server,socket=$sock" -D 12 -p "$port" \
  --timeout 10 >"$work/server.out" 2>&1 &
spid=$!
for _ in $(seq 200); do
  { [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } && break
  sleep 0.05
done
timeout 60 "$perf" --file-prefix "$pfx-c" -- write_bw --memif "client,socket=$sock" -D 12 -p "$port" \
  --timeout 10 127.0.0.1 >"$work/client.out" 2>&1 &
cpid=$!
q() { echo "$2" | timeout 10 "$py" "$tool" -f "$1" 2>&1 | tail -n 1; }
# Wait (bounded) until the client's QP runs: the first read that shows one.
ok=0
for _ in $(seq 100); do
  q "$pfx-c" /droce/qp/list >"$work/list.json"
  if grep -q '"qpns": \[[0-9]' "$work/list.json"; then ok=1; break; fi
  sleep 0.1
done
[ $ok = 1 ] || { echo "FAIL: /droce/qp/list never listed a QP: $(cat "$work/list.json")"; exit 1; }
qpn=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["/droce/qp/list"]["qpns"][0])' "$work/list.json")
q "$pfx-c" /droce/ctx >"$work/ctx1.json"
q "$pfx-c" "/droce/qp/info,$qpn" >"$work/qp1.json"
sleep 1
q "$pfx-c" /droce/ctx >"$work/ctx2.json"
q "$pfx-c" "/droce/qp/info,$qpn" >"$work/qp2.json"
q "$pfx-c" /droce/port >"$work/port.json"
q "$pfx-c" /droce/cc >"$work/cc.json"
q "$pfx-s" /droce/ctx >"$work/sctx.json"
q "$pfx-c" "/droce/qp/info,99999" >"$work/noqp.json"
"$py" - "$work" "$qpn" <<'PY'
import json, os, sys
w, qpn = sys.argv[1], int(sys.argv[2])
def j(name):
    with open(os.path.join(w, name)) as f:
        d = json.load(f)
    return list(d.values())[0]
bad = []
def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        bad.append(what)
c1, c2 = j("ctx1.json"), j("ctx2.json")
check(c1 and c1["name"] == "droce0" and c1["qps"] >= 1, "/droce/ctx names the context and its QPs")
check(c2["tx_frames"] > c1["tx_frames"] and c2["at_ns"] > c1["at_ns"],
      "/droce/ctx tx_frames moves between two reads (%d -> %d)" % (c1["tx_frames"], c2["tx_frames"]))
check(c2.get("idle_policy") == "busy" and 0 <= c2.get("busy_pct", -1) <= 100
      and c2["busy_ns"] > c1["busy_ns"],
      "/droce/ctx has the poll loop's idle policy and busy share (%s%%), its busy time moves"
      % c2.get("busy_pct"))
q1, q2 = j("qp1.json"), j("qp2.json")
check(q1["qpn"] == qpn and q1["state"] == "RTS", "/droce/qp/info,%d: that QP, in RTS" % qpn)
check(q2["tx_pkts"] > q1["tx_pkts"] and q2["psn_next"] != q1["psn_next"],
      "its tx_pkts and next PSN move (%d -> %d packets)" % (q1["tx_pkts"], q2["tx_pkts"]))
check(all(k in q2 for k in ["psn_una", "psn_expected", "retrans_pkts", "rtt_srtt_ns", "rto_ns",
                             "window_bytes", "cc", "cc_rate_mbps"]),
      "it has PSNs, retransmits, RTT, ACK timeout, window, cc and its rate")
p = j("port.json")
check(p and p["tx_frames"] > 0 and p["rx_frames"] > 0, "/droce/port counts frames both ways")
cc = j("cc.json")
check(cc and cc["qps"] >= 1 and any(isinstance(v, dict) and v.get("cc") for v in cc.values()),
      "/droce/cc has the QP's algorithm")
s = j("sctx.json")
check(s and s["rx_frames"] > 0, "the server answers on its own socket")
check(j("noqp.json") is None, "/droce/qp/info of a QPN that does not exist is an error (null)")
sys.exit(1 if bad else 0)
PY
rc=$?
wait $cpid; crc=$?
wait $spid; src=$?
spid= cpid=
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: droce-perf client exit $crc, server exit $src"; grep -v '^EAL' "$work/client.out" | tail -5; rc=1
fi
exit $rc
