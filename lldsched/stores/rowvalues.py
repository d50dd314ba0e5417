"""A durable store's row read back: its columns checked, then built into values.

The one place a durable store's row becomes values (SQLite's and PostgreSQL's, shared or
not): each value it reads is checked here, its type and its range, before anything uses
it.  A value no write of lldsched makes (a row edited by hand, written by another tool or
damaged: an attempt of -1, a failure count above the run count, a NaN, infinite or absurd due
instant, a record's outcome no release knows) is a
:class:`~lldsched.stores.unreadable.BadValue` naming the task, the column and the value,
never a task half restored, a TypeError deep inside, or a silent misread; a status no
release of this one knows is an :class:`~lldsched.stores.unreadable.UnknownStatus`
(:func:`status_of`).

A task's row becomes a :class:`~lldsched.persistence.TaskSnapshot`
(:func:`snapshot_from`: the state, the values kept beside it, :func:`check_kept`, then
the definition, :func:`~lldsched.stores.codec.decode_task`), a listing's row a
:class:`Listed` (:func:`listed_from`), a record's an
:class:`~lldsched.model.ExecutionRecord` (:func:`record_from`), a lease's a
:class:`~lldsched.coordination.Lease` (:func:`lease_from`); a value that does not read is
named in one wording (:func:`said`).  Where a misfire's plan ends is written and read
back here too (:func:`resume_at`, :func:`plan_ends`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from lldsched.checks import FARTHEST
from lldsched.coordination import Lease
from lldsched.errors import StoreError, shown
from lldsched.model import ExecutionRecord, Outcome, TaskStatus
from lldsched.persistence import Task, TaskSnapshot
from lldsched.storechecks import unstorable
from lldsched.stores.codec import MISREAD, PRIORITY_VALUES, decode_task, schedule_as_is
from lldsched.stores.unreadable import BadValue, UnknownStatus

__all__ = [
    "Listed",
    "Undecodable",
    "check_kept",
    "check_take_over",
    "lease_from",
    "listed_from",
    "plan_ends",
    "record_from",
    "resume_at",
    "said",
    "snapshot_from",
    "status_of",
]


def status_of(task_id: str, text: object) -> TaskStatus:
    """The status a row of ``task_id`` stores as ``text``; :class:`UnknownStatus` if this
    release knows none of that name.  The one rule of both durable stores' rows."""
    try:
        return TaskStatus(text)
    except ValueError:
        raise UnknownStatus(task_id, text) from None


def check_take_over(task_id: str, status: object) -> None:
    """Refuse to take over (:meth:`CoordinatedStore.take_over
    <lldsched.coordination.CoordinatedStore.take_over>`: a registration with
    ``replace_existing=True`` of a task left out here) a row whose status this release
    does not know: a replacement keeps the row's state, and this one cannot be read, nor
    guessed (a newer release's status may mean its task must not run).  A
    :class:`StoreError` saying so and what to do; nothing is written."""
    try:
        status_of(task_id, status)
    except UnknownStatus as exc:
        raise StoreError(
            f"cannot replace task {task_id!r}: {exc}; its row was left untouched. Run the "
            "release that wrote it (its processes follow it), register the task under "
            "another id, or delete its row with the store's delete(task_id) if what that "
            "status meant is known to be over"
        ) from None


def said(table: str, key: str, column: str, value: object, expected: str) -> str:
    """How a value a store cannot read is named, the one wording of every store's rows
    (``sqlite/rows.misread``, the SQLite open's scan, too): ``"table tasks, row id='b',
    column attempt holds the integer -1, where the store writes an integer >= 0"``.  The
    value is quoted by :func:`~lldsched.errors.shown` (a long text by its start)."""
    kind = _KIND.get(type(value), type(value).__name__)
    return (
        f"table {table}, row {key}, column {column} holds the {kind} {shown(value)}, "
        f"where the store writes {expected}"
    )


class Undecodable(bytes):
    """A text a store read that is not UTF-8 (written by another tool, or damaged), kept
    as its bytes for the row's check to name (SQLite keeps any bytes as text; its driver
    failed the whole read, every row's, naming no task: ``sqlite/rows.fetch``)."""


_KIND = {str: "text", int: "integer", float: "real", bytes: "blob", bool: "boolean"}
_KIND[type(None)] = "null"
_KIND[Undecodable] = "text that is not UTF-8,"
_FAR = FARTHEST  # an instant no schedule passes (checks.FARTHEST); NaN compares False


def _instant(value: object) -> bool:
    return type(value) is float and -_FAR <= value <= _FAR


