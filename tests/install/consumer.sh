#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A consumer's view of the installed droce (docs/usage.md, "Using the
# installed library"): install the build into a temporary root (meson
# install --destdir; or, with DROCE_DEBS=DIR, unpack the .debs there with
# dpkg -x), then, outside the tree and with nothing but `pkg-config droce`:
# build examples/ against the installed headers and library, run
# hello_rdma, and run hello_memif as two processes over memif. Also: the
# static library links alone, a C++ program links the C API, the drop-ins
# sit in the private $libdir/droce (never on the default library path) and
# the installed droce-run finds them, every tool has its man page.
#   consumer.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/droce-consumer-XXXXXX)
spid=
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

root=$work/root
if [ -n "${DROCE_DEBS:-}" ]; then
  n=0
  for d in "$DROCE_DEBS"/*.deb; do
    [ -e "$d" ] || continue
    dpkg -x "$d" "$root" && n=$((n + 1))
  done
  [ $n -ge 4 ] || { echo "FAIL: want the 4 packages in $DROCE_DEBS, found $n"; exit 1; }
  echo "unpacked $n packages from $DROCE_DEBS"
else
  meson install -C "$build" --no-rebuild --destdir "$root" --quiet >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; echo "FAIL: meson install"; exit 1; }
fi
pc=$(find "$root" -name droce.pc -path '*/pkgconfig/*' | head -n1)
[ -n "$pc" ] || { echo "FAIL: no droce.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
bindir=$(find "$root" -type d -name bin | head -n1)
export PKG_CONFIG_PATH=$(dirname "$pc")
# pkg-config alone tells the compiler everything: the installed prefix is
# found relative to droce.pc (relocatable), no -I or -L of ours.
cflags=$(pkg-config --cflags droce) && libs=$(pkg-config --libs droce) ||
  { echo "FAIL: pkg-config droce"; exit 1; }
case " $cflags " in *" -I$root"*) ok "pkg-config --cflags droce points into the install" ;;
  *) bad "pkg-config --cflags droce: $cflags" ;; esac
pkg-config --print-requires-private droce | grep -q '^libdpdk' &&
  ok "droce.pc: DPDK is Requires.private" || bad "droce.pc lacks Requires.private: libdpdk"

# The examples, copied out of the tree: only their own files.
mkdir -p "$work/app"
cp "$src"/examples/*.c "$src"/examples/*.h "$work/app/"
cd "$work/app"
CC=${CC:-cc}
for e in hello_rdma hello_cm hello_memif; do
  # shellcheck disable=SC2086
  if $CC -std=c11 -Wall -Wextra -Werror -o $e $e.c $cflags $libs 2>"$e.err"; then
    ok "$e builds with pkg-config droce alone"
  else
    cat "$e.err"; bad "$e does not build against the installed droce"
  fi
done
export LD_LIBRARY_PATH=$libdir
if [ -x hello_rdma ]; then
  readelf -d hello_rdma | grep -q 'NEEDED.*\[libdroce\.so\.0\]' ||
    bad "hello_rdma does not need libdroce.so.0"
  where=$(ldd ./hello_rdma | awk '/libdroce\.so\.0/ {print $3}')
  [ "$where" = "$libdir/libdroce.so.0" ] && ok "hello_rdma loads $where" ||
    bad "hello_rdma loads libdroce from '$where', not the install"
  timeout 30 ./hello_rdma >hello_rdma.out 2>&1 && ok "hello_rdma ran" ||
    { cat hello_rdma.out; bad "hello_rdma failed"; }
fi

# Static: libdroce.a is the whole stack (droce's own objects; DPDK shared).
# shellcheck disable=SC2086
if $CC -std=c11 -o hello_rdma_static hello_rdma.c $cflags -L"$libdir" -Wl,-Bstatic -ldroce \
     -Wl,-Bdynamic $(pkg-config --libs libdpdk libisal libpcap) -lm -pthread 2>static.err; then
  ! readelf -d hello_rdma_static | grep -q 'libdroce' && timeout 30 ./hello_rdma_static >/dev/null 2>&1 &&
    ok "libdroce.a links and runs alone" || bad "the static hello_rdma needs libdroce.so or failed"
else
  cat static.err; bad "libdroce.a does not link"
fi

# C++: the headers' extern "C" reaches the library.
cat >cxx.cc <<'EOF'
#include <droce/droce.h>
#include <cstdio>
int main()
{
	droce_ctx_params p;
	droce_ctx_params_init(&p);
	std::printf("%s %u\n", droce_wc_status_str(DROCE_WC_SUCCESS), p.max_qps);
	return p.max_qps == 0;
}
EOF
CXX=${CXX:-c++}
# shellcheck disable=SC2086
if command -v "$CXX" >/dev/null; then
  $CXX -std=c++11 -Wall -Wextra -Werror -o cxx cxx.cc $cflags $libs 2>cxx.err && ./cxx >/dev/null &&
    ok "a C++ program builds and runs against the installed droce" ||
    { cat cxx.err; bad "C++ consumer"; }
fi

# Two processes over memif, from the installed library.
if [ -x hello_memif ]; then
  sock=$work/memif.sock
  timeout 60 ./hello_memif server "$sock" >server.out 2>&1 &
  spid=$!
  for _ in $(seq 400); do
    { [ -S "$sock" ] || grep -q "@$sock\$" /proc/net/unix; } && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
  done
  timeout 60 ./hello_memif client "$sock" >client.out 2>&1
  crc=$?
  wait "$spid"; src_rc=$?; spid=
  grep -hv '^EAL\|^TELEMETRY\|memif_probe\|Frame size\|chains buffers' server.out client.out
  if [ $crc = 0 ] && [ $src_rc = 0 ] && grep -q 'received "hello over memif"' server.out; then
    ok "hello_memif: connect by address, RDMA WRITE WITH IMM and SEND over memif, two processes"
  else
    bad "hello_memif over memif: client exit $crc, server exit $src_rc"
  fi
fi

# The drop-ins: in $libdir/droce only, and the installed droce-run finds them.
dropins=$(find "$root" \( -name 'libibverbs.so*' -o -name 'librdmacm.so*' \) -print)
for f in $dropins; do
  [ "$(dirname "$f")" = "$libdir/droce" ] ||
    bad "$f: a drop-in outside $libdir/droce would shadow rdma-core"
done
if [ -e "$libdir/droce/libibverbs.so.1" ]; then
  first=$("$bindir/droce-run" sh -c 'echo "${LD_LIBRARY_PATH%%:*}"')
  [ "$first" = "$libdir/droce" ] && ok "droce-run puts $libdir/droce first" ||
    bad "the installed droce-run uses '$first', not $libdir/droce"
  [ -e "$libdir/droce/librdmacm.so.1" ] || echo "note: no librdmacm.so.1 (no librdmacm-dev)"
  # An unmodified rdma-core program: droce0 through the installed droce-run,
  # and not without it, even with the install's LIBDIR on the library path.
  if command -v ibv_devices >/dev/null; then
    with=$(env -u DROCE_PORT -u DROCE_IP "$bindir/droce-run" --port "memif:server,socket=$work/v.sock" \
      --ip 198.18.0.9 ibv_devices 2>&1)
    echo "$with" | grep -q '^ *droce0 ' && ok "ibv_devices lists droce0 through the installed droce-run" ||
      { echo "$with"; bad "ibv_devices through the installed droce-run does not list droce0"; }
  fi
elif [ -n "${DROCE_DEBS:-}" ] || [ -n "$dropins" ]; then
  bad "no libibverbs.so.1 in $libdir/droce"
else
  echo "skip: this build has no verbs drop-in (no libibverbs-dev)"
fi
if [ -n "$dropins" ] && command -v ibv_devices >/dev/null; then
  without=$(DROCE_PORT="memif:server,socket=$work/v.sock" DROCE_IP=198.18.0.9 ibv_devices 2>&1)
  echo "$without" | grep -q 'droce0' && bad "ibv_devices sees droce0 without droce-run: rdma-core is shadowed" ||
    ok "ibv_devices without droce-run is rdma-core's (no droce0)"
fi

# Tools and their man pages.
for t in droce-perf droce-dump droce-replay droce-sim droce-run; do
  [ -x "$bindir/$t" ] || { bad "$t is not installed"; continue; }
  m=$(find "$root" -path "*/man1/$t.1*" | head -n1)
  [ -n "$m" ] && { zcat -f "$m" | grep -q '^\.TH'; } && ok "$t and its man page" ||
    bad "no man page for $t"
done
incdir=$(find "$root" -type d -path '*/include/droce' | head -n1)
for h in "$src"/include/droce/*.h; do
  [ -n "$incdir" ] && [ -e "$incdir/$(basename "$h")" ] || bad "$(basename "$h") is not installed"
done

if [ $fails -ne 0 ]; then
  echo "FAIL: $fails checks of the installed droce failed"
  exit 1
fi
echo "PASS: installed droce builds and runs examples/ outside the tree with pkg-config droce alone"
