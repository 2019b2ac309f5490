#!/usr/bin/env bash
# Interop: Debian's perftest, ibv_rc_pingpong and
# ibv_ud_pingpong (UD QPs and address handles against rxe's),
# unmodified, on both ends: on the host over droce (the project's libibverbs
# drop-in, scripts/droce-run, af_packet on the harness's veth), in the guest
# over rxe. Each tool runs with droce as server and as client. The capture of
# each run must decode with droce-dump (valid ICRCs).
#   perftest.sh RXE_VM DROCE_RUN DROCE_DUMP
# Exit 0 pass, 1 fail, 77 skip (qemu cannot run, perftest or the drop-in absent).
set -u
vm=$(readlink -f "$1") run=$(readlink -f "$2") dump=$(readlink -f "$3")
. "$(dirname "$0")/lib.sh" perftest
need ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_atomic_lat ibv_rc_pingpong ibv_ud_pingpong -- perftest, ibverbs-utils
[ -x "$run" ] || { echo "SKIP: no $run (the libibverbs drop-in)"; exit 77; }
[ -e "${DROCE_VERBS_LIB:-}/libibverbs.so.1" ] || { echo "SKIP: no droce libibverbs.so.1 (DROCE_VERBS_LIB)"; exit 77; }
lib=$(cd "$DROCE_VERBS_LIB" && pwd)
guest_up
fails=0
port=$((19000 + $$ % 20000))

# ONE TOOL ARGS: droce (host) server + rxe (guest) client, then the reverse.
one() {
  local tool=$1 args=$2 role tag cap tpid out id drc grc
  for role in droce-server droce-client; do
    port=$((port + 1))
    tag=$tool-$role
    cap=$work/$tag.pcap
    local p="-p $port"
    ip netns exec "$NS" tcpdump -i vh -s 9216 -B 32768 --immediate-mode -U -w "$cap" 2>"$work/$tag.tcpdump" &
    tpid=$!
    pids+=("$tpid")
    for _ in $(seq 100); do grep -q "listening on" "$work/$tag.tcpdump" && break; sleep 0.05; done
    local dr="ip netns exec $NS timeout 90 env LD_DEBUG=libs LD_DEBUG_OUTPUT=$work/$tag.ld $run --port iface:$DROCE_IF --ip $DROCE_IP"
    local dgid=0 rgid=1
    case $tool in ibv_*) dgid="-g 0"; rgid="-g 1" ;; *) dgid="-x 0"; rgid="-x 1" ;; esac
    if [ $role = droce-server ]; then
      $dr $tool -d droce0 $dgid $args $p >"$work/$tag.droce.out" 2>&1 &
      local dpid=$!
      pids+=("$dpid")
      # perftest's client does not retry: wait until the server listens
      for _ in $(seq 300); do
        ip netns exec "$NS" ss -Hltn "sport = :$port" | grep -q . && break
        kill -0 "$dpid" 2>/dev/null || break
        sleep 0.1
      done
      "$vm" run "$work/vm" 0 -t 80 "$tool -d rxe0 $rgid $args $p $HOST_IP" >"$work/$tag.rxe.out" 2>&1
      grc=$?
      wait "$dpid"
      drc=$?
    else
      id=$("$vm" run "$work/vm" 0 -t 80 -b "$tool -d rxe0 $rgid $args $p")
      # perftest's client does not retry: wait until the server listens
      # (asked in the guest: a probe connection would be its one client).
      for _ in $(seq 60); do
        "$vm" run "$work/vm" 0 -t 5 "ss -ltn | grep -q ':$port '" && break
        sleep 0.5
      done
      $dr $tool -d droce0 $dgid $args $p "$GUEST_IP_0" >"$work/$tag.droce.out" 2>&1
      drc=$?
      "$vm" wait "$work/vm" "$id" 100 >"$work/$tag.rxe.out" 2>&1
      grc=$?
    fi
    sleep 0.3
    stop_pid "$tpid"
    local frames
    frames=$("$dump" --json "$cap" 2>/dev/null | grep -c '"roce":true')
    "$dump" "$cap" >/dev/null 2>&1
    local drc2=$?
    [ -n "${PERFTEST_KEEP:-}" ] && mkdir -p "$PERFTEST_KEEP" && cp "$work/$tag".* "$PERFTEST_KEEP/"
    # droce's library on the host, and the pingpongs' own data check (-c)
    local libs=ok
    grep -q "calling init: $lib/libibverbs.so.1\$" "$work/$tag".ld.* 2>/dev/null || libs="droce's libibverbs.so.1 not loaded"
    if [ $drc != 0 ] || [ $grc != 0 ] || [ $drc2 != 0 ] || [ "$frames" = 0 ] || [ "$libs" != ok ] ||
       grep -q 'invalid data in page' "$work/$tag.droce.out" "$work/$tag.rxe.out"; then
      echo "FAIL: $tag: droce exit $drc, rxe exit $grc, droce-dump exit $drc2 on $frames RoCE frames; libraries: $libs"
      # perftest writes its errors to stderr, unbuffered, so they stand
      # before the stdout tail in the file: show them first.
      echo "--- droce:"; grep -iE 'error|fail|couldn|unable|timeout|retry' "$work/$tag.droce.out" | head -6
      grep -v '^EAL\|^TELEMETRY' "$work/$tag.droce.out" | tail -12
      echo "--- rxe:"; grep -iE 'error|fail|couldn|unable|timeout|retry' "$work/$tag.rxe.out" | head -6
      tail -12 "$work/$tag.rxe.out"
      if [ -n "${INTEROP_FAILED_DIR:-}" ]; then
        mkdir -p "$INTEROP_FAILED_DIR/perftest-$$" && cp "$work/$tag".* "$INTEROP_FAILED_DIR/perftest-$$/" &&
          echo "kept in $INTEROP_FAILED_DIR/perftest-$$"
      fi
      fails=$((fails + 1))
    else
      echo "ok   $tag: $frames RoCE frames, ICRCs valid; $(grep -E '^ *[0-9]+ +[0-9]+ |iters in' "$work/$tag.droce.out" | tail -1 | tr -s ' ')"
    fi
  done
}

# -u 17 for perftest's tools (both ends): a 537 ms ACK timeout instead of
# 67 ms, as interop.sh gives droce-perf: under TCG the guest stalls for up to
# a second when the host is busy, and seven 67 ms timeouts in a row end a
# QP with RETRY_EXC_ERR (ib_read_bw with droce as client, at load 13).
# ibv_*_pingpong have no such option (their timeout is 14).
u="-u 17"
for t in ${PERFTEST_TOOLS:-ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_atomic_lat ibv_rc_pingpong ibv_ud_pingpong}; do
  case $t in
    ib_write_lat) one $t "-s 8 -n 100 $u" ;;
    # No -o: perftest sets each side's max_rd_atomic to the number of
    # outstanding reads the peer advertises (rxe 128, droce 16); droce
    # takes more than its own as its own (docs/verbs.md, "Outstanding
    # reads"), as the initiator depth allows.
    ib_atomic_lat) one $t "-n 100 $u" ;;
    ib_read_bw) one $t "-s 4096 -n 100 $u" ;;
    # UD: one packet per message, at most the port MTU (1024 on
    # the veth both sides use).
    # -c: each pingpong checks the data it received
    ibv_ud_pingpong) one $t "-s 1024 -n 100 -c" ;;
    ib_*) one $t "-s 4096 -n 100 $u" ;;
    *) one $t "-s 4096 -n 100 -c" ;;
  esac
done
echo "perftest: $fails failed"
[ $fails = 0 ]
