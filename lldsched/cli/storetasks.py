"""``python -m lldsched tasks --store URL [VERB ID]``: a durable store's tasks, for an operator.

Without a verb, a table of the tasks (``--status failed``: the dead letter, in the order its
tasks failed; ``--json``: one JSON object a line per task, its run in flight as
``in_flight``: :func:`_flight`), the STATUS of a task whose run is in flight marked
(:func:`_in_flight`, a legend line after the rows; a row flagged with the attempt an
unshared process had in flight when it died, whatever its status, marked as such:
:func:`_gone`; the table, ``show`` and ``--json`` by one rule, :func:`_flight`); ``show ID``: a
task's definition, state and last records, the failure text whole.  Reading imports none of
the jobs' code and takes no claim (:mod:`lldsched.stores.peek`): it works from any shell,
beside a running scheduler.  ``redrive``, ``pause``, ``resume``, ``cancel``, ``run-now`` and
``remove`` act through a scheduler built on the store and never started
(:func:`~lldsched.cli.storeurl.act_on`): the processes running the store apply the verb from
its change feed.  Acting loads the tasks as a starting process does, so the jobs' modules
must import (the service's environment); a task whose code does not is refused by name, with
what did not import (:func:`_not_loaded`), except by ``remove``, which needs none of its code
and deletes it unloaded (:mod:`~lldsched.cli.removeunloaded`: a rollback's leftover).

Exit statuses as every command's (:data:`~lldsched.cli.EXIT_STATUSES`): 2, with one
``error:`` line, for anything refused before a change (a bad ``--store``, a store that
cannot be reached or read, an unknown id, a task that cannot be loaded here, an SQLite
file a scheduler holds unshared, ``remove`` of a task others depend on, ``redrive`` of a task
whose next slot waits for a failed or cancelled upstream: :func:`_fails_again`); 1 when a verb's
write failed once begun: raised, or kept by the runtime as an outage (``store_ok`` False
after the verb), the line naming the store's error and saying the change may not be stored.
A cron schedule's zone is named, UTC too: the NEXT RUN column is UTC (:func:`_schedule`).
A task's name is printed by :func:`~lldsched.printable.one_line` (the table and ``show``): one
an older release stored with a newline or an escape sequence shows them escaped; ``--json``
gives it whole (JSON escapes it).  An error (a record's, a task's last) is a cell of the
table with its whitespace folded to blanks, in ``show`` the last error's lines each under
the one before (:func:`_field`) and a record's on its one line, escaped; anything else that
would act on a terminal is written as its escape.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from lldsched.cli import BAD_ARGUMENTS, FAILED, say, to_stderr
from lldsched.cli.removeunloaded import dependents_of, remove_unloaded
from lldsched.cli.storeurl import BadStore, StoreName, act_on, parse_store, peek
from lldsched.clock import beyond_datetimes, utc_datetime
from lldsched.coordination import DIED_UNSHARED, Lease
from lldsched.errors import SchedulerStateError, StoreError, TaskNotFoundError, shown
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.printable import name_after, one_line
from lldsched.schedules.base import Schedule
from lldsched.schedules.decorators import describe
from lldsched.stores.codec import decode_task
from lldsched.stores.peek import Last, Listed, Peek, Row

if TYPE_CHECKING:
    from lldsched.threaded.scheduler import Scheduler

__all__ = ["STORE_VARIABLE", "run_tasks"]

STORE_VARIABLE = "LLDSCHED_STORE"
"""The environment variable that names the store when ``--store`` does not."""

_WIDEST = 48  # a table cell's most characters (a long schedule or error is cut)
_IN_FLIGHT = "  (a run is in flight)"
_RAN_OUT = "  (a run was in flight: its lease ran out)"
_GONE = (
    "  (a run was in flight: the process that ran it is gone, no process holds the store "
    "unshared nor a lease on the run; {owed})"
)
_FLIGHT_WORDS = {None: "", "live": _IN_FLIGHT, "ran_out": _RAN_OUT, "gone": _GONE}
"""What ``show`` says after a task's status, by :func:`_flight`'s answer (``{owed}``:
:func:`_owed`'s, by the row's status)."""
_OWED_BY_STATUS = {
    "paused": "the attempt runs again once the task is resumed",
    "cancelled": "the attempt does not run again (the task is cancelled)",
    "succeeded": "the attempt does not run again (the task succeeded)",
    "failed": "the task is in the dead letter: only a redrive runs it again",
}
"""What becomes of the attempt a row flagged in flight owes, for a status that does not
run it at the next start or claim (:func:`_owed`)."""
_COLUMNS = ("ID", "NAME", "STATUS", "SCHEDULE", "NEXT RUN (UTC)", "ATTEMPT", "LAST")
_STATUS = _COLUMNS.index("STATUS")
_GONE_MARK = "!gone"  # shown as "!" (_marked), its own legend line
_HELD_MARK = "*held"  # shown as "*" (_marked), its own legend line
_RAN_OUT_LEGEND = (
    "! a run of it was in flight and its lease ran out: that process died or stalled, and {owed}"
)
_GONE_LEGEND = (
    "! a run of it was in flight and the process that ran it is gone (no process holds the "
    "store unshared nor a lease on the run): {owed}"
)
_MARKS = {  # a table's STATUS of a task with a run in flight: its mark, and the legend's line
    "*": "* a run of it is in flight: a process holds its lease (`tasks show ID` names it)",
    _HELD_MARK: "* a run of it is in flight: a process holds the store unshared",
    "!": _RAN_OUT_LEGEND.format(owed="the next claim runs the attempt again"),
    **{
        f"! {status}": _RAN_OUT_LEGEND.format(owed=owed) for status, owed in _OWED_BY_STATUS.items()
    },
    _GONE_MARK: _GONE_LEGEND.format(owed="the next start runs the attempt again"),
    **{
        f"{_GONE_MARK} {status}": _GONE_LEGEND.format(owed=owed)
        for status, owed in _OWED_BY_STATUS.items()
    },
}
"""Each mark's legend line, the marks of a paused or finished row apart (``"! paused"``):
what becomes of its attempt is its status's (:func:`_owed`)."""


