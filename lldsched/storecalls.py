"""The methods a store may have beyond the protocols of :mod:`lldsched.persistence`, each
called through a function that falls back to the protocol's own when the store has none:
several records in one write (:func:`save_all`), a retiring task's conditional delete
(:func:`purge`), a stale row written again (:func:`resave`), a control verb's hold of its
rows (:func:`verb_held`, with :class:`HoldNotCommitted` when its end fails) and of its calls
(:func:`verb_call`), and the settles a store holds back (:func:`settles_waiting`).  None is
in :class:`~lldsched.persistence.TaskStore` itself: a store written before it still is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot, TaskStore

__all__ = [
    "HoldNotCommitted",
    "not_committed",
    "purge",
    "resave",
    "save_all",
    "settles_waiting",
    "verb_call",
    "verb_held",
]


def save_all(store: TaskStore, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
    """Persist ``snapshot`` with each of ``records``, in order: a run's record and the
    records of the slots its finish decided without a run (SKIPPED, or COALESCED under
    ``Overlap.BUFFER_ONE``), which the core writes together.

    A store with a ``save_all(snapshot, records)`` method of its own writes them all or
    none (SQLite and PostgreSQL: one transaction), so a process killed among them loses
    none of the slots' records alone: those slots are past the task's next due instant,
    and nothing would decide them again.  Any other store (the in-memory one, a store of
    one's own: docs/EXTENDING.md) gets the default, one ``save(snapshot, record)`` a
    record, which a kill between two may cut short.  Not in :class:`TaskStore` itself:
    a store written before it still is one.  Called only when a finish decided such
    slots: a run that skips nothing is one ``save``, as before."""
    write = getattr(store, "save_all", None)
    if write is not None:
        write(snapshot, records)
        return
    for record in records:
        store.save(snapshot, record)


def purge(store: TaskStore, task_id: str) -> bool:
    """Delete ``task_id``, which just retired in this process (``purge_retired=True``),
    only while its row is still the one this process saw retire; True if it is gone.

    A store several processes share may hold a newer row by then: another process
    registered the id again (``replace_existing=True``, or a registration after a
    removal) after this one last read the store, and an unconditional delete took that
    registration away from every process.  A store with a ``purge(task_id)`` method of
    its own leaves a row written by another process since this one last read or wrote
    it (its change feed brings it in), or held by another process's live lease (it took
    over the run that ended the task here, whose settle was then refused: its run goes
    on there), and returns False: a shared SQLite store by its rows' versions,
    PostgreSQL by their versions, writers and transaction ids, both by their leases.  Not in
    :class:`TaskStore` itself: any other store (one of one's own: docs/EXTENDING.md) has
    no other writer to race, and gets its ``delete``.  A user's ``remove()`` stays
    unconditional: it is a decision about the task, whoever wrote its row last."""
    conditional = getattr(store, "purge", None)
    if conditional is None:
        store.delete(task_id)
        return True
    return bool(conditional(task_id))


def verb_held(
    store: object, task_id: str, also: Sequence[str] = ()
) -> AbstractContextManager[None]:
    """What a control verb (pause, cancel, resume, modify, reschedule, ...) on ``task_id``
    runs inside, from its read of a shared store's change feed to its last write: no
    other process writes that row meanwhile.  Else a run's settle that committed between
    the two was written over by the row as the verb's process had it before that run
    (its status, its due instant at the slot already run, its run count): a pause
    written so, then a resume, ran that slot a second time (docs/CLUSTER.md).

    A store with a ``verb_held(task_id)`` method of its own gives that (a shared SQLite
    store: one transaction holding the file's write lock; PostgreSQL: one transaction
    holding the row's lock); any other store has no other writer to race, and nothing is
    held.  The verb reads the feed inside, so it applies every change committed before,
    and the other process's write waits for the verb's to commit (a settle then keeps a
    pause or cancel written during its run, as ever).

    ``also``: the other tasks whose rows the verb may write (a ``cancel``'s dependents,
    which it fails), held from the start with the task's own, all at once in one order
    (PostgreSQL: by id), given to the store only when there are some.  Two verbs that
    took them one by one as each was written, in the orders their processes had
    learnt them, each waited for a row the other held: PostgreSQL broke that deadlock
    after a second by failing one of the writes (an outage said at ERROR)."""
    held: Callable[..., AbstractContextManager[None]] | None = getattr(store, "verb_held", None)
    if held is None:
        return nullcontext()
    return held(task_id, also=also) if also else held(task_id)


def verb_call(store: object) -> AbstractContextManager[None]:
    """What the store calls of one act on a shared store run inside when no row is held
    for it (a registration of a new task: its read of the change feed, its write; a
    rewrite of the rows an outage left stale; a verb's :func:`verb_held` is one too): a
    store with a ``verb_call()`` method of its own makes them one call of its deadline,
    so that during an outage they wait one ``timeout`` in all (PostgreSQL,
    docs/decisions/store-failures.md "One timeout a PostgreSQL call, and a verb's"); any other store
    makes them as ever."""
    call: Callable[[], AbstractContextManager[None]] | None = getattr(store, "verb_call", None)
    return nullcontext() if call is None else call()


def settles_waiting(store: object) -> bool | None:
    """Whether ``store`` has runs' settles waiting to be written (a PostgreSQL store's:
    queued for a batch, or held after one failed), None if it does not say (it writes
    each settle at once: SQLite).  The runtime reads it around a :meth:`CoordinatedStore.flush`:
    a flush that had nothing to send, or whose settles the store held again (an outage),
    is no sign that the store answers, and is not counted a success (which would end an
    outage in which a flush failed, and write the rows it left stale once more, another
    ``timeout`` in a black hole: docs/decisions/store-failures.md, "One timeout a PostgreSQL call,
    and a verb's")."""
    waiting = getattr(store, "settles_waiting", None)
    return None if waiting is None else bool(waiting)


class HoldNotCommitted(StoreError):
    """A verb's hold (:func:`verb_held`) whose end failed (its commit: the connection lost,
    the disk full; or the database rolled its transaction back under it): none of the
    writes made inside is stored, or whether they are is not known (a PostgreSQL COMMIT
    sent, its reply lost with the connection; an interrupt in the end, below), and its
    message says which.  ``written`` names each task written there, to the last snapshot
    written of it (None: a delete), so that the runtime writes every one of them again as
    a failed write (conditionally: a row the COMMIT did store is left as it is), not only
    the verb's own task: a ``cancel``'s dependents, a retirement's purge, a stale row
    written again inside.

    **It never takes the place of an error that is not a store's.**  A hold's block that
    raised one (a ``KeyboardInterrupt``, a signal handler's exception, the verb's own
    error) has it raised from the hold, this error its ``__context__``
    (:func:`not_committed` finds it there; a traceback shows both).  A block that ended
    well, or raised a :class:`~lldsched.errors.StoreError` (a call inside that failed,
    most often the one that ended the hold: this error says it and more), has this error
    raised.  The stores' holds keep the rule (:meth:`HeldWrites.undo
    <lldsched.stores.held.HeldWrites.undo>`), so a store used without a runtime raises a
    user's interrupt as the runtime's verbs do.  Before, the stores raised this error in
    its place (PostgreSQL's left the interrupt out of its chain altogether), and only the
    runtime raised the caller's again.

    An interrupt that lands in the hold's end itself, before its COMMIT is known to be
    made, is raised with this error its ``__context__`` too, the COMMIT taken as not made
    (:meth:`HeldWrites.cut <lldsched.stores.held.HeldWrites.cut>`), and this error says
    the writes may or may not be stored ("a verb's hold may not have been committed,
    whether its writes are stored is not known"): an interrupt raised as the COMMIT's
    call returns, made, cannot be told from one raised before it ran.  One that lands
    once the COMMIT is known made is raised alone, the writes stored."""

    def __init__(self, message: str, *, written: Mapping[str, TaskSnapshot | None]) -> None:
        super().__init__(message)
        self.written = written


def not_committed(error: BaseException) -> HoldNotCommitted | None:
    """The :class:`HoldNotCommitted` of a verb's hold that raised ``error``: ``error``
    itself, or the one that is its ``__context__`` (the block raised ``error``, and the
    hold's end failed); None if the hold's end did not fail so."""
    if isinstance(error, HoldNotCommitted):
        return error
    context = error.__context__
    return context if isinstance(context, HoldNotCommitted) else None


def resave(
    store: TaskStore, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()
) -> bool:
    """Write ``snapshot`` again, a row a store outage left stale
    (:mod:`lldsched.core.store.outage`), with ``records``, the records of no run the
    writes that failed carried (a dependency wait's ``blocked`` record), only while that
    row is still as this process last read or wrote it and no lease holds it; True if
    written (or the store has no other writer), False if it was left as it is (the
    records with it: the row is another's now).

    A store several processes share holds rows another process may have written since
    this one's write failed, or that a lease gives to its holder, whose settle writes
    them: written over, that change was lost (a pause, a new definition, another wait's
    end).  So a store with a ``resave(snapshot)`` method of its own writes only a row its
    change feed has nothing newer of and that no live lease holds, in one transaction
    (a shared SQLite store by its rows' versions, PostgreSQL as :func:`purge` knows a
    row); one left is the feed's to bring in, or its lease holder's to write.  Any other
    store (one process, one of one's own: docs/EXTENDING.md) gets its ``save``, or
    :func:`save_all` with ``records``.  A store's own ``resave`` is asked
    ``resave(snapshot)`` when there are no records (as before they were written again),
    ``resave(snapshot, records)`` when there are."""
    conditional = getattr(store, "resave", None)
    if conditional is None:
        if records:
            save_all(store, snapshot, records)
        else:
            store.save(snapshot)
        return True
    return bool(conditional(snapshot, records) if records else conditional(snapshot))
