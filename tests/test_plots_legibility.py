"""What a reader sees on the rendered charts: no text over text, ticks that read as
times, marks as big as their legend says, reference lines unlike any task's curve.

Each test renders a chart on the Agg canvas with data that once drew it badly (a
week's ten tasks, one run, no runs, names of sixty letters, an hour of a fixed-rate
task) and measures the drawn boxes, as a reader on a laptop would look at them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from lldsched import ExecutionRecord, Outcome, Overlap, OverrunPolicy
from lldsched.sim.overrun import simulate_overrun
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import to_frame
from lldsched.views.plots import (
    DETAIL_RUNS,
    OTHER_TASKS,
    PlotFigure,
    gantt,
    lateness_distribution,
    lateness_over_time,
    mark_wait,
    overrun_comparison,
    utilisation_plot,
)
from lldsched.views.plots.palette import MIN_DISTANCE
from tests.conftest import T0
from tests.test_accessibility import distance

R = ExecutionRecord


def render(figure: Figure) -> Any:
    canvas: Any = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()


def overlapping(texts: list[Any]) -> list[tuple[str, str]]:
    """The pairs of drawn texts whose boxes overlap."""
    boxes = [(t.get_text(), t.get_window_extent()) for t in texts if t.get_text()]
    return [
        (a, b)
        for i, (a, box) in enumerate(boxes)
        for b, other in boxes[i + 1 :]
        if box.overlaps(other)
    ]


def all_text(figure: Figure) -> list[str]:
    """Every text the rendered figure shows, tick labels and offsets included."""
    return [t.get_text() for t in figure.findobj(Text) if t.get_visible() and t.get_text()]


@pytest.fixture(scope="module")
def day() -> pd.DataFrame:
    sim = build_scenario(workers=4, seed=0)
    sim.run_for(86400)
    return to_frame(sim)


# -- the 95 % line of the lateness distribution ------------------------------------------


def test_the_95_percent_line_looks_like_no_task_s_curve(day: pd.DataFrame) -> None:
    # A day of the built-in scenario: report-india's curve (tab20's grey, dotted, as
    # its rank's line style) was drawn like the 95 % line (grey, dotted), which the
    # notebook tells the reader to find "where a curve crosses the dotted line".
    ax = lateness_distribution(day).axes[0]
    (reference,) = [line for line in ax.get_lines() if line.get_gid() == "p95"]
    curves = [line for line in ax.get_lines() if line.get_gid() != "p95"]
    assert len(curves) == 10
    for curve in curves:
        assert distance(reference.get_color(), curve.get_color(), "normal") >= MIN_DISTANCE, (
            curve.get_label()
        )


# -- marks of the lateness over time -------------------------------------------------------


def test_past_detail_the_named_tasks_marks_are_big_enough_to_show_their_shape(
    day: pd.DataFrame,
) -> None:
    # 1,789 runs were drawn as dots of 3 square points: the legend's circles, squares
    # and triangles were nowhere on the chart, and the named tasks hid in the greys.
    assert len(day) > DETAIL_RUNS
    ax = lateness_over_time(day).axes[0]
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    named = [c for c in marks if not str(c.get_label()).startswith("_")]
    assert len(named) == 10
    for task in named:
        assert float(np.min(task.get_sizes())) >= 12.0, task.get_label()  # ~5 px across


# -- one instant, no runs ----------------------------------------------------------------


_TIME = re.compile(r"^(\d\d:\d\d(:\d\d)?|\w{3}[- ]\d\d|\d{4}-\w{3}(-\d\d)?( \d\d:\d\d)?)$")
"""A tick label or an offset that reads as a time or a date: "09:00", "09:00:30",
"Jan-06", "Mon 05", "2026-Jan-05", "2026-Jan"."""


@pytest.mark.filterwarnings("error")  # a zero-length span once divided by zero
def test_one_run_gets_a_minute_of_time_axis_in_times_and_lateness_from_zero() -> None:
    # One run: the axis spanned 1.2 s and its ticks read "59.4, 59.6, 00:00, 00.2".
    one = to_frame([R("t1", "backup", 1, T0, T0, 0, T0 + 30, T0 + 330, True)])
    for figure in (lateness_over_time(one), gantt(to_frame([
        R("t1", "tick", 1, T0, T0, 0, T0, T0, True)
    ]))):  # fmt: skip
        render(figure)
        ax = figure.axes[0]
        low, high = ax.get_xlim()
        assert (high - low) * 86400 >= 60
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert labels and all(_TIME.match(label) for label in labels), labels
    ax = lateness_over_time(one).axes[0]
    low, high = ax.get_ylim()
    assert low <= 0 < 30 < high  # the lateness of 30 s measured from zero, not 28.5
    on_time = to_frame([R("t1", "tick", 1, T0 + 60 * i, T0 + 60 * i, 0, T0 + 60 * i,
                          T0 + 60 * i + 1, True) for i in range(5)])  # fmt: skip
    low, high = lateness_over_time(on_time).axes[0].get_ylim()
    assert -0.1 * high < low <= 0 < high  # no lateness: no axis of negative lateness


@pytest.mark.parametrize("seconds", [40, 3600, 86400, 7 * 86400])
def test_every_time_axis_reads_as_times_of_day_or_dates(seconds: int) -> None:
    # Ticks seconds apart read "30", "40" (seconds alone), ticks days apart "06", "07"
    # (days alone); and formats given without their zero formats turned a day's first
    # tick from "Jan-06" into "06".
    frame = to_frame([
        R("t1", "sync", 1, T0 + at, T0 + at, 0, T0 + at, T0 + at + 1, True)
        for at in np.linspace(0, seconds, 7).tolist()
    ])  # fmt: skip
    for figure in (gantt(frame), lateness_over_time(frame)):
        render(figure)
        labels = [t.get_text() for t in figure.axes[0].get_xticklabels() if t.get_text()]
        assert len(labels) >= 3 and all(_TIME.match(label) for label in labels), labels


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin"])
def test_ticks_minutes_apart_across_midnight_say_where_the_day_changes(tz: str) -> None:
    # Two hours around midnight, ticks 15 minutes apart: they read "23:00" ... "00:00"
    # ... "01:00" under an offset of the second day alone ("2026-Jan-06"), so the
    # evening's runs read as the next day's.  The tick at midnight names its day, as
    # matplotlib's own ticks an hour or more apart do ("Jan-06").
    midnight = pd.Timestamp("2026-01-06", tz=tz).timestamp()
    frame = to_frame([
        R("t1", "sync", 1, midnight + at, midnight + at, 0, midnight + at, midnight + at + 60,
          True)
        for at in range(-3600, 3601, 600)
    ])  # fmt: skip
    for figure in (gantt(frame, tz=tz), lateness_over_time(frame, tz=tz)):
        render(figure)
        ax = figure.axes[0]
        labels = [t.get_text() for t in ax.get_xticklabels()]
        ticks = dict(zip(ax.get_xticks().tolist(), labels, strict=True))
        nearest = min(ticks, key=lambda x: abs(x - midnight / 86400))
        assert abs(nearest - midnight / 86400) * 86400 < 1e-3, ticks  # a tick at midnight
        assert ticks[nearest] == "Jan-06", ticks
        others = [label for x, label in ticks.items() if label and x != nearest]
        assert len(others) >= 2 and all(re.match(r"^\d\d:\d\d$", label) for label in others)


def test_ticks_under_a_second_apart_read_apart() -> None:
    # Runs of a real scheduler in a test often span half a second: every tick of the
    # axis read "09:00:00" (the seconds' format had lost its fraction), six alike.
    frame = to_frame([
        R("t1", "nap", 1, T0 + at, T0 + at, 0, T0 + at, T0 + at + 0.05, True)
        for at in np.linspace(0, 0.5, 6).tolist()
    ])  # fmt: skip
    for figure in (gantt(frame), lateness_over_time(frame)):
        render(figure)
        labels = [t.get_text() for t in figure.axes[0].get_xticklabels() if t.get_text()]
        assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
        assert all(re.match(r"^\d\d:\d\d(:\d\d(\.\d+)?)?$", label) for label in labels), labels


def _berlin_ticks(figure: Figure) -> list[tuple[float, str]]:
    """The x ticks of ``figure``'s first axes, rendered: (instant, label) in order."""
    render(figure)
    ax = figure.axes[0]
    ticks = [round(x * 86400) for x in ax.get_xticks()]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    low, high = (x * 86400 for x in ax.get_xlim())
    return [(x, label) for x, label in zip(ticks, labels, strict=True) if low <= x <= high]


