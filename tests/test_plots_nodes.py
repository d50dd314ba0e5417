"""The records of several processes sharing a store, laned by process and worker.

Every process numbers its workers from 0, so a chart laned by worker index alone drew two
processes' ``worker 0`` on one lane (their runs overlapping on it) and counted them as one
worker's utilisation.  With records of more than one node, each lane is a (node, worker);
with one node or none, the lanes are as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.text import Annotation

from lldsched import ExecutionRecord, Outcome, ValidationError
from lldsched.views.frames import mean_busy, to_frame, utilisation
from lldsched.views.plots import gantt, mark_wait, utilisation_plot
from lldsched.views.summaries import Workers, node_label
from tests.conftest import T0

R = ExecutionRecord
A = "alpha.example.org:101:ab12cd"
B = "beta:202:ef34ab"


def lanes(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def bar_rows(ax: Axes) -> list[float]:
    (runs,) = [c for c in ax.collections if c.get_gid() == "runs"]
    return [round(float(np.mean(np.asarray(path.vertices)[:4, 1])), 6) for path in runs.get_paths()]


def run(task: str, worker: int, start: float, length: float, node: str | None) -> ExecutionRecord:
    return R.of(
        task_id=task, name=task, attempt=1, due=start, slot=start, worker=worker,
        started=start, finished=start + length, ok=True, node=node,
    )  # fmt: skip


def two_processes() -> list[ExecutionRecord]:
    """Two processes, each running on its worker 0 at the same time, B on its worker 1 too."""
    return [
        run("a", 0, T0, 1800, A),
        run("b", 0, T0, 1800, B),
        run("c", 1, T0 + 600, 600, B),
    ]


def test_the_short_form_of_a_node_is_its_host_and_pid() -> None:
    assert node_label(A) == "alpha.example.org:101"
    assert node_label(None) == "no node"
    assert node_label("odd") == "odd"  # not a holder id: whole


def test_a_gantt_chart_of_two_processes_lanes_by_node_and_worker() -> None:
    ax = gantt(to_frame(two_processes())).axes[0]
    assert lanes(ax) == [
        "alpha.example.org:101 · worker 0", "beta:202 · worker 0", "beta:202 · worker 1"
    ]  # fmt: skip
    assert bar_rows(ax) == [0.0, 1.0, 2.0]  # no two runs on one lane, no "+1" row
    assert ax.get_title(loc="left") == "3 runs on 3 workers: 0 failed, 0 timed out"
    assert ax.get_ylabel() == "node · worker"


def test_records_of_no_node_beside_a_node_get_lanes_of_their_own() -> None:
    # A rolling upgrade's older process writes no node: its runs are not the named one's.
    frame = to_frame([run("a", 0, T0, 600, A), run("b", 0, T0, 1200, None)])
    assert lanes(gantt(frame).axes[0]) == ["alpha.example.org:101 · worker 0", "no node · worker 0"]
    table = utilisation(frame, 1, "1h")
    assert table.columns[0] == (A, 0)
    assert np.isnan(table.columns[1][0])  # pandas keeps the missing node as NaN
    assert table.iloc[0].tolist() == [1 / 6, 1 / 3]
    ax = utilisation_plot(frame, 1, "1h").axes[0]
    assert lanes(ax) == ["alpha.example.org:101 · worker 0", "no node · worker 0"]


def test_one_node_or_none_lanes_by_worker_as_before() -> None:
    for node in (A, None):
        records = [run("a", 0, T0, 60, node), run("b", 1, T0, 60, node)]
        ax = gantt(to_frame(records)).axes[0]
        assert lanes(ax) == ["worker 0", "worker 1"]
        assert ax.get_ylabel() == "worker"


def test_a_slot_decided_without_a_run_is_no_second_node() -> None:
    # A decided slot names no node (it ran nowhere): it is not a process of its own.
    missed = R.of(
        task_id="m", name="m", attempt=0, due=T0, slot=T0, worker=-1, started=T0,
        finished=T0, ok=False, misfire=Outcome.MISSED,
    )  # fmt: skip
    frame = to_frame([run("a", 0, T0, 60, A), missed])
    assert lanes(gantt(frame).axes[0]) == ["worker 0"]
    assert list(utilisation(frame, 1, "1h").columns) == [0]


def test_the_busiest_lanes_keep_their_node_when_the_others_are_left_out() -> None:
    records = [run("a", 0, T0, 3600, A), run("b", 1, T0, 3000, A), run("c", 0, T0, 60, B)]
    ax = gantt(to_frame(records), max_lanes=2).axes[0]
    assert lanes(ax) == ["alpha.example.org:101 · worker 0", "alpha.example.org:101 · worker 1"]
    assert ax.get_title(loc="left").endswith("\n2 busiest of 3 workers drawn; 1 left out")


def test_mark_wait_finds_the_lane_of_its_node() -> None:
    late = R.of(
        task_id="b", name="b", attempt=1, due=T0 + 100, slot=T0 + 100, worker=0,
        started=T0 + 130, finished=T0 + 190, ok=True, node=B,
    )  # fmt: skip
    frame = to_frame([run("a", 0, T0, 60, A), run("c", 1, T0, 60, A), late])
    figure = gantt(frame)
    mark_wait(figure, frame.iloc[2], text="b's wait")
    (arrow,) = [t for t in figure.axes[0].texts if isinstance(t, Annotation)]
    assert round(float(arrow.xy[1]), 6) == 2.42  # B's worker 0, the third lane (not A's)


def test_utilisation_of_two_processes_has_a_column_per_node_and_worker() -> None:
    frame = to_frame(two_processes())
    table = utilisation(frame, 2, "1h")
    assert list(table.columns) == [(A, 0), (A, 1), (B, 0), (B, 1)]
    assert table.columns.names == ["node", "worker"]
    assert table.iloc[0].tolist() == [0.5, 0.0, 0.5, 1 / 6]  # no lane above 1.0
    # four workers, one of them idle: the busy time over the four lanes
    assert mean_busy(frame, 2, "1h") == (1800 + 1800 + 600) / (4 * 3600)
    assert list(utilisation(frame, [1, 0], "1h").columns) == [(A, 1), (A, 0), (B, 1), (B, 0)]


def test_utilisation_of_one_node_has_a_column_per_worker_as_before() -> None:
    table = utilisation(to_frame([run("a", 0, T0, 1800, A)]), 2, "1h")
    assert list(table.columns) == [0, 1]
    assert table.iloc[0].tolist() == [0.5, 0.0]


def test_the_utilisation_plot_of_two_processes_labels_each_lane_with_its_node() -> None:
    frame = to_frame(two_processes())
    ax = utilisation_plot(frame, 2, "1h").axes[0]
    assert lanes(ax) == [
        "alpha.example.org:101 · worker 0", "alpha.example.org:101 · worker 1",
        "beta:202 · worker 0", "beta:202 · worker 1",
    ]  # fmt: skip
    assert ax.get_title(loc="left").endswith("mean 29%")
    assert ax.get_ylabel() == "node · worker"
    single = utilisation_plot(to_frame([run("a", 0, T0, 60, A)]), 2, "1h").axes[0]
    assert lanes(single) == ["worker 0", "worker 1"]


def test_two_nodes_of_one_host_and_pid_keep_their_whole_ids() -> None:
    # host:pid alone would name both (a pid reused in another container of one name).
    twins = ["box:7:aaaaaa", "box:7:bbbbbb"]
    ax = gantt(to_frame([run("a", 0, T0, 60, twins[0]), run("b", 0, T0, 60, twins[1])])).axes[0]
    assert lanes(ax) == [f"{twins[0]} · worker 0", f"{twins[1]} · worker 0"]


# -- processes of different sizes: workers as a mapping from node to its pool ----------


def test_utilisation_of_processes_of_different_sizes_has_only_their_own_workers() -> None:
    # A has one worker, B two: with one count for both, A read an idle worker 1 it never
    # had, and the mean was over four lanes, not three.
    frame = to_frame(two_processes())
    table = utilisation(frame, {A: 1, B: 2}, "1h")
    assert list(table.columns) == [(A, 0), (B, 0), (B, 1)]
    assert table.columns.names == ["node", "worker"]
    assert table.iloc[0].tolist() == [0.5, 0.5, 1 / 6]
    assert mean_busy(frame, {A: 1, B: 2}, "1h") == (1800 + 1800 + 600) / (3 * 3600)
    # indexes per node, in the order asked, as a list does for one pool
    table = utilisation(frame, {B: [1, 0], A: [0]}, "1h")
    assert list(table.columns) == [(A, 0), (B, 1), (B, 0)]  # nodes sorted, as the charts
    assert table.iloc[0].tolist() == [0.5, 1 / 6, 0.5]


def test_a_node_the_mapping_names_without_runs_is_an_idle_process() -> None:
    idle = "gamma:303:cd56ef"
    frame = to_frame(two_processes())
    table = utilisation(frame, {A: 1, B: 2, idle: 2}, "1h")
    assert list(table.columns)[-2:] == [(idle, 0), (idle, 1)]
    assert table[idle].to_numpy().tolist() == [[0.0, 0.0]]
    assert mean_busy(frame, {A: 1, B: 2, idle: 2}, "1h") == 4200 / (5 * 3600)
    # one node's runs, mapped: still a (node, worker) column, the mapping's lanes
    one = to_frame([run("a", 0, T0, 1800, A)])
    assert list(utilisation(one, {A: 2}, "1h").columns) == [(A, 0), (A, 1)]
    empty = utilisation(to_frame([]), {A: 1, None: 2}, "1h")
    assert empty.empty and empty.columns[0] == (A, 0)
    assert empty.columns.get_level_values("node")[1:].isna().all()
    assert empty.columns.get_level_values("worker")[1:].tolist() == [0, 1]


def test_runs_that_name_no_process_are_mapped_by_none() -> None:
    frame = to_frame([run("a", 0, T0, 600, A), run("b", 1, T0, 1200, None)])
    table = utilisation(frame, {None: 2, A: 1}, "1h")
    assert table.columns[0] == (A, 0)
    assert table.columns.get_level_values("node")[1:].isna().all()
    assert table.iloc[0].tolist() == [1 / 6, 0.0, 1 / 3]
    ax = utilisation_plot(frame, {A: 1, None: 2}, "1h").axes[0]
    assert lanes(ax) == ["alpha.example.org:101 · worker 0", "no node · worker 0",
                         "no node · worker 1"]  # fmt: skip
    assert ax.get_title(loc="left").endswith(f"mean {1800 / (3 * 3600):.0%}")


MAPPED: dict[str, Callable[[pd.DataFrame, Workers], object]] = {
    "utilisation": lambda frame, workers: utilisation(frame, workers, "1h"),
    "mean_busy": lambda frame, workers: mean_busy(frame, workers, "1h"),
    "utilisation_plot": lambda frame, workers: utilisation_plot(frame, workers, "1h"),
    "gantt": lambda frame, workers: gantt(frame, workers=workers),
}
"""Every view that takes ``workers``: one rule reads it (``mapped_lanes``, ``lanes_of``)."""


@pytest.mark.parametrize("view", sorted(MAPPED))
def test_a_mapping_that_leaves_out_a_node_of_the_runs_names_it(view: str) -> None:
    frame = to_frame([*two_processes(), run("d", 0, T0, 60, None)])
    with pytest.raises(ValidationError, match=re.escape(f"runs of nodes ['{B}', None] are not")):
        MAPPED[view](frame, {A: 1})
    with pytest.raises(ValidationError, match=re.escape(f"workers[{B!r}]=[0] (a scheduler")):
        MAPPED[view](frame, {A: [0], B: [0], None: [0]})  # B ran on its worker 1 too


@pytest.mark.parametrize("view", sorted(MAPPED))
def test_a_key_that_is_no_node_is_named_with_the_ids_it_may_mean(view: str) -> None:
    # The chart labels a lane "beta:202 · worker 0": a key of that short form is no node.
    frame = to_frame([*two_processes(), run("d", 0, T0, 60, None)])
    with pytest.raises(ValidationError) as refused:
        MAPPED[view](frame, {A: 1, "beta:202": 2, None: 1})
    assert str(refused.value) == (
        f"runs of nodes [{B!r}] are not among workers' nodes [{A!r}, 'beta:202', None] "
        f"(key 'beta:202' is no node of these runs ({B!r} would match)): map each node the "
        "frame names to its workers, by its whole holder id (the frame's node column, a "
        f"store's store.node; None for runs that name none): [{A!r}, {B!r}, None]"
    )
    with pytest.raises(
        ValidationError, match=re.escape("key 'gamma:9:xx' is no node of these runs)")
    ):
        MAPPED[view](frame, {A: 1, "gamma:9:xx": 2, None: 1})  # matches none: no guess


@pytest.mark.parametrize(
    "workers", [3, [2, 0, 1], {A: 2, B: 3, None: 1}, {B: [1, 0], A: 1, None: 2}], ids=repr
)
def test_a_gantt_chart_given_workers_has_utilisations_lanes_idle_ones_too(
    workers: Workers,
) -> None:
    records = [*two_processes(), run("d", 0, T0 + 60, 60, None)]
    frame = to_frame(records)
    ax = gantt(frame, workers=workers).axes[0]
    assert lanes(ax) == lanes(utilisation_plot(frame, workers, "1h").axes[0])
    assert ax.get_ylabel() == "node · worker"
    count = len(utilisation(frame, workers, "1h").columns)
    assert (
        ax.get_title(loc="left") == f"{len(records)} runs on {count} workers: 0 failed, 0 timed out"
    )


def test_a_gantt_chart_given_workers_draws_each_run_on_its_lane() -> None:
    frame = to_frame(two_processes())
    ax = gantt(frame, workers={A: 2, B: 3}).axes[0]
    assert lanes(ax) == [
        "alpha.example.org:101 · worker 0", "alpha.example.org:101 · worker 1",
        "beta:202 · worker 0", "beta:202 · worker 1", "beta:202 · worker 2",
    ]  # fmt: skip
    assert bar_rows(ax) == [0.0, 2.0, 3.0]  # A·0, B·0, B·1; A·1 and B·2 idle
    single = gantt(to_frame([run("a", 1, T0, 60, None)]), workers=3).axes[0]
    assert lanes(single) == ["worker 0", "worker 1", "worker 2"]
    assert single.get_ylabel() == "worker"
    assert bar_rows(single) == [1.0]
    empty = gantt(to_frame([]), workers={A: 1}).axes[0]
    assert lanes(empty) == ["alpha.example.org:101 · worker 0"]
    figure = gantt(frame, workers={A: 2, B: 3})
    mark_wait(figure, frame.iloc[2], text="c's wait")  # B's worker 1
    (arrow,) = [t for t in figure.axes[0].texts if isinstance(t, Annotation)]
    assert round(float(arrow.xy[1]), 6) == 3.42


def test_idle_lanes_are_the_least_busy_when_lanes_are_left_out() -> None:
    frame = to_frame([run("a", 3, T0, 3600, None), run("b", 1, T0, 60, None)])
    ax = gantt(frame, workers=10, max_lanes=3).axes[0]
    assert lanes(ax) == ["worker 0", "worker 1", "worker 3"]  # the busy two, then idle 0
    assert bar_rows(ax) == [2.0, 1.0]
    assert ax.get_title(loc="left") == (
        "2 runs on 10 workers: 0 failed, 0 timed out\n3 busiest of 10 workers drawn; 7 left out"
    )


def test_workers_on_a_chart_by_task_is_refused_naming_it() -> None:
    with pytest.raises(
        ValidationError, match=re.escape("by='task' has a lane per task, got workers=4")
    ):
        gantt(to_frame(two_processes()), by="task", workers=4)


@pytest.mark.parametrize(
    ("workers", "named"),
    [
        ({}, "got an empty mapping"),
        ({"": 2}, "got ''"),
        ({7: 2}, "got 7"),
        ({A: 0}, f"workers[{A!r}] must be a count from 1"),
        ({A: [0, 0]}, f"workers[{A!r}] must be worker indexes >= 0, each once"),
        ({A: [], B: [0]}, f"workers[{A!r}] must name at least one worker index, got []"),
        ({A: 60_000, B: 60_000}, "names 120,000 worker lanes in all"),
    ],
)
def test_a_bad_mapping_of_workers_is_refused_naming_what_is_wrong(
    workers: Workers, named: str
) -> None:
    for frame in (to_frame(two_processes()), to_frame([])):
        for view in MAPPED.values():
            with pytest.raises(ValidationError, match=re.escape(named)):
                view(frame, workers)


# -- runs that name no process: an empty id is none ------------------------------------


def test_runs_of_an_empty_node_id_share_the_no_node_lanes() -> None:
    # "" named a process of its own: its lane read " · worker 0", apart from the
    # "no node" lanes of the runs that name none, though neither names a process.
    frame = to_frame([run("a", 0, T0, 600, A), run("b", 0, T0, 60, ""), run("c", 1, T0, 60, None)])
    ax = gantt(frame).axes[0]
    assert lanes(ax) == [
        "alpha.example.org:101 · worker 0", "no node · worker 0", "no node · worker 1"
    ]  # fmt: skip
    table = utilisation(frame, 2, "1h")
    assert table.columns.get_level_values("node")[:2].tolist() == [A, A]
    assert table.columns.get_level_values("node")[2:].isna().all()
    assert utilisation(frame, {A: 1, None: 2}, "1h").iloc[0].tolist() == [1 / 6, 1 / 60, 1 / 60]
    figure = gantt(frame)
    mark_wait(figure, frame.iloc[1], text="b's wait")
    (arrow,) = [t for t in figure.axes[0].texts if isinstance(t, Annotation)]
    assert round(float(arrow.xy[1]), 6) == 1.42  # the "no node · worker 0" lane
    # an empty id and a named node alone: one process named, one not
    alone = to_frame([run("b", 0, T0, 60, ""), run("c", 0, T0 + 60, 60, None)])
    assert lanes(gantt(alone).axes[0]) == ["worker 0"]
