"""An SQLite store's write interrupted between its statements leaves no transaction open
and no write lock held: the next call writes, and so do the other processes.

An exception from outside SQLite (a signal handler's, a ``KeyboardInterrupt``) can be
raised between any two bytecodes of a write: just after its ``BEGIN IMMEDIATE``, before
the ``try`` that would roll it back, or inside that rollback; a shared store's, just
after it took the write gate, before the ``try`` that lets it go.  Before, the
connection stayed inside that transaction: every later write of the store ran as a
savepoint of it, answered and never committed, and SQLite's write lock kept every other
process from writing, for good; a gate left held failed every later write of the store
("taken twice").

A real signal cannot be made to land at one given bytecode, so the interruption is
raised at the sqlite3 seam (the store's connection is made by a ``sqlite3.connect``
whose connection raises once its ``BEGIN IMMEDIATE`` has run) or as the gate is taken;
the file, its locks and the other connections are real.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lldsched import FakeClock, FixedRate, Priority, Scheduler, StoreError, TaskStatus
from lldsched.storecalls import HoldNotCommitted
from lldsched.stores import codec
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.stores.sqlite.gate import WriteGate
from tests import jobs
from tests.conftest import T0
from tests.test_cluster_verb_hold import status
from tests.test_store_sqlite import record, snapshot, task


class Interrupting(sqlite3.Connection):
    """Raises ``KeyboardInterrupt`` once a ``BEGIN IMMEDIATE`` it ran returns, while
    ``armed``; and has SQLite fail its next ``rollbacks_failing`` ``ROLLBACK`` statements
    for real (a progress handler interrupts each before it ends the transaction:
    "interrupted", the transaction still open and the file's write lock held)."""

    armed = False
    rollbacks_failing = 0

    def execute(self, sql: str, *parameters: Any) -> sqlite3.Cursor:
        if sql == "ROLLBACK" and Interrupting.rollbacks_failing:
            Interrupting.rollbacks_failing -= 1
            self.set_progress_handler(lambda: 1, 1)
            try:
                return super().execute(sql, *parameters)
            finally:
                self.set_progress_handler(None, 1)
        cursor = super().execute(sql, *parameters)
        if sql == "BEGIN IMMEDIATE" and Interrupting.armed:
            Interrupting.armed = False
            raise KeyboardInterrupt
        return cursor


@pytest.fixture
def interrupting(monkeypatch: pytest.MonkeyPatch) -> type[Interrupting]:
    connect = sqlite3.connect
    monkeypatch.setattr(Interrupting, "armed", False)
    monkeypatch.setattr(Interrupting, "rollbacks_failing", 0)
    monkeypatch.setattr(
        sqlite3, "connect", lambda *args, **kwargs: connect(*args, factory=Interrupting, **kwargs)
    )
    return Interrupting


def writable(path: Path) -> bool:
    """Whether another connection can take the file's write lock now."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        other.close()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_writes_after_one_interrupted_after_its_begin_are_committed(
    tmp_path: Path, interrupting: type[Interrupting], shared: bool
) -> None:
    """Before, the writes after it were savepoints of its transaction, never committed,
    and the file's write lock was held until the store was closed."""
    path = tmp_path / "store.db"
    with SqliteTaskStore(path, shared=shared) as store:
        store.save(snapshot(task(id="a")))
        interrupting.armed = True
        with pytest.raises(KeyboardInterrupt):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED), record("a", 0))
        assert writable(path)
        store.save(snapshot(task(id="b")))
        store.save(snapshot(task(id="a"), TaskStatus.PAUSED), record("a", 1))
    with SqliteTaskStore(path, shared=shared) as again:  # what the file holds
        row = again.get("a")
        assert row is not None and row.status is TaskStatus.PAUSED
        assert again.get("b") is not None
        assert [r.attempt for r in again.records("a")] == [1]  # the interrupted one undone


