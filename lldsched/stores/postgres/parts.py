"""What the PostgreSQL store is made of, declared once for its modules.

:class:`~lldsched.stores.postgres.PostgresTaskStore` is one class written in several
modules, as the threaded scheduler is: the store opened, refused in a forked child and
closed (:mod:`~lldsched.stores.postgres`) and, mixed into it, the connection each call
is given (:mod:`~lldsched.stores.postgres.connection`), a control verb's hold of its
rows (:mod:`~lldsched.stores.postgres.holds`), the ``TaskStore`` writes
(:mod:`~lldsched.stores.postgres.writes`), the coordinated methods
(:mod:`~lldsched.stores.postgres.coordinated`) and the fenced settles among them
(:mod:`~lldsched.stores.postgres.settles`), the reads
(:mod:`~lldsched.stores.postgres.reads`) and the schema's install
(:mod:`~lldsched.stores.postgres.schema`).  :class:`PostgresParts` is their common
base: it declares the members ``PostgresTaskStore.__init__`` sets (its comments there
say what each holds, and what the store's lock guards) and the methods one module calls
of another, so each module type-checks on its own and mypy checks that the store's
definitions match.  At run time it adds nothing.

Each method is defined in one module and declared here alone, so the order of the
mixins among the store's bases is free (this base comes last in its MRO, as every
mixin derives from it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from lldsched.core.store.writes import StoreWrites
from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot
from lldsched.stores.held import HeldWrites
from lldsched.stores.postgres.batch import SettleQueue
from lldsched.stores.postgres.deadline import Deadline
from lldsched.stores.postgres.driver import Connection, psycopg
from lldsched.stores.postgres.listen import Listener
from lldsched.stores.removals import FeedHorizons
from lldsched.stores.unreadable import Unreadable

__all__ = ["PostgresParts"]


class PostgresParts:
    """The members the PostgreSQL store's modules share (see the module docstring)."""

    dsn: str  # the dsn as messages show it (its passwords as ***)
    _dsn: str  # the dsn as given: connections only, never shown
    lease: float
    poll: float
    retention: int | None
    _timeout: float
    _opened_in: int  # the process this store belongs to (forks.py)
    node: str  # this process's holder id: "host:pid:random"
    rejected: int  # settles refused (their lease lost)
    _schema: str | None  # the first of the dsn's search_path; None until a connection finds it
    pooled: bool  # the sessions are a pooler's (PgBouncer, transaction pooling)
    _deadline: Deadline
    _channel: str  # the LISTEN/NOTIFY channel of the store's schema
    _lock: threading.RLock
    _connection: Connection | None
    _closed: bool
    _refused: str | None  # why every call is refused from now on (a newer schema), or None
    _given: int  # the largest fencing token given, at open or to a claim of this node
    _defined: dict[str, Task]  # id -> the definition its row holds
    _held: dict[str, int]  # id -> the token of the lease this node holds
    _lost: dict[str, int]  # id -> the token of a lease found lost while its run goes on here
    _added: dict[str, int]  # records added per task since its last trim
    _seen: dict[str, int]  # id -> the version the feed last gave
    _reread: set[str]  # tasks whose settle was refused: the next changes() gives their rows
    _reread_wake: bool  # flush() is to wake the scheduler for that read
    _wake: Callable[[], None] | None  # subscribe()'s
    _since: int  # the feed's cursor (a transaction id)
    _decoded: dict[str, tuple[str, Task]]  # id -> a definition's text, decoded
    _unreadable: Unreadable  # other nodes' definitions this one cannot load
    _horizons: FeedHorizons
    _settles: SettleQueue  # runs' settles not written yet
    _batches: StoreWrites  # the batches of settles that failed: an outage said once
    _muted: int  # depth of muted() contexts
    _listener: Listener | None
    _hold: HeldWrites | None  # what the verb's hold under way wrote
    _holding: Connection | None  # the connection of the verb's hold once its transaction began
    _hold_failed: str | None  # why the connection of the verb's hold under way was lost

    if TYPE_CHECKING:  # called across the modules; each is defined in one of them

        def _refuse_if_forked(self) -> None: ...  # postgres

        def _open(self) -> Connection: ...  # connection

        def _call(self) -> AbstractContextManager[None]: ...  # connection

        def _using(  # connection
            self, doing: str, task_id: str | None = None
        ) -> AbstractContextManager[Connection]: ...

        def _bound(self, connection: Connection) -> None: ...  # connection

        def _inside_failed(  # holds
            self, exc: psycopg.Error, why: str, error: StoreError, doing: str, task_id: str | None
        ) -> None: ...

        def _hold_lost(self, held: HeldWrites | None = None) -> StoreError: ...  # holds

        def _transaction(  # writes
            self, connection: Connection, task_id: str
        ) -> AbstractContextManager[None]: ...

        def _write(  # writes
            self, connection: Connection, snapshot: TaskSnapshot, *, unknown: str = ...
        ) -> None: ...

        def _append(self, connection: Connection, record: ExecutionRecord) -> None: ...  # writes

        def _added_records(self, task_id: str, count: int) -> bool: ...  # writes

        def _forget_finished(self, task_id: str) -> None: ...  # writes

        def _trim_after_batch(self, task_ids: list[str]) -> None: ...  # writes

        def _write_settles(self) -> None: ...  # settles

        def _forget(self, tokens: Collection[int]) -> None: ...  # coordinated

        def _read_snapshot(self, row: Sequence[Any]) -> TaskSnapshot: ...  # coordinated

        def _follow_schema(self, version: str | None) -> None: ...  # schema
