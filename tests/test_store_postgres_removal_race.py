"""A registration racing a removal of the same id on another node, on the real server.

Node ``a`` registers id ``x`` again with a new definition while node ``b`` removes it;
``c`` only reads.  Each transaction is held open at a chosen point (after its writes,
before its commit) or left to wait on the other's locks, and ``c`` reads its feed
between the two commits or once after both.  Whatever the order, once every feed is
read, every node holds what the database holds: the new task if the registration
committed last, nothing if the removal did.  Before, a removal committed first gave the
registration's row a version below the removal's (computed in a snapshot that did not
see it): ``c``'s feed skipped the row for good, and ``a``'s own feed applied the removal
after the registration: of the three, only the remover, whose feed reads every
row it did not write, had the task the database holds.  A registration
committed first gave the removal the version of the row before it (read before the
row's lock): a feed that read the new row first skipped the removal, and the removed
task lived on there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest

from lldsched import TaskStatus
from lldsched.coordination import Change
from lldsched.stores.postgres import PostgresTaskStore
from tests.test_store_postgres import insert_row
from tests.test_store_sqlite import snapshot, task
from tests.waits import wait_until

Opener = Callable[..., PostgresTaskStore]
WAIT = 10.0


class Held:
    """Holds the next call of one of a store's in-transaction methods (``_write``,
    ``_delete``) after it ran, before its transaction commits: ``inside`` is set then,
    and the call returns (and commits) once ``go`` is set."""

    def __init__(self, store: PostgresTaskStore, name: str, monkeypatch: pytest.MonkeyPatch):
        self.inside = threading.Event()
        self.go = threading.Event()
        original = getattr(store, name)

        def held(*args: object, **kwargs: object) -> object:
            result = original(*args, **kwargs)
            self.inside.set()
            assert self.go.wait(WAIT), "the held transaction was never let go"
            return result

        monkeypatch.setattr(store, name, held)


@contextmanager
def in_thread(call: Callable[[], object]) -> Iterator[threading.Thread]:
    """Run ``call`` in a thread; joined (and its failure raised) on leaving."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield thread
    thread.join(WAIT)
    assert not thread.is_alive(), "the call never returned"
    if failures:
        raise failures[0]


def waits_on_a_lock(store: PostgresTaskStore, *, or_ends: threading.Thread | None = None) -> None:
    """Until ``store``'s session waits on a lock another transaction holds (or the thread
    ``or_ends`` ended: its call did not have to wait)."""
    connection = store._connection
    assert connection is not None
    pid = connection.info.backend_pid
    with psycopg.connect(store._dsn, autocommit=True) as watcher:

        def waiting() -> bool:
            if or_ends is not None and not or_ends.is_alive():
                return True
            row = watcher.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            return row is not None and row[0] == "Lock"

        wait_until(waiting, timeout=WAIT, what=f"session {pid} to wait on a lock")


class Node:
    """A node's registry as the runtime keeps it from its own writes and its feed
    (``lldsched.core.follow``: a removal drops the task, a row sets it)."""

    def __init__(self, store: PostgresTaskStore, names: dict[str, str]) -> None:
        self.store = store
        self.names = dict(names)

    def read(self) -> list[Change]:
        changes = self.store.changes()
        for change in changes:
            if change.snapshot is None:
                self.names.pop(change.task_id, None)
            else:
                self.names[change.task_id] = change.snapshot.task.name
        return changes


def truth(store: PostgresTaskStore) -> dict[str, str]:
    return {row.task.id: row.task.name for row in store.load_all()}


@pytest.fixture
def nodes(open_store: Opener) -> tuple[Node, Node, Node]:
    """``a``, ``b`` and ``c``, each holding ``x`` (named "first", registered by ``a``)."""
    a, b, c = open_store(), open_store(), open_store()
    a.save(snapshot(task(id="x", name="first")))
    for store in (b, c):
        assert [change.task_id for change in store.changes()] == ["x"]
    return Node(a, {"x": "first"}), Node(b, {"x": "first"}), Node(c, {"x": "first"})


def register_again(node: Node) -> None:
    """``a``'s registration of ``x`` with a new definition (an upsert of the row, which
    takes the id's lock first)."""
    node.store.save(snapshot(task(id="x", name="second")))
    node.names["x"] = "second"


def pause(node: Node) -> None:
    """``a``'s pause of ``x``, its definition unchanged (an update of the row)."""
    node.store.save(snapshot(task(id="x", name="first"), TaskStatus.PAUSED))


def remove(node: Node) -> None:
    node.store.delete("x")
    node.names.pop("x", None)


