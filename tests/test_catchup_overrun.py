"""A catch-up plan's last run that outlasts its period skips the slots it outlasted, and
records each ``skipped``, as an ordinary run's overrun does.

A misfire decision (a restart after downtime, a forward jump of the wall clock) puts a
plan in front of a task's schedule (``schedules/catchup.py``): its slots run first, then
the own schedule answers.  The plan's last run hands the task back, and the slots after
its slot were never decided: a fixed rate's run of 12:00 that lasts until 16:30 skips
13:00 to 16:00.  The plan answered that run from ``next_run`` alone, so one process went
on at 17:00 with no record of those four slots, where a store shared by processes (its
row keeps no plan) and an ordinary overrun recorded each (docs/decisions/lifecycle.md, "Every skip
is a record").  A plan that ends at a slot to resume at (``SKIP`` behind an owed retry,
a plan cut at the cap) ran that slot late after a run that outlasted it, and skipped
only the slots after it.  Each case here is checked against an ordinary overrun in one
process (the held run starts at 12:30 and lasts until 16:30): the same records after
the run, but for the slots the misfire policy decided, and the same events, on both
runtimes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    OverrunPolicy,
    RetryPolicy,
    RunContext,
    Schedule,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskEvent,
    TaskStore,
)
from lldsched.core.misfires.plan import MAX_SLOTS
from lldsched.model import ExecutionRecord
from lldsched.testing import Stepper
from tests.cluster import StoreSpec, open_store
from tests.conftest import T0, SchedulerFactory, settle
from tests.test_recovery import HOUR, JumpingClock, Reopening, looked
from tests.waits import wait_until

HELD = T0 + 3 * HOUR  # 12:00: the plan's last slot, whose run lasts until 16:30
RETRY = T0 + HOUR + 60  # 10:01: 10:00's retry, when its first attempt failed
DOWN_UNTIL = T0 + 3.5 * HOUR  # 12:30: the restart (or the jump), when the plan is made
RELEASED = T0 + 7.5 * HOUR  # 16:30: the held run ends
ALONG = T0 + 8 * HOUR  # 17:00: the first slot after it

HELD_STARTED = threading.Event()
RELEASE = threading.Event()


def job(fails: float, holds: float, ctx: RunContext) -> None:
    """Hold the run due at ``holds`` until :data:`RELEASE` (at most 30 s); fail the
    first attempt of the run due at ``fails``."""
    if ctx.due == holds:
        HELD_STARTED.set()
        RELEASE.wait(30)
    if ctx.attempt == 1 and ctx.due == fails:
        raise RuntimeError(f"the first attempt at {fails!r} fails")


def _close_gate() -> None:
    """The next run due at its case's ``held`` is held (each scenario calls this)."""
    HELD_STARTED.clear()
    RELEASE.clear()


@pytest.fixture(autouse=True)
def _gate() -> Iterator[None]:
    yield
    RELEASE.set()  # a failing test leaves no worker held


HOURLY = FixedRate(HOUR, start_delay=HOUR)  # 10:00, 11:00, ...
SKIPPED = [(4, 0, "skipped"), (5, 0, "skipped"), (6, 0, "skipped"), (7, 0, "skipped")]
Outcomes = list[tuple[float, int, str]]


@dataclass(frozen=True)
class Case:
    """A misfire policy, and whether 10:00's first attempt fails, its retry owed at the
    restart (the plan then begins with that retry); ``before``: the plan's runs ahead of
    the held one (12:00's, or the one due at ``held``); ``decided``: what the history
    says before the held run, (hours after 09:00, attempt, outcome); ``after``: what it
    says after, up to 17:00's run."""

    policy: MisfirePolicy
    fails: bool
    before: int
    decided: Outcomes
    schedule: Schedule = HOURLY
    overlap: Overlap | None = None
    after: Outcomes = field(default_factory=lambda: [*SKIPPED, (8, 1, "ok")])
    held: float = HELD

    @property
    def ahead(self) -> int:
        """The runs ahead of the held one without downtime: 10:00, its retry if it
        failed, 11:00 (only 10:00 ahead of a held retry)."""
        return 1 if self.held == RETRY else 2 + self.fails


