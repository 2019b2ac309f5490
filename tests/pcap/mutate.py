#!/usr/bin/python3
"""Mutation test of droce-replay's comparison: for every frame droce must
send in every fixture of pcap/, make a copy of the capture with one field of
that frame changed (PSN, MSN, a payload byte, an RETH/AtomicETH/immediate
byte, the opcode) and its ICRC recomputed, and check that the replay then
reports a mismatch (exit 1). The mutations allowed to pass unnoticed are
one on a positive ACK in a scenario that says "allow ack-coalescing" (a
coalescing responder may never have sent that ACK), and one of the PSN or
MSN of a sequence or RNR NAK in a scenario compared by PSN ("compare
by-psn": which packets a responder saw out of sequence or without a
receive follows what the network lost beyond the capture point, so those
NAKs are not compared; their kind and the RNR timer are).

usage: mutate.py DROCE_REPLAY PCAP_DIR WORKDIR
"""
import os
import struct
import subprocess
import sys
import zlib

# Extension header bytes before the payload, by BTH opcode (IBTA 9.2.1 / 9.3).
EXT = {0x00: 0, 0x01: 0, 0x02: 0, 0x03: 4, 0x04: 0, 0x05: 4, 0x06: 16, 0x07: 0, 0x08: 0,
       0x09: 4, 0x0A: 16, 0x0B: 20, 0x0C: 16, 0x0D: 4, 0x0E: 0, 0x0F: 4, 0x10: 4, 0x11: 4,
       0x12: 12, 0x13: 28, 0x14: 28, 0x16: 4, 0x17: 4, 0x81: 16}
AETH_OPS = {0x0D, 0x0F, 0x10, 0x11, 0x12}


def read_pcap(path):
    with open(path, 'rb') as f:
        b = f.read()
    hdr, off, out = b[:24], 24, []
    while off < len(b):
        ts, tn, cl, ol = struct.unpack_from('<IIII', b, off)
        out.append([ts, tn, bytearray(b[off + 16:off + 16 + cl])])
        off += 16 + cl
    return hdr, out


def write_pcap(path, hdr, frames):
    with open(path, 'wb') as f:
        f.write(hdr)
        for ts, tn, d in frames:
            f.write(struct.pack('<IIII', ts, tn, len(d), len(d)))
            f.write(bytes(d))


def layout(d):
    """(l3 offset, ip version, bth offset, end of IP payload) or None."""
    et = struct.unpack_from('>H', d, 12)[0]
    if et == 0x0800:
        iplen = struct.unpack_from('>H', d, 16)[0]
        return 14, 4, 14 + 20 + 8, 14 + iplen
    if et == 0x86DD:
        plen = struct.unpack_from('>H', d, 18)[0]
        return 14, 6, 14 + 40 + 8, 14 + 40 + plen
    return None


def fix_icrc(d):
    l3, v, bth, end = layout(d)
    ip = bytearray(d[l3:bth - 8])
    if v == 4:
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b'\xff\xff'
    else:
        ip[0] |= 0x0F
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xFF
    udp = bytearray(d[bth - 8:bth])
    udp[6:8] = b'\xff\xff'
    rest = bytearray(d[bth:end - 4])
    rest[4] = 0xFF
    d[end - 4:end] = struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(rest)) & 0xFFFFFFFF)


def src_ip(d):
    l3, v, _, _ = layout(d)
    return bytes(d[l3 + 12:l3 + 16]) if v == 4 else bytes(d[l3 + 8:l3 + 24])


def mutations(d):
    """(name, function) pairs applicable to frame d."""
    _, _, bth, end = layout(d)
    op = d[bth]
    pad = (d[bth + 1] >> 4) & 3
    ext = EXT.get(op)
    if ext is None:
        return []
    plen = end - 4 - pad - (bth + 12 + ext)
    muts = []

    def m_psn(x):
        p = (struct.unpack_from('>I', x, bth + 8)[0] & 0xFFFFFF) + 1
        x[bth + 9:bth + 12] = (p & 0xFFFFFF).to_bytes(3, 'big')
    muts.append(('psn+1', m_psn))

    def m_op(x):
        x[bth] = 0x11 if op != 0x11 else 0x12
    if op != 0x81 and op not in (0x12,):
        muts.append(('opcode', m_op))
    if op in AETH_OPS:
        def m_msn(x):
            a = bth + 12 + 1
            x[a:a + 3] = ((int.from_bytes(x[a:a + 3], 'big') + 1) & 0xFFFFFF).to_bytes(3, 'big')
        muts.append(('msn+1', m_msn))
    if plen > 0:
        def m_pay(x):
            x[end - 4 - pad - 1] ^= 0x01
        muts.append(('payload', m_pay))
    if ext and op not in AETH_OPS and op != 0x81:
        # last byte of RETH/AtomicETH/ImmDt/IETH; of a FETCH_ADD the last
        # byte of the add value: its compare field means nothing (9.4.5)
        last = bth + 12 + (20 if op == 0x14 else ext) - 1

        def m_ext(x):
            x[last] ^= 0x01
        muts.append(('ext-hdr', m_ext))
    return muts


