"""A round trip of psycopg failed inside its wait for the reply, for the PostgreSQL
store's tests of what a call that fails so leaves behind (the server and every other
round trip real): the one place they replace ``psycopg.waiting.wait``."""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from types import FrameType
from typing import Any

import psycopg
import psycopg.waiting
import pytest


def fail_in_wait(
    monkeypatch: pytest.MonkeyPatch,
    error: BaseException,
    *,
    thread: str | None = None,
    nth: int = 1,
    sent: bool = True,
    within: str | None = None,
) -> threading.Event:
    """The ``nth`` round trip from now on made on a thread whose name holds ``thread``
    (None: the calling thread), and, given ``within``, inside a call of a function of
    that name (a store's ``claim``: the call a test means, whatever other round trips
    the thread makes before it), raises ``error`` in psycopg's wait, its command
    ``sent`` or not yet (its generator not started: psycopg's own step before the
    command, a transaction block's count, not run); once.  The event is set once it
    has."""
    wait = psycopg.waiting.wait
    caller = threading.current_thread()
    done = threading.Event()
    # Guards count: the round trips of every thread that matches are counted together.
    lock = threading.Lock()
    count = 0

    def matches() -> bool:
        current = threading.current_thread()
        if not (current is caller if thread is None else thread in current.name):
            return False
        frame: FrameType | None = sys._getframe(2)  # the caller of psycopg's wait, and up
        while within is not None and frame is not None:
            if frame.f_code.co_name == within:
                return True
            frame = frame.f_back
        return within is None

    def waiting(gen: Generator[Any, Any, Any], fileno: int, *args: Any, **kwargs: Any) -> Any:
        nonlocal count
        if not done.is_set() and matches():
            with lock:
                count += 1
                fire = count == nth
            if fire:
                done.set()
                if sent:
                    next(gen)  # the command is sent; its reply is never read
                raise error
        return wait(gen, fileno, *args, **kwargs)

    monkeypatch.setattr(psycopg.waiting, "wait", waiting)
    return done
