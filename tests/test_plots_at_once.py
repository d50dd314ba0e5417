"""Runs at once on one lane of a Gantt chart, and in the utilisation of a worker.

A worker index runs one thing at a time on threads, but not every lane does: the event
loop's lane (``worker == workers``) runs many coroutines at once, several processes
sharing a store number their workers alike, and a task with ``Overlap.ALLOW`` runs on
several workers at once.  Each bar was drawn over the others on one row, and the
utilisation of such a lane passed 1.0 off the colour scale.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.text import Annotation

from lldsched import ExecutionRecord, OneTime, Outcome, Scheduler, ValidationError
from lldsched.views.frames import to_frame, utilisation
from lldsched.views.plots import gantt, mark_wait, utilisation_plot
from lldsched.views.plots.gantt import MAX_ROWS_AT_ONCE
from tests.conftest import T0

R = ExecutionRecord


def bar_rows(ax: Axes) -> list[float]:
    """The y centre of each bar of the chart's runs, in the frame's order."""
    (runs,) = [c for c in ax.collections if c.get_gid() == "runs"]
    return [round(float(np.mean(np.asarray(path.vertices)[:4, 1])), 6) for path in runs.get_paths()]


def legend_texts(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return [text.get_text() for text in legend.get_texts()]


def lanes(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def at_once(count: int, *, worker: int = 2) -> list[ExecutionRecord]:
    """``count`` runs of 30 s on one worker, each started 1 s after the one before."""
    return [
        R(f"t{i}", f"nap{i}", 1, T0 + i, T0 + i, worker, T0 + i, T0 + i + 30, True)
        for i in range(count)
    ]


def test_runs_at_once_on_one_worker_each_get_a_row_of_the_lane() -> None:
    # Four coroutines on the loop's lane read as one bar: the last drawn over the others.
    alone = R("w", "work", 1, T0, T0, 0, T0, T0 + 20, True)
    ax = gantt(to_frame([alone, *at_once(4)])).axes[0]
    assert lanes(ax) == ["worker 0", "worker 2", "+1", "+2", "+3"]
    assert bar_rows(ax) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert legend_texts(ax)[-1] == "+1, +2: a row each for runs\nat once (worker 2: 4)"
    assert ax.get_title(loc="right") == ""
    assert ax.get_title(loc="left") == "5 runs on 2 workers: 0 failed, 0 timed out"


def test_mark_wait_points_at_the_row_of_its_run() -> None:
    # The third of four runs at once is on the lane's third row: its arrow pointed at
    # the first, another run's wait.
    frame = to_frame(at_once(4))
    figure = gantt(frame)
    mark_wait(figure, frame.iloc[2], text="this one")
    (arrow,) = [
        t for t in figure.axes[0].texts if isinstance(t, Annotation) and t.get_text() == "this one"
    ]
    assert round(float(arrow.xy[1]), 6) == 2.42  # its row, 2, and the wait line under it
    alone = to_frame(at_once(1))
    lone = gantt(alone)
    mark_wait(lone, alone.iloc[0], text="alone")
    (single,) = [
        t for t in lone.axes[0].texts if isinstance(t, Annotation) and t.get_text() == "alone"
    ]
    assert round(float(single.xy[1]), 6) == 0.42


def test_a_row_is_taken_again_once_its_run_has_ended() -> None:
    # Back to back (one ends as the next starts) is not at once; a third run starting
    # after the first ended takes the first row again.
    records = [
        R("a", "a", 1, T0, T0, 0, T0, T0 + 10, True),
        R("b", "b", 1, T0 + 5, T0 + 5, 0, T0 + 5, T0 + 20, True),
        R("c", "c", 1, T0 + 10, T0 + 10, 0, T0 + 10, T0 + 15, True),
        R("d", "d", 1, T0 + 20, T0 + 20, 0, T0 + 20, T0 + 25, True),
    ]
    ax = gantt(to_frame(records)).axes[0]
    assert lanes(ax) == ["worker 0", "+1"]
    assert bar_rows(ax) == [0.0, 1.0, 0.0, 0.0]
    lone = gantt(to_frame([records[0], records[3]])).axes[0]
    assert lanes(lone) == ["worker 0"] and "at once" not in "".join(legend_texts(lone))


def test_a_lane_per_task_splits_a_task_whose_runs_overlap() -> None:
    # Overlap.ALLOW: two runs of one task on two workers at once, and a blocked wait of
    # the task after it, drawn on the task's first row.
    records = [
        R("x", "export", 1, T0, T0, 0, T0, T0 + 60, True),
        R("x", "export", 1, T0 + 30, T0 + 30, 1, T0 + 30, T0 + 90, True),
        R("y", "load", 1, T0, T0, 2, T0 + 100, T0 + 110, True),
        R("y", "load", 0, T0 + 40, T0 + 40, -1, T0 + 40, T0 + 100, False,
          misfire=Outcome.BLOCKED),
    ]  # fmt: skip
    ax = gantt(to_frame(records), by="task").axes[0]
    assert lanes(ax) == ["export", "+1", "load"]
    assert bar_rows(ax) == [0.0, 1.0, 2.0]
    (waits,) = [c for c in ax.collections if c.get_gid() == "blocked"]
    assert round(float(np.mean(np.asarray(waits.get_paths()[0].vertices)[:4, 1])), 6) == 2.0


def test_a_lane_splits_into_at_most_max_rows_and_says_how_many_ran_at_once() -> None:
    count = MAX_ROWS_AT_ONCE + 4
    ax = gantt(to_frame(at_once(count))).axes[0]
    assert len(lanes(ax)) == MAX_ROWS_AT_ONCE
    assert sorted(set(bar_rows(ax))) == [float(row) for row in range(MAX_ROWS_AT_ONCE)]
    assert legend_texts(ax)[-1].endswith(f"(worker 2: {count})")


def test_coroutines_of_a_real_scheduler_at_once_are_drawn_apart() -> None:
    # Three coroutines, each held until all three have begun: they ran at once, on the
    # loop's lane.  (All run on the scheduler's one loop thread: no lock.)
    begun: list[int] = []
    gate: dict[str, asyncio.Event] = {}

    async def nap(n: int) -> None:
        everyone = gate.setdefault("in", asyncio.Event())
        begun.append(n)
        if len(begun) == 3:
            everyone.set()
        await everyone.wait()

    with Scheduler(workers=1) as scheduler:
        for n in range(3):
            scheduler.schedule(f"nap{n}", nap, OneTime(delay=0), args=(n,), timeout=10)
        assert scheduler.wait_idle(timeout=10)
    frame = to_frame(scheduler)
    assert frame["worker"].tolist() == [1, 1, 1]  # the loop's lane, one past the threads
    assert frame["ok"].all()
    with pytest.raises(ValidationError, match=r"workers \[1\] .* event loop's lane"):
        utilisation(frame, 1)  # the threads only: the loop's lane is named, not a bare no
    assert utilisation(frame, 2, "1h")[1].iloc[0] > 0
    ax = gantt(frame).axes[0]
    assert lanes(ax) == ["worker 1", "+1", "+2"]
    assert sorted(bar_rows(ax)) == [0.0, 1.0, 2.0]


def test_utilisation_of_a_lane_of_runs_at_once_counts_each_and_the_scale_shows_it() -> None:
    # Two runs of 30 s at once on worker 0 over a minute: 1.0, one run's minute each.
    records = [R(f"t{i}", "nap", 1, T0, T0, 0, T0, T0 + 60, True) for i in range(2)]
    frame = to_frame(records)
    table = utilisation(frame, 1, "1min")
    assert table[0].tolist() == [2.0]
    figure = utilisation_plot(frame, 1, "1min")
    (mesh,) = [c for c in figure.axes[0].collections if isinstance(c, QuadMesh)]
    low, high = mesh.get_clim()
    assert low == 0.0 and high >= 2.0  # 2.0 was drawn as 1.0, the colour of "busy"
    scale: Any = figure.axes[-1]
    assert "runs at once" in scale.get_ylabel()
    plain = utilisation_plot(to_frame(records[:1]), 1, "1min")
    assert plain.axes[-1].get_ylabel() == "busy fraction"
    (flat,) = [c for c in plain.axes[0].collections if isinstance(c, QuadMesh)]
    assert flat.get_clim() == (0.0, 1.0)


def mean_in_title(figure: Any) -> str:
    title = str(figure.axes[0].get_title(loc="left"))
    return title.split("mean ")[1]


def test_the_utilisation_mean_counts_a_lane_busy_once_however_many_runs_it_holds() -> None:
    # Three coroutines at once on the loop's lane (worker 1) for the whole minute, worker 0
    # idle: the cells read 0 and 3 (runs in flight), and the title's mean read 150 %, a
    # utilisation above all the workers there are.  The mean is the busy fraction: the
    # loop's lane busy the whole minute, worker 0 not at all.
    records = [R(f"t{i}", "nap", 1, T0, T0, 1, T0, T0 + 60, True) for i in range(3)]
    figure = utilisation_plot(to_frame(records), 2, "1min")
    assert utilisation(to_frame(records), 2, "1min")[1].tolist() == [3.0]  # the cells as before
    assert mean_in_title(figure) == "50%"


def test_the_utilisation_mean_counts_the_time_runs_overlap_once() -> None:
    # Two runs at once over the first half of a minute on one worker: the cell reads 1.0 (a
    # run's minute), but the worker was busy half of it; the mean said 100 %.  A run that
    # overlaps another only in part adds the part past it (0..30, 20..40, 50..55: 45 s).
    both = [R(f"t{i}", "nap", 1, T0, T0, 0, T0, T0 + 30, True) for i in range(2)]
    assert mean_in_title(utilisation_plot(to_frame(both), 1, "1min")) == "50%"
    spread = [
        R("a", "nap", 1, T0, T0, 0, T0, T0 + 30, True),
        R("b", "nap", 1, T0 + 20, T0 + 20, 0, T0 + 20, T0 + 40, True),
        R("c", "nap", 1, T0 + 50, T0 + 50, 0, T0 + 50, T0 + 55, True),
    ]
    assert mean_in_title(utilisation_plot(to_frame(spread), 1, "1min")) == "75%"


def test_the_utilisation_mean_of_one_run_at_a_time_is_the_mean_of_the_cells() -> None:
    # Two workers, no lane holding two runs: the mean is the heat map's mean, as before.
    records = [
        R("a", "nap", 1, T0, T0, 0, T0, T0 + 45, True),
        R("b", "nap", 1, T0 + 60, T0 + 60, 1, T0 + 60, T0 + 75, True),
        R("c", "nap", 1, T0 + 80, T0 + 80, 1, T0 + 80, T0 + 110, True),
    ]
    frame = to_frame(records)
    cells = utilisation(frame, 2, "1min").to_numpy().mean()
    assert mean_in_title(utilisation_plot(frame, 2, "1min")) == f"{cells:.0%}"
