"""A child forked while a call of its parent was inside a SQLite file is refused that file.

A fork waits up to ``sqlite_forks.FORK_WAIT`` (1 s) for the calls under way on this
process's file stores (lldsched/stores/sqlite/forks.py).  A call that outlasted it (one
waiting for another process's lock), or a store's constructor under way (which it did not
wait for at all), left SQLite's locks on the file copied into the child as held, with no
thread there to let them go: a store the child opened on that file (gunicorn's
``post_fork`` recipe) was given, and every write of it waited out its timeout and failed
"database is locked", for the child's life, a shared store's holding the file's write gate
meanwhile.  Now a constructor is waited for as a call is, and a store opened in such a child
on such a file is refused at once, saying why and what to do
(docs/decisions/persistence.md, "A child forked while a call was inside a file is refused
that file").  Each test forks for real (``os.fork``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lldsched import SqliteTaskStore
from lldsched.stores.sqlite import forks as sqlite_forks
from tests.forking import in_child
from tests.test_store_sqlite import snapshot, task

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")

REFUSED = "StoreError: the SQLite store "
WHY = "SQLite's locks on the file, copied at the fork, say this process holds them"


def _opens_and_saves(path: Path) -> Callable[[], object]:
    """What the child does: open a shared store on ``path`` and save a task (a write
    that, on a file whose locks were copied held, waited out its timeout and failed)."""

    def use() -> object:
        with SqliteTaskStore(path, shared=True, timeout=1) as store:
            store.save(snapshot(task(id="child")))
            return sorted(s.task.id for s in store.load_all())

    return use


@pytest.fixture
def outlasting_the_fork_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork waits for no call under way: each one held across a fork outlasts the wait."""
    monkeypatch.setattr(sqlite_forks, "FORK_WAIT", 0.0)


@pytest.fixture
def in_a_write(tmp_path: Path) -> Iterator[Path]:
    """A shared store whose call, on another thread, is inside a write transaction until
    the test ends: one lasting past the fork's wait."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        inside, done = threading.Event(), threading.Event()

        def long_call() -> None:
            with store._using("a long call") as connection:
                connection.execute("BEGIN IMMEDIATE")
                connection.execute("UPDATE tasks SET status = status")
                inside.set()
                done.wait()
                connection.execute("COMMIT")

        thread = threading.Thread(target=long_call)
        thread.start()
        assert inside.wait(20)
        try:
            yield path
        finally:
            done.set()
            thread.join(20)


@pytest.mark.usefixtures("outlasting_the_fork_wait")
def test_a_store_call_outlasting_the_fork_wait_leaves_the_child_refused_that_file(
    in_a_write: Path, tmp_path: Path
) -> None:
    outcome = in_child(_opens_and_saves(in_a_write), bound=20)
    assert outcome.startswith(REFUSED + repr(str(in_a_write))), outcome  # not "locked"
    assert WHY in outcome and "past the fork's wait" in outcome
    assert f"forked from process {os.getpid()}" in outcome
    other = tmp_path / "other.db"
    assert in_child(_opens_and_saves(other), bound=20) == "['child']"  # another file: as ever


@pytest.mark.usefixtures("outlasting_the_fork_wait")
def test_the_child_s_own_children_are_refused_the_file_too(in_a_write: Path) -> None:
    def grandchild() -> object:
        return in_child(_opens_and_saves(in_a_write), bound=20)

    outcome = in_child(grandchild, bound=30)
    assert REFUSED in outcome and WHY in outcome, outcome  # its children's copies too


def test_the_parent_goes_on_once_its_call_ends(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        in_child(lambda: None)  # no call under way: nothing refused anywhere
        store.save(snapshot(task(id="parent")))
        assert in_child(_opens_and_saves(path), bound=20) == "['child', 'parent']"


@pytest.fixture
def inside_a_constructor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, threading.Event]]:
    """Another thread inside a shared store's constructor, in a write transaction on the
    file (its checks at open), until the test sets the event it gives."""
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path, shared=True).close()  # created: the constructor only opens it
    inside, done = threading.Event(), threading.Event()
    kept = SqliteTaskStore._keep_wal

    def keep_wal(self: SqliteTaskStore, connection: object, timeout: float) -> None:
        connection.execute("BEGIN IMMEDIATE")  # type: ignore[attr-defined]
        connection.execute("UPDATE tasks SET status = status")  # type: ignore[attr-defined]
        inside.set()
        done.wait()
        connection.execute("COMMIT")  # type: ignore[attr-defined]
        kept(self, connection, timeout)  # type: ignore[arg-type]

    monkeypatch.setattr(SqliteTaskStore, "_keep_wal", keep_wal)
    opened: list[SqliteTaskStore] = []
    thread = threading.Thread(target=lambda: opened.append(SqliteTaskStore(path, shared=True)))
    thread.start()
    assert inside.wait(20)
    monkeypatch.setattr(SqliteTaskStore, "_keep_wal", kept)  # the child's constructor: as ever
    try:
        yield path, done
    finally:
        done.set()
        thread.join(20)
        for store in opened:
            store.close()


@pytest.mark.usefixtures("outlasting_the_fork_wait")
def test_a_constructor_outlasting_the_fork_wait_leaves_the_child_refused_that_file(
    inside_a_constructor: tuple[Path, threading.Event],
) -> None:
    path, _done = inside_a_constructor
    outcome = in_child(_opens_and_saves(path), bound=20)
    assert outcome.startswith(REFUSED + repr(str(path))), outcome
    assert WHY in outcome


def test_a_fork_waits_for_a_constructor_under_way_as_for_a_call(
    inside_a_constructor: tuple[Path, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The constructor ends while the fork waits (the fork holds the registry's lock while
    it waits, which the test sees before letting the constructor go): the child opens the
    file and writes.  Before, the fork did not wait for a constructor: the child's save
    failed "database is locked"."""
    path, done = inside_a_constructor
    monkeypatch.setattr(sqlite_forks, "FORK_WAIT", 60.0)

    def let_go_once_the_fork_waits() -> None:
        deadline = time.monotonic() + 20
        while not sqlite_forks._stores_lock.locked() and time.monotonic() < deadline:
            time.sleep(0.001)  # bounded: until the fork's hook holds the registry
        done.set()

    releaser = threading.Thread(target=let_go_once_the_fork_waits)
    releaser.start()
    try:
        assert in_child(_opens_and_saves(path), bound=30) == "['child']"
    finally:
        done.set()
        releaser.join(20)
