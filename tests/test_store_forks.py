"""A store opened before a fork is refused in the child (lldsched/stores/forks.py): the
child would share its connection, its node id and, unshared, its claim on the file."""

from __future__ import annotations

import ast
import gc
import logging
import os
import sqlite3
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lldsched import InMemoryTaskStore, OneTime, Scheduler, SqliteTaskStore
from lldsched.errors import StoreError
from lldsched.model import Outcome, TaskStatus
from lldsched.persistence import TaskStore
from lldsched.stores.sqlite import forks as sqlite_forks
from tests import jobs
from tests.cluster import StoreSpec, open_store
from tests.conftest import T0
from tests.forking import held_by_another_thread, in_child
from tests.processes import parent_of_a_helper
from tests.test_store_sqlite import record, snapshot, task


def _refused_in_child_and_fine_here(store: TaskStore) -> None:
    Scheduler(store=store).schedule("job", jobs.noop, OneTime(2_000_000_000.0), id="job")
    outcome = in_child(lambda: Scheduler(store=store))
    assert outcome.startswith("StoreError: the store ")
    assert f"was opened in process {os.getpid()}" in outcome
    assert "Open the store in each process after the fork" in outcome
    assert [snapshot.task.id for snapshot in store.load_all()] == ["job"]  # parent unharmed


def test_an_unshared_store_opened_before_a_fork_is_refused_in_the_child(tmp_path: Path) -> None:
    """The child inherits the flock: without the refusal two schedulers hold the file."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        _refused_in_child_and_fine_here(store)


def test_a_shared_store_opened_before_a_fork_is_refused_in_the_child(
    store_spec: StoreSpec,
) -> None:
    store = open_store(store_spec)
    try:
        _refused_in_child_and_fine_here(store)
        assert in_child(lambda: store.claim(now=0.0, limit=1)).startswith("StoreError")
    finally:
        store.close()


def test_a_private_in_memory_store_is_the_childs_own_copy() -> None:
    with SqliteTaskStore(":memory:") as store:
        assert in_child(store.load_all) == "[]"  # read, not refused


def test_the_process_id_kept_for_the_check_is_the_childs_after_a_fork() -> None:
    from lldsched.stores import forks

    def same() -> None:
        assert forks.current[0] == os.getpid(), forks.current

    same()
    assert in_child(same) == "None"


def test_a_store_a_running_scheduler_held_at_the_fork_is_refused_for_the_fork_alone(
    tmp_path: Path,
) -> None:
    """In the child the parent's scheduler runs nothing, so its hold on the store is not
    inherited (lldsched/core/store/use.py): the refusal is the fork's, which says what
    to do, not one naming a scheduler that is not running there."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        running = Scheduler(store=store, name="parent").start()
        try:
            outcome = in_child(lambda: Scheduler(store=store))
        finally:
            assert running.shutdown()
    assert outcome.startswith("StoreError: the store "), outcome
    assert "Open the store in each process after the fork" in outcome


def held_elsewhere(store: SqliteTaskStore) -> bool:
    """Whether another thread holds ``store``'s lock (a call of it under way there)."""
    if store._lock.acquire(blocking=False):
        store._lock.release()
        return False
    return True


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.usefixtures("outlasting_the_fork_wait")
def test_a_store_closed_in_a_child_forked_mid_write_returns_and_leaves_the_parents_alone(
    tmp_path: Path, shared: bool
) -> None:
    """A child forked while another thread of the parent was inside a store call (here a
    save waiting for SQLite's lock, which another connection holds) copies the store's
    lock held, with no thread to let it go: its ``close()`` (a gunicorn ``worker_exit``
    closing a store opened at import, an ``atexit`` hook) hung for good.  It now lets go
    of the child's copies alone, neither the lock nor the connection (whose close could
    meet SQLite's own lock held, or write to the ``-shm`` it shares with the parent)."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=shared, timeout=60) as store:
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        saving = threading.Thread(target=store.save, args=(snapshot(task(id="kept")),))
        saving.start()
        try:
            deadline = time.monotonic() + 20
            while not held_elsewhere(store) and time.monotonic() < deadline:
                time.sleep(0.005)  # until the save holds the store's lock (bounded)
            assert held_elsewhere(store)
            assert in_child(store.close, bound=10) == "None"  # not "hung"
        finally:
            blocker.execute("COMMIT")
            blocker.close()
            saving.join(20)
        assert [s.task.id for s in store.load_all()] == ["kept"]  # the parent's save landed


# A shared store's holder whose save waits for SQLite (another connection of its own holds
# an EXCLUSIVE transaction) while it holds the store's write gate; then it forks a helper
# (tests.processes.parent_of_a_helper).
GATE_HOLDER = """
import ast
import gc
import os
import sqlite3
import sys
import threading
import time
from lldsched import SqliteTaskStore
from lldsched.stores.sqlite import forks as sqlite_forks
from tests.test_store_sqlite import snapshot, task

