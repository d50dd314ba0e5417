"""What the tests of a Ctrl-C in the middle of a verb share (the simulation's,
tests/test_sim_verb_interrupts.py, and a retirement's, tests/test_retire.py): a store
that raises ``KeyboardInterrupt`` in a write, and an injector that raises it at a chosen
line of the package's frames with ``sys.settrace``, as a real SIGINT can land between
any two statements."""

from __future__ import annotations

import dis
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

import lldsched
from lldsched import ExecutionRecord, InMemoryTaskStore, SqliteTaskStore, TaskSnapshot, TaskStatus
from lldsched.core.duequeue import TaskQueue
from lldsched.core.machine import SchedulerCore
from lldsched.core.task import Entry
from lldsched.persistence import TaskStore

PACKAGE = str(Path(lldsched.__file__).parent)
STORES = str(Path(PACKAGE) / "stores")


class Terminated(SystemExit):
    """What the tests' SIGTERM handler raises: ``sys.exit(0)``'s exception, told apart."""


def exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A service's SIGTERM handler, ``signal.signal(SIGTERM, lambda *a: sys.exit(0))``."""
    raise Terminated(0)


RAISED: dict[int, type[BaseException]] = {
    signal.SIGINT: KeyboardInterrupt,
    signal.SIGTERM: Terminated,
}
"""What a signal sent by :class:`Interrupter` raises, with :func:`sigterm_exits` in place."""


@pytest.fixture
def sigterm_exits() -> Iterator[None]:
    """SIGTERM's handler is :func:`exit_on_sigterm` (tests/conftest.py imports it)."""
    previous = signal.signal(signal.SIGTERM, exit_on_sigterm)
    yield
    signal.signal(signal.SIGTERM, previous)


PRESS_AGAIN = 0.01
"""Seconds :meth:`CtrlC.press` waits for a sent SIGINT to land before it sends another."""


class CtrlC:
    """A Ctrl-C the tests send for real (``signal.pthread_kill``) to a thread blocked in a
    lock's acquisition, as a SIGINT from the terminal lands: its handler (installed by
    the :func:`ctrl_c` fixture) raises ``KeyboardInterrupt`` the first time, as Python's
    own does, and does nothing at the SIGINTs sent after it.

    Why more than one is sent: CPython runs a signal's handler in an acquisition when the
    wait's system call is cut (``EINTR``), and does not look for one as the wait begins.
    A SIGINT that lands after the thread let the GIL go for the wait, but before it was
    inside the system call, is only handled once the thread has the lock: when the test's
    other thread lets it go, which it does only after the interrupt (a CI run under load:
    30 s, then a failure; the window is a few instructions, hit once in hundreds of runs).
    So :meth:`press` sends again until the handler ran, each further SIGINT harmless."""

    def __init__(self) -> None:
        self.landed = threading.Event()  # set by the handler, as it raises

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler: ``KeyboardInterrupt`` once, nothing after."""
        if not self.landed.is_set():
            self.landed.set()
            raise KeyboardInterrupt

    def press(self, thread: threading.Thread, *, bound: float) -> None:
        """Send SIGINT to ``thread`` until its handler ran (within ``bound`` seconds:
        ``AssertionError`` otherwise), again every :data:`PRESS_AGAIN` seconds."""
        assert thread.ident is not None
        give_up = time.monotonic() + bound
        while True:
            signal.pthread_kill(thread.ident, signal.SIGINT)
            if self.landed.wait(PRESS_AGAIN):
                return
            assert time.monotonic() < give_up, f"no SIGINT landed in {thread.name}"


@pytest.fixture
def ctrl_c() -> Iterator[CtrlC]:
    """A :class:`CtrlC` whose handler is SIGINT's for the test."""
    pressed = CtrlC()
    previous = signal.signal(signal.SIGINT, pressed.handle)
    yield pressed
    signal.signal(signal.SIGINT, previous)


class Interrupting:
    """Raises ``KeyboardInterrupt`` from the first ``save`` or ``delete`` of task ``armed``,
    after writing it (``written``: a Ctrl-C that lands once the write is made) or before.
    Mixed into a store (:class:`InterruptingStore`, :class:`InterruptingSqliteStore`)."""

    armed: str | None = None
    written = True

    def _fire(self, task_id: str) -> bool:
        fire = task_id == self.armed
        if fire:
            self.armed = None
        return fire

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        fire = self._fire(snapshot.task.id)
        if not (fire and not self.written):
            super().save(snapshot, record)  # type: ignore[misc]
        if fire:
            raise KeyboardInterrupt("raised inside save")

    def delete(self, task_id: str) -> None:
        fire = self._fire(task_id)
        super().delete(task_id)  # type: ignore[misc]
        if fire:
            raise KeyboardInterrupt("raised inside delete")


class InterruptingStore(Interrupting, InMemoryTaskStore):
    """An in-memory store that raises ``KeyboardInterrupt`` once (:class:`Interrupting`)."""


class InterruptingSqliteStore(Interrupting, SqliteTaskStore):
    """An SQLite store that raises ``KeyboardInterrupt`` once (:class:`Interrupting`)."""


