"""The actions child schedulers run in the multi-process tests (importable by path).

Each run appends one JSON line to the file named by ``LLDSCHED_CLUSTER_LOG``:
the claim it holds (task, slot, attempt, fencing token) and the process;
:func:`claimed_run` appends a second, ``{"ended": token}``, once its work is done
(before it returns, so before its run is settled).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
from typing import IO

from lldsched.core.context import RunContext

_lock = threading.Lock()  # guards _log: workers of one child append whole lines, one at a time
_log: list[IO[str]] = []  # the open log file, opened at the first run


def _write(line: str) -> None:
    with _lock:
        if not _log:
            _log.append(open(os.environ["LLDSCHED_CLUSTER_LOG"], "a", encoding="utf-8"))  # noqa: SIM115
        handle = _log[0]
        handle.write(line + "\n")
        handle.flush()


def claimed_run(ctx: RunContext, work: float = 0.02) -> int | None:
    """Log the claim this run holds, then work for ``work`` seconds (stopping early if the
    flag goes up), log that it ended; returns the token.  A run logged and not ended in a
    stopped process is inside its action: its settle is not written yet."""
    _write(
        json.dumps(
            {
                "task": ctx.task_id,
                "slot": ctx.due,
                "attempt": ctx.attempt,
                "token": ctx.fencing_token,
                "pid": os.getpid(),
            }
        )
    )
    ctx.wait(work)
    _write(json.dumps({"ended": ctx.fencing_token}))
    return ctx.fencing_token


seen: queue.Queue[tuple[str, int | None, bool, str | None]] = queue.Queue()
"""What :func:`until_flag` saw: (task id, token, lease lost, reason), one per run."""


def until_flag(ctx: RunContext) -> None:
    """Wait (up to 10 s) until the run's flag goes up, then tell :data:`seen` why."""
    seen.put((ctx.task_id, ctx.fencing_token, False, None))  # started
    ctx.wait(10)
    seen.put((ctx.task_id, ctx.fencing_token, ctx.lease_lost, ctx.reason))


async def token_of(ctx: RunContext) -> int | None:
    """A coroutine action: returns its run's fencing token."""
    return ctx.fencing_token


async def until_cancelled() -> None:
    """A coroutine action that only ends when it is cancelled (or after 60 s)."""
    await asyncio.sleep(60)


gate = threading.Event()
"""Set by a test to let the held run of :func:`held_past_its_lease` finish."""
moments: queue.Queue[tuple[str, int | None]] = queue.Queue()
"""What :func:`held_past_its_lease` saw, in order: ``("started", token)`` when a run
began, then ``("flag", token)`` when the held run's wait for its flag ended (what
:data:`seen` says of it: the flag up, or 20 s passed)."""
_held: set[str] = set()  # task ids whose first run here was held (under _lock)


def held_past_its_lease(ctx: RunContext) -> None:
    """The first run of a task in this process: tell :data:`seen` it started, wait (up to
    20 s) until its flag goes up, tell :data:`seen` why, then wait (up to 20 s) for
    :data:`gate`: a run that outlives its lease and ends later.  Any later run of the
    task here just tells :data:`seen` it started and ends."""
    moments.put(("started", ctx.fencing_token))
    seen.put((ctx.task_id, ctx.fencing_token, False, None))  # started
    with _lock:
        first = ctx.task_id not in _held
        _held.add(ctx.task_id)
    if not first:
        return
    ctx.wait(20)
    moments.put(("flag", ctx.fencing_token))
    seen.put((ctx.task_id, ctx.fencing_token, ctx.lease_lost, ctx.reason))
    gate.wait(20)


released = threading.Event()
"""Set by a test to let the runs of :func:`held_until_released` end."""


def held_until_released(ctx: RunContext) -> None:
    """Tell :data:`seen` the run started, wait (up to 20 s) for :data:`released` whatever
    the flag says, then tell :data:`seen` how it ended: a run that outlives its lease."""
    seen.put((ctx.task_id, ctx.fencing_token, False, None))  # started
    released.wait(20)
    seen.put((ctx.task_id, ctx.fencing_token, ctx.lease_lost, ctx.reason))


def held_then_broken(ctx: RunContext) -> None:
    """:func:`held_until_released`, then raise: a run that fails once it is let go."""
    held_until_released(ctx)
    raise RuntimeError("broken once released")
