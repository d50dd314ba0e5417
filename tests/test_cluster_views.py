"""A simulated cluster as a frame, a table of counts, a timeline and a comparison plot."""

from __future__ import annotations

import importlib
import sys
from dataclasses import replace

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lldsched import ValidationError
from lldsched.sim import ClusterScenario, ClusterTask, Crash, Pause, simulate_cluster
from lldsched.views.cluster import WRITES, cluster_counts, cluster_frame
from lldsched.views.plots import PlotFigure, cluster_timeline, fencing_comparison

SCENARIO = ClusterScenario(
    nodes=3, tasks=(ClusterTask("report", every=60.0, duration=5.0),), horizon=600.0,
    start=1_000_000.0, pauses=(Pause(node=0, at=61.0, seconds=90.0),),
    crashes=(Crash(node=1, at=302.0, restart_after=60.0),),
)  # fmt: skip
FENCED = simulate_cluster(SCENARIO)
UNFENCED = simulate_cluster(replace(SCENARIO, fencing=False))


def test_the_frame_has_a_row_per_run_in_seconds_after_the_start() -> None:
    frame = cluster_frame(FENCED)
    assert len(frame) == len(FENCED.runs) == 12
    assert list(frame.columns) == [
        "node", "task_id", "slot", "token", "claimed", "finished", "lease_until",
        "write", "settled", "takeover", "duplicate",
    ]  # fmt: skip
    first = frame.iloc[0]
    assert (first.node, first.slot, first.claimed, first.finished) == ("node-0", 60, 60, 151)
    assert (first.write, first.settled, first.lease_until) == ("rejected", False, 90.0)
    assert list(frame.write.cat.categories) == list(WRITES)
    crashed = frame[frame.write == "none"]
    assert len(crashed) == 1 and crashed.finished.isna().all()


def test_the_frame_marks_both_writes_of_a_duplicate() -> None:
    frame = cluster_frame(UNFENCED)
    duplicated = frame[frame.duplicate]
    assert len(duplicated) == 2 * UNFENCED.duplicates
    assert (duplicated.groupby("slot").size() == 2).all()
    assert not cluster_frame(FENCED).duplicate.any()


def test_the_counts_put_fencing_and_no_fencing_side_by_side() -> None:
    counts = cluster_counts([UNFENCED, FENCED])
    assert list(counts.index) == ["no fencing", "fencing"]
    assert counts.loc["fencing", "duplicates"] == 0 and counts.loc["fencing", "rejected"] == 1
    assert counts.loc["no fencing", "duplicates"] == 2
    assert list(cluster_counts([FENCED], labels=["a"]).index) == ["a"]


def test_bad_input_to_the_views_names_it() -> None:
    with pytest.raises(ValidationError, match="expected a ClusterResult"):
        cluster_frame([])  # type: ignore[arg-type]
    # Before: AttributeError ('NoneType' object has no attribute 'start').
    with pytest.raises(ValidationError, match=r"expected a ClusterResult .*, got None"):
        cluster_timeline(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="non-empty sequence of results, got \\[\\]"):
        cluster_counts([])
    with pytest.raises(ValidationError, match="labels must name each of the 2 results"):
        cluster_counts([FENCED, UNFENCED], labels=["one"])


