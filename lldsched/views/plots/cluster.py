"""A simulated cluster, drawn: a timeline per node, and the counts with against without fencing.

* :func:`cluster_timeline`: a lane per node (a row for each run at once on it); each
  run a bar from its claim to its write, above a thin bar for its lease (claim to
  settle, or to the expiry its node failed to renew), labelled with its slot and token
  (where the label before it on its row leaves room); pauses shaded, outages
  dark; duplicate writes hatched and marked with a star, rejected writes with a cross (a
  mark that would cover the one before it on its lane is drawn under the bar),
  runs lost to a crash hatched; its legend keys only what was drawn (a result of no
  runs says "no runs").
* :func:`fencing_comparison`: the counts of several results (with and without
  fencing, say) as grouped bars: slots run more than once, takeovers, rejected
  writes, duplicates and lost slots.

Times are seconds after the scenario's start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lldsched.cluster import ClusterResult, ClusterRun
from lldsched.views.cluster import check_result, cluster_counts, label_of
from lldsched.views.plots._base import (
    Axes,
    Figure,
    Line2D,
    Patch,
    add_legend,
    figure_and_axes,
    first_free_rows,
    say_empty,
    write_title,
)
from lldsched.views.plots.palette import LEASE, SERIES, STATE_ALPHA, STATES, WRITES, Cue

__all__ = ["cluster_timeline", "fencing_comparison"]

_WRITES = {"landed": WRITES["landed"], "rejected": WRITES["rejected"], "none": WRITES["lost"]}
_LABELLED_RUNS = 40  # up to this many runs, each bar says its slot and token


def cluster_timeline(result: ClusterResult, *, ax: Axes | None = None) -> Figure:
    """Draw ``result`` node by node (see the module docstring); returns the figure.

    A node that ran several slots at once (two tasks' slots, a stale run writing after
    the next began) gets a row for each run at once (:func:`first_free_rows`), its pauses
    and outages shaded across all of them: the runs were drawn over one another.  A
    run's label is left out where it would cover the label before it on its row.
    Anything but a :class:`~lldsched.cluster.ClusterResult` is refused, naming it, as
    :func:`~lldsched.views.cluster.cluster_frame` refuses it (``None`` raised
    ``AttributeError``)."""
    check_result(result)
    origin = result.start
    ends = [
        run.finished if run.finished is not None else _crash(result, run) for run in result.runs
    ]
    rows, tops, placed = _rows(result, ends)
    height = sum(rows.values())
    figure, ax = figure_and_axes(ax, (11.0, 1.0 + 0.85 * height))
    for span in result.spans:
        top, count = tops[span.node], rows[span.node]
        state = STATES["pause" if span.kind == "pause" else "down"]
        ax.broken_barh(
            [(span.start - origin, span.end - span.start)], (top - 0.45, count - 0.1),
            facecolors=state.colour, hatch=state.hatch or None, edgecolors="none",
            alpha=STATE_ALPHA, zorder=0,
        )  # fmt: skip
    end = max([result.horizon, *ends, *(run.lease_until for run in result.runs)]) - origin
    landed = result.landed()
    labelled = len(result.runs) <= _LABELLED_RUNS
    marks: list[tuple[float, float, str]] = []  # (row, x, kind): drawn once all are known
    spans: list[tuple[float, float, str]] = []  # (row, claimed, label)
    for run, finish, row in zip(result.runs, ends, placed, strict=True):
        claimed, finished = run.claimed - origin, finish - origin
        ax.broken_barh(
            [(claimed, run.lease_until - run.claimed)], (row + 0.24, 0.1),
            facecolors=LEASE.colour, zorder=1,
        )  # fmt: skip
        duplicate = run.write == "landed" and landed[(run.task_id, run.slot)] > 1
        cue = WRITES["duplicate"] if duplicate else _WRITES[run.write]
        bar = ax.broken_barh(
            [(claimed, max(finished - claimed, end / 400))], (row - 0.3, 0.5),
            facecolors=cue.colour, edgecolors="black", linewidth=0.4, hatch=cue.hatch or None,
            zorder=2,
        )  # fmt: skip
        bar.set_gid("run")
        if duplicate or run.write == "rejected":
            marks.append((row, finished, "duplicate" if duplicate else "rejected"))
        if labelled:
            spans.append((row, claimed, f"{run.slot - origin:g}·#{run.token}"))
    centres = [tops[node] + (rows[node] - 1) / 2 for node in result.nodes]
    if height > len(result.nodes):  # a node of several rows: a line between nodes
        for node in result.nodes[1:]:
            ax.axhline(tops[node] - 0.5, color="0.8", linewidth=0.8, zorder=0)
    ax.set_yticks(centres, [_lane_label(result, node) for node in result.nodes])
    ax.set_ylim(height - 0.4, -0.6)
    ax.set_xlim(0, end * 1.02)
    _draw_labels(ax, spans, span=end * 1.02)
    _draw_marks(ax, marks, span=end * 1.02)
    ax.set_xlabel("seconds after the start")
    ax.set_ylabel("node")
    summary = result.summary()
    write_title(
        ax,
        f"{label_of(result)}, lease {result.lease:g} s renewed every {result.renewal:g} s:\n"
        f"{summary['takeovers']} takeover(s), {summary['rejected']} write(s) rejected, "
        f"{summary['duplicates']} duplicate(s), {summary['lost']} slot(s) lost",
    )
    ax.grid(axis="x", alpha=0.3)
    if not result.runs:
        say_empty(ax, "runs")
    handles = _handles(result, labelled=labelled)
    if handles:
        add_legend(ax, handles)
    return figure


def _rows(
    result: ClusterResult, ends: list[float]
) -> tuple[dict[str, int], dict[str, int], list[int]]:
    """The rows of each node (as many as its most runs at once, at least one), the row
    its lane starts on (nodes in order), and the row of each run of ``result``."""
    rows = dict.fromkeys(result.nodes, 1)
    within = [0] * len(result.runs)  # each run's row among its node's
    for node in result.nodes:
        mine = sorted(
            (run.claimed, end, index)
            for index, (run, end) in enumerate(zip(result.runs, ends, strict=True))
            if run.node == node
        )
        if mine:
            claimed, finished, indexes = zip(*mine, strict=True)
            placed, rows[node] = first_free_rows(claimed, finished)
            for index, row in zip(indexes, placed.tolist(), strict=True):
                within[index] = row
    tops, top = {}, 0
    for node in result.nodes:
        tops[node], top = top, top + rows[node]
    return rows, tops, [tops[run.node] + row for run, row in zip(result.runs, within, strict=True)]


_LABEL_POINTS = 7.0


def _draw_labels(ax: Axes, spans: list[tuple[float, float, str]], *, span: float) -> None:
    """Each run's "slot·#token" over the start of its bar, but where it would cover the
    label drawn before it on its row (runs seconds apart: "405·#20420·#21" read as one)."""
    box = ax.get_position()
    width_points = box.width * ax.get_figure().get_size_inches()[0] * 72  # type: ignore[union-attr]
    per_point = span / max(width_points, 1.0)
    free_from: dict[float, float] = {}  # row -> where its last label ends, in seconds
    for row, claimed, text in sorted(spans, key=lambda item: (item[0], item[1])):
        if claimed < free_from.get(row, -math.inf):
            continue
        ax.annotate(
            text, (claimed, row - 0.3), xytext=(0, 2), textcoords="offset points",
            fontsize=_LABEL_POINTS, color="0.15", va="bottom", gid="run_label",
        )  # fmt: skip
        # DejaVu Sans: about 0.6 em a letter, and a little room after
        free_from[row] = claimed + (len(text) * _LABEL_POINTS * 0.62 + 4) * per_point


_MARK_SIZES = {"duplicate": 15.0, "rejected": 10.0}  # points
_BELOW = 0.42
"""How far under its lane's centre a mark moves when it would cover the one before it:
below the lease bar, above the next lane's labels."""


