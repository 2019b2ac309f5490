# SPDX-License-Identifier: BSD-3-Clause
"""droce from Python: RDMA over droce's userspace RoCEv2 stack.

The shape of the seed example::

    import droce
    ctx = droce.Context()                       # DROCE_PORT / DROCE_IP, or port=, ip=
    qp = ctx.create_qp(droce.QP_TYPE_RC)
    qp.connect(droce.Address("198.18.0.1", 7471))   # the other side: ctx.listen(7471).accept()
    mr = qp.register_memory(numpy_array)        # zero copy: any buffer, or a CPU tensor
    qp.post_send(mr)
    qp.post_recv(mr)
    wc = qp.poll_completion()                   # status, opcode, byte_len, imm

Every call that waits releases the GIL. Failed calls raise droce.Error (an
OSError: errno, strerror); a work request that completes with an error
raises droce.CompletionError (.status, .completion). docs/python.md
has the whole API.
"""
from __future__ import annotations

import os
from collections import deque
from typing import Any, NamedTuple, Optional, Tuple

from . import _droce
from ._droce import Completion, CompletionError, Error, MemoryRegion

__all__ = [
    "Address", "Context", "Listener", "QP", "MemoryRegion", "Completion", "Error",
    "CompletionError", "QP_TYPE_RC",
]

QP_TYPE_RC: int = _droce.QP_TYPE_RC
for _n in dir(_droce):
    if _n.startswith(("WR_", "WC_", "ACCESS_")):
        globals()[_n] = getattr(_droce, _n)
        __all__.append(_n)
ACCESS_ALL: int = (_droce.ACCESS_LOCAL_WRITE | _droce.ACCESS_REMOTE_WRITE
                   | _droce.ACCESS_REMOTE_READ | _droce.ACCESS_REMOTE_ATOMIC)


class Address(NamedTuple):
    """Where to connect: an IPv4 address and a port of droce's CM (rdma_cm's port space)."""
    ip: str
    port: int


class RemoteBuffer(NamedTuple):
    """A peer's registered memory, as RDMA READ and WRITE name it."""
    addr: int
    rkey: int
    length: int

    def pack(self) -> bytes:
        """16 bytes to carry in private data or a SEND."""
        return self.addr.to_bytes(8, "little") + self.rkey.to_bytes(4, "little") + \
            self.length.to_bytes(4, "little")

    @classmethod
    def unpack(cls, b: bytes) -> "RemoteBuffer":
        return cls(int.from_bytes(b[0:8], "little"), int.from_bytes(b[8:12], "little"),
                   int.from_bytes(b[12:16], "little"))


def _is_tensor(obj: Any) -> bool:
    t = type(obj)
    return t.__module__.startswith("torch") and hasattr(obj, "data_ptr") and hasattr(obj, "is_contiguous")


