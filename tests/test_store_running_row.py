"""A ``running`` row on a shared store: a run in flight when an unshared process died.

An unshared SQLite file whose process was killed mid-run holds its task's row with
status ``running`` and no lease; opened later with ``shared=True`` (docs/CLUSTER.md,
"From one process to several"), no claim took it (a claim takes ``scheduled`` and
``retrying`` rows) and the task never ran again.  A shared scheduler's start now reads
such a row by the at-least-once rule an unshared restart applies
(:func:`lldsched.core.recovery.restored_state`: the attempt is owed) and writes it as a
run whose holder died (:meth:`CoordinatedStore.owe
<lldsched.coordination.CoordinatedStore.owe>`), which one claim takes over: the owed
attempt runs once, with the records an unshared restart writes, however many processes
start at once.  On SQLite (a file used unshared, then shared) and on a real PostgreSQL
server (the row written as an unshared store would have left it), the RUNNING state saved
as the core saves it; and once with a real process on the file, killed mid-run."""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, Scheduler
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import HistoryStore, TaskSnapshot, TaskStore
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.stores.memory import InMemoryTaskStore
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0
from tests.processes import killed_mid_run

HOUR = 3600.0
SKIP = MisfirePolicy(Misfire.SKIP)
LATER = T0 + 2.5 * HOUR  # the processes start again: the 10:00 and 11:00 slots passed

Shared = SqliteTaskStore | PostgresTaskStore  # a shared store of either engine


@pytest.fixture(autouse=True)
def _calls() -> Iterator[None]:
    jobs.CALLS.clear()
    yield
    jobs.CALLS.clear()


def _crashed_mid_run(store: TaskStore) -> TaskSnapshot:
    """What a store holds once the process running attempt 1 of ``job`` (due at 09:00,
    hourly, misfire SKIP) died: the RUNNING state the core saves as the run begins, with
    no record and no lease.  Returns that state."""
    writer = Scheduler(clock=FakeClock(T0), store=store)  # never started
    task = writer.schedule("job", jobs.note, FixedRate(HOUR), args=("job",), id="job", misfire=SKIP)
    running = TaskSnapshot(task.definition, TaskStatus.RUNNING, T0, 1, 0, 0, None, True)
    store.save(running)
    return running


def _crashed_retrying(
    store: TaskStore, *, policy: MisfirePolicy = SKIP, in_flight: bool = True
) -> None:
    """The same, the process dying during attempt 2 (a retry due at 09:00:02) of the
    09:00 slot, whose attempt 1 failed (``in_flight`` False: stopped before the retry
    began, the row ``retrying``)."""
    writer = Scheduler(clock=FakeClock(T0), store=store)  # never started
    task = writer.schedule(
        "job", jobs.note, FixedRate(HOUR), args=("job",), id="job", misfire=policy
    )
    failed = ExecutionRecord(task.id, "job", 1, T0, T0, 0, T0, T0 + 1, False, "RuntimeError")
    store.save(TaskSnapshot(task.definition, TaskStatus.RETRYING, T0 + 2, 1, 1, 1, "x"), failed)
    if in_flight:
        store.save(TaskSnapshot(task.definition, TaskStatus.RUNNING, T0 + 2, 2, 1, 1, "x", True))


def _paused_mid_run(store: TaskStore) -> None:
    """The process dying while ``job``'s attempt 1 (09:00) ran, paused during it: the
    row PAUSED with ``running`` set, as the core saves a pause mid-run (shared or not)."""
    _crashed_mid_run(store)
    (row,) = store.load_all()
    store.save(row._replace(status=TaskStatus.PAUSED))


def _resumed_retry_mid_run(store: TaskStore) -> None:
    """The process dying while ``job``'s attempt 2 (a retry of 09:00) ran, paused and
    resumed during it on a shared store: the row as the run's claim left it (RETRYING,
    the one attempt before it, ``running`` set: ``SchedulerCore._save`` with
    ``as_claimed``), its lease gone with the process."""
    _crashed_retrying(store, in_flight=False)
    (row,) = store.load_all()
    store.save(row._replace(running=True))


@pytest.fixture
def crash() -> Callable[[TaskStore], object]:
    """How the one process died (what ``shared_store`` finds): during a first attempt."""
    return _crashed_mid_run


def _history(store: HistoryStore) -> list[tuple[float, int, str]]:
    return [(r.slot - T0, r.attempt, r.outcome.value) for r in store.records("job")]


