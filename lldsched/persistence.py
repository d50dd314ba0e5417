"""The persistence seam: the TaskStore protocol every status change is written through,
and what it is given: a task's definition (:class:`Task`) and its state (:class:`TaskSnapshot`).

The core calls ``save`` at every transition, with the run's record when the
transition ends a run, while its runtime holds the scheduler's lock: a store
should be quick, and must not call back into the scheduler.  ``delete`` forgets
a task removed from the scheduler; ``load_all`` returns the latest snapshot of
every task it holds (recovery after a restart builds on it).

A store is optional.  With ``store=None`` nothing is written (the registry
already holds the state) and the hot path builds no snapshot at all.

A runtime opened on a store that already holds tasks restores them (see
:mod:`lldsched.core.recovery`).  A store that also gives back the records it kept
and the dead-letter order (:class:`HistoryStore`) has those restored too.

The rest of the seam is here too, so that a store's author reads one module: the
methods a store may have beyond the protocols, each called through a function that
falls back to the protocol's own when it has not (:func:`save_all`, :func:`purge`,
:func:`resave`, :func:`verb_held`, :func:`verb_call`, :func:`settles_waiting`), and the
bounds every store holds a task's id and text to, whichever store it is
(:func:`check_id_size`, :func:`check_storable`).

**Several processes, one set of tasks** (:class:`CoordinatedStore`, docs/CLUSTER.md).
A store shared by several schedulers hands each due run to exactly one of them
through a *claim*: a lease with an expiry and a *fencing token* taken from one
counter that only ever increases.  The threaded runtime claims before it
dispatches, renews its leases while the runs are in flight, and settles a run
with a write that is refused (:class:`~lldsched.errors.LeaseLost`) unless the
lease with that token is still there.  Rows written by other processes (control
verbs, registrations, runs settled elsewhere) come back through a change feed,
which the runtime applies to its own registry through the core's verbs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NamedTuple, Protocol, runtime_checkable

from lldsched.checks import id_hint, instance_hint
from lldsched.errors import StoreError, ValidationError, shown
from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.redaction import hide_passwords
from lldsched.schedules.base import Schedule

__all__ = [
    "DIED_UNSHARED",
    "FINISHED_STATUSES",
    "MAX_ID_BYTES",
    "SHORT_ID",
    "Change",
    "Claim",
    "CoordinatedStore",
    "HistoryStore",
    "HoldNotCommitted",
    "Lease",
    "Task",
    "TaskSnapshot",
    "TaskStore",
    "check_id_size",
    "check_storable",
    "claim_narrowed",
    "finished",
    "is_shared",
    "not_a_store",
    "purge",
    "records_asked",
    "resave",
    "save_all",
    "verb_call",
    "verb_held",
]


MAX_ID_BYTES = 2000
"""The longest task id, in bytes of UTF-8, on every store and runtime.  The PostgreSQL
store keeps an id as an index key (the tasks', records', leases' and removals'), and
PostgreSQL refuses a key over 2,704 bytes *after compression*: a random id over 2,689
bytes in the records' key (the id and an 8-byte sequence), a repetitive one of 100,000
passed.  A round bound under it, the same whatever the id is made of and whichever the
store: an id tried on the in-memory or SQLite store is not refused on moving to
PostgreSQL (docs/decisions/checking-input.md, "A task id is at most 2,000 bytes")."""


SHORT_ID = MAX_ID_BYTES // 4
"""An id of at most this many characters is within :data:`MAX_ID_BYTES` (UTF-8 takes at
most four bytes a character): only a longer one is encoded to be measured."""


_WHY_BOUNDED = {
    "id": "PostgreSQL keeps an id as an index key",
    "name": "a name is written with every record, log line and view of its task",
}


def check_id_size(task_id: str, *, nothing: str, field: str = "id") -> None:
    """Refuse a task id over :data:`MAX_ID_BYTES` with a :class:`ValidationError` naming
    its start, its size and the bound; ``nothing``: what the caller did not do
    (``"registered"``, ``"written"``).  One ``len`` for an id of at most
    :data:`SHORT_ID` characters (a caller on a hot path tests that first).
    ``field="name"``: the same bound on a task's name (a name of a million characters
    was taken, and written whole into every record, log line and message of its task)."""
    if len(task_id) <= SHORT_ID:
        return
    size = len(task_id.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        raise ValidationError(
            f"task {field} {task_id[:40]!r}... ({size} bytes in UTF-8) is longer than the "
            f"{MAX_ID_BYTES} bytes a task {field} may have (the same bound on every store: "
            f"{_WHY_BOUNDED[field]}); nothing was {nothing}"
        )


def unstorable(text: str) -> str | None:
    """What in ``text`` no durable store keeps as text, said; None if nothing: a NUL
    (PostgreSQL's ``text`` holds none; an SQLite store kept it, and a move to PostgreSQL
    failed on it) or a lone surrogate (UTF-8 refuses it: both drivers raised a bare
    ``UnicodeEncodeError`` naming neither the task nor the value).  The one rule of
    every text a durable store writes (docs/decisions/checking-input.md, "Text a durable store
    cannot keep"): :func:`check_storable`, ``stores.codec.check_written``."""
    if "\x00" in text:
        return "a NUL (\\x00)"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (not UTF-8: text decoded from bytes with surrogateescape?)"
    return None


def check_storable(field: str, value: str, *, nothing: str) -> None:
    """Refuse a task's ``field`` (``"id"``, ``"name"``) holding text no durable store
    keeps (:func:`unstorable`) with a :class:`ValidationError` naming it; ``nothing``:
    what the caller did not do (``"registered"``, ``"written"``).  Asked by every
    registration for its name, whatever the store (as :func:`check_id_size` is for its
    id: a name tried on the in-memory store is not refused on moving to a durable one),
    and by a durable store for every definition it writes."""
    problem = unstorable(value)
    if problem is not None:
        raise ValidationError(
            f"task {field} {value!r} holds {problem}, which a durable store cannot keep "
            f"as text (refused on every store); nothing was {nothing}"
        )


class Task(NamedTuple):
    """The definition of a task (the *Command*): what runs, when, and how it fails.

    Immutable: the queue, the pool and the stores move it around without knowing
    what it does.  Its live state is in :class:`~lldsched.core.task.ScheduledTask`.
    """

    id: str
    name: str
    action: Callable[..., Any] | None
    schedule: Schedule
    priority: Priority
    retry: RetryPolicy
    timeout: float | None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None
    misfire: MisfirePolicy | None = None  # None: the default policy
    isolation: str = "thread"  # or "process" (lldsched.core.isolation.ISOLATIONS)
    depends_on: tuple[str, ...] = ()  # upstream task ids (lldsched.core.dependencies)
    overlap: Overlap | None = None  # None: runs never overlap (the schedule's own rule)
    max_instances: int | None = None  # with Overlap.ALLOW only


class TaskSnapshot(NamedTuple):
    """What a :class:`~lldsched.persistence.TaskStore` is given at every transition.

    ``running`` is True while an attempt is in flight (also for a task paused
    mid-run): recovery runs that attempt again (at-least-once).

    ``waited`` is the slot the task's own schedule waits for behind the run due at
    ``next_run_at``, when that run is an extra one planned in front of it (a
    ``run_now``, a misfire's catch-up); None when ``next_run_at`` is the schedule's
    own.  Every durable store keeps it (``lldsched/stores/contract.py`` checks it):
    recovery after a restart puts that slot first again, and so does whichever process
    of a shared store runs the extra run, instead of counting the schedule on from the
    extra run (a fixed-rate grid would move).

    ``slot`` is the slot the run due at ``next_run_at`` serves, when it is not that
    instant: a run a plan decided (a catch-up slot, a ``run_now``'s extra run) that a
    ``resume()`` made due after its slot had passed, due at the resume instant (its record
    says that slot and that due, docs/decisions/schedules.md, "Resume re-anchors a fixed-rate
    grid"); None otherwise, and always for a retry (whose slot the records keep).  Every
    durable store keeps it, so the record is the same whichever process runs that run.

    ``resumes`` is True when ``waited`` is the slot the task's own schedule resumes at
    after a misfire decision's plan (``SKIP`` behind an owed retry, a plan cut at the
    1,000-slot cap: :class:`~lldsched.schedules.catchup.CatchUp` ``resumes``), not a slot
    decided to run (a ``run_now``'s, a catch-up slot): a run before it that outlasts it
    skips it, as the own schedule skips the slots a run outlasts, where a decided slot
    runs late.  Every durable store keeps it with ``waited``, so a plan put back from the
    row (a restart within grace, a process following a shared store) skips that slot as
    the process that decided the plan does; False otherwise.

    ``until`` is where the slots a misfire decision's plan decided to run end, while
    ``waited`` is one of them: the task's own schedule's first slot after them
    (:attr:`CatchUp.until <lldsched.schedules.catchup.CatchUp.until>`); None otherwise.
    A ``RUN_ALL`` plan put back from the row runs its slots up to it, and only the slots
    from it on meet the misfire policy (they passed after the plan was made); without
    it, every slot after ``waited`` up to the restart was caught up as the plan's.  The
    durable stores keep it in the column that keeps the slot to resume at (it is always
    after ``waited``, which that slot is when ``resumes``): docs/decisions/persistence.md, "A
    RUN_ALL plan put back from a row ends where it was decided".

    ``grid`` is the origin of the grid a ``FixedRate`` task's slots are counted on (its
    ``k``-th slot is ``FixedRate.slot_at(grid, k)``: the first slot, or where a
    reschedule, a resume or a slot off the grid started it again); None for a task whose
    schedule counts on no such grid (a ``FixedRate``, or a ``Window`` or ``Jittered``
    around one, does: :func:`~lldsched.schedules.base.counts_on_grid`; for ``Jittered``
    a delayed instant, whose undelayed slot is the origin), and in a row an older
    release wrote.  Every durable store keeps it, so a restart, or another process of a shared
    store, counts the slots from the same origin, the very floats, instead of starting a
    grid at the restored slot (whose sums drift: docs/decisions/schedules.md, "A fixed rate's grid
    origin is kept in the row").  Read only where the task's slot is on that grid
    (``FixedRate.next_on_grid`` checks it): a stale one starts a new grid at the slot, as
    a row without one does.

    ``blocked_due`` and ``blocked_slot`` are the due instant and the slot of the slot a
    BLOCKED dependent was found blocked at, when a ``reschedule`` moved its next slot
    during that wait (``next_run_at`` is then the new schedule's first run); None
    otherwise.  Every durable store keeps them, so the wait's record names the slot that
    waited whichever process ends it, a restarted one included, as it does in the
    process that rescheduled it (docs/decisions/dependencies.md, "A wait's record names
    the slot found blocked").  Read only while the row is the write that kept them (its
    version): a row an older release wrote keeps none.
    """

    task: Task
    status: TaskStatus
    next_run_at: float | None
    attempt: int
    run_count: int
    failure_count: int
    last_error: str | None
    running: bool = False
    waited: float | None = None
    slot: float | None = None
    resumes: bool = False
    until: float | None = None
    grid: float | None = None
    blocked_due: float | None = None
    blocked_slot: float | None = None


FINISHED_STATUSES = (TaskStatus.SUCCEEDED, TaskStatus.CANCELLED)
"""The statuses of a task nothing runs again, once no run is in flight (:func:`finished`)."""


def finished(snapshot: TaskSnapshot) -> bool:
    """True for a task nothing runs again: succeeded or cancelled, with no run in flight
    (one cancelled mid-run finishes when its run is recorded).  No record is written for
    it after this save, and a later save (``replace_existing``) writes its definition in
    full, so the durable stores' caches forget it (before, they held every task ever
    saved: about 430 bytes a task, 430 MB after a million one-off runs): SQLite, shared
    or not, and PostgreSQL (docs/DECISIONS.md)."""
    return snapshot.status in FINISHED_STATUSES and not snapshot.running


def is_shared(store: object) -> bool:
    """True for a store several schedulers share (``shared`` is True: a SQLite store
    opened ``shared=True``, a PostgreSQL store), whose rows belong to whoever holds
    their leases; then it must be a :class:`CoordinatedStore`."""
    return getattr(store, "shared", False) is True


def not_a_store(given: object) -> ValidationError:
    """The error for ``given`` where a runtime takes a :class:`TaskStore`.  A path or a
    dsn (``store=os.environ["DATABASE_URL"]``) is told which store opens it, and shown
    with any password in it hidden: the error was quoted whole into the traceback a
    service logs as it fails to start."""
    if isinstance(given, str | bytes) or hasattr(given, "__fspath__"):
        text = given.decode("utf-8", "replace") if isinstance(given, bytes) else str(given)
        return ValidationError(
            f"store must be a TaskStore (save, delete and load_all methods), got "
            f"{hide_passwords(text)!r}: open the store it names and pass that, "
            "SqliteTaskStore(path) for a file, "
            "lldsched.stores.postgres.PostgresTaskStore(dsn) for a PostgreSQL dsn"
        )
    return ValidationError(
        f"store must be a TaskStore (save, delete and load_all methods), got {shown(given)}"
        f"{instance_hint(given)}"
    )


@runtime_checkable
class TaskStore(Protocol):
    """Where task state is persisted.

    What the runtimes rely on (``lldsched/stores/contract.py`` checks each on a store,
    docs/EXTENDING.md shows one written from scratch):

    * ``save`` is called at every transition by the thread that made it, under the
      threaded runtime's lock: be quick, never call back into the scheduler, and be
      safe to call from several threads (a reader's ``records()`` may run beside it);
    * ``load_all`` gives each task's latest snapshot, in the order each was first
      saved, every field equal to the one saved (the definition's, every status, and
      ``waited``, None included); it is read once, by the runtime's constructor, and a
      :class:`~lldsched.errors.StoreError` from it fails that constructor with nothing
      changed;
    * a ``save`` that raises at a registration or a change of definition makes that
      call raise; one that raises later is logged and the registry stays
      authoritative (:mod:`lldsched.core.storewrites`);
    * a store with ``close()`` raises :class:`~lldsched.errors.StoreClosedError` from
      every later ``save``, ``delete`` and ``load_all``, and says ``closed``: the
      verbs then refuse before changing anything;
    * a store that writes definitions out uses :mod:`lldsched.stores.codec` and passes
      ``decode_task(..., runs=run_count - failure_count)``, so a ``Window``'s
      ``max_runs`` holds across a restart.
    """

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Persist the task's state now; ``record`` is the run this transition ends."""
        ...

    def delete(self, task_id: str) -> None:
        """Forget ``task_id`` and its records, whatever the row holds: a user's
        ``remove()`` (a purge as a task retires is :func:`purge`)."""
        ...

    def load_all(self) -> list[TaskSnapshot]:
        """The latest snapshot of every stored task, in the order they were first saved."""
        ...


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
    writes made inside is stored.  ``written`` names each task written there, to the
    last snapshot written of it (None: a delete), so that the runtime writes every one
    of them again as a failed write, not only the verb's own task: a ``cancel``'s
    dependents, a retirement's purge, a stale row written again inside."""

    def __init__(self, message: str, *, written: Mapping[str, TaskSnapshot | None]) -> None:
        super().__init__(message)
        self.written = written


def resave(
    store: TaskStore, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()
) -> bool:
    """Write ``snapshot`` again, a row a store outage left stale
    (:mod:`lldsched.core.outage`), with ``records``, the records of no run the
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


def records_asked(task_id: object) -> str | None:
    """A store's ``records(task_id)`` argument checked: a task id (a ``str``) or None (every
    task's).  Another value matched no row and answered ``[]`` (``records(5)``), or failed
    in the database and was reported as the store failing (``records(["a"])``)."""
    if task_id is None or isinstance(task_id, str):
        return task_id
    raise ValidationError(f"records() takes a task id (a str) or None, got {shown(task_id)}")


def id_asked(task_id: object, verb: str) -> str:
    """A store's ``get(task_id)`` or ``delete(task_id)`` argument checked: a task id (a
    ``str``), else :class:`ValidationError` naming it.  ``get(5)`` answered None and
    ``delete(5)`` deleted nothing, unsaid, where ``records(5)`` is refused
    (:func:`records_asked`): a tool that forgets ``.id`` (``store.delete(snapshot)``)
    believed the row gone."""
    if isinstance(task_id, str):
        return task_id
    raise ValidationError(
        f"{verb}() takes a task id (a str), got {shown(task_id)}{id_hint(task_id)}"
    )


@runtime_checkable
class HistoryStore(TaskStore, Protocol):
    """A TaskStore that also returns what recovery needs beyond the latest snapshots."""

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """The records kept for ``task_id`` (for every task when None), oldest first."""
        ...

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        ...


class Claim(NamedTuple):
    """One due run handed to this process by :meth:`CoordinatedStore.claim`.

    ``slot`` is the due instant claimed (the row's ``next_run_at``) and ``attempt``
    the row's attempt counter *before* this attempt (the run is attempt
    ``attempt + 1``).  ``token`` is the fencing token: strictly greater than every
    token the store handed out before, to any process.  ``expires_at`` is when the
    lease runs out unless renewed (the store's clock).  ``version`` is the row's
    version the claim saw.  ``taken_over`` is True when the claim
    replaced an expired lease (a run, or a claim, whose process died or stalled and
    never settled it): the attempt is owed, as one in flight at a crash is to recovery.
    ``stale`` is True when another process wrote the row after this one last read or
    wrote it (a new definition committed between this process's read of the change
    feed and its claim): the runtime reads the feed before it runs the claim, so the
    run is made with the definition the claim saw, never an older one.  A store that
    cannot tell leaves it False (the feed is then read at the next wake, as before).
    """

    task_id: str
    slot: float
    attempt: int
    token: int
    expires_at: float
    version: int
    taken_over: bool = False
    stale: bool = False


def claim_narrowed(
    left_out: Collection[str], among: Collection[str] | None, leaving: Collection[str]
) -> tuple[bool, list[str]] | None:
    """How a store's :meth:`CoordinatedStore.claim` narrows the rows it may take, given
    the tasks it leaves out (rows this process cannot load) and the claim's ``among``
    and ``leaving``: None, not at all (the claim's usual statement); ``(True, ids)``,
    only the tasks ``ids`` (``among``, less those left out or in ``leaving``; maybe
    none); ``(False, ids)``, none of the tasks ``ids``."""
    if among is not None:
        return True, [i for i in among if i not in left_out and i not in leaving]
    if left_out or leaving:
        return False, sorted({*left_out, *leaving})
    return None


class Change(NamedTuple):
    """A task row another process wrote, from :meth:`CoordinatedStore.changes`.

    ``snapshot`` is the row as it is now, or ``None`` when the task was removed.
    ``leased`` is True while another process holds a lease on it (its run is in
    flight there): the row's status then says what follows that run, not that
    the task is free; judged on the host's clock (docs/decisions/persistence.md, "The change
    feed's lease flag stays judged on the host's clock").  ``version`` only
    ever grows for one task.
    """

    task_id: str
    version: int
    snapshot: TaskSnapshot | None
    leased: bool = False


class Lease(NamedTuple):
    """A live or expired lease as the store holds it (:meth:`CoordinatedStore.leases`)."""

    task_id: str
    slot: float
    attempt: int
    token: int
    holder: str
    expires_at: float


DIED_UNSHARED = "unshared: died mid-run"
"""The holder of the expired lease :meth:`CoordinatedStore.owe` writes for the attempt
an unshared process had in flight when it died (it held no lease: this one stands for
it, so that a claim takes the attempt over as owed)."""


@runtime_checkable
class CoordinatedStore(HistoryStore, Protocol):
    """A :class:`HistoryStore` that several scheduler processes share (``shared=True``).

    The threaded runtime calls these methods under its own lock (lock order: the
    scheduler's lock, then the store's); a store never calls back into the
    scheduler except through the ``wake`` callable given to :meth:`subscribe`,
    which it must call without holding its own lock.

    What the runtime relies on:

    * **One claim per slot per epoch.**  :meth:`claim` hands a due task to at most
      one process until its lease expires or is settled; a later claim of the same
      task carries a larger token.
    * **Fenced settles.**  ``save(snapshot, record)`` with ``record.token`` set is a
      settle: the store writes it only while the lease with that token is held
      (:meth:`settle`); a store may catch :class:`~lldsched.errors.LeaseLost` there,
      count it in :attr:`rejected` and log it, because the core treats a failed
      save as logged, not raised.  It may also hold the settle back and write it with
      others in one batch, soon (:meth:`flush` writes what it holds), as long as its
      own later writes reach the database after it.  The records a run's finish
      decides after its own (SKIPPED slots) carry the run's token too: they are
      written only if that token's settle was.
    * **Control verbs are rows.**  Any other ``save`` or ``delete`` writes the task
      row and makes it visible to the other processes' :meth:`changes`; a save of a
      RUNNING snapshot by the holder of its lease writes nothing (the lease says so).
    * **Fenced decisions without a run.**  :meth:`misfired` writes what the claim of a
      slot decided without running it under the same fence as a settle, so it is
      decided once per epoch: the misfire policy of a slot that passed while no process
      was there (records and the row's new due instant), or a slot its dependencies
      held (the row BLOCKED, or FAILED with its wait's record, and the lease dropped in
      the same transaction).
    * **Muting.**  Inside :meth:`muted`, saves and deletes write nothing: the runtime
      is applying another process's change to its own registry, and the row already
      says so.
    """

    @property
    def shared(self) -> bool:
        """True when the runtime must coordinate through claims: a store class may
        implement this protocol and still be opened for one scheduler only (then False)."""
        ...

    @property
    def node(self) -> str:
        """This process's holder id, written in every lease it takes ("host:pid:random")."""
        ...

    @property
    def lease(self) -> float:
        """Seconds a claim lasts unless renewed; the runtime renews every ``lease / 3``."""
        ...

    @property
    def poll(self) -> float:
        """The longest the runtime waits before it claims and reads changes again
        (seconds): the bound on how late a lease expiry or another process's change is
        noticed."""
        ...

    @property
    def rejected(self) -> int:
        """Fenced writes refused so far (settles that came after their lease was lost)."""
        ...

    def claim(
        self,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        """Claim up to ``limit`` runs due at ``now`` (``next_run_at <= now``, status
        SCHEDULED or RETRYING, and no live lease): each gets a lease held by
        :attr:`node` until ``now + lease`` and a fresh fencing token.  Ordered by due
        instant, then priority.  ``limit`` 0 claims nothing.  Atomic: concurrent
        callers in any process never receive the same task in the same epoch.

        Given ``among``, only the runs of those task ids are claimed (none: nothing);
        none of those in ``leaving`` ever are.  The threaded runtime passes them only
        while one kind of its runs has no room to start here (every worker busy: among
        its loop tasks; every coroutine slot taken: leaving them), so that the runs it
        cannot start stay unclaimed for the other processes (docs/decisions/persistence.md, "A
        process claims only what it can start")."""
        ...

    def renew(self, *, tokens: Collection[int], now: float) -> set[int]:
        """Extend the leases this node holds with ``tokens`` to ``now + lease``; returns
        the tokens still held (a token missing from the answer is lost: its run's
        context must say so).  :class:`~lldsched.errors.StoreError` if the store
        cannot be reached: the caller decides when its leases must count as lost."""
        ...

    def release(self, *, task_id: str, token: int) -> None:
        """Give back a claim that will not run here (its task was paused or cancelled
        locally before it began), so that no one waits for its expiry.  A lease no
        longer held is ignored."""
        ...

    def settle(self, snapshot: TaskSnapshot, record: ExecutionRecord, *, token: int) -> None:
        """Write the run's record and the task's state after it, and drop the lease, in
        one transaction, only if the lease with ``token`` is still held.

        :class:`~lldsched.errors.LeaseLost` (nothing written) otherwise.  A control
        verb another process wrote during the run wins over the run's status: a
        task paused or cancelled meanwhile stays so (the record is kept), as the
        core decides for a task paused or cancelled mid-run in one process.  Text a
        durable store cannot keep (:func:`~lldsched.stores.codec.check_written`) is a
        :class:`~lldsched.errors.ValidationError`, nothing written and the lease still
        held: the same token settles the run once its text is one the store keeps.
        """
        ...

    def misfired(
        self,
        snapshot: TaskSnapshot,
        records: Sequence[ExecutionRecord],
        *,
        token: int,
        release: bool,
    ) -> None:
        """Write what the claim with ``token`` decided for its slot without running it,
        in one transaction, only if the lease with ``token`` is still held: ``records``
        are appended and the row takes ``snapshot``.  The process that claimed decides
        (docs/CLUSTER.md): the misfire policy of late slots (``records``: the ``missed``
        and ``coalesced`` slots, each carrying ``token``; ``snapshot``: the due instant
        the policy chose), or a slot whose upstreams have not all succeeded
        (``snapshot`` BLOCKED, no record; or FAILED, an upstream it waits for being
        dead, with its wait's ``blocked`` record).  With ``release`` (nothing runs) the
        lease is dropped, as by a settle: a process that dies after the row's write
        cannot leave it behind; otherwise it stays, for the catch-up run the claim goes
        on to run, whose settle drops it.

        :class:`~lldsched.errors.LeaseLost` (nothing written, counted in
        :attr:`rejected`) otherwise, :class:`~lldsched.errors.StoreError` if the store
        cannot be written; text it cannot keep is a :class:`~lldsched.errors.ValidationError`
        (nothing written, the lease still held, as :meth:`settle` says)."""
        ...

    def changes(self) -> list[Change]:
        """Every task row written by *another* process (or by a settle of this one that
        a concurrent control verb overrode) since the previous call, oldest first;
        each change at least once.  The first call returns nothing: the rows as they
        were at open are what :meth:`load_all` gave."""
        ...

    def load_all(self, *, leave_out: bool = False) -> list[TaskSnapshot]:
        """As :meth:`TaskStore.load_all`; with ``leave_out`` (the shared runtime's start),
        a task whose definition this process cannot load is left out and said once
        instead of refused (:meth:`unloaded`), for the processes that can load it."""
        ...

    def unloaded(self) -> list[str]:
        """The ids of the stored tasks this process left out, sorted: rows whose
        definition it cannot load (another release's action, in a rolling deploy), or
        whose status it does not know (a newer release's), at :meth:`load_all` with
        ``leave_out`` or in :meth:`changes`, each said once at WARNING.  The processes
        that can load them run them; this one neither deletes nor rewrites them.  A task
        this process had whose row takes a status it does not know is given by
        :meth:`changes` as removed (no snapshot: it leaves the registry, nothing
        written); a later write of a status it knows gives it again."""
        ...

    def take_over(self, definition: Task) -> TaskSnapshot | None:
        """A registration with ``replace_existing=True``, here, of a task this process
        left out (:meth:`unloaded`): the row takes ``definition`` (its version moves on, so
        the others follow it) and keeps its state and history, as any replacement does;
        returns the row's snapshot with ``definition``.  None, nothing written, when the
        task is not one left out here or its row is gone; a
        :class:`~lldsched.errors.StoreError`, nothing written, when the row's status is
        one this process does not know (its state can be neither kept nor guessed)."""
        ...

    def owe(self, snapshot: TaskSnapshot) -> bool:
        """Write what the at-least-once rule decides for a ``running`` row no lease holds
        (an unshared process died during the run that wrote it, and the file is shared
        now): ``snapshot`` is the row's task with the state the rule gives it (the attempt
        in flight owed: :func:`~lldsched.core.recovery.restored_state`), written with an
        expired lease for that attempt (holder :data:`DIED_UNSHARED`), as a shared
        process dying mid-run leaves its row.  The next claim takes it over
        (``taken_over``: the attempt is owed), one process in its epoch.  In one
        transaction, only while the row is still ``running`` with no lease: True if
        written, False (nothing written) when another process wrote it first (the same
        decision, or a verb), or the row is gone.  A row no claim could take (no due
        instant) is not written either (False)."""
        ...

    def changed(self) -> bool:
        """True when another process may have written since the last :meth:`changes`
        (cheap: a store without such a signal answers True)."""
        ...

    def subscribe(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (from any thread, without the store's lock) when another
        process writes a change that may matter now, so the timer need not wait for
        :attr:`poll`.  A store without cross-process notification (SQLite) keeps it
        and never calls it: the bounded wait is the safety net."""
        ...

    def leases(self) -> list[Lease]:
        """Every lease row the store holds now, expired ones included, by token (for
        people and tests; the runtime reads it only for ``metrics()``, at a wake with no
        room to claim: :meth:`Coordinator.held_elsewhere
        <lldsched.threaded.shared.Coordinator.held_elsewhere>`)."""
        ...

    def flush(self) -> None:
        """Write every settle the store holds back to write with others in one batch
        (PostgreSQL), so that nothing settled stays unwritten; a no-op for a store that
        writes each settle at once (SQLite).  The runtime calls it at shutdown and in
        ``wait_idle()``.  A held-back settle is fenced like any other: refused when its
        lease was lost, counted in :attr:`rejected`."""
        ...

    def muted(self) -> AbstractContextManager[None]:
        """A context in which ``save`` and ``delete`` write nothing (see the class)."""
        ...

    def close(self) -> None:
        """Close the store (idempotent); leases it still holds expire on their own."""
        ...