RUN_ALL = MisfirePolicy(Misfire.RUN_ALL)


def _caught_up(**options: Any) -> Case:
    """``RUN_ALL`` from 10:00: 10:00 and 11:00 run, then 12:00 (``options``: the rest)."""
    return Case(RUN_ALL, False, 2, [(1, 1, "ok"), (2, 1, "ok")], **options)


CASES = [
    pytest.param(_caught_up(), id="run_all"),
    pytest.param(
        Case(MisfirePolicy(Misfire.RUN_ALL, max_catch_up=2), False, 1,
             [(1, 0, "missed"), (2, 1, "ok")]),
        id="run_all-max_catch_up",
    ),
    pytest.param(
        Case(MisfirePolicy(Misfire.RUN_ONCE), True, 1,
             [(1, 1, "failed"), (2, 0, "coalesced"), (1, 2, "ok")]),
        id="run_once-owed-retry",
    ),
    pytest.param(
        Case(RUN_ALL, True, 2, [(1, 1, "failed"), (1, 2, "ok"), (2, 1, "ok")]),
        id="run_all-owed-retry",
    ),
    pytest.param(
        # The retry runs, then the slot to resume at, 13:00, which the retry outlasted.
        Case(MisfirePolicy(Misfire.SKIP), True, 0,
             [(1, 1, "failed"), (2, 0, "missed"), (3, 0, "missed")], held=RETRY),
        id="skip-owed-retry",
    ),
    pytest.param(_caught_up(schedule=CronSchedule("0 * * * *")), id="cron"),
    pytest.param(
        _caught_up(
            schedule=FixedRate(HOUR, OverrunPolicy.CATCH_UP, start_delay=HOUR),
            after=[(hour, 1, "ok") for hour in (4, 5, 6, 7, 8)],
        ),
        id="overrun-catch_up",  # nothing skipped: every slot runs late, as ever
    ),
    pytest.param(
        _caught_up(
            overlap=Overlap.BUFFER_ONE,
            after=[*[(hour, 0, "coalesced") for hour in (4, 5, 6)], (7, 1, "ok"), (8, 1, "ok")],
        ),
        id="buffer_one",  # the latest slot it outlasted runs at once, for the others
    ),
]  # fmt: skip


def _register(scheduler: Scheduler, case: Case) -> None:
    scheduler.schedule(
        "job", job, case.schedule, id="job", misfire=case.policy, overlap=case.overlap,
        args=(T0 + HOUR if case.fails else 0.0, case.held),
        retry=RetryPolicy(3, initial_backoff=60),
    )  # fmt: skip


def _outcomes(history: Sequence[ExecutionRecord]) -> Outcomes:
    return [((r.slot - T0) / HOUR, r.attempt, r.outcome.value) for r in history]


@dataclass(frozen=True)
class Overrun:
    """What a runtime made of the held run that lasted until 16:30, and what followed
    up to 17:00's run: the history before that run, the run's (slot, finished,
    outcome), the records after it, and the events from its finish on."""

    before: Outcomes
    run: tuple[float, float, str]
    after: list[ExecutionRecord]
    events: list[TaskEvent]

    def without(self, decided: Outcomes) -> Overrun:
        """This overrun with no record (nor event) of a slot in ``decided`` (the slots a
        misfire policy decided before the run, which an ordinary overrun skips)."""
        slots = {T0 + hours * HOUR for hours, attempt, _ in decided if attempt == 0}
        after = [record for record in self.after if record.slot not in slots]
        events = [e for e in self.events if e.record is None or e.record.slot not in slots]
        return Overrun(self.before, self.run, after, events)


def _overrun(
    case: Case, history: Sequence[ExecutionRecord], events: Sequence[TaskEvent]
) -> Overrun:
    (index,) = [i for i, r in enumerate(history) if r.due == case.held and r.outcome.ran]
    held = history[index]
    (finish,) = [i for i, e in enumerate(events) if e.record == held]
    return Overrun(
        _outcomes(history[:index]),
        (held.slot, held.finished, held.outcome.value),
        list(history[index + 1 :]),
        list(events[finish:]),
    )


