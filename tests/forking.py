"""Running a step in a child forked from the test's process, with a bounded wait: what a
server that forks its workers (gunicorn, uWSGI, ``multiprocessing``'s fork) does to what
was made before the fork."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["BOUND", "HUNG", "held_by_another_thread", "in_child"]

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


@contextlib.contextmanager
def held_by_another_thread(
    lock: contextlib.AbstractContextManager[object],
) -> Iterator[Callable[[], None]]:
    """Inside, another thread holds ``lock`` (a call under way there, as when a server
    forks its workers while a store saves), until the block ends or calls what this gives
    (which waits for that thread to let it go)."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            done.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()

    def let_go() -> None:
        done.set()
        holder.join()

    try:
        yield let_go
    finally:
        let_go()
