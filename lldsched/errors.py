"""The package's exceptions: one base, a subclass per kind of mistake.

Every error the library raises on purpose derives from :class:`LldschedError`, so
``except LldschedError`` catches all of them.  Each also derives from the builtin
that fits (``ValueError``, ``LookupError``, ``RuntimeError``), so code that does
not know this package still handles them sensibly.  Messages quote the bad value.

Failures of *user* code (a task that raises) are never raised from here: they
become data in an :class:`~lldsched.model.ExecutionRecord`.
"""

from __future__ import annotations

__all__ = [
    "CANCELLED_INSIDE",
    "LeaseLost",
    "LldschedError",
    "ScheduleError",
    "SchedulerStateError",
    "SettleTimeoutError",
    "StoreClosedError",
    "StoreError",
    "TaskNotFoundError",
    "TaskRetiredError",
    "ValidationError",
    "error_text",
]


class LldschedError(Exception):
    """Base of every error lldsched raises on purpose."""


class ValidationError(LldschedError, ValueError):
    """An argument is malformed: raised by the call given it (a constructor, a
    registration, a verb), quoting the bad value, never at the first tick."""


class ScheduleError(ValidationError):
    """A schedule cannot be built as given (a bad period, cron text, instant...)."""


class TaskNotFoundError(LldschedError, LookupError):
    """No task is registered under the given id."""


class TaskRetiredError(TaskNotFoundError):
    """The task finished and left the registry after its retention (``retain_finished``);
    its records stay in the store and the run log."""


class SchedulerStateError(LldschedError, RuntimeError):
    """The scheduler cannot do that now: it is shut down (or started twice), the task
    finished and will not run again (``reschedule``, ``modify``), or other tasks still
    depend on it (``remove``)."""


class SettleTimeoutError(LldschedError, TimeoutError):
    """The runs a test waited for did not finish within its bounded wait
    (:class:`lldsched.testing.Stepper`): a job that blocks, or one that never lets the
    scheduler be idle.  The message names the instant and the tasks still running."""


class StoreError(LldschedError, RuntimeError):
    """A store cannot be opened, read or written: a corrupted file, a schema from a
    newer version, another program's file, a stored callable that no longer imports, a
    file another open store holds (one scheduler per file), a store used in a process
    forked after it was opened, a database that cannot be reached.  A refused open
    leaves the store untouched."""


class StoreClosedError(StoreError):
    """The store was closed while its scheduler still uses it (``store.close()``, or a
    ``with`` block of the store that ended before the scheduler's).  A store raises it
    for every call after its ``close()``; a scheduler raises it from a verb, before
    changing anything, once its store is closed (docs/DECISIONS.md, "A store closed
    before its scheduler")."""


class LeaseLost(StoreError):
    """A fenced write came too late: the run's lease expired and was taken over (or its
    task was removed), so the store refused the write carrying ``token``.

    Raised by :meth:`CoordinatedStore.settle <lldsched.persistence.CoordinatedStore.settle>`.
    Nothing was written: the run that holds the newer token is the one that counts.
    """

    def __init__(self, *, task_id: str, token: int) -> None:
        super().__init__(
            f"the lease of task {task_id!r} with fencing token {token} is lost (expired and "
            "taken over, or the task was removed): the write was refused"
        )
        self.task_id = task_id
        self.token = token


def error_text(exc: BaseException) -> str:
    """``"Type: message"``, the form records and events carry."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


CANCELLED_INSIDE = "CancelledError: raised inside the run; the scheduler did not cancel it"
"""The error text of a coroutine run that ended in a ``CancelledError`` no verb, timeout
or shutdown asked for: it cancelled itself (``asyncio.current_task().cancel()``), or
awaited a task or future that something else cancelled.  A failure like any other: it
is retried, and logged as a failure (WARNING, ERROR at the dead letter), not as a run
stopped on purpose.  The scheduler's own cancellations say why instead
(``CancelledError: task cancelled``, ``task paused``, ``scheduler shut down``), and a
timeout is a ``TimeoutError``.  Before, such a run was recorded ``CancelledError``
alone and logged at INFO as "stopped", even when it sent its task to the dead letter."""