@pytest.mark.parametrize(
    "night", ["2026-03-29T00:00:00+00:00", "2026-10-25T00:00:00+00:00"], ids=["march", "october"]
)
def test_time_ticks_across_a_change_of_summer_time_are_even_and_read_apart(night: str) -> None:
    # Europe/Berlin, an hourly task over the night the clocks change: in March two ticks
    # fell on one instant ("03:00" printed twice, over itself), in October the hour
    # 02:00 CET had no tick, so "02:00" to "03:00" spanned two hours of runs.
    start = pd.Timestamp(night).timestamp() - 3 * 3600
    frame = to_frame([
        R("t1", "hourly", 1, start + 1800 * i, start + 1800 * i, 0, start + 1800 * i,
          start + 1800 * i + 300, True)
        for i in range(13)
    ])  # fmt: skip
    for figure in (gantt(frame, tz="Europe/Berlin"), lateness_over_time(frame, tz="Europe/Berlin")):
        ticks = _berlin_ticks(figure)
        instants = [x for x, _ in ticks]
        steps = {b - a for a, b in itertools.pairwise(instants)}
        assert len(steps) == 1 and steps.pop() > 0, ticks  # evenly apart, none twice
        labels = [label for _, label in ticks if label]
        assert len(set(labels)) == len(labels), ticks  # no two ticks read alike
        assert overlapping(figure.axes[0].get_xticklabels()) == []


