"""Concurrent verbs against one running threaded Scheduler: what a caller may rely on
*when a verb returns*, checked across threads.

tests/test_torture.py checks the state a storm of verbs leaves once everything is
quiet.  This file checks the promises that are about time, which a quiet state cannot
show: a verb's effect holds from the moment it returned, on every other thread.  Four
caller threads apply seeded random verbs (``schedule`` with caller ids and
``replace_existing``, ``reschedule``, ``modify``, ``pause``, ``resume``, ``cancel``,
``remove``, ``run_now``, ``redrive``, and the reads ``task().history``, ``tasks()``,
``records()``, ``metrics()``) to a shared set of tasks (fixed rate, fixed delay, one-off,
cron, ``depends_on``, overlap policies; thread actions that succeed, fail, fail once,
block on a gate, pause or cancel their own task, or return a coroutine the worker hands
to the loop;
coroutine actions, one that outlives its enforced timeout), with a memory store and
with a SQLite store, while the scheduler runs them on the system clock; a listener
calls verbs too, from the listeners' thread, and the scheduler is started once the
callers are going.  It is shut down while work is still
due and running (``drain=True`` and ``drain=False``): after the callers' verbs, or
half-way through them (the verbs go on against it).  Then:

* **no run begins after ``pause()`` or ``cancel()`` returned True** for its task, unless
  a verb that may start it again (``resume``, ``redrive``, or a ``remove`` and a new
  registration under the id) overlapped or followed (docs/GUIDE.md, "Pause and cancel
  act at once": a run in flight finishes, nothing is scheduled after it).  A run's begin is
  seen as the store write that makes the task ``running``: the store is called under
  the scheduler's lock, so its writes and the verbs' returns are totally ordered by one
  counter (:data:`STAMP`).  (A run an overlap policy begins beside another is not seen
  so: the task is running already; the flag rule below still holds for it.);
* **a thread run called after ``cancel()`` returned has its flag raised** (it began
  before the cancel: ``ctx.cancelled``), and **no coroutine begins after ``cancel()``
  or ``pause()`` returned**: a body that ran although the loop's driver reached it only
  after the verb returned (the driver's first step is stamped, :func:`stamped_drive`)
  is a broken promise;
* **nothing runs after ``shutdown()`` returned True**, and ``drain=True`` left nothing
  that was due when it was called;
* every call of an action has exactly one record, every record one call; the listener
  hears each task's transitions once and in order (a chain from its registration to
  its status), every record once; each task's counters (runs, failures, the attempt it
  waits with) agree with its history;
* ``metrics()`` read from the caller threads agrees with itself (``busy`` within the
  pool, counts never negative, the outcome counts never going down), and after the
  shutdown its outcome counts are exactly the records the listener heard, its dead
  letter the scheduler's;
* a history read from a caller thread while its task runs never raises, is in order
  and holds the task's own records; a reader thread reads a fast recurring task's
  history all along, each read the one before it and more;
* after the shutdown the store holds what the scheduler holds (each task's status, due
  instant, attempt, counts, last error, not running, its records), and so does the
  SQLite file opened again by a new store;
* no exception escaped a thread (``threading.excepthook``, ``sys.unraisablehook``), and
  nothing but the jobs' own failures was logged at WARNING or above;
* every wait is bounded: a thread or a ``shutdown()`` that does not come back fails the
  test instead of hanging it.

Threads switch every 10 µs during a round (:data:`SWITCH`; Python's default is 5 ms),
so that they switch inside the verbs and the reads.  About a second a case.  A longer
run of the same checks is ``python -m tests.test_concurrent_verbs --seconds 600`` (seed
after seed; not part of the suite).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import logging
import random
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Overlap,
    Priority,
    RetryPolicy,
    RunContext,
    ScheduleError,
    Scheduler,
    SchedulerStateError,
    SqliteTaskStore,
    TaskEvent,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.core.registration import UNCHANGED, Unchanged
from lldsched.persistence import TaskSnapshot
from lldsched.schedules.base import Schedule
from lldsched.threaded.coroutines import CoroutineRunner

THREADS = 4
OPS = 250  # verbs a thread, at least
MIN_CALLS = 400  # calls of the actions a round waits for, at most WAIT / 3 seconds
CALLER_IDS = [f"job-{n}" for n in range(10)]  # ids the threads share
NEW_TIMEOUTS: list[float | Unchanged] = [UNCHANGED, UNCHANGED, 0.02, 0.05]  # modify's
WAIT = 30.0  # the bound of every wait: a failing test fails, it never hangs
WORKERS = 3
MAX_COROUTINES = 4  # few: coroutine runs wait for a slot too
SWITCH = 1e-5  # seconds between thread switches during a round (Python's default: 5e-3)

# What a verb may rightly raise when another thread got there first (an id removed,
# a finished task, an upstream removed or a cycle, an id taken, a dependent left).
EXPECTED = (TaskNotFoundError, SchedulerStateError, ValidationError, ScheduleError)

STAMP = itertools.count(1)
"""One order for what every thread does: ``next(STAMP)`` is atomic (the GIL), and the
store's writes take theirs under the scheduler's lock."""

GATE = threading.Event()
"""What a ``"block"`` thread action waits for (bounded); a verb opens it now and then."""
STOPPING = threading.Event()
"""Set as the round's shutdown begins: a ``"block"`` action waits no more, and the
callers stop once they made their verbs."""


# -- the actions: module level, so that SQLite keeps them by import path ------------------


@dataclass(frozen=True)
class Call:
    """One call of an action, as its body saw it start."""

    stamp: int
    task_id: str
    due: float
    attempt: int
    worker: int
    flagged: bool  # ctx.cancelled as the body started
    driven: int | None  # a coroutine's: the stamp its driver took before it decided to start


CALLS: list[Call] = []  # list.append is atomic: every worker and the loop append
DRIVEN: dict[RunContext, int] = {}  # a coroutine run's driver's stamp, by its context


HALF = threading.Event()
"""Set once the actions were called MIN_CALLS // 2 times: a shutdown during the storm
comes then."""


def _note(ctx: RunContext, *, coroutine: bool) -> None:
    driven = DRIVEN.pop(ctx, -1) if coroutine else None
    CALLS.append(
        Call(next(STAMP), ctx.task_id, ctx.due, ctx.attempt, ctx.worker, ctx.cancelled, driven)
    )
    if len(CALLS) >= MIN_CALLS // 2:
        HALF.set()


_drive = CoroutineRunner._drive


async def stamped_drive(runner: CoroutineRunner, flight: Any) -> None:
    """The loop's driver of one coroutine run, its first step stamped before the driver
    decides whether the run starts (where a cancel or pause that came first stops it):
    a body started after a halt returned is a broken promise only if this stamp came
    after the halt returned too (else the halt may have crossed the decision)."""
    context = flight.run.context
    if context is not None:
        DRIVEN[context] = next(STAMP)
    await _drive(runner, flight)


def act(mode: str, ctx: RunContext) -> str | Coroutine[Any, Any, str]:
    """A thread action: ``ok``, ``fail`` (every attempt), ``flaky`` (its first attempt),
    ``block`` (until the gate opens, or its flag is raised; bounded), ``pause`` and
    ``cancel`` (its own task, from the worker: "done for now"); ``coro-<mode>`` returns
    the coroutine of :func:`act_async` (the worker hands it to the loop)."""
    if mode.startswith("coro-"):
        return act_async(mode.removeprefix("coro-"), ctx)  # its body notes the call
    _note(ctx, coroutine=False)
    if mode == "fail" or (mode == "flaky" and ctx.attempt == 1):
        raise RuntimeError(f"{mode} fails")
    if mode in ("pause", "cancel"):
        apply(mode, ctx.task_id)
    if mode == "block":
        deadline = time.monotonic() + WAIT
        while not (GATE.wait(0.01) or STOPPING.is_set() or ctx.cancelled):
            if time.monotonic() > deadline:
                break
    return mode


async def act_async(mode: str, ctx: RunContext) -> str:
    """A coroutine action: ``ok``, ``fail``, ``flaky``, ``hang`` (awaits for ever: its
    timeout, always set, cancels it), ``pause`` and ``cancel`` (its own task)."""
    _note(ctx, coroutine=True)
    if mode == "fail" or (mode == "flaky" and ctx.attempt == 1):
        raise RuntimeError(f"{mode} fails")
    if mode in ("pause", "cancel"):  # and returns before any await: recorded as it ended
        apply(mode, ctx.task_id)
    if mode == "hang":
        await asyncio.Event().wait()
    return mode


SEEN: list[Seen] = []
"""The round's :class:`Seen` (one at a time), where the verbs the actions and the
listener call are noted too."""


def apply(verb: str, task_id: str) -> object:
    """Call ``verb`` on the round's scheduler from an action or a listener, noted as the
    callers' verbs are; what it returned (None if it raised an expected error)."""
    seen = SEEN[-1]
    called = next(STAMP)
    try:
        result: object = getattr(seen.scheduler, verb)(task_id)
    except EXPECTED:
        result = None
    except Exception as exc:  # what the test reports
        seen.problems.append(f"{verb}({task_id!r}) from {threading.current_thread().name}: {exc!r}")
        result = None
    seen.verbs.append(Verb(verb, task_id, called, next(STAMP), result))
    return result


