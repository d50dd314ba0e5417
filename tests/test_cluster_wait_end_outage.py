"""A dependency wait ended on a shared store while the store fails that one write: the
wait ends in one process only (docs/CLUSTER.md, "Dependencies"), and no lease holds the
BLOCKED row, so nobody else writes it.  Once the store works again, that process writes
the row again, only while it is still as this process last read it
(core/store/writes.py, ``StoreWrites._rewrite``; ``storecalls.resave``)."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lldsched import FixedRate, RetryPolicy, Scheduler, TaskStatus
from lldsched.coordination import CoordinatedStore
from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import TaskSnapshot
from lldsched.storecalls import resave
from tests import jobs
from tests.cluster import POOLED, ROOT, StoreSpec, opened
from tests.waits import wait_until

ENGINES = POOLED  # through PgBouncer too (tests/cluster.py)

LEASE = 30.0  # no claim expires within a test
POLL = 0.05
HOUR = 3600.0
BLOCKED = TaskStatus.BLOCKED
GIVE_UP_AT_ONCE = RetryPolicy(max_attempts=1, fail_after_given_up=1)  # FAILED at a failure


def fail_once(
    stores: list[CoordinatedStore],
    task_id: str,
    status: TaskStatus,
    records: list[ExecutionRecord] | None = None,
) -> list[TaskSnapshot]:
    """Make the save of the end of ``task_id``'s wait (the row as ``status``, with the
    wait's record) raise a StoreError once (a PostgreSQL restart, a SQLite file locked
    past its timeout), through whichever of ``stores`` makes it: the store picks which
    process runs the upstream, and that one ends the wait.  The snapshots refused (the
    records refused with them added to ``records``)."""
    refused: list[TaskSnapshot] = []
    for store in stores:
        save = store.save

        def failing(
            snapshot: TaskSnapshot,
            record: ExecutionRecord | None = None,
            save: Callable[[TaskSnapshot, ExecutionRecord | None], None] = save,
        ) -> None:
            waited = record is not None and record.outcome is Outcome.BLOCKED
            if not refused and waited and snapshot.task.id == task_id and snapshot.status is status:
                refused.append(snapshot)
                if records is not None and record is not None:
                    records.append(record)
                raise StoreError("the store went away for a moment")
            save(snapshot, record)

        store.save = failing  # type: ignore[method-assign]
    return refused


def fail_the_next_save(store: CoordinatedStore, task_id: str) -> None:
    """Make ``store``'s next save of ``task_id`` raise a StoreError (nothing written), as
    a store away for a moment would; its later saves go through."""
    save = store.save
    failing = [task_id]

    def fails(snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if snapshot.task.id in failing:
            failing.remove(snapshot.task.id)
            raise StoreError("the store went away for a moment")
        save(snapshot, record)

    store.save = fails  # type: ignore[method-assign]


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Three stores on one shared store: two for schedulers, one to read it with."""
    with opened(store_spec, 3, lease=LEASE, poll=POLL) as made:
        yield made


def _register(scheduler: Scheduler, extract: Callable[[], None]) -> None:
    scheduler.schedule("extract", extract, FixedRate(HOUR, start_delay=HOUR), id="extract",
                       retry=GIVE_UP_AT_ONCE, replace_existing=True)  # fmt: skip
    scheduler.schedule("load", jobs.noop, FixedRate(HOUR), id="load", depends_on=["extract"],
                       replace_existing=True)  # fmt: skip


def _row(store: CoordinatedStore, task_id: str) -> TaskStatus:
    return next(s.status for s in store.load_all() if s.task.id == task_id)


def _ok(store: CoordinatedStore, task_id: str) -> int:
    return sum(1 for record in store.records(task_id) if record.ok)


