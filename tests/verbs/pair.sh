#!/usr/bin/env bash
# suites verbs: an unmodified rdma-core or librdmacm program, server and
# client, as two processes over memif with droce's libibverbs.so.1 and
# librdmacm.so.1 (scripts/droce-run), no hugepages. The one pair harness
# of the drop-in tests:
#   pair.sh DROCE_RUN PROGRAM [ARGS...]
#       both ends run PROGRAM ARGS -p TCP, the client with 127.0.0.1 last;
#       the client must print results (perftest's table with at least one
#       iteration: a -D run whose window saw no completion prints a row of
#       0, pingpong's iters)
#   pair.sh DROCE_RUN --cmds "SERVER COMMAND" "CLIENT COMMAND" REGEX
#       PORT in a command is replaced by a free port; the client's output
#       must match REGEX
# The server is 198.18.0.1, the client 198.18.0.2. Each must exit 0 by
# itself, and each must have loaded droce's libibverbs.so.1 (and, when it
# loads one, droce's librdmacm.so.1), seen through LD_DEBUG=libs: rdma-core's
# own libraries find no device here, but a wrong library path must fail, not
# pass by accident. A pingpong run with -c and rping with -V check the
# received data themselves; their complaints fail the test.
# Environment (meson sets DROCE_VERBS_LIB, the library directory):
#   PAIR_COMM_CORE=1  both ends in DROCE_COMM_CORE mode (server CPU 0,
#                     client the last CPU), and each must say so
#   PAIR_REFUSED=1    the client must exit non-zero (not a hang, not a
#                     signal) with REGEX in its output while the server
#                     lives on; the server is then stopped
#   PAIR_PORTS="SERVER CLIENT"  the two ends' DROCE_PORT (veth.sh: af_packet
#                     on a veth pair) instead of a memif pair; PAIR_IPS the
#                     two addresses
#   PAIR_KEEP=DIR     a copy of the run's outputs and LD_DEBUG logs is left there
# perftest gives up on its own CPU-clock sampling on a loaded machine
# (r^2 < 0.9: "Can't produce a report" and exit 1, or "inf" figures, after
# a transfer that went well): such a pair runs again while the time budget
# (PAIR_BUDGET, 75 s) lasts, and says "RETRIED:" so that scripts/test counts
# it. Nothing else is retried: a hang (124), a crash or any other complaint
# of either side fails at once.
set -u
run=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait.sh"
lib=${DROCE_VERBS_LIB:-}
[ -n "$lib" ] && [ -e "$lib/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1 (DROCE_VERBS_LIB)"; exit 77; }
lib=$(cd "$lib" && pwd)
if [ "$1" = --cmds ]; then
  scmd=$2; ccmd=$3; want=$4; sym=0
else
  prog=$1; shift
  scmd="$prog $* -p PORT"; ccmd="$prog $* -p PORT 127.0.0.1"
  want='^ *[0-9]+ +[1-9][0-9]* +[0-9.]+|iters in [0-9.]+ seconds'; sym=1
fi
read -r -a probe <<<"$scmd"
command -v "${probe[0]}" >/dev/null ||
  { echo "SKIP: ${probe[0]} is not installed (Debian: ibverbs-utils, rdmacm-utils, perftest)"; exit 77; }
