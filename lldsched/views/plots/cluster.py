"""A simulated cluster, drawn: a timeline per node, and the counts with against without fencing.

* :func:`cluster_timeline`: a lane per node; each run a bar from its claim to its
  write, above a thin bar for its lease (claim to settle, or to the expiry its
  node failed to renew), labelled with its slot and token; pauses shaded, outages
  dark; duplicate writes marked with a red star, rejected writes with a cross (a
  mark that would cover the one before it on its lane is drawn under the bar),
  runs lost to a crash hatched.
* :func:`fencing_comparison`: the counts of several results (with and without
  fencing, say) as grouped bars: slots run more than once, takeovers, rejected
  writes, duplicates and lost slots.

Times are seconds after the scenario's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lldsched.cluster import ClusterResult, ClusterRun
from lldsched.views.cluster import cluster_counts, label_of
from lldsched.views.plots._base import Axes, Figure, Line2D, Patch, _axes, _legend

__all__ = ["cluster_timeline", "fencing_comparison"]

_LANDED, _REJECTED, _LOST = "#4C72B0", "white", "#E3E3E3"
_DUPLICATE = "#C44E52"
_LEASE = "#55A868"
_PAUSE, _DOWN = "#F2C57C", "#8E9AAF"
_WRITE_COLOURS = {"landed": _LANDED, "rejected": _REJECTED, "none": _LOST}
_LABELLED_RUNS = 40  # up to this many runs, each bar says its slot and token


def cluster_timeline(result: ClusterResult, *, ax: Axes | None = None) -> Figure:
    """Draw ``result`` node by node (see the module docstring); returns the figure."""
    figure, ax = _axes(ax, (11.0, 1.0 + 0.85 * len(result.nodes)))
    lanes = {node: index for index, node in enumerate(result.nodes)}
    origin = result.start
    for span in result.spans:
        lane = lanes[span.node]
        colour = _PAUSE if span.kind == "pause" else _DOWN
        ax.broken_barh(
            [(span.start - origin, span.end - span.start)], (lane - 0.45, 0.9),
            facecolors=colour, alpha=0.55, zorder=0,
        )  # fmt: skip
    ends = [
        run.finished if run.finished is not None else _crash(result, run) for run in result.runs
    ]
    end = max([result.horizon, *ends, *(run.lease_until for run in result.runs)]) - origin
    landed = result.landed()
    labelled = len(result.runs) <= _LABELLED_RUNS
    marks: list[tuple[int, float, str]] = []  # (lane, x, kind): drawn once all are known
    for run, finish in zip(result.runs, ends, strict=True):
        lane = lanes[run.node]
        claimed, finished = run.claimed - origin, finish - origin
        ax.broken_barh(
            [(claimed, run.lease_until - run.claimed)], (lane + 0.24, 0.1),
            facecolors=_LEASE, zorder=1,
        )  # fmt: skip
        duplicate = run.write == "landed" and landed[(run.task_id, run.slot)] > 1
        colour = _DUPLICATE if duplicate else _WRITE_COLOURS[run.write]
        ax.broken_barh(
            [(claimed, max(finished - claimed, end / 400))], (lane - 0.3, 0.5),
            facecolors=colour, edgecolors="black", linewidth=0.4,
            hatch="////" if run.write == "none" else None, zorder=2,
        )  # fmt: skip
        if duplicate or run.write == "rejected":
            marks.append((lane, finished, "duplicate" if duplicate else "rejected"))
        if labelled:
            ax.annotate(
                f"{run.slot - origin:g}·#{run.token}", (claimed, lane - 0.3), xytext=(0, 2),
                textcoords="offset points", fontsize=7, color="0.15", va="bottom",
            )  # fmt: skip
    ax.set_yticks(range(len(result.nodes)), [_lane_label(result, node) for node in result.nodes])
    ax.set_ylim(len(result.nodes) - 0.4, -0.6)
    ax.set_xlim(0, end * 1.02)
    _draw_marks(ax, marks, span=end * 1.02)
    ax.set_xlabel("seconds after the start")
    summary = result.summary()
    ax.set_title(
        f"{label_of(result)}, lease {result.lease:g} s renewed every {result.renewal:g} s: "
        f"{summary['takeovers']} takeover(s), {summary['rejected']} write(s) rejected, "
        f"{summary['duplicates']} duplicate(s), {summary['lost']} slot(s) lost",
        fontsize=10,
    )
    ax.grid(axis="x", alpha=0.3)
    _legend(ax, _handles(result, labelled=labelled))
    return figure


_MARK_SIZES = {"duplicate": 15.0, "rejected": 10.0}  # points
_BELOW = 0.42
"""How far under its lane's centre a mark moves when it would cover the one before it:
below the lease bar, above the next lane's labels."""


