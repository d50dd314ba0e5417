"""The house rule the fuzz targets check, shared by every harness in tools/fuzz.

docs/decisions/checking-input.md, "Bad input is reviewed as a table": bad input raises one of the
package's errors (or a ``TypeError`` / ``ValueError``) whose message quotes the bad
value; never an ``AttributeError``, ``KeyError``, ``IndexError``,
``ZeroDivisionError``, ``OverflowError`` or ``RecursionError`` from inside, and never
a hang.  A harness calls :func:`refused` around each call it makes with fuzzed input:
an allowed error is swallowed (and its message checked when the harness knows what
it must quote), anything else propagates, which atheris reports as a crash with the
input that made it.  :func:`timed` turns a call slower than :data:`SLOW` seconds into
a crash too (atheris' own ``-timeout`` kills the process without a traceback).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the worktree's lldsched

from lldsched.errors import LldschedError

ALLOWED = (LldschedError, TypeError, ValueError)
SLOW = 2.0  # seconds: a call slower than this on fuzzed input is a defect


class Slow(Exception):
    """A call took longer than :data:`SLOW` seconds."""


class Unquoted(Exception):
    """An allowed error whose message does not quote the value it was about."""


@contextlib.contextmanager
def refused(*quoted: str) -> Iterator[None]:
    """Swallow an allowed error; let every other exception through.  Each text of
    ``quoted`` must appear in the allowed error's message (one of them is enough)."""
    try:
        yield
    except ALLOWED as exc:
        if isinstance(exc, (KeyError, IndexError)):  # LookupError subclasses of ours
            raise
        if quoted and not any(q in str(exc) for q in quoted):
            raise Unquoted(f"{type(exc).__name__}: {exc} (expected one of {quoted!r})") from exc


def _alarm(signum: int, frame: object) -> None:
    raise Slow(f"a call took more than {SLOW} s")


@contextlib.contextmanager
def timed(seconds: float = SLOW) -> Iterator[None]:
    """Raise :class:`Slow` inside the call once ``seconds`` have passed."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(test_one: object, argv: list[str]) -> None:
    """Fuzz ``test_one(data: bytes)`` with atheris (its usual flags in ``argv``)."""
    import atheris

    atheris.Setup(argv, test_one)
    atheris.Fuzz()