def _owed(status: str, *, by: str) -> str:
    """What becomes of the attempt a row flagged in flight owes (its process gone, or its
    lease ran out), as a restart or a claim treats the row by its status
    (:func:`~lldsched.core.recovery.restored_state`): the next start (``by``: ``"start"``)
    or claim (``"claim"``) runs it again, with its number; a paused task's waits for its
    ``resume`` (a restart keeps it paused, the attempt owed; a claim takes no paused row);
    a cancelled, succeeded or failed task's never runs (a redrive starts a failed task
    afresh)."""
    return _OWED_BY_STATUS.get(status, f"the next {by} runs the attempt again")


def _mark_of(mark: str, status: str) -> str:
    """The key in :data:`_MARKS` of ``mark`` (``"!"`` or :data:`_GONE_MARK`) on a row
    whose status is ``status``."""
    return f"{mark} {status}" if status in _OWED_BY_STATUS else mark


def run_tasks(
    store: str | None,
    verb: str | None = None,
    task_id: str | None = None,
    *,
    status: str | None = None,
    as_json: bool = False,
    records: int = 5,
) -> int:
    """Run the command; the exit status (an ``error:`` line on stderr when not 0).  The
    store is ``store`` (``--store``), or else :data:`STORE_VARIABLE`'s, each named as
    itself in a refusal of its value."""
    option = "--store"
    if store is None and (store := os.environ.get(STORE_VARIABLE)) is not None:
        option = STORE_VARIABLE
    try:
        name = _arguments(store, verb, task_id, records, option)
    except BadStore as exc:
        return _refused(exc)
    try:
        reader = peek(name)
    except (StoreError, ImportError) as exc:
        return _refused(exc)
    try:
        if verb is None:
            with _uncollected():
                return _list(reader, status, as_json)
        assert task_id is not None  # _arguments checked it
        rows = reader.tasks(task_id)
        if not rows:
            return to_stderr(
                f"error: no task {shown(task_id)} in the store {reader.where}", BAD_ARGUMENTS
            )
        if verb == "show":
            return _show(reader, rows[0], records, as_json)
        ran_out = _ran_out(rows[0], reader.now)
        # Read now, while the reader is open; used only if the scheduler leaves it out.
        dependents = dependents_of(reader, task_id) if verb == "remove" else []
    except StoreError as exc:
        return _refused(exc)
    finally:
        reader.close()
    return _act(name, verb, rows[0], ran_out, dependents)


