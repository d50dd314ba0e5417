"""docs/MIGRATING.md's side-by-side claims, checked against APScheduler 3 on the same clock.

APScheduler 3 runs on a fake clock (:mod:`tests.aps3`: :func:`aps_on` points its
``datetime.now`` at :class:`~tests.aps3.FakeNow`, and a
:class:`~tests.aps3.ManualScheduler` is stepped from one due instant to the next, its
jobs run inline). lldsched's side is a
:class:`~lldsched.sim.Simulation` on the same instants, or, for the verbs (run now,
the job events, a start after registration, a date job's id used again, the listings,
a resume, a ``modify_job``), a :class:`~lldsched.Scheduler` on a
:class:`~lldsched.FakeClock`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import apscheduler.events
import apscheduler.triggers.base
import pytest
from apscheduler.events import (
    EVENT_ALL,
    EVENT_JOB_EXECUTED,
    JobEvent,
)

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    RetryPolicy,
    Schedule,
    Scheduler,
    Simulation,
    TaskEvent,
    TaskStatus,
    ValidationError,
    Window,
)
from lldsched.testing import Stepper
from tests.aps3 import FakeNow, ManualScheduler, aps_scheduler, noop, patch_now

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def aps_on(monkeypatch: pytest.MonkeyPatch) -> type[FakeNow]:
    return patch_now(monkeypatch)


def noop_with(source: str) -> None:
    pass


# -- a week across the spring change, in Europe/Berlin ------------------------------


def test_a_week_across_dst_fires_on_the_same_instants_but_where_the_doc_says(
    aps_on: type[FakeNow],
) -> None:
    start = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)
    until = start + timedelta(days=7)
    jobs: dict[str, tuple[dict[str, Any], Schedule]] = {
        "interval": ({"trigger": "interval", "minutes": 45}, FixedRate(2700, start_delay=2700)),
        "weekdays": (
            {"trigger": "cron", "day_of_week": "mon-fri", "hour": 2, "minute": 30},
            CronSchedule("30 2 * * mon-fri"),
        ),
        "daily": ({"trigger": "cron", "hour": 2, "minute": 30}, CronSchedule("30 2 * * *")),
        "month-end": ({"trigger": "cron", "day": "last", "hour": 23}, CronSchedule("0 23 L * *")),
        "hourly": ({"trigger": "cron", "minute": 0}, CronSchedule("0 * * * *")),
        "once": (
            {"trigger": "date", "run_date": start + timedelta(hours=5)},
            OneTime(at=start + timedelta(hours=5)),
        ),
        "bounded": (
            {"trigger": "interval", "hours": 6, "end_date": start + timedelta(days=2)},
            Window(FixedRate(6 * 3600, start_delay=6 * 3600), end=start + timedelta(days=2)),
        ),
    }
    heard: list[tuple[str, str, float]] = []
    aps = aps_scheduler(start.astimezone(BERLIN), heard)
    sim = Simulation(start=start, tz="Europe/Berlin")
    for job_id, (fields, schedule) in jobs.items():
        aps.add_job(noop, id=job_id, **fields)
        sim.schedule(job_id, schedule, id=job_id, duration=0)
    aps.run_until(until)
    sim.run(until)

    def wall(instants: set[float]) -> list[str]:
        return sorted(datetime.fromtimestamp(t, BERLIN).strftime("%d %H:%M %Z") for t in instants)

    differences = {}
    for job_id in jobs:
        theirs = {t for kind, job, t in heard if job == job_id and kind == "run"}
        ours = {r.due for r in sim.records() if r.task_id == job_id and r.outcome.ran}
        assert theirs and ours, job_id
        if theirs != ours:
            differences[job_id] = (wall(theirs - ours), wall(ours - theirs))
    assert not [kind for kind, _, _ in heard if kind != "run"]
    assert differences == {
        # a wall time in the gap: APScheduler adds the jump, cron takes the gap's end
        "daily": (["29 03:30 CEST"], ["29 03:00 CEST"]),
        # APScheduler's first fire may be the instant the job is added (13:00 CET)
        "hourly": (["27 13:00 CET"], []),
    }


# -- misfires: the table of MIGRATING.md ----------------------------------------------

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DOWN = START + timedelta(minutes=5)
BACK = START + timedelta(hours=1, minutes=5, seconds=30)  # six slots passed, the last 330 s ago


def aps_after_downtime(**options: Any) -> list[tuple[str, int]]:
    """A job every 10 min, its process down from 09:05 to 10:05:30: what APScheduler 3
    decides when it comes back (an in-memory job store kept across, as a durable one)."""
    heard: list[tuple[str, str, float]] = []
    scheduler = aps_scheduler(START, heard)
    scheduler.add_job(noop, "interval", minutes=10, id="job", **options)
    scheduler.run_until(DOWN)
    heard.clear()
    FakeNow.instant = BACK
    scheduler._process_jobs()
    return [(kind, int(t - START.timestamp()) // 60) for kind, _, t in heard]


def restarted(policy: MisfirePolicy, end: datetime = BACK) -> list[ExecutionRecord]:
    """The job every 10 min in lldsched, down from 09:05 to 10:05:30, registered again
    (``replace_existing=True``) at the restart, then run until ``end``."""
    store = InMemoryTaskStore()
    for now, until in ((START, DOWN), (BACK, end)):
        sim = Simulation(start=now, store=store)
        sim.schedule(
            "job",
            FixedRate(600, start_delay=600),
            id="job",
            replace_existing=True,
            misfire=policy,
        )
        sim.run(until)
    return sim.records()


def ours_after_downtime(policy: MisfirePolicy) -> list[tuple[str, int]]:
    return [(r.outcome.value, int(r.slot - START.timestamp()) // 60) for r in restarted(policy)]


SLOTS = [10, 20, 30, 40, 50, 60]


@pytest.mark.parametrize(
    ("aps_options", "theirs", "policy", "ours"),
    [
        (
            {},  # coalesce=True, misfire_grace_time=1: the defaults
            [("missed", 60)],
            MisfirePolicy(Misfire.SKIP, grace=1),
            [("missed", slot) for slot in SLOTS],
        ),
        (
            {"misfire_grace_time": None},
            [("run", 60)],
            MisfirePolicy(Misfire.RUN_ONCE),
            [("coalesced", slot) for slot in SLOTS[:-1]] + [("ok", 60)],
        ),
        (
            {"coalesce": False, "misfire_grace_time": None},
            [("run", slot) for slot in SLOTS],
            MisfirePolicy(Misfire.RUN_ALL),
            [("ok", slot) for slot in SLOTS],
        ),
        (
            {"coalesce": False, "misfire_grace_time": 900},
            [("missed", slot) for slot in SLOTS[:-1]] + [("run", 60)],
            MisfirePolicy(Misfire.RUN_ALL, max_catch_up=1),
            [("missed", slot) for slot in SLOTS[:-1]] + [("ok", 60)],
        ),
        (
            {"coalesce": True, "misfire_grace_time": 900},
            [("run", 60)],
            MisfirePolicy(Misfire.RUN_ONCE),
            [("coalesced", slot) for slot in SLOTS[:-1]] + [("ok", 60)],
        ),
    ],
)
def test_misfire_options_map_as_the_table_says(
    aps_on: type[FakeNow],
    aps_options: dict[str, Any],
    theirs: list[tuple[str, int]],
    policy: MisfirePolicy,
    ours: list[tuple[str, int]],
) -> None:
    assert aps_after_downtime(**aps_options) == theirs
    assert ours_after_downtime(policy) == ours
    ran = [slot for kind, slot in theirs if kind == "run"]
    assert ran == [slot for outcome, slot in ours if outcome == "ok"]  # the same slots run


def test_the_default_policies_differ_after_downtime(aps_on: type[FakeNow]) -> None:
    """APScheduler's defaults drop the run a downtime cost; lldsched's run it once."""
    assert aps_after_downtime() == [("missed", 60)]
    assert ours_after_downtime(MisfirePolicy())[-1] == ("ok", 60)


LATER = BACK + timedelta(minutes=30)


@pytest.mark.parametrize(
    "aps_options",
    [{}, {"misfire_grace_time": None}, {"coalesce": False, "misfire_grace_time": None}],
)
def test_a_job_added_again_at_start_forgets_the_downtime_in_apscheduler_only(
    aps_on: type[FakeNow], aps_options: dict[str, Any]
) -> None:
    """The pattern for a durable store, ``id=`` and ``replace_existing=True`` at every
    start: APScheduler computes the job's next run time afresh, lldsched keeps the slot."""
    heard: list[tuple[str, str, float]] = []
    scheduler = aps_scheduler(START, heard)
    scheduler.add_job(noop, "interval", minutes=10, id="job", **aps_options)
    scheduler.run_until(DOWN)
    heard.clear()
    FakeNow.instant = BACK  # the restart, adding the job again
    scheduler.add_job(noop, "interval", minutes=10, id="job", replace_existing=True, **aps_options)
    scheduler.run_until(LATER)
    theirs = [(kind, t - START.timestamp()) for kind, _, t in heard]
    assert theirs == [("run", 4530.0), ("run", 5130.0), ("run", 5730.0)]  # 10:15:30, ...

    def ours(policy: MisfirePolicy) -> list[tuple[str, float]]:
        records = restarted(policy, end=LATER)
        return [(r.outcome.value, r.started - START.timestamp()) for r in records]

    # the default still runs the downtime's last slot, at the restart
    assert ("ok", BACK.timestamp() - START.timestamp()) in ours(MisfirePolicy())
    skipped = ours(MisfirePolicy(Misfire.SKIP, grace=1))
    assert [outcome for outcome, _ in skipped] == ["missed"] * 6 + ["ok"] * 3
    assert [at for outcome, at in skipped if outcome == "ok"] == [4200.0, 4800.0, 5400.0]


