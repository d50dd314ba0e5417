"""InMemoryTaskStore: the TaskStore that keeps everything in dictionaries.

Useful in tests (it holds the latest snapshot of every task and the records of
every run) and as the reference for what a durable store must do (the rules, as
checks: :mod:`lldsched.stores.contract`).  Safe to share between threads.  A child
forked from its process keeps a copy of its own, refused there only if another thread
was inside a call of it at the fork (:mod:`lldsched.stores.forks`).  It
closes as the durable stores do (``close()``, or a ``with`` block): every write and
load after that raises :class:`~lldsched.errors.StoreClosedError`, so code written
against it behaves the same on a durable store (what it holds stays readable).  A
scheduler built on a store that holds tasks restores them, so hand one store to one
live scheduler at a time.

It keeps every record by default; ``retention=n`` keeps the latest *n* of each task,
as :class:`~lldsched.stores.sqlite.SqliteTaskStore`'s ``retention`` does (trimmed in
batches of a tenth: a task holds up to 10 % more between trims, never returned), so
a scheduler that runs for months on it holds a bounded store.

It keeps any text a caller's ``save`` gives it; a registration refused a name no
durable store keeps already, whatever the store
(:func:`~lldsched.storechecks.check_storable`), so a task tried here is not refused on
the move to SQLite or PostgreSQL.
"""

from __future__ import annotations

import threading
from operator import itemgetter
from types import TracebackType
from typing import Any, NoReturn

from lldsched.checks import whole_or_none
from lldsched.errors import StoreClosedError
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.storechecks import id_asked, records_asked
from lldsched.stores import forks

__all__ = ["InMemoryTaskStore"]


_Kept = list[Any]
"""A task's records kept, oldest first, each after its number (its place among every
task's records saved): ``[number, record, number, record, ...]``.  ``records()`` of
every task sorts them by it, interleaved in the order saved as the durable stores give
them (by their sequence), not grouped by task.  The numbers beside the records, not a
``(number, record)`` pair each: a pair cost some 1,300 instructions a save (the
garbage collector tracks it), a number appended about 300.  In the records' own list,
not a second one: each list is one more object a task for every full pass of the
collector (a list of numbers, or an ``array``, is tracked as well)."""

_NONE: _Kept = []  # the records of a task that has none (never changed)
_number = itemgetter(0)  # of a (number, record) pair


class InMemoryTaskStore:
    """Latest snapshot per task id, plus every execution record (or the latest
    ``retention`` of each task), in memory."""

    def __init__(self, *, retention: int | None = None) -> None:
        whole_or_none(retention, name="retention", at_least=1)
        self.retention = retention
        # Past this many items of a task's list (two a record), its oldest records are
        # trimmed to ``retention``.
        self._trim_above = 0 if retention is None else 2 * (retention + max(1, retention // 10))
        # Guards _snapshots, _records, _saved, _dead and _closed; held only for a dict or
        # list operation (closed reads _closed without it).
        self._lock = threading.Lock()
        self._snapshots: dict[str, TaskSnapshot] = {}
        self._records: dict[str, _Kept] = {}
        self._saved = 0  # records saved so far: the number of the next
        self._dead: dict[str, None] = {}  # FAILED ids, in the order they failed
        self._closed = False
        # A forked child keeps its copy, unless a call was under way at the fork (forks.py).
        forks.private(self, "InMemoryTaskStore")

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Keep the task's state; ``record`` is the run this transition ends."""
        task_id = snapshot.task.id
        with self._lock:
            self._open()
            self._snapshots[task_id] = snapshot
            if record is not None:
                records = self._records.get(record.task_id)
                if records is None:
                    records = self._records[record.task_id] = []
                records.append(self._saved)
                records.append(record)
                self._saved += 1
                if len(records) > self._trim_above and self.retention is not None:
                    del records[: len(records) - 2 * self.retention]
            if snapshot.status is TaskStatus.FAILED:
                self._dead.setdefault(task_id)
            elif self._dead:
                self._dead.pop(task_id, None)

    def delete(self, task_id: str) -> None:
        """Forget ``task_id`` and its records."""
        id_asked(task_id, "delete")
        with self._lock:
            self._open()
            self._snapshots.pop(task_id, None)
            self._records.pop(task_id, None)
            self._dead.pop(task_id, None)

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        with self._lock:
            return list(self._dead)

    def load_all(self) -> list[TaskSnapshot]:
        """The latest snapshot of every kept task, in the order they were first saved."""
        with self._lock:
            self._open()
            return list(self._snapshots.values())

    def get(self, task_id: str) -> TaskSnapshot | None:
        """The latest snapshot of ``task_id``, or None."""
        id_asked(task_id, "get")
        with self._lock:
            return self._snapshots.get(task_id)

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """Every record of ``task_id`` (of every task when None), in the order saved; at
        most ``retention`` a task, the latest (as the SQLite store answers)."""
        task_id = records_asked(task_id)
        keep = 0 if self.retention is None else -self.retention  # [-n:], or [0:]: all
        with self._lock:
            if task_id is not None:
                return self._records.get(task_id, _NONE)[1::2][keep:]
            kept = [
                pair
                for records in self._records.values()
                for pair in zip(records[0::2][keep:], records[1::2][keep:], strict=True)
            ]
        kept.sort(key=_number)  # one run in order a task: Timsort merges them
        return [record for _, record in kept]

    def __len__(self) -> int:
        with self._lock:
            return len(self._snapshots)

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Refuse every write and load from now on (idempotent); what it holds stays
        readable (``get``, ``records``, ``dead_letter``).  Close a store after its
        scheduler's ``shutdown()``.

        In a child forked while another thread was inside a call of the store, it waits
        for nothing: every call after it is still refused, as before it (:mod:`forks
        <lldsched.stores.forks>`)."""
        if forks.is_torn(self._lock):
            self._closed = True
            return
        with self._lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (a scheduler's verbs then refuse)."""
        return self._closed

    def _open(self) -> None:
        """Raise if closed (the caller holds the lock)."""
        if self._closed:
            raise StoreClosedError("the InMemoryTaskStore is closed")

    def __enter__(self) -> InMemoryTaskStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __reduce__(self) -> NoReturn:
        raise forks.not_sent("InMemoryTaskStore")  # a pickled copy would not be this store

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"InMemoryTaskStore({len(self._snapshots)} tasks{state})"
