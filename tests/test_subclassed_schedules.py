"""A subclass of a built-in schedule that overrides only ``next_run`` (the documented
extension point, docs/EXTENDING.md, "A subclass of a built-in schedule") is asked it on
every path: after each run, after an overrun, in recovery after downtime and under
``BUFFER_ONE``.  Before, the core asked the fast paths it inherited
(``next_run_and_skipped``, ``slot_after``, ``first_slot_after``, ``slot_at``,
``on_grid``), which answered with the base class's own arithmetic: a ``FixedRate``
subclass whose ``next_run`` answers every other slot still ran every 60 s."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    OneTime,
    Overlap,
    ScheduleError,
    Scheduler,
    Simulation,
    Window,
)
from lldsched.model import ExecutionRecord
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.schedules.base import FROM_NEXT_RUN, Schedule, first_slot_after, ran_in_no_time
from lldsched.schedules.subclasses import FAST_PATHS
from lldsched.sim import fixed
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0
from tests.runtimes import KINDS, Driven

START = 1_767_571_200.0  # 2026-01-05 00:00 UTC, on every minute's grid


def even(instant: float) -> float:
    """``instant``, or a minute later where it is an odd minute: the subclasses below run
    on even minutes only, whatever slot a run served, so every slot of theirs is one of
    a fixed set (:func:`sequence`), after an overrun and after downtime as well."""
    return instant + 60.0 if round(instant / 60.0) % 2 else instant


class EvenRate(FixedRate):
    """Every other slot of the grid: its even minutes."""

    __slots__ = ()

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        return even(super().next_run(record, now))


class DoubleDelay(FixedDelay):
    """Twice the delay after each finish."""

    __slots__ = ()

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        return record.finished + 2 * self.delay


class Thrice(OneTime):
    """Once at ``at``, then twice more, a minute apart."""

    __slots__ = ()

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        assert self.at is not None
        following = record.slot + 60.0
        return following if following <= self.at + 120.0 else None


class EvenCron(CronSchedule):
    """The fires of the expression on even minutes."""

    __slots__ = ()

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        following = super().next_run(record, now)
        return None if following is None else even(following)


class EvenWindow(Window):
    """The slots of the window's schedule on even minutes."""

    __slots__ = ()

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        following = super().next_run(record, now)
        return None if following is None else self._within(even(following))


class EvenJittered(Jittered):
    """The undelayed slots of the wrapped schedule on even minutes, delayed."""

    __slots__ = ()

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        following = super().next_run(record, now)
        return None if following is None else self.delayed(even(self.slot_of(following)))


Made = Callable[[], Schedule]
GRIDDED: dict[str, Made] = {
    "FixedRate": lambda: EvenRate(60),
    "CronSchedule": lambda: EvenCron("* * * * *"),
    "Window": lambda: EvenWindow(FixedRate(60), end=START + 86_400),
    "Window(max_runs)": lambda: EvenWindow(FixedRate(60), max_runs=10_000),
    "Jittered": lambda: EvenJittered(FixedRate(60), 5.0, seed=3),
}
"""Subclasses whose slots lie on a sequence from the first: each is the ``next_run`` of
the one before (a run of no length)."""
ALL: dict[str, Made] = {
    **GRIDDED,
    "OneTime": lambda: Thrice(at=START + 30.0),
    "FixedDelay": lambda: DoubleDelay(60),
}


def sequence(schedule: Schedule, until: float) -> list[float]:
    """The slots ``schedule`` answers from its first, each its ``next_run`` after a run
    of no length of the one before, up to ``until``."""
    slots: list[float] = []
    slot = schedule.first_run(START)
    while slot is not None and slot <= until:
        slots.append(slot)
        slot = schedule.next_run(ran_in_no_time(slot, finished=slot), slot)
    return slots


def ran(records: list[ExecutionRecord]) -> list[float]:
    return [r.slot for r in records if r.outcome.value == "ok"]


