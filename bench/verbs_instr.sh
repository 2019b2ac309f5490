#!/usr/bin/env bash
# Instructions the libibverbs drop-in itself executes per call of a context
# op on perftest's hot path, which the machine's load does not change: an
# unmodified ib_write_bw client runs under valgrind's callgrind (its server
# natively, both over memif through scripts/droce-run), collecting inside
# FUNC, the function ibv_post_send or ibv_poll_cq reaches through
# context->ops (main before the backend table: dv_post_send, dv_poll_cq;
# after: thread_post_send, thread_poll_cq). Of what ran there, the drop-in's
# own code (functions from stack/verbs/, by the debug info) is counted apart
# from droce's engine and DPDK underneath, linked into the same
# libibverbs.so, and divided by the calls: every op call takes dv_lock()
# once, so its calls count them. dv_lock's own instructions are left out:
# while the progress thread holds the context it spins, which is waiting,
# not work, and varies run to run. A post_send is one message (perftest
# posts one WR per call); how many poll_cq calls a message takes depends on
# how long the client waits for ACKs, hence per call. -u 20 (a 4 s ACK
# timeout): the slow (valgrind) side retransmits nothing.
#   bench/verbs_instr.sh LIBDIR FUNC [SIZE [ITERS]]
# e.g. bench/verbs_instr.sh build/stack/verbs/lib thread_post_send 64 2000
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n 2,19p "$0" >&2
  exit 2
fi
libdir=$(cd "$1" && pwd) func=$2 size=${3:-64} n=${4:-2000}
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../scripts/droce-run
. "$here/../tests/lib/wait.sh"
tmp=$(mktemp -d /tmp/droce-vinstr-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$tmp"' EXIT
# One pair; 1 when the client did not run to its report (perftest under
# valgrind on a loaded machine now and then gives up its connection).
one() {
  local port sock=$tmp/m$1.sock
  port=$(free_port)
  DROCE_VERBS_STATS=1 timeout 300 "$run" --lib "$libdir" --port "memif:server,socket=$sock" \
    --ip 198.18.0.1 ib_write_bw -d droce0 -x 0 -u 20 -s "$size" -n "$n" -p "$port" >"$tmp/srv.out" 2>&1 &
  spid=$!
  wait_ready $spid "$tmp/srv.out" '^droce: droce0 open' "$sock" "$port" 60 >&2 || return 1
  timeout 600 "$run" --lib "$libdir" --port "memif:client,socket=$sock" --ip 198.18.0.2 \
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$func" \
    ib_write_bw -d droce0 -x 0 -u 20 -s "$size" -n "$n" -p "$port" 127.0.0.1 >"$tmp/cli.out" 2>&1
  local rc=$?
  kill $spid 2>/dev/null; wait $spid 2>/dev/null
  spid=
  # perftest's own clock sampling may refuse a report on a loaded machine
  # after a transfer that went well: the table's row says it ran
  [ $rc = 0 ] || grep -q -E "^ +$size +$n " "$tmp/cli.out"
}
ok=0
for try in 1 2 3; do
  if one $try; then ok=1; break; fi
  echo "try $try: the client did not finish:" >&2
  grep -v '^==' "$tmp/cli.out" | tail -3 >&2
done
[ $ok = 1 ] || exit 1
callgrind_annotate --threshold=100 "$tmp/cg" >"$tmp/ann"
[ -n "${VINSTR_KEEP:-}" ] && cp "$tmp/ann" "$tmp/cg" "$tmp/cli.out" "$VINSTR_KEEP/"
python3 - "$tmp/ann" "$tmp/cg" "$func" "$size" <<'PY'
import re, sys
ann, cg, func, size = sys.argv[1:5]
mine = total = 0
for line in open(ann):
    m = re.match(r'\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(\S+):(\S+) \[', line)
    if not m:
        continue
    n = int(m.group(1).replace(',', ''))
    total += n
    if '/stack/verbs/' in m.group(2) and m.group(3) != 'dv_lock':
        mine += n
# dv_lock's calls, from the call records (names compressed: "(id) name"
# the first time, "(id)" after)
names, calls, cur = {}, 0, False
for line in open(cg):
    if line.startswith(('fn=', 'cfn=')):
        v = line.split('=', 1)[1].strip()
        if v.startswith('('):
            i, _, rest = v.partition(')')
            if rest.strip():
                names[i] = rest.strip()
            v = names.get(i, '')
        cur = line.startswith('cfn=') and v == 'dv_lock'
    elif line.startswith('calls=') and cur:
        calls += int(line.split('=')[1].split()[0])
        cur = False
if not calls:
    sys.exit('no dv_lock calls in the profile')
print("%s: %s B ib_write_bw client, per call (%d calls): drop-in %.1f instructions "
      "(dv_lock left out), with the engine and DPDK under it %.0f"
      % (func, size, calls, mine / calls, total / calls))
PY
