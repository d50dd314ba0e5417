"""What a scheduler learns from a shared store's change feed, wherever it reads it: the
timer's tick, a verb's follow, or a claim of a task registered elsewhere since the last
read (docs/CLUSTER.md).  Each read gives the runtime the tasks it touched, and a row
learnt from the feed is registered as a restart loads it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lldsched import EventLog, OneTime, Scheduler, TaskStatus
from lldsched.clock import FakeClock
from lldsched.coordination import Claim, CoordinatedStore
from tests import cluster_jobs, jobs
from tests.cluster import POOLED, StoreSpec, open_store
from tests.waits import wait_until

ENGINES = POOLED  # through PgBouncer too (tests/cluster.py)

LEASE = 30.0  # no claim expires within a test
POLL = 0.05
SCHEDULED = TaskStatus.SCHEDULED


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Three connections to one shared store (once per engine)."""
    opened = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(3)]
    yield opened
    for store in opened:
        store.close()


def _before_next_claim(
    store: CoordinatedStore, monkeypatch: pytest.MonkeyPatch, hook: Callable[[float], None]
) -> threading.Event:
    """Run ``hook(now)`` once, inside the next claim made on ``store``, before the claim
    reads the store; the event is set once that claim has returned."""
    claim = store.claim
    armed = threading.Lock()  # guards the hook: one claim runs it
    done = threading.Event()

    def hooked(*, now: float, limit: int, **narrowed: Any) -> list[Claim]:
        if not armed.acquire(blocking=False):
            return claim(now=now, limit=limit, **narrowed)
        hook(now)
        try:
            return claim(now=now, limit=limit, **narrowed)
        finally:
            done.set()

    monkeypatch.setattr(store, "claim", hooked)
    return done


