"""Plots: worker occupancy, overrun behaviour, lateness and utilisation, from a frame.

Every function takes a frame from :func:`lldsched.frames.to_frame` and returns a
matplotlib :class:`~matplotlib.figure.Figure`, or draws on the ``ax=`` it is
given and returns that axes' figure.  Nothing here touches pyplot: figures are
built with the object-oriented API (``Figure()``, not ``plt.figure()``), so they
are safe to make from any thread, never pop up a window, and never call pyplot's
``show``.  Show one in a notebook by leaving it as a cell's value (the
figures these functions make render themselves as PNG, with or without
``%matplotlib inline``), or save it with ``fig.savefig("out.png")`` (the format's
own canvas is picked, Agg for PNG, without choosing a global backend).

* :func:`gantt`: a lane per worker (or per task), a bar per run coloured by task,
  failed runs hatched, timed-out runs outlined, each run's due time marked with a
  tick and a line to its start, so lateness shows.  All bars are one
  ``PolyCollection`` and all due marks one ``LineCollection``: 100,000 runs draw
  in a second or two.
* :func:`overrun_comparison`: ``SKIP`` against ``CATCH_UP`` side by side for a
  fixed-rate task whose runs outlast its period (:func:`simulate_overrun` makes
  the two frames on a :class:`~lldsched.sim.Simulation`).
* :func:`lateness_over_time`, :func:`lateness_distribution` (per task) and
  :func:`utilisation_plot` (busy fraction per worker per interval).

Time axes show timezone-aware instants in the zone given as ``tz`` (default UTC).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any, cast
from zoneinfo import ZoneInfo

from lldsched.frames import ran, to_frame, utilisation  # raises, naming the extra, without pandas

try:
    import matplotlib.dates as _mdates
    from matplotlib import colormaps
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ImportError as exc:  # pragma: no cover - exercised by a test that hides matplotlib
    raise ImportError(
        f"lldsched.plots needs matplotlib ({exc}); "
        "install the extra: pip install 'lldsched[notebook]'"
    ) from exc

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError
from lldsched.model import OverrunPolicy
from lldsched.schedules.simple import FixedRate
from lldsched.sim.scenario import SCENARIO_START
from lldsched.sim.simulation import Simulation

__all__ = [
    "PlotFigure",
    "gantt",
    "lateness_distribution",
    "lateness_over_time",
    "overrun_comparison",
    "simulate_overrun",
    "utilisation_plot",
]

MAX_LEGEND_TASKS = 12
"""Tasks named in a legend; the rest are summed up as "+ n more"."""

DETAIL_RUNS = 200
"""Up to this many runs every due time gets a tick; beyond it only late runs get their
wait line (a tick per run would be a smear) and failed runs also get a stroke (hatching
a bar narrower than a pixel shows nothing)."""

_BAR_HEIGHT = 0.62
_BAR_GAP = 1 - _BAR_HEIGHT
_DUE_COLOUR = "0.15"
_TIMEOUT_COLOUR = "black"
_HATCH = "////"

Array = Any  # numpy arrays, loosely typed at this module's boundary
mdates: Any = _mdates  # its date helpers carry no annotations


# -- helpers -------------------------------------------------------------------------


class PlotFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that renders itself as PNG in a notebook.

    Without pyplot no inline backend is registered for plain figures, so a figure
    left as a cell's value would show as text; this one draws itself instead.
    """

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return _root(ax), ax
    figure = PlotFigure(figsize=size, layout="constrained")
    return figure, figure.add_subplot()


def _root(ax: Axes) -> Figure:
    figure = ax.get_figure()
    while isinstance(figure, SubFigure):
        figure = figure.figure
    if not isinstance(figure, Figure):
        raise ValidationError(f"{ax!r} is not on a figure")
    return figure


def _zone(tz: str | tzinfo) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    try:
        return ZoneInfo(tz)
    except (ValueError, KeyError, TypeError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ValidationError(f"unknown time zone {tz!r}") from exc


def _dates(column: pd.Series[Any]) -> Array:
    """A tz-aware datetime column as matplotlib date numbers (days since its epoch)."""
    naive = column.dt.tz_convert("UTC").dt.tz_localize(None)
    return mdates.date2num(naive.to_numpy(dtype="M8[us]"))


def _time_axis(ax: Axes, tz: str | tzinfo) -> None:
    zone = _zone(tz)
    locator = mdates.AutoDateLocator(tz=zone)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=zone))
    ax.set_xlabel(f"time ({zone})")


def _seconds(column: pd.Series[Any]) -> Array:
    return column.to_numpy(dtype="m8[us]").astype(np.int64) / 1e6


