"""Plots on the Agg canvas: what each chart draws, counted from its artists, and how it looks.

The image comparisons render each plot with pinned style, fonts and resolution and
compare it with a small PNG under ``tests/baseline/`` (a tolerance absorbs
antialiasing noise).  After an intended change, regenerate the baselines with
``LLDSCHED_UPDATE_BASELINES=1 python -m pytest tests/test_plots.py`` and look at them.
"""

from __future__ import annotations

import importlib
import itertools
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import matplotlib as mpl
import matplotlib.dates as mdates
import matplotlib.style
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cbook import STEP_LOOKUP_MAP
from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.path import Path as MplPath
from matplotlib.testing.compare import compare_images

from lldsched import ExecutionRecord, Outcome, Overlap, OverrunPolicy, ValidationError
from lldsched.sim.overrun import ALL_POLICIES, simulate_overrun
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import ran, task_summary, to_frame
from lldsched.views.plots import (
    DETAIL_RUNS,
    MAX_LEGEND_TASKS,
    OTHER_TASKS,
    PlotFigure,
    gantt,
    lateness_distribution,
    lateness_over_time,
    mark_wait,
    overrun_comparison,
    task_colours,
    utilisation_plot,
)
from lldsched.views.plots.taskcolours import _SLOTS
from lldsched.views.plots.timeaxis import seconds_of, time_axis, time_unit
from tests.conftest import T0

BASELINE = Path(__file__).resolve().parent / "baseline"
R = ExecutionRecord

# Ten runs of four tasks on three workers: a failure and its retry, a timeout, waits.
TEN_RUNS = [
    R("t1", "backup", 1, T0, T0, 0, T0, T0 + 300, True),
    R("t2", "report", 1, T0, T0, 1, T0, T0 + 120, False, "RuntimeError: boom"),
    R("t2", "report", 2, T0 + 121, T0, 1, T0 + 121, T0 + 200, True),
    R("t3", "import", 1, T0 + 60, T0 + 60, 0, T0 + 300, T0 + 500, False, "timed out", True),
    R("t4", "heartbeat", 1, T0, T0, 2, T0, T0 + 5, True),
    R("t4", "heartbeat", 1, T0 + 60, T0 + 60, 2, T0 + 60, T0 + 65, True),
    R("t4", "heartbeat", 1, T0 + 120, T0 + 120, 1, T0 + 200, T0 + 205, True),
    R("t4", "heartbeat", 1, T0 + 180, T0 + 180, 2, T0 + 180, T0 + 185, True),
    R("t4", "heartbeat", 1, T0 + 240, T0 + 240, 2, T0 + 240, T0 + 245, True),
    R("t1", "backup", 1, T0 + 400, T0 + 400, 0, T0 + 500, T0 + 600, True),
]


@pytest.fixture
def ten() -> pd.DataFrame:
    return to_frame(TEN_RUNS)


def collection(ax: Axes, gid: str) -> Any:
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) == 1, f"expected one {gid!r} collection, found {len(found)}"
    item = found[0]
    assert isinstance(item, PolyCollection | LineCollection)
    return item


def legend_texts(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None, "the chart has no legend"
    return [text.get_text() for text in legend.get_texts()]


def render(figure: Figure) -> None:
    canvas: Any = FigureCanvasAgg(figure)
    canvas.draw()


def tick_labels(figure: Figure, ax: Axes) -> list[str]:
    render(figure)
    return [label.get_text() for label in ax.get_xticklabels()]


# -- gantt ---------------------------------------------------------------------------


def test_gantt_draws_one_bar_per_run_and_one_lane_per_worker(ten: pd.DataFrame) -> None:
    figure = gantt(ten)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    assert len(collection(ax, "runs").get_paths()) == len(ten) == 10
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker 0", "worker 1", "worker 2"]
    assert ax.get_ylabel() == "worker" and ax.get_xlabel() == "time (UTC)"
    assert ax.get_title(loc="left") == "10 runs on 3 workers: 1 failed, 1 timed out"


def test_gantt_by_task_has_a_lane_per_task_in_order_of_first_run(ten: pd.DataFrame) -> None:
    ax = gantt(ten, by="task").axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "backup", "report", "import", "heartbeat",
    ]  # fmt: skip
    assert ax.get_ylabel() == "task"


def test_each_task_has_one_colour_and_the_legend_names_every_task(ten: pd.DataFrame) -> None:
    ax = gantt(ten).axes[0]
    colours = collection(ax, "runs").get_facecolors()
    by_task = {
        task: {tuple(c) for c in colours[(ten["task_id"] == task).to_numpy()]}
        for task in ten["task_id"].unique()
    }
    assert all(len(found) == 1 for found in by_task.values())
    assert len({next(iter(found)) for found in by_task.values()}) == 4
    assert legend_texts(ax) == [
        "backup", "report", "import", "heartbeat", "failed", "timed out",
        "due, then the wait to start\n(task's colour)",
    ]  # fmt: skip


def test_a_task_has_the_colour_of_its_name_in_every_chart(ten: pd.DataFrame) -> None:
    colours = task_colours(["backup", "report", "import", "heartbeat"])
    assert len(set(colours.values())) == 4
    charts = {
        "gantt": collection(gantt(ten).axes[0], "runs").get_facecolors(),
        "gantt of two tasks": collection(
            gantt(ten[ten["name"].isin(["backup", "import"])]).axes[0], "runs"
        ).get_facecolors(),
    }
    # (Two tasks whose names hash to one hue are told apart in a chart that shows both:
    # heartbeat, which shares backup's, has its own colour only beside backup; see
    # tests/test_accessibility.py.)
    for name, faces in charts.items():
        shown = ten if name == "gantt" else ten[ten["name"].isin(["backup", "import"])]
        for face, task in zip(faces, shown["name"], strict=True):
            assert tuple(face) == pytest.approx(colours[task]), (name, task)
    points = [c for c in lateness_over_time(ten).axes[0].collections
              if isinstance(c, PathCollection)]  # fmt: skip
    faces = np.asarray(points[3].get_facecolor())
    assert tuple(faces[0]) == pytest.approx(colours["heartbeat"])
    curves = {
        line.get_label(): line.get_color()
        for line in lateness_distribution(ten).axes[0].get_lines()
    }
    assert tuple(curves["heartbeat"]) == pytest.approx(colours["heartbeat"])


def test_a_colour_depends_on_the_name_not_on_order_or_company() -> None:
    alone = task_colours(["heartbeat"])["heartbeat"]
    assert task_colours(["zeta", "heartbeat", "alpha"])["heartbeat"] == alone
    assert task_colours(["heartbeat", "zeta"]) == task_colours(["zeta", "heartbeat"])