@pytest.mark.parametrize("kind", sorted(ALL))
def test_a_subclass_overriding_next_run_is_obeyed_run_after_run(kind: str) -> None:
    """On a simulation and on a threaded scheduler stepped through time, the task runs
    the slots its ``next_run`` answers, none of the base class's own."""
    schedule = ALL[kind]()
    until = START + 600.0
    expected = sequence(schedule, until)
    assert len(expected) >= 3
    sim = Simulation(start=START)
    sim.schedule("job", schedule, id="job", duration=fixed(0.0))
    sim.run(until)
    assert ran(sim.records()) == expected
    with Stepper(Scheduler(workers=1, clock=FakeClock(START))) as steps:
        steps.scheduler.schedule("job", lambda: None, ALL[kind](), id="job")
        steps.advance_to(until)
        assert ran(steps.records("job")) == expected


@pytest.mark.parametrize("kind", sorted(GRIDDED))
@pytest.mark.parametrize("overlap", [None, Overlap.BUFFER_ONE])
def test_a_subclass_overriding_next_run_decides_what_an_overrun_skips(
    kind: str, overlap: Overlap | None
) -> None:
    """Runs of 150 s: the slots skipped, coalesced or run are all slots its ``next_run``
    answers (every other minute), under SKIP and under ``BUFFER_ONE``."""
    schedule = GRIDDED[kind]()
    until = START + 3_600.0
    expected = set(sequence(schedule, until + 600.0))
    sim = Simulation(start=START)
    sim.schedule("job", schedule, id="job", duration=fixed(150.0), overlap=overlap)
    sim.run(until)
    slots = [r.slot for r in sim.records()]
    assert len(ran(sim.records())) >= 10
    assert [slot for slot in slots if slot not in expected] == []
    assert {r.outcome.value for r in sim.records()} - {"ok"}  # some were passed over


@pytest.mark.parametrize("kind", sorted(GRIDDED))
@pytest.mark.parametrize("misfire", [Misfire.SKIP, Misfire.RUN_ONCE, Misfire.RUN_ALL])
def test_a_subclass_overriding_next_run_is_obeyed_after_downtime(
    kind: str, misfire: Misfire
) -> None:
    """Down for 25 minutes, then restarted from the store (a simulation, then a threaded
    scheduler): every slot recovery records or runs is one its ``next_run`` answers."""
    policy = MisfirePolicy(misfire, grace=0.0, max_catch_up=50)
    down, back, until = START + 300.0, START + 1_800.0, START + 2_700.0
    expected = set(sequence(GRIDDED[kind](), until + 600.0))
    for threaded in (False, True):
        store = InMemoryTaskStore()
        schedule = GRIDDED[kind]()
        if threaded:
            with Stepper(Scheduler(workers=1, clock=FakeClock(START), store=store)) as steps:
                steps.scheduler.schedule("job", lambda: None, schedule, id="job", misfire=policy)
                steps.advance_to(down)
            with Stepper(Scheduler(workers=1, clock=FakeClock(back), store=store)) as steps:
                steps.advance_to(until)
        else:
            first = Simulation(start=START, store=store)
            first.schedule("job", schedule, id="job", duration=fixed(0.0), misfire=policy)
            first.run(down)
            Simulation(start=back, store=store).run(until)
        records = store.records("job")
        after = [r.slot for r in records if r.slot > down]
        assert len(ran(records)) >= 6 and after, (threaded, records)
        assert [slot for slot in after if slot not in expected] == [], threaded


@pytest.mark.parametrize("misfire", [Misfire.SKIP, Misfire.RUN_ONCE])
def test_a_fixed_delay_subclass_is_obeyed_after_downtime(misfire: Misfire) -> None:
    """A delay has no slots of its own: after downtime the next run is its ``next_run``
    from the restart (twice the delay), not the base class's one delay."""
    policy = MisfirePolicy(misfire, grace=0.0)
    back = START + 1_800.0
    for threaded in (False, True):
        store = InMemoryTaskStore()
        if threaded:
            with Stepper(Scheduler(workers=1, clock=FakeClock(START), store=store)) as steps:
                steps.scheduler.schedule(
                    "job", lambda: None, DoubleDelay(60), id="job", misfire=policy
                )
                steps.advance_to(START + 30.0)
            with Stepper(Scheduler(workers=1, clock=FakeClock(back), store=store)) as steps:
                steps.advance_to(back + 600.0)
        else:
            first = Simulation(start=START, store=store)
            first.schedule("job", DoubleDelay(60), id="job", duration=fixed(0.0), misfire=policy)
            first.run(START + 30.0)
            Simulation(start=back, store=store).run(back + 600.0)
        after = [slot for slot in ran(store.records("job")) if slot >= back]
        if misfire is Misfire.RUN_ONCE:  # the passed slot runs at once, then on
            assert after[0] == back, threaded
            after = after[1:]
        else:
            assert after[0] == back + 120.0, threaded
        gaps = {b - a for a, b in itertools.pairwise(after)}
        assert gaps == {120.0}, threaded