def _unit(largest: float) -> tuple[float, str]:
    """A divisor and a name that keep ``largest`` seconds readable."""
    if largest >= 3 * 3600:
        return 3600.0, "h"
    if largest >= 180:
        return 60.0, "min"
    return 1.0, "s"


def _tasks(frame: pd.DataFrame) -> tuple[Array, list[str]]:
    """Each row's task code (order of first appearance) and each code's legend label."""
    codes, ids = pd.factorize(frame["task_id"])
    first = frame.drop_duplicates("task_id")
    names = dict(zip(first["task_id"].tolist(), first["name"].tolist(), strict=True))
    labels = [str(names[task_id]) for task_id in ids]
    repeated = {label for label in labels if labels.count(label) > 1}
    labels = [f"{label} ({task_id})" if label in repeated else label
              for label, task_id in zip(labels, ids, strict=True)]  # fmt: skip
    return codes, labels


def _palette(count: int) -> Array:
    name = "tab10" if count <= 10 else "tab20"
    cmap = colormaps[name]
    size = 10 if count <= 10 else 20
    return np.array([cmap(i % size) for i in range(max(count, 1))])


def _task_handles(labels: Sequence[str], colours: Array) -> list[Any]:
    handles: list[Any] = [
        Patch(facecolor=colours[i], label=label)
        for i, label in enumerate(labels[:MAX_LEGEND_TASKS])
    ]
    if len(labels) > MAX_LEGEND_TASKS:
        more = len(labels) - MAX_LEGEND_TASKS
        handles.append(Patch(facecolor="white", edgecolor="none", label=f"+ {more} more tasks"))
    return handles


def _mark_handles(frame: pd.DataFrame, detail: bool = True) -> list[Any]:
    handles: list[Any] = []
    outcome = frame["outcome"]
    if (outcome == "failed").any():
        handles.append(
            Patch(facecolor="white", edgecolor=_DUE_COLOUR, hatch=_HATCH, label="failed")
            if detail
            else Line2D([], [], color=_DUE_COLOUR, marker="|", markersize=9, linestyle="none",
                        label="failed")
        )  # fmt: skip
    if (outcome == "timed_out").any():
        handles.append(
            Patch(facecolor="white", edgecolor=_TIMEOUT_COLOUR, linewidth=2.0, label="timed out")
        )
    handles.append(
        Line2D([], [], color=_DUE_COLOUR, marker="|", markersize=7, linewidth=1.5,
               label="due, then the wait to start")
    )  # fmt: skip
    return handles


def _legend(ax: Axes, handles: list[Any]) -> None:
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
        fontsize="small", frameon=False,
    )  # fmt: skip


def _draw_runs(
    ax: Axes, frame: pd.DataFrame, lane: Array, colours: Array, *, detail: bool
) -> tuple[float, float]:
    """Bars, failure hatching, timeout outlines and due marks for the rows of ``frame``
    on lanes ``lane`` (y positions); returns the x range they cover."""
    start, finish, due = _dates(frame["start"]), _dates(frame["finish"]), _dates(frame["due"])
    low, high = lane - _BAR_HEIGHT / 2, lane + _BAR_HEIGHT / 2
    boxes = np.stack(
        [np.column_stack(corner) for corner in
         ((start, low), (start, high), (finish, high), (finish, low))],
        axis=1,
    )  # fmt: skip  # (runs, 4 corners, xy)
    bars = PolyCollection(
        cast(Any, boxes), facecolors=colours, edgecolors="none", linewidths=0.0, zorder=2,
    )  # fmt: skip
    # Unsnapped, a run narrower than a pixel still shades it in proportion to its
    # length, so at 100,000 runs a lane's colour density is its occupancy.
    bars.set_snap(False)
    bars.set_gid("runs")
    ax.add_collection(bars, autolim=False)
    outcome = frame["outcome"].to_numpy()
    failed = outcome == "failed"
    if failed.any():
        hatched = PolyCollection(
            cast(Any, boxes[failed]), facecolors="none", edgecolors=_DUE_COLOUR, linewidths=0.0,
            hatch=_HATCH, zorder=3,
        )  # fmt: skip
        hatched.set_gid("failed")
        ax.add_collection(hatched, autolim=False)
        if not detail:  # hatching a bar narrower than a pixel shows nothing: add a stroke
            strokes = np.stack(
                [np.column_stack((start, low)), np.column_stack((start, high))], axis=1
            )[failed]
            stroked = LineCollection(
                cast(Any, strokes), colors=_DUE_COLOUR, linewidths=0.8, zorder=3
            )
            stroked.set_gid("failed_strokes")
            ax.add_collection(stroked, autolim=False)
    timed_out = outcome == "timed_out"
    if timed_out.any():
        outlined = PolyCollection(
            cast(Any, boxes[timed_out]), facecolors="none", edgecolors=_TIMEOUT_COLOUR,
            linewidths=2.0, zorder=4,
        )  # fmt: skip
        outlined.set_gid("timed_out")
        ax.add_collection(outlined, autolim=False)
    # A run waiting for its start is not on the worker yet, so its wait is drawn just
    # under its lane's bars, in the task's colour: a tick at the due time and a line
    # to the start.  Nothing is drawn over another run's bar.
    below = high + _BAR_GAP / 3  # inside the gap between lanes
    late = start > due
    waits = np.stack([np.column_stack((due, below)), np.column_stack((start, below))], axis=1)
    segments, segment_colours = [waits[late]], [colours[late]]
    if detail:
        tick = np.column_stack((due, high)), np.column_stack((due, high + _BAR_GAP * 0.45))
        segments.append(np.stack(tick, axis=1))
        segment_colours.append(colours)
    marks = LineCollection(
        cast(Any, np.concatenate(segments)), colors=np.concatenate(segment_colours),
        linewidths=1.2 if detail else 0.6, zorder=5,
    )  # fmt: skip
    marks.set_gid("due")
    ax.add_collection(marks, autolim=False)
    return float(min(due.min(), start.min())), float(finish.max())


