"""The views on the frames users hit at the edges: no runs, one run, only slots decided
without a run, times lost or backwards, times without a zone, huge tables, what is no
frame at all.  Each view
either draws or refuses with a ValidationError that names the bad value."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from lldsched import ExecutionRecord, Outcome, OverrunPolicy, ValidationError
from lldsched.sim.overrun import simulate_overrun
from lldsched.views import plots
from lldsched.views.frames import mean_busy, task_summary, to_frame, utilisation
from lldsched.views.summaries import MOST_CELLS
from lldsched.views.tables import readable
from tests.conftest import T0

R = ExecutionRecord


def run(task: str, worker: int, start: float, finish: float, *, ok: bool = True) -> R:
    return R.of(
        task_id=task, name=task, attempt=1, due=start, slot=start, worker=worker,
        started=start, finished=finish, ok=ok,
    )  # fmt: skip


def decided(task: str, at: float, outcome: Outcome) -> R:
    return R.of(
        task_id=task, name=task, attempt=0, due=at, slot=at, worker=-1, started=at,
        finished=at, ok=False, misfire=outcome, error="decided",
    )  # fmt: skip


VIEWS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "gantt": plots.gantt,
    "gantt by task": lambda frame: plots.gantt(frame, by="task", tz="Europe/Berlin"),
    "lateness_over_time": lambda frame: plots.lateness_over_time(frame, tz="America/New_York"),
    "lateness_distribution": plots.lateness_distribution,
    "utilisation_plot": lambda frame: plots.utilisation_plot(frame, 2, "1h", tz="Asia/Kolkata"),
    "utilisation": lambda frame: utilisation(frame, 2, "1h"),
    "mean_busy": lambda frame: mean_busy(frame, 2, "1h"),
    "task_summary": task_summary,
    "readable": lambda frame: readable(frame, tz="Europe/Berlin"),
}
SPANS = ("gantt", "gantt by task", "utilisation_plot", "utilisation", "mean_busy")
"""The views that place each run from its start to its finish."""


@pytest.mark.parametrize(
    "records",
    [
        [],
        [run("a", 0, T0, T0 + 10)],
        [run("a", 0, T0, T0)],  # one run of no length
        [
            decided("a", T0, Outcome.MISSED),
            decided("b", T0 + 60, Outcome.SKIPPED),
            decided("c", T0 + 120, Outcome.COALESCED),
        ],
    ],
    ids=["no records", "one run", "one run of no length", "only decided slots"],
)
@pytest.mark.parametrize("view", list(VIEWS))
def test_every_view_takes_an_edge_frame(records: list[R], view: str) -> None:
    VIEWS[view](to_frame(records))


@pytest.mark.parametrize(
    ("started", "finished", "shown"),
    [
        (T0 + 100, float("nan"), "finish NaT"),  # a record whose finish was lost
        (float("nan"), T0 + 100, "start NaT"),
        (T0 + 100, T0 + 70, "finish 2026-01-05 09:01:10+00:00"),  # backwards: hand-made
    ],
)
@pytest.mark.parametrize("view", SPANS)
def test_a_run_without_a_start_and_a_finish_in_order_is_refused_naming_it(
    view: str, started: float, finished: float, shown: str
) -> None:
    # Before: utilisation counted a backwards run as -0.5 busy, a lost finish as
    # "2,561,575,567 intervals"; the Gantt chart raised matplotlib's "Axis limits
    # cannot be NaN or Inf".
    frame = to_frame([run("a", 0, T0, T0 + 10), run("b", 1, started, finished)])
    with pytest.raises(ValidationError, match=r"1 run without a start and a finish in order"):
        VIEWS[view](frame)
    with pytest.raises(ValidationError, match=re.escape("task 'b' attempt 1 (start ")) as error:
        VIEWS[view](frame)
    assert shown in str(error.value)


def test_the_bad_runs_named_are_the_first_three_and_a_count() -> None:
    frame = to_frame([run(f"t{i}", 0, T0 + i, T0 + i - 1) for i in range(5)])
    with pytest.raises(ValidationError, match=r"^5 runs without .*'t2' attempt 1 .* and 2 more$"):
        utilisation(frame, 1)


@pytest.mark.parametrize(
    "view", ["gantt", "lateness_over_time", "utilisation", "utilisation_plot", "mean_busy"]
)
@pytest.mark.parametrize("kind", ["naive", "text"])
def test_times_without_a_zone_are_refused_naming_the_column(view: str, kind: str) -> None:
    # Before: the charts raised pandas' "Cannot convert tz-naive timestamps" (or "Can
    # only use .dt accessor with datetimelike values" for text read back from a CSV)
    # and utilisation took naive times as UTC without a word.
    frame = to_frame([run("a", 0, T0, T0 + 10), run("b", 1, T0 + 60, T0 + 90)])
    for column in ("due", "slot", "start", "finish"):
        naive = frame[column].dt.tz_localize(None)
        frame[column] = naive if kind == "naive" else naive.astype(str)
    with pytest.raises(ValidationError, match=r"column '(due|start)' must hold instants with a"):
        VIEWS[view](frame)


@pytest.mark.parametrize("view", list(VIEWS))
def test_a_frame_without_a_column_a_view_reads_is_refused_naming_it(view: str) -> None:
    # Before: the charts and utilisation raised pandas' bare KeyError ('finish',
    # 'lateness', 'worker': "KeyError: 'finish'" and nothing else) where task_summary named
    # the column a cut-down frame lacks; the overrun comparison read "['error'] not in
    # index". Every column to_frame makes, dropped in turn: a view that reads it names it.
    frame = to_frame([
        run("a", 0, T0, T0 + 10), run("b", 1, T0 + 5, T0 + 90, ok=False),
        decided("a", T0 + 60, Outcome.SKIPPED),
    ])  # fmt: skip
    for column in frame.columns:
        try:
            VIEWS[view](frame.drop(columns=[column]))
        except ValidationError as error:
            assert f"no [{column!r}] column" in str(error), (column, error)
        except Exception as error:
            raise AssertionError(f"without {column!r}: {error!r}") from error


def test_the_overrun_comparison_refuses_a_frame_without_a_column_naming_it() -> None:
    runs = simulate_overrun(period=60, duration=150, horizon=600)
    for column in to_frame([]).columns:
        cut = {policy: to_frame(records).drop(columns=[column]) for policy, records in runs.items()}
        try:
            plots.overrun_comparison(cut)
        except ValidationError as error:
            assert f"no [{column!r}] column" in str(error), (column, error)
        except Exception as error:
            raise AssertionError(f"without {column!r}: {error!r}") from error


def test_times_in_another_zone_are_the_same_instants() -> None:
    frame = to_frame([run("a", 0, T0, T0 + 1800), run("b", 1, T0 + 600, T0 + 1200)])
    berlin = frame.copy()
    for column in ("due", "slot", "start", "finish"):
        berlin[column] = berlin[column].dt.tz_convert("Europe/Berlin")
    pd.testing.assert_frame_equal(utilisation(berlin, 2), utilisation(frame, 2))
    ax, ours = plots.gantt(berlin).axes[0], plots.gantt(frame).axes[0]
    assert ax.get_xlim() == ours.get_xlim()


def test_a_table_of_too_many_cells_is_refused_before_it_is_built() -> None:
    # 100,000 lanes by 1,001 seconds: before, 800 MB of grid, then as much again for its
    # shares, then the frame; a day at freq="1s" asked for 69 GB, twice.
    frame = to_frame([run("a", 0, T0, T0 + 1), run("b", 1, T0 + 1000, T0 + 1001)])
    with pytest.raises(
        ValidationError, match=r"^100,000 worker lanes by 1,001 intervals of freq='1s' is more"
    ):
        utilisation(frame, 100_000, "1s")
    assert MOST_CELLS == 100_000_000
    assert utilisation(frame, 100_000, "1000s").shape == (2, 100_000)  # 200,000 cells
    assert np.isclose(mean_busy(frame, 2, "1s"), 2 / (2 * 1001))


@pytest.mark.parametrize("view", ["lateness_over_time", "lateness_distribution"])
def test_a_run_of_no_known_lateness_is_refused_by_the_lateness_charts(view: str) -> None:
    # Before: left out, a task whose one run had no start read "c (never late)" in the
    # distribution's key, and a task with one such run among others a curve short of 100 %.
    lost = R.of(
        task_id="c", name="c", attempt=1, due=T0, slot=T0, worker=0, started=float("nan"),
        finished=T0 + 5, ok=True,
    )  # fmt: skip
    frame = to_frame([run("a", 0, T0, T0 + 10), lost])
    with pytest.raises(
        ValidationError, match=r"^1 run without a due time and a start, .*task 'c' attempt 1 "
    ) as error:
        VIEWS[view](frame)
    assert str(error.value).endswith("start NaT)")


def test_what_is_no_frame_or_no_row_is_refused_naming_it() -> None:
    # Before: gantt([1, 2]) raised TypeError (list indices must be integers), mark_wait's
    # run=5 TypeError ('int' object is not subscriptable), overrun_comparison of a list
    # AttributeError ('list' object has no attribute 'items').
    with pytest.raises(ValidationError, match=r"expected a DataFrame of runs.*got \[1, 2\]"):
        plots.gantt([1, 2])  # type: ignore[arg-type]
    frame = to_frame([run("a", 0, T0, T0 + 10), run("a", 0, T0 + 60, T0 + 70)])
    figure = plots.gantt(frame)
    with pytest.raises(ValidationError, match=r"run must be a row of the frame .* got 5$"):
        plots.mark_wait(figure, 5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r'by must be "worker" or "task", got \'lane\''):
        plots.mark_wait(figure, frame.iloc[0], by="lane")
    lost = frame.iloc[1].copy()
    lost["start"] = pd.NaT
    with pytest.raises(ValidationError, match=r"task 'a' attempt 1 has no wait to mark: .*NaT"):
        plots.mark_wait(figure, lost)
    with pytest.raises(ValidationError, match=r"runs must map OverrunPolicy .* got \[\["):
        plots.overrun_comparison([[run("a", 0, T0, T0 + 10)]])  # type: ignore[arg-type]


def test_the_overrun_comparison_refuses_a_run_it_cannot_place() -> None:
    # Before: matplotlib's "Axis limits cannot be NaN or Inf".
    records = [run("a", 0, T0, T0 + 10), run("a", 0, T0 + 60, float("nan"))]
    with pytest.raises(ValidationError, match=r"task 'a' attempt 1 \(start .*, finish NaT\)"):
        plots.overrun_comparison({OverrunPolicy.SKIP: records})


def _drawn(ax: Any) -> tuple[object, ...]:
    """What a chart draws on ``ax``: its artists, titles and axis labels."""
    titles = tuple(ax.get_title(loc) for loc in ("left", "center", "right"))
    return len(ax.get_children()), titles, ax.get_xlabel(), ax.get_ylabel()


@pytest.mark.parametrize(
    ("draw", "named"),
    [
        pytest.param(
            lambda frame, ax: plots.gantt(frame, ax=ax, tz="Mars/Base"),
            "'Mars/Base'",
            id="gantt tz",
        ),
        pytest.param(
            lambda frame, ax: plots.gantt(frame, ax=ax, span=5),  # type: ignore[arg-type]
            "span must be two",
            id="span 5",
        ),
        pytest.param(
            lambda frame, ax: plots.gantt(frame, ax=ax, span=(T0, T0 + 1, T0 + 2)),  # type: ignore[arg-type]
            f"got ({T0}, ",
            id="span of three",
        ),
        pytest.param(
            lambda frame, ax: plots.gantt(frame, ax=ax, depends_on=5),  # type: ignore[arg-type]
            "depends_on must map task ids to their upstream task ids",
            id="depends_on 5",
        ),
        pytest.param(
            lambda frame, ax: plots.gantt(frame, ax=ax, depends_on={"b": "a"}),
            "got {'b': 'a'}",
            id="depends_on a text",
        ),
        pytest.param(
            lambda frame, ax: plots.lateness_over_time(frame, ax=ax, tz="Mars/Base"),
            "'Mars/Base'",
            id="lateness_over_time tz",
        ),
        pytest.param(
            lambda frame, ax: plots.utilisation_plot(frame, 2, ax=ax, tz="Mars/Base"),
            "'Mars/Base'",
            id="utilisation_plot tz",
        ),
        pytest.param(
            lambda frame, ax: plots.overrun_comparison(
                {OverrunPolicy.SKIP: frame}, axes=[ax], tz="Mars/Base"
            ),
            "'Mars/Base'",
            id="overrun_comparison tz",
        ),
    ],
)
def test_a_bad_argument_is_refused_naming_it_before_the_axes_given_are_drawn_on(
    draw: Callable[[pd.DataFrame, Any], Any], named: str
) -> None:
    # Before: a bad tz was found once the runs were drawn, so the axes a notebook passed
    # kept bars, ticks and a colour bar beside the error; span=5 raised TypeError ('int'
    # object is not iterable), depends_on=5 TypeError with the bars drawn, and
    # depends_on={"b": "a"} (an upstream's id, not a tuple of them) drew no arrow.
    frame = to_frame([run("a", 0, T0, T0 + 10), run("b", 1, T0 + 5, T0 + 60)])
    figure = Figure()
    ax = figure.add_subplot()
    before = _drawn(ax)
    with pytest.raises(ValidationError, match=re.escape(named)):
        draw(frame, ax)
    assert _drawn(ax) == before
    assert figure.axes == [ax]  # no colour bar's axes either