def _agree(planned: Overrun, case: Case, ordinary: Overrun) -> None:
    """``planned`` holds what ``case`` says, and what an ordinary overrun holds, but for
    the slots the plan's policy decided: (for a fixed rate's ``SKIP``) 13:00 to 16:00
    skipped at 16:30, after the run; then 17:00's run."""
    assert planned.before == case.decided
    assert planned.run == (HELD if case.held == HELD else T0 + HOUR, RELEASED, "ok")
    assert _outcomes(planned.after) == case.after
    for record in planned.after:
        if not record.outcome.ran:
            assert (record.started, record.finished, record.worker) == (RELEASED, RELEASED, -1)
    ordinary = ordinary.without(case.decided)
    assert (planned.run, planned.after, planned.events) == (
        ordinary.run,
        ordinary.after,
        ordinary.events,
    )


# -- the threaded runtime ------------------------------------------------------------------


def _hold_through(clock: FakeClock, scheduler: Scheduler) -> None:
    """The held run has started: the clock moves on to 16:30 (both sides of a
    :class:`JumpingClock`: no jump) while it runs; then it ends, and 17:00 runs."""
    assert HELD_STARTED.wait(5), "the held run did not start"
    clock.advance(RELEASED - clock.now())
    RELEASE.set()
    settle(scheduler)
    clock.advance(ALONG - clock.now())
    settle(scheduler)


def _threaded_ordinary(make_scheduler: SchedulerFactory, case: Case) -> Overrun:
    """The reference: no downtime; the held run starts at 12:30, as the plan's does (the
    clock moved there at once from the last instant before its due one), and lasts
    until 16:30."""
    _close_gate()
    log = EventLog()
    clock = FakeClock(T0)
    scheduler = make_scheduler(workers=1, clock=clock, listeners=[log])
    _register(scheduler, case)
    for instant in (T0 + HOUR, RETRY, T0 + 2 * HOUR):  # 10:00, its retry, 11:00
        if instant < case.held:
            clock.set(instant)
            settle(scheduler)
    clock.set(DOWN_UNTIL)
    _hold_through(clock, scheduler)
    return _overrun(case, scheduler.task("job").history, log.events)


def _threaded_restarted(
    make_scheduler: Callable[..., Scheduler], case: Case, store: TaskStore, reopened: TaskStore
) -> Overrun:
    """Down from 09:00 to 12:30 (from 10:00, once 10:00's first attempt failed, when
    ``case.fails``: its retry is owed): the restart decides the plan."""
    _close_gate()
    clock = FakeClock(T0)
    with Stepper(Scheduler(workers=1, clock=clock, store=store)) as steps:
        _register(steps.scheduler, case)
        if case.fails:
            steps.advance_to(T0 + HOUR)
    log = EventLog()
    clock = FakeClock(DOWN_UNTIL)
    scheduler = make_scheduler(workers=1, clock=clock, store=reopened, listeners=[log])
    _hold_through(clock, scheduler)
    return _overrun(case, scheduler.task("job").history, log.events)


def _threaded_jumped(make_scheduler: SchedulerFactory, case: Case) -> Overrun:
    """One process whose wall clock jumps from 09:00 (from 10:00, once 10:00's first
    attempt failed, when ``case.fails``) to 12:30: the jump decides the plan."""
    _close_gate()
    log = EventLog()
    clock = JumpingClock(T0)
    scheduler = make_scheduler(workers=1, clock=clock, listeners=[log])
    _register(scheduler, case)
    if case.fails:
        clock.advance(HOUR)
    looked(clock, scheduler)
    clock.jump(DOWN_UNTIL - clock.now())
    _hold_through(clock, scheduler)
    return _overrun(case, scheduler.task("job").history, log.events)


def _shared_restarted(case: Case, path: Path) -> Overrun:
    """:func:`_threaded_restarted` on a shared SQLite store (a claim of a slot due
    before the process was there decides the plan), read from the store (the process's
    own history holds only the runs it ran), without what a shared store adds to a
    record (the claim's token, the node)."""
    store = SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL)
    reopened = SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL)
    made: list[Scheduler] = []

    def make(**options: Any) -> Scheduler:
        made.append(Scheduler(**options).start())
        return made[-1]

    try:
        planned = _threaded_restarted(make, case, store, reopened)
        events = [e._replace(record=e.record and _unclaimed(e.record)) for e in planned.events]
        return _overrun(case, [_unclaimed(r) for r in reopened.records("job")], events)
    finally:
        RELEASE.set()
        for scheduler in made:
            assert scheduler.shutdown(timeout=5.0)
        store.close()
        reopened.close()


