"""A Ctrl-C while the command line starts ends it as one later does: ``interrupted`` on
stderr, status 130, no traceback (docs/decisions/command-line.md, "The command line").

``python -m lldsched`` (and ``python -m lldsched.__main__``, the module it runs) imports
the package before any of the command line's code runs (``lldsched/__init__.py``, the
200 ms of a start that are not the interpreter's own), and the ``lldsched`` script does
too: :func:`lldsched.cli.main` catches a Ctrl-C only once it is called.  So the package
imports this module first, and when the process is the command line
(:func:`started_as_the_command_line`: decided from ``sys.argv``, so a program that
imports lldsched is never touched) it installs :func:`_interrupted` as
``sys.excepthook``, which a ``KeyboardInterrupt`` no code caught reaches: during those
imports, or between two statements of ``__main__`` around ``main()``; and
:func:`_interrupted_unraisable` as ``sys.unraisablehook``, which one Python could not
raise reaches (in a finalizer, an ``atexit`` callback).  No signal handler is installed:
a Ctrl-C is raised where it lands, as before, and a command that catches it (all of
them, in ``main``) is unchanged.

This module imports nothing but ``os`` and ``sys``, which every start has imported
before the package (``site``, ``runpy``): a Ctrl-C that lands before the hook is set
lands in Python's own start.  (``from __future__ import annotations`` is an import too,
of the ``__future__`` module, which a bare interpreter has not loaded.)  And the hooks
import nothing: an interrupted import of the package unloaded ``lldsched``, so
importing anything of it there imported the whole package again.
"""

import os
import sys

__all__ = ["COMMAND_LINE", "INTERRUPTED", "INTERRUPTED_LINE", "started_as_the_command_line"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (3 ms)
if TYPE_CHECKING:
    from types import TracebackType

SCRIPT = "lldsched"
"""The command line's module, and the name of its script (``[project.scripts]``)."""

INTERRUPTED = 130
"""Ctrl-C's status: 128 + SIGINT, what a shell reports for a command that signal ended."""

INTERRUPTED_LINE = "interrupted"
"""What a Ctrl-C prints on stderr, the one line."""

_NO_VALUE_FLAGS = "bBdEhiIOPqsSuvVR"
"""The interpreter's one-letter options that take no value: ``-Im lldsched`` runs it too."""


def started_as_the_command_line(argv: list[str], orig_argv: list[str]) -> bool:
    """True when the process is ``python -m lldsched`` (``sys.argv[0]`` is ``-m`` while
    the interpreter imports the module it runs, named on its own command line,
    ``sys.orig_argv``), ``python -m lldsched.__main__`` (the module the first runs) or
    the ``lldsched`` script (``sys.argv[0]`` names it)."""
    if not argv:  # an embedded interpreter may have no arguments
        return False
    if argv[0] != "-m":
        return os.path.basename(argv[0]).removesuffix(".exe") == SCRIPT
    for index, word in enumerate(orig_argv[1:], 1):
        flags, m, name = word.partition("m")
        if m and flags.startswith("-") and not flags.strip("-" + _NO_VALUE_FLAGS):
            if not name and index + 1 < len(orig_argv):
                name = orig_argv[index + 1]
            return name in (SCRIPT, f"{SCRIPT}.__main__")
    return False


def _interrupted(
    kind: type[BaseException], value: BaseException, traceback: "TracebackType | None"
) -> None:
    """``sys.excepthook`` in the command line's process: a ``KeyboardInterrupt`` that no
    code caught ends it as :func:`lldsched.cli.main` ends one (:func:`_end`); anything
    else is printed by the hook in place before (Python's own)."""
    if issubclass(kind, KeyboardInterrupt):
        _end()
    _PYTHONS(kind, value, traceback)


def _interrupted_unraisable(unraisable: "sys.UnraisableHookArgs") -> None:
    """``sys.unraisablehook`` in the command line's process: a ``KeyboardInterrupt``
    Python cannot raise on (in a finalizer, an ``atexit`` callback, a thread's end at
    exit) ends it too; it was ``Exception ignored in ...`` and a traceback, and the
    Ctrl-C lost (the command ran on).  Anything else: the hook in place before."""
    kind = unraisable.exc_type
    if kind is not None and issubclass(kind, KeyboardInterrupt):
        _end()
    _PYTHONS_UNRAISABLE(unraisable)


def _end() -> None:
    """What was printed is flushed, then ``interrupted``, status 130."""
    for stream, text in ((sys.stdout, ""), (sys.stderr, INTERRUPTED_LINE + "\n")):
        # A reader that left (BrokenPipeError), a closed or absent stream, a second
        # Ctrl-C in a blocked write: the line is lost, not the status.
        try:
            stream.write(text)
            stream.flush()
        except (AttributeError, OSError, ValueError, KeyboardInterrupt):
            pass
    # os._exit: returning would have the interpreter end by the signal again (Python's
    # way with an uncaught KeyboardInterrupt), not with the status the commands return.
    os._exit(INTERRUPTED)


# What prints anything else: the hooks in place before these.
_PYTHONS = sys.excepthook
_PYTHONS_UNRAISABLE = sys.unraisablehook

COMMAND_LINE = started_as_the_command_line(sys.argv if hasattr(sys, "argv") else [], sys.orig_argv)
"""Whether this process is the command line, decided as the package is first imported
(``sys.argv[0]`` is ``-m`` only then: runpy sets it to the module's file before
``main()`` runs)."""

if COMMAND_LINE:
    sys.excepthook = _interrupted
    sys.unraisablehook = _interrupted_unraisable
