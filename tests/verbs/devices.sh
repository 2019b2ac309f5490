#!/usr/bin/env bash
# suite verbs: ibv_devices (unmodified) lists droce0 when DROCE_PORT and
# DROCE_IP are valid, ibv_devinfo -v shows an active RoCE v2 Ethernet port
# with GID 0 = ::ffff:DROCE_IP, and no device plus one clear line when the
# variables are bad. Each program must have loaded droce's libibverbs.so.1
# (LD_DEBUG=libs), and ibv_devices, which only lists, never starts DPDK
# (docs/verbs.md): its run binds no rte_eal_init (LD_DEBUG=bindings; the
# library binds lazily, so a symbol is bound only when it is first called).
# ibv_devinfo -v reports the limits docs/verbs.md lists for
# ibv_query_device, and max_sge 4 in comm-core mode.
set -u
run=$1
command -v ibv_devices >/dev/null || { echo "SKIP: ibv_devices not installed"; exit 77; }
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1 (DROCE_VERBS_LIB)"; exit 77; }
lib=$(cd "$lib" && pwd)
work=$(mktemp -d /tmp/droce-devices-XXXXXX)
trap 'rm -rf "$work"' EXIT
rc=0
# ldcheck NAME: the run whose LD_DEBUG output is $work/NAME.* loaded droce's library
ldcheck() {
  grep -q "calling init: $lib/libibverbs.so.1\$" "$work/$1".* 2>/dev/null ||
    { echo "FAIL: $1 did not load droce's libibverbs.so.1 ($lib)"; rc=1; }
}
out=$(env -u DROCE_PORT -u DROCE_IP LD_DEBUG=libs,bindings LD_DEBUG_OUTPUT="$work/devices" \
  "$run" --port "memif:server,socket=$work/unused.sock" --ip 198.18.0.1 ibv_devices 2>&1)
echo "$out"
echo "$out" | grep -q '^ *droce0 ' || { echo "FAIL: droce0 not listed"; rc=1; }
ldcheck devices
if readelf -d "$lib/libibverbs.so.1" | grep -q -E 'BIND_NOW|FLAGS.*NOW'; then
  echo "note: $lib/libibverbs.so.1 binds at load (BIND_NOW): the DPDK check needs lazy binding, not run"
elif grep -q "symbol \`rte_eal_init'" "$work"/devices.*; then
  echo "FAIL: ibv_devices started DPDK (rte_eal_init was bound)"; rc=1
else
  echo "ok: ibv_devices listed droce0 without starting DPDK"
fi
# ibv_devinfo opens the device (EAL and a memif server port) and queries it.
if command -v ibv_devinfo >/dev/null; then
  info=$(timeout 30 env -u DROCE_PORT -u DROCE_IP LD_DEBUG=libs,bindings LD_DEBUG_OUTPUT="$work/devinfo" \
    "$run" --port "memif:server,socket=$work/devinfo.sock" --ip 198.18.0.1 ibv_devinfo -v 2>&1)
  echo "$info" | grep -E 'hca_id|state|active_mtu|link_layer|GID|max_(qp|qp_wr|sge|cqe|mr|qp_rd_atom):|atomic_cap'
  # the limits of docs/verbs.md's ibv_query_device row
  for want in 'hca_id:.*droce0' 'state:.*PORT_ACTIVE' 'link_layer:.*Ethernet' \
      'GID\[ *0\]:.*::ffff:198.18.0.1, RoCE v2' 'max_qp:[[:space:]]*16384$' \
      'max_qp_wr:[[:space:]]*65536$' 'max_sge:[[:space:]]*8$' 'max_cqe:[[:space:]]*16777216$' \
      'max_mr:[[:space:]]*4096$' 'max_qp_rd_atom:[[:space:]]*16$' 'atomic_cap:[[:space:]]*ATOMIC_HCA'; do
    echo "$info" | grep -q "$want" || { echo "FAIL: ibv_devinfo -v lacks '$want'"; rc=1; }
  done
  ldcheck devinfo
  # the same check sees a run that does start DPDK: ibv_devinfo opens the device
  grep -q "symbol \`rte_eal_init'" "$work"/devinfo.* ||
    readelf -d "$lib/libibverbs.so.1" | grep -q -E 'BIND_NOW|FLAGS.*NOW' ||
    { echo "FAIL: ibv_devinfo opened droce0 but no rte_eal_init binding was seen: the DPDK check is blind"; rc=1; }
  # comm-core mode: 4 SGEs per WR (docs/verbs.md)
  info=$(timeout 30 env -u DROCE_PORT -u DROCE_IP "$run" --comm-core 0 \
    --port "memif:server,socket=$work/devinfo-comm.sock" --ip 198.18.0.1 ibv_devinfo -v 2>&1)
  echo "$info" | grep -q 'max_sge:[[:space:]]*4$' ||
    { echo "FAIL: comm-core mode: ibv_devinfo -v lacks max_sge 4"; echo "$info" | grep max_sge; rc=1; }
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