class Meddler:
    """A listener that now and then calls a verb on the task an event is about, from the
    listeners' thread (seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, event: TaskEvent) -> None:
        roll = self.rng.random()
        if roll < 0.02:
            apply("pause", event.task_id)
        elif roll < 0.04:
            apply("resume", event.task_id)
        elif roll < 0.05:
            apply("run_now", event.task_id)
        elif roll < 0.06 and event.status is TaskStatus.FAILED:
            apply("redrive", event.task_id)


BEAT = "beat"
"""The id of a fast recurring task no caller touches, whose history a reader thread
reads all along (:func:`read_beats`)."""


def beat_action() -> None:
    """The beat's action: nothing (its runs fill its history fast)."""


def read_beats(beat: Any, seen: Seen) -> None:
    """Read the beat's history until the callers are done: each read is the one before
    it and more (``history_limit=None``: nothing falls off), in order, never an error."""
    before: tuple[ExecutionRecord, ...] = ()
    reads = 0
    while not seen.callers_done.is_set() or reads < 10:
        reads += 1
        try:
            history = beat.history
        except Exception as exc:  # what the test reports
            seen.problems.append(f"the beat's history raised {exc!r}")
            return
        if history[: len(before)] != before:
            seen.problems.append(f"the beat's history lost or moved records: {len(before)} ->")
            return
        before = history


