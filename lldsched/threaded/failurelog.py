"""The line a failed attempt logs, and its writing once the scheduler's lock is let go.

**What is logged** (the ``lldsched.jobs`` logger): each failed attempt, once, when it
is recorded: one line naming the task's id and name, the attempt, the error text and
what follows (a retry, the slot given up, the dead letter), with the same as
structured fields (``extra``: :data:`FIELDS`).  A repeat of a task's line (same level,
same exception type) within :data:`~lldsched.logs.REPEAT_WINDOW` seconds of its last
full line goes to DEBUG, without traceback, and the next full line counts them
(``repeated``): a task failing every second writes one line a minute, not 3,600 an
hour.  The line that gives up
(ERROR) carries the traceback of the exception (``exc_info``, or the text a worker
process sent); a retry's WARNING carries none.  The record keeps the error text
(:func:`~lldsched.errors.error_text`: bounded, its cause named), never the traceback;
each line carries the attempt's record as the log record's :data:`RUN_RECORD`
attribute, which a handler keys a traceback by.  A successful run logs nothing.  The
line is made under the lock, when the core has decided what follows
(:func:`failure_line`), queued, and written after the lock is released
(:meth:`~FailureLog._say_failures`), in the order the failures were recorded: a slow
logging handler holds the thread that logs, never the lock.

:class:`FailureLog` is mixed into :class:`~lldsched.threaded.running.RunExecution`
(the runs that queue the lines, :mod:`~lldsched.threaded.running`); the queue it
empties, ``_failures``, and the lock it logs under, ``_saying``'s, are declared in
:class:`~lldsched.threaded.parts.SchedulerParts`.
"""

from __future__ import annotations

import logging

from lldsched.core.isolation import DRAIN_OUT_OF_TIME, KILLED
from lldsched.core.task import Run
from lldsched.errors import CANCELLED_INSIDE
from lldsched.logs import JOBS, instant_text, say_with_traceback
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.threaded.coroutines.flights import UNFINISHED
from lldsched.threaded.parts import Explained, LogLine, SchedulerParts

__all__ = ["FIELDS", "RUN_RECORD", "SHUTDOWN_CUTS", "FailureLog", "failure_line"]

log = logging.getLogger(JOBS)

FIELDS = (
    "scheduler",
    "task_id",
    "task_name",
    "attempt",
    "max_attempts",
    "outcome",
    "error",
    "then",
    "next_run_at",
    "repeated",
)
"""The structured fields of a failed attempt's line (the log record's attributes, set
through ``extra``): the scheduler's name, the task's id and name, the attempt and the
retry policy's ``max_attempts``, the record's outcome (``failed``, ``timed_out``,
``given_up``, ``cancelled``) and error text, what follows (``then``: ``retry``, ``given_up``,
``dead_letter``, ``stopped``, ``paused``, ``cancelled``), the task's next due instant
(ISO 8601, UTC, or None) and the repeats of the line not written in full since its last
(:class:`~lldsched.logs.Repeats`)."""

RUN_RECORD = "run_record"
"""The attribute of a failed attempt's log record (``logging.LogRecord``), beside
:data:`FIELDS`, that holds the attempt's :class:`~lldsched.model.ExecutionRecord`, equal
to the one in the task's history and the store: a logging handler keys the line's
traceback (``exc_text``) by it (docs/EXTENDING.md, "A failed run's traceback, next to
its record")."""


class FailureLog(SchedulerParts):
    """Mixed into RunExecution: the failed attempts' lines, logged without the lock."""

    def _say_failures(self) -> None:
        """Log the failed attempts queued under the lock, in the order they were
        recorded (caller does *not* hold the scheduler's lock).  One thread logs at a
        time, under ``_saying``'s lock: a failure queued while another thread logs is
        logged after the ones before it, by that thread or by this one.  A repeat (the
        same task, level and exception type within the window) goes to DEBUG."""
        failures = self._failures
        if not failures:
            return
        repeats = self._saying
        with repeats.lock:
            while failures:
                level, message, args, why, fields, at = failures.popleft()
                error = fields["error"]
                kind = error.partition(":")[0] if isinstance(error, str) else None
                repeated = repeats.admit((fields["task_id"], level, kind), at)
                if repeated is None:  # said in full less than a window ago
                    log.debug(message, *args, extra=fields)
                    continue
                fields["repeated"] = repeated
                if repeated:
                    message += " (%d more like this since its last line, at DEBUG)"
                    args = (*args, repeated)
                if why is None:
                    log.log(level, message, *args, extra=fields)
                else:
                    say_with_traceback(log, level, message, args, why, fields)