def test_a_shared_write_interrupted_once_it_took_the_gate_lets_it_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the gate stayed held: every later write of the store failed ("taken
    twice"), and the other processes' writes waited for it."""
    path = tmp_path / "store.db"
    acquire = WriteGate.acquire
    armed = [True]

    def taking(gate: WriteGate) -> float:
        left = acquire(gate)
        if armed:
            armed.clear()
            raise KeyboardInterrupt
        return left

    with SqliteTaskStore(path, shared=True) as store, SqliteTaskStore(path, shared=True) as other:
        store.save(snapshot(task(id="a")))
        monkeypatch.setattr(WriteGate, "acquire", taking)
        with pytest.raises(KeyboardInterrupt):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
        other.save(snapshot(task(id="b")))
        store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
        row = other.get("a")
        assert row is not None and row.status is TaskStatus.PAUSED


def stored(path: Path, task_id: str) -> bool:
    """Whether the file holds ``task_id``'s row, read by a connection of its own."""
    other = sqlite3.connect(path)
    try:
        return other.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone() is not None
    finally:
        other.close()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_clean_up_rollback_that_failed_once_is_tried_again_at_once(
    tmp_path: Path, interrupting: type[Interrupting], shared: bool
) -> None:
    """Before, the ROLLBACK that let go of the interrupted write's transaction was tried
    again only as the next call ended: meanwhile the file's write lock kept every other
    process from writing, and the next call's write ran inside that transaction, was
    answered, and was rolled back with it (a save said stored, and lost)."""
    path = tmp_path / "store.db"
    with SqliteTaskStore(path, shared=shared) as store:
        store.save(snapshot(task(id="a")))
        interrupting.armed = True
        interrupting.rollbacks_failing = 1
        with pytest.raises(KeyboardInterrupt):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED), record("a", 0))
        assert writable(path)
        store.save(snapshot(task(id="b")))
        assert stored(path, "b")


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_call_after_a_transaction_left_open_is_refused_not_lost(
    tmp_path: Path, interrupting: type[Interrupting], shared: bool
) -> None:
    """The ROLLBACK fails again and again: the next call tries it first, and is refused
    with a StoreError naming why while the transaction stays open (a failed write, which
    the runtime writes again).  Before, the call's save was answered and lost."""
    path = tmp_path / "store.db"
    with SqliteTaskStore(path, shared=shared) as store:
        store.save(snapshot(task(id="a")))
        interrupting.armed = True
        interrupting.rollbacks_failing = 4  # two as the interrupted call ends, two at the next
        with pytest.raises(KeyboardInterrupt):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED), record("a", 0))
        assert not writable(path)  # SQLite's lock, its transaction still open
        with pytest.raises(StoreError, match=r"could not be rolled back.*interrupted"):
            store.save(snapshot(task(id="b")))
        assert not stored(path, "b")
        store.save(snapshot(task(id="b")))  # its ROLLBACK got through first
        assert stored(path, "b") and writable(path)
    with SqliteTaskStore(path, shared=shared) as again:
        assert [r.attempt for r in again.records("a")] == []  # the interrupted one undone


def moved_job() -> None:
    """A job renamed in a release that keeps its old name, :data:`old_job`, as an alias."""


old_job = moved_job  # the old name, kept for one release


