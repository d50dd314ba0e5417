"""The records a store outage holds for each task until its row is written again, bounded.

:mod:`lldsched.core.store.outage` owns the outage (what failed, what ends it, what is
written again and when); this module owns what one task's failed saves carried: the
records of its runs and of no run, held in the order they were made to be written with
its stale row, and how many are kept one by one before one record per outcome stands
for the rest (``OutageCap: ...``), whatever the outage's length (module docstring of
:mod:`~lldsched.core.store.outage`, "What an outage holds is bounded").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from lldsched.core.names import MISFIRE_CAP, OUTAGE_CAP, cap_text
from lldsched.logs import counted, instant_text
from lldsched.model import ExecutionRecord, Outcome

__all__ = ["HELD", "HELD_RUNS", "OUTAGE_CAP", "Entry", "Held"]

HELD = 10
"""The records of no run an outage holds one by one per task (its first ones); past them,
one record per outcome stands for the rest (:class:`Held`), as past
:data:`~lldsched.core.names.MAX_SKIPPED` skipped slots one record does."""

HELD_RUNS = 100
"""The records of runs an outage holds one by one per task (its latest ones: a restart reads
a task's latest runs, and a task's history keeps as many by default, ``history_limit``);
past them, one record per outcome stands for the older ones (:class:`Held`)."""


class _Fold:
    """The records of one outcome an outage folded into one (:class:`Held`): the first one,
    its place, the last one's slot (of no run) or start (of a run), and how many."""

    __slots__ = ("count", "first", "last", "place")

    def __init__(self, place: int, first: ExecutionRecord, last: float) -> None:
        self.place = place
        self.first = first
        self.last = last
        self.count = 1

    def record(self, bound: int) -> ExecutionRecord:
        """The record written for them: the first, its error text saying what it stands for
        (:func:`~lldsched.core.names.cap_text`, as a misfire's cap reads): that a store
        outage held them back past the ``bound`` kept one by one (of no run, the first; of
        runs, the latest), how many of which outcome it stands for, from the first one's
        slot (of no run) or start (of a run) to the last one's, and that the task went
        on as ever."""
        first = self.first
        ran = first.outcome.ran
        what, kept, which, instants = (
            ("runs", "latest", "earlier", "when they started")
            if ran
            else ("no run", "first", "later", "their slots")
        )
        return first._replace(
            error=cap_text(
                OUTAGE_CAP,
                passed=f"more than {bound} records of {what} of this task were held back by a "
                "store outage (the store refused its writes), to be written once it took "
                "writes again",
                kept=f"the {kept} {bound:,}",
                stands=f"every {which} {first.outcome} one ({counted(self.count, 'record')})",
                first=first.started if ran else first.slot,
                last=f"to {instant_text(self.last)} ({instants})",
                then="folded into this one, the first of them, the others not kept; the task "
                "went on as ever (the outage held back its records, not its runs)",
            )
        )


def _fold(folds: dict[Outcome, _Fold], place: int, record: ExecutionRecord) -> None:
    """Fold ``record`` (at ``place``) into its outcome's record of ``folds``, begun with it
    if there is none."""
    last = record.started if record.outcome.ran else record.slot
    fold = folds.get(record.outcome)
    if fold is None:
        folds[record.outcome] = _Fold(place, record, last)
    else:
        fold.last = last
        fold.count += 1


Entry = tuple[int, ExecutionRecord, int]
"""A held record as written (:meth:`Held.entries`): its place, the record, how many records
it stands for (0: itself)."""


class Held:
    """The records the failed saves of one task carried during an outage, held to be written
    with its stale row in the order they were made: bounded, whatever the outage's length.

    Records of no run: the first :data:`HELD` one by one; past them, per outcome, the first
    one folded, the last slot folded and how many (one record written for them), and the
    latest record standing for a misfire's cap (``MisfireCap:``, which a restart reads to
    tell where a catch-up plan was cut), kept whole.  Records of runs: the latest
    :data:`HELD_RUNS` one by one; the older ones, per outcome, folded the same way (the
    first one, the last start, how many).  Each record has its place (the order it was
    added in); a fold takes its first record's.  :meth:`entries` lists what is written, in
    that order; :meth:`written` forgets a first part of it once stored (a store that
    writes record by record may fail among them: nothing is written twice)."""

    __slots__ = ("capped", "gone", "kept", "made", "rest", "runs")

    def __init__(self) -> None:
        self.made = 0  # records added so far: the place of the next one
        self.kept: list[tuple[int, ExecutionRecord]] = []  # of no run, the first HELD
        self.rest: dict[Outcome, _Fold] = {}  # of no run past the first HELD, per outcome
        self.capped: tuple[int, ExecutionRecord] | None = None  # the latest MisfireCap:
        self.runs: deque[tuple[int, ExecutionRecord]] = deque()  # the latest HELD_RUNS
        self.gone: dict[Outcome, _Fold] = {}  # runs before the latest HELD_RUNS, per outcome

    def add(self, record: ExecutionRecord) -> None:
        """Hold ``record``, one by one or folded (counted)."""
        place = self.made
        self.made = place + 1
        if record.outcome.ran:
            runs = self.runs
            runs.append((place, record))
            if len(runs) > HELD_RUNS:
                _fold(self.gone, *runs.popleft())
        elif len(self.kept) < HELD:
            self.kept.append((place, record))
        elif record.error is not None and record.error.startswith(MISFIRE_CAP):
            if self.capped is not None:
                _fold(self.rest, *self.capped)
            self.capped = (place, record)
        else:
            _fold(self.rest, place, record)

    @property
    def count(self) -> int:
        """How many records are held, folded ones included."""
        folded = sum(fold.count for fold in (*self.rest.values(), *self.gone.values()))
        return len(self.kept) + len(self.runs) + (self.capped is not None) + folded

    def entries(self) -> list[Entry]:
        """What is written with the row, in the order the records were made: each one's
        place, the record written and how many records it stands for (0: itself; a fold's
        first record, its error text saying what it stands for: ``OutageCap: ...``)."""
        entries = [(place, record, 0) for place, record in (*self.kept, *self.runs)]
        if self.capped is not None:
            entries.append((*self.capped, 0))
        for fold in self.rest.values():
            entries.append((fold.place, fold.record(HELD), fold.count))
        for fold in self.gone.values():
            entries.append((fold.place, fold.record(HELD_RUNS), fold.count))
        entries.sort(key=_place)
        return entries

    def records(self) -> list[ExecutionRecord]:
        """The records :meth:`entries` writes, in order."""
        return [record for _, record, _ in self.entries()]

    def written(self, entries: Sequence[Entry]) -> None:
        """The first ``entries`` of :meth:`entries` were stored: forget them."""
        if not entries:
            return
        upto = entries[-1][0]
        self.kept = [kept for kept in self.kept if kept[0] > upto]
        runs = self.runs
        while runs and runs[0][0] <= upto:
            runs.popleft()
        if self.capped is not None and self.capped[0] <= upto:
            self.capped = None
        for folds in (self.rest, self.gone):
            for outcome in [o for o, fold in folds.items() if fold.place <= upto]:
                del folds[outcome]


def _place(entry: Entry) -> int:
    return entry[0]
