"""A takeover names the process whose lease it replaced.

A user trial SIGKILLed one of three gunicorn workers mid-run: the WARNING "took over task
slow ... the lease of the process that held it expired unsettled (it died, stalled or lost
the store)" named no process, so which worker had died (or, worse, had stalled and might
still be running the job) was left to guess.  The claim reads the replaced lease's holder
(``Claim.taken_from``, its node id ``host:pid:random``, the one a record's ``node`` and
``tasks show``'s ``claimed`` line give) in the statement that already reads the lease, and
the WARNING names it.  Store level on both engines, the lease expired by each engine's own
clock (SQLite: the claimer's ``now``; PostgreSQL: the server's, moved back by hand); then a
scheduler's WARNING.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
import pytest

from lldsched.coordination import CoordinatedStore
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.threaded.shared.coordinator import said_taken_over
from tests.conftest import T0
from tests.test_store_sqlite import snapshot, task

LEASE = 60.0


@pytest.fixture(params=["sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: object
) -> tuple[Callable[[], CoordinatedStore], Callable[[CoordinatedStore], float]]:
    """An opener of a shared store, and what expires every lease: the ``now`` a claim
    passes to find them expired (PostgreSQL: after moving them back on the server)."""
    if request.param == "sqlite":
        path = f"{tmp_path}/shared.db"
        return (
            lambda: SqliteTaskStore(path, shared=True, lease=LEASE),
            lambda _store: T0 + LEASE + 1,
        )
    dsn: str = request.getfixturevalue("postgres_dsn")

    def expire(_store: CoordinatedStore) -> float:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute("UPDATE leases SET expires_at = expires_at - 2 * %s", (LEASE,))
        return T0

    return lambda: PostgresTaskStore(dsn, lease=LEASE), expire


def test_a_claim_that_takes_a_lease_over_names_its_holder(
    stores: tuple[Callable[[], CoordinatedStore], Callable[[CoordinatedStore], float]],
) -> None:
    opener, expire = stores
    first, second = opener(), opener()
    try:
        first.save(snapshot(task(id="a")))
        (old,) = first.claim(now=T0, limit=1)
        assert (old.taken_over, old.taken_from) == (False, None)  # nobody's lease before
        (new,) = second.claim(now=expire(second), limit=1)
        assert (new.task_id, new.taken_over, new.taken_from) == ("a", True, first.node)
        assert first.node != second.node
    finally:
        first.close()
        second.close()


def test_the_takeover_warning_names_the_process_whose_lease_expired(
    stores: tuple[Callable[[], CoordinatedStore], Callable[[CoordinatedStore], float]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    opener, expire = stores
    first, second = opener(), opener()
    try:
        first.save(snapshot(task(id="a")))
        first.claim(now=T0, limit=1)
        (new,) = second.claim(now=expire(second), limit=1)
        with caplog.at_level(logging.WARNING, logger="lldsched.cluster"):
            said_taken_over(new)
        (line,) = [r.getMessage() for r in caplog.records if "took over task" in r.getMessage()]
        held = f"with token {new.token}: the lease of the process that held it ({first.node})"
        assert held in line
    finally:
        first.close()
        second.close()
