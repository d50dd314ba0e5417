"""A store collected while still open says so and closes, as Python's own files do
(lldsched/stores/unclosed.py; docs/OPERATIONS.md, "What a scheduler leaves behind").

Before, a store dropped without ``close()`` closed itself in silence when collected (an
SQLite store's claim and write gate, a PostgreSQL store), so a forgotten ``close()`` was
never told, not even under ``-W error::ResourceWarning``, where Python finds a file's.
Now each says a ``ResourceWarning`` naming it ("unclosed SqliteTaskStore('…', open)",
a dsn with its password as ``***``), then closes as before; closed, or used in a
``with`` block, it says nothing.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import subprocess
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lldsched import SqliteTaskStore, StoreError
from lldsched.stores.sqlite.claim import FileClaim
from lldsched.stores.sqlite.gate import THREAD, WriteGate, gate_for
from tests.forking import in_child
from tests.waits import wait_until

if TYPE_CHECKING:
    from tests.pg_server import PostgresServer

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD = 60.0
"""Seconds a thread may take to end before the test says it hangs (at once when fixed)."""


@contextlib.contextmanager
def unclosed() -> Iterator[list[str]]:
    """The texts of the ``ResourceWarning``\\ s said inside, every one (whatever the
    filters outside), the garbage collected before the block ends."""
    texts: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield texts
        gc.collect()
    texts.extend(str(w.message) for w in caught if issubclass(w.category, ResourceWarning))


def descriptors_on(folder: Path) -> list[str]:
    """The files under ``folder`` this process has a descriptor open on."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, gone now
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(folder.resolve())):
                found.append(target)
    return found


linux_only = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd (Linux)"
)


@linux_only
@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_an_sqlite_store_dropped_open_says_so_naming_its_file_and_lets_the_file_go(
    tmp_path: Path, shared: bool
) -> None:
    path = tmp_path / "tasks.db"
    with unclosed() as said:
        store = SqliteTaskStore(path, shared=shared)
        assert descriptors_on(tmp_path)  # the file, its WAL, its claim (and gate)
        del store
    assert said == [f"unclosed SqliteTaskStore({str(path)!r}, open)"]  # its claim's: none
    assert descriptors_on(tmp_path) == []
    with SqliteTaskStore(path) as again:  # unshared: refused while any store holds it
        assert again.load_all() == []


def test_a_private_sqlite_store_dropped_open_says_so() -> None:
    with unclosed() as said:
        SqliteTaskStore(":memory:")
    assert said == ["unclosed SqliteTaskStore(':memory:', open)"]


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_an_sqlite_store_closed_or_used_in_a_with_block_says_nothing(
    tmp_path: Path, shared: bool
) -> None:
    path = tmp_path / "tasks.db"
    with unclosed() as said:
        SqliteTaskStore(path, shared=shared).close()
        with SqliteTaskStore(path, shared=shared) as store:
            store.load_all()
        del store
        SqliteTaskStore(":memory:").close()
    assert said == []


def test_a_store_whose_open_was_refused_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path), unclosed() as said, pytest.raises(StoreError, match="already"):
        SqliteTaskStore(path)  # its claim refused: nothing of it is left open
    assert said == []


@linux_only
def test_a_shared_store_dropped_open_ends_its_write_gates_thread(tmp_path: Path) -> None:
    """A shared store's gate whose thread once blocked for the lock is held by that
    thread, which waits for the gate's next write or its close: before, such a store
    dropped unclosed left its gate, the gate's descriptor and its thread for the life of
    the process.  Now the store closes it as it is collected."""
    path = tmp_path / "tasks.db"
    holder = gate_for(str(path), HANG_GUARD)  # another process's, in its write
    assert holder is not None

    def gate_waited_for(store: SqliteTaskStore) -> tuple[weakref.ref[WriteGate], threading.Thread]:
        """The store's gate, once its thread blocked for the lock, and that thread."""
        assert holder is not None
        holder.acquire()
        with pytest.raises(StoreError, match="timeout"):
            store.release(task_id="a", token=1)  # the gate's thread blocks for it
        gate = store._gate
        assert gate is not None and gate._thread is not None
        holder.release()  # the thread takes it, finds its caller gone, lets it go
        wait_until(lambda: not gate._busy, timeout=HANG_GUARD, what="the lock let go")
        return weakref.ref(gate), gate._thread

    try:
        with unclosed() as said:
            kept, thread = gate_waited_for(SqliteTaskStore(path, shared=True, timeout=0.1))
        thread.join(HANG_GUARD)
        assert not thread.is_alive()
        assert said == [f"unclosed SqliteTaskStore({str(path)!r}, open)"]
        gc.collect()
        assert kept() is None
        assert [fd for fd in descriptors_on(tmp_path) if fd.endswith(".write")] == [
            str(path.resolve()) + ".write"  # the holder's alone
        ]
        assert not [t for t in threading.enumerate() if t.name == THREAD and t is thread]
    finally:
        holder.close()


