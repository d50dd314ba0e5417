"""SKIP against CATCH_UP: one fixed-rate task whose runs outlast the period, both ways."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import Any

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError
from lldsched.model import ExecutionRecord
from lldsched.policies import OverrunPolicy
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
    runs: Mapping[OverrunPolicy, pd.DataFrame | Iterable[ExecutionRecord]],
    *,
    axes: Sequence[Axes] | None = None,
    tz: str | tzinfo = "UTC",
) -> Figure:
    """``SKIP`` and ``CATCH_UP`` side by side: each run on its own row (first at the
    top), a bar from start to finish, its due time ticked with a line to its start,
    and the fixed-rate grid of slots as dotted lines.  ``runs`` maps each policy to
    a frame or to records, such as :func:`lldsched.sim.overrun.simulate_overrun`
    returns.  ``axes`` is a pair to draw on."""
    frames = {  # the runs only: not the slots SKIP dropped (records of their own)
        policy: ran(frame if isinstance(frame, pd.DataFrame) else to_frame(frame))
        for policy, frame in runs.items()
    }
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
    first = frames[policies[0]]
    name = str(first["name"].iloc[0]) if len(first) else "fixed-rate task"
    rgba = task_colours([name])[name]
    colour = np.array(rgba)
    spans = []
    skipped = _skipped_slots(frames, policies)
    for ax, policy in zip(pair, policies, strict=True):
        frame = frames[policy]
        if len(frame):
            lane = np.arange(len(frame), dtype=float)
            colours = np.repeat(colour[None, :], len(frame), axis=0)
            spans.append(_draw_runs(ax, frame, lane, colours, detail=True))
            worst = frame["lateness"].max().total_seconds()
            divisor, unit = _unit(worst)
            dropped = f", {len(skipped)} slots dropped" if policy is OverrunPolicy.SKIP else ""
            ax.set_title(
                f"{policy.name}: {len(frame)} runs{dropped},\n"
                f"worst lateness {worst / divisor:.3g} {unit}",
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
    for ax, policy in zip(pair, policies, strict=True):
        if policy is OverrunPolicy.SKIP and len(skipped):
            # On the slot's grid line, at the top: a slot SKIP dropped, with no run for it.
            ax.plot(
                skipped, np.full(len(skipped), 0.97), transform=ax.get_xaxis_transform(),
                linestyle="none", marker="x", markersize=7, color=_SKIPPED_COLOUR,
                markeredgewidth=1.8, zorder=6, gid="skipped_slots",
            )  # fmt: skip
    figure.suptitle(f"Overrun policy: {name}", x=0.01, ha="left")
    handles = [Patch(facecolor=rgba, label="run"), *_mark_handles(first.iloc[:0])]
    handles.append(Line2D([], [], color="0.75", linestyle=":", label="fixed-rate slots"))
    if len(skipped):
        handles.append(
            Line2D([], [], linestyle="none", marker="x", color=_SKIPPED_COLOUR,
                   markeredgewidth=1.8, label="slot SKIP dropped (left panel)")
        )  # fmt: skip
    _legend(pair[1], handles)
    return figure


_SKIPPED_COLOUR = "tab:red"


def _skipped_slots(frames: Mapping[OverrunPolicy, pd.DataFrame], policies: list[Any]) -> Any:
    """The fixed-rate slots (matplotlib dates) between SKIP's first and last run that
    SKIP ran nothing for; the period is read from the CATCH_UP frame (a run per slot)."""
    step = _grid_step(frames, policies) * 86400
    skip = frames[OverrunPolicy.SKIP]["due"] if OverrunPolicy.SKIP in policies else None
    if not step or skip is None or not len(skip):
        return np.array([])
    first, last = skip.min(), skip.max()
    count = round((last - first).total_seconds() / step) + 1
    slots = pd.Series([first + pd.Timedelta(seconds=step * k) for k in range(count)])
    dropped = slots[~slots.isin(set(skip))]
    return _dates(dropped) if len(dropped) else np.array([])


def _grid_step(frames: Mapping[OverrunPolicy, pd.DataFrame], policies: list[Any]) -> float:
    """The slot period, in days, read from the CATCH_UP frame (one run per slot)."""
    dues = frames[policies[-1]]["due"]
    if len(dues) < 2:
        return 0.0
    return float((dues.iloc[1] - dues.iloc[0]).total_seconds()) / 86400