class QP:
    """A reliable connected queue pair with its own completion queue (Context.create_qp)."""

    def __init__(self, ctx: "Context", q: _droce.QP) -> None:
        self._ctx_ref = ctx
        self._q = q
        self.peer: Optional[Address] = None
        # The regions of posted work requests, held until their completion:
        # a region dropped right after the post (qp.post_send(ctx.register_memory(a)))
        # must not be deregistered under a transfer (droce then fails the WR).
        self._sq: deque = deque()
        self._rq: deque = deque()

    @property
    def num(self) -> int:
        """The QP number."""
        return self._q.num

    @property
    def state(self) -> str:
        """IBTA state: RESET, INIT, RTR, RTS, SQD, SQE, ERR."""
        return self._q.state

    @property
    def connected(self) -> bool:
        return self._q.connected

    @property
    def peer_private_data(self) -> Optional[bytes]:
        """The private data the peer sent with its REQ (accept side) or REP (connect side)."""
        return self._q.peer_private_data

    def close(self) -> None:
        """Destroy the QP and its CQ."""
        self._q.close()
        self._sq.clear()
        self._rq.clear()

    def connect(self, addr: Address, timeout: Optional[float] = 10.0,
                private_data: bytes = b"") -> None:
        """Connect to a listening peer (IB CM over QP1, as rdma_cm); returns once established.

        Raises droce.Error: ECONNREFUSED (rejected, nobody listens), ETIMEDOUT, EHOSTUNREACH.
        """
        self._q._connect(addr.ip, int(addr.port), -1.0 if timeout is None else float(timeout),
                      private_data)

    def disconnect(self, timeout: float = 5.0) -> None:
        """Send a DREQ and wait for the answer; the QP moves to ERR (posted WRs flush)."""
        self._q._disconnect(float(timeout))

    def wait_disconnect(self, timeout: Optional[float] = None) -> None:
        """Wait until the peer disconnects (its DREQ arrived); TimeoutError after timeout."""
        self._q._wait_disconnect(-1.0 if timeout is None else float(timeout))

    def register_memory(self, obj: Any, access: Optional[int] = None) -> MemoryRegion:
        """Register obj's memory on this QP's context (see Context.register_memory)."""
        return self._ctx_ref.register_memory(obj, access)

    def post_send(self, mr: MemoryRegion, offset: int = 0, length: Optional[int] = None,
                  wr_id: int = 0, imm: Optional[int] = None, signaled: bool = True) -> None:
        """SEND mr[offset:offset+length] (all of it by default); with imm, SEND with immediate."""
        op = _droce.WR_SEND if imm is None else _droce.WR_SEND_WITH_IMM
        self._q._post_send(op, mr, offset, -1 if length is None else length, wr_id, imm, 0, 0, signaled)
        self._sq.append((wr_id, mr))

    def post_recv(self, mr: MemoryRegion, offset: int = 0, length: Optional[int] = None,
                  wr_id: int = 0) -> None:
        """Post a receive buffer for one SEND (or one RDMA WRITE with immediate)."""
        self._q._post_recv(mr, offset, -1 if length is None else length, wr_id)
        self._rq.append((wr_id, mr))

    def post_write(self, mr: MemoryRegion, remote: RemoteBuffer | Tuple[int, int], offset: int = 0,
                   length: Optional[int] = None, remote_offset: int = 0, wr_id: int = 0,
                   imm: Optional[int] = None, signaled: bool = True) -> None:
        """RDMA WRITE mr[offset:offset+length] to the peer's (addr, rkey) + remote_offset;
        with imm, the peer gets a WC_RECV_RDMA_WITH_IMM completion (it needs a posted receive)."""
        addr, rkey = remote[0], remote[1]
        op = _droce.WR_RDMA_WRITE if imm is None else _droce.WR_RDMA_WRITE_WITH_IMM
        self._q._post_send(op, mr, offset, -1 if length is None else length, wr_id, imm,
                        addr + remote_offset, rkey, signaled)
        self._sq.append((wr_id, mr))

    def post_read(self, mr: MemoryRegion, remote: RemoteBuffer | Tuple[int, int], offset: int = 0,
                  length: Optional[int] = None, remote_offset: int = 0, wr_id: int = 0,
                  signaled: bool = True) -> None:
        """RDMA READ the peer's (addr, rkey) + remote_offset into mr[offset:offset+length]."""
        addr, rkey = remote[0], remote[1]
        self._q._post_send(_droce.WR_RDMA_READ, mr, offset, -1 if length is None else length, wr_id,
                        None, addr + remote_offset, rkey, signaled)
        self._sq.append((wr_id, mr))

    def poll_completion(self, timeout: Optional[float] = None, check: bool = True) -> Completion:
        """Wait for the next completion (GIL released); TimeoutError after timeout seconds.

        With check (the default) a completion whose status is not WC_SUCCESS raises
        droce.CompletionError, with .status and .completion."""
        try:
            wc = self._q._poll_completion(-1.0 if timeout is None else float(timeout), check)
        except CompletionError as e:
            self._retire(e.completion)
            raise
        self._retire(wc)
        return wc

    def _retire(self, wc: Completion) -> None:
        """Let go of the regions of the WRs a completion ends: a receive ends its own
        (receives complete in order); a send completion also ends the unsignaled sends
        posted before it (IBTA 10.8.3: a send queue completes in order)."""
        recv = wc.opcode in (_droce.WC_RECV, _droce.WC_RECV_RDMA_WITH_IMM)
        q = self._rq if recv else self._sq
        if wc.status != _droce.WC_SUCCESS and not any(w == wc.wr_id for w, _ in q):
            q = self._sq if recv else self._rq  # a flushed WR's opcode says nothing
        for i, (w, _) in enumerate(q):
            if w == wc.wr_id:
                if q is self._sq:
                    for _ in range(i + 1):
                        q.popleft()
                else:
                    del q[i]
                return

    def __enter__(self) -> "QP":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Listener:
    """A port of the context's CM that accepts connections (Context.listen)."""

    def __init__(self, ctx: "Context", port: int) -> None:
        self.ctx = ctx
        self.port = port
        self.id = ctx._listen(port)

    def accept(self, qp: Optional[QP] = None, timeout: Optional[float] = None,
               private_data: bytes = b"") -> QP:
        """Wait for a connection request and accept it on qp (a new RC QP by default).

        Receives may be posted on qp before: a SEND that comes right after the connection
        then finds them. Returns the connected QP; qp.peer is the peer's (ip, port)."""
        if qp is None:
            qp = self.ctx.create_qp(QP_TYPE_RC)
        qp.peer = Address(*self.ctx._accept(self.id, qp._q, -1.0 if timeout is None else float(timeout),
                                            private_data))
        return qp

    def close(self) -> None:
        """Stop listening: further requests get a REJ."""
        self.ctx._unlisten(self.id)