def test_run_now_on_a_paused_job_runs_and_resumes_it_in_apscheduler_only(
    aps_on: type[FakeNow],
) -> None:
    heard: list[tuple[str, str, float]] = []
    scheduler = aps_scheduler(START, heard)
    scheduler.add_job(noop, "interval", minutes=10, id="job")
    scheduler.pause_job("job")
    FakeNow.instant = START + timedelta(minutes=3)
    scheduler.modify_job("job", next_run_time=FakeNow.instant)  # "run now"
    scheduler._process_jobs()
    assert heard == [("run", "job", FakeNow.instant.timestamp())]
    assert scheduler.get_job("job").next_run_time is not None  # resumed
    with Scheduler(clock=FakeClock(START)) as ours:
        task = ours.schedule("job", noop, FixedRate(600, start_delay=600), id="job")
        ours.pause("job")
        assert ours.run_now("job") is False
        ours.wait_idle()
        assert (task.run_count, task.status) == (0, TaskStatus.PAUSED)


def test_apschedulers_job_events_have_the_listener_tables_tests(aps_on: type[FakeNow]) -> None:
    names = {
        value: name
        for name, value in vars(apscheduler.events).items()
        if name.startswith("EVENT_JOB_") and isinstance(value, int)
    }
    theirs: list[str] = []

    def listen(event: JobEvent) -> None:
        if event.code in names:  # the scheduler's own events have no counterpart
            theirs.append(names[event.code])

    FakeNow.instant = START
    aps = ManualScheduler(timezone=UTC)
    aps.add_listener(listen, EVENT_ALL)
    aps.start()
    aps.add_job(noop, "interval", minutes=10, id="job")
    aps.modify_job("job", name="renamed")
    aps.reschedule_job("job", trigger="interval", minutes=20)
    aps.pause_job("job")
    aps.resume_job("job")
    aps.remove_job("job")
    aps.add_job(noop, "date", run_date=START + timedelta(minutes=1), id="once")
    aps.run_until(START + timedelta(minutes=2))
    verbs = ["EVENT_JOB_ADDED"] + ["EVENT_JOB_MODIFIED"] * 4 + ["EVENT_JOB_REMOVED"]
    assert theirs[:6] == verbs
    # the one-off, in an order its executor decides: REMOVED, as no fire time is left
    one_off = ["EVENT_JOB_ADDED", "EVENT_JOB_EXECUTED", "EVENT_JOB_REMOVED", "EVENT_JOB_SUBMITTED"]
    assert sorted(theirs[6:]) == one_off

    def table(event: TaskEvent) -> str:  # docs/MIGRATING.md's listener table
        if event.previous is None:
            return "EVENT_JOB_ADDED"
        if event.record is not None:
            return "EVENT_JOB_EXECUTED" if event.record.ok else "EVENT_JOB_ERROR"
        if event.previous is event.status:
            return "EVENT_JOB_MODIFIED"
        return {
            TaskStatus.PAUSED: "EVENT_JOB_MODIFIED",  # pause_job
            TaskStatus.SCHEDULED: "EVENT_JOB_MODIFIED",  # resume_job
            TaskStatus.CANCELLED: "EVENT_JOB_REMOVED",
            TaskStatus.RUNNING: "EVENT_JOB_SUBMITTED",
        }[event.status]

    ours: list[str] = []
    clock = FakeClock(START)
    with Scheduler(clock=clock, listeners=[lambda event: ours.append(table(event))]) as lld:
        lld.schedule("job", noop, FixedRate(600, start_delay=600), id="job")
        lld.modify("job", timeout=30)
        lld.reschedule("job", FixedRate(1200, start_delay=1200))
        lld.pause("job")
        lld.resume("job")
        lld.remove("job")
        once = lld.schedule("once", noop, OneTime(delay=60), id="once")
        clock.advance(120)
        lld.wait_idle()
        lld.shutdown()  # every event delivered
    assert ours == [*verbs, "EVENT_JOB_ADDED", "EVENT_JOB_SUBMITTED", "EVENT_JOB_EXECUTED"]
    assert once.status is TaskStatus.SUCCEEDED  # kept: no REMOVED


