"""A control verb racing another process's settle, on a shared store (SQLite and
PostgreSQL).

A verb reads the change feed, then writes the task's row.  Another process's settle
of a run that committed between the two was written over by the row as the verb's
process had it before that run (its due instant at the slot already run, run count
0): a pause, then a resume, ran that slot a second time.  The verb now reads the feed
and writes inside one transaction that holds the row for it
(:func:`lldsched.storecalls.verb_held`: SQLite's write lock, PostgreSQL's row lock), so
the settle waits for the verb's commit, and then keeps a pause or cancel written during
its run (docs/CLUSTER.md).

Shown without timing: the other process's store never waits for a lock (SQLite's
``timeout=0``; PostgreSQL's ``lock_timeout`` of a millisecond, a lock held until the
verb returns), and its settle is tried inside the verb's read of the feed, where the
race was.  Before, it committed there and the verb wrote over it; now the row is the
verb's, the settle is refused (nothing written), and it is made again once the verb
returned, as the real process's settle waits for the lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    Priority,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.coordination import Change, Claim
from lldsched.persistence import TaskSnapshot
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs

Shared = SqliteTaskStore | PostgresTaskStore

T0 = 1_800_000_000.0

Verb = Callable[[Scheduler], object]

VERBS: dict[str, tuple[Verb, TaskStatus]] = {
    "pause": (lambda s: s.pause("r"), TaskStatus.PAUSED),
    "cancel": (lambda s: s.cancel("r"), TaskStatus.CANCELLED),
    "modify": (lambda s: s.modify("r", priority=Priority.HIGH), TaskStatus.SCHEDULED),
    # a registration again (a deploy), replacing the task: held as a verb is
    "replace": (
        lambda s: s.schedule(
            "r", jobs.noop, FixedRate(60), id="r", replace_existing=True, priority=Priority.HIGH
        ),
        TaskStatus.SCHEDULED,
    ),
    # paused (no race) during the run, then resumed racing its settle
    "resume": (lambda s: (s.pause("r"), s.resume("r")), TaskStatus.SCHEDULED),
}


def settle(store: Shared, claim: Claim, before: TaskSnapshot) -> None:
    """The settle of slot T0's run, as the process that claimed it writes it."""
    done = before._replace(next_run_at=T0 + 60, run_count=1)
    record = ExecutionRecord.of(
        task_id="r", name="r", attempt=1, due=T0, slot=T0, worker=0,
        started=T0 + 1, finished=T0 + 2, ok=True, token=claim.token,
    )  # fmt: skip
    store.settle(done, record, token=claim.token)


def race(other: Shared, store: Shared, claim: Claim, before: TaskSnapshot) -> Callable[[], None]:
    """``store``'s feed read made to try ``other``'s settle right after it read the feed;
    returns what makes that settle once the verb returned, if it was refused then."""
    read = store.changes
    tried: list[bool] = []

    def changes() -> list[Change]:
        found = read()
        if not tried:
            tried.append(True)
            with contextlib.suppress(StoreError):  # SQLite: the verb holds the write lock
                settle(other, claim, before)
                other.flush()  # PostgreSQL: written now, or refused by the row's lock
        return found

    store.changes = changes  # type: ignore[method-assign]

    def after() -> None:
        store.changes = read  # type: ignore[method-assign]
        assert tried, "the verb did not read the feed"
        row = other.get("r")
        if row is not None and row.run_count == 0:  # refused: made once the lock is free
            settle(other, claim, before)
            other.flush()

    return after


@pytest.fixture(params=["sqlite", "postgres"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Shared, Shared]]:
    """Two shared stores on one database, the first never waiting for a lock."""
    if request.param == "sqlite":
        path = str(tmp_path / "tasks.db")
        first = SqliteTaskStore(path, shared=True, timeout=0)
        second = SqliteTaskStore(path, shared=True)
        yield first, second
        first.close()
        second.close()
        return
    open_store = request.getfixturevalue("open_store")
    first, second = open_store(), open_store()
    first._open().execute("SET lock_timeout = '1ms'")  # a held row refuses at once
    yield first, second


