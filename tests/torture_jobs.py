"""The actions of the concurrency torture test (tests/test_torture.py).

Module-level, so that a durable store keeps them by import path, with JSON arguments.
Every call of :func:`act` or :func:`act_async` is noted in :data:`CALLS` as
``(task_id, due, attempt, worker)``, the fields its run's record carries, so the test
can match each call to exactly one record.  What a call does is its ``mode``:

* ``"ok"``: returns a value (its record keeps the text);
* ``"fail"``: raises every attempt;
* ``"flaky"``: raises on the first attempt of a slot only;
* ``"exit"``: raises ``SystemExit`` (a failed run, the worker goes on);
* ``"block"``: waits for :data:`GATE` (bounded, so a failing test cannot hang a worker);
* ``"reenter"``: calls verbs and reads of :data:`SCHEDULER` from the worker, on its own
  task (``task``, ``run_now``, ``records``, ``dead_letter``), errors of a scheduler shut
  down meanwhile allowed.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from lldsched import RunContext, SchedulerStateError

CALLS: list[tuple[str, float, int, int]] = []
CALLS_LOCK = threading.Lock()  # guards CALLS
GATE = threading.Event()
"""What a ``"block"`` call waits for; the test sets it to let every blocked run end."""
BLOCK_LIMIT = 20.0  # seconds a "block" call waits at most
SCHEDULER: Any = None
"""The scheduler a ``"reenter"`` call calls back into (the test sets it)."""


def reset(scheduler: Any) -> None:
    """Forget the calls noted so far, close the gate, and aim ``"reenter"`` at ``scheduler``."""
    global SCHEDULER
    with CALLS_LOCK:
        CALLS.clear()
    GATE.clear()
    SCHEDULER = scheduler


def calls() -> list[tuple[str, float, int, int]]:
    """A copy of the calls noted so far."""
    with CALLS_LOCK:
        return list(CALLS)


def act(mode: str, ctx: RunContext) -> str | None:
    """Note the call, then do what ``mode`` says (see the module docstring)."""
    with CALLS_LOCK:
        CALLS.append((ctx.task_id, ctx.due, ctx.attempt, ctx.worker))
    if mode == "fail":
        raise RuntimeError("always fails")
    if mode == "flaky" and ctx.attempt == 1:
        raise RuntimeError("fails its first attempt")
    if mode == "exit":
        raise SystemExit(3)
    if mode == "block":
        GATE.wait(BLOCK_LIMIT)
    elif mode == "reenter":
        _reenter(ctx.task_id)
    return mode


def _reenter(task_id: str) -> None:
    scheduler = SCHEDULER
    if scheduler is None:
        return
    scheduler.task(task_id)  # its own task is registered while it runs, or removed: raises
    scheduler.records()
    scheduler.dead_letter()
    with contextlib.suppress(SchedulerStateError):  # shut down meanwhile
        scheduler.run_now(task_id)  # running: False, changes nothing


async def act_async(mode: str, ctx: RunContext) -> str:
    """The coroutine form of :func:`act` (no ``"block"`` or ``"reenter"``: it runs on the
    scheduler's event loop)."""
    with CALLS_LOCK:
        CALLS.append((ctx.task_id, ctx.due, ctx.attempt, ctx.worker))
    if mode == "fail" or (mode == "flaky" and ctx.attempt == 1):
        raise RuntimeError("fails")
    return mode
