"""Reading a durable store to show it, importing none of the code its tasks name: what
``python -m lldsched tasks`` lists (:mod:`lldsched.cli.storetasks`).

A store's own reads (``load_all``, ``get``) import each task's action, its retry
policy's class and its schedule's (:func:`~lldsched.stores.codec.decode_task`), and
opening one claims the file (SQLite) or installs the schema (PostgreSQL).  An operator's
shell is not the service's environment, and a scheduler may hold the file: a
:class:`Peek` opens neither way.  It reads the rows with the stores' own columns and
checks (``TASK_COLUMNS`` / ``SNAPSHOT_COLUMNS``, :func:`~lldsched.stores.rowvalues.snapshot_from`),
its definition decoded with ``imports=False`` (an action is its path as text,
:class:`~lldsched.stores.codec.NotImported`), and writes nothing.  Each engine opens
its own (this module imports neither):

* SQLite: :func:`~lldsched.stores.sqlite.peek.peek_sqlite`, the file opened read-only
  (``mode=ro``), no claim taken;
* PostgreSQL: :func:`~lldsched.stores.postgres.peek.peek_postgres`, one connection
  (psycopg imported only then), its session read-only.

Every failure is a :class:`~lldsched.errors.StoreError` naming the store (a dsn's
password hidden, :func:`~lldsched.stores.postgres.redact.redact`).  A row the store
cannot read (a status this release does not know, a value no write makes) is listed as
its error, the others read.

A table of every task (:meth:`Peek.listing`) reads of each only what it shows: the
columns, and the name and schedule the database reads out of the definition's JSON
(SQLite's ``json_extract``, PostgreSQL's ``->``), each checked as every read checks it;
``show`` (:meth:`Peek.tasks`) and ``--json`` (:meth:`Peek.whole`) decode rows whole.
Its runs in flight (a shared store's leases, :meth:`Peek.leases`) are one statement of
their own after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from lldsched.coordination import Lease
from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.stores.codec import SharedParts, decode_task
from lldsched.stores.rowvalues import Listed, listed_from, record_from, snapshot_from

__all__ = ["Last", "Listed", "Peek", "Row"]

_LAST = (
    "SELECT {columns} FROM records r JOIN tasks t ON t.id = r.task_id"
    " WHERE r.task_id = {p} ORDER BY r.seq DESC LIMIT {p}"
)
_MOST_ROWS = 2**63 - 1
"""The largest ``LIMIT`` both engines take (a signed 64-bit integer): a larger count of
records asks for every one, as this does."""
_LEASE_KEPT = slice(4, 9)  # the lease's slot, attempt, token, holder, expires_at (KEPT_COLUMNS)
_RECORD = len(ExecutionRecord._fields) + 1  # record_from's columns: a record's, and its seq


class Row(NamedTuple):
    """A task's row: its snapshot, or (``snapshot`` None) why it cannot be read; with a
    snapshot, its ``definition`` as stored (the text a load decodes, importing), and the
    ``lease`` a claim holds on it, if any (a shared store's run in flight, the lease of a
    process that died included, until it is taken over; an unshared store holds none)."""

    id: str
    snapshot: TaskSnapshot | None
    error: str | None = None
    definition: str = ""
    lease: Lease | None = None

    @property
    def running(self) -> bool:
        """The row's flag of an attempt in flight, as :class:`Listed`'s (False for a row
        that cannot be read)."""
        return self.snapshot is not None and self.snapshot.running


Last = ExecutionRecord | None
"""A task's last record, None if it has none."""