def test_the_built_in_scenarios_tasks_get_ten_different_hues() -> None:
    names = [task.name for task in build_scenario().tasks()]
    colours = task_colours(names)
    hues = {tuple(round(c, 2) for c in colours[name][:3]) for name in names}
    assert len(hues) == 10
    # tab20 pairs a dark and a light shade of each hue: no two tasks share a pair
    pairs = {_SLOTS.index(_slot_of(colours[name])) % 10 for name in names}
    assert len(pairs) == 10


def _slot_of(colour: tuple[float, ...]) -> int:
    cmap = mpl.colormaps["tab20"]
    return next(i for i in range(20) if tuple(cmap(i)) == pytest.approx(colour))


def test_runs_too_short_for_a_bar_are_drawn_as_diamonds(ten: pd.DataFrame) -> None:
    ax = gantt(ten).axes[0]  # a 10-minute chart: the 5-second heartbeats are 1/120 of it
    diamonds = [c for c in ax.collections if c.get_gid() == "short_runs"]
    assert len(diamonds) == 0  # 5 s of 600 s is wider than SHORT_RUN of the span
    hour = gantt(ten, span=(T0, T0 + 3600)).axes[0]  # an hour: now they are too short
    (marks,) = [c for c in hour.collections if c.get_gid() == "short_runs"]
    assert len(np.asarray(marks.get_offsets())) == 5
    assert "a run too short for a bar\n(task's colour)" in legend_texts(hour)


def test_runs_of_no_length_at_one_instant_are_drawn_as_diamonds() -> None:
    # On a FakeClock (the Stepper's) a run takes no time: a chart of one run, or of runs
    # all at one instant, spans no time, and no run was shorter than a share of none:
    # the chart showed its due tick and no run at all.
    runs = to_frame([R(f"t{i}", "tick", 1, T0, T0, i, T0, T0, True) for i in range(2)])
    ax = gantt(runs).axes[0]
    (marks,) = [c for c in ax.collections if c.get_gid() == "short_runs"]
    assert len(np.asarray(marks.get_offsets())) == 2
    assert "a run too short for a bar\n(task's colour)" in legend_texts(ax)


def test_a_span_fixes_the_time_axis_even_for_no_runs() -> None:
    ax = gantt(to_frame([]), span=(T0, T0 + 3600)).axes[0]
    assert ax.get_xlim() == pytest.approx((T0 / 86400, (T0 + 3600) / 86400))
    with pytest.raises(ValidationError, match="span must run forwards"):
        gantt(to_frame([]), span=(T0, T0))


def test_mark_wait_labels_a_runs_wait_on_its_lane(ten: pd.DataFrame) -> None:
    figure = gantt(ten)
    late = ten.iloc[ten["lateness"].argmax()]  # import: due +60 s, starts +300 s
    assert mark_wait(figure, late) is figure
    (note,) = [text for text in figure.axes[0].texts if text.get_gid() != "bar_names"]
    assert note.get_text() == "import waited 4 min"
    elsewhere = late.copy()
    elsewhere["worker"] = 7
    with pytest.raises(ValidationError, match="no lane 'worker 7'"):
        mark_wait(figure, elsewhere)
    # Not a chart: named, not matplotlib's AttributeError ('int' has no 'axes'), nor an
    # IndexError of a figure with no axes.
    for wrong in (5, Figure()):
        named = re.escape(repr(wrong))
        with pytest.raises(ValidationError, match=f"chart must be a gantt chart.*{named}"):
            mark_wait(wrong, late)  # type: ignore[arg-type]


@pytest.mark.parametrize("by", ["worker", "task"])
def test_mark_wait_refuses_a_slot_decided_without_a_run(by: str) -> None:
    # A week of a fixed rate that overruns: the frame's largest lateness was a slot SKIP
    # dropped (due at its slot, "started" when the run in its way ended), the row
    # frame.iloc[frame["lateness"].argmax()] picks. By task, mark_wait drew "compaction
    # waited 3 min 20 s" on the lane of a task that never waited; by worker it said "the
    # chart has no lane 'worker -1'", as if the chart were wrong.
    frame = to_frame([
        R("c", "compaction", 1, T0, T0, 0, T0, T0 + 450, True),
        R.of(task_id="c", name="compaction", attempt=0, due=T0 + 300, slot=T0 + 300,
             worker=-1, started=T0 + 450, finished=T0 + 450, ok=False,
             misfire=Outcome.SKIPPED),
        R("c", "compaction", 1, T0 + 600, T0 + 600, 0, T0 + 600, T0 + 1050, True),
    ])  # fmt: skip
    skipped = frame.iloc[frame["lateness"].argmax()]
    figure = gantt(frame, by=by)
    drawn = len(figure.axes[0].texts)
    with pytest.raises(ValidationError, match=r"task 'c' .*skipped.*not a run.*no wait"):
        mark_wait(figure, skipped, by=by)
    assert len(figure.axes[0].texts) == drawn  # nothing drawn


def test_skip_marks_the_slots_it_dropped() -> None:
    left = overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600)).axes[0]
    (crosses,) = [line for line in left.get_lines() if line.get_gid() == "skipped_slots"]
    minutes = np.round((np.asarray(crosses.get_xdata()) - left.get_xlim()[0]) * 1440)
    # Slots 1, 2, 4, 5, 7, 8: the runs at 0, 3 and 6 minutes overran them (the last run,
    # started at 9, has not finished at 10 and is not drawn; what it dropped was recorded).
    assert sorted(minutes.tolist()) == [1, 2, 4, 5, 7, 8]


def test_every_policy_marks_the_slots_its_records_say_it_dropped() -> None:
    runs = simulate_overrun(period=60, duration=150, horizon=600, policies=ALL_POLICIES)
    figure = overrun_comparison(runs)
    for ax, records in zip(figure.axes, runs.values(), strict=False):
        dropped = [r for r in records if r.outcome in ("skipped", "coalesced")]
        marked = [line for line in ax.get_lines() if line.get_gid() == "skipped_slots"]
        assert sum(np.asarray(line.get_xdata()).size for line in marked) == len(dropped)
    dropped_by_policy = {p.name: sum(not r.outcome.ran for r in rs) for p, rs in runs.items()}
    assert dropped_by_policy == {  # BUFFER_ONE's are coalesced, ALLOW's over max_instances
        "SKIP": 6, "CATCH_UP": 0, "BUFFER_ONE": 5, "CANCEL_OTHER": 0, "ALLOW": 3,
    }  # fmt: skip