def _unclaimed(record: ExecutionRecord) -> ExecutionRecord:
    return record._replace(token=None, node=None)


LEASE = 8 * HOUR  # longer than the held run: no claim expires
POLL = 0.05


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("made", ["restart", "jump", "shared-store-restart"])
def test_a_plans_last_run_that_overran_records_what_it_skipped_as_an_ordinary_run(
    make_scheduler: SchedulerFactory, case: Case, made: str, tmp_path: Path
) -> None:
    # ``shared-store-restart``: the same restart, one process on a shared SQLite store
    # (a claim of a slot due before the process was there decides the plan).
    if made == "jump":
        planned = _threaded_jumped(make_scheduler, case)
    elif made == "restart":
        store = InMemoryTaskStore()
        planned = _threaded_restarted(make_scheduler, case, store, store)
    else:
        planned = _shared_restarted(case, tmp_path / "tasks.db")
    _agree(planned, case, _threaded_ordinary(make_scheduler, case))


# -- the simulation ------------------------------------------------------------------------


class Nth:
    """A model (a duration, a failure) that answers ``value`` on its ``n``-th call,
    counted from 0, and ``other`` on every other."""

    def __init__(self, n: int, value: Any, other: Any) -> None:
        self.n, self.value, self.other = n, value, other
        self.calls = 0

    def __call__(self, rng: object, attempt: int) -> Any:
        self.calls += 1
        return self.value if self.calls - 1 == self.n else self.other


def _simulated_restarted(case: Case) -> Overrun:
    """:func:`_threaded_restarted` in the simulation: a simulation on the store the first
    left, started at 12:30, decides the plan at its construction; the held run takes
    four hours."""
    store = InMemoryTaskStore()
    first = Simulation(workers=1, start=T0, store=store)
    first.schedule(
        "job", case.schedule, id="job", misfire=case.policy, overlap=case.overlap,
        retry=RetryPolicy(3, initial_backoff=60), fails=1.0 if case.fails else 0.0,
    )  # fmt: skip
    if case.fails:
        first.run(T0 + HOUR)
    log = EventLog()
    sim = Simulation(workers=1, start=DOWN_UNTIL, store=store, listeners=[log])
    sim.model("job", duration=Nth(case.before, RELEASED - DOWN_UNTIL, 0.0))
    sim.run(ALONG)
    return _overrun(case, sim.task("job").history, log.events)


def _simulated_ordinary(case: Case) -> Overrun:
    """:func:`_threaded_ordinary` in the simulation: the one worker is busy with another
    task from half a minute before the held run's due instant to 12:30, so the held run
    starts at 12:30, and takes four hours."""
    log = EventLog()
    sim = Simulation(workers=1, start=T0, listeners=[log])
    sim.schedule(
        "job", case.schedule, id="job", misfire=case.policy, overlap=case.overlap,
        retry=RetryPolicy(3, initial_backoff=60),
        duration=Nth(case.ahead, RELEASED - DOWN_UNTIL, 0.0), fails=Nth(0, case.fails, False),
    )  # fmt: skip
    busy_from = case.held - 30
    sim.schedule("busy", OneTime(busy_from), duration=DOWN_UNTIL - busy_from)
    sim.run(ALONG)
    events = [event for event in log.events if event.task_id == "job"]
    return _overrun(case, sim.task("job").history, events)


@pytest.mark.parametrize("case", CASES)
def test_a_plans_last_run_that_overran_records_what_it_skipped_in_the_simulation(
    case: Case,
) -> None:
    _agree(_simulated_restarted(case), case, _simulated_ordinary(case))