sqlite_forks.FORK_WAIT = 0.0  # the save below outlasts the fork's wait
path = sys.argv[1]
store = SqliteTaskStore(path, shared=True, timeout=60)
blocker = sqlite3.connect(path, isolation_level=None)
blocker.execute("BEGIN EXCLUSIVE")
threading.Thread(target=store.save, args=(snapshot(task(id="a")),), daemon=True).start()
deadline = time.monotonic() + 20
while store._gate._holder is None and time.monotonic() < deadline:
    time.sleep(0.005)  # until the save holds the gate (bounded)
assert store._gate._holder is not None
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_a_child_forked_mid_write_does_not_keep_the_write_gate_once_its_parent_died(
    tmp_path: Path,
) -> None:
    """Before, the helper kept the gate its parent held at the fork: every other process's
    write failed on it (WriteLockTimeout) for as long as the helper lived."""
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path, shared=True).close()  # created: the holder only opens it
    with parent_of_a_helper(GATE_HOLDER, str(path)) as (holder, helper):
        holder.kill()
        holder.wait(20)
        os.kill(helper, 0)  # the helper still lives...
        with SqliteTaskStore(path, shared=True, timeout=3) as store:
            store.save(snapshot(task(id="b")))  # ...and the gate went with its parent
            assert [s.task.id for s in store.load_all()] == ["b"]  # the holder's never landed


