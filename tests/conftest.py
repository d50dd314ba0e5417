"""Shared fixtures: fake clocks, schedulers that are always shut down, event logs."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from lldsched import EventLog, FakeClock, Scheduler
from tests.cluster import (  # noqa: F401 - the multi-process fixtures, and their engines
    cluster,
    pytest_generate_tests,
    schedulers,
    store_spec,
)
from tests.collecting import (  # noqa: F401 - autouse: a test's garbage said in the test
    collect_each_module,
    collect_each_test,
    collect_everything_at_the_end,
)
from tests.interrupting import (  # noqa: F401 - fixtures
    ctrl_c,  # a SIGINT sent until it lands
    sigterm_exits,  # a SIGTERM handler's sys.exit
)

if TYPE_CHECKING:
    from lldsched.stores.postgres import PostgresTaskStore
    from tests.pg_bouncer import PgBouncer
    from tests.pg_server import PostgresServer

# Hypothesis's default deadline (200 ms an example) is a timing bound, which no test here
# holds (docs/decisions/parallel-tests.md, "No deadline on a drawn example"): on a loaded
# host it failed a correct example of tests/test_results.py (2026-12-07, mutation14).
settings.register_profile("lldsched", deadline=None)
settings.load_profile("lldsched")

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC).timestamp()  # a Monday, 09:00 UTC

SchedulerFactory = Callable[..., Scheduler]


def collect_left_behind() -> None:
    """Collect now what a shutdown left pending on its closed loop (a coroutine deaf to
    its cancellation: lldsched/threaded/coroutines/shutdown.py), so that asyncio's "Task was
    destroyed but it is pending!" is logged in the test that left it.  A test that
    leaves one behind calls this: left to the collector, the line came in whichever
    later test of the same process the collector ran in, failing one that allows no
    asyncio error (tests/test_concurrent_verbs.py under load; tests/test_sim_interrupt.py
    after any of them, every time)."""
    gc.collect()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--switch-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="sys.setswitchinterval(SECONDS) for the run (1e-6 makes threads switch "
        "between nearly every bytecode: races show; the run is slower). Off by default.",
    )


def pytest_configure(config: pytest.Config) -> None:
    interval = config.getoption("--switch-interval")
    if interval is not None:
        sys.setswitchinterval(interval)


@pytest.fixture(autouse=True)
def nothing_seen_yet() -> None:
    """:data:`tests.cluster_jobs.seen` starts each test empty.  A run an earlier test of
    the worker released as it ended (``held_until_released``) put its line there after
    that test, and the next test that read the queue took it for its own run: "long",
    of tests/test_cluster_busy_workers.py, where test_cluster_dependencies.py waited
    for "extract"."""
    cluster_jobs = sys.modules.get("tests.cluster_jobs")  # (not imported: nothing seen)
    while cluster_jobs is not None and not cluster_jobs.seen.empty():
        cluster_jobs.seen.get_nowait()


_SERVER_LOGS_AT = pytest.StashKey[dict[int, int]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report carries what each PostgreSQL server of this process logged
    during the test (tests/pg_server.py removes the log with the server): a connection
    the server closed says there why (a backend killed by a signal, a timeout, a
    restart).  Nothing to do where no server was started (the module is not imported)."""
    report = yield
    servers = sys.modules.get("tests.pg_server")
    if servers is None:
        return report
    if report.when == "setup":
        item.stash[_SERVER_LOGS_AT] = {
            id(server): server.log_size() for server in servers.PostgresServer.running
        }
    elif report.failed:
        for title, text in servers.log_sections(item.stash.get(_SERVER_LOGS_AT, {})):
            report.sections.append((title, text))
    return report


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def log() -> EventLog:
    return EventLog()


@pytest.fixture
def make_scheduler() -> Iterator[SchedulerFactory]:
    """Build schedulers (started unless start=False); every one is shut down after the test."""
    made: list[Scheduler] = []

    def make(*, start: bool = True, **kwargs: Any) -> Scheduler:
        scheduler = Scheduler(**kwargs)
        made.append(scheduler)
        if start:
            scheduler.start()
        return scheduler

    yield make
    for scheduler in made:
        assert scheduler.shutdown(timeout=5.0), f"{scheduler!r} did not stop"


def settle(scheduler: Scheduler) -> None:
    """Wait (bounded) until nothing is due or running; fail the test otherwise."""
    assert scheduler.wait_idle(timeout=5.0), "scheduler did not settle within 5 s"


@pytest.fixture(params=["threaded", "simulated"])
def driven(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Both runtimes in turn, driven alike (tests/runtimes.py); closed after the test."""
    from tests.runtimes import Driven

    runtime = Driven(request.param)
    yield runtime
    runtime.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL cluster for the whole session (tests/pg_server.py), started
    on first use and removed at the end; fails loudly, never skips, if it cannot start.

    Durability is off (fsync, synchronous_commit, full_page_writes: pg_server's defaults):
    the cluster is thrown away, and no statement waits for the disk.  Its password is
    checked by SCRAM-SHA-256 as a real server's, with its key derived once instead of
    4096 times: the same exchange, without about 6 ms of CPU (both ends) at each of the
    thousands of sessions the tests' stores open.  What no test checks: how long a
    log-in takes.  Its files are in memory where there is room (``in_memory``): thrown
    away, they need no disk, and their removal at the end of the session no longer waits
    on it."""
    from tests.pg_server import PostgresServer

    with PostgresServer(scram_iterations=1, in_memory=True) as server:
        yield server


@pytest.fixture(scope="session")
def pgbouncer(postgres_server: PostgresServer) -> Iterator[PgBouncer]:
    """PgBouncer in transaction pooling mode in front of the session's server
    (tests/pg_bouncer.py), installed if missing (as root), started on first use; fails
    loudly, never skips, if it cannot start."""
    from tests.pg_bouncer import PgBouncer

    with PgBouncer(postgres_server) as bouncer:
        yield bouncer


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A dsn for a fresh, empty schema on the session's PostgreSQL server."""
    return postgres_server.create_schema()


@pytest.fixture
def open_store(postgres_dsn: str) -> Iterator[Callable[..., PostgresTaskStore]]:
    """``open_store(lease=...)``: PostgreSQL stores on one fresh schema, all closed
    afterwards."""
    from lldsched.stores.postgres import PostgresTaskStore

    opened: list[PostgresTaskStore] = []

    def make(**options: Any) -> PostgresTaskStore:
        store = PostgresTaskStore(postgres_dsn, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