@pytest.mark.parametrize(
    "plot", ["gantt", "lateness_over_time", "utilisation_plot", "overrun_comparison"]
)
def test_a_chart_of_no_runs_shows_no_instant_of_1970(plot: str) -> None:
    empty = to_frame([R("t1", "backup", 1, T0, T0, 0, T0, T0 + 5, True)]).iloc[:0]
    figures = {
        "gantt": lambda: gantt(empty),
        "lateness_over_time": lambda: lateness_over_time(empty),
        "utilisation_plot": lambda: utilisation_plot(empty, workers=2),
        # 04's sliders at period 10 s, duration 600 s: ten periods simulated, no run
        # finished under either policy (the panels' shared axis read 1970-01-01).
        "overrun_comparison": lambda: overrun_comparison(simulate_overrun(10, 600)),
    }
    figure = figures[plot]()
    render(figure)
    texts = all_text(figure)
    assert "no runs" in texts
    assert not [text for text in texts if "1970" in text or "Jan-01" in text], texts


@pytest.mark.parametrize("plot", ["gantt", "lateness_over_time", "lateness_distribution",
                                  "utilisation_plot"])  # fmt: skip
def test_a_chart_of_slots_decided_without_a_run_says_how_many(plot: str) -> None:
    # A scheduler restarted after an outage with RUN_ONCE: its frame of the last hour
    # held only coalesced slots, and every chart said "no runs", as of a frame of nothing.
    decided = to_frame([
        R.of(task_id="t1", name="sync", attempt=0, due=T0 + 60 * k, slot=T0 + 60 * k,
             worker=-1, started=T0 + 60 * k, finished=T0 + 60 * k, ok=False,
             misfire=Outcome.COALESCED if k else Outcome.SKIPPED)
        for k in range(4)
    ])  # fmt: skip
    charts: dict[str, Callable[[pd.DataFrame], Figure]] = {
        "gantt": gantt,
        "lateness_over_time": lateness_over_time,
        "lateness_distribution": lateness_distribution,
        "utilisation_plot": lambda frame: utilisation_plot(frame, workers=2),
    }
    figure = charts[plot](decided)
    render(figure)
    assert "no runs\n4 slots decided without a run: 3 coalesced, 1 skipped" in all_text(figure)
    nothing = charts[plot](decided.iloc[:0])  # a frame of nothing: "no runs" alone
    render(nothing)
    assert "no runs" in all_text(nothing)


