"""What a scheduler or a simulation leaves behind once it is gone: a notebook's cell run
again builds a new one each time, often without shutting the old one down, and a
service starts and stops them (docs/OPERATIONS.md, "What a scheduler leaves behind").
Each test runs a lifecycle many times and asserts the count is back to where it was."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lldsched import EventLog, OneTime, Scheduler, SqliteTaskStore
from tests.waits import wait_until

if TYPE_CHECKING:
    from tests.pg_server import PostgresServer

CYCLES = 30
STORE_CYCLES = 5  # each collects the garbage: a pytest process has much of it


def noop() -> None:
    return None


def descriptors() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))


def threads_named(prefix: str) -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith(prefix)]


def test_a_scheduler_never_started_leaves_no_thread_once_its_events_are_delivered() -> None:
    log = EventLog()
    for cycle in range(CYCLES):  # a cell run again: the scheduler before it dropped
        scheduler = Scheduler(name=f"never-started-{cycle}", listeners=[log])
        scheduler.schedule("job", noop, OneTime(delay=3600))
    del scheduler
    wait_until(
        lambda: not threads_named("lldsched-never-started-"),
        timeout=5.0,
        what="the listeners' threads of the schedulers never started to end",
    )
    assert [event.name for event in log.events] == ["job"] * CYCLES  # each heard


def test_events_published_before_start_are_heard_in_order_then_by_the_thread_start_keeps() -> None:
    log = EventLog()
    scheduler = Scheduler(name="before-start", listeners=[log])
    for n in range(5):
        scheduler.schedule(f"job-{n}", noop, OneTime(delay=3600))
    scheduler.start()
    try:
        scheduler.schedule("after", noop, OneTime(delay=0))
        assert scheduler.wait_idle(timeout=5.0)
        names = [event.name for event in log.events]
        assert names[:6] == [f"job-{n}" for n in range(5)] + ["after"]
        assert threads_named("lldsched-before-start-events")  # waits for the next event
    finally:
        assert scheduler.shutdown(timeout=5.0)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd (Linux)")
@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_sqlite_store_dropped_without_close_lets_its_file_and_descriptors_go(
    tmp_path: Path, shared: bool
) -> None:
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path, shared=shared).close()  # the file and its sidecars made
    gc.collect()
    before = descriptors()
    with pytest.warns(ResourceWarning) as said:  # each says so (test_store_unclosed.py)
        for cycle in range(STORE_CYCLES):  # a cell run again: its store and scheduler dropped
            store = SqliteTaskStore(path, shared=shared)
            scheduler = Scheduler(name=f"dropped-store-{cycle}", store=store)
            scheduler.schedule(f"job-{cycle}", noop, OneTime(delay=3600), id=f"job-{cycle}")
            scheduler.start()
            assert scheduler.shutdown(timeout=5.0)
            del store, scheduler
            gc.collect()
    assert descriptors() == before
    unclosed = f"unclosed SqliteTaskStore({str(path)!r}, open)"
    assert [str(w.message) for w in said] == [unclosed] * STORE_CYCLES
    with SqliteTaskStore(path) as store:  # unshared: refused while any store holds the file
        assert len(store.load_all()) == STORE_CYCLES  # every one's writes are there


def test_a_postgres_store_dropped_without_close_closes_its_sessions_and_threads(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    from lldsched.stores.postgres import PostgresTaskStore
    from tests.test_store_unclosed import pg_sessions

    def sessions() -> int:
        return pg_sessions(postgres_server)

    PostgresTaskStore(postgres_dsn).close()  # the schema made
    gc.collect()
    before = (sessions(), len(threads_named("lldsched-pg-")))
    with pytest.warns(ResourceWarning) as said:  # each says so (test_store_unclosed.py)
        for cycle in range(STORE_CYCLES):  # a cell run again, never started then started
            store = PostgresTaskStore(postgres_dsn)
            scheduler = Scheduler(name=f"dropped-pg-{cycle}", store=store)
            scheduler.schedule(f"job-{cycle}", noop, OneTime(delay=3600), id=f"job-{cycle}")
            if cycle % 2:
                scheduler.start()
                assert scheduler.shutdown(timeout=5.0)
            shown = store.dsn
            del store, scheduler
        wait_until(  # a session ends as its backend exits, a moment after the close
            lambda: (
                gc.collect() >= 0 and (sessions(), len(threads_named("lldsched-pg-"))) == before
            ),
            timeout=10.0,
            what="the dropped stores' sessions and threads to end",
        )
    unclosed = f"unclosed PostgresTaskStore({shown!r}, open)"
    assert [str(w.message) for w in said] == [unclosed] * STORE_CYCLES
    store = PostgresTaskStore(postgres_dsn)
    try:
        assert len(store.load_all()) == STORE_CYCLES
    finally:
        store.close()


def test_a_postgres_listener_stopped_on_its_own_thread_ends_there(postgres_dsn: str) -> None:
    """Where a dropped store is collected on its listener's thread (the collector runs on
    any thread): its close stops that listener from the listener's own thread."""
    from lldsched.stores.postgres.listen import Listener
    from lldsched.stores.postgres.sql import channel

    stopped: list[BaseException | None] = []

    def wake() -> None:  # called once the LISTEN is in place, on the listener's thread
        try:
            listener.stop()
        except BaseException as exc:  # what the thread would have died of
            stopped.append(exc)
        else:
            stopped.append(None)

    listener = Listener(postgres_dsn, channel=channel("public"), node="test", wake=wake)
    listener._thread.join(timeout=10.0)
    assert not listener._thread.is_alive()
    assert stopped == [None]
