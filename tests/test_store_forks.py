"""A store opened before a fork is refused in the child (lldsched/stores/forks.py): the
child would share its connection, its node id and, unshared, its claim on the file."""

from __future__ import annotations

import os
from pathlib import Path

from lldsched import OneTime, Scheduler, SqliteTaskStore
from lldsched.persistence import TaskStore
from tests import jobs
from tests.cluster import StoreSpec, open_store
from tests.forking import in_child


def _refused_in_child_and_fine_here(store: TaskStore) -> None:
    Scheduler(store=store).schedule("job", jobs.noop, OneTime(2_000_000_000.0), id="job")
    outcome = in_child(lambda: Scheduler(store=store))
    assert outcome.startswith("StoreError: the store ")
    assert f"was opened in process {os.getpid()}" in outcome
    assert "Open the store in each process after the fork" in outcome
    assert [snapshot.task.id for snapshot in store.load_all()] == ["job"]  # parent unharmed


def test_an_unshared_store_opened_before_a_fork_is_refused_in_the_child(tmp_path: Path) -> None:
    """The child inherits the flock: without the refusal two schedulers hold the file."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        _refused_in_child_and_fine_here(store)


def test_a_shared_store_opened_before_a_fork_is_refused_in_the_child(
    store_spec: StoreSpec,
) -> None:
    store = open_store(store_spec)
    try:
        _refused_in_child_and_fine_here(store)
        assert in_child(lambda: store.claim(now=0.0, limit=1)).startswith("StoreError")
    finally:
        store.close()


def test_a_private_in_memory_store_is_the_childs_own_copy() -> None:
    with SqliteTaskStore(":memory:") as store:
        assert in_child(store.load_all) == "[]"  # read, not refused


def test_the_process_id_kept_for_the_check_is_the_childs_after_a_fork() -> None:
    from lldsched.stores import forks

    def same() -> None:
        assert forks.current[0] == os.getpid(), forks.current

    same()
    assert in_child(same) == "None"


def test_a_store_a_running_scheduler_held_at_the_fork_is_refused_for_the_fork_alone(
    tmp_path: Path,
) -> None:
    """In the child the parent's scheduler runs nothing, so its hold on the store is not
    inherited (lldsched/core/storeuse.py): the refusal is the fork's, which says what
    to do, not one naming a scheduler that is not running there."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        running = Scheduler(store=store, name="parent").start()
        try:
            outcome = in_child(lambda: Scheduler(store=store))
        finally:
            assert running.shutdown()
    assert outcome.startswith("StoreError: the store "), outcome
    assert "Open the store in each process after the fork" in outcome
