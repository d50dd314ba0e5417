"""Crash harness: a service on a SqliteTaskStore killed with SIGKILL between any two writes.

The child (``tests/crash_child.py``) runs the jobs of ``tests/crash_jobs.py`` (one-offs
that succeed, fail once, or fail for good into the dead letter; a fixed rate, a
failing-then-retried fixed delay, a cron, a fixed rate that overruns its timeout) on a
fake clock, and says each store write on its pipe; at write N it stops there and is
killed (or, for every other N, it goes on and is killed wherever the kill finds it: in
a write, in a run).  This process then opens the same file, checks what the crash
left, registers the jobs again as a service does, steps the clock to the same horizon
and checks the guarantees docs/GUIDE.md ("Durability") and docs/decisions/persistence.md
("Persistence") give:

* the file is whole (``integrity_check``) and not held by the dead process's claim;
* no registered task is lost, none is duplicated;
* nothing the store recorded as done runs again (a one-off recorded succeeded never
  does); a run in flight at the kill runs again with the same attempt (at-least-once),
  and it is the only thing that runs twice;
* the records and counters end as a run without a crash leaves them: every slot
  recorded once, the attempts and retries the same, the dead letter the same.

A second child restarts a finished store after a downtime and is killed among the
misfire decisions it writes: the next start decides no slot twice.  A third runs the
same service on PostgreSQL (always shared: what was in flight is what held a lease,
taken over once the lease expires).  No run in that mix overruns into its next slot; a
fourth child runs a service whose one run overruns two slots and is killed at each of
its writes: the run's record and the records of the slots it skipped are one write
(``save_all``), so a kill keeps all of them or none (docs/decisions/persistence.md, "A run's
record and the records of the slots it skipped are one write").
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections import Counter, deque
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import pytest

from lldsched import FakeClock, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.testing import Stepper
from tests import crash_jobs
from tests.conftest import T0
from tests.crash_postgres import LEASE, wait_leases_expired
from tests.pg_server import PostgresServer
from tests.processes import lines_of

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("once", "once-flaky", "once-dead", "rate", "delay", "cron", "slow")
ONE_OFFS = ("once", "once-flaky", "once-dead")
UNTIL = T0 + crash_jobs.HORIZON

AHEAD = 3  # children started ahead of the one being checked
Where = TypeVar("Where", Path, str)  # an SQLite file, or a PostgreSQL dsn
RecordKey = tuple[str, float, int, str]  # task id, slot, attempt, outcome


@dataclass
class Killed:
    """What a child said before it was killed: the ids it registered and the clock's time
    at the write it was killed at (or after)."""

    registered: list[str]
    now: float


@dataclass
class State:
    """What a store holds: its snapshots by id, its records, its dead letter."""

    snapshots: dict[str, TaskSnapshot]
    records: list[ExecutionRecord]
    dead_letter: list[str]
    ids: list[str]

    @property
    def keys(self) -> list[RecordKey]:
        return [(r.task_id, r.slot, r.attempt, r.outcome.value) for r in self.records]


@dataclass
class Child:
    """A child started on ``path``, to be killed at write ``stop_at`` (0: never; below 0:
    as soon as it says write ``-stop_at``, wherever it is by then)."""

    path: Path | str
    journal: Path
    stop_at: int
    process: subprocess.Popen[str]
    lines: queue.Queue[str]


def start_child(
    path: Path | str,
    journal: Path,
    *,
    stop_at: int,
    start: float = T0,
    until: float = UNTIL,
    service: str = "register",
) -> Child:
    """Start the child on ``path`` (an SQLite file, or a PostgreSQL dsn), its clock going
    from ``start`` to ``until``, running ``service`` (a name in crash_jobs.SERVICES)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.crash_child", str(path), str(journal),
               str(stop_at), repr(start), repr(until), service]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    return Child(path, journal, stop_at, process, lines_of(process))