# What an unshared restart at 11:30 writes (tests/test_recovery.py,
# test_a_run_in_flight_at_the_crash_runs_again_with_the_same_attempt): the attempt in
# flight runs again, whatever the policy; the slots after it are the policy's (SKIP).
RESTART = [(HOUR, 0, "missed"), (2 * HOUR, 0, "missed"), (0.0, 1, "ok")]


def test_an_unshared_restart_runs_the_attempt_in_flight(tmp_path: Path) -> None:
    """The rule the shared stores are held to, on the same kind of file."""
    path = str(tmp_path / "tasks.db")
    with SqliteTaskStore(path) as store:
        _crashed_mid_run(store)
    with SqliteTaskStore(path) as store:
        with Stepper(Scheduler(clock=FakeClock(LATER), store=store)) as steps:
            steps.settle()
        assert _history(store) == RESTART
    assert [(due - T0, attempt) for _, due, attempt in jobs.CALLS] == [(0.0, 1)]


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    crash: Callable[[TaskStore], object],
) -> Callable[[], Shared]:
    """``shared_store()``: a shared store on one place holding the row left by ``crash``
    (:func:`_crashed_mid_run`), a new one per call (one per process), all closed after
    the test."""
    opened: list[Shared] = []

    @request.addfinalizer
    def _close() -> None:
        for store in opened:
            store.close()

    if request.param == "sqlite":
        path = str(tmp_path / "tasks.db")
        with SqliteTaskStore(path) as unshared:  # the one process, killed mid-run
            crash(unshared)

        def make() -> Shared:
            store = SqliteTaskStore(path, shared=True, poll=0.05)
            opened.append(store)
            return store

    else:
        open_store: Callable[..., PostgresTaskStore] = request.getfixturevalue("open_store")
        seeder = open_store()
        crash(seeder)  # a RUNNING save no lease holds writes the row as it is
        reference = InMemoryTaskStore()
        crash(reference)
        stored, expected = seeder.get("job"), reference.get("job")
        assert stored is not None and expected is not None
        assert stored.status is expected.status  # RUNNING for a crash mid-run
        seeder.close()

        def make() -> Shared:
            store = open_store(poll=0.05)
            opened.append(store)
            return store

    return make


def test_a_running_row_opened_shared_runs_its_owed_attempt_as_a_restart_would(
    shared_store: Callable[[], Shared],
) -> None:
    store = shared_store()
    with Stepper(Scheduler(clock=FakeClock(LATER), store=store)) as steps:
        steps.settle()
        assert steps.scheduler.task("job").next_run_at == T0 + 3 * HOUR
    assert [(due - T0, attempt) for _, due, attempt in jobs.CALLS] == [(0.0, 1)]
    assert _history(store) == RESTART
    stored = store.get("job")
    assert stored is not None
    assert (stored.status, stored.attempt, stored.next_run_at, stored.run_count) == (
        TaskStatus.SCHEDULED, 0, T0 + 3 * HOUR, 1,
    )  # fmt: skip
    assert store.leases() == []  # the owed attempt's lease went with its settle