@pytest.mark.parametrize("ends", ["released", "failed"])
def test_a_wait_end_whose_write_failed_is_written_again_once_the_store_works(
    stores: list[CoordinatedStore], ends: str
) -> None:
    """Both processes see load BLOCKED; one runs extract (the store picks which), whose
    end decides the wait (a success releases load, a failure for good fails it) in that
    process alone, and the store fails that one write. Nothing else writes the row:
    before, it stayed BLOCKED for good (the other process leaves it to the one that ran
    extract, which holds load SCHEDULED, or FAILED, in memory and had nothing left to
    write), and an hourly load skipped its slot until another process ran extract's next
    success. Now that process writes it again at its next wake: load runs once, or is
    FAILED in the dead letter."""
    extract = jobs.noop if ends == "released" else jobs.broken
    status = TaskStatus.SCHEDULED if ends == "released" else TaskStatus.FAILED
    refused_record: list[ExecutionRecord] = []
    refused = fail_once(stores[:2], "load", status, refused_record)
    a, b = (Scheduler(workers=2, store=store).start() for store in stores[:2])
    try:
        for scheduler in (a, b):
            _register(scheduler, extract)
        wait_until(lambda: all(s.task("load").status is BLOCKED for s in (a, b)), timeout=10,
                   what="load blocked in both")  # fmt: skip
        a.run_now("extract")
        wait_until(lambda: bool(refused), timeout=10, what="the wait's end refused")
        if ends == "released":
            wait_until(lambda: _ok(stores[2], "load") == 1, timeout=10, what="load ran")
        else:
            wait_until(lambda: _row(stores[2], "load") is TaskStatus.FAILED, timeout=10,
                       what="load failed in the store")  # fmt: skip
            assert "load" in stores[2].dead_letter()
            wait_until(lambda: all(s.task("load").status is TaskStatus.FAILED for s in (a, b)),
                       timeout=10, what="both processes hold it FAILED")  # fmt: skip
        wait_until(lambda: a.metrics().store_ok and b.metrics().store_ok, timeout=10,
                   what="the outage's end")  # fmt: skip
    finally:
        a.shutdown()
        b.shutdown()
    # The wait's record is written with the row: before, it went with the write that
    # failed (an outage's records were lost), the wait missing from load's history.
    (waited,) = [r for r in stores[2].records("load") if r.outcome is Outcome.BLOCKED]
    assert waited == refused_record[0]


def _snapshot(store: CoordinatedStore, task_id: str) -> TaskSnapshot:
    return next(s for s in store.load_all() if s.task.id == task_id)


def test_a_stale_row_is_written_again_only_while_it_is_as_last_read_and_no_lease_holds_it(
    stores: list[CoordinatedStore],
) -> None:
    """``storecalls.resave``, the rewrite's one write on a shared store: a row another
    process wrote since this one last read it is left (its feed brings it in), and so is a
    row a live lease holds (its holder's settle writes it); nothing else changes."""
    first, second, reader = stores
    Scheduler(store=first).schedule("job", jobs.noop, FixedRate(HOUR, start_delay=HOUR),
                                    id="job")  # fmt: skip
    scheduled = _snapshot(reader, "job")
    paused = scheduled._replace(status=TaskStatus.PAUSED)
    assert not resave(second, paused)  # written by the first since the second's last read
    assert _row(reader, "job") is TaskStatus.SCHEDULED
    second.changes()
    assert resave(second, paused)  # read now
    assert _row(reader, "job") is TaskStatus.PAUSED
    assert not resave(first, scheduled)  # the second wrote it since
    assert _row(reader, "job") is TaskStatus.PAUSED
    first.changes()
    assert resave(first, scheduled)
    assert _row(reader, "job") is TaskStatus.SCHEDULED
    (claim,) = first.claim(now=time.time() + 2 * HOUR, limit=1)
    second.changes()
    assert not resave(second, paused)  # leased: the holder's
    assert _row(reader, "job") is TaskStatus.SCHEDULED
    first.release(task_id="job", token=claim.token)
    assert resave(second, paused)
    assert _row(reader, "job") is TaskStatus.PAUSED


def test_a_stale_row_of_a_run_held_here_gets_its_records_and_keeps_its_row(
    stores: list[CoordinatedStore],
) -> None:
    """``storecalls.resave`` of a row this process holds a run of (its claim's lease,
    the snapshot RUNNING), with the records a failed write carried (a wait's ``blocked``
    record): the row is the run's settle's to write, so it is left as it is (not written
    from the snapshot, not refused for its live lease), and the records are appended
    alone; True, so the rewrite counts it written."""
    holder, _, reader = stores
    Scheduler(store=holder).schedule("job", jobs.noop, FixedRate(HOUR, start_delay=HOUR),
                                     id="job")  # fmt: skip
    (claim,) = holder.claim(now=time.time() + 2 * HOUR, limit=1)
    row = _snapshot(reader, "job")
    # The registry's RUNNING snapshot, unlike the row in what a write of it would change.
    running = row._replace(status=TaskStatus.RUNNING, running=True, failure_count=7)
    waited = ExecutionRecord.of(
        task_id="job", name="job", attempt=0, due=claim.slot, slot=claim.slot, worker=-1,
        started=claim.slot - 1.0, finished=claim.slot, ok=False, misfire=Outcome.BLOCKED,
    )  # fmt: skip
    assert resave(holder, running, records=[waited])
    assert reader.records("job") == [waited]
    assert _snapshot(reader, "job") == row  # the row untouched: the settle writes it
    assert holder.leases()[0].token == claim.token  # the lease still held


