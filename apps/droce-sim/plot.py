#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot droce-sim's CSV time series: plot.py CSV_DIR PLOT_DIR.

flows.png: receive rate of every connection over time (Gbit/s);
queues.png: depth of every switch egress queue that ever held bytes (KB).
"""
import csv
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    t = [float(r[0]) for r in body]
    cols = {head[i]: [float(r[i]) for r in body] for i in range(1, len(head))}
    return t, cols


def plot(t, cols, ylabel, title, out, scale=1.0, keep=lambda v: True, top=12):
    fig, ax = plt.subplots(figsize=(9, 4.5))
    shown = [(k, v) for k, v in cols.items() if keep(v)]
    shown.sort(key=lambda kv: -max(kv[1]) if kv[1] else 0)
    for k, v in shown[:top]:
        ax.plot(t, [x * scale for x in v], label=k, linewidth=1)
    ax.set_xlabel("simulated time (us)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if shown:
        ax.legend(fontsize="small", ncol=2, loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    t, cols = load(src + "/flows.csv")
    plot(t, cols, "receive rate (Gbit/s)", "per-connection rate", dst + "/flows.png",
         keep=lambda v: any(x > 0 for x in v), top=20)
    t, cols = load(src + "/queues.csv")
    plot(t, cols, "queue (KB)", "switch egress queues", dst + "/queues.png",
         scale=1 / 1024, keep=lambda v: any(x > 0 for x in v))


if __name__ == "__main__":
    main()