def test_the_timeline_marks_each_duplicate_write_and_each_rejected_write() -> None:
    def markers(figure: Figure, marker: str) -> int:
        return sum(1 for line in figure.axes[0].lines if line.get_marker() == marker)

    unfenced = cluster_timeline(UNFENCED)
    fenced = cluster_timeline(FENCED)
    assert isinstance(unfenced, PlotFigure)
    assert (markers(unfenced, "*"), markers(unfenced, "X")) == (4, 0)
    assert (markers(fenced, "*"), markers(fenced, "X")) == (0, 1)
    assert "1 write(s) rejected, 0 duplicate(s)" in fenced.axes[0].get_title(loc="left")
    labels = [t.get_text() for t in fenced.axes[0].get_yticklabels()]
    assert labels == ["node-0", "node-1", "node-2"]
    assert isinstance(fenced, PlotFigure)
    assert fenced._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_writes_close_together_on_one_lane_get_marks_that_do_not_overlap() -> None:
    # Notebook 10's pause: node-0's run of slot 60 writes at 151 s when the pause ends,
    # its run of slot 120 five seconds later; both landed twice.  Their stars covered
    # each other; now the later one is drawn under its lane's bar.
    figure = cluster_timeline(UNFENCED)
    ax = figure.axes[0]
    figure.canvas.draw()
    stars = np.array(
        [np.asarray(line.get_xydata(), dtype=float)[0] for line in ax.lines
         if line.get_marker() == "*"]
    )  # fmt: skip
    size = max(line.get_markersize() for line in ax.lines) * figure.dpi / 72  # pixels
    centres = ax.transData.transform(stars)
    for i, first in enumerate(centres):
        for second in centres[i + 1 :]:
            assert abs(first - second).max() >= size  # apart in x or in y by a mark's size
    node_0 = sorted((float(x), float(y)) for x, y in stars.tolist() if abs(y) < 0.5)
    assert node_0 == [(151.0, -0.05), (156.0, 0.37)]  # on the bar, and under it


TWO_TASKS = simulate_cluster(
    replace(SCENARIO, tasks=(*SCENARIO.tasks, ClusterTask("sync", every=45.0, duration=20.0)),
            fencing=False)
)  # fmt: skip


def test_runs_at_once_on_a_node_get_a_row_each_and_their_labels_do_not_overlap() -> None:
    # A node runs two tasks' slots at once: node-0's runs of "sync" 45 and "report" 60
    # were drawn over one another, and their labels ("45·#1" over "60·#2", "360·#18"
    # over "360·#19") printed on top of each other.
    figure = cluster_timeline(TWO_TASKS)
    ax = figure.axes[0]
    figure.canvas.draw()
    bars = [c for c in ax.collections if c.get_gid() == "run"]
    assert len(bars) == len(TWO_TASKS.runs)
    tops = [float(np.asarray(bar.get_paths()[0].vertices)[:, 1].min()) for bar in bars]
    ends = [run.finished if run.finished is not None else run.lease_until for run in TWO_TASKS.runs]
    at_once = 0
    for i, (a, a_end) in enumerate(zip(TWO_TASKS.runs, ends, strict=True)):
        for j in range(i + 1, len(bars)):
            b, b_end = TWO_TASKS.runs[j], ends[j]
            if a.node == b.node and a.claimed < b_end and b.claimed < a_end:
                at_once += 1
                assert tops[i] != tops[j], (a, b)  # each on a row of its own
    assert at_once > 0
    labels = [t for t in ax.texts if t.get_gid() == "run_label"]
    assert labels
    boxes = [t.get_window_extent() for t in labels]
    assert not [
        (labels[i].get_text(), labels[j].get_text())
        for i in range(len(boxes)) for j in range(i + 1, len(boxes))
        if boxes[i].overlaps(boxes[j])
    ]  # fmt: skip
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names[0] == "node-0" and "node-2" in names


def test_the_comparison_draws_a_bar_per_count_per_result() -> None:
    figure = fencing_comparison([UNFENCED, FENCED])
    ax = figure.axes[0]
    assert len(ax.patches) == 10
    heights = [int(bar.get_height()) for bar in ax.patches if isinstance(bar, Rectangle)]
    assert heights[3] == 2 and heights[8] == 0  # duplicates: without, with fencing
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["no fencing", "fencing"]


def test_without_pandas_importing_the_cluster_views_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.delitem(sys.modules, "lldsched.views.cluster")
    with pytest.raises(ImportError, match=r"pip install 'lldsched\[views\]'"):
        importlib.import_module("lldsched.views.cluster")