def _stored_action(path: Path, task_id: str) -> str:
    """The callable ``task_id``'s row names, read by a connection of its own."""
    other = sqlite3.connect(path)
    try:
        (definition,) = other.execute(
            "SELECT definition FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
    finally:
        other.close()
    action: str = json.loads(definition)["action"]
    return action


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
@pytest.mark.parametrize("failing", [2, 4], ids=["rolled-back-first", "still-open"])
def test_load_alls_rewrite_of_a_renamed_callable_rolls_back_what_is_left_open_first(
    tmp_path: Path,
    interrupting: type[Interrupting],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    shared: bool,
    failing: int,
) -> None:
    """Between ``load_all``'s read and its rewrite of a definition naming its callable
    by an alias, another call's write is interrupted and its ROLLBACK fails (twice, as
    that call ends: the transaction is left open).  The rewrite, as every call, rolls
    it back first (then stores the callable's own path, the file's write lock let go),
    or, the ROLLBACK failing again, is refused and said (a WARNING; the row keeps the
    alias, which still imports).  Before, the rewrite skipped that step: it ran as a
    savepoint of the transaction left open, said nothing, and was rolled back with it;
    the write lock stayed held past ``load_all``."""
    path = tmp_path / "store.db"
    module = moved_job.__module__
    with SqliteTaskStore(path, shared=shared) as store:
        store.save(snapshot(task(action=moved_job, id="a")))
    other = sqlite3.connect(path)
    with other:
        other.execute(
            "UPDATE tasks SET definition = replace(definition, ?, ?) WHERE id = 'a'",
            (f'"{module}:moved_job"', f'"{module}:old_job"'),
        )
    other.close()
    assert _stored_action(path, "a") == f"{module}:old_job"
    with SqliteTaskStore(path, shared=shared) as store:
        rename = codec.renamed

        def interrupted_first(*args: Any, **kwargs: Any) -> Any:
            interrupting.armed = True
            interrupting.rollbacks_failing = failing
            with pytest.raises(KeyboardInterrupt):
                store.save(snapshot(task(id="b")), record("b", 0))
            assert not writable(path)  # its transaction left open
            return rename(*args, **kwargs)

        monkeypatch.setattr("lldsched.stores.sqlite.reads.renamed", interrupted_first)
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            loaded = store.load_all()
        assert [s.task.id for s in loaded] == ["a"] and loaded[0].task.action is moved_job
        refused = [m for m in caplog.messages if "cannot store the moved callables" in m]
        if failing == 2:
            assert refused == []
            assert writable(path) and _stored_action(path, "a") == f"{module}:moved_job"
        else:
            (said,) = refused
            assert "could not be rolled back" in said
            assert _stored_action(path, "a") == f"{module}:old_job"  # the alias still imports
            assert store.get("a") is not None  # its ROLLBACK got through first
            assert writable(path)
        assert not stored(path, "b")  # the interrupted write undone


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_out_of_a_verbs_hold_whose_end_failed_reaches_the_user(
    tmp_path: Path, interrupt: type[BaseException]
) -> None:
    """A store used directly, no runtime: a ``KeyboardInterrupt`` (an exit) leaves a verb's
    hold whose transaction is gone (rolled back under it: here by a statement on its
    connection, as SQLite does on a full disk), and the hold's end fails.  Before, the
    hold raised ``HoldNotCommitted`` in its place (the interrupt only in its chain); now
    the interrupt is raised, the ``HoldNotCommitted`` its ``__context__``."""
    with SqliteTaskStore(tmp_path / "store.db", shared=True) as store:
        store.save(snapshot(task(id="a")))
        connection = store._connection
        assert connection is not None
        with pytest.raises(interrupt) as raised, store.verb_held("a"):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
            connection.execute("ROLLBACK")
            raise interrupt
        ended = raised.value.__context__
        assert isinstance(ended, HoldNotCommitted) and list(ended.written) == ["a"]
        row = store.get("a")
        assert row is not None and row.status is TaskStatus.SCHEDULED  # nothing of the hold


def pausing_r(store: SqliteTaskStore) -> tuple[Scheduler, SqliteTaskStore]:
    """A scheduler on ``store`` (not started: the test acts) with two tasks, ``r``, which
    the test pauses, and ``x``, and another process's store on the same file."""
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    other = SqliteTaskStore(store.path, shared=True)
    scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
    scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
    return scheduler, other


class InterruptedAtItsEnd(SqliteTaskStore):
    """A shared SQLite store whose verb's hold, once ``armed``, is cut by a
    ``KeyboardInterrupt`` as the verb's block ends inside it (a real SIGINT lands at any
    bytecode), its transaction rolled back under it before (as a full disk does)."""

    armed = False

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        with super().verb_held(task_id, also):
            yield
            if self.armed:
                self.armed = False
                assert self._connection is not None
                self._connection.execute("ROLLBACK")
                raise KeyboardInterrupt


def test_a_ctrl_c_in_a_runtimes_hold_whose_end_failed_reaches_the_user(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The runtime's side of the rule above, the Ctrl-C landing in the hold's own code as
    the verb's block ends: ``pause()`` raises it, the verb whole (the scheduler takes the
    next verb), and the row its hold wrote (said written, rolled back with the hold) is
    a failed write, written again at the next store call that succeeds, the runtime
    reading it from the ``HoldNotCommitted`` under the interrupt.  Before, the hold
    raised ``HoldNotCommitted`` in the Ctrl-C's place, which the runtime took for a
    failed end alone: ``pause()`` returned, the Ctrl-C lost."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")  # the outage is said at ERROR
    store = InterruptedAtItsEnd(tmp_path / "tasks.db", shared=True)
    scheduler, other = pausing_r(store)
    try:
        store.armed = True
        with pytest.raises(KeyboardInterrupt):
            scheduler.pause("r")
        assert scheduler.task("r").status is TaskStatus.PAUSED
        assert status(other, "r") is TaskStatus.SCHEDULED  # rolled back with the hold
        scheduler.modify("x", priority=Priority.HIGH)  # a store call that succeeds
        assert status(other, "r") is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()
        other.close()
        store.close()


