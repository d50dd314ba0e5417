"""A durable store's row this process cannot read, and what a load does with it.

Why a row cannot be read is an error of its own, a :class:`~lldsched.errors.StoreError`
naming the task: a status this release does not know (:class:`UnknownStatus`, a newer
release's), a value of another type or out of its range (:class:`BadValue`, a row
edited by hand or written by another tool; :mod:`lldsched.stores.rowvalues` finds
both), or a definition that does not load (:func:`~lldsched.stores.codec.decode_task`'s
error).  What a load does with such a row: a store no other process uses names every
one in one error and writes nothing (:func:`load_each`); a shared store leaves each out,
said once, for the processes that can read it (:class:`Unreadable`, its feed's rule
too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.persistence import Task, TaskSnapshot

__all__ = ["BadValue", "UnknownStatus", "Unreadable", "load_each"]

log = logging.getLogger(STORE)


class UnknownStatus(StoreError):
    """A row's status this release does not know: a newer release wrote it (a rolling
    deploy), or the row was written by hand.  Its ``status`` is the stored text."""

    def __init__(self, task_id: str, status: object) -> None:
        self.status = status
        super().__init__(
            f"task {task_id}: status {status!r} is none this release of lldsched knows "
            "(a newer release wrote it?)"
        )


class BadValue(StoreError):
    """A row holding a value of another type than its store writes there (an SQLite row
    edited by hand or written by another tool: SQLite keeps text in a numeric column).
    Its ``said`` names each such value (table, row, column, value).  Like an
    :class:`UnknownStatus`, the row's state cannot be followed: a shared store's feed
    leaves the task out (:class:`Unreadable`) and reads the row again at its next write."""

    def __init__(self, task_id: str, said: Sequence[str]) -> None:
        self.said = tuple(said)
        super().__init__(
            f"task {task_id}: its row holds a value the store cannot read: {'; '.join(said)}"
        )


class Unreadable:
    """The rows other processes wrote to a shared store that this one cannot load:
    newer code in a rolling upgrade (an action this deploy does not have, a field this
    lldsched does not know, a status it does not know).  Each is said once, at WARNING
    (expected during a rollout), naming the task and why.

    A definition it cannot load: the feed still gives the row's state (status, due
    instant, counters: a pause, a settle made there) with the definition this process
    has, which it keeps, and runs the slots of the task it claims with, until it is
    upgraded; a task it never had (at start, :func:`load_each`, or since) is left out,
    listed by :meth:`left_out` (the processes that can load it run it; this one never
    deletes or rewrites it unless its own code registers the id with
    ``replace_existing=True``).

    A status it does not know (:class:`UnknownStatus`): no state of it can be followed,
    so the task is left out whether this process had it or not (the feed gives a task it
    had as removed *here*: nothing is written), until a later write gives the row a
    status it knows; then it is read as any row learnt from the feed.  So is a row
    holding a value it cannot read (:class:`BadValue`: another tool's write), tried
    again at each write of the row.

    Used by a store's ``load_all()`` and ``changes()``, which its runtime calls under its
    own lock."""

    def __init__(self, store: str) -> None:
        self._store = store
        # task id -> the definition text that failed (said once), the status that failed
        # (None: the definition did, whatever the status) and the error it raised
        self._said: dict[str, tuple[str, object, StoreError]] = {}
        self._left: dict[str, str] = {}  # task id -> the text of a row left out here

    def again(self, task_id: str, text: str, status: object) -> None:
        """Before a row of ``task_id`` (its definition ``text`` and ``status``) is loaded:
        raise the :class:`StoreError` it raised here last, if that is the text that failed
        (or the text and status, for a status this release does not know).  A definition
        is tried once per text: every change to the row (each run settled elsewhere, each
        pause) came with another attempt, an import searched for along ``sys.path`` per
        run of a busy task in another process.  Another text (a new definition written
        there) is tried, and so is another status after an unknown one; so is this one
        after it loaded or its row went (:meth:`read`).  One dictionary look-up while
        nothing failed."""
        if self._said:
            said = self._said.get(task_id)
            if said is not None and said[0] == text and (said[1] is None or said[1] == status):
                raise said[2].with_traceback(None)  # no traceback grown per raise

    def failed(self, task_id: str, text: str, error: StoreError, known: Task | None) -> bool:
        """A row of ``task_id`` whose definition is ``text`` raised ``error``; ``known`` is
        the definition this process has of it (None: it has none).  Whether the task is
        left out here (:meth:`left_out`): one it had none of, or one whose status this
        release does not know (:class:`UnknownStatus`), whose state it cannot follow."""
        # A bad value is kept as its ``said``, which no status equals: a row holding one
        # is tried again at each write (the one setting it right is read), said once.
        status: object = None
        if isinstance(error, UnknownStatus):
            status = error.status
        elif isinstance(error, BadValue):
            status = error.said
        left = known is None or status is not None
        if left:
            self._left[task_id] = text
        said = self._said.get(task_id)
        if said is None or said[0] != text or said[1] != status:
            self._said[task_id] = (text, status, error)
            if isinstance(error, BadValue):
                why = "it leaves the task out until a write gives the row values it can read"
            elif status is not None:
                why = (
                    "it leaves the task to the processes that can, until a write gives the "
                    "row a status it knows"
                )
            elif known is None:
                why = (
                    "it leaves the task to the processes that can until it runs the code "
                    "that wrote it, or registers the id itself with replace_existing=True "
                    "(a redeploy or a rollback takes the task over so, its state kept)"
                )
            else:
                why = (
                    "it follows the task's state with the definition it has, and runs the "
                    "task's slots it claims with it, until it runs the code that wrote it"
                )
            log.warning(
                "another process wrote task %s in %s %s this one cannot load (%s); %s",
                task_id,
                self._store,
                _with(error),
                error,
                why,
                extra={"task_id": task_id},
            )
        return left

    def read(self, task_id: str) -> None:
        """``task_id``'s row was loaded (or removed): said again if it fails again."""
        if self._said:
            self._said.pop(task_id, None)
            self._left.pop(task_id, None)

    def left_out(self) -> list[str]:
        """The ids of the tasks left out here (rows this process cannot load), sorted
        (from any thread: the copy is one step under the GIL)."""
        return sorted(self._left.copy())

    def text(self, task_id: str) -> str | None:
        """The definition text of ``task_id``'s row left out here (None: not left out)."""
        return self._left.get(task_id)


def _with(error: StoreError) -> str:
    """What of a row ``error`` says this process cannot load, as :class:`Unreadable` logs it."""
    if isinstance(error, BadValue):
        return "with a value"
    return "with a status" if isinstance(error, UnknownStatus) else "with a definition"


Row = TypeVar("Row", bound=Sequence[Any])


def load_each(
    rows: Sequence[Row],
    read: Callable[[Row], TaskSnapshot],
    *,
    store: str,
    delete: str,
    unreadable: Unreadable | None = None,
) -> tuple[list[TaskSnapshot], list[Row]]:
    """What a durable store's ``load_all`` does with its rows (each ``(id, definition
    text, status, ...)``): each read by ``read``, in order; the snapshots, and the rows they
    were read from.  A row that cannot be (``read`` raises :class:`StoreError`: a
    callable that no longer imports, a definition that is no longer valid) stops
    nothing: the others are still read, then

    * on a store no other process uses (``unreadable`` None), one :class:`StoreError`
      names every one, and nothing is written: nobody else would run the task, so the
      process does not start without it.  ``store`` names the store (its path or DSN),
      ``delete`` the call that removes a task from it, the way out the message offers;
    * on a shared store (``unreadable``: the store's :class:`Unreadable`), each is left
      out and said once: another process (a newer release, in a rolling deploy) may
      load and run it, and deleting it would remove a task those run."""
    snapshots: list[TaskSnapshot] = []
    kept: list[Row] = []
    problems: list[str] = []
    for row in rows:
        try:
            if unreadable is not None:  # a text that failed here is not tried again
                unreadable.again(row[0], row[1], row[2])  # id, definition text, status
            snapshots.append(read(row))
        except StoreError as exc:
            if unreadable is not None:
                unreadable.failed(row[0], row[1], exc, None)  # id, definition text
            else:
                problems.append(str(exc))
        else:
            kept.append(row)
    if problems:
        raise StoreError(
            f"cannot load {len(problems)} of the {len(rows)} tasks in {store}; "
            "the store was left untouched. Make what each line names import again (a "
            "function, its module, a schedule class, a retry policy; an alias of a renamed "
            "one will do), set a value a line names right (a row edited by hand or written "
            f"by another tool), or remove the task with {delete}, and open it again:\n  "
            + "\n  ".join(problems)
        )
    return snapshots, kept
