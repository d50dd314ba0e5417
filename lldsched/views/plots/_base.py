"""What every plot shares: the figure class, axes and time helpers, task colours,
legends and titles (the bars of runs the Gantt chart and the overrun comparison draw are
:mod:`lldsched.views.plots.runbars`').

matplotlib is imported here first (:mod:`lldsched.views.plots` imports this module
before the plots, which import what they draw with; pandas and numpy come through
:mod:`lldsched.views.frames`); without it, importing :mod:`lldsched.views.plots`
names the extra to install.
"""

from __future__ import annotations

import heapq
import io
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import time, tzinfo
from typing import Any

from lldsched.schedules.cron.zone import zone_info
from lldsched.views import missing_extra
from lldsched.views.frames import ran  # raises, naming the extra, without pandas
from lldsched.views.report import NOT_RUNS, nearest_rank, slots_by_outcome
from lldsched.views.runs import instants

try:
    import matplotlib.dates as _mdates
    from matplotlib import colormaps
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, FigureBase, SubFigure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import NullLocator
except ImportError as exc:  # exercised by a test that hides matplotlib
    raise missing_extra("lldsched.views.plots", "matplotlib", exc) from exc

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError, shown
from lldsched.model import Outcome
from lldsched.printable import one_line
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
    "add_legend",
    "as_zone",
    "date_numbers",
    "describe",
    "detailed",
    "figure_and_axes",
    "first_free_rows",
    "lanes_height",
    "ran",
    "root_figure",
    "say_empty",
    "seconds_of",
    "set_time_span",
    "task_codes",
    "task_colours",
    "task_handles",
    "time_axis",
    "time_unit",
    "write_figure_title",
    "write_title",
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


def detailed(runs: int) -> bool:
    """Whether a Gantt chart of ``runs`` runs drawn (the rows that ran, in its span, on
    the lanes it keeps: never a wait or a slot decided without a run) draws each run's
    detail (:data:`DETAIL_RUNS`).  The one rule for ``gantt`` and for the simulation
    player's own marks past it."""
    return runs <= DETAIL_RUNS


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
    if not isinstance(figure, FigureBase):  # 'int' object has no attribute 'get_suptitle'
        raise ValidationError(f"describe() takes a matplotlib Figure, got {shown(figure)}")
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


def figure_and_axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    """The figure of ``ax`` and ``ax`` (checked by :func:`root_figure`), or, for ``None``, a
    new :class:`PlotFigure` of ``size`` inches and its one axes."""
    if ax is not None:
        return root_figure(ax), ax
    figure = PlotFigure(figsize=size, layout="constrained")
    return figure, figure.add_subplot()


