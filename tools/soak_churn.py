"""A soak of the per-task containers: a service that registers, runs and removes tasks
all day must hold bounded memory.

Cycles through every way a task comes and goes, ``--cycles`` times (each cycle one
verb, one or two tasks): a one-off that runs and retires, a task replaced with
``replace_existing=True``, removed, cancelled, rescheduled then removed, paused then
removed, a dependent and its upstream (run, or the upstream removed first: the
dependency purge), an ``Overlap.CANCEL_OTHER`` task whose slot queues behind its run,
a failing one-off (dead letter, then removed), an ``async def`` one-off, and, every
``--process-every`` cycles, a process-isolated one-off.  On the threaded runtime
(``Scheduler`` on a ``FakeClock``, stepped by ``lldsched.testing.Stepper``) and on the
``Simulation``; ``--shared`` also runs two schedulers of one SQLite file (shared
mode), the one removing, cancelling and replacing what the other registered.

At each checkpoint (``--checkpoints``, in cycles) it prints the traced memory held and
the ``len()`` of every dict, set, list and deque found by walking the runtime's own
objects (:func:`sizes`); at the end, the containers whose size still grew after the
first checkpoint (warm-up), which is a leak unless the count is bounded by
retention (``retain_finished``, the retired ids remembered, ``history_limit``)::

    PYTHONPATH=. python tools/soak_churn.py --cycles 100000 --checkpoints 10000,50000,100000
    PYTHONPATH=. python tools/soak_churn.py --runtimes sim --cycles 300000

docs/decisions/lifecycle.md ("Every per-task container empties when its task leaves")
lists the containers and the figures it found.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lldsched import FixedRate, OneTime, Overlap, RetryPolicy, Scheduler, Simulation
from lldsched.clock import FakeClock
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.testing import Stepper

CONTAINERS = (dict, set, list, collections.deque, frozenset)
START = datetime(2026, 1, 1, tzinfo=UTC)
NEVER = RetryPolicy.never()
RETAIN = 200  # finished tasks held: what grows past it is a leak


def sizes(root: object, *, name: str = "", depth: int = 5) -> dict[str, int]:
    """``path -> len()`` of every container reachable from ``root`` through the
    attributes of lldsched's own objects (not through containers' items: a task in
    the registry is counted once, as an entry)."""
    found: dict[str, int] = {}
    seen: set[int] = set()

    def walk(obj: object, path: str, left: int) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for attr, value in _attributes(obj):
            where = f"{path}.{attr}"
            if isinstance(value, CONTAINERS):
                found[where] = len(value)
            elif left and type(value).__module__.startswith("lldsched"):
                walk(value, where, left - 1)

    if isinstance(root, tuple):  # several runtimes: a, b, ...
        for n, each in enumerate(root):
            walk(each, "ab"[n] if n < 2 else str(n), depth)
    else:
        walk(root, name or type(root).__name__, depth)
    return found


def _attributes(obj: object) -> Iterator[tuple[str, Any]]:
    names = set(getattr(obj, "__dict__", {}))
    for klass in type(obj).__mro__:
        names.update(getattr(klass, "__slots__", ()))
    for attr in sorted(names):
        try:
            yield attr, object.__getattribute__(obj, attr)
        except AttributeError:
            continue


def _noop() -> None:
    pass


def _fail() -> None:
    raise RuntimeError("soak")


async def _coro() -> None:
    await asyncio.sleep(0)


class _SimVerbs:
    """A Simulation's verbs in the Scheduler's order: ``schedule(name, action, schedule)``."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def schedule(self, name: str, action: Any, schedule: Any, **options: Any) -> None:
        self.sim.schedule(name, schedule, action=action, **options)

    def __getattr__(self, verb: str) -> Any:
        return getattr(self.sim, verb)


