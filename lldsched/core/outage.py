"""A store outage, said once: the first call that fails, the later ones counted, the call
that ends it, and the rows it left stale written again.

:class:`OutageWrites` is the part of :class:`~lldsched.core.storewrites.StoreWrites` that
keeps the outage under way (:class:`Outage`); what the core does with a write that fails,
and with a store closed before its scheduler, is :mod:`lldsched.core.storewrites`'s; what
one task's failed saves carried, held bounded, is :mod:`lldsched.core.outagerecords`'s.

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
  were not stored, and what became of the rows they left stale: written again (below),
  stored by their tasks' own next writes, or (a shared store) left to the process that
  wrote or leased the row since (nothing said of rows when no task write failed: a
  shared store's claims alone).  A success of a kind that never failed ends nothing: a
  full disk still lets a shared store read its change feed, and a persistent failure of
  one kind must not be said again at every wake because another kind succeeds between
  two of its failures.  A kind is ended by its own success
  and by that of a kind that writes the same rows and that the runtime makes again
  without being asked: a misfire's decision, written once (its claim then expires and
  the slot is taken over, here or elsewhere), is ended by a save too (the same row and
  records), and a release or a renewal by a claim (the leases; a claim is made at every
  wake).  Before, nothing reported a misfire's write as succeeded, and an outage it began
  never ended: ``store_ok`` stayed False, and the readiness probe failed, with the store
  back (tests/test_outage_kinds.py).

Once a task write succeeds during an outage (the store takes writes again), the rows
the outage left stale are written again (:meth:`StoreWrites.succeeded`, ``_rewrite``):
each task whose save or delete failed during it, and that no later write of its own
set right, is saved as the registry has it now (a task that retired meanwhile, as the
last snapshot that failed; one removed, deleted).  Without that, a task that finished
during the outage (a one-off succeeded, a task dead-lettered) has no next transition
to write it, and its row said ``scheduled`` for good: the next start ran it again
(and a removed task came back).  The records those writes carried are written with the
row, in the order they were made (:class:`Held`, :meth:`StoreWrites.failed`), the
records of runs included: an operator auditing the runs after a database blip finds
every one of them in the store, as the scheduler's history has them.  The order is kept
because a task's own next write that carries records, while its records are held, adds
them to the held ones and writes them all in one ``save_all`` (:meth:`StoreWrites.save`):
a store orders a task's records as they were written, and a restart reads a task's
latest run (a dependent's wait, a retry's slot) from that order, so a run's record
written after a later one's would stand for the latest.  A store with its own
``save_all`` writes them all or none (SQLite: one transaction); any other gets one
``save`` a record and keeps held what it did not take: nothing is written twice.  A
stale row whose rewrite fails again keeps the outage going: the next task write that
succeeds tries it again.  A delete that succeeds (a ``remove()``) drops the task's
records held (counted): before, the row stayed stale for them and was written back.

**What an outage holds is bounded**, whatever its length (:class:`Held`): per task, the
first :data:`HELD` records of no run and the latest :data:`HELD_RUNS` records of runs
one by one; past them, one record per outcome stands for the rest (its first, its
error text ``OutageCap: ... this record stands for every later skipped one (N records),
from A to B (their slots): ...``, or ``every earlier ok one (N records), from A to B
(when they started)``, in UTC, the wording a run's ``SkipCap:`` record and a misfire's
``MisfireCap:`` one have: :func:`~lldsched.core.names.cap_text`), in its first's place,
and the latest ``MisfireCap:`` record is kept whole (a restart reads where a catch-up
plan was cut from it).  The latest runs, not the first: a restart reads a task's latest
run, and a task's history keeps as many by default (``history_limit``).  Nothing goes
without a count: the warning that ends the outage says how many records of runs were
written late, how many of runs and of no run were written folded, and how many were
dropped with a row not written again (a task removed; a shared row another process
wrote since).  Before, a 1 s fixed-rate task that overran through an 8-hour outage held
its 14,400 ``skipped`` records until the store came back, and the runs' records were
never written (tests/test_store_outage.py, tests/test_store_outage_records.py).

**A shared store** (several processes, docs/CLUSTER.md) holds rows other processes
write.  A run's settle that failed is held (:attr:`Outage.settles`, at most
:data:`HELD_SETTLES`, the oldest dropped and counted) and written again at the timer's
first store call that succeeds, before the rows left stale, with the task's state as
the registry has it then, fenced by the run's token as it was: if the lease is still
this process's the run's record is stored and its slot is not run again; if another
process took it over meanwhile the store refuses it (logged, counted in ``rejected``)
and that process runs the slot, as before.  Before, such a settle was dropped: its
record lost, its slot run again once its lease expired.  (The PostgreSQL store's settles
are written by a thread of its own: it holds its failed batches alike,
``postgres_batch.SettleQueue.hold``.)  Any other write
(one no lease fences: a dependency wait ended in this process, which is the one process
to end it, so nobody else would ever write that row; a verb's ``pause`` or ``cancel``; a
``remove``'s delete, then as a purge) is written again at the timer's first store call
that succeeds (a read of the change feed once applied, a renewal, a claim: the next
wake), not at a task write (the core writes through a muted store while it follows
another process's change), and only while the row is still as this process last read or
wrote it and no live lease holds it (:func:`~lldsched.storecalls.resave`, one
transaction): a process never overwrites a row another process changed meanwhile.  A
row left so is said at INFO and is stale no more: the change feed brings this process
the other's row.  Its records of no run go with it; a record of a run is a settle's.
Before, a shared store's rows were never written again, and a
dependent released while the store failed that one write stayed BLOCKED until another
process ran its upstream's next success (tests/test_cluster_wait_end_outage.py).

**A store that flaps** (every run's second write failing: a disk full by moments, a
pool of connections one of which is broken) makes an outage and its end at every
run: an ERROR and a WARNING a second for as long as it lasts.  So an outage that
begins within :data:`~lldsched.logs.REPEAT_WINDOW` seconds of the last one said at
ERROR (:class:`~lldsched.logs.Repeats`, on the core's clock) is *quiet*: its start and
its end go to DEBUG.  A quiet outage that is still failing once the window has passed
is said at ERROR then (``still failing``), with the outages said at DEBUG since, and
its end at WARNING: the last line a service at WARNING sees always tells whether the
store works.

The core has no timer: the threaded scheduler's timer tries the stale rows again
(:meth:`OutageWrites.retry_due`) a minute after the last failed call, so that an
outage ends once the store is back, not at a task's next write, which may be a day
away (``store_ok`` False all that time).

Considered and rejected: a periodic summary while the outage lasts (it needs a clock
and a timer in the core; the debug lines and the count at recovery say the same), and
a warning at every failure (the log line a service's alerting sees is the first; a
warning per transition is the flood this replaces).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from lldsched.core.outagerecords import HELD, HELD_RUNS, OUTAGE_CAP, Entry, Held
from lldsched.core.storeinterrupts import StoreInterrupts, interrupt, on_main_thread
from lldsched.logs import SCHEDULER, STORE, Repeats, counted, say_with_traceback
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot, TaskStore
from lldsched.storecalls import purge, resave, save_all, verb_call

__all__ = [
    "ENDED_BY",
    "HELD_SETTLES",
    "OUTAGE",
    "PURGE",
    "SHARED_OUTAGE",
    "STALE_RETRY",
    "STALE_SHOWN",
    "Kind",
    "Outage",
    "OutageWrites",
    "check_kind",
    "say_left_stale",
]

log = logging.getLogger(STORE)

STALE_SHOWN = 20
"""The most task ids the warning of rows a shutdown leaves stale names (the rest counted)."""

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
shared store's calls (threaded/shared.py: a misfire's decision, the change feed, the
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

STALE_RETRY = 60.0
"""Seconds without a failed call after which the threaded scheduler's timer writes the
rows an outage of a store of one process left stale again (:meth:`OutageWrites.retry_due`):
the outage ends once the store is back, not at the next write of a task that may be a
day away (``metrics().store_ok`` False, the readiness probe failing, all that time)."""

HELD_SETTLES = 1000
"""The runs' settles an outage holds on a shared store (:attr:`Outage.settles`), in all;
past them the oldest are dropped, counted: their runs are taken over once their leases
expire (the PostgreSQL store holds its own failed batches alike:
``postgres_batch.HELD_SETTLES``)."""


class Outage:
    """A store failing since a call failed, until one of a kind that ends it succeeds."""

    __slots__ = (
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
        "runs",
        "runs_folded",
        "settles",
        "stale",
        "writes",
    )

    def __init__(self, kind: Kind, failed_at: float) -> None:
        # The core's clock when a call last failed: STALE_RETRY after it, the threaded
        # timer writes the stale rows again (OutageWrites.retry_due)
        self.failed_at = failed_at
        self.quiet = False  # begun within a window of the last outage said: at DEBUG
        self.kinds = {kind}  # what failed: "save", "claim", ...; what ends it: ENDED_BY
        self.calls = 0  # the calls that failed, the first included
        self.writes = 0  # of them, the task writes (save, delete) not stored
        # id -> the snapshot whose save failed (None: a delete failed; PURGE: a purge) of
        # each task whose row is stale, until a write of its own succeeds: written again
        self.stale: dict[str, TaskSnapshot | str | None] = {}
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
    """The outage of a :class:`~lldsched.core.storewrites.StoreWrites` (which sets what is
    declared here): counted, ended, its stale rows written again."""

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
        are written again (:meth:`_rewrite`): at a task write, for a store of one
        process; at the timer's call (``task_id`` None: a renewal, a read of the change
        feed once applied, a claim...) for a shared one, whose core writes nothing while
        it follows another process's change (the store is muted then), and whose stale
        row may be one nothing in this process writes again (a dependency wait ended
        here: nobody holds its lease).  If ``kind`` (or a kind the rewrite wrote) ends a
        kind that failed meanwhile (:data:`ENDED_BY`) and no stale row is left, the outage
        ends, said in one warning-level line.  Callers test :attr:`outage` first (None:
        nothing to do, one attribute test a write).  ``rewritten`` and ``late``: the rows
        and the records of runs this call itself wrote again, held by its caller since it
        failed (the PostgreSQL store's settles held: ``postgres_batch.SettleQueue.hold``),
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

    def rewrite_stale(self) -> list[str]:
        """The last chance to write the rows the outage left stale (a shutdown: no
        transition follows to write them again): :meth:`_rewrite` once, the outage ended
        as :meth:`succeeded` ends it if none is left.  The ids of the rows still stale
        (none without an outage; a shared store's row left to another process is not
        stale any more); caller holds what guards this StoreWrites."""
        outage = self.outage
        current = self.current
        if outage is None or not (outage.stale or outage.settles) or current is None:
            return []
        written: set[Kind] = set()
        rewritten = self._rewrite(outage, current, written)
        if written:
            self._end(outage, "rewrite of the rows left stale", written, rewritten)
        left = dict.fromkeys(task_id for task_id, _, _ in outage.settles.values())
        return list({**left, **dict.fromkeys(outage.stale)})

    def retry_due(self, now: float) -> float | None:
        """The threaded timer's try of the rows left stale by an outage of a store of one
        process, at a wake (caller holds what guards this StoreWrites): written again
        (:meth:`rewrite_stale`) once :data:`STALE_RETRY` seconds passed without a failed
        call (a clock set back before it counts as passed), which ends the outage if the
        store is back; else counted as any failure.  Returns when to try next (None: no
        outage, or none of its rows stale): the timer wakes by then.  Without it a store
        back after a blip stayed in its outage until a task next wrote, a day later for a
        daily task: ``store_ok`` False and the rows stale all that time.  A shared store
        needs none: its timer's claims and reads at every wake end an outage."""
        outage = self.outage
        if outage is None or not outage.stale:
            return None
        due = outage.failed_at + STALE_RETRY
        if outage.failed_at <= now < due:
            return due
        self.rewrite_stale()
        outage = self.outage
        if outage is None or not outage.stale:
            return None
        outage.failed_at = now  # tried, whether or not a write was made
        return now + STALE_RETRY

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
            said.append(f"{counted(outage.dropped, 'record')} held were dropped with their rows")
        log.log(
            logging.DEBUG if outage.quiet else logging.WARNING,
            "store %r recovered (a %s succeeded): %s failed during the outage, %s not stored%s",
            self.store,
            kind,
            counted(outage.calls, "call"),
            counted(outage.writes, "task write"),
            f" ({'; '.join(said)})" if said else "",
        )

    def _rewrite(
        self,
        outage: Outage,
        current: Callable[[str], TaskSnapshot | None],
        written: set[Kind],
    ) -> int:
        """Write the rows ``outage`` left stale as the registry has them now: a task
        registered, as it is; one that retired, as the snapshot that failed; one removed
        (its delete failed), deleted; one whose purge failed as it retired, purged (only
        while its row is the one this process saw retire: a store's own ``purge`` keeps a
        row another process wrote since, which a plain delete took from every process).
        A save goes through :func:`~lldsched.storecalls.resave`: a shared store writes
        the row only while it is as this process last read or wrote it and no lease holds
        it; a row it leaves (said at INFO) is stale no more, the feed's or the lease
        holder's to set right.  Each written is stale no more and its kind is added to
        ``written``; one that fails again stays stale, counted in the outage.  Returns
        how many were written.

        The rows' writes are one call of a store's deadline (:func:`~lldsched.storecalls.
        verb_call`, as a verb's calls are): in an outage the first that finds the server
        out of reach fails the others at once, one ``timeout`` for them all, not one a
        row (docs/decisions/store-failures.md, "One timeout a PostgreSQL call, and a verb's")."""
        done = self._settle_again(outage, current, written) if outage.settles else 0
        if outage.settles:
            return done  # still failing: the rows after them wait (they are newer)
        with verb_call(self.store):
            return done + self._rewrite_rows(outage, current, written)

    def _rewrite_rows(
        self,
        outage: Outage,
        current: Callable[[str], TaskSnapshot | None],
        written: set[Kind],
    ) -> int:
        """:meth:`_rewrite`'s rows (``outage.stale``), one by one; how many were written."""
        store = self.store
        stale = outage.stale
        done = 0
        for task_id, failed in list(stale.items()):
            snapshot = current(task_id) or (failed if isinstance(failed, TaskSnapshot) else None)
            verb: Kind = "delete" if snapshot is None else "save"
            kept = True
            held = outage.records.get(task_id)
            try:
                if snapshot is not None and held is not None and not self.shared:
                    self._write_held(outage, snapshot, held)  # in order, nothing twice
                elif snapshot is not None:
                    entries = () if held is None else held.entries()
                    kept = resave(store, snapshot, [record for _, record, _ in entries])
                    if kept and held is not None:
                        _wrote(outage, held, entries)
                elif failed == PURGE:
                    purge(store, task_id)  # a row kept is the feed's to bring in
                else:
                    store.delete(task_id)
            except BaseException as exc:  # still failing: said as any failure in an outage
                if self.found_closed(exc, f"{verb} of {task_id}"):
                    return done
                self._count(exc, kind=verb, doing=f"{verb} of {task_id}", writes=0)
                if not isinstance(exc, Exception) and on_main_thread():
                    interrupt(self, exc)  # a Ctrl-C or an exit reaches the user: store_failed
            else:
                del stale[task_id]
                written.add(verb)
                if held is not None:  # written, or left with the row (dropped: counted)
                    del outage.records[task_id]
                    outage.dropped += held.count  # none left once written (_wrote)
                if kept:
                    done += 1
                else:
                    outage.left += 1
                    _say_left(store, task_id, 0 if held is None else held.count)
        return done

    def _settle_again(
        self,
        outage: Outage,
        current: Callable[[str], TaskSnapshot | None],
        written: set[Kind],
    ) -> int:
        """Write the runs' settles ``outage`` holds (a shared store), oldest first, fenced by
        each one's token, with the task's state as the registry has it now (a ``pause``
        made here since the run ended is not undone by its settle; one that retired, as
        the settle had it): one whose lease another process took over meanwhile is
        refused by the store (logged and counted there: that process runs it), the
        others are stored, their records written late.  Before the rows left stale,
        which are newer.  Stops at the first that fails again (counted); returns how
        many were stored (one refused is counted in :attr:`Outage.refused`)."""
        store = self.store
        settles = outage.settles
        done = 0
        for token, (task_id, made, records) in list(settles.items()):
            refused = getattr(store, "rejected", 0)
            snapshot = current(task_id) or made
            try:
                save_all(store, snapshot, records)
            except BaseException as exc:  # still failing: said as any failure in an outage
                if not self.found_closed(exc, f"save of {task_id}"):
                    self._count(exc, kind="save", doing=f"settle of {task_id}", writes=0)
                    if not isinstance(exc, Exception) and on_main_thread():
                        interrupt(self, exc)
                return done
            del settles[token]
            written.add("save")
            if getattr(store, "rejected", 0) == refused:
                done += 1
                outage.late += sum(record.outcome.ran for record in records)
            else:
                outage.refused += 1
        return done

    def _write_held(self, outage: Outage, snapshot: TaskSnapshot, held: Held) -> None:
        """Write ``snapshot`` with the records ``held`` (a store of one process): one
        ``save_all`` where the store has one (all or none: SQLite's is one transaction),
        else one ``save`` a record, in order.  What was stored is forgotten from ``held``
        and counted in ``outage`` (a store that fails among them leaves the rest held:
        nothing is written twice); raises what the store raised."""
        entries = held.entries()
        records = [record for _, record, _ in entries]
        store = self.store
        write = getattr(store, "save_all", None)
        done = 0
        try:
            if write is not None:
                write(snapshot, records)
                done = len(records)
            else:
                for record in records:
                    store.save(snapshot, record)
                    done += 1
        finally:
            if done:
                _wrote(outage, held, entries[:done])


