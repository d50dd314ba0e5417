"""The interpreter's exit on Python 3.12.0 to 3.12.2, in a test: no thread starts.

:func:`refusing_threads` has ``Thread.start`` raise as those releases do once the main
thread has returned (CPython gh-113964), with lldsched's exit hook begun
(:func:`lldsched.threadstarts.at_exit`), so that a thread started where that exit may
refuse it is tested so on every Python (docs/decisions/platforms.md, "At exit, Python
3.12.0 to 3.12.2 start no thread")."""

from __future__ import annotations

import threading

import pytest

from lldsched import threadstarts

REFUSED = "can't create new thread at interpreter shutdown"
"""What ``Thread.start`` raises there."""


def refusing_threads(monkeypatch: pytest.MonkeyPatch, *, exiting: bool = True) -> list[str]:
    """From now until ``monkeypatch.undo()``, ``Thread.start`` raises ``RuntimeError`` as
    the exit does, the exit hook begun (``exiting``; False: not, as the exit before it or
    anywhere else).  Returns the names of the threads refused, as they are."""
    refused: list[str] = []

    def refuse(thread: threading.Thread) -> None:
        refused.append(thread.name)
        raise RuntimeError(REFUSED)

    monkeypatch.setattr(threadstarts, "_exiting", exiting)
    monkeypatch.setattr(threading.Thread, "start", refuse)
    return refused