class Context(_droce.Context):
    """One droce context on one DPDK port, with its CM. One per poll thread.

    port: as DROCE_PORT (memif:server,socket=PATH | memif:client,socket=PATH | iface:NAME |
    vdev:ARGS); ip: this endpoint's IPv4 address (DROCE_IP); eal: extra EAL arguments
    (DROCE_EAL). progress_thread: a thread polls the context every 50 us while Python does
    something else (ACKs, ARP, retransmissions keep going); cc: congestion control by name.
    """

    def __init__(self, port: Optional[str] = None, ip: Optional[str] = None,
                 eal: Optional[str] = None, progress_thread: bool = True,
                 cc: Optional[str] = None) -> None:
        port = port or os.environ.get("DROCE_PORT")
        ip = ip or os.environ.get("DROCE_IP")
        if not port or not ip:
            raise Error(22, "droce.Context needs port= and ip= (or DROCE_PORT and DROCE_IP; "
                            "scripts/droce-python --port ... --ip ... sets them)")
        super().__init__(port, ip, eal or os.environ.get("DROCE_EAL"), progress_thread, cc)

    def create_qp(self, qp_type: int = QP_TYPE_RC, max_send_wr: int = 256, max_recv_wr: int = 256,
                  cq_depth: int = 0) -> QP:
        """An RC QP in INIT (receives may be posted at once) with a CQ of its own."""
        return QP(self, self._create_qp(qp_type, max_send_wr, max_recv_wr, cq_depth))

    def register_memory(self, obj: Any, access: Optional[int] = None) -> MemoryRegion:
        """Register obj's memory, zero copy: anything with the buffer protocol (numpy arrays,
        bytearray, memoryview, bytes for sending only) or a contiguous CPU torch tensor. The
        region holds obj (a bytearray cannot be resized meanwhile) until mr.close(). access:
        ACCESS_* flags, by default all of them (local write and remote read/write/atomic; for
        read-only memory, none: it can be sent from)."""
        if _is_tensor(obj):
            if obj.device.type != "cpu" or not obj.is_contiguous():
                raise Error(22, "only contiguous CPU tensors can be registered")
            return self._register_raw(obj.data_ptr(), obj.numel() * obj.element_size(), obj,
                                      ACCESS_ALL if access is None else access)
        return self._register(obj, -1 if access is None else access)

    def listen(self, port: int) -> Listener:
        """Listen on port of this context's address."""
        return Listener(self, port)

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
