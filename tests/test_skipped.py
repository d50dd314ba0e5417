"""Every skip is a record: slots a fixed rate's SKIP overrun policy drops at run time (a
run that overran, or started late), and cron fires that passed while a run overran, are
recorded ``skipped`` like misfire decisions: views keep them as rows, never as runs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Outcome,
    Overlap,
    OverrunPolicy,
    Simulation,
    TaskStatus,
)
from lldsched.core.machine import MAX_SKIPPED
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.views.frames import ran, schedules_of, task_summary, to_frame, utilisation
from lldsched.views.report import summarize
from tests.conftest import T0, SchedulerFactory, settle
from tests.harness import Harness, RecordingStore


def noop() -> None:
    return None


def decided(records: object) -> list[tuple[Outcome, float, int, int]]:
    """(outcome, slot, attempt, worker) of each record that is no run."""
    return [
        (r.outcome, r.slot, r.attempt, r.worker)
        for r in records  # type: ignore[attr-defined]
        if not r.outcome.ran
    ]


def test_a_fixed_rate_run_that_overran_records_each_slot_it_skipped(clock: FakeClock) -> None:
    h = Harness(clock)
    t = clock.now()
    task = h.core.add("report", noop, FixedRate(60), priority=0)
    run = h.step(duration=150)
    assert run is not None and run.outcome is Outcome.OK
    assert task.next_run_at == t + 180
    assert decided(task.history) == [
        (Outcome.SKIPPED, t + 60, 0, -1),
        (Outcome.SKIPPED, t + 120, 0, -1),
    ]
    skipped = task.history[1]
    assert skipped.due == skipped.slot and skipped.started == skipped.finished == t + 150
    assert not skipped.ok and skipped.error is None and task.run_count == 1


def test_a_fixed_rate_run_that_started_late_records_the_slots_it_skipped(clock: FakeClock) -> None:
    h = Harness(clock)
    t = clock.now()
    task = h.core.add("tick", noop, FixedRate(60))
    entry = h.queue.pop_live()
    assert entry is not None
    clock.advance(130)  # waited 130 s for a worker
    run = h.core.begin(entry, worker=0)
    assert run is not None
    h.core.finish(run, clock.now(), clock.now() + 1, None)
    assert [r.slot - t for r in task.history if r.outcome is Outcome.SKIPPED] == [60, 120]
    assert task.next_run_at == t + 180


def test_an_on_time_run_records_nothing_more(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("tick", noop, FixedRate(60))
    for _ in range(3):
        h.step(duration=59)
    assert [r.outcome for r in task.history] == [Outcome.OK] * 3


def test_catch_up_and_fixed_delay_skip_nothing(clock: FakeClock) -> None:
    for schedule in (FixedRate(60, OverrunPolicy.CATCH_UP), FixedDelay(60)):
        h = Harness(clock)
        task = h.core.add("long", noop, schedule)
        h.step(duration=150)
        assert [r.outcome for r in task.history] == [Outcome.OK], schedule


def test_cron_fires_that_passed_while_a_run_overran_are_recorded_skipped(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("quarterly", noop, CronSchedule("*/15 * * * *"))
    first = task.next_run_at
    assert first is not None
    h.step(duration=40 * 60)  # 09:15 to 09:55: 09:30 and 09:45 passed
    assert [r.slot - first for r in task.history if r.outcome is Outcome.SKIPPED] == [900, 1800]
    assert task.next_run_at == first + 2700


def test_a_cron_run_that_lasts_exactly_its_gap_is_followed_at_once_as_a_rate_is() -> None:
    """A fire exactly at a run's finish has not been missed (docs/DECISIONS.md): in the
    simulation a minutely cron whose runs take a minute runs every minute, as
    ``FixedRate(60)`` does, and skips nothing (the rate starts at registration, the
    cron at its first fire strictly after it, a minute later)."""
    sim = Simulation(workers=2, start=T0)
    sim.schedule("rate", FixedRate(60), id="rate", duration=60)
    sim.schedule("cron", CronSchedule("* * * * *"), id="cron", duration=60)
    sim.run_for(600)
    summary = task_summary(to_frame(sim), schedules_of(sim))
    counts = summary[["runs", "overruns", "skipped"]]
    assert list(counts.loc["rate"]) == [10, 0, 0]
    assert list(counts.loc["cron"]) == [9, 0, 0]
    slots = {
        task: [r.slot - T0 for r in sim.records() if r.task_id == task] for task in ("rate", "cron")
    }
    assert slots["rate"] == [60.0 * k for k in range(10)]
    assert slots["cron"] == slots["rate"][1:]


def test_a_threaded_cron_run_that_ends_on_the_next_fire_runs_it_at_once(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore()
    scheduler = make_scheduler(workers=1, clock=clock, store=store)
    started: list[float] = []

    def a_minute() -> None:  # the first three runs take a minute, the next no time
        started.append(clock.now())
        if len(started) <= 3:
            clock.advance(60)

    task = scheduler.schedule("minutely", a_minute, CronSchedule("* * * * *"))
    first = task.next_run_at
    assert first is not None
    clock.set(first)
    settle(scheduler)
    assert [(r.outcome, r.slot - first) for r in store.records()] == [
        (Outcome.OK, 0.0), (Outcome.OK, 60.0), (Outcome.OK, 120.0), (Outcome.OK, 180.0),
    ]  # fmt: skip
    assert [t - first for t in started] == [0.0, 60.0, 120.0, 180.0]
    assert task.next_run_at == first + 240


def test_a_run_that_skipped_very_many_slots_records_a_bounded_number(clock: FakeClock) -> None:
    h = Harness(clock)
    t = clock.now()
    task = h.core.add("fast", noop, FixedRate(1))
    h.step(duration=5000)
    skipped = [r for r in task.history if r.outcome is Outcome.SKIPPED]
    assert len(skipped) == MAX_SKIPPED + 1
    assert [r.error for r in skipped[:MAX_SKIPPED]] == [None] * MAX_SKIPPED
    tail = skipped[-1]
    assert tail.slot == t + MAX_SKIPPED + 1
    assert tail.error == (
        "SkipCap: more than 10 slots passed unrun (a run of this task was still running) "
        "before the overlap policy (none: its runs never overlap) decided them at "
        "2026-01-05T10:23:20.000+00:00; the first 10 are recorded one by one, and this record "
        "stands for 4,989 slots, every later one, from 2026-01-05T09:00:11.000+00:00 up to before "
        "2026-01-05T10:23:20.000+00:00: none of them run; the task goes on at "
        "2026-01-05T10:23:20.000+00:00"
    )
    assert task.next_run_at == t + 5000


@pytest.mark.parametrize("slots", [MAX_SKIPPED - 1, MAX_SKIPPED])
def test_a_run_that_skipped_up_to_the_cap_records_each_slot_and_no_cap_record(
    clock: FakeClock, slots: int
) -> None:
    """Up to :data:`MAX_SKIPPED` slots are each recorded alone, that many included: the
    record standing for the rest comes only past it."""
    h = Harness(clock)
    t = clock.now()
    task = h.core.add("fast", noop, FixedRate(1))
    h.step(duration=slots + 0.5)  # slots 1 to ``slots`` come due while it runs
    assert [(r.outcome, r.slot - t, r.error) for r in task.history] == [
        (Outcome.OK, 0.0, None),
        *[(Outcome.SKIPPED, float(n), None) for n in range(1, slots + 1)],
    ]
    assert task.next_run_at == t + slots + 1


@pytest.mark.parametrize(
    ("overlap", "why", "fate", "until"),
    [
        (None, "a run of this task was still running", "none of them run", "10:23:20"),
        (
            Overlap.BUFFER_ONE,
            "a run of this task was still running",
            "coalesced into the one run the policy made (the slot after them)",
            "10:23:19",  # the latest slot that came due while it ran: its one run
        ),
        (
            Overlap.ALLOW,  # the slots a run that began late is late for
            "a run of this task for an earlier slot began late: it waited for a worker, or "
            "was resumed",
            "none of them run",
            "10:23:21",  # the slot queued behind it
        ),
    ],
)
def test_the_record_standing_for_the_skipped_slots_past_the_cap_says_what_happened(
    clock: FakeClock, overlap: Overlap | None, why: str, fate: str, until: str
) -> None:
    """What ``tasks show`` prints for it, as a misfire's cap record reads: that they passed
    unrun and why, which overlap policy decided them and when, the first of them (in UTC,
    not seconds since the epoch), what became of them and where the task goes on.
    Before: "SkipCap: more than 10 slots skipped; this record stands for the slots from
    1767603611.0 to before 1767608600.0"."""
    assert clock.now() == T0 == 1767603600.0  # 2026-01-05T09:00:00Z
    h = Harness(clock)
    max_instances = 1 if overlap is Overlap.ALLOW else None
    task = h.core.add("fast", noop, FixedRate(1), overlap=overlap, max_instances=max_instances)
    if overlap is Overlap.ALLOW:  # its first run begins 5,000 s late
        clock.advance(5000)
        h.begin()
    else:  # its first run ends 5,000 s late
        h.step(duration=5000)
    *listed, tail = [r for r in task.history if not r.outcome.ran]
    assert [r.slot for r in listed] == [T0 + n for n in range(1, MAX_SKIPPED + 1)]
    assert tail.slot == T0 + MAX_SKIPPED + 1 and tail.finished == T0 + 5000
    # the slots from the 11th to before the next run's: as many as the record states
    stood = {"10:23:19": "4,988", "10:23:20": "4,989", "10:23:21": "4,990"}[until]
    assert tail.error == (
        f"SkipCap: more than 10 slots passed unrun ({why}) before the overlap policy "
        f"({'none: its runs never overlap' if overlap is None else overlap.value}) decided "
        "them at 2026-01-05T10:23:20.000+00:00; the first 10 are recorded one by one, and "
        f"this record stands for {stood} slots, every later one, from "
        "2026-01-05T09:00:11.000+00:00 up to "
        f"before 2026-01-05T{until}.000+00:00: {fate}; the task goes on at "
        f"2026-01-05T{until}.000+00:00"
    )
    assert task.next_run_at == T0 + {"10:23:19": 4999, "10:23:20": 5000, "10:23:21": 5001}[until]