def _instant_or_none(value: object) -> bool:
    return value is None or (type(value) is float and -_FAR <= value <= _FAR)


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _text(value: object) -> bool:
    return type(value) is str


def _text_or_none(value: object) -> bool:
    return value is None or type(value) is str


def _flag(value: object) -> bool:  # SQLite keeps 0 or 1, PostgreSQL a boolean
    return type(value) is bool or (type(value) is int and 0 <= value <= 1)


_STATE = (  # the state columns of a task's row, in the order snapshot_from takes them
    ("next_run_at", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("attempt", _count, "an integer >= 0"),
    ("run_count", _count, "an integer >= 0"),
    ("failure_count", _count, "an integer >= 0"),
    ("last_error", _text_or_none, "a text or NULL"),
    ("running", _flag, "0 or 1 (false or true)"),
    ("waited", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("slot", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("resume_at", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("grid", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("blocked_due", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("blocked_slot", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
)


def resume_at(snapshot: TaskSnapshot) -> float | None:
    """What a row keeps of ``snapshot``'s plan beside ``waited`` (the column ``resume_at``
    of both durable stores): the first slot of the task's own schedule no misfire decision
    took.  That is ``waited`` itself when the plan resumes there (``resumes``), or the
    slot after the runs it decided when ``waited`` is one of them (``until``, always after
    ``waited``); None otherwise.  Read back by :func:`plan_ends`."""
    return snapshot.waited if snapshot.resumes else snapshot.until


def plan_ends(waited: float | None, kept: float | None) -> tuple[bool, float | None]:
    """``resumes`` and ``until`` of a row that keeps ``waited`` and ``kept`` (its
    ``resume_at``, :func:`resume_at`): ``waited`` is the slot to resume at while the row
    keeps that very slot; a slot after it is where the plan's runs end.  A row an older
    release wrote (a rolling upgrade) keeps NULL, or ``waited`` for the slot to resume at,
    and reads as it did; one whose ``waited`` it moved past the slot kept (a plan of its
    own) reads neither, and a ``waited`` it moved back before a slot to resume at kept
    reads that slot as the plan's end (:attr:`TaskSnapshot.until
    <lldsched.persistence.TaskSnapshot.until>`: a ``RUN_ALL`` plan's slots up to it run,
    and those after it meet the policy)."""
    if waited is None or kept is None or kept < waited:
        return False, None
    if kept == waited:
        return True, None
    return False, kept


def snapshot_from(
    task_id: str,
    definition: str,
    status: object,
    state: Sequence[Any],
    *,
    task: Task | None = None,
    kept: Sequence[Any] = (),
) -> TaskSnapshot:
    """The snapshot of a task's row: its ``status`` text, its ``definition`` (decoded by
    :func:`decode_task`, unless ``task`` is given: the definition this process has, for a
    row whose own it cannot load, :class:`~lldsched.stores.unreadable.Unreadable`) and
    its ``state``, the values of ``next_run_at, attempt, run_count, failure_count,
    last_error, running, waited, slot, resume_at, grid, blocked_due, blocked_slot``
    (``resume_at`` read with ``waited`` as ``resumes`` and ``until``: :func:`plan_ends`;
    ``grid`` NULL in a row an older release wrote, and the last two in any row but a
    BLOCKED one whose next slot a reschedule moved).

    The one rule of both durable stores' rows, checked in this order: a status this
    release does not know is an :class:`UnknownStatus` (whatever ``task``); a state value
    of the wrong type or out of its range (:data:`_STATE`; a failure count above the run
    count) a :class:`BadValue` naming each; values that do not go together (a status of
    :data:`_DUE` with no due instant, a SCHEDULED row with attempts behind it, a RETRYING
    one with none: :func:`_misread_together`) a :class:`BadValue` too; the values the
    store keeps beside the state (``kept``: :func:`check_kept`'s), if given; then the
    definition."""
    status_value = status_of(task_id, status)  # UnknownStatus: a newer release's
    (
        next_run_at, attempt, run_count, failure_count, last_error, running, waited, slot,
        resume, grid, blocked_due, blocked_slot,
    ) = state  # fmt: skip
    # Every column at the cost of a test or two (a shared store's feed reads each row
    # written elsewhere); what is wrong, and how, said only for a row that fails one.
    if not (
        (next_run_at is None or (type(next_run_at) is float and -_FAR <= next_run_at <= _FAR))
        and type(attempt) is int and attempt >= 0
        and type(run_count) is int and type(failure_count) is int
        and 0 <= failure_count <= run_count
        and (last_error is None or type(last_error) is str)
        and (type(running) is bool or (type(running) is int and 0 <= running <= 1))
        and (waited is None or (type(waited) is float and -_FAR <= waited <= _FAR))
        and (slot is None or (type(slot) is float and -_FAR <= slot <= _FAR))
        and (resume is None or (type(resume) is float and -_FAR <= resume <= _FAR))
        and (grid is None or (type(grid) is float and -_FAR <= grid <= _FAR))
        and (blocked_due is None
             or (type(blocked_due) is float and -_FAR <= blocked_due <= _FAR))
        and (blocked_slot is None
             or (type(blocked_slot) is float and -_FAR <= blocked_slot <= _FAR))
    ):  # fmt: skip
        raise BadValue(task_id, _misread_state(task_id, state))
    if not _together(status_value, next_run_at, attempt):
        raise BadValue(task_id, _misread_together(task_id, status_value, next_run_at, attempt))
    if kept:
        check_kept(task_id, kept)
    if task is None:  # a Window's max_runs counts the successful runs
        task = decode_task(task_id, definition, runs=run_count - failure_count)
    resumes, until = plan_ends(waited, resume)
    return TaskSnapshot(
        task, status_value, next_run_at, attempt, run_count, failure_count, last_error,
        bool(running), waited, slot, resumes, until, grid, blocked_due, blocked_slot,
    )  # fmt: skip


_RETRYING = TaskStatus.RETRYING
_WAITING = frozenset((TaskStatus.SCHEDULED, _RETRYING))
_DUE = frozenset((*_WAITING, TaskStatus.RUNNING, TaskStatus.PAUSED))
"""The statuses every write gives a due instant: without one a SCHEDULED, RETRYING or
RUNNING row is never queued again (its task never runs), and a PAUSED one's ``resume``
fails (an ``AssertionError``, ``core.control``)."""


def _together(status: TaskStatus, next_run_at: float | None, attempt: int) -> bool:
    """Whether a row's status, due instant and attempt go together: the combinations a
    restart cannot follow are not (docs/decisions/persistence.md, "A row whose values do not go
    together"; :func:`_misread_together` says how).  One set test and one comparison."""
    return not (next_run_at is None and status in _DUE) and (
        status not in _WAITING or (status is _RETRYING) == (attempt > 0)
    )


def _misread_together(
    task_id: str, status: TaskStatus, next_run_at: float | None, attempt: int
) -> list[str]:
    """The values of a task's row that :func:`snapshot_from` refuses together, each
    :func:`said` with the status it goes with and what a restart would do with it."""
    key = f"id={task_id!r}"
    found = []
    if next_run_at is None and status in _DUE:
        found.append(
            said("tasks", key, "next_run_at", None, f"a due instant with the status "
                 f"{status.value!r} (without one the task never runs again)")
        )  # fmt: skip
    if status is _RETRYING and not attempt:
        found.append(
            said("tasks", key, "attempt", attempt, "an integer >= 1 with the status "
                 "'retrying' (a retry with no attempt behind it is read as a slot of its "
                 "own: its grid moves by the backoff, its slot gets one attempt more)")
        )  # fmt: skip
    elif status is TaskStatus.SCHEDULED and attempt:
        found.append(
            said("tasks", key, "attempt", attempt, "0 with the status 'scheduled' (the "
                 "attempts of a slot are a 'retrying' row's: its slot would be given up "
                 "after fewer attempts than its retry policy allows)")
        )  # fmt: skip
    return found


class Listed(NamedTuple):
    """What a listing of many tasks shows of one (``python -m lldsched tasks``'s table):
    read from its row's columns and two parts of its definition (:func:`listed_from`),
    not its whole snapshot."""

    id: str
    name: str
    status: TaskStatus
    schedule: Any  # as a read to show decodes it (a type not registered here: its text)
    next_run_at: float | None
    attempt: int
    running: bool = False  # an attempt in flight, or owed by a process that died in it


def listed_from(row: Sequence[Any], schedules: dict[str, Any]) -> Listed | None:
    """The task a listing's row shows: ``id, name, status, next_run_at, attempt,
    schedule, running``, the name and the schedule as the JSON texts of those parts of the
    definition (the database reads them out); ``running``, the row's flag of an attempt
    in flight (what the table marks: lldsched/cli/storetasks.py ``_flight``).  Each value
    as every read checks it (:func:`snapshot_from`, :func:`decode_task` with
    ``imports=False``), alone and together; None for a row that fails one, or whose
    name or schedule is one no read takes: the caller reads it whole, for the error that
    read names.  ``schedules``: those decoded so far, by their text (the rows of one
    schedule share its object).

    What the listing does not show is not read, nor checked: a row damaged there alone
    (its retry policy, its run count) is listed; ``show ID`` reads it whole."""
    task_id, name_text, status, next_run_at, attempt, schedule_text, running = row
    if not (
        status in _STATUS_TEXTS and _instant_or_none(next_run_at) and _count(attempt)
        and type(name_text) is str and type(schedule_text) is str and _flag(running)
    ):  # fmt: skip
        return None
    status_value = TaskStatus(status)
    if not _together(status_value, next_run_at, attempt):
        return None
    try:
        name = json.loads(name_text)
        schedule = schedules.get(schedule_text)
        if schedule is None:
            schedule = schedules[schedule_text] = schedule_as_is(json.loads(schedule_text))
    except MISREAD:
        return None
    if type(name) is not str or not name.strip() or unstorable(name) is not None:
        return None  # a blank name: refused by the whole read (registration's rule)
    return Listed(task_id, name, status_value, schedule, next_run_at, attempt, bool(running))


_STATUS_TEXTS = frozenset(status.value for status in TaskStatus)


def _priority_column(value: object) -> bool:
    return type(value) is int and value in PRIORITY_VALUES


def _count_or_none(value: object) -> bool:
    return value is None or (type(value) is int and value >= 0)


_KEPT = (  # what a store keeps beside a task's state, in the order check_kept takes them
    ("failed_seq", _count_or_none, "an integer >= 0 or NULL"),
    ("priority", _priority_column, f"one of {sorted(PRIORITY_VALUES)} (Priority)"),
    ("version", _count, "an integer >= 0"),
    ("slot_due", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
)
_LEASE = (  # the task's lease, if it has one (else every value NULL)
    ("slot", _instant, "a finite real within 1e15 of 0"),
    ("attempt", _count, "an integer >= 0"),
    ("token", _count, "an integer >= 0"),
    ("holder", _text, "a text"),
    ("expires_at", _instant, "a finite real within 1e15 of 0"),
)


def check_kept(task_id: str, kept: Sequence[Any]) -> None:
    """Refuse the values a store keeps beside a task's state, which it uses without
    decoding them: ``failed_seq, priority, version, slot_due`` (the dead letter's order,
    the claim's, the change feed's, the due instant its slot goes with), then its
    lease's ``slot, attempt, token, holder, expires_at`` (all NULL: no lease).  A
    :class:`BadValue` naming each value of the wrong type or out of its range, as for
    the state (:func:`snapshot_from` asks it): a row edited by hand or written by
    another tool is its task's alone, refused by itself, so a shared store leaves the
    task out and runs the others (docs/decisions/persistence.md, "A value a store keeps beside a
    task's state").  One chain of tests while every value is good."""
    failed_seq, priority, version, slot_due, *lease = kept
    if (
        (failed_seq is None or (type(failed_seq) is int and failed_seq >= 0))
        and type(priority) is int and priority in PRIORITY_VALUES
        and type(version) is int and version >= 0
        and (slot_due is None or (type(slot_due) is float and -_FAR <= slot_due <= _FAR))
        and (not lease or lease[3] is None or all(  # no holder: no lease (NOT NULL)
            valid(value) for (_, valid, _), value in zip(_LEASE, lease, strict=True)
        ))
    ):  # fmt: skip
        return
    key = f"id={task_id!r}"
    found = [
        said("tasks", key, column, value, expected)
        for (column, valid, expected), value in zip(_KEPT, kept[:4], strict=True)
        if not valid(value)
    ]
    if lease and lease[3] is not None:
        found += _misread_lease(task_id, lease)
    raise BadValue(task_id, found)


def lease_from(row: Sequence[Any]) -> Lease:
    """The :class:`~lldsched.coordination.Lease` a row of a store's ``leases`` table holds
    (``task_id, slot, attempt, token, holder, expires_at``: ``CoordinatedStore.leases``),
    checked as a task's row checks its lease (:func:`check_kept`): a :class:`BadValue`
    naming each value no write makes (a NaN or infinite ``expires_at``, which no clock
    passes: the lease held its task for good).  Both engines' rule."""
    task_id, *lease = row
    if all(valid(value) for (_, valid, _), value in zip(_LEASE, lease, strict=True)):
        return Lease(task_id, *lease)
    raise BadValue(task_id, _misread_lease(task_id, lease))


def _misread_lease(task_id: object, lease: Sequence[Any]) -> list[str]:
    """Each value of the lease of ``task_id`` that :data:`_LEASE` refuses, :func:`said`."""
    return [
        said("leases", f"task_id={task_id!r}", column, value, expected)
        for (column, valid, expected), value in zip(_LEASE, lease, strict=True)
        if not valid(value)
    ]


def _misread_state(task_id: str, state: Sequence[Any]) -> list[str]:
    """Each value of a task's ``state`` that :func:`snapshot_from` refuses, :func:`said`."""
    key = f"id={task_id!r}"
    found = [
        said("tasks", key, column, value, expected)
        for (column, valid, expected), value in zip(_STATE, state, strict=True)
        if not valid(value)
    ]
    run_count, failure_count = state[2], state[3]
    if _count(run_count) and _count(failure_count) and failure_count > run_count:
        expected = f"an integer from 0 to the run count ({run_count})"
        found.append(said("tasks", key, "failure_count", failure_count, expected))
    return found


def _worker(value: object) -> bool:  # -1: a slot decided without a run
    return type(value) is int and value >= -1


def _outcome_or_none(value: object) -> bool:
    return value is None or (type(value) is str and value in _OUTCOMES)


def _integer_or_none(value: object) -> bool:
    return value is None or type(value) is int


_OUTCOMES = frozenset(outcome.value for outcome in Outcome)
_RECORD = (  # a record's columns, in the order record_from takes them (but its seq, last)
    ("task_id", _text, "a text"),
    ("name", _text, "a text"),  # the run's, or its task's (coalesce): never NULL
    ("attempt", _count, "an integer >= 0"),
    ("due", _instant, "a finite real within 1e15 of 0"),
    ("slot", _instant, "a finite real within 1e15 of 0"),
    ("worker", _worker, "an integer >= -1"),
    ("started", _instant, "a finite real within 1e15 of 0"),
    ("finished", _instant, "a finite real within 1e15 of 0"),
    ("ok", _flag, "0 or 1 (false or true)"),
    ("error", _text_or_none, "a text or NULL"),
    ("timed_out", _flag, "0 or 1 (false or true)"),
    ("misfire", _outcome_or_none, "an outcome's name or NULL"),
    ("result", _text_or_none, "a text or NULL"),
    ("token", _integer_or_none, "an integer or NULL"),
    ("node", _text_or_none, "a text or NULL"),
)


def record_from(row: Sequence[Any]) -> ExecutionRecord:
    """The record a row of the records table describes: ``task_id, name, attempt, due,
    slot, worker, started, finished, ok, error, timed_out, misfire, result, token, node,
    seq``, both stores' (``RECORD_COLUMNS``).  A :class:`BadValue` naming each value of the
    wrong type or out of its range (:data:`_RECORD`: an instant that is not finite, a
    negative attempt, an outcome this release does not know)."""
    (
        task_id, name, attempt, due, slot, worker, started, finished, ok, error, timed_out,
        misfire, result, token, node, _,
    ) = row  # fmt: skip
    # Every column at the cost of a test or two each (a history read is thousands of
    # rows); what is wrong, and how, said only for a row that fails one.
    if not (
        type(due) is float and -_FAR <= due <= _FAR
        and type(slot) is float and -_FAR <= slot <= _FAR
        and type(started) is float and -_FAR <= started <= _FAR
        and type(finished) is float and -_FAR <= finished <= _FAR
        and type(attempt) is int and attempt >= 0 and type(worker) is int and worker >= -1
        and (type(ok) is bool or (type(ok) is int and 0 <= ok <= 1))
        and (type(timed_out) is bool or (type(timed_out) is int and 0 <= timed_out <= 1))
        and type(task_id) is str and type(name) is str
        and (error is None or type(error) is str)
        and (misfire is None or (type(misfire) is str and misfire in _OUTCOMES))
        and (result is None or type(result) is str) and (token is None or type(token) is int)
        and (node is None or type(node) is str)
    ):  # fmt: skip
        key = f"task_id={task_id!r} seq={row[-1]!r}"
        raise BadValue(
            str(task_id),
            [
                said("records", key, column, value, expected)
                for (column, valid, expected), value in zip(_RECORD, row[:-1], strict=True)
                if not valid(value)
            ],
        )
    return ExecutionRecord.of(
        task_id=task_id, name=name, attempt=attempt, due=due, slot=slot, worker=worker,
        started=started, finished=finished, ok=bool(ok), error=error,
        timed_out=bool(timed_out), misfire=None if misfire is None else Outcome(misfire),
        result=result, token=token, node=node,
    )  # fmt: skip
