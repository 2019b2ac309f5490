#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Start N ranks of a torch.distributed script, each its own process.

usage: launch.py N SCRIPT [ARGS...]

Rendezvous is torch's env:// (MASTER_ADDR 127.0.0.1, a free MASTER_PORT,
RANK, WORLD_SIZE). The ranks run in a mktemp directory, their output is
printed afterwards, prefixed by rank. Exit 0 when every rank exits 0; when
one fails the others get 20 s and are then killed; the whole run is killed
after DROCE_TEST_TIMEOUT seconds (default 240). Nothing is pinned: the
ranks share whatever cores there are.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    n = int(sys.argv[1])
    script = os.path.abspath(sys.argv[2])
    timeout = float(os.environ.get("DROCE_TEST_TIMEOUT", "240"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="droce-py-")
    procs = []
    try:
        for r in range(n):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                       WORLD_SIZE=str(n), LOCAL_RANK=str(r))
            log = open(os.path.join(tmp, f"rank{r}.log"), "w+")
            p = subprocess.Popen([sys.executable, script] + sys.argv[3:], env=env, cwd=tmp,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            procs.append((p, log))
        deadline = time.monotonic() + timeout
        grace = None
        why = None
        while any(p.poll() is None for p, _ in procs):
            now = time.monotonic()
            if grace is None and any(p.poll() not in (None, 0) for p, _ in procs):
                grace = now + 20
            if now > deadline or (grace is not None and now > grace):
                why = "timed out" if now > deadline else "a rank failed; the others were stopped"
                for p, _ in procs:
                    if p.poll() is None:
                        os.killpg(p.pid, signal.SIGKILL)
                break
            time.sleep(0.2)
        for p, _ in procs:
            p.wait()
        rc = 0
        for r, (p, log) in enumerate(procs):
            log.seek(0)
            for line in log.read().splitlines():
                print(f"[{r}] {line}")
            print(f"[{r}] exit {p.returncode}")
            rc = rc or (p.returncode != 0)
        if why:
            print(f"launch: {why}")
        return 1 if rc or why else 0
    finally:
        for p, log in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
