#!/usr/bin/env bash
# suite verbs: an unmodified librdmacm program, server and client, as two
# processes over memif through droce's libibverbs.so.1 and librdmacm.so.1
# (scripts/droce-run). Both must exit 0 by themselves, the client's output
# must match REGEX, and the client must have loaded droce's librdmacm.so.1
# (LD_DEBUG), not rdma-core's (which finds no device here anyway).
#   pair.sh DROCE_RUN "SERVER COMMAND" "CLIENT COMMAND" REGEX
# The server is 198.18.0.1, the client 198.18.0.2; PORT in a command is
# replaced by a free-ish port. PAIR_REFUSED=1: the client must instead exit
# non-zero with REGEX in its output (its connection refused) while the
# server still runs; the server is then stopped by its PID.
set -u
run=$1; scmd=$2; ccmd=$3; want=$4
port=$((20000 + $$ % 20000))
read -r -a sargs <<<"${scmd//PORT/$port}"
read -r -a cargs <<<"${ccmd//PORT/$port}"
command -v "${sargs[0]}" >/dev/null || { echo "SKIP: ${sargs[0]} is not installed (rdmacm-utils / perftest)"; exit 77; }
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/librdmacm.so.1" ] || { echo "SKIP: no droce librdmacm.so.1"; exit 77; }
work=$(mktemp -d /tmp/droce-rdmacm-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
sock=$work/memif.sock
timeout 60 "$run" --port "memif:server,socket=$sock" --ip 198.18.0.1 "${sargs[@]}" >"$work/server.out" 2>&1 &
spid=$!
for _ in $(seq 200); do
  { [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } && break
  sleep 0.05
done
sleep 0.3
LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/client.ld" timeout 60 "$run" --port "memif:client,socket=$sock" \
  --ip 198.18.0.2 "${cargs[@]}" >"$work/client.out" 2>&1
crc=$?
if [ "${PAIR_REFUSED:-0}" = 1 ]; then
  alive=0; kill -0 $spid 2>/dev/null && alive=1
  kill $spid 2>/dev/null
fi
wait $spid
src=$?
spid=
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU' "$1"; }
rc=0
if [ "${PAIR_REFUSED:-0}" = 1 ]; then
  if [ $crc = 0 ] || [ $crc = 124 ] || ! grep -q -E "$want" "$work/client.out"; then
    echo "FAIL: ${cargs[*]}: client exit $crc, expected a refusal matching '$want'"; rc=1
  elif [ $alive != 1 ]; then
    echo "FAIL: ${sargs[*]}: the server did not outlive the refused connection (exit $src)"; rc=1
  fi
elif [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: ${cargs[*]}: client exit $crc, server exit $src"; rc=1
elif ! grep -q -E "$want" "$work/client.out"; then
  echo "FAIL: ${cargs[*]}: the client's output does not match '$want'"; rc=1
elif ! grep -q "calling init: $(cd "$lib" && pwd)/librdmacm.so.1" "$work"/client.ld.*; then
  echo "FAIL: the client did not load droce's librdmacm.so.1"; rc=1
else
  echo "ok: ${cargs[*]}: both exited 0, '$want' in the client's output, droce's librdmacm.so.1 loaded"
fi
echo "--- client: ${cargs[*]}"; quiet "$work/client.out"
echo "--- server: ${sargs[*]}"; quiet "$work/server.out"
exit $rc
