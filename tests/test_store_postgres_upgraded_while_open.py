"""A PostgreSQL store that a newer release upgrades while this process has it open: the
change feed reads the schema version at every poll, and a newer one makes the store refuse
every later call (docs/UPGRADING.md, "Rolling upgrades on a shared store"), on the
session's real server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from lldsched import OneTime, RunContext, Scheduler, StoreError
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres.sql import DB_NOW
from lldsched.stores.postgres.tables import SCHEMA_VERSION
from tests.conftest import T0
from tests.test_store_sqlite import snapshot, task
from tests.waits import wait_until

NEWER = str(SCHEMA_VERSION + 1)

HELD: list[RunContext] = []
"""The runs of :func:`held` begun (the test clears it)."""


def held(ctx: RunContext) -> None:
    """Hold the run until its flag is raised (at most 30 s, so a failing test cannot hang
    a worker)."""
    HELD.append(ctx)
    ctx.wait(30)


def upgrade_elsewhere(dsn: str) -> None:
    """What a newer release's first process does at its open: the schema's version moves."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("UPDATE lldsched_meta SET value = %s WHERE name = 'schema'", (NEWER,))


def database(dsn: str) -> tuple[Any, ...]:
    """What any write or claim changes: the rows, the leases, the records, the tokens."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        return tuple(
            connection.execute(query).fetchall()
            for query in (
                "SELECT id, status, version, xid::text FROM tasks ORDER BY id",
                "SELECT task_id, token, holder, expires_at FROM leases ORDER BY token",
                "SELECT count(*) FROM records",
                "SELECT last_value FROM fencing_token",
            )
        )


def expired(dsn: str) -> bool:
    """Whether every lease has expired on the server's clock (its run claimable again)."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        live = connection.execute(
            f"SELECT 1 FROM leases WHERE expires_at > {DB_NOW}"  # the store's own clock
        ).fetchall()
        return not live


def refusal(store: PostgresTaskStore) -> str:
    """The one message every call of ``store`` is refused with."""
    return (
        f"{store.dsn!r} has store schema version {NEWER}, newer than this lldsched "
        f"understands ({SCHEMA_VERSION}): it was written by a newer lldsched; upgrade "
        "lldsched to open it. It was left untouched. It was upgraded after this process "
        "opened it, and this process writes nothing more to it: restart it on the newer "
        "lldsched"
    )


def test_the_next_feed_read_after_a_newer_release_upgrades_refuses_every_later_call(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="due")))
        assert store.changes() == []  # the schema this release wrote: nothing said
        upgrade_elsewhere(postgres_dsn)
        before = database(postgres_dsn)
        with pytest.raises(StoreError) as refused:
            store.changes()
        assert str(refused.value) == refusal(store)
        calls: dict[str, Callable[[], object]] = {
            "changes": store.changes,
            "claim": lambda: store.claim(now=T0, limit=1),
            "save": lambda: store.save(snapshot(task(id="new"))),
            "delete": lambda: store.delete("due"),
            "get": lambda: store.get("due"),
            "load_all": store.load_all,
        }
        for name, call in calls.items():
            with pytest.raises(StoreError) as again:
                call()
            assert str(again.value) == refusal(store), name
        assert database(postgres_dsn) == before  # nothing claimed, nothing written
    with pytest.raises(StoreError, match=f"has store schema version {NEWER}, newer") as reopened:
        PostgresTaskStore(postgres_dsn)  # refused at open, as before
    assert "upgraded after this process opened it" not in str(reopened.value)


def test_a_running_scheduler_counts_its_leases_lost_says_it_once_and_claims_nothing_more(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    HELD.clear()
    caplog.set_level(logging.DEBUG, logger="lldsched")
    with PostgresTaskStore(postgres_dsn, poll=0.05, lease=2) as store:
        scheduler = Scheduler(store=store).start()
        try:
            scheduler.schedule("held", held, OneTime(delay=0), id="held")
            wait_until(lambda: bool(HELD), timeout=20, what="the run to begin")
            (run,) = HELD
            upgrade_elsewhere(postgres_dsn)
            writes = scheduler._core.store_writes
            assert writes is not None
            wait_until(lambda: writes.outage is not None, timeout=20, what="the refusal")
            before = database(postgres_dsn)  # the store writes nothing from now on
            wait_until(lambda: run.lease_lost, timeout=20, what="the run's lease counted lost")
            assert run.reason == "lease"
            # Once its lease expired on the server's clock the slot is claimable again,
            # and the polls go on failing: none of them claims it or writes anything.
            wait_until(lambda: expired(postgres_dsn), timeout=20, what="the lease to expire")
            assert writes.outage is not None
            failed = writes.outage.calls
            wait_until(
                lambda: writes.outage is not None and writes.outage.calls >= failed + 20,
                timeout=20,
                what="more polls refused",
            )
            assert database(postgres_dsn) == before
            assert [run] == HELD  # not run again here
        finally:
            assert scheduler.shutdown(timeout=10)
    said = [
        r
        for r in caplog.records
        if refusal(store) in r.getMessage()
        or (r.exc_info is not None and refusal(store) in str(r.exc_info[1]))
    ]
    # At ERROR once by the scheduler, at its first call refused (the feed read), and once
    # by the store's settle writer, at the run's settle, as in any outage.
    errors = [r.args[1] for r in said if r.levelno >= logging.ERROR and isinstance(r.args, tuple)]
    assert errors == [
        "read of the change feed",
        "write of 1 settles: held, and written again at the store's next statement (a run "
        "whose lease expires first is taken over)",
    ], errors
    with pytest.raises(StoreError, match=f"has store schema version {NEWER}, newer"):
        PostgresTaskStore(postgres_dsn)