# -- long task names ---------------------------------------------------------------------

LONG = "nightly-reconciliation-of-the-accounts-payable-ledger-region-"


def long_names(tasks: int = 6) -> pd.DataFrame:
    return to_frame([
        R(f"t{i}", f"{LONG}{i}", 1, T0 + 600 * i, T0 + 600 * i, i % 2, T0 + 600 * i + 30 * i,
          T0 + 600 * i + 30 * i + 400, True)
        for i in range(tasks)
    ])  # fmt: skip


@pytest.mark.parametrize("by", ["task", "worker"])
def test_long_task_names_leave_the_chart_its_width_and_its_ticks_apart(by: str) -> None:
    # Names of 62 letters, as lane labels and in the legend, left the plot two inches
    # of an eleven-inch figure, its time labels printed over one another.
    figure = gantt(long_names(), by=by)
    render(figure)
    ax = figure.axes[0]
    assert ax.get_position().width > 0.5
    assert overlapping(ax.get_xticklabels()) == []
    assert overlapping(ax.get_yticklabels()) == []
    legend = ax.get_legend()
    assert legend is not None
    names = [t.get_text() for t in legend.get_texts()][:6]
    assert len(set(names)) == 6 and all(name.endswith(f"region-{i}") for i, name in
                                        enumerate(names))  # fmt: skip
    assert all(len(name) <= 32 and "…" in name for name in names)


def test_the_note_of_lanes_left_out_never_runs_into_the_title() -> None:
    # 2,000 tasks of long names: the legend narrowed the chart, and the note "40 busiest
    # of 2,000 tasks drawn; 1,960 left out", at the top right on the title's line, was
    # printed over the end of the title.
    frame = long_names(2000)
    figure = gantt(frame, by="task")
    render(figure)
    ax = figure.axes[0]
    shown = [t for t in ax.get_children() if isinstance(t, Text) and t.get_text()]
    titles = [t for t in shown if t.get_text() in {ax.get_title(loc=loc) for loc in
                                                   ("left", "center", "right")}]  # fmt: skip
    said = " ".join(t.get_text() for t in titles)
    assert "2,000 runs on 2,000 tasks" in said
    assert "40 busiest of 2,000 tasks drawn; 1,960 left out" in said
    assert overlapping(titles) == []
    width = figure.bbox.width
    assert all(t.get_window_extent().x0 >= 0 and t.get_window_extent().x1 <= width
               for t in titles)  # fmt: skip


def test_a_shortened_lane_still_takes_its_wait_mark() -> None:
    frame = long_names()
    chart = gantt(frame, by="task")
    mark_wait(chart, frame.iloc[3], by="task")  # found its lane by the name it was given
    assert any("waited 1 min 30 s" in t for t in all_text(chart))


def test_names_alike_but_in_the_middle_are_not_shortened_into_one() -> None:
    names = [f"{LONG[:30]}{middle}{LONG[30:]}0" for middle in ("north", "south")]
    frame = to_frame([
        R(f"t{i}", name, 1, T0, T0, i, T0, T0 + 60, True) for i, name in enumerate(names)
    ])  # fmt: skip
    labels = [t.get_text() for t in gantt(frame, by="task").axes[0].get_yticklabels()]
    assert len(set(labels)) == 2


def test_the_lateness_charts_shorten_long_names_too() -> None:
    for figure in (lateness_over_time(long_names()), lateness_distribution(long_names())):
        render(figure)
        ax = figure.axes[0]
        assert ax.get_position().width > 0.5
        assert overlapping(ax.get_xticklabels()) == []


