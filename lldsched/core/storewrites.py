"""What the core does when its store fails a write after the fact, and when it is closed.

The design (docs/DECISIONS.md, "A store that raises"): a registration or a change of
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
  does (:mod:`lldsched.core.storeuse`: a scheduler never started or shut down, a
  simulation), with a ``StoreError`` naming both: its write would go behind the
  running scheduler's back.

A store that *fails* (not closed: a PostgreSQL server down, a disk full, a SQLite
file locked by another connection) fails every write too, for as long as the outage
lasts, and a traceback at every transition buried the outage's start and never said
its end.  So an outage is said once, here:

* the first call that fails (:meth:`StoreWrites.failed` for the core's writes,
  :meth:`StoreWrites.call_failed` for a shared store's claims, renewals, change feed,
  releases, flushes and misfires, and for the PostgreSQL store's batches of settles,
  written by a thread of its own with an instance of its own) is logged at error
  level **with its traceback**: which store, what failed, that the scheduler goes on
  in memory;
* each later failure while the outage lasts is counted (:class:`Outage`) and logged
  at debug level, one line naming what was not done and the error, no traceback:
  no write is dropped without a word, and a debug log still shows each;
* the first call that succeeds again, *of a kind that ends one that failed during the
  outage* (:data:`ENDED_BY`, the one table of the kinds: a ``save``, a ``claim``, a read
  of the change feed, ...: :meth:`StoreWrites.succeeded`), ends it with one warning-level
  line: the store recovered, how many calls failed in
  between and how many task writes were not stored (and that the rows they left stale
  were written again, below).  A success of a kind that never failed ends
  nothing: a full disk still lets a shared store read its change feed, and a
  persistent failure of one kind must not be said again at every wake because
  another kind succeeds between two of its failures.  A kind is ended by its own success
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
wrote it and no live lease holds it (:func:`~lldsched.persistence.resave`, one
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

Considered and rejected: a periodic summary while the outage lasts (it needs a clock
and a timer in the core; the debug lines and the count at recovery say the same), and
a warning at every failure (the log line a service's alerting sees is the first; a
warning per transition is the flood this replaces).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from lldsched.core import storeuse
from lldsched.core.outagerecords import HELD, HELD_RUNS, OUTAGE_CAP, Entry, Held
from lldsched.errors import StoreClosedError
from lldsched.logs import SCHEDULER, STORE, Repeats, counted, say_with_traceback
from lldsched.model import ExecutionRecord
from lldsched.persistence import (
    TaskSnapshot,
    TaskStore,
    is_shared,
    purge,
    resave,
    save_all,
    verb_call,
)

__all__ = [
    "ADVICE",
    "ENDED_BY",
    "HELD_SETTLES",
    "PURGE",
    "STALE_SHOWN",
    "Kind",
    "Outage",
    "StoreWrites",
    "check_store",
    "interrupts_deferred",
    "left_whole",
    "refused",
    "say_left_stale",
    "store_failed",
    "store_written",
]

log = logging.getLogger(STORE)

ADVICE = (
    "shut the scheduler down before closing its store (put the scheduler's `with` "
    "block inside the store's)"
)
"""What to do about a store closed before its scheduler, in every message that says so."""

STALE_SHOWN = 20
"""The most task ids the warning of rows a shutdown leaves stale names (the rest counted)."""

PURGE = "purge"
"""A stale row's failed write that was a purge (:func:`purge_retired`): written again as a
purge, with its condition (:func:`~lldsched.persistence.purge`), never as a plain delete."""


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
        "folded",
        "kinds",
        "late",
        "quiet",
        "records",
        "runs",
        "runs_folded",
        "settles",
        "stale",
        "writes",
    )

    def __init__(self, kind: Kind) -> None:
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
        self.late = 0  # records of runs written late, one by one, in order (Held)
        self.runs_folded = 0  # records of runs past the latest HELD_RUNS, written folded
        self.folded = 0  # records of no run written folded into one per outcome (Held)
        self.dropped = 0  # records held, dropped with their row (not written)


class StoreWrites:
    """The core's account of the calls its store failed (one per core with a store)."""

    __slots__ = (
        "_repeats",
        "closed",
        "collecting",
        "current",
        "deferring",
        "interrupted",
        "missed",
        "outage",
        "refused",
        "shared",
        "store",
        "user",
    )

    def __init__(
        self,
        store: TaskStore,
        *,
        current: Callable[[str], TaskSnapshot | None] | None = None,
        now: Callable[[], float] = time.monotonic,
        user: object = None,
    ) -> None:
        self.store = store
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
        # once the event under way is whole, lldsched/sim/simulation.py).  None: not.
        self.collecting: list[BaseException] | None = None

    @contextlib.contextmanager
    def interrupts_deferred(self) -> Iterator[None]:
        """While the block runs (a verb whose steps after a write must run too: cancel's
        dependents failed, a remove's forgetting, the runtime's stop of the task's runs),
        a ``KeyboardInterrupt`` or ``SystemExit`` a store raises on the main thread is
        kept (:func:`store_failed` logs it as ever) and raised once the block ends, the
        verb whole (its id kept as :attr:`refused`: a runtime tells it from an interrupt
        that landed mid-verb): raised at once, it left the task changed and the rest
        undone.  Dropped if the block raises something else (it was logged)."""
        outer = self.deferring
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = outer
            interrupted = self.interrupted
            if not outer:
                self.interrupted = None
        if not outer and interrupted is not None:
            self.refused = id(interrupted)
            raise interrupted

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
    ) -> None:
        """A write of ``task_id`` (``verb``: ``"save"`` of ``snapshot`` with ``records``,
        or ``"delete"``, a purge's if ``purge``) raised ``error`` after the change it
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
        _check_kind(verb)
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

    def call_failed(
        self, error: Exception, kind: Kind, doing: str, *, writes: int = 0, dropped: int = 0
    ) -> None:
        """A shared store's call of ``kind`` (``"claim"``, ``"renewal"``, ``"change
        feed"``, ``"settle batch"``, ...) raised ``error``; ``doing`` says what failed
        (``"claim"``, ``"release of task-1"``); ``writes``: the task writes it carried
        that are not stored (a batch of settles: one each, the first time it fails);
        ``dropped``: the records the caller held and let go past its bound (the
        PostgreSQL store's settles held: ``postgres_batch.HELD_SETTLES``).  Logged as
        :meth:`failed` logs a write (called in an ``except`` block).  ValueError,
        nothing counted, for a ``kind`` :data:`ENDED_BY` does not name."""
        _check_kind(kind)
        if not self.found_closed(error, doing):
            self._count(error, kind=kind, doing=doing, writes=writes)
            assert self.outage is not None  # _count began one if none was going on
            self.outage.dropped += dropped

    def _count(self, error: BaseException, *, kind: Kind, doing: str, writes: int) -> None:
        outage = self.outage
        if outage is None:
            outage = self.outage = Outage(kind)
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
                message = (
                    "store %r failed (a %s): the scheduler goes on in memory and its "
                    "registry stays authoritative; later failures are logged at debug level "
                    "until a call succeeds again"
                )
                _say_outage(message, self.store, doing, error, repeated)
        else:
            outage.kinds.add(kind)
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
        self, kind: Kind, task_id: str | None = None, *, rewritten: int = 0, late: int = 0
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
        counted in the line that ends the outage."""
        outage = self.outage
        if outage is None:
            return
        written: set[Kind] = {kind}
        outage.late += late
        current = self.current
        if task_id is not None:
            if kind == "delete" and task_id in outage.records:  # its records gone with it
                outage.dropped += outage.records.pop(task_id).count
            if task_id not in outage.records:
                outage.stale.pop(task_id, None)  # else stale until its records are written
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

    def _end(self, outage: Outage, kind: str, written: set[Kind], rewritten: int) -> None:
        """End ``outage`` now that calls of the kinds ``written`` succeeded (``kind``: what
        the line names), ``rewritten`` of its stale rows written again, unless a kind
        that failed did not succeed or a stale row is left: said in one line."""
        ended = any(not written.isdisjoint(ENDED_BY[failed]) for failed in outage.kinds)
        if not ended or ((outage.stale or outage.settles) and self.current is not None):
            return  # not over while a stale row failed again: the next write tries it
        self.outage = None
        said = [
            f"the rows they left stale were written again ({counted(rewritten, 'row')})"
            if rewritten
            else "those tasks' rows are stale until their next transition"
        ]
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
            "store %r recovered (a %s succeeded): %s failed during the outage, %s not stored (%s)",
            self.store,
            kind,
            counted(outage.calls, "call"),
            counted(outage.writes, "task write"),
            "; ".join(said),
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
        A save goes through :func:`~lldsched.persistence.resave`: a shared store writes
        the row only while it is as this process last read or wrote it and no lease holds
        it; a row it leaves (said at INFO) is stale no more, the feed's or the lease
        holder's to set right.  Each written is stale no more and its kind is added to
        ``written``; one that fails again stays stale, counted in the outage.  Returns
        how many were written.

        The rows' writes are one call of a store's deadline (:func:`~lldsched.persistence.
        verb_call`, as a verb's calls are): in an outage the first that finds the server
        out of reach fails the others at once, one ``timeout`` for them all, not one a
        row (docs/DECISIONS.md, "One timeout a PostgreSQL call, and a verb's")."""
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
                if not isinstance(exc, Exception) and _on_main_thread():
                    _interrupt(self, exc)  # a Ctrl-C or an exit reaches the user: store_failed
            else:
                del stale[task_id]
                written.add(verb)
                if held is not None:  # written, or left with the row (dropped: counted)
                    del outage.records[task_id]
                    outage.dropped += held.count  # none left once written (_wrote)
                if kept:
                    done += 1
                else:
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
        many were stored or refused."""
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
                    if not isinstance(exc, Exception) and _on_main_thread():
                        _interrupt(self, exc)
                return done
            del settles[token]
            written.add("save")
            done += 1
            if getattr(store, "rejected", 0) == refused:
                outage.late += sum(record.outcome.ran for record in records)
        return done

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
        :attr:`user` holds it (:func:`lldsched.core.storeuse.check`)."""
        store = self.store
        if self.closed or getattr(store, "closed", False) is True:
            raise StoreClosedError(
                f"cannot {verb} {task!r}: the store {store!r} is closed but its scheduler "
                f"still runs, and nothing was changed; {ADVICE}"
            )
        storeuse.check(store, self.user, doing=f"{verb} {task!r}")


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


def _check_kind(kind: str) -> None:
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
) -> None:
    """A core's write that failed after the change it describes was made: logged by
    :meth:`StoreWrites.failed` (called in an ``except BaseException`` block, so with a
    store; ``purge``: the delete was a purge, written again as one; ``fenced``: a run's
    settle, whose row is its lease's, not written again).

    A ``BaseException`` that is not an ``Exception`` (a ``KeyboardInterrupt`` or
    ``SystemExit`` raised inside ``save`` or ``delete``) is a failed write like any
    other, logged the same way; then, on the main thread only, it is raised again: the
    user's Ctrl-C or exit reaches them (the registry holds the change already), at once
    or, inside :func:`interrupts_deferred`, once the verb under way is whole.  On any
    other thread (a worker, the timer, the coroutine loop) it stops there: that thread
    goes on and its run is settled, as an action's own ``KeyboardInterrupt`` is a
    failed run (docs/DECISIONS.md, "A store's save that raises a BaseException").
    """
    assert writes is not None  # a core makes one with its store
    writes.failed(error, verb, task_id, snapshot, purge=purge, fenced=fenced, records=records)
    if not isinstance(error, Exception) and _on_main_thread():
        _interrupt(writes, error)


def purge_retired(writes: StoreWrites | None, store: TaskStore, task_id: str) -> None:
    """Delete ``task_id`` from ``store`` as it retires (``purge_retired=True``), only while
    its row is still the one this process saw retire (:func:`~lldsched.persistence.purge`):
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


def interrupts_deferred(writes: StoreWrites | None) -> contextlib.AbstractContextManager[None]:
    """:meth:`StoreWrites.interrupts_deferred` of a core's ``writes`` (``store_writes``);
    nothing to defer without a store."""
    return contextlib.nullcontext() if writes is None else writes.interrupts_deferred()


def _interrupt(writes: StoreWrites, error: BaseException) -> None:
    """Raise ``error``, a ``KeyboardInterrupt`` or ``SystemExit`` a store raised on the
    main thread, to the user: at once, or once the verb under way is whole
    (:meth:`StoreWrites.interrupts_deferred`; the first one kept), or handed to the
    runtime collecting them (``StoreWrites.collecting``)."""
    if writes.collecting is not None:
        writes.collecting.append(error)
        return
    if not writes.deferring:
        raise error
    if writes.interrupted is None:
        writes.interrupted = error


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


def left_whole(writes: StoreWrites | None, error: BaseException) -> bool:
    """Whether a verb that raised ``error`` is whole: an ``Exception`` (a verb refuses
    before it changes anything, or the core puts it back), or what the store raised that
    refused it or that :meth:`StoreWrites.interrupts_deferred` kept until it was whole
    (:attr:`StoreWrites.refused`, cleared here: an id held on could match a later
    error's); not another ``KeyboardInterrupt`` or ``SystemExit``, which may have landed
    between two of its statements.  Called only as a verb raises: nothing on its way."""
    if writes is None:
        return isinstance(error, Exception)
    refused, writes.refused = writes.refused, None
    return isinstance(error, Exception) or id(error) == refused


def _on_main_thread() -> bool:
    """True on the main thread, where a ``BaseException`` a store raised (a Ctrl-C, an
    exit) is raised again once logged; any other thread logs it and goes on."""
    return threading.current_thread() is threading.main_thread()


def store_written(writes: StoreWrites | None, verb: Kind, task_id: str) -> None:
    """A core's write of ``task_id`` (``verb``: ``"save"`` or ``"delete"``) succeeded: its
    row is no longer stale, and it ends an outage in which one of its kind failed
    (:meth:`StoreWrites.succeeded`)."""
    if writes is not None and writes.outage is not None:
        writes.succeeded(verb, task_id)


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
