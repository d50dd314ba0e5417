"""Each record of a run on a shared store names the process that ran it (``node``).

Every process numbers its workers from 0, so in the records of a store several processes
share, two processes' ``worker 0`` read as one: the frame, a Gantt chart by worker and
the utilisation could not say who ran what (docs/CLUSTER.md, "Limits", said so).  The
record now carries the process's holder id, the ``node`` its store writes in its leases;
the store keeps it (SQLite schema 7, PostgreSQL schema 7) and the frame has a column.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lldsched import OneTime, Scheduler
from lldsched.coordination import CoordinatedStore
from lldsched.views.frames import to_frame
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two connections to one shared store (once per engine): two processes' stores."""
    with opened(store_spec, 2, poll=0.05) as both:
        yield both


def _runs_once(store: CoordinatedStore, task_id: str) -> Scheduler:
    """A scheduler on ``store`` that registers ``task_id`` due now and runs it; stopped."""
    scheduler = Scheduler(workers=1, store=store).start()
    try:
        scheduler.schedule(task_id, jobs.noop, OneTime(scheduler.now), id=task_id)
        wait_until(lambda: len(store.records(task_id)) == 1, timeout=10, what=f"{task_id}'s run")
    finally:
        assert scheduler.shutdown(timeout=10)
    return scheduler


def test_each_run_on_a_shared_store_names_the_process_that_ran_it(
    stores: list[CoordinatedStore],
) -> None:
    first_store, second_store = stores
    assert first_store.node != second_store.node
    first = _runs_once(first_store, "first")
    second = _runs_once(second_store, "second")
    # Each process's own record, as it heard it, and as every store reads it back.
    (mine,) = first.task("first").history
    assert mine.node == first_store.node and mine.token is not None
    (theirs,) = second.task("second").history
    assert theirs.node == second_store.node
    for store in stores:
        nodes = {record.task_id: record.node for record in store.records()}
        assert nodes == {"first": first_store.node, "second": second_store.node}
        frame = to_frame(store)
        assert frame["worker"].tolist() == [0, 0]  # one lane by worker alone ...
        assert dict(zip(frame["task_id"], frame["node"], strict=True)) == nodes  # ... two here
        assert str(frame["node"].dtype) == "string"
