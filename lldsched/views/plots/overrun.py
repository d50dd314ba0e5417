"""Overrun and overlap policies side by side: one fixed-rate task whose runs outlast
the period, one panel per policy."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import Any

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError, shown
from lldsched.logs import counted
from lldsched.model import ExecutionRecord, Outcome
from lldsched.policies import Overlap, OverrunPolicy
from lldsched.printable import one_line
from lldsched.views.durations import seconds_text
from lldsched.views.frames import ran, to_frame
from lldsched.views.plots._base import (
    MIN_LANE_INCHES,
    Axes,
    Figure,
    Line2D,
    Patch,
    PlotFigure,
    add_legend,
    root_figure,
    say_empty,
    write_figure_title,
    write_title,
)
from lldsched.views.plots.palette import ACCENT
from lldsched.views.plots.runbars import draw_runs, failures, mark_handles
from lldsched.views.plots.taskcolours import task_colours
from lldsched.views.plots.timeaxis import as_zone, date_numbers, set_time_span, time_axis
from lldsched.views.report import slots_stood_for
from lldsched.views.runs import check_frame, check_spans

__all__ = ["overrun_comparison"]


def overrun_comparison(
    runs: Mapping[OverrunPolicy | Overlap, pd.DataFrame | Iterable[ExecutionRecord]],
    *,
    axes: Sequence[Axes] | None = None,
    tz: str | tzinfo = "UTC",
) -> Figure:
    """Any set of policies side by side, in the order of ``runs``: each run on its own
    row (first at the top), a bar from start to finish, its due time ticked with a
    line to its start, the fixed-rate grid of slots as dotted lines, and a cross on
    each slot the policy dropped (a ``skipped`` or ``coalesced`` record: the slots
    are read from the records, never guessed from gaps between runs), in a strip
    above the first row so that no cross covers a bar.  The title's "N slots dropped"
    counts slots: past 10 slots one run skipped, one record (``SkipCap:``, a cross on
    its first slot) stands for the rest and counts as the slots it states
    (:func:`~lldsched.views.report.slots_stood_for`).  ``runs`` maps each policy
    (:class:`~lldsched.policies.OverrunPolicy` or :class:`~lldsched.policies.Overlap`)
    to a frame or to records, such as :func:`lldsched.sim.overrun.simulate_overrun`
    returns.  ``axes``: one per policy.

    Each panel has only its own policy's rows (policies run different numbers of
    runs: a shared axis left empty rows under the shorter ones).  On the figure
    drawn here, a row is as tall in every panel: a panel with fewer runs is shorter,
    at the top of its place; on ``axes`` given, each fills its axes.  Rows too short for
    a label each (under :data:`~lldsched.views.plots.MIN_LANE_INCHES`: an hour of a
    60 s task) are labelled every second, third... row, from the first."""
    if not isinstance(runs, Mapping):  # a list of runs: 'list' object has no attribute 'items'
        raise ValidationError(
            f"runs must map OverrunPolicy or Overlap members to runs, got {shown(runs)}"
        )
    zone = as_zone(tz)  # before anything is drawn: axes given stay as they were
    recorded = {
        policy: frame if isinstance(frame, pd.DataFrame) else to_frame(frame)
        for policy, frame in runs.items()
    }
    for frame in recorded.values():  # named, not pandas' KeyError at its first use
        check_frame(frame, columns=_READS)
    frames = {policy: ran(frame) for policy, frame in recorded.items()}  # a row per run
    for frame in frames.values():
        check_spans(frame)  # a run with no start or finish, or backwards, has no bar
    dropped_slots = {  # the slots decided without a run, by their due times
        policy: date_numbers(frame.loc[frame["outcome"].isin(_DROPPED), "due"])
        for policy, frame in recorded.items()
    }
    dropped = {  # how many: a cap's record counts the slots it states, not one
        policy: sum(slots_stood_for(error) for error in _errors(frame, _DROPPED))
        for policy, frame in recorded.items()
    }
    policies = list(frames)
    if not policies or not all(isinstance(p, OverrunPolicy | Overlap) for p in policies):
        raise ValidationError(
            f"runs must map OverrunPolicy or Overlap members to runs, got {shown(policies)}"
        )
    rows = {policy: max(len(frames[policy]), 1) for policy in policies}  # each its own
    figure: Figure
    if axes is None:
        columns = min(len(policies), 3)
        # A row of panels as tall as its panel with the most runs.
        tallest = [  # each row of panels', in data units: its most rows and the strip
            max(rows[p] for p in policies[start : start + columns]) - _TOP - 0.5
            for start in range(0, len(policies), columns)
        ]
        run = min(0.26, 2.6 / max(tallest))  # inches a row; a panel at most ~2.6 in of rows
        height = sum(1.1 + run * span for span in tallest)  # titles and time axes: ~1.1 in
        width = max(4.4 * columns, _ONE_PANEL_WIDE)
        figure = PlotFigure(figsize=(width, max(height, 3.0)), layout="constrained")
        grid = figure.subplots(
            len(tallest), columns, sharex=True, squeeze=False, height_ratios=tallest
        )
        every = [ax for row in grid for ax in row]
        spares = every[len(policies) :]
        for spare in spares:
            spare.axis("off")  # an empty cell: the legend goes in the first
        panels = every[: len(policies)]
        for ax in panels:
            ax.tick_params(labelbottom=True)  # every panel its times: the rows differ
    else:
        panels = list(axes)
        if len(panels) != len(policies):
            raise ValidationError(f"axes must be {len(policies)} Axes, got {len(panels)}")
        figure = root_figure(panels[0])
        spares = []
    # The task's name from its runs, or from its records of slots dropped if it has none.
    first = next((f for f in [*frames.values(), *recorded.values()] if len(f)), None)
    name = "fixed-rate task" if first is None else str(first["name"].iloc[0])  # its colour's
    said = one_line(name)  # a name an older release stored with a newline: on one line
    rgba = task_colours([name])[name]
    colour = np.array(rgba)
    spans = []  # the x range of each panel's runs
    step = _grid_step(frames)
    for ax, policy in zip(panels, policies, strict=True):
        frame = frames[policy]
        if len(frame):
            lane = np.arange(len(frame), dtype=float)
            colours = np.repeat(colour[None, :], len(frame), axis=0)
            spans.append(draw_runs(ax, frame, lane, colours, detail=True))
            worst = frame["lateness"].max().total_seconds()
            cut = [  # runs that did not end well, as the Gantt chart counts them
                f"{int(runs.sum())} {what}"
                for runs, what in zip(failures(frame), ("failed", "timed out", "cancelled"),
                                      strict=True)
                if runs.any()
            ]  # fmt: skip
            write_title(
                ax,
                f"{policy.name}: {', '.join([f'{len(frame)} runs', *cut])}, "
                f"{counted(dropped[policy], 'slot')} dropped,\n"
                f"worst lateness {seconds_text(worst)}",
                panel=True,
            )
        else:
            say_empty(ax, "runs", recorded[policy])  # and the slots it dropped, if any
            write_title(ax, policy.name, panel=True)
        row_inches = (  # the height of a row: as laid out here, or of the axes given
            run if axes is None
            else ax.get_position().height * figure.get_figheight() / (rows[policy] - 0.5 - _TOP)
        )  # fmt: skip
        nth = max(1, math.ceil(MIN_LANE_INCHES / row_inches))  # labels apart
        labelled = range(0, rows[policy] if len(frame) else 0, nth)  # no run, no number
        ax.set_yticks(list(labelled), [str(n + 1) for n in labelled])
        ax.set_ylim(rows[policy] - 0.5, _TOP)
        ax.set_ylabel("run")
        time_axis(ax, zone, max_ticks=6)  # panels are narrow: ticks a minute apart overlap
    if not spans and not any(len(dropped) for dropped in dropped_slots.values()):
        for ax in panels:  # nothing at any instant: the shared axis read 1970-01-01
            time_axis(ax, zone, blank=True)
    else:
        for ax in panels:
            _label_under_the_date(ax)
    gridded = False  # the slots' grid is drawn only about runs
    if spans:
        slots = [float(x) for dropped in dropped_slots.values() for x in dropped]
        low = min([span[0] for span in spans] + slots)
        high = max([span[1] for span in spans] + slots)
        set_time_span(panels[0], low, high)
        gridded = bool(step)
        if gridded:
            grid_lines = np.arange(low, high + step, step)
            for ax in panels:
                for x in grid_lines:
                    ax.axvline(x, color="0.75", linestyle=":", linewidth=0.8, zorder=1)
    crosses = False
    for ax, policy in zip(panels, policies, strict=True):
        dropped = dropped_slots[policy]
        if len(dropped):
            crosses = True
            # On the slot's grid line, in the strip above the first row: a slot the
            # policy ran nothing for.
            ax.plot(
                dropped, np.full(len(dropped), _CROSSES),
                linestyle="none", marker="x", markersize=7, color=_SKIPPED_COLOUR,
                markeredgewidth=1.8, zorder=6, gid="skipped_slots",
            )  # fmt: skip
    write_figure_title(figure, f"Overrun and overlap policies: {said}")
    # The failed, timed-out and cancelled runs of every panel keyed (an empty frame keyed
    # none of them: CANCEL_OTHER's hatched bars had nothing in the key).  Only what was
    # drawn is keyed: with no run anywhere, no bar, due tick or grid of slots.
    keyed = pd.concat([frames[p][list(_KEYED)] for p in policies], ignore_index=True)
    handles: list[Any] = []
    if len(keyed):
        handles += [Patch(facecolor=rgba, label="run"), *mark_handles(keyed, colour=rgba)]
    if gridded:
        handles.append(Line2D([], [], color="0.75", linestyle=":", label="fixed-rate slots"))
    if crosses:
        handles.append(
            Line2D([], [], linestyle="none", marker="x", color=_SKIPPED_COLOUR,
                   markeredgewidth=1.8, label="slot no run served")
        )  # fmt: skip
    if handles and spares:
        spares[0].legend(handles=handles, loc="upper left", frameon=False)
    elif handles:  # none when nothing was drawn: each panel says "no runs"
        add_legend(panels[-1], handles)
    if axes is None:
        _rows_alike(figure, panels, [rows[policy] for policy in policies])
    return figure


def _rows_alike(figure: Figure, panels: Sequence[Axes], rows: Sequence[int]) -> None:
    """Make a row as tall in every panel: the panel with the most rows keeps the height
    the layout gives it, the others are shortened in proportion and kept at the top
    of their place (the space under a short panel is the figure's, not empty rows)."""
    most = max(rows)
    if all(n == most for n in rows):
        return
    figure.draw_without_rendering()  # the constrained layout places the panels
    tallest = panels[rows.index(most)].get_position()
    width, height = figure.get_size_inches()
    aspect = (tallest.height * height) / (tallest.width * width)  # the tallest's height/width
    span = most - 0.5 - _TOP  # its rows and the strip above them, in data units
    for ax, n in zip(panels, rows, strict=True):
        ax.set_box_aspect(aspect * (n - 0.5 - _TOP) / span)
        ax.set_anchor("N")


_ONE_PANEL_WIDE = 6.0
"""The inches of a figure of one policy's panel: beside the legend (about two inches), as
wide as a panel of two's.  At 4.4, a column's width, its time labels ran together
("21:0021:10"), its title and a long zone's time label were cut at the figure's edges."""


def _label_under_the_date(ax: Axes) -> None:
    """The time axis' label a line lower, under the date written below the last tick
    (the axis' offset text): both sit right under the tick labels, the label centred, the
    date on the right, and a panel is narrow, so "time (Europe/Berlin)" was printed over
    "2026-Jan-05" (and "time (UTC)" over it in a panel of one policy)."""
    ax.xaxis.labelpad += 1.25 * float(ax.xaxis.get_offset_text().get_fontsize())


_SKIPPED_COLOUR = ACCENT
_KEYED = ("ok", "timed_out", "outcome", "error")  # the columns mark_handles reads
_TOP = -1.1
"""The top of each panel's y range: a strip above the first row (centred on 0) for
the crosses of dropped slots."""
_CROSSES = -0.85
"""Where the crosses sit in that strip (clear of the first row's bar, 0 +/- 0.31)."""


_READS = ("name", "due", "start", "finish", "lateness", *_KEYED)
"""The columns of a frame the overrun comparison reads: a frame without one is refused,
naming it."""


def _errors(frame: pd.DataFrame, outcomes: Sequence[Outcome]) -> list[object]:
    """The ``error`` of each row of ``frame`` whose outcome is one of ``outcomes``."""
    return frame.loc[frame["outcome"].isin(outcomes), "error"].tolist()


_DROPPED = (Outcome.SKIPPED, Outcome.COALESCED, Outcome.MISSED)
"""The outcomes of a slot a policy dropped (a blocked wait is not one: its slot runs)."""


def _grid_step(frames: Mapping[Any, pd.DataFrame]) -> float:
    """The slot period, in days: the smallest gap between two due times of one policy
    (a policy that runs consecutive slots shows it)."""
    gaps = []
    for frame in frames.values():
        dues = frame["due"].drop_duplicates().sort_values()
        if len(dues) > 1:
            gaps.append(float(dues.diff().dt.total_seconds().iloc[1:].min()))
    positive = [gap for gap in gaps if gap > 0]
    return min(positive) / 86400 if positive else 0.0