def test_a_run_that_outlasts_the_slot_a_capped_plan_resumes_at_skips_it() -> None:
    # Minutely from 09:01, down a day: more than MAX_SLOTS slots passed.  RUN_ONCE runs
    # the last slot it listed (the 1,000th), one record stands for the slots beyond,
    # and the task resumes at its first slot after the restart (10:01 the next day).
    # That run takes 170 s, outlasting 10:01, 10:02 and 10:03: each is recorded
    # skipped after it, and 10:04 runs, as an ordinary overrun from 10:01 skips and runs.
    # Before, 10:01 ran late, at the run's finish, and only 10:02 and 10:03 were skipped.
    store = InMemoryTaskStore()
    Simulation(start=T0, store=store).schedule(
        "job", FixedRate(60, start_delay=60), id="job", misfire=MisfirePolicy(Misfire.RUN_ONCE)
    )
    restart = T0 + 86400 + HOUR + 30  # 10:00:30 the next day
    sim = Simulation(start=restart, store=store)
    sim.model("job", duration=Nth(0, 170.0, 0.0))
    resume = restart + 30  # 10:01
    sim.run(resume + 200)
    history = sim.task("job").history
    (last,) = [r for r in history if r.outcome.ran and r.finished == restart + 170]
    assert last.slot == T0 + MAX_SLOTS * 60  # the 1,000th slot from 09:01
    after = [(r.slot - resume, r.outcome.value, r.started - restart) for r in history]
    assert after[after.index((last.slot - resume, "ok", 0.0)) + 1 :] == [
        (0.0, "skipped", 170.0), (60.0, "skipped", 170.0), (120.0, "skipped", 170.0),
        (180.0, "ok", 210.0),
    ]  # fmt: skip


# -- a plan put back from a stored row -------------------------------------------------------
#
# Minutely from 09:01 (the n-th slot is _slot(n)), every process down from 09:00 until
# 10 s after the 1,001st slot: more than MAX_SLOTS slots passed.  RUN_ONCE runs the 1,000th
# slot (the last it listed), one record stands for the 1,001st on, and the plan resumes at
# the 1,002nd (``CatchUp(..., resumes=True)``).  The 1,000th's first attempt fails at once;
# its retry, 30 s later, runs until 10 s after the 1,004th: it outlasts the slot to resume
# at, and the 1,002nd to the 1,004th are recorded skipped after it, then the 1,005th runs,
# as for the process that decided the plan.  The row keeps the plan (``waited``, the
# 1,002nd, and ``resumes``): a process that puts it back from the row without deciding it
# again (a restart within grace of the retry's slot, or another process of a shared store
# claiming the retry) does the same.  Before the row kept ``resumes``, it ran the 1,002nd
# late, at the retry's finish.


def _slot(n: int) -> float:
    """The ``n``-th slot of :data:`MINUTELY` (09:01 is the first)."""
    return T0 + 60.0 * n


MINUTELY = FixedRate(60, start_delay=60)
BACK = _slot(1001) + 10  # the first process after the downtime decides the plan
RETRIED = BACK + 30  # the retry of the 1,000th, whose first attempt failed at BACK
OUTLASTED = _slot(1004) + 10  # the retry's finish


def _register_capped(scheduler: Scheduler) -> None:
    scheduler.schedule(
        "job", job, MINUTELY, id="job", misfire=MisfirePolicy(Misfire.RUN_ONCE),
        args=(_slot(1000), RETRIED), retry=RetryPolicy(3, initial_backoff=30),
    )  # fmt: skip


def _registered(store: TaskStore) -> None:
    """The process of 09:00 registers the task on ``store``; then every process is down."""
    with Stepper(Scheduler(workers=1, clock=FakeClock(T0), store=store)) as steps:
        _register_capped(steps.scheduler)


def _decide(store: TaskStore, make: SchedulerFactory) -> tuple[Scheduler, FakeClock]:
    """The first process after the downtime, on ``store``: it decides the plan (at its
    start, or at its claim of the first slot on a shared store) and the 1,000th's first
    attempt fails; the retry is due at :data:`RETRIED`."""
    _close_gate()
    clock = FakeClock(BACK)
    scheduler = make(workers=1, clock=clock, store=store)
    settle(scheduler)
    return scheduler, clock