def end_child(child: Child) -> Killed | int:
    """Wait for ``child`` to reach its write and kill it there (then what it said), or to
    run to the end (``stop_at=0``: then the writes it made)."""
    registered: list[str] = []
    process = child.process
    try:
        while True:
            line = child.lines.get(timeout=60)  # a bounded wait for its word, not a sleep
            word, *rest = line.split()
            if word == "registered":
                registered.extend(rest)
            elif word == "done":
                assert child.stop_at == 0, f"it ended before its write {child.stop_at}"
                assert process.wait(30) == 0
                return int(rest[0])
            elif word == "wrote" and int(rest[0]) == abs(child.stop_at):
                return Killed(registered, float(rest[1]))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(30)


def killed_at(
    stops: list[int],
    prepare: Callable[[int], tuple[Where, Path]],
    *,
    start: float = T0,
    until: float = UNTIL,
    service: str = "register",
) -> Generator[tuple[int, Where, Path, Killed], None, None]:
    """Each of ``stops`` in turn: a child on the files ``prepare(stop)`` gives, killed at
    that write; the next children start while one is checked (a few at a time)."""
    children: deque[Child] = deque()
    waiting = iter(stops)

    def where_of(child: Child) -> Where:
        return cast(Where, child.path)  # what prepare gave

    def started(stop: int) -> Child:
        return start_child(*prepare(stop), stop_at=stop, start=start, until=until, service=service)

    try:
        for stop in waiting:
            children.append(started(stop))
            if len(children) == AHEAD:
                break
        while children:
            child = children.popleft()
            killed = end_child(child)
            assert isinstance(killed, Killed)
            for stop in waiting:  # one more in its place
                children.append(started(stop))
                break
            yield child.stop_at, where_of(child), child.journal, killed
    finally:  # a check failed: the children started ahead die with it
        for child in children:
            child.process.kill()
            child.process.wait(30)


def run_child(path: Path, journal: Path, *, until: float = UNTIL, service: str = "register") -> int:
    """Run the child to the end; the writes it made."""
    writes = end_child(start_child(path, journal, stop_at=0, until=until, service=service))
    assert isinstance(writes, int)
    return writes


def open_store(where: Path | str) -> SqliteTaskStore | PostgresTaskStore:
    """The store at ``where`` as a scheduler opens it: an SQLite file (refused if it is
    held or corrupt), or a PostgreSQL dsn (the harness's lease)."""
    if isinstance(where, str):
        return PostgresTaskStore(where, lease=LEASE, poll=0.05)
    return SqliteTaskStore(where)


def read(where: Path | str) -> State:
    """Open ``where`` as a scheduler would (an SQLite file's claim included) and read it."""
    with open_store(where) as store:
        snapshots = store.load_all()
        return State(
            snapshots={s.task.id: s for s in snapshots},
            records=store.records(),
            dead_letter=store.dead_letter(),
            ids=[s.task.id for s in snapshots],
        )