work=$(mktemp -d /tmp/droce-pair-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; [ -n "${PAIR_KEEP:-}" ] && cp -r "$work" "$PAIR_KEEP"; rm -rf "$work"' EXIT
export DROCE_VERBS_STATS=1 # the library says "droce0 open" once its port started
scomm=(); ccomm=()
if [ "${PAIR_COMM_CORE:-0}" = 1 ]; then
  scomm=(--comm-core 0); ccomm=(--comm-core $(( $(nproc) - 1 )))
fi
# The whole run fits meson's 90 s with room to report.
budget_end=$((SECONDS + ${PAIR_BUDGET:-75}))

# One server + client pair; sets crc and src (their exit codes) and ready.
run_pair() {
  local port; port=$(free_port)
  local sock=$work/memif$try.sock sport cport sip cip
  read -r sport cport <<<"${PAIR_PORTS:-memif:server,socket=$sock memif:client,socket=$sock}"
  read -r sip cip <<<"${PAIR_IPS:-198.18.0.1 198.18.0.2}"
  [ -n "${PAIR_PORTS:-}" ] && sock=
  read -r -a sargs <<<"${scmd//PORT/$port}"
  read -r -a cargs <<<"${ccmd//PORT/$port}"
  rm -f "$work"/*.ld.* "$work"/*.out
  local left=$((budget_end - SECONDS)); [ $left -lt 10 ] && left=10
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/server.ld" timeout $left "$run" "${scomm[@]}" \
    --port "$sport" --ip "$sip" "${sargs[@]}" >"$work/server.out" 2>&1 &
  spid=$!
  # The client starts once the server's port is up and, for the programs
  # with a TCP exchange (all but the rdma_cm ones), its listener is.
  local tcp=; [ $sym = 1 ] && tcp=$port
  ready=1
  wait_ready $spid "$work/server.out" '^droce: droce0 open' "$sock" "$tcp" $((left / 2)) || ready=0
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/client.ld" timeout $((budget_end - SECONDS > 10 ? budget_end - SECONDS : 10)) \
    "$run" "${ccomm[@]}" --port "$cport" --ip "$cip" "${cargs[@]}" \
    >"$work/client.out" 2>&1
  crc=$?
  # perftest -R's client whose REQ came before its server's rdma_listen
  # (no listener: REJ 8) crashes in its own retry path, and its server
  # would wait for it until the budget ends: stop that server now.
  early_rej=0
  if [ "${PAIR_REFUSED:-0}" != 1 ] && [ $crc != 0 ] && refused_before_listen; then
    early_rej=1
    kill $spid 2>/dev/null
  fi
  if [ "${PAIR_REFUSED:-0}" = 1 ]; then
    alive=0; kill -0 $spid 2>/dev/null && alive=1
    kill $spid 2>/dev/null
  fi
  wait $spid
  src=$?
  spid=
}
# perftest's clock give-up on SIDE: it sampled its CPU clock against
# gettimeofday and found the samples scattered (r^2 < 0.9): the bandwidth
# tools then exit 1 with "Can't produce a report", the latency tools print
# "inf" and exit 0. A side whose peer gave up so may say only that the
# closing exchange failed (its peer's keys could not be read, the socket
# closed). Anything else in the log is not this cause.
clock_gave_up() { # SIDE
  grep -q -E "Can't produce a report|Correlation coefficient r\^2: [0-9.]+ < 0.9" "$work/$1.out"
}
other_complaints() { # SIDE: the program's complaints other than the clock's and its consequence
  # (DPDK's start-up lines, memif's "Failed to register mp action callback"
  # among them, and the library's counters are not the program's)
  grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size|droce: )' "$work/$1.out" |
    grep -i -E 'fail|error|couldn|unable' |
    grep -v -E "Can't produce a report|ethernet_read_keys: Couldn't read remote address|Unable to read (from|to) socket/rdma_cm|Failed to (close connection|exchange data) between server and clients?"
}
# perftest -R prints its listener's banner only at exit (stdout to a file
# is buffered), so its client can start before the server listens: the REQ
# is refused with REJ 8 (invalid service ID: no listener, IBTA 12.6.7.2),
# "Event: RDMA_CM_EVENT_REJECTED; error: 8." in the client's own log.
refused_before_listen() {
  grep -q "Event: RDMA_CM_EVENT_REJECTED; error: 8\." "$work/client.out"
}
retry_cause() { # -> 0 when this pair's only failure is perftest's clock or an early REJ 8
  if [ "$early_rej" = 1 ]; then
    cause="perftest's client was refused with REJ 8 before its server listened (client exit $crc)"
    return 0
  fi
  cause="perftest could not sample its CPU clock (r^2 < 0.9: \"Can't produce a report\" or \"inf\")"
  local gave=0 s e
  for side in client:$crc server:$src; do
    s=${side%:*} e=${side#*:}
    case $e in 0|1) ;; *) return 1 ;; esac # a hang (124) or a crash is never excused
    other_complaints "$s" | grep -q . && return 1
    clock_gave_up "$s" && gave=1
    [ "$e" = 1 ] && ! clock_gave_up "$s" && ! grep -q "Couldn't read remote address" "$work/$s.out" && return 1
  done
  [ $gave = 1 ]
}
try=1
while :; do
  run_pair
  [ "${PAIR_REFUSED:-0}" = 1 ] && break
  { [ $crc = 0 ] && [ $src = 0 ] && grep -q -E "$want" "$work/client.out"; } && break
  retry_cause || break
  [ $((budget_end - SECONDS)) -ge 20 ] || break
  echo "RETRIED: ${cargs[0]}: $cause, try $((try + 1))"
  try=$((try + 1))
done
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size)|advertises MTU' "$1"; }
# loaded SIDE LIB: SIDE's processes loaded droce's LIB, and no other copy of it
loaded() {
  local inits
  inits=$(grep -h "calling init: .*/$2\$" "$work/$1".ld.* 2>/dev/null | sed 's/.*calling init: //' | sort -u)
  [ -n "$inits" ] && ! echo "$inits" | grep -v -x -F "$lib/$2" | grep -q .
}
rc=0
fail() { echo "FAIL: $*"; rc=1; }
[ $ready = 1 ] || fail "the server was never ready (see its output)"
if [ "${PAIR_REFUSED:-0}" = 1 ]; then
  if [ $crc -gt 128 ] && [ $crc -le 192 ]; then # 128 + a signal number (255 is exit(-1))
    fail "${cargs[*]}: client exit $crc: killed by signal $((crc - 128)), a crash is no refusal"
  elif [ $crc = 0 ] || [ $crc = 124 ] || ! grep -q -E "$want" "$work/client.out"; then
    fail "${cargs[*]}: client exit $crc, expected a refusal matching '$want'"
  elif [ $alive != 1 ]; then
    fail "${sargs[*]}: the server did not outlive the refused connection (exit $src)"
  fi
elif [ $crc != 0 ] || [ $src != 0 ]; then
  fail "${cargs[*]}: client exit $crc, server exit $src"
elif ! grep -q -E "$want" "$work/client.out"; then
  fail "${cargs[*]}: the client's output does not match '$want'"
fi
for side in server client; do
  loaded $side libibverbs.so.1 || fail "the $side did not load droce's libibverbs.so.1 ($lib)"
  if grep -q "calling init: .*/librdmacm.so.1\$" "$work/$side".ld.* 2>/dev/null; then
    loaded $side librdmacm.so.1 || fail "the $side loaded a librdmacm.so.1 other than droce's"
  elif [ $sym = 0 ]; then
    fail "the $side did not load droce's librdmacm.so.1"
  fi
  # the programs' own content checks (-c, -V) print and go on
  if grep -q -E 'invalid data in page|data mismatch|Received bogus data' "$work/$side.out"; then
    fail "the $side's own data check failed: $(grep -m1 -E 'invalid data|mismatch|bogus' "$work/$side.out")"
  fi
  if [ "${PAIR_COMM_CORE:-0}" = 1 ] && ! grep -q 'progress: comm core' "$work/$side.out"; then
    fail "the $side did not run in comm-core mode"
  fi
done
if [ $rc = 0 ] && [ "${PAIR_REFUSED:-0}" = 1 ]; then
  echo "ok: ${cargs[*]}: refused as expected ('$want'), the server lived on, droce's libraries loaded"
elif [ $rc = 0 ]; then
  echo "ok: ${cargs[*]}: both exited 0, '$want' in the client's output, droce's libraries loaded (try $try)"
fi
echo "--- client: ${cargs[*]}"; quiet "$work/client.out"
echo "--- server: ${sargs[*]}"; quiet "$work/server.out"
exit $rc
