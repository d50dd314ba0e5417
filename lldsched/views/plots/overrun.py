"""Overrun and overlap policies side by side: one fixed-rate task whose runs outlast
the period, one panel per policy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import Any

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.policies import Overlap, OverrunPolicy
from lldsched.views.frames import ran, to_frame
from lldsched.views.plots._base import (
    Axes,
    Figure,
    Line2D,
    Patch,
    PlotFigure,
    _dates,
    _draw_runs,
    _empty,
    _legend,
    _mark_handles,
    _root,
    _set_xlim,
    _time_axis,
    _unit,
    task_colours,
)

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
    are read from the records, never guessed from gaps between runs).  ``runs`` maps
    each policy (:class:`~lldsched.policies.OverrunPolicy` or
    :class:`~lldsched.policies.Overlap`) to a frame or to records, such as
    :func:`lldsched.sim.overrun.simulate_overrun` returns.  ``axes``: one per policy."""
    recorded = {
        policy: frame if isinstance(frame, pd.DataFrame) else to_frame(frame)
        for policy, frame in runs.items()
    }
    frames = {policy: ran(frame) for policy, frame in recorded.items()}  # a row per run
    dropped_slots = {  # the slots decided without a run, by their due times
        policy: _dates(frame.loc[frame["outcome"].isin(_DROPPED), "due"])
        for policy, frame in recorded.items()
    }
    policies = list(frames)
    if not policies or not all(isinstance(p, OverrunPolicy | Overlap) for p in policies):
        raise ValidationError(
            f"runs must map OverrunPolicy or Overlap members to runs, got {policies!r}"
        )
    figure: Figure
    if axes is None:
        columns = min(len(policies), 3)
        rows_of_panels = -(-len(policies) // columns)
        figure = PlotFigure(figsize=(4.4 * columns, 3.6 * rows_of_panels), layout="constrained")
        grid = figure.subplots(rows_of_panels, columns, sharex=True, sharey=True, squeeze=False)
        every = [ax for row in grid for ax in row]
        spares = every[len(policies) :]
        for spare in spares:
            spare.axis("off")  # an empty cell: the legend goes in the first
        panels = every[: len(policies)]
    else:
        panels = list(axes)
        if len(panels) != len(policies):
            raise ValidationError(f"axes must be {len(policies)} Axes, got {len(panels)}")
        figure = _root(panels[0])
        spares = []
    rows = max(max(len(frames[p]) for p in policies), 1)
    first = next((frames[p] for p in policies if len(frames[p])), frames[policies[0]])
    name = str(first["name"].iloc[0]) if len(first) else "fixed-rate task"
    rgba = task_colours([name])[name]
    colour = np.array(rgba)
    spans = []
    step = _grid_step(frames)
    for ax, policy in zip(panels, policies, strict=True):
        frame = frames[policy]
        if len(frame):
            lane = np.arange(len(frame), dtype=float)
            colours = np.repeat(colour[None, :], len(frame), axis=0)
            spans.append(_draw_runs(ax, frame, lane, colours, detail=True))
            worst = frame["lateness"].max().total_seconds()
            divisor, unit = _unit(worst)
            ax.set_title(
                f"{policy.name}: {len(frame)} runs, {len(dropped_slots[policy])} slots dropped,\n"
                f"worst lateness {worst / divisor:.3g} {unit}",
                loc="left",
                fontsize="medium",
            )
        else:
            _empty(ax, "runs")
            ax.set_title(policy.name, loc="left")
        ax.set_yticks(range(rows), [str(n) for n in range(1, rows + 1)])
        ax.set_ylim(rows - 0.5, -0.5)
        ax.set_ylabel("run")
        _time_axis(ax, tz, max_ticks=6)  # panels are narrow: ticks a minute apart overlap
    if spans:
        slots = [float(x) for dropped in dropped_slots.values() for x in dropped]
        low = min([span[0] for span in spans] + slots)
        high = max([span[1] for span in spans] + slots)
        _set_xlim(panels[0], low, high)
        if step:
            grid_lines = np.arange(low, high + step, step)
            for ax in panels:
                for x in grid_lines:
                    ax.axvline(x, color="0.75", linestyle=":", linewidth=0.8, zorder=1)
    crosses = False
    for ax, policy in zip(panels, policies, strict=True):
        dropped = dropped_slots[policy]
        if len(dropped):
            crosses = True
            # On the slot's grid line, at the top: a slot the policy ran nothing for.
            ax.plot(
                dropped, np.full(len(dropped), 0.97),
                transform=ax.get_xaxis_transform(), linestyle="none", marker="x",
                markersize=7, color=_SKIPPED_COLOUR, markeredgewidth=1.8, zorder=6,
                gid="skipped_slots",
            )  # fmt: skip
    figure.suptitle(f"Overrun and overlap policies: {name}", x=0.01, ha="left")
    handles = [Patch(facecolor=rgba, label="run"), *_mark_handles(first.iloc[:0])]
    handles.append(Line2D([], [], color="0.75", linestyle=":", label="fixed-rate slots"))
    if crosses:
        handles.append(
            Line2D([], [], linestyle="none", marker="x", color=_SKIPPED_COLOUR,
                   markeredgewidth=1.8, label="slot no run served")
        )  # fmt: skip
    if spares:
        spares[0].legend(handles=handles, loc="upper left", frameon=False)
    else:
        _legend(panels[-1], handles)
    return figure


_SKIPPED_COLOUR = "tab:red"
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
