"""The crash harness's PostgreSQL store that says its writes (tests/test_crash_harness.py)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.stores.postgres import PostgresTaskStore
from tests.crash_jobs import said
from tests.waits import wait_until

LEASE = 0.5
"""A PostgreSQL store's lease in the harness (seconds of the database's clock): how long
a killed process's runs wait before another takes them over."""


def wait_leases_expired(dsn: str, *, what: str, timeout: float = 10.0) -> None:
    """Wait (bounded: :func:`~tests.waits.wait_until`) until no lease in ``dsn``'s schema
    is live by the database's clock: a killed process's runs can then be taken over.  One
    connection for the whole wait, each poll a query on it: a connection a poll was some
    25 log-ins (a backend forked for each) for every 0.5 s lease waited out."""
    with psycopg.connect(dsn, autocommit=True) as connection:

        def expired() -> bool:
            row = connection.execute(
                "SELECT count(*) FROM leases"
                " WHERE expires_at > extract(epoch FROM clock_timestamp())"
            ).fetchone()
            return row is not None and row[0] == 0

        wait_until(expired, timeout=timeout, what=what)


class CountingPostgresStore(PostgresTaskStore):
    """A :class:`PostgresTaskStore` that says each write it is given (:func:`said`; a
    run's settle is queued for the store's writer thread, not yet committed)."""

    def __init__(self, dsn: str, *, stop_at: int) -> None:
        super().__init__(dsn, lease=LEASE, poll=0.05)
        self.stop_at = stop_at
        self.count = [0]

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        said(self.count, self.stop_at)

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        super().save_all(snapshot, records)  # one write: a run's record and its skipped slots'
        said(self.count, self.stop_at)

    def delete(self, task_id: str) -> None:
        super().delete(task_id)
        said(self.count, self.stop_at)