def _arguments(
    store: str | None, verb: str | None, task_id: str | None, records: int, option: str
) -> StoreName:
    """The store named; :class:`BadStore` for what no store command takes."""
    if store is None:
        raise BadStore(f"name the store: --store URL (or {STORE_VARIABLE} in the environment)")
    if verb is not None and not task_id:
        raise BadStore(f"{verb} needs a task id: tasks --store URL {verb} ID")
    if records < 0:
        raise BadStore(f"--records must be 0 or more, got {records}")
    return parse_store(store, option=option)


def _list(reader: Peek, status: str | None, as_json: bool) -> int:
    """The tasks (those in ``status``: the store's filter and order), each printed as it
    is read with ``--json``; the table, whose widths are every row's, once all are read:
    of each row, only what it shows (:meth:`Peek.listing`)."""
    described = _Described()
    if as_json:
        now = functools.cache(reader.now)  # read once, at the first lease, if any
        gone = functools.cache(functools.partial(_gone, reader))  # at the first run, if any
        for row, last in reader.whole(status=status):
            ran_out = _ran_out(row, now)
            flight = _row_flight(row, ran_out, gone)
            say(json.dumps(_document(row, last, described, ran_out, flight)))
        return 0
    rows: list[tuple[str, ...]] = []
    running: set[str] = set()  # the rows flagged with an attempt in flight (_flight)
    for task, last in reader.listing(status=status):
        rows.append(_cells(task, last, described))
        if task.running:
            running.add(task.id)
    marked = _marked(rows, _in_flight(reader, rows, running))  # leases read after the rows
    table = [_COLUMNS, *rows]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(_COLUMNS))]
    for cells in table:
        say(
            "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()
        )
    for mark in _MARKS:
        if mark in marked:
            say(_MARKS[mark])
    return 0


def _in_flight(reader: Peek, rows: list[tuple[str, ...]], running: set[str]) -> dict[str, str]:
    """The mark of each of ``rows`` (:data:`_MARKS`) whose run in flight :func:`_flight`
    names, by the rule ``show`` and ``--json`` say it by: its lease (``*``), ran out by
    the store's clock (``!``; read only if a lease is found); a row flagged with an
    attempt in flight (``running``, its id in ``running``) and no lease, whatever its
    status, :data:`_GONE_MARK` when no process holds the file (:func:`_gone`, tried once:
    that process died mid-run, its attempt owed to the next start, or to a paused task's
    resume, as :func:`_owed` says by the row's status; a never-started
    scheduler's recovery rewrote a ``running`` row ``scheduled``, the flag kept), else
    :data:`_HELD_MARK`, except on a row that says ``running``, which says it already.
    On a shared store a run in flight is a lease, and its task's row says ``scheduled``
    with a next run in the past: the table showed no sign of it."""
    leases = reader.leases()
    now = functools.cache(reader.now)
    gone = functools.cache(functools.partial(_gone, reader))
    marks: dict[str, str] = {}
    for cells in rows:
        task_id = cells[0]
        leased = task_id in leases
        if not leased and task_id not in running:
            continue
        expires = leases.get(task_id)
        ran_out = leased and isinstance(expires, int | float) and expires <= now()
        flight = _flight(leased=leased, ran_out=ran_out, running=task_id in running, gone=gone)
        if flight == "ran_out":
            marks[task_id] = _mark_of("!", cells[_STATUS])
        elif flight == "gone":
            marks[task_id] = _mark_of(_GONE_MARK, cells[_STATUS])
        elif leased:
            marks[task_id] = "*"
        elif cells[_STATUS] != "running":  # a run in flight the status does not say
            marks[task_id] = _HELD_MARK
    return marks


def _gone(reader: Peek) -> bool:
    """True when no process holds the store unshared (:meth:`Peek.held
    <lldsched.stores.peek.Peek>`; never, for PostgreSQL): a task's row left ``running``
    without a lease was written by an unshared process that is gone, its attempt owed to
    the next start (a shared process's run in flight is a lease).  False where a process
    holds the file, or it cannot be told (Windows, a lock file not readable here): the
    row is said as it reads, a run in flight."""
    return reader.held() is False