def test_slots_passed_before_start_meet_the_misfire_policy_and_are_skipped_by_apscheduler(
    aps_on: type[FakeNow],
) -> None:
    """Registered at 09:00, started at 09:10:50: APScheduler computes the first fire time
    at ``start()``; lldsched's task was due since 09:05, and its misfire policy decides
    the slots that passed before ``start()`` as after downtime (SKIP: both ``missed``,
    the first run at 09:15, as APScheduler's)."""
    started = START + timedelta(seconds=650)
    heard: list[tuple[str, str, float]] = []
    FakeNow.instant = START
    aps = ManualScheduler(timezone=UTC)
    aps.add_listener(
        lambda event: heard.append(("run", event.job_id, event.scheduled_run_time.timestamp())),
        EVENT_JOB_EXECUTED,
    )
    aps.add_job(noop, "interval", minutes=5, id="job")
    FakeNow.instant = started
    aps.start()
    aps.run_until(START + timedelta(minutes=16))
    assert [t - START.timestamp() for _, _, t in heard] == [900.0]
    clock = FakeClock(START)
    ours = Scheduler(clock=clock)
    task = ours.schedule(
        "job", noop, FixedRate(300, start_delay=300), id="job", misfire=MisfirePolicy(Misfire.SKIP)
    )
    clock.advance(650)
    ours.start()
    ours.wait_idle()
    clock.advance(250)  # to 09:15
    ours.wait_idle()
    ours.shutdown()
    slots = [(r.outcome.value, r.slot - START.timestamp(), r.started) for r in task.history]
    assert slots == [
        ("missed", 300.0, started.timestamp()),
        ("missed", 600.0, started.timestamp()),
        ("ok", 900.0, started.timestamp() + 250),
    ]