@pytest.fixture
def store_of_one_task(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[SqliteTaskStore]:
    """A file store holding the task ``job``, shared if the test's parameter says so."""
    with SqliteTaskStore(tmp_path / "tasks.db", shared=request.param) as store:
        store.save(snapshot(task(id="job")))
        yield store


@pytest.fixture
def outlasting_the_fork_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork waits for no call under way on a file store: each call the test holds across
    a fork stands for one that outlasts the wait (lldsched/stores/sqlite/forks.py)."""
    monkeypatch.setattr(sqlite_forks, "FORK_WAIT", 0.0)


@pytest.fixture
def lock_held(
    store_of_one_task: SqliteTaskStore, outlasting_the_fork_wait: None
) -> Iterator[Callable[[], None]]:
    """Another thread holds the store's lock (a call of it under way there, outlasting the
    fork's wait) until the test calls what this gives, or ends."""
    with held_by_another_thread(store_of_one_task._lock) as let_go:
        yield let_go


def _refused_as_the_forks(outcome: str) -> None:
    assert outcome.startswith("StoreError: the store "), outcome  # not "hung"
    assert f"was opened in process {os.getpid()}" in outcome
    assert "Open the store in each process after the fork" in outcome


Private = InMemoryTaskStore | SqliteTaskStore  # a store whose data is the process's memory

PRIVATE_VERBS: dict[str, Callable[[Private], object]] = {  # the calls both kinds have
    "load_all": lambda store: store.load_all(),
    "get": lambda store: store.get("job"),
    "records": lambda store: store.records("job"),
    "dead_letter": lambda store: store.dead_letter(),
    "len": len,
    "save": lambda store: store.save(snapshot(task(id="b"))),
    "save with a record": lambda store: store.save(snapshot(task(id="b")), record("b", 0)),
    "delete": lambda store: store.delete("job"),
}
VERBS: dict[str, Callable[[SqliteTaskStore], object]] = {
    **PRIVATE_VERBS,
    "save_all": lambda store: store.save_all(snapshot(task(id="b")), [record("b", 0)]),
    "resave": lambda store: store.resave(snapshot(task(id="job"))),
    "purge": lambda store: store.purge("job"),
}
SHARED_VERBS: dict[str, Callable[[SqliteTaskStore], object]] = {
    "claim": lambda store: store.claim(now=T0 + 1e9, limit=1),
    "renew": lambda store: store.renew(tokens={1}, now=T0),
    "release": lambda store: store.release(task_id="job", token=1),
    "settle": lambda store: store.save(
        snapshot(task(id="job")), record("job", 0)._replace(token=1)
    ),
    "skipped slot": lambda store: store.save(
        snapshot(task(id="job")), record("job", 0)._replace(token=1, misfire=Outcome.SKIPPED)
    ),
    "changes": lambda store: store.changes(),
    "changed": lambda store: store.changed(),
    "unloaded": lambda store: store.unloaded(),
    "muted": lambda store: store.muted().__enter__(),
    "verb_held": lambda store: store.verb_held("job").__enter__(),
    "leases": lambda store: store.leases(),
    "owe": lambda store: store.owe(snapshot(task(id="job"))),
    "take_over": lambda store: store.take_over(task(id="job")),
    "subscribe": lambda store: store.subscribe(lambda: None),
    "flush": lambda store: store.flush(),
}


@pytest.mark.parametrize(
    ("store_of_one_task", "verb"),
    [(False, verb) for verb in VERBS] + [(True, verb) for verb in [*VERBS, *SHARED_VERBS]],
    indirect=["store_of_one_task"],
    ids=[f"unshared-{verb}" for verb in VERBS]
    + [f"shared-{verb}" for verb in [*VERBS, *SHARED_VERBS]],
)
def test_every_call_in_a_child_forked_while_the_lock_was_held_is_refused_saying_so(
    store_of_one_task: SqliteTaskStore, lock_held: Callable[[], None], verb: str
) -> None:
    """Refused before the store's lock is waited for: a thread of the parent inside a store
    call at the fork (a save, a claim) leaves the child's copy of the lock held, with no
    thread to let it go.  Before, every call but ``close()`` waited for it for good (a
    gunicorn worker forked under ``--preload`` while the scheduler saved), but
    ``subscribe`` and ``flush``, which take no lock and were not refused at all; the
    StoreError now says what happened and to open the store after the fork."""
    use = VERBS.get(verb) or SHARED_VERBS[verb]
    _refused_as_the_forks(in_child(lambda: use(store_of_one_task), bound=10))


@pytest.mark.parametrize(
    "store_of_one_task", [False, True], indirect=True, ids=["unshared", "shared"]
)
def test_close_in_a_child_forked_while_the_lock_was_held_returns_and_leaves_the_parent_alone(
    store_of_one_task: SqliteTaskStore, lock_held: Callable[[], None]
) -> None:
    """``close()`` lets go of the child's copies alone (:meth:`SqliteTaskStore.
    _let_go_in_child`): it returns, every call after it is still the fork's refusal (not
    "closed": the parent's store is open), and the parent's lock, connection, claim and
    write gate are untouched: its call held at the fork ends, and it goes on."""
    store = store_of_one_task

    def close_then_load() -> object:
        store.close()
        assert store.closed
        return store.load_all()

    _refused_as_the_forks(in_child(close_then_load, bound=10))
    lock_held()  # the parent's call ends
    assert not store.closed
    store.save(snapshot(task(id="after")))
    assert [s.task.id for s in store.load_all()] == ["job", "after"]


# -- a private store (its data in the process's memory: the child's own copy) ---------------

PRIVATE_STORES: dict[str, Callable[[], Private]] = {
    "sqlite-memory": lambda: SqliteTaskStore(":memory:"),
    "in-memory": InMemoryTaskStore,
}
SQLITE_VERBS = [verb for verb in VERBS if verb not in PRIVATE_VERBS]  # not the memory store's


@pytest.fixture
def private_store(request: pytest.FixtureRequest) -> Iterator[Private]:
    """A private store of the test's parameter's kind, holding the task ``job``."""
    store = PRIVATE_STORES[request.param]()
    store.save(snapshot(task(id="job")))
    yield store
    store.close()


def _refused_as_torn(outcome: str) -> None:
    assert outcome.startswith("StoreError: the store "), outcome  # not "hung"
    assert f"was inside a call in another thread of process {os.getpid()}" in outcome
    assert "may be half-written" in outcome
    assert "Open the store in each process after the fork" in outcome


@pytest.mark.parametrize(
    ("private_store", "verb"),
    [(kind, verb) for kind in PRIVATE_STORES for verb in PRIVATE_VERBS]
    + [("sqlite-memory", verb) for verb in SQLITE_VERBS],
    indirect=["private_store"],
    ids=[f"{kind}-{verb}" for kind in PRIVATE_STORES for verb in PRIVATE_VERBS]
    + [f"sqlite-memory-{verb}" for verb in SQLITE_VERBS],
)
def test_every_call_of_a_private_store_torn_at_the_fork_is_refused_saying_so(
    private_store: Private, verb: str
) -> None:
    """A private store is the child's own copy, but not one forked while another thread of
    the parent was inside a call of it (a running scheduler saving as gunicorn forks its
    workers under ``--preload``): the child's copy of its lock is held for good, with no
    thread there to let it go, and what that call was writing may be half-written.  Before,
    every call in the child, reads included, waited for that lock for good; it is now the
    StoreError saying what happened and to open the store after the fork."""
    store = private_store

    def use() -> object:
        if verb in SQLITE_VERBS:
            assert isinstance(store, SqliteTaskStore)
            return VERBS[verb](store)
        return PRIVATE_VERBS[verb](store)

    with held_by_another_thread(store._lock):
        outcome = in_child(use, bound=10)
    _refused_as_torn(outcome)


@pytest.mark.parametrize("private_store", list(PRIVATE_STORES), indirect=True)
def test_close_of_a_private_store_torn_at_the_fork_returns_and_every_call_after_is_refused(
    private_store: Private,
) -> None:
    """``close()`` in the child (a ``worker_exit`` or ``atexit`` hook) returns, and waits for
    nothing of the parent's; the parent's store goes on once its call ends."""
    store = private_store

    def close_then_load() -> object:
        store.close()
        assert store.closed
        return store.load_all()

    with held_by_another_thread(store._lock) as let_go:
        outcome = in_child(close_then_load, bound=10)
        let_go()  # the parent's call ends
    _refused_as_torn(outcome)
    assert not store.closed
    store.save(snapshot(task(id="after")))
    assert [s.task.id for s in store.load_all()] == ["job", "after"]


@pytest.mark.parametrize("private_store", list(PRIVATE_STORES), indirect=True)
def test_a_private_store_no_call_held_at_the_fork_is_still_the_childs_own_copy(
    private_store: Private,
) -> None:
    """Held by another thread before the fork, and let go: the child reads and writes its
    copy (the parent's is untouched), and closes it."""
    store = private_store
    with held_by_another_thread(store._lock):
        pass  # a call before the fork, ended

    def use() -> object:
        store.save(snapshot(task(id="child")))
        ids = [s.task.id for s in store.load_all()]
        store.close()
        return ids

    assert in_child(use, bound=10) == "['job', 'child']"
    assert [s.task.id for s in store.load_all()] == ["job"]


def test_a_private_sqlite_store_the_forking_thread_was_inside_is_its_copy_still() -> None:
    """The thread that forks goes on in the child: a call of its own under way at the fork
    (the store's lock re-entered by that thread) ends there, and the copy is whole."""
    with SqliteTaskStore(":memory:") as store:
        store.save(snapshot(task(id="job")))
        with store._lock:  # this thread inside a call of the store as it forks
            outcome = in_child(lambda: [s.task.id for s in store.load_all()], bound=10)
    assert outcome == "['job']"


def test_of_many_private_stores_only_those_held_at_the_fork_are_refused_in_the_child() -> None:
    """The fork hook tries every private store alive, and keeps none alive itself."""
    held, free = InMemoryTaskStore(), SqliteTaskStore(":memory:")
    with pytest.warns(ResourceWarning, match=r"unclosed SqliteTaskStore\(':memory:', open\)"):
        gone = weakref.ref(SqliteTaskStore(":memory:"))  # dropped unclosed, on purpose
        gc.collect()
    assert gone() is None  # collected: noting it for the fork kept nothing alive

    def use() -> object:
        with pytest.raises(StoreError, match="was inside a call in another thread"):
            held.load_all()
        return free.load_all()

    with held_by_another_thread(held._lock):
        assert in_child(use, bound=10) == "[]"
    free.close()


def test_a_private_store_torn_at_a_fork_is_refused_in_a_child_forked_from_that_child() -> None:
    store = InMemoryTaskStore()
    with held_by_another_thread(store._lock):
        outcome = in_child(lambda: in_child(store.load_all, bound=10), bound=20)
    _refused_as_torn(ast.literal_eval(outcome))  # the grandchild's word, as the child's repr


UWSGI_FORKS = {"master": True, "processes": b"2"}  # uWSGI 2.0.31 at import in its master


def under_uwsgi(
    monkeypatch: pytest.MonkeyPatch, opt: dict[str, object], *, worker_id: int = 0, numproc: int = 2
) -> None:
    """A ``uwsgi`` module as uWSGI's Python plugin provides it (no real uWSGI needed)."""
    uwsgi = types.ModuleType("uwsgi")
    uwsgi.worker_id = lambda: worker_id  # type: ignore[attr-defined]
    uwsgi.opt = opt  # type: ignore[attr-defined]
    uwsgi.numproc = numproc  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "uwsgi", uwsgi)