def _marked(rows: list[tuple[str, ...]], marks: dict[str, str]) -> set[str]:
    """Mark the STATUS of each of ``rows`` whose task ``marks`` names, in place; the
    marks used (the legend says those)."""
    used: set[str] = set()
    if not marks:
        return used
    for i, cells in enumerate(rows):
        mark = marks.get(cells[0])
        if mark is not None:
            used.add(mark)
            shown_mark = mark[0]  # _GONE_MARK (and "! paused") is shown as "!"
            rows[i] = (*cells[:_STATUS], cells[_STATUS] + shown_mark, *cells[_STATUS + 1 :])
    return used


@contextlib.contextmanager
def _uncollected() -> Iterator[None]:
    """Python's cyclic collector off while a listing reads and prints its rows, as it was
    after: 100,000 rows are about a million new objects, none in a cycle (reference
    counting frees them), and the collector's passes over them were a sixth of the
    table's time (0.6 s of 4.3 s, in-process)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _runs(snapshot: TaskSnapshot) -> str:
    """A task's attempts and how they ended, as its counters know: ``failure_count`` is
    every attempt that did not succeed, a timed-out or cancelled one too, where its
    records (listed below it) say ``timed_out`` or ``cancelled``: "(2 failed)" read as
    two errors beside records of one error and one timeout."""
    runs, not_ok = snapshot.run_count, snapshot.failure_count
    return f"{runs} ({runs - not_ok} ok; {not_ok} failed, timed out or cancelled)"


def _show(reader: Peek, row: Row, records: int, as_json: bool) -> int:
    """``show ID``: the row whole, and its last ``records`` records.  Its last record is
    read whatever ``records`` says (``--json``'s ``last``, as the listing gives it: with
    ``--records 0`` it was null, and the text said "no records", of a task with some)."""
    last = reader.records(row.id, max(records, 1))
    latest = last[-1] if last else None
    if not records:
        last = []
    ran_out = _ran_out(row, reader.now)
    if as_json:
        flight = _row_flight(row, ran_out, functools.partial(_gone, reader))
        document = _document(row, latest, ran_out=ran_out, flight=flight)
        document["records"] = [_record_document(record) for record in last]
        say(json.dumps(document))
        return 0
    snapshot = row.snapshot
    lines = [f"task {row.id}"]
    if snapshot is None:
        lines.append(f"  cannot be read: {row.error}")
    else:
        task = snapshot.task
        lines += [
            f"  name        {one_line(task.name)}",
            f"  action      {task.action!r}",
            f"  arguments   args={list(task.args)!r} kwargs={task.kwargs or {}!r}",
            f"  schedule    {_schedule(task.schedule)}",
            f"  retry       {task.retry!r}",
            f"  depends on  {', '.join(task.depends_on) or '-'}",
            f"  status      {snapshot.status.value}{_flight_words(reader, row, ran_out)}",
            f"  next run    {_when(snapshot.next_run_at)}",
            f"  attempt     {snapshot.attempt}",
            f"  runs        {_runs(snapshot)}",
        ]
        if row.lease is not None:
            lines.append(f"  claimed     {_held(row.lease, ran_out, snapshot.status.value)}")
        if snapshot.last_error is not None:
            lines += _field("last error", snapshot.last_error)
    if last:
        lines.append(f"last {len(last)} records:")
    else:
        lines.append("no records" if latest is None else "records not listed (--records 0)")
    lines += [_record_line(record) for record in last]
    for line in lines:
        say(line)
    return 0


def _record_line(record: ExecutionRecord) -> str:
    """A record as ``show`` lists it, on its one line: when its run started, or, for a slot
    decided without a run (skipped, missed, coalesced, blocked), the slot itself and when
    it was decided (a burst of slots skipped after an outage read as many lines of one
    instant, the slots they stood for unsaid); its attempt and outcome; then its error,
    or what its action returned (``-> 'rows: 3'``: kept by the store, shown nowhere
    before), each by :func:`~lldsched.printable.one_line`."""
    outcome = record.outcome
    if outcome.ran:
        line = f"  {_when(record.started)}  attempt {record.attempt}  {outcome.value}"
    else:
        decided = _when(record.started)
        slot = _when(record.due)
        line = f"  {slot}  attempt {record.attempt}  {outcome.value}"
        if decided != slot:
            line += f" (its slot; decided {decided})"
    if record.error is not None:
        return f"{line}: {one_line(record.error)}"
    if record.result is not None:
        return f"{line} -> {one_line(record.result)}"
    return line


def _field(label: str, text: str) -> list[str]:
    """A field of ``show`` whose value may hold lines (a task's last error, a traceback's
    last lines): the first beside the label, each next one under it at the value's column,
    every line as a line shows it (:func:`~lldsched.printable.one_line`: an escape sequence
    or a bidirectional override written as its escape).  An error's lines read as the
    program wrote them, and none starts where a field or a record does, so an error cannot
    write a line of ``show``'s own."""
    head = f"  {label:<10}  "
    lines = [one_line(line) for line in text.splitlines()] or [""]
    return [f"{head}{lines[0]}", *(f"{' ' * len(head)}{line}".rstrip() for line in lines[1:])]