def test_a_past_run_date_is_dropped_by_apscheduler_and_run_by_lldsched(
    aps_on: type[FakeNow],
) -> None:
    heard: list[tuple[str, str, float]] = []
    scheduler = aps_scheduler(START, heard)
    scheduler.add_job(noop, "date", run_date=START - timedelta(minutes=1), id="late")
    scheduler.run_until(START + timedelta(seconds=1))
    assert [kind for kind, _, _ in heard] == ["missed"]
    sim = Simulation(start=START)
    sim.schedule("late", OneTime(at=START - timedelta(minutes=1)), id="late")
    sim.run(START + timedelta(seconds=1))
    assert [(r.outcome.value, r.started) for r in sim.records()] == [("ok", START.timestamp())]


def test_an_interval_anchored_in_the_past_is_a_fixed_rate_started_on_its_grid(
    aps_on: type[FakeNow],
) -> None:
    anchor = datetime(2026, 1, 1, 0, 20, tzinfo=UTC)  # its grid passes 09:20, not 09:00
    heard: list[tuple[str, str, float]] = []
    scheduler = aps_scheduler(START, heard)
    scheduler.add_job(noop, "interval", minutes=90, start_date=anchor, id="grid")
    scheduler.run_until(START + timedelta(days=1))
    sim = Simulation(start=START)
    on_grid = (anchor.timestamp() - sim.now) % 5400  # as docs/MIGRATING.md computes it
    sim.schedule("grid", FixedRate(5400, start_delay=on_grid), id="grid")
    sim.run(START + timedelta(days=1))
    theirs = [t for kind, _, t in heard if kind == "run"]
    assert len(theirs) == 16 and theirs[0] == START.timestamp() + 1200
    assert [r.due for r in sim.records()] == theirs


