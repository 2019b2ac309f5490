# Sourced by the interop tests (interop.sh, perftest.sh,
# rdmacm.sh): a work directory, the processes they start (pids) and the
# guest, all gone on exit, within bounded time, by PID.
#   . lib.sh NAME     (after setting vm)
#   need TOOL... -- "package names"   skip (77) unless every TOOL is on PATH
#   guest_up                           boot one guest, read its env (exit on failure)
work=$(mktemp -d "/tmp/droce-$1-XXXXXX")
pids=()
stop_pid() { # TERM, then KILL after 5 s; reaps it
  kill -TERM "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  return 0
}
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p"; done
  "$vm" down "$work/vm"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
need() {
  local t tools=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do tools+=("$1"); shift; done
  shift
  for t in "${tools[@]}"; do
    command -v "$t" >/dev/null || { echo "SKIP: $t not installed ($*)"; exit 77; }
  done
}
guest_up() {
  "$vm" up "$work/vm" 1
  local rc=$?
  [ $rc = 0 ] || exit $rc
  . "$work/vm/env"
}