_DONE = {  # a verb's past tense, and the runtime's method
    "redrive": ("redriven: due now", "redrive"),
    "pause": ("paused", "pause"),
    "resume": ("resumed", "resume"),
    "cancel": ("cancelled", "cancel"),
    "run-now": ("queued to run now", "run_now"),
    "remove": ("removed", "remove"),
}


_INSTEAD = {  # (verb, status) of a verb with nothing to do: the verb meant (GUIDE.md's)
    ("run-now", "failed"): "a failed task runs again by `tasks --store URL redrive {id}`",
    ("resume", "failed"): "a failed task runs again by `tasks --store URL redrive {id}`",
    ("run-now", "paused"): "a paused task runs once resumed: `tasks --store URL resume {id}`",
}


def _act(name: StoreName, verb: str, row: Row, ran_out: bool, dependents: list[str]) -> int:
    """``verb`` on ``row``'s task; ``dependents``: the tasks that depend on it, read by
    ``remove`` for a task this environment cannot load (:mod:`~lldsched.cli.removeunloaded`)."""
    done, method = _DONE[verb]
    task_id = row.id
    acted = False  # the verb was called: a failure after it is status 1
    failures = _StoreFailures()
    try:
        with act_on(name, f"python -m lldsched tasks {verb} {task_id}") as scheduler:
            try:
                scheduler.task(task_id)
            except TaskNotFoundError:
                if verb != "remove":
                    why = _not_loaded(row)
                    return _refused(f"task {shown(task_id)} {why}; nothing was changed")
                acted = True
                refusal = remove_unloaded(scheduler, row, dependents)
                if refusal is not None:
                    return _refused(f"{refusal}; nothing was changed")
                say(f"task {task_id}: removed, unloaded ({_unloaded_why(row)})")
                return 0
            act: Callable[[str], Any] = getattr(scheduler, method)
            core = cast("Scheduler", scheduler)._core  # act_on builds a Scheduler
            dead = core.dead_upstream(task_id) if verb == "redrive" else None
            if dead is not None:
                return _refused(
                    _fails_again(task_id, upstream=dead.id, name=dead.name, status=dead.status)
                )
            acted = True
            try:
                with failures.watched():
                    changed = act(task_id)
            except (TaskNotFoundError, SchedulerStateError) as exc:  # remove with dependents
                return _refused(f"{exc}; nothing was changed")
            except StoreError as exc:
                return _refused(f"{verb} {task_id} failed: {exc}", FAILED)
            if not scheduler.metrics().store_ok:  # the runtime kept the change, unwritten
                return _refused(
                    f"{verb} {task_id}: the store failed to write the change ({failures}); it "
                    "may not be stored, or be stored as the command closed the store (its "
                    f"last try): see `tasks --store URL show {task_id}` before trying again",
                    FAILED,
                )
            if changed is False:
                status = scheduler.task(task_id).status.value
                said = status  # and a claim of it, as read just before the verb
                if row.lease is not None:
                    said += f"; a run of it claimed: {_held(row.lease, ran_out, status)}"
                instead = _INSTEAD.get((verb, status))
                say(
                    f"task {task_id}: nothing to {verb} (its status is {said}); nothing "
                    "changed" + ("" if instead is None else f" ({instead.format(id=task_id)})")
                )
            else:
                say(f"task {task_id}: {done}")
            return 0
    except (StoreError, ImportError) as exc:  # the open (nothing changed), or the close
        return _refused(exc, FAILED if acted else BAD_ARGUMENTS)


