#!/usr/bin/env bash
# suite middleware: a server and a client of a middleware case as two
# processes over memif through droce's libibverbs.so.1 / librdmacm.so.1
# (scripts/droce-run; nothing else changed or preloaded). Passes when both
# exit 0 by themselves, the client's output matches REGEX, the client loaded
# droce's library (LD_DEBUG), and droce's own counters on BOTH sides
# (DROCE_VERBS_STATS: the context's frames, printed at the last close of the
# device or when librdmacm goes) show at least MIN_FRAMES frames received
# and sent: the traffic crossed droce, not shared memory or TCP.
#   pair.sh DROCE_RUN MIN_FRAMES "SERVER COMMAND" "CLIENT COMMAND" REGEX
# The server is 198.18.0.1, the client 198.18.0.2; PORT in a command is
# replaced by a port of this run. Environment:
#   MW_NETNS=1        both run in a network namespace of their own whose (veth)
#                     interface holds both addresses: libfabric's verbs provider
#                     (and Open MPI's address selection) find an RDMA device by
#                     a kernel interface's address (docs/rdmacm.md)
#   MW_CLIENT_FIRST=1 the client starts first and its memif port waits for the
#                     server (DROCE_PORT_WAIT), as ranks of one job start
#   MW_LIB=NAME       the library the client must load (libibverbs.so.1)
#   MW_NEED=PROGRAM   skip (77) when PROGRAM is not installed
#   MW_SERVER_WANT=RE the server's output must match RE too
#   MW_RUN_ARGS=ARGS  options for scripts/droce-run before --port (--sysfs:
#                     UCX finds RDMA devices only through /dev/infiniband and
#                     sysfs); skip (77) when droce-run does not know them
set -u
run=$1; min=$2; scmd=$3; ccmd=$4; want=$5
port=$((20000 + $$ % 20000))
read -r -a sargs <<<"${scmd//PORT/$port}"
read -r -a cargs <<<"${ccmd//PORT/$port}"
need=${MW_NEED:-${cargs[0]}}
command -v "$need" >/dev/null || { echo "SKIP: $need is not installed (scripts/setup)"; exit 77; }
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1"; exit 77; }
want_lib=${MW_LIB:-libibverbs.so.1}
read -r -a run_args <<<"${MW_RUN_ARGS:-}"
for a in "${run_args[@]}"; do
  "$run" --help 2>/dev/null | grep -q -- "^ *$a\b" ||
    { echo "SKIP: scripts/droce-run has no $a (needed here)"; exit 77; }
done
work=$(mktemp -d /tmp/droce-mw-XXXXXX)
ns=
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
in_ns=()
if [ "${MW_NETNS:-0}" = 1 ]; then
  ns=droce-mw-$$-$RANDOM
  if ! ip netns add "$ns" 2>/dev/null; then
    ns=; echo "SKIP: cannot make a network namespace (root needed)"; exit 77
  fi
  ip -n "$ns" link set lo up
  # a veth pair (this kernel has no dummy driver): only its addresses matter
  ip -n "$ns" link add mw0 type veth peer name mw1 &&
    ip -n "$ns" addr add 198.18.0.1/24 dev mw0 &&
    ip -n "$ns" addr add 198.18.0.2/24 dev mw0 &&
    ip -n "$ns" link set mw1 up && ip -n "$ns" link set mw0 up ||
    { echo "FAIL: cannot give the namespace an interface with both addresses"; exit 1; }
  in_ns=(ip netns exec "$ns")
fi
sock=$work/memif.sock
export DROCE_VERBS_STATS=1
start_server() {
  "${in_ns[@]}" timeout 120 "$run" "${run_args[@]}" --port "memif:server,socket=$sock" --ip 198.18.0.1 \
    "${sargs[@]}" >"$work/server.out" 2>&1 &
  spid=$!
}
start_client() {
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/client.ld" "${in_ns[@]}" timeout 120 "$run" \
    "${run_args[@]}" --port "memif:client,socket=$sock" --ip 198.18.0.2 "${cargs[@]}" >"$work/client.out" 2>&1
}
if [ "${MW_CLIENT_FIRST:-0}" = 1 ]; then
  start_client & cpid=$!
  sleep 1
  start_server
  wait $cpid; crc=$?
else
  start_server
  # the server's socket, then a moment for its listener (the client's
  # memif port waits for the socket by itself, DROCE_PORT_WAIT)
  for _ in $(seq 200); do
    grep -q "@$sock\$" /proc/net/unix 2>/dev/null && break
    [ -S "$sock" ] && break
    sleep 0.05
  done
  sleep 0.5
  start_client; crc=$?
fi
wait $spid; src=$?
spid=
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU|^droce: QP 0x' "$1"; }
# the most frames either kind of line reports (rx then tx)
frames() {
  grep -E -o '(context: rx|context rx) [0-9]+, tx [0-9]+ frames' "$1" |
    awk '{rx = $3 + 0; tx = $5 + 0; if (rx > r) r = rx; if (tx > t) t = tx} END {print r + 0, t + 0}'
}
read -r srx stx <<<"$(frames "$work/server.out")"
read -r crx ctx <<<"$(frames "$work/client.out")"
rc=0
if [ $crc != 0 ] || [ $src != 0 ]; then
  echo "FAIL: ${cargs[*]}: client exit $crc, server exit $src"; rc=1
elif ! grep -q -E "$want" "$work/client.out"; then
  echo "FAIL: ${cargs[*]}: the client's output does not match '$want'"; rc=1
elif [ -n "${MW_SERVER_WANT:-}" ] && ! grep -q -E "$MW_SERVER_WANT" "$work/server.out"; then
  echo "FAIL: ${sargs[*]}: the server's output does not match '$MW_SERVER_WANT'"; rc=1
elif ! grep -q "calling init: $(cd "$lib" && pwd)/$want_lib" "$work"/client.ld.*; then
  echo "FAIL: the client did not load droce's $want_lib"; rc=1
elif [ "$srx" -lt "$min" ] || [ "$stx" -lt "$min" ] || [ "$crx" -lt "$min" ] || [ "$ctx" -lt "$min" ]; then
  echo "FAIL: droce's counters: server rx $srx tx $stx, client rx $crx tx $ctx frames; want >= $min each"; rc=1
else
  echo "ok: ${cargs[*]}: both exited 0, '$want' in the client's output, droce's $want_lib loaded;"
  echo "    droce carried server rx $srx tx $stx, client rx $crx tx $ctx frames (>= $min)"
fi
echo "--- client: ${cargs[*]}"; quiet "$work/client.out" | tail -40
echo "--- server: ${sargs[*]}"; quiet "$work/server.out" | tail -40
exit $rc
