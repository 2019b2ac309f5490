#!/usr/bin/env bash
# e2e: the kernel's ping, from another network namespace over a veth pair,
# answered by droce's port (af_packet PMD on the host end of the pair).
# Also checks that the port's capture decodes (tshark, when installed).
# Skips (77) when it cannot make a namespace (not root, no netns support).
# Always removes what it made; bounded by `timeout`.
set -u
responder=$1
tag=$$
ns=droce-ping-$tag
va=drpa$((tag % 100000))
vb=drpb$((tag % 100000))
net=10.$((tag % 200 + 20)).$(((tag / 200) % 250)).
ours=${net}1
theirs=${net}2
work=$(mktemp -d /tmp/droce-ping-XXXXXX)

cleanup() {
  [ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  ip link del "$va" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ] || ! ip netns add "$ns" 2>/dev/null; then
  echo "SKIP: cannot create a network namespace (needs root and netns support)"
  exit 77
fi
if ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
  echo "SKIP: cannot create a veth pair"
  exit 77
fi
ip link set "$vb" netns "$ns"
ip link set "$va" mtu 4200 up
ip netns exec "$ns" ip link set "$vb" mtu 4200 up
ip netns exec "$ns" ip addr add "$theirs/24" dev "$vb"

timeout 40 "$responder" --iface "$va" --ip "$ours" --pings 3 --seconds 30 \
  --capture "$work/port.pcap" >"$work/out" 2>&1 &
rpid=$!
# Wait until the port is up (it prints its description), at most 15 s.
for _ in $(seq 150); do
  grep -q "^port " "$work/out" 2>/dev/null && break
  kill -0 "$rpid" 2>/dev/null || break
  sleep 0.1
done
cat "$work/out"
if ! ip netns exec "$ns" timeout 20 ping -c 3 -i 0.3 -W 2 "$ours"; then
  echo "FAIL: ping $ours from namespace $ns got no answer"
  exit 1
fi
wait "$rpid"
rc=$?
rpid=
cat "$work/out"
if [ $rc != 0 ]; then
  echo "FAIL: port_responder exited $rc"
  exit 1
fi
# The neighbour entry the kernel learnt must be droce's MAC.
ip netns exec "$ns" ip neigh show "$ours" | grep -q lladdr || { echo "FAIL: no ARP entry for $ours"; exit 1; }
if command -v tshark >/dev/null; then
  n=$(tshark -r "$work/port.pcap" -Y "icmp.type == 0" 2>/dev/null | wc -l)
  if [ "$n" -lt 3 ]; then
    echo "FAIL: capture holds $n echo replies, expected 3"
    tshark -r "$work/port.pcap" 2>&1 | head -20
    exit 1
  fi
  if tshark -r "$work/port.pcap" -Y "_ws.malformed || _ws.expert.severity == error" 2>/dev/null | grep -q .; then
    echo "FAIL: capture has malformed frames"
    exit 1
  fi
  echo "capture: $n echo replies decoded by tshark"
fi
echo "PASS: ping answered by droce on $va ($ours)"
exit 0
