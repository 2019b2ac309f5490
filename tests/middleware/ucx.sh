#!/usr/bin/env bash
# suite middleware: UCX 1.13 (Debian's ucx-utils) unmodified over droce0,
# through scripts/droce-run --sysfs only (UCX finds devices by
# /sys/class/infiniband and /dev/infiniband/uverbs0, docs/middleware.md).
#
#   ucx.sh DROCE_RUN info                      ucx_info -d lists rc_verbs and ud_verbs on droce0:1
#   ucx.sh DROCE_RUN uct TL TEST               ucx_perftest -t TEST -x TL -d droce0:1 (UCT)
#   ucx.sh DROCE_RUN ucp TLS TEST              UCX_TLS=TLS ucx_perftest -t TEST (UCP)
#
# Two processes over memif, nothing else set: no UCX_* variable but UCX_TLS
# for the UCP cases (the transport under test, so neither shared memory nor
# TCP can carry it). Each end prints droce's counters at close
# (DROCE_VERBS_STATS); the case passes when both exit 0, the client prints
# its Final line, and droce's context counted at least ITERS frames each way
# the test sends (the traffic crossed droce, not another transport).
set -u
run=$1; mode=$2; shift 2
for p in ucx_info ucx_perftest unshare; do
  command -v $p >/dev/null || { echo "SKIP: $p is not installed (Debian: ucx-utils)"; exit 77; }
done
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: droce-run --sysfs needs root (a private mount namespace)"
  exit 77
fi
work=$(mktemp -d /tmp/droce-mw-ucx-XXXXXX)
[ -n "${UCX_CASE_KEEP:-}" ] && echo "work $work"
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; [ -n "${UCX_CASE_KEEP:-}" ] || rm -rf "$work"' EXIT
export TMPDIR=$work DROCE_VERBS_STATS=1
unset UCX_TLS UCX_NET_DEVICES
quiet() { grep -v -E '^(EAL|TELEMETRY|rte_pmd_memif_probe|Frame size|memif_)|advertises MTU' "$1"; }

if [ "$mode" = info ]; then
  timeout 60 "$run" --sysfs --port "memif:server,socket=$work/m.sock" --ip 198.18.0.1 \
    ucx_info -d >"$work/info.out" 2>&1
  rc=$?
  # Each transport's block names its device on the next line.
  for tl in rc_verbs ud_verbs; do
    if ! grep -A1 -E "Transport: $tl\$" "$work/info.out" | grep -q -E 'Device: droce0:1$'; then
      quiet "$work/info.out" | tail -40
      echo "FAIL: ucx_info -d lists no $tl on droce0:1 (exit $rc)"
      exit 1
    fi
  done
  echo "PASS: ucx_info -d lists rc_verbs and ud_verbs on droce0:1"
  exit 0
fi

tl=$1; test=$2
iters=${UCX_CASE_ITERS:-2000}
args=(-t "$test" -n "$iters")
senv=(); cenv=()
if [ "$mode" = uct ]; then
  args+=(-x "$tl" -d droce0:1)
else
  senv=(env UCX_TLS="$tl"); cenv=(env UCX_TLS="$tl")
fi
tcp=$((20000 + $$ % 20000))

# ucx_perftest's server opens droce0 when it starts (UCT and UCP alike),
# before it listens: it is the memif server, and the client starts once
# the server's droce0 is open (DROCE_VERBS_STATS says so). Not at the
# socket alone: a memif server refuses ("ID not found") a client that
# connects before its port has started.
one_pair() {
  local sock=$work/m$1.sock port=$((tcp + $1))
  timeout 120 "${senv[@]}" "$run" --sysfs --port "memif:server,socket=$sock" --ip 198.18.0.1 \
    ucx_perftest -p "$port" >"$work/server.out" 2>&1 &
  spid=$!
  for _ in $(seq 600); do
    grep -q '^droce: droce0 open' "$work/server.out" && ss -ltn 2>/dev/null | grep -q ":$port " && break
    sleep 0.05
  done
  timeout 120 "${cenv[@]}" "$run" --sysfs --port "memif:client,socket=$sock" --ip 198.18.0.2 \
    ucx_perftest 127.0.0.1 -p "$port" "${args[@]}" >"$work/client.out" 2>&1
  crc=$?
  wait $spid
  src=$?
  spid=
}

# A memif client that finds no server, or a server whose port has not
# started (it answers "ID not found"), is disconnected for good: DPDK
# 22.11's memif does not retry, and nothing crosses the link. That is the
# start-up race of the two ends, not the transfer under test: such a pair
# runs again, at most five times more (the memif log says which it was;
# each try's logs are kept as server.N.out / client.N.out with
# UCX_CASE_KEEP=1). Seen here even with the client started after the
# server's "droce0 open": not understood yet (docs/middleware.md).
export DROCE_EAL="${DROCE_EAL:+$DROCE_EAL }--log-level=pmd.net.memif:debug"
for try in 1 2 3 4 5 6; do
  one_pair $try
  cp "$work/server.out" "$work/server.$try.out"; cp "$work/client.out" "$work/client.$try.out"
  { [ $crc = 0 ] && [ $src = 0 ]; } && break
  grep -q -E 'memif_connect_client\(\): Failed to connect socket|Disconnect received: ID not found' \
    "$work/client.out" "$work/server.out" || break
  echo "note: the memif client met its server before the server's port started (start-up race): run again"
done

# "droce: context: rx N, tx M frames": the context's own counters at close.
frames() { sed -n -E "s/^droce: context: rx ([0-9]+), tx ([0-9]+) frames.*/\\$2/p" "$1" | tail -1; }
ctx=$(frames "$work/client.out" 2); stx=$(frames "$work/server.out" 2)
crx=$(frames "$work/client.out" 1); srx=$(frames "$work/server.out" 1)
ok=1
[ $crc = 0 ] && [ $src = 0 ] || ok=0
grep -q '^Final:' "$work/client.out" || ok=0
# Every test sends ITERS messages client -> server; the latency tests
# answer each one.
[ "${ctx:-0}" -ge "$iters" ] && [ "${srx:-0}" -ge "$iters" ] || ok=0
case $test in *lat) [ "${stx:-0}" -ge "$iters" ] && [ "${crx:-0}" -ge "$iters" ] || ok=0 ;; esac
if [ $ok = 0 ]; then
  echo "--- server (exit $src)"; quiet "$work/server.out" | tail -25
  echo "--- client (exit $crc)"; quiet "$work/client.out" | tail -25
  echo "FAIL: ucx_perftest $test over $tl ($mode): droce frames client tx ${ctx:-?} rx ${crx:-?}, server tx ${stx:-?} rx ${srx:-?}"
  exit 1
fi
grep -E '^Final:' "$work/client.out"
echo "PASS: ucx_perftest $test over $tl ($mode), droce frames client tx $ctx rx $crx, server tx $stx rx $srx"
