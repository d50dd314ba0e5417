"""The crash harness's child: a service on a SqliteTaskStore, killed by its parent.

``python -m tests.crash_child PATH JOURNAL STOP_AT START UNTIL [SERVICE]``: opens the store at
``PATH`` (a :class:`~tests.crash_jobs.CountingStore` that blocks at write ``STOP_AT``;
0: never), on a fake clock at ``START``, registers the jobs of
:func:`tests.crash_jobs.register` (or of the ``SERVICE`` named in
:data:`tests.crash_jobs.SERVICES`) as a service does at every start, and steps the clock
to ``UNTIL``; then says ``done N`` (the writes it made) and exits cleanly.
"""

from __future__ import annotations

import sys

from lldsched import FakeClock, Scheduler
from lldsched.testing import Stepper
from tests import crash_jobs


def main(path: str, journal: str, stop_at: int, start: float, until: float, service: str) -> None:
    crash_jobs.JOURNAL[0] = journal
    clock = crash_jobs.CLOCK[0] = FakeClock(start)
    store = crash_jobs.open_counting(path, stop_at=stop_at)
    scheduler = Scheduler(clock=clock, store=store, workers=2)
    crash_jobs.SERVICES[service](scheduler, report=True)  # before it starts: writes in order
    try:
        with Stepper(scheduler, timeout=20) as steps:
            steps.advance_to(until)
    finally:
        store.close()
    print(f"done {store.count[0]}", flush=True)


if __name__ == "__main__":
    path, journal, stop_at, start, until, *service = sys.argv[1:]
    main(path, journal, int(stop_at), float(start), float(until), *service or ["register"])