class CommitInterrupted(sqlite3.Connection):
    """Raises ``KeyboardInterrupt`` from its next ``COMMIT``, once ``armed``: before the
    statement runs (``made`` False: the transaction still open, as after a COMMIT that
    SQLite failed and a signal's exception that replaced its error) or once it ran
    (``made`` True: committed, the exception raised as the call returns, where a real
    SIGINT that arrived during it is raised: the store cannot tell it from the first)."""

    armed = False
    made = False

    def execute(self, sql: str, *parameters: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and CommitInterrupted.armed:
            CommitInterrupted.armed = False
            if CommitInterrupted.made:
                super().execute(sql, *parameters)
            raise KeyboardInterrupt
        return super().execute(sql, *parameters)


@pytest.fixture
def commit_interrupted(monkeypatch: pytest.MonkeyPatch) -> type[CommitInterrupted]:
    connect = sqlite3.connect
    monkeypatch.setattr(CommitInterrupted, "armed", False)
    monkeypatch.setattr(CommitInterrupted, "made", False)
    monkeypatch.setattr(
        sqlite3,
        "connect",
        lambda *args, **kwargs: connect(*args, factory=CommitInterrupted, **kwargs),
    )
    return CommitInterrupted


@pytest.mark.parametrize("where", ["before-it-ran", "once-it-ran", "as-the-gate-is-let-go"])
def test_a_ctrl_c_in_a_verbs_commit_leaves_the_verb_whole_and_its_row_stored(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    commit_interrupted: type[CommitInterrupted],
    caplog: pytest.LogCaptureFixture,
    where: str,
) -> None:
    """A Ctrl-C in the COMMIT of ``pause()``'s hold (or just after it, as the hold lets
    the write gate go): ``pause()`` raises it, the task paused in the registry, and the
    scheduler takes the next verb; the row is paused in the file once a store call
    succeeds (the hold's rows written again, as after a failed COMMIT:
    ``HoldNotCommitted``; or stored by the COMMIT), and a scheduler built again on the
    file has the task paused.  Before, the hold raised the Ctrl-C alone: its caches not
    put back and its rows not written again (a COMMIT not made lost the pause for good,
    the next restart gave the task back scheduled), and the runtime took the verb for
    one the Ctrl-C cut in the middle, refusing every later verb."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")  # the outage is said at ERROR
    commit_interrupted.made = where == "once-it-ran"
    release = WriteGate.release
    gate_armed: list[bool] = []

    def letting_go(gate: WriteGate) -> None:
        release(gate)
        if gate_armed:  # the hold's, its COMMIT made
            gate_armed.clear()
            raise KeyboardInterrupt

    monkeypatch.setattr(WriteGate, "release", letting_go)
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path, shared=True)
    scheduler, other = pausing_r(store)
    try:
        if where == "as-the-gate-is-let-go":
            gate_armed.append(True)
        else:
            commit_interrupted.armed = True
        with pytest.raises(KeyboardInterrupt):
            scheduler.pause("r")
        assert scheduler.task("r").status is TaskStatus.PAUSED
        assert writable(path)  # the hold's transaction let go
        scheduler.modify("x", priority=Priority.HIGH)  # the next verb, a store call
        assert status(other, "r") is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()
        other.close()
        store.close()
    with SqliteTaskStore(path, shared=True) as restarted:
        again = Scheduler(store=restarted, clock=FakeClock(T0))
        try:
            assert again.task("r").status is TaskStatus.PAUSED
        finally:
            again.shutdown()


def test_a_ctrl_c_in_a_holds_commit_is_raised_over_its_hold_not_committed(
    tmp_path: Path, commit_interrupted: type[CommitInterrupted]
) -> None:
    """A store used directly, no runtime: a ``KeyboardInterrupt`` out of the hold's COMMIT
    before it ran is raised, the ``HoldNotCommitted`` naming the hold's writes its
    ``__context__``, the hold's transaction and the file's write lock let go, nothing of
    it stored.  Before, the interrupt was raised alone."""
    path = tmp_path / "store.db"
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task(id="a")))
        with pytest.raises(KeyboardInterrupt) as raised, store.verb_held("a"):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
            commit_interrupted.armed = True
        ended = raised.value.__context__
        assert isinstance(ended, HoldNotCommitted) and list(ended.written) == ["a"]
        assert "was cut by KeyboardInterrupt as it ended it" in str(ended)
        assert writable(path)
        row = store.get("a")
        assert row is not None and row.status is TaskStatus.SCHEDULED  # nothing of the hold


@pytest.mark.parametrize("made", [False, True], ids=["before-it-ran", "once-it-ran"])
def test_a_hold_whose_commit_a_ctrl_c_cut_says_its_writes_may_be_stored(
    tmp_path: Path, commit_interrupted: type[CommitInterrupted], made: bool
) -> None:
    """The store cannot tell a Ctrl-C raised before the hold's COMMIT ran from one raised
    as it returned, made: its ``HoldNotCommitted`` says the writes may or may not be
    stored, and each time the file shows why it must.  Before, it said "none of its
    writes is stored" though, once the COMMIT ran, the row was paused in the file."""
    path = tmp_path / "store.db"
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task(id="a")))
        commit_interrupted.made = made
        with pytest.raises(KeyboardInterrupt) as raised, store.verb_held("a"):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
            commit_interrupted.armed = True
        ended = raised.value.__context__
        assert isinstance(ended, HoldNotCommitted)
        assert str(ended) == (
            "a verb's hold may not have been committed, whether its writes are stored is "
            f"not known ('a'): the SQLite store {str(path)!r} was cut by KeyboardInterrupt "
            "as it ended it, before its COMMIT was known to be made (taken as not made: a "
            "row written again is written only where no newer one is stored)"
        )
    with SqliteTaskStore(path, shared=True) as reopened:
        row = reopened.get("a")
        assert row is not None
        assert row.status is (TaskStatus.PAUSED if made else TaskStatus.SCHEDULED)
