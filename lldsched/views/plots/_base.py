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
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.path import Path
except ImportError as exc:  # exercised by a test that hides matplotlib
    raise missing_extra("lldsched.views.plots", "matplotlib", exc) from exc

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError
from lldsched.views.plots.palette import TASK_LINES, TASK_MARKERS

__all__ = [
    "DETAIL_RUNS",
    "MAX_LANES",
    "MAX_LEGEND_TASKS",
    "MIN_LANE_INCHES",
    "OTHER_TASKS",
    "SHORT_RUN",
    "Axes",
    "Figure",
    "Line2D",
    "Patch",
    "PlotFigure",
    "describe",
    "ran",
    "task_colours",
]

MAX_LEGEND_TASKS = 12
"""Tasks named in a legend and drawn in their colour.  A chart of more tasks names the
ones that weigh most in it (the Gantt chart: the most run time; lateness: the latest),
draws the rest in one grey (:data:`OTHER_TASKS`), and sums them up as "+ n more tasks
(grey)": past twenty names ``tab20``'s colours would repeat, so a colour could not say
which task a run was."""

OTHER_TASKS = (0.72, 0.72, 0.72, 1.0)
"""The colour of the tasks a legend does not name (past :data:`MAX_LEGEND_TASKS`)."""

MAX_LANES = 40
"""Lanes a Gantt chart draws on a figure it makes; past this, the busiest lanes are kept
(in their order) and a note says how many were left out.  On an ``ax=`` given, as many
as fit its height at :data:`MIN_LANE_INCHES` a lane (and at most this many)."""

MIN_LANE_INCHES = 0.2
"""The least height of a lane whose label is in the default font (10 points, 0.14
inch): less, and neighbouring labels overlap."""

DETAIL_RUNS = 200
"""Up to this many runs every due time gets a tick; beyond it only late runs get their
wait line (a tick per run would be a smear) and a failed run is a stroke across the top
third of its bar instead of hatched (hatching a bar narrower than a pixel shows
nothing)."""

SHORT_RUN = 1 / 300
"""Up to :data:`DETAIL_RUNS` runs, a run shorter than this fraction of the chart's time
span (about three pixels at the default size) is also drawn as a diamond at its start,
so a one-second run in an hour-long chart is not a hairline nobody sees."""

_BAR_HEIGHT = 0.62
# Past DETAIL_RUNS, bars are drawn as paths of this many boxes each (of one colour):
# 470,000 runs build in 0.2 s and render in 0.8, against 4 s and 3 s for a path a run
# or 3 s to render one path a colour (Agg sorts a path's cells as one).
_BOXES_A_PATH = 500
_BAR_GAP = 1 - _BAR_HEIGHT
_DUE_COLOUR = "0.15"
_DUE_RGBA = to_rgba(_DUE_COLOUR)
_TIMEOUT_COLOUR = "black"
_HATCH = "////"

Array = Any  # numpy arrays, loosely typed at this module's boundary
mdates: Any = _mdates  # its date helpers carry no annotations


# -- helpers -------------------------------------------------------------------------


class PlotFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that renders itself as PNG in a notebook.

    Without pyplot no inline backend is registered for plain figures, so a figure
    left as a cell's value would show as text; this one draws itself instead.  Its
    text form (a notebook's ``text/plain`` beside the picture, what a screen reader or
    a text export reads) is :attr:`description`, which the PNG carries too (its
    ``Description`` field).
    """

    @property
    def description(self) -> str:
        """The figure in words: see :func:`describe`."""
        return describe(self)

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", metadata={"Description": self.description})
        return buffer.getvalue()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.description)


def describe(figure: Figure) -> str:
    """A figure in words, for a reader who cannot see it: its title, then each panel's
    title, what its axes measure and the entries of its key, one line a panel::

        Chart: Lateness per task
        x axis: lateness (s); y axis: fraction of runs started; key: backup, report

    Only what the figure already writes is read (titles, axis labels, legends, a colour
    bar's label), so a chart says in words what it says in text, never more."""
    lines = []
    suptitle = figure.get_suptitle()
    panels = [ax for ax in figure.get_axes() if not hasattr(ax, "_colorbar")]
    scales = [ax for ax in figure.get_axes() if hasattr(ax, "_colorbar")]
    if suptitle:
        lines.append(f"Chart: {_flat(suptitle)}")
    for ax in panels:
        titles = [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        said = "; ".join(_flat(title) for title in titles if title)
        parts = []
        if ax.axison:
            parts += [f"x axis: {_flat(ax.get_xlabel())}" if ax.get_xlabel() else "",
                      f"y axis: {_flat(ax.get_ylabel())}" if ax.get_ylabel() else ""]  # fmt: skip
        legend = ax.get_legend()
        if legend is not None:
            keys = [_flat(text.get_text()) for text in legend.get_texts()]
            parts.append("key: " + ", ".join(keys))
        parts = [part for part in parts if part]
        if said:
            lines.append(f"{'Panel' if suptitle else 'Chart'}: {said}")
        if parts:
            lines.append("; ".join(parts))
    for ax in scales:
        label = ax.get_ylabel() or ax.get_xlabel()
        if label:
            lines.append(f"colour scale: {_flat(label)}")
    return "\n".join(lines)


def _flat(text: str) -> str:
    """A title or label on one line (a chart breaks long ones)."""
    return " ".join(text.split())


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


def _tasks(
    frame: pd.DataFrame, weight: Array | None = None, *, how: str = "sum"
) -> tuple[Array, list[str], Array, list[int]]:
    """Each row's task code (order of first appearance), each code's legend label, each
    code's colour (by task name: see :func:`task_colours`), and the codes a legend
    names.  Up to :data:`MAX_LEGEND_TASKS` tasks, every one, in code order; past it,
    the :data:`MAX_LEGEND_TASKS` whose ``weight`` (one number per row, taken together
    per task by ``how``: ``"sum"``, ``"max"`` or ``"p95"``) is greatest, greatest first,
    and every other task's colour is :data:`OTHER_TASKS`."""
    codes, ids = pd.factorize(frame["task_id"])
    first = frame.drop_duplicates("task_id")
    names = dict(zip(first["task_id"].tolist(), first["name"].tolist(), strict=True))
    plain = [str(names[task_id]) for task_id in ids]
    repeated = {label for label in plain if plain.count(label) > 1}
    labels = [
        f"{label} ({task_id})" if label in repeated else label
        for label, task_id in zip(plain, ids, strict=True)
    ]
    if len(labels) <= MAX_LEGEND_TASKS:
        colours = task_colours(plain)
        palette = np.array([colours[name] for name in plain]).reshape(-1, 4)
        return codes, labels, palette, list(range(len(labels)))
    values = pd.Series(np.ones(len(codes)) if weight is None else weight)
    grouped = values.groupby(codes)
    score = grouped.quantile(0.95) if how == "p95" else grouped.agg(how)
    # A stable sort of the negated scores: ties keep the order of first appearance.
    ranked = np.argsort(-score.reindex(range(len(labels))).to_numpy(), kind="stable")
    named = [int(code) for code in ranked[:MAX_LEGEND_TASKS]]
    colours = _colours([plain[code] for code in named], taken=_GREYS)
    palette = np.tile(OTHER_TASKS, (len(labels), 1))
    for code in named:
        palette[code] = colours[plain[code]]
    return codes, labels, palette, named


Colour = tuple[float, float, float, float]

# tab20's ten dark shades, then its ten light ones: neighbouring slots differ in hue.
_SLOTS = [*range(0, 20, 2), *range(1, 20, 2)]
# Prefixed to a name before hashing.  Any constant gives a stable mapping; this one was
# picked (by trying salts) so the built-in scenario's ten tasks get ten different hues,
# nine of them dark: the kit's charts never show two of its tasks in one hue.
_SALT = "187249:"


def task_colours(names: Iterable[str]) -> dict[str, Colour]:
    """One colour per task name: a slot of matplotlib's ``tab20`` picked by a CRC-32 of
    the (salted) name, so it does not depend on the order tasks ran in, nor, but for
    a clash of hues, on which other tasks a chart shows.  Two names of one
    chart that hash to the same hue (``tab20`` has a dark and a light shade of ten hues,
    which a reader, colour-blind or not, tells apart poorly) are told apart: the first
    in sorted order keeps its slot and the later takes the next slot of a hue no name
    took, while there is one (up to ten names, every name has a hue of its own), and
    past that the next free slot (beyond 20 names, colours repeat).  A name keeps its
    own colour in every chart where no name sorted before it hashes to its hue.  A
    chart of more than :data:`MAX_LEGEND_TASKS` tasks colours only the ones it names,
    told apart among themselves, and never in ``tab20``'s greys, which would pass for
    :data:`OTHER_TASKS`."""
    return _colours(names, taken=set())


# The places in _SLOTS of tab20's two greys.
_GREYS = {_SLOTS.index(14), _SLOTS.index(15)}
_HUES = 10  # a place in _SLOTS is a hue's dark shade, or (plus ten) its light one


def _colours(names: Iterable[str], *, taken: set[int]) -> dict[str, Colour]:
    """:func:`task_colours`, with the slots of ``taken`` never given."""
    cmap = colormaps["tab20"]
    size = len(_SLOTS)
    taken = set(taken)
    hues = {slot % _HUES for slot in taken}  # a hue whose shades are taken, or grey
    wanted = {name: zlib.crc32(f"{_SALT}{name}".encode()) % size for name in sorted(set(names))}
    slots: dict[str, int] = {}
    # First every name whose hue no name before it took keeps its own slot; then the
    # others, in order, probe from theirs: one clash moves one name, never a cascade.
    for name, slot in wanted.items():
        if slot % _HUES not in hues:
            slots[name] = slot
            taken.add(slot)
            hues.add(slot % _HUES)
    for name, slot in wanted.items():
        if name in slots:
            continue
        probes = [(slot + probe) % size for probe in range(size)]
        slots[name] = next(
            (s for s in probes if s % _HUES not in hues),  # a hue of its own
            next((s for s in probes if s not in taken), slot),  # past ten, a free shade
        )
        taken.add(slots[name])
        hues.add(slots[name] % _HUES)
    colours: dict[str, Colour] = {}
    for name in wanted:
        red, green, blue, alpha = cmap(_SLOTS[slots[name]])
        colours[name] = (float(red), float(green), float(blue), float(alpha))
    return colours


def _task_handles(
    labels: Sequence[str], colours: Array, named: Sequence[int], *, drawn: str = "bar"
) -> list[Any]:
    """A legend entry per named task and, for the rest, one "+ n more tasks (grey)".
    ``drawn``: how the chart draws a task, ``"bar"`` (a patch of its colour),
    ``"point"`` or ``"line"`` (its colour and its :func:`task_mark`)."""
    rank = {code: n for n, code in enumerate(sorted(named))}  # as task_mark counts
    handles: list[Any] = [
        Patch(facecolor=colours[i], label=labels[i])
        if drawn == "bar"
        else Line2D([], [], color=colours[i], label=labels[i], **task_mark(rank[i], drawn=drawn))
        for i in named
    ]
    if len(labels) > len(named):
        more = len(labels) - len(named)
        handles.append(
            Patch(facecolor=OTHER_TASKS, edgecolor="none", label=f"+ {more:,} more tasks (grey)")
        )
    return handles


def task_mark(rank: int, *, drawn: str) -> dict[str, Any]:
    """The marker (``drawn="point"``) or line style (``"line"``) of the ``rank``-th task
    a chart names, in the order of :func:`_tasks`' codes: with its colour, a second cue
    for a reader who confuses two task colours (``tab20``'s are not all apart in every
    colour vision), and what tells them apart in print."""
    if drawn == "point":
        return {"marker": TASK_MARKERS[rank % len(TASK_MARKERS)], "linestyle": "none"}
    return {"linestyle": TASK_LINES[rank % len(TASK_LINES)]}


def _lanes_height(lanes: int, *, each: float = 0.45) -> float:
    """The inches of a chart's lanes: ``each`` a lane up to 16, 0.25 for each one more
    (a lane's label needs :data:`MIN_LANE_INCHES`), so a Gantt chart's 40 lanes take 13
    inches, not 18, and a heat map of 100 workers' 27 inches, not 40."""
    lanes = max(lanes, 2)
    return each * min(lanes, 16) + 0.25 * max(lanes - 16, 0)


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
    if detail:
        bars = PolyCollection(
            cast(Any, boxes), facecolors=colours, edgecolors="none", linewidths=0.0, zorder=2,
        )  # fmt: skip
    else:  # paths of _BOXES_A_PATH boxes of one colour: a Path object per run costs 10 us
        _, which = _palette(colours)
        closed = np.concatenate([boxes, boxes[:, :1]], axis=1)  # (runs, 5 vertices, xy)
        box_codes = np.array([Path.MOVETO, *[Path.LINETO] * 3, Path.CLOSEPOLY], dtype=np.uint8)
        order = np.argsort(which, kind="stable")
        cuts = np.flatnonzero(np.diff(which[order])) + 1
        parts = [  # each colour's runs, in chunks
            part[i : i + _BOXES_A_PATH]
            for part in np.split(order, cuts)
            for i in range(0, len(part), _BOXES_A_PATH)
        ]
        bars = PolyCollection(
            [], facecolors=colours[[part[0] for part in parts]], edgecolors="none",
            linewidths=0.0, zorder=2,
        )  # fmt: skip
        bars.set_verts_and_codes(
            [closed[part].reshape(-1, 2) for part in parts],
            cast(Any, [np.tile(box_codes, len(part)) for part in parts]),
        )
    # Unsnapped, a run narrower than a pixel still shades it in proportion to its
    # length, so at 100,000 runs a lane's colour density is its occupancy.
    bars.set_snap(False)
    bars.set_gid("runs")
    ax.add_collection(bars, autolim=False)
    failed, timed_out = _failures(frame)
    if failed.any() and detail:
        hatched = PolyCollection(
            cast(Any, boxes[failed]), facecolors="none", edgecolors=_DUE_COLOUR, linewidths=0.0,
            hatch=_HATCH, zorder=3,
        )  # fmt: skip
        hatched.set_gid("failed")
        ax.add_collection(hatched, autolim=False)
    elif failed.any():
        # Hatching a bar narrower than a pixel shows nothing (and Agg hatches each bar
        # on its own: 9,000 failed runs took ten seconds to render).  A stroke at the
        # start of each failed run instead, across the top third of its bar only, so
        # that at thousands of failures the bars' colours still show under them.
        top = low + _BAR_HEIGHT / 3
        stroked = _joined(
            [np.column_stack((start[failed], low[failed])),
             np.column_stack((start[failed], top[failed]))],
            np.zeros(int(failed.sum()), dtype=np.int64), np.array([_DUE_RGBA]),
            linewidths=0.8, zorder=3,
        )  # fmt: skip
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
    if detail:
        waits = np.stack([np.column_stack((due, below)), np.column_stack((start, below))], axis=1)
        tick = np.column_stack((due, high)), np.column_stack((due, high + _BAR_GAP * 0.45))
        marks = LineCollection(
            cast(Any, np.concatenate([waits[late], np.stack(tick, axis=1)])),
            colors=np.concatenate([colours[late], colours]), linewidths=1.2, zorder=5,
        )  # fmt: skip
    else:  # the late runs' waits only, one path per colour: see _joined
        palette, which = _palette(colours[late])
        marks = _joined(
            [np.column_stack((due[late], below[late])),
             np.column_stack((start[late], below[late]))],
            which, palette, linewidths=0.6, zorder=5,
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


def _palette(colours: Array) -> tuple[Array, Array]:
    """The distinct rows of ``colours`` (RGBA), and each row's index among them."""
    key = np.round(colours * 255).astype(np.int64) @ np.array([1 << 24, 1 << 16, 1 << 8, 1])
    which, _ = pd.factorize(key)
    first = np.unique(which, return_index=True)[1]  # each colour's first row
    return colours[first], which


def _joined(
    ends: Sequence[Array], group: Array, colours: Array, *, linewidths: float, zorder: int
) -> LineCollection:
    """Segments from ``ends[0][i]`` to ``ends[1][i]``, one path per colour (segment ``i``
    in ``colours[group[i]]``), the segments of a path parted by a NaN vertex.  A
    collection of one path per segment costs a ``Path`` object each: 470,000 waits took
    eight seconds to build; joined, a tenth of a second."""
    paths = []
    for index in range(len(colours)):
        mine = group == index
        gap = np.full((int(mine.sum()), 2), np.nan)
        paths.append(np.stack([ends[0][mine], ends[1][mine], gap], axis=1).reshape(-1, 2))
    return LineCollection(
        cast(Any, paths), colors=cast(Any, colours), linewidths=linewidths, zorder=zorder
    )


def _set_xlim(ax: Axes, low: float, high: float) -> None:
    span = high - low or 1 / 1440  # a minute, for a single instant
    ax.set_xlim(low - span * 0.01, high + span * 0.01)


def _empty(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", transform=ax.transAxes, ha="center", va="center")


# -- the plots -----------------------------------------------------------------------
