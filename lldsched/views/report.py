"""Plain-text summaries of execution records (standard library only).

The pandas frames and plots live in the views; this is what the command line
prints, and what a script without the notebook extra can use.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from fractions import Fraction
from itertools import compress
from operator import attrgetter
from typing import Any, NamedTuple, TypeGuard

from lldsched.core.names import MISFIRE_CAP, SKIP_CAP, SLOTS_STOOD_FOR
from lldsched.errors import ValidationError, shown
from lldsched.model import ExecutionRecord, Outcome
from lldsched.printable import one_line
from lldsched.schedules.base import Schedule, slot_after
from lldsched.schedules.objects import has_schedule_methods
from lldsched.views.durations import short_text

__all__ = [
    "MISFIRES",
    "NOT_RUNS",
    "TaskColumns",
    "TaskSummary",
    "format_summary",
    "named_tasks",
    "nearest_rank",
    "no_runs",
    "overran",
    "percentile",
    "records_iterable",
    "schedules_by_id",
    "slots_by_outcome",
    "slots_of",
    "slots_stood_for",
    "summarize",
    "summary_of",
]

_ERROR = attrgetter("error")
CAPS = (SKIP_CAP, MISFIRE_CAP)
"""How the error text of a record standing for more slots than its own begins."""


def slots_stood_for(error: object) -> int:
    """How many slots a record whose error text is ``error`` stands for: the one rule
    every view that counts slots follows (:func:`slots_of`).  One, but for the record
    standing for the rest past a cap (its ``error`` starting ``SkipCap:``, past 10
    slots one run skipped, or ``MisfireCap:``, past 1,000 slots of one misfire
    decision): the count its text states (``"this record stands for 395 slots, every
    later one, ..."``; ``"more than 100,000 slots"`` reads 100,001, the least it can
    be).  A cap's record written before it stated a count (lldsched 0.x before this
    rule) reads one: its slots are not known."""
    if not isinstance(error, str) or not error.startswith(CAPS):
        return 1
    stated = SLOTS_STOOD_FOR.search(error)
    if stated is None:
        return 1
    count = int(stated[1].replace(",", ""))
    return count + 1 if "more than" in stated[0] else count


def slots_of(record: ExecutionRecord) -> int:
    """How many slots ``record`` stands for (:func:`slots_stood_for` of its ``error``):
    1 for a run, or for a slot decided without a run; the count a cap's record states."""
    return slots_stood_for(record.error)


def slots_by_outcome(outcomes: Iterable[str], errors: Iterable[object]) -> Counter[str]:
    """The slots the records of ``outcomes`` (each with its ``errors``, in step) stand for,
    by outcome (:func:`slots_stood_for`): a frame's or a task's records counted as
    slots, not as records."""
    counts: Counter[str] = Counter()
    for outcome, error in zip(outcomes, errors, strict=True):
        counts[str(outcome)] += slots_stood_for(error)
    return counts