def test_a_claim_or_a_gate_dropped_held_says_so_naming_its_lock_file(tmp_path: Path) -> None:
    """Parts of a store, held without one (its store lets them go first, and speaks for
    them)."""
    path = str(tmp_path / "tasks.db")
    real = str((tmp_path / "tasks.db").resolve())
    with unclosed() as said:
        FileClaim(path)
        WriteGate(real, HANG_GUARD)
        FileClaim(path).release()
        WriteGate(real, HANG_GUARD).close()
    assert said == [
        f"unclosed FileClaim({real + '.lock'!r}, exclusive, held)",
        f"unclosed WriteGate({real + '.write'!r}, open)",
    ]


def test_the_store_is_closed_even_where_its_warning_is_made_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-W error::ResourceWarning``: the warning raised in ``__del__`` goes where Python
    sends an exception it cannot raise (``sys.unraisablehook``: "Exception ignored in",
    pytest's ``PytestUnraisableExceptionWarning``), and the close runs all the same."""
    path = tmp_path / "tasks.db"
    ignored: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: ignored.append(hook.exc_value))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        SqliteTaskStore(path)
        gc.collect()
    assert [(type(e), str(e)) for e in ignored] == [
        (ResourceWarning, f"unclosed SqliteTaskStore({str(path)!r}, open)")
    ]
    SqliteTaskStore(path).close()  # its claim was let go


def test_a_forked_childs_copy_dropped_says_nothing(tmp_path: Path) -> None:
    """The copy is the parent's store, which says so itself if it is left open: the
    child's copy lets go of the child's descriptors, as its ``close()`` does there."""
    box = [SqliteTaskStore(tmp_path / "tasks.db")]

    def drop() -> object:
        with unclosed() as said:
            box.clear()
        return said

    try:
        assert in_child(drop) == "[]"
    finally:
        box[0].close()


def test_a_store_left_open_at_interpreter_exit_says_so_and_nothing_else(tmp_path: Path) -> None:
    """Collected as the interpreter ends (a module's global, one in a cycle), where a
    module's globals may be gone: its warning (here an error, "Exception ignored in"),
    and no other exception."""
    script = (
        "import sys\n"
        "from lldsched import SqliteTaskStore\n"
        "import lldsched.stores.sqlite as sqlite\n"
        "store = SqliteTaskStore(sys.argv[1])\n"
        "cycle = SqliteTaskStore(sys.argv[2], shared=True)\n"
        "cycle.me = cycle\n"
        "sqlite.kept = SqliteTaskStore(':memory:')\n"
    )
    child = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", script,
         str(tmp_path / "a.db"), str(tmp_path / "b.db")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    said = [  # the lines that do not quote the source (the traceback's frames)
        re.sub(r" at 0x[0-9a-f]+>", ">", line)
        for line in child.stderr.splitlines()
        if not line.startswith(" ")
    ]
    assert sorted(said) == sorted(
        [
            *["Exception ignored in: <function SqliteTaskStore.__del__>"] * 3,
            *["Traceback (most recent call last):"] * 3,
            f"ResourceWarning: unclosed SqliteTaskStore({str(tmp_path / 'a.db')!r}, open)",
            f"ResourceWarning: unclosed SqliteTaskStore({str(tmp_path / 'b.db')!r}, open)",
            "ResourceWarning: unclosed SqliteTaskStore(':memory:', open)",
        ]
    ), child.stderr


def pg_session_pids(postgres_server: PostgresServer) -> set[int]:
    """The backend pids of the server's client sessions but the one asking."""
    import psycopg

    with psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()
    return {int(pid) for (pid,) in rows}


def pg_sessions(postgres_server: PostgresServer) -> int:
    """The server's client sessions but the one asking."""
    return len(pg_session_pids(postgres_server))


def test_a_postgres_store_dropped_open_says_so_naming_its_dsn_without_password_and_closes(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    from lldsched.stores.postgres import PostgresTaskStore

    PostgresTaskStore(postgres_dsn).close()  # the schema made
    before = pg_session_pids(postgres_server)  # an earlier test's may still be ending
    with unclosed() as said:
        store = PostgresTaskStore(postgres_dsn)
        connection = store._connection
        assert connection is not None and not connection.closed
        shown, gone = store.dsn, weakref.ref(store)
        del store
        wait_until(  # in a cycle, and its threads may hold it a moment (a weak call made)
            lambda: gc.collect() >= 0 and gone() is None,
            timeout=10.0,
            what="the dropped store to be collected",
        )
    assert said == [f"unclosed PostgresTaskStore({shown!r}, open)"]
    assert "password=***" in said[0] and postgres_server.password not in said[0]
    assert connection.closed
    wait_until(  # a session ends as its backend exits, a moment after the close
        lambda: pg_session_pids(postgres_server) <= before,
        timeout=10.0,
        what="the dropped store's sessions to end",
    )


def test_a_postgres_store_closed_or_used_in_a_with_block_says_nothing(
    postgres_dsn: str,
) -> None:
    from lldsched.stores.postgres import PostgresTaskStore

    with unclosed() as said:
        PostgresTaskStore(postgres_dsn).close()
        with PostgresTaskStore(postgres_dsn) as store:
            store.load_all()
        del store
    assert said == []
