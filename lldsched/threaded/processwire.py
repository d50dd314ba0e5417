"""The wire between the process pool and a worker process: framed JSON messages.

Both ends speak in frames :meth:`multiprocessing.connection.Connection.send_bytes`
writes (a 4-byte signed big-endian length, then the bytes), each a JSON object:
the parent's call, the child's ``{"started": true}`` and its answer (see
:mod:`lldsched.threaded.processes`, which owns the protocol's meaning).  This module
owns how they travel: :class:`Pipe`, one reading and one writing descriptor as a single
``Connection``; :func:`receive`, the parent's read of the next message within a
timeout that bounds the whole message, not its first byte, refusing one longer than
:data:`ANSWER_LIMIT` or one that is not a JSON object (:class:`Garbled`).  No lock:
each pipe has one reader and one writer at a time (the worker thread that holds the
child, and the child).
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["ANSWER_LIMIT", "Garbled", "Pipe", "receive"]

# The longest message a child may send, in bytes.  Its answers are bounded far below:
# a result is 200 characters, an error 2,000, a traceback 20,000 (at most 12 bytes each
# in JSON).  A longer one is not lldsched's answer: the child is killed, not believed.
ANSWER_LIMIT = 1 << 20


class Garbled(Exception):
    """The child sent what no child of the pool sends (its action wrote on the pipe)."""


def receive(connection: Connection, *, timeout: float | None) -> dict[str, Any] | None:
    """The child's next message, or None once ``timeout`` seconds passed before the whole
    of it came (EOFError at the child's death); :class:`Garbled` for a message longer
    than :data:`ANSWER_LIMIT` or one that is not a JSON object.  The frame is the one
    :meth:`Connection.send_bytes` writes: a 4-byte signed big-endian length (-1 for one
    above 2 GiB), then the bytes."""
    deadline = None if timeout is None else time.monotonic() + timeout
    header = _read(connection.fileno(), 4, deadline=deadline)
    if header is None:
        return None
    (size,) = struct.unpack("!i", header)
    if not 0 <= size <= ANSWER_LIMIT:
        raise Garbled(f"sent a message longer than {ANSWER_LIMIT} bytes")
    data = _read(connection.fileno(), size, deadline=deadline)
    if data is None:
        return None
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise Garbled(f"sent {data[:80]!r}, which is not an answer") from None
    return answer


def _read(fd: int, size: int, *, deadline: float | None) -> bytes | None:
    """Exactly ``size`` bytes from ``fd``, or None once the monotonic ``deadline`` passed
    first (``None``: no bound); EOFError at end-of-file.  ``poll``, not ``select``: a
    service may hold more than 1,024 descriptors."""
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    data = bytearray()
    while len(data) < size:
        if deadline is not None:
            left = max(0.0, deadline - time.monotonic())
            if not waiting.poll(left * 1000.0):
                return None
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

    def send_bytes(self, buf: Any, offset: int = 0, size: int | None = None) -> None:
        self._writer.send_bytes(buf, offset, size)

    def close(self) -> None:
        self._writer.close()
        super().close()
