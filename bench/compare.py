#!/usr/bin/python3
"""droce beside its alternatives, measured in one run on this machine.

Runs, each side pinned to its own core:
  - droce-perf write_bw / send_bw / read_bw over memif across sizes, and
    write_lat / send_lat at 8 B;
  - raw memif: dpdk-testpmd txonly -> rxonly at 64 B and 4 KB frames;
  - kernel TCP on loopback: iperf3 (bandwidth, CPU) and qperf tcp_lat;
then writes the figures and ratios into docs/benchmarks.md between the
markers of the "droce vs raw memif vs kernel TCP" section, with the command.

--idle instead measures the idle policy (droce-perf --idle busy|adaptive):
an idle endpoint's CPU share from /proc, write_lat 8 B under each (A B A B,
the median of each), and write_bw 64 KB's cycles per byte from the poll
loops' busy cycles beside iperf3's CPU; it writes them into the "Idle
policy" section.

--interop instead measures, in one run, in one qemu guest (tests/interop/rxe-vm,
software emulation): droce-perf over rxe (--backend verbs) on a veth pair,
droce-perf over droce (af_packet) on a veth pair, kernel TCP on a veth pair,
and droce on the host against rxe in the guest; it writes them into the
"droce vs rxe" section. Only ratios measured side by side there mean anything.

--many-qps instead measures only write_bw 4 KB with 1, 1024 and 10000 QPs
(and perftest ib_write_bw -q 1 / -q 1024 through the drop-in), write_lat
8 B beside the bare memif ping-pong and 64 B write_bw with 2 QPs beside raw
memif, each set interleaved round by round, into its own section.
--comm-core runs --many-qps and then --idle in one run: the comm core's
figures (many QPs, the idle policy and cycles per byte beside TCP,
latency and 64 B beside the bare link), each into its own section.

Usage: bench/compare.py [--build DIR] [--quick] [--no-write] [--interop | --idle]
                        [--many-qps [--no-verbs] [--rounds N]] [--comm-core]
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
IDLE_BEGIN = "<!-- compare-idle:begin -->"
IDLE_END = "<!-- compare-idle:end -->"
IBEGIN = "<!-- interop:begin -->"
IEND = "<!-- interop:end -->"


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
        self.build = build
        self.quick = quick
        self.tmp = tempfile.mkdtemp(prefix="droce-bench-")
        self.port = 21000 + os.getpid() % 5000
        self.log = []

    def droce(self, test, size, extra=(), whole=False):
        """One droce-perf server+client pair; returns the client's first
        result (whole: its JSON, with the counters and the memory)."""
        self.port += 1
        sock = os.path.join(self.tmp, "m%d.sock" % self.port)
        js = os.path.join(self.tmp, "c%d.json" % self.port)
        iters = []
        if test.endswith("_lat"):
            iters = ["-n", "2000" if self.quick else "20000"]
        else:
            n = max(2000, min(400000, (1600 << 20) // max(size, 1)))
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
            j = json.load(f)
            return j if whole else j["results"][0]

    def perftest(self, qps, secs):
        """perftest ib_write_bw 4 KB with QPS QPs over droce's libibverbs
        (scripts/droce-run, memif, each end on its own CPU): Gbit/s."""
        self.port += 1
        sock = os.path.join(self.tmp, "v%d.sock" % self.port)
        run = os.path.join(ROOT, "scripts/droce-run")
        lib = os.path.join(self.build, "stack/verbs/lib")
        t = ["ib_write_bw", "-d", "droce0", "-x", "0", "-s", "4096", "-q", str(qps), "-D",
             str(secs), "-p", str(self.port), "--report_gbits", "-F"]
        def side(role, ip, cpu):
            return [run, "--lib", lib, "--cpu", str(cpu), "--port",
                    "memif:%s,socket=%s" % (role, sock), "--ip", ip] + t
        # to a file: with 1024 QPs perftest prints more than a pipe holds
        slog = open(os.path.join(self.tmp, "v%d.server" % self.port), "w")
        srv = subprocess.Popen(side("server", "198.18.0.1", 0), stdout=slog,
                               stderr=subprocess.STDOUT)
        slog.close()
        time.sleep(1.0)
        try:
            cli = subprocess.run(side("client", "198.18.0.2", 1) + ["127.0.0.1"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=600)
            out = cli.stdout
        except subprocess.TimeoutExpired as e:
            out = "timeout: %s" % (e.stdout or "")
        try:
            srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
        m = re.search(r"^\s*4096\s+\d+\s+[\d.]+\s+([\d.]+)\s", out, re.M)
        # perftest prints 0.00 when its own clock sampling failed (a loaded machine)
        if not m or float(m.group(1)) <= 0:
            self.log.append("FAILED: perftest ib_write_bw -q %d: %s" % (qps, out[-800:]))
            return None
        return float(m.group(1))

    def testpmd(self, frame):
        """Raw memif: txonly -> rxonly, steady-state receive rate (pps)."""
        sock = os.path.join(self.tmp, "tp%d.sock" % frame)
        bsize = 8192 if frame > 2048 else 2048
        vdev = "net_memif0,role=%s,socket=" + sock + ",bsize=%d" % bsize
        base = ["dpdk-testpmd", "--no-huge", "-m", "1024", "--no-pci"]
        app = ["--", "--mbuf-size=%d" % (frame + 512), "-a", "--stats-period", "1",
               "--burst=64", "--txd=2048", "--rxd=2048"]
        secs = 8 if self.quick else 12  # memif takes ~3 s to connect
        # EAL file prefixes of this run only: another testpmd on the machine
        # (a second compare.py) must not share them
        srv = subprocess.Popen(base + ["--lcores", "0@0,1@0", "--file-prefix", "bps%d" % os.getpid(),
                                       "--vdev=" + vdev % "server"] + app +
                               ["--forward-mode=rxonly"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)
        cli = subprocess.Popen(base + ["--lcores", "0@1,1@1", "--file-prefix", "bpc%d" % os.getpid(),
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

    def median_of(self, runs, fn, key):
        """Each figure is the median of @runs runs of its own: on this VM one
        process pair differs from the next by tens of percent (where its
        pages land), whatever runs; a single run is a draw, not a figure."""
        got = [x for x in (fn() for _ in range(runs)) if x is not None]
        if not got:
            return None
        got.sort(key=key)
        return got[(len(got) - 1) // 2]

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

    def memif_lat(self):
        """The bare memif link's ping-pong (no RoCE): the floor under write_lat."""
        tool = os.path.join(self.build, "bench/memif/droce-bench-memif-lat")
        if not os.path.exists(tool):
            self.log.append("FAILED: %s not built" % tool)
            return None
        sock = os.path.join(self.tmp, "lat.sock")
        srv = subprocess.Popen([tool, "server", sock, "0"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            out = subprocess.run([tool, "client", sock, "1", "-n",
                                  "20000" if self.quick else "200000"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=120).stdout
        finally:
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.kill()
        m = re.search(r"typical ([\d.]+) avg ([\d.]+) p99 ([\d.]+)", out)
        if not m:
            self.log.append("FAILED: memif ping-pong: " + out[-800:])
            return None
        return {"t_typical_us": float(m.group(1)), "t_avg_us": float(m.group(2)),
                "t_p99_us": float(m.group(3))}

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


class Guest:
    """One rxe-vm guest (2 vCPUs, so each end of a pair has its own) and its namespace."""

    def __init__(self, build):
        self.vm = os.path.join(ROOT, "tests/interop/rxe-vm")
        self.perf = os.path.join(build, "apps/droce-perf/droce-perf")
        self.work = tempfile.mkdtemp(prefix="droce-cmp-vm-")
        self.env = {}
        self.log = []

    def up(self):
        env = dict(os.environ, RXE_VM_SMP="2", RXE_VM_MEM="1536")
        r = subprocess.run([self.vm, "up", self.work, "1"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("bench: guest did not come up (%d): %s" % (r.returncode, r.stderr.strip()))
        for line in open(os.path.join(self.work, "env")):
            k, _, v = line.strip().partition("=")
            self.env[k] = v
        self.share = os.path.join(self.work, "g0/share")

    def run(self, cmd, secs=120):
        r = subprocess.run([self.vm, "run", self.work, "0", "-t", str(secs), cmd],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def start(self, cmd, secs=120):
        r = subprocess.run([self.vm, "run", self.work, "0", "-t", str(secs), "-b", cmd],
                           capture_output=True, text=True, check=True)
        return r.stdout.strip()

    def wait(self, job, secs=150):
        r = subprocess.run([self.vm, "wait", self.work, job, str(secs)], capture_output=True,
                           text=True)
        return r.returncode, r.stdout + r.stderr

    def down(self):
        subprocess.run([self.vm, "down", self.work])
        shutil.rmtree(self.work, ignore_errors=True)

    def result(self, name, out):
        path = os.path.join(self.share, name)
        try:
            with open(path) as f:
                res = json.load(f)["results"]
            os.unlink(path)
            return res[0] if res else None
        except (OSError, ValueError, KeyError):
            self.log.append(out[-1500:])
            return None

    def pair(self, srv, cli, name):
        """Server and client shell lines in the guest; the client writes /tmp/share/NAME."""
        job = self.start(srv)
        rc, out = self.run(cli)
        src, sout = self.wait(job)
        if rc or src:
            self.log.append("%s: client %d, server %d\n%s\n%s" % (name, rc, src, out[-800:],
                                                                  sout[-800:]))
        return self.result(name, out)


def interop_section(a):
    g = Guest(a.build)
    g.up()
    try:
        return interop_measure(g, a)
    finally:
        g.down()


def interop_measure(g, a):
    dur = "1" if a.quick else "3"
    lat_n = "100" if a.quick else "300"
    P = g.perf
    # In the guest: a veth pair for droce (no kernel IP: af_packet ends), one
    # for kernel TCP (one end in a namespace), and rxe on a veth end with
    # both droce-perf ends on that one device. rxe lives in init_net only:
    # two rxe devices on the two ends of a pair have local addresses, which
    # the kernel routes over lo, and their RTR's neighbour resolution times
    # out; one device serves both QPs through rxe's own loopback, so rxe's
    # frames never reach the wire (a best case for rxe).
    setup = ("ip link add cva type veth peer name cvb && ip link set cva up && ip link set cvb up && "
             "ip link add cra type veth peer name crb && ip addr add 10.89.0.1/24 dev cra && "
             "ip addr add 10.89.0.2/24 dev crb && ip link set cra up && ip link set crb up && "
             "rdma link add rxa type rxe netdev cra && rdma link add rxb type rxe netdev crb && "
             "ip netns add tcpns && ip link add ta type veth peer name tb netns tcpns && "
             "ip addr add 10.90.0.1/24 dev ta && ip link set ta up && "
             "ip -n tcpns addr add 10.90.0.2/24 dev tb && ip -n tcpns link set tb up && "
             "ip -n tcpns link set lo up && sleep 1 && ibv_devices")
    rc, out = g.run(setup)
    if rc:
        sys.exit("bench: guest set-up failed: %s" % out)
    port = [22000 + os.getpid() % 5000]

    def perf_pair(kind, test, size, extra):
        port[0] += 1
        name = "%s-%s-%d.json" % (kind, test, size)
        common = "%s -s %d -p %d %s" % (test, size, port[0], extra)
        if kind == "droce":
            srv = "%s -l 0 -- %s --iface cva --ip 10.88.0.1" % (P, common)
            cli = ("sleep 1; %s -l 1 -- %s --iface cvb --ip 10.88.0.2 --json /tmp/share/%s 127.0.0.1"
                   % (P, common, name))
        else:
            srv = "taskset -c 0 %s %s --backend verbs --ib-dev rxa" % (P, common)
            cli = ("sleep 1; taskset -c 1 %s %s --backend verbs --ib-dev rxa --json /tmp/share/%s "
                   "127.0.0.1" % (P, common, name))
        return g.pair(srv, cli, name)

    res = {}
    for kind in ("droce", "rxe"):
        for size in (4096, 65536):
            res[(kind, "write_bw", size)] = perf_pair(kind, "write_bw", size,
                                                      "-D %s --report_gbits -t 32" % dur)
        res[(kind, "write_lat", 8)] = perf_pair(kind, "write_lat", 8, "-n %s" % lat_n)
    # kernel TCP on the veth pair
    job = g.start("timeout 30 ip netns exec tcpns iperf3 -s -1 -p 5299 >/dev/null 2>&1")
    rc, out = g.run("sleep 1; iperf3 -c 10.90.0.2 -p 5299 -t %s -J" % dur)
    g.wait(job)
    tcp = None
    try:
        tcp = json.loads(out[out.index("{"):])["end"]["sum_received"]["bits_per_second"] / 1e9
    except (ValueError, KeyError):
        g.log.append("iperf3: " + out[-800:])
    # qperf's server runs until stopped: by its PID, once the client is done.
    job = g.start("ip netns exec tcpns qperf -lp 5298 >/dev/null 2>&1 & echo $! >/tmp/share/qperf.pid; "
                  "wait $!", 40)
    rc, out = g.run("sleep 1; qperf -lp 5298 -t %s 10.90.0.2 tcp_lat" % dur)
    g.run("kill $(cat /tmp/share/qperf.pid)")
    g.wait(job, 60)
    m = re.search(r"latency\s*=\s*([\d.]+)\s*(us|ms|ns)", out)
    tcp_lat = None
    if m:
        tcp_lat = float(m.group(1)) * {"us": 1, "ms": 1000, "ns": 0.001}[m.group(2)]
    # droce on the host, rxe in the guest (over the bridge and the tap)
    host = {}
    ns, dif, dip, gip = g.env["NS"], g.env["DROCE_IF"], g.env["DROCE_IP"], g.env["GUEST_IP_0"]
    for test, size, extra in (("write_bw", 4096, "-D %s --report_gbits -t 32" % dur),
                              ("write_bw", 65536, "-D %s --report_gbits -t 32" % dur),
                              ("write_lat", 8, "-n %s" % lat_n)):
        port[0] += 1
        common = "%s -s %d -p %d %s" % (test, size, port[0], extra)
        job = g.start("%s %s --backend verbs" % (P, common))
        js = os.path.join(g.work, "host-%s-%d.json" % (test, size))
        r = subprocess.run(["ip", "netns", "exec", ns, "timeout", "120", P] + common.split() +
                           ["--iface", dif, "--ip", dip, "--json", js, gip],
                           capture_output=True, text=True)
        g.wait(job)
        try:
            host[(test, size)] = json.load(open(js))["results"][0]
        except (OSError, ValueError, KeyError, IndexError):
            host[(test, size)] = None
            g.log.append("host %s %d: %s" % (test, size, (r.stdout + r.stderr)[-800:]))

    def gb(x):
        return x["bw_avg_gbps"] if x else None

    out = []
    out.append("Measured %s, one run, in one qemu guest under TCG (software emulation, "
               "2 vCPUs on this 2-core machine, other work running beside it). Command: "
               "`bench/compare.py --interop%s` (as root, after `ninja -C build`). Absolute "
               "figures are the emulator's, not the stacks': only the ratios of this table, "
               "measured side by side, mean anything."
               % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), " --quick" if a.quick else ""))
    out.append("")
    out.append("| in the guest, veth pair | bytes | Gbit/s | / droce |")
    out.append("|---|---|---|---|")
    for size in (4096, 65536):
        d = gb(res[("droce", "write_bw", size)])
        x = gb(res[("rxe", "write_bw", size)])
        out.append("| droce write_bw (af_packet) | %d | %s | 1 |" % (size, fmt(d, "%.3f")))
        out.append("| rxe write_bw (droce-perf --backend verbs, one rxe device, loopback) | %d | %s | %s |"
                   % (size, fmt(x, "%.3f"), fmt(x / d if x and d else None)))
    out.append("| kernel TCP iperf3 | 128K writes | %s | %s |"
               % (fmt(tcp, "%.3f"), fmt(tcp / gb(res[("droce", "write_bw", 65536)])
                                      if tcp and gb(res[("droce", "write_bw", 65536)]) else None)))
    out.append("")
    out.append("| in the guest, latency 8 B | t_typical us | t_p99 us | / droce |")
    out.append("|---|---|---|---|")
    dl = res[("droce", "write_lat", 8)]
    rl = res[("rxe", "write_lat", 8)]
    out.append("| droce write_lat (RTT/2) | %s | %s | 1 |" % (fmt(dl and dl["t_typical_us"]),
                                                           fmt(dl and dl["t_p99_us"])))
    out.append("| rxe write_lat (RTT/2, one rxe device, loopback) | %s | %s | %s |" % (
        fmt(rl and rl["t_typical_us"]), fmt(rl and rl["t_p99_us"]),
        fmt(rl["t_typical_us"] / dl["t_typical_us"] if rl and dl else None)))
    out.append("| kernel TCP qperf tcp_lat (one way) | %s | | %s |" % (
        fmt(tcp_lat), fmt(tcp_lat / dl["t_typical_us"] if tcp_lat and dl else None)))
    out.append("")
    out.append("| droce on the host <-> rxe in the guest (bridge, tap) | bytes | Gbit/s or t_typical us |")
    out.append("|---|---|---|")
    for (test, size), x in host.items():
        v = gb(x) if test.endswith("_bw") else (x and x["t_typical_us"])
        out.append("| droce client -> rxe server %s | %d | %s |" % (test, size, fmt(v, "%.3f")))
    for l in g.log:
        out.append("")
        out.append("```\n%s\n```" % l)
    text = "\n".join(out)
    print(text)
    if not a.no_write:
        path = os.path.join(ROOT, "docs/benchmarks.md")
        doc = open(path).read() if os.path.exists(path) else "# droce benchmarks\n"
        block = "%s\n%s\n%s" % (IBEGIN, text, IEND)
        if IBEGIN in doc and IEND in doc:
            doc = doc[:doc.index(IBEGIN)] + block + doc[doc.index(IEND) + len(IEND):]
        else:
            doc = (doc.rstrip("\n") + "\n\n## droce vs rxe, in a guest (software emulation)\n\n"
                   "Everything here runs under qemu's TCG software emulation "
                   "(tests/interop/rxe-vm): the figures are a floor set by the emulator, "
                   "and only ratios measured side by side in the same run mean anything.\n\n"
                   + block + "\n")
        with open(path, "w") as f:
            f.write(doc)
    return 0 if not g.log else 1


def proc_ticks(pid):
    """utime + stime of @pid (all its threads), in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def idle_cpu(r, mode, window=3.0):
    """CPU share of a droce-perf server whose client stopped (SIGSTOP)
    mid write_lat: what an idle endpoint costs under --idle @mode. -u 21:
    nothing is retransmitted while the client is stopped."""
    r.port += 1
    sock = os.path.join(r.tmp, "i%d.sock" % r.port)
    common = ["write_lat", "-s", "8", "-D", "6", "-u", "21", "-p", str(r.port), "--timeout", "20",
              "--idle", mode]
    srv = subprocess.Popen([r.perf, "-l", "0", "--", *common, "--memif", "server,socket=" + sock],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    cli = subprocess.Popen([r.perf, "-l", "1", "--", *common, "--memif", "client,socket=" + sock,
                            "127.0.0.1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    # Stop it once it runs (it says so, flushed, when connected); before
    # that the server waits in the side channel, which sleeps anyway.
    end = time.monotonic() + 60
    for line in cli.stdout:
        if line.startswith(" Path MTU") or time.monotonic() > end:
            break
    time.sleep(0.5)
    cli.send_signal(signal.SIGSTOP)
    time.sleep(0.5)
    t0, w0 = proc_ticks(srv.pid), time.monotonic()
    time.sleep(window)
    t1, w1 = proc_ticks(srv.pid), time.monotonic()
    cli.send_signal(signal.SIGCONT)
    try:
        cli.communicate(timeout=60)
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        cli.kill()
        srv.kill()
    if cli.returncode != 0:
        r.log.append("FAILED: idle_cpu %s: client exit %s" % (mode, cli.returncode))
        return None
    return 100.0 * (t1 - t0) / os.sysconf("SC_CLK_TCK") / (w1 - w0)


def droce_loops(r, test, size, extra=()):
    """A droce-perf pair with --json on both sides: (client results, the
    client's loop, the server's loop)."""
    r.port += 1
    sock = os.path.join(r.tmp, "l%d.sock" % r.port)
    js = [os.path.join(r.tmp, "%s%d.json" % (s, r.port)) for s in ("s", "c")]
    n = max(2000, min(400000, (1600 << 20) // max(size, 1)))
    common = [test, "-s", str(size), "-p", str(r.port), "-n", str(n // 4 if r.quick else n)] + list(extra)
    srv = subprocess.Popen([r.perf, "-l", "0", "--", *common, "--memif", "server,socket=" + sock,
                            "--json", js[0]], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    time.sleep(1.0)
    cli = subprocess.run([r.perf, "-l", "1", "--", *common, "--memif", "client,socket=" + sock,
                          "--json", js[1], "127.0.0.1"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=180)
    try:
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
    if cli.returncode != 0 or not all(os.path.exists(j) for j in js):
        r.log.append("FAILED: droce-perf %s\n%s" % (" ".join(common), cli.stdout[-2000:]))
        return None
    d = [json.load(open(j)) for j in js]
    return d[1]["results"][0], d[1]["counters"].get("loop"), d[0]["counters"].get("loop")


def idle_section(a):
    """The idle policy's figures, each pair of modes measured interleaved
    (busy, adaptive, busy, adaptive ...) in the same run. -u 18 (a 1 s ACK
    timeout): on this shared machine a side descheduled for a while
    otherwise exhausts its retries (docs/tuning.md, "What to turn first")."""
    r = Run(a.build, a.quick)
    runs = 1 if a.quick else 5
    hz = tsc_hz()
    load0 = os.getloadavg()[0]
    cpu = {"busy": [], "adaptive": []}
    lat = {"busy": [], "adaptive": []}
    for _ in range(runs):
        for mode in ("busy", "adaptive"):
            x = idle_cpu(r, mode)
            if x is not None:
                cpu[mode].append(x)
            try:
                y = r.droce("write_lat", 8, ["--idle", mode, "-u", "18"])
            except subprocess.TimeoutExpired:
                r.log.append("TIMEOUT: droce-perf write_lat 8 B --idle %s" % mode)
                y = None
            if y:
                lat[mode].append(y["t_typical_us"])
    med = lambda v: statistics.median(v) if v else None
    # Cycles per byte from the loops' busy cycles (both sides), write_bw 64 KB.
    cpb = []
    for _ in range(max(1, runs // 2)):
        got = droce_loops(r, "write_bw", 65536, ["--report_gbits", "-q", "2", "-u", "18"])
        if got and got[1] and got[2]:
            res, cl, sl = got
            cpb.append((cl["busy_cycles"] + sl["busy_cycles"]) / (res["iterations"] * res["bytes"]))
    tcp = r.median_of(1 if a.quick else 3, r.iperf3, lambda x: x[0])
    tcp_cpb = (tcp[1] + tcp[2]) / 100 * hz / (tcp[0] / 8) if tcp else None
    load1 = os.getloadavg()[0]
    out = ["Measured %s on this machine (%d cores, load average %.1f at the start, %.1f at the "
           "end: every figure is noisy), the two modes interleaved in the same run, %d of each, "
           "the median shown. Command: `bench/compare.py %s%s`."
           % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(), load0, load1,
              runs, "--comm-core" if a.comm_core else "--idle", " --quick" if a.quick else ""), "",
           "| what | --idle busy | --idle adaptive | adaptive / busy |", "|---|---|---|---|"]
    cb, ca, lb, la = med(cpu["busy"]), med(cpu["adaptive"]), med(lat["busy"]), med(lat["adaptive"])
    out.append("| idle endpoint's CPU share (server, client SIGSTOPped 3 s) | %s%% | %s%% | |"
               % (fmt(cb, "%.1f"), fmt(ca, "%.1f")))
    out.append("| write_lat 8 B t_typical us (RTT/2) | %s | %s | %s [<= 1.2] |"
               % (fmt(lb), fmt(la), fmt(la / lb if la and lb else None)))
    out.append("")
    if cpb and tcp_cpb:
        c = statistics.median(cpb)
        out.append("- write_bw 64 KB, 2 QPs, cycles per byte from the poll loops' busy cycles "
                   "(both sides, `--json` counters.loop.busy_cycles / bytes): droce %.2f, kernel "
                   "TCP (iperf3, both ends' CPU) %.2f: **%.2f** x TCP. Busy time is wall time "
                   "(as DPDK's lcore busyness, which assumes a core of its own): a loop "
                   "descheduled in a busy iteration counts that time too, so under load this "
                   "overstates droce's cycles. (Counting the whole spinning cores instead is the "
                   "\"CPU cycles per byte\" ratio of the section above.)"
                   % (c, tcp_cpb, c / tcp_cpb))
    return finish(a, r, out, IDLE_BEGIN, IDLE_END, "Idle policy: CPU that follows the load")


def fmt(x, spec="%.2f"):
    return "n/a" if x is None else spec % x


def write_block(begin, end, heading, text):
    """Replace the text between @begin and @end in docs/benchmarks.md, or
    append it under a new section @heading."""
    path = os.path.join(ROOT, "docs/benchmarks.md")
    doc = open(path).read() if os.path.exists(path) else "# droce benchmarks\n"
    block = "%s\n%s\n%s" % (begin, text, end)
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n## %s\n\n%s\n" % (heading, block)
    with open(path, "w") as f:
        f.write(doc)


def finish(a, r, out, begin, end, heading):
    """Print the lines @out with the run's failures, write them into their
    block of docs/benchmarks.md (unless --no-write), clean up. @return the
    exit status: 1 when any run failed."""
    for l in r.log:
        out.append("")
        out.append("```\n%s\n```" % l)
    text = "\n".join(out)
    print(text)
    if not a.no_write:
        write_block(begin, end, heading, text)
    shutil.rmtree(r.tmp, ignore_errors=True)
    return 0 if not r.log else 1


MQ_BEGIN = "<!-- compare-manyqp:begin -->"
MQ_END = "<!-- compare-manyqp:end -->"


def many_qps(r, runs, counts, secs, verbs_qps):
    """Many QPs on the wire: write_bw 4 KB over memif with each count of
    QPs, the counts interleaved in each round (1, 1024, 10000, 1, ...) so
    the machine's load falls on all of them; the median round of each.
    Then perftest ib_write_bw through the drop-in, 1 QP and verbs_qps QPs
    interleaved the same way. Returns the lines of its table."""
    got = {q: [] for q in counts}
    for _ in range(runs):
        for q in counts:
            j = r.droce("write_bw", 4096, ["--report_gbits", "-q", str(q), "-D", str(secs), "-u", "18"],
                        whole=True)
            if j:
                got[q].append(j)
    vb = {q: [] for q in (1, verbs_qps)} if verbs_qps else {}
    for _ in range(runs if verbs_qps else 0):
        for q in vb:
            x = r.perftest(q, secs)
            if x is not None:
                vb[q].append(x)
    med = {}
    for q, js in got.items():
        js.sort(key=lambda j: j["results"][0]["bw_avg_gbps"])
        med[q] = js[(len(js) - 1) // 2] if js else None
    one = med.get(1) and med[1]["results"][0]["bw_avg_gbps"]
    out = ["| write_bw 4 KB over memif | QPs | Gbit/s (median; all rounds) | ratio to 1 QP [>= 0.8] "
           "| peak RSS per QP, KB | hugetlbfs |", "|---|---:|---:|---:|---:|---:|"]
    for q in counts:
        j = med[q]
        if not j:
            out.append("| droce-perf | %d | failed | | | |" % q)
            continue
        g = j["results"][0]["bw_avg_gbps"]
        mem = j.get("memory", {})
        allg = ", ".join("%.2f" % x["results"][0]["bw_avg_gbps"] for x in got[q])
        out.append("| droce-perf | %d | %.2f (%s) | %s | %.1f | %.1f MB |" %
                   (q, g, allg, fmt(one and g / one), mem.get("rss_peak_bytes", 0) / 1e3 / q,
                    mem.get("hugetlb_bytes", 0) / 1e6))
    vone = statistics.median(vb[1]) if vb.get(1) else None
    for q in vb:
        v = statistics.median(vb[q]) if vb[q] else None
        out.append("| perftest ib_write_bw over droce's libibverbs | %d | %s (%s) | %s | | |" %
                   (q, fmt(v), ", ".join("%.2f" % x for x in vb[q]),
                    fmt(v and vone and v / vone)))
    return out


def small_vs_link(r, runs):
    """Latency and small messages against the bare link: write_lat 8 B
    beside bench/memif/memif_lat.c's ping-pong over the same memif, and
    64 B write_bw with 2 QPs beside raw memif (testpmd) at 64 B frames,
    alternated within each round. Returns the lines of its table."""
    wl, link, w64, raw = [], [], [], []
    for _ in range(runs):
        x = r.droce("write_lat", 8)
        if x:
            wl.append(x["t_typical_us"])
        x = r.memif_lat()
        if x:
            link.append(x["t_typical_us"])
        x = r.droce("write_bw", 64, ["--report_gbits", "-q", "2"])
        if x:
            w64.append(x["msg_rate_mpps"])
        x = r.testpmd(64)
        if x:
            raw.append(x / 1e6)
    m = lambda v: statistics.median(v) if v else None
    a, b, c, d = m(wl), m(link), m(w64), m(raw)
    return ["| what | droce | the bare link | ratio | target |", "|---|---:|---:|---:|---|",
            "| 8 B write_lat typical, us (RTT/2) | %s | %s (memif ping-pong, RTT/2) | %s | <= 1.5 |"
            % (fmt(a), fmt(b), fmt(a and b and a / b)),
            "| 64 B write_bw, 2 QPs, Mpps | %s | %s (testpmd txonly->rxonly, 64 B frames) | %s | "
            ">= 6 Mpps |" % (fmt(c, "%.3f"), fmt(d, "%.3f"), fmt(c and d and c / d)),
            "", "Rounds: write_lat %s us; memif ping-pong %s us; 64 B write_bw %s Mpps; raw memif "
            "64 B %s Mpps." % tuple(", ".join("%.2f" % x for x in v) for v in (wl, link, w64, raw))]


def manyqp_section(a):
    """--many-qps: only the two tables above, written between their own
    markers in docs/benchmarks.md."""
    r = Run(a.build, a.quick)
    runs = 1 if a.quick else a.rounds
    la0 = open("/proc/loadavg").read().split()[:3]
    counts = (1, 1024) if a.quick else (1, 1024, 10000)
    t1 = many_qps(r, runs, counts, 2 if a.quick else 3, 0 if a.no_verbs else 1024)
    t2 = small_vs_link(r, runs)
    la1 = open("/proc/loadavg").read().split()[:3]
    out = ["Measured %s on this machine (%d cores), load average %s at the start and %s at "
           "the end, each endpoint pinned to its own core, %d round(s). Command: "
           "`bench/compare.py %s%s%s%s`." %
           (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(), " ".join(la0),
            " ".join(la1), runs, "--comm-core" if a.comm_core else "--many-qps",
            " --quick" if a.quick else "",
            " --no-verbs" if a.no_verbs else "",
            " --rounds %d" % a.rounds if a.rounds != 3 and not a.quick else ""), ""] + t1 + [""] + t2
    return finish(a, r, out, MQ_BEGIN, MQ_END, "Many QPs and small messages over memif")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--interop", action="store_true")
    ap.add_argument("--idle", action="store_true")
    ap.add_argument("--many-qps", action="store_true",
                    help="only 1 vs 1 k vs 10 k QPs and latency/64 B against the bare link")
    ap.add_argument("--no-verbs", action="store_true",
                    help="--many-qps without the perftest runs through the drop-in")
    ap.add_argument("--comm-core", action="store_true",
                    help="--many-qps and --idle in one run: many QPs, the idle policy and "
                    "cycles per byte, latency and 64 B against the bare link")
    ap.add_argument("--rounds", type=int, default=3,
                    help="--many-qps: rounds of each measurement (the median is shown)")
    a = ap.parse_args()
    if a.interop:
        return interop_section(a)
    if a.idle:
        return idle_section(a)
    if a.comm_core:
        rc = manyqp_section(a)
        return idle_section(a) or rc
    if a.many_qps:
        return manyqp_section(a)
    for tool in ("dpdk-testpmd", "iperf3", "qperf", "taskset"):
        if not shutil.which(tool):
            sys.exit("bench: %s missing (scripts/setup installs it)" % tool)
    r = Run(a.build, a.quick)
    runs = 1 if a.quick else 3
    hz = tsc_hz()
    rows = []
    bw = {}
    for test in ("write_bw", "send_bw", "read_bw"):
        for size in (64, 4096, 65536):
            res = r.median_of(runs, lambda: r.droce(test, size, ["--report_gbits", "-q", "2"]),
                              lambda x: x["bw_avg_gbps"])
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
        lat[test] = r.median_of(runs, lambda: r.droce(test, 8), lambda x: x["t_typical_us"])
    raw = {f: r.median_of(runs, lambda: r.testpmd(f), lambda x: x) for f in (64, 4096)}
    tcp_bps, tcp_cpu_tx, tcp_cpu_rx = r.median_of(runs, r.iperf3, lambda x: x[0])
    tcp_lat = r.median_of(runs, r.qperf_lat, lambda x: x)
    link_lat = r.median_of(runs, r.memif_lat, lambda x: x["t_typical_us"])

    raw4k_gbps = raw[4096] * 4096 * 8 / 1e9 if raw[4096] else None
    w64k = bw[("write_bw", 65536)]
    w64 = bw[("write_bw", 64)]
    tcp_gbps = tcp_bps / 1e9
    # CPU per byte of TCP: both ends' CPU share of one core each, at the clock.
    tcp_cpb = (tcp_cpu_tx + tcp_cpu_rx) / 100 * hz / (tcp_bps / 8)
    droce_cpb = 2 * hz / (w64k["bw_avg_gbps"] * 1e9 / 8) if w64k else None
    wl = lat["write_lat"]
    out = []
    out.append("Measured %s on this machine (%d cores, %.2f GHz), one run, every figure the "
               "median of %d runs of its own (process pairs), each endpoint "
               "pinned to its own core. Command: `bench/compare.py%s` (after `ninja -C build`)."
               % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(), hz / 1e9,
                  runs, " --quick" if a.quick else ""))
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
    out.append("| raw memif ping-pong, 82-byte frames (RTT/2) | %s | %s | %s |" %
               (fmt(link_lat and link_lat["t_typical_us"]), fmt(link_lat and link_lat["t_avg_us"]),
                fmt(link_lat and link_lat["t_p99_us"])))
    out.append("| kernel TCP qperf tcp_lat (one way) | %s | | |" % fmt(tcp_lat))
    out.append("")
    out.append("Ratios (the target in brackets; \"the bare link\" is the same ratio "
               "for raw memif, which carries every droce frame here, so droce cannot pass it):")
    out.append("")
    if w64k and raw4k_gbps:
        out.append("- write_bw 64 KB goodput / raw memif at 4 KB frames: **%.2f** [>= 0.5]"
                   % (w64k["bw_avg_gbps"] / raw4k_gbps))
    if w64k:
        out.append("- write_bw 64 KB / kernel TCP: **%.2f** [>= 2.5]%s" %
                   (w64k["bw_avg_gbps"] / tcp_gbps, "; the bare link: raw memif 4 KB / TCP %.2f"
                    % (raw4k_gbps / tcp_gbps) if raw4k_gbps else ""))
    if wl and tcp_lat:
        out.append("- write_lat 8 B typical / qperf tcp_lat: **%.2f** [<= 0.1]%s" %
                   (wl["t_typical_us"] / tcp_lat, "; the bare link: memif ping-pong %.2f, so droce "
                    "adds %.2f us per one-way trip" % (link_lat["t_typical_us"] / tcp_lat,
                                                      wl["t_typical_us"] - link_lat["t_typical_us"])
                    if link_lat else ""))
    if w64:
        out.append("- write_bw 64 B message rate, 2 QPs: **%.2f Mpps** [>= 6, item 5]"
                   % w64["msg_rate_mpps"])
    if droce_cpb:
        link_cpb = 2 * hz / (raw4k_gbps * 1e9 / 8) if raw4k_gbps else None
        out.append("- CPU cycles per byte at 64 KB writes: droce %.2f (both poll cores), TCP %.2f: "
                   "**%.2f** [<= 0.5]%s" % (droce_cpb, tcp_cpb, droce_cpb / tcp_cpb,
                                            "; the bare link: two spinning cores at raw memif's "
                                            "4 KB rate %.2f cycles/byte = %.2f x TCP"
                                            % (link_cpb, link_cpb / tcp_cpb) if link_cpb else ""))
    return finish(a, r, out, BEGIN, END, "droce vs raw memif vs kernel TCP")


if __name__ == "__main__":
    sys.exit(main())
