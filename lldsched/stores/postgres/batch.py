"""The settles a :class:`~lldsched.stores.postgres.PostgresTaskStore` has not written yet,
and the thread that writes them: many runs' fenced settles in one statement.

A run's settle (the store's ``save(snapshot, record)`` with the run's fencing token)
is not written by the thread that ran the run, under the scheduler's lock: it is
queued here (:meth:`SettleQueue.add`) and the queue's writer thread has the store
write every settle waiting, in one statement (:data:`~lldsched.stores.postgres.lease_sql.SETTLE`:
one round trip, one commit).  While one batch is being written the runs that finish
meanwhile wait for the next, so under load a batch holds what finished during the
previous round trip (a group commit), and with one run at a time it is written at
once.  Each settle in a batch is fenced by its own token as before: a refused one
is reported and counted, the others are written.

**Order.**  The store writes what waits here before any other statement of its own
(a control verb, a removal, a claim), under its connection's lock, so its writes
reach the database in the order they were made.  The records a run's finish decides
after its own (SKIPPED slots, same token) join its queued settle; one that comes
while the settle is being written waits for its outcome (:meth:`SettleQueue.outcome`).

**Durability.**  A run whose settle is still queued when its process dies was run
and not recorded: its lease expires and another process runs it again, as for a
process that dies mid-run (at-least-once, docs/CLUSTER.md).  The runtime calls the
store's ``flush()`` at shutdown and in ``wait_idle()``, so a clean stop leaves
nothing queued.

**A batch the store fails** (the server away) is held (:meth:`SettleQueue.hold`), in
order, and written again before the store's next statement (a claim at the timer's next
wake, a verb, a flush), ahead of what was queued since: each settle still fenced by its
token, so one whose lease another process took over meanwhile is refused, and one the
first try wrote before its reply was lost is not written twice (the store's
``_settled_before``).  At most :data:`HELD_SETTLES`; past them the oldest are dropped,
counted, and their runs taken over once their leases expire, as every failed batch's
were before (docs/decisions/store-failures.md, "The runs of a store outage are written late").
The writer thread is not woken for them (it would retry at once, again and again,
while the server is away).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lldsched.logs import STORE
from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot
from lldsched.stores.codec import encode_task
from lldsched.stores.postgres.rows import record_row, state_row
from lldsched.threadstarts import start

__all__ = ["HELD_SETTLES", "Pending", "SettleQueue", "settle_parameters"]

log = logging.getLogger(STORE)

MEMORY = 4096  # outcomes remembered, for the SKIPPED records that follow a settle

HELD_SETTLES = 1000
"""The settles of failed batches a store holds to write again (:meth:`SettleQueue.hold`);
past them the oldest are dropped (their runs taken over once their leases expire)."""


class Pending:
    """One run's settle, queued: the task's state after the run, and its records (the
    run's own first, then the slots its finish decided, all under its token)."""

    __slots__ = ("records", "snapshot", "token", "tried")

    def __init__(
        self, token: int, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]
    ) -> None:
        self.token = token
        self.snapshot = snapshot
        self.records = list(records)
        self.tried = False  # a batch carrying it failed: held (SettleQueue.hold)