def _hold_retry(clock: FakeClock, scheduler: Scheduler) -> None:
    """The retry, due at :data:`RETRIED`, runs until :data:`OUTLASTED`; then the 1,005th
    slot comes."""
    clock.set(RETRIED)
    assert HELD_STARTED.wait(5), "the retry did not start"
    clock.set(OUTLASTED)
    RELEASE.set()
    settle(scheduler)
    clock.set(_slot(1005))
    settle(scheduler)


def _after_the_retry(records: Sequence[ExecutionRecord]) -> list[tuple[float, str, float]]:
    """What ``records`` say from the held retry on: (slot number, outcome, started)."""
    (held,) = [i for i, r in enumerate(records) if r.due == RETRIED and r.outcome.ran]
    return [((r.slot - T0) / 60, r.outcome.value, r.started) for r in records[held:]]


AFTER_THE_RETRY = [
    (1000.0, "ok", RETRIED),
    (1002.0, "skipped", OUTLASTED),
    (1003.0, "skipped", OUTLASTED),
    (1004.0, "skipped", OUTLASTED),
    (1005.0, "ok", _slot(1005)),
]


def test_the_process_that_decided_a_capped_plan_skips_the_slot_its_retry_outlasted(
    make_scheduler: SchedulerFactory,
) -> None:
    store = InMemoryTaskStore()
    _registered(store)
    scheduler, clock = _decide(store, make_scheduler)
    _hold_retry(clock, scheduler)
    assert _after_the_retry(store.records("job")) == AFTER_THE_RETRY


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_restart_within_grace_puts_back_the_slot_to_resume_at_and_skips_it(
    make_scheduler: SchedulerFactory, kind: str, tmp_path: Path
) -> None:
    # Restarted at the retry's due instant: the 1,001st slot is 30 s late, within the
    # misfire grace, so nothing is decided again, and the plan is the row's.
    store = Reopening(kind, tmp_path / "tasks.db")
    try:
        _registered(store())
        first, _ = _decide(store(), make_scheduler)
        assert first.shutdown(timeout=5.0)
        clock = FakeClock(RETRIED)
        scheduler = make_scheduler(workers=1, clock=clock, store=store())
        _hold_retry(clock, scheduler)
        assert _after_the_retry(scheduler.task("job").history) == AFTER_THE_RETRY
    finally:
        RELEASE.set()
        store.close()


