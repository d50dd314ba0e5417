"""Module-level actions for tests with a durable store (which keeps import paths).

A durable store refuses lambdas and closures, so tests that persist tasks use
these.  ``CALLS`` collects what ran; tests clear it.
"""

from __future__ import annotations

import os
import threading

from lldsched import RunContext

CALLS: list[tuple[str, float, int]] = []
CALLS_LOCK = threading.Lock()


def noop() -> None:
    """Does nothing."""


def note(label: str, ctx: RunContext) -> None:
    """Append ``(label, due, attempt)`` to CALLS."""
    with CALLS_LOCK:
        CALLS.append((label, ctx.due, ctx.attempt))


def flaky(fail: bool, ctx: RunContext) -> None:
    """Append ``(task_id, due, attempt)``; raise on the first two attempts when ``fail``."""
    with CALLS_LOCK:
        CALLS.append((ctx.task_id, ctx.due, ctx.attempt))
    if fail and ctx.attempt < 3:
        raise RuntimeError("flaky")


def fails_first_at(label: str, slot: float, ctx: RunContext) -> None:
    """:func:`note`; raise on the first attempt of the run due at ``slot``."""
    note(label, ctx)
    if ctx.attempt == 1 and ctx.due == slot:
        raise RuntimeError(f"the first attempt at {slot!r} fails")


def broken() -> None:
    """Always raises."""
    raise RuntimeError("disk is full")


def hang_first_time(marker: str) -> None:
    """The first call anywhere (``marker`` does not exist yet) creates ``marker``, says
    ``started`` on stdout and blocks until its process is killed; later calls note a run."""
    if not os.path.exists(marker):
        with open(marker, "w"):
            pass
        print("started", flush=True)
        threading.Event().wait()
    with CALLS_LOCK:
        CALLS.append(("rerun", 0.0, 0))


GATE = threading.Event()
"""What :func:`gated` waits for; tests set it (and clear it again)."""


def gated() -> None:
    """Wait for :data:`GATE` (at most 30 s, so a failing test cannot hang a worker)."""
    GATE.wait(30)


def gated_with_context(ctx: RunContext) -> None:
    """:func:`gated` for an action that declares ``ctx`` (whose run a lease watch flags)."""
    GATE.wait(30)