def test_each_policys_panel_has_only_its_own_rows_each_as_tall_as_in_the_others() -> None:
    runs = simulate_overrun(period=60, duration=150, horizon=600, policies=ALL_POLICIES)
    figure = overrun_comparison(runs)
    render(figure)
    panels = figure.axes[: len(runs)]
    counted = {
        policy.name: len(collection(ax, "runs").get_paths())
        for policy, ax in zip(runs, panels, strict=True)
    }
    assert counted == {"SKIP": 3, "CATCH_UP": 4, "BUFFER_ONE": 4, "CANCEL_OTHER": 10, "ALLOW": 6}
    inches = []
    for ax, n in zip(panels, counted.values(), strict=True):
        assert [t.get_text() for t in ax.get_yticklabels()] == [str(k) for k in range(1, n + 1)]
        bottom, top = ax.get_ylim()
        assert bottom == n - 0.5  # no empty row under the last run
        box = ax.get_window_extent()
        inches.append(box.height / figure.dpi / (bottom - top))  # the height of a row
    assert max(inches) - min(inches) < 0.01 * max(inches)
    for ax in panels:  # every panel tells its own times: the panels end at different heights
        assert all(t.get_text() for t in ax.get_xticklabels())


def test_the_crosses_of_dropped_slots_sit_above_the_first_row_clear_of_its_bar() -> None:
    left = overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600)).axes[0]
    (crosses,) = [line for line in left.get_lines() if line.get_gid() == "skipped_slots"]
    first_bar_top = min(float(np.min(path.vertices[:, 1]))
                        for path in collection(left, "runs").get_paths())  # fmt: skip
    y = np.asarray(crosses.get_ydata())
    assert (y < first_bar_top - 0.2).all() and (y > left.get_ylim()[1]).all()


def test_failed_runs_are_hatched_and_timed_out_runs_outlined(ten: pd.DataFrame) -> None:
    ax = gantt(ten).axes[0]
    failed = collection(ax, "failed")
    assert failed.get_hatch() == "////" and len(failed.get_paths()) == 1
    timed_out = collection(ax, "timed_out")
    assert len(timed_out.get_paths()) == 1
    assert timed_out.get_linewidths()[0] >= 1.5
    # the outline sits exactly on the timed-out run's bar
    bars = collection(ax, "runs").get_paths()
    index = int(np.flatnonzero(ten["outcome"] == "timed_out")[0])
    assert np.allclose(timed_out.get_paths()[0].vertices[:4], bars[index].vertices[:4])


def test_every_due_time_is_marked_and_each_late_run_shows_its_wait(ten: pd.DataFrame) -> None:
    marks = collection(gantt(ten).axes[0], "due")
    late = int((ten["lateness"] > pd.Timedelta(0)).sum())
    assert late == 3
    assert len(marks.get_segments()) == late + len(ten)  # a wait line per late run, a tick each


def test_gantt_draws_on_the_axes_it_is_given_and_returns_that_figure(ten: pd.DataFrame) -> None:
    figure = Figure()
    left, right = figure.subplots(1, 2)
    assert gantt(ten, ax=right) is figure
    assert not left.collections and right.collections


def test_the_time_axis_is_shown_in_the_chosen_zone(ten: pd.DataFrame) -> None:
    utc = gantt(ten)
    berlin = gantt(ten, tz="Europe/Berlin")
    assert "09:00" in tick_labels(utc, utc.axes[0])
    labels = tick_labels(berlin, berlin.axes[0])
    assert "10:00" in labels and "09:00" not in labels
    assert berlin.axes[0].get_xlabel() == "time (Europe/Berlin)"


def test_gantt_rejects_an_unknown_lane_kind_or_zone(ten: pd.DataFrame) -> None:
    with pytest.raises(ValidationError, match="'lane'"):
        gantt(ten, by="lane")
    with pytest.raises(ValidationError, match="Mars/Olympus"):
        gantt(ten, tz="Mars/Olympus")


