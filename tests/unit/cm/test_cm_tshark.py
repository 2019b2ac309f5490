#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Our CM MAD codec against Wireshark's CM dissector, field by field.

  test_cm_tshark.py corpus   CM_DUMP CORPUS_DIR
      every CM MAD of CORPUS_DIR/rxe-write-read-*.pcap (made by Linux rxe's
      rdma_cm): each field our decoder gives equals what tshark shows, and
      every CM field tshark shows is one our decoder gives. Skips (77) when
      the shared corpus is absent.
  test_cm_tshark.py fixtures CM_DUMP CORPUS_DIR
      the same for MADs made by our encoder (cm_dump write): REQ over IPv4 and
      IPv6, MRA, REJ, REP, RTU, DREQ, DREP, with every field set, and tshark
      names each message as we meant it.

tshark 4.0.x reads a REQ path's flow label from 3 bytes under a 4-byte mask
and the packet rate from the first byte of that word (docs/cm.md), so for
those two fields the check is that tshark shows what that misread gives for
our value: flow label >> 8, and (flow label >> 12) & 0x3f.
Exit status 0 pass, 1 fail, 77 skip.
"""
import glob
import ipaddress
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SKIP = 77
FIELD = re.compile(r"^infiniband\.(mad|cm)\.")
# tshark fields we do not decode: reserved bits and the raw MAD/CM blobs
IGNORED = re.compile(r"(reserved|\.mad\.data$|serviceid\.prefix$|ip_cm$)")
BUGGY = ("flowlabel", "pktrate")


def tshark_frames(pcap):
    """{frame number: {field: [show/value, ...]}} for the CM frames."""
    out = subprocess.run(
        ["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "pdml"],
        check=True, capture_output=True, text=True, timeout=60).stdout
    frames = {}
    for pkt in ET.fromstring(out).iter("packet"):
        num = None
        fields = {}
        for f in pkt.iter("field"):
            name = f.get("name", "")
            if name == "frame.number":
                num = int(f.get("show"))
            if FIELD.match(name):
                fields.setdefault(name, []).append((f.get("show", ""), f.get("value", "")))
        if any(k.startswith("infiniband.mad.") for k in fields):
            frames[num] = fields
    return frames


def tshark_infos(pcap):
    out = subprocess.run(
        ["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
         "-e", "_ws.col.Info"], check=True, capture_output=True, text=True, timeout=60).stdout
    return [line.strip() for line in out.splitlines()]


def our_frames(cm_dump, pcap):
    out = subprocess.run([cm_dump, "decode", pcap], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise SystemExit(f"cm_dump decode {pcap}: exit {out.returncode}\n{out.stdout}{out.stderr}")
    frames, cur = {}, None
    for line in out.stdout.splitlines():
        key, _, val = line.partition(" ")
        if key == "frame":
            cur = frames.setdefault(int(val), {})
        else:
            cur[key] = val
    return frames


def normalise(show, value):
    """tshark's display of a field as int, 'a.b.c.d' or a hex byte string."""
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", show):
        return show
    if re.fullmatch(r"([0-9a-f]{2}:)+[0-9a-f]{2}", show):
        return value.lower()  # FT_BYTES: the full raw bytes
    if ":" in show:
        return ipaddress.IPv6Address(show).packed.hex()
    return int(show, 0)


def ours_value(name, val):
    if val.startswith("hex:"):
        return val[4:]
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", val):
        return val
    v = int(val)
    if name.endswith("flowlabel"):
        return v >> 8
    if name.endswith("pktrate"):
        return v  # fixed up below: needs the flow label
    return v


def compare(cm_dump, pcap, label):
    theirs = tshark_frames(pcap)
    ours = our_frames(cm_dump, pcap)
    errors = []
    if sorted(theirs) != sorted(ours):
        errors.append(f"{label}: CM frames differ: tshark {sorted(theirs)}, ours {sorted(ours)}")
    checked = 0
    for num in sorted(set(theirs) & set(ours)):
        t, o = theirs[num], ours[num]
        for name, val in o.items():
            if name not in t:
                errors.append(f"{label} #{num}: {name} not shown by tshark")
                continue
            want = ours_value(name, val)
            if name.endswith("pktrate"):
                flow = int(o[name[: -len("pktrate")] + "flowlabel"])
                want = (flow >> 12) & 0x3F
            got = normalise(*t[name][0])
            if got != want:
                errors.append(f"{label} #{num}: {name}: tshark {got!r}, ours {want!r} ({val})")
            checked += 1
        for name in t:
            if name not in o and not IGNORED.search(name):
                errors.append(f"{label} #{num}: tshark field {name} is not decoded by us")
    return checked, errors


def run_corpus(cm_dump, corpus):
    pcaps = sorted(glob.glob(os.path.join(corpus, "rxe-write-read-*.pcap")))
    if not pcaps:
        print(f"SKIP: {corpus} is absent (the shared interop corpus)")
        return SKIP
    total, errors = 0, []
    for p in pcaps:
        n, e = compare(cm_dump, p, os.path.basename(p))
        total += n
        errors += e
    return report(total, errors, len(pcaps) * 5 * 10)


def run_fixtures(cm_dump):
    tmp = tempfile.mkdtemp(prefix="droce-cm-tshark.")
    try:
        pcap = os.path.join(tmp, "cm.pcap")
        r = subprocess.run([cm_dump, "write", pcap], timeout=60)
        if r.returncode != 0:
            print(f"cm_dump write: exit {r.returncode}")
            return 1
        total, errors = compare(cm_dump, pcap, "fixtures")
        infos = tshark_infos(pcap)
        want = ["ConnectRequest", "ConnectRequest", "MsgRcptAck", "ConnectReject",
                "ConnectReply", "ReadyToUse", "DisconnectRequest", "DisconnectReply"]
        if [i.replace("CM: ", "") for i in infos] != want:
            errors.append(f"tshark names the fixtures {infos}, want {want}")
        return report(total, errors, 2 * 60 + 6 * 5)
    finally:
        shutil.rmtree(tmp)


def report(total, errors, at_least):
    if total < at_least:
        errors.append(f"only {total} fields compared, expected at least {at_least}")
    for e in errors[:60]:
        print("FAIL:", e)
    if errors:
        print(f"{len(errors)} mismatches")
        return 1
    print(f"ok: {total} fields equal to tshark's")
    return 0


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("corpus", "fixtures"):
        print(__doc__)
        return 2
    if not shutil.which("tshark"):
        print("FAIL: tshark is missing (scripts/setup installs it)")
        return 1
    mode, cm_dump, corpus = sys.argv[1:]
    return run_corpus(cm_dump, corpus) if mode == "corpus" else run_fixtures(cm_dump)


if __name__ == "__main__":
    sys.exit(main())