def test_a_wait_end_whose_write_failed_is_not_written_over_a_change_made_elsewhere(
    stores: list[CoordinatedStore],
) -> None:
    """As above, but the other process pauses load while the write of the release fails:
    the process that released it does not write its release over that pause; it follows
    the pause. Its rewrite comes once the change feed's rows are applied: made between
    the read and their application (the store counts a row as read once ``changes()``
    returned it), it wrote the release over the pause, and load ran."""
    a, b = (Scheduler(workers=2, store=store).start() for store in stores[:2])
    fired: list[TaskSnapshot] = []
    paused: list[bool] = []
    for store, other in zip(stores[:2], (b, a), strict=True):
        save = store.save

        def failing(
            snapshot: TaskSnapshot,
            record: ExecutionRecord | None = None,
            save: Callable[[TaskSnapshot, ExecutionRecord | None], None] = save,
            other: Scheduler = other,
        ) -> None:
            if not fired and record is not None and record.outcome is Outcome.BLOCKED:
                fired.append(snapshot)  # first: the pause's own write ends the wait too
                paused.append(other.pause("load"))  # written by the other process meanwhile
                raise StoreError("the store went away for a moment")
            save(snapshot, record)

        store.save = failing  # type: ignore[method-assign]
    try:
        for scheduler in (a, b):
            _register(scheduler, jobs.noop)
        wait_until(lambda: all(s.task("load").status is BLOCKED for s in (a, b)), timeout=10,
                   what="load blocked in both")  # fmt: skip
        a.run_now("extract")
        wait_until(lambda: paused == [True], timeout=10, what="the pause, as the release fails")
        wait_until(lambda: all(s.task("load").status is TaskStatus.PAUSED for s in (a, b)),
                   timeout=10, what="both processes hold the pause")  # fmt: skip
        wait_until(lambda: a.metrics().store_ok and b.metrics().store_ok, timeout=10,
                   what="the outage's end")  # fmt: skip
        assert _row(stores[2], "load") is TaskStatus.PAUSED
        assert _ok(stores[2], "load") == 0
    finally:
        a.shutdown()
        b.shutdown()


def test_a_verb_of_a_scheduler_not_running_whose_write_failed_says_when_it_is_written(
    stores: list[CoordinatedStore], caplog: pytest.LogCaptureFixture
) -> None:
    """A scheduler never started on a shared store (an admin process that only pauses and
    cancels) has no timer: a verb whose write failed in an outage is written again at its
    next verb (whose read of the feed ends the outage) or at shutdown(), not within
    ``poll``.  Until then the other processes run the task as its row says (a pause not
    heard), and a process that crashes before either loses the verb.  The verb says so,
    at WARNING: before, the outage's ERROR line said only that "the
    scheduler goes on in memory and its registry stays authoritative", true of a
    running scheduler and not of this one, whose registry runs nothing."""
    admin_store, _, reader = stores
    admin = Scheduler(store=admin_store)  # never started
    try:
        later = FixedRate(HOUR, start_delay=HOUR)
        for task_id in ("a", "b", "c"):
            admin.schedule(task_id, jobs.noop, later, id=task_id)
        fail_the_next_save(admin_store, "a")
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert admin.pause("a")
            said = [r for r in caplog.records if "is not running" in r.getMessage()]
            assert len(said) == 1 and said[0].levelno == logging.WARNING
            assert "a" in said[0].getMessage() and "next verb" in said[0].getMessage()
            assert "shutdown()" in said[0].getMessage()
        assert _row(reader, "a") is TaskStatus.SCHEDULED  # stale: the others run it
        assert admin.pause("b")  # the next verb: its read of the feed writes it again
        assert {t: _row(reader, t) for t in "abc"} == {
            "a": TaskStatus.PAUSED,
            "b": TaskStatus.PAUSED,
            "c": TaskStatus.SCHEDULED,
        }
    finally:
        admin.shutdown()


