"""Machine instructions per dispatched job, per registration and per coroutine run on
the threaded ``Scheduler`` (and on a bare event loop, the coroutines' floor), counted
with callgrind (repeatable under load).

    python benchmarks/threaded_instructions.py              # all four, about six minutes
    python benchmarks/threaded_instructions.py dispatch     # one of them

As ``sim_instructions.py`` does for a simulated run: each figure is the difference
between two fresh interpreters under ``valgrind --tool=callgrind``
(``PYTHONHASHSEED=0``), divided by the difference in work, so start-up, imports and
teardown cancel out.  The garbage collector stays on: its share is part of the cost.

* ``dispatch``: ``bench_dispatch``'s workload, :data:`JOBS` no-op one-off tasks due
  at once on ``Scheduler(workers=4)``, registered, then started and run to the last
  job, against the same registrations never started: instructions per job, every
  thread counted;
* ``store-listener``: ``dispatch`` on ``bench_dispatch``'s second configuration,
  ``store=InMemoryTaskStore()`` and one no-op listener with a backlog of
  ``4 * JOBS`` (none dropped), on both sides: instructions per job, the delivery of
  its events (and of its registration's) included;
* ``register``: ``FixedRate(60)`` tasks registered as a user writes them, on a
  scheduler never started, 12,000 against 2,000: instructions per registration;
* ``coroutines``: ``bench_coroutines``'s workload, :data:`JOBS` no-op ``async def``
  one-off tasks due at once, started and run to the last, against the same
  registrations never started (each side collects the garbage after registering, as
  ``bench_coroutines`` does untimed): instructions per coroutine run, every thread
  counted;
* ``suspending``: ``coroutines`` with a coroutine that awaits ``asyncio.sleep(0)`` once
  before it ends (one that does I/O suspends): what an eager first step (Python 3.12
  and later) costs or saves a run that is scheduled on the loop after all;
* ``awaitables``: ``dispatch``'s workload with a thread action that returns a
  coroutine (``lambda: job()``, ``job`` an ``async def``): the worker begins the run and
  hands what it returned to the event loop (``RunExecution._complete``), the path an
  ``async def`` action (``coroutines``) never takes: instructions per run;
* ``bare-loop``: ``bench_coroutines``' floor, a bare event loop on a thread of its own
  making one ``asyncio.Task`` per coroutine, :data:`JOBS` coroutines against none (the
  garbage collected on both sides).
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Awaitable, Callable

from sim_instructions import count

JOBS = 20_000
SIZES = {
    "dispatch": (0.0, 1.0),
    "store-listener": (0.0, 1.0),
    "register": (2_000.0, 12_000.0),
    "coroutines": (0.0, 1.0),
    "suspending": (0.0, 1.0),
    "awaitables": (0.0, 1.0),
    "bare-loop": (0.0, 1.0),
}
UNITS = {
    "dispatch": "job",
    "store-listener": "job",
    "register": "registration",
    "coroutines": "run",
    "suspending": "run",
    "awaitables": "run",
    "bare-loop": "run",
}


def measured(workload: str, size: float) -> int:
    """Do ``workload`` at ``size`` (dispatch, store-listener and coroutines: 1 starts the
    scheduler, 0 does not; register: the registrations; bare-loop: 1 runs the
    coroutines, 0 only starts and stops the loop); the units of work done."""
    from lldsched import FixedRate, InMemoryTaskStore, OneTime, Scheduler

    _grace_past_the_registrations()
    if workload in ("coroutines", "suspending", "bare-loop"):
        return _coroutines(workload, started=bool(size))
    if workload == "store-listener":
        scheduler = Scheduler(
            workers=4, store=InMemoryTaskStore(), listeners=[_listener], listener_backlog=4 * JOBS
        )
    else:
        scheduler = Scheduler(workers=4)
    if workload == "register":
        for _ in range(int(size)):
            scheduler.schedule("tick", _noop, FixedRate(60))
        return int(size)
    done = threading.Event()
    counter = itertools.count(1)

    def job() -> None:  # a function (a bound method of a lock would cost far more)
        if next(counter) == JOBS:
            done.set()

    async def awaited() -> None:
        job()

    action = (lambda: awaited()) if workload == "awaitables" else job
    at = time.time() - 1.0
    for _ in range(JOBS):
        scheduler.schedule("noop", action, OneTime(at=at))
    if not size:
        scheduler.shutdown(timeout=60)
        return 0
    scheduler.start()
    done.wait(600)
    scheduler.wait_idle(600)
    scheduler.shutdown(timeout=60)
    return JOBS


def _grace_past_the_registrations() -> None:
    """Under callgrind (some 50 times slower), and more on a loaded host, the
    :data:`JOBS` registrations take longer than the default misfire grace (60 s), so
    ``start()`` decided the oldest as misfires (``recovery.at_start``: slots that passed
    before the start, recorded ``missed``, not run) and the count mixed those decisions
    with runs, by an amount that moved with the host's load (about 250 instructions a
    job, up to 500).  At full speed the registrations take a tenth of a second: no slot
    misfires, and this grace, read by ``at_start`` alone, changes nothing."""
    from unittest import mock

    from lldsched import MisfirePolicy
    from lldsched.core import recovery

    mock.patch.object(recovery, "DEFAULT_MISFIRE", MisfirePolicy(grace=365 * 86400.0)).start()


def _noop() -> None:
    pass


def _listener(event: object) -> None:
    """The listener of ``store-listener`` (``bench_dispatch._no_op_listener``)."""


def _suspending(done: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    """``bench_coroutines._coroutine_of``, with one ``await`` that suspends first."""
    import asyncio

    async def suspends() -> None:
        await asyncio.sleep(0)
        await done()

    return suspends


def _coroutines(workload: str, *, started: bool) -> int:
    """The never-started side collects the garbage as the started one does before its
    timed part (``bench_coroutines``, untimed there): not a run's cost.  Without it the
    collection of the 20,000 registrations' heap counted about 1,900 instructions a
    coroutine run."""
    import gc

    import bench_coroutines

    # Under callgrind (some 50 times slower), on a loaded host, the 20,000 runs took
    # longer than the benchmark's own bound (120 s), and the count failed.
    bench_coroutines.TIMEOUT = 3600.0
    if workload == "suspending":  # both sides make (and the started one runs) this one
        bench_coroutines._coroutine_of = _suspending
    if workload == "bare-loop":
        if started:
            bench_coroutines.run_bare_loop(JOBS)
        else:
            with bench_coroutines._loop_thread("bare-loop"):
                gc.collect()  # as run_bare_loop does before it hands the coroutines over
        return JOBS if started else 0
    if started:
        bench_coroutines.run_lldsched(JOBS)
        return JOBS
    from lldsched import OneTime, Scheduler

    scheduler = Scheduler(workers=4)
    action = bench_coroutines._coroutine_of(bench_coroutines._Done(JOBS))
    at = time.time() - 1.0
    for _ in range(JOBS):
        scheduler.schedule("noop", action, OneTime(at=at))
    gc.collect()  # as run_lldsched does before start()
    scheduler.shutdown(timeout=60)
    return 0


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(measured(argv[1], float(argv[2])))
        return
    for workload in argv or SIZES:
        small, large = SIZES[workload]
        low, done_low = count(workload, small, script=__file__)
        high, done_high = count(workload, large, script=__file__)
        per_unit = (high - low) / (done_high - done_low)
        unit = UNITS[workload]
        print(f"{workload}: {per_unit:,.0f} instructions per {unit} ({low:,} -> {high:,})")


if __name__ == "__main__":
    main(sys.argv[1:])