def _cycles(runtime: Any, *, process_every: int) -> list[Callable[[int], None]]:
    """The verbs of one cycle, each registering its tasks on ``runtime`` (a Scheduler
    or a Simulation's :class:`_SimVerbs`) with ids of its own (``i``: the cycle)."""

    def one_off(i: int) -> None:
        runtime.schedule("once", _noop, OneTime(delay=1), id=f"once-{i}")

    def replaced(i: int) -> None:  # ten ids, replaced over and over
        runtime.schedule(
            "replaced", _noop, FixedRate(30), id=f"replaced-{i % 10}", replace_existing=True
        )

    def removed(i: int) -> None:
        runtime.schedule("removed", _noop, FixedRate(30), id=f"removed-{i}")
        runtime.remove(f"removed-{i}")

    def cancelled(i: int) -> None:
        runtime.schedule("cancelled", _noop, FixedRate(30), id=f"cancelled-{i}")
        runtime.cancel(f"cancelled-{i}")

    def rescheduled(i: int) -> None:
        runtime.schedule("rescheduled", _noop, FixedRate(30), id=f"rescheduled-{i}")
        runtime.reschedule(f"rescheduled-{i}", FixedRate(45))
        runtime.remove(f"rescheduled-{i}")

    def paused(i: int) -> None:
        runtime.schedule("paused", _noop, FixedRate(30), id=f"paused-{i}", paused=True)
        runtime.resume(f"paused-{i}")
        runtime.pause(f"paused-{i}")
        runtime.remove(f"paused-{i}")

    def dependent(i: int) -> None:  # the upstream runs, then the dependent does
        runtime.schedule("up", _noop, OneTime(delay=1), id=f"up-{i}")
        runtime.schedule("down", _noop, OneTime(delay=1), id=f"down-{i}", depends_on=[f"up-{i}"])

    def purged(i: int) -> None:  # the upstream cancelled: the dependent fails (dead
        # letter, UpstreamFailed); both removed some cycles later, the dependent first
        runtime.schedule("up", _noop, OneTime(delay=1), id=f"gone-{i}")
        runtime.schedule(
            "down", _noop, OneTime(delay=1), id=f"orphan-{i}", depends_on=[f"gone-{i}"]
        )
        runtime.cancel(f"gone-{i}")
        held = runtime.schedules()
        for old in (f"orphan-{i - 130}", f"gone-{i - 130}"):
            if old in held:
                runtime.remove(old)

    def overlapping(i: int) -> None:  # CANCEL_OTHER: removed with a slot maybe queued
        runtime.schedule(
            "overlap",
            _noop,
            FixedRate(0.5),
            id=f"overlap-{i % 20}",
            overlap=Overlap.CANCEL_OTHER,
            replace_existing=True,
        )

    def failing(i: int) -> None:  # dead-lettered at its run; removed some cycles later
        runtime.schedule("failing", _fail, OneTime(delay=1), id=f"failing-{i}", retry=NEVER)
        old = f"failing-{i - 130}"
        if old in runtime.schedules():
            runtime.remove(old)

    def coroutine(i: int) -> None:
        runtime.schedule("coro", _coro, OneTime(delay=1), id=f"coro-{i}")

    def isolated(i: int) -> None:
        if i % process_every < 13:  # one cycle in process_every (13 verbs)
            runtime.schedule(
                "isolated", "os:getpid", OneTime(delay=1), id=f"iso-{i}", isolation="process"
            )

    return [
        one_off, replaced, removed, cancelled, rescheduled, paused, dependent, purged,
        overlapping, failing, coroutine, isolated, one_off,
    ]  # fmt: skip


def _report(label: str, at: int, root: object, started: float) -> dict[str, int]:
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    counts = sizes(root)
    print(
        f"{label} {at:>8,} cycles: {held / 2**20:7.2f} MiB held, "
        f"{len(counts)} containers, {time.monotonic() - started:6.1f} s",
        flush=True,
    )
    return counts


def _grown(label: str, marks: dict[int, dict[str, int]]) -> None:
    several = len(marks) > 1
    print(f"{label}: containers by size at {', '.join(f'{m:,}' for m in sorted(marks))} cycles")
    for path in sorted(set().union(*marks.values())):  # one made after the first too
        row = [marks[m].get(path, 0) for m in sorted(marks)]
        if max(row) >= 20 or row[-1] > row[0]:
            flag = "  GREW" if several and row[-1] > row[0] else ""
            print(f"  {path:<60} {' '.join(f'{n:>8,}' for n in row)}{flag}")


