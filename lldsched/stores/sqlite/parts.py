"""What the SQLite store is made of, declared once for its modules.

:class:`~lldsched.stores.sqlite.SqliteTaskStore` is one class written in several
modules, as the threaded scheduler is: the file opened and the close
(:mod:`~lldsched.stores.sqlite`) and, mixed into it, the connection each call is given
and the refusal in a forked child (:mod:`~lldsched.stores.sqlite.connection`), the
``TaskStore`` writes (:mod:`~lldsched.stores.sqlite.writes`), the shared mode's
coordinated methods (:mod:`~lldsched.stores.sqlite.coordinated`), its
row writes (:mod:`~lldsched.stores.sqlite.shared_writes`), a verb's hold of the file's
write lock (:mod:`~lldsched.stores.sqlite.holds`), the reads
(:mod:`~lldsched.stores.sqlite.reads`) and the file format
(:mod:`~lldsched.stores.sqlite.schema`).  :class:`SqliteParts` is their common base: it
declares the members ``SqliteTaskStore.__init__`` sets (its comments there say what
each holds, and what the store's lock guards) and the methods one module calls of
another, so each module type-checks on its own and mypy checks that the store's
definitions match.  At run time it adds nothing.  As with
:class:`~lldsched.stores.postgres.parts.PostgresParts`, a method is declared here alone
(and defined in one module): the mixins may be listed among the bases in any order.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot
from lldsched.stores.sqlite.claim import FileClaim
from lldsched.stores.sqlite.file import FileWatch
from lldsched.stores.sqlite.gate import WriteGate
from lldsched.stores.sqlite.shared import SharedState

__all__ = ["SqliteParts"]


class SqliteParts:
    """The members the SQLite store's modules share (see the module docstring)."""

    path: str  # the file's path as given (os.fspath), or a private database's name
    _opened_in: int  # the process this store belongs to (forks.py)
    retention: int | None  # records kept per task; None: all
    _slack: int  # records a task may hold past retention between trims
    _watch: FileWatch | None  # whether the path still names the file (None: private, or shared)
    _shared: SharedState | None  # the shared mode's state; None: this store shares nothing
    _claim: FileClaim | None  # the file's claim; None for a private database
    _gate: WriteGate | None  # every shared write passes it; None: unshared, or no flock
    _lock: threading.RLock
    _calls: int  # the calls under way (_using, nested inside a verb's hold), under the lock
    _left_open: sqlite3.Error | None  # why a transaction no call owns is still open
    _connection: sqlite3.Connection | None  # None once closed
    _defined: dict[str, Task]  # id -> the definition its row holds (no finished task)
    _counts: dict[str, int]  # records kept per unfinished task
    _dead_seq: int  # the dead letter's order: the last FAILED row's (unshared writes)
    _seq: int  # of the last record saved
    _locked_out: int | None  # an unshared store's total_changes when found locked out (_locked)
    _busy_ms: int  # the connection's busy_timeout (unshared)

    if TYPE_CHECKING:  # called across the modules; each is defined in one of them

        def _refuse_if_forked(self) -> None: ...  # connection

        def _open(self) -> sqlite3.Connection: ...  # connection

        def _using(  # connection
            self, doing: str, task_id: str | None = None
        ) -> AbstractContextManager[sqlite3.Connection]: ...

        def _append(  # writes
            self, connection: sqlite3.Connection, record: ExecutionRecord, *, seq: int
        ) -> int: ...

        def _hold_gone(self, doing: str, task_id: str | None) -> StoreError: ...  # holds

        def _ended_hold(  # holds
            self, doing: str, error: sqlite3.Error, failed: StoreError
        ) -> None: ...

        def _save_shared(  # shared_writes
            self, snapshot: TaskSnapshot, record: ExecutionRecord | None
        ) -> None: ...

        def _save_all_shared(  # shared_writes
            self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]
        ) -> None: ...

        def _resave_shared(  # shared_writes
            self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()
        ) -> bool: ...

        def _coordinated(self) -> SharedState: ...  # coordinated

        def _settle(  # coordinated
            self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
        ) -> None: ...

        def _wrote(  # shared_writes
            self, shared: SharedState, snapshot: TaskSnapshot, version: int
        ) -> None: ...

        def _write_state(  # shared_writes
            self,
            connection: sqlite3.Connection,
            snapshot: TaskSnapshot,
            *,
            status: str,
            definition: str | None = None,
        ) -> int: ...
