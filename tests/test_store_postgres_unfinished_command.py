"""A store call that psycopg failed mid round trip leaves no connection that fails for good.

psycopg's wait for a reply raises ``OperationalError("connection socket closed")`` when
``poll`` reports an error on the socket without it being readable: libpq never sees the
loss, so the connection is neither ``closed`` nor ``broken``, its command still in
flight, and every later command on it fails ("another command is already in
progress").  The store reused it, so once that happened every call failed for good: a
scheduler whose PostgreSQL server restarted claimed nothing more (seen in a full test
run, test_cluster_postgres.py's restart test: no run in the 30 s after the restart).

The failure is provoked here as psycopg raises it, inside its wait, once the command has
been sent (``cut_once``); the server and every other round trip are real.  The LISTEN
thread's connection already let go of a connection at each failure: its case passed
before, checked by no other test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import psycopg
import psycopg.waiting
import pytest

from lldsched import FixedRate, Scheduler, StoreError
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres.listen import Listener
from tests import jobs
from tests.pg_faults import fail_in_wait
from tests.waits import wait_until

Cut = Callable[..., threading.Event]


@pytest.fixture
def cut_once(monkeypatch: pytest.MonkeyPatch) -> Cut:
    """``cut_once(thread, within=None)``: the next round trip made on a thread whose name
    holds ``thread`` (inside a call of ``within`` if given) sends its command, then fails
    in psycopg's wait as a socket that ``poll`` reported in error fails it; once.  The
    event is set once it has."""

    def arm(thread: str, *, within: str | None = None) -> threading.Event:
        error = psycopg.OperationalError("connection socket closed")
        return fail_in_wait(monkeypatch, error, thread=thread, within=within)

    return arm


def test_the_call_after_one_cut_in_its_wait_is_answered_on_a_new_connection(
    postgres_dsn: str, cut_once: Cut
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = Scheduler(store=store)  # not started: only registers
        task = scheduler.schedule("nightly", jobs.note, FixedRate(3600), args=("nightly",))
        cut_once(threading.current_thread().name)
        with pytest.raises(StoreError, match="connection socket closed"):
            store.load_all()
        assert [snapshot.task.id for snapshot in store.load_all()] == [task.id]
        assert store.records(task.id) == []
        scheduler.shutdown()


def test_a_settle_cut_in_its_wait_is_written_on_a_new_connection_once(
    postgres_dsn: str, cut_once: Cut
) -> None:
    """The settle thread's write retried on a new connection (as after any lost one):
    before, it saw a connection neither closed nor broken and gave the batch up."""
    with PostgresTaskStore(postgres_dsn, poll=0.1, lease=5) as store:
        scheduler = Scheduler(store=store, workers=1).start()
        try:
            cut = cut_once("-pg-settle")
            task = scheduler.schedule("tick", jobs.note, FixedRate(0.05), args=("tick",))
            wait_until(cut.is_set, timeout=20, what="a settle cut in its wait")
            wait_until(
                lambda: len(store.records(task.id)) >= 3, timeout=20, what="runs after the cut"
            )
        finally:
            assert scheduler.shutdown(timeout=10)
        ran = [record for record in store.records(task.id) if record.misfire is None]
        tokens = [record.token for record in ran]
        assert len(set(tokens)) == len(tokens), tokens  # no run recorded twice


def test_a_scheduler_whose_claim_was_cut_in_its_wait_goes_on_running_its_task(
    postgres_dsn: str, cut_once: Cut
) -> None:
    with PostgresTaskStore(postgres_dsn, poll=0.1, lease=5) as store:
        scheduler = Scheduler(store=store, workers=1).start()
        try:
            task = scheduler.schedule("tick", jobs.note, FixedRate(0.05), args=("tick",))
            wait_until(lambda: bool(store.records(task.id)), timeout=20, what="a first run")
            # The timer's next claim: its next round trip was the feed's read every time,
            # and the claim this test is named for was never the one cut.
            cut = cut_once("-timer", within="claim")
            wait_until(cut.is_set, timeout=20, what="a claim of the timer cut in its wait")
            after = len(store.records(task.id))
            wait_until(
                lambda: len(store.records(task.id)) >= after + 3,
                timeout=20,
                what="runs after the cut",
            )
        finally:
            assert scheduler.shutdown(timeout=10)


def test_the_listener_cut_in_its_wait_listens_again(postgres_dsn: str, cut_once: Cut) -> None:
    """The LISTEN thread's own connection, cut in its first round trip (its LISTEN): it
    is let go with the failure (each attempt is a connection of its own), and the
    listener hears the next notification on a new one."""
    cut = cut_once("lldsched-pg-listen")
    woken: list[None] = []
    listener = Listener(
        postgres_dsn, channel="cut", node="here", wake=lambda: woken.append(None), timeout=5
    )
    try:
        wait_until(cut.is_set, timeout=20, what="the LISTEN cut in its wait")
        wait_until(lambda: len(woken) == 1, timeout=20, what="the wake of a listener back")

        def heard() -> bool:
            with psycopg.connect(postgres_dsn, autocommit=True) as other:
                other.execute("NOTIFY cut, 'there'")
            return len(woken) > 1

        wait_until(heard, timeout=20, what="a notification heard after the cut", every=0.2)
    finally:
        listener.stop()
