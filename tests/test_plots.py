"""Plots on the Agg canvas: what each chart draws, counted from its artists, and how it looks.

The image comparisons render each plot with pinned style, fonts and resolution and
compare it with a small PNG under ``tests/baseline/`` (a tolerance absorbs
antialiasing noise).  After an intended change, regenerate the baselines with
``LLDSCHED_UPDATE_BASELINES=1 python -m pytest tests/test_plots.py`` and look at them.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import matplotlib as mpl
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

from lldsched import ExecutionRecord, OverrunPolicy, ValidationError
from lldsched.sim.overrun import ALL_POLICIES, simulate_overrun
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import ran, to_frame
from lldsched.views.plots import (
    DETAIL_RUNS,
    PlotFigure,
    gantt,
    lateness_distribution,
    lateness_over_time,
    mark_wait,
    overrun_comparison,
    task_colours,
    utilisation_plot,
)
from lldsched.views.plots._base import _SLOTS
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
        "due, then the wait to start",
    ]  # fmt: skip


def test_a_task_has_the_colour_of_its_name_in_every_chart(ten: pd.DataFrame) -> None:
    colours = task_colours(["backup", "report", "import", "heartbeat"])
    assert len(set(colours.values())) == 4
    charts = {
        "gantt": collection(gantt(ten).axes[0], "runs").get_facecolors(),
        "gantt of two tasks": collection(
            gantt(ten[ten["name"].isin(["heartbeat", "import"])]).axes[0], "runs"
        ).get_facecolors(),
    }
    for name, faces in charts.items():
        shown = ten if name == "gantt" else ten[ten["name"].isin(["heartbeat", "import"])]
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
    assert "a run too short for a bar" in legend_texts(hour)


def test_a_span_fixes_the_time_axis_even_for_no_runs() -> None:
    ax = gantt(to_frame([]), span=(T0, T0 + 3600)).axes[0]
    assert ax.get_xlim() == pytest.approx((T0 / 86400, (T0 + 3600) / 86400))
    with pytest.raises(ValidationError, match="span must run forwards"):
        gantt(to_frame([]), span=(T0, T0))


def test_mark_wait_labels_a_runs_wait_on_its_lane(ten: pd.DataFrame) -> None:
    figure = gantt(ten)
    late = ten.iloc[int(ten["lateness"].to_numpy().argmax())]  # import: due +60 s, starts +300 s
    assert mark_wait(figure, late) is figure
    (note,) = figure.axes[0].texts
    assert note.get_text() == "import waited 4 min"
    elsewhere = late.copy()
    elsewhere["worker"] = 7
    with pytest.raises(ValidationError, match="no lane 'worker 7'"):
        mark_wait(figure, elsewhere)


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
    """``count`` back-to-back runs of 50 s every minute-ish, every 50th failed, a few late."""
    i = np.arange(count)
    worker = i % workers
    due = T0 + (i // workers) * 60.0
    start = due + np.where(i % 97 == 0, 20.0, 0.0)
    records = [
        R(f"t{k % tasks}", f"task {k % tasks}", 1, float(d), float(d), int(w), float(s),
          float(s) + 50.0, k % 50 != 0, None, k % 1000 == 0)
        for k, w, d, s in zip(i.tolist(), worker.tolist(), due.tolist(), start.tolist(),
                              strict=True)
    ]  # fmt: skip
    return to_frame(records)


def test_a_hundred_thousand_runs_are_drawn_as_a_few_collections() -> None:
    frame = many_runs(100_000)
    figure = gantt(frame)
    ax = figure.axes[0]
    assert len(collection(ax, "runs").get_paths()) == 100_000
    assert len(ax.collections) <= 5  # bars, hatching, failure strokes, outlines, due marks
    assert len(collection(ax, "failed").get_paths()) == int((frame["outcome"] == "failed").sum())
    marks = collection(ax, "due")  # beyond DETAIL_RUNS: only the late runs' waits
    assert len(marks.get_segments()) == int((frame["lateness"] > pd.Timedelta(0)).sum())
    assert legend_texts(ax)[-3:] == ["failed", "timed out", "due, then the wait to start"]
    render(figure)  # and it renders


def test_past_a_dozen_tasks_the_legend_sums_up_the_rest() -> None:
    ax = gantt(many_runs(DETAIL_RUNS + 1, tasks=15)).axes[0]
    texts = legend_texts(ax)
    assert "+ 3 more tasks" in texts and "task 11" in texts and "task 12" not in texts


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


def test_overrun_comparison_puts_skip_and_catch_up_side_by_side() -> None:
    figure = overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600))
    left, right = figure.axes
    assert left.get_position().x1 <= right.get_position().x0  # side by side
    assert left.get_title(loc="left") == "SKIP: 3 runs, 6 slots dropped,\nworst lateness 0 s"
    assert (
        right.get_title(loc="left") == "CATCH_UP: 4 runs, 0 slots dropped,\nworst lateness 4.5 min"
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
    assert [line.get_label() for line in curves] == ["backup", "report", "import", "heartbeat"]
    assert all(float(np.asarray(line.get_ydata())[-1]) == 1.0 for line in curves)
    assert ax.get_xlabel() == "lateness (min)" and ax.get_ylabel() == "fraction of runs started"


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
