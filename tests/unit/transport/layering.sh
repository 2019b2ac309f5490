#!/usr/bin/env bash
# core/ calls the transport (transport/tp.h) and never the other way round.
# From the engine library's symbol tables: no object of stack/transport may
# use a function that an object of stack/core defines (tests/unit/includes.sh
# checks the same layering on the includes, which also carry inline functions
# and struct layouts).
# Usage: layering.sh LIBDROCE_ENGINE.a
set -u
lib=$1
command -v nm >/dev/null || { echo "nm not found (binutils)"; exit 77; }
syms=$(nm -A "$lib") || { echo "nm failed on $lib"; exit 1; }
core_defs=$(echo "$syms" | awk '$0 ~ /\/core_[a-z_]*\.c\.o:/ && $(NF-1) ~ /^[TtDdBbR]$/ {print $NF}' | sort -u)
tp_uses=$(echo "$syms" | awk '$0 ~ /\/transport_[a-z_]*\.c\.o:/ && $(NF-1) == "U" {print $NF}' | sort -u)
[ -n "$core_defs" ] && [ -n "$tp_uses" ] || { echo "no core/ or transport/ objects found in $lib"; exit 1; }
bad=$(comm -12 <(echo "$core_defs") <(echo "$tp_uses"))
if [ -n "$bad" ]; then
  echo "transport/ calls up into core/:"
  echo "$bad" | sed 's/^/  /'
  exit 1
fi
# and core/ does reach the transport only through its API (droce_tp_*)
core_uses=$(echo "$syms" | awk '$0 ~ /\/core_[a-z_]*\.c\.o:/ && $(NF-1) == "U" {print $NF}' | sort -u)
tp_defs=$(echo "$syms" | awk '$0 ~ /\/transport_[a-z_]*\.c\.o:/ && $(NF-1) ~ /^[TtDdBbR]$/ {print $NF}' | sort -u)
off=$(comm -12 <(echo "$core_uses") <(echo "$tp_defs") | grep -v '^droce_tp_' || true)
if [ -n "$off" ]; then
  echo "core/ calls transport/ outside transport/tp.h:"
  echo "$off" | sed 's/^/  /'
  exit 1
fi
echo "ok: transport/ uses nothing core/ defines; core/ uses only droce_tp_*"