def soak_threaded(cycles: int, checkpoints: list[int], process_every: int) -> None:
    scheduler = Scheduler(
        clock=FakeClock(START), workers=2, history_limit=100, retain_finished=RETAIN
    )
    with Stepper(scheduler, timeout=30) as steps:
        _run("threaded", scheduler, _cycles(scheduler, process_every=process_every),
             steps.advance, cycles, checkpoints)  # fmt: skip


def soak_sim(cycles: int, checkpoints: list[int], process_every: int) -> None:
    sim = Simulation(start=START, workers=4, history_limit=100, retain_finished=RETAIN)
    verbs = _cycles(_SimVerbs(sim), process_every=process_every)
    _run("sim", sim, verbs, sim.run_for, cycles, checkpoints)


def _run(
    label: str,
    runtime: object,
    verbs: list[Callable[[int], None]],
    advance: Callable[[float], object],
    cycles: int,
    checkpoints: list[int],
) -> None:
    """``cycles`` cycles of ``verbs`` on ``runtime``, 2 s of its time every 50, and
    120 s before each checkpoint's report."""
    marks: dict[int, dict[str, int]] = {}
    started = time.monotonic()
    for i in range(1, cycles + 1):
        verbs[i % len(verbs)](i)
        if i % 50 == 0:
            advance(2)
        if i in checkpoints:
            advance(120)
            marks[i] = _report(label, i, runtime, started)
    _grown(label, marks)


def soak_shared(cycles: int, checkpoints: list[int]) -> None:
    """Two schedulers of one SQLite file (as two processes hold it): ``a`` registers
    and runs what is due (stepped); ``b``, its clock 1,000 s behind (it claims
    nothing: ``tests/cluster.py``'s ``ahead_and_behind``), removes, cancels and
    replaces what ``a`` registered (the other process's verbs), and follows the
    change feed."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "soak.db"
        behind = FakeClock(START - timedelta(seconds=1000))
        options: dict[str, Any] = {"purge_retired": True, "retain_finished": RETAIN}
        with (
            SqliteTaskStore(path, shared=True, poll=0.05) as store_a,
            SqliteTaskStore(path, shared=True, poll=0.05) as store_b,
        ):
            a = Scheduler(store=store_a, clock=FakeClock(START), **options)
            b = Scheduler(store=store_b, clock=behind, **options).start()
            marks: dict[int, dict[str, int]] = {}
            started = time.monotonic()
            with Stepper(a, timeout=30) as steps:
                for i in range(1, cycles + 1):
                    kind = i % 4
                    if kind == 0:
                        a.schedule("once", _noop, OneTime(delay=1), id=f"once-{i}")
                    elif kind == 1:
                        a.schedule("gone", _noop, FixedRate(30), id=f"gone-{i}")
                        b.remove(f"gone-{i}")
                    elif kind == 2:
                        a.schedule("cut", _noop, FixedRate(30), id=f"cut-{i}")
                        b.cancel(f"cut-{i}")
                    else:
                        b.schedule(
                            "replaced", _noop, FixedRate(30), id=f"r-{i % 7}", replace_existing=True
                        )
                    if i % 20 == 0:
                        steps.advance(2)
                        behind.advance(0)
                    if i in checkpoints:
                        steps.advance(120)
                        behind.advance(0)
                        b.wait_idle(timeout=30)
                        marks[i] = _report("shared", i, (a, b), started)
            b.shutdown()
        _grown("shared", marks)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtimes", default="threaded,sim", help="threaded,sim,shared")
    parser.add_argument("--cycles", type=int, default=100_000)
    parser.add_argument("--checkpoints", default="10000,50000,100000")
    parser.add_argument("--process-every", type=int, default=5_000)
    args = parser.parse_args(argv)
    checkpoints = [int(n) for n in args.checkpoints.split(",")]
    tracemalloc.start()
    for runtime in args.runtimes.split(","):
        if runtime == "threaded":
            soak_threaded(args.cycles, checkpoints, args.process_every)
        elif runtime == "sim":
            soak_sim(args.cycles, checkpoints, args.process_every)
        elif runtime == "shared":
            soak_shared(args.cycles, checkpoints)
        else:
            sys.exit(f"unknown runtime {runtime!r}: threaded, sim or shared")


if __name__ == "__main__":
    main()
