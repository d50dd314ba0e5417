"""Bad arguments raise the package's errors, with the bad value, and lose nothing registered."""

from __future__ import annotations

import functools
import inspect
import re
from datetime import timedelta
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedRate,
    LldschedError,
    OneTime,
    RetryPolicy,
    ScheduleError,
    Scheduler,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.core.schedulearg import SCHEDULE_TYPES


def noop() -> None:
    return None


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: FixedRate(-60), ScheduleError, "got -60"),
        (lambda: FixedRate(0), ScheduleError, "got 0"),
        (lambda: RetryPolicy(max_attempts=0), ValidationError, "got 0"),
    ],
)
def test_bad_values_fail_when_the_object_is_built(build: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        build()


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("job", "not callable", FixedRate(1)), {}, "action must be callable, got 'not callable'"),
        (("job", None, FixedRate(1)), {}, "action must be callable, got None"),
        (("", noop, FixedRate(1)), {}, "task name must be a non-empty string, got ''"),
        (("job", noop, 60), {}, "schedule must provide first_run\\(\\) and next_run\\(\\), got 60"),
        (("job", noop, FixedRate(1)), {"priority": 7}, "priority must be a Priority .*got 7"),
        (("job", noop, FixedRate(1)), {"timeout": -1}, "timeout must be seconds > 0, got -1"),
        (("job", noop, FixedRate(1)), {"timeout": float("inf")}, "timeout must be .*got inf"),
        (("job", noop, FixedRate(1)), {"retry": 3}, "retry must be a RetryPolicy, got 3"),
        (("job", noop, FixedRate(1)), {"args": 3}, "args must be a tuple or a list, got 3"),
        (
            ("job", noop, FixedRate(1)),
            {"args": "abc"},  # args=("abc"), the comma forgotten: a str, not a tuple of one
            re.escape("args must be a tuple or a list, got 'abc' (one argument: args=('abc',))"),
        ),
        (("job", noop, FixedRate(1)), {"kwargs": {1: 2}}, "kwargs must map str"),
    ],
)
def test_bad_registrations_raise_with_the_value_and_leave_registered_tasks_untouched(
    clock: FakeClock, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    scheduler = Scheduler(clock=clock)
    kept = scheduler.schedule("kept", noop, FixedRate(60))
    before = (kept.status, kept.next_run_at, kept.generation, scheduler.queue_stats())
    with pytest.raises(ValidationError, match=message):
        scheduler.schedule(*args, **kwargs)
    assert scheduler.tasks() == [kept]
    assert (kept.status, kept.next_run_at, kept.generation, scheduler.queue_stats()) == before
    assert scheduler.shutdown()


@pytest.mark.parametrize("seconds", [60, 60.0, timedelta(minutes=1)])
def test_a_number_of_seconds_given_as_the_schedule_is_told_which_schedule_to_write(
    clock: FakeClock, seconds: Any
) -> None:
    """``schedule("job", f, 60)``: the learner meant every 60 s, or once in 60 s."""
    scheduler = Scheduler(clock=clock)
    with pytest.raises(ValidationError) as raised:
        scheduler.schedule("job", noop, seconds)
    message = str(raised.value)
    assert f"got {seconds!r}" in message
    assert "FixedRate(60)" in message and "OneTime(delay=60)" in message
    assert scheduler.shutdown()


class TextWithScheduleMethods(str):
    """Cron text that also has a schedule's two methods."""

    def first_run(self, now: float) -> float:
        return now

    def next_run(self, record: object, now: float) -> float:
        return now


def test_text_with_a_schedules_methods_is_read_as_cron_text_every_time(clock: FakeClock) -> None:
    """``validated()`` takes a type it has seen as a schedule without asking whether it is
    text: a type of text must never be remembered (core/schedulearg.py reads text first)."""
    scheduler = Scheduler(clock=clock)
    for name in ("first", "again"):
        task = scheduler.schedule(name, noop, TextWithScheduleMethods("*/5 * * * *"))
        assert type(task.schedule) is CronSchedule
        assert task.schedule.expr == "*/5 * * * *"
    assert TextWithScheduleMethods not in SCHEDULE_TYPES
    assert scheduler.shutdown()


def test_unknown_ids_raise_task_not_found_with_the_id(clock: FakeClock) -> None:
    scheduler = Scheduler(clock=clock)
    kept = scheduler.schedule("kept", noop, OneTime(delay=5))
    for verb in (scheduler.cancel, scheduler.pause, scheduler.resume, scheduler.redrive,
                 scheduler.task, scheduler.remove):  # fmt: skip
        with pytest.raises(TaskNotFoundError, match="'task-404'"):
            verb("task-404")
    assert kept.status is TaskStatus.SCHEDULED and scheduler.pending() == [kept]
    assert scheduler.shutdown()


def test_bad_scheduler_settings_are_rejected() -> None:
    with pytest.raises(ValidationError, match="workers must be an int >= 1, got 0"):
        Scheduler(workers=0)
    with pytest.raises(ValidationError, match="hand-off capacity must be an int >= 1, got -1"):
        Scheduler(handoff=-1)
    with pytest.raises(ValidationError, match="history_limit must be an int >= 0 or None, got -1"):
        Scheduler(history_limit=-1)
    with pytest.raises(ValidationError, match="listener backlog must be an int >= 1, got 0"):
        Scheduler(listener_backlog=0)
    with pytest.raises(ValidationError, match="on_event"):
        Scheduler(listeners=[42])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match=r"store must be a TaskStore .*got 'tasks\.db'"):
        Scheduler(store="tasks.db")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"clock must be a Clock .*got 0\.0"):
        Scheduler(clock=0.0)  # type: ignore[arg-type]


