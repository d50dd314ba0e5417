"""Two schedulers on one shared store: a task that finished in the other process retires
here under ``retain_finished`` as one that finished here does (lldsched.core.retention),
and retiring it writes nothing to the shared row, which the other processes still read.

Before, the retention counted only the tasks that finished here: a task followed into
SUCCEEDED or CANCELLED (a run settled elsewhere, a cancel made there) stayed in the
registry for good, so each gunicorn worker held every one-off task the others ran.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from lldsched import (
    OneTime,
    RetryPolicy,
    Scheduler,
    TaskNotFoundError,
    TaskRetiredError,
    TaskSnapshot,
    TaskStatus,
)
from lldsched.coordination import CoordinatedStore
from tests import cluster_jobs, jobs
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

LEASE = 30.0  # no claim expires within a test
POLL = 0.05
LATER = 3600.0  # a one-off due in an hour: it never runs within a test
T = TypeVar("T")


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Three stores on one shared store (once per engine): two for schedulers, one to read
    it with; closed after the test."""
    with opened(store_spec, 3, lease=LEASE, poll=POLL) as stores:
        yield stores


def _row(store: CoordinatedStore, task_id: str) -> TaskSnapshot | None:
    """The store's row of ``task_id`` (both shared stores answer ``get``)."""
    row: TaskSnapshot | None = store.get(task_id)  # type: ignore[attr-defined]
    return row


def _retired(scheduler: Scheduler, task_id: str) -> bool:
    """True once ``scheduler`` retired ``task_id``; False while it holds the task or has
    not followed it yet (a scheduler built before the other registered its tasks knows
    them only once its feed has read them)."""
    try:
        scheduler.task(task_id)
    except TaskRetiredError:
        return True
    except TaskNotFoundError:
        return False
    return False


def test_one_off_tasks_finished_in_either_scheduler_retire_from_both(
    stores: list[CoordinatedStore], schedulers: list[Scheduler]
) -> None:
    """Each one-off task runs in one of the two schedulers and is followed into SUCCEEDED
    by the other; with ``retain_finished=0`` both retire it, and ``task(id)`` says so in
    both.  Its row and its record stay in the store.  A task that FAILED waits in both
    dead letters, as in one process."""
    schedulers += [Scheduler(workers=2, store=store, retain_finished=0) for store in stores[:2]]
    first, second = schedulers
    reader = stores[2]
    ids = [f"job-{n}" for n in range(8)]
    for task_id in ids:
        first.schedule(task_id, jobs.noop, OneTime(0), id=task_id)
    first.schedule("doomed", jobs.broken, OneTime(0), id="doomed",
                   retry=RetryPolicy(max_attempts=1))  # fmt: skip
    first.start()
    second.start()

    def settled() -> bool:
        rows = [_row(reader, task_id) for task_id in ids]
        return all(row is not None and row.status is TaskStatus.SUCCEEDED for row in rows)

    wait_until(settled, timeout=20, what="every one-off task to succeed")
    for scheduler in schedulers:  # before: the tasks the other one ran stayed here for good

        def retired(scheduler: Scheduler = scheduler) -> bool:
            return all(_retired(scheduler, task_id) for task_id in ids)

        def dead(scheduler: Scheduler = scheduler) -> bool:
            return "doomed" in scheduler.dead_letter()

        wait_until(retired, timeout=10, what="each one-off task to retire from both schedulers")
        with pytest.raises(TaskRetiredError, match=r"'job-0' finished \(succeeded\)"):
            scheduler.task("job-0")
        wait_until(dead, timeout=10, what="the failed task in both dead letters")
        assert [task.id for task in scheduler.tasks()] == ["doomed"]
    for task_id in ids:  # the rows and records stay: nobody deleted or rewrote them
        row = _row(reader, task_id)
        assert row is not None
        assert (row.status, row.run_count) == (TaskStatus.SUCCEEDED, 1)
        assert [record.ok for record in reader.records(task_id)] == [True]


