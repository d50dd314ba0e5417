"""Running a step in a child forked from the test's process, with a bounded wait: what a
server that forks its workers (gunicorn, uWSGI, ``multiprocessing``'s fork) does to what
was made before the fork."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable

__all__ = ["BOUND", "HUNG", "in_child"]

BOUND = 30.0
"""Seconds the parent waits for the child's word before it kills it."""

HUNG = "hung"
"""What :func:`in_child` says of a child that gave no word within its bound."""


def in_child(use: Callable[[], object], *, bound: float = BOUND) -> str:
    """Run ``use`` in a forked child: what it returned (its ``repr``) or raised (type and
    message); :data:`HUNG` if it said nothing within ``bound`` seconds (it is killed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running any cleanup
        try:
            outcome = repr(use())
        except BaseException as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        os.write(write, outcome.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        ready, _, _ = select.select([pipe], [], [], bound)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        outcome = pipe.read().decode() if ready else HUNG
    os.waitpid(pid, 0)
    return outcome
