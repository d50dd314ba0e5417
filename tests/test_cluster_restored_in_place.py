"""A copy of a shared store restored under running schedulers: a backup written into a
SQLite file (the same inode: ``sqlite3 tasks.db ".restore backup.db"``, or the backup API
into the path), a PostgreSQL dump restored into the schema they use.

The store's counters go back under the processes on it: the fencing tokens they were given
would be given again, and the slots run since the copy run again, with nothing said.  Each
scheduler that finds a counter behind what it was given or read claims nothing more, says
so on ``lldsched.store`` and reads ``store_ok`` False (docs/OPERATIONS.md, "Backing up
and restoring a store").  Runs per engine in ``tests.cluster.FACTORIES``."""

from __future__ import annotations

import logging
import subprocess
import threading
from pathlib import Path

import pytest
from psycopg import conninfo

from lldsched import FixedRate, Scheduler
from lldsched.core.context import RunContext
from tests.cluster import StoreSpec, opened
from tests.test_store_shared import sqlite_copy
from tests.waits import wait_until

_lock = threading.Lock()
_tokens: list[int] = []


def given(ctx: RunContext) -> None:
    """The action: notes the fencing token of each run."""
    with _lock:
        _tokens.append(ctx.fencing_token or 0)


class Copies:
    """Take a copy of the store of ``spec``, and restore it in place."""

    def __init__(self, spec: StoreSpec, request: pytest.FixtureRequest, directory: Path):
        self.spec = spec
        self.request = request
        self.copy = directory / ("backup.db" if spec.engine == "sqlite" else "backup.dump")

    def take(self) -> None:
        if self.spec.engine == "sqlite":
            sqlite_copy(self.spec.params["path"], str(self.copy))
            return
        server = self.request.getfixturevalue("postgres_server")
        subprocess.run(
            [str(server.bin / "pg_dump"), "-d", server.dsn(), "-n", self._schema(), "-Fc",
             "-f", str(self.copy)],
            check=True, capture_output=True,
        )  # fmt: skip

    def restore(self) -> None:
        if self.spec.engine == "sqlite":
            sqlite_copy(str(self.copy), self.spec.params["path"])
            return
        server = self.request.getfixturevalue("postgres_server")
        server.sql(f"DROP SCHEMA {self._schema()} CASCADE")
        subprocess.run(
            [str(server.bin / "pg_restore"), "-d", server.dsn(), str(self.copy)],
            check=True, capture_output=True,
        )  # fmt: skip

    def _schema(self) -> str:
        dsn = str(self.spec.params["dsn"])
        if self.spec.engine == "pgbouncer":  # the role's own schema (tests/pg_bouncer.py)
            return str(conninfo.conninfo_to_dict(dsn)["user"])
        return dsn.rsplit("search_path%3D", 1)[1]


def _said_restored(caplog: pytest.LogCaptureFixture, name: str) -> bool:
    """Whether the scheduler ``name``'s threads logged its store's refusal (a failed call's
    line: at ERROR as an outage begins, at DEBUG once one goes on)."""
    for record in caplog.records:
        text = record.getMessage() + (str(record.exc_info[1]) if record.exc_info else "")
        thread = record.threadName or ""
        if thread.startswith(f"lldsched-{name}-") and "restored or rewound" in text:
            return True
    return False


def test_schedulers_on_a_store_restored_in_place_give_no_token_twice(
    store_spec: StoreSpec,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    schedulers: list[Scheduler],
    caplog: pytest.LogCaptureFixture,
) -> None:
    copies = Copies(store_spec, request, tmp_path)
    _tokens.clear()
    names = ("left", "right")
    with opened(store_spec, 2, lease=5.0, poll=0.05) as stores:
        schedulers += [
            Scheduler(workers=1, store=store, name=name)
            for store, name in zip(stores, names, strict=True)
        ]
        for scheduler in schedulers:
            scheduler.schedule("tick", given, FixedRate(0.02), id="tick", replace_existing=True)
        copies.take()  # the task registered, nothing run yet
        for scheduler in schedulers:
            scheduler.start()
        wait_until(
            lambda: len(_tokens) >= 20 and all(s.metrics().runs for s in schedulers),
            timeout=20,
            what="twenty runs, some in each scheduler",
        )
        with caplog.at_level(logging.DEBUG, logger="lldsched.store"):
            copies.restore()
            wait_until(
                lambda: all(_said_restored(caplog, name) for name in names),
                timeout=20,
                what="both schedulers to find the store restored under them",
            )
            assert not any(scheduler.metrics().store_ok for scheduler in schedulers)
            for scheduler in schedulers:
                scheduler.shutdown()
    with _lock:
        tokens = list(_tokens)
    assert len(set(tokens)) == len(tokens), sorted(tokens)