def test_every_error_derives_from_the_package_base_error() -> None:
    for error in (ValidationError, ScheduleError, TaskNotFoundError):
        assert issubclass(error, LldschedError)


def needs_one(value: int) -> int:
    return value


def needs_key(*, key: str) -> str:
    return key


def by_position(value: int, /) -> int:
    return value


def by_position_with_options(value: int, /, **options: Any) -> int:
    return value


def takes_ctx(value: int, ctx: Any) -> int:
    return value


class Greeter:
    def greet(self, who: str) -> str:
        return who


def supplies_db(function: Any) -> Any:
    """A decorator that passes the first argument itself: the wrapper takes none."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function("db", *args, **kwargs)

    return wrapper


@supplies_db
def reads(db: str) -> str:
    return db


@pytest.mark.parametrize(
    ("action", "kwargs", "message"),
    [
        (needs_one, {}, "task 'job': action needs_one\\(value\\) cannot be called with "
         "args=\\(\\): missing a required argument: 'value'"),
        (needs_one, {"args": (1, 2)}, "args=\\(1, 2\\): too many positional arguments"),
        (needs_one, {"kwargs": {"valu": 1}}, "kwargs={'valu': 1}: missing a required argument"),
        # One wording on every Python (Python 3.11's bind said "missing a required
        # argument: 'key'", 3.11 and 3.12's "'value' parameter is positional only, but
        # was passed as a keyword"), and 3.13.0's bind took by_position_with_options(
        # value=1), which the call refuses: value=1 goes to **options.
        (needs_key, {}, "missing a required keyword-only argument: 'key'"),
        (by_position, {"kwargs": {"value": 1}},
         "got some positional-only arguments passed as keyword arguments: 'value'"),
        (by_position_with_options, {"kwargs": {"value": 1}},
         "kwargs={'value': 1}: missing a required argument: 'value'"),
        (takes_ctx, {}, "action takes_ctx\\(value, ctx\\) .*'value'"),
        (takes_ctx, {"args": (1,), "kwargs": {"ctx": 2}}, "kwargs name 'ctx', which the scheduler"),
        (Greeter().greet, {}, "action Greeter.greet\\(who\\) .*'who'"),
        (functools.partial(needs_one, 1), {"args": (2,)}, "too many positional arguments"),
        ("math:factorial", {"isolation": "process"}, "action factorial\\(n, /\\) .*'n'"),
    ],
)  # fmt: skip
def test_an_action_that_cannot_take_its_arguments_is_refused_at_registration(
    clock: FakeClock, action: Any, kwargs: dict[str, Any], message: str
) -> None:
    """Not a TypeError in every attempt until the dead letter: refused, naming the
    action, the arguments and what does not fit; what was registered is untouched."""
    scheduler = Scheduler(clock=clock)
    kept = scheduler.schedule("kept", needs_one, FixedRate(60), id="kept", args=(1,))
    with pytest.raises(ValidationError, match=message):
        scheduler.schedule("job", action, FixedRate(60), **kwargs)
    with pytest.raises(ValidationError, match=message):  # replacing it checks the same
        scheduler.schedule("job", action, FixedRate(60), id="kept", replace_existing=True, **kwargs)
    assert scheduler.tasks() == [kept] and kept.action is needs_one and kept.args == (1,)
    assert scheduler.shutdown()


@pytest.mark.parametrize(
    ("action", "kwargs"),
    [
        (needs_one, {"args": (1,)}),
        (needs_one, {"kwargs": {"value": 1}}),
        (needs_key, {"kwargs": {"key": "k"}}),
        (takes_ctx, {"args": (1,)}),
        (Greeter().greet, {"args": ("you",)}),
        (functools.partial(needs_one, 1), {}),
        (reads, {}),  # judged by the wrapper's own (*args, **kwargs), not reads(db)
        (print, {"args": ("a", "b")}),
        ("math:factorial", {"isolation": "process", "args": [3]}),
    ],
)
def test_an_action_that_takes_its_arguments_is_registered(
    clock: FakeClock, action: Any, kwargs: dict[str, Any]
) -> None:
    scheduler = Scheduler(clock=clock)
    task = scheduler.schedule("job", action, FixedRate(60), **kwargs)
    assert scheduler.tasks() == [task]
    assert scheduler.shutdown()


def declares_signature(function: Any) -> Any:
    """A decorator whose wrappers (one code object) each carry their function's signature."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    wrapper.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return wrapper