def test_shared_schedulers_starting_together_run_the_owed_attempt_once(
    shared_store: Callable[[], Shared], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both read the ``running`` row before either wrote it (their loads), both decide
    it; one write takes, and one claim runs the attempt."""
    first, second = shared_store(), shared_store()
    read = second.load_all(leave_out=True)  # b's load, before a wrote anything
    assert [row.status for row in read] == [TaskStatus.RUNNING]
    monkeypatch.setattr(second, "load_all", lambda **_: read)
    a = Scheduler(clock=FakeClock(LATER), store=first, name="a")
    b = Scheduler(clock=FakeClock(LATER), store=second, name="b")  # decides it too
    assert [b.task("job").status, a.task("job").status] == [TaskStatus.SCHEDULED] * 2
    with Stepper(a) as one:
        one.settle()  # a claims the attempt owed and runs it
        with Stepper(b) as other:  # (b started after: on a fake clock, b polls only once)
            other.settle()  # b reads a's settle from the feed; nothing for b to claim
            assert b.task("job").next_run_at == T0 + 3 * HOUR
    assert [(due - T0, attempt) for _, due, attempt in jobs.CALLS] == [(0.0, 1)]
    assert _history(first) == RESTART


def test_the_owed_write_is_made_once_and_its_lease_taken_over_by_one_claim(
    shared_store: Callable[[], Shared],
) -> None:
    """At the store: two processes that read the ``running`` row write what the rule
    decides; the first write takes, the second finds the row decided already.  The row is
    then a run whose holder died: one claim takes it over, the attempt owed."""
    first, second = shared_store(), shared_store()
    (row,) = first.load_all()
    owed = row._replace(status=TaskStatus.SCHEDULED, attempt=0, running=False)
    assert first.owe(owed) is True
    # The other process reads the row and its lease as it reads any (not left out as
    # holding a value no write of lldsched makes).
    assert [(c.task_id, c.snapshot is not None) for c in second.changes()] == [("job", True)]
    assert second.unloaded() == []
    assert second.owe(owed) is False
    (lease,) = first.leases()
    assert (lease.task_id, lease.slot, lease.attempt) == ("job", T0, 0)
    claims = first.claim(now=LATER, limit=5) + second.claim(now=LATER, limit=5)
    assert [(c.task_id, c.slot, c.attempt, c.taken_over) for c in claims] == [("job", T0, 0, True)]
    assert claims[0].token > lease.token
    stored = second.get("job")
    assert stored is not None and (stored.status, stored.attempt) == (TaskStatus.SCHEDULED, 0)


@pytest.mark.parametrize("crash", [_crashed_retrying])
def test_a_retry_in_flight_in_a_running_row_runs_again_as_a_restart_runs_it(
    shared_store: Callable[[], Shared],
    crash: Callable[[TaskStore], object],
) -> None:
    """Attempt 2 runs again, at its due instant, its record in its slot (09:00), as an
    unshared restart (the reference: an in-memory store restarted) runs it."""
    reference = InMemoryTaskStore()
    crash(reference)
    with Stepper(Scheduler(clock=FakeClock(T0 + 30), store=reference)) as steps:
        steps.settle()
        expected = steps.scheduler.task("job").next_run_at
    restart = list(jobs.CALLS)
    jobs.CALLS.clear()
    store = shared_store()
    with Stepper(Scheduler(clock=FakeClock(T0 + 30), store=store)) as steps:
        steps.settle()
        assert steps.scheduler.task("job").next_run_at == expected == T0 + HOUR
    assert jobs.CALLS == restart == [("job", T0 + 2, 2)]
    assert _history(store) == _history(reference) == [(0.0, 1, "failed"), (0.0, 2, "ok")]


def _after_downtime(
    store: Shared, reference: InMemoryTaskStore
) -> tuple[list[tuple[float, int, str]], float | None]:
    """The history ``store`` holds once a scheduler started on it at ``LATER`` settled,
    checked against an unshared restart's on ``reference`` (the same crash): the calls,
    the next due instant and the records alike; returns the history and that instant."""
    with Stepper(Scheduler(clock=FakeClock(LATER), store=reference)) as steps:
        steps.settle()
        expected = steps.scheduler.task("job").next_run_at
    restart = list(jobs.CALLS)
    jobs.CALLS.clear()
    with Stepper(Scheduler(clock=FakeClock(LATER), store=store)) as steps:
        steps.settle()
        assert steps.scheduler.task("job").next_run_at == expected
    assert restart == jobs.CALLS
    assert _history(store) == _history(reference)
    return _history(store), expected


RUN_ONCE = MisfirePolicy(Misfire.RUN_ONCE)
RUN_ALL = MisfirePolicy(Misfire.RUN_ALL)
# What a restart at 11:30 writes for the 09:00 slot's retry (attempt 2, owed) whose later
# slots passed too: their decisions first (the policy's, after the owed attempt), then
# the retry's run in its slot, then the catch-up runs.
RETRY_RESTART = {
    "skip": [(0.0, 1, "failed"), (HOUR, 0, "missed"), (2 * HOUR, 0, "missed"), (0.0, 2, "ok")],
    "run_once": [(0.0, 1, "failed"), (HOUR, 0, "coalesced"), (0.0, 2, "ok"), (2 * HOUR, 1, "ok")],
    "run_all": [(0.0, 1, "failed"), (0.0, 2, "ok"), (HOUR, 1, "ok"), (2 * HOUR, 1, "ok")],
}


@pytest.mark.parametrize(
    ("crash", "policy"),
    [
        pytest.param(
            functools.partial(_crashed_retrying, policy=policy, in_flight=in_flight),
            policy,
            id=f"{policy.on_misfire.value}-{'taken-over' if in_flight else 'retrying'}",
        )
        for policy in (SKIP, RUN_ONCE, RUN_ALL)
        for in_flight in (True, False)
    ],
)
def test_a_retry_whose_later_slots_passed_meets_the_policy_before_it_runs_as_at_a_restart(
    shared_store: Callable[[], Shared],
    crash: Callable[[TaskStore], object],
    policy: MisfirePolicy,
) -> None:
    """A retry owed from before the downtime (in flight when its process died, taken over
    by a claim; or due, its row ``retrying``), the 10:00 and 11:00 slots passed since:
    the claim decides them by the policy before the retry runs, as a restart does
    (``first_decided``, one rule).  Before, a claim with attempts behind it met no
    policy: the retry ran, and those slots were recorded ``skipped`` after it, where a
    restart recorded them ``missed`` (or ``coalesced``) before it."""
    reference = InMemoryTaskStore()
    crash(reference)
    store = shared_store()
    history, following = _after_downtime(store, reference)
    assert history == RETRY_RESTART[policy.on_misfire.value]
    assert following == T0 + 3 * HOUR
    assert store.leases() == []


@pytest.mark.parametrize("crash", [_paused_mid_run, _resumed_retry_mid_run])
def test_a_row_with_a_run_in_flight_is_read_by_a_shared_start_as_a_restart_reads_it(
    shared_store: Callable[[], Shared],
    crash: Callable[[TaskStore], object],
) -> None:
    """Paused mid-run (the attempt in flight counted in the row), or a retry resumed
    mid-run (the row as its claim left it, the attempts before the run): the attempt in
    flight is owed, on a shared start as at a restart, and runs again with its number.
    Before, a shared start kept a paused row's counter (its resume ran the slot's attempt
    2, after an attempt 1 never recorded), and a restart read the resumed retry's as one
    back (RETRYING with no attempt behind it, the retry run as attempt 1 again)."""
    reference = InMemoryTaskStore()
    crash(reference)
    restart = Scheduler(clock=FakeClock(LATER), store=reference)
    store = shared_store()
    shared = Scheduler(clock=FakeClock(LATER), store=store)
    read = [(s.task("job").status, s.task("job").attempt) for s in (restart, shared)]
    paused = crash is _paused_mid_run
    owed = (TaskStatus.PAUSED, 0) if paused else (TaskStatus.RETRYING, 1)
    assert read == [owed, owed]
    for scheduler in (restart, shared):
        scheduler.resume("job")
        with Stepper(scheduler) as steps:
            steps.settle()
    attempts = [
        (attempt, due == LATER if paused else due == T0 + 2) for _, due, attempt in jobs.CALLS
    ]
    assert attempts == [(owed[1] + 1, True)] * 2  # the owed attempt, once in each
    assert _history(store) == _history(reference)


# A real process on the file unshared, killed (SIGKILL) during a run: registers a one-off
# due at once, whose run says "started" and hangs until the kill (tests/test_crash.py).
CHILD = """
import sys
from lldsched import FakeClock, OneTime, Scheduler, SqliteTaskStore
from tests import jobs

