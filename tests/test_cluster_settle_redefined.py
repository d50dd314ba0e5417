"""A settle after another process registered a new schedule for the task during the run,
on both engines, at the store: the run decides the next due instant when its process
had followed the new definition before it settled (its registry counted the new
schedule from the run's finish, as one process does); a replacement it had not
followed keeps the due instant it wrote, and the row is read back by that process.

The end-to-end case, two schedulers, is in ``tests/test_cluster_control.py``.
"""

from __future__ import annotations

from lldsched import FixedRate
from tests.cluster import StoreSpec, open_store
from tests.conftest import T0
from tests.test_store_sqlite import record, snapshot, task

OLD = FixedRate(60)
NEW = FixedRate(120, start_delay=120)


def test_a_replacement_the_runner_followed_leaves_the_due_instant_to_its_settle(
    store_spec: StoreSpec,
) -> None:
    runner, replacer = open_store(store_spec), open_store(store_spec)
    try:
        runner.save(snapshot(task(id="a", schedule=OLD)))
        (claim,) = runner.claim(now=T0, limit=1)
        replacer.load_all()
        replacer.save(snapshot(task(id="a", schedule=NEW))._replace(next_run_at=T0 + 125))
        (change,) = runner.changes()  # the runner's registry follows the new definition
        assert change.snapshot is not None and change.snapshot.task.schedule == NEW
        finished = snapshot(task(id="a", schedule=NEW))._replace(
            next_run_at=T0 + 130, run_count=1
        )  # counted from the run's finish, T0 + 10
        runner.settle(finished, record("a", 0)._replace(token=claim.token), token=claim.token)
        (stored,) = replacer.load_all()
        assert (stored.task.schedule, stored.next_run_at) == (NEW, T0 + 130)
        assert stored.run_count == 1
    finally:
        runner.close()
        replacer.close()


def test_a_replacement_the_runner_had_not_followed_keeps_its_due_instant(
    store_spec: StoreSpec,
) -> None:
    runner, replacer = open_store(store_spec), open_store(store_spec)
    try:
        runner.save(snapshot(task(id="a", schedule=OLD)))
        (claim,) = runner.claim(now=T0, limit=1)
        replacer.load_all()
        replacer.save(snapshot(task(id="a", schedule=NEW))._replace(next_run_at=T0 + 125))
        finished = snapshot(task(id="a", schedule=OLD))._replace(next_run_at=T0 + 60, run_count=1)
        runner.settle(finished, record("a", 0)._replace(token=claim.token), token=claim.token)
        (stored,) = replacer.load_all()
        assert (stored.task.schedule, stored.next_run_at) == (NEW, T0 + 125)
        assert stored.run_count == 1 and len(replacer.records("a")) == 1
        (change,) = runner.changes()  # the runner reads the row back
        assert change.snapshot is not None
        assert (change.snapshot.task.schedule, change.snapshot.next_run_at) == (NEW, T0 + 125)
    finally:
        runner.close()
        replacer.close()
