"""A store outage, said once: the first call that fails, the later ones counted, and the
call that ends it.

:class:`OutageWrites` is the part of :class:`~lldsched.core.store.writes.StoreWrites` that
keeps the outage under way (:class:`Outage`); the rows it left stale, written again, are
:mod:`lldsched.core.store.stalerows`'s (:class:`~lldsched.core.store.stalerows.StaleRows`, over this
class); what the core does with a write that fails, and with a store closed before its
scheduler, is :mod:`lldsched.core.store.writes`'s; what one task's failed saves carried,
held bounded, is :mod:`lldsched.core.store.outagerecords`'s.

A store that *fails* (not closed: a PostgreSQL server down, a disk full, a SQLite
file locked by another connection) fails every write too, for as long as the outage
lasts, and a traceback at every transition buried the outage's start and never said
its end.  So an outage is said once, here:

* the first call that fails (:meth:`StoreWrites.failed` for the core's writes,
  :meth:`StoreWrites.call_failed` for a shared store's claims, renewals, change feed,
  releases, flushes and misfires, and for the PostgreSQL store's batches of settles,
  written by a thread of its own with an instance of its own) is logged at error
  level **with its traceback**: which store, what failed, that the scheduler goes on
  in memory (on a shared store, that it starts no run while its claims fail:
  :data:`SHARED_OUTAGE`);
* each later failure while the outage lasts is counted (:class:`Outage`) and logged
  at debug level, one line naming what was not done and the error, no traceback:
  no write is dropped without a word, and a debug log still shows each;
* the first call that succeeds again, *of a kind that ends one that failed during the
  outage* (:data:`ENDED_BY`, the one table of the kinds: a ``save``, a ``claim``, a read
  of the change feed, ...: :meth:`StoreWrites.succeeded`), ends it with one warning-level
  line: the store recovered, how many calls failed in between and how many task writes
  were not stored, and what became of the rows they left stale: written again
  (:mod:`lldsched.core.store.stalerows`), stored by their tasks' own next writes, or (a shared
  store) left to the process that wrote or leased the row since (nothing said of rows
  when no task write failed: a shared store's claims alone).  A success of a kind that
  never failed ends nothing: a full disk still lets a shared store read its change
  feed, and a persistent failure of one kind must not be said again at every wake
  because another kind succeeds between two of its failures.  A kind is ended by its
  own success and by that of a kind that writes the same rows and that the runtime makes again
  without being asked: a misfire's decision, written once (its claim then expires and
  the slot is taken over, here or elsewhere), is ended by a save too (the same row and
  records), and a release or a renewal by a claim (the leases; a claim is made at every
  wake).  Before, nothing reported a misfire's write as succeeded, and an outage it began
  never ended: ``store_ok`` stayed False, and the readiness probe failed, with the store
  back (tests/test_outage_kinds.py).

**A store that flaps** (every run's second write failing: a disk full by moments, a
pool of connections one of which is broken) makes an outage and its end at every
run: an ERROR and a WARNING a second for as long as it lasts.  So an outage that
begins within :data:`~lldsched.logs.REPEAT_WINDOW` seconds of the last one said at
ERROR (:class:`~lldsched.logs.Repeats`, on the core's clock) is *quiet*: its start and
its end go to DEBUG.  A quiet outage that is still failing once the window has passed
is said at ERROR then (``still failing``), with the outages said at DEBUG since, and
its end at WARNING: the last line a service at WARNING sees always tells whether the
store works.

Considered and rejected: a periodic summary while the outage lasts (it needs a clock
and a timer in the core; the debug lines and the count at recovery say the same), and
a warning at every failure (the log line a service's alerting sees is the first; a
warning per transition is the flood this replaces).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from lldsched.core.store.interrupts import StoreInterrupts
from lldsched.core.store.outagerecords import HELD, HELD_RUNS, OUTAGE_CAP, Held
from lldsched.logs import STORE, Repeats, counted, say_with_traceback
from lldsched.model import ExecutionRecord
from lldsched.persistence import Task, TaskSnapshot, TaskStore

__all__ = [
    "ENDED_BY",
    "HELD_SETTLES",
    "OUTAGE",
    "PURGE",
    "SHARED_OUTAGE",
    "Kind",
    "Outage",
    "OutageWrites",
    "check_kind",
]

log = logging.getLogger(STORE)


PURGE = "purge"
"""A stale row's failed write that was a purge (:func:`purge_retired`): written again as a
purge, with its condition (:func:`~lldsched.storecalls.purge`), never as a plain delete."""

Kind = Literal[
    "save",
    "delete",
    "misfire",
    "read of the change feed",
    "claim",
    "renewal",
    "release",
    "flush",
    "settle batch",
    "records trim",
]
"""A kind of store call that can fail: a core's task write (``save``, ``delete``), a
shared store's calls (threaded/shared/coordinator.py: a misfire's decision, the change feed, the
leases, a flush of the settles held back), the PostgreSQL store's batches of its own."""

