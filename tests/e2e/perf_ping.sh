#!/usr/bin/env bash
# e2e: a droce-perf server that waits for its client on the
# side channel still answers ARP and ICMP echo on its port: the kernel's ping,
# from another network namespace over a veth pair (af_packet on the host end),
# gets every reply. The server is stopped by PID afterwards (it never gets a
# client). Skips (77) without root or netns support.
set -u
perf=$1
tag=$$
ns=droce-pping-$tag
va=drqa$((tag % 100000))
vb=drqb$((tag % 100000))
net=10.$((tag % 200 + 20)).$(((tag / 200) % 250)).
ours=${net}1
theirs=${net}2
work=$(mktemp -d /tmp/droce-pping-XXXXXX)
cleanup() {
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  ip link del "$va" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if [ "$(id -u)" != 0 ] || ! ip netns add "$ns" 2>/dev/null; then
  echo "SKIP: cannot create a network namespace (needs root and netns support)"
  exit 77
fi
ip link add "$va" type veth peer name "$vb" 2>/dev/null || { echo "SKIP: cannot create a veth pair"; exit 77; }
ip link set "$vb" netns "$ns"
sysctl -qw "net.ipv6.conf.$va.disable_ipv6=1" 2>/dev/null
ip link set "$va" up
ip netns exec "$ns" ip link set "$vb" up
ip netns exec "$ns" ip addr add "$theirs/24" dev "$vb"

port=$((30000 + tag % 20000))
# --timeout 10: the server waits 60 s for a client, far longer than the pings take.
timeout 90 "$perf" write_bw --iface "$va" --ip "$ours" -p "$port" --timeout 10 >"$work/server.out" 2>&1 &
spid=$!
for _ in $(seq 200); do
  grep -q "Waiting for a client" "$work/server.out" 2>/dev/null && break
  kill -0 "$spid" 2>/dev/null || break
  sleep 0.1
done
grep -q "Waiting for a client" "$work/server.out" || { cat "$work/server.out"; echo "FAIL: server did not start"; exit 1; }
sleep 0.5
ip netns exec "$ns" timeout 20 ping -c 3 -i 0.3 -W 2 "$ours" >"$work/ping.out" 2>&1
cat "$work/ping.out"
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$work/ping.out")
kill -0 "$spid" 2>/dev/null || { cat "$work/server.out"; echo "FAIL: the server exited while waiting"; exit 1; }
if [ "${got:-0}" != 3 ]; then
  echo "FAIL: a waiting droce-perf server answered ${got:-0}/3 pings"
  exit 1
fi
ip netns exec "$ns" ip neigh show "$ours" | grep -q lladdr || { echo "FAIL: no ARP entry for $ours"; exit 1; }
echo "PASS: a droce-perf server waiting for its client answers ARP and ping on $va"
exit 0
