#!/usr/bin/env bash
# droce-replay's exit code 2 with FILE:LINE: reason for bad scenarios and
# captures, and clear refusals from --derive.
#   bad_input.sh DROCE_REPLAY PCAP_DIR WORKDIR
set -u
replay=$1 pcapdir=$2 work=$3
mkdir -p "$work"
fail=0

# expect2 NAME PATTERN CMD...: CMD must exit 2 and print PATTERN on stderr.
expect2() {
  local name=$1 pat=$2; shift 2
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  if [ $rc -ne 2 ]; then
    echo "FAIL $name: exit $rc, want 2"; cat "$work/$name.out" "$work/$name.err"; fail=1
  elif ! grep -q -- "$pat" "$work/$name.err"; then
    echo "FAIL $name: stderr lacks '$pat':"; cat "$work/$name.err"; fail=1
  else
    echo "ok   $name: $(head -1 "$work/$name.err")"
  fi
}

printf 'capture nowhere.pcap\nip 10.0.0.1\nmac 02:00:00:00:00:01\n' >"$work/nocap.scn"
expect2 missing-capture "nocap.scn:1: capture" "$replay" "$work/nocap.scn"

printf 'capture %s/resp-send.pcap\nip 10.0.0.1\nmac 02:00:00:00:00:01\nqp q local=1\n' "$pcapdir" >"$work/badqp.scn"
expect2 bad-line "badqp.scn:4: qp: missing peer=" "$replay" "$work/badqp.scn"

printf 'not a capture\n' >"$work/junk.pcap"
printf 'capture junk.pcap\nip 10.0.0.1\nmac 02:00:00:00:00:01\n' >"$work/junk.scn"
expect2 junk-capture "junk.scn:1: capture" "$replay" "$work/junk.scn"

expect2 missing-scenario "nonexistent.scn" "$replay" "$work/nonexistent.scn"
expect2 derive-no-traffic "no RoCE traffic for 10.9.9.9" "$replay" --derive "$pcapdir/resp-send.pcap" --side 10.9.9.9
expect2 derive-bad-side "not an IPv4 or IPv6 address" "$replay" --derive "$pcapdir/resp-send.pcap" --side banana
expect2 usage "usage:" "$replay" --frobnicate
# a frame 1e18 ns or more after the first: no scenario time can hold it
# (the fuzz_pcap input that once made derive write an at= the reader refused)
expect2 derive-time-past-bound "frame 3 is 1.02e+09 s after the capture's first frame: a scenario's times end at" \
  "$replay" --derive "$pcapdir/../tests/fuzz/corpus/fuzz_pcap/derive-at-past-1e18ns" --side 10.0.0.1
expect2 derive-bad-impair "--impair drop=2:" "$replay" --derive "$pcapdir/resp-send.pcap" --side 10.0.0.1 --impair drop=2
expect2 derive-impair-missing "usage:" "$replay" --derive "$pcapdir/resp-send.pcap" --side 10.0.0.1 --impair

# expect2o NAME PATTERN CMD...: as expect2, the reason on stdout (the runner's report).
expect2o() {
  local name=$1 pat=$2; shift 2
  "$@" >"$work/$name.out" 2>&1
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -q -- "$pat" "$work/$name.out"; then
    echo "FAIL $name: exit $rc (want 2), or no '$pat':"; cat "$work/$name.out"; fail=1
  else
    echo "ok   $name: $(grep -- "$pat" "$work/$name.out" | head -1)"
  fi
}
abs=$(cd "$pcapdir" && pwd)
sed "s|^capture resp-send.pcap|capture $abs/resp-send.pcap|" "$pcapdir/resp-send.scn" >"$work/good.scn"
{ cat "$work/good.scn"; echo "impair drop=2"; } >"$work/badimpair.scn"
expect2o replay-bad-impair "impair drop=2:" "$replay" "$work/badimpair.scn"
{ cat "$work/good.scn"; echo "deliver 2 at=1us"; } >"$work/baddeliver.scn"
expect2o replay-deliver-own-frame "deliver: frame 2 is no frame of the peer's" "$replay" "$work/baddeliver.scn"
exit $fail