def root_figure(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn on (through its subfigures); ``ax`` is checked to be
    an ``Axes``, so that a wrong one is named, not an ``AttributeError`` of matplotlib's."""
    if not isinstance(ax, Axes):
        raise ValidationError(
            f"ax must be a matplotlib Axes (or None: a figure of its own), got {shown(ax)}"
        )
    figure = ax.get_figure()
    while isinstance(figure, SubFigure):
        figure = figure.figure
    if not isinstance(figure, Figure):
        raise ValidationError(f"{ax!r} is not on a figure")
    return figure


def as_zone(tz: str | tzinfo) -> tzinfo:
    """``tz`` as a ``tzinfo``: one given as is, a name looked up (refused, naming it)."""
    if isinstance(tz, tzinfo):
        return tz
    return zone_info(tz)  # ScheduleError, a ValidationError, naming a bad one


def date_numbers(column: pd.Series[Any]) -> Array:
    """A tz-aware datetime column as matplotlib date numbers (days since its epoch); a
    column of naive times or text is refused, naming it (:func:`instants`)."""
    return mdates.date2num(instants(column))


def time_axis(
    ax: Axes, tz: str | tzinfo, *, max_ticks: int | None = None, blank: bool = False
) -> None:
    """Dates in ``tz`` on the x axis; ``max_ticks`` bounds the labels (a narrow panel).
    ``blank``: no tick at all (a chart of no runs, whose axis would otherwise read
    1970-01-01, the epoch matplotlib's dates start from)."""
    zone = as_zone(tz)
    locator = _ZoneLocator(tz=zone, maxticks=max_ticks)
    ax.xaxis.set_major_locator(NullLocator() if blank else locator)
    # Ticks seconds apart read as times ("09:00:30"), not as seconds alone ("30", the
    # concise default, a number a reader takes for anything but a time of day), and
    # ticks under a second apart with their fraction ("09:00:00.25": matplotlib trims
    # the zeros every label shares, so whole seconds still read "09:00:30"); ticks days
    # apart as days ("Mon 05", not "05", which reads as an hour as well).  The zero
    # formats (a day's first tick "Jan-06") are matplotlib's, given again: with formats
    # alone, they are derived from them, and midnight read "06".
    formats = ["%Y", "%b", "%a %d", "%H:%M", "%H:%M", "%H:%M:%S.%f"]
    zero_formats = ["", "%Y", "%b", "%b-%d", "%H:%M", "%H:%M"]
    ax.xaxis.set_major_formatter(
        _ZoneFormatter(locator, tz=zone, formats=formats, zero_formats=zero_formats)
    )
    ax.set_xlabel(f"time ({zone})")


class _ZoneLocator(mdates.AutoDateLocator):  # type: ignore[misc]
    """matplotlib's date locator, with ticks under a day apart kept evenly apart across
    a change of the zone's offset.  Its ticks are steps of local time: over the night
    summer time begins, Europe/Berlin's 02:00 does not exist and fell on 03:00's
    instant (two ticks, "03:00" printed over itself); over the night it ends, 02:00
    happens twice and had one tick (from "02:00" to "03:00" two hours of runs).  Where
    the ticks' offsets differ they are laid again from the first, one step of real
    time apart (the step the locator chose: its ticks' least gap), so that the axis
    reads as the time that passed; ticks a day or more apart stay at local midnights."""

    def __call__(self) -> Any:
        return _even_ticks(super().__call__(), self.tz)

    def tick_values(self, vmin: float, vmax: float) -> Any:
        return _even_ticks(super().tick_values(vmin, vmax), self.tz)


def _even_ticks(ticks: Any, zone: tzinfo) -> Any:
    """``ticks`` (date numbers), or, when they cross a change of ``zone``'s offset and are
    under a day apart, as many ticks from the first one step apart (see
    :class:`_ZoneLocator`)."""
    values = np.unique(np.asarray(ticks, dtype=float))
    if len(values) < 2 or len(_offsets(values, zone)) == 1:
        return ticks
    # In whole microseconds (a date number's sum of steps drifted to 01:59:59.999999).
    micros = np.rint(values * _MICROS_A_DAY).astype(np.int64)
    step = int(np.diff(micros).min())
    if step >= _MICROS_A_DAY:  # days apart: local midnights, however long the day between
        return values
    count = (int(micros[-1] - micros[0]) + step // 2) // step + 1
    return (micros[0] + step * np.arange(count, dtype=np.int64)) / _MICROS_A_DAY


_MICROS_A_DAY = 86_400 * 10**6


def _offsets(values: Any, zone: tzinfo) -> set[Any]:
    """The distinct UTC offsets of ``zone`` at the date numbers ``values``."""
    return {mdates.num2date(value, tz=zone).utcoffset() for value in values}


class _ZoneFormatter(mdates.ConciseDateFormatter):  # type: ignore[misc]
    """matplotlib's concise date labels, with the zone's abbreviation under each tick
    whose wall time another tick shows too: the night summer time ends, Europe/Berlin's
    02:00 happens twice ("02:00" over "CEST", then over "CET"; on a line of its own, so
    that a label is no wider than its neighbours)."""

    def format_ticks(self, values: Any) -> list[str]:
        if len(values) == 0:  # a blank axis; matplotlib 3.8.0's concise labels fail on none
            return []
        labels: list[str] = list(super().format_ticks(values))
        moments = [mdates.num2date(value, tz=self._tz) for value in values]
        # Ticks under an hour apart read "00:00" at midnight (matplotlib's zero format
        # of minutes is a time), under an offset of the last tick's day alone: two hours
        # around midnight read as the second day's.  A tick at a local midnight after
        # the first names its day, as matplotlib's ticks an hour or more apart do.
        for index, moment in enumerate(moments[1:], start=1):
            if labels[index] and moment.time() == time() and ":" in labels[index]:
                labels[index] = moment.strftime("%b-%d")
        walls = Counter(moment.replace(tzinfo=None) for moment in moments)
        return [
            f"{label}\n{moment.strftime('%Z')}"
            if label and walls[moment.replace(tzinfo=None)] > 1 else label
            for moment, label in zip(moments, labels, strict=True)
        ]  # fmt: skip


def _p95(codes: Array, values: Array) -> pd.Series[float]:
    """Each code's 95th percentile of ``values`` by nearest rank, the summaries' rule
    (:func:`~lldsched.views.report.nearest_rank`: the value a task's curve of the lateness
    distribution reaches the 95 % line at, and :func:`task_summary`'s ``lateness_p95``).
    pandas' ``quantile`` interpolates: a task on time 19 runs in 20 and 100 s late once
    ranked at 5 s, above tasks whose p95 is 2 s, and was named in their place."""
    order = np.lexsort((values, codes))  # by code, then by value
    present, first, counts = np.unique(codes[order], return_index=True, return_counts=True)
    ranks = [nearest_rank(count, 95) for count in counts.tolist()]
    return pd.Series(values[order][first + np.array(ranks, dtype=np.intp)], index=present)


def seconds_of(column: pd.Series[Any]) -> Array:
    """A timedelta column as float seconds."""
    return column.to_numpy(dtype="m8[us]").astype(np.int64) / 1e6


def time_unit(largest: float) -> tuple[float, str]:
    """A divisor and a name that keep ``largest`` seconds readable."""
    if largest >= 3 * 3600:
        return 3600.0, "h"
    if largest >= 180:
        return 60.0, "min"
    return 1.0, "s"


def task_codes(
    frame: pd.DataFrame,
    weight: Array | None = None,
    *,
    how: str = "sum",
    within: tuple[pd.DataFrame, Array] | None = None,
) -> tuple[Array, list[str], Array, list[int]]:
    """Each row's task code (order of first appearance), each code's legend label, each
    code's colour (by task name: see :func:`task_colours`), and the codes a legend
    names.  Up to :data:`MAX_LEGEND_TASKS` tasks, every one, in code order; past it,
    the :data:`MAX_LEGEND_TASKS` whose ``weight`` (one number per row, taken together
    per task by ``how``: ``"sum"``, ``"max"`` or ``"p95"``) is greatest, greatest first,
    and every other task's colour is :data:`OTHER_TASKS`.

    ``within`` (the frame ``frame`` is a window of, and its rows' weights): a task the
    chart of that whole frame colours keeps its colour here, and a task it greyed
    that this chart names takes a hue none of those took while there is one, so a
    zoomed chart's colours are the whole chart's."""
    codes, ids, plain, named = _named_tasks(frame, weight, how)
    repeated = {label for label in plain if plain.count(label) > 1}
    labels = _shortened([  # a name stored with a newline: on one line (printable.one_line)
        one_line(f"{label} ({task_id})" if label in repeated else label)
        for label, task_id in zip(plain, ids, strict=True)
    ])  # fmt: skip
    kept = {} if within is None else _chart_slots(*within, how=how)
    slots = _slots(
        [plain[code] for code in named],
        taken=set() if len(named) == len(plain) else _GREYS,
        kept=kept,
    )  # fmt: skip
    palette = np.tile(np.array(OTHER_TASKS, dtype=float), (len(plain), 1))
    for code in named:
        palette[code] = _colour(slots[plain[code]])
    return codes, labels, palette, named


def _named_tasks(
    frame: pd.DataFrame, weight: Array | None, how: str
) -> tuple[Array, pd.Index, list[str], list[int]]:
    """Each row's task code, the codes' task ids and names, and the codes a legend names
    (:func:`task_codes`)."""
    codes, ids = pd.factorize(frame["task_id"])
    latest = frame.drop_duplicates("task_id", keep="last")  # a task renamed: as it is now
    names = dict(zip(latest["task_id"].tolist(), latest["name"].tolist(), strict=True))
    plain = [str(names[task_id]) for task_id in ids]
    if len(plain) <= MAX_LEGEND_TASKS:
        return codes, ids, plain, list(range(len(plain)))
    values = pd.Series(np.ones(len(codes)) if weight is None else weight)
    score = _p95(codes, values.to_numpy()) if how == "p95" else values.groupby(codes).agg(how)
    # A stable sort of the negated scores: ties keep the order of first appearance.
    ranked = np.argsort(-score.reindex(range(len(plain))).to_numpy(), kind="stable")
    return codes, ids, plain, [int(code) for code in ranked[:MAX_LEGEND_TASKS]]


def _chart_slots(frame: pd.DataFrame, weight: Array, *, how: str) -> dict[str, int]:
    """The ``tab20`` slot of each task name a chart of ``frame`` colours
    (:func:`task_codes`)."""
    _, _, plain, named = _named_tasks(frame, weight, how)
    shown_names = [plain[code] for code in named]
    return _slots(shown_names, taken=set() if len(named) == len(plain) else _GREYS)


LABEL_LETTERS = 32
"""The longest task name a lane label or a legend writes in full; a longer one keeps its
head and its tail (where names of a family differ: ``report-...-region-4``) around an
ellipsis.  Two names of 62 letters as lane labels and legend entries left the plot of an
eleven-inch figure two inches wide, its time labels printed over one another."""


def task_label(name: str) -> str:
    """``name`` as a chart writes it: whole up to :data:`LABEL_LETTERS`, else its head,
    "…" and its tail (:func:`mark_wait` finds a lane by it)."""
    if len(name) <= LABEL_LETTERS:
        return name
    tail = (LABEL_LETTERS - 1) // 2
    return f"{name[: LABEL_LETTERS - 1 - tail]}…{name[-tail:]}"


def _shortened(labels: Sequence[str]) -> list[str]:
    """Each label as :func:`task_label` writes it, but for labels that would come out
    alike (names that differ only in the middle): those stay whole."""
    short = [task_label(label) for label in labels]
    taken = Counter(short)
    return [s if taken[s] == 1 else whole for s, whole in zip(short, labels, strict=True)]


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
    if isinstance(names, str) or not isinstance(names, Iterable):  # "abc": three tasks
        raise ValidationError(
            f"task_colours() takes task names (a list of str), got {shown(names)}"
        )
    given = list(names)
    for name in given:
        if not isinstance(name, str):
            raise ValidationError(f"task_colours() takes task names (str), got {shown(name)}")
    return _colours(given, taken=set())


# The places in _SLOTS of tab20's two greys.
_GREYS = {_SLOTS.index(14), _SLOTS.index(15)}
_HUES = 10  # a place in _SLOTS is a hue's dark shade, or (plus ten) its light one


def _colours(names: Iterable[str], *, taken: set[int]) -> dict[str, Colour]:
    """:func:`task_colours`, with the slots of ``taken`` never given."""
    return {name: _colour(slot) for name, slot in _slots(names, taken=taken).items()}


def _colour(slot: int) -> Colour:
    """The colour of a place in :data:`_SLOTS`."""
    red, green, blue, alpha = colormaps["tab20"](_SLOTS[slot])
    return (float(red), float(green), float(blue), float(alpha))


def _slots(
    names: Iterable[str], *, taken: set[int], kept: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Each name's place in :data:`_SLOTS` (:func:`task_colours`), the slots of ``taken``
    never given; a name ``kept`` gives a slot has it, and the others avoid its hue."""
    size = len(_SLOTS)
    wanted = {name: zlib.crc32(f"{_SALT}{name}".encode()) % size for name in sorted(set(names))}
    slots = {name: kept[name] for name in wanted if kept and name in kept}
    taken = set(taken) | set(slots.values())
    hues = {slot % _HUES for slot in taken}  # a hue whose shades are taken, or grey
    # First every name whose hue no name before it took keeps its own slot; then the
    # others, in order, probe from theirs: one clash moves one name, never a cascade.
    for name, slot in wanted.items():
        if name not in slots and slot % _HUES not in hues:
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
    return {name: slots[name] for name in wanted}


def task_handles(
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
        rest = len(labels) - len(named)
        label = f"+ {rest:,} more task{'' if rest == 1 else 's'} (grey)"
        # Keyed as they are drawn: grey bars, grey dots, thin grey lines.
        handles.append(
            Patch(facecolor=OTHER_TASKS, edgecolor="none", label=label) if drawn == "bar"
            else Line2D([], [], color=OTHER_TASKS, marker="o", markersize=4, linestyle="none",
                        label=label) if drawn == "point"
            else Line2D([], [], color=OTHER_TASKS, linewidth=0.8, label=label)
        )  # fmt: skip
    return handles


def task_mark(rank: int, *, drawn: str) -> dict[str, Any]:
    """The marker (``drawn="point"``) or line style (``"line"``) of the ``rank``-th task
    a chart names, in the order of :func:`task_codes`' codes: with its colour, a second cue
    for a reader who confuses two task colours (``tab20``'s are not all apart in every
    colour vision), and what tells them apart in print."""
    if drawn == "point":
        return {"marker": TASK_MARKERS[rank % len(TASK_MARKERS)], "linestyle": "none"}
    return {"linestyle": TASK_LINES[rank % len(TASK_LINES)]}


def lanes_height(lanes: int, *, each: float = 0.45) -> float:
    """The inches of a chart's lanes: ``each`` a lane up to 16, 0.25 for each one more
    (a lane's label needs :data:`MIN_LANE_INCHES`), so a Gantt chart's 40 lanes take 13
    inches, not 18, and a heat map of 100 workers' 27 inches, not 40."""
    lanes = max(lanes, 2)
    return each * min(lanes, 16) + 0.25 * max(lanes - 16, 0)


def add_legend(ax: Axes, handles: list[Any]) -> None:
    """The legend of ``handles`` outside ``ax``, on its right, as every chart places it."""
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
        fontsize="small", frameon=False,
    )  # fmt: skip


def first_free_rows(start: Any, finish: Any) -> tuple[Any, int]:
    """The row of each run (``start`` and ``finish``, sorted by start): the lowest row
    free at its start (a run ending at another's start frees its row for it), and the
    rows used, as many as the most runs at once: the rows of a lane of runs at once (a
    Gantt chart's, a cluster timeline's node)."""
    rows = np.zeros(len(start), dtype=np.int64)
    busy: list[tuple[int, int]] = []  # (finish, row) of the runs on a row
    free: list[int] = []
    used = 0
    starts, finishes = np.asarray(start).tolist(), np.asarray(finish).tolist()
    for index, (begins, ends) in enumerate(zip(starts, finishes, strict=True)):
        while busy and busy[0][0] <= begins:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            rows[index] = heapq.heappop(free)
        else:
            rows[index], used = used, used + 1
        heapq.heappush(busy, (ends, int(rows[index])))
    return rows, used


LONE_INSTANT = 60 / 86400
"""The time axis (in days, as matplotlib dates are) of a chart whose runs are all at one
instant: the minute around it."""


def set_time_span(ax: Axes, low: float, high: float) -> None:
    """The x range ``low`` to ``high`` (date numbers) and a margin; a single instant gets
    the minute around it (:data:`LONE_INSTANT`: a margin of 1 % of nothing made ticks of
    tenths of a second, read "59.4, 59.6, 00:00")."""
    if high == low:
        ax.set_xlim(low - LONE_INSTANT / 2, high + LONE_INSTANT / 2)
        return
    span = high - low
    ax.set_xlim(low - span * 0.01, high + span * 0.01)


def write_title(ax: Axes, text: str, *, panel: bool = False) -> None:
    """Write ``text`` as the title of ``ax``, as every chart of the kit does: on the left
    (from the plot's left edge, where a reader starts), at matplotlib's title size
    (``axes.titlesize``); a ``panel`` under a figure's own title (:func:`write_figure_title`)
    a size smaller, so the figure's reads first.  A title too long for its chart is
    broken by the caller, where its sense allows (after a colon or a semicolon)."""
    if panel:
        ax.set_title(text, loc="left", fontsize="medium")
    else:
        ax.set_title(text, loc="left")


def write_figure_title(figure: Figure, text: str) -> None:
    """Write ``text`` as the title of a figure of several panels (each titled with
    :func:`write_title`, ``panel=True``), on the left as theirs are, at matplotlib's size."""
    figure.suptitle(text, x=0.01, ha="left")


def say_empty(ax: Axes, what: str, frame: pd.DataFrame | None = None) -> None:
    """Say "no runs" (``what``) in the middle of ``ax``, and under it how many of
    ``frame``'s slots were decided without a run (:func:`_decided_text`), if any."""
    said = f"no {what}"
    decided = "" if frame is None else _decided_text(frame)
    said += f"\n{decided}" if decided else ""
    ax.text(0.5, 0.5, said, transform=ax.transAxes, ha="center", va="center")


def _decided_text(frame: pd.DataFrame) -> str:
    """How many slots of ``frame`` a policy decided without a run, by outcome, most
    first ("4 slots decided without a run: 3 coalesced, 1 skipped"; "" for none): a
    chart of a scheduler restarted after an outage (RUN_ONCE, all coalesced) said only
    "no runs", as of a frame of nothing.  Slots, not records: a cap's record counts the
    slots it states (:func:`~lldsched.views.report.slots_stood_for`).  A dependent's wait
    (``blocked``) is no slot decided: its slot runs when its upstreams are done."""
    outcomes = frame["outcome"].astype(str)
    decided = outcomes.isin(_DECIDED)
    errors = frame["error"][decided] if "error" in frame.columns else [None] * int(decided.sum())
    counts = slots_by_outcome(outcomes[decided].tolist(), list(errors))  # slots, not records
    if not counts:
        return ""
    total = sum(counts.values())
    each = sorted(counts.items(), key=lambda item: (-item[1], _DECIDED.index(item[0])))
    return f"{total:,} slot{'' if total == 1 else 's'} decided without a run: " + ", ".join(
        f"{count:,} {outcome}" for outcome, count in each
    )


_DECIDED = [outcome for outcome in NOT_RUNS if outcome != Outcome.BLOCKED]


# -- the plots -----------------------------------------------------------------------