# -- a store that stamps its writes -------------------------------------------------------


@dataclass(frozen=True)
class Write:
    stamp: int
    task_id: str
    status: TaskStatus
    running: bool


class StampedMemory(InMemoryTaskStore):
    """An in-memory store noting each write with its stamp (it is called under the
    scheduler's lock, in the order of the transitions)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[Write] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        self.writes.append(_write(snapshot))
        super().save(snapshot, record)


class StampedSqlite(SqliteTaskStore):
    """The same, of a SQLite file (its ``save_all`` writes several records at once)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes: list[Write] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        self.writes.append(_write(snapshot))
        super().save(snapshot, record)

    def save_all(self, snapshot: TaskSnapshot, records: Any) -> None:
        self.writes.append(_write(snapshot))
        super().save_all(snapshot, records)


def _write(snapshot: TaskSnapshot) -> Write:
    return Write(next(STAMP), snapshot.task.id, snapshot.status, snapshot.running)


# -- the callers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verb:
    """A verb a caller applied: when it was called and when it returned (stamps), and
    what it returned (``None`` for a verb that raised)."""

    name: str
    task_id: str
    called: int
    returned: int
    result: object


@dataclass
class Seen:
    """What the threads did and saw (lists appended by one thread each, or atomically)."""

    scheduler: Any = None  # the round's (set once it is made)
    going: threading.Event = field(default_factory=threading.Event)  # the verbs are going
    callers_done: threading.Event = field(default_factory=threading.Event)
    verbs: list[Verb] = field(default_factory=list)
    registered: set[str] = field(default_factory=set)
    overlapping: set[str] = field(default_factory=set)  # ids ever given an overlap policy
    problems: list[str] = field(default_factory=list)  # broken promises seen on the way
    events: list[TaskEvent] = field(default_factory=list)  # the listeners' thread only


def random_schedule(rng: random.Random) -> tuple[Schedule | str, bool]:
    """A schedule due soon, and whether it recurs."""
    kind = rng.randrange(6)
    if kind == 0:
        return OneTime(delay=rng.uniform(0, 0.02)), False
    if kind == 1:
        return FixedRate(rng.uniform(0.005, 0.03)), True
    if kind == 2:
        return FixedDelay(rng.uniform(0.005, 0.03)), True
    if kind == 3:
        return CronSchedule("* * * * * *"), True
    if kind == 4:
        return "* * * * * *", True  # cron text
    return OneTime(delay=0), False


