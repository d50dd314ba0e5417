"""A pause, cancel or remove made in an outage on a shared store, whose row another
process writes before this one writes it again: the verb is kept, as one written during
another process's run is (docs/CLUSTER.md, "What the shared mode guarantees"), and
written on the row as that process left it (core/follow.py keeps the verb's status, or
does not learn the removed task back; core/store/stalerows.py keeps the row stale until it is
written).

Before, the verb was lost once the task ran elsewhere first: the process that paused it
followed the other's row back to ``scheduled`` (or left its row, said at INFO), or
learnt the removed task back, every process ran the task on, and the verb had returned
as done."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lldsched import FixedRate, Scheduler, StoreError, TaskNotFoundError, TaskStatus
from lldsched.coordination import CoordinatedStore
from lldsched.persistence import TaskSnapshot
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.test_cluster_wait_end_outage import fail_the_next_save
from tests.waits import wait_until

LEASE = 30.0  # no claim expires within a test
POLL = 0.05
HOUR = 3600.0


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Three stores on one shared store: the verb's process, the runner, a reader."""
    with opened(store_spec, 3, lease=LEASE, poll=POLL) as made:
        yield made


def _row(store: CoordinatedStore, task_id: str) -> TaskSnapshot:
    return next(s for s in store.load_all() if s.task.id == task_id)


def _register(scheduler: Scheduler) -> None:
    for task_id in ("job", "other"):
        scheduler.schedule(task_id, jobs.noop, FixedRate(HOUR, start_delay=HOUR), id=task_id,
                           replace_existing=True)  # fmt: skip


def _run_elsewhere_then_call(
    runner: Scheduler, verbs: Scheduler, reader: CoordinatedStore, first: str
) -> None:
    """The runner, which has not heard of the verb, runs ``job`` and settles it; then the
    verb's process makes its first store call that succeeds: a verb's read of the change
    feed (``feed``), after, as a running scheduler's timer may, a claim (``claim``: the
    row written again is refused, changed since its last read)."""
    runner.run_now("job")
    wait_until(lambda: _row(reader, "job").run_count == 1, timeout=10,
               what="the runner's run of job settled")  # fmt: skip
    if first == "claim":  # the timer's claim succeeding before its read of the feed
        writes = verbs._core.store_writes
        assert writes is not None
        writes.succeeded("claim")
        assert _row(reader, "job").status is TaskStatus.SCHEDULED  # refused: changed
    verbs.pause("other")  # its read of the feed, then the rows left stale written again


@pytest.mark.parametrize("verb", ["pause", "cancel"])
@pytest.mark.parametrize("first", ["feed", "claim"])
def test_a_verb_whose_write_failed_wins_over_a_run_settled_elsewhere_before_it_is_written(
    stores: list[CoordinatedStore], verb: str, first: str
) -> None:
    """The verb's process (never started: its next verb is its first store call) pauses or
    cancels ``job`` while its store fails that write, and returns; the runner, which has not
    heard of it, runs ``job`` (run_now) and settles it: the row says ``scheduled``, one run.
    Then the verb's process makes its first store call that succeeds: a verb's read of the
    change feed (``feed``), or, as a running scheduler's timer may, a claim before that
    read (``claim``: the row written again is refused, changed since its last read). Either
    way the task ends paused (or cancelled) in the store and in both processes, with the
    runner's run counted, and the runner does not run it again."""
    own, runner_store, reader = stores
    runner = Scheduler(workers=1, store=runner_store).start()
    try:
        _register(runner)
        verbs = Scheduler(store=own)  # loads both rows; never started
        fail_the_next_save(own, "job")
        assert getattr(verbs, verb)("job")  # the verb is taken: the registry has it
        wanted = TaskStatus.PAUSED if verb == "pause" else TaskStatus.CANCELLED
        assert verbs.task("job").status is wanted
        assert _row(reader, "job").status is TaskStatus.SCHEDULED  # its write failed
        _run_elsewhere_then_call(runner, verbs, reader, first)
        assert verbs.task("job").status is wanted
        row = _row(reader, "job")
        assert (row.status, row.run_count) == (wanted, 1)  # the runner's run counted
        assert verbs.metrics().store_ok
        wait_until(lambda: runner.task("job").status is wanted, timeout=10,
                   what=f"the runner follows the {verb}")  # fmt: skip
        runner.run_now("job")  # nothing to run: paused or cancelled
        runner.wait_idle()
        assert sum(record.ok for record in reader.records("job")) == 1
    finally:
        runner.shutdown()


def _fail_the_next_delete(store: CoordinatedStore, task_id: str) -> None:
    """Make ``store``'s next delete of ``task_id`` raise a StoreError (nothing deleted), as
    a store away for a moment would; its later deletes go through."""
    delete = store.delete
    failing = [task_id]

    def fails(task_id: str) -> None:
        if task_id in failing:
            failing.remove(task_id)
            raise StoreError("the store went away for a moment")
        delete(task_id)

    store.delete = fails  # type: ignore[method-assign]


@pytest.mark.parametrize("first", ["feed", "claim"])
def test_a_remove_whose_delete_failed_wins_over_a_run_settled_elsewhere_before_it_is_written(
    stores: list[CoordinatedStore], first: str
) -> None:
    """As above, with ``remove``: the runner's settle of the task removed here is not
    learnt back as a registration (before, the task came back in the process that removed
    it, and ran everywhere: the outage's end said its row written again), and the row is
    deleted once read; the runner follows the removal.  A registration of the id made
    elsewhere with another definition is learnt (tests/test_cluster_feed.py)."""
    own, runner_store, reader = stores
    runner = Scheduler(workers=1, store=runner_store).start()
    try:
        _register(runner)
        verbs = Scheduler(store=own)  # loads both rows; never started
        fail_the_next_save(own, "job")  # the cancel a removal writes first
        _fail_the_next_delete(own, "job")
        verbs.remove("job")  # the registry forgets it; its writes failed
        assert "job" in {s.task.id for s in reader.load_all()}
        _run_elsewhere_then_call(runner, verbs, reader, first)
        with pytest.raises(TaskNotFoundError):
            verbs.task("job")
        assert "job" not in {s.task.id for s in reader.load_all()}
        assert verbs.metrics().store_ok
        wait_until(lambda: "job" not in {t.id for t in runner.tasks()}, timeout=10,
                   what="the runner follows the removal")  # fmt: skip
    finally:
        runner.shutdown()


def test_a_task_registered_elsewhere_during_an_outage_here_is_learnt(
    stores: list[CoordinatedStore],
) -> None:
    """The verb's process pauses ``job`` while its store fails that write (an outage, the
    row stale); meanwhile another process registers ``fresh``.  The verb's process's next
    read of the change feed learns ``fresh``, as any registration made elsewhere: only a
    row of a task ``remove()`` forgot here, with the definition removed, is not learnt back
    (``StaleRows.owes_removal``: an outage alone is not such a removal)."""
    own, other_store, reader = stores
    other = Scheduler(store=other_store)  # never started: its verbs write
    _register(other)
    verbs = Scheduler(store=own)  # loads both rows; never started
    fail_the_next_save(own, "job")
    assert verbs.pause("job")
    assert not verbs.metrics().store_ok  # the outage: job's row stale
    other.schedule("fresh", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="fresh")
    assert "fresh" in {s.task.id for s in reader.load_all()}
    verbs.pause("other")  # its read of the feed, in the outage, then the stale row written
    assert verbs.task("fresh").status is TaskStatus.SCHEDULED  # learnt
    assert verbs.metrics().store_ok
    assert _row(reader, "job").status is TaskStatus.PAUSED