def _draw_marks(ax: Axes, marks: list[tuple[int, float, str]], *, span: float) -> None:
    """A star on each duplicate write and a cross on each rejected one, at the write's
    instant on its lane.  Two writes of one lane closer than a mark's width (a run
    that writes late and the next run writing seconds after it, as after a pause)
    would draw one mark over the other: the later moves under the bar instead, so
    both read (a third goes back to the middle, and so on)."""
    box = ax.get_position()
    width_points = box.width * ax.get_figure().get_size_inches()[0] * 72  # type: ignore[union-attr]
    previous: dict[int, tuple[float, float]] = {}  # lane -> (x, y offset) of its last mark
    for lane, x, kind in sorted(marks, key=lambda mark: (mark[0], mark[1])):
        size = _MARK_SIZES[kind]
        near = span * size * 1.1 / width_points  # a mark's width, in seconds
        offset = 0.0
        if lane in previous:
            last_x, last_offset = previous[lane]
            if x - last_x < near:
                offset = 0.0 if last_offset else _BELOW
        previous[lane] = (x, offset)
        y = lane - 0.05 + offset
        if kind == "duplicate":
            ax.plot(x, y, marker="*", color=_DUPLICATE, markersize=size, markeredgecolor="black",
                    markeredgewidth=0.9, zorder=4, gid="duplicate_writes")  # fmt: skip
        else:
            ax.plot(x, y, marker="X", color="black", markersize=size, zorder=4,
                    gid="rejected_writes")  # fmt: skip


def _crash(result: ClusterResult, run: ClusterRun) -> float:
    """When the node of ``run``, which never finished, went down."""
    downs = [s.start for s in result.spans if s.node == run.node and s.kind == "down"]
    return min(start for start in downs if start >= run.claimed)


def _lane_label(result: ClusterResult, node: str) -> str:
    skew = result.skews[result.nodes.index(node)]
    return f"{node}\nskew {skew:+g} s" if any(result.skews) else node


def _handles(result: ClusterResult, *, labelled: bool) -> list[Any]:
    """Legend entries for what the chart shows (a kind that never happened is left out)."""
    writes = {run.write for run in result.runs}
    kinds = {span.kind for span in result.spans}
    shown = [
        (True, Patch(facecolor=_LANDED, edgecolor="black", label="run, write landed")),
        (result.duplicates > 0, Patch(facecolor=_DUPLICATE, edgecolor="black",
                                      label="write landed twice (duplicate)")),
        ("rejected" in writes, Patch(facecolor=_REJECTED, edgecolor="black",
                                     label="write rejected (stale token)")),
        ("none" in writes, Patch(facecolor=_LOST, edgecolor="black", hatch="////",
                                 label="run lost in a crash")),
        (True, Patch(facecolor=_LEASE, label="lease held")),
        ("pause" in kinds, Patch(facecolor=_PAUSE, alpha=0.55, label="paused (stop the world)")),
        ("down" in kinds, Patch(facecolor=_DOWN, alpha=0.55, label="down (crashed)")),
        (labelled, Line2D([], [], linestyle="", label="label: slot·#token")),
    ]  # fmt: skip
    return [handle for wanted, handle in shown if wanted]


def fencing_comparison(
    results: Sequence[ClusterResult],
    *,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The counts of each result side by side, a group of bars per count."""
    counts = cluster_counts(results, labels=labels)
    shown = ["rerun", "takeovers", "rejected", "duplicates", "lost"]
    titles = ["slots run twice", "takeovers", "writes rejected", "duplicates", "slots lost"]
    figure, ax = _axes(ax, (8.0, 3.4))
    width = 0.8 / len(counts)
    positions = np.arange(len(shown))
    colours = ["#C44E52", "#4C72B0", "#55A868", "#8172B2", "#CCB974"]
    for index, (label, row) in enumerate(counts.iterrows()):
        values = [int(row[column]) for column in shown]
        bars = ax.bar(
            positions + (index - (len(counts) - 1) / 2) * width, values, width * 0.92,
            label=str(label), color=colours[index % len(colours)],
        )  # fmt: skip
        ax.bar_label(bars, fontsize=9, padding=2)
    ax.set_xticks(positions, titles)
    ax.set_ylabel("count")
    ax.locator_params(axis="y", integer=True)  # counts: no 2.5 tick
    top = float(counts[shown].to_numpy().max())
    ax.set_ylim(0, max(1.0, top) * 1.18)
    ax.set_title(f"{int(counts['slots'].iloc[0])} slots due", fontsize=10)
    ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return figure