def caller(scheduler: Scheduler, seen: Seen, seed: int, *, ops: int) -> None:
    """One thread's seeded run of random verbs."""
    rng = random.Random(seed)
    retries = [
        RetryPolicy(max_attempts=3, initial_backoff=0.002, max_backoff=0.004),
        RetryPolicy.never(),
        RetryPolicy(max_attempts=2, initial_backoff=0.001),
    ]
    last_outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + WAIT / 3
    for done in itertools.count():
        # at least ``ops`` verbs, then on until the actions were called MIN_CALLS times
        # (the verbs alone outrun the runs), within the bound
        enough = len(CALLS) >= MIN_CALLS or STOPPING.is_set()
        if done >= ops and (enough or time.monotonic() > deadline):
            break
        if done == 30:
            seen.going.set()  # storm() starts the scheduler: the verbs race start() too
        known = sorted(seen.registered)
        target = rng.choice(known) if known and rng.random() < 0.95 else "nope"
        verb = rng.choices(VERBS, weights=WEIGHTS)[0]
        called = next(STAMP)
        result: object = None
        try:
            if verb == "schedule":
                result = register(scheduler, seen, rng, known, retries)
                seen.registered.add(result)
                target = str(result)
            elif verb == "reschedule":
                scheduler.reschedule(target, random_schedule(rng)[0])
            elif verb == "modify":
                # A new timeout re-arms the runs in flight (TimerThread._retime, the
                # loop's _rearm): never None, as a "hang" coroutine ends at its timeout.
                scheduler.modify(
                    target,
                    priority=rng.choice(list(Priority)),
                    retry=rng.choice(retries),
                    timeout=rng.choice(NEW_TIMEOUTS),
                )
            elif verb == "remove":
                result = scheduler.remove(target).id
            elif verb == "history":
                check_history(scheduler, target, seen)
            elif verb == "metrics":
                last_outcomes = check_metrics(scheduler, seen, last_outcomes)
            elif verb == "reads":
                scheduler.records()
                for task in scheduler.tasks():
                    task.history  # noqa: B018 - the read must not raise
            elif verb == "gate":  # let the blocked runs go, then block the next ones
                GATE.set()
                GATE.clear()
            else:  # pause, resume, cancel, run_now, redrive
                result = getattr(scheduler, verb)(target)
        except EXPECTED:
            result = None
        except Exception as exc:  # what the test reports
            seen.problems.append(f"{verb}({target!r}) raised {exc!r}")
        seen.verbs.append(Verb(verb, target, called, next(STAMP), result))


VERBS, WEIGHTS = zip(
    *[
        ("schedule", 20),
        ("pause", 9),
        ("resume", 9),
        ("cancel", 6),
        ("remove", 4),
        ("run_now", 6),
        ("redrive", 5),
        ("reschedule", 4),
        ("modify", 4),
        ("history", 6),
        ("metrics", 3),
        ("reads", 1),
        ("gate", 3),
    ],
    strict=True,
)


def register(
    scheduler: Scheduler,
    seen: Seen,
    rng: random.Random,
    known: list[str],
    retries: list[RetryPolicy],
) -> str:
    """Register a random task; its id (noted in ``seen.overlapping`` if its runs may
    overlap, before any other thread can know it)."""
    schedule, recurs = random_schedule(rng)
    coroutine = rng.random() < 0.3
    if coroutine:
        mode = rng.choice(["ok", "ok", "fail", "flaky", "hang", "pause", "cancel"])
    else:
        mode = rng.choice(
            ["ok", "ok", "ok", "fail", "flaky", "block", "pause", "cancel", "coro-ok", "coro-fail"]
        )
    caller_id = rng.choice(CALLER_IDS) if rng.random() < 0.5 else None
    upstreams = rng.sample(known, k=1) if known and recurs and rng.random() < 0.15 else []
    on_a_grid = recurs and not isinstance(schedule, FixedDelay)
    overlap = rng.choice(list(Overlap)) if on_a_grid and rng.random() < 0.3 else None
    if overlap is not None and caller_id is not None:
        seen.overlapping.add(caller_id)  # replacing a task others read: before its runs
    replace = caller_id is not None and rng.random() < 0.7
    # A replace holds the runs in flight to its timeout, as modify's does: never None
    # then, or a "hang" coroutine of the definition it replaced never ends, and a drain
    # runs out of time (it cuts it at its grace, and leaves what waited behind it due).
    timeouts = [0.02, 0.05] if mode == "hang" else [0.02, 5.0] if replace else [None, 0.02, 5.0]
    task = scheduler.schedule(
        f"{'async-' if coroutine else ''}{mode}",
        act_async if coroutine else act,
        schedule,
        id=caller_id,
        replace_existing=replace,
        priority=rng.choice(list(Priority)),
        retry=rng.choice(retries),
        timeout=rng.choice(timeouts),
        args=(mode,),
        depends_on=upstreams,
        paused=rng.random() < 0.05,
        overlap=overlap,
        max_instances=2 if overlap is Overlap.ALLOW else None,
    )
    if overlap is not None:
        seen.overlapping.add(task.id)
    return task.id


