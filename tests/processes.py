"""Helpers for tests that run real child processes."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent  # the repository: a child imports tests.* from it


def killed_at(budget: str, error: str | None) -> bool:
    """Whether ``error`` is a process-isolated run's killed at its ``budget`` (``"0.3"``
    seconds): the budget's wording every runtime's uses (core/runs.timeout_error: "stopped
    at", or "ran X s, over" as the record's clock measured it), then the kill's."""
    pattern = (
        rf"TimeoutError: (stopped at its {re.escape(budget)} s timeout|ran [0-9.e+-]+ s, "
        rf"over its {re.escape(budget)} s budget) \(its worker process \d+ was killed\)"
    )
    return error is not None and re.fullmatch(pattern, error) is not None


def held_before_a_child(
    scheduler: Any, monkeypatch: pytest.MonkeyPatch, bound: float
) -> tuple[threading.Event, threading.Event]:
    """Hold ``scheduler``'s worker between beginning a process-isolated run and taking a
    child for it: the first event is set once it got there, and it goes on once the
    second is (within ``bound`` seconds)."""
    taking, go = threading.Event(), threading.Event()
    pool = scheduler._processes
    take = pool._take

    def held(task_id: str) -> Any:  # the worker, between beginning the run and its child
        taking.set()
        assert go.wait(bound)
        return take(task_id)

    monkeypatch.setattr(pool, "_take", held)
    return taking, go


def killed_pid(error: str | None) -> int:
    """The pid of the worker process ``error`` says was killed (``(its worker process
    4242 was killed)``): the child a run's record names, known even when the child was
    killed before its action wrote anything of its own."""
    found = re.search(r"\(its worker process (\d+) was killed\)$", error or "")
    assert found is not None, error
    return int(found.group(1))


def lines_of(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The child's lines of output, as they come (a thread reads them)."""
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout

    def read() -> None:
        with stdout:  # closed at its end: unclosed, it is a ResourceWarning under -X dev
            for line in stdout:
                lines.put(line.strip())

    threading.Thread(target=read, daemon=True).start()
    return lines


def killed_mid_run(
    child: str, directory: Path, t0: float, *, before: int = 0
) -> tuple[Path, list[str]]:
    """Run ``child`` (Python source, given a store's path in ``directory``, a marker file's
    path and ``t0`` as its arguments) until a run of it says ``started``
    (:func:`tests.jobs.hang_first_time`, which creates the marker), then kill it with
    SIGKILL: a process that died mid-run.  Returns the store's path and the ``before``
    lines it printed first.  Each wait is bounded (a handshake, not a sleep)."""
    path, marker = directory / "tasks.db", directory / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", child, str(path), str(marker), repr(t0)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = lines_of(process)
    try:
        printed = [lines.get(timeout=20) for _ in range(before)]
        assert lines.get(timeout=20) == "started" and marker.exists()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(20)
    assert process.returncode == -signal.SIGKILL
    return path, printed


# What parent_of_a_helper's child runs last: it forks a helper that never uses what the
# child made (a gunicorn worker whose master dies, a process a job forked and left
# running), and both wait on their stdin until killed.  The helper prints its own pid:
# once it is read, the helper's fork hooks have run (printed by the parent, the pid
# could be read before the helper first ran, and a test that killed the parent then
# found the helper still holding what its hooks let go).
_FORK_A_HELPER = """
if os.fork() == 0:
    print(os.getpid(), flush=True)
    sys.stdin.read()
    os._exit(0)
sys.stdin.read()
"""


@contextlib.contextmanager
def parent_of_a_helper(child: str, *args: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Run ``child`` (Python source importing ``os`` and ``sys``, given ``args``), then
    fork a helper from it (:data:`_FORK_A_HELPER`): the process and the helper's pid,
    both killed once the block ends.  For a parent SIGKILLed while the child it forked
    lives on."""
    process = subprocess.Popen(
        [sys.executable, "-c", child + _FORK_A_HELPER, *args],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    helper = None
    try:
        helper = int(lines_of(process).get(timeout=30))
        yield process, helper
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(20)
        if helper is not None:
            os.kill(helper, signal.SIGKILL)
        assert process.stdin is not None
        process.stdin.close()
