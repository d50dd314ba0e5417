"""A scheduler whose process the test kills while a process-isolated run is in flight.

``python -m tests.orphan_child STORE MARKER RELEASE LINGER``: a scheduler on a
:class:`~lldsched.SqliteTaskStore` at ``STORE`` runs :func:`tests.process_jobs.held` in
a worker process (it writes its pid to ``MARKER`` and waits for the file ``RELEASE``).
With ``LINGER`` a path (not ``-``), this process then forks a child that writes its pid
there and lives on, as a gunicorn worker forked from a preloaded app does.  Then it
waits on its stdin, for the test's SIGKILL.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from lldsched import OneTime, RetryPolicy, Scheduler, SqliteTaskStore


def main(store: str, marker: str, release: str, linger: str) -> None:
    scheduler = Scheduler(store=SqliteTaskStore(store), workers=1).start()
    scheduler.schedule(
        "held", "tests.process_jobs:held", OneTime(delay=0), isolation="process",
        args=[marker, release], timeout=3600, retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not Path(marker).exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the polling interval of a bounded wait
    if linger != "-" and os.fork() == 0:  # a child that outlives this process
        Path(linger).write_text(str(os.getpid()))
        sys.stdin.read()  # until the test closes our shared stdin
        os._exit(0)
    sys.stdin.read()  # until the test kills this process


if __name__ == "__main__":
    main(*sys.argv[1:5])