def uwsgi_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "uWSGI" in r.getMessage()]


def test_a_shared_store_opened_in_uwsgis_master_without_fork_hooks_is_warned_of(
    store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """uWSGI forks its workers without Python's fork hooks (unless py-call-osafterfork is
    set): the refusal above never happens there, and every worker used the master's
    connection (or file claim and write gate) at once, without a word.  Said once, as it
    is opened, naming both settings that answer it."""
    under_uwsgi(monkeypatch, UWSGI_FORKS)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        store = open_store(store_spec)
        store.close()
    (line,) = uwsgi_warnings(caplog)
    assert line.startswith("the store ") and "is opened in uWSGI's master" in line
    assert "lazy-apps = true" in line and "py-call-osafterfork = true" in line


def test_an_unshared_sqlite_file_opened_in_uwsgis_master_is_warned_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    under_uwsgi(monkeypatch, UWSGI_FORKS)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        SqliteTaskStore(tmp_path / "tasks.db").close()
    (line,) = uwsgi_warnings(caplog)
    assert line.startswith(f"the store {str(tmp_path / 'tasks.db')!r} is opened in uWSGI's")


@pytest.mark.parametrize(
    ("opt", "worker_id", "numproc"),
    [
        ({**UWSGI_FORKS, "py-call-osafterfork": True}, 0, 2),  # the hooks run: refused there
        ({**UWSGI_FORKS, "lazy-apps": True}, 1, 2),  # opened in each worker
        ({"processes": b"1"}, 0, 1),  # one process and no master: no fork
    ],
)
def test_a_store_opened_where_uwsgi_runs_the_hooks_or_does_not_fork_is_not_warned_of(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    opt: dict[str, object],
    worker_id: int,
    numproc: int,
) -> None:
    under_uwsgi(monkeypatch, opt, worker_id=worker_id, numproc=numproc)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        SqliteTaskStore(tmp_path / "tasks.db").close()
    assert uwsgi_warnings(caplog) == []


def test_a_private_store_opened_in_uwsgis_master_is_each_workers_own_and_not_warned_of(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    under_uwsgi(monkeypatch, UWSGI_FORKS)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        SqliteTaskStore(":memory:").close()
        InMemoryTaskStore().close()
    assert uwsgi_warnings(caplog) == []


# -- a store a child opens on the file its parent's store was writing at the fork ----------

_AT_FORK: list[Callable[[], None]] = []
"""What this process's next fork calls first (a before-fork hook registered once below,
after lldsched's: Python calls the later-registered ``before`` hooks first)."""


def _first_at_fork() -> None:
    while _AT_FORK:
        _AT_FORK.pop()()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_first_at_fork)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_a_store_a_child_opens_on_a_file_its_parent_was_writing_at_the_fork_writes(
    tmp_path: Path,
) -> None:
    """SQLite keeps the locks of a process's connections to one file in one table of the
    process, which a fork copies: a child forked while a thread of the parent was inside
    a write transaction (a running scheduler's claim or settle, as gunicorn forks its
    workers under ``--preload``) found the file's write lock held by a connection no
    thread of its own would end, so every write of the store it opened after the fork
    (the gunicorn recipe's ``post_fork``) failed "database is locked", holding the write
    gate the while: every other process's writes waited on it.  The fork now waits for
    the call under way (lldsched/stores/sqlite/forks.py).  Here the parent's thread
    holds a verb's write transaction until the fork begins."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task(id="job")))
        inside, fork_begins = threading.Event(), threading.Event()

        def write_until_the_fork() -> None:
            with store.verb_held("job"):  # BEGIN IMMEDIATE, under the store's lock
                store.save(snapshot(task(id="job"), status=TaskStatus.PAUSED))
                inside.set()
                fork_begins.wait()

        writer = threading.Thread(target=write_until_the_fork)
        writer.start()
        inside.wait()
        _AT_FORK.append(fork_begins.set)

        def write_in_child() -> str:
            with SqliteTaskStore(path, shared=True, timeout=2) as own:
                own.save(snapshot(task(id="child")))
                return "saved"

        try:
            outcome = in_child(write_in_child, bound=20)
        finally:
            fork_begins.set()
            writer.join(20)
        assert outcome == "'saved'", outcome
        landed = store.get("job")
        assert landed is not None and landed.status is TaskStatus.PAUSED  # the parent's write
        assert store.get("child") is not None  # and the child's


def test_two_threads_forking_at_once_each_let_go_of_what_their_own_hook_took(
    tmp_path: Path, outlasting_the_fork_wait: None
) -> None:
    """A thread between its fork's two hooks (here: ``_before_fork`` run, the fork not yet
    made) holds the store's lock; another thread forks meanwhile, finds the lock taken
    and waits no longer.  Its own after-fork hook lets go of nothing (it took nothing);
    the first thread's lets go of the lock it took, so the store stays usable. Before,
    one list of taken locks served the whole process: the second fork's hook released the
    first thread's lock (``RuntimeError``, a lock it does not own) and the first's then
    found nothing to let go, leaving the store locked for good."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        in_fork, forked = threading.Event(), threading.Event()

        def first_thread() -> None:
            sqlite_forks._before_fork()
            in_fork.set()
            forked.wait()
            sqlite_forks._after_fork()

        first = threading.Thread(target=first_thread)
        first.start()
        in_fork.wait()
        assert in_child(lambda: None) == "None"  # forked here, in the second thread
        forked.set()
        first.join()
        assert store._lock.acquire(blocking=False), "the first thread's fork left it held"
        store._lock.release()
        store.save(snapshot(task(id="after")))
        assert [s.task.id for s in store.load_all()] == ["after"]
