"""A row whose status this release does not know (a newer release wrote it, in a rolling
deploy), on both engines: left out as a definition this process cannot load is, and read
again once a write gives the row a status it knows.

Before, the feed raised at that row (``StoreError: unknown status``): on SQLite, whose
cursor had moved, every other change read with it was lost to this process (a pause made
elsewhere never reached it); on PostgreSQL every later read raised again, so no change
reached it at all.  A row left out at start for its status stayed out after it changed,
its definition text being the one that "failed"."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator

import pytest

from lldsched import (
    OneTime,
    Scheduler,
    StoreError,
    TaskNotFoundError,
    TaskStatus,
)
from lldsched.coordination import CoordinatedStore
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.conftest import T0
from tests.test_store_sqlite import snapshot, task
from tests.waits import wait_until

NEWER = "suspended"  # a status only a newer release knows
LATER = 3600.0  # a one-off due in an hour: it never runs within a test


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two stores on one shared store (once per engine), closed after the test."""
    with opened(store_spec, 2, poll=0.05) as stores:
        yield stores


def write_status(spec: StoreSpec, task_id: str, status: str) -> None:
    """Write ``status`` to the row of ``task_id`` as another release's process would: a
    new version the change feeds read."""
    if spec.engine == "sqlite":
        connection = sqlite3.connect(spec.params["path"], isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("UPDATE counters SET value = value + 1 WHERE name = 'change'")
            connection.execute(
                "UPDATE tasks SET status = ?, "
                "version = (SELECT value FROM counters WHERE name = 'change') WHERE id = ?",
                (status, task_id),
            )
            connection.execute("COMMIT")
        finally:
            connection.close()
        return
    import psycopg

    with psycopg.connect(spec.params["dsn"], autocommit=True) as server:
        server.execute(
            "UPDATE tasks SET status = %s, version = version + 1, writer = 'newer', "
            "xid = pg_catalog.pg_current_xact_id() WHERE id = %s",
            (status, task_id),
        )


def stored_status(spec: StoreSpec, task_id: str) -> str:
    """The status text of ``task_id``'s row, read past the store."""
    if spec.engine == "sqlite":
        with sqlite3.connect(spec.params["path"]) as connection:
            (status,) = connection.execute(
                "SELECT status FROM tasks WHERE id = ?", (task_id,)
            ).fetchone()
        return str(status)
    import psycopg

    with psycopg.connect(spec.params["dsn"]) as connection:
        row = connection.execute("SELECT status FROM tasks WHERE id = %s", (task_id,)).fetchone()
    assert row is not None
    return str(row[0])


def statuses(store: CoordinatedStore) -> list[tuple[str, TaskStatus | None]]:
    """The feed's changes: each task id with its status (None: gone from this process)."""
    return sorted(
        (change.task_id, None if change.snapshot is None else change.snapshot.status)
        for change in store.changes()
    )


def test_the_feed_leaves_out_a_row_of_a_status_it_does_not_know_and_gives_the_others(
    stores: list[CoordinatedStore],
    store_spec: StoreSpec,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader, writer = stores
    writer.save(snapshot(task(id="a")))
    writer.save(snapshot(task(id="b")))
    assert statuses(reader) == [("a", TaskStatus.SCHEDULED), ("b", TaskStatus.SCHEDULED)]
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        write_status(store_spec, "a", NEWER)
        writer.save(snapshot(task(id="b"), TaskStatus.PAUSED))
        # Before: StoreError "unknown status", and b's pause lost (SQLite) or never read.
        assert statuses(reader) == [("a", None), ("b", TaskStatus.PAUSED)]
        assert reader.unloaded() == ["a"]
        write_status(store_spec, "a", NEWER)  # another write of it: said once, given once
        assert statuses(reader) == []
    said = [r.getMessage() for r in caplog.records if "with a status" in r.getMessage()]
    assert len(said) == 1 and f"status {NEWER!r} is none this release" in said[0]
    assert "it leaves the task to the processes that can" in said[0]
    assert reader.claim(now=T0 + LATER, limit=5) == []  # b paused; a never claimed here
    write_status(store_spec, "a", "paused")  # a status it knows: read again
    assert statuses(reader) == [("a", TaskStatus.PAUSED)]
    assert reader.unloaded() == []


def test_a_row_left_out_at_start_for_its_status_is_read_once_its_status_is_known(
    stores: list[CoordinatedStore], store_spec: StoreSpec
) -> None:
    reader, writer = stores
    writer.save(snapshot(task(id="a")))
    writer.save(snapshot(task(id="b")))
    write_status(store_spec, "a", NEWER)
    loaded = reader.load_all(leave_out=True)
    assert [row.task.id for row in loaded] == ["b"] and reader.unloaded() == ["a"]
    write_status(store_spec, "a", "scheduled")
    # Before: the definition text "failed" at start, so the row stayed left out for good.
    assert ("a", TaskStatus.SCHEDULED) in statuses(reader)  # (SQLite's feed gives b too)
    assert reader.unloaded() == []


def test_a_scheduler_goes_on_following_and_running_while_a_row_has_a_newer_status(
    stores: list[CoordinatedStore], store_spec: StoreSpec, schedulers: list[Scheduler]
) -> None:
    """Two schedulers; a newer release's status on one task's row.  The scheduler that
    cannot read it drops the task (its verbs say it is not here), still hears the other's
    pause of another task and runs its own; a registration that would take the row over
    is refused, nothing written; the task comes back once its row has a status it
    knows."""
    here = Scheduler(workers=1, store=stores[0])
    elsewhere = Scheduler(workers=1, store=stores[1])
    schedulers += [here, elsewhere]
    for task_id in ("a", "b", "c"):
        elsewhere.schedule(task_id, jobs.noop, OneTime(delay=LATER), id=task_id)
    here.start()
    elsewhere.start()
    wait_until(lambda: "c" in here._core.tasks, timeout=10, what="here to follow the tasks")
    write_status(store_spec, "a", NEWER)
    elsewhere.pause("c")

    def followed() -> bool:
        return "a" not in here._core.tasks and here.task("c").status is TaskStatus.PAUSED

    wait_until(followed, timeout=10, what="the row dropped here, and the pause of another")
    with pytest.raises(TaskNotFoundError):
        here.task("a")
    here.run_now("b")  # run by either scheduler

    def ran() -> bool:
        return [record.ok for record in stores[0].records("b")] == [True]

    wait_until(ran, timeout=10, what="the run of b")
    with pytest.raises(StoreError, match=f"cannot replace task 'a': .*{NEWER!r}.*left untouched"):
        here.schedule("a", jobs.noop, OneTime(delay=LATER), id="a", replace_existing=True)
    with pytest.raises(TaskNotFoundError):
        here.task("a")
    assert stored_status(store_spec, "a") == NEWER
    write_status(store_spec, "a", "paused")
    wait_until(lambda: "a" in here._core.tasks, timeout=10, what="the row read again")
    assert here.task("a").status is TaskStatus.PAUSED
