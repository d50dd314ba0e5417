"""A run's lane: the worker that ran it, or for several processes' runs its node and worker.

:func:`run_nodes` says which processes ran a frame's runs (:func:`missing_nodes`, the
runs that name none); :func:`worker_lanes` puts each run on its lane, and
:func:`mapped_lanes` on the lanes a :data:`Workers` names (a count, worker indexes, or
each node's own; checked, at most :data:`MOST_WORKERS`); :func:`lane_label`,
:func:`node_label`, :func:`node_labels` and :func:`column_labels` name them.  The Gantt
chart's rows and :func:`~lldsched.views.utilisation.utilisation`'s columns are these
lanes.  No state, no lock.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, SupportsIndex

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.errors import ValidationError, shown
from lldsched.views.runs import check_spans, ran_reading

__all__ = [
    "LANES_READ",
    "MOST_WORKERS",
    "Laned",
    "Workers",
    "column_labels",
    "lane_checked_runs",
    "lane_label",
    "lane_runs",
    "lanes_of",
    "mapped_lanes",
    "missing_nodes",
    "node_label",
    "node_labels",
    "run_nodes",
    "worker_lanes",
]


Workers = (
    int
    | Iterable[int]
    | Mapping[str | None, int | Iterable[int]]
    | Mapping[str, int | Iterable[int]]
)
""":func:`utilisation`'s ``workers``: one pool every process has (a count or worker
indexes), or each process's own (a node id, ``None`` for runs that name none, to its
count or indexes)."""


Laned = tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]]
"""Runs as :func:`lane_runs` lanes them: ``(start, finish, lane, names)``."""


LANES_READ = frozenset({"start", "finish", "worker", "node", "task_id", "attempt"})
"""The columns :func:`check_spans` and :func:`lane_checked_runs` read (``task_id`` and
``attempt`` name a refused run): :func:`utilisation`, :func:`mean_busy`,
:func:`fitting_freq` and :func:`mapped_lanes` copy the runs of these only
(:func:`ran_reading`)."""


_Pools = dict[str | None, list[int]]


def lanes_of(workers: object) -> _Pools | list[int]:
    """``workers`` checked: the worker indexes of one pool every process has, or each
    node's (:data:`Workers`), nodes sorted and ``None`` last, refused naming a bad key
    or value; at most :data:`MOST_WORKERS` lanes in all."""
    if not isinstance(workers, Mapping):
        return _workers(workers)
    if not workers:
        raise ValidationError(
            "workers maps each node (the frame's node ids; None for runs that name none) "
            "to its workers, got an empty mapping"
        )
    pools: _Pools = {}
    for node, pool in workers.items():
        if node is not None and not (isinstance(node, str) and node):
            raise ValidationError(
                f"workers' keys are nodes, the frame's node ids (a store's holder id), or "
                f"None for runs that name no process; got {node!r}"
            )
        pools[node] = _workers(pool, name=f"workers[{node!r}]")
    total = sum(len(pool) for pool in pools.values())
    if total > MOST_WORKERS:
        raise ValidationError(
            f"workers names {total:,} worker lanes in all, more than {MOST_WORKERS:,}"
        )
    return {node: pools[node] for node in _sorted_nodes(pools)}


def _sorted_nodes(nodes: Iterable[str | None]) -> list[str | None]:
    """``nodes`` sorted by id, then ``None`` (runs that name no process) if there."""
    named = list(nodes)
    return [*sorted(node for node in named if node is not None), *([None] * (None in named))]


def lane_runs(frame: pd.DataFrame, workers: object, lanes: _Pools | list[int]) -> Laned:
    """The runs of ``frame`` as ``(start, finish, lane)`` arrays (microseconds since the
    epoch, and the index of each run's lane among the names) and the lanes' names:
    worker indexes, or ``(node, worker)`` for several processes' runs (:func:`run_nodes`)
    or a mapping of nodes (``lanes``, from :func:`lanes_of`).  A run on a worker, or
    of a node, that ``workers`` leaves out is refused, naming it."""
    runs = ran_reading(frame, LANES_READ)  # decided slots ran nowhere
    return lane_checked_runs(runs, check_spans(runs), workers, lanes)


def lane_checked_runs(
    runs: pd.DataFrame,
    spans: tuple[np.ndarray, np.ndarray],
    workers: object,
    lanes: _Pools | list[int],
) -> Laned:
    """:func:`lane_runs` of rows of :func:`ran` whose ``spans`` (:func:`check_spans`)
    are checked already."""
    start, finish = spans
    worker = runs["worker"].to_numpy(dtype=np.int64)
    if isinstance(lanes, dict):
        pools = lanes
        present = _present_nodes(runs)
        unknown = [node for node in present if node not in pools]
        if unknown:
            raise ValidationError(_unmapped(unknown, pools, present))
    else:
        pools = dict.fromkeys(run_nodes(runs), lanes)
        if not pools:  # one process or none: a lane per worker
            return start, finish, _pool_lanes(worker, lanes, workers, None), list(lanes)
    names = [(node, w) for node, pool in pools.items() for w in pool]
    codes = (
        _node_codes(runs, list(pools)) if "node" in runs.columns
        else np.full(len(runs), len(pools) - 1, dtype=np.int64)  # made elsewhere: None's, last
    )  # fmt: skip
    lane = np.zeros(len(runs), dtype=np.int64)
    offset = 0
    for code, (node, pool) in enumerate(pools.items()):
        mine = codes == code
        if mine.any():
            lane[mine] = offset + _pool_lanes(worker[mine], pool, workers, node)
        offset += len(pool)
    return start, finish, lane, names


def _unmapped(unknown: list[str | None], pools: _Pools, present: list[str | None]) -> str:
    """The refusal of runs of nodes (``unknown``) that ``workers``' mapping (``pools``)
    leaves out: it names them, each key that is no node of the runs (``present``) with
    the nodes it may have meant (a node it is part of: ``"web-1:4121"``, the chart's
    short label, of ``"web-1:4121:a1b2c3"``), and every node a key may be."""
    said = []
    for key in (key for key in pools if key not in present):
        near = [node for node in unknown if node is not None and key is not None and key in node]
        said.append(
            f"key {key!r} is no node of these runs"
            + (f" ({' or '.join(map(repr, near))} would match)" if near else "")
        )
    keys = f" ({'; '.join(said)})" if said else ""
    return (
        f"runs of nodes {unknown} are not among workers' nodes {list(pools)}{keys}: map each "
        f"node the frame names to its workers, by its whole holder id (the frame's node "
        f"column, a store's store.node; None for runs that name none): {present}"
    )


def _pool_lanes(
    worker: np.ndarray, pool: list[int], workers: object, node: str | None
) -> np.ndarray:
    """Each of ``worker`` (runs' worker indexes) as its index in ``pool`` (one node's
    workers, in the order asked); a worker not in it is refused, naming it (and
    ``node``, for a mapping)."""
    order = np.argsort(pool, kind="stable")
    known = np.asarray(pool, dtype=np.int64)[order]
    at = np.minimum(np.searchsorted(known, worker), len(known) - 1)
    stray = known[at] != worker
    if stray.any():
        unknown = sorted(set(worker[stray].tolist()))
        whose = f"workers[{node!r}]={pool!r}" if isinstance(workers, Mapping) else (
            f"workers={workers!r}"
        )  # fmt: skip
        raise ValidationError(
            f"runs on workers {unknown} are not among {whose} (a scheduler's "
            "coroutines run on its event loop's lane, worker == workers: count it too)"
        )
    lanes: np.ndarray = order[at]
    return lanes


_NO_NODE = ""
"""A node id that names no process, as a missing one does (:func:`missing_nodes`)."""


def missing_nodes(column: pd.Series[Any]) -> np.ndarray:
    """Which rows of a frame's ``node`` column name no process: missing (``<NA>``, NaN,
    None) or ``""`` (an empty id says no process either: its lane read " · worker 0",
    apart from the "no node" ones).  :func:`run_nodes` and the lanes read the same."""
    empty: np.ndarray = (column == _NO_NODE).to_numpy(dtype=bool, na_value=True)
    return empty | column.isna().to_numpy()


def run_nodes(runs: pd.DataFrame) -> list[str | None]:
    """The processes that ran ``runs`` (rows of :func:`ran`; the frame's ``node``) when
    there is more than one: their ids sorted, then ``None`` if some runs name no process
    (an unshared scheduler's, a store's kept before it had the column, a rolling
    upgrade's older process: ``node`` missing or ``""``, :func:`missing_nodes`); ``[]``
    for one process or none, whose lanes are a worker's.
    A worker index is a worker of its process (every process numbers its workers from
    0), so the views lane several processes' runs by ``(node, worker)``."""
    nodes = _present_nodes(runs)
    return nodes if len(nodes) > 1 else []


def _present_nodes(runs: pd.DataFrame) -> list[str | None]:
    """Every node ``runs`` name, sorted, then ``None`` if some name none
    (:func:`missing_nodes`; all of them for a frame without a ``node`` column)."""
    if "node" not in runs.columns:
        return [None] if len(runs) else []
    # Not one unique() with the NAs: pandas' string unique is 20 times slower on them.
    missing = runs["node"].isna()
    named = set(runs["node"][~missing].unique().tolist()) if not missing.all() else set()
    unnamed = bool(missing.any()) or _NO_NODE in named  # "" names no process either
    return _sorted_nodes({*(str(node) for node in named - {_NO_NODE}), *([None] * unnamed)})


def _node_codes(runs: pd.DataFrame, nodes: list[str | None]) -> np.ndarray:
    """The index of each run's node among ``nodes`` (:func:`_present_nodes` of ``runs``
    or more: sorted, ``None`` last for runs that name no process, :func:`missing_nodes`)."""
    named = [n for n in nodes if n is not None]
    # "" a category, read as none: no comparison of each id (a categorical is one
    # hashing pass; an Index's get_indexer took five times as long)
    codes = pd.Categorical(runs["node"], categories=[*named, _NO_NODE]).codes.astype(np.int64)
    codes[codes < 0] = len(named)  # missing
    return codes


def worker_lanes(runs: pd.DataFrame, nodes: list[str | None]) -> tuple[np.ndarray, list[str]]:
    """Each run's lane (a code from 0, lanes in order of node, as ``nodes`` has them,
    then worker) and each lane's label: ``"worker 0"``, or with ``nodes``
    (:func:`run_nodes`) ``"host:pid · worker 0"`` (:func:`lane_label`)."""
    workers = runs["worker"].to_numpy(dtype=np.int64)
    if not nodes:  # the distinct values hashed, then sorted: not a sort of every run
        indexes = np.sort(pd.unique(workers))
        return np.searchsorted(indexes, workers), [lane_label(None, w) for w in indexes.tolist()]
    low = int(workers.min()) if len(workers) else 0
    span = (int(workers.max()) - low + 1) if len(workers) else 1
    key = _node_codes(runs, nodes) * span + (workers - low)
    keys = np.sort(pd.unique(key))
    texts = node_labels(nodes)
    labels = [lane_label(texts[int(k) // span], int(k) % span + low) for k in keys.tolist()]
    return np.searchsorted(keys, key), labels


def mapped_lanes(runs: pd.DataFrame, workers: Workers) -> tuple[np.ndarray, list[str]]:
    """Each run's lane and each lane's label, as :func:`worker_lanes` gives them, for
    the lanes ``workers`` names: :func:`utilisation`'s columns, by its rules (a count
    or indexes for every process, or a mapping of each node to its own), so a worker
    that ran nothing has its lane, and a run on a worker or of a node that ``workers``
    leaves out is refused, naming it."""
    _, _, lane, names = lane_runs(runs, workers, lanes_of(workers))
    return lane, column_labels(names)


def column_labels(columns: Sequence[Any]) -> list[str]:
    """The label of each of :func:`utilisation`'s columns: of a worker index
    ``"worker 0"``, of a ``(node, worker)`` pair ``"host:pid · worker 0"``
    (:func:`lane_label`, the nodes by :func:`node_labels`; pandas keeps a missing node,
    None, as NaN in a column index)."""
    if not len(columns) or not isinstance(columns[0], tuple):
        return [lane_label(None, int(worker)) for worker in columns]
    named = [None if pd.isna(node) else str(node) for node, _ in columns]
    nodes = list(dict.fromkeys(named))
    texts = dict(zip(nodes, node_labels(nodes), strict=True))
    return [
        lane_label(texts[node], int(worker))
        for node, (_, worker) in zip(named, columns, strict=True)
    ]


def lane_label(node: str | None, worker: int) -> str:
    """A worker's lane: ``"worker 0"``, or of a node's worker (``node``, the node's
    label: :func:`node_labels`) ``"host:pid · worker 0"``."""
    return f"worker {worker}" if node is None else f"{node} · worker {worker}"


def node_label(node: str | None) -> str:
    """A node's id in short: ``"host:pid"`` of a holder id ``"host:pid:random"`` (whole
    if it is not one), ``"no node"`` for ``None`` (runs that name no process)."""
    if node is None:
        return "no node"
    parts = node.split(":")
    return f"{parts[0]}:{parts[1]}" if len(parts) == 3 else node


def node_labels(nodes: Sequence[str | None]) -> list[str]:
    """Each node's :func:`node_label`, or its whole id where the short one would name
    two nodes (one host's pid reused: a restart, another container of one name)."""
    short = [node_label(node) for node in nodes]
    twice = {label for label in short if short.count(label) > 1}
    return [
        str(node) if label in twice else label for node, label in zip(nodes, short, strict=True)
    ]


MOST_WORKERS = 100_000
"""The largest count of workers :func:`utilisation` takes: as many as a simulation may
have (``lldsched.sim.simulation.MAX_WORKERS``, which a view may not import;
``tests/test_frames.py`` keeps the two equal).  A count is a column each: ``workers=10**9``
built a list of a billion lanes (gigabytes, a minute of the machine) before a frame of
them, and ``10**30`` raised ``OverflowError``."""


def _workers(workers: object, name: str = "workers") -> list[int]:
    """``utilisation``'s ``workers``: a count (``0 .. workers-1``, from 1 to
    :data:`MOST_WORKERS`) or worker indexes, at least one, each ``>= 0`` and none twice
    (numpy's integers too: ``operator.index``; a bool is neither).  A count below 1 gave a
    frame of no column (or blamed the runs' workers), no index an ``IndexError`` out of
    numpy (or, on no runs, a frame of no column), an index twice columns whose figures
    were wrong (one lane's busy time spread over copies), and a negative index a worker
    no runtime has."""
    try:
        if isinstance(workers, Iterable) and not isinstance(workers, str | bytes):
            indexes = list(workers)
            if not any(isinstance(w, bool) for w in indexes):
                lanes = [operator.index(w) for w in indexes]
                if not lanes:
                    raise ValidationError(
                        f"{name} must name at least one worker index, got {shown(workers)}"
                    )
                if len(set(lanes)) == len(lanes) and all(lane >= 0 for lane in lanes):
                    if max(lanes) < MOST_WORKERS:
                        return lanes
                    raise ValidationError(  # no runtime's worker (10**5000: OverflowError)
                        f"{name} must be worker indexes below {MOST_WORKERS:,} (as many "
                        f"workers as a simulation has), got {shown(workers)}"
                    )
                raise ValidationError(
                    f"{name} must be worker indexes >= 0, each once, got {shown(workers)}"
                )
        elif isinstance(workers, SupportsIndex) and not isinstance(workers, bool):
            count = operator.index(workers)
            if 1 <= count <= MOST_WORKERS:
                return list(range(count))
            raise ValidationError(
                f"{name} must be a count from 1 to {MOST_WORKERS:,} (as many as a simulation "
                f"has) or a list of worker indexes, got {shown(workers)}"
            )
    except TypeError:
        pass
    raise ValidationError(
        f"{name} must be a count or a list of worker indexes, got {shown(workers)}"
    )
