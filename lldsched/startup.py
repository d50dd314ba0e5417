"""A Ctrl-C while the command line starts ends it as one later does: ``interrupted`` on
stderr, status 130, no traceback (docs/DECISIONS.md, "The command line").

``python -m lldsched`` imports the package before any of the command line's code runs
(``lldsched/__init__.py``, the 200 ms of a start that are not the interpreter's own), and
the ``lldsched`` script does too: :func:`lldsched.cli.main` catches a Ctrl-C only once it
is called.  So the package imports this module first, and when the process is the
command line (:func:`started_as_the_command_line`: decided from ``sys.argv``, so a
program that imports lldsched is never touched) it installs :func:`_interrupted` as
``sys.excepthook``, which a ``KeyboardInterrupt`` no code caught reaches: during those
imports, or between two statements of ``__main__`` around ``main()``.  No signal
handler is installed: a Ctrl-C is raised where it lands, as before, and a command that
catches it (all of them, in ``main``) is unchanged.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from types import TracebackType

__all__ = ["started_as_the_command_line"]

SCRIPT = "lldsched"
"""The command line's module, and the name of its script (``[project.scripts]``)."""

_NO_VALUE_FLAGS = "bBdEhiIOPqsSuvVR"
"""The interpreter's one-letter options that take no value: ``-Im lldsched`` runs it too."""


def started_as_the_command_line(argv: list[str], orig_argv: list[str]) -> bool:
    """True when the process is ``python -m lldsched`` (``sys.argv[0]`` is ``-m`` while
    the interpreter imports the module it runs, named on its own command line,
    ``sys.orig_argv``) or the ``lldsched`` script (``sys.argv[0]`` names it)."""
    if not argv:  # an embedded interpreter may have no arguments
        return False
    if argv[0] != "-m":
        return os.path.basename(argv[0]).removesuffix(".exe") == SCRIPT
    for index, word in enumerate(orig_argv[1:], 1):
        flags, m, name = word.partition("m")
        if m and flags.startswith("-") and not flags.strip("-" + _NO_VALUE_FLAGS):
            if not name and index + 1 < len(orig_argv):
                name = orig_argv[index + 1]
            return name == SCRIPT
    return False


def _interrupted(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    """``sys.excepthook`` in the command line's process: a ``KeyboardInterrupt`` that no
    code caught ends it as :func:`lldsched.cli.main` ends one (what was printed is
    flushed, then ``interrupted``, status 130); anything else is printed by the hook
    in place before (Python's own)."""
    if not issubclass(kind, KeyboardInterrupt):
        _PYTHONS(kind, value, traceback)
        return
    from lldsched.cli import INTERRUPTED, to_stderr

    with suppress(BrokenPipeError, ValueError):  # a reader that left, a closed stream
        sys.stdout.flush()
    # os._exit: returning would have the interpreter end by the signal again (Python's
    # way with an uncaught KeyboardInterrupt), not with the status the commands return.
    os._exit(to_stderr("interrupted", INTERRUPTED))


_PYTHONS = sys.excepthook  # what prints anything else: the hook in place before this one

if started_as_the_command_line(sys.argv if hasattr(sys, "argv") else [], sys.orig_argv):
    sys.excepthook = _interrupted