def _draw_marks(ax: Axes, marks: list[tuple[float, float, str]], *, span: float) -> None:
    """A star on each duplicate write and a cross on each rejected one, at the write's
    instant on its lane.  Two writes of one lane closer than a mark's width (a run
    that writes late and the next run writing seconds after it, as after a pause)
    would draw one mark over the other: the later moves under the bar instead, so
    both read (a third goes back to the middle, and so on)."""
    box = ax.get_position()
    width_points = box.width * ax.get_figure().get_size_inches()[0] * 72  # type: ignore[union-attr]
    previous: dict[float, tuple[float, float]] = {}  # row -> (x, y offset) of its last mark
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
            ax.plot(x, y, marker=WRITES["duplicate"].marker, color=WRITES["duplicate"].colour,
                    markersize=size, markeredgecolor="black", markeredgewidth=0.9, zorder=4,
                    gid="duplicate_writes")  # fmt: skip
        else:
            ax.plot(x, y, marker=WRITES["rejected"].marker, color="black", markersize=size,
                    zorder=4, gid="rejected_writes")  # fmt: skip


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
    ran = bool(result.runs)  # with no run, no bar, lease or label to key
    shown = [
        (ran, _patch(WRITES["landed"], label="run, write landed")),
        (result.duplicates > 0, _patch(WRITES["duplicate"],
                                       label="write landed twice (duplicate, ★)")),
        ("rejected" in writes, _patch(WRITES["rejected"],
                                      label="write rejected (stale token, ✖)")),
        ("none" in writes, _patch(WRITES["lost"], label="run lost in a crash")),
        (ran, Patch(facecolor=LEASE.colour, label="lease held (thin bar)")),
        ("pause" in kinds, _patch(STATES["pause"], alpha=STATE_ALPHA,
                                  label="paused (stop the world)")),
        ("down" in kinds, _patch(STATES["down"], alpha=STATE_ALPHA, label="down (crashed)")),
        (ran and labelled, Line2D([], [], linestyle="", label="label: slot·#token")),
    ]  # fmt: skip
    return [handle for wanted, handle in shown if wanted]


def _patch(cue: Cue, *, label: str, alpha: float | None = None) -> Patch:
    """A legend entry drawn as ``cue`` is on the chart (its colour and hatch)."""
    return Patch(
        facecolor=cue.colour, edgecolor="black", hatch=cue.hatch or None, alpha=alpha, label=label
    )


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
    figure, ax = figure_and_axes(ax, (8.0, 3.4))
    width = 0.8 / len(counts)
    positions = np.arange(len(shown))
    for index, (label, row) in enumerate(counts.iterrows()):
        values = [int(row[column]) for column in shown]
        bars = ax.bar(
            positions + (index - (len(counts) - 1) / 2) * width, values, width * 0.92,
            label=str(label), color=SERIES[index % len(SERIES)].colour,
            hatch=SERIES[index % len(SERIES)].hatch or None, edgecolor="black", linewidth=0.5,
        )  # fmt: skip
        ax.bar_label(bars, fontsize=9, padding=2)
    ax.set_xticks(positions, titles)
    ax.set_xlabel("what was counted")
    ax.set_ylabel("count")
    ax.locator_params(axis="y", integer=True)  # counts: no 2.5 tick
    top = float(counts[shown].to_numpy().max())
    ax.set_ylim(0, max(1.0, top) * 1.18)
    compared = " against ".join(str(label) for label in counts.index)
    write_title(ax, f"{compared}: {int(counts['slots'].iloc[0])} slots due")
    ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return figure
