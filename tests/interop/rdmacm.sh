#!/usr/bin/env bash
# Interop: droce's CM against the guest kernel's rdma_cm.
# Debian's unmodified rping and ib_send_bw -R on both ends: on the host over
# droce's libibverbs.so.1 + librdmacm.so.1 (scripts/droce-run, af_packet on
# the harness's veth), in the guest over the kernel's rdma_cm and rxe. rping
# and ucmatose run with droce as server and as client, ib_send_bw -R with
# droce as server (below: why not as client). Every capture must decode with
# droce-dump (valid ICRCs), and its CM MADs (REQ, REP, RTU, DREQ, DREP: UD
# SENDs to QP1) with tshark, nothing malformed.
#   rdmacm.sh RXE_VM DROCE_RUN DROCE_DUMP
# Exit 0 pass, 1 fail, 77 skip (qemu cannot run, a tool or the drop-ins absent).
set -u
vm=$(readlink -f "$1") run=$(readlink -f "$2") dump=$(readlink -f "$3")
. "$(dirname "$0")/lib.sh" rdmacm
need rping ucmatose ib_send_bw tshark tcpdump -- rdmacm-utils, perftest, tshark, tcpdump
[ -x "$run" ] || { echo "SKIP: no $run (the verbs drop-ins)"; exit 77; }
[ -e "${DROCE_VERBS_LIB:-}/librdmacm.so.1" ] || { echo "SKIP: no droce librdmacm.so.1"; exit 77; }
guest_up
fails=0
port=$((21000 + $$ % 20000))

# The CM MADs of a capture as tshark reads them: one line per MAD with its
# attribute ID; "bad" counts the malformed / error-flagged RoCE frames.
cm_check() {
  local cap=$1 tag=$2 ids bad a
  tshark -n -r "$cap" -Y infiniband -T fields -e infiniband.mad.mgmtclass -e infiniband.mad.attributeid \
    -e _ws.malformed -e _ws.expert.severity -e frame.protocols >"$work/$tag.tshark" 2>/dev/null
  # Only the RoCE headers and MADs count: tshark's payload heuristics (it
  # reads perftest's SEND data as RPC-over-RDMA) are not ours to pass.
  bad=$(awk -F'\t' '$5 ~ /infiniband(:data)?$/ && ($3 != "" || $4 ~ /8388608|[Ee]rror/)' "$work/$tag.tshark" | wc -l)
  ids=$(awk -F'\t' '$1 == "0x07" {print $2}' "$work/$tag.tshark" | sort -u | tr '\n' ' ')
  for a in 0x0010 0x0013 0x0014 0x0015 0x0016; do
    case " $ids" in *" $a "*) ;; *) echo "missing CM attribute $a (tshark saw: $ids)"; return 1 ;; esac
  done
  [ "$bad" = 0 ] || { echo "tshark: $bad malformed frames"; return 1; }
  echo "CM MADs $(awk -F'\t' '$1 == "0x07"' "$work/$tag.tshark" | wc -l) (attributes $ids)"
}