def check_history(scheduler: Scheduler, task_id: str, seen: Seen) -> None:
    """A history read from this thread is the task's own, and ordered by finish unless
    the task's runs may overlap (then a run's finish, read as it ended, may come before
    that of a record its task made while the run waited for the lock)."""
    history = scheduler.task(task_id).history
    for earlier, later in itertools.pairwise(history):
        if later.finished < earlier.finished and task_id not in seen.overlapping:
            seen.problems.append(f"{task_id}'s history out of order: {earlier} then {later}")
    if any(record.task_id != task_id for record in history):
        seen.problems.append(f"{task_id}'s history holds another task's record")


def check_metrics(scheduler: Scheduler, seen: Seen, before: Counter[str]) -> Counter[str]:
    """One ``metrics()`` read agrees with itself, and its counts only grew since this
    thread's last read; the counts read."""
    m = scheduler.metrics(timeout=WAIT)
    if not 0 <= m.busy <= m.workers or m.handoff < 0 or m.coroutines < 0 or m.queued < 0:
        seen.problems.append(f"metrics() out of bounds: {m}")
    if m.dead_letter > m.tasks or m.lag < 0:
        seen.problems.append(f"metrics() disagrees with itself: {m}")
    outcomes = Counter({str(outcome): count for outcome, count in m.outcomes.items()})
    if outcomes < before:  # (Counter's < : each count at most, one strictly less)
        seen.problems.append(f"metrics().outcomes went down: {before} -> {outcomes}")
    return outcomes


# -- the rig --------------------------------------------------------------------------------


@dataclass
class Rig:
    scheduler: Scheduler
    store: StampedMemory | StampedSqlite
    seen: Seen
    path: Path | None
    escaped: list[str]


@contextlib.contextmanager
def rig(store: str, tmp_path: Path, seed: int) -> Iterator[Rig]:
    """A scheduler (storm() starts it) on a stamped store with listeners, every escaped
    exception and every WARNING (but the jobs' own lines) noted; shut down and closed
    after."""
    CALLS.clear()
    DRIVEN.clear()
    GATE.clear()
    HALF.clear()
    STOPPING.clear()
    # What an earlier test in this process left to the collector is collected before the
    # handler below listens: a loop task an earlier shutdown left pending, collected in
    # the middle of a round, was logged "Task was destroyed" and failed it (under load).
    gc.collect()
    path = tmp_path / f"verbs-{seed}.db" if store == "sqlite" else None
    durable = StampedSqlite(path) if path is not None else StampedMemory()
    seen = Seen()
    escaped: list[str] = []
    handler = _Noted(escaped)
    loggers = [logging.getLogger("lldsched"), logging.getLogger("asyncio")]
    hooks = threading.excepthook, sys.unraisablehook
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, SWITCH))  # threads switch inside the verbs and reads
    patch = pytest.MonkeyPatch()
    patch.setattr(CoroutineRunner, "_drive", stamped_drive)
    threading.excepthook = lambda args: escaped.append(f"{args.thread}: {args.exc_value!r}")
    sys.unraisablehook = lambda args: escaped.append(f"unraisable: {args.exc_value!r}")
    for logger in loggers:
        logger.addHandler(handler)
    scheduler = Scheduler(
        workers=WORKERS,
        store=durable,
        listeners=[seen.events.append, Meddler(seed)],
        history_limit=None,
        retain_finished=None,  # a retired id is a new task again: keep the ids' story whole
        seed=seed,
        max_coroutines=MAX_COROUTINES,
        listener_backlog=1_000_000,
        name=f"verbs-{seed}",
    )
    seen.scheduler = scheduler
    SEEN.append(seen)
    try:
        yield Rig(scheduler, durable, seen, path, escaped)
    finally:
        GATE.set()
        scheduler.shutdown(timeout=WAIT)
        durable.close()
        for logger in loggers:
            logger.removeHandler(handler)
        threading.excepthook, sys.unraisablehook = hooks
        sys.setswitchinterval(switch)
        patch.undo()
        DRIVEN.clear()
        SEEN.clear()


