# Sourced by bench/memif_ab.sh and bench/memif_instr.sh: one "side" of a
# droce-perf memif run, "[VAR=VALUE,...:]BINARY[@VDEVARGS]" (environment
# variables for both processes; after @, memif devargs that replace the
# --memif shortcut's), and the server process of a run.

# side_parse SPEC: sets side_env (array), side_bin, side_dev.
side_parse() {
  local spec=$1 envs=""
  side_bin=$spec side_dev=""
  if [[ $side_bin == *:* ]]; then envs=${side_bin%%:*}; side_bin=${side_bin#*:}; fi
  if [[ $side_bin == *@* ]]; then side_dev=${side_bin#*@}; side_bin=${side_bin%%@*}; fi
  side_env=()
  [ -n "$envs" ] && IFS=, read -r -a side_env <<<"$envs"
  return 0
}

# side_args ROLE SOCK TEST-ARGS...: sets side_args (EAL args, --, the test's).
side_args() {
  local role=$1 sock=$2
  shift 2
  if [ -n "$side_dev" ]; then
    side_args=(--vdev="net_memif0,role=$role,socket=$sock,$side_dev" -- "$@")
  else
    side_args=(-- "$@" --memif "$role,socket=$sock")
  fi
}

# side_server SOCK OUT TEST-ARGS...: starts the server on CPU 0 (pid in
# side_srv) and waits (bounded) for its memif socket, which is abstract.
side_server() {
  local sock=$1 out=$2
  shift 2
  side_args server "$sock" "$@"
  env "${side_env[@]}" "$side_bin" -l 0 "${side_args[@]}" >"$out" 2>&1 &
  side_srv=$!
  for _ in $(seq 100); do
    grep -q "@$sock" /proc/net/unix 2>/dev/null && break
    sleep 0.05
  done
}

# side_server_wait: the server ends by itself after the run; bounded.
side_server_wait() {
  [ -n "${side_srv:-}" ] || return 0
  for _ in $(seq 100); do kill -0 "$side_srv" 2>/dev/null || break; sleep 0.1; done
  kill "$side_srv" 2>/dev/null || true
  wait "$side_srv" 2>/dev/null || true
  side_srv=""
}