def agree(nodes: tuple[Node, Node, Node], expected: dict[str, str]) -> None:
    """After one more read of every feed, every node holds what the database holds."""
    for node in nodes:
        node.read()
    assert truth(nodes[0].store) == expected
    assert [node.names for node in nodes] == [expected] * 3


def in_turn(
    first: tuple[Node, str, Callable[[Node], None]],
    then: tuple[Node, str, Callable[[Node], None]],
    *,
    reader: Node,
    reads: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each of ``first`` and ``then`` is a node, the store method its write holds open
    (``_write``, ``_delete``) and the write: ``first`` writes and holds its transaction
    open; ``then`` starts and waits on its locks; ``first`` commits, then ``then`` does.
    ``reads="between"``: ``reader`` reads its feed between the two commits (and reads
    ``x``); ``"once"``: it reads nothing until both committed."""
    (one, one_method, one_write), (other, other_method, other_write) = first, then
    held_first = Held(one.store, one_method, monkeypatch)
    held_then = Held(other.store, other_method, monkeypatch)
    if reads == "once":
        held_then.go.set()
    with in_thread(lambda: one_write(one)):
        assert held_first.inside.wait(WAIT)
        with in_thread(lambda: other_write(other)):
            waits_on_a_lock(other.store)  # on first's transaction
            held_first.go.set()
            if reads == "between":  # first committed, then not yet
                assert held_then.inside.wait(WAIT)
                assert {change.task_id for change in reader.read()} == {"x"}
                held_then.go.set()


@pytest.mark.parametrize("reads", ["between", "once"])
def test_a_removal_committed_first_leaves_the_registration_waiting_on_it_everywhere(
    nodes: tuple[Node, Node, Node], monkeypatch: pytest.MonkeyPatch, reads: str
) -> None:
    """``b``'s removal is uncommitted when ``a``'s registration starts, which waits for it
    and commits last: ``x`` is the new task, in every node."""
    a, b, c = nodes
    removal, registration = (b, "_delete", remove), (a, "_write", register_again)
    in_turn(removal, registration, reader=c, reads=reads, monkeypatch=monkeypatch)
    agree(nodes, {"x": "second"})


@pytest.mark.parametrize("reads", ["between", "once"])
@pytest.mark.parametrize("write", [register_again, pause])
def test_a_write_committed_first_leaves_the_removal_waiting_on_it_everywhere(
    nodes: tuple[Node, Node, Node],
    monkeypatch: pytest.MonkeyPatch,
    reads: str,
    write: Callable[[Node], None],
) -> None:
    """``a``'s registration, or its pause (an update, which takes no lock of the id), is
    uncommitted when ``b``'s removal starts, which waits for it and commits last: ``x``
    is gone, from every node."""
    a, b, c = nodes
    in_turn((a, "_write", write), (b, "_delete", remove), reader=c, reads=reads,
            monkeypatch=monkeypatch)  # fmt: skip
    agree(nodes, {})


def test_a_removal_whose_transaction_began_first_but_committed_last_wins_everywhere(
    nodes: tuple[Node, Node, Node], postgres_dsn: str
) -> None:
    """``b``'s removal takes its transaction id first, then waits (on a lock a third
    session holds) while ``a``'s registration commits; feeds order by transaction id,
    not commit order.  Whichever of the two the database ends with, every node agrees."""
    a, b, c = nodes
    with psycopg.connect(postgres_dsn) as blocker:
        blocker.execute("LOCK TABLE records IN EXCLUSIVE MODE")  # b's removal waits on it
        with in_thread(lambda: remove(b)):
            waits_on_a_lock(b.store)
            with in_thread(lambda: register_again(a)) as registration:
                waits_on_a_lock(a.store, or_ends=registration)
                c.read()
                blocker.commit()
    expected = truth(a.store)
    agree(nodes, expected)


def test_a_registration_whose_transaction_began_first_but_committed_last_wins_everywhere(
    nodes: tuple[Node, Node, Node], postgres_dsn: str
) -> None:
    """A registration whose transaction took its id before a removal of ``x`` began
    (it wrote something else first), and that inserts ``x`` once the removal committed:
    a feed reading both in one read applies the removal first, then the row, which is the
    id's state in that snapshot.  Sorted by transaction id alone, the removal came last
    and dropped the task the database holds."""
    remover = nodes[1]
    with psycopg.connect(postgres_dsn) as registration:
        registration.execute("SELECT pg_catalog.pg_current_xact_id()")  # its id, first
        remove(remover)
        insert_row(registration, "x", name="second")
        registration.commit()
    agree(nodes, {"x": "second"})