_ADMIN = """
import sys
from lldsched import FixedRate, Scheduler
from lldsched.errors import StoreError
from tests import jobs
from tests.cluster import StoreSpec, open_store

store = open_store(StoreSpec.from_json(sys.argv[1]), lease=30.0, poll=0.05)
admin = Scheduler(store=store)  # never started
admin.schedule("a", jobs.noop, FixedRate(3600, start_delay=3600), id="a")
save = store.save
failing = ["a"]

def fails(snapshot, record=None):
    if snapshot.task.id in failing:
        failing.remove(snapshot.task.id)
        raise StoreError("the store went away for a moment")
    save(snapshot, record)

store.save = fails
assert admin.pause("a")
print("paused", flush=True)
# ends here, as a script does: no shutdown(), no other verb
"""


def test_a_process_that_only_calls_verbs_and_exits_writes_the_rows_it_left_stale(
    store_spec: StoreSpec, stores: list[CoordinatedStore]
) -> None:
    """An admin script (a scheduler never started) pauses a task while the store fails
    that one write, and ends as a script does, without shutdown() or another verb: the
    interpreter's exit writes the row (its shutdown(), the rows' last write).  Before,
    the pause was lost for good: the row said SCHEDULED, and the other processes ran
    the task, the verb having returned True."""
    _pause_in_an_outage_and_exit(_ADMIN, store_spec, stores[2])


def _pause_in_an_outage_and_exit(
    script: str, store_spec: StoreSpec, reader: CoordinatedStore
) -> None:
    """Run ``script`` (:data:`_ADMIN`, and more) in a child: it pauses and ends; the row
    reads PAUSED then, and nothing raised past the outage."""
    done = subprocess.run(
        [sys.executable, "-c", script, store_spec.to_json()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["paused"]
    assert _row(reader, "a") is TaskStatus.PAUSED
    assert "Traceback" not in done.stderr.split("the store went away for a moment")[-1]


_REFUSES_THREADS = """
import atexit, logging, threading

logging.basicConfig()  # what the exit logs, shown: a shutdown at exit that raised too

def refuse(thread):
    raise RuntimeError("can't create new thread at interpreter shutdown")

# Registered after lldsched's own hook, so run before it: the exit of 3.12.0-3.12.2
atexit.register(setattr, threading.Thread, "start", refuse)
"""


def test_the_exit_writes_the_rows_left_stale_where_it_refuses_new_threads(
    store_spec: StoreSpec, stores: list[CoordinatedStore]
) -> None:
    """The same script where the interpreter's exit starts no thread, as Python 3.12.0 to
    3.12.2 do (CPython gh-113964): the rows' last write runs on the exit hook's own
    thread.  Before, the shutdown at exit raised "can't create new thread at interpreter
    shutdown" (logged) and the row said SCHEDULED; then, with only the rewrite's thread
    made optional, the row was written by the second pass of the exit hook, after the
    shutdown at exit had raised that at the thread that keeps the leases."""
    _pause_in_an_outage_and_exit(_ADMIN + _REFUSES_THREADS, store_spec, stores[2])


_GATE_HELD_AT_EXIT = """
import atexit, logging, threading
from lldsched.stores.sqlite.gate import THREAD, gate_for

logging.basicConfig()

# Another process's write holds the file's write lock as the exit writes: it ends once the
# exit has refused the gate's thread (Python 3.12.0-3.12.2), so the exit's rewrite waits
# past its patience for it.
holder = gate_for(store.path, 60.0)
holder.acquire()

def refuse(thread):
    if thread.name == THREAD:
        holder.release()
    raise RuntimeError("can't create new thread at interpreter shutdown")

atexit.register(setattr, threading.Thread, "start", refuse)  # run before lldsched's hook
"""


def test_the_exit_writes_the_rows_left_stale_past_a_write_lock_held_where_it_refuses_threads(
    tmp_path: Path,
) -> None:
    """The script above on a shared SQLite file whose write lock another process holds as
    the interpreter's exit rewrites the row, where that exit starts no thread: the gate's
    thread that waits for the lock past its patience is refused too
    (lldsched/stores/sqlite/gate.py).  Before, the rewrite raised "can't create new thread
    at interpreter shutdown" from the gate, the gate stayed busy for the store's later
    writes, and the row said SCHEDULED; now the exit's own thread tries for the lock until
    it is let go, within the store's timeout."""
    spec = StoreSpec("sqlite", {"path": str(tmp_path / "tasks.db")})
    with opened(spec, 1, lease=LEASE, poll=POLL) as (reader,):
        _pause_in_an_outage_and_exit(_ADMIN + _GATE_HELD_AT_EXIT, spec, reader)