def test_a_task_cancelled_in_the_other_scheduler_retires_here_and_its_row_is_not_rewritten(
    stores: list[CoordinatedStore], schedulers: list[Scheduler]
) -> None:
    """A cancel made in the first scheduler reaches the second, which retires the task
    (``retain_finished=0``) without writing anything: the reader's change feed hears the
    cancel and nothing after it.  The first, which keeps every finished task, still holds
    it."""
    first = Scheduler(workers=1, store=stores[0], retain_finished=None)
    second = Scheduler(workers=1, store=stores[1], retain_finished=0)
    schedulers += [first, second]
    reader = stores[2]
    first.schedule("later", jobs.noop, OneTime(delay=LATER), id="later")
    first.start()
    second.start()
    wait_until(lambda: "later" in second._core.tasks, timeout=10, what="the second to follow it")
    reader.changes()  # what the reader heard so far
    first.cancel("later")
    wait_until(lambda: _retired(second, "later"), timeout=10,
               what="the task cancelled elsewhere to retire")  # fmt: skip
    with pytest.raises(TaskRetiredError, match=r"'later' finished \(cancelled\)"):
        second.task("later")
    changes = reader.changes()
    assert [(c.task_id, c.snapshot and c.snapshot.status) for c in changes] == [
        ("later", TaskStatus.CANCELLED)  # the cancel; the retirement wrote nothing
    ]
    assert first.task("later").status is TaskStatus.CANCELLED


def test_purge_retired_deletes_the_row_of_a_task_that_finished_elsewhere_as_it_retires(
    stores: list[CoordinatedStore], schedulers: list[Scheduler]
) -> None:
    """``purge_retired=True`` deletes a task from the store as it retires here, whoever
    finished it: a finished row is final, and left to the process that finished it, it
    stayed for good once that process stopped (the next test).  A process that still
    holds it drops it, as a removal made elsewhere.  Here the followed task retires when
    a cancel made here fills the retention (``retain_finished=1``), outside the feed."""
    first = Scheduler(workers=1, store=stores[0], retain_finished=None)
    second = Scheduler(workers=1, store=stores[1], retain_finished=1, purge_retired=True)
    schedulers += [first, second]
    reader = stores[2]
    first.schedule("theirs", jobs.noop, OneTime(delay=LATER), id="theirs")
    second.schedule("mine", jobs.noop, OneTime(delay=LATER), id="mine")
    first.start()
    second.start()
    wait_until(lambda: "theirs" in second._core.tasks, timeout=10, what="the second to follow it")
    first.cancel("theirs")
    wait_until(lambda: second.task("theirs").status is TaskStatus.CANCELLED, timeout=10,
               what="the cancel to reach the second")  # fmt: skip
    second.cancel("mine")  # two finished, one more than it keeps: the earliest retires
    assert _retired(second, "theirs")
    assert _row(reader, "theirs") is None  # before: left to the first, which keeps all
    wait_until(lambda: "theirs" not in first._core.tasks, timeout=10,
               what="the first to drop the task deleted elsewhere")  # fmt: skip
    second.schedule("next", jobs.noop, OneTime(delay=LATER), id="next")
    second.cancel("next")  # and its own task, finished here, is purged as it retires
    assert _retired(second, "mine")
    assert _row(reader, "mine") is None


def test_a_finished_row_whose_process_stopped_before_retiring_it_is_purged_after_a_restart(
    stores: list[CoordinatedStore], schedulers: list[Scheduler]
) -> None:
    """A worker finishes a task and stops (a daily restart, a deploy) before its
    retention retired it: its row was left in the store for good, since the process that
    loads it at its start retired it as finished elsewhere, without deleting it.  Now it
    is deleted as it retires there."""
    worker = Scheduler(workers=1, store=stores[0], retain_finished=1, purge_retired=True)
    worker.schedule("done", jobs.noop, OneTime(delay=LATER), id="done")
    worker.cancel("done")  # finished, held: one finished task is what it keeps
    worker.shutdown()
    assert _row(stores[2], "done") is not None
    restarted = Scheduler(workers=1, store=stores[1], retain_finished=1, purge_retired=True)
    schedulers.append(restarted)
    assert restarted.task("done").status is TaskStatus.CANCELLED  # loaded, held
    restarted.schedule("next", jobs.noop, OneTime(delay=LATER), id="next")
    restarted.cancel("next")  # one more finished: the loaded one retires
    assert _retired(restarted, "done")
    assert _row(stores[2], "done") is None  # before: left in the store for good


