# Sourced by the two-process tests: wait for a server to be ready, by a
# condition, never by a fixed sleep.
#
# wait_ready PID LOG PATTERN [SOCK] [TCP] [SECONDS]
#   Returns 0 once all that is given holds: LOG has a line matching
#   PATTERN (grep -E; the server prints it after its port started), the
#   memif socket SOCK exists (DPDK's memif socket is abstract by default,
#   so /proc/net/unix is looked at too), a TCP listener on port TCP (the
#   client's side channel does not retry its connect). Returns 1, with a
#   message on stdout, when the process PID exited first or SECONDS
#   (default 30) passed.
# A memif client that connects before the server's port started never
# comes up (DPDK 22.11 does not retry), which is why the socket alone is
# not enough and the log line is waited for.
wait_ready() {
  local pid=$1 log=$2 pattern=$3 sock=${4:-} tcp=${5:-} secs=${6:-30}
  local end=$((SECONDS + secs))
  while :; do
    if { [ -z "$pattern" ] || grep -q -E -- "$pattern" "$log" 2>/dev/null; } &&
       { [ -z "$sock" ] || [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } &&
       { [ -z "$tcp" ] || ss -Hltn "sport = :$tcp" 2>/dev/null | grep -q .; }; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "wait_ready: the server (pid $pid) exited before it was ready"
      return 1
    fi
    if [ $SECONDS -ge $end ]; then
      echo "wait_ready: the server was not ready after ${secs}s (log: $log, want '$pattern'${sock:+, socket $sock}${tcp:+, TCP port $tcp})"
      return 1
    fi
    sleep 0.05
  done
}

# free_port: a TCP port nothing listens on now (the kernel picks it), for
# a test's side channel: engineers and CI run suites side by side, and a
# port derived from $$ can be another test's.
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