def integrity(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return [row[0] for row in connection.execute("PRAGMA integrity_check")]
    finally:
        connection.close()


def restart(
    where: Path | str, journal: Path, *, at: float, until: float = UNTIL, service: str = "register"
) -> None:
    """What the service does at its next start: open the store, register its jobs again
    (``service``'s, a name in crash_jobs.SERVICES), run to ``until``; the clock starts at
    ``at``."""
    crash_jobs.JOURNAL[0] = str(journal)
    clock = crash_jobs.CLOCK[0] = FakeClock(at)
    store = open_store(where)
    scheduler = Scheduler(clock=clock, store=store, workers=2)
    crash_jobs.SERVICES[service](scheduler)
    with store, Stepper(scheduler, timeout=20) as steps:
        if clock.now() < until:  # a run due at the start (overrun's) may have moved it past
            steps.advance_to(until)


def journal_of(journal: Path) -> list[tuple[str, float, int, int]]:
    """(task id, due, attempt, pid) of every run the journal saw, in order."""
    if not journal.exists():
        return []
    runs = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        task_id, due, attempt, pid = line.split()
        runs.append((task_id, float(due), int(attempt), int(pid)))
    return runs


def ran(state: State, task_id: str) -> list[ExecutionRecord]:
    return [r for r in state.records if r.task_id == task_id and r.outcome.ran]


@pytest.fixture(scope="module")
def baseline_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The store a child leaves when nothing kills it, and the writes it made."""
    directory = tmp_path_factory.mktemp("baseline")
    writes = run_child(directory / "tasks.db", directory / "journal")
    return directory / "tasks.db", writes


@pytest.fixture(scope="module")
def baseline(baseline_file: tuple[Path, int]) -> tuple[State, int]:
    path, writes = baseline_file
    return read(path), writes


def test_the_baseline_meets_the_invariants_the_crashes_are_held_to(
    baseline: tuple[State, int],
) -> None:
    state, writes = baseline
    assert state.ids == list(NAMES)
    check_consistent(state)
    assert writes > 40  # enough moments to kill it at
    assert state.snapshots["once"].status is TaskStatus.SUCCEEDED
    assert state.snapshots["once-flaky"].status is TaskStatus.SUCCEEDED
    assert [(r.attempt, r.ok) for r in ran(state, "once-flaky")] == [(1, False), (2, True)]
    assert state.dead_letter == ["once-dead"]
    assert {r.outcome.value for r in ran(state, "slow")} == {"given_up"}
    assert all(r.timed_out for r in ran(state, "slow"))


def check_consistent(state: State, where: str = "") -> None:
    """What any store the scheduler wrote must say, crash or not."""
    duplicated = [key for key, n in Counter(state.keys).items() if n > 1]
    assert duplicated == [], f"{where}: records written twice: {duplicated}"
    assert len(set(state.ids)) == len(state.ids)
    for task_id, snapshot in state.snapshots.items():
        runs = ran(state, task_id)
        assert snapshot.run_count == len(runs), task_id
        assert snapshot.failure_count == sum(not r.ok for r in runs), task_id
    failed = [i for i in state.ids if state.snapshots[i].status is TaskStatus.FAILED]
    assert sorted(state.dead_letter) == sorted(failed)
    for task_id in state.dead_letter:  # dead after its last attempt, each attempt once
        assert [(r.attempt, r.ok) for r in ran(state, task_id)] == [(1, False), (2, False)]
    for task_id in ONE_OFFS:
        if task_id in state.snapshots and state.snapshots[task_id].status is TaskStatus.SUCCEEDED:
            assert [r.ok for r in ran(state, task_id)][-1:] == [True]


def kill_points(writes: int) -> list[int]:
    """The writes to kill at: every other registration, then every fourth, and the last;
    from the eighth on, every other one on the fly (negative: the child does not wait
    there, and is killed wherever the kill finds it)."""
    later = range(8, writes + 1, 4)
    return [1, 3, 5, 7, *(n if i % 2 else -n for i, n in enumerate(later)), writes]


def fresh(directory: Path) -> Callable[[int], tuple[Path, Path]]:
    """A new store and journal for the child killed at each write, in ``directory``."""

    def prepare(stop: int) -> tuple[Path, Path]:
        (directory / f"kill-{stop}").mkdir()
        return directory / f"kill-{stop}" / "tasks.db", directory / f"kill-{stop}" / "journal"

    return prepare


def copied(origin: Path, directory: Path) -> Callable[[int], tuple[Path, Path]]:
    """A copy of ``origin`` and a new journal for the child killed at each write."""
    made = fresh(directory)

    def prepare(stop: int) -> tuple[Path, Path]:
        path, journal = made(stop)
        shutil.copy(origin, path)
        return path, journal

    return prepare


def test_killed_between_any_two_writes_a_restart_loses_nothing_and_repeats_only_the_run_in_flight(
    tmp_path: Path, baseline: tuple[State, int]
) -> None:
    expected, writes = baseline
    with closing(killed_at(kill_points(writes), fresh(tmp_path))) as kills:
        for stop_at, path, journal, killed in kills:
            when = "at" if stop_at > 0 else "on the fly after"
            where = f"killed {when} write {abs(stop_at)} of {writes} (clock +{killed.now - T0:g} s)"

            assert integrity(path) == ["ok"], where
            before = read(path)  # opens: the dead process's claim is gone
            assert set(killed.registered) <= set(before.ids) <= set(NAMES), where
            check_consistent(before, where)
            in_flight = {i: s.attempt for i, s in before.snapshots.items() if s.running}
            child_runs = journal_of(journal)

            restart(path, journal, at=killed.now)
            after = read(path)
            assert integrity(path) == ["ok"], where
            assert after.ids == list(NAMES), where  # none lost, none added twice
            check_consistent(after, where)
            assert sorted(after.keys) == sorted(expected.keys), where  # every slot once, as ever
            assert after.dead_letter == expected.dead_letter, where
            for task_id, final in after.snapshots.items():
                reference = expected.snapshots[task_id]
                assert (final.status, final.attempt, final.next_run_at) == (
                    reference.status, reference.attempt, reference.next_run_at,
                ), f"{where}: {task_id}"  # fmt: skip

            # What ran twice: only what was in flight at the kill (the same attempt again)
            runs = journal_of(journal)
            parent = [(t, due, a) for t, due, a, pid in runs if pid == os.getpid()]
            twice = Counter(parent) & Counter((t, due, a) for t, due, a, _ in child_runs)
            assert {(t, a) for t, _, a in twice} <= set(in_flight.items()), where
            for task_id in ONE_OFFS:  # a one-off the store had as succeeded never runs again
                snapshot = before.snapshots.get(task_id)
                if snapshot is not None and snapshot.status is TaskStatus.SUCCEEDED:
                    assert task_id not in {t for t, _, _ in parent}, where
            for task_id, attempt in in_flight.items():  # it runs again, as the same attempt
                assert (task_id, attempt) in {(t, a) for t, _, a in parent}, f"{where}: {task_id}"


DOWN = 20 * 60.0  # the service is down 20 minutes after the horizon
BACK = UNTIL + DOWN


def test_killed_while_it_settles_the_slots_a_downtime_missed_a_restart_records_each_once(
    tmp_path: Path, baseline_file: tuple[Path, int]
) -> None:
    """The restart after a downtime writes the misfire decisions (RUN_ONCE's coalesced
    slots, RUN_ALL's catch-up runs, SKIP's missed slots) before anything runs: killed
    among those writes, the next start must not decide a slot twice."""
    origin, _ = baseline_file
    reference = tmp_path / "reference.db"
    shutil.copy(origin, reference)
    restart(reference, tmp_path / "journal", at=BACK, until=BACK + 300)
    expected = read(reference)
    check_consistent(expected)
    decided = Counter(r.outcome.value for r in expected.records if not r.outcome.ran)
    assert decided["coalesced"] > 10 and decided["missed"] > 10  # what a kill can cut into
    stops = list(range(1, 44, 3))  # the decisions' writes, then the first runs'
    prepare = copied(origin, tmp_path)
    with closing(killed_at(stops, prepare, start=BACK, until=BACK + 300)) as kills:
        for stop_at, path, journal, killed in kills:
            where = (
                f"killed at write {stop_at} after the downtime (clock at +{killed.now - BACK:g} s)"
            )
            assert integrity(path) == ["ok"], where
            check_consistent(read(path), where)
            restart(path, journal, at=killed.now, until=BACK + 300)
            after = read(path)
            check_consistent(after, where)
            assert sorted(after.keys) == sorted(expected.keys), where


# -- PostgreSQL: the same service on a PostgresTaskStore ------------------------------------


def test_killed_on_postgresql_a_restart_takes_over_what_was_in_flight_and_repeats_nothing_else(
    tmp_path: Path, postgres_server: PostgresServer, baseline: tuple[State, int]
) -> None:
    """A PostgreSQL store is always shared: a run in flight at the kill holds a lease
    (the begin writes nothing) and a run's settle is committed by the store's writer
    thread after ``save`` returned, so what runs again is every run whose lease the dead
    process held; it is taken over once the lease expires (docs/CLUSTER.md)."""
    expected, writes = baseline
    stops = [3, 7, -12, 20, -28, 36, -44, writes]
    dsns = {stop: postgres_server.create_schema() for stop in stops}

    def prepare(stop: int) -> tuple[str, Path]:
        return dsns[stop], tmp_path / f"journal-{stop}"

    with closing(killed_at(stops, prepare)) as kills:
        for stop_at, dsn, journal, killed in kills:
            where = f"killed at write {stop_at} on PostgreSQL (clock +{killed.now - T0:g} s)"
            with open_store(dsn) as store:
                leased = {lease.task_id for lease in store.leases()}
            wait_leases_expired(dsn, what=f"the leases ({where})")
            before = read(dsn)
            assert set(killed.registered) <= set(before.ids) <= set(NAMES), where
            child_runs = journal_of(journal)

            restart(dsn, journal, at=killed.now)
            after = read(dsn)
            assert after.ids == list(NAMES), where
            check_consistent(after, where)
            assert sorted(after.keys) == sorted(expected.keys), where
            assert after.dead_letter == expected.dead_letter, where
            runs = journal_of(journal)
            parent = [(t, due, a) for t, due, a, pid in runs if pid == os.getpid()]
            twice = Counter(parent) & Counter((t, due, a) for t, due, a, _ in child_runs)
            assert {t for t, _, _ in twice} <= leased, where
            for task_id in ONE_OFFS:
                snapshot = before.snapshots.get(task_id)
                if snapshot is not None and snapshot.status is TaskStatus.SUCCEEDED:
                    assert task_id not in {t for t, _, _ in parent}, where


# -- a run that skips slots: its record and theirs, one write ------------------------------

SKIPPING_UNTIL = T0 + crash_jobs.SKIPPING_HORIZON


def test_killed_after_a_run_that_skipped_slots_a_restart_on_sqlite_has_their_records(
    tmp_path: Path,
) -> None:
    """The run at +60 s finishes at +190 s, past its slots at +120 s and +180 s: its record
    and their SKIPPED records are written together.  Killed at any of the child's writes
    (the one that carries them included), the restart has every slot's record once; each
    record was written in a write of its own before, and a kill right after the run's
    left the two slots without one, for good (the task is due past them)."""
    (tmp_path / "kills").mkdir()
    kill_skipping(tmp_path / "reference.db", tmp_path, fresh(tmp_path / "kills"))


def test_killed_after_a_run_that_skipped_slots_a_restart_on_postgresql_has_their_records(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """The same on PostgreSQL: the run's settle and the skipped slots' records are one
    queued settle, one statement (``postgres/batch.py``)."""

    def prepare(stop: int) -> tuple[str, Path]:
        return postgres_server.create_schema(), tmp_path / f"journal-{stop}"

    kill_skipping(postgres_server.create_schema(), tmp_path, prepare)


def kill_skipping(
    reference: Where, tmp_path: Path, prepare: Callable[[int], tuple[Where, Path]]
) -> None:
    """Run the skipping service to its end on ``reference``, then kill a child at each of
    its writes on the stores ``prepare`` gives, restart it and compare the records."""
    shared = isinstance(reference, str)  # PostgreSQL: a dead child's leases expire first
    writes = end_child(
        start_child(reference, tmp_path / "reference-journal", stop_at=0, until=SKIPPING_UNTIL,
                    service="register_skipping")
    )  # fmt: skip
    assert isinstance(writes, int)
    expected = read(reference)
    assert [(r.slot - T0, r.outcome.value) for r in expected.records] == [
        (60, "ok"), (120, "skipped"), (180, "skipped"),
    ]  # fmt: skip
    stops = list(range(1, writes + 1))
    service = "register_skipping"
    with closing(killed_at(stops, prepare, until=SKIPPING_UNTIL, service=service)) as kills:
        for stop_at, where, journal, killed in kills:
            said = f"killed at write {stop_at} of {writes} on {where}"
            if shared:
                wait_leases_expired(str(where), what=said)
            restart(where, journal, at=killed.now, until=SKIPPING_UNTIL, service=service)
            after = read(where)
            check_consistent(after, said)
            assert sorted(after.keys) == sorted(expected.keys), said