def many_runs(count: int, workers: int = 4, tasks: int = 12) -> pd.DataFrame:
    """``count`` back-to-back runs of 50 s every minute-ish, every 50th failed, a few late
    (10 s late, a run ends as its worker's next is due: a worker runs one thing at a time)."""
    i = np.arange(count)
    worker = i % workers
    due = T0 + (i // workers) * 60.0
    start = due + np.where(i % 97 == 0, 10.0, 0.0)
    records = [
        R(f"t{k % tasks}", f"task {k % tasks}", 1, float(d), float(d), int(w), float(s),
          float(s) + 50.0, k % 50 != 0, None, k % 1000 == 0)
        for k, w, d, s in zip(i.tolist(), worker.tolist(), due.tolist(), start.tolist(),
                              strict=True)
    ]  # fmt: skip
    return to_frame(records)


def segments(item: LineCollection) -> list[np.ndarray[Any, Any]]:
    """The segments of a collection, one per path or joined in a path by NaN vertices
    (past DETAIL_RUNS, a path per colour)."""
    found = []
    for path in item.get_paths():
        vertices = np.asarray(path.vertices)
        for part in np.split(vertices, np.flatnonzero(np.isnan(vertices[:, 0]))):
            part = part[~np.isnan(part[:, 0])]
            if len(part):
                found.append(part)
    return found


def boxes(item: PolyCollection) -> int:
    """The boxes a collection draws, one per path or many in a path."""
    return sum(
        int((np.asarray(path.codes) == MplPath.MOVETO).sum()) if path.codes is not None else 1
        for path in item.get_paths()
    )


def test_a_hundred_thousand_runs_are_drawn_as_a_few_collections() -> None:
    frame = many_runs(100_000)
    figure = gantt(frame)
    ax = figure.axes[0]
    bars = collection(ax, "runs")
    assert boxes(bars) == 100_000
    assert len(bars.get_paths()) <= 100_000 / 400  # a path of many boxes, of one colour
    assert len(ax.collections) <= 4  # bars, failure strokes, outlines, due marks
    failed = int((frame["outcome"] == "failed").sum())
    assert not [c for c in ax.collections if c.get_gid() == "failed"]  # no hatching
    strokes = collection(ax, "failed_strokes")
    assert len(segments(strokes)) == failed
    assert len(strokes.get_paths()) == 1  # one colour: one path
    marks = collection(ax, "due")  # beyond DETAIL_RUNS: only the late runs' waits
    assert len(segments(marks)) == int((frame["lateness"] > pd.Timedelta(0)).sum())
    assert len(marks.get_paths()) <= 12  # a path per task colour, not one per wait
    assert legend_texts(ax)[-3:] == [
        "failed",
        "timed out",
        "due, then the wait to start\n(task's colour)",
    ]
    render(figure)  # and it renders


def test_past_detail_a_failure_stroke_leaves_two_thirds_of_its_bar_uncovered() -> None:
    # A week of a 300-task service: 9,000 failed runs drawn as full-height strokes
    # turned the lanes black, whatever ran on them.
    frame = ran(many_runs(DETAIL_RUNS + 1))
    ax = gantt(frame).axes[0]
    failed = frame[frame["outcome"] == "failed"]
    strokes = segments(collection(ax, "failed_strokes"))
    assert len(strokes) == len(failed) > 0
    starts = (failed["start"].astype("int64") / 86400e6).to_numpy()
    for stroke, start, lane in zip(strokes, starts, failed["worker"], strict=True):
        assert stroke[:, 0] == pytest.approx([start, start])
        top = lane - 0.62 / 2  # the bar's edge at the top of its lane (y grows down)
        assert sorted(stroke[:, 1].tolist()) == pytest.approx([top, top + 0.62 / 3])


def test_past_a_dozen_tasks_the_legend_sums_up_the_rest() -> None:
    ax = gantt(many_runs(DETAIL_RUNS + 1, tasks=15)).axes[0]
    texts = legend_texts(ax)
    assert "+ 3 more tasks (grey)" in texts and "task 11" in texts and "task 12" not in texts


def test_plots_never_touch_pyplot_or_the_global_backend(tmp_path: Path) -> None:
    code = (
        "import sys, matplotlib\n"
        "from lldsched.views.frames import to_frame\n"
        "from lldsched.views.plots import gantt, overrun_comparison\n"
        "from lldsched.sim.scenario import build_scenario\n"
        "sim = build_scenario(); sim.run_for(3600)\n"
        f"gantt(to_frame(sim)).savefig({str(tmp_path / 'g.png')!r})\n"
        "from lldsched.sim.overrun import simulate_overrun\n"
        "overrun_comparison(simulate_overrun())\n"
        "print('matplotlib.pyplot' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- overrun, lateness, utilisation --------------------------------------------------


def test_simulate_overrun_runs_the_same_task_under_both_policies() -> None:
    runs = simulate_overrun(period=60, duration=150, horizon=600)
    frames = {policy: ran(to_frame(records)) for policy, records in runs.items()}
    skip, catch_up = frames[OverrunPolicy.SKIP], frames[OverrunPolicy.CATCH_UP]
    assert (skip["due"] - skip["due"].iloc[0]).dt.total_seconds().tolist() == [0, 180, 360]
    assert skip["lateness"].max() == pd.Timedelta(0)
    catch_up_dues = catch_up["due"] - catch_up["due"].iloc[0]
    assert catch_up_dues.dt.total_seconds().tolist() == [0, 60, 120, 180]
    assert catch_up["lateness"].dt.total_seconds().tolist() == [0, 90, 180, 270]


def _keys(figure: Figure) -> list[str]:
    """The labels of every legend on ``figure`` (its axes' and its own)."""
    legends = [ax.get_legend() for ax in figure.axes] + list(figure.legends)
    return [text.get_text() for legend in legends if legend for text in legend.get_texts()]


def test_overrun_comparison_keys_only_what_it_drew_for_a_task_with_no_runs() -> None:
    """A policy whose slots were all skipped, beside one with no records: no bar, no due
    tick and no slot grid were drawn, yet the key named all three (and the title named
    no task, its run rows a "1")."""
    skipped = [
        ExecutionRecord("t", "report", 0, T0 + 60 * k, T0 + 60 * k, -1, T0 + 60 * k,
                        T0 + 60 * k, False, error="Skipped: it overran",
                        misfire=Outcome.SKIPPED)
        for k in range(1, 4)
    ]  # fmt: skip
    figure = overrun_comparison({OverrunPolicy.SKIP: skipped, OverrunPolicy.CATCH_UP: []})
    assert _keys(figure) == ["slot no run served"]
    said = [text.get_text() for text in figure.axes[0].texts]
    assert "no runs\n3 slots decided without a run: 3 skipped" in said  # what the crosses are
    assert figure.get_suptitle() == "Overrun and overlap policies: report"
    assert all(not ax.get_yticklabels() for ax in figure.axes[:2])
    nothing = overrun_comparison({OverrunPolicy.SKIP: []})
    assert _keys(nothing) == []


def test_overrun_comparison_puts_skip_and_catch_up_side_by_side() -> None:
    figure = overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600))
    left, right = figure.axes
    assert left.get_position().x1 <= right.get_position().x0  # side by side
    assert left.get_title(loc="left") == "SKIP: 3 runs, 6 slots dropped,\nworst lateness 0 s"
    assert (
        right.get_title(loc="left")
        == "CATCH_UP: 4 runs, 0 slots dropped,\nworst lateness 4 min 30 s"
    )
    assert len(collection(left, "runs").get_paths()) == 3
    assert len(collection(right, "runs").get_paths()) == 4
    assert "fixed-rate slots" in legend_texts(right)
    with pytest.raises(ValidationError, match="axes must be 2 Axes"):
        overrun_comparison(simulate_overrun(horizon=600), axes=[left])


def test_lateness_over_time_plots_a_point_per_run_coloured_by_task(ten: pd.DataFrame) -> None:
    ax = lateness_over_time(ten).axes[0]
    points = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert [len(np.asarray(c.get_offsets())) for c in points] == [2, 2, 1, 5]
    assert ax.get_ylabel() == "lateness (min)"
    assert legend_texts(ax) == ["backup", "report", "import", "heartbeat"]
    assert max(float(np.max(np.asarray(c.get_offsets())[:, 1])) for c in points) == 4.0


def test_lateness_distribution_is_a_cumulative_curve_per_task(ten: pd.DataFrame) -> None:
    ax = lateness_distribution(ten).axes[0]
    curves = [line for line in ax.get_lines() if line.get_label() in legend_texts(ax)]
    assert [line.get_label() for line in curves] == [
        "backup", "report (never late)", "import", "heartbeat",
    ]  # fmt: skip
    assert all(float(np.asarray(line.get_ydata())[-1]) == 1.0 for line in curves)
    assert ax.get_xlabel() == "lateness (min)" and ax.get_ylabel() == "fraction of runs started"


def test_a_failed_run_too_short_for_a_bar_is_crossed_and_keyed() -> None:
    # Two processes' heartbeats and a failing job, a second each over a minute: every run
    # is a diamond, and a failed run's diamond was an ok one's (its hatching is drawn on
    # a bar too narrow to show it), the failure told by nothing.
    records = [
        R("h", "heartbeat", 1, T0 + 10 * k, T0 + 10 * k, 0, T0 + 10 * k, T0 + 10 * k + 0.1, True)
        for k in range(6)
    ] + [R("b", "boom", 1, T0 + 25, T0 + 25, 1, T0 + 25, T0 + 25.1, False, error="E: x")]
    ax = gantt(to_frame(records)).axes[0]
    (crosses,) = [c for c in ax.collections if c.get_gid() == "short_failed_runs"]
    (where,) = np.asarray(crosses.get_offsets()).tolist()
    assert where[0] * 86400 == pytest.approx(T0 + 25, abs=1e-3) and where[1] == 1.0
    assert "failed, too short to hatch" in legend_texts(ax)
    ok_only = gantt(to_frame(records[:6])).axes[0]
    assert not [c for c in ok_only.collections if c.get_gid() == "short_failed_runs"]
    assert "failed, too short to hatch" not in legend_texts(ok_only)


