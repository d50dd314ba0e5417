"""What every plot shares: the figure class and its axes, lanes, legends, titles and the
words a chart of no runs says (a time axis is :mod:`lldsched.views.plots.timeaxis`', a
task's colour, label and legend entry :mod:`lldsched.views.plots.taskcolours`', the bars
of runs the Gantt chart and the overrun comparison draw
:mod:`lldsched.views.plots.runbars`').

matplotlib is imported here first (:mod:`lldsched.views.plots` imports this module
before the plots, which import what they draw with; pandas and numpy come through
:mod:`lldsched.views.frames`); without it, importing :mod:`lldsched.views.plots`
names the extra to install.
"""

from __future__ import annotations

import heapq
import io
from typing import Any

from lldsched.views import missing_extra
from lldsched.views.frames import ran  # raises, naming the extra, without pandas
from lldsched.views.report import NOT_RUNS, slots_by_outcome

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

__all__ = [
    "DETAIL_RUNS",
    "MAX_LANES",
    "MIN_LANE_INCHES",
    "SHORT_RUN",
    "Array",
    "Axes",
    "Figure",
    "Line2D",
    "NullLocator",
    "Patch",
    "PlotFigure",
    "add_legend",
    "colormaps",
    "describe",
    "detailed",
    "figure_and_axes",
    "first_free_rows",
    "lanes_height",
    "mdates",
    "ran",
    "root_figure",
    "say_empty",
    "write_figure_title",
    "write_title",
]


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
