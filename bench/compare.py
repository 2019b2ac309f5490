#!/usr/bin/python3
"""droce beside its alternatives, measured in one run on this machine.

Runs, each side pinned to its own core:
  - droce-perf write_bw / send_bw / read_bw over memif across sizes, and
    write_lat / send_lat at 8 B;
  - raw memif: dpdk-testpmd txonly -> rxonly at 64 B and 4 KB frames;
  - kernel TCP on loopback: iperf3 (bandwidth, CPU) and qperf tcp_lat;
then writes the figures and ratios into docs/benchmarks.md between the
markers of the "droce vs raw memif vs kernel TCP" section, with the command.

Usage: bench/compare.py [--build DIR] [--quick] [--no-write]
Timing here is noisy (2 cores, shared): compare ratios from the same run.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- compare:begin -->"
END = "<!-- compare:end -->"


def tsc_hz():
    """CPU clock for cycles/byte: /proc/cpuinfo's MHz of CPU 0."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) * 1e6
    return 2e9


class Run:
    def __init__(self, build, quick):
        self.perf = os.path.join(build, "apps/droce-perf/droce-perf")
        self.quick = quick
        self.tmp = tempfile.mkdtemp(prefix="droce-bench-")
        self.port = 21000 + os.getpid() % 5000
        self.log = []

    def droce(self, test, size, extra=()):
        """One droce-perf server+client pair; returns the client's JSON."""
        self.port += 1
        sock = os.path.join(self.tmp, "m%d.sock" % self.port)
        js = os.path.join(self.tmp, "c%d.json" % self.port)
        iters = []
        if test.endswith("_lat"):
            iters = ["-n", "2000" if self.quick else "20000"]
        else:
            n = max(2000, min(200000, (400 << 20) // max(size, 1)))
            iters = ["-n", str(n // 4 if self.quick else n)]
        common = [test, "-s", str(size), "-p", str(self.port)] + iters + list(extra)
        srv = subprocess.Popen([self.perf, "-l", "0", "--", *common, "--memif",
                                "server,socket=" + sock],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        cli = subprocess.run([self.perf, "-l", "1", "--", *common, "--memif",
                              "client,socket=" + sock, "--json", js, "127.0.0.1"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=180)
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
        cmd = "droce-perf %s" % " ".join(common)
        if cli.returncode != 0 or not os.path.exists(js):
            self.log.append("FAILED: %s\n%s" % (cmd, cli.stdout[-2000:]))
            return None
        with open(js) as f:
            return json.load(f)["results"][0]

    def testpmd(self, frame):
        """Raw memif: txonly -> rxonly, steady-state receive rate (pps)."""
        sock = os.path.join(self.tmp, "tp%d.sock" % frame)
        bsize = 8192 if frame > 2048 else 2048
        vdev = "net_memif0,role=%s,socket=" + sock + ",bsize=%d" % bsize
        base = ["dpdk-testpmd", "--no-huge", "-m", "1024", "--no-pci"]
        app = ["--", "--mbuf-size=%d" % (frame + 512), "-a", "--stats-period", "1",
               "--burst=64", "--txd=2048", "--rxd=2048"]
        secs = 8 if self.quick else 12  # memif takes ~3 s to connect
        srv = subprocess.Popen(base + ["--lcores", "0@0,1@0", "--file-prefix", "bps",
                                       "--vdev=" + vdev % "server"] + app +
                               ["--forward-mode=rxonly"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)
        cli = subprocess.Popen(base + ["--lcores", "0@1,1@1", "--file-prefix", "bpc",
                                       "--vdev=" + vdev % "client"] + app +
                               ["--forward-mode=txonly", "--txpkts=%d" % frame],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(secs + 1.5)
        for p in (cli, srv):
            p.send_signal(signal.SIGINT)
        try:
            out = srv.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            srv.kill()
            out = srv.communicate()[0]
        try:
            cli.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cli.kill()
        rates = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", out)]
        rates = [r for r in rates if r > 0]
        if not rates:
            self.log.append("FAILED: testpmd %d B: no traffic\n%s" % (frame, out[-800:]))
            return None
        # Steady state: the samples within half of the best one (ramp-up and
        # teardown seconds are partial).
        top = max(rates)
        return statistics.median([r for r in rates if r >= top / 2])

    def testpmd_best(self, frame, runs=2):
        """memif between two testpmds varies run to run here: take the best."""
        got = [x for x in (self.testpmd(frame) for _ in range(runs)) if x]
        if got:
            self.log = [l for l in self.log if not l.startswith("FAILED: testpmd %d B" % frame)]
        return max(got) if got else None

    def iperf3(self):
        srv = subprocess.Popen(["taskset", "-c", "0", "iperf3", "-s", "-1", "-p", "5299"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.7)
        secs = "3" if self.quick else "8"
        out = subprocess.run(["taskset", "-c", "1", "iperf3", "-c", "127.0.0.1", "-p", "5299",
                              "-t", secs, "-J"], stdout=subprocess.PIPE, text=True,
                             timeout=60).stdout
        srv.wait(timeout=10)
        j = json.loads(out)
        end = j["end"]
        bps = end["sum_received"]["bits_per_second"]
        cpu = end["cpu_utilization_percent"]
        return bps, cpu["host_total"], cpu["remote_total"]

    def qperf_lat(self):
        srv = subprocess.Popen(["taskset", "-c", "0", "qperf", "-lp", "5298"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.7)
        try:
            out = subprocess.run(["taskset", "-c", "1", "qperf", "-lp", "5298", "-t",
                                  "3" if self.quick else "6", "-m", "8", "127.0.0.1",
                                  "tcp_lat"], stdout=subprocess.PIPE, text=True,
                                 timeout=60).stdout
        finally:
            srv.terminate()
            srv.wait(timeout=10)
        m = re.search(r"latency\s*=\s*([\d.]+)\s*(us|ns|ms)", out)
        if not m:
            self.log.append("FAILED: qperf: " + out)
            return None
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "ns" else v * 1000 if m.group(2) == "ms" else v


def fmt(x, spec="%.2f"):
    return "n/a" if x is None else spec % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    for tool in ("dpdk-testpmd", "iperf3", "qperf", "taskset"):
        if not shutil.which(tool):
            sys.exit("bench: %s missing (scripts/setup installs it)" % tool)
    r = Run(a.build, a.quick)
    hz = tsc_hz()
    rows = []
    bw = {}
    for test in ("write_bw", "send_bw", "read_bw"):
        for size in (64, 4096, 65536):
            res = r.droce(test, size, ["--report_gbits", "-q", "2"])
            bw[(test, size)] = res
            if res:
                # A poll-mode side spends its whole core: cycles per payload byte.
                cpb = hz / (res["bw_avg_gbps"] * 1e9 / 8) if res["bw_avg_gbps"] else None
                rows.append("| droce %s | %d | %.2f | %.3f | %s |" %
                            (test, size, res["bw_avg_gbps"], res["msg_rate_mpps"],
                             fmt(cpb, "%.2f")))
            else:
                rows.append("| droce %s | %d | failed | | |" % (test, size))
    lat = {}
    for test in ("write_lat", "send_lat"):
        lat[test] = r.droce(test, 8)
    raw = {f: r.testpmd_best(f) for f in (64, 4096)}
    tcp_bps, tcp_cpu_tx, tcp_cpu_rx = r.iperf3()
    tcp_lat = r.qperf_lat()

    raw4k_gbps = raw[4096] * 4096 * 8 / 1e9 if raw[4096] else None
    w64k = bw[("write_bw", 65536)]
    w64 = bw[("write_bw", 64)]
    tcp_gbps = tcp_bps / 1e9
    # CPU per byte of TCP: both ends' CPU share of one core each, at the clock.
    tcp_cpb = (tcp_cpu_tx + tcp_cpu_rx) / 100 * hz / (tcp_bps / 8)
    droce_cpb = 2 * hz / (w64k["bw_avg_gbps"] * 1e9 / 8) if w64k else None
    wl = lat["write_lat"]
    out = []
    out.append("Measured %s on this machine (%d cores, %.2f GHz), one run, each endpoint "
               "pinned to its own core. Command: `bench/compare.py%s` (after `ninja -C build`)."
               % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(), hz / 1e9,
                  " --quick" if a.quick else ""))
    out.append("")
    out.append("| what | bytes | Gbit/s | Mpps | CPU cycles/byte (one side) |")
    out.append("|---|---|---|---|---|")
    out.extend(rows)
    out.append("| raw memif testpmd txonly->rxonly | 64 | %s | %s | |" %
               (fmt(raw[64] and raw[64] * 64 * 8 / 1e9), fmt(raw[64] and raw[64] / 1e6, "%.3f")))
    out.append("| raw memif testpmd txonly->rxonly | 4096 | %s | %s | |" %
               (fmt(raw4k_gbps), fmt(raw[4096] and raw[4096] / 1e6, "%.3f")))
    out.append("| kernel TCP iperf3 loopback | 128K writes | %.2f | | %.2f (tx %.0f%% + rx %.0f%% CPU) |"
               % (tcp_gbps, tcp_cpb, tcp_cpu_tx, tcp_cpu_rx))
    out.append("")
    out.append("| latency, 8 B | t_typical us | t_avg us | t_p99 us |")
    out.append("|---|---|---|---|")
    for test in ("write_lat", "send_lat"):
        x = lat[test]
        out.append("| droce %s (RTT/2) | %s | %s | %s |" % (test, fmt(x and x["t_typical_us"]),
                                                         fmt(x and x["t_avg_us"]),
                                                         fmt(x and x["t_p99_us"])))
    out.append("| kernel TCP qperf tcp_lat (one way) | %s | | |" % fmt(tcp_lat))
    out.append("")
    out.append("Ratios (targets of issue 4 in brackets):")
    out.append("")
    if w64k and raw4k_gbps:
        out.append("- write_bw 64 KB goodput / raw memif at 4 KB frames: **%.2f** [>= 0.5, stretch 0.8]"
                   % (w64k["bw_avg_gbps"] / raw4k_gbps))
    if w64k:
        out.append("- write_bw 64 KB / kernel TCP: **%.2f**" % (w64k["bw_avg_gbps"] / tcp_gbps))
    if wl and tcp_lat:
        out.append("- write_lat 8 B typical / qperf tcp_lat: **%.2f** [<= 0.25]"
                   % (wl["t_typical_us"] / tcp_lat))
    if w64:
        out.append("- write_bw 64 B message rate: **%.2f Mpps** [>= 4 Mpps]" % w64["msg_rate_mpps"])
    if droce_cpb:
        out.append("- CPU cycles per byte at 64 KB writes: droce %.2f (both poll cores), TCP %.2f"
                   % (droce_cpb, tcp_cpb))
    for l in r.log:
        out.append("")
        out.append("```\n%s\n```" % l)
    text = "\n".join(out)
    print(text)
    if not a.no_write:
        path = os.path.join(ROOT, "docs/benchmarks.md")
        doc = open(path).read() if os.path.exists(path) else "# droce benchmarks\n"
        block = "%s\n%s\n%s" % (BEGIN, text, END)
        if BEGIN in doc and END in doc:
            doc = doc[:doc.index(BEGIN)] + block + doc[doc.index(END) + len(END):]
        else:
            doc = doc.rstrip("\n") + "\n\n## droce vs raw memif vs kernel TCP\n\n" + block + "\n"
        with open(path, "w") as f:
            f.write(doc)
    shutil.rmtree(r.tmp, ignore_errors=True)
    return 0 if not r.log else 1


if __name__ == "__main__":
    sys.exit(main())