class SettleQueue:
    """Settles waiting to be written, oldest first, and the writer thread.

    ``write`` is the store's ``flush``: it takes the batch (:meth:`take`) under the
    store's connection lock, writes it and reports each token's outcome
    (:meth:`done`).  The thread starts with the first settle queued (never with
    ``writer=False``: then only the store's own calls write, which tests use to
    hold settles back; nor where the interpreter's exit refuses it: :attr:`unwritten`);
    :meth:`stop` ends it, and the queue takes no more.  ``store``: the store as its log
    lines name it (its dsn, the password hidden), for the writer's own line.
    """

    def __init__(self, write: Callable[[], None], *, store: str, writer: bool = True) -> None:
        self._write = write
        self._store = store
        self._writer = writer
        # Guards _pending, _held, _flying, _outcomes, _queued, _failed_at, _stopping and
        # _thread (unwritten and waiting read them without it, as hints); the writer
        # thread waits on it for a settle.  Never held while calling out (write, the
        # database).  Lock order: the store's lock (take() is called under it), then this.
        self._ready = threading.Condition(threading.Lock())
        self._pending: dict[int, Pending] = {}  # token -> its settle, in arrival order
        self._held: dict[int, Pending] = {}  # the settles of failed batches, oldest first
        self._flying: set[int] = set()  # tokens taken, their outcome not known yet
        self._outcomes: dict[int, bool] = {}  # token -> written (True) or refused / failed
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._queued = 0  # settles added so far (new or joined): the writer's news
        self._failed_at = -1  # _queued when the writer's write last raised (-1: never)

    def add(
        self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
    ) -> bool:
        """Queue the settle of the run with ``token`` (``records``: the run's, then those
        of the slots it skipped, all in the one batch that writes it), or add ``records``
        to the one queued under it.  False when that token's settle was taken already
        (being written, or done): the caller then acts on its :meth:`outcome`; False too
        once stopped."""
        with self._ready:
            if self._stopping:
                return False
            pending = self._pending.get(token) or self._held.get(token)
            self._queued += 1
            if pending is not None:
                pending.snapshot = snapshot
                pending.records.extend(records)
                return True
            if token in self._flying or token in self._outcomes:
                return False
            self._pending[token] = Pending(token, snapshot, records)
            if self._thread is None and self._writer:
                thread = threading.Thread(target=self._run, name="lldsched-pg-settle", daemon=True)
                if start(thread):  # else the interpreter's exit refused it: unwritten
                    self._thread = thread
            self._ready.notify()
            return True

    @property
    def unwritten(self) -> bool:
        """True when settles are queued that no writer thread will write: the interpreter's
        exit refused it (Python 3.12.0 to 3.12.2, :mod:`lldsched.threadstarts`).  The
        caller of :meth:`add` then has the store write them itself, as a late write is
        better than a run made twice; the next settle tries the thread again.  A cheap
        read, no lock: a hint, as :attr:`waiting` is."""
        return self._thread is None and self._writer and bool(self._pending)

    @property
    def waiting(self) -> bool:
        """True when a settle is queued or held (a cheap read, no lock: a hint)."""
        return bool(self._pending or self._held)

    def take(self) -> list[Pending]:
        """Every settle held (:meth:`hold`), then every one queued, oldest first; they
        count as in flight until :meth:`done` or :meth:`hold`.  The caller holds the
        store's connection lock until then."""
        with self._ready:
            batch = [*self._held.values(), *self._pending.values()]
            self._held = {}
            self._pending = {}
            self._flying.update(pending.token for pending in batch)
            return batch

    def hold(self, batch: list[Pending]) -> list[Pending]:
        """``batch``, taken, was not written (the store failed): held, oldest first, to be
        taken again before what is queued since, no longer in flight nor with an outcome
        (its records that follow join it: :meth:`add`).  Past :data:`HELD_SETTLES`, the
        oldest are dropped, their outcome not written: returned."""
        with self._ready:
            for pending in batch:
                pending.tried = True
                self._flying.discard(pending.token)
                self._outcomes.pop(pending.token, None)
            held = [*batch, *self._held.values()]
            dropped = held[: max(0, len(held) - HELD_SETTLES)]
            self._held = {pending.token: pending for pending in held[len(dropped) :]}
        self.done((pending.token, False) for pending in dropped)
        return dropped

    def done(self, outcomes: Iterable[tuple[int, bool]]) -> None:
        """The outcome of each token taken: written, or not (refused, or the write failed)."""
        with self._ready:
            for token, written in outcomes:
                self._flying.discard(token)
                if len(self._outcomes) >= MEMORY:
                    del self._outcomes[next(iter(self._outcomes))]
                self._outcomes[token] = written

    def outcome(self, token: int) -> bool | None:
        """Whether the settle with ``token`` was written (None: not known here)."""
        with self._ready:
            return self._outcomes.get(token)

    def stop(self) -> None:
        """End the writer thread (the store flushed first); nothing more is queued."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    def _run(self) -> None:
        """Write what is queued, each time a settle comes.  After a write that raised (a
        bug of ours: the store logs its own failures and holds the batch), the next try
        waits for the next settle queued, or the store's own flush writes it: before, the
        writer tried again at once, for ever, a core spent and a traceback logged at each
        turn, for as long as the bug lasted."""
        ready = self._ready
        while True:
            with ready:
                while (not self._pending or self._queued == self._failed_at) and not self._stopping:
                    ready.wait()
                if self._stopping:
                    return
                queued = self._queued
            try:
                self._write()
            except Exception:  # the store logs its own failures: this is a bug of ours
                with ready:
                    self._failed_at = queued
                # which store: a process may have several
                log.exception("the settle writer of the PostgreSQL store %r failed", self._store)


def settle_parameters(
    batch: list[Pending],
    *,
    node: str,
    channel: str,
    defined: dict[str, Task],
    seen: dict[str, int],
) -> dict[str, Any]:
    """The arrays :data:`~lldsched.stores.postgres.lease_sql.SETTLE` unnests: one element per
    settle (its definition only when the row may hold another one; the row's version
    this node's feed last read, -1 for none), one per record; with the writer's ``node``
    and the store's ``channel`` (:func:`~lldsched.stores.postgres.sql.channel`)."""
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "id", "token", "status", "next_run_at", "attempt", "run_count", "failure_count",
            "last_error", "running", "waited", "resume_at", "grid", "name", "definition",
            "priority", "seen",
            "r_task_id", "r_attempt", "r_due", "r_slot", "r_worker", "r_started",
            "r_finished", "r_ok", "r_error", "r_timed_out", "r_misfire", "r_result",
            "r_token", "r_name", "r_node",
        )
    }  # fmt: skip
    for pending in batch:
        snapshot = pending.snapshot
        task = snapshot.task
        same = defined.get(task.id) == task
        row = {
            **state_row(snapshot),
            "token": pending.token,
            "name": None if same else task.name,
            "definition": None if same else encode_task(task),
            "priority": None if same else int(task.priority),
            "seen": seen.get(task.id, -1),
        }
        for name, value in row.items():
            columns[name].append(value)
        for record in pending.records:
            for name, value in {**record_row(record), "token": pending.token}.items():
                columns[f"r_{name}"].append(value)
    return {"node": node, "channel": channel, **columns}