class _Noted(logging.Handler):
    """Notes every line at WARNING or above, but a job's failed attempt (lldsched.jobs)."""

    def __init__(self, noted: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.noted = noted

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != "lldsched.jobs":
            self.noted.append(f"{record.name}: {record.getMessage()}")


def storm(r: Rig, seed: int, *, ops: int, drain: bool, during: bool) -> int:
    """The caller threads, each joined within the bound; the scheduler started once they
    are going, and shut down (:func:`shut_down`) once they are done, or ``during`` the
    storm, half-way through its calls (then once more after it, which delivers the events
    of the verbs allowed after a shutdown: pause, cancel, modify, remove).  The stamp
    when the first ``shutdown()`` returned."""
    threads = [
        threading.Thread(
            target=caller, args=(r.scheduler, r.seen, seed * 10 + n), kwargs={"ops": ops}
        )
        for n in range(THREADS)
    ]
    beat = r.scheduler.schedule("beat", beat_action, FixedRate(0.002), id=BEAT)
    reader = threading.Thread(target=read_beats, args=(beat, r.seen), name="beat-reader")
    for thread in [*threads, reader]:
        thread.start()
    assert r.seen.going.wait(WAIT), "no caller made 30 verbs"
    r.scheduler.start()  # with the verbs going: tasks registered, paused, ... before it
    if during:
        assert HALF.wait(WAIT), f"the actions were called {len(CALLS)} times"
        stopped = shut_down(r, drain=drain)
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), f"{thread.name} is stuck: a deadlock?"
    r.seen.callers_done.set()
    reader.join(WAIT)
    assert not reader.is_alive(), "the history reader is stuck"
    if during:
        assert r.scheduler.shutdown(timeout=WAIT)
        return stopped
    return shut_down(r, drain=drain)


def shut_down(r: Rig, *, drain: bool) -> int:
    """``shutdown(drain=...)`` on a thread of its own, joined within the bound, with work
    still due and running (the gate opened first: a blocked run ends); the stamp when
    it returned True."""
    STOPPING.set()  # (a caller's "gate" verb closes GATE again)
    before = r.scheduler.now  # the drain runs every slot due by its call, a little later
    answers: list[bool] = []
    stopper = threading.Thread(
        target=lambda: answers.append(r.scheduler.shutdown(drain=drain, timeout=WAIT))
    )
    stopper.start()
    stopper.join(WAIT + 10)
    assert not stopper.is_alive(), "shutdown() is stuck: a deadlock?"
    assert answers == [True], "shutdown() ran out of time"
    returned = next(STAMP)
    if drain:  # README: drain=True runs what was due when shutdown() was called
        # (True also when it ran out of time draining with every run cut: its warning,
        # noted in r.escaped, then says so, and is shown with what it left)
        left = [
            task
            for task in r.scheduler.tasks()
            if task.status in (TaskStatus.SCHEDULED, TaskStatus.RETRYING)
            and task.next_run_at is not None
            and task.next_run_at <= before
        ]
        assert left == [], (left[:5], r.escaped[-3:])
    return returned


# -- the checks -----------------------------------------------------------------------------


def check_halts(r: Rig) -> None:
    """No run begins after ``pause()`` or ``cancel()`` returned True for its task, unless
    a verb that may start it again overlapped or followed the halt and came before the
    begin; a thread run called after a ``cancel()`` has its flag raised, a coroutine body
    starts after neither (the same exceptions)."""
    verbs = sorted(r.seen.verbs, key=lambda verb: verb.called)
    by_id: dict[str, list[Verb]] = defaultdict(list)
    for verb in verbs:
        by_id[verb.task_id].append(verb)
    revive = {"pause": ("resume", "redrive", "remove"), "cancel": ("remove",)}

    def revived(halt: Verb, at: int) -> bool:
        """Whether a verb that may start ``halt``'s task again took hold after ``halt``
        began and before ``at`` (it overlapped the halt or came after it)."""
        return any(
            other.name in revive[halt.name]
            and other.result  # it took: True, or the id removed
            and other.returned > halt.called
            and other.called < at
            for other in by_id[halt.task_id]
        )

    halts = [verb for verb in verbs if verb.name in revive and verb.result is True]
    begins: list[Write] = []
    running: dict[str, bool] = {}
    for write in r.store.writes:  # in stamp order: the writes are made under the lock
        if write.running and not running.get(write.task_id, False):
            begins.append(write)
        running[write.task_id] = write.running
    broken = []
    for halt in halts:
        for begin in begins:
            after = begin.task_id == halt.task_id and begin.stamp > halt.returned
            if after and not revived(halt, begin.stamp):
                broken.append(f"{halt} then a run began ({begin})")
        for call in CALLS:
            if call.task_id != halt.task_id or call.stamp < halt.returned:
                continue
            if revived(halt, call.stamp):
                continue
            if call.driven is not None:
                if call.driven > halt.returned:
                    broken.append(f"{halt} then a coroutine began ({call})")
            elif halt.name == "cancel" and not call.flagged:
                broken.append(f"{halt} then a run was called, its flag down ({call})")
    assert broken == [], "\n".join(broken[:10])


