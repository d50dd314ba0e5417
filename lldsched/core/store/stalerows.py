"""The rows a store outage left stale, written again: once a task write succeeds, at the
threaded timer's try, and at a shutdown of either runtime.

:class:`StaleRows` is the part of :class:`~lldsched.core.store.writes.StoreWrites` that
writes them, over :class:`~lldsched.core.store.outage.OutageWrites` (the outage said once,
counted and ended: :mod:`lldsched.core.store.outage`); what one task's failed saves carried,
held bounded, is :class:`~lldsched.core.store.outagerecords.Held`.

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
``postgres/batch.SettleQueue.hold``.)  Any other write
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

The core has no timer: the threaded scheduler's timer tries the stale rows again
(:meth:`StaleRows.retry_due`) a minute after the last failed call, so that an
outage ends once the store is back, not at a task's next write, which may be a day
away (``store_ok`` False all that time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from lldsched.core.store.interrupts import interrupt, on_main_thread
from lldsched.core.store.outage import PURGE, Kind, Outage, OutageWrites
from lldsched.core.store.outagerecords import Entry, Held
from lldsched.logs import SCHEDULER, STORE, counted
from lldsched.model import TaskStatus
from lldsched.persistence import Task, TaskSnapshot, TaskStore
from lldsched.storecalls import purge, resave, save_all, verb_call

__all__ = ["STALE_RETRY", "STALE_SHOWN", "VERBS_OWED", "StaleRows", "say_left_stale"]

log = logging.getLogger(STORE)


STALE_SHOWN = 20
"""The most task ids the warning of rows a shutdown leaves stale names (the rest counted)."""

STALE_RETRY = 60.0
"""Seconds without a failed call after which the threaded scheduler's timer writes the
rows an outage of a store of one process left stale again (:meth:`StaleRows.retry_due`):
the outage ends once the store is back, not at the next write of a task that may be a
day away (``metrics().store_ok`` False, the readiness probe failing, all that time)."""


class StaleRows(OutageWrites):
    """The rows the outage of a :class:`~lldsched.core.store.writes.StoreWrites` left stale
    (and, on a shared store, the runs' settles it holds), written again: at a call that
    succeeds (:meth:`~lldsched.core.store.outage.OutageWrites.succeeded`), at a shutdown
    (:meth:`rewrite_stale`) and at the threaded timer's try (:meth:`retry_due`)."""

    __slots__ = ()

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
            owed = False  # a purge of a task removed here, refused
            held = outage.records.get(task_id)
            try:
                if snapshot is not None and held is not None and not self.shared:
                    self._write_held(outage, snapshot, held)  # in order, nothing twice
                elif snapshot is not None:
                    entries = () if held is None else held.entries()
                    kept = resave(store, snapshot, [record for _, record, _ in entries])
                    if kept and held is not None:
                        _wrote(outage, held, entries)
                elif failed == PURGE:  # a row kept is the feed's to bring in, but one of
                    # a task removed here: that feed's row is not learnt, and purged once read
                    owed = not purge(store, task_id) and task_id in outage.removed
                else:
                    store.delete(task_id)
            except BaseException as exc:  # still failing: said as any failure in an outage
                if self.found_closed(exc, f"{verb} of {task_id}"):
                    return done
                self._count(exc, kind=verb, doing=f"{verb} of {task_id}", writes=0)
                if not isinstance(exc, Exception) and on_main_thread():
                    interrupt(self, exc)  # a Ctrl-C or an exit reaches the user: store_failed
            else:
                written.add(verb)
                if owed or (not kept and _verb_owed(current(task_id))):
                    continue  # stale still: written once the feed brought the other's row
                del stale[task_id]
                outage.removed.pop(task_id, None)
                if held is not None:  # written, or left with the row (dropped: counted)
                    del outage.records[task_id]
                    outage.dropped += held.count  # none left once written (_wrote)
                if kept:
                    done += 1
                else:
                    outage.left += 1
                    _say_left(store, task_id, 0 if held is None else held.count)
        return done

    def owes(self, task_id: str) -> bool:
        """Whether a write of ``task_id``'s row failed in the outage under way and is not
        stored yet (it is stale): a shared store's change feed that brings another
        process's row of it keeps this process's pause or cancel
        (:func:`~lldsched.core.follow.follow`), which that write carried."""
        outage = self.outage
        return outage is not None and task_id in outage.stale

    def owes_removal(self, task_id: str, definition: Task) -> bool:
        """Whether ``remove()`` forgot ``task_id`` here, of that ``definition``, while the
        store failed its delete (the row stale, to be purged): a shared store's change
        feed that brings another process's run of it, settled since, does not register
        it here again (:func:`~lldsched.core.follow.follow`); the purge deletes that row
        once read.  Another definition is a registration of the id made elsewhere: learnt."""
        outage = self.outage
        return (
            outage is not None
            and outage.stale.get(task_id) == PURGE
            and outage.removed.get(task_id) == definition
        )

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


VERBS_OWED = (TaskStatus.PAUSED, TaskStatus.CANCELLED)
"""The statuses of a row a verb made here left stale that win over another process's
write of it, as a pause or cancel written during another process's run wins over that
run's outcome (docs/CLUSTER.md, "What the shared mode guarantees")."""


def _verb_owed(registered: TaskSnapshot | None) -> bool:
    """Whether a shared store's row left stale, whose rewrite was refused (another process
    wrote or leased it since this one last read it), is kept stale rather than left to
    that process: this process still holds the task (``registered``, its snapshot now),
    paused or cancelled.  The change feed then brings the other's row, which keeps that
    status (:func:`~lldsched.core.follow.follow`), and the next rewrite writes it.
    Before, the row was left: a pause made in an outage was lost once the task ran
    elsewhere first (docs/decisions/store-failures.md, "A pause, cancel or remove made in
    an outage outlives a run settled elsewhere")."""
    return registered is not None and registered.status in VERBS_OWED


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
