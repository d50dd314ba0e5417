"""What an answer prints while the checks run: the first lines shown, the rest counted.

The checks call an answer hundreds of times (``next_slot`` 506 times, a ``TaskQueue``'s
``pop_due`` thousands), so a ``print`` left in it for debugging printed hundreds of
thousands of lines above the verdicts: a ``next_slot`` that printed in a loop that never
ended wrote 129,652 lines in the 8 s its checks took, and a ``TaskQueue`` that printed
its heap in ``pop_due`` 3,496 lines, every check passed.  A cell that long buries the
verdicts under its scroll, and past the Jupyter server's rate limit (1 MB a second over 3
s) the server stops sending the cell's output, the verdicts with it.  So while the checks
run, :func:`bounded` puts a stream in front of ``sys.stdout`` and ``sys.stderr`` that
passes the first :data:`SHOWN_LINES` lines (or :data:`SHOWN_CHARS` characters) through,
as printed, and counts the rest; :meth:`Printed.report` then says how much was not shown.
The learner still sees what the answer printed first, where a debugging print tells the
most, and calls the answer on one case to see more.

What is written from any thread while the checks run is counted, the checker's own
consumers' and a Scheduler's left running by an earlier cell alike: the notice says
"while the checks ran", not whose.  The stream's methods are the checker's code: the
watch of an answer (``checks._Watch``) passes them by, or every ``print`` would read as
the answer asking the checker for its answer.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["SHOWN_CHARS", "SHOWN_LINES", "Printed", "bounded"]

SHOWN_LINES = 20
"""Lines of what the answer prints during the checks that are shown, as printed."""
SHOWN_CHARS = 2_000
"""Characters likewise (a single ``print`` of a heap of 1,000 entries is one line)."""


class Printed:
    """The count of what was written while the checks ran, and how much of it was shown."""

    def __init__(self) -> None:
        # Guards the budget (what is shown, and the first count held back) against two
        # threads writing at once; past it, _Bounded.write adds to the held counts without
        # it (two writes at the same instant may lose a count: the notice is a size).
        self._lock = threading.Lock()
        self.shown_lines = self.shown_chars = 0
        self.held_lines = self.held_chars = 0
        self.ends_a_line = True  # what was shown last ended with a newline

    def take(self, text: str) -> str:
        """The part of ``text`` to show; the rest is counted as held back."""
        with self._lock:
            if self.held_chars:  # over the budget already: nothing more is shown
                shown = ""
            else:
                lines = text.splitlines(keepends=True)[: SHOWN_LINES - self.shown_lines]
                shown = "".join(lines)[: SHOWN_CHARS - self.shown_chars]
            held = text[len(shown) :]
            self.shown_lines += shown.count("\n")
            self.shown_chars += len(shown)
            self.held_lines += held.count("\n")
            self.held_chars += len(held)
            if shown:
                self.ends_a_line = shown.endswith("\n")
            return shown

    def report(self) -> None:
        """Say how much was not shown, if anything was held back."""
        if not self.held_chars:
            return
        more = (
            f"{self.held_lines:,} more lines"
            if self.held_lines
            else f"{self.held_chars:,} more characters"
        )
        print(
            ("" if self.ends_a_line else "\n")
            + f"[... and {more} printed while the checks ran, not shown: the checks call "
            "your answer hundreds of times; to watch it work, call it yourself on one case]"
        )


class _Bounded:
    """``stream`` (``sys.stdout`` or ``sys.stderr``), showing what ``printed`` lets through."""

    def __init__(self, stream: TextIO, printed: Printed) -> None:
        self._stream = stream
        self._printed = printed

    def write(self, text: str) -> int:
        printed = self._printed
        if printed.held_chars:  # over the budget: counted here, in as few calls as can be
            printed.held_lines += text.count("\n")  # (each call the answer's watch sees
            printed.held_chars += len(text)  # costs a microsecond: a print makes four writes)
            return len(text)
        shown = printed.take(text)
        if shown:
            self._stream.write(shown)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno...: the stream's
        return getattr(self._stream, name)


QUIET_CODES = frozenset(
    value.__code__
    for owner in (Printed, _Bounded)
    for value in vars(owner).values()
    if callable(value) and hasattr(value, "__code__")
)
"""The code of the stream's methods: what an answer's ``print`` runs here, which the
watch of an answer passes by (see the module's docstring)."""


@contextmanager
def bounded() -> Iterator[Printed]:
    """``sys.stdout`` and ``sys.stderr`` bounded for the block (see the module's
    docstring), put back as they were after it."""
    printed = Printed()
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = _Bounded(stdout, printed)
    sys.stderr = _Bounded(stderr, printed)
    try:
        yield printed
    finally:
        sys.stdout, sys.stderr = stdout, stderr