def test_a_renamed_task_is_labelled_by_its_latest_name() -> None:
    # The lane and the legend named the task by its first record's name ("export-v1"),
    # while task_summary names it by its latest, the name the service gives it now.
    records = [
        R("a", "export-v1", 1, T0, T0, 0, T0, T0 + 5, True),
        R("b", "other", 1, T0 + 30, T0 + 30, 1, T0 + 30, T0 + 31, True),
        R("a", "export-v2", 1, T0 + 60, T0 + 60, 0, T0 + 60, T0 + 65, True),
    ]
    ax = gantt(to_frame(records), by="task").axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["export-v2", "other"]
    assert legend_texts(ax)[:2] == ["export-v2", "other"]
    assert legend_texts(lateness_over_time(to_frame(records)).axes[0]) == ["export-v2", "other"]


def test_the_distribution_names_the_tasks_of_highest_p95_by_the_summary_s_percentile() -> None:
    # 13 tasks, a legend of 12: "spike" ran 19 times on time and once 100 s late, so its
    # 95th percentile is 0 (nearest rank: its curve reaches the 95 % line at 0, and
    # task_summary says 0 s), each of the others once 2 s late.  The legend ranked
    # tasks by pandas' interpolated quantile (5 s for spike) and named spike in place of
    # a task whose p95 is 2 s.
    spike = [R("spike", "spike", 1, T0 + 60 * n, T0 + 60 * n, 0, T0 + 60 * n + (100 if n == 19
               else 0), T0 + 60 * n + 101, True) for n in range(20)]  # fmt: skip
    others = [R(f"t{k}", f"late-{k:02d}", 1, T0, T0, 1, T0 + 2, T0 + 3, True) for k in range(12)]
    frame = to_frame([*spike, *others])
    p95 = task_summary(frame)["lateness_p95"]
    assert p95["spike"] == pd.Timedelta(0) and (p95.drop("spike") == pd.Timedelta(2, "s")).all()
    named = legend_texts(lateness_distribution(frame).axes[0])
    assert [name for name in named if not name.startswith("+")] == [
        f"late-{k:02d}" for k in range(12)
    ]
    assert named[-1] == "+ 1 more task (grey)"


def test_the_95_percent_label_touches_no_task_s_curve(ten: pd.DataFrame) -> None:
    # Notebook 04's week: the label sat at the left edge, where the curves rise from 0
    # (the nightly backup's line ran through it).
    week = build_scenario(workers=4, seed=0)
    week.run_for(7 * 86400)
    for frame in (to_frame(week), ten):
        figure = lateness_distribution(frame)
        render(figure)
        ax = figure.axes[0]
        label = next(text for text in ax.texts if text.get_text() == "95 % of runs")
        box = label.get_window_extent()
        curves = [line for line in ax.get_lines() if line.get_label() in legend_texts(ax)]
        assert curves
        for line in curves:
            steps = STEP_LOOKUP_MAP["steps-post"](line.get_xdata(), line.get_ydata())
            drawn = ax.transData.transform_path(MplPath(np.column_stack(steps)))
            assert not drawn.intersects_bbox(box, filled=False), line.get_label()


def test_utilisation_plot_is_a_worker_by_interval_heat_map(ten: pd.DataFrame) -> None:
    figure = utilisation_plot(ten, workers=4, freq="5min")
    ax = figure.axes[0]
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    assert np.asarray(mesh.get_array()).shape == (4, 2)  # workers x intervals 09:00, 09:05
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "worker 3"
    assert figure.axes[1].get_ylabel() == "busy fraction"  # the colour bar
    assert ax.get_title(loc="left").startswith("Worker utilisation per 5min: mean ")


PLOTS: dict[str, Callable[[pd.DataFrame], Figure]] = {
    "gantt": gantt,
    "gantt_by_task": lambda frame: gantt(frame, by="task"),
    "lateness_over_time": lateness_over_time,
    "lateness_distribution": lateness_distribution,
    "utilisation": lambda frame: utilisation_plot(frame, workers=3, freq="5min"),
    "overrun": lambda frame: overrun_comparison(
        simulate_overrun(period=60, duration=150, horizon=600)
    ),
}


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_every_plot_of_an_empty_frame_says_so_instead_of_failing(name: str) -> None:
    if name == "overrun":
        figure = overrun_comparison(
            {OverrunPolicy.SKIP: to_frame([]), OverrunPolicy.CATCH_UP: to_frame([])}
        )
    else:
        figure = PLOTS[name](to_frame([]))
    render(figure)
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert "no runs" in texts


def test_an_empty_charts_time_axis_labels_no_ticks_on_matplotlib_3_8_0_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """matplotlib 3.8.0, the views extra's floor, asks an axis's formatter for the labels
    of its ticks even when its locator is a ``NullLocator`` (an empty chart's blank time
    axis): ``format_ticks([])``, where its concise date labels fail (an ``IndexError``, a
    1-d array indexed as 2-d; later releases skip the call).  The time axis answers no
    labels for no ticks without asking matplotlib's concise labels."""
    concise: Callable[..., Any] = mdates.ConciseDateFormatter.format_ticks

    def as_in_3_8_0(self: mdates.ConciseDateFormatter, values: Any) -> Any:
        if len(values) == 0:
            raise IndexError("too many indices for array: array is 1-dimensional")
        return concise(self, values)

    monkeypatch.setattr(mdates.ConciseDateFormatter, "format_ticks", as_in_3_8_0)
    ax = Figure().subplots()
    time_axis(ax, "Europe/Berlin", blank=True)
    formatter = ax.xaxis.get_major_formatter()
    assert formatter.format_ticks([]) == []
    hour = [(T0 + k * 3600) / 86400 for k in range(2)]  # matplotlib's days since 1970
    assert formatter.format_ticks(hour) == ["10:00", "11:00"]  # Berlin's, as before


ON_AXES: dict[str, Callable[[pd.DataFrame, Axes], Figure]] = {
    "gantt": lambda frame, ax: gantt(frame, ax=ax),
    "gantt_by_task": lambda frame, ax: gantt(frame, by="task", ax=ax),
    "lateness_over_time": lambda frame, ax: lateness_over_time(frame, ax=ax),
    "lateness_distribution": lambda frame, ax: lateness_distribution(frame, ax=ax),
    "utilisation": lambda frame, ax: utilisation_plot(frame, workers=3, freq="5min", ax=ax),
}


@pytest.mark.parametrize("name", sorted(ON_AXES))
def test_every_plot_draws_on_the_axes_it_is_given(name: str, ten: pd.DataFrame) -> None:
    figure = Figure()
    left, right = figure.subplots(1, 2)
    assert ON_AXES[name](ten, right) is figure
    assert not left.collections and not left.lines and (right.collections or right.lines)


@pytest.mark.parametrize("name", sorted(ON_AXES))
@pytest.mark.parametrize("ax", [5, "left", Figure()], ids=["int", "str", "Figure"])
def test_every_plot_refuses_what_is_no_axes_naming_it(
    name: str, ax: object, ten: pd.DataFrame
) -> None:
    """Before: ``gantt(frame, ax=5)`` raised matplotlib's ``AttributeError: 'int' object
    has no attribute 'get_position'``, naming neither the argument nor what it takes."""
    with pytest.raises(
        ValidationError, match=f"ax must be a matplotlib Axes .*got {re.escape(repr(ax))}"
    ):
        ON_AXES[name](ten, ax)  # type: ignore[arg-type]