path, marker, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
scheduler = Scheduler(clock=FakeClock(t0), store=SqliteTaskStore(path)).start()
scheduler.schedule("in-flight", jobs.hang_first_time, OneTime(delay=0), args=(marker,),
                   id="in-flight")
scheduler.wait_drained(60)  # never returns: the run hangs until SIGKILL
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_file_whose_process_was_killed_mid_run_runs_the_run_once_when_opened_shared(
    tmp_path: Path,
) -> None:
    path, _ = killed_mid_run(CHILD, tmp_path, T0)
    with SqliteTaskStore(str(path)) as look:  # what the killed process left
        row = look.get("in-flight")
        assert row is not None and (row.status, row.attempt) == (TaskStatus.RUNNING, 1)
    first = SqliteTaskStore(str(path), shared=True, poll=0.05)
    second = SqliteTaskStore(str(path), shared=True, poll=0.05)
    try:
        a = Scheduler(clock=FakeClock(T0 + HOUR), store=first, name="a")
        b = Scheduler(clock=FakeClock(T0 + HOUR), store=second, name="b")
        with Stepper(a) as one:
            one.settle()
            with Stepper(b) as other:
                other.settle()
                assert b.task("in-flight").status is TaskStatus.SUCCEEDED
        assert jobs.CALLS == [("rerun", 0.0, 0)]  # the run in flight ran again, once
        ((attempt, ok),) = [(r.attempt, r.ok) for r in first.records("in-flight")]
        assert (attempt, ok) == (1, True)  # its attempt, as an unshared restart runs it
    finally:
        first.close()
        second.close()
