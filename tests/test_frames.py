"""Frames: typed columns from every kind of source, and the summaries built on them."""

from __future__ import annotations

import importlib
import math
import re
import sys
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Outcome,
    Overlap,
    Priority,
    RetryPolicy,
    Simulation,
    ValidationError,
    Window,
)
from lldsched.schedules.base import Schedule
from lldsched.sim.scenario import build_scenario
from lldsched.sim.simulation import MAX_WORKERS
from lldsched.views import utilisation as utilisation_module
from lldsched.views.frames import (
    COLUMNS,
    DTYPES,
    MOST_WORKERS,
    OUTCOMES,
    dependencies_of,
    mean_busy,
    ran,
    schedules_of,
    task_summary,
    to_frame,
    utilisation,
)
from lldsched.views.report import (
    TaskColumns,
    TaskSummary,
    format_summary,
    overran,
    overran_slot,
    percentile,
    summarize,
    summary_of,
)
from tests.conftest import T0, SchedulerFactory, settle
from tests.runtimes import KINDS, Driven
from tests.test_tables import edge_records

R = ExecutionRecord
ROOT = Path(__file__).resolve().parent.parent


def at(seconds: float) -> pd.Timestamp:
    return pd.Timestamp(T0 + seconds, unit="s", tz="UTC")


def td(seconds: float) -> pd.Timedelta:
    return pd.Timedelta(seconds, unit="s")


# Three attempts of "sync" (one fails, its retry succeeds, one times out) and one "ping".
RECORDS = [
    R("t1", "sync", 1, T0, T0, 0, T0 + 0.25, T0 + 10.5, False, "OSError: down"),
    R("t1", "sync", 2, T0 + 11.5, T0, 1, T0 + 11.5, T0 + 12.5, True),
    R("t2", "ping", 1, T0 + 60, T0 + 60, 0, T0 + 90, T0 + 91, True),
    R("t1", "sync", 1, T0 + 120, T0 + 120, 1, T0 + 120, T0 + 180, False, "timed out", True),
]


def test_a_frame_has_the_documented_columns_and_dtypes_in_order() -> None:
    frame = to_frame(RECORDS)
    assert tuple(frame.columns) == COLUMNS == (
        "task_id", "name", "attempt", "worker", "due", "slot", "start", "finish", "duration",
        "lateness", "ok", "error", "result", "timed_out", "outcome", "priority", "node",
    )  # fmt: skip
    assert frame.dtypes.to_dict() == DTYPES
    assert frame["node"].isna().all()  # records of a scheduler that shares nothing
    assert str(frame["due"].dtype) == "datetime64[us, UTC]"
    assert str(frame["lateness"].dtype) == "timedelta64[us]"
    assert str(frame["priority"].dtype) == "Int64"


def test_times_are_utc_aware_and_lateness_is_start_minus_due() -> None:
    frame = to_frame(RECORDS)
    assert frame["due"].tolist() == [at(0), at(11.5), at(60), at(120)]
    assert frame["slot"].tolist() == [at(0), at(0), at(60), at(120)]  # a retry keeps its slot
    assert frame["start"].tolist() == [at(0.25), at(11.5), at(90), at(120)]
    assert frame["finish"].iloc[0] == pd.Timestamp(datetime.fromtimestamp(T0 + 10.5, UTC))
    assert frame["lateness"].tolist() == [td(0.25), td(0), td(30), td(0)]
    assert frame["duration"].tolist() == [td(10.25), td(1), td(1), td(60)]
    assert (frame["start"] - frame["due"]).equals(frame["lateness"])


def test_outcome_ok_error_and_timed_out_come_from_the_records() -> None:
    frame = to_frame(RECORDS)
    assert frame["outcome"].tolist() == ["failed", "ok", "ok", "timed_out"]
    assert tuple(frame["outcome"].cat.categories) == OUTCOMES
    assert frame["ok"].tolist() == [False, True, True, False]
    assert frame["timed_out"].tolist() == [False, False, False, True]
    assert frame["error"].iloc[0] == "OSError: down" and frame["error"].isna().tolist()[1:3] == [
        True, True,
    ]  # fmt: skip
    assert frame[["task_id", "name", "attempt", "worker"]].values.tolist() == [
        ["t1", "sync", 1, 0], ["t1", "sync", 2, 1], ["t2", "ping", 1, 0], ["t1", "sync", 1, 1],
    ]  # fmt: skip


def test_sub_microsecond_float_noise_is_rounded_away() -> None:
    frame = to_frame([R("t", "t", 1, T0 + 0.1, T0 + 0.1, 0, T0 + 0.3, T0 + 0.7, True)])
    assert frame["lateness"].iloc[0] == pd.Timedelta(microseconds=200_000)
    assert frame["duration"].iloc[0] == pd.Timedelta(microseconds=400_000)


def test_an_empty_source_gives_an_empty_frame_with_the_same_typed_columns() -> None:
    empties: list[object] = [[], iter(()), Simulation(), InMemoryTaskStore()]
    for empty in empties:
        frame = to_frame(empty)
        assert len(frame) == 0
        assert tuple(frame.columns) == COLUMNS
        assert frame.dtypes.to_dict() == to_frame(RECORDS).dtypes.to_dict()


def test_records_alone_carry_no_priority_unless_it_is_given() -> None:
    assert to_frame(RECORDS)["priority"].isna().all()
    given = to_frame(RECORDS, priorities={"t1": Priority.HIGH})
    assert given["priority"].tolist() == [0, 0, pd.NA, 0]


def test_a_simulation_gives_every_attempt_with_its_task_priority() -> None:
    sim = Simulation(workers=2, start=T0)
    sim.schedule("hot", FixedRate(60), duration=5.0, priority=Priority.HIGH)
    sim.schedule("cold", FixedRate(60), duration=5.0, priority=Priority.LOW)
    sim.run_for(600)
    frame = to_frame(sim)
    assert len(frame) == len(sim.records()) == 20
    by_name = frame.groupby("name", observed=True)["priority"].unique()
    assert by_name["hot"].tolist() == [Priority.HIGH] and by_name["cold"].tolist() == [
        Priority.LOW,
    ]  # fmt: skip
    assert set(frame["worker"]) == {0, 1}


