#!/usr/bin/env bash
# Instructions per message of the engine benchmark, which the machine's load
# does not change (valgrind's callgrind; timing figures here move 2x with
# other people's builds): (instructions of a SECS run - those of a 0.001 s
# run, i.e. start-up) / (messages of the one - of the other).
#   bench/engine/instr.sh BINARY SIZE [SECS]     e.g. bench/engine/instr.sh build/bench/engine/droce-bench-engine 64 1
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n 2,6p "$0" >&2
  exit 2
fi
bin=$1 size=$2 secs=${3:-1}
run() {
  DROCE_BENCH_VERBOSE=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" -t "$1" -s "$size" 2>&1
}
o0=$(run 0.001)
o1=$(run "$secs")
python3 - "$size" "$o0" "$o1" <<'PY'
import re, sys
size, o0, o1 = sys.argv[1:]
def get(o):
    ins = int(re.search(r"Collected : ([\d,]+)", o).group(1).replace(",", ""))
    msgs = int(re.search(r"messages (\d+)", o).group(1))
    acks = int(re.search(r"incl (\d+) ACKs", o).group(1))
    return ins, msgs, acks
i0, m0, _ = get(o0)
i1, m1, a1 = get(o1)
if m1 <= m0:
    sys.exit("%s B: no more messages in the long run than in the start-up one (%d vs %d): "
             "give it more seconds" % (size, m1, m0))
print("%s B: %.0f instructions/message over %d messages, %.4f ACKs/message"
      % (size, (i1 - i0) / (m1 - m0), m1 - m0, a1 / m1))
PY
