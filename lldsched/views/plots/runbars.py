"""The bars of runs: how the Gantt chart and the overrun comparison draw each run.

:func:`draw_runs` draws the rows of a runs frame on their lanes: a bar from start to
finish in the task's colour, failed runs hatched, and runs cancelled (for a newer slot,
``Overlap.CANCEL_OTHER``, or by a shutdown) hatched the other way (past
:data:`~lldsched.views.plots._base.DETAIL_RUNS` runs, a stroke at their start, across
the top or the bottom third of the bar), timed-out runs outlined, and under each lane the wait
from the due instant to the start; up to ``DETAIL_RUNS`` runs, a run too short for a
bar (:data:`~lldsched.views.plots._base.SHORT_RUN`) also gets a diamond.  Past
``DETAIL_RUNS`` runs the bars and waits are joined into a path per colour
(:func:`_palette`, :func:`_joined`), which is what keeps 470,000 runs drawable.
:func:`mark_handles` is the legend of those marks.  The figure, axes, time and colour
helpers every plot shares are :mod:`lldsched.views.plots._base`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.path import Path

from lldsched.errors import OVERLAP_CANCEL_ERROR
from lldsched.model import Outcome
from lldsched.views.plots._base import SHORT_RUN, Array
from lldsched.views.plots.palette import text_on
from lldsched.views.plots.timeaxis import LONE_INSTANT, date_numbers

__all__ = [
    "BAR_HEIGHT",
    "CANCELLED_LABEL",
    "CUT_LABEL",
    "IN_TASK_COLOUR",
    "SHORT_FAILED_LABEL",
    "SHORT_LABEL",
    "SHUT_DOWN_LABEL",
    "WAIT_LABEL",
    "draw_runs",
    "failures",
    "mark_handles",
]

BAR_HEIGHT = 0.62
# Past DETAIL_RUNS, bars are drawn as paths of this many boxes each (of one colour):
# 470,000 runs build in 0.2 s and render in 0.8, against 4 s and 3 s for a path a run
# or 3 s to render one path a colour (Agg sorts a path's cells as one).
_BOXES_A_PATH = 500
_BAR_GAP = 1 - BAR_HEIGHT
_DUE_COLOUR = "0.15"
_DUE_RGBA = to_rgba(_DUE_COLOUR)
_TIMEOUT_COLOUR = "black"
_HATCH = "////"
_CANCELLED = "\\\\\\\\"  # the other way from a failure's


CANCELLED_LABEL = "cancelled (a newer slot came due)"
"""The legend's name of a run ``Overlap.CANCEL_OTHER`` cut short (outcome ``cancelled``)."""
SHUT_DOWN_LABEL = "cancelled (a shutdown cut it)"
"""The legend's name of a run a shutdown cut (a coroutine cancelled, a worker process
killed: outcome ``cancelled`` too, its error not ``OverlapCancelled``)."""
CUT_LABEL = "cancelled (a newer slot came due, or a shutdown)"
"""The legend's name of the cancelled runs of a chart that holds both kinds."""


WAIT_LABEL = "due, then the wait to start"
"""The legend's name of the due tick and wait line, which :func:`draw_runs` draws in
each run's task colour."""
SHORT_LABEL = "a run too short for a bar"
SHORT_FAILED_LABEL = "failed, too short to hatch"
IN_TASK_COLOUR = "\n(task's colour)"
"""Said after a mark's name in a chart of several task colours, whose key draws the mark
in a neutral grey: a reader is not to look for a grey mark."""


def mark_handles(
    frame: pd.DataFrame,
    detail: bool = True,
    *,
    short: bool = False,
    short_failed: bool = False,
    colour: tuple[float, float, float, float] | None = None,
) -> list[Any]:
    """The legend of the marks :func:`draw_runs` draws.  The due tick, its wait line and
    a short run's diamond take their run's task colour: ``colour``, the one task colour
    of a chart (the overrun comparison's), keys them in it; without it (a chart of
    several tasks) they are keyed in a neutral grey and named "(task's colour)"."""
    handles: list[Any] = []
    tinted = _DUE_COLOUR if colour is None else colour
    said = IN_TASK_COLOUR if colour is None else ""
    failed, timed_out, cancelled = failures(frame)
    cut_by = _cancelled_label(frame, cancelled) if cancelled.any() else CANCELLED_LABEL
    for cut, hatch, label in ((failed, _HATCH, "failed"), (cancelled, _CANCELLED, cut_by)):
        if cut.any():
            handles.append(
                Patch(facecolor="white", edgecolor=_DUE_COLOUR, hatch=hatch, label=label)
                if detail
                else Line2D([], [], color=_DUE_COLOUR, marker="|", markersize=9,
                            linestyle="none", label=label)
            )  # fmt: skip
    if timed_out.any():
        handles.append(
            Patch(facecolor="white", edgecolor=_TIMEOUT_COLOUR, linewidth=2.0, label="timed out")
        )
    handles.append(
        Line2D([], [], color=tinted, marker="|", markersize=7, linewidth=1.5,
               label=WAIT_LABEL + said)
    )  # fmt: skip
    if short:
        handles.append(
            Line2D([], [], color=tinted if colour is not None else "white", marker="D",
                   markersize=5, markeredgecolor=_DUE_COLOUR, markeredgewidth=0.5,
                   linestyle="none", label=SHORT_LABEL + said)
        )  # fmt: skip
    if short_failed:
        handles.append(
            Line2D([], [], color=_DUE_COLOUR, marker="x", markersize=5, linestyle="none",
                   label=SHORT_FAILED_LABEL)
        )  # fmt: skip
    return handles


