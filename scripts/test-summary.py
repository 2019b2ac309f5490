#!/usr/bin/env python3
"""scripts/test's bookkeeping: what passed, failed, skipped or was retried.

  test-summary.py add STATE BUILD_DIR LABEL   read BUILD_DIR/meson-logs/testlog.json
  test-summary.py record STATE NAME RESULT [REASON]   one step outside meson
  test-summary.py report STATE SOURCE_ROOT     the last lines; exit 1 on a failure

STATE is a JSON-lines file, one record per test. Every suite is treated the
same way: nothing here names a suite except where a suite cannot run on
this machine (the interop guest needs qemu, a tap device and a kernel image).

Skips are listed by name, with the reason the test printed ("SKIP: ..."),
and counted on the last lines; cmocka's skip() inside a test that passed is
listed too ("[  SKIPPED ]" in its output). Lines a test prints starting with
RETRIED:, KNOWN: or PENDING are counted: a pass that needed a second try or
a known failure is visible beside the passes.

DROCE_TEST_REQUIRE=1: a test that skipped (exit 77) fails unless the reason
is one this machine cannot help: the shared data outside the project is
absent, the CPU lacks an instruction set, no root, or the interop guest
cannot run at all. A guest that did not boot in time is a failure there
(tests/interop/rxe-vm). DROCE_TEST_SKIP_OK (a regular expression) accepts
more reasons. A suite that some meson.build names but no test was configured
for (a test not built at configure time) is listed, and fails in that mode.
"""
import json
import os
import re
import shutil
import sys

MARKS = re.compile(r"^(RETRIED:|KNOWN:|PENDING)", re.M)
SKIP_LINE = re.compile(r"^\s*SKIP\b[^\n]*", re.M)
CMOCKA_SKIP = re.compile(r"^\[  SKIPPED \] (\S+)", re.M)
# suites the runner leaves out on purpose (known failures awaiting a fix)
EXCLUDED = {"transport-pending", "pcap-pending"}


def load(state):
    try:
        with open(state) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def append(state, rec):
    with open(state, "a") as f:
        f.write(json.dumps(rec) + "\n")


def add(state, build, label):
    path = os.path.join(build, "meson-logs", "testlog.json")
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        append(state, {"name": label + ": meson test", "suite": "", "result": "FAIL",
                       "reason": "no " + path, "label": label})
        return
    for line in lines:
        if not line.strip():
            continue
        try:
            t = json.loads(line)
        except ValueError:  # a line meson was still writing
            continue
        out = t.get("stdout") or ""
        suites = [s.split(":", 1)[-1] for s in t.get("suite", [])]
        m = SKIP_LINE.search(out)
        append(state, {
            "name": t.get("name", "?"),
            "suite": ",".join(suites),
            "result": t.get("result", "?"),
            "duration": t.get("duration", 0),
            "reason": m.group(0).strip() if m else "",
            "marks": [l.strip() for l in out.splitlines() if MARKS.match(l)],
            "subskips": CMOCKA_SKIP.findall(out),
            "label": label,
        })


def interop_can_run():
    kernels = [f for f in os.listdir("/boot") if f.startswith("vmlinuz-")] if os.path.isdir("/boot") else []
    return (os.geteuid() == 0 and shutil.which("qemu-system-x86_64") is not None
            and os.path.exists("/dev/net/tun") and bool(kernels))


def accepted(rec, root):
    """A skip REQUIRE mode lets pass: the machine, not the project, lacks it."""
    why = rec.get("reason", "")
    extra = os.environ.get("DROCE_TEST_SKIP_OK")
    if extra and re.search(extra, why):
        return True
    if "shared" in why and "absent" in why and not os.path.isdir(os.path.join(root, "..", "shared")):
        return True
    if re.search(r"VPCLMULQDQ|AVX|XGETBV|on this CPU", why):
        return True
    if os.geteuid() != 0 and re.search(r"root|namespace|veth", why):
        return True
    if "interop" in rec.get("suite", "").split(",") and not interop_can_run():
        return True
    return False


def configured_suites(build_dirs):
    seen = set()
    for b in build_dirs:
        try:
            with open(os.path.join(b, "meson-info", "intro-tests.json")) as f:
                for t in json.load(f):
                    seen.update(s.split(":", 1)[-1] for s in t.get("suite", []))
        except (FileNotFoundError, ValueError):
            pass
    return seen


def named_suites(root):
    names = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("build", ".")) and x != "subprojects"]
        if "meson.build" in files:
            with open(os.path.join(d, "meson.build")) as f:
                names.update(re.findall(r"suite\s*:\s*'([A-Za-z0-9_-]+)'", f.read()))
    return names - EXCLUDED


def report(state, root):
    recs = load(state)
    require = os.environ.get("DROCE_TEST_REQUIRE") == "1"
    passed = [r for r in recs if r["result"] in ("OK", "EXPECTEDFAIL")]
    skipped = [r for r in recs if r["result"] == "SKIP"]
    failed = [r for r in recs if r["result"] not in ("OK", "EXPECTEDFAIL", "SKIP")]
    required = [r for r in skipped if require and not accepted(r, root)]
    marked = [(r, m) for r in recs for m in r.get("marks", [])]
    subskips = [(r, s) for r in recs for s in r.get("subskips", [])]
    builds = sorted({r["build"] for r in recs if r.get("build")})
    missing = sorted(named_suites(root) - configured_suites(builds)) if builds else []

    if marked:
        print("retried or known (%d):" % len(marked))
        for r, m in marked:
            print("  %s: %s" % (r["name"], m))
    if subskips:
        print("skipped inside passing tests (cmocka skip(), %d):" % len(subskips))
        for r, s in subskips:
            print("  %s: %s" % (r["name"], s))
    if missing:
        print("suites with no test configured (not built here, %d): %s" % (len(missing), " ".join(missing)))
    if failed or required or (require and missing):
        print("failed tests:")
        for r in failed:
            print("  FAILED: %s (%s, %.0fs)%s" % (r["name"], r["result"], r.get("duration", 0),
                                                 ": " + r["reason"] if r.get("reason") else ""))
        for r in required:
            print("  FAILED: %s skipped under DROCE_TEST_REQUIRE=1: %s" % (r["name"], r["reason"] or "no reason printed"))
        if require:
            for s in missing:
                print("  FAILED: suite %s has no test configured (DROCE_TEST_REQUIRE=1)" % s)
    if skipped:
        print("skipped tests (%d):" % len(skipped))
        for r in skipped:
            print("  %s [%s]: %s" % (r["name"], r["suite"], r["reason"] or "no reason printed"))
    n_failed = len(failed) + len(required) + (len(missing) if require else 0)
    print("%d passed, %d failed, %d skipped%s, %d retried or known" % (
        len(passed), n_failed, len(skipped), " (DROCE_TEST_REQUIRE=1)" if require else "", len(marked)))
    return 1 if n_failed else 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "add":
        add(argv[2], argv[3], argv[4])
        # the build dir, for the configured suites
        recs = load(argv[2])
        with open(argv[2], "w") as f:
            for r in recs:
                r.setdefault("build", argv[3])
                f.write(json.dumps(r) + "\n")
        return 0
    if len(argv) >= 5 and argv[1] == "record":
        append(argv[2], {"name": argv[3], "suite": "", "result": argv[4], "build": "",
                         "reason": argv[5] if len(argv) > 5 else ""})
        return 0
    if len(argv) == 4 and argv[1] == "report":
        return report(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