# ONE TOOL DROCE_SERVER RXE_SERVER DROCE_CLIENT RXE_CLIENT CHECK_RE (arguments;
# PORT is replaced, the clients name their server's address)
# droce (host) server + rxe (guest) client, then the reverse. A client
# that comes before its server listens is refused (REJ 8, rping exits
# non-zero): it is started again, at most 5 times.
one() {
  local tool=$1 dsargs=$2 gsargs=$3 dcargs=$4 gcargs=$5 want=$6 role tag cap tpid id drc grc
  for role in ${7:-droce-server droce-client}; do
    port=$((port + 1))
    tag=$tool-$role
    cap=$work/$tag.pcap
    ip netns exec "$NS" tcpdump -i vh -s 9216 -B 32768 --immediate-mode -U -w "$cap" 2>"$work/$tag.tcpdump" &
    tpid=$!
    pids+=("$tpid")
    for _ in $(seq 100); do grep -q "listening on" "$work/$tag.tcpdump" && break; sleep 0.05; done
    local dr="ip netns exec $NS timeout 90 $run --port iface:$DROCE_IF --ip $DROCE_IP"
    local a
    if [ $role = droce-server ]; then
      $dr $tool ${dsargs//PORT/$port} >"$work/$tag.droce.out" 2>&1 &
      local dpid=$!
      pids+=("$dpid")
      sleep 2
      for a in 1 2 3 4 5; do
        "$vm" run "$work/vm" 0 -t 80 "$tool ${gcargs//PORT/$port}" >"$work/$tag.rxe.out" 2>&1
        grc=$?
        [ $grc = 0 ] || ! grep -q "REJECTED\|error 8\|Unable to perform rdma_client\|event: 8" "$work/$tag.rxe.out" || { sleep 1; continue; }
        break
      done
      wait "$dpid"
      drc=$?
    else
      id=$("$vm" run "$work/vm" 0 -t 80 -b "$tool ${gsargs//PORT/$port}")
      sleep 3
      for a in 1 2 3 4 5; do
        $dr $tool ${dcargs//PORT/$port} >"$work/$tag.droce.out" 2>&1
        drc=$?
        [ $drc = 0 ] || ! grep -q "REJECTED\|error 8\|Unable to perform rdma_client\|event: 8" "$work/$tag.droce.out" || { sleep 2; continue; }
        break
      done
      "$vm" wait "$work/vm" "$id" 100 >"$work/$tag.rxe.out" 2>&1
      grc=$?
    fi
    sleep 0.3
    stop_pid "$tpid"
    local frames cm drc2
    frames=$("$dump" --json "$cap" 2>/dev/null | grep -c '"roce":true')
    "$dump" "$cap" >/dev/null 2>&1
    drc2=$?
    cm=$(cm_check "$cap" "$tag")
    local cmrc=$?
    [ -n "${RDMACM_KEEP:-}" ] && mkdir -p "$RDMACM_KEEP" && cp "$work/$tag".* "$RDMACM_KEEP/"
    if [ $drc != 0 ] || [ $grc != 0 ] || [ $drc2 != 0 ] || [ "$frames" = 0 ] || [ $cmrc != 0 ] ||
       ! grep -q -E "$want" "$work/$tag.droce.out"; then
      echo "FAIL: $tag: droce exit $drc, rxe exit $grc, droce-dump exit $drc2 on $frames RoCE frames; $cm"
      echo "--- droce:"; grep -v '^EAL\|^TELEMETRY' "$work/$tag.droce.out" | tail -12
      echo "--- rxe:"; tail -12 "$work/$tag.rxe.out"
      fails=$((fails + 1))
    else
      echo "ok   $tag: $frames RoCE frames, ICRCs valid; $cm; $(grep -c -E "$want" "$work/$tag.droce.out") x '$want'"
    fi
  done
}

for t in ${RDMACM_TOOLS:-rping ucmatose ib_send_bw}; do
  case $t in
    # 10 pings, each checked by both ends (-v prints them)
    rping) one rping "-s -a $DROCE_IP -p PORT -C 10 -v" "-s -a $GUEST_IP_0 -p PORT -C 10 -v" \
             "-c -a $GUEST_IP_0 -p PORT -C 10 -v" "-c -a $DROCE_IP -p PORT -C 10 -v" \
             "ping data: rdma-ping-9" ;;
    # 2 connections, 20 SEND/RECV of 1 KB each way on each
    ucmatose) one ucmatose "-b $DROCE_IP -p PORT -c 2 -C 20 -S 1024" "-b $GUEST_IP_0 -p PORT -c 2 -C 20 -S 1024" \
             "-s $GUEST_IP_0 -p PORT -c 2 -C 20 -S 1024" "-s $DROCE_IP -p PORT -c 2 -C 20 -S 1024" \
             "return status 0" ;;
    # droce as server only: as client, its data QP's REQ reaches the TCG
    # guest's perftest between that server's two listeners (control, then
    # data): the kernel answers REJ 8 and perftest's client crashes in its
    # retry path (docs/rdmacm.md). droce's own server holds such REQs.
    ib_send_bw) one ib_send_bw "-d droce0 -R -s 4096 -n 100 -p PORT" "-d rxe0 -R -s 4096 -n 100 -p PORT" \
             "-d droce0 -R -s 4096 -n 100 -p PORT $GUEST_IP_0" "-d rxe0 -R -s 4096 -n 100 -p PORT $DROCE_IP" \
             '^ *4096 +100 ' droce-server ;;
  esac
done
echo "rdmacm: $fails failed"
[ $fails = 0 ]