def test_overrun_comparison_draws_on_the_pair_of_axes_it_is_given() -> None:
    figure = Figure()
    pair = figure.subplots(1, 2)
    assert (
        overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600), axes=list(pair))
        is figure
    )
    assert all(ax.collections for ax in pair)
    with pytest.raises(ValidationError, match="2 Axes"):
        overrun_comparison(simulate_overrun(), axes=[pair[0]])


# -- how they look -------------------------------------------------------------------


@pytest.fixture
def pinned_style() -> Iterator[None]:
    """The rendering settings matplotlib's own image tests pin, plus a fixed font."""
    with mpl.style.context("default"), mpl.rc_context(
        {"font.family": "DejaVu Sans", "text.hinting": "none",
         "figure.dpi": 100, "savefig.dpi": 50, "path.simplify": True}
    ):  # fmt: skip
        yield


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_each_plot_matches_its_baseline_image(
    name: str, ten: pd.DataFrame, tmp_path: Path, pinned_style: None
) -> None:
    actual = tmp_path / f"{name}.png"
    PLOTS[name](ten).savefig(actual)
    expected = BASELINE / f"{name}.png"
    if os.environ.get("LLDSCHED_UPDATE_BASELINES"):
        BASELINE.mkdir(exist_ok=True)
        expected.write_bytes(actual.read_bytes())
    assert expected.exists(), f"no baseline {expected}: see this module's docstring"
    difference = compare_images(str(expected), str(actual), tol=3.0)
    assert difference is None, difference


def test_without_matplotlib_importing_plots_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    for name in [m for m in sys.modules if m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m.startswith("lldsched.views.plots")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"pip install 'lldsched\[views\]'"):
        importlib.import_module("lldsched.views.plots")


def test_a_figure_left_as_a_cells_value_renders_itself_as_png() -> None:
    figure = overrun_comparison(simulate_overrun())
    assert isinstance(figure, PlotFigure) and isinstance(figure, Figure)
    png = figure._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_overrun_comparison_draws_every_policy_it_is_given_one_panel_each() -> None:
    runs = simulate_overrun(period=60, duration=150, horizon=600, policies=ALL_POLICIES)
    figure = overrun_comparison(runs)
    titles = [
        ax.get_title(loc="left").split(":")[0] for ax in figure.axes if ax.get_title(loc="left")
    ]
    assert titles == ["SKIP", "CATCH_UP", "BUFFER_ONE", "CANCEL_OTHER", "ALLOW"]
    with pytest.raises(ValidationError, match="OverrunPolicy or Overlap"):
        overrun_comparison({"SKIP": runs[OverrunPolicy.SKIP]})  # type: ignore[dict-item]
    with pytest.raises(ValidationError, match="policies must be OverrunPolicy or Overlap"):
        simulate_overrun(policies=["SKIP"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"period": "60"}, "simulate_overrun period must be a number of seconds or a timedelta"),
        ({"duration": -1}, "simulate_overrun duration must be finite and > 0 seconds, got -1"),
        ({"horizon": float("nan")}, "simulate_overrun horizon must be finite and >= 0"),
        ({"policies": OverrunPolicy.SKIP}, "policies must be an iterable of OverrunPolicy"),
        ({"policies": [OverrunPolicy.SKIP, "SKIP"]}, "members, got 'SKIP'"),
        ({"policies": [Overlap.ALLOW], "max_instances": -1}, "max_instances must be an int"),
        ({"policies": [Overlap.ALLOW], "max_instances": 10**9}, "got 1000000000"),
    ],
)
def test_simulate_overrun_refuses_a_bad_argument_naming_it(
    given: dict[str, Any], named: str
) -> None:
    # Before: period="60" raised TypeError ('>' not supported between 'str' and 'int'), a
    # single policy TypeError (not iterable), max_instances=-1 blamed "workers ... got 0"
    # and 10**9 "workers ... got 1000000001"; a bad policy after a good one was found once
    # the good one's simulation had run.
    with pytest.raises(ValidationError, match=re.escape(named)):
        simulate_overrun(**given)


def test_simulate_overrun_takes_a_timedelta_period_and_duration() -> None:
    # Before: TypeError (unsupported format string passed to datetime.timedelta.__format__).
    by_timedelta = simulate_overrun(timedelta(minutes=1), timedelta(seconds=150))
    assert by_timedelta == simulate_overrun(60, 150)