def test_apschedulers_interval_jitter_drifts_and_jittered_keeps_the_grid(
    aps_on: type[FakeNow], monkeypatch: pytest.MonkeyPatch
) -> None:
    # each APScheduler delay drawn at its largest, so the drift is exact: 30 s a run
    monkeypatch.setattr(apscheduler.triggers.base.random, "uniform", lambda low, high: high)
    heard: list[tuple[str, str, float]] = []
    scheduler = aps_scheduler(START, heard)
    scheduler.add_job(noop, "interval", minutes=5, jitter=30, id="jittered")
    scheduler.run_until(START + timedelta(hours=1))
    theirs = [t - START.timestamp() for kind, _, t in heard if kind == "run"]
    assert theirs == [330.0 * n for n in range(1, 11)]  # the next fire counts from the delayed one
    sim = Simulation(start=START)
    sim.schedule("jittered", Jittered(FixedRate(300, start_delay=300), 30, seed=1), id="jittered")
    sim.run(START + timedelta(hours=1))
    ours = [r.started - START.timestamp() for r in sim.records()]
    assert len(ours) == 11 and all(0 <= at - 300 * n < 30 for n, at in enumerate(ours, 1))


# -- the verbs' differences the table names ---------------------------------------


def test_a_date_job_that_ran_frees_its_id_in_apscheduler_only(aps_on: type[FakeNow]) -> None:
    """APScheduler forgets a ``date`` job once it ran: its id takes a new job.  lldsched
    keeps the finished task under its id (until it retires): registering the id again is
    refused, naming ``remove``; ``replace_existing=True`` updates it and runs nothing."""
    heard: list[tuple[str, str, float]] = []
    aps = aps_scheduler(START, heard)
    aps.add_job(noop, "date", run_date=START + timedelta(minutes=1), id="remind")
    aps.run_until(START + timedelta(minutes=2))
    assert aps.get_job("remind") is None
    aps.add_job(noop, "date", run_date=START + timedelta(minutes=5), id="remind")
    aps.run_until(START + timedelta(minutes=6))
    assert [(kind, t - START.timestamp()) for kind, _, t in heard] == [
        ("run", 60.0),
        ("run", 300.0),
    ]
    clock = FakeClock(START)
    with Scheduler(clock=clock) as ours:
        first = ours.schedule("remind", noop, OneTime(delay=60), id="remind")
        clock.advance(120)
        ours.wait_idle()
        assert ours.tasks() == [first] and first.status is TaskStatus.SUCCEEDED
        later = OneTime(at=START + timedelta(minutes=5))
        with pytest.raises(ValidationError, match=re.escape("remove('remind') first")):
            ours.schedule("remind", noop, later, id="remind")
        assert ours.schedule("remind", noop, later, id="remind", replace_existing=True) is first
        clock.advance(240)
        ours.wait_idle()
        assert (first.status, first.run_count) == (TaskStatus.SUCCEEDED, 1)  # ran nothing
        ours.remove("remind")
        again = ours.schedule("remind", noop, OneTime(at=START + timedelta(minutes=7)), id="remind")
        clock.advance(60)
        ours.wait_idle()
        assert (again.status, again.run_count) == (TaskStatus.SUCCEEDED, 1)


