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
[ "$seen" -gt 0 ] || { echo "no includes found under $stack"; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "ok: $seen includes, none against the layering"