class TaskSummary(NamedTuple):
    """One task's records, counted and measured (the fields are
    :func:`lldsched.views.summaries.task_summary`'s columns, in order).

    Counts: ``runs == ok + failed + timed_out + cancelled`` (how each run ended, so a
    run that gave its slot up counts as failed or timed out, and a run
    ``Overlap.CANCEL_OTHER`` cut short for a newer slot, or one a shutdown cut (its
    task still due at its slot), as ``cancelled``, never as failed, nor as timed out
    if it also passed its timeout: its outcome says cancelled); ``retries`` are attempts after
    the first of their slot; ``overruns`` first attempts that lasted longer than
    the gap to their schedule's next slot (:func:`overran`); ``missed`` slots
    recorded missed or coalesced (a misfire policy's decisions, and the slots
    ``Overlap.BUFFER_ONE`` folded into one run, which it records coalesced as
    ``RUN_ONCE`` does: their ``error`` names the policy), ``given_up`` slots whose
    attempts all failed and that the task gave up to go on to its next slot (the last
    attempt's outcome ``given_up``; a task with no next slot, a one-off, is dead-lettered
    instead: its last attempt is ``failed``, counted there, and the task's status says
    ``failed``), ``skipped`` slots an overrun, or ``Overlap.ALLOW`` at
    ``max_instances``, dropped.  ``missed`` and ``skipped`` count slots, not records:
    past 10 slots one run skipped (1,000 of one misfire decision), one record (its
    ``error`` starting ``SkipCap:`` or ``MisfireCap:``) stands for the rest and states
    how many (:func:`slots_of`), so a heartbeat of a minute that waited half an hour
    for a worker records 11 and counts 30 skipped.
    Times are seconds, nearest rank (:func:`percentile`), over the runs only; ``None``
    for a task with no run.
    ``blocked`` counts a dependent's waits for its upstreams (records whose outcome
    is ``blocked``) and ``blocked_time`` adds their lengths up (seconds, 0 for none).
    """

    name: str
    runs: int
    ok: int
    failed: int
    timed_out: int
    cancelled: int
    retries: int
    overruns: int
    missed: int
    given_up: int
    skipped: int
    lateness_p50: float | None
    lateness_p95: float | None
    lateness_max: float | None
    duration_p50: float | None
    duration_p95: float | None
    duration_max: float | None
    blocked: int = 0
    blocked_time: float = 0.0


class TaskColumns(NamedTuple):
    """One task's records column by column, in the order they were made: what
    :func:`summary_of` reads (from records here, from a frame in the views)."""

    outcome: Sequence[str]
    ok: Sequence[bool]
    timed_out: Sequence[bool]
    attempt: Sequence[int]
    lateness: Sequence[float]  # seconds
    duration: Sequence[float]  # seconds
    caps: Sequence[tuple[str, str]] = ()
    """The outcome and ``error`` of each record standing for the rest past a cap (its
    error starting ``SkipCap:`` or ``MisfireCap:``): the slots beyond its own it stands
    for are counted (:func:`slots_stood_for`); the callers pick them out (a pass over a
    task's every error was a pass too many)."""