def test_runs_cancelled_for_a_newer_slot_are_drawn_and_counted_as_cancelled_not_failed() -> None:
    # Overlap.CANCEL_OTHER: every run cut short for the next slot.  The Gantt chart's
    # title said "10 failed" (task_summary: 0 failed, 10 cancelled), its bars were
    # hatched as failed, and the overrun comparison hatched them with nothing in its key.
    runs = simulate_overrun(period=60, duration=150, horizon=600, policies=ALL_POLICIES)
    cancelled = to_frame(runs[Overlap.CANCEL_OTHER])
    assert (cancelled["outcome"] == "cancelled").all() and len(cancelled) == 10
    ax = gantt(cancelled).axes[0]
    assert ax.get_title(loc="left") == "10 runs on 2 workers: 0 failed, 0 timed out, 10 cancelled"
    assert len(collection(ax, "cancelled").get_paths()) == 10
    assert not [c for c in ax.collections if c.get_gid() == "failed"]
    texts = legend_texts(ax)
    assert "cancelled (a newer slot came due)" in texts and "failed" not in texts
    many = to_frame([
        r._replace(task_id=f"t{n}", started=r.started + 600 * n, finished=r.finished + 600 * n,
                   due=r.due + 600 * n, slot=r.slot + 600 * n)
        for n in range(DETAIL_RUNS // 10 + 1) for r in runs[Overlap.CANCEL_OTHER]
    ])  # fmt: skip
    past = gantt(many).axes[0]  # past DETAIL_RUNS: a stroke at the foot of each bar
    assert len(segments(collection(past, "cancelled_strokes"))) == len(many)
    assert "cancelled (a newer slot came due)" in legend_texts(past)
    assert past.get_title(loc="left").endswith(f"0 failed, 0 timed out, {len(many)} cancelled")
    figure = overrun_comparison(runs)
    panel = figure.axes[list(runs).index(Overlap.CANCEL_OTHER)]
    assert panel.get_title(loc="left").startswith("CANCEL_OTHER: 10 runs, 10 cancelled,")
    keys = [text for ax in figure.axes if ax.get_legend() for text in legend_texts(ax)]
    assert "cancelled (a newer slot came due)" in keys


def test_a_run_a_shutdown_cut_is_not_keyed_as_cut_for_a_newer_slot() -> None:
    """A shutdown's cut is recorded ``cancelled`` too (a coroutine cancelled, a worker
    process killed): the key said "cancelled (a newer slot came due)" for it, which no
    slot did.  Each cut is keyed by what made it, and a chart of both by both."""
    cut = [
        ExecutionRecord.of(task_id="t", name="t", attempt=1, due=T0 + 60 * n,
                           slot=T0 + 60 * n, worker=0, started=T0 + 60 * n,
                           finished=T0 + 60 * n + 30, ok=False, error=error, timed_out=False,
                           misfire=Outcome.CANCELLED)
        for n, error in enumerate([
            "CancelledError: scheduler shut down",
            "CancelledError: the scheduler shut down without draining (its worker process "
            "was killed)",
            "CancelledError: the scheduler shut down, its drain out of time after 4 s (its "
            "worker process was killed)",
            "OverlapCancelled: slot 09:01 came due while it ran",
        ])
    ]  # fmt: skip
    shut = legend_texts(gantt(to_frame(cut[:3])).axes[0])
    assert "cancelled (a shutdown cut it)" in shut
    assert not [text for text in shut if "newer slot" in text]
    assert "cancelled (a newer slot came due)" in legend_texts(gantt(to_frame(cut[3:])).axes[0])
    both = legend_texts(gantt(to_frame(cut)).axes[0])
    assert "cancelled (a newer slot came due, or a shutdown)" in both


# -- a service's 300 tasks -----------------------------------------------------------


def service(tasks: int = 300, runs: int = 3) -> pd.DataFrame:
    """``runs`` runs of each of ``tasks`` tasks on 24 workers; task ``k``'s runs last
    ``k + 1`` seconds and start ``k`` seconds late, so the busiest and the latest are the
    highest numbered; every tenth task's first run fails."""
    records = [
        R(f"t{k}", f"svc-{k:03d}", 1, T0 + 3600.0 * n, T0 + 3600.0 * n, (k + n) % 24,
          T0 + 3600.0 * n + k, T0 + 3600.0 * n + 2 * k + 1, not (k % 10 == 0 and n == 0))
        for n in range(runs) for k in range(tasks)
    ]  # fmt: skip
    return to_frame(records)


def overlapping(texts: list[Any]) -> list[tuple[str, str]]:
    """The pairs of rendered texts whose boxes overlap."""
    boxes = [(text.get_text(), text.get_window_extent()) for text in texts if text.get_text()]
    return [
        (a, b)
        for i, (a, box) in enumerate(boxes)
        for b, other in boxes[i + 1 :]
        if box.overlaps(other)
    ]


def test_a_gantt_of_300_tasks_draws_the_40_busiest_lanes_and_says_so() -> None:
    frame = service()
    figure = gantt(frame, by="task")
    render(figure)
    ax = figure.axes[0]
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes == [f"svc-{k:03d}" for k in range(260, 300)]  # the busiest, in their order
    title, note = ax.get_title(loc="left").split("\n")
    assert note == "40 busiest of 300 tasks drawn; 260 left out"
    assert title.startswith("900 runs on 300 tasks: ")  # all of them
    assert boxes(collection(ax, "runs")) == 40 * 3
    # The figure stays a screen or two high (0.45 in a lane would make 300 lanes 136 in),
    # its lane labels apart.
    assert figure.get_figheight() < 16
    assert overlapping(ax.get_yticklabels()) == []
    assert overlapping(ax.get_xticklabels()) == []


def test_max_lanes_none_draws_every_lane_and_a_bad_one_is_refused() -> None:
    frame = service(tasks=50, runs=1)
    figure = gantt(frame, by="task", max_lanes=None)
    render(figure)
    ax = figure.axes[0]
    assert len(ax.get_yticklabels()) == 50 and "\n" not in ax.get_title(loc="left")
    assert overlapping(ax.get_yticklabels()) == []
    # By worker, the five rows of the busiest: workers 1 and 0 ran two of these runs at
    # once (tasks 25 and 49, 24 and 48), a row each, then worker 23.
    worker_lanes = gantt(frame, max_lanes=5).axes[0]
    labels = [t.get_text() for t in worker_lanes.get_yticklabels()]
    assert labels == ["worker 0", "+1", "worker 1", "+1", "worker 23"]
    assert worker_lanes.get_title(loc="left").endswith(
        "\n3 busiest of 24 workers drawn; 21 left out"
    )
    for bad in (0, 2.5, True):
        with pytest.raises(ValidationError, match=f"max_lanes must be an int >= 1, got {bad}"):
            gantt(frame, max_lanes=bad)  # type: ignore[arg-type]


def test_on_axes_given_a_gantt_draws_only_the_lanes_that_fit_their_height() -> None:
    # The simulation player's chart is 4.2 inches high: 300 lanes' labels were a smear.
    figure = PlotFigure(figsize=(11.0, 4.2), layout="constrained")
    ax = figure.add_subplot()
    gantt(service(), by="task", ax=ax)
    render(figure)
    lanes = len(ax.get_yticklabels())
    assert 5 <= lanes <= 4.2 / 0.2
    assert ax.get_title(loc="left").endswith(
        f"\n{lanes} busiest of 300 tasks drawn; {300 - lanes} left out"
    )
    assert overlapping(ax.get_yticklabels()) == []
    everything = PlotFigure(figsize=(11.0, 4.2)).add_subplot()
    gantt(service(), by="task", ax=everything, max_lanes=None)  # asked for: every lane
    assert len(everything.get_yticklabels()) == 300


def test_past_a_dozen_tasks_only_the_named_ones_keep_a_colour_and_theirs_differ() -> None:
    frame = service(tasks=30, runs=10)  # 300 runs: past DETAIL_RUNS
    ax = gantt(frame).axes[0]
    texts = legend_texts(ax)
    assert texts[:12] == [f"svc-{k:03d}" for k in range(29, 17, -1)]  # busiest first
    assert texts[12] == "+ 18 more tasks (grey)"
    legend = ax.get_legend()
    assert legend is not None
    faces = [tuple(patch.get_facecolor()) for patch in legend.get_patches()[:13]]
    assert len(set(faces[:12])) == 12  # twelve colours, none repeated
    grey = faces[12]
    assert grey == pytest.approx(OTHER_TASKS) and grey not in faces[:12]
    tab20_greys = [tuple(mpl.colormaps["tab20"](i)) for i in (14, 15)]
    assert not set(faces[:12]) & set(tab20_greys)  # no named task passes for "the rest"
    drawn = collection(ax, "runs").get_facecolors()
    assert {tuple(c) for c in drawn} == set(faces)


def test_lateness_charts_of_many_tasks_name_the_latest_and_grey_the_rest() -> None:
    frame = service(tasks=30, runs=10)
    over_time = lateness_over_time(frame).axes[0]
    assert legend_texts(over_time)[:2] == ["svc-029", "svc-028"]
    assert legend_texts(over_time)[-1] == "+ 18 more tasks (grey)"
    (rest,) = [c for c in over_time.collections if c.get_gid() == "other_tasks"]
    assert len(np.asarray(rest.get_offsets())) == 18 * 10
    assert tuple(np.asarray(rest.get_facecolor())[0]) == pytest.approx(OTHER_TASKS)
    curves = lateness_distribution(frame).axes[0]
    named = [line for line in curves.get_lines() if line.get_label() in legend_texts(curves)]
    assert sorted(str(line.get_label()) for line in named) == [
        f"svc-{k:03d}" for k in range(18, 30)
    ]
    greys = [line for line in curves.get_lines()
             if mpl.colors.to_rgba(line.get_color()) == OTHER_TASKS]  # fmt: skip
    # the 18 others' curves, one line broken by NaN between them, under the named
    assert [line.get_gid() for line in greys] == ["other_tasks"]
    assert greys[0].get_zorder() < named[0].get_zorder()
    x, y = (np.asarray(values, dtype=float) for values in greys[0].get_data())
    pieces = np.split(np.column_stack((x, y)), np.flatnonzero(np.isnan(x)))
    pieces = [piece[~np.isnan(piece[:, 0])] for piece in pieces if (~np.isnan(piece[:, 0])).any()]
    assert len(pieces) == 18
    own = ran(frame)
    for k, piece in zip(range(18), pieces, strict=True):  # svc-000 .. svc-017, in order
        late = np.sort(own[own["name"] == f"svc-{k:03d}"]["lateness"].dt.total_seconds())
        want = STEP_LOOKUP_MAP["steps-post"](
            np.concatenate(([0.0], late)), np.concatenate(([0.0], np.arange(1, 11) / 10))
        )
        np.testing.assert_allclose(piece.T, np.asarray(want))  # in seconds


def test_a_distribution_of_thousands_of_tasks_draws_the_others_as_one_line() -> None:
    # 6,000 tasks made 6,000 lines: 6 s to build and 3 s to render, past the other charts'
    # second or two.  The named twelve are a line each, the rest one grey line.
    frame = service(tasks=2000, runs=2)
    ax = lateness_distribution(frame).axes[0]
    assert len(ax.get_lines()) <= MAX_LEGEND_TASKS + 2  # the named, the rest, the 95 % line
    assert legend_texts(ax)[-1] == "+ 1,988 more tasks (grey)"


def test_a_heat_map_of_300_workers_keeps_every_row_and_labels_a_readable_few() -> None:
    # 300 workers at 0.4 in a row made a figure 80 inches high.
    records = [
        R(f"t{w}", f"job {w}", 1, T0, T0, w, T0, T0 + 60.0 * (w % 60 + 1), True) for w in range(300)
    ]
    figure = utilisation_plot(to_frame(records), workers=300, freq="1h")
    render(figure)
    ax = figure.axes[0]
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    assert np.asarray(mesh.get_array()).shape == (300, 1)  # every worker has its row
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:2] == ["worker 0", "worker 8"] and len(labels) == 38
    assert overlapping(ax.get_yticklabels()) == []
    assert figure.get_figheight() < 16


