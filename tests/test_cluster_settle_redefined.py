"""A settle after another process registered a new schedule for the task during the run,
on both engines, at the store: the run decides the next due instant when its process
had followed the new definition before it settled (its registry counted the new
schedule from the run's finish, as one process does); a replacement it had not
followed keeps the due instant it wrote, and the row is read back by that process.

The end-to-end case, two schedulers, is in ``tests/test_cluster_control.py``.
"""

from __future__ import annotations

import pytest

from lldsched import FixedRate, TaskSnapshot, TaskStatus
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


@pytest.mark.parametrize("followed", [False, True], ids=["not-followed", "followed"])
@pytest.mark.parametrize(
    ("status", "attempt", "due"),
    [(TaskStatus.RETRYING, 1, T0 + 15), (TaskStatus.FAILED, 1, None)],
    ids=["retry", "failed"],
)
def test_a_run_that_owes_a_retry_or_failed_for_good_decides_after_a_replacement(
    store_spec: StoreSpec, followed: bool, status: TaskStatus, attempt: int, due: float | None
) -> None:
    """One process finishes a run whose task was given another schedule meanwhile: a
    failure with attempts left is retried first (the owed work, then the new schedule
    from the retry's finish), one that fails for good leaves the task FAILED in the dead
    letter (a new definition never changes whether a task runs). So the run decides, the
    replacement followed or not: before, a replacement the runner had not followed kept
    its due instant and status, dropping the retry, or the failure from the dead letter;
    one it had followed left PostgreSQL's row scheduled with no due instant."""
    runner, replacer = open_store(store_spec), open_store(store_spec)
    try:
        runner.save(snapshot(task(id="a", schedule=OLD)))
        (claim,) = runner.claim(now=T0, limit=1)
        replacer.load_all()
        replacer.save(snapshot(task(id="a", schedule=NEW))._replace(next_run_at=T0 + 125))
        if followed:
            (change,) = runner.changes()  # the runner's registry follows the new definition
        ran = task(id="a", schedule=NEW if followed else OLD)
        settled = TaskSnapshot(ran, status, due, attempt, 1, 1, "RuntimeError: boom")
        failed = record("a", 0)._replace(ok=False, error="RuntimeError: boom", token=claim.token)
        runner.settle(settled, failed, token=claim.token)
        (stored,) = replacer.load_all()
        assert (stored.task.schedule, stored.status, stored.next_run_at, stored.attempt) == (
            NEW, status, due, attempt,
        )  # fmt: skip
        assert replacer.dead_letter() == (["a"] if status is TaskStatus.FAILED else [])
        if not followed:
            (change,) = runner.changes()  # the runner reads the row back
            assert change.snapshot is not None and change.snapshot.task.schedule == NEW
    finally:
        runner.close()
        replacer.close()


def test_a_run_that_fails_for_good_during_a_modify_elsewhere_is_dead_lettered(
    store_spec: StoreSpec,
) -> None:
    """Another node changed the task's timeout during the run (its due instant left at the
    slot being run): the run's failure for good leaves it FAILED in the dead letter, as
    in one process. PostgreSQL kept the row scheduled, with no due instant (the run's),
    out of the dead letter: a task that never ran again, and no failure to redrive."""
    runner, replacer = open_store(store_spec), open_store(store_spec)
    try:
        runner.save(snapshot(task(id="a", schedule=OLD)))
        (claim,) = runner.claim(now=T0, limit=1)
        replacer.load_all()
        replacer.save(snapshot(task(id="a", schedule=OLD, timeout=5.0)))
        settled = TaskSnapshot(task(id="a", schedule=OLD), TaskStatus.FAILED, None, 1, 1, 1, "x")
        failed = record("a", 0)._replace(ok=False, error="x", token=claim.token)
        runner.settle(settled, failed, token=claim.token)
        (stored,) = replacer.load_all()
        assert (stored.task.timeout, stored.status, stored.next_run_at) == (
            5.0, TaskStatus.FAILED, None,
        )  # fmt: skip
        assert replacer.dead_letter() == ["a"]
    finally:
        runner.close()
        replacer.close()