def test_get_jobs_lists_by_next_run_time_tasks_by_registration_with_the_finished(
    aps_on: type[FakeNow],
) -> None:
    """``get_jobs()`` orders by next run time (a paused job last) and has no finished
    ``date`` job; ``tasks()`` is in registration order and keeps a finished task until
    it retires; ``pending()`` is what will run, in the order it will."""
    aps = aps_scheduler(START, [])
    ours = Scheduler(clock=FakeClock(START))
    for job_id, minutes, paused in (("remind", 1, False), ("late", 30, False),
                                    ("soon", 2, False), ("held", 20, True)):  # fmt: skip
        if job_id == "remind":
            aps.add_job(noop, "date", run_date=START + timedelta(minutes=1), id=job_id)
            ours.schedule(job_id, noop, OneTime(delay=60), id=job_id)
            continue
        aps.add_job(noop, "interval", minutes=minutes, id=job_id,
                    **({"next_run_time": None} if paused else {}))  # fmt: skip
        period = minutes * 60
        ours.schedule(job_id, noop, FixedRate(period, start_delay=period), id=job_id,
                      paused=paused)  # fmt: skip
    assert [job.id for job in aps.get_jobs()] == ["remind", "soon", "late", "held"]
    aps.run_until(START + timedelta(minutes=3))
    assert [job.id for job in aps.get_jobs()] == ["soon", "late", "held"]
    with Stepper(ours) as step:
        step.advance(180)
        assert [task.id for task in ours.tasks()] == ["remind", "late", "soon", "held"]
        assert ours.task("remind").status is TaskStatus.SUCCEEDED
        assert [task.id for task in ours.pending()] == ["soon", "late"]


def test_resuming_a_job_added_paused_runs_it_at_once_in_lldsched_only(
    aps_on: type[FakeNow],
) -> None:
    """Added paused (``next_run_time=None``, ``paused=True``) at 09:00 and resumed at
    09:25: APScheduler's next fire is the trigger's next one from then (09:30 on both
    the interval's grid and the cron), lldsched runs the slot it slept through at once
    (09:25), then a fixed rate re-anchors on it (09:35) and the cron goes on (09:30)."""
    heard: list[tuple[str, str, float]] = []
    aps = aps_scheduler(START, heard)
    aps.add_job(noop, "interval", minutes=10, id="interval", next_run_time=None)
    aps.add_job(noop, "cron", minute="*/10", id="cron", next_run_time=None)
    aps.run_until(START + timedelta(minutes=25))
    aps.resume_job("interval")
    aps.resume_job("cron")
    aps.run_until(START + timedelta(minutes=40))
    theirs = sorted((job_id, (t - START.timestamp()) / 60) for _, job_id, t in heard)
    assert theirs == [("cron", 30), ("cron", 40), ("interval", 30), ("interval", 40)]
    ours = Scheduler(clock=FakeClock(START))
    ours.schedule("interval", noop, FixedRate(600, start_delay=600), id="interval", paused=True)
    ours.schedule("cron", noop, "*/10 * * * *", id="cron", paused=True)
    with Stepper(ours) as step:
        step.advance(1500)
        ours.resume("interval")
        ours.resume("cron")
        step.advance(900)
        started = sorted((r.task_id, (r.started - START.timestamp()) / 60) for r in ours.records())
    assert started == [("cron", 25), ("cron", 30), ("cron", 40), ("interval", 25),
                       ("interval", 35)]  # fmt: skip