# -- the overrun comparison --------------------------------------------------------------


def test_an_hour_of_overrun_rows_labels_only_the_rows_there_is_room_for() -> None:
    # An hour of a 60 s task that runs 150 s: 24 rows in 2.6 inches, labels of 10
    # points on rows of 8, printed over one another.
    figure = overrun_comparison(simulate_overrun(period=60, duration=150, horizon=3600))
    render(figure)
    for ax in figure.axes:
        if not ax.axison:
            continue
        labels = [t for t in ax.get_yticklabels() if t.get_text()]
        assert labels and labels[0].get_text() == "1"
        assert overlapping(labels) == [], ax.get_title(loc="left")


# -- the simulation player's "now" ----------------------------------------------------------


def test_the_now_label_stays_inside_the_chart_at_either_edge() -> None:
    # Once the window scrolls, now is its right edge: " now" was written past it, over
    # the legend, and cut off.
    from lldsched.views.player import mark_now

    frame = to_frame([R("t1", "backup", 1, T0, T0, 0, T0, T0 + 600, True)])
    for now in (T0, T0 + 3600):
        figure = PlotFigure(figsize=(11.0, 4.2), layout="constrained")
        ax = figure.add_subplot()
        gantt(frame, by="task", ax=ax, span=(T0 - 60, T0 + 3600))
        mark_now(ax, now)
        renderer = render(figure)
        (label,) = [t for t in ax.texts if t.get_text().strip() == "now"]
        box, frame_box = label.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert frame_box.x0 <= box.x0 and box.x1 <= frame_box.x1, now


# -- legends say what is drawn -------------------------------------------------------------


def test_the_rest_of_the_tasks_are_keyed_as_they_are_drawn() -> None:
    # "+ 18 more tasks (grey)" was a grey square beside grey dots and grey lines.
    frame = to_frame([
        R(f"t{k}", f"svc-{k:02d}", 1, T0 + 60 * n, T0 + 60 * n, 0, T0 + 60 * n + k,
          T0 + 60 * n + k + 1, True)
        for n in range(3) for k in range(30)
    ])  # fmt: skip
    for figure, drawn in ((lateness_over_time(frame), "point"),
                          (lateness_distribution(frame), "line")):  # fmt: skip
        legend = figure.axes[0].get_legend()
        assert legend is not None
        (rest,) = [h for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True)
                   if t.get_text().startswith("+ 18 more")]  # fmt: skip
        assert isinstance(rest, Line2D)
        assert rest.get_color() == pytest.approx(OTHER_TASKS)
        if drawn == "point":
            assert rest.get_marker() not in ("", "None", None) and rest.get_linestyle() == "None"
        else:
            assert rest.get_marker() in ("", "None", None) and rest.get_linestyle() == "-"


def test_a_cluster_of_no_runs_says_so_and_keys_nothing_it_did_not_draw() -> None:
    from lldsched.sim import ClusterScenario, ClusterTask, simulate_cluster
    from lldsched.views.plots import cluster_timeline

    quiet = simulate_cluster(
        ClusterScenario(nodes=2, tasks=(ClusterTask("report", every=60.0, duration=5.0),),
                        horizon=30.0)
    )  # fmt: skip
    assert not quiet.runs
    figure = cluster_timeline(quiet)
    assert "no runs" in all_text(figure)
    legend = figure.axes[0].get_legend()
    assert legend is None or not [t.get_text() for t in legend.get_texts()]


def test_a_task_whose_curve_hides_in_the_rise_at_zero_says_how_late_it_ever_was(
    day: pd.DataFrame,
) -> None:
    # A day of the built-in scenario: report-latam's runs were at most 1 s late, a
    # curve within a pixel of the axis, under every task's rise at 0: it seemed missing.
    ax = lateness_distribution(day).axes[0]
    legend = ax.get_legend()
    assert legend is not None
    texts = [t.get_text() for t in legend.get_texts()]
    assert "report-latam (all within 1 s)" in texts
    assert "nightly-backup (never late)" in texts
    assert "report-india" in texts  # 7 min 52 s late at worst: a curve that shows


