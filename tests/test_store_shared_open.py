"""Shared SQLite stores opening one new file together (workers started at once, the
cluster tests' child schedulers): every opener opens it, the first one creating it.

Two races, each forced here, then all of them at once:

* an opener reading the file while another creates it read its application id before
  the creation (0) and its tables after: "not an lldsched store";
* openers switching the new file to WAL mode together: SQLite answers one of them
  "database is locked" at once (waiting would never end for either), and that opener
  failed.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from lldsched import OneTime, Scheduler, SqliteTaskStore, StoreError
from tests import jobs

T0 = 1_800_000_000.0
_WAL = "PRAGMA journal_mode = WAL"


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "tasks.db")


def test_a_store_created_while_another_opener_reads_the_file_is_read_whole(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file as the first opener leaves it between its switch to WAL mode and its
    tables: empty, in WAL mode.  The second reads it, and as it reads the table list the
    first creates the store: the second read the file empty (as it was when it began to
    read) and opens the store the first made."""
    connection = sqlite3.connect(path)
    assert connection.execute(_WAL).fetchone() == ("wal",)
    connection.close()
    others: list[SqliteTaskStore] = []
    check = SqliteTaskStore._check
    raced: list[bool] = []  # once: the other opener's own reads are not raced

    def create_while_read(statement: str) -> None:
        if "sqlite_master" in statement and not raced:
            raced.append(True)
            others.append(SqliteTaskStore(path, shared=True))

    def check_while_another_creates(store: SqliteTaskStore, connection: sqlite3.Connection) -> Any:
        connection.set_trace_callback(create_while_read)
        try:
            return check(store, connection)
        finally:
            connection.set_trace_callback(None)

    monkeypatch.setattr(SqliteTaskStore, "_check", check_while_another_creates)
    with SqliteTaskStore(path, shared=True) as late:
        (first,) = others  # created during the late opener's read of the table list
        Scheduler(store=first).schedule("job", jobs.noop, OneTime(T0), id="job")
        assert [claim.task_id for claim in late.claim(now=T0, limit=1)] == ["job"]
    first.close()


class _RefusedOnce(sqlite3.Connection):
    """A connection whose first switch to WAL mode SQLite refuses as it refuses the
    second of two openers switching a new file together: "database is locked" at once."""

    refused = 0  # refusals so far, across connections (a subclass is made per test)
    limit = 1  # refusals in all

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql == _WAL and type(self).refused < type(self).limit:
            type(self).refused += 1
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise error
        return super().execute(sql, parameters)


def _connect_refusing(monkeypatch: pytest.MonkeyPatch, *, times: int) -> type[_RefusedOnce]:
    """Make the stores opened next connect with a :class:`_RefusedOnce` refusing ``times``
    switches to WAL mode; the class, which counts them."""
    refusing = type("Refusing", (_RefusedOnce,), {"refused": 0, "limit": times})
    connect = sqlite3.connect

    def connect_refusing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(*args, factory=refusing, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect_refusing)
    return refusing


def test_an_opener_refused_its_switch_to_wal_mode_at_once_tries_again(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusing = _connect_refusing(monkeypatch, times=1)
    with SqliteTaskStore(path, shared=True) as store:
        assert refusing.refused == 1
        Scheduler(store=store).schedule("job", jobs.noop, OneTime(T0), id="job")
        assert [claim.task_id for claim in store.claim(now=T0, limit=1)] == ["job"]
    (mode,) = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_an_opener_still_refused_its_switch_to_wal_mode_past_its_timeout_says_so(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _connect_refusing(monkeypatch, times=1_000_000)
    with pytest.raises(StoreError, match="failed to open the file: OperationalError: database is"):
        SqliteTaskStore(path, shared=True, timeout=0)


def test_shared_stores_opening_new_files_together_all_open_them(tmp_path: Path) -> None:
    """Four openers at once on each of thirty new files (both races above, as they come:
    before the fix, a few openers in every such run failed)."""
    failures: list[BaseException] = []
    for round_ in range(30):
        path = str(tmp_path / f"tasks-{round_}.db")
        start = threading.Barrier(4)

        def open_and_close(path: str = path, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                SqliteTaskStore(path, shared=True).close()
            except BaseException as exc:  # collected, then asserted
                failures.append(exc)

        openers = [threading.Thread(target=open_and_close) for _ in range(4)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
    assert failures == []