def coalescable(frames, i, side):
    """Frame i, a positive ACK the side sent, is one droce-replay's comparison
    may drop under "allow ack-coalescing" (IBTA 9.7.5.1.1): the side's next
    response for the same QP is another ACKNOWLEDGE, which covers it. Any
    other positive ACK (the last of a run, one before a READ response) is
    compared, and a mutation of it must be caught."""
    d = frames[i][2]
    bth = layout(d)[2]
    qpn = d[bth + 5:bth + 8]
    for _, _, n in frames[i + 1:]:
        lay = layout(n)
        if lay is None or src_ip(n) != side or n[lay[2] + 5:lay[2] + 8] != qpn:
            continue
        op = n[lay[2]]
        if 0x0D <= op <= 0x12:  # a response: READ response, ACKNOWLEDGE, atomic ACK
            return op == 0x11
    return False


def scenario_side(scn):
    ip = coalesce = by_psn = None
    for line in open(scn):
        w = line.split('#')[0].split()
        if w[:1] == ['ip']:
            ip = w[1]
        if w[:2] == ['allow', 'ack-coalescing']:
            coalesce = True
        if w[:2] == ['compare', 'by-psn']:
            by_psn = True
    return ip, bool(coalesce), bool(by_psn)


def ip_bytes(s):
    import ipaddress
    return ipaddress.ip_address(s).packed


def main():
    replay, pcapdir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    killed = survived_ok = survived_nak = 0
    bad = []
    for name in sorted(os.listdir(pcapdir)):
        if not name.endswith('.scn'):
            continue
        scn = os.path.join(pcapdir, name)
        side, coalesce, by_psn = scenario_side(scn)
        capname = None
        for line in open(scn):
            w = line.split('#')[0].split()
            if w[:1] == ['capture']:
                capname = w[1]
        hdr, frames = read_pcap(os.path.join(pcapdir, capname))
        text = open(scn).read()
        for i, (_, _, d) in enumerate(frames):
            if layout(d) is None or src_ip(d) != ip_bytes(side):
                continue
            for mname, fn in mutations(d):
                m = [list(f) for f in frames]
                m[i][2] = bytearray(d)
                fn(m[i][2])
                fix_icrc(m[i][2])
                base = '%s-f%d-%s' % (name[:-4], i + 1, mname)
                cap = os.path.join(work, base + '.pcap')
                write_pcap(cap, hdr, m)
                s = os.path.join(work, base + '.scn')
                with open(s, 'w') as f:
                    f.write(''.join('capture %s\n' % cap if l.startswith('capture ') else l
                                    for l in text.splitlines(True)))
                rc = subprocess.run([replay, s], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
                bth = layout(d)[2]
                is_ack = d[bth] == 0x11 and (d[bth + 12] & 0x60) == 0 and \
                    coalescable(frames, i, ip_bytes(side))
                syn = d[bth + 12] if d[bth] == 0x11 else None
                seq_or_rnr = syn is not None and ((syn & 0x60) == 0x20 or syn == 0x60)
                if rc == 1:
                    killed += 1
                elif rc == 0 and coalesce and is_ack:
                    survived_ok += 1
                elif rc == 0 and by_psn and seq_or_rnr and mname in ('psn+1', 'msn+1'):
                    survived_nak += 1
                else:
                    bad.append('%s: exit %d' % (base, rc))
    print('%d mutations caught, %d on coalescable ACKs and %d on NAKs compared by PSN allowed to pass'
          % (killed, survived_ok, survived_nak))
    for b in bad:
        print('NOT CAUGHT', b)
    sys.exit(1 if bad or not killed else 0)


if __name__ == '__main__':
    main()
