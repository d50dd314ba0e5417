"""A variant that holds the scheduler's lock without end is stopped, not waited for.

The timer asks its queue (``push``, ``pop_due``, ``next_due``) holding the scheduler's
one lock, as every verb of the scheduler takes it.  A variant's queue method that never
returns (a learner's polling ``pop_due``, ``while self.next_due() > now: time.sleep(...)``,
whose ``now`` never moves) held it for good: the experiment's next ``schedule()`` waited
for the lock, and the notebook's cell hung until the kernel was interrupted, the timer
thread spinning on after it.  :class:`LockWatch`, run beside each experiment on a
variant (``_support.running``), tries the lock; when it cannot have it for ``patience``
seconds and the timer thread is inside code of the variant's own (a function called by
lldsched's code from outside the package: the method the variant overrode), it raises
:class:`HeldTheLock` in the timer thread, as the exercise checkers stop an answer that
loops (``PyThreadState_SetAsyncExc``).  The timer dies of it (its death is logged, and
its ``with`` lets go of the lock), the experiment's waits end, and ``running`` says
which method held the lock, as a :class:`~lldsched.lab.VariantError`.

The stop lands at the variant's next Python instruction: within one ``time.sleep`` of a
sleeping loop, at once in a Python loop.  Not stopped: a variant that catches it (a
bare ``except:`` around its loop), and a lock held by anything but the timer thread's
variant code (the lab's own gate holds it on purpose, in lldsched's code).
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
import threading
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lldsched.threaded.scheduler import Scheduler

__all__ = ["HeldTheLock", "LockWatch"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The standard library's code lldsched calls (threading's Event.wait under the lab's gate)
# is no variant's.
_STDLIB = tuple({os.path.join(sysconfig.get_paths()[key], "") for key in ("stdlib", "platstdlib")})
_PAUSE = 0.05  # seconds between two tries of the lock while it is free


class HeldTheLock(Exception):
    """Raised by the lab in the timer thread, in a variant's method that held the
    scheduler's lock for the whole patience."""


class LockWatch:
    """A daemon thread that stops the timer thread of ``scheduler`` if a variant's code
    on it holds the scheduler's lock for ``patience`` seconds (see the module)."""

    def __init__(self, scheduler: Scheduler, patience: float) -> None:
        self._scheduler = scheduler
        self._patience = patience
        self._closed = threading.Event()
        self.held_in: str | None = None  # the variant's method it stopped, once it has
        self._thread = threading.Thread(target=self._watch, name="lldsched-lab-lockwatch")
        self._thread.daemon = True

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop watching (waits for the watch's try of the lock, ``patience`` at most)."""
        self._closed.set()
        self._thread.join(self._patience)

    def _watch(self) -> None:
        lock = self._scheduler._lock
        while not self._closed.is_set():
            if lock.acquire(timeout=self._patience):
                lock.release()
                self._closed.wait(_PAUSE)
                continue
            timer = self._scheduler._timer
            ident = None if timer is None else timer.ident
            frame = None if ident is None else sys._current_frames().get(ident)
            called = _variant_call(frame)
            if self._closed.is_set() or ident is None or called is None:
                continue  # held by something else: nothing of a variant's to stop
            code = called.f_code
            self.held_in = f"{code.co_qualname} (line {called.f_lineno})"
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(ident), ctypes.py_object(HeldTheLock)
            )
            return


def _variant_call(frame: FrameType | None) -> FrameType | None:
    """The outermost frame on a thread's stack, from ``frame`` (its innermost) out,
    whose code is neither lldsched's nor the standard library's and which lldsched's
    code called: the variant's method the runtime is in; None if there is none."""
    found = None
    while frame is not None:
        caller = frame.f_back
        if caller is not None and _ours(caller) and not _ours(frame) and not _standard(frame):
            found = frame
        frame = caller
    return found


def _ours(frame: FrameType) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE)


def _standard(frame: FrameType) -> bool:
    path = frame.f_code.co_filename
    return path.startswith("<frozen") or os.path.abspath(path).startswith(_STDLIB)
