"""What the core does when its store fails a write after the fact, and when it is closed.

The design (docs/decisions/store-failures.md, "A store that raises"): a registration or a change of
definition whose write fails raises and changes nothing; a later transition whose
write fails is logged, and the in-memory registry stays authoritative.

A store closed before its scheduler (``store.close()`` while the scheduler runs, or
a ``with`` block of the store that ends before the scheduler's) fails *every* later
write the same way, and logging each with its traceback buried the one thing to do.
So, here and only here:

* the first write a closed store refuses (:class:`~lldsched.errors.StoreClosedError`)
  is said **once**, at error level, without a traceback: which store, that the
  scheduler goes on in memory and its changes are no longer stored, and what to do;
  each later one is counted (:attr:`StoreWrites.missed`) and logged at debug level
  (a shared store's claims, renewals and change feed, which the timer calls at every
  wake, are told apart the same way: :meth:`StoreWrites.found_closed`);
* a verb (register, pause, cancel, modify, remove, ...) refuses with a
  ``StoreClosedError`` naming the store *before* it changes anything
  (:meth:`StoreWrites.check_open`): a caller is there to be told, and a change it
  believes stored would be lost at the next restart;
* so does a verb of a runtime that does not hold the store while a running scheduler
  does (:mod:`lldsched.core.store.use`: a scheduler never started or shut down, a
  simulation), with a ``StoreError`` naming both: its write would go behind the
  running scheduler's back.

A store that *fails* (not closed: a PostgreSQL server down, a disk full, a SQLite file
locked by another connection) fails every write too, for as long as the outage lasts:
the outage is said once, at its first failure, and once at its end
(:mod:`lldsched.core.store.outage`), and the rows it left stale are written again
(:mod:`lldsched.core.store.stalerows`, whose :class:`~lldsched.core.store.stalerows.StaleRows`, over
:class:`~lldsched.core.store.outage.OutageWrites`, is mixed into :class:`StoreWrites`).  A
``KeyboardInterrupt`` or ``SystemExit`` a store raises is a failed write like any other,
then raised to the user on the main thread (:mod:`lldsched.core.store.interrupts`).

:class:`StoreWrites` is the core's account of its store's calls, one class written in
those four modules: here, its construction, what the core does with a write that
failed (:meth:`StoreWrites.failed`, :meth:`StoreWrites.call_failed`, and a write made
while an outage goes on, :meth:`StoreWrites.save`), the closed store
(:meth:`StoreWrites.found_closed`, :meth:`StoreWrites.check_open`), and the functions
the core calls with it (:func:`store_failed`, :func:`store_written`,
:func:`check_store`, :func:`purge_retired`, :func:`refused`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Literal

from lldsched.coordination import is_shared
from lldsched.core.store import use as storeuse
from lldsched.core.store.interrupts import interrupt, on_main_thread
from lldsched.core.store.outage import HELD_SETTLES, PURGE, Kind, Outage, check_kind
from lldsched.core.store.outagerecords import Held
from lldsched.core.store.stalerows import StaleRows
from lldsched.errors import StoreClosedError
from lldsched.logs import STORE, Repeats
from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot, TaskStore
from lldsched.storecalls import purge, save_all

__all__ = [
    "ADVICE",
    "StoreWrites",
    "check_store",
    "purge_retired",
    "refused",
    "store_failed",
    "store_written",
]

log = logging.getLogger(STORE)

ADVICE = (
    "shut the scheduler down before closing its store (put the scheduler's `with` "
    "block inside the store's)"
)
"""What to do about a store closed before its scheduler, in every message that says so."""


class StoreWrites(StaleRows):
    """The core's account of the calls its store failed (one per core with a store)."""

    __slots__ = ("closed", "current", "missed", "now", "shared", "store", "user")

    def __init__(
        self,
        store: TaskStore,
        *,
        current: Callable[[str], TaskSnapshot | None] | None = None,
        now: Callable[[], float] = time.monotonic,
        user: object = None,
    ) -> None:
        self.store = store
        self.now = now
        self.shared = is_shared(store)  # rows others write: rewritten only as last read
        # The runtime whose verbs write through this store (a Scheduler, a Simulation):
        # refused while another running scheduler holds the store (check_open).
        self.user = user
        # When the last outage was said at ERROR: one beginning within a window of it is
        # quiet (a store that flaps).  Guarded by whoever guards this StoreWrites.
        self._repeats = Repeats(clock=now)
        self.closed = False  # a call found the store closed (said once, in the log)
        self.missed = 0  # calls a closed store refused: writes, and a shared store's reads
        self.outage: Outage | None = None  # the store is failing: what, how often (None: not)
        # A registered task's snapshot as it is now (None: not registered): what the rows
        # an outage left stale are written again from.  None: they are not (the PostgreSQL
        # store's own account of its batches of settles)
        self.current = current
        # A verb under way whose later steps must not be cut short (interrupts_deferred),
        # and the interrupt a store raised meanwhile on the main thread, for its end.
        self.deferring = False
        self.interrupted: BaseException | None = None
        # The id() of what the store raised last in a write that refused a registration or
        # a change of definition (core/machine.py _first_write, core/definition.py
        # _commit), once the core put everything back, or of the interrupt a store raised
        # that interrupts_deferred kept until the verb was whole: a verb that raised it is
        # whole (a runtime tells it from an interrupt that landed mid-verb, while it is
        # raised: lldsched/sim/verbs.py _whole, left_whole).  An id, not the error: its
        # traceback would hold the caller's frames for as long as no other came.
        self.refused: int | None = None
        # Where a runtime that runs its events on the main thread collects such an
        # interrupt instead, for as long as it sets it (the simulation's event loop: raised
        # once the event under way is whole, lldsched/sim/eventloop.py _advance).  None: not.
        self.collecting: list[BaseException] | None = None

    @property
    def ok(self) -> bool:
        """The store writes: no outage under way, and no call found it closed (what a
        readiness check asks: ``metrics().store_ok``)."""
        return self.outage is None and not self.closed

    def failed(
        self,
        error: BaseException,
        verb: Kind,
        task_id: str,
        snapshot: TaskSnapshot | None = None,
        *,
        purge: bool = False,
        fenced: bool = False,
        records: Sequence[ExecutionRecord] = (),
        removed: Task | None = None,
    ) -> None:
        """A write of ``task_id`` (``verb``: ``"save"`` of ``snapshot`` with ``records``,
        or ``"delete"``, a purge's if ``purge``, a ``remove()``'s of the definition
        ``removed`` if given) raised ``error`` after the change it
        describes was made: logged once an outage (called in an ``except`` block), and its
        row remembered as stale, to be written again as it was asked, with the records
        (:meth:`_rewrite`).  A delete on a shared store is written again as a purge: only
        the row this process last read.  A run's settle (``fenced``: its record carries a
        fencing token) is not a stale row (its row is its lease's; the records of no run
        held for it before are dropped): it is held as it was made
        (:attr:`Outage.settles`, at most :data:`HELD_SETTLES`) and made again, fenced by
        its token (:meth:`_settle_again`).

        The records are held (:class:`Held`, bounded) to be written with the row, in the
        order they were made, before any later record of the task (:meth:`save`): on a
        store of one process every record, a run's too; on a shared store the records of
        no run only (a dependency wait's ``blocked`` record, a slot decided without a
        run), whose place in the history decides nothing, while a run's record is its
        settle's.  ValueError, nothing counted, for a ``verb`` :data:`ENDED_BY` does not
        name."""
        check_kind(verb)
        if not self.found_closed(error, f"{verb} of {task_id}"):
            self._count(error, kind=verb, doing=f"{verb} of {task_id}", writes=1)
            outage = self.outage
            assert outage is not None  # _count began one if none was going on
            held = outage.records.get(task_id)
            if fenced or verb != "save":
                if held is not None:  # dropped with the row: counted, said at the end
                    outage.dropped += held.count
                    del outage.records[task_id]
                    held = None
                if fenced:
                    outage.stale.pop(task_id, None)
                else:
                    outage.stale[task_id] = PURGE if purge or self.shared else None
                if removed is not None and self.shared:  # StaleRows.owes_removal
                    outage.removed[task_id] = removed
                else:
                    outage.removed.pop(task_id, None)
            else:
                outage.stale[task_id] = snapshot
            if verb == "save" and fenced:  # a run's settle: tried again as it was
                assert snapshot is not None and records[0].token is not None
                settles = outage.settles
                settles[records[0].token] = (task_id, snapshot, list(records))
                if len(settles) > HELD_SETTLES:  # the oldest: its run is taken over
                    lost = settles.pop(next(iter(settles)))[2]
                    outage.runs += sum(record.outcome.ran for record in lost)
                    outage.dropped += sum(not record.outcome.ran for record in lost)
            elif verb == "save":
                shared = self.shared
                for record in records:
                    if shared and record.outcome.ran:  # no run's but a settle's, on a shared store
                        outage.runs += 1
                        continue
                    if held is None:
                        held = outage.records[task_id] = Held()
                    held.add(record)

    def save(
        self, task_id: str, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]
    ) -> None:
        """A core's write of ``task_id``'s ``snapshot`` with ``records`` (none, one, or a
        run's and the slots its finish decided) while an outage goes on (the caller tested
        :attr:`outage`): on a store of one process, a write that carries records of a task
        that has records held (:class:`Held`) adds its own to them and writes them all,
        in order, with the row (:meth:`_write_held`): a record written before those held
        would come before them in the store, which orders a task's records as they were
        written (a restart reads a task's latest run from that order).  Any other write
        as it is.  A failure is one more failed write (:meth:`failed`; what was not
        written stays held), a success :meth:`succeeded`, which writes the rows still
        stale."""
        outage = self.outage
        assert outage is not None
        held = None if self.shared or not records else outage.records.get(task_id)
        try:
            if held is not None:
                for record in records:
                    held.add(record)
                self._write_held(outage, snapshot, held)
                del outage.records[task_id]
            elif not records:
                self.store.save(snapshot)
            elif len(records) == 1:
                self.store.save(snapshot, records[0])
            else:
                save_all(self.store, snapshot, records)
        except BaseException as exc:  # the registry stays authoritative
            fenced = bool(records) and records[0].token is not None  # a run's settle
            carried = () if held is not None else records  # held already
            store_failed(self, exc, "save", task_id, snapshot, fenced=fenced, records=carried)
        else:
            self.succeeded("save", task_id)

    def call_failed(
        self, error: Exception, kind: Kind, doing: str, *, writes: int = 0, dropped: int = 0
    ) -> None:
        """A shared store's call of ``kind`` (``"claim"``, ``"renewal"``, ``"change
        feed"``, ``"settle batch"``, ...) raised ``error``; ``doing`` says what failed
        (``"claim"``, ``"release of task-1"``); ``writes``: the task writes it carried
        that are not stored (a batch of settles: one each, the first time it fails);
        ``dropped``: the records the caller held and let go past its bound (the
        PostgreSQL store's settles held: ``postgres/batch.HELD_SETTLES``).  Logged as
        :meth:`failed` logs a write (called in an ``except`` block).  ValueError,
        nothing counted, for a ``kind`` :data:`ENDED_BY` does not name."""
        check_kind(kind)
        if not self.found_closed(error, doing):
            self._count(error, kind=kind, doing=doing, writes=writes)
            assert self.outage is not None  # _count began one if none was going on
            self.outage.dropped += dropped

    def found_closed(self, error: BaseException, doing: str) -> bool:
        """True if ``error`` says the store is closed (then logged here: at error level
        the first time, naming the store and what to do, at debug level after); False
        for any other error, which the caller logs as it always did.  ``doing`` is
        what failed (``"save of task-1"``, ``"claim"``)."""
        if not isinstance(error, StoreClosedError):
            return False
        self.missed += 1
        if self.closed:
            log.debug("store %r is closed: %s not done", self.store, doing)
            return True
        self.closed = True
        log.error(
            "store %r was closed while its scheduler still runs (found at a %s): nothing "
            "the scheduler does from now on is stored (a restart will not see it), and its "
            "verbs raise StoreClosedError; %s",
            self.store,
            doing,
            ADVICE,
        )
        return True

    def check_open(self, verb: str, task: str) -> None:
        """Raise :class:`StoreClosedError` if the store is closed (it says so, or a write
        found it so), before ``verb`` changes anything of ``task`` (an id, or a name);
        a :class:`~lldsched.errors.StoreError` if a running scheduler other than
        :attr:`user` holds it (:func:`lldsched.core.store.use.check`)."""
        store = self.store
        if self.closed or getattr(store, "closed", False) is True:
            raise StoreClosedError(
                f"cannot {verb} {task!r}: the store {store!r} is closed but its scheduler "
                f"still runs, and nothing was changed; {ADVICE}"
            )
        storeuse.check(store, self.user, doing=f"{verb} {task!r}")