def test_a_restart_within_grace_in_the_simulation_skips_the_slot_to_resume_at(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        Simulation(workers=1, start=T0, store=store).schedule(
            "job", MINUTELY, id="job", misfire=MisfirePolicy(Misfire.RUN_ONCE),
            retry=RetryPolicy(3, initial_backoff=30),
        )  # fmt: skip
    with SqliteTaskStore(path) as store:
        first = Simulation(workers=1, start=BACK, store=store)
        first.model("job", fails=Nth(0, True, False))
        first.run(BACK + 1)  # the 1,000th's first attempt failed
    with SqliteTaskStore(path) as store:
        sim = Simulation(workers=1, start=RETRIED, store=store)
        sim.model("job", duration=Nth(0, OUTLASTED - RETRIED, 0.0))
        sim.run(_slot(1005) + 1)
        assert _after_the_retry(store.records("job")) == AFTER_THE_RETRY


def _stopped_once_12_ran(
    opened: Callable[[int], TaskStore], make: Callable[..., Scheduler]
) -> None:
    """Hourly from 10:00, ``RUN_ALL`` with four hours of grace, registered at 09:00 on
    ``opened(0)``.  A process on ``opened(1)`` (``make`` builds and starts it), back at
    15:30, catches up 10:00 to 15:00 (10:00 is 5.5 h late) and stops once 12:00 ran (held
    until its shutdown began): the row ``opened(3)`` reads keeps 13:00, the slot behind
    it (14:00), and where the plan's runs end (16:00)."""
    with Stepper(Scheduler(workers=1, clock=FakeClock(T0), store=opened(0))) as steps:
        steps.scheduler.schedule(
            "job", job, HOURLY, id="job", args=(0.0, HELD),
            misfire=MisfirePolicy(Misfire.RUN_ALL, grace=4 * HOUR),
        )  # fmt: skip
    _close_gate()
    first = make(workers=1, clock=FakeClock(T0 + 6.5 * HOUR), store=opened(1))
    assert HELD_STARTED.wait(5), "12:00 did not start"
    stopping = threading.Thread(target=first.shutdown, kwargs={"drain": False})
    stopping.start()
    assert first._timer is not None
    first._timer.join(5)  # nothing more is handed out
    RELEASE.set()
    stopping.join(5)
    (row,) = opened(3).load_all()
    assert (row.next_run_at, row.waited, row.until) == (
        T0 + 4 * HOUR, T0 + 5 * HOUR, T0 + 7 * HOUR,
    )  # fmt: skip


AT_ONCE = [(hour, "ok") for hour in (1, 2, 3, 4, 5, 6, 7, 8)]
AFTER_16 = [*((hour, "ok") for hour in (1, 2, 3, 4, 5, 6)), (7, "skipped"), (8, "ok")]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize(
    ("back", "history"), [(6.5, AT_ONCE), (7.75, AFTER_16)], ids=["at-once", "after-16:00"]
)
def test_a_catch_up_restarted_within_grace_runs_every_slot_of_its_plan(
    make_scheduler: SchedulerFactory,
    kind: str,
    back: float,
    history: list[tuple[int, str]],
    tmp_path: Path,
) -> None:
    # Hourly from 10:00, down until 15:30, four hours of grace: RUN_ALL catches up 10:00
    # to 15:00, and the process stops once 12:00 ran (_stopped_once_12_ran).  Restarted
    # at once (15:30), 13:00 is 2.5 h late, within grace: no misfire is decided again, and
    # 13:00, 14:00 and 15:00 run, then 16:00 and 17:00, as without the restart.  A
    # restart once put back only 13:00 and 14:00, and the fixed rate went on from 14:00's
    # run: 15:00 was skipped.  Restarted at 16:45 (``after-16:00``), 13:00 is 3.75 h
    # late, within grace, and the rest of the plan runs; 16:00 passed after the plan was
    # made: the fixed rate goes on from 15:00's run, which ends past it, and skips it, as
    # a run that outlasts its slots skips them; 17:00 runs.  The restart read every slot
    # after 14:00 up to 16:45 as the plan's: 16:00 ran with it.
    store = Reopening(kind, tmp_path / "tasks.db")
    try:
        _stopped_once_12_ran(lambda _: store(), make_scheduler)
        clock = FakeClock(T0 + back * HOUR)
        scheduler = make_scheduler(workers=1, clock=clock, store=store())
        settle(scheduler)
        clock.set(T0 + 8 * HOUR)
        settle(scheduler)
        ran = scheduler.task("job").history
        assert [((r.slot - T0) / HOUR, r.outcome.value) for r in ran] == history
    finally:
        RELEASE.set()
        store.close()


@pytest.mark.parametrize("made_by", ["restart", "follower"])
def test_a_shared_store_restarted_within_grace_leaves_the_slots_since_the_plan_to_its_schedule(
    store_spec: StoreSpec, made_by: str
) -> None:
    # As above (``after-16:00``), on a shared store (SQLite, PostgreSQL): the process
    # started at 16:45 (one restarted; or a follower, built before the plan was made,
    # whose feed brings the row) runs 13:00, 14:00 and 15:00 (nothing decided again:
    # within grace, or a process that was there), and 16:00, which passed after the plan
    # was made, is skipped by 15:00's run, as in one process.  It ran with the plan
    # before: the row's plan was read from 14:00 up to 16:45.
    stores = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(4)]
    made: list[Scheduler] = []

    def make(**options: Any) -> Scheduler:
        made.append(Scheduler(**options).start())
        return made[-1]

    clock = FakeClock(T0 + 6.5 * HOUR)
    follower = Scheduler(workers=1, clock=clock, store=stores[2])  # started below
    try:
        _stopped_once_12_ran(stores.__getitem__, make)
        if made_by == "restart":
            clock = FakeClock(T0 + 7.75 * HOUR)
            follower = Scheduler(workers=1, clock=clock, store=stores[2])
        else:
            clock.set(T0 + 7.75 * HOUR)
        made.append(follower.start())
        read = stores[3].records  # a follower's feed brings the row after its start
        wait_until(lambda: len(read("job")) == 7, timeout=10, what="16:00 to be skipped")
        clock.set(T0 + 8 * HOUR)
        wait_until(lambda: len(read("job")) == 8, timeout=10, what="17:00 to run")
        settle(follower)
        assert [((r.slot - T0) / HOUR, r.outcome.value) for r in read("job")] == AFTER_16
    finally:
        RELEASE.set()
        for scheduler in made:
            assert scheduler.shutdown(timeout=5.0)
        for store in stores:
            store.close()