def test_a_restart_loads_finished_rows_and_retires_those_past_the_retention(
    store_spec: StoreSpec, stores: list[CoordinatedStore], schedulers: list[Scheduler]
) -> None:
    """A scheduler built on a shared store loads its finished rows as finished tasks and
    retires at once those past its retention, in the order the store first saved them:
    ``task(id)`` says they retired, as after a restart in one process, and their rows stay."""
    first = Scheduler(workers=1, store=stores[0], retain_finished=None)
    schedulers.append(first)
    ids = [f"done-{n}" for n in range(4)]
    for task_id in ids:
        first.schedule(task_id, jobs.noop, OneTime(delay=LATER), id=task_id)
        first.cancel(task_id)
    first.schedule("live", jobs.noop, OneTime(delay=LATER), id="live")
    later = Scheduler(workers=1, store=stores[1], retain_finished=1)
    schedulers.append(later)
    assert [task.id for task in later.tasks()] == ["done-3", "live"]
    for task_id in ids[:3]:
        assert _retired(later, task_id)
        assert _row(stores[2], task_id) is not None
    with pytest.raises(TaskNotFoundError):
        later.task("never")


def test_a_coroutine_task_that_finished_elsewhere_leaves_nothing_here_once_retired(
    stores: list[CoordinatedStore], schedulers: list[Scheduler]
) -> None:
    """What the runtime keeps per task goes with the task: a one-off coroutine task
    cancelled in the other scheduler and retired here is not left among the ids of the
    tasks the event loop runs (one per followed task, for good, before)."""
    first = Scheduler(workers=1, store=stores[0], retain_finished=None)
    second = Scheduler(workers=1, store=stores[1], retain_finished=0)
    schedulers += [first, second]
    first.schedule("async", cluster_jobs.until_cancelled, OneTime(delay=LATER),
                   id="async")  # fmt: skip
    first.start()
    second.start()
    wait_until(lambda: "async" in second._core.tasks, timeout=10, what="the second to follow it")
    first.cancel("async")
    wait_until(lambda: _retired(second, "async"), timeout=10, what="the task to retire")
    second.schedule("probe", jobs.noop, OneTime(delay=LATER), id="probe")  # a sync
    assert "async" not in second._loop_ids


