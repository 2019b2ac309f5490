#!/usr/bin/env bash
# The layering of stack/, from the includes (what a header, an inline
# function or a struct layout shares, which symbols cannot show): each folder
# of stack/ may include only the folders below it (docs/architecture.md):
#
#   base                                        (header-only, no dependency: below all)
#   wire < cc < model < transport < core      (the engine, data flows one way)
#   wire < net                                  (links, ports, neighbours)
#   poll                                        (a loop's accounting and idle policy: public API only)
#   cm, comm, telemetry, verbs, rdmacm          (above; never included below)
#
# Inside a folder, leaves: files that include none of their folder's other
# files (beside the ones named), so that nothing there can reach back up:
#
#   verbs/xlate.{c,h}   the ibv <-> droce translations: <infiniband/verbs.h>
#                       and droce's public headers only
#   verbs/backend.h     the execution models' table: forward declarations only
#
# Usage: includes.sh STACK_DIR
set -u
stack=${1:?usage: includes.sh STACK_DIR}
[ -d "$stack/core" ] || { echo "no $stack/core"; exit 1; }
declare -A allowed=(
  [base]="base"
  [wire]="wire"
  [cc]="wire cc"
  [model]="wire cc model"
  [transport]="wire cc model transport"
  [core]="wire cc model transport core"
  [cm]="wire cc model cm"
  [poll]="poll"
  [comm]="wire comm"
  [net]="wire net"
  [telemetry]="wire net telemetry"
  [verbs]="wire net cm comm telemetry verbs"
  [rdmacm]="wire net cm verbs rdmacm"
)
bad=0
seen=0
for dir in "$stack"/*/; do
  layer=$(basename "$dir")
  ok=${allowed[$layer]:-}
  [ "$layer" = base ] || ok="base $ok"
  if [ -z "$ok" ]; then
    echo "stack/$layer: a folder the layering table does not know (add it to $0)"
    bad=1
    continue
  fi
  # Every quoted include of a stack folder, in every source and header below it.
  while IFS=: read -r file _ line; do
    seen=$((seen + 1))
    target=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*"([a-z_]+)\/.*/\1/' <<<"$line")
    case " $ok " in
      *" $target "*) ;;
      *) echo "${file#"$stack"/}: includes $target/ (stack/$layer may include only: $ok)"; bad=1 ;;
    esac
  done < <(grep -rn --include='*.c' --include='*.h' -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$dir")
done
declare -A leaf=(
  [verbs/xlate.h]=""
  [verbs/xlate.c]="verbs/xlate.h"
  [verbs/backend.h]=""
)
for f in "${!leaf[@]}"; do
  [ -f "$stack/$f" ] || { echo "stack/$f: a leaf the table names is gone (mend $0)"; bad=1; continue; }
  while IFS=: read -r n line; do
    inc=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/' <<<"$line")
    case " ${leaf[$f]} " in *" $inc "*) continue ;; esac
    case $inc in
      droce/*|infiniband/verbs.h) ;;                 # the public headers
      */*.h|rte_*) echo "stack/$f:$n: includes $inc (a leaf: of its folder only ${leaf[$f]:-nothing}," \
                        "<infiniband/verbs.h> and <droce/*.h>)"; bad=1 ;;
    esac
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include' "$stack/$f")
done
[ "$seen" -gt 0 ] || { echo "no includes found under $stack"; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "ok: $seen includes, none against the layering"
