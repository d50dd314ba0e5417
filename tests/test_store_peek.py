"""``lldsched.stores.peek``: a store read to be shown, importing none of the code its
tasks name and writing nothing (what ``python -m lldsched tasks`` lists).

A store's own reads import each task's action and classes (``decode_task``): a
definition naming a module this process does not have failed the whole read.  Here such
a task is read with its paths as text, and a row no read can follow (a status no release
knows) is listed as its error beside the others."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from lldsched import OneTime, Priority, RetryPolicy, Scheduler, SqliteTaskStore, Task
from lldsched.errors import StoreError
from lldsched.schedules.decorators import describe
from lldsched.stores.codec import NotImported, decode_task, encode_task
from lldsched.stores.peek import peek_sqlite
from tests import jobs


def _digest(path: Path) -> str:
    """The store's data: the file and its write-ahead log (a reader marks its place in
    the ``-shm`` index, which holds no data)."""
    files = [path, path.with_name(f"{path.name}-wal")]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files if f.exists())).hexdigest()


def test_a_task_whose_code_is_elsewhere_is_read_as_text_and_an_unreadable_row_by_itself(
    tmp_path: Path,
) -> None:
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        for task_id in ("elsewhere", "zombie", "plain"):
            scheduler.schedule(task_id, jobs.noop, "0 3 * * *", id=task_id)
        scheduler.shutdown()
    with sqlite3.connect(path) as connection:  # another release's rows
        (text,) = connection.execute(
            "SELECT definition FROM tasks WHERE id = 'elsewhere'"
        ).fetchone()
        definition = json.loads(text)
        definition["action"] = "service.jobs:sync"
        definition["schedule"] = {"type": "Lunar", "phase": 3}
        definition["retry"]["policy"] = "service.policies:Backoff"
        connection.execute(
            "UPDATE tasks SET definition = ? WHERE id = 'elsewhere'", (json.dumps(definition),)
        )
        connection.execute("UPDATE tasks SET status = 'hibernating' WHERE id = 'zombie'")
    before = _digest(path)
    reader = peek_sqlite(str(path))
    try:
        elsewhere, zombie, plain = reader.tasks()
    finally:
        reader.close()
    assert _digest(path) == before  # nothing written
    assert elsewhere.snapshot is not None
    task = elsewhere.snapshot.task
    assert isinstance(task.action, NotImported) and repr(task.action) == "service.jobs:sync"
    assert describe(task.schedule) == 'Lunar {"phase": 3}'
    assert type(task.retry) is RetryPolicy
    assert (zombie.snapshot, zombie.id) == (None, "zombie")
    assert zombie.error is not None and "'hibernating'" in zombie.error
    assert plain.snapshot is not None and repr(plain.snapshot.task.action) == "tests.jobs:noop"


def test_a_task_read_as_text_cannot_run() -> None:
    task = Task("t", "n", jobs.noop, OneTime(0), Priority.NORMAL, RetryPolicy(), None)
    definition = json.loads(encode_task(task))
    definition["action"] = "service.jobs:sync"
    read = decode_task("t", json.dumps(definition), imports=False)
    assert read._replace(action=jobs.noop) == task
    assert read.action is not None
    with pytest.raises(StoreError, match=r"service\.jobs:sync was read as text, not imported"):
        read.action()


def test_a_status_and_an_id_are_the_statements_filter_only_those_rows_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tasks --status S`` decodes the rows in S alone (before: every row of the store,
    10,000 for a large one, then filtered); ``show ID`` its row alone."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        for task_id in ("a", "b", "c", "d"):
            scheduler.schedule(task_id, jobs.noop, "0 3 * * *", id=task_id, paused=task_id in "bd")
        scheduler.shutdown()
    decoded: list[str] = []

    def counted(task_id: str, *args: object, **kwargs: object) -> Task:
        decoded.append(task_id)
        return decode_task(task_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("lldsched.stores.peek.decode_task", counted)
    reader = peek_sqlite(str(path))
    try:
        assert [row.id for row in reader.tasks(status="paused")] == ["b", "d"]
        assert decoded == ["b", "d"]
        assert reader.tasks(status="failed") == []
        assert [row.id for row in reader.tasks("c")] == ["c"]
        assert decoded == ["b", "d", "c"]
    finally:
        reader.close()
