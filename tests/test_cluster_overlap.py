"""``overlap=`` on a shared store: a task never overlaps itself there (one lease per task,
docs/CLUSTER.md), so the two policies that need two runs of a task at once are refused
when the task is registered, naming the task and the policy, and nothing registered
changes; ``Overlap.BUFFER_ONE`` and the default hold as in one process.

Before, ``Overlap.ALLOW`` and ``Overlap.CANCEL_OTHER`` were taken and silently not
honoured: a ``FixedRate(1)`` task with 2.5 s runs and ``Overlap.ALLOW, max_instances=3``
ran three runs one after another in 5 s, not six side by side, and ``CANCEL_OTHER``
cancelled nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FixedRate, Overlap, Scheduler, SqliteTaskStore, ValidationError
from lldsched.coordination import CoordinatedStore
from tests import jobs
from tests.cluster import StoreSpec, open_store


@pytest.fixture
def shared(store_spec: StoreSpec) -> Iterator[tuple[Scheduler, CoordinatedStore]]:
    """A scheduler on a shared store (never started: registration is what is tested),
    and a second connection to the store, to read what it holds."""
    store, reader = open_store(store_spec), open_store(store_spec)
    scheduler = Scheduler(store=store)
    yield scheduler, reader
    scheduler.shutdown()
    reader.close()
    store.close()


@pytest.mark.parametrize(
    ("overlap", "max_instances", "named"),
    [
        (Overlap.ALLOW, 3, "Overlap.ALLOW"),
        (Overlap.ALLOW, 1, "Overlap.ALLOW"),
        (Overlap.CANCEL_OTHER, None, "Overlap.CANCEL_OTHER"),
    ],
    ids=["allow-3", "allow-1", "cancel-other"],
)
def test_an_overlap_that_needs_two_runs_at_once_is_refused_and_nothing_changes(
    shared: tuple[Scheduler, CoordinatedStore],
    overlap: Overlap,
    max_instances: int | None,
    named: str,
) -> None:
    scheduler, reader = shared
    scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
    with pytest.raises(ValidationError, match=f"task 'fresh'.*{named}.*shared store"):
        scheduler.schedule("fresh", jobs.noop, FixedRate(60), id="fresh", overlap=overlap,
                           max_instances=max_instances)  # fmt: skip
    with pytest.raises(ValidationError, match=f"task 'kept'.*{named}.*shared store"):
        scheduler.schedule("kept", jobs.noop, FixedRate(30), id="kept", overlap=overlap,
                           max_instances=max_instances, replace_existing=True)  # fmt: skip
    assert [task.id for task in scheduler.tasks()] == ["kept"]
    (row,) = reader.load_all()
    assert (row.task.id, row.task.schedule, row.task.overlap) == ("kept", FixedRate(60), None)
    assert scheduler.task("kept").schedule == FixedRate(60)


def test_buffer_one_and_the_default_are_taken_as_in_one_process(
    shared: tuple[Scheduler, CoordinatedStore],
) -> None:
    scheduler, reader = shared
    scheduler.schedule("buffered", jobs.noop, FixedRate(60), id="b", overlap=Overlap.BUFFER_ONE)
    scheduler.schedule("plain", jobs.noop, FixedRate(60), id="p")
    assert sorted((row.task.id, row.task.overlap) for row in reader.load_all()) == [
        ("b", Overlap.BUFFER_ONE),
        ("p", None),
    ]


def test_a_row_written_unshared_with_overlap_allow_is_loaded_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that one process ran unshared, then several run shared: the row is loaded
    (refusing the store would stop the service), and the log says its runs will not
    overlap there."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store, Scheduler(store=store) as alone:
        alone.schedule("wide", jobs.noop, FixedRate(60), id="wide", overlap=Overlap.ALLOW,
                       max_instances=2)  # fmt: skip
    caplog.set_level(logging.WARNING, logger="lldsched")
    with SqliteTaskStore(path, shared=True) as store:
        scheduler = Scheduler(store=store)
        assert scheduler.task("wide").overlap is Overlap.ALLOW
        scheduler.shutdown()
    (line,) = [r for r in caplog.records if "does not honour" in r.getMessage()]
    assert (
        line.levelno == logging.WARNING
        and "task wide has overlap=Overlap.ALLOW" in line.getMessage()
    )
