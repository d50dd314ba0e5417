"""Frames of a simulated cluster (a :class:`~lldsched.cluster.ClusterResult`): one row
per claimed run, and one row of counts per result.

:func:`cluster_frame` columns (times in seconds after the scenario's start, the
unit its faults are written in):

============  ==========  ==================================================
column        dtype       meaning
============  ==========  ==================================================
node          string      the node that claimed and ran the slot
task_id       string      the task
slot          float64     the slot's due instant
token         int64       the claim's fencing token
claimed       float64     when the node claimed it
finished      float64     when it finished and wrote; NaN if its node crashed
lease_until   float64     when its lease ended (finish, or an expiry not renewed)
write         category    ``landed``, ``rejected`` (a stale token) or ``none``
settled       bool        its settle went through
takeover      bool        it took the slot over from an expired lease
duplicate     bool        its write landed on a slot where another write landed too
============  ==========  ==================================================

:func:`cluster_counts`: one row per result, indexed by ``label`` (``"fencing"`` or
``"no fencing"`` unless given), with the columns of
:meth:`ClusterResult.summary <lldsched.cluster.ClusterResult.summary>`.
"""

from __future__ import annotations

from collections.abc import Sequence

from lldsched.views import missing_extra

try:
    import pandas as pd
except ImportError as exc:  # exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas", exc) from exc

from lldsched.cluster import ClusterResult
from lldsched.errors import ValidationError, shown

__all__ = ["WRITES", "check_result", "cluster_counts", "cluster_frame", "label_of"]

WRITES = ("landed", "rejected", "none")
"""The categories of the ``write`` column, in this order."""


def cluster_frame(result: ClusterResult) -> pd.DataFrame:
    """One row per claimed run of ``result``, in claim order (see the module docstring)."""
    check_result(result)
    origin = result.start
    landed = result.landed()
    runs = result.runs
    return pd.DataFrame(
        {
            "node": pd.array([r.node for r in runs], dtype="string"),
            "task_id": pd.array([r.task_id for r in runs], dtype="string"),
            "slot": pd.array([r.slot - origin for r in runs], dtype="float64"),
            "token": pd.array([r.token for r in runs], dtype="int64"),
            "claimed": pd.array([r.claimed - origin for r in runs], dtype="float64"),
            "finished": pd.array(
                [float("nan") if r.finished is None else r.finished - origin for r in runs],
                dtype="float64",
            ),
            "lease_until": pd.array([r.lease_until - origin for r in runs], dtype="float64"),
            "write": pd.Categorical([r.write for r in runs], categories=list(WRITES)),
            "settled": pd.array([r.settled for r in runs], dtype="bool"),
            "takeover": pd.array([r.takeover for r in runs], dtype="bool"),
            "duplicate": pd.array(
                [r.write == "landed" and landed[(r.task_id, r.slot)] > 1 for r in runs],
                dtype="bool",
            ),
        }
    )


def cluster_counts(
    results: Sequence[ClusterResult], *, labels: Sequence[str] | None = None
) -> pd.DataFrame:
    """The counts of each result, a row each (see the module docstring)."""
    # (an int or a generator: a bare TypeError from len() or from iterating)
    if isinstance(results, ClusterResult) or not isinstance(results, Sequence) or not results:
        raise ValidationError(
            f"results must be a non-empty sequence of results, got {shown(results)}"
        )
    for result in results:
        check_result(result)
    if labels is not None and (isinstance(labels, str) or not isinstance(labels, Sequence)):
        raise ValidationError(f"labels must be a list of texts, got {shown(labels)}")
    names = list(labels) if labels is not None else [label_of(r) for r in results]
    if len(names) != len(results):
        raise ValidationError(
            f"labels must name each of the {len(results)} results, got {shown(names)}"
        )
    frame = pd.DataFrame([result.summary() for result in results], index=names)
    frame.index.name = "label"
    return frame


def label_of(result: ClusterResult) -> str:
    """``"fencing"`` or ``"no fencing"``: the default label of a result."""
    return "fencing" if result.fencing else "no fencing"


def check_result(result: object) -> None:
    """Refuse anything but a :class:`~lldsched.cluster.ClusterResult`, naming it: what
    this module's views and the cluster charts ask of ``result`` first."""
    if not isinstance(result, ClusterResult):
        raise ValidationError(f"expected a ClusterResult (simulate_cluster's), got {shown(result)}")
