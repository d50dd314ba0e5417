"""What a person reads when a record, an event or a metrics snapshot is printed
(docs/decisions/frames-and-plots.md, "A record prints its instants as a person reads
them"): the instants as ISO 8601 in UTC to the millisecond, as a task's ``repr`` and the
log lines write them, every other field as its own ``repr``; the fields themselves stay
epoch seconds.  Before, each printed its instants as epoch seconds (``due=1796634000.0``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from lldsched import ExecutionRecord, FakeClock, FixedRate, Outcome, Scheduler, Simulation
from lldsched.core.task import Run
from lldsched.model import TaskEvent

START = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
T0 = START.timestamp()


def test_a_record_prints_its_four_instants_and_keeps_them_as_epoch_seconds() -> None:
    sim = Simulation(workers=1, start=START)
    sim.schedule("refresh", FixedRate(60), duration=1.5, id="refresh")
    sim.run_for(60)
    record = sim.task("refresh").history[0]
    assert repr(record) == (
        "ExecutionRecord(task_id='refresh', name='refresh', attempt=1, "
        "due=2026-12-07T09:00:00.000+00:00, slot=2026-12-07T09:00:00.000+00:00, worker=0, "
        "started=2026-12-07T09:00:00.000+00:00, finished=2026-12-07T09:00:01.500+00:00, "
        "ok=True, error=None, timed_out=False, misfire=None, result=None, token=None, "
        "node=None)"
    )
    assert (record.due, record.started, record.finished) == (T0, T0, T0 + 1.5)
    assert str(record) == repr(record)  # print() shows the same


def test_a_slot_decided_without_a_run_prints_its_outcome_beside_its_instants() -> None:
    record = ExecutionRecord.of(
        task_id="t", name="t", attempt=0, due=T0, slot=T0, worker=-1, started=T0 + 0.25,
        finished=T0 + 0.25, ok=False, error="skipped", misfire=Outcome.SKIPPED,
    )  # fmt: skip
    shown = repr(record)
    assert "started=2026-12-07T09:00:00.250+00:00, finished=2026-12-07T09:00:00.250+00:00" in shown
    assert "error='skipped', timed_out=False, misfire=Outcome.SKIPPED, " in shown


def test_an_instant_no_datetime_holds_prints_as_seconds() -> None:
    record = ExecutionRecord.of(
        task_id="t", name="t", attempt=1, due=1e20, slot=1e20, worker=0, started=1e20,
        finished=1e20, ok=True,
    )  # fmt: skip
    assert "due=1e+20 s, slot=1e+20 s" in repr(record)


def test_an_event_prints_its_instant_and_its_records() -> None:
    events: list[TaskEvent] = []
    sim = Simulation(workers=1, start=START)
    sim.add_listener(events.append)
    sim.schedule("refresh", FixedRate(60), duration=1.5, id="refresh")
    sim.run_for(60)
    finished = next(event for event in events if event.record is not None)
    shown = repr(finished)
    assert shown.startswith(
        "TaskEvent(task_id='refresh', name='refresh', previous=TaskStatus.RUNNING, "
        "status=TaskStatus.SCHEDULED, at=2026-12-07T09:00:01.500+00:00, "
        "record=ExecutionRecord(task_id='refresh', "
    ), shown
    assert "finished=2026-12-07T09:00:01.500+00:00" in shown
    assert finished.at == T0 + 1.5


def test_metrics_print_when_they_were_taken_and_when_the_timer_woke() -> None:
    sim = Simulation(workers=1, start=START)
    sim.schedule("refresh", FixedRate(60), duration=1.5)
    sim.run_for(120)
    metrics = sim.metrics()
    shown = repr(metrics)
    assert shown.startswith(
        "Metrics(at=2026-12-07T09:02:00.000+00:00, state='running', timer_alive=True, "
        "timer_woke=2026-12-07T09:02:00.000+00:00, workers=1, "
    ), shown
    assert ", lag=0.0, " in shown  # a duration stays seconds
    assert metrics.at == T0 + 120


def test_metrics_print_their_outcome_counts_by_the_names_that_give_them() -> None:
    """``metrics().outcomes`` printed ``<Outcome.OK: 'ok'>: 3, ...``, the enum's own
    form, where every other field reads as typed; now each key as ``TaskStatus``'s do."""
    sim = Simulation(workers=1, start=START)
    sim.schedule("refresh", FixedRate(60), duration=1.5)
    sim.run_for(120)
    shown = repr(sim.metrics())
    assert (
        ", outcomes={Outcome.OK: 2, Outcome.FAILED: 0, Outcome.TIMED_OUT: 0, "
        "Outcome.GIVEN_UP: 0, Outcome.MISSED: 0, Outcome.COALESCED: 0, Outcome.SKIPPED: 0, "
        "Outcome.BLOCKED: 0, Outcome.CANCELLED: 0}, dropped_events=0, "
    ) in shown, shown
    assert "<" not in shown
    assert str(Outcome.OK) == f"{Outcome.OK}" == "ok"  # its text stays its string


def test_a_scheduler_not_started_prints_its_timer_woke_as_none() -> None:
    scheduler = Scheduler(clock=FakeClock(START))
    try:
        shown = repr(scheduler.metrics())
    finally:
        assert scheduler.shutdown()
    assert shown.startswith(
        "Metrics(at=2026-12-07T09:00:00.000+00:00, state='new', timer_alive=False, "
        "timer_woke=None, "
    ), shown


def test_a_run_a_log_line_names_prints_its_due_instant() -> None:
    scheduler = Scheduler(clock=FakeClock(START))
    try:
        task = scheduler.schedule("refresh", print, FixedRate(60), id="refresh")
        run = Run(
            task=task, attempt=1, due=T0, slot=T0, worker=0, context=None, action=None,
            options=task._options, name="refresh",
        )  # fmt: skip
        assert repr(run) == (
            "<Run of <ScheduledTask refresh 'refresh' scheduled "
            "next_run_at=2026-12-07T09:00:00.000+00:00 attempt=0> attempt=1 "
            "due=2026-12-07T09:00:00.000+00:00>"
        )
    finally:
        assert scheduler.shutdown()