def _fails_again(task_id: str, *, upstream: str, name: str, status: TaskStatus) -> str:
    """Why ``redrive`` of ``task_id`` is refused: its next slot waits for ``upstream``
    (named ``name``), FAILED or CANCELLED (``status``), so redriven it would fail again
    at once, and what to do instead (docs/decisions/dependencies.md, "The command line
    refuses a redrive that would fail again at once")."""
    if status is TaskStatus.FAILED:
        advice = f"redrive {upstream} first, then {task_id}"
    else:  # cancelled: no verb brings it back
        advice = (
            f"{upstream} will not run again: register {task_id} again without it "
            f"(replace_existing=True), or remove {task_id}"
        )
    return (
        f"task {task_id} waits for its upstream {upstream}{name_after(upstream, name)}, "
        f"which is {status.value}: redriven, it would fail again at once; {advice}; "
        "nothing was changed"
    )


def _flight_words(reader: Peek, row: Row, ran_out: bool) -> str:
    """What ``show`` says after a task's status of its run in flight (:func:`_flight`):
    its lease ran out (:data:`_RAN_OUT`), a row flagged ``running`` without a lease by an
    unshared process that is gone (:data:`_GONE`), a run in flight (:data:`_IN_FLIGHT`),
    or nothing; what becomes of the attempt, by the row's status (:func:`_owed`)."""
    words = _FLIGHT_WORDS[_row_flight(row, ran_out, functools.partial(_gone, reader))]
    status = row.snapshot.status.value if row.snapshot is not None else "running"
    return words.format(owed=_owed(status, by="start"))


def _row_flight(row: Row, ran_out: bool, gone: Callable[[], bool]) -> str | None:
    """:func:`_flight` of a row read whole (``show``, ``--json``)."""
    return _flight(leased=row.lease is not None, ran_out=ran_out, running=row.running, gone=gone)


def _flight(*, leased: bool, ran_out: bool, running: bool, gone: Callable[[], bool]) -> str | None:
    """The one rule of what ``show``, ``--json``'s ``in_flight`` and the table's marks
    (:func:`_in_flight`) say of a task's run in flight: ``"ran_out"`` (its lease ran out
    by the store's clock: ``ran_out``), ``"live"`` (a lease held, or a row flagged
    ``running`` while a live process holds the store unshared or it cannot be told),
    ``"gone"`` (a row flagged ``running`` with no lease and ``gone()`` true:
    :func:`_gone`, asked only then), or None (no run in flight).  The flag, not the
    status: a row a process left ``running`` as it died says ``scheduled`` once a
    scheduler built on the file and never started recovered it (the attempt still owed,
    the flag kept), ``paused`` when paused mid-run."""
    if ran_out:
        return "ran_out"
    if leased:
        return "live"
    if running:
        return "gone" if gone() else "live"
    return None


def _ran_out(row: Row, now: Callable[[], float]) -> bool:
    """``row``'s lease ran out by the store's clock (``now``, read only for a lease): the
    process holding it died or stalled, and the next claim takes its run over."""
    return row.lease is not None and row.lease.expires_at <= now()


def _held(lease: Lease, ran_out: bool, status: str) -> str:
    """The run a shared store's lease holds (read with the task's row): which attempt of
    which slot, the process that claimed it and until when (``ran_out``: its lease ran
    out, the run owed to the next claim), or the attempt an unshared process left owed
    when it died (``DIED_UNSHARED``: the next claim runs it again); of a task whose
    ``status`` keeps it from a claim (paused, finished), what :func:`_owed` says instead."""
    run = f"attempt {lease.attempt + 1} of the slot {_when(lease.slot)}"  # as its record will say
    owed = _owed(status, by="claim")
    if lease.holder == DIED_UNSHARED:
        then = owed if status in _OWED_BY_STATUS else "the next claim runs it again"
        return f"{run}, owed: the process running it unshared died; {then}"
    on = f"{run}, on {lease.holder} (token {lease.token}"
    if ran_out:
        return (
            f"{on}), its lease ran out at {_when(lease.expires_at)}: that process died or "
            f"stalled, and {owed}"
        )
    return f"{on}, its lease until {_when(lease.expires_at)})"


