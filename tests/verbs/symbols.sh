#!/usr/bin/env bash
# suite verbs: symbol parity of the drop-ins with Debian's rdma-core
# libraries (docs/verbs.md, docs/rdmacm.md), by `nm -D --with-symbol-versions`:
# - libibverbs.so.1: every symbol Debian's library exports at its default
#   version (name@@VERSION, what a binary built today imports) is exported by
#   droce's at that version; the older compatibility versions
#   (name@IBVERBS_1.0, for binaries linked before 2016) are listed, not
#   required; droce adds only its private DROCE_VERBS_PRIVATE_* symbols;
# - librdmacm.so.1: the same set, every version, nothing more.
#   symbols.sh DROCE_LIB_DIR
set -u
dir=$1
command -v nm >/dev/null || { echo "SKIP: nm not installed (binutils)"; exit 77; }
defs() { # LIB: every defined dynamic symbol with its version
  nm -D --defined-only --with-symbol-versions "$1" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | sort -u
}
rc=0
for l in libibverbs.so.1 librdmacm.so.1; do
  deb=/usr/lib/x86_64-linux-gnu/$l
  [ -e "$deb" ] || { echo "SKIP: Debian's $deb is absent (ibverbs-providers / librdmacm1)"; exit 77; }
  [ -e "$dir/$l" ] || { echo "FAIL: no $dir/$l"; rc=1; continue; }
  d=$(defs "$deb"); o=$(defs "$dir/$l")
  [ -n "$d" ] && [ -n "$o" ] || { echo "FAIL: nm found no symbols in $deb or $dir/$l"; rc=1; continue; }
  if [ $l = libibverbs.so.1 ]; then
    want=$(echo "$d" | grep '@@')
    compat=$(echo "$d" | grep -v '@@')
    extra_ok='@@DROCE_VERBS_PRIVATE_'
  else
    want=$d; compat=; extra_ok='^$'
  fi
  missing=$(comm -23 <(echo "$want") <(echo "$o"))
  extra=$(comm -13 <(echo "$d") <(echo "$o") | grep -v -E "$extra_ok" || true)
  if [ -n "$missing" ]; then
    echo "FAIL: $l: $(echo "$missing" | wc -l) of Debian's symbols missing:"; echo "$missing" | sed 's/^/  /'; rc=1
  fi
  if [ -n "$extra" ]; then
    echo "FAIL: $l: exports what Debian's does not:"; echo "$extra" | sed 's/^/  /'; rc=1
  fi
  echo "$l: Debian $(echo "$d" | wc -l) symbols, droce $(echo "$o" | wc -l); $(echo "$want" | wc -l) required, all present: $([ -z "$missing" ] && echo yes || echo no)"
  [ -n "$compat" ] && echo "  not provided (compatibility versions only): $(echo "$compat" | wc -l), e.g. $(echo "$compat" | head -3 | tr '\n' ' ')"
done
[ $rc = 0 ] && echo "ok: symbol parity with Debian's libibverbs.so.1 and librdmacm.so.1"
exit $rc
