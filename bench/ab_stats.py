#!/usr/bin/env python3
"""The median/best arithmetic of the A/B benchmark scripts (bench/memif_ab.sh,
bench/engine/ab.sh): both alternate two builds round by round and report, for
each, the median (the typical round) and the best (the round least disturbed
by a shared machine) side by side, so that neither is cherry-picked.

  ab_stats.py FILE A_LABEL B_LABEL KEY_NAME
FILE holds one line per round and key: "LABEL KEY VALUE" ("FAILED" as the
value: a failed round, left out and counted). Prints one row per KEY: both
medians, both bests, B/A of each, and the rounds behind them.
"""
import statistics
import sys


def main(path, a, b, key_name):
    rows, failed = {}, {}
    for line in open(path):
        w = line.split()
        if len(w) != 3:
            continue
        who, key, v = w
        if v == "FAILED":
            failed[who] = failed.get(who, 0) + 1
            continue
        rows.setdefault(key, {}).setdefault(who, []).append(float(v))
    print("%8s %14s %14s %14s %14s %8s %8s" % (key_name, a + "_median", b + "_median",
          a + "_best", b + "_best", "median", "best"))
    def order(k):
        return (0, int(k)) if k.isdigit() else (1, k)
    for key in sorted(rows, key=order):
        va, vb = rows[key].get(a, []), rows[key].get(b, [])
        if not va or not vb:
            print("%8s: rounds missing (%s %d, %s %d)" % (key, a, len(va), b, len(vb)))
            continue
        ma, mb = statistics.median(va), statistics.median(vb)
        print("%8s %14.2f %14.2f %14.2f %14.2f %7.2fx %7.2fx" % (key, ma, mb, max(va), max(vb),
              mb / ma, max(vb) / max(va)))
        print("%8s %s: %s" % ("", a, " ".join("%.2f" % x for x in va)))
        print("%8s %s: %s" % ("", b, " ".join("%.2f" % x for x in vb)))
    for who, n in sorted(failed.items()):
        print("%s: %d round(s) FAILED" % (who, n))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
