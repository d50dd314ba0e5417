"""What every plot shares: the figure class, axes and time helpers, task colours and
legends, and the bars of runs (used by the Gantt chart and the overrun comparison).

matplotlib is imported here and nowhere else in the package (with pandas and numpy
through :mod:`lldsched.views.frames`); without it, importing :mod:`lldsched.views.plots`
names the extra to install.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable, Sequence
from datetime import tzinfo
from typing import Any, cast

from lldsched.schedules.cron.zone import zone_info
from lldsched.views import missing_extra
from lldsched.views.frames import ran  # raises, naming the extra, without pandas

try:
    import matplotlib.dates as _mdates
    from matplotlib import colormaps
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ImportError as exc:  # exercised by a test that hides matplotlib
    raise missing_extra("lldsched.views.plots", "matplotlib", exc) from exc

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError

__all__ = [
    "DETAIL_RUNS",
    "MAX_LEGEND_TASKS",
    "SHORT_RUN",
    "Axes",
    "Figure",
    "Line2D",
    "Patch",
    "PlotFigure",
    "ran",
    "task_colours",
]

MAX_LEGEND_TASKS = 12
"""Tasks named in a legend; the rest are summed up as "+ n more"."""

DETAIL_RUNS = 200
"""Up to this many runs every due time gets a tick; beyond it only late runs get their
wait line (a tick per run would be a smear) and failed runs also get a stroke (hatching
a bar narrower than a pixel shows nothing)."""

SHORT_RUN = 1 / 300
"""Up to :data:`DETAIL_RUNS` runs, a run shorter than this fraction of the chart's time
span (about three pixels at the default size) is also drawn as a diamond at its start,
so a one-second run in an hour-long chart is not a hairline nobody sees."""

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
    return zone_info(tz)  # ScheduleError, a ValidationError, naming a bad one


def _dates(column: pd.Series[Any]) -> Array:
    """A tz-aware datetime column as matplotlib date numbers (days since its epoch)."""
    naive = column.dt.tz_convert("UTC").dt.tz_localize(None)
    return mdates.date2num(naive.to_numpy(dtype="M8[us]"))


def _time_axis(ax: Axes, tz: str | tzinfo, *, max_ticks: int | None = None) -> None:
    """Dates in ``tz`` on the x axis; ``max_ticks`` bounds the labels (a narrow panel)."""
    zone = _zone(tz)
    locator = mdates.AutoDateLocator(tz=zone, maxticks=max_ticks)
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


def _tasks(frame: pd.DataFrame) -> tuple[Array, list[str], Array]:
    """Each row's task code (order of first appearance), each code's legend label, and
    each code's colour (by task name: see :func:`task_colours`)."""
    codes, ids = pd.factorize(frame["task_id"])
    first = frame.drop_duplicates("task_id")
    names = dict(zip(first["task_id"].tolist(), first["name"].tolist(), strict=True))
    plain = [str(names[task_id]) for task_id in ids]
    repeated = {label for label in plain if plain.count(label) > 1}
    labels = [
        f"{label} ({task_id})" if label in repeated else label
        for label, task_id in zip(plain, ids, strict=True)
    ]
    colours = task_colours(plain)
    palette = np.array([colours[name] for name in plain]).reshape(-1, 4)
    return codes, labels, palette


Colour = tuple[float, float, float, float]

# tab20's ten dark shades, then its ten light ones: neighbouring slots differ in hue.
_SLOTS = [*range(0, 20, 2), *range(1, 20, 2)]
# Prefixed to a name before hashing.  Any constant gives a stable mapping; this one was
# picked (by trying salts) so the built-in scenario's ten tasks get ten different hues,
# nine of them dark: the kit's charts never show two of its tasks in one hue.
_SALT = "187249:"


