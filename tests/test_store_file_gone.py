"""An SQLite store whose file is deleted or replaced under it says so (a StoreError).

SQLite keeps writing to the file it opened: deleted (a cleanup job, an operator's
``rm``) or replaced (a restore copied over it, a deploy that recreated the folder), the
path no longer names it, every write "succeeds" into a file nobody can open again, and
all of it is gone at the next start.  The store compares the path's device and inode
with the file's it opened (``lldsched/stores/sqlite/file.py``), at most once every
``CHECK_EVERY`` seconds (0 here: at every call), and raises a StoreError naming the
path: a registration is refused, a write after the fact is the outage said once.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from lldsched import FakeClock, FixedRate, Scheduler, SqliteTaskStore, StoreError
from lldsched.stores.sqlite import file as sqlite_file
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0
from tests.test_store_sqlite import snapshot, task


@pytest.fixture(autouse=True)
def every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check at every call: the default bound (a second) is wall-clock time."""
    monkeypatch.setattr(sqlite_file, "CHECK_EVERY", 0.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTaskStore]:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        yield store


def test_a_deleted_file_refuses_the_next_write_naming_the_path_and_registers_nothing(
    store: SqliteTaskStore,
) -> None:
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
    os.unlink(store.path)
    with pytest.raises(StoreError) as raised:
        scheduler.schedule("lost", jobs.noop, FixedRate(60), id="lost")
    assert f"{store.path!r} was deleted" in str(raised.value)
    assert "the writes since went to a file no one can open again" in str(raised.value)
    assert [t.id for t in scheduler.tasks()] == ["kept"]  # nothing registered, nothing lost
    with pytest.raises(StoreError, match="was deleted"):
        store.delete("kept")  # every write, not only a save