def check_store(writes: StoreWrites | None, verb: str, task_id: str) -> None:
    """A core's verb: refuse ``verb`` on ``task_id`` before it changes anything if the
    store is closed (:meth:`StoreWrites.check_open`); ``None``: no store, nothing to check."""
    if writes is not None:
        writes.check_open(verb, task_id)


def store_failed(
    writes: StoreWrites | None,
    error: BaseException,
    verb: Kind,
    task_id: str,
    snapshot: TaskSnapshot | None = None,
    *,
    purge: bool = False,
    fenced: bool = False,
    records: Sequence[ExecutionRecord] = (),
    removed: Task | None = None,
) -> None:
    """A core's write that failed after the change it describes was made: logged by
    :meth:`StoreWrites.failed` (called in an ``except BaseException`` block, so with a
    store; ``purge``: the delete was a purge, written again as one; ``fenced``: a run's
    settle, whose row is its lease's, not written again; ``removed``: the definition a
    ``remove()`` forgot, whose delete this was).

    A ``BaseException`` that is not an ``Exception`` (a ``KeyboardInterrupt`` or
    ``SystemExit`` raised inside ``save`` or ``delete``) is a failed write like any
    other, logged the same way; then, on the main thread only, it is raised again: the
    user's Ctrl-C or exit reaches them (the registry holds the change already), at once
    or, inside :func:`interrupts_deferred`, once the verb under way is whole.  On any
    other thread (a worker, the timer, the coroutine loop) it stops there: that thread
    goes on and its run is settled, as an action's own ``KeyboardInterrupt`` is a
    failed run (docs/decisions/store-failures.md, "A store's save that raises a BaseException").
    """
    assert writes is not None  # a core makes one with its store
    writes.failed(
        error, verb, task_id, snapshot, purge=purge, fenced=fenced, records=records,
        removed=removed,
    )  # fmt: skip
    if not isinstance(error, Exception) and on_main_thread():
        interrupt(writes, error)


