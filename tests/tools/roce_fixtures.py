#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""RoCE capture fixtures for the droce-dump tests, generated at test time.

Everything is written byte by byte with struct and zlib (no scapy), from the
formats as IBTA vol 1 chapter 9 and Annex A17 define them, so it is an
independent check on droce's own builder and parser:

  - Ethernet (+ optional 802.1Q) / IPv4 or IPv6 / UDP 4791 / BTH / extension
    headers / payload / pad / ICRC (CRC-32 over the masked pseudo-packet, A17.4.5,
    stored least-significant byte first);
  - pcap (any link type), pcapng (SHB + IDB + EPB), Linux cooked SLL and SLL2
    headers as `tcpdump -i any` writes them.

Each frame comes with the JSON object droce-dump --json must print for it
(docs/tools.md), keys in order. Usage as a script: roce_fixtures.py DIR writes
every fixture file into DIR.
"""

import ipaddress
import struct
import sys
import zlib
from collections import OrderedDict

ETH_IPV4, ETH_IPV6, ETH_VLAN, ETH_ARP = 0x0800, 0x86DD, 0x8100, 0x0806
ROCE_PORT = 4791

# opcode -> (name, extension headers in wire order, carries a payload)
# IBTA vol 1 9.2.1 table 38 (the subset the fixtures use) and A17.9.3 (CNP).
OPCODES = {
    0x00: ("RC_SEND_FIRST", [], True),
    0x01: ("RC_SEND_MIDDLE", [], True),
    0x03: ("RC_SEND_LAST_WITH_IMMEDIATE", ["imm"], True),
    0x04: ("RC_SEND_ONLY", [], True),
    0x06: ("RC_RDMA_WRITE_FIRST", ["reth"], True),
    0x07: ("RC_RDMA_WRITE_MIDDLE", [], True),
    0x09: ("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", ["imm"], True),
    0x0A: ("RC_RDMA_WRITE_ONLY", ["reth"], True),
    0x0B: ("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", ["reth", "imm"], True),
    0x0C: ("RC_RDMA_READ_REQUEST", ["reth"], False),
    0x10: ("RC_RDMA_READ_RESPONSE_ONLY", ["aeth"], True),
    0x11: ("RC_ACKNOWLEDGE", ["aeth"], False),
    0x12: ("RC_ATOMIC_ACKNOWLEDGE", ["aeth", "atomic_ack"], False),
    0x13: ("RC_COMPARE_SWAP", ["atomic"], False),
    0x14: ("RC_FETCH_ADD", ["atomic"], False),
    0x17: ("RC_SEND_ONLY_WITH_INVALIDATE", ["ieth"], True),
    0x2A: ("UC_RDMA_WRITE_ONLY", ["reth"], True),
    0x64: ("UD_SEND_ONLY", ["deth"], True),
    0x65: ("UD_SEND_ONLY_WITH_IMMEDIATE", ["deth", "imm"], True),
    0x81: ("CNP", ["cnp"], False),
}
# JSON key order of the extension headers, not wire order.
JSON_EXT_ORDER = ["reth", "aeth", "imm", "ieth", "deth", "atomic", "atomic_ack"]

MAC_A = bytes.fromhex("020000000001")
MAC_B = bytes.fromhex("020000000002")
T0 = 1700000000  # capture time of frame 1, seconds


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ext_bytes(name, f):
    if name == "deth":
        return struct.pack("!IB", f["deth"]["qkey"], 0) + f["deth"]["sqpn"].to_bytes(3, "big")
    if name == "reth":
        r = f["reth"]
        return struct.pack("!QII", r["va"], r["rkey"], r["dma_len"])
    if name == "atomic":
        a = f["atomic"]
        return struct.pack("!QIQQ", a["va"], a["rkey"], a["swap_add"], a["compare"])
    if name == "aeth":
        return bytes([f["aeth"]["syndrome"]]) + f["aeth"]["msn"].to_bytes(3, "big")
    if name == "atomic_ack":
        return struct.pack("!Q", f["atomic_ack"])
    if name == "imm":
        return struct.pack("!I", f["imm"])
    if name == "ieth":
        return struct.pack("!I", f["ieth"])
    if name == "cnp":
        return bytes(16)
    raise ValueError(name)


def icrc(l3, ip_version):
    """A17.4.5: CRC-32 over 8 x 0xFF, the IP header with its variant fields,
    the UDP checksum and the BTH resv8a byte set to ones, then the rest."""
    m = bytearray(l3)
    if ip_version == 4:
        m[1] = 0xFF                 # TOS
        m[8] = 0xFF                 # TTL
        m[10:12] = b"\xff\xff"      # header checksum
        ip_len = 20
    else:
        m[0] |= 0x0F                # traffic class (high nibble)
        m[1:4] = b"\xff\xff\xff"    # traffic class (low nibble), flow label
        m[7] = 0xFF                 # hop limit
        ip_len = 40
    m[ip_len + 6:ip_len + 8] = b"\xff\xff"  # UDP checksum
    m[ip_len + 8 + 4] = 0xFF               # BTH FECN/BECN/resv
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(m)) & 0xFFFFFFFF)


def roce_frame(f, mangle=None):
    """Build one Ethernet frame from the field dict @f (see good_frames()).
    @mangle(stage, bytearray) may corrupt the IP packet before the ICRC is
    computed ('pre_icrc') or after ('post_icrc')."""
    opcode = f["opcode"]
    hdrs = OPCODES.get(opcode, ("?", f.get("hdrs", []), True))[1]
    b1 = (0x80 if f["se"] else 0) | (0x40 if f["migreq"] else 0) | (f["pad"] << 4) | f.get("tver", 0)
    b4 = (0x80 if f["fecn"] else 0) | (0x40 if f["becn"] else 0)
    bth = struct.pack("!BBHB", opcode, b1, f["pkey"], b4) + f["dqpn"].to_bytes(3, "big") + \
        bytes([0x80 if f["ack_req"] else 0]) + f["psn"].to_bytes(3, "big")
    body = bth + b"".join(ext_bytes(h, f) for h in hdrs) + f.get("payload", b"") + bytes(f["pad"])
    udp_len = 8 + len(body) + 4 + f.get("udp_len_delta", 0)
    udp = struct.pack("!HHHH", f["sport"], ROCE_PORT, udp_len, 0)
    tos = (f["dscp"] << 2) | f["ecn"]
    if f["ip_version"] == 4:
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + 8 + len(body) + 4, 0x1234,
                                   0x4000, 64, 17, 0, ipaddress.ip_address(f["src"]).packed,
                                   ipaddress.ip_address(f["dst"]).packed))
        ip[10:12] = struct.pack("!H", csum16(bytes(ip)))
        etype = ETH_IPV4
    else:
        vtf = (6 << 28) | (tos << 20) | f.get("flow", 0)
        ip = bytearray(struct.pack("!IHBB16s16s", vtf, 8 + len(body) + 4, 17, 64,
                                   ipaddress.ip_address(f["src"]).packed,
                                   ipaddress.ip_address(f["dst"]).packed))
        etype = ETH_IPV6
    l3 = bytearray(bytes(ip) + udp + body)
    if mangle:
        mangle("pre_icrc", l3)
    l3 += icrc(bytes(l3), f["ip_version"])
    if mangle:
        mangle("post_icrc", l3)
    eth = MAC_B + MAC_A
    if f.get("vlan") is not None:
        eth += struct.pack("!HH", ETH_VLAN, f["vlan"])
    frame = eth + struct.pack("!H", etype) + bytes(l3)
    if len(frame) < 60:  # Ethernet minimum (no FCS): trailer padding after the ICRC
        frame += bytes(60 - len(frame))
    return frame


def expected_json(f, icrc_ok=True, error=None, stop=None):
    """The object droce-dump --json prints for @f. @stop: the last layer the
    parser completes before @error ('ip', 'udp', 'bth', 'ext'); None = all."""
    layers = ["ip", "udp", "bth", "ext", "payload"]
    upto = layers.index(stop) if stop else len(layers) - 1
    o = OrderedDict(frame=f["frame"], roce=True)
    if upto >= 0:
        o.update(ip_version=f["ip_version"], src=str(ipaddress.ip_address(f["src"])),
                 dst=str(ipaddress.ip_address(f["dst"])), dscp=f["dscp"], ecn=f["ecn"])
    if upto >= 1:
        o["sport"] = f["sport"]
    if upto >= 2:
        name = OPCODES[f["opcode"]][0] if f["opcode"] in OPCODES else "UNKNOWN"
        o.update(opcode=f["opcode"], op=name, se=f["se"], migreq=f["migreq"], pad=f["pad"],
                 pkey=f["pkey"], fecn=f["fecn"], becn=f["becn"], dqpn=f["dqpn"],
                 ack_req=f["ack_req"], psn=f["psn"])
    if upto >= 3:
        hdrs = OPCODES[f["opcode"]][1]
        for h in JSON_EXT_ORDER:
            if h in hdrs:
                v = f[h]
                o[h] = OrderedDict(v) if isinstance(v, dict) else v
    if upto >= 4 and OPCODES[f["opcode"]][2]:
        o["payload_len"] = len(f.get("payload", b""))
    o["icrc"] = "ok" if icrc_ok else "bad"
    if error:
        o["error"] = error
    return o


def base(**kw):
    f = dict(ip_version=4, src="192.0.2.1", dst="192.0.2.2", dscp=26, ecn=2, sport=0xC001,
             opcode=0x04, se=False, migreq=True, pad=0, pkey=0xFFFF, fecn=False, becn=False,
             dqpn=0x000012, ack_req=False, psn=100)
    f.update(kw)
    # The pad count follows the payload (9.2.4: pad to a 4-byte multiple).
    if "payload" in kw and "pad" not in kw:
        f["pad"] = (-len(kw["payload"])) % 4
    return f


def aeth(syn, msn=7):
    return {"syndrome": syn, "msn": msn}


def good_frames():
    """Every RoCE frame kind droce-dump shows, all well-formed, plus two
    non-RoCE frames. Returns [(frame dict or None, ethernet bytes)]."""
    reth = {"va": 0xFFFFFFFFFFFF0000, "rkey": 0xABCDEF01, "dma_len": 3000}
    fr = [
        base(opcode=0x00, payload=bytes(range(8)), psn=100, ack_req=False),
        base(opcode=0x01, payload=bytes(range(8)), psn=101),
        base(opcode=0x03, payload=b"hello", psn=102, imm=0xDEADBEEF, se=True, ack_req=True),
        base(opcode=0x06, payload=bytes(16), psn=200, reth=reth),
        base(opcode=0x07, payload=bytes(16), psn=201),
        base(opcode=0x09, payload=b"abc", psn=202, imm=0x01020304, ack_req=True),
        base(opcode=0x0B, payload=b"xy", psn=203, reth=dict(reth, dma_len=2), imm=0xFFFFFFFF),
        base(opcode=0x0C, psn=204, reth=dict(reth, dma_len=65536), ack_req=True),
        base(opcode=0x10, payload=bytes(12), psn=204, aeth=aeth(0x1F, 3), dqpn=0x000034),
        base(opcode=0x11, psn=205, aeth=aeth(0x07, 4), dqpn=0x34),          # ACK credits 7
        base(opcode=0x11, psn=206, aeth=aeth(0x20 | 14, 4), dqpn=0x34),     # RNR NAK 1.28 ms
        base(opcode=0x11, psn=206, aeth=aeth(0x20 | 0, 4), dqpn=0x34),      # RNR NAK 655.36 ms
        base(opcode=0x11, psn=207, aeth=aeth(0x60 | 0, 4), dqpn=0x34),      # NAK PSN seq err
        base(opcode=0x11, psn=208, aeth=aeth(0x60 | 1, 4), dqpn=0x34),      # NAK invalid req
        base(opcode=0x11, psn=209, aeth=aeth(0x60 | 2, 4), dqpn=0x34),      # NAK remote access
        base(opcode=0x11, psn=210, aeth=aeth(0x60 | 3, 4), dqpn=0x34),      # NAK remote op
        base(opcode=0x11, psn=211, aeth=aeth(0x60 | 4, 4), dqpn=0x34),      # NAK invalid RD req
        base(opcode=0x13, psn=300, ack_req=True,
             atomic={"va": 0x1000, "rkey": 0x55, "swap_add": 0xFFFFFFFFFFFFFFFF, "compare": 1 << 63}),
        base(opcode=0x14, psn=301, ack_req=True,
             atomic={"va": 0x1008, "rkey": 0x55, "swap_add": 1, "compare": 0}),
        base(opcode=0x12, psn=301, aeth=aeth(0x1F, 9), atomic_ack=0x8000000000000001, dqpn=0x34),
        base(opcode=0x17, payload=b"inv!", psn=400, ieth=0x00C0FFEE),
        base(opcode=0x65, payload=bytes(40), psn=0xFFFFFF, dqpn=0xFFFFFF, imm=0xCAFEF00D,
             deth={"qkey": 0x80010000, "sqpn": 0x000001}),
        base(opcode=0x04, payload=bytes(range(7)), ip_version=6, src="2001:db8::1",
             dst="2001:db8:0:0:1:0:0:2", dscp=46, ecn=3, flow=0xABCDE, se=True, fecn=True,
             pkey=0x8001, psn=500),
        base(opcode=0x2A, payload=b"", psn=600, reth=dict(reth, dma_len=0), vlan=0x2064),
        base(opcode=0x81, se=False, migreq=False, psn=0, becn=True, sport=0, dscp=48, ecn=0,
             dqpn=0x000118),
    ]
    out = []
    for f in fr:
        out.append((f, roce_frame(f)))
    arp = MAC_B + MAC_A + struct.pack("!HHHBBH", ETH_ARP, 1, ETH_IPV4, 6, 4, 1) + \
        MAC_A + bytes([192, 0, 2, 1]) + bytes(6) + bytes([192, 0, 2, 2])
    out.insert(3, (None, arp + bytes(60 - len(arp))))
    dns_ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + 4, 1, 0, 64, 17, 0,
                                   bytes([192, 0, 2, 1]), bytes([192, 0, 2, 53])))
    dns_ip[10:12] = struct.pack("!H", csum16(bytes(dns_ip)))
    dns = MAC_B + MAC_A + struct.pack("!H", ETH_IPV4) + bytes(dns_ip) + \
        struct.pack("!HHHH", 5353, 53, 12, 0) + b"abcd"
    out.insert(10, (None, dns + bytes(60 - len(dns))))
    # a fragmented UDP datagram to port 53: first and second fragment
    out += [(None, fr) for fr in udp_fragments(53)]
    for i, (f, _) in enumerate(out, 1):
        if f is not None:
            f["frame"] = i
    return out


def udp_fragments(dport):
    """The first two IPv4 fragments (MF set; offset 0, then 185 x 8 bytes) of
    a UDP datagram to @dport; the second has no UDP header."""
    def ip_hdr(frag, length):
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, length, 7, frag, 64, 17, 0,
                                   bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2])))
        ip[10:12] = struct.pack("!H", csum16(bytes(ip)))
        return bytes(ip)
    eth = MAC_B + MAC_A + struct.pack("!H", ETH_IPV4)
    first = eth + ip_hdr(0x2000, 20 + 8 + 100) + struct.pack("!HHHH", 1111, dport, 1480, 0) + \
        bytes(100)
    second = eth + ip_hdr(0x2000 | 185, 20 + 108) + bytes(108)
    return [first, second]


def expected_good():
    return [expected_json(f) if f else OrderedDict(frame=i, roce=False)
            for i, (f, _) in enumerate(good_frames(), 1)]


def malformed_frames():
    """One frame per rejection reason droce-dump must name, each with a correct
    ICRC over the bytes actually sent where the ICRC can be located, and the
    JSON droce-dump must print: [(bytes, expected object)]."""
    out = []

    def add(f, err, stop, icrc_ok=True, mangle=None, raw=None):
        f["frame"] = len(out) + 1
        out.append((raw if raw is not None else roce_frame(f, mangle),
                    expected_json(f, icrc_ok=icrc_ok, error=err, stop=stop)))

    # a pad count (3) larger than the body that follows the BTH (1 byte)
    f = base(opcode=0x04, payload=b"", psn=1)

    def short_pad(stage, l3):
        if stage == "pre_icrc":
            bth = 20 + 8
            l3[bth + 1] = (l3[bth + 1] & ~0x30) | (3 << 4)
            l3.extend(b"\x00")  # one byte of body, pad claims 3
            l3[2:4] = struct.pack("!H", len(l3) + 4)
            l3[24:26] = struct.pack("!H", len(l3) + 4 - 20)
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:20])))
    f_pad = dict(f, pad=3)
    f_pad["frame"] = 1
    out.append((roce_frame(dict(f, pad=0), short_pad),
                expected_json(f_pad, error="PAD_TOO_LONG", stop="ext")))
    # an opcode the table does not know (0x1F is reserved in RC)
    add(base(opcode=0x1F, psn=2), "UNKNOWN_OPCODE", "bth")
    # BTH transport version 1 (9.2.3)
    add(base(opcode=0x04, payload=b"abcd", psn=3, tver=1), "BAD_TVER", "bth")
    # UDP length two bytes longer than the IP payload
    add(base(opcode=0x04, payload=b"abcd", psn=4, udp_len_delta=2), "UDP_LEN", "udp")
    # payload on an ACK (9.2.1: ACKNOWLEDGE carries none)
    f = base(opcode=0x11, aeth=aeth(0, 1), psn=5)

    def ack_payload(stage, l3):
        if stage == "pre_icrc":
            l3.extend(b"\x01\x02\x03\x04")
            l3[2:4] = struct.pack("!H", len(l3) + 4)
            l3[24:26] = struct.pack("!H", len(l3) + 4 - 20)
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:20])))
    add(f, "UNEXPECTED_PAYLOAD", "ext", mangle=ack_payload)
    # a RETH cut short by the IP length (RDMA WRITE ONLY, 8 of its 16 bytes)
    f = base(opcode=0x0A, payload=b"", psn=6, reth={"va": 1, "rkey": 2, "dma_len": 0})

    def cut_reth(stage, l3):
        if stage == "pre_icrc":
            del l3[20 + 8 + 12 + 8:]
            l3[2:4] = struct.pack("!H", len(l3) + 4)
            l3[24:26] = struct.pack("!H", len(l3) + 4 - 20)
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:20])))
    add(f, "TRUNC_EXT", "bth", mangle=cut_reth)
    # IPv4 total length beyond the end of the frame: nothing past IP is
    # decoded and the ICRC cannot be located
    f = base(opcode=0x04, payload=b"abcd", psn=7)

    def long_ip(stage, l3):
        if stage == "post_icrc":
            l3[2:4] = struct.pack("!H", len(l3) + 40)
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:20])))
    add(f, "LEN_BEYOND_FRAME", "ip", icrc_ok=False, mangle=long_ip)
    # an IP length that ends right after the AETH: no room for the ICRC (the
    # last 4 bytes of the IP packet are the AETH, which is no ICRC)
    f = base(opcode=0x11, aeth=aeth(0, 2), psn=10)

    def no_icrc(stage, l3):
        if stage == "post_icrc":
            del l3[-4:]
            l3[2:4] = struct.pack("!H", len(l3))
            l3[24:26] = struct.pack("!H", len(l3) - 20)
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:20])))
    add(f, "TRUNC_ICRC", "ext", icrc_ok=False, mangle=no_icrc)
    # IPv4 options (IHL 6, four NOPs) on a RoCEv2 packet
    f = base(opcode=0x04, payload=b"abcd", psn=11)

    def options(stage, l3):
        if stage == "post_icrc":
            l3[20:20] = b"\x01\x01\x01\x01"
            l3[0] = 0x46
            l3[2:4] = struct.pack("!H", len(l3))
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:24])))
    add(f, "IPV4_OPTIONS", "ip", icrc_ok=False, mangle=options)
    # the first fragment of a RoCE packet (MF set): nothing past IP is decoded
    f = base(opcode=0x04, payload=b"", psn=9, dscp=0, ecn=0)
    f["frame"] = len(out) + 1
    out.append((udp_fragments(ROCE_PORT)[0],
                expected_json(f, icrc_ok=False, error="IP_FRAGMENT", stop="ip")))
    # truncated IP header: the frame ends 10 bytes into it
    f = base(opcode=0x04, payload=b"", psn=8)
    raw = MAC_B + MAC_A + struct.pack("!H", ETH_IPV4) + bytes(10)
    raw += bytes(60 - len(raw))
    f["frame"] = len(out) + 1
    o = OrderedDict(frame=f["frame"], roce=True, icrc="bad", error="TRUNC_IP")
    out.append((raw[:24], o))
    return out


def bad_icrc_frames():
    """Two good frames and one whose ICRC has one bit flipped (frame 2)."""
    good = [f for f in good_frames() if f[0] is not None][:3]
    out = []
    for i, (f, fr) in enumerate(good, 1):
        f = dict(f, frame=i)
        if i == 2:
            b = bytearray(fr)
            # the ICRC is the last 4 bytes of the IP packet (frame[14:14+total_len])
            end = 14 + struct.unpack("!H", b[16:18])[0]
            b[end - 1] ^= 0x10
            out.append((bytes(b), expected_json(f, icrc_ok=False, error="BAD_ICRC")))
        else:
            out.append((fr, expected_json(f)))
    return out


# --- capture file writers -------------------------------------------------

LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_SLL2 = 1, 101, 113, 276


# --- CM MADs (IBTA vol 1 13.4.2 header, 12.6 messages), UD SEND_ONLY to QP1 --

CM_ATTR = {"REQ": 0x10, "MRA": 0x11, "REJ": 0x12, "REP": 0x13, "RTU": 0x14, "DREQ": 0x15,
           "DREP": 0x16}


def u24(v, low=0):
    """A 24-bit field in bits 31:8 of a 32-bit word, @low in bits 7:0."""
    return struct.pack("!I", (v << 8) | low)


def cm_data(attr, m):
    """The 232 bytes after the MAD header, laid out by offset (12.6.5-12.6.11)."""
    d = bytearray(232)
    if attr == "REQ":
        d[0:4] = struct.pack("!I", m["local_comm_id"])
        d[8:16] = struct.pack("!Q", m["service_id"])
        d[16:24] = struct.pack("!Q", 0x0202C9FFFE000001)
        d[32:36] = u24(m["qpn"], m["responder_resources"])
        d[36:40] = u24(0, m["initiator_depth"])
        d[40:44] = u24(0, 20 << 3)                     # remote CM timeout, RC
        d[44:48] = u24(m["start_psn"], (20 << 3) | m["retry_count"])
        d[48:50] = b"\xff\xff"
        d[50] = (m["path_mtu"] << 4) | m["rnr_retry_count"]
        d[51] = 15 << 4                                # max CM retries
        # primary path: LIDs 0xFFFF, GIDs, hop limit 64, local ACK timeout 19
        d[52:56] = b"\xff\xff\xff\xff"
        d[92], d[93], d[95] = 0, 64, 19 << 3
    elif attr in ("MRA", "REJ", "REP", "RTU", "DREQ", "DREP"):
        d[0:4] = struct.pack("!I", m["local_comm_id"])
        d[4:8] = struct.pack("!I", m["remote_comm_id"])
        if attr == "MRA":
            d[8] = m["msg_mraed"] << 6
            d[9] = m["service_timeout"] << 3
        elif attr == "REJ":
            d[8] = m["msg_rejected"] << 6
            d[10:12] = struct.pack("!H", m["reason"])
        elif attr == "REP":
            d[12:16] = u24(m["qpn"])
            d[20:24] = u24(m["start_psn"])
            d[24], d[25] = m["responder_resources"], m["initiator_depth"]
            d[27] = m["rnr_retry_count"] << 5
        elif attr == "DREQ":
            d[8:12] = u24(m["remote_qpn"])
    return bytes(d)


def mad(attr, tid, m, attr_id=None, mclass=0x07, method=0x03):
    hdr = struct.pack("!BBBBHHQHHI", 1, mclass, 2, method, 0, 0, tid,
                      CM_ATTR[attr] if attr_id is None else attr_id, 0, 0)
    return hdr + cm_data(attr, m)


def cm_frames():
    """A whole rdma_cm exchange and its edge cases, each frame with the
    "mad" object droce-dump --json must print. Returns [(dict, bytes)]."""
    a, b = "192.0.2.1", "192.0.2.2"
    ud = lambda src, dst, psn, payload: base(  # noqa: E731
        opcode=0x64, src=src, dst=dst, dscp=0, ecn=0, migreq=False, dqpn=1, psn=psn,
        ack_req=True, deth={"qkey": 0x80010000, "sqpn": 1}, payload=payload)
    la, lb = 0x11223344, 0xA5A5F00D
    msgs = [
        (a, b, "REQ", 0x100, dict(local_comm_id=la, service_id=0x000000000106486B, qpn=0x000123,
                                  start_psn=0xABCDEF, path_mtu=5, responder_resources=4,
                                  initiator_depth=2, retry_count=7, rnr_retry_count=6)),
        (b, a, "MRA", 0x100, dict(local_comm_id=lb, remote_comm_id=la, msg_mraed=0,
                                  service_timeout=21)),
        (b, a, "REP", 0x100, dict(local_comm_id=lb, remote_comm_id=la, qpn=0xFFFFFE,
                                  start_psn=0x000001, responder_resources=2, initiator_depth=4,
                                  rnr_retry_count=7)),
        (a, b, "RTU", 0x100, dict(local_comm_id=la, remote_comm_id=lb)),
        (a, b, "DREQ", 0x101, dict(local_comm_id=la, remote_comm_id=lb, remote_qpn=0xFFFFFE)),
        (b, a, "DREP", 0x101, dict(local_comm_id=lb, remote_comm_id=la)),
        (b, a, "REJ", 0x200, dict(local_comm_id=lb, remote_comm_id=0x77, msg_rejected=0,
                                  reason=28)),
    ]
    out = []
    for i, (src, dst, attr, tid, m) in enumerate(msgs):
        f = ud(src, dst, 10 + i, mad(attr, tid, m))
        want = OrderedDict(base_version=1, mgmt_class=7, class_version=2, method=3, status=0,
                           tid=tid, attr_id=CM_ATTR[attr], attr=attr)
        want.update(m)
        if attr == "REJ":
            want["reason_str"] = "consumer reject"
        out.append((f, want))
    # refused by the codec: an unknown attribute, a MAD of another class, a short one
    out.append((ud(a, b, 30, mad("RTU", 0x300, dict(local_comm_id=1, remote_comm_id=2),
                                 attr_id=0x0042)),
                OrderedDict(base_version=1, mgmt_class=7, class_version=2, method=3, status=0,
                            tid=0x300, attr_id=0x42, error="UNKNOWN_ATTR")))
    out.append((ud(a, b, 31, mad("RTU", 0x301, dict(local_comm_id=1, remote_comm_id=2),
                                 mclass=0x04)),
                OrderedDict(base_version=1, mgmt_class=4, class_version=2, method=3, status=0,
                            tid=0x301, attr_id=0x14, error="NOT_CM")))
    out.append((ud(a, b, 32, bytes(100)), OrderedDict(error="TRUNCATED")))
    res = []
    for i, (f, want) in enumerate(out, 1):
        f["frame"] = i
        res.append((f, want, roce_frame(f)))
    return res


def ts(i):
    """Capture time of frame i (0-based): T0 + i * 1.25 ms."""
    return T0, i * 1250


def write_pcap(path, frames, linktype=LINKTYPE_ETHERNET):
    with open(path, "wb") as fp:
        fp.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for i, fr in enumerate(frames):
            s, us = ts(i)
            fp.write(struct.pack("<IIII", s + us // 1000000, us % 1000000, len(fr), len(fr)))
            fp.write(fr)


def write_pcapng(path, frames, linktype=LINKTYPE_ETHERNET):
    def block(btype, body):
        body += bytes((-len(body)) % 4)
        n = 12 + len(body)
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)
    with open(path, "wb") as fp:
        fp.write(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        # IDB with if_tsresol = 9 (nanoseconds), then opt_endofopt
        opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)
        fp.write(block(0x00000001, struct.pack("<HHI", linktype, 0, 262144) + opts))
        for i, fr in enumerate(frames):
            s, us = ts(i)
            t = (s * 1000000 + us) * 1000
            fp.write(block(0x00000006, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF,
                                                   len(fr), len(fr)) + fr))


def to_sll(eth):
    """Linux cooked v1 header (16 bytes) as tcpdump -i any writes it:
    packet type (0 to us), ARPHRD_ETHER, address length, source MAC padded
    to 8 bytes, protocol = the ethertype. An 802.1Q tag stays in the body
    with protocol 0x8100, as the kernel hands it to AF_PACKET."""
    etype = eth[12:14]
    return struct.pack("!HHH", 0, 1, 6) + eth[6:12] + b"\0\0" + etype + eth[14:]


def to_sll2(eth):
    """Linux cooked v2 header (20 bytes): protocol, reserved, ifindex,
    ARPHRD_ETHER, packet type (4: outgoing), address length, address[8]."""
    return eth[12:14] + struct.pack("!HIHBB", 0, 3, 1, 4, 6) + eth[6:12] + b"\0\0" + eth[14:]


def to_raw(eth):
    """Raw IP (LINKTYPE_RAW): the Ethernet header (and any VLAN tag) removed."""
    off = 18 if eth[12:14] == b"\x81\x00" else 14
    return eth[off:]


def write_all(d):
    """Write every fixture into directory @d; returns {name: path}."""
    import os
    good = [fr for _, fr in good_frames()]
    roce_only = [fr for f, fr in good_frames() if f is not None]
    files = {
        "good.pcap": lambda p: write_pcap(p, good),
        "good.pcapng": lambda p: write_pcapng(p, good),
        "good-sll.pcap": lambda p: write_pcap(p, [to_sll(x) for x in good], LINKTYPE_SLL),
        "good-sll2.pcap": lambda p: write_pcap(p, [to_sll2(x) for x in good], LINKTYPE_SLL2),
        "good-sll2.pcapng": lambda p: write_pcapng(p, [to_sll2(x) for x in good], LINKTYPE_SLL2),
        "roce-raw.pcap": lambda p: write_pcap(p, [to_raw(x) for x in roce_only], LINKTYPE_RAW),
        "bad-icrc.pcap": lambda p: write_pcap(p, [fr for fr, _ in bad_icrc_frames()]),
        "malformed.pcap": lambda p: write_pcap(p, [fr for fr, _ in malformed_frames()[:1]]),
        "malformed-all.pcap": lambda p: write_pcap(p, [fr for fr, _ in malformed_frames()]),
        "cm.pcap": lambda p: write_pcap(p, [fr for _, _, fr in cm_frames()]),
    }
    paths = {}
    for name, writer in files.items():
        paths[name] = os.path.join(d, name)
        writer(paths[name])
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: roce_fixtures.py DIR")
    for p in write_all(sys.argv[1]).values():
        print(p)