def test_a_task_never_late_is_named_so_in_the_lateness_distribution(ten: pd.DataFrame) -> None:
    # Its curve is a vertical line at 0 under the others' rise: in a three-task hour,
    # two of three curves seemed missing.
    on_time = to_frame([*TEN_RUNS, R("t5", "cleanup", 1, T0, T0, 0, T0, T0 + 9, True)])
    texts = legend_texts(lateness_distribution(on_time).axes[0])
    assert texts == [
        "backup", "report (never late)", "import", "heartbeat", "cleanup (never late)",
    ]  # fmt: skip


def test_each_lateness_curve_is_its_task_s_sorted_lateness() -> None:
    """Pins the curves' points, task by task, against a mask per task (the former way of
    picking a task's runs, one pass over every run a task)."""
    week = build_scenario(workers=4, seed=0)
    week.run_for(2 * 86400)
    for frame in (to_frame(week), service(), service().iloc[::-1]):
        runs = ran(frame)
        lateness = seconds_of(runs["lateness"])
        divisor, _ = time_unit(float(lateness.max()))
        tasks = runs["task_id"].to_numpy()
        expected = []
        for task in pd.unique(tasks):
            values = np.sort(lateness[tasks == task]) / divisor
            fraction = np.arange(1, len(values) + 1) / len(values)
            expected.append(
                (tuple(np.concatenate(([0.0], values))), tuple(np.concatenate(([0.0], fraction))))
            )
        ax = lateness_distribution(frame).axes[0]
        assert sorted(lateness_curves(ax)) == sorted(expected)


def lateness_curves(ax: Axes) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    """Each task's curve of a lateness distribution, as the (x, y) of its steps: a named
    task's line, and each piece of the one grey line of the rest (drawn with its steps,
    its pieces parted by NaN: every other vertex of a piece is a curve's point)."""
    curves = []
    for line in ax.get_lines():
        x, y = (np.asarray(values, dtype=float) for values in line.get_data())
        if line.get_gid() == "p95":
            continue
        if line.get_gid() != "other_tasks":
            curves.append((tuple(x), tuple(y)))
            continue
        cuts = np.flatnonzero(np.isnan(x))
        for low, high in itertools.pairwise([-1, *cuts.tolist(), len(x)]):
            if high - low > 1:
                curves.append((tuple(x[low + 1 : high : 2]), tuple(y[low + 1 : high : 2])))
    return curves


@pytest.mark.parametrize(
    ("seconds", "said"), [(3590, ">99%"), (3600, "100%"), (1, "<1%"), (1800, "50%")]
)
def test_the_utilisation_title_says_all_or_none_only_when_it_was(seconds: int, said: str) -> None:
    """A worker busy 3,590 s of its hour read "mean 100%", and one busy a second "0%"."""
    run = ExecutionRecord("t", "t", 1, T0, T0, 0, T0, T0 + seconds, True)
    ax = utilisation_plot(to_frame([run]), workers=1, freq="1h").axes[0]
    assert ax.get_title(loc="left") == f"Worker utilisation per 1h: mean {said}"


@pytest.mark.parametrize(
    ("options", "title"),
    [
        ({}, "No runs"),
        ({"by": "task"}, "No runs"),
        ({"workers": 2}, "No runs on 2 workers"),
    ],
)
def test_an_empty_gantt_chart_is_titled_no_runs_not_on_0_workers(
    options: dict[str, object], title: str
) -> None:
    """Its title said "0 runs on 0 workers: 0 failed, 0 timed out", as of a pool of no
    worker; it names the lanes ``workers=`` gives, which the chart draws."""
    figure = gantt(to_frame([]), **options)  # type: ignore[arg-type]
    render(figure)
    assert figure.axes[0].get_title(loc="left") == title