def purge_retired(writes: StoreWrites | None, store: TaskStore, task_id: str) -> None:
    """Delete ``task_id`` from ``store`` as it retires (``purge_retired=True``), only while
    its row is still the one this process saw retire (:func:`~lldsched.storecalls.purge`):
    a row another process wrote since (it registered the id again) or holds the lease of
    (it took over the run whose settle here was refused) is kept, said at INFO, and the
    change feed brings it in.  A failure is one of a core's writes
    (:func:`store_failed`); the registry stays authoritative."""
    try:
        gone = purge(store, task_id)
    except BaseException as exc:
        store_failed(writes, exc, "delete", task_id, purge=True)  # tried again as a purge
        return
    store_written(writes, "delete", task_id)
    if not gone:
        log.info(
            "task %s retired here, but another process wrote its row since this one last read "
            "it (it registered the id again) or holds its lease (it took the run over): the "
            "row is kept, not purged",
            task_id,
            extra={"task_id": task_id},
        )


def refused(
    writes: StoreWrites | None,
    error: BaseException,
    task_id: str,
    row: TaskSnapshot | Literal[False] | None = None,
) -> None:
    """The store raised ``error`` in a write of ``task_id`` that refused a registration or
    a change of definition, and the core put everything back: its id kept as
    :attr:`StoreWrites.refused`, so that a runtime tells this whole refusal from an
    interrupt that landed mid-verb.

    A ``KeyboardInterrupt`` or ``SystemExit`` the store raised may have landed once its
    write was made (a Ctrl-C in its commit's return): the row it wrote is marked stale,
    written again as the registry has it (``row``: the task as put back; None: not
    registered, deleted), as any failed write is; ``False``: left as it is (a retired
    task replaced, whose row before is not known here).  An ``Exception`` is the store's
    refusal: nothing was written."""
    if writes is not None:
        writes.refused = id(error)
        if not isinstance(error, Exception) and row is not False:
            if row is None:
                writes.failed(error, "delete", task_id)
            else:
                writes.failed(error, "save", task_id, row)


def store_written(writes: StoreWrites | None, verb: Kind, task_id: str) -> None:
    """A core's write of ``task_id`` (``verb``: ``"save"`` or ``"delete"``) succeeded: its
    row is no longer stale, and it ends an outage in which one of its kind failed
    (:meth:`StoreWrites.succeeded`)."""
    if writes is not None and writes.outage is not None:
        writes.succeeded(verb, task_id)