@pytest.mark.parametrize("kind", sorted(ALL))
def test_a_subclass_that_overrides_next_run_inherits_no_fast_path(kind: str) -> None:
    """Every fast path its base class has is, on the subclass, a method that answers from
    ``next_run`` (a query: ``base.FROM_NEXT_RUN``) or None (a grid: the module's
    functions count on none); a subclass that only words itself keeps them, and one that
    defines a fast path of its own keeps that one."""
    schedule = ALL[kind]()
    base = type(schedule).__mro__[1]
    has = [name for name in FAST_PATHS if getattr(base, name, None) is not None]
    assert has and all(getattr(type(schedule), name) is FROM_NEXT_RUN.get(name) for name in has)

    class Worded(base):  # type: ignore[valid-type, misc]
        __slots__ = ()

        def explain(self) -> str:
            return "in my own words"

    assert all(getattr(Worded, name) is getattr(base, name) for name in has)

    class OwnSlotAfter(type(schedule)):  # type: ignore[misc]
        __slots__ = ()

        def slot_after(self, slot: float) -> float:
            return slot + 1.0

    assert OwnSlotAfter.slot_after not in (None, FROM_NEXT_RUN["slot_after"])
    assert all(
        getattr(OwnSlotAfter, name) is FROM_NEXT_RUN.get(name)
        for name in has
        if name != "slot_after"
    )


@pytest.mark.parametrize("overlap", [None, Overlap.BUFFER_ONE])
def test_a_window_subclass_counts_only_real_runs_towards_max_runs(
    overlap: Overlap | None,
) -> None:
    """Its slots are found from its ``next_run`` too, asked about runs that never happened
    (no task id): those are not counted, so the task runs its ``max_runs`` all, on even
    minutes, and no slot its overruns pass over goes unrecorded (counted, a probe was the
    ``max_runs``-th, and a slot BUFFER_ONE coalesced was left out of the record)."""
    window = EvenWindow(FixedRate(60), max_runs=12)
    sim = Simulation(start=START)
    sim.schedule("job", window, id="job", duration=fixed(150.0), overlap=overlap)
    sim.run(START + 86_400.0)
    runs, slots = ran(sim.records()), sorted(r.slot for r in sim.records())
    assert len(runs) == 12
    assert slots == [START + 120.0 * k for k in range(len(slots))]  # every one recorded


# -- the queries it inherits, asked of the subclass itself -----------------------------------