def _unloaded_why(row: Row) -> str:
    """Why a task ``remove`` deleted unloaded was not loaded here, in a few words."""
    if row.snapshot is None:
        return f"this lldsched cannot read its row: {row.error or 'its row cannot be read'}"
    return f"it cannot be loaded here: {_import_failure(row)}"


def _not_loaded(row: Row) -> str:
    """Why the task of ``row`` was not loaded by the scheduler the verb is called on, and
    what to do, after "task ID".  A row the peek could not read either (a status or a
    field of a newer release, a value edited by hand) is the row's matter, whatever the
    environment: its error, and the store's own choices for it (the release that wrote
    it, the value set right, the row deleted).  Otherwise what its definition raises when
    decoded as a load decodes it (:func:`_import_failure`): the environment's matter.  The
    store said so only at WARNING, which the command does not show.  ``remove`` of either
    is not refused: :mod:`~lldsched.cli.removeunloaded`."""
    if row.snapshot is None:
        return (
            f"cannot be read by this lldsched ({row.error or 'its row cannot be read'}): if "
            "a newer lldsched wrote it, run the command with that one; if the row was edited "
            "by hand, set the value right or delete the task in the store (`tasks --store "
            f"URL remove {row.id}`)"
        )
    if repr(row.snapshot.task.action).startswith(_MAIN):
        return (
            f"cannot be loaded here ({_import_failure(row)}): its action was registered "
            "from the `__main__` of the service's own process (a script run as `python "
            "service.py`), which no other process can import; define the jobs in a module "
            "the script imports, so that this command and every other process can load them"
        )
    return (
        f"cannot be loaded here ({_import_failure(row)}): run the command where the "
        "service's code imports (its virtualenv, its PYTHONPATH), or remove the task "
        f"(`tasks --store URL remove {row.id}`) if no release still running has its code"
    )


_MAIN = "__main__:"
"""How a stored action defined in a script's ``__main__`` begins: importable in no other
process (this command's ``__main__`` is lldsched's), whatever the environment."""


def _import_failure(row: Row) -> str:
    """What ``row``'s definition raises when decoded as a load decodes it, importing what
    it names (the action's module, a schedule's or a retry policy's class)."""
    try:
        decode_task(row.id, row.definition)
    except StoreError as exc:
        return str(exc)
    return "its action or its schedule's class does not import in this environment"


class _StoreFailures(logging.Handler):
    """The store errors the runtime logged while a verb ran (it keeps a change whose
    write failed, as an outage, and logs the error once): what the ``error:`` line names."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        self.errors.append(str(error) if error is not None else record.getMessage())

    @contextlib.contextmanager
    def watched(self) -> Iterator[None]:
        logger = logging.getLogger(STORE)
        logger.addHandler(self)
        try:
            yield
        finally:
            logger.removeHandler(self)

    def __str__(self) -> str:
        return self.errors[0] if self.errors else "see the store's log"


def _refused(exc: BaseException | str, status: int = BAD_ARGUMENTS) -> int:
    """``exc``'s message as one ``error:`` line on stderr (libpq's words, a list of tasks
    that cannot load, span lines), and ``status``."""
    lines = (line.strip() for line in str(exc).splitlines())
    return to_stderr(f"error: {'; '.join(filter(None, lines))}", status)


def _schedule(schedule: Schedule) -> str:
    """A schedule's words in a listing: ``describe(schedule)``, a cron schedule's zone
    named by its ``explain()``, UTC too, inside the wrappers (``Jittered``, ``Window``)
    too (docs/decisions/schedules.md, "A cron schedule's words name its zone")."""
    return describe(schedule)


class _Described:
    """:func:`_schedule` of each schedule a listing meets, worked out once: the rows of
    equal schedules share one object (:meth:`Peek.listing
    <lldsched.stores.peek.Peek.listing>`), and a cron schedule's words cost more than the
    rest of its row.  By the object's identity, kept alive meanwhile (its ``id`` is no
    other's): a schedule of one's own class need not hash."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Schedule, str]] = {}

    def __call__(self, schedule: Schedule) -> str:
        found = self._texts.get(id(schedule))
        if found is None:
            found = self._texts[id(schedule)] = (schedule, _schedule(schedule))
        return found[1]


