"""Every per-task summary gives a row to each task registered, one with no record yet too
(``tasks=``): ``task_summary``, ``summarize`` and ``simulate``'s table, by one rule
(``report.no_runs``), each figure recomputed here from the records themselves."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lldsched import CronSchedule, FixedRate, OneTime, Simulation, ValidationError
from lldsched.sim.models import fixed
from lldsched.views.frames import schedules_of, task_summary, to_frame
from lldsched.views.report import format_summary, summarize

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC, a Thursday


def a_class_of_five() -> Simulation:
    """Five tasks registered, an hour run: the nightly one (02:00) has no record yet."""
    sim = Simulation(workers=2, start=T0)
    sim.schedule("heartbeat", FixedRate(60), duration=fixed(1))
    sim.schedule("report", FixedRate(600), duration=fixed(30), fails=0.0)
    sim.schedule("nightly", CronSchedule("0 2 * * *"), duration=fixed(60))
    sim.schedule("once", OneTime(delay=10), duration=fixed(5))
    sim.schedule("slow", FixedRate(300), duration=fixed(400))  # overruns its period
    sim.run_for(3600)
    return sim


def test_task_summary_has_a_row_for_each_task_registered_given_the_tasks() -> None:
    sim = a_class_of_five()
    frame = to_frame(sim)
    assert set(frame["name"]) == {"heartbeat", "report", "once", "slow"}  # no nightly record
    assert len(task_summary(frame, schedules_of(sim))) == 4  # a frame knows no other task
    summary = task_summary(frame, schedules_of(sim), tasks=sim.tasks())
    assert summary["name"].tolist() == ["heartbeat", "report", "once", "slow", "nightly"]
    nightly = summary.iloc[-1]
    assert summary.index[-1] == sim.tasks()[2].id
    assert (nightly["runs"], nightly["ok"], nightly["missed"], nightly["overruns"]) == (0, 0, 0, 0)
    assert pd.isna(nightly["lateness_p50"]) and pd.isna(nightly["duration_max"])
    assert summary["runs"].dtype == "int64" and summary["duration_max"].dtype == "m8[us]"


def test_each_figure_of_every_row_is_the_records_own() -> None:
    sim = a_class_of_five()
    records = sim.records()
    summary = task_summary(to_frame(sim), schedules_of(sim), tasks=sim.tasks())
    for task in sim.tasks():
        own = [r for r in records if r.task_id == task.id and r.outcome.ran]
        row = summary.loc[task.id]
        assert row["runs"] == len(own)
        assert row["ok"] == sum(r.ok for r in own)
        longest = max((r.finished - r.started for r in own), default=math.nan)
        assert (
            pd.isna(row["duration_max"]) if math.isnan(longest)
            else row["duration_max"].total_seconds() == pytest.approx(longest, abs=1e-6)
        )  # fmt: skip
    assert summary["runs"].sum() == sum(r.outcome.ran for r in records)


def test_summarize_and_the_frames_summary_give_the_same_rows() -> None:
    sim = a_class_of_five()
    schedules = schedules_of(sim)
    rows = summarize(sim.records(), schedules, tasks=sim.tasks())
    frame_rows = task_summary(to_frame(sim), schedules, tasks=sim.tasks())
    assert [row.name for row in rows] == frame_rows["name"].tolist()
    assert [(row.runs, row.overruns) for row in rows] == list(
        zip(frame_rows["runs"], frame_rows["overruns"], strict=True)
    )
    assert rows[-1].runs == 0 and rows[-1].duration_max is None
    assert format_summary(rows).splitlines()[-1].split() == ["nightly"] + ["0"] * 10 + ["-"] * 6


@pytest.mark.parametrize("bad", [5, "abc", [1, 2], [object()], {"a": "b"}])
def test_tasks_that_are_not_tasks_are_refused_naming_them(bad: object) -> None:
    sim = a_class_of_five()
    for summary in (
        lambda: task_summary(to_frame(sim), tasks=bad),  # type: ignore[arg-type]
        lambda: summarize(sim.records(), tasks=bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(ValidationError, match="tasks must be the runtime's tasks"):
            summary()


def test_a_task_given_twice_or_already_recorded_has_one_row() -> None:
    sim = a_class_of_five()
    tasks = sim.tasks()
    summary = task_summary(to_frame(sim), tasks=tasks + tasks)
    assert summary.index.is_unique and len(summary) == 5


def test_a_runtime_with_no_record_yet_has_a_row_per_task() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("later", OneTime(delay=3600), duration=fixed(1))
    summary = task_summary(to_frame(sim), schedules_of(sim), tasks=sim.tasks())
    assert summary["name"].tolist() == ["later"] and summary["runs"].tolist() == [0]
    assert [row.name for row in summarize([], tasks=sim.tasks())] == ["later"]
