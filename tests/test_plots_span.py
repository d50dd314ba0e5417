"""``gantt(frame, span=...)`` is a zoom: the chart is of the runs in the window.

A capacity planner zooming on Monday 09:00 of a simulated week saw the week's run count
in the title, the burst's jobs greyed out of the legend (the week's busiest tasks named
instead) and no detail (the week's runs were past ``DETAIL_RUNS``); only the time axis
followed the span.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.patches import Patch

from lldsched import ExecutionRecord
from lldsched.views.frames import to_frame
from lldsched.views.plots import DETAIL_RUNS, MAX_LEGEND_TASKS, OTHER_TASKS, gantt, task_colours
from tests.conftest import T0

R = ExecutionRecord
HOUR = 3600.0


def legend_colours(ax: Axes) -> dict[str, tuple[float, ...]]:
    legend = ax.get_legend()
    assert legend is not None
    return {
        text.get_text(): tuple(np.asarray(handle.get_facecolor(), dtype=float).tolist())
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if isinstance(handle, Patch)
    }


def bars(ax: Axes) -> Any:
    (runs,) = [c for c in ax.collections if c.get_gid() == "runs"]
    return runs


def test_the_title_counts_the_runs_the_span_holds_a_run_across_an_edge_drawn_cut() -> None:
    frame = to_frame([
        R("a", "early", 1, T0 - 2 * HOUR, T0 - 2 * HOUR, 0, T0 - 2 * HOUR, T0 - HOUR, True),
        R("b", "across", 1, T0 - 60, T0 - 60, 0, T0 - 60, T0 + 60, True),  # over the edge
        R("c", "inside", 1, T0 + 300, T0 + 300, 1, T0 + 300, T0 + 400, False, "boom"),
        R("d", "late", 1, T0 + 2 * HOUR, T0 + 2 * HOUR, 0, T0 + 2 * HOUR, T0 + 3 * HOUR, True),
    ])  # fmt: skip
    whole = gantt(frame).axes[0]
    assert whole.get_title(loc="left").startswith("4 runs on 2 workers: 1 failed")
    ax = gantt(frame, span=(T0, T0 + 1800)).axes[0]
    assert ax.get_title(loc="left").startswith("2 runs on 2 workers: 1 failed")
    keyed = legend_colours(ax)
    assert {"across", "inside"} <= set(keyed) and not {"early", "late"} & set(keyed)
    assert len(bars(ax).get_paths()) == 2
    # The run across the edge is drawn from its start: the axis cuts it at the span.
    starts = [float(np.asarray(path.vertices)[:, 0].min()) for path in bars(ax).get_paths()]
    assert min(starts) == pytest.approx((T0 - 60) / 86400)
    assert ax.get_xlim() == pytest.approx((T0 / 86400, (T0 + 1800) / 86400))


def test_a_span_with_no_run_says_so_and_shows_the_span() -> None:
    frame = to_frame([R("a", "early", 1, T0 - HOUR, T0 - HOUR, 0, T0 - HOUR, T0 - 600, True)])
    ax = gantt(frame, span=(T0, T0 + 1800)).axes[0]
    assert [text.get_text() for text in ax.texts] == ["no runs in the span"]
    assert ax.get_xlim() == pytest.approx((T0 / 86400, (T0 + 1800) / 86400))
    assert ax.get_title(loc="left") == "No runs"


def _week_and_burst() -> list[ExecutionRecord]:
    """Twenty busy tasks running all day, and three small jobs in a burst at 09:00."""
    records = [
        R(f"busy{k}", f"busy-{k:02d}", 1, T0 + s + 90 * k, T0 + s + 90 * k, k % 4,
          T0 + s + 90 * k, T0 + s + 90 * k + 600, True)
        for k in range(20)
        for s in range(-8 * 3600, 8 * 3600, 1800)
    ]  # fmt: skip
    records += [
        R(f"burst{k}", f"burst-{k}", 1, T0, T0, 4, T0 + 20 * k, T0 + 20 * k + 15, True)
        for k in range(3)
    ]  # fmt: skip
    return records


def test_the_legend_names_the_tasks_of_the_span_and_detail_follows_its_runs() -> None:
    frame = to_frame(_week_and_burst())
    assert len(frame) > DETAIL_RUNS
    whole = gantt(frame, by="task", max_lanes=None).axes[0]
    assert not any(label.startswith("burst") for label in legend_colours(whole))
    # The burst's minute: its three jobs and the busy runs in flight at 09:00.
    ax = gantt(frame, by="task", max_lanes=None, span=(T0, T0 + 60)).axes[0]
    named = legend_colours(ax)
    assert {"burst-0", "burst-1", "burst-2"} <= set(named)
    assert all(colour != pytest.approx(OTHER_TASKS) for colour in named.values())
    drawn = len(bars(ax).get_paths())
    assert ax.get_title(loc="left").startswith(f"{drawn} runs on ")
    assert drawn < DETAIL_RUNS < len(frame)
    # In detail: each run's due time is ticked (past DETAIL_RUNS, only the late runs').
    (due,) = [c for c in ax.collections if c.get_gid() == "due" and isinstance(c, LineCollection)]
    assert len(due.get_segments()) >= drawn


def test_a_burst_task_weighs_by_its_time_in_the_span() -> None:
    # Past MAX_LEGEND_TASKS tasks in the window, the legend names the tasks with the most
    # run time in it: a long run that only crosses the window weighs its minutes there.
    records = [
        R(f"long{k}", f"long-{k:02d}", 1, T0 - HOUR, T0 - HOUR, k, T0 - HOUR, T0 + 30, True)
        for k in range(MAX_LEGEND_TASKS)
    ]  # fmt: skip
    records += [
        R(f"in{k}", f"in-{k:02d}", 1, T0, T0, 20 + k, T0 + 10, T0 + 290, True)
        for k in range(MAX_LEGEND_TASKS)
    ]  # fmt: skip
    ax = gantt(to_frame(records), span=(T0, T0 + 300), max_lanes=None).axes[0]
    named = [label for label in legend_colours(ax) if not label.startswith("+")]
    assert sorted(named) == [f"in-{k:02d}" for k in range(MAX_LEGEND_TASKS)]


def _clashing_names() -> tuple[str, str]:
    """Two task names whose hues clash: the later one (sorted) is moved to another hue on
    a chart of both, and has its own on a chart of it alone."""
    for i in range(200):
        for j in range(i + 1, 200):
            first, second = sorted((f"job-{i}", f"job-{j}"))
            both = task_colours([first, second])
            if both[second] != task_colours([second])[second]:
                return first, second
    raise AssertionError("no two names clash")  # pragma: no cover


def test_a_task_keeps_its_colour_in_a_zoom_of_few_tasks() -> None:
    first, second = _clashing_names()
    frame = to_frame([
        R("one", first, 1, T0 - HOUR, T0 - HOUR, 0, T0 - HOUR, T0 - 600, True),
        R("two", second, 1, T0, T0, 0, T0 + 10, T0 + 200, True),
    ])  # fmt: skip
    whole = legend_colours(gantt(frame).axes[0])
    zoomed = legend_colours(gantt(frame, span=(T0, T0 + 300)).axes[0])
    assert second in zoomed and first not in zoomed
    assert zoomed[second] == pytest.approx(whole[second])


def test_a_zoom_keeps_the_whole_charts_colours_and_a_task_it_greyed_takes_a_free_hue() -> None:
    frame = to_frame(_week_and_burst())
    whole = legend_colours(gantt(frame, by="task", max_lanes=None).axes[0])
    ax = gantt(frame, by="task", max_lanes=None, span=(T0, T0 + 60)).axes[0]
    zoomed = legend_colours(ax)
    kept = [name for name in zoomed if name in whole]
    assert kept  # busy tasks the whole chart names, in flight at 09:00
    for name in kept:
        assert zoomed[name] == pytest.approx(whole[name]), name
    hues = {tuple(np.round(colour, 3)) for colour in zoomed.values() if colour != OTHER_TASKS}
    assert len(hues) == len([c for c in zoomed.values() if c != OTHER_TASKS])  # all distinct
