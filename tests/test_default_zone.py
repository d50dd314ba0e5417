"""A runtime's default zone (tz=) for cron that names none, and cron text as a schedule."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    InMemoryTaskStore,
    Jittered,
    ScheduledTask,
    ScheduleError,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    Window,
)
from tests import jobs
from tests.conftest import T0, SchedulerFactory
from tests.runtimes import KINDS

HOUR = 3600.0  # T0 is Monday 09:00 UTC, 10:00 in Berlin (UTC+1 in January)


@pytest.mark.parametrize("kind", KINDS)
def test_cron_text_and_zoneless_cron_read_in_the_default_zone_named_zones_stay(
    kind: str,
) -> None:
    runtime = _build(kind, tz="Europe/Berlin")
    text = _add(runtime, "text", "0 12 * * *")
    zoneless = _add(runtime, "zoneless", CronSchedule("0 12 * * *"))
    named = _add(runtime, "named", CronSchedule("0 12 * * *", tz="UTC"))
    assert runtime.tz == "Europe/Berlin"
    assert text.schedule == zoneless.schedule == CronSchedule("0 12 * * *", tz="Europe/Berlin")
    assert text.next_run_at == zoneless.next_run_at == T0 + 2 * HOUR  # 12:00 Berlin
    assert named.schedule == CronSchedule("0 12 * * *", tz="UTC")
    assert named.next_run_at == T0 + 3 * HOUR  # 12:00 UTC
    if isinstance(runtime, Scheduler):
        runtime.shutdown()


@pytest.mark.parametrize("kind", KINDS)
def test_zoneless_cron_inside_jittered_and_window_reads_in_the_default_zone_too(
    kind: str,
) -> None:
    """A decorator does not hide its cron from the default zone: registered bare or
    wrapped (nested too), "0 12 * * *" is 12:00 in Berlin; a named zone inside stays."""
    runtime = _build(kind, tz="Europe/Berlin")
    berlin = CronSchedule("0 12 * * *", tz="Europe/Berlin")
    window = _add(runtime, "window", Window(CronSchedule("0 12 * * *"), max_runs=2))
    nested = _add(
        runtime, "nested", Window(Jittered(CronSchedule("0 12 * * *"), 60, seed=3), max_runs=2)
    )
    named = _add(runtime, "named", Window(CronSchedule("0 12 * * *", tz="UTC"), max_runs=2))
    assert window.schedule == Window(berlin, max_runs=2)
    assert window.next_run_at == T0 + 2 * HOUR  # 12:00 Berlin, not 12:00 UTC
    assert nested.schedule == Window(Jittered(berlin, 60, seed=3), max_runs=2)
    assert nested.next_run_at is not None
    assert T0 + 2 * HOUR <= nested.next_run_at <= T0 + 2 * HOUR + 60
    assert named.next_run_at == T0 + 3 * HOUR  # 12:00 UTC, as named
    runtime.reschedule(named.id, Jittered(CronSchedule("0 12 * * *"), 60, seed=3))
    assert named.schedule == Jittered(berlin, 60, seed=3)
    if isinstance(runtime, Scheduler):
        runtime.shutdown()


def test_without_a_default_zone_cron_text_reads_in_utc(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler(clock=FakeClock(T0), start=False)
    task = scheduler.schedule("report", jobs.noop, "0 12 * * *")
    assert scheduler.tz == "UTC" and task.schedule == CronSchedule("0 12 * * *", tz="UTC")
    assert task.next_run_at == T0 + 3 * HOUR


def test_the_default_zone_may_be_a_zoneinfo(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler(start=False, tz=ZoneInfo("America/New_York"))
    assert scheduler.tz == "America/New_York"


@pytest.mark.parametrize("bad", ["Mars/Olympus", "", 5, "+01:00"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_default_zone_is_refused_at_construction_naming_it(kind: str, bad: Any) -> None:
    with pytest.raises(ScheduleError, match=re.escape(f"tz={bad!r}")):
        _build(kind, tz=bad)


@pytest.mark.parametrize("kind", KINDS)
def test_bad_cron_text_is_refused_naming_it_and_the_task_and_nothing_is_registered(
    kind: str,
) -> None:
    runtime = _build(kind)
    kept = _add(runtime, "kept", "*/5 * * * *")
    for text, says in [("0 25 * * *", "hour"), ("every day", "fields"), ("@reboot", "@reboot")]:
        with pytest.raises(
            ScheduleError, match=rf"task 'report': .*{re.escape(repr(text))}"
        ) as caught:
            _add(runtime, "report", text)
        assert says in str(caught.value)
    assert runtime.tasks() == [kept]
    if isinstance(runtime, Scheduler):
        runtime.shutdown()


def test_a_task_keeps_the_zone_it_was_registered_in_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store, tz="Europe/Berlin")
        scheduler.schedule("report", jobs.noop, "0 12 * * *", id="report")
        scheduler.shutdown()
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)  # default now UTC
        assert scheduler.task("report").schedule == CronSchedule("0 12 * * *", "Europe/Berlin")
        scheduler.shutdown()


def test_a_zoneless_cron_schedule_says_so_and_reads_in_utc_on_its_own() -> None:
    zoneless, named = CronSchedule("0 12 * * *"), CronSchedule("0 12 * * *", tz="UTC")
    assert (zoneless.names_zone, named.names_zone) == (False, True)
    assert zoneless == named and zoneless.next_after(T0) == T0 + 3 * HOUR
    assert zoneless.in_zone("Asia/Tokyo") == CronSchedule("0 12 * * *", tz="Asia/Tokyo")


def _build(kind: str, *, tz: Any = "UTC") -> Scheduler | Simulation:
    """A runtime at T0 (a threaded one is not started: registration needs no timer)."""
    if kind == "threaded":
        return Scheduler(workers=1, clock=FakeClock(T0), tz=tz)
    return Simulation(workers=1, start=T0, tz=tz)


def _add(runtime: Scheduler | Simulation, name: str, schedule: Any) -> ScheduledTask:
    if isinstance(runtime, Scheduler):
        return runtime.schedule(name, jobs.noop, schedule)
    return runtime.schedule(name, schedule)


def test_a_restart_registering_a_zoneless_cron_again_keeps_its_catch_up(tmp_path: Path) -> None:
    """Why cron equality ignores ``names_zone``: a durable store gives a schedule back
    naming its zone (the zone is resolved at registration and stored), so the service's
    start, registering the same zoneless text again, must find it equal, and keep the
    task's catch-up after downtime (an unequal schedule is a reschedule, which drops it)."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
        scheduler.schedule("report", jobs.noop, CronSchedule("0 12 * * *"), id="report")
        scheduler.shutdown()
    later = T0 + 48 * HOUR  # two noons missed: RUN_ONCE runs the latest at once
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, clock=FakeClock(later), store=store)
        restored = scheduler.task("report").schedule
        assert isinstance(restored, CronSchedule) and restored.names_zone  # as stored
        missed = T0 + 27 * HOUR  # the latest noon missed, the catch-up's slot
        assert scheduler.task("report").next_run_at == missed
        again = CronSchedule("0 12 * * *")
        assert not again.names_zone and again == restored
        task = scheduler.schedule("report", jobs.noop, again, id="report", replace_existing=True)
        assert task.next_run_at == missed  # unchanged (a reschedule: the next noon)
        scheduler.start()
        assert scheduler.wait_idle(timeout=5)
        assert [r.slot for r in task.history if r.ok] == [missed]  # the catch-up ran
        scheduler.shutdown()


def test_a_zoneless_cron_registered_in_utc_is_not_re_zoned_by_another_default() -> None:
    """Equal schedules may differ in ``names_zone`` because no scheduler reads the flag of
    a registered schedule: it is resolved into a zone as it is registered, and a store's
    schedule, even an ``InMemoryTaskStore``'s own object that still names none, is
    restored as it is under another default zone."""
    store = InMemoryTaskStore()
    first = Scheduler(workers=1, clock=FakeClock(T0), store=store)  # default UTC
    task = first.schedule("report", jobs.noop, CronSchedule("0 12 * * *"), id="report")
    explicit = CronSchedule("0 12 * * *", tz="UTC")
    first.schedule("report", jobs.noop, explicit, id="report", replace_existing=True)
    kept = task.schedule
    assert isinstance(kept, CronSchedule) and not kept.names_zone  # equal: the one kept
    assert first.task("report") is task
    first.shutdown()
    second = Scheduler(workers=1, clock=FakeClock(T0), store=store, tz="Asia/Tokyo")
    assert second.task("report").schedule == explicit  # still UTC: nothing re-zoned it
    assert second.task("report").next_run_at == T0 + 3 * HOUR  # 12:00 UTC
    second.shutdown()