def test_a_run_cancelled_mid_run_leaves_no_skipped_slots(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("report", noop, FixedRate(60))
    run = h.begin()
    h.core.cancel(task.id)
    h.core.finish(run, clock.now(), clock.now() + 150, None)
    assert [r.outcome for r in task.history] == [Outcome.OK]


def test_listeners_hear_each_skipped_slot_after_the_run_and_the_store_keeps_them(
    clock: FakeClock,
) -> None:
    store = RecordingStore()
    h = Harness(clock, store=store)
    task = h.core.add("report", noop, FixedRate(60))
    h.step(duration=150)
    with_records = [e for e in h.events if e.record is not None]
    assert [(e.previous, e.status, e.record.outcome) for e in with_records] == [  # type: ignore[union-attr]
        (TaskStatus.RUNNING, TaskStatus.SCHEDULED, Outcome.OK),
        (TaskStatus.SCHEDULED, TaskStatus.SCHEDULED, Outcome.SKIPPED),
        (TaskStatus.SCHEDULED, TaskStatus.SCHEDULED, Outcome.SKIPPED),
    ]
    assert [r.outcome for r in store.records(task.id)] == [
        Outcome.OK, Outcome.SKIPPED, Outcome.SKIPPED,
    ]  # fmt: skip


class BatchingStore(InMemoryTaskStore):
    """Says each call: a ``save`` (with or without a record) or a ``save_all``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[Outcome]]] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        self.calls.append(("save", [] if record is None else [record.outcome]))

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        for record in records:
            super().save(snapshot, record)
        self.calls.append(("save_all", [r.outcome for r in records]))


def test_a_run_and_the_slots_it_skipped_reach_the_store_in_one_call(clock: FakeClock) -> None:
    """A kill between two writes must not keep the run's record without its skipped
    slots' (tests/test_crash_harness.py): the core hands them over together, and a run
    that skipped nothing is the one ``save`` it always was."""
    store = BatchingStore()
    h = Harness(clock, store=store)
    h.core.add("report", noop, FixedRate(60))
    h.step(duration=150)  # skips two slots
    h.step(duration=1)  # skips none
    assert store.calls == [
        ("save", []),  # the registration
        ("save", []),  # the first run begins
        ("save_all", [Outcome.OK, Outcome.SKIPPED, Outcome.SKIPPED]),
        ("save", []),  # the second begins
        ("save", [Outcome.OK]),
    ]


def test_on_record_is_given_every_record_in_the_order_made(clock: FakeClock) -> None:
    made: list[object] = []
    h = Harness(clock, on_record=made.append)
    task = h.core.add("report", noop, FixedRate(60))
    h.step(duration=150)
    assert made == list(task.history)


# -- views: rows, never runs -----------------------------------------------------------------


def test_views_keep_skipped_slots_as_rows_and_never_as_runs(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    log = EventLog()
    store = InMemoryTaskStore()
    scheduler = make_scheduler(workers=1, clock=clock, store=store, listeners=[log])

    def long_report() -> None:
        clock.advance(150)

    task = scheduler.schedule("report", long_report, FixedRate(60))
    settle(scheduler)
    records = store.records()
    frame = to_frame(records)
    assert list(frame["outcome"]) == ["ok", "skipped", "skipped"]
    assert len(ran(frame)) == 1
    summary = task_summary(frame)
    row = summary.loc[task.id]
    assert (row["runs"], row["ok"], row["skipped"], row["missed"], row["given_up"]) == (
        1,
        1,
        2,
        0,
        0,
    )
    assert utilisation(frame, workers=1).to_numpy().sum() > 0
    assert [r.outcome for r in log.runs("report")] == [Outcome.OK]
    assert len(log.events) > len(log.runs())  # the skipped slots were heard
    (line,) = summarize(records)
    assert line.runs == 1


def test_utilisation_is_the_same_with_or_without_the_skipped_rows(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("report", noop, FixedRate(60))
    h.step(duration=150)
    frame = to_frame(task.history)
    assert utilisation(frame, workers=1).equals(utilisation(ran(frame), workers=1))


def test_the_simulation_keeps_skipped_slots_among_its_records_in_order() -> None:
    sim = Simulation(workers=1, start=0.0)
    sim.schedule("report", FixedRate(60), duration=150)
    sim.run(200)
    assert [(r.outcome, r.slot, r.finished) for r in sim.records()] == [
        (Outcome.OK, 0.0, 150.0), (Outcome.SKIPPED, 60.0, 150.0), (Outcome.SKIPPED, 120.0, 150.0),
    ]  # fmt: skip