def _when(instant: float | None) -> str:
    if instant is None:
        return "-"
    try:
        moment = utc_datetime(instant)  # Windows: before 1970 too
    except OverflowError:  # past year 9999: a fixed rate's next slot at its end
        return beyond_datetimes(instant)  # as the control panel says it
    return moment.isoformat(" ", "seconds")[:19]  # clock.dated's text, at half its cost


def _outcome(record: ExecutionRecord | None) -> str:
    if record is None:
        return "-"
    error = record.error
    return record.outcome.value if not error else f"{record.outcome.value}: {error}"


def _cell(text: str) -> str:
    """One line, at most :data:`_WIDEST` characters (``...`` where cut): its runs of
    whitespace (a newline, a tab) as one blank, and what else would act on a terminal
    (an escape sequence, a bidirectional override) written as its escape
    (:func:`~lldsched.printable.one_line`)."""
    text = one_line(" ".join(text.split()))
    return text if len(text) <= _WIDEST else text[: _WIDEST - 3] + "..."


def _cells(
    row: Listed | Row, last: Last, described: Callable[[Schedule], str] = _schedule
) -> tuple[str, ...]:
    """A table's row: a task as a listing reads it, or a row read whole (its snapshot's
    values, or why it cannot be read)."""
    if isinstance(row, Row):
        snapshot = row.snapshot
        if snapshot is None:
            return (row.id, "?", "unreadable", _cell(row.error or ""), "-", "-", "-")
        task = snapshot.task
        row = Listed(
            row.id, task.name, snapshot.status, task.schedule, snapshot.next_run_at,
            snapshot.attempt,
        )  # fmt: skip
    return (
        row.id,
        _cell(one_line(row.name)),  # a newline shown escaped, not folded to a blank
        row.status.value,
        _cell(described(row.schedule)),
        _when(row.next_run_at),
        str(row.attempt),
        _cell(_outcome(last)),
    )


def _document(
    row: Row,
    last: ExecutionRecord | None,
    described: Callable[[Schedule], str] = _schedule,
    ran_out: bool = False,
    flight: str | None = None,
) -> dict[str, Any]:
    """A task as ``--json`` gives it: instants as seconds since the epoch (UTC);
    ``ran_out``: its lease, if any, ran out by the store's clock (:func:`_ran_out`);
    ``flight``: its run in flight, as :func:`_flight` says it (``in_flight``, beside the
    status as stored: a script that reads ``status`` reads what it always read)."""
    snapshot: TaskSnapshot | None = row.snapshot
    if snapshot is None:
        return {"id": row.id, "error": row.error}
    task = snapshot.task
    return {
        "id": row.id,
        "name": task.name,
        "action": repr(task.action),
        "status": snapshot.status.value,
        "schedule": described(task.schedule),
        "next_run_at": snapshot.next_run_at,
        "attempt": snapshot.attempt,
        "run_count": snapshot.run_count,
        "failure_count": snapshot.failure_count,
        "last_error": snapshot.last_error,
        "lease": None if row.lease is None else _lease_document(row.lease, ran_out),
        "in_flight": flight,
        "last": None if last is None else _record_document(last),
    }


def _lease_document(lease: Lease, ran_out: bool) -> dict[str, Any]:
    return {
        "holder": lease.holder,
        "token": lease.token,
        "attempt": lease.attempt + 1,  # the run's, as its record will say (the row's is one less)
        "slot": lease.slot,
        "expires_at": lease.expires_at,
        "ran_out": ran_out,
    }


def _record_document(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "attempt": record.attempt,
        "due": record.due,
        "started": record.started,
        "finished": record.finished,
        "outcome": record.outcome.value,
        "error": record.error,
        "result": record.result,
        "token": record.token,
        "node": record.node,
    }


if __name__ == "__main__":  # python -m lldsched.cli.storetasks
    from lldsched.cli import not_an_entry_point

    not_an_entry_point("tasks")
