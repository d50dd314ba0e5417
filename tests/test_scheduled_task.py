"""A ``ScheduledTask`` as a reader sees it: its definition while a change of it is under
way, its bounded history, whether a run is in flight, its one-line ``repr``."""

from __future__ import annotations

import pytest

from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, OneTime, Priority, Simulation
from lldsched.sim import fixed
from tests.conftest import T0, SchedulerFactory, settle


def test_the_definition_read_while_a_change_is_under_way_is_the_one_before_it(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # What the core does in modify() and a replace, and what a reader on another thread
    # sees meanwhile.  (mutation15, task.py: `_Edit.__init__`'s `self.before = before`
    # dropped, a read during the change raised AttributeError.)
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("report", lambda: None, OneTime(delay=3600))
    before = task.definition
    with task.redefining():
        task.priority = Priority.HIGH
        assert task.definition == before
    assert task.definition == before._replace(priority=Priority.HIGH)


def test_a_history_limit_of_zero_keeps_no_record() -> None:
    # (mutation15, task.py: `RunStats.add`'s `self._limit != 0` as `==`: a limit of 0
    # kept the first record until the second run.)
    for limit in (0, 1, 2):
        sim = Simulation(workers=1, start=T0, history_limit=limit)
        task = sim.schedule("often", FixedRate(10), duration=fixed(1))
        for count in (1, 2, 3):  # after each run
            sim.run_for(10)
            runs = sim.records()
            assert len(runs) == count
            kept = min(limit, count)
            assert task.history == tuple(runs[count - kept :] if kept else ()), limit


def test_running_is_a_bool_and_the_repr_one_line(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # (mutation15, task.py: `running`'s answer as None, falsy but no bool; `__repr__`'s
    # as None, which repr() refused with a TypeError.)
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("report", lambda: None, OneTime(delay=0), id="report")
    settle(scheduler)
    assert task.running is False
    assert repr(task) == "<ScheduledTask report 'report' succeeded next_run_at=never attempt=1>"


def test_a_task_s_kwargs_read_back_as_given_and_read_only(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # (mutation15, task.py: `_read_only`'s answer as None: the definition, what a store
    # keeps, lost its keyword arguments.)
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "report", print, OneTime(delay=3600), kwargs={"sep": ", "}, id="report"
    )
    kwargs = task.definition.kwargs
    assert kwargs == {"sep": ", "}
    with pytest.raises(TypeError):
        kwargs["sep"] = "; "  # type: ignore[index]
    assert task.definition.kwargs == {"sep": ", "}


def test_a_task_s_definition_reads_back_as_registered(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # What a reader sees of a task just registered, never run: its arguments, its misfire
    # policy (None: the default), its schedule in words, its slot, no slot given up.
    # (mutation16, task.py: `args`, `misfire`, `explain()` and `slot` answering None, and
    # `given_up`'s 0 for a task with no runs as 1.)
    scheduler = make_scheduler(clock=clock)
    every = FixedRate(60, start_delay=30)
    skip = MisfirePolicy(Misfire.SKIP)
    task = scheduler.schedule("report", print, every, args=("a", 1), misfire=skip)
    plain = scheduler.schedule("plain", print, every)
    assert task.args == ("a", 1) and plain.args == ()
    assert task.misfire == skip and plain.misfire is None
    assert task.explain() == every.explain() == "Every 60 s, the first 30 s after registration"
    assert task.slot == task.next_run_at == T0 + 30
    assert task.given_up == 0