ENDED_BY: dict[Kind, frozenset[Kind]] = {
    "save": frozenset({"save", "misfire"}),
    "misfire": frozenset({"misfire", "save"}),
    "delete": frozenset({"delete"}),  # its row stays stale: written again, a delete
    "read of the change feed": frozenset({"read of the change feed"}),
    "claim": frozenset({"claim"}),
    "renewal": frozenset({"renewal", "claim"}),
    "release": frozenset({"release", "claim"}),
    "flush": frozenset({"flush", "save"}),
    "settle batch": frozenset({"settle batch"}),
    "records trim": frozenset({"records trim"}),
}
"""Each kind of call that can fail, and the kinds whose success ends an outage in which
it failed: the one place the rule lives (module docstring)."""

HELD_SETTLES = 1000
"""The runs' settles an outage holds on a shared store (:attr:`Outage.settles`), in all;
past them the oldest are dropped, counted: their runs are taken over once their leases
expire (the PostgreSQL store holds its own failed batches alike:
``postgres/batch.HELD_SETTLES``)."""


class Outage:
    """A store failing since a call failed, until one of a kind that ends it succeeds."""

    __slots__ = (
        "began",
        "calls",
        "dropped",
        "failed_at",
        "folded",
        "kinds",
        "late",
        "left",
        "own",
        "quiet",
        "records",
        "refused",
        "removed",
        "runs",
        "runs_folded",
        "settles",
        "stale",
        "writes",
    )

    def __init__(self, kind: Kind, failed_at: float) -> None:
        # The core's clock when a call last failed: STALE_RETRY after it, the threaded
        # timer writes the stale rows again (StaleRows.retry_due)
        self.failed_at = failed_at
        self.began = failed_at  # the first call that failed: the line that ends it says since
        self.quiet = False  # begun within a window of the last outage said: at DEBUG
        self.kinds = {kind}  # what failed: "save", "claim", ...; what ends it: ENDED_BY
        self.calls = 0  # the calls that failed, the first included
        self.writes = 0  # of them, the task writes (save, delete) not stored
        # id -> the snapshot whose save failed (None: a delete failed; PURGE: a purge) of
        # each task whose row is stale, until a write of its own succeeds: written again
        self.stale: dict[str, TaskSnapshot | str | None] = {}
        # id -> the definition of each task a remove() here forgot whose delete (a purge,
        # stale) failed, on a shared store: another process's run of it, settled before
        # the purge is written, is not learnt back from the change feed (follow.py)
        self.removed: dict[str, Task] = {}
        # id -> the records the failed saves of a stale row carried (of runs, on a store of
        # one process; of no run: a dependency wait's blocked record, a slot decided
        # without a run), bounded (Held): written with the row, in order (failed, save).
        # A task here stays stale until then, whatever its own writes since.
        self.records: dict[str, Held] = {}
        # token -> (task id, snapshot, records) of each run's settle that failed on a shared
        # store, oldest first, at most HELD_SETTLES: tried again, fenced by its token
        self.settles: dict[int, tuple[str, TaskSnapshot, list[ExecutionRecord]]] = {}
        self.runs = 0  # records of runs not stored for good: a shared store's (their lease's)
        self.refused = 0  # settles made again and refused by their tokens (taken over meanwhile)
        self.late = 0  # records of runs written late, one by one, in order (Held)
        self.runs_folded = 0  # records of runs past the latest HELD_RUNS, written folded
        self.folded = 0  # records of no run written folded into one per outcome (Held)
        self.dropped = 0  # records held, dropped with their row (not written)
        self.own: set[str] = set()  # tasks whose stale row a later write of their own stored
        self.left = 0  # stale rows a shared store's resave left to another process's write


OUTAGE = (
    "store %r failed (a %s): the scheduler goes on in memory and its registry stays "
    "authoritative; later failures are logged at debug level until a call succeeds again"
)
"""The line that begins an outage of a store of one process: its runs go on."""