@pytest.mark.parametrize("verb", VERBS)
def test_a_verb_never_writes_back_the_row_a_settle_elsewhere_moved(
    pair: tuple[Shared, Shared], verb: str
) -> None:
    a, b = pair
    act, status = VERBS[verb]
    sa = Scheduler(store=a, clock=FakeClock(T0))  # neither started: the test claims
    sb = Scheduler(store=b, clock=FakeClock(T0 + 1))
    try:
        sa.schedule("r", jobs.noop, FixedRate(60), id="r")
        (claim,) = a.claim(now=T0 + 1, limit=1)  # A runs slot T0
        before = a.get("r")
        assert before is not None
        after = race(a, b, claim, before)
        act(sb)
        after()
        row = a.get("r")
        assert row is not None
        assert (row.status, row.run_count) == (status, 1)  # the run counted, the verb held
        if status is not TaskStatus.CANCELLED:
            assert row.next_run_at == T0 + 60  # the slot after the one run
        if verb in ("modify", "replace"):
            assert row.task.priority == Priority.HIGH  # the verb's definition stands
        if status is TaskStatus.PAUSED:
            sb.resume("r")
        assert b.claim(now=T0 + 2, limit=5) == []  # slot T0 is never run a second time
    finally:
        sb.shutdown()
        sa.shutdown()


def test_what_a_verb_wrote_inside_its_hold_is_committed_even_if_it_then_raises(
    pair: tuple[Shared, Shared],
) -> None:
    """The verb's registry has what it wrote: a verb that raises after a write (a store
    error later in it, a ``KeyboardInterrupt``) leaves that write committed, as it was
    before the hold, and the hold's lock let go (the other store writes again)."""
    a, b = pair
    sa = Scheduler(store=a, clock=FakeClock(T0))  # not started
    try:
        sa.schedule("r", jobs.noop, FixedRate(60), id="r")
        b.changes()  # the row read there, as a verb's feed read reads it
        row = b.get("r")
        assert row is not None
        with pytest.raises(RuntimeError, match="after the write"), b.verb_held("r"):
            b.save(row._replace(status=TaskStatus.PAUSED))
            raise RuntimeError("after the write")
        written = a.get("r")
        assert written is not None and written.status is TaskStatus.PAUSED
        sa.resume("r")  # the lock was let go: the other store writes at once
        resumed = b.get("r")
        assert resumed is not None and resumed.status is TaskStatus.SCHEDULED
    finally:
        sa.shutdown()


class Unholdable(SqliteTaskStore):
    """A shared store whose hold fails as it begins (``at="enter"``: the store failing,
    an outage) or as it ends (``at="exit"``: its commit, the connection lost or the disk
    full), once ``failing`` is set; its other calls work."""

    def __init__(self, path: Path, at: str) -> None:
        super().__init__(path, shared=True)
        self.at = at
        self.failing = False

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        if self.failing and self.at == "enter":
            raise StoreError("the hold's BEGIN failed")
        with super().verb_held(task_id, also):
            yield
        if self.failing and self.at == "exit":
            raise StoreError("the hold's COMMIT failed")


def test_a_verb_whose_hold_cannot_begin_runs_unheld_as_before(tmp_path: Path) -> None:
    """A hold the store refuses (an outage) does not refuse the verb: it runs as it did
    before holds, its own write saying how the store fares (here it works)."""
    store = Unholdable(tmp_path / "tasks.db", at="enter")
    scheduler = Scheduler(store=store, clock=FakeClock(T0))  # not started
    try:
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        store.failing = True
        assert scheduler.pause("r")
        row = store.get("r")
        assert row is not None and row.status is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()
        store.close()


def test_a_verb_whose_hold_fails_to_commit_returns_its_row_a_failed_write(
    tmp_path: Path,
) -> None:
    """A hold whose end fails stored none of the verb's writes, which the registry
    already has: the verb returns as it would have, and the task's row is a failed
    write of the outage, written again once a write succeeds."""
    store = Unholdable(tmp_path / "tasks.db", at="exit")
    scheduler = Scheduler(store=store, clock=FakeClock(T0))  # not started
    try:
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        store.failing = True
        assert scheduler.pause("r")
        writes = scheduler._core.store_writes
        assert writes is not None and writes.outage is not None
        assert "r" in writes.outage.stale
        assert scheduler.metrics().store_ok is False
    finally:
        scheduler.shutdown()
        store.close()