def nearest_rank(count: int, q: float) -> int:
    """The index, in ``count`` sorted values (count >= 1), of their ``q``-th percentile
    (0 < q <= 100) by nearest rank: always one of the values, never an interpolation.

    The rank ``ceil(q * count / 100)`` is worked out exactly, a float ``q`` read as the
    decimal it is written as (``99.9``, not the binary number just above it): in floats,
    ``7 / 100 * 100`` is 7.000000000000001, and the 7th percentile of 100 values, or
    p99.9 of 1,000 (their maximum), was one rank too high."""
    if isinstance(q, int):
        return max(1, -(-q * count // 100)) - 1  # ceil, in integers
    return max(1, math.ceil(Fraction(str(q)) * count / 100)) - 1


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``values``, in any order;
    None if empty.  The one percentile rule of the summaries.

    ``values`` are sorted here, as :func:`statistics.quantiles` and numpy sort theirs (a
    list already in order costs one linear pass): ``percentile([r.lateness for r in
    runs], 99)`` is the p99 of the runs.  A NaN, which has no place in an order, and
    values that do not compare (``[1.0, None]``) are refused, naming them.
    docs/decisions/simulation.md, "A percentile of values in any order"."""
    if isinstance(q, bool) or not isinstance(q, int | float) or not 0 < q <= 100:
        raise ValidationError(f"percentile q must be a number in (0, 100], got {shown(q)}")
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):  # 5: len() failed
        raise ValidationError(f"percentile values must be a list of numbers, got {shown(values)}")
    try:
        ordered = sorted(values)
        # sorted() leaves a NaN where it stood: no order.  In the try: values that sort
        # and are no numbers (["a"], [None] alone, [1j]) raised TypeError from isnan.
        unordered = any(map(math.isnan, ordered))
    except TypeError as exc:  # [1.0, None]: not numbers that compare
        raise ValidationError(
            f"percentile values must be numbers that compare, got {shown(values)}: {exc}"
        ) from None
    if unordered:
        raise ValidationError(
            f"percentile values must not hold a NaN (it has no place in an order), "
            f"got {shown(values)}"
        )
    return _ranked(ordered, q)


def _ranked(values: Sequence[float], q: float) -> float | None:
    """:func:`percentile` of ``values`` known sorted and ``q`` known good (the summaries'
    own lists, sorted where they are made): the nearest rank, None if empty."""
    if not values:
        return None
    return values[nearest_rank(len(values), q)]


def overran(schedule: Schedule | None, record: ExecutionRecord) -> bool:
    """True when the run itself lasted longer than the gap from its slot to the slot
    after it (a rate's period, the gap to a cron's next fire, through any decorator).
    Time spent waiting for a worker is lateness, not overrun; a schedule that counts
    from the finish (a fixed delay: no slot after a slot) or is one-off never overruns."""
    return overran_slot(schedule, record.slot, record.duration)


def overran_slot(schedule: Schedule | None, slot: float, duration: float) -> bool:
    """:func:`overran` of a run of ``slot`` that lasted ``duration`` seconds (the one
    rule; a frame's columns are read without building a record a row)."""
    if schedule is None:
        return False
    following = slot_after(schedule, slot)
    return following is not None and duration > following - slot


def summary_of(name: str, columns: TaskColumns, *, overruns: int) -> TaskSummary:
    """The one per-task summary rule (see :class:`TaskSummary`), over one task's
    records; ``overruns`` is counted by the caller with :func:`overran`."""
    # One pass counts each (outcome, ok, timed_out, attempt) present, and the figures
    # are read from those few combinations (a pass over the rows per figure took 0.9 s
    # of a million rows' 1.5 s in task_summary).
    combinations = Counter(
        zip(columns.outcome, columns.ok, columns.timed_out, columns.attempt, strict=True)
    )
    outcomes: Counter[str] = Counter()
    runs = ok = failed = timed_out = cancelled = retries = 0
    for (outcome, good, late, attempt), count in combinations.items():
        outcomes[outcome] += count
        if outcome in NOT_RUNS:
            continue
        cut = outcome == Outcome.CANCELLED  # a cancelled run is neither failed nor timed out
        runs += count
        ok += count if good else 0
        failed += 0 if good or late or cut else count
        timed_out += count if late and not cut else 0
        cancelled += count if cut else 0
        retries += count if attempt > 1 else 0
    ran = [outcome not in NOT_RUNS for outcome in columns.outcome]
    lateness = _known_sorted(compress(columns.lateness, ran))
    duration = _known_sorted(compress(columns.duration, ran))
    slots = outcomes.copy()  # a record a slot, and a cap's record the slots it states
    for outcome, error in columns.caps:
        slots[outcome] += slots_stood_for(error) - 1
    blocked = outcomes[Outcome.BLOCKED]
    waits = (outcome == Outcome.BLOCKED for outcome in columns.outcome)
    return TaskSummary(
        name=name,
        runs=runs,
        ok=ok,
        failed=failed,
        timed_out=timed_out,
        cancelled=cancelled,
        retries=retries,
        overruns=overruns,
        missed=sum(slots[misfire] for misfire in MISFIRES),
        given_up=outcomes[Outcome.GIVEN_UP],
        skipped=slots[Outcome.SKIPPED],
        lateness_p50=_ranked(lateness, 50),
        lateness_p95=_ranked(lateness, 95),
        lateness_max=lateness[-1] if lateness else None,
        duration_p50=_ranked(duration, 50),
        duration_p95=_ranked(duration, 95),
        duration_max=duration[-1] if duration else None,
        blocked=blocked,
        blocked_time=sum(compress(columns.duration, waits)) if blocked else 0,
    )


def _known_sorted(seconds: Iterable[float]) -> list[float]:
    """``seconds`` sorted, without the NaNs (a time not known: the percentiles and the
    maximum leave it out, as pandas' do; sorted with them, the order is undefined)."""
    return sorted(value for value in seconds if not math.isnan(value))


NOT_RUNS = tuple(outcome.value for outcome in Outcome if not outcome.ran)  # Outcome.ran decides
MISFIRES = (Outcome.MISSED.value, Outcome.COALESCED.value)  # slots a misfire policy decided


def records_iterable(records: object) -> TypeGuard[Iterable[Any]]:
    """True when ``records`` may be iterated as records (:func:`summarize`,
    ``frames.to_frame``): an iterable, but not text, bytes or a mapping (a
    ``bytearray`` iterated as its ints, and ``to_frame(bytearray(b"x"))`` said "got
    120")."""
    return isinstance(records, Iterable) and not isinstance(
        records, str | bytes | bytearray | Mapping
    )


def schedules_by_id(schedules: object) -> Mapping[str, Schedule]:
    """The ``schedules`` a summary takes (task id to schedule, for the overrun count;
    ``None``: none) as a mapping, else :class:`~lldsched.errors.ValidationError`:
    ``summarize(records, True)`` raised ``AttributeError`` (``'bool' object has no
    attribute 'get'``) and ``task_summary(frame, True)`` a bare ``TypeError``.  Each key
    is a task id (a ``str``) and each value a schedule (registration's rule,
    :func:`~lldsched.schedules.objects.has_schedule_methods`): a value that was none
    (``{"job": 60}``, ``{"job": FixedRate}``) raised ``AttributeError`` or ``TypeError``
    at the first record of its task, and a key that was no id matched nothing, unsaid.
    Not cron text, which a task and a decorator take (read in the runtime's zone): here
    no runtime reads it, and read in UTC a runtime's slots in another zone are an hour or
    more from its slots, every overrun miscounted; its refusal says what to pass."""
    if schedules is None:
        return {}
    if not isinstance(schedules, Mapping):
        raise ValidationError(
            f"schedules must map task ids to schedules (a dict, or None), got {shown(schedules)}"
        )
    for task_id, schedule in schedules.items():
        if not (isinstance(task_id, str) and has_schedule_methods(schedule)):
            text = shown(schedule)
            hint = (
                " (text: a runtime reads cron text in its tz, so pass the runtime's "
                f"schedules(), or CronSchedule({text}, tz=...))"
                if isinstance(schedule, str)
                else ""
            )
            raise ValidationError(
                "schedules must map task ids (str) to schedules, as a runtime's schedules() "
                f"does, got {shown(task_id)}: {text}{hint}"
            )
    return schedules


def summarize(
    records: Iterable[ExecutionRecord],
    schedules: Mapping[str, Schedule] | None = None,
    *,
    tasks: Iterable[Any] | None = None,
) -> list[TaskSummary]:
    """Per-task summaries, in the order the tasks first appear in ``records`` (a task
    whose slots were all decided without a run too, with ``runs == 0``), each named by
    its last record (a task renamed, by its latest name).
    ``schedules`` maps task ids to schedules, for counting overruns.  ``tasks`` (the
    runtime's ``tasks()``) adds a row of no run for each of them with no record yet,
    after the others (:func:`no_runs`); without it, a task with no record has no row:
    records know no other."""
    if not records_iterable(records):
        raise ValidationError(f"summarize() takes ExecutionRecords, got {shown(records)}")
    by_id = schedules_by_id(schedules)
    named = named_tasks(tasks)
    grouped: dict[str, list[ExecutionRecord]] = {}
    for record in records:
        if not isinstance(record, ExecutionRecord):
            raise ValidationError(
                f"summarize() takes ExecutionRecords, got an item {shown(record)}"
            )
        grouped.setdefault(record.task_id, []).append(record)
    rows = []
    for task_id, group in grouped.items():
        schedule = by_id.get(task_id)
        # Each record's outcome and duration (its own rules, properties) asked once, and
        # the overruns counted from them only for a task with a schedule (asking twice,
        # and for every task, was 40 % of a million records' summary).
        outcomes = [r.outcome for r in group]  # Outcome is a StrEnum: each is its string
        duration = [r.duration for r in group]
        columns = TaskColumns(
            outcome=outcomes,
            ok=[r.ok for r in group],
            timed_out=[r.timed_out for r in group],
            attempt=[r.attempt for r in group],
            lateness=[r.lateness for r in group],
            duration=duration,
            caps=[
                (outcome, error)
                for outcome, error in zip(outcomes, map(_ERROR, group), strict=True)
                if error is not None and error.startswith(CAPS)
            ],
        )
        overruns = 0
        if schedule is not None:
            overruns = sum(
                overran_slot(schedule, r.slot, length)  # overran(schedule, r)
                for r, outcome, length in zip(group, outcomes, duration, strict=True)
                if r.attempt == 1 and outcome.ran
            )
        # Named as it is now, by its last record (each record keeps the name its run
        # had: a task renamed read under a name it no longer has).
        rows.append(summary_of(group[-1].name, columns, overruns=overruns))
    return rows + [row for _, row in no_runs(named, grouped)]


NO_RUN = TaskColumns(outcome=(), ok=(), timed_out=(), attempt=(), lateness=(), duration=())
"""The columns of a task with no record: :func:`summary_of` makes its row of no run."""


def no_runs(named: Mapping[str, str], seen: Collection[str]) -> list[tuple[str, TaskSummary]]:
    """The id and a row of no run (counts 0, times ``None``) of each task of ``named``
    (id to name: :func:`named_tasks` of the runtime's ``tasks()``) whose id is not in
    ``seen``, in the order given: the one rule by which every per-task summary
    (:func:`summarize`, ``task_summary``, ``simulate``'s table) shows a task registered
    and not yet due.  A class that registered five tasks, one due tomorrow, read four
    rows and a service of four."""
    return [
        (task_id, summary_of(name, NO_RUN, overruns=0))
        for task_id, name in named.items()
        if task_id not in seen
    ]


def named_tasks(tasks: Iterable[Any] | None) -> dict[str, str]:
    """Task id to name of ``tasks`` (the runtime's ``tasks()``, each with an ``id`` and a
    ``name``; a repeated id once, its first name; ``None``: none), else a
    :class:`~lldsched.errors.ValidationError` naming what was given."""
    if tasks is None:
        return {}
    wanted = "tasks must be the runtime's tasks (sim.tasks(), scheduler.tasks())"
    if not records_iterable(tasks):
        raise ValidationError(f"{wanted}, got {shown(tasks)}")
    named: dict[str, str] = {}
    for task in tasks:
        task_id, name = getattr(task, "id", None), getattr(task, "name", None)
        if not isinstance(task_id, str) or not isinstance(name, str):
            raise ValidationError(
                f"{wanted}, each with an id and a name, got an item {shown(task)}"
            )
        named.setdefault(task_id, name)
    return named


def format_summary(rows: Iterable[TaskSummary]) -> str:
    """A fixed-width table of ``rows``, times as :func:`~lldsched.views.durations.short_text`
    (``1.5m``; ``-`` for a time of a task that never ran): the
    :class:`TaskSummary` rows :func:`summarize` gives, else a
    :class:`~lldsched.errors.ValidationError` naming what was given (``None`` raised
    ``TypeError``, records or a frame's rows ``AttributeError``)."""
    if not records_iterable(rows):
        raise ValidationError(
            f"format_summary() takes TaskSummary rows, as summarize() gives, got {shown(rows)}"
        )
    rows = list(rows)
    for row in rows:
        if not isinstance(row, TaskSummary):
            raise ValidationError(
                "format_summary() takes TaskSummary rows, as summarize() gives, got an item "
                f"{shown(row)}"
            )
    header = ("task", "runs", "ok", "failed", "timeout", "cancelled", "retries", "overrun",
              "missed", "given-up", "skipped", "late p50", "late p95", "late max", "dur p50",
              "dur p95", "dur max")  # fmt: skip
    table: list[tuple[str, ...]] = [header]
    for row in rows:
        counts = (row.runs, row.ok, row.failed, row.timed_out, row.cancelled, row.retries,
                  row.overruns, row.missed, row.given_up, row.skipped)  # fmt: skip
        times = (row.lateness_p50, row.lateness_p95, row.lateness_max,
                 row.duration_p50, row.duration_p95, row.duration_max)  # fmt: skip
        # A name an older release stored with a newline, on one line (as `lldsched tasks`).
        table.append((one_line(row.name), *map(str, counts), *map(short_text, times)))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in table
    ]
    return "\n".join(lines)