def test_the_wait_mark_is_keyed_as_it_is_drawn() -> None:
    # The key drew "due, then the wait to start" dark grey, while every chart draws the
    # tick and the line in the run's task colour: in the overrun comparison a pale brown
    # nothing on the chart matched.  The key draws it in the colour the chart does, or,
    # where a chart draws it in several task colours, says so.
    charts = {
        "overrun": overrun_comparison(simulate_overrun(period=60, duration=150, horizon=600)),
        "gantt": gantt(to_frame([
            R("t1", "backup", 1, T0, T0, 0, T0 + 30, T0 + 300, True),
            R("t2", "report", 1, T0, T0, 1, T0 + 60, T0 + 120, True),
        ])),
    }  # fmt: skip
    for name, figure in charts.items():
        (legend,) = [key for ax in figure.axes if (key := ax.get_legend()) is not None]
        (handle, text), *_ = [
            (h, t.get_text()) for h, t in zip(legend.legend_handles, legend.get_texts(),
                                               strict=True)
            if t.get_text().startswith("due, then the wait to start")
        ]  # fmt: skip
        drawn = {
            rounded(colour)
            for ax in figure.axes for mark in ax.collections
            if mark.get_gid() == "due" and isinstance(mark, LineCollection)
            for colour in mark.get_colors()
        }  # fmt: skip
        assert drawn, name
        assert isinstance(handle, Line2D)
        keyed = rounded(handle.get_color())
        if len(drawn) == 1:
            assert drawn == {keyed}, name
            assert text == "due, then the wait to start", name
        else:
            assert text == "due, then the wait to start\n(task's colour)", name


def rounded(colour: Any) -> tuple[float, ...]:
    """A colour as RGBA, to three places."""
    return tuple(round(float(channel), 3) for channel in to_rgba(colour))


# -- titles --------------------------------------------------------------------------------


def test_every_chart_writes_its_title_on_the_left_at_one_size() -> None:
    # The cluster timeline and the fencing comparison wrote theirs centred at 10 points,
    # every other chart on the left at the title size; the overrun comparison's empty
    # panel titled itself larger than its neighbours.
    from lldsched.sim import ClusterScenario, ClusterTask, simulate_cluster
    from lldsched.views.plots import cluster_timeline, fencing_comparison
    from lldsched.views.plots.lab import (
        cancel_cost,
        listener_latency,
        overrun_pileup,
        polling_tradeoff,
        wheel_costs,
    )

    result = simulate_cluster(
        ClusterScenario(nodes=3, tasks=(ClusterTask("report", every=60.0, duration=5.0),),
                        horizon=300.0)
    )  # fmt: skip
    frame = to_frame([R("t1", "backup", 1, T0, T0, 0, T0 + 30, T0 + 300, True)])
    charts = {
        "gantt": gantt(frame),
        "lateness_over_time": lateness_over_time(frame),
        "lateness_distribution": lateness_distribution(frame),
        "utilisation": utilisation_plot(frame, workers=1),
        "cluster_timeline": cluster_timeline(result),
        "fencing_comparison": fencing_comparison([result]),
        "polling_tradeoff": polling_tradeoff([("Condition.wait", 0.0, 0.2), ("poll", 90.0, 4.0)]),
        "cancel_cost": cancel_cost([1_000, 10_000], [0.5, 0.6], [80.0, 1_500.0]),
        "listener_latency": listener_latency([0, 1], [1.0, 1.0], [2.0, 50.0]),
    }
    sizes: set[float] = set()
    for name, figure in charts.items():
        render(figure)
        ax = figure.axes[0]
        assert ax.get_title(loc="center") == "" and ax.get_title(loc="left"), name
        title = left_title(ax)
        sizes.add(float(title.get_fontsize()))
        assert title.get_window_extent().x1 <= figure.bbox.x1, name  # broken, not cut off
    assert len(sizes) == 1, sizes
    # Figures of panels: the figure's title on the left, at that size; the panels' a size
    # under it (the overrun comparison's empty panel was titled a size larger).
    panelled = [
        overrun_comparison({
            **simulate_overrun(period=60, duration=150, horizon=600),
            Overlap.ALLOW: to_frame([]),
        }),
        overrun_pileup({"SKIP": ([(0.0, 0.0), (7200.0, 0.0)], [(0.0, 0.0)])}),
        wheel_costs([1, 10], {"heap": [1, 1], "wheel": [2, 2]}, {"heap": [1, 2]}),
    ]  # fmt: skip
    panels: set[float] = set()
    for figure in panelled:
        render(figure)
        suptitle = figure._suptitle  # type: ignore[attr-defined]
        assert suptitle is not None and suptitle.get_ha() == "left", figure.get_suptitle()
        assert float(suptitle.get_fontsize()) in sizes, figure.get_suptitle()
        for ax in figure.axes:
            if ax.get_title(loc="left"):
                assert ax.get_title(loc="center") == ""
                panels.add(float(left_title(ax).get_fontsize()))
    assert len(panels) == 1 and max(panels) < min(sizes), panels


