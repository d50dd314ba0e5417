"""Extending lldsched through its seams (docs/EXTENDING.md): what a contributor's own
schedule, decorator and retry policy get from the scheduler and the durable stores."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedRate,
    Jittered,
    OneTime,
    ScheduleError,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
    ValidationError,
    Window,
)
from lldsched.errors import doc_url
from lldsched.model import Priority
from lldsched.persistence import Task, TaskSnapshot
from lldsched.policies import RetryPolicy
from lldsched.stores.codec import decode_task, encode_task, register_schedule
from tests import extensions, jobs
from tests.conftest import T0
from tests.runtimes import KINDS, Driven

WEEKDAYS_AT_NINE = "0 9 * * 1-5"


def definition(**fields: object) -> Task:
    base: dict[str, object] = {
        "id": "t",
        "name": "t",
        "action": jobs.noop,
        "schedule": FixedRate(60),
        "priority": Priority.NORMAL,
        "retry": RetryPolicy(),
        "timeout": None,
    }
    base.update(fields)
    return Task(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
def test_a_decorator_of_ones_own_reads_the_cron_it_wraps_in_the_schedulers_zone(
    kind: str,
) -> None:
    runtime = Driven(kind, tz="Europe/Berlin")  # T0 is Monday 09:00 UTC, 10:00 in Berlin
    try:
        plain = runtime.add("plain", CronSchedule(WEEKDAYS_AT_NINE))
        wrapped = runtime.add("wrapped", extensions.ExceptOn(CronSchedule(WEEKDAYS_AT_NINE)))
        assert isinstance(wrapped.schedule, extensions.ExceptOn)
        inner = wrapped.schedule.schedule
        assert isinstance(inner, CronSchedule) and inner.tz == "Europe/Berlin"  # was UTC
        assert wrapped.next_run_at == plain.next_run_at == T0 + 23 * 3600  # Tue 08:00 UTC
    finally:
        runtime.close()


def test_a_decorator_that_cannot_be_rebuilt_around_a_zoneless_cron_is_refused() -> None:
    sim = Simulation(start=T0, tz="Europe/Berlin")
    with pytest.raises(ScheduleError, match=r"'nine'.*tz='Europe/Berlin'.*with_schedule"):
        sim.schedule("nine", extensions.Unzoned(CronSchedule(WEEKDAYS_AT_NINE)), duration=1)
    assert sim.tasks() == []
    zoned = extensions.Unzoned(CronSchedule(WEEKDAYS_AT_NINE, tz="UTC"))
    assert sim.schedule("nine", zoned, duration=1).schedule is zoned  # a named zone: as is
    utc = Simulation(start=T0)  # and in a UTC scheduler nothing needs rebuilding
    assert utc.schedule("nine", extensions.Unzoned(CronSchedule(WEEKDAYS_AT_NINE))).id


def test_a_window_inside_a_decorator_of_ones_own_keeps_its_count_across_a_restart(
    tmp_path: Path,
) -> None:
    schedule = extensions.ExceptOn(Window(FixedRate(60), max_runs=3))
    path = tmp_path / "tasks.db"
    start = T0
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=start, store=store)
        sim.schedule("w", schedule, id="w", action=jobs.noop, duration=1)
        sim.run_for(90)  # two runs: at 0 and 60
        assert sim.task("w").run_count == 2
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=start + 100, store=store)
        sim.run_for(600)
        task = sim.task("w")
        assert (task.status, task.run_count) == (TaskStatus.SUCCEEDED, 3)  # not 2 + 3


def test_a_registered_schedule_that_does_not_round_trip_is_refused_at_registration(
    tmp_path: Path,
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(store=store, clock=FakeClock(T0))
        with pytest.raises(ValidationError, match=r"back as Dates\(at=\[.*lists, not tuples"):
            scheduler.schedule("d", jobs.noop, extensions.Dates((T0, T0 + 60)), id="d")
        assert scheduler.tasks() == [] and store.load_all() == []


class EveryByIdentity:
    """A schedule of one's own written as a plain class: no ``__eq__``, so two equal
    ones are not ``==``."""

    def __init__(self, period: float) -> None:
        self.period = period

    def first_run(self, now: float) -> float:
        return now + self.period

    def next_run(self, record: Any, now: float) -> float:
        return float(record.slot) + self.period


register_schedule(
    "tests.EveryByIdentity",
    EveryByIdentity,
    lambda s: {"period": s.period},
    lambda d: EveryByIdentity(d["period"]),
)


def test_a_registered_schedule_without_eq_is_refused_saying_so(tmp_path: Path) -> None:
    """Before: the refusal blamed the ``from_dict`` ("must rebuild an equal schedule from
    what JSON keeps (lists, not tuples)"), which rebuilt the schedule right: the class
    compares by identity, which no ``from_dict`` can satisfy."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(store=store, clock=FakeClock(T0))
        with pytest.raises(ValidationError) as refused:
            scheduler.schedule("e", jobs.noop, EveryByIdentity(60.0), id="e")
        message = str(refused.value)
        assert "EveryByIdentity compares by identity (it defines no __eq__)" in message
        assert "a frozen dataclass" in message and "from_dict" not in message
        assert scheduler.tasks() == [] and store.load_all() == []


@pytest.mark.parametrize("period", [float("nan"), float("inf")])
def test_a_registered_schedule_json_cannot_hold_is_refused_naming_the_task_and_value(
    tmp_path: Path, period: float
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(store=store, clock=FakeClock(T0))
        scheduler.schedule("kept", jobs.noop, extensions.Every(60.0), id="kept")
        with pytest.raises(ValidationError, match=rf"task 'odd': .*Every\(period={period!r}\)"):
            scheduler.schedule("odd", jobs.noop, extensions.Every(period), id="odd")
        assert [t.id for t in scheduler.tasks()] == ["kept"]
        assert [s.task.id for s in store.load_all()] == ["kept"]


def test_a_stored_retry_policy_class_that_is_not_a_retry_policy_is_refused() -> None:
    document = json.loads(encode_task(definition(retry=extensions.Fibonacci(max_attempts=5))))
    document["retry"]["policy"] = "builtins:dict"  # a class that takes the fields, too
    with pytest.raises(StoreError, match=r"'builtins:dict' is <class 'dict'>, not a RetryPolicy"):
        decode_task("t", json.dumps(document))


def test_an_unknown_schedule_type_at_load_says_to_register_it() -> None:
    text = encode_task(definition())
    document = json.loads(text)
    document["schedule"] = {"type": "Payday", "day": 25}
    with pytest.raises(StoreError, match=r"'Payday'.*register_schedule before the store"):
        decode_task("t", json.dumps(document))


def test_a_retry_policy_subclass_comes_back_from_a_durable_store(tmp_path: Path) -> None:
    policy = extensions.Fibonacci(max_attempts=5, initial_backoff=10)
    back = decode_task("t", encode_task(definition(retry=policy))).retry
    assert type(back) is extensions.Fibonacci and back == policy  # was a plain RetryPolicy
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        Simulation(start=T0, store=store).schedule(
            "f", OneTime(delay=0), id="f", action=extensions.fails, retry=policy, duration=1
        )
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=T0, store=store)
        sim.run_for(600)
        starts = [record.started - T0 for record in sim.records()]
    assert starts == [
        0,
        10,
        20,
        40,
        70,
    ]  # backoffs 10, 10, 20, 30 (a restored task runs in no time)


def test_a_retry_policy_subclass_with_state_of_its_own_is_refused_by_a_durable_store() -> None:
    with pytest.raises(ValidationError, match=r"task 't'.*Remembers\(\*\*fields\)"):
        encode_task(definition(retry=extensions.Remembers("mine", max_attempts=2)))


def test_the_round_trip_check_leaves_the_built_in_schedules_alone() -> None:
    cron = CronSchedule("0 3 * * *", tz="Europe/Berlin")
    assert decode_task("t", encode_task(definition(schedule=cron))).schedule == cron
    assert datetime.fromtimestamp(T0, UTC).weekday() == 0  # the tests' T0 is a Monday


def test_a_schedule_class_defined_again_is_registered_again_in_its_place() -> None:
    def define() -> Any:
        @dataclass(frozen=True)
        class Again:  # the same module and qualified name each time: a cell run again
            at: float

            def first_run(self, now: float) -> float:
                return self.at

            def next_run(self, record: object, now: float) -> None:
                return None

        return Again

    first, second = define(), define()
    register_schedule("Again", first, lambda s: {"at": s.at}, lambda d: first(d["at"]))
    register_schedule("Again", second, lambda s: {"at": s.at}, lambda d: second(d["at"]))
    text = encode_task(definition(schedule=second(T0)))
    assert decode_task("t", text).schedule == second(T0)
    with pytest.raises(ValidationError, match=r"'Again2'.*clashes with 'Again'"):
        register_schedule("Again2", second, lambda s: {}, lambda d: second(T0))
    with pytest.raises(ValidationError, match=r"'Again'.*clashes"):
        register_schedule("Again", extensions.Dates, lambda s: {}, lambda d: second(T0))


@pytest.mark.parametrize("inside", [False, True], ids=["window", "window-in-a-decorator"])
def test_another_nodes_row_gives_a_window_its_count_also_inside_a_decorator(
    postgres_dsn: str, inside: bool
) -> None:
    from lldsched.stores.postgres import PostgresTaskStore

    window = Window(FixedRate(60), max_runs=5)
    schedule = extensions.ExceptOn(window) if inside else window
    task = definition(id="w", schedule=schedule)
    with PostgresTaskStore(postgres_dsn) as writer, PostgresTaskStore(postgres_dsn) as reader:
        writer.save(TaskSnapshot(task, TaskStatus.SCHEDULED, T0, 0, 1, 0, None))
        reader.load_all()  # decodes the row once (its count: 1)
        assert reader.changes() == []  # the first read of the feed gives nothing
        writer.save(TaskSnapshot(task, TaskStatus.SCHEDULED, T0 + 60, 0, 3, 0, None))
        (change,) = reader.changes()
        assert change.snapshot is not None
        read = change.snapshot.task.schedule
        found = read.schedule if isinstance(read, extensions.ExceptOn) else read
        assert isinstance(found, Window) and found.runs_counted("w") == 3


# --- a schedule of one's own that answers the run's finish ------------------------------


@dataclass(frozen=True)
class BackToBack:
    """Again as soon as it finishes, written as a user might: the finish itself.  On a
    real clock a run takes time, so each answer is after the slot; where runs take no
    time (a FakeClock, the simulation) it is the slot again."""

    def first_run(self, now: float) -> float:
        return now

    def next_run(self, record: Any, now: float) -> float:
        return float(record.finished)


def stalled(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not after the slot" in r.getMessage()]


def test_a_schedule_answering_its_runs_finish_moves_a_stepped_scheduler_on_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Before: due again at T0 after every run, for ever; advance(0) raised
    # SettleTimeoutError after its timeout.
    from lldsched.checks import FINEST
    from lldsched.testing import Stepper

    with Stepper(Scheduler(clock=FakeClock(T0)), timeout=5) as steps:
        task = steps.scheduler.schedule("poll", jobs.noop, BackToBack(), id="poll")
        steps.advance(0)
        assert [record.started for record in task.history] == [T0]
        assert task.next_run_at == T0 + FINEST
        steps.advance(FINEST)
        assert len(task.history) == 2
    (said,) = stalled(caplog)  # once, not once a run
    assert said.startswith("task poll 'poll': BackToBack().next_run answered ")
    assert doc_url("docs/EXTENDING.md#a-schedule-of-your-own") in said


def test_two_schedulers_each_warn_of_their_own_task_of_the_same_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Before: the limit was the process's, per task id: the second scheduler's "poll"
    # (and the simulation's) fell in the first one's window and said nothing (a test
    # silenced a notebook).
    from lldsched.checks import FINEST
    from lldsched.testing import Stepper

    with (
        Stepper(Scheduler(clock=FakeClock(T0)), timeout=5) as first,
        Stepper(Scheduler(clock=FakeClock(T0)), timeout=5) as second,
    ):
        tasks = [
            steps.scheduler.schedule("poll", jobs.noop, BackToBack(), id="poll")
            for steps in (first, second)
        ]
        for step in (0.0, FINEST, FINEST):  # three runs each, in turn
            first.advance(step)
            second.advance(step)
        assert [len(task.history) for task in tasks] == [3, 3]
    simulation = Simulation(start=T0)
    simulation.schedule("poll", BackToBack(), id="poll")
    simulation.run_for(3 * FINEST)
    assert len(simulation.records()) > 1
    said = stalled(caplog)  # once per runtime: not once a run, nor once in all
    assert len(said) == 3, said
    assert all(line.startswith("task poll 'poll': BackToBack().next_run") for line in said)


def test_a_schedule_answering_its_runs_finish_moves_a_simulation_on() -> None:
    # Before: the simulation stayed at T0, one run after another.
    simulation = Simulation(start=T0)
    simulation.schedule("poll", BackToBack())
    for _ in range(10):
        simulation.step()
    started = [record.started for record in simulation.records()]
    assert len(started) >= 3 and started == sorted(set(started)), started


def test_a_draining_shutdown_ends_a_schedule_answering_its_runs_finish() -> None:
    # Before: the drain reran it until its timeout, and shutdown() returned False.
    scheduler = Scheduler(clock=FakeClock(T0))
    scheduler.start()
    task = scheduler.schedule("poll", jobs.noop, BackToBack())
    assert scheduler.shutdown(drain=True, timeout=5.0) is True
    assert [record.started for record in task.history] == [T0]


# --- a schedule of one's own that answers what is not an instant ------------------------


@dataclass(frozen=True)
class Answers:
    """A schedule of one's own that answers ``first`` first, then ``then``."""

    first: Any
    then: Any = None

    def first_run(self, now: float) -> Any:
        return self.first

    def next_run(self, record: Any, now: float) -> Any:
        return self.then


NOT_INSTANTS = [
    float("nan"),
    float("inf"),
    -float("inf"),
    1e300,
    "soon",
    datetime(2026, 1, 5, tzinfo=UTC),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("answer", NOT_INSTANTS, ids=repr)
def test_a_first_run_that_is_not_an_instant_is_refused_and_nothing_registered_is_lost(
    kind: str, answer: object
) -> None:
    """Before: NaN, ``inf`` and ``1e300`` were registered as due then; a str or a datetime
    raised TypeError out of the heap, left the task registered, and every later
    registration of the runtime raised TypeError too (the heap compared it)."""
    driven = Driven(kind)
    try:
        kept = driven.add("kept", FixedRate(60), id="kept")
        with pytest.raises(ScheduleError) as caught:
            driven.add("odd", Answers(answer), id="odd")
        message = str(caught.value)
        assert message.startswith(f"task 'odd': {Answers(answer)!r}.first_run(")
        assert f"answered {answer!r}" in message
        assert doc_url("docs/EXTENDING.md#a-schedule-of-your-own") in message
        assert [task.id for task in driven.runtime.tasks()] == ["kept"]
        with pytest.raises(ScheduleError, match="answered"):  # reschedule: the same rule
            driven.runtime.reschedule("kept", Answers(answer))
        driven.run_until(T0)
        assert kept.schedule == FixedRate(60) and kept.next_run_at == T0 + 60
        later = driven.add("later", FixedRate(60), id="later")
        driven.run_until(T0 + 60)
        assert [len(task.history) for task in (kept, later)] == [2, 2]
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_first_run_answering_an_int_is_an_instant(kind: str) -> None:
    driven = Driven(kind)
    try:
        task = driven.add("int", Answers(int(T0) + 10))
        assert task.next_run_at == int(T0) + 10
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_next_run_answering_nan_fails_its_task_saying_so(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the task was due at NaN: the simulation ran it at every step, out of the
    heap's order, and a stepped scheduler's next due instant was NaN."""
    driven = Driven(kind)
    try:
        task = driven.add("odd", Answers(T0, float("nan")), id="odd")
        other = driven.add("other", FixedRate(60), id="other")
        driven.run_until(T0 + 120)
        assert task.status is TaskStatus.FAILED and len(task.history) == 1
        assert len(other.history) == 3
        (said,) = [r for r in caplog.records if "next_run" in r.getMessage()]
        assert said.exc_info is not None and "answered nan" in str(said.exc_info[1])
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("answer", ["soon", datetime(2026, 1, 6, 9)], ids=repr)
def test_a_next_run_answering_no_number_fails_its_task_naming_the_answer(
    kind: str, answer: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: a ``str`` or a (naive) ``datetime`` from ``next_run`` failed the task with
    ``TypeError: '>' not supported between instances of 'datetime.datetime' and
    'float'``, the library's own comparison, naming neither the answer nor the rule."""
    driven = Driven(kind)
    try:
        task = driven.add("odd", Answers(T0, answer), id="odd")
        driven.run_until(T0 + 60)
        assert task.status is TaskStatus.FAILED and len(task.history) == 1
        (said,) = [r for r in caplog.records if "next_run" in r.getMessage()]
        assert said.exc_info is not None
        raised = str(said.exc_info[1])
        assert f"answered {answer!r}, not an instant" in raised, raised
        assert doc_url("docs/EXTENDING.md#a-schedule-of-your-own") in raised
        assert task.last_error is not None and f"answered {answer!r}" in task.last_error
        assert task.last_error.startswith(f"ScheduleError: {Answers(T0, answer)!r}.next_run(")
        if isinstance(answer, datetime):  # the way out, for the likeliest slip
            assert "(a datetime: answer its .timestamp(), epoch seconds)" in raised
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("answer", ["soon", datetime(2026, 1, 6, 9)], ids=repr)
def test_jittered_names_what_the_schedule_it_wraps_answered(kind: str, answer: object) -> None:
    """Before: ``Jittered`` added its delay to the wrapped schedule's answer, and a
    ``str`` or a ``datetime`` raised ``TypeError: can only concatenate str (not "float")
    to str`` (or ``unsupported operand type(s) for /``) at registration and after a run,
    from its own arithmetic."""
    driven = Driven(kind)
    try:
        with pytest.raises(ScheduleError) as caught:
            driven.add("odd", Jittered(Answers(answer), 5, seed=1), id="odd")
        assert f"{Answers(answer)!r}.first_run(" in str(caught.value)
        assert f"answered {answer!r}, not an instant" in str(caught.value)
        assert [task.id for task in driven.runtime.tasks()] == []
        task = driven.add("later", Jittered(Answers(T0, answer), 5, seed=1), id="later")
        driven.run_until(T0 + 60)
        assert task.status is TaskStatus.FAILED and len(task.history) == 1
        assert task.last_error is not None
        assert f"{Answers(T0, answer)!r}.next_run(" in task.last_error
        assert f"answered {answer!r}, not an instant" in task.last_error
        assert not task.last_error.startswith("ScheduleError: ScheduleError")  # said once
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "wrap",
    [lambda s: s, lambda s: Window(s, max_runs=100), lambda s: Jittered(s, 5, seed=1)],
    ids=["bare", "window", "jittered"],
)
def test_a_next_run_answering_an_instant_before_its_runs_slot_fails_its_task(
    kind: str, wrap: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: an answer an hour before the slot its run served (a day or a zone read
    wrong) was stepped a microsecond past the slot with a WARNING, as an answer of the
    slot itself is, and the task ran back to back for ever: a simulation's ``run_for``
    of a minute ran sixty million times, a real clock's scheduler without a pause."""
    driven = Driven(kind)
    try:
        schedule = wrap(Answers(T0, T0 - 3600))
        task = driven.add("odd", schedule, id="odd")
        other = driven.add("other", FixedRate(60), id="other")
        driven.run_until(T0 + 10)  # past Jittered's delay
        assert task.status is TaskStatus.FAILED and len(task.history) == 1
        assert task.next_run_at is None and driven.runtime.dead_letter() == ["odd"]
        assert not stalled(caplog)  # not stepped past
        (said,) = [r for r in caplog.records if "next_run raised" in r.getMessage()]
        assert said.exc_info is not None
        raised = str(said.exc_info[1])
        assert raised.startswith(f"{schedule!r}.next_run(")
        slot = task.history[0].slot
        assert f"before the slot {slot!r} (" in raised and "its run served" in raised
        assert doc_url("docs/EXTENDING.md#a-schedule-of-your-own") in raised
        assert task.last_error == f"ScheduleError: {raised}"
        driven.run_until(T0 + 120)
        assert len(other.history) == 3 and len(task.history) == 1
    finally:
        driven.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_next_run_answering_its_runs_slot_is_still_stepped_past(kind: str) -> None:
    """The line the test above draws: the slot itself (what "again as soon as it
    finishes" answers where runs take no time) is stepped past, not failed."""
    driven = Driven(kind)
    try:
        task = driven.add("poll", Answers(T0, T0), id="poll")
        driven.run_until(T0)
        assert task.status is TaskStatus.SCHEDULED and task.next_run_at is not None
        assert task.next_run_at > T0
    finally:
        driven.close()


# --- a retry policy of one's own that raises or answers no delay -------------------------


class BrokenPolicy(RetryPolicy):
    """A retry policy of one's own whose ``broken`` question (``"backoff"``,
    ``"allows_retry"`` or ``"fails_after"``) raises, or whose backoff answers
    ``delay``."""

    __slots__ = ()
    broken = ""
    delay: object = 1.0

    def allows_retry(self, attempt: int) -> bool:
        if self.broken == "allows_retry":
            raise RuntimeError("allows_retry is broken")
        return super().allows_retry(attempt)

    def backoff(self, attempt: int, rng: Any = None) -> float:
        if self.broken == "backoff":
            raise RuntimeError("backoff is broken")
        return self.delay  # type: ignore[return-value]

    def fails_after(self, given_up: int) -> bool:
        if self.broken == "fails_after":
            raise RuntimeError("fails_after is broken")
        return super().fails_after(given_up)


def broken_policy(broken: str = "", delay: object = 1.0) -> type[BrokenPolicy]:
    return type("Broken", (BrokenPolicy,), {"__slots__": (), "broken": broken, "delay": delay})


POLICY_FAULTS = [
    ("allows_retry", 1.0, "allows_retry is broken"),
    ("backoff", 1.0, "backoff is broken"),
    ("fails_after", 1.0, "fails_after is broken"),
    ("", float("nan"), "answered nan"),
    ("", float("inf"), "answered inf"),
    ("", -5.0, "answered -5.0"),
    ("", "soon", "answered 'soon'"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("broken", "delay", "said"), POLICY_FAULTS)
def test_a_retry_policy_of_ones_own_that_fails_fails_its_task_and_the_runtime_goes_on(
    kind: str, broken: str, delay: object, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: a policy that raised (or answered a str) left its task RUNNING for ever,
    logged as a bug of lldsched's own; the simulation's run() raised out of its middle.
    A NaN delay left the task RETRYING at NaN."""
    policy = broken_policy(broken, delay)(max_attempts=2, fail_after_given_up=1)
    driven = Driven(kind)
    try:
        runtime = driven.runtime
        if isinstance(runtime, Scheduler):
            task = runtime.schedule("flaky", jobs.broken, FixedRate(60), id="flaky", retry=policy)
        else:
            task = runtime.schedule("flaky", FixedRate(60), id="flaky", fails=1.0, retry=policy)
        other = driven.add("other", FixedRate(60), id="other")
        driven.run_until(T0 + 120)
        assert task.status is TaskStatus.FAILED, task
        assert not task.history[0].ok and task.last_error is not None
        assert task.last_error.startswith("ValidationError: the retry policy Broken("), task
        assert len(other.history) == 3
        (line,) = [r for r in caplog.records if "retry policy" in r.getMessage()]
        assert line.getMessage().startswith("task flaky 'flaky': the retry policy Broken(")
        assert line.exc_info is not None and said in str(line.exc_info[1])
    finally:
        driven.close()


def test_a_store_of_ones_own_imports_what_the_codec_named_from_it() -> None:
    """docs/EXTENDING.md named ``load_each`` and ``check_written`` in the codec, and
    docs/CLUSTER.md ``Unreadable``: a durable store of one's own that imports them from
    there gets the very objects the package's stores use, from the modules that own them
    since (``stores/unreadable.py``; the codec keeps ``check_written``)."""
    from lldsched.stores import codec, unreadable
    from lldsched.stores.codec import Unreadable, check_written, load_each

    assert load_each is unreadable.load_each
    assert Unreadable is unreadable.Unreadable
    assert check_written.__module__ == codec.__name__
    assert {"load_each", "Unreadable", "check_written"} <= set(codec.__all__)
