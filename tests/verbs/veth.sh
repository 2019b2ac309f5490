#!/usr/bin/env bash
# suite verbs: unmodified perftest or pingpong over droce on af_packet
# (DROCE_PORT=iface:), the two ends of a veth pair, so the kernel's own path
# carries the frames; the pair harness (pair.sh) runs and checks both ends.
# Skips (77) without root or veth.
#   veth.sh DROCE_RUN PROGRAM [ARGS...]     (the client also gets 127.0.0.1)
set -u
run=$1; prog=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v "$prog" >/dev/null || { echo "SKIP: $prog is not installed"; exit 77; }
tag=$$
va=dvva$((tag % 100000))
vb=dvvb$((tag % 100000))
out=$(mktemp /tmp/droce-vveth-XXXXXX)
trap 'ip link del "$va" 2>/dev/null; rm -f "$out"' EXIT
if [ "$(id -u)" != 0 ] || ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
  echo "SKIP: cannot create a veth pair (needs root)"
  exit 77
fi
for v in $va $vb; do
  sysctl -qw "net.ipv6.conf.$v.disable_ipv6=1" 2>/dev/null
  ip link set "$v" up
done
PAIR_PORTS="iface:$va iface:$vb" PAIR_IPS="198.18.1.1 198.18.1.2" "$here/pair.sh" "$@" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc = 0 ] || exit $rc
case $prog in ib_*)
  grep -q 'Mtu *: 1024' "$out" || { echo "FAIL: expected the af_packet MTU (1024)"; exit 1; } ;;
esac
echo "PASS: $prog over af_packet/veth"
