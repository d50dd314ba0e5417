"""The wire between the process pool and a worker process: framed JSON messages.

Both ends speak in frames :meth:`multiprocessing.connection.Connection.send_bytes`
writes (a 4-byte signed big-endian length, then the bytes), each a JSON object:
the parent's call, the child's ``{"started": true}`` and its answer (see
:mod:`lldsched.threaded.processes.pool`, which owns the protocol's meaning).  This module
owns how they travel: :class:`Pipe`, one reading and one writing descriptor as a single
``Connection``; :func:`send`, the parent's write of a call within a :class:`Bound`
(a call longer than the pipe's buffer, some 64 KiB, waits for the child to read it:
one hung before it reads would hold the worker for ever); :func:`receive`, the
parent's read of the next message within a
:class:`Bound` that holds the whole message, not its first byte (and is asked again
when it changes: a frame begun is read to the deadline in force now), refusing one longer than
:data:`ANSWER_LIMIT` or one that is not a JSON object (:class:`Garbled`).  No lock:
each pipe has one reader and one writer at a time (the worker thread that holds the
child, and the child).
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
from multiprocessing.connection import Connection
from typing import Any, Protocol

__all__ = ["ANSWER_LIMIT", "Bound", "Garbled", "Pipe", "receive", "send"]

# The longest message a child may send, in bytes.  Its answers are bounded far below:
# a result is 200 characters, an error 2,000, a traceback 20,000 (at most 12 bytes each
# in JSON).  A longer one is not lldsched's answer: the child is killed, not believed.
ANSWER_LIMIT = 1 << 20


class Garbled(Exception):
    """The child sent what no child of the pool sends (its action wrote on the pipe)."""


class Bound(Protocol):
    """How long :func:`receive` may wait, asked again each time ``woken`` is readable
    (the pool's budget of a run: a retime changes it, then writes on ``woken``)."""

    woken: int  # a descriptor that becomes readable when left() may answer otherwise

    def left(self) -> float:
        """Seconds left to wait (``inf``: no bound; at most 0: the deadline passed)."""
        ...


def send(pipe: Pipe, message: bytes, bound: Bound) -> bool:
    """Write ``message`` to the child as one frame, the one
    :meth:`Connection.send_bytes` writes (a 4-byte signed big-endian length, or -1 and
    8 bytes of length above 2 GiB, then the bytes), unless ``bound`` says the time is up
    first: False then, the frame cut short (the caller kills the child).  The parent's
    writing end is non-blocking (:meth:`Pipe.parents_end`): a write takes what the pipe
    has room for, and ``poll`` waits for room within the bound, asked again whenever its
    ``woken`` descriptor is readable.  BrokenPipeError when the child is gone."""
    size = len(message)
    header = struct.pack("!i", size) if size <= 0x7FFFFFFF else struct.pack("!iQ", -1, size)
    fd = pipe.writing
    data = memoryview(header + message)
    waiting: select.poll | None = None  # made when the pipe is first full: rarely
    while data:
        try:
            data = data[os.write(fd, data) :]
            continue
        except BlockingIOError:  # full: the child has not read what is there yet
            pass
        if waiting is None:
            waiting = select.poll()
            waiting.register(fd, select.POLLOUT)
            waiting.register(bound.woken, select.POLLIN)
        left = bound.left()
        ready = waiting.poll(None if left == math.inf else max(0.0, left) * 1000.0)
        if any(ready_fd == bound.woken for ready_fd, _ in ready):
            os.read(bound.woken, 4096)  # told: ask the bound again
        if not ready and left <= 0:
            return False
    return True


def receive(connection: Connection, bound: Bound | None = None) -> dict[str, Any] | None:
    """The child's next message, or None once ``bound`` says its time is up before the
    whole of it came (None: no bound; EOFError at the child's death); :class:`Garbled`
    for a message longer than :data:`ANSWER_LIMIT` or one that is not a JSON object.
    The bound is asked again whenever its ``woken`` descriptor is readable (drained
    here), so the deadline in force holds the whole message, a frame already begun
    included.  The frame is the one :meth:`Connection.send_bytes` writes: a 4-byte
    signed big-endian length (-1 for one above 2 GiB), then the bytes."""
    header = _read(connection.fileno(), 4, bound)
    if header is None:
        return None
    (size,) = struct.unpack("!i", header)
    if size < -1:
        raise Garbled(f"sent a frame header announcing {size} bytes, a length no frame has")
    if size == -1 or size > ANSWER_LIMIT:  # -1: over 2 GiB, its length in 8 bytes more
        announced = "over 2 GiB" if size == -1 else f"{size} bytes"
        raise Garbled(
            f"sent a frame header announcing {announced}, over the {ANSWER_LIMIT} bytes an "
            "answer may have"
        )
    data = _read(connection.fileno(), size, bound)
    if data is None:
        return None
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        quoted = f"{data!r}" if size <= 80 else f"{data[:80]!r} (its first 80)"
        raise Garbled(f"sent {size} bytes, {quoted}, which is not an answer") from None
    return answer


def _read(fd: int, size: int, bound: Bound | None) -> bytes | None:
    """Exactly ``size`` bytes from ``fd``, or None once ``bound`` says the time is up
    first; EOFError at end-of-file.  ``poll``, not ``select``: a service may hold more
    than 1,024 descriptors."""
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    woken = -1 if bound is None else bound.woken
    if woken >= 0:
        waiting.register(woken, select.POLLIN)
    data = bytearray()
    while len(data) < size:
        if bound is not None:
            left = bound.left()
            ready = waiting.poll(None if left == math.inf else max(0.0, left) * 1000.0)
            if any(ready_fd == woken for ready_fd, _ in ready):
                os.read(woken, 4096)  # told: ask the bound again
            if not any(ready_fd == fd for ready_fd, _ in ready):
                if not ready and left <= 0:
                    return None
                continue
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


class Pipe(Connection):
    """One reading and one writing descriptor as a single :class:`Connection`."""

    def __init__(self, reading: int, writing: int) -> None:
        super().__init__(reading, readable=True, writable=False)
        self._writer = Connection(writing, readable=False, writable=True)

    @classmethod
    def parents_end(cls, reading: int, writing: int) -> Pipe:
        """The parent's end of a child's pipes: its writing descriptor non-blocking, for
        :func:`send` (the child's own end blocks: it writes with ``send_bytes``)."""
        os.set_blocking(writing, False)
        return cls(reading, writing)

    @property
    def writing(self) -> int:
        """The writing descriptor."""
        return self._writer.fileno()

    def send_bytes(self, buf: Any, offset: int = 0, size: int | None = None) -> None:
        self._writer.send_bytes(buf, offset, size)

    def close(self) -> None:
        self._writer.close()
        super().close()
