"""CM MADs for the generated rdma_cm handshakes (pcap/gen), byte by byte with
struct: the MAD common header (IBTA vol 1 13.4.2) and the CM messages REQ,
REP, RTU, DREQ, DREP (12.6.5, 12.6.8-12.6.11), with rdma_cm's IP private
data header in the REQ (Annex A11). Independent of droce's codec."""
import struct

QP1_QKEY = 0x80010000
ATTR = {'REQ': 0x10, 'MRA': 0x11, 'REJ': 0x12, 'REP': 0x13, 'RTU': 0x14, 'DREQ': 0x15,
        'DREP': 0x16}
MTU_CODE = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


def _u24(v, low=0):
    return struct.pack('>I', ((v & 0xFFFFFF) << 8) | low)


def mad(attr, tid, body):
    """A 256-byte CM Send: header, then @body padded to 232 bytes."""
    hdr = struct.pack('>BBBBHHQHHI', 1, 0x07, 2, 0x03, 0, 0, tid, ATTR[attr], 0, 0)
    return hdr + body + bytes(232 - len(body))


def req(tid, comm_id, port, qpn, psn, mtu, src_ip, dst_ip, sport):
    sid = 0x0000000001060000 | port                       # A11: TCP port space
    b = struct.pack('>IIQQI I', comm_id, 0, sid, 0x0200000000000001, 0, 0)
    b += _u24(qpn, 1) + _u24(0, 1)                        # responder resources, initiator depth
    b += _u24(0, 20 << 3)                                 # remote CM response timeout, RC
    b += _u24(psn, (20 << 3) | 7)                         # local CM response timeout, retry 7
    b += struct.pack('>HBB', 0xFFFF, (MTU_CODE[mtu] << 4) | 7, 15 << 4)
    gid = lambda ip: bytes(10) + b'\xff\xff' + bytes(int(x) for x in ip.split('.'))  # noqa: E731
    b += struct.pack('>HH', 0xFFFF, 0xFFFF) + gid(src_ip) + gid(dst_ip)
    b += struct.pack('>IBBBB', 0, 0, 64, 0, 19 << 3)      # flow/rate, TC, hop limit, SL, ACK timeout
    b += bytes(44)                                        # no alternate path
    ip4 = lambda ip: bytes(12) + bytes(int(x) for x in ip.split('.'))  # noqa: E731
    b += struct.pack('>BBH', 0, 4 << 4, sport) + ip4(src_ip) + ip4(dst_ip)
    return mad('REQ', tid, b)


def rep(tid, comm_id, remote_id, qpn, psn):
    b = struct.pack('>III', comm_id, remote_id, 0) + _u24(qpn) + _u24(0) + _u24(psn)
    b += struct.pack('>BBBB', 1, 1, 0, 7 << 5) + struct.pack('>Q', 0x0200000000000002)
    return mad('REP', tid, b)


def ids(attr, tid, comm_id, remote_id, qpn=None):
    """RTU, DREP (two comm IDs), DREQ (and the receiver's QPN)."""
    b = struct.pack('>II', comm_id, remote_id)
    if qpn is not None:
        b += _u24(qpn)
    return mad(attr, tid, b)
