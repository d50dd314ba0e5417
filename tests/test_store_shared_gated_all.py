"""Every write of a shared SQLite store passes its write gate (lldsched/stores/sqlite/gate.py,
"Gated"), the two that were written before the gate included: the definition a process
writes at once for a run it holds (a modify, reschedule or replacement during the run)
and the attempt owed for a ``running`` row no lease holds (``owe``).  Both took SQLite's
write lock past the gate, as every write did before it: with the gate held by another
process's write they were written at once, where now they wait for it (here
``timeout=0``: one try, refused naming the lock).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lldsched import Priority, SqliteTaskStore, StoreError, TaskStatus
from tests.conftest import T0
from tests.test_store_shared_gated_waits import held
from tests.test_store_sqlite import snapshot, task


def refused_past_the_gate(path: Path, write: Callable[[], object]) -> None:
    """``write()`` with the gate held by another process's write: refused, not made."""
    holder = held(path)
    try:
        with pytest.raises(StoreError, match="the write lock was not obtained within"):
            write()
    finally:
        holder.release()
        holder.close()


def test_a_redefinition_of_a_run_this_process_holds_passes_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=0) as store:
        store.save(snapshot(task(id="a")))
        assert [claim.task_id for claim in store.claim(now=T0, limit=1)] == ["a"]
        running = snapshot(task(id="a", priority=Priority.HIGH), TaskStatus.RUNNING)
        refused_past_the_gate(path, lambda: store.save(running))  # before: written
        row = store.get("a")
        assert row is not None and row.task.priority is Priority.NORMAL
        store.save(running)
        row = store.get("a")
        assert row is not None and row.task.priority is Priority.HIGH


def test_the_attempt_owed_passes_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as unshared:  # a process that died mid-run: no lease
        unshared.save(snapshot(task(id="a"), TaskStatus.RUNNING)._replace(running=True))
    with SqliteTaskStore(path, shared=True, timeout=0) as store:
        (row,) = store.load_all()
        owed = row._replace(status=TaskStatus.SCHEDULED, running=False)
        refused_past_the_gate(path, lambda: store.owe(owed))  # before: written
        assert store.leases() == []
        assert store.owe(owed) is True
        assert [lease.task_id for lease in store.leases()] == ["a"]
