"""Several processes, one set of tasks: :class:`CoordinatedStore`, the protocol of a store
several schedulers share (docs/CLUSTER.md), and what its methods return (:class:`Claim`,
:class:`Change`, :class:`Lease`); :func:`is_shared`, which tells such a store, and
:func:`claim_narrowed`, how a store narrows a claim.

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

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol, runtime_checkable

from lldsched.checks import seconds
from lldsched.model import ExecutionRecord
from lldsched.persistence import HistoryStore, Task, TaskSnapshot

__all__ = [
    "DIED_UNSHARED",
    "SHORTEST_LEASE",
    "SHORTEST_POLL",
    "Change",
    "Claim",
    "CoordinatedStore",
    "Lease",
    "claim_narrowed",
    "is_shared",
    "lease_seconds",
    "poll_seconds",
]


SHORTEST_LEASE = 0.1
"""The shortest ``lease`` a shared store takes, in seconds.  The timer renews its leases
every ``lease / 3``, one store call each time, and waits only until the next renewal is
due: a lease whose third passes before a renewal returns (``lease=1e-4`` on a local SQLite
file) left the timer renewing at every turn of its loop without ever waiting, under the
scheduler's lock, so the scheduler ran nothing and its ``shutdown()`` gave up after its
timeout.  A tenth of a second leaves a renewal a thirtieth, room for a commit on a slow
disk or a round trip to a PostgreSQL server; no lease of a real deployment is that short
(the default is 30 s)."""

SHORTEST_POLL = 0.001
"""The shortest ``poll`` a shared store takes, in seconds: the timer reads the change feed
at every wake, and waits at most ``poll`` after it, so a ``poll`` shorter than one wake's
work (``poll=1e-6``) left it never waiting, as a lease too short did
(:data:`SHORTEST_LEASE`).  A millisecond is a thousand feed reads a second, already more
than any deployment asks (the default is 1 s)."""


def lease_seconds(value: object) -> float:
    """A shared store's ``lease``: a number of seconds (or a ``timedelta``) of at least
    :data:`SHORTEST_LEASE`, else :class:`~lldsched.errors.ValidationError` quoting it
    (``"lease must be finite and >= 0.1 seconds, got 0.0001"``).  Both shared stores'
    rule."""
    return seconds(value, name="lease", at_least=SHORTEST_LEASE)


def poll_seconds(value: object) -> float:
    """A shared store's ``poll``: a number of seconds (or a ``timedelta``) of at least
    :data:`SHORTEST_POLL`, else :class:`~lldsched.errors.ValidationError` quoting it.
    Both shared stores' rule."""
    return seconds(value, name="poll", at_least=SHORTEST_POLL)


def is_shared(store: object) -> bool:
    """True for a store several schedulers share (``shared`` is True: a SQLite store
    opened ``shared=True``, a PostgreSQL store), whose rows belong to whoever holds
    their leases; then it must be a :class:`CoordinatedStore`."""
    return getattr(store, "shared", False) is True


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
    ``taken_from`` is the holder of the lease a takeover replaced (its process's node id,
    :data:`DIED_UNSHARED` for an unshared process's run): what the takeover's WARNING
    names, so an operator finds the process that died or stalled; None otherwise, or
    from a store that cannot tell.
    """

    task_id: str
    slot: float
    attempt: int
    token: int
    expires_at: float
    version: int
    taken_over: bool = False
    stale: bool = False
    taken_from: str | None = None


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
