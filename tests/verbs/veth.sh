#!/usr/bin/env bash
# suite verbs: unmodified perftest over droce on af_packet (DROCE_PORT=iface:),
# the two ends of a veth pair, so the kernel's own path carries the frames.
# Skips (77) without root or veth.
#   veth.sh DROCE_RUN PROGRAM [ARGS...]     (the client also gets 127.0.0.1)
set -u
run=$1; prog=$2; shift 2
command -v "$prog" >/dev/null || { echo "SKIP: $prog is not installed"; exit 77; }
tag=$$
va=dvva$((tag % 100000))
vb=dvvb$((tag % 100000))
work=$(mktemp -d /tmp/droce-vveth-XXXXXX)
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  ip link del "$va" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if [ "$(id -u)" != 0 ] || ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
  echo "SKIP: cannot create a veth pair (needs root)"
  exit 77
fi
for v in $va $vb; do
  ip link set "$v" up
  sysctl -qw "net.ipv6.conf.$v.disable_ipv6=1" 2>/dev/null
done
tcp=$((20000 + tag % 20000))
export DROCE_VERBS_STATS=1
timeout 60 "$run" --port "iface:$va" --ip 198.18.1.1 "$prog" "$@" -p "$tcp" >"$work/server.out" 2>&1 &
spid=$!
sleep 1.5
timeout 60 "$run" --port "iface:$vb" --ip 198.18.1.2 "$prog" "$@" -p "$tcp" 127.0.0.1 >"$work/client.out" 2>&1
crc=$?
wait "$spid"; src=$?; spid=
quiet() { grep -v -E '^(EAL|TELEMETRY)' "$1"; }
echo "--- client"; quiet "$work/client.out"
echo "--- server"; quiet "$work/server.out"
if [ $crc != 0 ] || [ $src != 0 ]; then echo "FAIL: client exit $crc, server exit $src"; exit 1; fi
grep -q -E '^ *[0-9]+ +[0-9]+ +[0-9.]+|iters in [0-9.]+ seconds' "$work/client.out" ||
  { echo "FAIL: no results"; exit 1; }
case $prog in ib_*)
  grep -q 'Mtu *: 1024' "$work/client.out" || { echo "FAIL: expected the af_packet MTU (1024)"; exit 1; } ;;
esac
echo "PASS: $prog over af_packet/veth"