def left_title(ax: Any) -> Text:
    """The text object of the title written on the left of ``ax``."""
    text = ax.get_title(loc="left")
    (found,) = [t for t in ax.findobj(Text) if t is not ax.title and t.get_text() == text]
    assert isinstance(found, Text)
    return found


# -- a lateness distribution with nothing late --------------------------------------------


def test_a_distribution_where_every_run_was_on_time_says_so_on_an_axis_of_few_ticks() -> None:
    # Every run on time: an axis from 0 to 0.2 s ticked every 0.025, and a single line
    # at 0 that read as a chart of nothing.
    on_time = to_frame([
        R(f"t{k}", name, 1, T0 + 60 * i, T0 + 60 * i, k, T0 + 60 * i, T0 + 60 * i + 1, True)
        for i in range(5) for k, name in enumerate(("tick", "tock"))
    ])  # fmt: skip
    figure = lateness_distribution(on_time)
    render(figure)
    ax = figure.axes[0]
    low, high = ax.get_xlim()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert 2 <= len(ticks) <= 5, ticks
    assert all(float(tick) * 10 == int(float(tick) * 10) for tick in ticks), ticks
    assert low < 0 <= float(ticks[0]) and high >= 1.0
    assert "every run started on time" in all_text(figure)
    late = to_frame([R("t1", "tick", 1, T0, T0, 0, T0 + 5, T0 + 6, True)])
    assert "every run started on time" not in all_text(lateness_distribution(late))


def _runs_every(hours: float, days: float, start: str) -> pd.DataFrame:
    """A run of five minutes every ``hours`` for ``days`` from ``start``."""
    first = pd.Timestamp(start).timestamp()
    return to_frame([
        R("t1", "sync", 1, first + at, first + at, 0, first + at, first + at + 300, True)
        for at in np.arange(0, days * 86400 + 1, hours * 3600).tolist()
    ])  # fmt: skip


def _ticks_charts(frame: pd.DataFrame) -> list[Figure]:
    return [
        gantt(frame, tz="Europe/Berlin"),
        lateness_over_time(frame, tz="Europe/Berlin"),
        utilisation_plot(frame, workers=1, tz="Europe/Berlin"),
    ]


@pytest.mark.parametrize(
    "monday", ["2026-03-23T00:00:00+01:00", "2026-10-19T00:00:00+02:00"], ids=["march", "october"]
)
def test_a_week_across_a_change_of_summer_time_is_ticked_at_its_midnights(monday: str) -> None:
    # Before: a week of Europe/Berlin in which the clocks go forward was ticked every 23
    # hours (the short Sunday taken for the locator's step), "Mar-23", "23:00", "22:00",
    # "21:00" ... "18:00": a reader found no day on the axis and read hours going back.
    for figure in _ticks_charts(_runs_every(6, 7, monday)):
        ticks = _berlin_ticks(figure)
        assert len(ticks) >= 5, ticks
        for instant, label in ticks:
            wall = pd.Timestamp(instant, unit="s", tz="Europe/Berlin")
            assert (wall.hour, wall.minute) == (0, 0), ticks  # each a local midnight
            assert ":" not in label, ticks  # which reads as a day, not as a time