def disagreements(
    core: SchedulerCore, queue: TaskQueue, entries: list[Entry], store: TaskStore
) -> list[str]:
    """What disagrees in a runtime (nothing: []): a runnable task not among ``entries`` (its
    due queue's), or there when it should not be, at another instant than it says; the
    dead letter and the FAILED tasks; a row of ``store`` that is not the task's (and not
    marked stale, to be written again)."""
    queued: dict[str, list[float]] = {}
    for entry in entries:
        task = queue.live(entry)
        if task is not None:
            queued.setdefault(task.id, []).append(entry[0])
    wrong = []
    for task in core.tasks.values():
        runnable = task.status in (TaskStatus.SCHEDULED, TaskStatus.RETRYING)
        if runnable != (task.id in queued) and not task.running:
            wrong.append(f"{task.id} {task.status.value}, queued {queued.get(task.id)}")
        if task.id in queued and task.next_run_at not in queued[task.id]:
            wrong.append(f"{task.id} due {task.next_run_at}, queued {queued[task.id]}")
        if (task.status is TaskStatus.FAILED) != (task.id in core.dead_letter()):
            wrong.append(f"{task.id} {task.status.value}, dead letter {core.dead_letter()}")
    writes = core.store_writes
    assert writes is not None
    stale = set() if writes.outage is None else set(writes.outage.stale)
    rows = {row.task.id: row for row in store.load_all()}
    for task_id in rows.keys() | core.tasks.keys():
        task = core.tasks.get(task_id)
        row = rows.get(task_id)
        if task_id not in stale and (task is None or row != core.snapshot(task)):
            wrong.append(f"row of {task_id}: {row}")
    return wrong


def with_exits(code: CodeType) -> frozenset[int]:
    """The offsets in ``code`` where a ``with`` block that ended without raising calls its
    ``__exit__``: ``__exit__(None, None, None)``, three ``LOAD_CONST None`` then the call
    (CPython 3.11), which reports the ``with`` line again."""
    found = _exits.get(code)
    if found is None:
        ops = list(dis.get_instructions(code))
        found = frozenset(
            op.offset
            for at, op in enumerate(ops)
            if [(o.opname, o.argval) for o in ops[at : at + 3]] == [("LOAD_CONST", None)] * 3
            and at + 3 < len(ops)
            and ops[at + 3].opname == "PRECALL"
            and ops[at + 3].arg == 2
        )
        _exits[code] = found
    return found


_exits: dict[CodeType, frozenset[int]] = {}


def uncovered(code: CodeType) -> frozenset[int]:
    """The offsets in ``code``, between the first and the last its exception table covers,
    that no entry of the table covers (CPython 3.11): the ``NOP`` a ``try:`` line reports,
    after the table of an enclosing ``with`` block ends and before the ``try``'s own
    begins; a ``return``'s way out of a ``with`` block, before its ``__exit__``.  An
    exception raised there skips the enclosing ``with``'s exit: a ``with lock:`` left the
    lock held for good (the hang of ``schedule`` and a replacement under an earlier
    injector).  A real SIGINT is raised after the instruction before, inside the block:
    a tracer's raise there is none it can make.  (Conservative: a line between two
    ``try`` statements outside any ``with`` is skipped too.)"""
    found = _uncovered.get(code)
    if found is None:
        table = dis._parse_exception_table(code)  # type: ignore[attr-defined]
        first = min((entry.start for entry in table), default=0)
        last = max((entry.end for entry in table), default=0)
        found = frozenset(
            op.offset
            for op in dis.get_instructions(code)
            if first <= op.offset < last
            and not any(entry.start <= op.offset < entry.end for entry in table)
        )
        _uncovered[code] = found
    return found


_uncovered: dict[CodeType, frozenset[int]] = {}


class Interrupter:
    """Raises ``KeyboardInterrupt`` at the ``at``-th line run in the package's frames (the
    stores' left out: a store's Ctrl-C is the store's raise); counts them when ``at`` is
    None.

    Not at the line a ``with`` block's end reports before calling ``__exit__``
    (:func:`with_exits`): a tracer can raise there, after the block and before its exit,
    which a real SIGINT cannot: CPython handles a signal at the end of a call, at a
    backward jump and at a function's start, and the exception table covers the block up
    to its last call's end.  Raised there, a ``with lock:`` left the lock held for good,
    which no code can guard against.  Nor at a ``try:`` line's NOP that no exception
    handler covers (:func:`uncovered`), for the same reason.

    A real SIGINT goes to the handler in place: while a
    :class:`~lldsched.threaded.deadline.Hold` keeps it (the scheduler's lock taken or
    held on the main thread), the Ctrl-C is handed to the hold, which raises it once the
    lock is let go; else it is raised here.  With ``signum`` another signal is sent
    instead (a SIGTERM), to the handler in place for it, whatever it is: the test's
    (which raises, ``sys.exit``), or a hold's."""

    def __init__(self, at: int | None, signum: int = signal.SIGINT) -> None:
        self.at = at
        self.signum = signum
        self.lines = 0
        self.where = ""

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            path = frame.f_code.co_filename
            return self if path.startswith(PACKAGE) and not path.startswith(STORES) else None
        code = frame.f_code
        at = frame.f_lasti
        if event == "line" and at not in with_exits(code) and at not in uncovered(code):
            self.lines += 1
            if self.lines == self.at:
                self.where = f"{frame.f_code.co_name}:{frame.f_lineno}"
                handler = signal.getsignal(self.signum)
                if callable(handler) and (
                    self.signum != signal.SIGINT
                    or getattr(handler, "__module__", "").startswith("lldsched.")
                ):
                    handler(self.signum, frame)  # a Hold keeps it: raised once let go
                else:
                    raise KeyboardInterrupt(f"Ctrl-C at {self.where}")
        return self