def check_records(r: Rig, tasks: dict[str, Any]) -> list[ExecutionRecord]:
    """Every call has exactly one record and every record one call, over what the
    listener heard (the records of removed tasks included); each task's events make
    one chain, heard once, ending at its status; the records heard."""
    seen = r.seen
    heard = [event.record for event in seen.events if event.record is not None]
    twice = [record for record, count in Counter(heard).items() if count > 1]
    assert twice == [], twice[:5]
    # A coroutine stopped by a cancel, a pause or the shutdown before it began has a
    # record and no call.
    # So may one a newer run cut under Overlap.CANCEL_OTHER (its record says so).
    unrun = ("SchedulerStateError", "CancelledError", "OverlapCancelled")
    ran = Counter(_key(x) for x in heard if x.outcome.ran and not (x.error or "").startswith(unrun))
    stopped = Counter(_key(x) for x in heard if x.outcome.ran and (x.error or "").startswith(unrun))
    ran = Counter({key: n for key, n in ran.items() if key[0] != BEAT})  # it notes no call
    calls = Counter(_key(call) for call in CALLS)
    assert ran <= calls, ran - calls  # a record for a run that never was
    assert calls - ran <= stopped, calls - ran - stopped  # a call without its record
    removed = {verb.task_id for verb in seen.verbs if verb.name == "remove" and verb.result}
    by_id: dict[str, list[TaskEvent]] = defaultdict(list)
    for event in seen.events:
        by_id[event.task_id].append(event)
    for task_id, task in tasks.items():
        if task_id in removed:  # its chain ended; a new task may have taken the id
            continue
        chain = by_id[task_id]
        assert chain and chain[0].previous is None, (task_id, chain[:1])
        for before, after in itertools.pairwise(chain):
            assert after.previous is before.status, (task_id, before, after)
        assert chain[-1].status is task.status, (task_id, chain[-1], task)
        assert [e.record for e in chain if e.record is not None] == list(task.history), task_id
    return heard


def _key(run: Call | ExecutionRecord) -> tuple[str, float, int, int]:
    """What a call and its record share."""
    return run.task_id, run.due, run.attempt, run.worker


def check_after_shutdown(r: Rig, stopped: int) -> None:
    """What ``shutdown()`` returning True leaves: nothing ran after it, nothing is in
    flight, ``metrics()`` counts what the listener heard, the store (and the SQLite file
    opened again) holds what the scheduler holds, nothing escaped a thread."""
    scheduler = r.scheduler
    late = [call for call in CALLS if call.stamp > stopped]
    assert late == [], late[:5]
    tasks = {task.id: task for task in scheduler.tasks()}
    assert all(not task.running for task in tasks.values()), "a run in flight after shutdown"
    assert set(tasks) <= r.seen.registered | {BEAT}
    heard = check_records(r, tasks)
    assert scheduler.dropped_events == 0
    m = scheduler.metrics(timeout=WAIT)
    assert (m.state, m.busy, m.handoff, m.coroutines) == ("stopped", 0, 0, 0), m
    counted = {outcome: count for outcome, count in m.outcomes.items() if count}
    assert counted == Counter(record.outcome for record in heard), m.outcomes
    dead = scheduler.dead_letter()
    assert m.dead_letter == len(dead) and m.tasks == len(tasks), m
    assert set(dead) == {task_id for task_id, t in tasks.items() if t.status is TaskStatus.FAILED}
    for task in tasks.values():
        check_counts(task)
    check_store(r.store, tasks, dead)
    if r.path is not None:
        r.store.close()
        reopened = SqliteTaskStore(r.path)
        try:
            check_store(reopened, tasks, dead)
        finally:
            reopened.close()
    with pytest.raises(SchedulerStateError):
        scheduler.schedule("late", act, OneTime(delay=0), args=("ok",))
    assert r.seen.problems == [], r.seen.problems[:10]
    assert r.escaped == [], r.escaped[:10]