class Peek:
    """A durable store opened to read, importing nothing, writing nothing.  ``where``
    names it in messages (a dsn with its password hidden); ``now()`` reads the clock its
    leases expire by; ``held()`` tells whether a live unshared store holds it (an SQLite
    file's claim tried, not taken: :func:`~lldsched.stores.sqlite.claim.held_unshared`; None
    where it cannot be told; False for PostgreSQL, always shared, whose runs in flight
    are leases)."""

    def __init__(
        self, where: str, query: Callable[[str, Sequence[object]], list[Any]],
        close: Callable[[], object], *, placeholder: str, tasks: str, columns: str,
        records: str, last: str, listed: str, state: slice, kept: slice,
        now: Callable[[], float], held: Callable[[], bool | None] = lambda: None,
    ) -> None:  # fmt: skip
        self.where = where
        self.now = now
        self.held = held  # whether a live unshared store holds it (None: cannot be told)
        self._query = query
        self._close = close
        self._p = placeholder
        self._tasks = tasks  # the tasks and their leases: TASKS
        self._columns = columns  # a task's row, FROM them: TASK_COLUMNS, SNAPSHOT_COLUMNS
        self._records = records  # the records' columns
        self._last = last  # joins a task (t) to its last record (r): each engine's _LAST
        self._listed = listed  # a listing's columns: each engine's _LISTED
        self._state = state  # where a row's state and kept values are
        self._kept = kept

    def tasks(self, task_id: str | None = None, *, status: str | None = None) -> list[Row]:
        """Every task's row in the order first saved (``task_id``'s alone, if given; only
        those whose stored status is ``status``, if given: the dead letter's, ``failed``,
        in the order they failed).  Only the rows asked for are decoded: the filter is the
        statement's; and what their definitions have alike (schedules, retry policies) once
        (:class:`~lldsched.stores.codec.SharedParts`: the rows of equal parts share one
        schedule object)."""
        statement = f"SELECT {self._columns} FROM {self._tasks}"
        if task_id is not None:
            rows = self._query(f"{statement} WHERE t.id = {self._p}", (task_id,))
        else:
            where, parameters = self._where(status)
            rows = self._query(f"{statement}{where}", parameters)
        shared = SharedParts()
        return [self._row(row, shared) for row in rows]

    def whole(self, *, status: str | None = None) -> Iterator[tuple[Row, Last]]:
        """Each task's row decoded whole, as :meth:`tasks` orders and filters them, with its
        last record: one statement, which reads a task's last record by the records' key
        (a listing of the dead letter reads the failed tasks' records, no other's).  Each
        row is decoded as it is taken (the driver's rows are fetched whole: psycopg holds a
        whole result, and SQLite's is read again whole when a text is not UTF-8,
        ``sqlite/rows.fetch``)."""
        where, parameters = self._where(status)
        columns = f"{self._columns}, {self._records}"
        statement = f"SELECT {columns} FROM {self._tasks} {self._last}{where}"
        shared = SharedParts()
        for row in self._query(statement, parameters):
            yield self._row(row[:-_RECORD], shared), _last(row[-_RECORD:])

    def listing(self, *, status: str | None = None) -> Iterator[tuple[Listed | Row, Last]]:
        """What a table of the tasks shows, as :meth:`whole` orders and filters them: of
        each task, only the columns the table shows and the two parts of its definition
        it shows (name, schedule), which the database reads out of the JSON
        (:func:`~lldsched.stores.rowvalues.listed_from`; no row decoded whole, no snapshot
        built), with its last record.  A row one of those values is wrong in is read
        whole (:meth:`tasks`): a :class:`Row`, with the error that read names.  A
        definition the database cannot parse as JSON fails the whole statement: then
        every row is read whole (:meth:`whole`), as before."""
        where, parameters = self._where(status)
        statement = f"SELECT {self._listed}, {self._records} FROM tasks t {self._last}{where}"
        try:
            rows = self._query(statement, parameters)
        except StoreError:  # a definition that is no JSON; else the store's error, again
            yield from self.whole(status=status)
            return
        schedules: dict[str, Any] = {}
        for row in rows:
            listed: Listed | Row | None = listed_from(row[:-_RECORD], schedules)
            if listed is None:
                read = self.tasks(row[0])
                if not read:  # removed since
                    continue
                listed = read[0]
            yield listed, _last(row[-_RECORD:])

    def leases(self) -> dict[str, object]:
        """Each lease's task id and expiry as stored (unchecked; by :meth:`now`'s clock):
        a shared store's runs in flight, at most one a task, so few (an unshared store
        holds only the attempts a process that died mid-run left owed, ``DIED_UNSHARED``).
        One statement of its own, read after :meth:`listing`'s rows, not joined to them:
        its cost did not show beside the table's (docs/PERFORMANCE.md, "`lldsched tasks`
        on a large store")."""
        return dict(self._query("SELECT task_id, expires_at FROM leases", ()))

    def records(self, task_id: str, last: int) -> list[ExecutionRecord]:
        """The last ``last`` records of ``task_id``, oldest first (every one, for a ``last``
        past what a ``LIMIT`` takes: ``--records 99999999999999999999`` was SQLite's
        ``OverflowError`` and PostgreSQL's "bigint out of range")."""
        statement = _LAST.format(columns=self._records, p=self._p)
        rows = self._query(statement, (task_id, min(last, _MOST_ROWS)))
        rows.reverse()
        return [record_from(row) for row in rows]

    def close(self) -> None:
        self._close()

    def _where(self, status: str | None) -> tuple[str, tuple[object, ...]]:
        """The filter and order of a listing: every task in the order first saved, or
        those in ``status``; the dead letter's (``failed``) in the order they failed."""
        if status is None:
            return " ORDER BY t.position", ()
        order = "t.failed_seq, t.position" if status == "failed" else "t.position"
        return f" WHERE t.status = {self._p} ORDER BY {order}", (status,)

    def _row(self, row: Sequence[Any], shared: SharedParts) -> Row:
        task_id, definition, status = row[0], row[1], row[2]
        state, kept = list(row[self._state]), list(row[self._kept])
        runs, failures = state[2], state[3]
        good = type(runs) is int and type(failures) is int  # else snapshot_from names them
        try:
            task = decode_task(
                task_id,
                definition,
                runs=runs - failures if good else 0,
                imports=False,
                shared=shared,
            )
            snapshot = snapshot_from(task_id, definition, status, state, task=task, kept=kept)
            held = kept[_LEASE_KEPT]  # checked with the row; no holder: no lease
            lease = None if held[3] is None else Lease(task_id, *held)
            return Row(task_id, snapshot, definition=definition, lease=lease)
        except StoreError as exc:
            return Row(str(task_id), None, str(exc))


def _last(record: Sequence[Any]) -> Last:
    """The record of a row's last columns (an engine's ``_LAST`` join), None for none."""
    return None if record[0] is None else record_from(record)
