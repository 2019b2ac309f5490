#!/bin/sh
# Write a tool's man page from its --help (help2man), at build time, so the
# page says what the built tool says. The tool runs under its installed name
# (its usage line prints argv[0]) and needs no EAL for --help.
#   man-page.sh HELP2MAN PROGRAM NAME VERSION DESCRIPTION OUT
set -eu
help2man=$1 prog=$2 name=$3 version=$4 desc=$5 out=$6
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '#!/bin/bash\nexec -a %s %s "$@"\n' "$name" "$prog" > "$dir/$name"
chmod +x "$dir/$name"
"$help2man" --no-info --no-discard-stderr --version-string="$version" \
  --name="$desc" --source=droce --output="$out" "$dir/$name"
