#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a two-process droce script over memif and check it.

usage: run_pair.py seed|api

Both processes start through scripts/droce-python in a mktemp directory,
on a memif socket named after that directory (unique, abstract); the client
starts once the server's socket is listening (/proc/net/unix), as a memif
client that comes first never connects. seed: examples/seed_example.py, and
every element the server prints must be the one the client sent. api:
tests/python/api_peer.py, both sides exit 0.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = float(os.environ.get("DROCE_TEST_TIMEOUT", "120"))


def listening(path: str) -> bool:
    with open("/proc/net/unix") as f:
        return any(line.rstrip().endswith("@" + path) for line in f)


def main() -> int:
    what = sys.argv[1]
    script = os.path.join(SRC, "examples", "seed_example.py") if what == "seed" else \
        os.path.join(HERE, "api_peer.py")
    runner = os.path.join(SRC, "scripts", "droce-python")
    tmp = tempfile.mkdtemp(prefix="droce-py-pair-")
    sock = os.path.join(tmp, "memif.sock")
    procs = []
    try:
        def start(role, ip, *args):
            log = open(os.path.join(tmp, role + ".log"), "w+")
            p = subprocess.Popen([runner, "--port", f"memif:{role},socket={sock}", "--ip", ip, script,
                                  role, *args], cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
            procs.append((role, p, log))
            return p
        start("server", "198.18.0.1")
        end = time.monotonic() + 30
        while not listening(sock):
            if time.monotonic() > end or procs[0][1].poll() is not None:
                break
            time.sleep(0.05)
        start("client", "198.18.0.2", "198.18.0.1")
        end = time.monotonic() + TIMEOUT
        for role, p, log in procs:
            try:
                p.wait(max(1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        out = {}
        rc = 0
        for role, p, log in procs:
            log.seek(0)
            out[role] = log.read()
            for line in out[role].splitlines():
                print(f"[{role}] {line[:300]}")
            print(f"[{role}] exit {p.returncode}")
            rc = rc or p.returncode
        if rc:
            return 1
        if what == "seed":
            line = next((l for l in out["server"].splitlines() if l.startswith("received ")), None)
            if line is None:
                print("seed: the server printed no array")
                return 1
            got = json.loads(line[len("received "):])
            want = [i * 0.5 for i in range(1024)]
            bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
            if len(got) != len(want) or bad:
                print(f"seed: {len(got)} elements, {len(bad)} wrong, first at {bad[:5]}")
                return 1
            print(f"seed: all {len(got)} elements as sent")
        return 0
    finally:
        for role, p, log in procs:
            if p.poll() is None:
                p.kill()
            log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