@declares_signature
def declared_one(value: int) -> int:
    return value


@declares_signature
def declared_none() -> None:
    return None


def test_wrappers_sharing_code_are_judged_each_by_its_own_signature(clock: FakeClock) -> None:
    scheduler = Scheduler(clock=clock)
    scheduler.schedule("one", declared_one, FixedRate(60), args=(1,))
    scheduler.schedule("none", declared_none, FixedRate(60))  # not declared_one's (value)
    with pytest.raises(ValidationError, match="declared_none\\(\\) cannot be called with args"):
        scheduler.schedule("none", declared_none, FixedRate(60), args=(1,))
    assert [task.name for task in scheduler.tasks()] == ["one", "none"]
    assert scheduler.shutdown()


def test_a_definition_another_process_registered_is_followed_without_judging_its_call(
    clock: FakeClock,
) -> None:
    """A shared store's change is the other process's registration, judged there (its
    code may differ from ours during a rolling deploy): following it does not refuse it."""
    from lldsched.coordination import Change
    from lldsched.core.follow import follow

    scheduler = Scheduler(clock=clock)
    task = scheduler.schedule("job", needs_one, FixedRate(60), id="job", args=(1,))
    core = scheduler._core
    changed = task.definition._replace(args=(), schedule=FixedRate(120))  # needs_one()
    snapshot = core.snapshot(task)._replace(task=changed)
    assert follow(core, Change("job", 2, snapshot), records_of=lambda _: []) is task
    assert task.schedule == FixedRate(120) and task.args == ()
    assert scheduler.shutdown()


@pytest.mark.parametrize("runtime", ["Scheduler", "Simulation"])
@pytest.mark.parametrize(
    ("given", "shown", "advice"),
    [
        ("postgresql://app:s3cret@db/app", "'postgresql://app:***@db/app'", "PostgresTaskStore"),
        ("host=db password=s3cret dbname=app", "'host=db password=*** dbname=app'", "dsn"),
        # A misspelt key's value is the password all the same (was shown).
        ("host=db pasword=s3cret dbname=app", "'host=db pasword=*** dbname=app'", "dsn"),
        ("postgresql://app@db/app?passwd=s3cret", "'postgresql://app@db/app?passwd=***'", "dsn"),
        ("/var/lib/app/tasks.db", "'/var/lib/app/tasks.db'", "SqliteTaskStore(path)"),
    ],
)
def test_a_store_given_as_its_path_or_dsn_says_what_to_open_and_hides_the_password(
    runtime: str, given: str, shown: str, advice: str
) -> None:
    """``Scheduler(store=os.environ["DATABASE_URL"])``: the refusal quoted the dsn whole,
    its password with it, into the traceback a service logs at start."""
    import lldsched

    with pytest.raises(ValidationError) as refused:
        getattr(lldsched, runtime)(store=given)
    message = str(refused.value)
    assert "s3cret" not in message
    assert f"store must be a TaskStore (save, delete and load_all methods), got {shown}" in message
    assert advice in message


def test_a_type_of_text_is_never_remembered_as_a_schedules() -> None:
    """``is_schedule`` answers for text with a schedule's methods as for any schedule, but
    does not remember its type: ``validated()`` takes a remembered type as a schedule's
    without asking whether it is text, and text is cron."""
    from lldsched.core.schedulearg import is_schedule

    assert is_schedule(TextWithScheduleMethods("*/5 * * * *"))
    assert TextWithScheduleMethods not in SCHEDULE_TYPES