def _wrote(outage: Outage, held: Held, entries: Sequence[Entry]) -> None:
    """The first ``entries`` of ``held`` were stored: forgotten there, counted in ``outage``
    (runs written late one by one, records folded)."""
    held.written(entries)
    for _, record, stands_for in entries:
        if record.outcome.ran:
            if stands_for:
                outage.runs_folded += stands_for
            else:
                outage.late += 1
        elif stands_for:
            outage.folded += stands_for


def check_kind(kind: str) -> None:
    """ValueError naming ``kind`` unless :data:`ENDED_BY` names it: a kind of failed call
    no success would end (mypy's ``Kind`` says so first)."""
    if kind not in ENDED_BY:
        raise ValueError(f"unknown kind of store call {kind!r}: one of {sorted(ENDED_BY)}")


def say_left_stale(store: TaskStore, left: list[str]) -> None:
    """Warn that a shutdown leaves the rows of the tasks ``left`` stale in ``store``: what
    :meth:`StoreWrites.rewrite_stale`, its last write, could not write (nothing said when
    none is left).  Both runtimes' ``shutdown()`` say it so, on the ``lldsched.scheduler``
    logger (the scheduler's own life)."""
    if not left:
        return
    shown = ", ".join(left[:STALE_SHOWN])
    more = f" and {len(left) - STALE_SHOWN} more" if len(left) > STALE_SHOWN else ""
    logging.getLogger(SCHEDULER).warning(
        "shutdown() leaves the rows of %s stale in store %r (%s%s): their "
        "writes failed and failed again now; a restart reads them as they were, "
        "so a run that ended since may run again (at-least-once, as after a crash)",
        counted(len(left), "task"),
        store,
        shown,
        more,
    )


def _say_left(store: TaskStore, task_id: str, records: int = 0) -> None:
    """Say that the row of ``task_id`` an outage left stale was not written again: another
    process wrote it since this one last read it, removed it, or holds its lease (with
    it the ``records`` of no run held for it, not written: counted)."""
    log.info(
        "task %s: its row in store %r, left stale by the outage, is not written again%s: "
        "another process wrote it since this one last read it, removed it, or holds its "
        "lease (this process follows that row through the change feed)",
        task_id,
        store,
        f" (nor {counted(records, 'record')} of no run held for it)" if records else "",
        extra={"task_id": task_id},
    )


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
