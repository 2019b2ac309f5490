#!/usr/bin/env bash
# "The engine reads no clock" (docs/architecture.md: engines take `now`):
# no object of the engine (wire/, cc/, model/, transport/, core/, the CM)
# references a clock or sleep function, and none contains an RDTSC/RDTSCP
# instruction (DPDK's rte_rdtsc() and rte_get_tsc_cycles() are inline, so
# they leave no symbol, only the instruction). net/, comm/ and the side
# channel talk to the world and may read clocks: they are not checked.
# The same scan must find RDTSC in CONTROL (the verbs drop-in, whose
# progress thread reads the TSC), or it is blind and the test fails.
#   no_clock.sh ENGINE.a WIRE.a CM.a CONTROL.a
set -u
engine=$1 wire=$2 cm=$3 control=$4
for t in nm objdump; do command -v $t >/dev/null || { echo "SKIP: $t not installed (binutils)"; exit 77; }; done
clock_syms='^(clock_gettime|clock_getres|clock|gettimeofday|time|ftime|timespec_get|nanosleep|clock_nanosleep|usleep|sleep|rte_get_timer_cycles|rte_get_tsc_cycles|rte_rdtsc|rte_rdtsc_precise|rte_delay_us_block|rte_delay_us_sleep)(@.*)?$'
# member objects of the engine in ENGINE.a: by the layer prefix meson gives them
engine_obj='/(cc|model|transport|core|cm)_[A-Za-z0-9_]*\.c\.o'
# SYMS LIB FILTER: "object symbol" for each undefined symbol of LIB's objects matching FILTER
undef() { nm -A "$1" 2>/dev/null | awk -v re="$2" '$(NF-1) == "U" && $1 ~ re {sub(/:$/, "", $1); print $1, $NF}'; }
# RDTSC LIB FILTER: the objects of LIB matching FILTER that contain RDTSC/RDTSCP
rdtsc() {
  objdump -d "$1" 2>/dev/null | awk -v re="$2" '/file format/ {f = $1} $NF ~ /^rdtscp?$/ && f ~ re {print f}' | sort -u
}
rc=0
bad=$( { undef "$engine" "$engine_obj"; undef "$wire" '.'; undef "$cm" '.'; } | awk -v re="$clock_syms" '$2 ~ re')
if [ -n "$bad" ]; then
  echo "FAIL: engine objects reference a clock or sleep:"; echo "$bad" | sed 's/^/  /'; rc=1
fi
tsc=$( { rdtsc "$engine" "$engine_obj"; rdtsc "$wire" '.'; rdtsc "$cm" '.'; })
if [ -n "$tsc" ]; then
  echo "FAIL: engine objects read the TSC (RDTSC):"; echo "$tsc" | sed 's/^/  /'; rc=1
fi
n=$(nm -A "$engine" 2>/dev/null | awk -F: '{print $2}' | grep -c -E "$engine_obj" || true)
[ "$n" -gt 0 ] || { echo "FAIL: no engine objects found in $engine"; rc=1; }
[ -n "$(rdtsc "$control" '.')" ] ||
  { echo "FAIL: the scan finds no RDTSC in $control either: it is blind"; rc=1; }
[ $rc = 0 ] && echo "ok: the engine ($(ar t "$engine" | sed "s|.*/||" | grep -c -E "^(cc|model|transport|core|cm)_") objects of $(basename "$engine"), $(basename "$wire"), $(basename "$cm")) references no clock and reads no TSC"
exit $rc
