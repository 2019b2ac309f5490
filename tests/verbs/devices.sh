#!/usr/bin/env bash
# suite verbs: ibv_devices (unmodified) lists droce0 when DROCE_PORT and
# DROCE_IP are valid, ibv_devinfo -v shows an active RoCE v2 Ethernet port
# with GID 0 = ::ffff:DROCE_IP, and no device plus one clear line when the
# variables are bad.
set -u
run=$1
command -v ibv_devices >/dev/null || { echo "SKIP: ibv_devices not installed"; exit 77; }
rc=0
out=$(env -u DROCE_PORT -u DROCE_IP "$run" --port memif:server,socket=/tmp/unused.sock \
  --ip 198.18.0.1 ibv_devices 2>&1)
echo "$out"
echo "$out" | grep -q '^ *droce0 ' || { echo "FAIL: droce0 not listed"; rc=1; }
# ibv_devinfo opens the device (EAL and a memif server port) and queries it.
if command -v ibv_devinfo >/dev/null; then
  sock=/tmp/droce-devinfo-$$.sock
  info=$(timeout 30 env -u DROCE_PORT -u DROCE_IP "$run" --port "memif:server,socket=$sock" \
    --ip 198.18.0.1 ibv_devinfo -v 2>&1)
  echo "$info" | grep -E 'hca_id|state|active_mtu|link_layer|GID'
  for want in 'hca_id:.*droce0' 'state:.*PORT_ACTIVE' 'link_layer:.*Ethernet' \
      'GID\[ *0\]:.*::ffff:198.18.0.1, RoCE v2'; do
    echo "$info" | grep -q "$want" || { echo "FAIL: ibv_devinfo -v lacks '$want'"; rc=1; }
  done
fi
check_bad() { # expected-message env...
  local want=$1; shift
  local out
  out=$(env -u DROCE_PORT -u DROCE_IP "$@" "$run" ibv_devices 2>&1)
  echo "$out"
  if echo "$out" | grep -q droce0; then echo "FAIL: droce0 listed with $*"; rc=1; fi
  if [ "$(echo "$out" | grep -c '^droce: ')" != 1 ] || ! echo "$out" | grep -q "$want"; then
    echo "FAIL: want one line 'droce: ...$want...' with $*"; rc=1
  fi
}
check_bad 'DROCE_PORT is not set' DROCE_IP=198.18.0.1
check_bad 'DROCE_IP is not set' DROCE_PORT=memif:server,socket=/tmp/x.sock
check_bad 'DROCE_PORT: want' DROCE_PORT=nonsense DROCE_IP=198.18.0.1
check_bad 'memif role' DROCE_PORT=memif:master DROCE_IP=198.18.0.1
check_bad 'not an IPv4 address' DROCE_PORT=iface:eth0 DROCE_IP=198.18.0.300
check_bad 'DROCE_LCORE' DROCE_PORT=iface:eth0 DROCE_IP=198.18.0.1 DROCE_LCORE=x
exit $rc