@pytest.mark.parametrize("kind", sorted(ALL))
def test_a_subclass_answers_the_queries_it_inherits_from_its_own_next_run(kind: str) -> None:
    """``sub.slot_after(slot)``, ``sub.first_slot_after(slot, now)`` and
    ``sub.next_run_and_skipped(record, limit=...)`` answer as the subclass's ``next_run``
    does, called on the subclass itself (a notebook's ``EvenRate(60).slot_after(t)``
    raised ``TypeError: 'NoneType' object is not callable``), and refuse what their base
    class's refuse."""
    schedule = ALL[kind]()
    first, second, third, *later = sequence(schedule, START + 600.0)
    base = type(schedule).__mro__[1]
    asked = {name for name in FROM_NEXT_RUN if getattr(base, name, None) is not None}
    assert asked and all(callable(getattr(schedule, name)) for name in asked)
    if "slot_after" in asked:
        assert schedule.slot_after(first) == second  # type: ignore[attr-defined]
        with pytest.raises(ScheduleError, match=type(schedule).__name__):
            schedule.slot_after(float("nan"))  # type: ignore[attr-defined]
    if "first_slot_after" in asked:
        assert schedule.first_slot_after(first, second) == third  # type: ignore[attr-defined]
        with pytest.raises(ScheduleError, match="first_slot_after"):
            schedule.first_slot_after(first, float("nan"))  # type: ignore[attr-defined]
        # base's function steps no farther than its caller says, method or not
        assert first_slot_after(schedule, first, second, limit=10) == third
        assert first_slot_after(schedule, first, second, limit=0) is None
    if "next_run_and_skipped" in asked:
        on_time = ran_in_no_time(first, finished=first)
        due, skipped = schedule.next_run_and_skipped(on_time, limit=10)  # type: ignore[attr-defined]
        assert (due, list(skipped)) == (second, [])
        if kind in GRIDDED:  # an overrun past the third slot: the fourth is due
            late = ran_in_no_time(first, finished=third + 1.0)
            due, skipped = schedule.next_run_and_skipped(late, limit=10)  # type: ignore[attr-defined]
            assert (due, list(skipped)) == (later[0], [second, third])


# -- a cron subclass, and a Window or Jittered one, in the scheduler's zone -------------------

HOUR = 3600.0
NOON = T0 + 2 * HOUR
"""Monday 12:00 in Berlin (T0 is Monday 09:00 UTC, 10:00 in Berlin)."""


class Noon(CronSchedule):
    """Noon on the days given: a subclass with an ``__init__`` and an attribute of its
    own (in its ``__dict__``: no ``__slots__``, as a user writes it), and nothing else
    overridden."""

    def __init__(self, days: str = "*", tz: str | None = None) -> None:
        super().__init__(f"0 12 * * {days}", tz=tz)
        self.days = days


class WeekdayNoon(CronSchedule):
    """Noon in its zone, the weekend passed over by its own ``next_run``."""

    __slots__ = ()

    def __init__(self, tz: str | None = None) -> None:
        super().__init__("0 12 * * *", tz=tz)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        following = super().next_run(record, now)
        while following is not None and self._weekend(following):
            following = self.next_after(following)
        return following

    def _weekend(self, instant: float) -> bool:
        return datetime.fromtimestamp(instant, self.tzinfo).weekday() >= 5


class Labelled(Window):
    """A window with a label of its own, taken first by its ``__init__``."""

    __slots__ = ("label",)
    label: str

    def __init__(self, label: str, schedule: Schedule, **window: Any) -> None:
        super().__init__(schedule, **window)
        object.__setattr__(self, "label", label)


class Worded(Jittered):
    """A jitter that words itself its own way, and overrides nothing else."""

    __slots__ = ()

    def explain(self) -> str:
        return "noon, more or less"


def _noons(runtime: Driven, task_id: str) -> list[float]:
    """The slots task ``task_id`` ran, as hours after the first Berlin noon."""
    return [(r.slot - NOON) / HOUR for r in runtime.runtime.task(task_id).history if r.ok]


@pytest.mark.parametrize("kind", KINDS)
def test_a_cron_subclass_that_names_no_zone_is_read_in_the_schedulers_zone(kind: str) -> None:
    """As a plain ``CronSchedule`` is: registered, decorated (``scheduled``, which had
    remembered its type as a plain schedule's) and rescheduled, it is read in Berlin and
    stays of its class with its own attributes; one that names a zone keeps it.  A
    subclass that overrides ``next_run`` runs its way in that zone (it ran at 12:00 UTC)."""
    runtime = Driven(kind, tz="Europe/Berlin")
    try:
        task = runtime.add("noon", Noon(), id="noon")
        assert isinstance(task.schedule, Noon) and task.schedule.days == "*"
        assert (task.schedule.tz, task.next_run_at) == ("Europe/Berlin", NOON)
        named = runtime.add("named", Noon(tz="UTC"), id="named")
        assert isinstance(named.schedule, Noon) and named.schedule.tz == "UTC"
        assert named.next_run_at == NOON + HOUR
        runtime.runtime.scheduled(Noon("1-5"), id="decorated")(jobs.noop)
        again = runtime.add("again", Noon("1-5"), id="again")
        for registered in (runtime.runtime.task("decorated"), again):
            assert isinstance(registered.schedule, Noon), registered
            assert (registered.schedule.tz, registered.schedule.days) == ("Europe/Berlin", "1-5")
            assert registered.next_run_at == NOON
        moved = runtime.runtime.reschedule("named", Noon("1-5"))
        assert isinstance(moved.schedule, Noon) and moved.schedule.tz == "Europe/Berlin"
        runtime.add("weekdays", WeekdayNoon(), id="weekdays")
        runtime.run_until(NOON + 8 * 24 * HOUR)
        assert _noons(runtime, "weekdays") == [0.0, 24.0, 48.0, 72.0, 96.0, 168.0, 192.0]
    finally:
        runtime.close()