def test_a_store_gives_its_records_and_the_priorities_of_its_snapshots() -> None:
    store = InMemoryTaskStore()
    sim = Simulation(workers=1, start=T0, store=store)
    sim.schedule("low", FixedRate(30), duration=1.0, priority=Priority.LOW)
    sim.run_for(90)  # the run that starts at 90 s is still in flight
    frame = to_frame(store)
    assert len(frame) == len(store.records()) == 3
    assert frame["priority"].tolist() == [Priority.LOW] * 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_retired_task_keeps_its_priority_and_overruns_in_the_report(kind: str) -> None:
    """Both runtimes keep the records of tasks that retired (``retain_finished=0``: as
    each finishes); the report must still show their priority and count a retired
    recurring task's overruns.  On a ``Scheduler`` the retired rows read ``<NA>`` and 0
    overruns: it kept neither the priority nor the schedule (only the simulation did)."""
    driven = Driven(kind, retain_finished=0)
    try:
        runtime, clock = driven.runtime, driven.clock
        driven.add("hot", OneTime(T0 + 1), priority=Priority.HIGH, id="hot")
        driven.add("cold", OneTime(T0 + 2), priority=Priority.LOW, id="cold")
        driven.add("plain", OneTime(T0 + 3), id="plain")
        if isinstance(runtime, Simulation):
            runtime.schedule("slow", FixedRate(10), duration=15.0, id="slow",
                             priority=Priority.HIGH)  # fmt: skip
        else:  # each run takes 15 s of its clock: longer than the 10 s period
            runtime.schedule("slow", lambda: clock.advance(15), FixedRate(10), id="slow",
                             priority=Priority.HIGH)  # fmt: skip
        run_for(driven, 60)
        runtime.cancel("slow")
        run_for(driven, 30)  # its run in flight ends: it retires
        assert runtime.tasks() == []
        frame = to_frame(runtime)
        priorities = frame.groupby("task_id")["priority"].unique()
        assert {task: list(values) for task, values in priorities.items()} == {
            "hot": [Priority.HIGH], "cold": [Priority.LOW], "plain": [Priority.NORMAL],
            "slow": [Priority.HIGH],
        }  # fmt: skip
        summary = task_summary(frame, schedules_of(runtime))
        runs = [r for r in runtime.records() if r.task_id == "slow" and r.attempt == 1]
        assert len(runs) >= 2 and all(r.duration == 15 for r in runs)  # the 10 s period: overran
        assert summary.loc["slow", "runs"] == len(runs)
        assert summary.loc["slow", "overruns"] == len(runs)
        assert set(runtime.schedules()) == {"slow"}  # one-off tasks never overrun
    finally:
        driven.close()


def run_for(driven: Driven, seconds: float) -> None:
    """Move ``driven`` on by ``seconds``: a scheduler five seconds at a time, settled after
    each (its runs move its clock on too)."""
    runtime = driven.runtime
    if isinstance(runtime, Simulation):
        runtime.run_for(seconds)
        return
    end = driven.clock.now() + seconds
    while driven.clock.now() < end:
        driven.clock.advance(5)
        driven.settle()


