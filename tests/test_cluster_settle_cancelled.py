"""A cancel another process wrote during a run, at the run's settle, on both engines: the
task stays cancelled whatever the run's outcome, its record kept, as in one process
(cancel is final; docs/CLUSTER.md, "How it works"). A pause written so is
``tests/test_store_shared.py`` and ``tests/test_store_postgres_claims.py``."""

from __future__ import annotations

import pytest

from lldsched import FixedRate, TaskSnapshot, TaskStatus
from tests.cluster import StoreSpec, open_store
from tests.conftest import T0
from tests.test_store_sqlite import record, snapshot, task


@pytest.mark.parametrize(
    ("ended", "ok"),
    [(TaskStatus.SCHEDULED, True), (TaskStatus.SUCCEEDED, True), (TaskStatus.FAILED, False)],
    ids=["next-slot", "succeeded", "failed-for-good"],
)
def test_a_cancel_written_during_a_run_wins_over_its_outcome(
    store_spec: StoreSpec, ended: TaskStatus, ok: bool
) -> None:
    """SQLite let a run that ended its task (succeeded, or failed for good) overrule the
    cancel: a job cancelled by an operator while another process ran it went to the dead
    letter when that run failed, where a redrive would run it again."""
    runner, other = open_store(store_spec), open_store(store_spec)
    try:
        runner.save(snapshot(task(id="a", schedule=FixedRate(60))))
        (claim,) = runner.claim(now=T0, limit=1)
        other.load_all()
        cancelled = snapshot(task(id="a", schedule=FixedRate(60)), TaskStatus.CANCELLED)
        other.save(cancelled._replace(next_run_at=None))
        due = T0 + 60 if ended is TaskStatus.SCHEDULED else None
        settled = TaskSnapshot(task(id="a", schedule=FixedRate(60)), ended, due, 0, 1,
                               0 if ok else 1, None if ok else "x")  # fmt: skip
        ran = record("a", 0)._replace(ok=ok, error=None if ok else "x", token=claim.token)
        runner.settle(settled, ran, token=claim.token)
        (stored,) = other.load_all()
        assert (stored.status, stored.next_run_at) == (TaskStatus.CANCELLED, None)
        assert other.dead_letter() == []
        assert len(other.records("a")) == 1
    finally:
        runner.close()
        other.close()