def test_a_replaced_file_is_an_outage_said_once_while_the_scheduler_runs_on(
    store: SqliteTaskStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jobs.CALLS.clear()
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    scheduler.schedule("tick", jobs.note, FixedRate(60, start_delay=60), args=("tick",),
                       id="tick")  # fmt: skip
    with SqliteTaskStore(tmp_path / "restored.db") as restored:
        restored.save(snapshot(task(id="from-the-backup")))
    shutil.move(tmp_path / "restored.db", store.path)  # a restore copied over it
    with (
        caplog.at_level(logging.WARNING, logger="lldsched"),
        Stepper(scheduler, timeout=10) as steps,
    ):
        steps.advance(60)
        steps.advance(60)
        assert scheduler.metrics().store_ok is False
    assert len(jobs.CALLS) == 2  # the registry stays authoritative
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert error.exc_info is not None and isinstance(error.exc_info[1], StoreError)
    assert f"{store.path!r} was replaced" in str(error.exc_info[1])
    assert "recovered" not in caplog.text


def test_a_file_moved_away_and_back_is_written_again(
    store: SqliteTaskStore, tmp_path: Path
) -> None:
    store.save(snapshot(task(id="a")))
    os.rename(store.path, tmp_path / "aside.db")
    with pytest.raises(StoreError, match="was deleted"):
        store.save(snapshot(task(id="b")))
    os.rename(tmp_path / "aside.db", store.path)  # the same file, back where it was
    store.save(snapshot(task(id="b")))
    assert [s.task.id for s in store.load_all()] == ["a", "b"]


def test_a_relative_path_is_the_file_opened_after_the_working_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read again in the new working directory (a daemon's chdir("/")), the relative path
    # named no file: every write after was refused, "'tasks.db' was deleted".
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    with SqliteTaskStore("tasks.db") as store:
        monkeypatch.chdir(tmp_path / "elsewhere")
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
        assert [s.task.id for s in store.load_all()] == ["kept"]
        os.unlink(tmp_path / "here" / "tasks.db")  # and the file it opened is still watched
        with pytest.raises(StoreError, match=r"'tasks\.db' was deleted"):
            scheduler.schedule("lost", jobs.noop, FixedRate(60), id="lost")
        scheduler.shutdown()


def test_a_private_database_has_no_path_to_check() -> None:
    with SqliteTaskStore(":memory:") as store:
        store.save(snapshot(task(id="a")))
        assert [s.task.id for s in store.load_all()] == ["a"]


def test_between_two_checks_a_write_does_not_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is looked at once every ``CHECK_EVERY`` seconds, not at every write (a
    ``stat`` is a twentieth of a write): within that bound a write goes to the old file."""
    monkeypatch.setattr(sqlite_file, "CHECK_EVERY", 3600.0)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        os.unlink(store.path)
        store.save(snapshot(task(id="a")))  # not seen yet: written to the deleted file
        later = SimpleNamespace(monotonic=lambda: float("inf"))  # the bound has passed
        monkeypatch.setattr("lldsched.stores.sqlite.file.time", later)
        with pytest.raises(StoreError, match="was deleted"):
            store.save(snapshot(task(id="b")))


def test_a_shared_store_keeps_its_own_rule_refusing_claims(tmp_path: Path) -> None:
    """A shared store checks the same identity at every claim (and refuses to claim:
    test_store_shared), not at every write: the others may still settle on the path."""
    with SqliteTaskStore(tmp_path / "shared.db", shared=True) as store:
        os.unlink(store.path)
        store.save(snapshot(task(id="a")))  # a control verb's row: written, not refused
        with pytest.raises(StoreError, match="was removed or replaced since this process"):
            store.claim(now=T0, limit=1)


def _kept(path: Path, *, shared: bool = False) -> list[str]:
    """The task ids a store opened on ``path`` alone loads."""
    with SqliteTaskStore(path, shared=shared) as store:
        return [s.task.id for s in store.load_all()]


def _backup(path: Path) -> Path:
    """A closed store at ``path`` holding one task, ``from-the-backup`` (no -wal beside it)."""
    with SqliteTaskStore(path) as restored:
        restored.save(snapshot(task(id="from-the-backup")))
    return path


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_file_replaced_under_the_store_reads_as_itself_once_the_store_is_closed(
    tmp_path: Path, shared: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # SQLite closes a connection whose file was renamed over or deleted without a
    # checkpoint and leaves its -wal at the path: the next open read its frames over
    # the file put there, the backup coming back as the replaced store's last state.
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path, shared=shared)
    for name in ("a", "b", "c"):
        store.save(snapshot(task(id=name)))  # frames in the -wal, not checkpointed
    os.replace(_backup(tmp_path / "backup.db"), path)  # a restore renamed over it
    with caplog.at_level(logging.INFO, logger="lldsched"):
        store.close()
    assert _kept(path, shared=shared) == ["from-the-backup"]
    assert (
        f"closing the SQLite store {str(path)!r}, whose path no longer names the file it "
        "opened (it was replaced): its last writes were checkpointed into that file, and the "
        "-wal left at the path holds none, so a file put at the path is read as itself"
    ) in caplog.messages


def test_a_file_deleted_and_put_back_with_no_wal_reads_as_itself(tmp_path: Path) -> None:
    # What the deleted file's StoreError says to do: close the store, put a file back.
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path)
    store.save(snapshot(task(id="a")))
    os.unlink(path)
    with pytest.raises(StoreError, match="was deleted"):
        store.save(snapshot(task(id="b")))
    store.close()
    shutil.copyfile(_backup(tmp_path / "backup.db"), path)
    assert _kept(path) == ["from-the-backup"]


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_file_moved_away_under_the_store_keeps_what_was_written_before(
    tmp_path: Path, shared: bool
) -> None:
    # Its commits were in the -wal left at the old path: the file moved away read empty.
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path, shared=shared)
    store.save(snapshot(task(id="a")))
    store.save(snapshot(task(id="b")))
    os.rename(path, tmp_path / "aside.db")
    store.close()
    left = ["tasks.db-shm", "tasks.db-wal", "tasks.db.lock", *(["tasks.db.write"] * shared)]
    assert sorted(os.listdir(tmp_path)) == ["aside.db", *left]
    assert os.path.getsize(f"{path}-wal") == 0  # nothing left to read over a file put there
    assert _kept(tmp_path / "aside.db", shared=shared) == ["a", "b"]


def test_a_wal_that_cannot_be_checkpointed_at_the_close_is_named_to_remove(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path, timeout=0)
    store.save(snapshot(task(id="a")))
    reader = sqlite3.connect(path)  # another program reading the file, an older state of it
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM tasks").fetchone()
    store.save(snapshot(task(id="b")))
    os.replace(_backup(tmp_path / "backup.db"), path)
    with caplog.at_level(logging.INFO, logger="lldsched"):
        store.close()
    (said,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert said.getMessage() == (
        f"closing the SQLite store {str(path)!r}, whose path no longer names the file it "
        "opened (it was replaced): its last writes could not be checkpointed into that file "
        "(a reader of the file still reads an older state of it), and "
        f"{str(path) + '-wal'!r} holds them: remove it and {str(path) + '-shm'!r} before "
        "the path is opened again, or they are read over the file put there"
    )
    reader.close()
    for left in ("-wal", "-shm"):  # what it says to do
        os.unlink(f"{path}{left}")
    assert _kept(path) == ["from-the-backup"]