def test_a_pause_elsewhere_read_by_a_claim_stops_the_run_here(
    stores: list[CoordinatedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim of a task registered elsewhere reads the feed (the task is not known
    here yet); a pause of the coroutine running here, in that same read, stops it as a
    pause read at a tick does.  Before, that read's tasks were thrown away: the run
    went on, and no later read would say so again."""
    runner_store, other_store, reader = stores
    # Never started: every run is the runner's.  Its clock is behind, so that what it
    # registers inside the runner's claim is due by that claim's instant (read before).
    other = Scheduler(store=other_store, clock=FakeClock(time.time() - 10))
    runner = Scheduler(workers=2, store=runner_store).start()
    try:
        other.schedule("long", cluster_jobs.until_cancelled, OneTime(other.now), id="long")
        wait_until(lambda: any(task.id == "long" and task.running for task in runner.tasks()),
                   timeout=10, what="the run to start")  # fmt: skip

        def elsewhere(_: float) -> None:  # between the runner's tick and its claim
            other.pause("long")
            other.schedule("new", jobs.noop, OneTime(other.now), id="new")

        claimed = _before_next_claim(runner_store, monkeypatch, elsewhere)
        wait_until(claimed.is_set, timeout=10, what="the claim that reads the pause")
        wait_until(lambda: bool(reader.records("long")), timeout=10, what="the stopped run")
        (record,) = reader.records("long")
        assert not record.ok and record.error is not None and "task paused" in record.error
        assert runner.task("long").status is TaskStatus.PAUSED
        wait_until(lambda: bool(reader.records("new")), timeout=10, what="the claimed run")
    finally:
        runner.shutdown(drain=False, timeout=1.0)
        other.shutdown()


def test_a_default_id_followed_from_another_process_never_sets_the_ids_back(
    stores: list[CoordinatedStore],
) -> None:
    """A shared scheduler's default ids carry its store's node (``task-<node>-N``), and
    rows followed from the feed leave its generator alone: one whose id this process
    handed out and removed, registered again elsewhere (``id=``), or one of the
    unshared default form (``task-9``), which ``restore`` moves an unshared default
    generator past, would otherwise set it back onto ids already used."""
    here_store, elsewhere_store, reader = stores
    here = Scheduler(store=here_store)
    elsewhere = Scheduler(store=elsewhere_store)
    try:
        later = OneTime(here.now + 3_600)
        ids = [here.schedule("job", jobs.noop, later).id for _ in range(3)]
        prefix = ids[0].removesuffix("1")
        assert ids == [f"{prefix}1", f"{prefix}2", f"{prefix}3"]
        here.remove(ids[0])
        elsewhere.schedule("again", jobs.noop, later, id=ids[0])
        elsewhere.schedule("plain", jobs.noop, later, id="task-9")
        task = here.schedule("next", jobs.noop, later)  # follows both rows first
        assert task.id == f"{prefix}4"
        assert {"task-9", ids[0]} <= {task.id for task in here.tasks()}
        assert len(reader.load_all()) == 5
    finally:
        here.shutdown()
        elsewhere.shutdown()


def test_an_id_removed_and_registered_again_elsewhere_is_followed_here(
    stores: list[CoordinatedStore],
) -> None:
    """A task removed in one process and registered again under its id, in that process
    or another, is a new task in every process's feed, whether the reader had read the
    removal before (a read of its own) or reads both in one read, and so is a second
    removal of it.  Before, on PostgreSQL, the new row's versions restarted at 1, below
    the version the reader remembered for the id, and its feed skipped the row for good:
    the registration was never shown nor run there."""
    here_store, elsewhere_store, reader = stores
    here = Scheduler(store=here_store)
    elsewhere = Scheduler(store=elsewhere_store)

    def names_here() -> dict[str, str]:
        here.schedule("reads", jobs.noop, later, id="reads", replace_existing=True)  # follows
        return {task.id: task.name for task in here.tasks() if task.id != "reads"}

    try:
        later = OneTime(here.now + 3_600)
        elsewhere.schedule("first", jobs.noop, later, id="x")
        assert names_here() == {"x": "first"}
        elsewhere.remove("x")
        assert names_here() == {}  # the removal read on its own
        elsewhere.schedule("second", jobs.noop, later, id="x")
        assert names_here() == {"x": "second"}
        elsewhere.remove("x")
        elsewhere.schedule("third", jobs.noop, later, id="x")
        assert names_here() == {"x": "third"}  # the removal and the new row in one read
        elsewhere.remove("x")
        assert names_here() == {}  # a removal of the row registered again
        here.schedule("fourth", jobs.noop, later, id="x")
        here.remove("x")  # removed here: registered again elsewhere
        elsewhere.schedule("fifth", jobs.noop, later, id="x")
        assert names_here() == {"x": "fifth"}
        assert {snapshot.task.name for snapshot in reader.load_all()} == {"fifth", "reads"}
    finally:
        here.shutdown()
        elsewhere.shutdown()


def test_a_cancelled_task_removed_and_registered_again_elsewhere_is_the_new_task_here(
    stores: list[CoordinatedStore],
) -> None:
    """A task cancelled (final: no row revives it) and then removed elsewhere and
    registered again under its id, read here in one read, is the new task: the removal
    is applied before the new row, whatever order their transactions took their ids in.
    A feed that gave the new row alone left the cancelled task here for good."""
    here_store, elsewhere_store, _ = stores
    here = Scheduler(store=here_store)
    elsewhere = Scheduler(store=elsewhere_store)
    try:
        later = OneTime(here.now + 3_600)
        elsewhere.schedule("first", jobs.noop, later, id="x")
        here.schedule("reads", jobs.noop, later, id="reads")  # follows x
        elsewhere.cancel("x")
        here.schedule("reads", jobs.noop, later, id="reads", replace_existing=True)
        assert here.task("x").status is TaskStatus.CANCELLED
        elsewhere.remove("x")
        elsewhere.schedule("second", jobs.noop, later, id="x")
        here.schedule("reads", jobs.noop, later, id="reads", replace_existing=True)
        task = here.task("x")
        assert (task.name, task.status) == ("second", TaskStatus.SCHEDULED)
    finally:
        here.shutdown()
        elsewhere.shutdown()


def test_a_registration_elsewhere_is_heard_here_once_as_a_registration(
    stores: list[CoordinatedStore],
) -> None:
    """A task another process registered, learnt from the feed, is announced to this
    process's listeners as a registration is (``previous`` None, the status its row
    has), once; this process's own registrations are heard once, as ever (the feed
    never gives a process its own rows).  Before, its registration was not heard at
    all, though the same feed's removals, redefinitions and status changes were: a
    listener keeping a table of the tasks never saw the task until its first status
    change, and a paused one not even then."""
    here_store, elsewhere_store, _ = stores
    heard_here, heard_elsewhere = EventLog(), EventLog()
    here = Scheduler(store=here_store, listeners=[heard_here])
    elsewhere = Scheduler(store=elsewhere_store, listeners=[heard_elsewhere])

    def registrations(log: EventLog) -> list[tuple[str, TaskStatus | None, TaskStatus]]:
        return [(e.task_id, e.previous, e.status) for e in log.events if e.record is None]

    try:
        later = OneTime(here.now + 3_600)
        elsewhere.schedule("theirs", jobs.noop, later, id="x")
        elsewhere.schedule("held", jobs.noop, later, id="p", paused=True)
        here.schedule("mine", jobs.noop, later, id="m")  # follows the feed first
        here.schedule("mine", jobs.noop, later, id="m", replace_existing=True)  # again
        mine = [("x", None, SCHEDULED), ("p", None, TaskStatus.PAUSED), ("m", None, SCHEDULED)]
        # (a replacement by the same definition is no change: not heard.)  Events are
        # delivered on the listeners' thread: waited for, and counted again at the end.
        wait_until(lambda: registrations(heard_here) == mine, timeout=10, what="heard here")
        elsewhere.schedule("theirs", jobs.noop, later, id="x", replace_existing=True)
        theirs = mine  # the process that registered "p" paused heard it as the other did
        wait_until(lambda: registrations(heard_elsewhere) == theirs, timeout=10,
                   what="heard elsewhere")  # fmt: skip
    finally:
        here.shutdown()
        elsewhere.shutdown()
    assert registrations(heard_here) == mine  # once each: every event delivered by now
    assert registrations(heard_elsewhere) == theirs