def test_a_scheduler_keeps_the_priorities_of_the_retired_tasks_its_records_still_name(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """The retired tasks' shared history holds the last ``history_limit`` records: what
    the scheduler keeps of their priorities is bounded the same way (a service retiring
    HIGH one-off tasks all day must not grow), and covers every task that history names."""
    scheduler = make_scheduler(clock=clock, retain_finished=0, history_limit=3)
    for n in range(10):
        scheduler.schedule(f"hot-{n}", lambda: None, OneTime(delay=n), id=f"hot-{n}",
                           priority=Priority.HIGH)  # fmt: skip
    for _ in range(10):
        settle(scheduler)
        clock.advance(1)
    settle(scheduler)
    held = [record.task_id for record in scheduler.records()]
    assert held == ["hot-7", "hot-8", "hot-9"]
    assert scheduler.priorities() == dict.fromkeys(held, int(Priority.HIGH))
    assert to_frame(scheduler)["priority"].tolist() == [Priority.HIGH] * 3
    # Tasks that retire with no record add none to that history: they must not push
    # out the priorities of the tasks whose records it still holds.
    for n in range(5):
        task = scheduler.schedule(f"never-{n}", lambda: None, OneTime(delay=60),
                                  priority=Priority.LOW)  # fmt: skip
        assert scheduler.cancel(task.id)  # finished before it ran: it retires
    settle(scheduler)
    assert [record.task_id for record in scheduler.records()] == held
    assert to_frame(scheduler)["priority"].tolist() == [Priority.HIGH] * 3


def test_a_scheduler_gives_its_tasks_histories_in_the_order_they_finished(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock, workers=2)
    scheduler.schedule("first", lambda: None, OneTime(delay=0), priority=Priority.HIGH)
    scheduler.schedule("second", lambda: None, OneTime(delay=5))
    settle(scheduler)
    clock.advance(5)
    settle(scheduler)
    frame = to_frame(scheduler)
    assert frame["name"].tolist() == ["first", "second"]
    assert frame["priority"].tolist() == [Priority.HIGH, Priority.NORMAL]
    assert frame["outcome"].tolist() == ["ok", "ok"]
    assert frame["due"].tolist() == [at(0), at(5)]


def test_to_frame_rejects_what_is_not_a_source_of_records() -> None:
    for bad in (42, "records", [("t", 1)]):
        with pytest.raises(ValidationError, match="to_frame"):
            to_frame(bad)


def test_task_summary_matches_hand_computed_numbers() -> None:
    summary = task_summary(to_frame(RECORDS))
    assert summary.index.tolist() == ["t1", "t2"]
    sync = summary.loc["t1"]
    assert sync["name"] == "sync"
    assert (sync["runs"], sync["ok"], sync["failed"], sync["timed_out"], sync["retries"]) == (
        3, 1, 1, 1, 1,
    )  # fmt: skip
    # lateness 0.25, 0, 0 s -> sorted 0, 0, 0.25: nearest rank p50 is the 2nd, p95 the 3rd
    assert (sync["lateness_p50"], sync["lateness_p95"], sync["lateness_max"]) == (
        td(0), td(0.25), td(0.25),
    )  # fmt: skip
    # durations 10.25, 1, 60 s -> sorted 1, 10.25, 60
    assert (sync["duration_p50"], sync["duration_p95"], sync["duration_max"]) == (
        td(10.25), td(60), td(60),
    )  # fmt: skip
    ping = summary.loc["t2"]
    assert (ping["runs"], ping["ok"], ping["lateness_max"]) == (1, 1, td(30))
    assert summary["overruns"].tolist() == [0, 0]  # no schedules given


def test_overruns_count_first_attempts_longer_than_the_gap_to_the_next_slot() -> None:
    records = [
        R("r", "rate", 1, T0, T0, 0, T0, T0 + 30, True),
        R("r", "rate", 1, T0 + 60, T0 + 60, 0, T0 + 60, T0 + 150, True),  # 90 s > 60 s
        R("r", "rate", 2, T0 + 151, T0 + 60, 0, T0 + 151, T0 + 300, True),  # a retry: not counted
        R("r", "rate", 1, T0 + 300, T0 + 300, 0, T0 + 330, T0 + 380, True),  # late, not long
    ]
    summary = task_summary(to_frame(records), {"r": FixedRate(60)})
    assert summary.loc["r", "overruns"] == 1


def test_task_summary_agrees_with_the_command_line_summary() -> None:
    sim = build_scenario(workers=3, seed=2)
    sim.run_for(2 * 86400)
    schedules = schedules_of(sim)
    rows = {row.name: row for row in summarize(sim.records(), schedules)}
    summary = task_summary(to_frame(sim), schedules)
    assert summary["name"].tolist() == list(rows)
    for _, mine in summary.iterrows():
        theirs = rows[mine["name"]]
        counts = ("runs", "ok", "failed", "timed_out", "retries", "overruns")
        assert [mine[c] for c in counts] == [getattr(theirs, c) for c in counts]
        for column in ("lateness_p50", "lateness_p95", "lateness_max", "duration_p50",
                       "duration_max"):  # fmt: skip
            assert mine[column].total_seconds() == pytest.approx(getattr(theirs, column), abs=1e-6)


def test_a_renamed_task_is_summed_up_under_its_latest_name() -> None:
    # Renamed by a replace_existing registration: each record keeps the name its run had
    # (the audit trail), but the summaries' row named the task by
    # its first record, "export-v1", a name it no longer has; looked for by the name the
    # service now gives it, the task was nowhere.
    records = [
        R("a", "export-v1", 1, T0, T0, 0, T0, T0 + 5, True),
        R("b", "other", 1, T0 + 30, T0 + 30, 1, T0 + 30, T0 + 31, True),
        R("a", "export-v2", 1, T0 + 60, T0 + 60, 0, T0 + 60, T0 + 65, False, error="E: x"),
    ]
    summary = task_summary(to_frame(records))
    assert summary["name"].to_dict() == {"a": "export-v2", "b": "other"}
    assert summary.loc["a", "runs"] == 2 and summary.loc["a", "failed"] == 1
    assert [(line.name, line.runs) for line in summarize(records)] == [
        ("export-v2", 2), ("other", 1)
    ]  # fmt: skip


def test_runs_cancel_other_cut_short_are_counted_cancelled_not_failed_by_both_summaries() -> None:
    """Every 60 s, each run 150 s: each run is cut when the next slot comes due, which is
    the policy working, not a failure (it was counted failed)."""
    sim = Simulation(workers=3, start=T0)
    task = sim.schedule("cut", FixedRate(60), duration=150.0, overlap=Overlap.CANCEL_OTHER)
    sim.schedule("flaky", FixedRate(60), duration=5.0, fails=1.0, retry=RetryPolicy.never())
    sim.schedule(  # cut at 60 s, over its 30 s timeout by then: its outcome says cancelled
        "cut-late", FixedRate(60), duration=150.0, overlap=Overlap.CANCEL_OTHER, timeout=30
    )
    sim.run_for(600)
    outcomes = [r.outcome for r in sim.records() if r.task_id == task.id]
    assert outcomes.count(Outcome.CANCELLED) == 10 and Outcome.FAILED not in outcomes
    summary = task_summary(to_frame(sim))
    lines = {line.name: line for line in summarize(sim.records())}
    counts = ("runs", "ok", "failed", "timed_out", "cancelled")
    assert [summary.loc[task.id, c] for c in counts] == [10, 0, 0, 0, 10]
    assert [getattr(lines["cut"], c) for c in counts] == [10, 0, 0, 0, 10]
    assert [getattr(lines["flaky"], c) for c in counts] == [10, 0, 10, 0, 0]
    assert [getattr(lines["cut-late"], c) for c in counts] == [10, 0, 0, 0, 10]
    assert "cancelled" in format_summary(list(lines.values())).splitlines()[0].split()


def test_a_dependent_released_late_is_judged_from_its_slot_by_both_summaries() -> None:
    """``load`` (every 10 min, 500 s) waits 200 s for ``extract``: its 00:10 slot runs from
    00:13:20, due when released.  500 s is within the 600 s from its slot to the next: no
    overrun.  task_summary judged it from its due time (400 s to 00:20) and counted one,
    so the two summaries disagreed; the frame now has each attempt's slot."""
    sim = Simulation(workers=2, start=T0)
    extract = sim.schedule("extract", CronSchedule("*/10 * * * *"), duration=200.0)
    load = sim.schedule(
        "load", CronSchedule("*/10 * * * *"), duration=500.0, depends_on=[extract.id]
    )
    sim.run_for(3600)
    released = next(r for r in load.history if r.outcome is Outcome.OK)
    assert (released.slot - T0, released.due - T0, released.duration) == (600, 800, 500)
    schedules = schedules_of(sim)
    frame = to_frame(sim)
    assert frame["slot"].tolist() == to_frame(sim.records())["slot"].tolist()
    assert frame.loc[frame["due"] == at(800), "slot"].tolist() == [at(600)]
    assert {line.name: line.overruns for line in summarize(sim.records(), schedules)} == {
        "extract": 0, "load": 0,
    }  # fmt: skip
    assert task_summary(frame, schedules)["overruns"].tolist() == [0, 0]


def test_task_summary_of_an_empty_frame_is_empty_and_typed() -> None:
    summary = task_summary(to_frame([]))
    assert len(summary) == 0
    assert summary["runs"].dtype == np.dtype("int64")
    assert summary["lateness_p95"].dtype == np.dtype("timedelta64[us]")


def test_task_summary_names_the_columns_a_frame_lacks() -> None:
    # Before: a frame cut to task_id and outcome passed the check and raised KeyError: 'ok'.
    frame = to_frame(RECORDS)
    with pytest.raises(ValidationError, match=r"it has no \['name', 'attempt', 'ok'"):
        task_summary(frame[["task_id", "outcome"]])
    cut = frame.drop(columns=["slot"])
    with pytest.raises(ValidationError, match=r"it has no \['slot'\] column"):
        task_summary(cut, {"a": FixedRate(60)})  # the overruns read it
    assert task_summary(cut).equals(task_summary(frame))


def test_schedules_of_and_dependencies_of_refuse_what_is_no_runtime_naming_it() -> None:
    # Before: AttributeError ('NoneType' object has no attribute 'schedules').
    for read in (schedules_of, dependencies_of):
        for source in (None, RECORDS):
            with pytest.raises(ValidationError, match=r"\(\) takes a runtime .*, got "):
                read(source)  # type: ignore[arg-type]


def test_format_summary_refuses_what_are_not_summary_rows_naming_it() -> None:
    # Before: format_summary(None) raised TypeError ('NoneType' object is not iterable),
    # and records or a frame's rows AttributeError ('ExecutionRecord' object has no
    # attribute 'runs'): a summary of the records was meant.
    record = RECORDS[0]
    for given, named in [
        (None, "got None"),
        ([record], f"got an item {record!r}"),
        (task_summary(to_frame(RECORDS)), "got an item 'name'"),
    ]:
        with pytest.raises(ValidationError, match=re.escape(named)) as refused:
            format_summary(given)  # type: ignore[arg-type]
        assert "takes TaskSummary rows, as summarize() gives" in str(refused.value)
    assert format_summary(iter(summarize(RECORDS))) == format_summary(summarize(RECORDS))


def test_utilisation_splits_a_run_across_interval_boundaries() -> None:
    hour = 3600
    records = [  # T0 is 09:00 UTC
        R("a", "a", 1, T0, T0, 0, T0 + hour / 2, T0 + 1.5 * hour, True),  # 09:30-10:30
        R("b", "b", 1, T0, T0, 1, T0, T0 + hour / 4, True),  # 09:00-09:15
    ]
    table = utilisation(to_frame(records), workers=3, freq="1h")
    assert table.index.tolist() == [at(0), at(hour)]
    assert str(table.index.dtype) == "datetime64[us, UTC]"
    assert table.columns.tolist() == [0, 1, 2]
    assert table.to_numpy().tolist() == [[0.5, 0.25, 0.0], [0.5, 0.0, 0.0]]


def test_mean_busy_is_the_busy_share_of_utilisations_intervals() -> None:
    hour = 3600
    records = [  # 09:30-10:30 on worker 0, 09:00-09:15 on worker 1, two hours of three lanes
        R("a", "a", 1, T0, T0, 0, T0 + hour / 2, T0 + 1.5 * hour, True),
        R("b", "b", 1, T0, T0, 1, T0, T0 + hour / 4, True),
    ]
    frame = to_frame(records)
    assert mean_busy(frame, 3, "1h") == pytest.approx(1.25 / 6)
    assert mean_busy(frame, 3, "1h") == pytest.approx(utilisation(frame, 3, "1h").to_numpy().mean())
    # A run on worker 0 within its run there adds nothing: the worker was busy already.
    inside = R("c", "c", 1, T0, T0, 0, T0 + hour, T0 + 1.25 * hour, True)  # 10:00-10:15
    assert mean_busy(to_frame([*records, inside]), 3, "1h") == pytest.approx(1.25 / 6)
    assert math.isnan(mean_busy(to_frame([]), 3, "1h"))
    with pytest.raises(ValidationError, match=r"runs on workers \[1\] are not among"):
        mean_busy(frame, [0], "1h")
    with pytest.raises(ValidationError, match="freq must be positive"):
        mean_busy(frame, 3, "0s")


def test_a_plain_functions_awaitable_counts_on_the_worker_that_called_it() -> None:
    # utilisation's docstring said a thread worker never reads above 1.0 ("Threads never
    # do"): a plain function that returns an awaitable frees its worker at once, but its
    # run, the awaitable's time on the loop, is recorded on that worker, beside the
    # worker's next run; the loop's lane (worker 1) reads idle.
    async def work() -> None:
        return None

    def hands_off() -> Coroutine[Any, Any, None]:
        return work()

    sim = Simulation(workers=1, start=datetime(2026, 1, 5, tzinfo=UTC), seed=1)
    sim.schedule("hand-off", FixedRate(60), duration=50, action=hands_off)
    sim.schedule("plain", FixedRate(60), duration=50)
    sim.run_for(3600)
    frame = to_frame(sim)
    assert set(ran(frame)["worker"]) == {0}
    table = utilisation(frame, [0, 1], "1h")
    assert table[0].iloc[0] > 1.0 and table[1].iloc[0] == 0.0
    assert "returns an awaitable" in " ".join((utilisation.__doc__ or "").split())


def test_a_run_in_flight_at_the_end_is_idle_time_in_every_interval_it_spanned() -> None:
    # SIMULATION.md said a run in flight when run stops leaves "the last interval's
    # utilisation" low: a five-hour run three hours in is no record yet, and its worker
    # reads idle in all three hours.
    start = datetime(2026, 1, 5, tzinfo=UTC)
    sim = Simulation(workers=2, start=start, seed=1)
    sim.schedule("long", OneTime(at=start), duration=5 * 3600)
    sim.schedule("tick", FixedRate(600), duration=120)
    sim.run_for(3 * 3600)
    assert utilisation(to_frame(sim), 2, "1h")[0].tolist() == [0.0, 0.0, 0.0]
    sim.run_for(2 * 3600)  # past its finish, it is a record: busy throughout
    assert utilisation(to_frame(sim), 2, "1h")[0].tolist() == [1.0] * 5
    said = " ".join((ROOT / "docs" / "SIMULATION.md").read_text().split())
    assert "reads a run in flight at the end as idle time in every interval it had" in said


def test_utilisation_aligns_intervals_on_the_clock_and_covers_long_runs() -> None:
    records = [R("a", "a", 1, T0, T0, 0, T0 + 600, T0 + 600 + 3 * 900, True)]  # 09:10-09:55
    table = utilisation(to_frame(records), workers=[0], freq="15min")
    assert table.index[0] == at(0)
    assert table[0].tolist() == pytest.approx([1 / 3, 1.0, 1.0, 2 / 3])


def test_utilisation_ends_with_the_interval_a_run_finishes_in() -> None:
    hour = 3600
    records = [R("a", "a", 1, T0, T0, 0, T0, T0 + hour, True)]  # 09:00-10:00: one hour
    table = utilisation(to_frame(records), workers=1, freq="1h")
    assert table.index.tolist() == [at(0)]  # not an idle 10:00 after it
    assert table[0].tolist() == [1.0]


def test_utilisation_takes_as_many_intervals_as_its_limit_and_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(utilisation_module, "MOST_INTERVALS", 10)
    ten = [R("a", "a", 1, T0, T0, 0, T0, T0 + 10, True)]  # ten 1 s intervals
    assert len(utilisation(to_frame(ten), workers=1, freq="1s")) == 10
    eleven = [R("a", "a", 1, T0, T0, 0, T0, T0 + 11, True)]
    apart = [R("a", "a", 1, T0, T0, 0, T0, T0 + 1, True),  # two runs, two pieces,
             R("b", "b", 1, T0, T0, 0, T0 + 10, T0 + 11, True)]  # eleven intervals  # fmt: skip
    for records in (eleven, apart):
        with pytest.raises(ValidationError, match=r"more than 10 intervals \(11\)"):
            utilisation(to_frame(records), workers=1, freq="1s")


def test_utilisation_refuses_an_interval_of_no_length() -> None:
    for freq in ("0s", "-1h"):
        with pytest.raises(ValidationError, match=f"freq must be positive, got {freq!r}"):
            utilisation(to_frame(RECORDS), workers=2, freq=freq)


def test_utilisation_rejects_unknown_workers_and_calendar_frequencies() -> None:
    frame = to_frame(RECORDS)
    with pytest.raises(ValidationError, match=r"workers \[1\]"):
        utilisation(frame, workers=[0])
    with pytest.raises(ValidationError, match="'1M'"):
        utilisation(frame, workers=2, freq="1M")
    # A count is a column each: 10**9 built a billion lanes, 10**30 raised OverflowError.
    for count in (MOST_WORKERS + 1, 10**9, 10**30):
        with pytest.raises(ValidationError, match=f"from 1 to 100,000 .* got {count}$"):
            utilisation(frame, workers=count)
    assert MOST_WORKERS == MAX_WORKERS  # the simulation's, which a view may not import
    with pytest.raises(ValidationError, match=r"freq='1us' cuts these runs into more than"):
        utilisation(frame, workers=2, freq="1us")  # hundreds of millions: gigabytes
    for freq in (None, "nat"):  # NaT: int(NaN) raised a bare ValueError
        with pytest.raises(ValidationError, match=f"got {freq!r}"):
            utilisation(frame, workers=2, freq=freq)  # type: ignore[arg-type]
    empty = utilisation(to_frame([]), workers=2)
    assert empty.empty and empty.columns.tolist() == [0, 1]


@pytest.mark.parametrize("workers", [0, -2, [], (), [0, 0], [0, 1, 1], [-1], [1, -1]])
def test_utilisation_refuses_a_count_below_one_and_indexes_none_twice_or_negative(
    workers: object,
) -> None:
    """Before: ``workers=[0, 0]`` gave two columns named 0 whose figures differed (the
    lane's busy time in one, nothing in the other), ``[0, 1, 1]`` five columns, and a
    count of 0 on no runs a frame without a column; ``workers=0`` on runs blamed them
    ("runs on workers [0] are not among workers=0"); ``workers=[]`` on runs raised
    numpy's ``IndexError`` (index -1 is out of bounds), and on no runs gave a frame
    without a column."""
    for frame in (to_frame(RECORDS), to_frame([])):
        with pytest.raises(ValidationError, match=re.escape(f"got {workers!r}")) as refused:
            utilisation(frame, workers=workers)  # type: ignore[arg-type]
        assert "are not among" not in str(refused.value)


def test_without_pandas_importing_frames_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.delitem(sys.modules, "lldsched.views.frames")
    with pytest.raises(ImportError, match=r"pip install 'lldsched\[views\]'"):
        importlib.import_module("lldsched.views.frames")


def test_slots_a_misfire_policy_decided_are_rows_but_not_runs() -> None:
    records = [
        R("task-1", "hourly", 1, T0, T0, 0, T0, T0 + 5, True),
        R("task-1", "hourly", 0, T0 + 3600, T0 + 3600, -1, T0 + 9000, T0 + 9000, False,
          None, False, Outcome.MISSED),
        R("task-1", "hourly", 0, T0 + 7200, T0 + 7200, -1, T0 + 9000, T0 + 9000, False,
          None, False, Outcome.COALESCED),
    ]  # fmt: skip
    frame = to_frame(records)
    assert list(frame["outcome"]) == ["ok", "missed", "coalesced"]
    assert list(frame["outcome"].cat.categories) == list(OUTCOMES)
    assert list(ran(frame)["attempt"]) == [1]
    (row,) = task_summary(frame).itertuples()
    assert (row.runs, row.ok, row.failed, row.missed) == (1, 1, 0, 2)
    assert row.lateness_max == pd.Timedelta(0)
    only_missed = task_summary(frame.iloc[1:])
    assert only_missed["runs"].iloc[0] == 0 and only_missed["lateness_max"].isna().iloc[0]
    assert list(utilisation(frame, workers=1, freq="1h").columns) == [0]


def test_both_summaries_keep_a_task_whose_slots_were_all_decided_without_a_run() -> None:
    records = [
        R("a", "ran", 1, T0, T0, 0, T0, T0 + 5, True),
        R("b", "missed", 0, T0, T0, -1, T0 + 9, T0 + 9, False, None, False, Outcome.MISSED),
    ]
    line_a, line_b = summarize(records)
    assert (line_b.name, line_b.runs, line_b.missed, line_b.lateness_max) == ("missed", 0, 1, None)
    summary = task_summary(to_frame(records))
    assert summary["runs"].tolist() == [1, 0] and summary["missed"].tolist() == [0, 1]
    assert summary.loc["b", "lateness_max"] is pd.NaT
    assert line_a.duration_max == 5 and summary["duration_max"].iloc[0] == pd.Timedelta(seconds=5)


def test_overruns_are_counted_through_a_schedule_decorator() -> None:
    schedule = Window(FixedRate(60), max_runs=10)
    records = [R("w", "w", 1, T0, T0, 0, T0, T0 + 90, True)]  # 90 s on a 60 s grid
    (line,) = summarize(records, {"w": schedule})
    assert line.overruns == 1
    assert task_summary(to_frame(records), {"w": schedule}).loc["w", "overruns"] == 1


def test_a_simulation_frame_read_from_its_columns_equals_the_frame_of_its_records() -> None:
    sim = Simulation(workers=2, start=T0, seed=3)
    sim.schedule(
        "flaky", FixedRate(60), duration=lambda rng, attempt: rng.uniform(1, 90), fails=0.3
    )
    sim.schedule("late", FixedRate(300), duration=400.0, timeout=350.0, priority=Priority.HIGH)
    sim.schedule("answers", FixedRate(120), action=lambda: 42)
    sim.run_for(6 * 3600)
    from_columns = to_frame(sim)
    from_records = to_frame(sim.records(), priorities={t.id: t.priority for t in sim.tasks()})
    assert set(from_columns["outcome"]) >= {"ok", "failed", "timed_out", "skipped"}
    assert from_columns["result"].notna().any() and from_columns["error"].notna().any()
    pd.testing.assert_frame_equal(from_columns, from_records)


# -- task_summary pinned against its first, group-by-group form ------------------------------


def summary_group_by_group(
    frame: pd.DataFrame, schedules: dict[str, Schedule] | None = None
) -> pd.DataFrame:
    """``task_summary`` as it was written first (a pandas ``groupby``, the one rule
    ``summary_of`` fed a group at a time): the oracle that pins the one-pass form."""

    def seconds(column: pd.Series[Any]) -> list[float]:
        values: list[float] = (column.to_numpy(dtype="m8[us]") / np.timedelta64(1, "s")).tolist()
        return values

    def overruns(rows: pd.DataFrame, schedule: Schedule | None) -> int:
        if schedule is None:
            return 0
        first = ran(rows)
        first = first[first["attempt"] == 1]
        slot, start, finish = (
            (first[c].to_numpy(dtype="M8[us]").astype(np.int64) * 1e-6).tolist()
            for c in ("slot", "start", "finish")
        )
        return sum(
            overran_slot(schedule, t, f - s) for t, s, f in zip(slot, start, finish, strict=True)
        )

    rows, ids = [], []
    for task_id, group in frame.groupby("task_id", sort=False, observed=True):
        columns = TaskColumns(
            outcome=group["outcome"].astype(str).tolist(),
            ok=group["ok"].tolist(),
            timed_out=group["timed_out"].tolist(),
            attempt=group["attempt"].tolist(),
            lateness=seconds(group["lateness"]),
            duration=seconds(group["duration"]),
            caps=[  # the records past a cap: the slots they state are counted
                (outcome, error)
                for outcome, error in zip(
                    group["outcome"].astype(str), group["error"].tolist(), strict=True
                )
                if isinstance(error, str) and error.startswith(("SkipCap:", "MisfireCap:"))
            ],
        )
        count = overruns(group, (schedules or {}).get(str(task_id)))
        ids.append(str(task_id))
        rows.append(summary_of(str(group["name"].iloc[-1]), columns, overruns=count))
    data: dict[str, Any] = {"name": pd.array([row.name for row in rows], dtype=pd.StringDtype())}
    for field in TaskSummary._fields[1:]:
        values = [getattr(row, field) for row in rows]
        if field.startswith(("lateness", "duration", "blocked_")):
            data[field] = np.array(
                [np.timedelta64("NaT", "us") if v is None else round(v * 1e6) for v in values],
                dtype="m8[us]",
            )
        else:
            data[field] = np.array(values, dtype="int64")
    index = pd.Index(ids, dtype=pd.StringDtype(), name="task_id")
    return pd.DataFrame(data, index=index, columns=list(TaskSummary._fields))


def pinned_summary_source() -> tuple[pd.DataFrame, dict[str, Schedule]]:
    """The frame of :func:`pinned_summary_records`, and their schedules."""
    records, schedules = pinned_summary_records()
    frames = [to_frame(part) for part in records]
    assert set(frames[1]["outcome"]) >= {"cancelled", "blocked", "failed", "ok"}
    return pd.concat(frames, ignore_index=True), schedules


def pinned_summary_records() -> tuple[list[list[ExecutionRecord]], dict[str, Schedule]]:
    """The scenario's two days, a simulation with cancelled runs, a dependent's blocked
    waits, failures and skipped slots, and records at the edges (tasks with only decided
    slots, a NaN finish, negative lateness, instants before 1970)."""
    scenario = build_scenario(workers=3, seed=2)
    scenario.run_for(2 * 86400)
    sim = Simulation(workers=2, start=T0, seed=5)
    sim.schedule("cut", FixedRate(60), duration=150.0, overlap=Overlap.CANCEL_OTHER, id="cut")
    extract = sim.schedule("extract", CronSchedule("*/10 * * * *"), duration=200.0, id="ex")
    sim.schedule("load", CronSchedule("*/10 * * * *"), duration=500.0, depends_on=[extract.id])
    sim.schedule("flaky", FixedRate(90), duration=5.0, fails=0.5, retry=RetryPolicy(max_attempts=2))
    sim.run_for(6 * 3600)
    records = [scenario.records(), sim.records(), edge_records()]
    return records, {**schedules_of(scenario), **schedules_of(sim)}


def test_task_summary_equals_its_group_by_group_form_with_and_without_schedules() -> None:
    frame, schedules = pinned_summary_source()
    for rows in (frame, frame.iloc[:1], frame.iloc[:0], frame.iloc[::-1]):
        for given in (schedules, None, {}):
            pd.testing.assert_frame_equal(
                task_summary(rows, given), summary_group_by_group(rows, given)
            )


def summary_of_by_passes(name: str, columns: TaskColumns, *, overruns: int) -> TaskSummary:
    """``summary_of`` as it was written first, a pass over the rows per figure: the oracle
    that pins its one-pass form."""
    not_runs = [o.value for o in Outcome if not o.ran]
    misfires = (Outcome.MISSED.value, Outcome.COALESCED.value)
    ran = [i for i, outcome in enumerate(columns.outcome) if outcome not in not_runs]
    ok = [columns.ok[i] for i in ran]
    timed_out = [columns.timed_out[i] for i in ran]
    cancelled = [columns.outcome[i] == Outcome.CANCELLED for i in ran]
    lateness = sorted(columns.lateness[i] for i in ran if not math.isnan(columns.lateness[i]))
    duration = sorted(columns.duration[i] for i in ran if not math.isnan(columns.duration[i]))
    outcomes = columns.outcome
    return TaskSummary(
        name=name,
        runs=len(ran),
        ok=sum(ok),
        failed=sum(
            not (good or late or cut)
            for good, late, cut in zip(ok, timed_out, cancelled, strict=True)
        ),
        timed_out=sum(late and not cut for late, cut in zip(timed_out, cancelled, strict=True)),
        cancelled=sum(cancelled),
        retries=sum(columns.attempt[i] > 1 for i in ran),
        overruns=overruns,
        missed=sum(outcome in misfires for outcome in outcomes),
        given_up=sum(outcome == Outcome.GIVEN_UP for outcome in outcomes),
        skipped=sum(outcome == Outcome.SKIPPED for outcome in outcomes),
        lateness_p50=percentile(lateness, 50),
        lateness_p95=percentile(lateness, 95),
        lateness_max=lateness[-1] if lateness else None,
        duration_p50=percentile(duration, 50),
        duration_p95=percentile(duration, 95),
        duration_max=duration[-1] if duration else None,
        blocked=sum(outcome == Outcome.BLOCKED for outcome in outcomes),
        blocked_time=sum(
            columns.duration[i] for i, outcome in enumerate(outcomes) if outcome == Outcome.BLOCKED
        ),
    )


def test_summary_of_equals_its_pass_per_figure_form() -> None:
    frame, _ = pinned_summary_source()
    cases = [TaskColumns([], [], [], [], [], [])]
    for _, group in frame.groupby("task_id", sort=False, observed=True):
        seconds = [
            (group[c].to_numpy(dtype="m8[us]") / np.timedelta64(1, "s")).tolist()
            for c in ("lateness", "duration")
        ]
        cases.append(
            TaskColumns(
                group["outcome"].astype(str).tolist(), group["ok"].tolist(),
                group["timed_out"].tolist(), group["attempt"].tolist(), *seconds,
            )
        )  # fmt: skip
    nan = float("nan")
    cases.append(  # NaN times (sorted as they come), and every outcome once
        TaskColumns(
            [o.value for o in Outcome], [o is Outcome.OK for o in Outcome],
            [o is Outcome.TIMED_OUT for o in Outcome], [1, 2, 3, 1, 0, 0, 0, 1, 2],
            [nan, 1.0, 0.5, nan, 2.0, 3.0, 4.0, 0.25, nan], [5.0, nan, 1.0, 2.0, 0, 0, 0, 7.5, 3.0],
        )
    )  # fmt: skip
    for columns in cases:
        mine = summary_of("t", columns, overruns=3)
        theirs = summary_of_by_passes("t", columns, overruns=3)
        assert repr(mine) == repr(theirs)  # repr: NaN equals NaN, and ints stay ints


def summarize_record_by_record(
    records: list[ExecutionRecord], schedules: dict[str, Schedule] | None = None
) -> list[TaskSummary]:
    """``summarize`` as it was written first (each record's outcome asked twice, the
    overrun rule asked of every first attempt): the oracle that pins its form."""
    grouped: dict[str, list[ExecutionRecord]] = {}
    for record in records:
        grouped.setdefault(record.task_id, []).append(record)
    rows = []
    for task_id, group in grouped.items():
        schedule = (schedules or {}).get(task_id)
        columns = TaskColumns(
            outcome=[r.outcome.value for r in group],
            ok=[r.ok for r in group],
            timed_out=[r.timed_out for r in group],
            attempt=[r.attempt for r in group],
            lateness=[r.lateness for r in group],
            duration=[r.duration for r in group],
            caps=[  # the records past a cap: the slots they state are counted
                (r.outcome.value, r.error)
                for r in group
                if r.error is not None and r.error.startswith(("SkipCap:", "MisfireCap:"))
            ],
        )
        overruns = sum(overran(schedule, r) for r in group if r.attempt == 1 and r.outcome.ran)
        rows.append(summary_of(group[-1].name, columns, overruns=overruns))
    return rows


def test_summarize_equals_its_record_by_record_form() -> None:
    parts, schedules = pinned_summary_records()
    records = [record for part in parts for record in part]
    for given in (schedules, None):
        for some in (records, records[:1], [], records[::-1]):
            mine, theirs = summarize(some, given), summarize_record_by_record(some, given)
            assert repr(mine) == repr(theirs)  # repr: NaN equals NaN, and ints stay ints
            assert format_summary(mine) == format_summary(theirs)


def test_a_time_not_known_is_nat_in_the_frame_and_left_out_of_the_summary() -> None:
    """A record whose finish is NaN (not known) has NaT for its finish and its duration,
    on every platform (the cast of a NaN to an integer is undefined), and the summary's
    percentiles and maximum leave it out (it used to wrap into a duration of 292,000
    years, or count as -9.2e12 seconds)."""
    records = [
        R("t", "t", 1, T0, T0, 0, T0, T0 + 2, True),
        R("t", "t", 1, T0 + 10, T0 + 10, 0, T0 + 10, float("nan"), False, "RuntimeError: lost"),
    ]
    frame = to_frame(records)
    assert frame["finish"].isna().tolist() == [False, True]
    assert frame["duration"].isna().tolist() == [False, True]
    assert frame["lateness"].tolist() == [pd.Timedelta(0), pd.Timedelta(0)]
    summary = task_summary(frame)
    assert summary.loc["t", "runs"] == 2 and summary.loc["t", "failed"] == 1
    assert summary.loc["t", "duration_max"] == pd.Timedelta(seconds=2)
    assert summary.loc["t", "duration_p95"] == pd.Timedelta(seconds=2)
    (line,) = summarize(records)
    assert line.duration_max == 2.0


@pytest.mark.parametrize("schedules", [True, 5, ["task-1"], "task-1"])
def test_task_summary_and_summarize_refuse_schedules_that_are_no_mapping(
    schedules: Any,
) -> None:
    """``task_summary(frame, True)`` raised a bare ``TypeError``, ``summarize(records,
    True)`` an ``AttributeError``: ``schedules`` is a mapping of task ids, or None."""
    for call in (lambda: task_summary(to_frame(RECORDS), schedules),
                 lambda: summarize(RECORDS, schedules)):  # fmt: skip
        with pytest.raises(ValidationError, match=f"got {re.escape(repr(schedules))}"):
            call()


@pytest.mark.parametrize("source", [5, "records", b"x", bytearray(b"x"), {"task-1": 1}])
def test_to_frame_and_summarize_refuse_what_is_no_runtime_store_or_records(
    source: Any,
) -> None:
    """Text, bytes and mappings are iterables but not records (``report.records_iterable``,
    the one rule): ``to_frame(bytearray(b"x"))`` iterated its ints and said "got 120"."""
    with pytest.raises(ValidationError, match=f"got {re.escape(repr(source))}$"):
        to_frame(source)
    with pytest.raises(ValidationError, match=f"got {re.escape(repr(source))}$"):
        summarize(source)


@pytest.mark.parametrize("kind", KINDS)
def test_a_resumed_run_is_late_by_its_wait_after_the_resume_in_every_view(kind: str) -> None:
    """A run resumed after its slot passed is due at the resume (docs/decisions/schedules.md,
    "Resume re-anchors a fixed-rate grid"): its lateness is dispatch latency, the pause
    none of it, and its ``slot`` says the slot it serves.  The record, the frame, both
    summaries and the lateness plot must read it alike."""
    from lldsched.views.plots import lateness_over_time  # matplotlib only for this test

    driven = Driven(kind)
    calls = {"retry": 0}

    def fails_first() -> None:
        calls["retry"] += 1
        if calls["retry"] == 1:
            raise RuntimeError("first attempt")

    try:
        runtime = driven.runtime
        driven.add("job", FixedRate(60), id="job")
        driven.add("retry", OneTime(T0 + 5), id="retry", action=fails_first,
                   retry=RetryPolicy(max_attempts=2, initial_backoff=30))  # fmt: skip
        driven.run_until(T0 + 10)  # job ran at T0, retry failed at T0 + 5 (retry due T0 + 35)
        runtime.pause("job")
        runtime.pause("retry")
        driven.run_until(T0 + 150)  # job's slots 60 and 120, and the retry, slept through
        runtime.resume("job")
        runtime.resume("retry")
        driven.run_until(T0 + 200)
        records = {(r.task_id, r.attempt, r.due): r for r in runtime.records()}
        job, retry = records["job", 1, T0 + 150], records["retry", 2, T0 + 150]
        assert (job.slot, job.started, job.lateness) == (T0 + 150, T0 + 150, 0.0)
        assert (retry.slot, retry.started, retry.lateness) == (T0 + 5, T0 + 150, 0.0)
        frame = to_frame(runtime)
        assert (frame["lateness"] == pd.Timedelta(0)).all()
        assert set(frame["due"]) >= {at(150)} and at(5) in set(frame["slot"])
        summary = task_summary(frame, schedules_of(runtime))
        assert (summary["lateness_max"] == pd.Timedelta(0)).all()
        assert [row.lateness_max for row in summarize(runtime.records())] == [0.0, 0.0]
        points = lateness_over_time(frame).axes[0].collections
        heights = np.concatenate([np.asarray(p.get_offsets())[:, 1] for p in points])
        assert len(heights) == len(frame) and (heights == 0).all()
    finally:
        driven.close()