SHARED_OUTAGE = (
    "store %r failed (a %s): this process starts no run while the store fails its claims "
    "(every run here is claimed from it); the runs in flight go on, their settles held "
    "and tried again once it answers; later failures are logged at debug level until a "
    "call succeeds again"
)
"""The line that begins an outage of a shared store (several processes, docs/CLUSTER.md):
no run starts without a claim, so nothing runs in memory meanwhile.  Before, it said
:data:`OUTAGE`'s "the scheduler goes on in memory and its registry stays authoritative",
and an operator paged for a database restart read that the tasks went on running."""


class OutageWrites(StoreInterrupts):
    """The outage of a :class:`~lldsched.core.store.writes.StoreWrites` (which sets what is
    declared here): counted and ended (its stale rows written again: the
    :class:`~lldsched.core.store.stalerows.StaleRows` over it)."""

    __slots__ = ("_repeats", "outage")

    store: TaskStore
    now: Callable[[], float]  # the core's clock
    shared: bool  # rows others write: rewritten only as last read
    current: Callable[[str], TaskSnapshot | None] | None  # what stale rows are written from
    # When the last outage was said at ERROR: one beginning within a window of it is
    # quiet (a store that flaps).  Guarded by whoever guards this StoreWrites.
    _repeats: Repeats
    outage: Outage | None  # the store is failing: what, how often (None: not)

    if TYPE_CHECKING:

        def found_closed(self, error: BaseException, doing: str) -> bool: ...

        def _rewrite(
            self,
            outage: Outage,
            current: Callable[[str], TaskSnapshot | None],
            written: set[Kind],
        ) -> int: ...

    def _count(self, error: BaseException, *, kind: Kind, doing: str, writes: int) -> None:
        outage = self.outage
        if outage is None:
            outage = self.outage = Outage(kind, self.now())
            repeated = self._repeats.admit("outage")
            if repeated is None:  # a store that flaps: within a window of the last said
                outage.quiet = True
                log.debug(
                    "store %r failed again (a %s), within a minute of its last outage said "
                    "at error level: this one is said at debug level (%r)",
                    self.store,
                    doing,
                    error,
                )
            else:
                message = SHARED_OUTAGE if self.shared else OUTAGE
                _say_outage(message, self.store, doing, error, repeated)
        else:
            outage.kinds.add(kind)
            outage.failed_at = self.now()
            repeated = None  # said at ERROR already, or quiet within its window
            if outage.quiet and self._repeats.expired("outage"):
                repeated = self._repeats.admit("outage")
            if repeated is None:
                log.debug("store %r still failing: %s not done (%r)", self.store, doing, error)
            else:  # a quiet outage outlived its window: said now
                outage.quiet = False
                message = (
                    "store %r still failing (a %s); later failures are logged at debug "
                    "level until a call succeeds again"
                )
                _say_outage(message, self.store, doing, error, repeated)
        outage.calls += 1
        outage.writes += writes

    def succeeded(
        self,
        kind: Kind,
        task_id: str | None = None,
        *,
        rewritten: int = 0,
        late: int = 0,
        refused: int = 0,
    ) -> None:
        """A call of ``kind`` succeeded.  A task write (``task_id`` given): its row is no
        longer stale.  The store takes calls again, so the rows the outage left stale
        are written again (:meth:`~lldsched.core.store.stalerows.StaleRows._rewrite`): at a task
        write, for a store of one process; at the timer's call (``task_id`` None: a
        renewal, a read of the change feed once applied, a claim...) for a shared one,
        whose core writes nothing while it follows another process's change (the store
        is muted then), and whose stale
        row may be one nothing in this process writes again (a dependency wait ended
        here: nobody holds its lease).  If ``kind`` (or a kind the rewrite wrote) ends a
        kind that failed meanwhile (:data:`ENDED_BY`) and no stale row is left, the outage
        ends, said in one warning-level line.  Callers test :attr:`outage` first (None:
        nothing to do, one attribute test a write).  ``rewritten`` and ``late``: the rows
        and the records of runs this call itself wrote again, held by its caller since it
        failed (the PostgreSQL store's settles held: ``postgres/batch.SettleQueue.hold``),
        counted in the line that ends the outage; ``refused``: the settles among them the
        store refused by their tokens (their leases taken over meanwhile: not stored, and
        no row left stale either, the run that took each over counting)."""
        outage = self.outage
        if outage is None:
            return
        written: set[Kind] = {kind}
        outage.late += late
        outage.refused += refused
        current = self.current
        if task_id is not None:
            if kind == "delete" and task_id in outage.records:  # its records gone with it
                outage.dropped += outage.records.pop(task_id).count
            if task_id not in outage.records and task_id in outage.stale:
                del outage.stale[task_id]  # else stale until its records are written
                outage.own.add(task_id)
        if (
            (outage.stale or outage.settles)
            and current is not None
            and (task_id is None) is self.shared
        ):
            rewritten += self._rewrite(outage, current, written)
        self._end(outage, kind, written, rewritten)

    def _end(self, outage: Outage, kind: str, written: set[Kind], rewritten: int) -> None:
        """End ``outage`` now that calls of the kinds ``written`` succeeded (``kind``: what
        the line names), ``rewritten`` of its stale rows written again, unless a kind
        that failed did not succeed or a stale row is left: said in one line."""
        ended = any(not written.isdisjoint(ENDED_BY[failed]) for failed in outage.kinds)
        if not ended or ((outage.stale or outage.settles) and self.current is not None):
            return  # not over while a stale row failed again: the next write tries it
        self.outage = None
        said = []
        if rewritten:
            said.append(
                f"the rows they left stale were written again ({counted(rewritten, 'row')})"
            )
        if outage.refused:  # a lease taken over meanwhile: the store said each at WARNING
            one = outage.refused == 1
            said.append(
                f"{counted(outage.refused, 'settle')} refused when made again: "
                f"{'its lease was' if one else 'their leases were'} taken over meanwhile, "
                f"and the run that took {'it' if one else 'each'} over counts"
            )
        own = len(outage.own - outage.stale.keys())  # stale again since: said below
        if own:
            one = own == 1
            said.append(
                f"{counted(own, 'row')} stored since by "
                + ("its task's own next write" if one else "their tasks' own next writes")
            )
        if outage.left:  # each said at INFO (_say_left)
            one = outage.left == 1
            said.append(
                f"{counted(outage.left, 'row')} left stale not written again: another process "
                f"wrote, removed or leased {'it' if one else 'each'} since (the change feed "
                f"brings {'its row' if one else 'their rows'})"
            )
        if outage.stale or outage.settles:  # only with no registry to write them from
            said.append("those tasks' rows are stale until their next transition")
        if outage.late:
            said.append(
                f"the records of {counted(outage.late, 'run')} they carried were written late, "
                "in order"
            )
        if outage.runs_folded:
            said.append(
                f"{counted(outage.runs_folded, 'record')} of runs, before the latest "
                f"{HELD_RUNS} of a task, were written folded into one record per outcome "
                f"({OUTAGE_CAP} ...)"
            )
        if outage.runs:
            said.append(
                f"the records of {counted(outage.runs, 'run')} whose settles failed are lost "
                "(each its lease's: the run is taken over)"
            )
        if outage.folded:
            said.append(
                f"{counted(outage.folded, 'record')} of no run, past the first {HELD} of a "
                f"task, were written folded into one record per outcome ({OUTAGE_CAP} ...)"
            )
        if outage.dropped:
            one = outage.dropped == 1
            said.append(
                f"{counted(outage.dropped, 'record')} held "
                + ("was dropped with its row" if one else "were dropped with their rows")
            )
        log.log(
            logging.DEBUG if outage.quiet else logging.WARNING,
            "store %r recovered (a %s succeeded) after %.1f s: %s failed during the outage, "
            "%s not stored%s",
            self.store,
            kind,
            max(0.0, self.now() - outage.began),  # since the first call that failed; a clock
            counted(outage.calls, "call"),  # set back reads no negative span
            counted(outage.writes, "task write"),
            f" ({'; '.join(said)})" if said else "",
        )


def check_kind(kind: str) -> None:
    """ValueError naming ``kind`` unless :data:`ENDED_BY` names it: a kind of failed call
    no success would end (mypy's ``Kind`` says so first)."""
    if kind not in ENDED_BY:
        raise ValueError(f"unknown kind of store call {kind!r}: one of {sorted(ENDED_BY)}")


def _say_outage(
    message: str, store: TaskStore, doing: str, error: BaseException, repeated: int
) -> None:
    """An outage said at ERROR with ``error``'s traceback, counting the outages said at
    DEBUG since the last one said (``repeated``: a store that flaps)."""
    args: tuple[object, ...] = (store, doing)
    if repeated:
        message += " (%d more outages since its last line, at debug level)"
        args = (*args, repeated)
    say_with_traceback(log, logging.ERROR, message, args, error, {"repeated": repeated})
