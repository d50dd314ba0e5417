"""A control verb on PostgreSQL wakes the process whose run it concerns (docs/CLUSTER.md,
"The change feed"): a pause, cancel or resume written in one process, for a task whose
run is in flight in another, is sent on the store's NOTIFY channel, so the runner
follows it at once instead of at its next ``poll``.

The stores poll every ``POLL`` and renew their leases every ``LEASE / 3``, both far
longer than the waits here: the runner hears the verb from the NOTIFY or not in time.
The run path (claim, settle) sends no NOTIFY more than before: counted on a connection
of the test's own that LISTENs on the channel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lldsched import FixedRate, OneTime, Priority, Scheduler, TaskStatus
from lldsched.coordination import CoordinatedStore
from lldsched.persistence import TaskSnapshot
from tests import cluster_jobs, jobs
from tests.cluster import FACTORIES, StoreSpec, open_store
from tests.waits import wait_until

POLL = 30.0  # a wake by the poll would come long after every wait here
LEASE = 90.0  # renewed every 30 s: no renewal's wake reads the feed within a test
HEARD = 10.0  # how long the runner may take to follow the verb: well below POLL


@pytest.fixture
def postgres_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    """A new, empty PostgreSQL store (a schema of its own on the session's server)."""
    return FACTORIES["postgres"](request, tmp_path)


@pytest.fixture
def stores(postgres_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two stores on one schema, as two processes hold, and a third to read it with."""
    opened = [open_store(postgres_spec, lease=LEASE, poll=POLL) for _ in range(3)]
    yield opened
    for store in opened:
        store.close()


@pytest.fixture
def notices(postgres_spec: StoreSpec, stores: list[CoordinatedStore]) -> Iterator[Notices]:
    """The NOTIFYs sent on the stores' channel from now on."""
    listening = Notices(postgres_spec, stores[2])
    yield listening
    listening.close()


def _row(store: CoordinatedStore, task_id: str) -> TaskSnapshot | None:
    """``task_id``'s row as ``store`` reads it (None: there is none)."""
    return next((row for row in store.load_all() if row.task.id == task_id), None)


def _drain_seen() -> None:
    while not cluster_jobs.seen.empty():  # what an earlier test's run said after it failed
        cluster_jobs.seen.get()


class Notices:
    """The NOTIFYs sent on a store's channel, by sender, from a connection of its own
    that LISTENs from the start."""

    def __init__(self, spec: StoreSpec, store: CoordinatedStore) -> None:
        from lldsched.stores.postgres.driver import psycopg

        self._channel: str = store._channel  # type: ignore[attr-defined]
        self._connection = psycopg.connect(spec.params["dsn"], autocommit=True)
        self._connection.execute(f'LISTEN "{self._channel}"')
        self.senders: list[str] = []

    def read(self) -> list[str]:
        """Every NOTIFY committed so far: a sentinel is sent last, and a channel's
        notifications arrive in commit order, so all of them come before it."""
        self._connection.execute("SELECT pg_catalog.pg_notify(%s, 'sentinel')", (self._channel,))
        for notice in self._connection.notifies(timeout=HEARD):
            if notice.payload == "sentinel":
                break
            self.senders.append(notice.payload)
        return self.senders

    def close(self) -> None:
        self._connection.close()


def _status(scheduler: Scheduler, task_id: str, status: TaskStatus) -> Callable[[], bool]:
    return lambda: any(task.id == task_id and task.status is status for task in scheduler.tasks())


@dataclass
class HeldElsewhere:
    """A run of ``hourly`` held in one scheduler (``running``, the lease ``holder``'s, its
    ``token``) that the other (``other``) has read; ``ended``: what the run said as it
    ended, once :func:`_held_elsewhere` is over."""

    running: Scheduler
    other: Scheduler
    holder: str
    token: int | None
    ended: tuple[object, ...] = ()


@contextlib.contextmanager
def _held_elsewhere(stores: list[CoordinatedStore]) -> Iterator[HeldElsewhere]:
    """Two schedulers on the first two of ``stores``, one running ``hourly`` until released;
    at the end the run let go and both shut down."""
    first_store, second_store, reader = stores
    _drain_seen()
    cluster_jobs.released.clear()
    first, second = (Scheduler(workers=2, store=s).start() for s in (first_store, second_store))
    try:
        first.schedule("hourly", cluster_jobs.held_until_released, FixedRate(3600), id="hourly")
        _, token, _, _ = cluster_jobs.seen.get(timeout=HEARD)
        (lease,) = reader.leases()
        running, other = (first, second) if lease.holder == first_store.node else (second, first)
        held = HeldElsewhere(running, other, lease.holder, token)
        wait_until(lambda: "hourly" in {t.id for t in other.tasks()}, timeout=HEARD,
                   what="the other scheduler to follow the registration")  # fmt: skip
        yield held
    finally:
        cluster_jobs.released.set()
        try:
            ended = cluster_jobs.seen.get(timeout=HEARD)
        finally:
            first.shutdown()
            second.shutdown()
    held.ended = ended


@pytest.mark.parametrize("verb", ["pause", "cancel", "resume", "modify"])
def test_a_verb_on_a_run_in_flight_elsewhere_reaches_the_runner_before_its_poll(
    stores: list[CoordinatedStore], notices: Notices, verb: str
) -> None:
    with _held_elsewhere(stores) as held:
        running, other = held.running, held.other
        before = notices.read().copy()
        if verb == "resume":
            assert other.pause("hourly")
            wait_until(_status(running, "hourly", TaskStatus.PAUSED), timeout=HEARD,
                       what="the runner to follow the pause")  # fmt: skip
            assert other.resume("hourly")
            wait_until(_status(running, "hourly", TaskStatus.RUNNING), timeout=HEARD,
                       what="the runner to follow the resume")  # fmt: skip
        elif verb == "modify":  # the new definition, for the next run (the only task here,
            # its write notified as the earliest due before the lease rule too: one, not two)
            assert other.modify("hourly", priority=Priority.HIGH)
            wait_until(lambda: running.task("hourly").priority is Priority.HIGH, timeout=HEARD,
                       what="the runner to follow the modify")  # fmt: skip
        else:
            assert getattr(other, verb)("hourly")
            expected = TaskStatus.PAUSED if verb == "pause" else TaskStatus.CANCELLED
            wait_until(_status(running, "hourly", expected), timeout=HEARD,
                       what=f"the runner to follow the {verb}")  # fmt: skip
        sent = notices.read()[len(before) :]
        # One NOTIFY per verb, from the process that wrote it; none from the runner.
        assert sent == [other_node(stores[0], stores[1], held.holder)] * (
            2 if verb == "resume" else 1
        )
    assert held.ended[:3] == ("hourly", held.token, False)
    if verb == "cancel":  # the run's flag was raised by the cancel followed (a pause lets
        assert "cancel" in str(held.ended[3])  # a thread's run finish)


def other_node(first: CoordinatedStore, second: CoordinatedStore, runner: str) -> str:
    """The node of the two that is not ``runner``."""
    return second.node if first.node == runner else first.node


def test_a_run_claimed_and_settled_sends_no_notify_of_its_own(
    stores: list[CoordinatedStore], notices: Notices
) -> None:
    """The registration of a task due now makes it the earliest due (one NOTIFY); its
    claim and its settle (SUCCEEDED, due never) send none, as before."""
    store, _, reader = stores
    scheduler = Scheduler(workers=1, store=store).start()
    try:
        scheduler.schedule("once", jobs.noop, OneTime(scheduler.now), id="once")
        wait_until(lambda: bool(reader.records("once")) and not reader.leases(), timeout=HEARD,
                   what="the run to settle")  # fmt: skip
        assert notices.read() == [store.node]
    finally:
        scheduler.shutdown()


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_removal_of_a_run_in_flight_elsewhere_reaches_the_runner_before_its_poll(
    stores: list[CoordinatedStore], notices: Notices, cancelled: bool
) -> None:
    """A ``remove`` made in one process, for a task whose run is in flight in another, is
    announced as the other verbs are: the runner drops the task at once.  A live task's
    removal writes it CANCELLED first, a write that notified already; a task the remover
    holds cancelled (a cancel made during the run, whose thread goes on: ``cancelled``)
    is only deleted, and that deletion sent no NOTIFY before: the runner kept listing the
    task until its next poll or lease renewal (here, far past the wait)."""
    with _held_elsewhere(stores) as held:
        running, other = held.running, held.other
        if cancelled:
            assert other.cancel("hourly")
            wait_until(_status(running, "hourly", TaskStatus.CANCELLED), timeout=HEARD,
                       what="the runner to follow the cancel")  # fmt: skip
        before = notices.read().copy()
        assert other.remove("hourly")
        wait_until(lambda: "hourly" not in {t.id for t in running.tasks()}, timeout=HEARD,
                   what="the runner to follow the removal")  # fmt: skip
        # One NOTIFY, from the process that removed it; none from the runner.
        assert notices.read()[len(before) :] == [other_node(stores[0], stores[1], held.holder)]
    assert held.ended[:2] == ("hourly", held.token)
    assert _row(stores[2], "hourly") is None and not stores[2].records("hourly")
    # The runner dropped the run's settle as its task's removal says, not refused by the
    # store as a lease lost (counted, and a WARNING).
    assert stores[0].rejected == stores[1].rejected == 0
