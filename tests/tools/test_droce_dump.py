#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""droce-dump tests (suite 'tools'). One check per sub-command:

  json EXE              --json output equals, key for key and in order, the
                        objects the fixtures were built from (good, bad ICRC,
                        one frame per rejection reason)
  exit EXE              exit status 0 / 1 / 2 and the messages on stderr
  linktypes EXE         SLL, SLL2, pcapng and raw IP captures of the same
                        frames decode exactly like the Ethernet pcap
  robust EXE            every truncation and random corruptions of the
                        fixture frames: one line each, exit 0/1, no crash
  live EXE              real SLL / SLL2 captures by dumpcap -i any in a
                        network namespace (root only, else skipped)
  golden EXE GOLDEN     the human summary of the fixtures equals GOLDEN
  tshark-fixtures EXE   field by field against tshark on the fixtures
  tshark-corpus EXE DIR field by field against tshark on DIR/*.pcap
  tshark-ud EXE UDTEST  the UD frames droce's engine builds (UDTEST writes them
                        through DROCE_TEST_PCAP): field by field against tshark,
                        every one UD with a DETH, no malformed frame, and the
                        GSI QP's MAD read by tshark's CM dissector
                        (../shared/pcap-corpus; skipped when absent)
  cm EXE                the CM MADs of a generated exchange (REQ, MRA, REP, RTU,
                        DREQ, DREP, REJ, and MADs the codec refuses): the "mad"
                        object of --json key for key, and the text summary
  tshark-cm EXE DIR     the MAD header and CM fields against tshark's CM
                        dissector, field by field, on the generated exchange and
                        on DIR/rxe-*.pcap (rdma_cm handshakes; skipped when absent)

Fixtures are generated at test time by roce_fixtures.py into a temporary
directory. Exit status 0 pass, 1 fail, 77 skip.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce_fixtures as fx  # noqa: E402

SKIP = 77
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run(exe, *args):
    p = subprocess.run([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=30)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def dump_json(exe, path, want_rc=None):
    rc, out, err = run(exe, "--json", path)
    if want_rc is not None and rc != want_rc:
        fail("%s: droce-dump --json exit %d, want %d (stderr: %s)" % (path, rc, want_rc, err.strip()))
    objs = []
    for n, line in enumerate(out.splitlines(), 1):
        try:
            # pairs keep the key order and catch duplicate keys
            objs.append(json.loads(line, object_pairs_hook=lambda kv: kv))
        except ValueError as e:
            fail("%s: line %d is not JSON (%s): %s" % (path, n, e, line))
    return objs


def as_pairs(o):
    """An OrderedDict (expected) in the object_pairs_hook shape."""
    return [(k, as_pairs(v) if isinstance(v, dict) else v) for k, v in o.items()]


def compare_objects(path, got, want):
    if len(got) != len(want):
        fail("%s: %d JSON lines, want %d" % (path, len(got), len(want)))
    for g, w in zip(got, want):
        w = as_pairs(w)
        if g != w:
            fail("%s: frame %s:\n   got  %s\n   want %s" % (path, dict(w).get("frame"), g, w))
        for k, v in g:
            # booleans must be JSON booleans, numbers integers (no floats)
            if isinstance(v, float):
                fail("%s: frame %s: %s is a float" % (path, dict(w).get("frame"), k))


def with_fixtures(fn):
    d = tempfile.mkdtemp(prefix="droce-dump-test-")
    try:
        return fn(fx.write_all(d), d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- json ------------------------------------------------------------------

def check_json(exe):
    def body(p, d):
        compare_objects(p["good.pcap"], dump_json(exe, p["good.pcap"], 0), fx.expected_good())
        compare_objects(p["bad-icrc.pcap"], dump_json(exe, p["bad-icrc.pcap"], 1),
                        [o for _, o in fx.bad_icrc_frames()])
        compare_objects(p["malformed-all.pcap"], dump_json(exe, p["malformed-all.pcap"], 1),
                        [o for _, o in fx.malformed_frames()])
        # every line is one compact object
        rc, out, _ = run(exe, "--json", p["good.pcap"])
        for line in out.splitlines():
            if not (line.startswith('{"frame":') and line.endswith("}")) or ": " in line:
                fail("not a compact one-line object: " + line)
    with_fixtures(body)


# --- exit ------------------------------------------------------------------

def check_exit(exe):
    def expect(args, want, stderr_has=None, stdout_has=None):
        rc, out, err = run(exe, *args)
        if rc != want:
            fail("droce-dump %s: exit %d, want %d (stderr: %s)" % (" ".join(args), rc, want,
                                                                 err.strip()))
        if stderr_has and stderr_has not in err:
            fail("droce-dump %s: stderr lacks %r: %r" % (" ".join(args), stderr_has, err))
        if want == 2 and not err.strip():
            fail("droce-dump %s: exit 2 without a message" % " ".join(args))
        if stdout_has and stdout_has not in out:
            fail("droce-dump %s: stdout lacks %r" % (" ".join(args), stdout_has))
        return out

    def body(p, d):
        for name in ("good.pcap", "good.pcapng", "good-sll.pcap", "good-sll2.pcap", "roce-raw.pcap"):
            expect([p[name]], 0)
            expect(["--json", p[name]], 0)
        expect([p["bad-icrc.pcap"]], 1, stdout_has="[ICRC bad]")
        expect(["--json", p["bad-icrc.pcap"]], 1, stdout_has='"error":"BAD_ICRC"')
        expect([p["malformed.pcap"]], 1, stdout_has="[malformed PAD_TOO_LONG")
        expect(["--json", p["malformed.pcap"]], 1, stdout_has='"error":"PAD_TOO_LONG"')
        expect([p["good.pcap"], p["malformed.pcap"]], 1)
        missing = os.path.join(d, "no-such-file.pcap")
        expect([missing], 2, stderr_has="no-such-file.pcap")
        expect(["--json", missing], 2, stderr_has="no-such-file.pcap")
        # an I/O error outranks a bad frame, and the other files are still read
        expect([p["malformed.pcap"], missing, p["good.pcap"]], 2,
               stdout_has="RC_ATOMIC_ACKNOWLEDGE")
        expect(["--bogus", p["good.pcap"]], 2, stderr_has="--bogus")
        expect(["-x", p["good.pcap"]], 2, stderr_has="-x")
        expect([], 2, stderr_has="usage")
        expect(["--json"], 2, stderr_has="usage")
        expect(["--help"], 0, stdout_has="usage: droce-dump")
        # not a capture file
        junk = os.path.join(d, "junk.pcap")
        with open(junk, "w") as f:
            f.write("this is not a capture\n" * 4)
        expect([junk], 2, stderr_has="junk.pcap")
        # a capture cut in the middle of a record: the frames before it are
        # printed, then a read error
        cut = os.path.join(d, "cut.pcap")
        with open(p["good.pcap"], "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[:len(data) - 20])
        expect(["--json", cut], 2, stderr_has="cut.pcap", stdout_has='"frame":26')
        # a link type droce-dump does not decode (105: IEEE 802.11)
        wifi = os.path.join(d, "wifi.pcap")
        fx.write_pcap(wifi, [bytes(40)], linktype=105)
        expect([wifi], 2, stderr_has="link type")
        # several files, human format: a header line per file
        out = expect([p["good.pcap"], p["good-sll.pcap"]], 0)
        if out.count("== ") != 2:
            fail("two files: want two '== FILE' header lines, got:\n" + out[:300])
    with_fixtures(body)


# --- linktypes -------------------------------------------------------------

def check_linktypes(exe):
    def body(p, d):
        ref = dump_json(exe, p["good.pcap"], 0)
        if not ref:
            fail("good.pcap decoded to nothing")
        for name in ("good.pcapng", "good-sll.pcap", "good-sll2.pcap", "good-sll2.pcapng"):
            got = dump_json(exe, p[name], 0)
            if got != ref:
                for g, r in zip(got, ref):
                    if g != r:
                        fail("%s: frame %s differs from the Ethernet capture:\n   got  %s\n"
                             "   want %s" % (name, dict(r)["frame"], g, r))
                        break
                else:
                    fail("%s: %d frames, Ethernet capture has %d" % (name, len(got), len(ref)))
        # raw IP: the RoCE frames only, renumbered
        want = [[(k, (n if k == "frame" else v)) for k, v in o]
                for n, o in enumerate([o for o in ref if dict(o)["roce"]], 1)]
        got = dump_json(exe, p["roce-raw.pcap"], 0)
        if got != want:
            fail("roce-raw.pcap decodes differently from the Ethernet capture")
        # the human format has the same timestamps for pcap and pcapng
        a = run(exe, p["good.pcap"])[1]
        b = run(exe, p["good.pcapng"])[1]
        if a != b:
            fail("pcap and pcapng summaries differ:\n%s\n---\n%s" % (a[:400], b[:400]))
    with_fixtures(body)


# --- robust ----------------------------------------------------------------

def check_robust(exe):
    """Every truncation of every fixture frame and seeded random byte flips,
    in Ethernet, SLL and SLL2 captures: droce-dump must print one JSON line
    per frame, exit 0 or 1, and (in the sanitizer build) read nothing out
    of bounds."""
    import random
    rnd = random.Random(4791)
    good = [fr for _, fr in fx.good_frames()]
    frames = []
    for fr in good:
        frames += [fr[:n] for n in range(0, len(fr) + 1, 3)]
        for _ in range(20):
            b = bytearray(fr)
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            frames.append(bytes(b))

    def body(p, d):
        for name, conv, lt in (("eth", lambda x: x, fx.LINKTYPE_ETHERNET),
                               ("sll", fx.to_sll, fx.LINKTYPE_SLL),
                               ("sll2", fx.to_sll2, fx.LINKTYPE_SLL2)):
            path = os.path.join(d, "robust-%s.pcap" % name)
            conv_frames = [conv(x) if len(x) >= 14 else x for x in frames]
            fx.write_pcap(path, conv_frames, lt)
            for args in (["--json", path], [path]):
                rc, out, err = run(exe, *args)
                if rc not in (0, 1):
                    fail("%s: exit %d: %s" % (" ".join(args), rc, err[-500:]))
                if len(out.splitlines()) != len(frames):
                    fail("%s: %d lines for %d frames" % (" ".join(args),
                                                         len(out.splitlines()), len(frames)))
            for line in run(exe, "--json", path)[1].splitlines():
                json.loads(line)
        print("%d frames x 3 link types" % len(frames))
    with_fixtures(body)


# --- live ------------------------------------------------------------------

def check_live(exe):
    """Real Linux cooked captures: in a private network namespace, send the
    fixture frames on lo through AF_PACKET while dumpcap captures on 'any'
    as LINUX_SLL and LINUX_SLL2; droce-dump must decode every frame exactly
    as it decodes the Ethernet fixture. Needs root and dumpcap: skips
    without them (and when the capture cannot be set up)."""
    dumpcap = shutil.which("dumpcap")
    if os.geteuid() != 0 or not dumpcap or not shutil.which("ip"):
        print("SKIP: needs root, ip and dumpcap")
        return SKIP
    sent = [(f, fr) for f, fr in fx.good_frames() if f is not None and f.get("vlan") is None]
    ns = "droce-dump-test-%d" % os.getpid()
    if subprocess.run(["ip", "netns", "add", ns], stderr=subprocess.PIPE).returncode != 0:
        print("SKIP: cannot create a network namespace")
        return SKIP
    result = [None]

    def body(p, d):
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        sender = ("import socket,sys\n"
                  "s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n"
                  "s.bind(('lo',0))\n"
                  "for h in sys.argv[1:]: s.send(bytes.fromhex(h))\n")
        for dlt in ("LINUX_SLL", "LINUX_SLL2"):
            out = os.path.join(d, "live-%s.pcap" % dlt)
            cap = subprocess.Popen(["ip", "netns", "exec", ns, dumpcap, "-i", "any", "-y", dlt,
                                    "-P", "-c", str(len(sent)), "-a", "duration:20", "-w", out],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # dumpcap says "Capturing on" once the socket is open
            line = b""
            while b"Capturing on" not in line:
                line = cap.stderr.readline()
                if not line:
                    break
            if b"Capturing on" not in line:
                cap.wait()
                print("SKIP: dumpcap did not start")
                result[0] = SKIP
                return
            # ... slightly before its capture socket sees packets
            time.sleep(1)
            subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", sender] +
                           [fr.hex() for _, fr in sent], check=True)
            cap.communicate(timeout=30)
            got = dump_json(exe, out, 0)
            if len(got) != len(sent):
                print("SKIP: captured %d of %d frames" % (len(got), len(sent)))
                result[0] = SKIP
                return
            for n, (g, (f, _)) in enumerate(zip(got, sent), 1):
                want = as_pairs(fx.expected_json(dict(f, frame=n)))
                if g != want:
                    fail("%s: frame %d:\n   got  %s\n   want %s" % (dlt, n, g, want))
            print("%s: %d frames from dumpcap -i any decode as sent" % (dlt, len(got)))
    try:
        with_fixtures(body)
    finally:
        subprocess.run(["ip", "netns", "del", ns])
    return result[0]


# --- golden ----------------------------------------------------------------

def check_golden(exe, golden):
    def body(p, d):
        with open(golden) as f:
            want = [l.rstrip("\n") for l in f if not l.startswith("#")]
        got = []
        for name in ("good.pcap", "bad-icrc.pcap", "malformed-all.pcap"):
            got.append("== " + name)
            got += run(exe, p[name])[1].splitlines()
        if got != want:
            for i, (g, w) in enumerate(zip(got, want)):
                if g != w:
                    fail("golden line %d:\n   got  %r\n   want %r" % (i + 1, g, w))
            if len(got) != len(want):
                fail("golden: %d lines, want %d" % (len(got), len(want)))
    with_fixtures(body)


# --- tshark ----------------------------------------------------------------

# tshark 4.0 field -> (droce-dump JSON path, how to read tshark's text)
TSHARK_FIELDS = [
    ("infiniband.bth.opcode", ("opcode",), int),
    ("infiniband.bth.destqp", ("dqpn",), int),
    ("infiniband.bth.psn", ("psn",), int),
    ("infiniband.bth.padcnt", ("pad",), int),
    ("infiniband.bth.p_key", ("pkey",), int),
    ("infiniband.bth.se", ("se",), bool),
    ("infiniband.bth.m", ("migreq",), bool),
    ("infiniband.bth.a", ("ack_req",), bool),
    ("infiniband.reth.va", ("reth", "va"), int),
    ("infiniband.reth.r_key", ("reth", "rkey"), int),
    ("infiniband.reth.dmalen", ("reth", "dma_len"), int),
    ("infiniband.aeth.syndrome", ("aeth", "syndrome"), int),
    ("infiniband.aeth.msn", ("aeth", "msn"), int),
    ("infiniband.deth.q_key", ("deth", "qkey"), int),
    ("infiniband.deth.srcqp", ("deth", "sqpn"), int),
    ("infiniband.atomiceth.swapdt", ("atomic", "swap_add"), int),
    ("infiniband.atomiceth.cmpdt", ("atomic", "compare"), int),
    ("infiniband.atomicacketh.origremdt", ("atomic_ack",), int),
    ("infiniband.immdt", ("imm",), "hex"),
    ("infiniband.ieth", ("ieth",), "hex"),
]


def tshark_list(path, *fields, display=None):
    """tshark's first value of each field, one row per frame (shown by display)."""
    cmd = ["tshark", "-r", path, "-d", "udp.port==4791,infiniband", "--disable-protocol", "tftp",
           "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    if display:
        cmd += ["-Y", display]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        fail("%s: tshark exit %d: %s" % (path, p.returncode, p.stderr.decode().strip()))
        return []
    return [line.split("\t") for line in p.stdout.decode().splitlines()]


def tshark_rows(path):
    return tshark_list(path, "frame.number", *[f for f, _, _ in TSHARK_FIELDS])


def tshark_value(text, kind):
    if kind is int:
        return int(text, 0)
    if kind is bool:
        return text in ("1", "True", "true")
    return int(text.replace(":", ""), 16)  # FT_BYTES


def compare_tshark(exe, path, want_rc=0):
    ours = [dict(o) for o in dump_json(exe, path, want_rc)]
    rows = tshark_rows(path)
    if len(ours) != len(rows):
        fail("%s: droce-dump has %d frames, tshark %d" % (path, len(ours), len(rows)))
        return 0
    checked = 0
    for o, row in zip(ours, rows):
        n = o["frame"]
        if int(row[0]) != n:
            fail("%s: frame numbers out of step: %s vs %s" % (path, n, row[0]))
            continue
        tshark_roce = row[1] != ""
        if tshark_roce != o["roce"]:
            fail("%s frame %d: RoCE for droce-dump %s, for tshark %s" % (path, n, o["roce"],
                                                                        tshark_roce))
            continue
        if not o["roce"]:
            continue
        if o.get("icrc") != "ok" or "error" in o:
            fail("%s frame %d: icrc %s error %s" % (path, n, o.get("icrc"), o.get("error")))
        for (field, jpath, kind), text in zip(TSHARK_FIELDS, row[1:]):
            # tshark 4.0 shows the AtomicETH address and key under reth.*
            if "atomic" in o and jpath[0] == "reth" and jpath[1] in ("va", "rkey"):
                jpath = ("atomic", jpath[1])
            v = o
            for k in jpath:
                v = dict(v).get(k) if isinstance(v, (dict, list)) else None
            if text == "":
                if v is not None and kind is not bool:
                    fail("%s frame %d: %s: droce-dump %r, tshark has none" % (path, n, field, v))
                continue
            t = tshark_value(text, kind)
            if v != t:
                fail("%s frame %d: %s: droce-dump %r, tshark %r" % (path, n, field, v, t))
            checked += 1
    return checked


def check_tshark_fixtures(exe):
    if not shutil.which("tshark"):
        print("SKIP: tshark is not installed")
        return SKIP

    def body(p, d):
        total = 0
        for name in ("good.pcap", "good.pcapng", "good-sll.pcap", "good-sll2.pcap"):
            total += compare_tshark(exe, p[name])
        print("checked %d field values against tshark" % total)
        if total < 200:
            fail("only %d field values compared" % total)
    with_fixtures(body)


def check_tshark_corpus(exe, corpus):
    if not os.path.isdir(corpus):
        print("SKIP: %s is absent (the interop corpus lives outside the project)" % corpus)
        return SKIP
    if not shutil.which("tshark"):
        print("SKIP: tshark is not installed")
        return SKIP
    files = sorted(glob.glob(os.path.join(corpus, "*.pcap")) +
                   glob.glob(os.path.join(corpus, "*.pcapng")))
    if not files:
        fail("no captures in " + corpus)
    total = 0
    for path in files:
        n = compare_tshark(exe, path, 0)
        print("%s: %d field values agree" % (os.path.basename(path), n))
        total += n
    if files and total == 0:
        fail("nothing compared")


# The UD datagrams the transport_ud tests send (stack/transport/ud.c), as
# pair.c captures them. tshark 4.0 flags "Illegal checksum value (0)" on every
# RoCEv2 frame over IPv6: RoCEv2 sends UDP checksum 0 (A17.4, the ICRC covers
# the packet), which RFC 8200 allows only for tunnels; RC frames get the same.
UD_TESTS = "test_send_recv,test_send_recv_ipv6,test_gsi"
IPV6_ZERO_CSUM = "Illegal checksum value (0)"


def check_tshark_ud(exe, udtest):
    if not shutil.which("tshark"):
        print("SKIP: tshark is not installed")
        return SKIP
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, DROCE_TEST_PCAP=os.path.join(d, "ud"), DROCE_TEST_ONLY=UD_TESTS)
        p = subprocess.run([udtest], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
        if p.returncode != 0:
            fail("%s exit %d:\n%s" % (udtest, p.returncode, p.stdout.decode()))
        pcaps = sorted(glob.glob(os.path.join(d, "ud.*.pcap")))
        if len(pcaps) < 3:
            fail("%d captures from %s, want one per test (3)" % (len(pcaps), udtest))
        total = frames = v6 = mads = 0
        for path in pcaps:
            total += compare_tshark(exe, path)
            for row in tshark_list(path, "frame.number", "infiniband.bth.opcode",
                                   "infiniband.deth.q_key", "infiniband.deth.srcqp", "ipv6.src",
                                   "infiniband.bth.destqp", "infiniband.mad.mgmtclass",
                                   "infiniband.mad.attributeid", "infiniband.cm.rtu.localcommid"):
                frames += 1
                n, op, qkey, sqp, ip6, dqp, mclass, attr, lcid = row
                if int(op, 0) not in (0x64, 0x65):
                    fail("%s frame %s: opcode %s is not UD SEND_ONLY[_WITH_IMMEDIATE]" % (path, n, op))
                if qkey == "" or sqp == "":
                    fail("%s frame %s: tshark shows no DETH" % (path, n))
                v6 += ip6 != ""
                if int(dqp, 0) == 1:
                    # test_gsi: an RTU from QP1 to QP1, Q_Key 0x80010000
                    mads += 1
                    if (int(qkey, 0), int(sqp, 0), mclass, attr, lcid) != \
                            (0x80010000, 1, "0x07", "0x0014", "0x11223344"):
                        fail("%s frame %s: GSI MAD as tshark reads it: qkey %s srcqp %s class %s "
                             "attr %s local comm id %s" % (path, n, qkey, sqp, mclass, attr, lcid))
            for row in tshark_list(path, "frame.number", "ipv6.src", "_ws.expert.message",
                                   display="_ws.expert || _ws.malformed"):
                n, ip6, msg = row
                if not (ip6 and msg == IPV6_ZERO_CSUM):
                    fail("%s frame %s: tshark says %r" % (path, n, msg or "malformed"))
        print("%d UD frames (%d over IPv6, %d GSI MADs), %d field values agree with tshark" %
              (frames, v6, mads, total))
        if frames < 10 or v6 < 5 or mads < 2 or total < 50:
            fail("too little compared: %d frames, %d IPv6, %d MADs, %d fields" %
                 (frames, v6, mads, total))


# --- CM MADs to QP1 -------------------------------------------------------

def check_cm(exe):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cm.pcap")
        fx.write_pcap(path, [fr for _, _, fr in fx.cm_frames()])
        got = [dict(o) for o in dump_json(exe, path, 0)]
        want = fx.cm_frames()
        if len(got) != len(want):
            fail("cm: %d frames, want %d" % (len(got), len(want)))
        for o, (f, w, _) in zip(got, want):
            if o.get("mad") != as_pairs(w):
                fail("cm frame %d: mad\n   got  %s\n   want %s" % (f["frame"], o.get("mad"),
                                                                as_pairs(w)))
            if o.get("icrc") != "ok" or "error" in o:
                fail("cm frame %d: icrc %s error %s" % (f["frame"], o.get("icrc"), o.get("error")))
        rc, out, err = run(exe, path)
        if rc != 0:
            fail("cm: droce-dump exit %d: %s" % (rc, err))
        lines = out.splitlines()
        for line, (f, w, _) in zip(lines, want):
            if "attr" in w:
                need = ["MAD v1 class=0x07", " %s tid=0x%016x" % (w["attr"], w["tid"]),
                        " local_comm_id=0x%x" % w["local_comm_id"]]
                if "qpn" in w:
                    need.append(" qpn=0x%x start_psn=%d" % (w["qpn"], w["start_psn"]))
                if "reason_str" in w:
                    need.append(" reason=%d (%s)" % (w["reason"], w["reason_str"]))
            else:
                need = ["[MAD %s" % w["error"]] if "tid" in w else \
                    ["MAD [malformed %s" % w["error"]]
            for n in need:
                if n not in line:
                    fail("cm text frame %d: %r not in %r" % (f["frame"], n, line))
        print("%d CM frames checked" % len(got))


# tshark 4.0's CM dissector fields per attribute -> droce-dump's "mad" keys
TSHARK_MAD = [("infiniband.mad.baseversion", "base_version"),
              ("infiniband.mad.mgmtclass", "mgmt_class"),
              ("infiniband.mad.classversion", "class_version"),
              ("infiniband.mad.method", "method"), ("infiniband.mad.status", "status"),
              ("infiniband.mad.transactionid", "tid"),
              ("infiniband.mad.attributeid", "attr_id")]
TSHARK_CM = {
    "REQ": [("infiniband.cm.req", "local_comm_id"), ("infiniband.cm.req.serviceid", "service_id"),
            ("infiniband.cm.req.localqpn", "qpn"), ("infiniband.cm.req.startpsn", "start_psn"),
            ("infiniband.cm.req.pppmtu", "path_mtu"),
            ("infiniband.cm.req.responderres", "responder_resources"),
            ("infiniband.cm.req.initdepth", "initiator_depth"),
            ("infiniband.cm.req.retrcount", "retry_count"),
            ("infiniband.cm.req.rnrretrcount", "rnr_retry_count")],
    "REP": [("infiniband.cm.rep", "local_comm_id"),
            ("infiniband.cm.rep.remotecommid", "remote_comm_id"),
            ("infiniband.cm.rep.localqpn", "qpn"), ("infiniband.cm.rep.startpsn", "start_psn"),
            ("infiniband.cm.rep.respres", "responder_resources"),
            ("infiniband.cm.rep.initdepth", "initiator_depth"),
            ("infiniband.cm.rep.rnrretrcount", "rnr_retry_count")],
    "RTU": [("infiniband.cm.rtu.localcommid", "local_comm_id"),
            ("infiniband.cm.rtu.remotecommid", "remote_comm_id")],
    "REJ": [("infiniband.cm.rej.localcommid", "local_comm_id"),
            ("infiniband.cm.rej.remotecommid", "remote_comm_id"),
            ("infiniband.cm.rej.msgrej", "msg_rejected"), ("infiniband.cm.rej.reason", "reason")],
    # tshark 4.0 files the DREQ's remote QPN under req.remoteqpneecn
    "DREQ": [("infiniband.cm.dreq.localcommid", "local_comm_id"),
             ("infiniband.cm.dreq.remotecommid", "remote_comm_id"),
             ("infiniband.cm.req.remoteqpneecn", "remote_qpn")],
    "DREP": [("infiniband.cm.drsp.localcommid", "local_comm_id"),
             ("infiniband.cm.drsp.remotecommid", "remote_comm_id")],
}


def compare_tshark_cm(exe, path):
    """Every MAD droce-dump decoded: header and CM fields equal tshark's.
    Returns (MADs compared, field values compared, attribute names seen)."""
    ours = {dict(o)["frame"]: dict(dict(o).get("mad") or []) for o in dump_json(exe, path, 0)}
    cm_fields = sorted({f for fl in TSHARK_CM.values() for f, _ in fl})
    fields = [f for f, _ in TSHARK_MAD] + cm_fields
    mads = values = 0
    seen = []
    for row in tshark_list(path, "frame.number", *fields, display="infiniband.bth.destqp == 1"):
        n, vals = int(row[0]), dict(zip(fields, row[1:]))
        m = ours.get(n)
        if not m:
            fail("%s frame %d: tshark shows a MAD, droce-dump none" % (path, n))
            continue
        if "error" in m and "tid" not in m:
            continue  # shorter than a MAD: no header to compare
        mads += 1
        pairs = list(TSHARK_MAD)
        if "error" not in m:
            if m.get("attr") not in TSHARK_CM:
                if m.get("attr") != "MRA":  # tshark 4.0 shows no MRA fields
                    fail("%s frame %d: attribute %r not compared" % (path, n, m.get("attr")))
            else:
                pairs += TSHARK_CM[m["attr"]]
                seen.append(m["attr"])
        for tf, key in pairs:
            text = vals[tf]
            if text == "":
                fail("%s frame %d: tshark has no %s (droce-dump %s=%r)" % (path, n, tf, key,
                                                                          m.get(key)))
                continue
            if m.get(key) != int(text, 0):
                fail("%s frame %d: %s: droce-dump %r, tshark %s" % (path, n, key, m.get(key), text))
            values += 1
    return mads, values, seen


def check_tshark_cm(exe, corpus):
    if not shutil.which("tshark"):
        print("SKIP: tshark is not installed")
        return SKIP
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cm.pcap")
        fx.write_pcap(path, [fr for _, _, fr in fx.cm_frames()])
        mads, values, seen = compare_tshark_cm(exe, path)
        print("generated exchange: %d MADs, %d values agree with tshark" % (mads, values))
        want = {"REQ", "REP", "RTU", "REJ", "DREQ", "DREP"}
        if set(seen) != want or mads < 9:
            fail("generated exchange: compared %s in %d MADs, want all of %s" %
                 (sorted(set(seen)), mads, sorted(want)))
    if not os.path.isdir(corpus):
        print("SKIP (corpus part): %s is absent" % corpus)
        return 0
    files = sorted(glob.glob(os.path.join(corpus, "rxe-*.pcap")))
    if not files:
        fail("no rxe-*.pcap in " + corpus)
    for path in files:
        mads, values, seen = compare_tshark_cm(exe, path)
        print("%s: %s, %d values agree with tshark" % (os.path.basename(path), " ".join(seen),
                                                     values))
        # each rxe capture begins with rdma_cm's handshake and ends with its teardown
        if seen != ["REQ", "REP", "RTU", "DREQ", "DREP"]:
            fail("%s: CM messages %s, want REQ REP RTU DREQ DREP" % (path, seen))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: test_droce_dump.py CHECK EXE [ARG]")
    check, exe = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    checks = {
        "json": lambda: check_json(exe),
        "exit": lambda: check_exit(exe),
        "linktypes": lambda: check_linktypes(exe),
        "golden": lambda: check_golden(exe, arg),
        "robust": lambda: check_robust(exe),
        "live": lambda: check_live(exe),
        "tshark-fixtures": lambda: check_tshark_fixtures(exe),
        "tshark-corpus": lambda: check_tshark_corpus(exe, arg),
        "tshark-ud": lambda: check_tshark_ud(exe, arg),
        "cm": lambda: check_cm(exe),
        "tshark-cm": lambda: check_tshark_cm(exe, arg),
    }
    if check not in checks:
        sys.exit("unknown check " + check)
    rc = checks[check]()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    if rc == SKIP:
        return SKIP
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