def test_ticks_hours_apart_across_spring_keep_the_locators_step() -> None:
    # Two and a half days across 29 March: ticked every 12 hours of local time; the night
    # the clocks go forward has a gap of 11 hours of real time between two of them, which
    # was taken for the step, so the axis was laid every 11 hours ("11:00", "22:00", ...).
    for figure in _ticks_charts(_runs_every(1, 2.5, "2026-03-28T00:00:00+01:00")):
        instants = [x for x, _ in _berlin_ticks(figure)]
        steps = {b - a for a, b in itertools.pairwise(instants)}
        assert len(steps) == 1, instants
        assert 86400 % steps.pop() == 0, instants  # a step that divides a day, as chosen


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires"])
@pytest.mark.parametrize("policies", [2, 1])
def test_the_overrun_panels_time_label_never_meets_its_date(tz: str, policies: int) -> None:
    # Before: a panel's "time (Europe/Berlin)" was printed over the date under its last
    # tick ("2026-Jan-05"), in the two panels SIMULATION.md draws and in a panel of one
    # policy in UTC: both sit under the tick labels, one centred, one on the right.
    runs = dict(list(simulate_overrun(period=300, duration=450).items())[:policies])
    figure = overrun_comparison(runs, tz=tz)
    render(figure)
    for ax in figure.axes:
        label, date = ax.xaxis.label, ax.xaxis.get_offset_text()
        assert label.get_text() == f"time ({tz})" and date.get_text()
        assert overlapping([label, date]) == [], (label.get_text(), date.get_text())


@pytest.mark.parametrize("tz", ["UTC", "America/Argentina/Buenos_Aires"])
def test_an_overrun_chart_of_one_policy_fits_its_figure_and_its_ticks_apart(tz: str) -> None:
    # A user's own runs under the policy they run (a week's compaction under SKIP): the
    # figure was 4.4 inches, the legend took half, and the panel left "21:0021:1021:20"
    # run together, its title cut at "runs 450" and its time label cut on the left.
    runs = simulate_overrun(period=300, duration=450)[OverrunPolicy.SKIP]
    skip: dict[OverrunPolicy | Overlap, list[ExecutionRecord]] = {OverrunPolicy.SKIP: runs}
    figure = overrun_comparison(skip, tz=tz)
    render(figure)
    (ax,) = figure.axes
    assert overlapping(ax.get_xticklabels()) == []
    width = figure.bbox.width
    for text in figure.findobj(Text):  # the title, the time label, the legend: all in
        if text.get_visible() and text.get_text():
            box = text.get_window_extent()
            assert box.x0 >= 0 and box.x1 <= width, (text.get_text(), box, width)


def test_the_ticks_either_side_of_the_clocks_going_forward_say_their_zones() -> None:
    # The night of 29 March in Europe/Berlin, zoomed to three hours: ticks half an hour
    # apart read "01:00", "01:30", "03:00", "03:30", evenly spaced, with nothing to say
    # the hour between 01:30 and 03:00 did not happen (a reader looked for 90 minutes of
    # missing runs). The two ticks either side of the change say their zones, as the two
    # "02:00" of the night the clocks go back do.
    frame = _runs_every(0.25, 0.125, "2026-03-29T00:00:00+01:00")
    for figure in _ticks_charts(frame):
        ticks = [(x, label) for x, label in _berlin_ticks(figure) if label]
        change = pd.Timestamp("2026-03-29T01:00:00Z").timestamp()
        before = max(i for i, (x, _) in enumerate(ticks) if x < change)
        zoned = [label for _, label in ticks if "\n" in label]
        assert zoned == [ticks[before][1], ticks[before + 1][1]], ticks  # those two alone
        assert zoned[0].endswith("\nCET") and zoned[1] == "03:00\nCEST", ticks