SHUTDOWN_CUTS = (
    str(UNFINISHED[0]),
    f"CancelledError: {KILLED}",
    f"CancelledError: {DRAIN_OUT_OF_TIME}",
)
"""How the error of a run a shutdown cut begins: a coroutine cancelled, a worker process
killed (``drain=False``; or a drain out of time, which a record an older release wrote
says with the first, ``... without draining``)."""


def _lost_to_a_shutdown(record: ExecutionRecord, status: TaskStatus) -> bool:
    """Whether a shutdown cut ``record``'s run and that cost its task the slot (given up)
    or sent it to the dead letter: said as any such failure is (ERROR), not as a run
    stopped on purpose (INFO).  A cut run keeps its task due (:meth:`SchedulerCore.\
cut_by_shutdown <lldsched.core.runs.RunTransitions.cut_by_shutdown>`), so this is only
    the run the core records as any failed run: one cut while another run of its task
    is still in flight (``Overlap.ALLOW``, ``CANCEL_OTHER``), whose slot is given up
    beside them (docs/decisions/logging.md, "A run a shutdown cut does not spend its attempt")."""
    error = record.error
    return (
        error is not None
        and error.startswith(SHUTDOWN_CUTS)
        and (status is TaskStatus.FAILED or record.outcome == "given_up")
    )


def failure_line(
    run: Run, record: ExecutionRecord, explained: Explained = None, *, scheduler: str
) -> LogLine:
    """The log line of a failed attempt, made after the core decided what follows it
    (caller holds the scheduler's lock: the task's status and next due instant are
    read as that decision left them); logged once the lock is let go.

    WARNING when a retry follows; ERROR when the slot is given up or the task is
    dead-lettered; INFO for a run stopped on purpose (cancel, pause, shutdown, or a
    newer slot under ``Overlap.CANCEL_OTHER``): expected, and already said by the verb
    that stopped it (a shutdown's cut leaves its task due, its attempt unspent).  A
    shutdown's cut that gave the slot up or dead-lettered the task (only where the core
    records it as any failure: :func:`_lost_to_a_shutdown`) is the ERROR of those.

    An ERROR line carries the traceback of what ``explained`` the failure: the
    exception as ``exc_info`` (a handler prints it, an error tracker's logging
    integration captures it with its frames), or a worker process's traceback text
    (:func:`~lldsched.logs.say_with_traceback`: bounded).  A WARNING line for a retry
    carries none: a flaky job retried all night would fill the log with stack frames,
    and its last attempt's ERROR has them.
    """
    task = run.task
    error = record.error
    status = task.status
    next_run_at = task.next_run_at
    fields: dict[str, object] = {
        "scheduler": scheduler,
        "task_id": task.id,
        "task_name": record.name,
        "attempt": record.attempt,
        "max_attempts": task.retry.max_attempts,
        "outcome": record.outcome.value,
        "error": error,
        "then": "stopped",
        "next_run_at": None if next_run_at is None else instant_text(next_run_at),
        "repeated": 0,
        RUN_RECORD: record,
    }
    if (
        record.outcome == "cancelled"
        or (error is not None and error.startswith("CancelledError") and error != CANCELLED_INSIDE)
    ) and not _lost_to_a_shutdown(record, status):
        return (
            logging.INFO,
            "task %s %r attempt %d stopped: %s",
            (task.id, record.name, record.attempt, error),
            None,
            fields,
            record.finished,
        )
    if status is TaskStatus.RETRYING:
        level, then, said = logging.WARNING, "retry", f"retry due at {instant_text(next_run_at)}"
    elif status is TaskStatus.FAILED:
        level, then, said = logging.ERROR, "dead_letter", "dead-lettered (redrive() runs it again)"
    elif record.outcome == "given_up":
        level, then = logging.ERROR, "given_up"
        said = f"slot given up, next due at {instant_text(next_run_at)}"
    else:  # paused or cancelled meanwhile: nothing follows until a verb says so
        level, then, said = logging.WARNING, status.value, f"task {status.value}"
    fields["then"] = then
    allowed = task.retry.max_attempts
    return (
        level,
        # A pending retry keeps its due time when modify(retry=) lowers max_attempts
        # below it: "attempt 4 of 2" read as a defect to the one on call.
        "task %s %r attempt %d of %d failed: %s; %s"
        if record.attempt <= allowed
        else "task %s %r attempt %d failed (max_attempts lowered to %d while it was due): %s; %s",
        (task.id, record.name, record.attempt, allowed, error, said),
        explained if level == logging.ERROR else None,
        fields,
        record.finished,
    )