def check_counts(task: Any) -> None:
    """A task's counters agree with its history (every record kept: ``history_limit=None``):
    its runs and failures, and the attempt a pending retry or a slot waits with."""
    ran = [record for record in task.history if record.outcome.ran]
    assert task.run_count == len(ran), task
    assert task.failure_count == sum(not record.ok for record in ran), task
    if task.status is TaskStatus.SCHEDULED:
        assert task.attempt == 0, task
    if task.status is TaskStatus.RETRYING:  # the attempt its last run made, which failed
        assert ran and not ran[-1].ok and ran[-1].attempt == task.attempt, (task, ran[-1:])


def check_store(store: Any, tasks: dict[str, Any], dead: list[str]) -> None:
    """``store`` holds each task as the scheduler does, its records, the dead letter."""
    stored = {snapshot.task.id: snapshot for snapshot in store.load_all()}
    assert set(stored) == set(tasks)
    for task in tasks.values():
        s = stored[task.id]
        assert (
            s.status,
            s.next_run_at,
            s.attempt,
            s.run_count,
            s.failure_count,
            s.last_error,
            s.running,
        ) == (
            task.status,
            task.next_run_at,
            task.attempt,
            task.run_count,
            task.failure_count,
            task.last_error,
            False,
        ), task
        assert store.records(task.id) == list(task.history), task
    assert sorted(store.dead_letter()) == sorted(dead)


def check_histories_read_on_the_way(r: Rig) -> None:
    """(The reads themselves were checked as they were made: ``problems``.)"""
    assert r.seen.problems == [], r.seen.problems[:10]


# -- the tests --------------------------------------------------------------------------------

CASES = [
    pytest.param("memory", True, False, 1, id="memory-drain"),
    pytest.param("memory", False, False, 2, id="memory-no-drain"),
    pytest.param("sqlite", True, False, 3, id="sqlite-drain"),
    pytest.param("sqlite", False, False, 4, id="sqlite-no-drain"),
    pytest.param("memory", True, True, 5, id="memory-drain-during-the-verbs"),
    pytest.param("sqlite", False, True, 6, id="sqlite-no-drain-during-the-verbs"),
]


def one_round(
    store: str, drain: bool, seed: int, tmp_path: Path, *, during: bool = False, ops: int = OPS
) -> None:
    with rig(store, tmp_path, seed) as r:
        stopped = storm(r, seed, ops=ops, drain=drain, during=during)
        assert len(CALLS) >= MIN_CALLS // 2, f"the actions were called {len(CALLS)} times"
        check_histories_read_on_the_way(r)
        assert len(r.seen.registered) > 20  # the threads did register a lot
        check_halts(r)
        check_after_shutdown(r, stopped)


@pytest.mark.parametrize(("store", "drain", "during", "seed"), CASES)
def test_what_each_verb_promises_holds_from_when_it_returned(
    store: str, drain: bool, during: bool, seed: int, tmp_path: Path
) -> None:
    one_round(store, drain, seed, tmp_path, during=during)


def main() -> None:
    """The soak: seed after seed for ``--seconds`` (not part of the suite)."""
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--switch-interval", type=float, default=None)
    options = parser.parse_args()
    if options.switch_interval is not None:
        sys.setswitchinterval(options.switch_interval)
    deadline = time.monotonic() + options.seconds
    global WORKERS, MAX_COROUTINES
    for seed in itertools.count(100):
        if time.monotonic() > deadline:
            break
        WORKERS, MAX_COROUTINES = 1 + seed % 4, 1 + seed % 7  # sizes the suite does not try
        store = ("memory", "sqlite")[seed % 2]
        drain, during = seed % 4 < 2, seed % 3 == 0
        with tempfile.TemporaryDirectory() as folder:
            one_round(store, drain, seed, Path(folder), during=during, ops=OPS * 2)
        print(
            f"seed {seed} ({store}, drain={drain}, during={during}, workers={WORKERS}, "
            f"max_coroutines={MAX_COROUTINES}): ok",
            flush=True,
        )


if __name__ == "__main__":  # the actions by their module's import path, not __main__'s
    from tests import test_concurrent_verbs

    test_concurrent_verbs.main()