@pytest.mark.parametrize("kind", KINDS)
def test_replace_existing_with_a_cron_subclass_of_the_same_text_takes_the_subclass(
    kind: str,
) -> None:
    """A cron subclass equals only schedules of its class: found equal to the plain
    ``CronSchedule`` of its text, a ``replace_existing`` registration kept the plain
    one, and the subclass's ``next_run`` (no weekends) was never asked; the way back
    replaces it too."""
    assert WeekdayNoon(tz="UTC") != CronSchedule("0 12 * * *", tz="UTC")
    assert WeekdayNoon(tz="UTC") == WeekdayNoon(tz="UTC")
    runtime = Driven(kind, tz="Europe/Berlin")
    try:
        runtime.add("noon", "0 12 * * *", id="noon")
        task = runtime.add("noon", WeekdayNoon(), id="noon", replace_existing=True)
        assert type(task.schedule) is WeekdayNoon
        runtime.run_until(NOON + 8 * 24 * HOUR)
        assert _noons(runtime, "noon") == [0.0, 24.0, 48.0, 72.0, 96.0, 168.0, 192.0]
        back = runtime.add("noon", "0 12 * * *", id="noon", replace_existing=True)
        assert type(back.schedule) is CronSchedule
    finally:
        runtime.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_window_or_jittered_subclass_reads_the_cron_it_wraps_in_the_schedulers_zone(
    kind: str,
) -> None:
    """As a plain ``Window`` or ``Jittered`` does (each subclass was refused with a
    ScheduleError asking for a ``with_schedule``): rebuilt around the cron read in
    Berlin, of its class, with its own attributes, nested too, and run at Berlin's noon."""
    runtime = Driven(kind, tz="Europe/Berlin")
    berlin = CronSchedule("0 12 * * *", tz="Europe/Berlin")
    try:
        window = runtime.add(
            "window", Labelled("noon", CronSchedule("0 12 * * *"), max_runs=2), id="window"
        )
        assert window.schedule == Labelled("noon", berlin, max_runs=2)
        assert isinstance(window.schedule, Labelled) and window.schedule.label == "noon"
        assert window.next_run_at == NOON
        jittered = runtime.add("jittered", Worded(CronSchedule("0 12 * * *"), 60, seed=3))
        assert jittered.schedule == Worded(berlin, 60, seed=3)
        assert jittered.next_run_at is not None and NOON <= jittered.next_run_at < NOON + 60
        nested = Labelled("both", Worded(WeekdayNoon(), 60, seed=3), end=NOON + 8 * 24 * HOUR)
        both = runtime.add("both", nested, id="both")
        assert both.schedule == Labelled(
            "both", Worded(WeekdayNoon("Europe/Berlin"), 60, seed=3), end=nested.end
        )
        assert isinstance(both.schedule, Labelled) and both.schedule.label == "both"
        inner = both.schedule.schedule
        assert isinstance(inner, Worded) and isinstance(inner.schedule, WeekdayNoon)
        runtime.run_until(NOON + 9 * 24 * HOUR)
        assert _noons(runtime, "window") == [0.0, 24.0]  # max_runs=2, counted afresh
        hours = [round(hour) for hour in _noons(runtime, "both")]
        assert hours == [0, 24, 48, 72, 96, 168]  # within a minute of noon, on weekdays
    finally:
        runtime.close()
