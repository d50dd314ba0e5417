"""The actions child schedulers run in the multi-process tests (importable by path).

Each run appends one JSON line to the file named by ``LLDSCHED_CLUSTER_LOG``:
the claim it holds (task, slot, attempt, fencing token) and the process.
"""

from __future__ import annotations

import json
import os
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
    flag goes up); returns the token."""
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
    return ctx.fencing_token
