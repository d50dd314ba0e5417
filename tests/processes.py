"""Helpers for tests that run real child processes."""

from __future__ import annotations

import queue
import subprocess
import threading


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