def _cancelled_label(frame: pd.DataFrame, cancelled: Array) -> str:
    """The key's name of the ``cancelled`` runs of ``frame``: cut for a newer slot (their
    error an ``OverlapCancelled``), by a shutdown, or some of each."""
    errors = frame["error"].to_numpy(dtype=object)[cancelled]
    newer = [isinstance(error, str) and error.startswith(OVERLAP_CANCEL_ERROR) for error in errors]
    if all(newer):
        return CANCELLED_LABEL
    return CUT_LABEL if any(newer) else SHUT_DOWN_LABEL


def failures(frame: pd.DataFrame) -> tuple[Array, Array, Array]:
    """Which runs failed (raised), which timed out and which were cancelled, as the
    summaries count them (:class:`~lldsched.views.report.TaskSummary`): from the ``ok``
    and ``timed_out`` columns, a run that gave its slot up (outcome ``given_up``) marked
    as either; a cancelled run (outcome ``cancelled``: ``Overlap.CANCEL_OTHER`` cut it
    short for a newer slot, or a shutdown cut it) is neither, whatever its ``ok`` and
    ``timed_out`` say."""
    ok, timed_out = frame["ok"].to_numpy(dtype=bool), frame["timed_out"].to_numpy(dtype=bool)
    cancelled = (frame["outcome"] == Outcome.CANCELLED).to_numpy(dtype=bool)
    return ~ok & ~timed_out & ~cancelled, timed_out & ~cancelled, cancelled


def draw_runs(
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
    start, finish = date_numbers(frame["start"]), date_numbers(frame["finish"])
    due = date_numbers(frame["due"])
    low, high = lane - BAR_HEIGHT / 2, lane + BAR_HEIGHT / 2
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
    failed, timed_out, cancelled = failures(frame)
    # A failed run's hatch or stroke is at the top of its bar, a cancelled one's (the
    # other way, or at the foot) at the bottom.
    for cut, hatch, name, (edge, inward) in (
        (failed, _HATCH, "failed", (low, BAR_HEIGHT / 3)),
        (cancelled, _CANCELLED, "cancelled", (high, -BAR_HEIGHT / 3)),
    ):
        if cut.any() and detail:
            hatched = PolyCollection(
                cast(Any, boxes[cut]), facecolors="none", edgecolors=_DUE_COLOUR,
                linewidths=0.0, hatch=hatch, zorder=3,
            )  # fmt: skip
            hatched.set_gid(name)
            ax.add_collection(hatched, autolim=False)
        elif cut.any():
            # Hatching a bar narrower than a pixel shows nothing (and Agg hatches each
            # bar on its own: 9,000 failed runs took ten seconds to render).  A stroke at
            # the start of each failed run instead, across a third of its bar only, so
            # that at thousands of failures the bars' colours still show under them.
            stroked = _joined(
                [np.column_stack((start[cut], edge[cut])),
                 np.column_stack((start[cut], edge[cut] + inward))],
                np.zeros(int(cut.sum()), dtype=np.int64), np.array([_DUE_RGBA]),
                linewidths=0.8, zorder=3,
            )  # fmt: skip
            stroked.set_gid(f"{name}_strokes")
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
        # Runs all at one instant (of no length, on a FakeClock) are drawn on the minute
        # around it (set_time_span): a share of a span of nothing found none short.
        short = (finish - start) < max(shown[1] - shown[0], LONE_INSTANT) * SHORT_RUN
        if short.any():
            ax.scatter(
                start[short], lane[short], marker="D", s=22, c=colours[short],
                edgecolors=_DUE_COLOUR, linewidths=0.5, zorder=6, gid="short_runs",
            )  # fmt: skip
        # A failed run too short for its hatching to show: a cross over its diamond (a
        # failed heartbeat's diamond was an ok one's, told by nothing).
        short_failed = short & failed
        if short_failed.any():
            ax.scatter(
                start[short_failed], lane[short_failed], marker="x", s=22, zorder=7,
                c=[text_on(fill) for fill in colours[short_failed]], linewidths=1.2,
                gid="short_failed_runs",  # black or white: whichever shows on the diamond
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