def task_colours(names: Iterable[str]) -> dict[str, Colour]:
    """One colour per task name, the same in every chart: a name's colour is a slot of
    matplotlib's ``tab20`` picked by a CRC-32 of the (salted) name, so it does not depend on
    which other tasks a chart shows or in which order they ran.  Two names of one
    chart that hash to the same slot are told apart: in sorted order, the later takes
    the next free slot (beyond 20 names, colours repeat).  Stability comes first: two
    names may land on the dark and the light shade of one hue (the built-in scenario's
    ten do not)."""
    cmap = colormaps["tab20"]
    size = len(_SLOTS)
    taken: set[int] = set()
    colours: dict[str, Colour] = {}
    for name in sorted(set(names)):
        wanted = zlib.crc32(f"{_SALT}{name}".encode()) % size
        probes = [(wanted + probe) % size for probe in range(size)]
        slot = next((s for s in probes if s not in taken), wanted)
        taken.add(slot)
        red, green, blue, alpha = cmap(_SLOTS[slot])
        colours[name] = (float(red), float(green), float(blue), float(alpha))
    return colours


def _task_handles(labels: Sequence[str], colours: Array) -> list[Any]:
    handles: list[Any] = [
        Patch(facecolor=colours[i], label=label)
        for i, label in enumerate(labels[:MAX_LEGEND_TASKS])
    ]
    if len(labels) > MAX_LEGEND_TASKS:
        more = len(labels) - MAX_LEGEND_TASKS
        handles.append(Patch(facecolor="white", edgecolor="none", label=f"+ {more} more tasks"))
    return handles


def _mark_handles(frame: pd.DataFrame, detail: bool = True, *, short: bool = False) -> list[Any]:
    handles: list[Any] = []
    failed, timed_out = _failures(frame)
    if failed.any():
        handles.append(
            Patch(facecolor="white", edgecolor=_DUE_COLOUR, hatch=_HATCH, label="failed")
            if detail
            else Line2D([], [], color=_DUE_COLOUR, marker="|", markersize=9, linestyle="none",
                        label="failed")
        )  # fmt: skip
    if timed_out.any():
        handles.append(
            Patch(facecolor="white", edgecolor=_TIMEOUT_COLOUR, linewidth=2.0, label="timed out")
        )
    handles.append(
        Line2D([], [], color=_DUE_COLOUR, marker="|", markersize=7, linewidth=1.5,
               label="due, then the wait to start")
    )  # fmt: skip
    if short:
        handles.append(
            Line2D([], [], color="white", marker="D", markersize=5, markeredgecolor=_DUE_COLOUR,
                   markeredgewidth=0.5, linestyle="none", label="a run too short for a bar")
        )  # fmt: skip
    return handles


def _failures(frame: pd.DataFrame) -> tuple[Array, Array]:
    """Which runs failed (raised) and which timed out, from the ``ok`` and ``timed_out``
    columns: a run that gave its slot up (outcome ``given_up``) is marked as either."""
    ok, timed_out = frame["ok"].to_numpy(dtype=bool), frame["timed_out"].to_numpy(dtype=bool)
    return ~ok & ~timed_out, timed_out


def _legend(ax: Axes, handles: list[Any]) -> None:
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
        fontsize="small", frameon=False,
    )  # fmt: skip


def _draw_runs(
    ax: Axes,
    frame: pd.DataFrame,
    lane: Array,
    colours: Array,
    *,
    detail: bool,
    span: tuple[float, float] | None = None,
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
    failed, timed_out = _failures(frame)
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
    low, high = float(min(due.min(), start.min())), float(finish.max())
    if detail:  # a run too short to see as a bar gets a marker at its start
        shown = span if span is not None else (low, high)
        short = (finish - start) < (shown[1] - shown[0]) * SHORT_RUN
        if short.any():
            ax.scatter(
                start[short], lane[short], marker="D", s=22, c=colours[short],
                edgecolors=_DUE_COLOUR, linewidths=0.5, zorder=6, gid="short_runs",
            )  # fmt: skip
    return low, high


def _set_xlim(ax: Axes, low: float, high: float) -> None:
    span = high - low or 1 / 1440  # a minute, for a single instant
    ax.set_xlim(low - span * 0.01, high + span * 0.01)


def _empty(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", transform=ax.transAxes, ha="center", va="center")


# -- the plots -----------------------------------------------------------------------