@pytest.mark.parametrize("how", ["replaced", "removed and registered again"])
def test_a_purge_leaves_a_row_another_process_registered_again_after_its_last_read(
    stores: list[CoordinatedStore],
    schedulers: list[Scheduler],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    """A task retires here with ``purge_retired=True`` while another process registers its
    id again (``replace_existing=True``, or a registration after a removal), its write
    landing after this process last read the store and before its purge (interleaved by
    hand: the purge's store call lets the other process write first).  The purge used to
    delete the row whatever it held: the other process's registration was gone from the
    store, for every process.  Now the row is kept, and said at INFO."""
    caplog.set_level("INFO", logger="lldsched")
    here = Scheduler(workers=1, store=stores[0], retain_finished=1, purge_retired=True)
    schedulers.append(here)
    here.schedule("once", jobs.noop, OneTime(delay=LATER), id="again")
    here.cancel("again")  # finished, held: one finished task is what it keeps
    there = Scheduler(workers=1, store=stores[1], retain_finished=None)
    schedulers.append(there)
    assert there.task("again").status is TaskStatus.CANCELLED  # loaded as finished

    def register_again() -> None:  # the other process's write, between read and purge
        if how == "replaced":
            there.schedule("twice", jobs.noop, OneTime(delay=LATER), id="again",
                           replace_existing=True)  # fmt: skip
        else:
            there.remove("again")
            there.schedule("twice", jobs.noop, OneTime(delay=LATER), id="again")

    for method in ("delete", "purge"):  # whichever the core calls at the purge
        real = getattr(stores[0], method, None)
        if real is not None:
            monkeypatch.setattr(stores[0], method, _first_after(register_again, real))
    here.schedule("next", jobs.noop, OneTime(delay=LATER), id="next")
    _finish_outside_a_verb(here, "next")  # one more finished: "again" retires and is purged
    assert _retired(here, "again")
    row = _row(stores[2], "again")
    assert row is not None, "the purge deleted the row the other process registered"
    assert row.task.name == "twice"
    assert there.task("again").name == "twice"
    assert "the row is kept, not purged" in caplog.text
    here.schedule("then", jobs.noop, OneTime(delay=LATER), id="then")  # reads the feed first
    assert here.task("again").name == "twice"  # the feed brought the registration in


def test_a_purge_leaves_a_row_registered_again_elsewhere_up_to_the_version_it_had_read(
    store_spec: StoreSpec,
    stores: list[CoordinatedStore],
    schedulers: list[Scheduler],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The finished row this process holds was written by another process and read here
    at its version 2 (a registration and a cancel; on PostgreSQL a transaction left open
    holds the feed's horizon before them, so the feed keeps that version).  The other
    process removes the id and registers it again, with as many writes, before the purge:
    on PostgreSQL a row registered again numbers its versions from 1, so its version is
    the one read here, and a purge that went by the version alone deleted the new row."""
    with contextlib.ExitStack() as held:
        if store_spec.engine == "postgres":
            import psycopg  # only with PostgreSQL

            horizon = held.enter_context(psycopg.connect(store_spec.params["dsn"]))
            horizon.execute("SELECT pg_catalog.pg_current_xact_id()")  # open, with an xid
        there = Scheduler(workers=1, store=stores[1], retain_finished=None)
        schedulers.append(there)
        there.schedule("once", jobs.noop, OneTime(delay=LATER), id="again")
        there.cancel("again")
        here = Scheduler(workers=1, store=stores[0], retain_finished=1, purge_retired=True)
        schedulers.append(here)
        assert here.task("again").status is TaskStatus.CANCELLED  # loaded, held

        def register_again() -> None:  # two writes: a registration and a pause
            there.remove("again")
            there.schedule("twice", jobs.noop, OneTime(delay=LATER), id="again")
            there.pause("again")

        purge = _first_after(register_again, stores[0].purge)  # type: ignore[attr-defined]
        monkeypatch.setattr(stores[0], "purge", purge)
        here.schedule("next", jobs.noop, OneTime(delay=LATER), id="next")
        _finish_outside_a_verb(here, "next")  # one more finished: "again" retires and is purged
        assert _retired(here, "again")
    row = _row(stores[2], "again")
    assert row is not None, "the purge deleted the row registered again elsewhere"
    assert (row.task.name, row.status) == ("twice", TaskStatus.PAUSED)


def _finish_outside_a_verb(scheduler: Scheduler, task_id: str) -> None:
    """Cancel ``task_id`` through the core, under the scheduler's lock, as a run's finish
    or a followed change ends a task: outside any verb.  A verb (``cancel()``) holds the
    row for its whole length (:func:`lldsched.storecalls.verb_held`; on SQLite the
    file's write lock), so another process's write cannot land within a purge it makes;
    a retirement outside a verb is where it can, which these tests interleave."""
    with scheduler._lock:
        scheduler._core.cancel(task_id)


def _first_after(first: Callable[[], None], then: Callable[[str], T]) -> Callable[[str], T]:
    """``then``, calling ``first`` before its first call only."""
    pending = [first]

    def call(task_id: str) -> T:
        while pending:
            pending.pop()()
        return then(task_id)

    return call
