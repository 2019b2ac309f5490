"""Minimal RoCEv2 frame builder and pcap writer for the droce-replay fixtures.

Plain struct + zlib: every field is spelled out, so a fixture's bytes can be
checked against IBTA vol 1 chapter 9 and Annex A17 by reading this file.
"""
import struct
import zlib

ROCE_PORT = 4791

# IBTA 9.2.1 table 38 (RC) and A17.9.3 (CNP)
OP = {
    'SEND_FIRST': 0x00, 'SEND_MIDDLE': 0x01, 'SEND_LAST': 0x02,
    'SEND_LAST_IMM': 0x03, 'SEND_ONLY': 0x04, 'SEND_ONLY_IMM': 0x05,
    'WRITE_FIRST': 0x06, 'WRITE_MIDDLE': 0x07, 'WRITE_LAST': 0x08,
    'WRITE_LAST_IMM': 0x09, 'WRITE_ONLY': 0x0A, 'WRITE_ONLY_IMM': 0x0B,
    'READ_REQ': 0x0C, 'READ_RESP_FIRST': 0x0D, 'READ_RESP_MIDDLE': 0x0E,
    'READ_RESP_LAST': 0x0F, 'READ_RESP_ONLY': 0x10, 'ACK': 0x11,
    'ATOMIC_ACK': 0x12, 'CMP_SWAP': 0x13, 'FETCH_ADD': 0x14,
    'SEND_LAST_INV': 0x16, 'SEND_ONLY_INV': 0x17, 'CNP': 0x81,
    'UD_SEND_ONLY': 0x64,
}

# AETH syndromes (IBTA 9.7.5.1.2 table 43)
def ack(credits=0x1F):
    return credits & 0x1F

def rnr_nak(timer):
    return 0x20 | (timer & 0x1F)

NAK_PSN_SEQ, NAK_INV_REQ, NAK_REM_ACCESS, NAK_REM_OP = 0, 1, 2, 3

def nak(code):
    return 0x60 | code


def _ip4(s):
    return bytes(int(x) for x in s.split('.'))


def _mac(s):
    return bytes(int(x, 16) for x in s.split(':'))


def _csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def _ip6(s):
    import ipaddress
    return ipaddress.IPv6Address(s).packed


def icrc6(ip_hdr, udp_hdr, rest):
    """A17.4.5 for IPv6: traffic class, flow label and hop limit set to ones."""
    ip = bytearray(ip_hdr)
    ip[0] |= 0x0F
    ip[1:4] = b'\xff\xff\xff'
    ip[7] = 0xFF
    udp = bytearray(udp_hdr)
    udp[6:8] = b'\xff\xff'
    r = bytearray(rest)
    r[4] = 0xFF
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(r)) & 0xFFFFFFFF)


def icrc(ip_hdr, udp_hdr, rest):
    """A17.4.5: CRC-32 over 8 bytes of ones (no LRH), the IPv4 header with TOS,
    TTL and checksum set to ones, UDP with checksum ones, BTH with its FECN/BECN
    byte set to ones, then everything up to the ICRC. Least significant byte first."""
    ip = bytearray(ip_hdr)
    ip[1] = 0xFF
    ip[8] = 0xFF
    ip[10:12] = b'\xff\xff'
    udp = bytearray(udp_hdr)
    udp[6:8] = b'\xff\xff'
    r = bytearray(rest)
    r[4] = 0xFF
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(r)) & 0xFFFFFFFF)


def frame(src_mac, dst_mac, src_ip, dst_ip, op, dqpn, psn, payload=b'', se=False,
          ackreq=False, migreq=False, pkey=0xFFFF, becn=False, reth=None, atomic=None, aeth=None,
          aack=None, imm=None, ieth=None, ecn=0, dscp=26, ttl=64, ip_id=0, sport=49152,
          bad_icrc=False, deth=None):
    """One Ethernet/IPv4/UDP/BTH frame. reth=(va, rkey, len); atomic=(va, rkey,
    swap_add, compare); aeth=(syndrome, msn); aack=orig; imm, ieth: 32-bit;
    deth=(qkey, source QPN) for UD (9.3.3, before any other extension).
    migreq: BTH MigReq (9.2.4), which ConnectX and HiRoCE set on every packet."""
    code = OP[op]
    pad = (-len(payload)) % 4
    bth = bytes([code, (0x80 if se else 0) | (0x40 if migreq else 0) | (pad << 4), pkey >> 8, pkey & 0xFF,
                 0x40 if becn else 0, (dqpn >> 16) & 0xFF, (dqpn >> 8) & 0xFF, dqpn & 0xFF,
                 0x80 if ackreq else 0, (psn >> 16) & 0xFF, (psn >> 8) & 0xFF, psn & 0xFF])
    ext = b''
    if deth is not None:
        ext += struct.pack('>II', deth[0], deth[1] & 0xFFFFFF)
    if reth is not None:
        ext += struct.pack('>QII', *reth)
    if atomic is not None:
        ext += struct.pack('>QIQQ', *atomic)
    if aeth is not None:
        ext += struct.pack('>I', (aeth[0] << 24) | (aeth[1] & 0xFFFFFF))
    if aack is not None:
        ext += struct.pack('>Q', aack)
    if imm is not None:
        ext += struct.pack('>I', imm)
    if ieth is not None:
        ext += struct.pack('>I', ieth)
    if code == OP['CNP']:
        ext += b'\0' * 16
    body = bth + ext + payload + b'\0' * pad
    udp_len = 8 + len(body) + 4
    udp = struct.pack('>HHHH', sport, ROCE_PORT, udp_len, 0)
    if ':' in src_ip:
        tc = (dscp << 2) | ecn
        ip = struct.pack('>IHBB16s16s', (6 << 28) | (tc << 20) | 0x12345, udp_len, 17, ttl,
                         _ip6(src_ip), _ip6(dst_ip))
        crc = icrc6(ip, udp, body)
        ethertype = b'\x86\xdd'
    else:
        ip_len = 20 + udp_len
        ip = struct.pack('>BBHHHBBH4s4s', 0x45, (dscp << 2) | ecn, ip_len, ip_id, 0x4000, ttl, 17, 0,
                         _ip4(src_ip), _ip4(dst_ip))
        ip = ip[:10] + struct.pack('>H', _csum(ip)) + ip[12:]
        crc = icrc(ip, udp, body)
        ethertype = b'\x08\x00'
    if bad_icrc:
        crc = bytes(b ^ 0xFF for b in crc)
    eth = _mac(dst_mac) + _mac(src_mac) + ethertype
    f = eth + ip + udp + body + crc
    if len(f) < 60:
        f += b'\0' * (60 - len(f))  # Ethernet minimum: trailer padding after the ICRC
    return f


def write_pcap(path, frames):
    """frames: [(t_ns, bytes)]. Nanosecond pcap (magic a1b23c4d), Ethernet."""
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for t, b in frames:
            f.write(struct.pack('<IIII', t // 1000000000, t % 1000000000, len(b), len(b)))
            f.write(b)
