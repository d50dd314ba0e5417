"""Helpers for tests that run real child processes."""

from __future__ import annotations

import queue
import re
import subprocess
import threading


def killed_at(budget: str, error: str | None) -> bool:
    """Whether ``error`` is a process-isolated run's killed at its ``budget`` (``"0.3"``
    seconds): the budget's wording every runtime's uses (core/runs.timeout_error: "stopped
    at", or "ran X s, over" as the record's clock measured it), then the kill's."""
    pattern = (
        rf"TimeoutError: (stopped at its {re.escape(budget)} s timeout|ran [0-9.e+-]+ s, "
        rf"over its {re.escape(budget)} s budget) \(its worker process \d+ was killed\)"
    )
    return error is not None and re.fullmatch(pattern, error) is not None


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