@pytest.mark.parametrize("made", ["restart", "follower"])
def test_a_process_of_a_shared_store_puts_back_the_slot_to_resume_at_and_skips_it(
    store_spec: StoreSpec, made: str
) -> None:
    # ``restart``: the deciding process stops, and one started at the retry's due instant
    # loads the row and claims the retry (within grace: nothing decided again).
    # ``follower``: a second process, built before the decision and started after it
    # (its feed brings the row), claims the retry; the first one's clock stays where it
    # decided, so it claims nothing more.
    stores = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(4)]
    made_here: list[Scheduler] = []

    def make(**options: Any) -> Scheduler:
        made_here.append(Scheduler(**options).start())
        return made_here[-1]

    try:
        _registered(stores[0])
        clock = FakeClock(BACK)
        if made == "follower":
            second = Scheduler(workers=1, clock=clock, store=stores[2])  # not started yet
        first, _ = _decide(stores[1], make)
        if made == "restart":
            assert first.shutdown(timeout=5.0)
            clock = FakeClock(RETRIED)
            second = Scheduler(workers=1, clock=clock, store=stores[2])
        made_here.append(second.start())
        _hold_retry(clock, second)
        records = [_unclaimed(r) for r in stores[3].records("job")]
        assert _after_the_retry(records) == AFTER_THE_RETRY
    finally:
        RELEASE.set()
        for scheduler in made_here:
            assert scheduler.shutdown(timeout=5.0)
        for store in stores:
            store.close()


def test_a_capped_plans_last_slot_retried_beyond_grace_by_another_process_goes_on_as_cut(
    store_spec: StoreSpec,
) -> None:
    # The plan as above, decided 10 s after the 1,005th slot instead: the cap's record (at
    # the 1,001st) stands for the 1,001st to the 1,005th, and the plan resumes at the
    # 1,006th.  The 1,000th's first attempt fails and the process stops; another process
    # of the shared store claims the retry 10 s after the 1,008th slot, beyond grace.  The
    # retry runs, and only the 1,006th on meet the policy: the 1,006th and 1,007th
    # coalesced, the 1,008th runs, as a restart decides them (tests/test_recovery.py,
    # test_a_capped_plans_last_slot_retried_after_a_restart_beyond_grace_goes_on_as_cut).
    # It decided them again from the 1,001st (the slot after the retry's): the cap's
    # record, at that very slot, was not found, and the 1,002nd to the 1,005th were
    # recorded coalesced a second time.
    stores = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(4)]
    made: list[Scheduler] = []
    try:
        _registered(stores[0])
        _close_gate()
        RELEASE.set()  # no run is held
        made.append(Scheduler(workers=1, clock=FakeClock(_slot(1005) + 10), store=stores[1]))
        settle(made[-1].start())
        assert made[-1].task("job").attempt == 1  # the 1,000th's retry is owed
        assert made[-1].shutdown(timeout=5.0)
        made.append(Scheduler(workers=1, clock=FakeClock(_slot(1008) + 10), store=stores[2]))
        settle(made[-1].start())
        records = [_unclaimed(r) for r in stores[3].records("job")]
        (failed,) = [i for i, r in enumerate(records) if r.outcome.value == "failed"]
        after = [((r.slot - T0) / 60, r.outcome.value) for r in records[failed:]]
        assert after == [
            (1000, "failed"), (1006, "coalesced"), (1007, "coalesced"), (1000, "ok"),
            (1008, "ok"),
        ]  # fmt: skip
    finally:
        for scheduler in made:
            assert scheduler.shutdown(timeout=5.0)
        for store in stores:
            store.close()