def test_modify_job_changes_what_it_names_replace_existing_takes_the_whole_definition(
    aps_on: type[FakeNow],
) -> None:
    """``modify_job(id, kwargs=...)`` keeps the job's other options; registering the
    task again with ``replace_existing=True`` gives it the definition passed, each option
    not passed at its default."""
    aps = aps_scheduler(START, [])
    aps.add_job(noop_with, "interval", minutes=5, id="sync", kwargs={"source": "erp"},
                max_instances=3, coalesce=False, misfire_grace_time=300)  # fmt: skip
    aps.modify_job("sync", kwargs={"source": "crm"})
    job = aps.get_job("sync")
    assert (job.kwargs, job.max_instances, job.coalesce, job.misfire_grace_time) == (
        {"source": "crm"}, 3, False, 300,
    )  # fmt: skip
    ours = Scheduler(clock=FakeClock(START))
    every_5_min = FixedRate(300, start_delay=300)
    options: dict[str, Any] = {
        "retry": RetryPolicy(max_attempts=1),
        "misfire": MisfirePolicy(Misfire.RUN_ALL, grace=300),
        "overlap": Overlap.ALLOW,
        "max_instances": 3,
    }
    task = ours.schedule("sync", noop_with, every_5_min, id="sync", kwargs={"source": "erp"},
                         **options)  # fmt: skip
    ours.schedule("sync", noop_with, every_5_min, id="sync", kwargs={"source": "crm"},
                  replace_existing=True)  # fmt: skip
    assert (task.kwargs, task.retry, task.misfire, task.overlap, task.max_instances) == (
        {"source": "crm"}, RetryPolicy(), None, None, None,
    )  # fmt: skip
    ours.schedule(
        "sync",
        noop_with,
        every_5_min,
        id="sync",
        kwargs={"source": "crm"},
        replace_existing=True,
        **options,
    )  # fmt: skip: the options again
    assert (task.retry, task.max_instances) == (options["retry"], 3)
    ours.shutdown()


def test_a_job_added_paused_is_one_event_in_both(
    aps_on: type[FakeNow],
) -> None:
    """``next_run_time=None`` sends ``EVENT_JOB_ADDED`` alone; ``paused=True`` sends
    the registration alone (``previous is None``), its status PAUSED, as the listener
    table says.  ``running`` says the same in both, before, during and after."""
    theirs: list[int] = []
    FakeNow.instant = START
    aps = ManualScheduler(timezone=UTC)
    aps.add_listener(lambda event: theirs.append(event.code), EVENT_ALL)
    assert aps.running is False
    aps.start()
    assert aps.running is True
    theirs.clear()
    aps.add_job(noop, "interval", minutes=10, id="held", next_run_time=None)
    assert theirs == [apscheduler.events.EVENT_JOB_ADDED]
    aps.shutdown()
    assert aps.running is False
    ours: list[TaskEvent] = []
    lld = Scheduler(clock=FakeClock(START), listeners=[ours.append])
    assert lld.running is False
    lld.start()
    assert lld.running is True
    lld.schedule("held", noop, FixedRate(600, start_delay=600), id="held", paused=True)
    lld.shutdown()  # every event delivered
    assert lld.running is False
    assert [(event.previous, event.status) for event in ours] == [(None, TaskStatus.PAUSED)]