def _set_xlim(ax: Axes, low: float, high: float) -> None:
    span = high - low or 1 / 1440  # a minute, for a single instant
    ax.set_xlim(low - span * 0.01, high + span * 0.01)


def _empty(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", transform=ax.transAxes, ha="center", va="center")


# -- the plots -----------------------------------------------------------------------


def gantt(
    frame: pd.DataFrame,
    by: str = "worker",
    ax: Axes | None = None,
    tz: str | tzinfo = "UTC",
    *,
    title: str | None = None,
) -> Figure:
    """Worker occupancy: a lane per worker (``by="worker"``) or per task (``by="task"``),
    a bar per run from start to finish, one colour per task (with a legend), failed
    runs hatched, timed-out runs outlined, and each run's due time marked by a tick
    with a line to its start, so lateness shows as the line's length.  The time axis
    is in zone ``tz``.

    Bars have no outline and are not snapped to pixels, so a run narrower than a
    pixel shades it in proportion to its length: a lane's colour density is its
    occupancy, at ten runs or at 100,000.  Up to :data:`DETAIL_RUNS` runs every due
    time gets a tick; beyond that only late runs get their wait line, so the chart
    shows occupancy and where waits pile up.
    """
    if by not in ("worker", "task"):
        raise ValidationError(f'by must be "worker" or "task", got {by!r}')
    frame = ran(frame)  # a slot a misfire policy decided ran on no worker
    codes, labels = _tasks(frame)
    if by == "worker":
        workers = sorted(frame["worker"].unique().tolist())
        lane = np.searchsorted(np.array(workers, dtype=np.int64), frame["worker"].to_numpy())
        lane_labels = [f"worker {w}" for w in workers]
    else:
        lane, lane_labels = codes, labels
    lanes = len(lane_labels)
    figure, ax = _axes(ax, (11.0, 1.6 + 0.45 * max(lanes, 2)))
    palette = _palette(len(labels))
    detail = len(frame) <= DETAIL_RUNS
    if len(frame):
        low, high = _draw_runs(ax, frame, lane.astype(float), palette[codes], detail=detail)
        _set_xlim(ax, low, high)
        _legend(ax, [*_task_handles(labels, palette), *_mark_handles(frame, detail)])
    else:
        _empty(ax, "runs")
    ax.set_yticks(range(lanes), lane_labels)
    ax.set_ylim(max(lanes, 1) - 0.5, -0.5)
    ax.set_ylabel("worker" if by == "worker" else "task")
    ax.grid(axis="x", color="0.9", zorder=0)
    ax.set_axisbelow(True)
    _time_axis(ax, tz)
    ax.set_title(title if title is not None else _gantt_title(frame, by, lanes), loc="left")
    return figure


def _gantt_title(frame: pd.DataFrame, by: str, lanes: int) -> str:
    outcome = frame["outcome"]
    failed = int((outcome == "failed").sum())
    timed_out = int((outcome == "timed_out").sum())
    what = "workers" if by == "worker" else "tasks"
    return f"{len(frame):,} runs on {lanes} {what}: {failed:,} failed, {timed_out:,} timed out"


def simulate_overrun(
    period: float = 60.0,
    duration: float = 150.0,
    *,
    horizon: float | None = None,
    start: float | datetime = SCENARIO_START,
) -> dict[OverrunPolicy, pd.DataFrame]:
    """Simulate one fixed-rate task (every ``period`` seconds, each run ``duration``
    seconds, one worker) under ``SKIP`` and under ``CATCH_UP`` for ``horizon``
    seconds (default ten periods); returns each policy's frame of finished runs."""
    if not duration > 0 or not period > 0:
        raise ValidationError(
            f"period and duration must be > 0, got period={period!r} duration={duration!r}"
        )
    seconds = horizon if horizon is not None else 10 * period
    frames = {}
    for policy in (OverrunPolicy.SKIP, OverrunPolicy.CATCH_UP):
        sim = Simulation(workers=1, start=start)
        sim.schedule(
            f"every {period:g} s, runs {duration:g} s",
            FixedRate(period, on_overrun=policy),
            duration=duration,
        )
        frames[policy] = to_frame(sim.run_for(seconds))
    return frames


def overrun_comparison(
    frames: Mapping[OverrunPolicy, pd.DataFrame] | None = None,
    *,
    period: float = 60.0,
    duration: float = 150.0,
    horizon: float | None = None,
    axes: Sequence[Axes] | None = None,
    tz: str | tzinfo = "UTC",
) -> Figure:
    """``SKIP`` and ``CATCH_UP`` side by side: each run on its own row (first at the
    top), a bar from start to finish, its due time ticked with a line to its start,
    and the fixed-rate grid of slots as dotted lines.  ``frames`` maps each policy to
    a frame; without it, :func:`simulate_overrun` makes them from ``period``,
    ``duration`` and ``horizon``.  ``axes`` is a pair to draw on."""
    if frames is None:
        frames = simulate_overrun(period, duration, horizon=horizon)
    policies = [p for p in (OverrunPolicy.SKIP, OverrunPolicy.CATCH_UP) if p in frames]
    if len(policies) != 2:
        raise ValidationError(f"frames must hold SKIP and CATCH_UP, got {[p.name for p in frames]}")
    figure: Figure
    if axes is None:
        figure = PlotFigure(figsize=(12.0, 4.2), layout="constrained")
        pair = list(figure.subplots(1, 2, sharex=True, sharey=True))
    else:
        pair = list(axes)
        if len(pair) != 2:
            raise ValidationError(f"axes must be two Axes, got {len(pair)}")
        figure = _root(pair[0])
    rows = max(max(len(frames[p]) for p in policies), 1)
    colour = _palette(1)[0]
    spans = []
    for ax, policy in zip(pair, policies, strict=True):
        frame = frames[policy]
        if len(frame):
            lane = np.arange(len(frame), dtype=float)
            colours = np.repeat(colour[None, :], len(frame), axis=0)
            spans.append(_draw_runs(ax, frame, lane, colours, detail=True))
            worst = frame["lateness"].max().total_seconds()
            divisor, unit = _unit(worst)
            ax.set_title(
                f"{policy.name}: {len(frame)} runs, worst lateness {worst / divisor:.3g} {unit}",
                loc="left",
            )
        else:
            _empty(ax, "runs")
            ax.set_title(policy.name, loc="left")
        ax.set_yticks(range(rows), [str(n) for n in range(1, rows + 1)])
        ax.set_ylim(rows - 0.5, -0.5)
        ax.set_ylabel("run")
        _time_axis(ax, tz)
    if spans:
        low = min(span[0] for span in spans)
        high = max(span[1] for span in spans)
        _set_xlim(pair[0], low, high)
        step = _grid_step(frames, policies)
        if step:
            grid = np.arange(low, high + step, step)
            for ax in pair:
                for x in grid:
                    ax.axvline(x, color="0.75", linestyle=":", linewidth=0.8, zorder=1)
    first = frames[policies[0]]
    name = str(first["name"].iloc[0]) if len(first) else "fixed-rate task"
    figure.suptitle(f"Overrun policy: {name}", x=0.01, ha="left")
    handles = [Patch(facecolor=colour, label="run"), *_mark_handles(first.iloc[:0])]
    handles.append(Line2D([], [], color="0.75", linestyle=":", label="fixed-rate slots"))
    _legend(pair[1], handles)
    return figure


def _grid_step(frames: Mapping[OverrunPolicy, pd.DataFrame], policies: list[Any]) -> float:
    """The slot period, in days, read from the CATCH_UP frame (one run per slot)."""
    dues = frames[policies[-1]]["due"]
    if len(dues) < 2:
        return 0.0
    return float((dues.iloc[1] - dues.iloc[0]).total_seconds()) / 86400


def lateness_over_time(
    frame: pd.DataFrame, ax: Axes | None = None, tz: str | tzinfo = "UTC"
) -> Figure:
    """Each run's lateness (start minus due) at its due time, one colour per task."""
    frame = ran(frame)
    figure, ax = _axes(ax, (11.0, 4.0))
    codes, labels = _tasks(frame)
    palette = _palette(len(labels))
    lateness = _seconds(frame["lateness"])
    divisor, unit = _unit(float(lateness.max()) if len(frame) else 0.0)
    if len(frame):
        due = _dates(frame["due"])
        size = 14 if len(frame) <= DETAIL_RUNS else 3
        for code, label in enumerate(labels):
            mine = codes == code
            ax.scatter(due[mine], lateness[mine] / divisor, s=size, color=palette[code],
                       label=label if code < MAX_LEGEND_TASKS else "_", linewidths=0)  # fmt: skip
        _set_xlim(ax, float(due.min()), float(due.max()))
        _legend(ax, _task_handles(labels, palette))
    else:
        _empty(ax, "runs")
    ax.set_ylabel(f"lateness ({unit})")
    ax.grid(color="0.9")
    ax.set_axisbelow(True)
    _time_axis(ax, tz)
    ax.set_title("Lateness over time: how long each run waited past its due time", loc="left")
    return figure


def lateness_distribution(frame: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Per task, the fraction of runs that started within a given lateness (an
    empirical CDF); the dotted line marks 95 %, so where a task's curve crosses it
    is its 95th percentile."""
    frame = ran(frame)
    figure, ax = _axes(ax, (8.0, 4.5))
    codes, labels = _tasks(frame)
    palette = _palette(len(labels))
    lateness = _seconds(frame["lateness"])
    divisor, unit = _unit(float(lateness.max()) if len(frame) else 0.0)
    for code, label in enumerate(labels):
        values = np.sort(lateness[codes == code]) / divisor
        fraction = np.arange(1, len(values) + 1) / len(values)
        ax.step(np.concatenate(([0.0], values)), np.concatenate(([0.0], fraction)),
                where="post", color=palette[code], linewidth=1.5,
                label=label if code < MAX_LEGEND_TASKS else "_")  # fmt: skip
    if not len(frame):
        _empty(ax, "runs")
    ax.axhline(0.95, color="0.5", linestyle=":", linewidth=1)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=-0.02 * (float(lateness.max()) / divisor if len(frame) else 1.0))
    ax.set_xlabel(f"lateness ({unit})")
    ax.set_ylabel("fraction of runs started")
    ax.grid(color="0.9")
    ax.set_axisbelow(True)
    if len(labels):
        _legend(ax, _task_handles(labels, palette))
    ax.set_title("Lateness per task", loc="left")
    return figure


def utilisation_plot(
    frame: pd.DataFrame,
    workers: int | Sequence[int],
    freq: str = "1h",
    ax: Axes | None = None,
    tz: str | tzinfo = "UTC",
) -> Figure:
    """Each worker's busy fraction per ``freq`` interval as a heat map (a lane per
    worker), with a colour bar; the title gives the mean over all workers."""
    table = utilisation(frame, workers, freq)
    figure, ax = _axes(ax, (11.0, 1.8 + 0.4 * max(len(table.columns), 2)))
    lanes = len(table.columns)
    if len(table):
        step = (table.index[1] - table.index[0]) if len(table) > 1 else pd.Timedelta(freq)
        edges = table.index.append(pd.DatetimeIndex([table.index[-1] + step]))
        x = _dates(pd.Series(edges))
        mesh = ax.pcolormesh(x, np.arange(lanes + 1) - 0.5, table.to_numpy().T,
                             vmin=0.0, vmax=1.0, cmap="viridis")  # fmt: skip
        figure.colorbar(mesh, ax=ax, label="busy fraction", pad=0.01)
        mean = float(table.to_numpy().mean())
        title = f"Worker utilisation per {freq}: mean {mean:.0%}"
    else:
        _empty(ax, "runs")
        title = f"Worker utilisation per {freq}"
    ax.set_yticks(range(lanes), [f"worker {w}" for w in table.columns])
    ax.set_ylim(max(lanes, 1) - 0.5, -0.5)
    ax.set_ylabel("worker")
    _time_axis(ax, tz)
    ax.set_title(title, loc="left")
    return figure
