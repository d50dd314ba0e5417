"""The command line: ``python -m lldsched <command>`` (also the ``lldsched`` script).

One module per command in this package: :mod:`~lldsched.cli.demo`,
:mod:`~lldsched.cli.cron` (with :mod:`~lldsched.cli.crontab` for ``cron --crontab``),
:mod:`~lldsched.cli.simulate`, :mod:`~lldsched.cli.lab` and :mod:`~lldsched.cli.storetasks`
(with :mod:`~lldsched.cli.storeurl`, how it names and opens a store, and
:mod:`~lldsched.cli.tasksparser`, its arguments);
this module builds the parser and runs the chosen command (:mod:`lldsched.startup`, the
package's first import, ends a Ctrl-C that lands before it runs).  Every start builds the
whole parser, ``--help`` too, so it imports no command's run: a command's module is
imported by its handler (``demo``, ``cron``, ``tasks``), or imports its run's modules
when it runs (``simulate``: the simulation; docs/decisions/command-line.md, "Building
the parser imports no command's run").

Every command ends the same way (:data:`EXIT_STATUSES`; docs/decisions/command-line.md, "The command
line"): 0 when it did its work; 2 for bad arguments, refused before any work with one
``error: ...`` line on stderr naming the value (argparse's own errors say ``error:``
too, after the usage line); 1 when the work failed after it began (a chart the disk
refused, after the summary was printed; a stdout that cannot be written: a full disk,
a closed descriptor); 130 on Ctrl-C, ``interrupted`` on stderr and no traceback, from
the package's first import on.  A SIGTERM (what ``systemctl stop``, ``docker stop`` and
``kill`` send) or a SIGHUP stops the command as a Ctrl-C does, ``terminated`` on stderr,
and then ends the process by that signal, as it ended before the command began
(:func:`_stopped_by_signals`).  A reader that leaves early (``| head``) is not an
error: 0.  The commands print through :func:`say`, which tells the two apart.  A file a
command writes (``simulate --gantt``) is written through :func:`write_whole`: the old
file or the whole new one, never a part, whatever stops the write; the part a writer
killed outright left is removed by the next write of that file.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import os
import re
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO, NoReturn, TextIO

from lldsched import __version__, startup
from lldsched.errors import shown
from lldsched.startup import INTERRUPTED, INTERRUPTED_LINE

EXIT_STATUSES = "exit status: 0 done, 1 failed after it began, 2 bad arguments, 130 interrupted"
"""What each exit status of every command means (the end of ``--help``)."""

FAILED = 1
"""The status of work that failed after it began (a chart the disk refused)."""

BAD_ARGUMENTS = 2
"""The status of arguments refused before any work: argparse's own, and every command's."""


TERMINATED_LINE = "terminated"
"""What a SIGTERM or a SIGHUP prints on stderr, the one line, before the process ends by it."""

STOP_SIGNALS = ("SIGTERM", "SIGHUP")
"""The signals that ask a command to stop, by name (Windows has no SIGHUP): each stops it
as a Ctrl-C does, while its default action would end it at once (:func:`_stopped_by_signals`)."""


class Terminated(BaseException):
    """A SIGTERM or a SIGHUP, raised where it lands in the command's work, so that what a
    Ctrl-C undoes on its way out (a scheduler's ``with``, a chart's part file) is undone
    for it too.  A ``BaseException``, as ``KeyboardInterrupt`` is: no ``except
    Exception`` of a command takes it for a failure of its own."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class OutputFailed(Exception):
    """stdout refused what a command printed (a full disk, a closed descriptor, or no
    stdout at all: ``>&-``): the work failed after it began, status 1.  A reader that
    left (BrokenPipeError) is not this: it stays BrokenPipeError, status 0."""


def say(text: str) -> None:
    """Print ``text`` and a newline on stdout, as ``print`` does: every command's output
    goes through here (was ``print``: OSError's traceback for a full disk, and nothing
    at all said for a closed stdout, whose ``print`` writes nowhere).  A character the
    stream's encoding has not (a path or an expression echoed back, under
    ``PYTHONIOENCODING=ascii``; a surrogate under a strict UTF-8) is written escaped,
    as Python's stderr writes it (was UnicodeEncodeError's traceback)."""
    line = text + "\n"

    def write(stream: TextIO) -> None:
        try:
            stream.write(line)
        except UnicodeEncodeError:  # raised before anything is written
            encoding = stream.encoding or "utf-8"
            stream.write(line.encode(encoding, "backslashreplace").decode(encoding))

    _on_stdout(write)


def _on_stdout(write: Callable[[TextIO], object]) -> None:
    """``write(sys.stdout)``, an OSError but BrokenPipeError raised as OutputFailed."""
    stream = sys.stdout
    if stream is None:  # Python's stdout when the process started with none (`>&-`)
        raise OutputFailed("stdout is closed")
    try:
        write(stream)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputFailed(str(exc)) from None


def to_stderr(line: str, status: int) -> int:
    """Print ``line`` on stderr and return ``status``.  A stderr nobody reads any more
    (``2>&1 | head -0``) loses the line, not the status: its BrokenPipeError was read as
    the early reader of stdout, and a refusal exited 0.  So does a stderr that cannot be
    written (``2> /dev/full``: the OSError left main(), status 1), and no stderr at all
    (``2>&-``: ``print(file=None)`` wrote the line on stdout, into the output)."""
    if sys.stderr is None:
        return status
    try:
        print(line, file=sys.stderr)
    except OSError:  # BrokenPipeError among them
        _write_nowhere(sys.stderr)
    return status


def _flush_or_drop(stream: TextIO | None) -> None:
    """Flush ``stream``; if its file refuses, point the file at /dev/null
    (:func:`_write_nowhere`), so that the interpreter's final flush does not fail."""
    if stream is None:
        return
    try:
        stream.flush()
    except OSError:  # BrokenPipeError among them
        _write_nowhere(stream)


def reader_left() -> None:
    """What a command whose stdout's reader left early (``BrokenPipeError`` from
    :func:`say`) calls to go on with work that is not output (``simulate --gantt``'s
    chart): stdout is pointed at /dev/null, so what it still prints, and the last flush,
    go nowhere without an error.  A command that has nothing but output to do lets the
    ``BrokenPipeError`` end it instead (status 0, :func:`main`)."""
    _write_nowhere(sys.stdout)


def _write_nowhere(stream: TextIO | None) -> None:
    """Point ``stream``'s file at /dev/null, so that the interpreter's final flush of
    what it still holds does not fail too (the recipe in the signal module's
    documentation).  No stream, or one with no file (a test's), is left as it is.  A
    descriptor that was closed (``os.close(1)``) is the one /dev/null opens as: it is
    kept, not closed again (was: a buffered stdout's last flush then failed, status 120
    and "Exception ignored", hidden where ``PYTHONUNBUFFERED`` is set)."""
    try:
        fileno = stream.fileno() if stream is not None else None
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        fileno = None
    if fileno is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != fileno:  # a closed descriptor is the lowest free one: /dev/null got it
        os.dup2(devnull, fileno)
        os.close(devnull)


def not_an_entry_point(command: str) -> NoReturn:
    """End ``python -m lldsched.cli.<command>`` with one line naming the command line's
    way, status 2 (was: the module ran its definitions and exited 0 without a word, the
    command not run): each command's module calls this under ``__name__ == "__main__"``."""
    line = (
        f"error: run the command as 'python -m lldsched {command}' or 'lldsched {command}'; "
        f"lldsched.cli.{command} is a module of it"
    )
    sys.exit(to_stderr(line, BAD_ARGUMENTS))


if sys.platform == "win32":  # pragma: no cover - not run by this project's CI (Linux)
    _try_lock: Callable[[int], bool] | None = None  # no flock: partial files are left
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        """Lock the open file ``fd`` names, exclusive, without waiting: False if another
        open file holds it.  An ``OSError`` for a file system with no such locks."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def write_whole(path: str, write: Callable[[BinaryIO], object]) -> None:
    """Write the file ``path`` names with ``write(stream)``: whole, or not at all.

    ``write`` writes into a new file beside it (``.NAME.RANDOM.partial``), which then
    replaces ``path`` at once (``os.replace``); a ``write`` that raises (an ``OSError``,
    a Ctrl-C) removes it and leaves ``path`` as it was: the old file, or none.  Was:
    the target itself opened and written, so a Ctrl-C or a kill halfway left a chart
    cut short, where the old one had been.  A process killed outright (SIGKILL, a power
    cut before the data reached the disk) cannot remove its ``.partial`` file, but
    ``path`` stays the old file all the same: the new one is synced before it replaces
    it, and the next write to ``path`` that succeeds removes what such a process left
    (:func:`_remove_dead_partials`): the writer holds an exclusive ``flock`` on its
    partial file until it has replaced ``path``, which the operating system drops
    when the process dies, so a partial file nobody holds is nobody's, and one a live
    writer holds is left.  A symbolic link is followed (the file it names is replaced,
    the link stays), and a file that existed keeps its permission bits; a new one gets
    the umask's, as ``open`` gives.  A file this user may not write is refused
    (``PermissionError``), as ``open`` refused it: a rename asks only the folder's
    leave.  The ``OSError`` of a write that failed is raised as it came.
    """
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode) & 0o777  # not set-user-ID and the like
    except FileNotFoundError:
        mode = None
    if mode is not None and not os.access(target, os.W_OK):  # as open() would refuse it
        raise PermissionError(errno.EACCES, "the file is read-only for this user", path)
    while True:  # a name no other file has (O_EXCL); the name's first characters say whose
        partial = os.path.join(folder, f".{name[:32]}.{secrets.token_hex(4)}.partial")
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        if _held(fd, partial):
            break
        os.close(fd)  # another writer's cleanup took it between its creation and the lock
    try:
        with os.fdopen(fd, "wb") as stream:
            if mode is not None:
                os.fchmod(stream.fileno(), mode)
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())  # on the disk before it replaces the old one
            if _try_lock is not None:  # still locked: no cleanup takes it before the rename
                os.replace(partial, target)
        if _try_lock is None:  # Windows renames no open file
            os.replace(partial, target)
    except BaseException:  # a Ctrl-C too: the part written goes, the old file stays
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    _remove_dead_partials(folder, name)


def _held(fd: int, partial: str) -> bool:
    """Lock the new partial file ``fd`` and check that it is still named ``partial``:
    False if another write's :func:`_remove_dead_partials` locked it first (it was
    nobody's for the moment between ``os.open`` and the lock) and may have removed it.
    True without a lock where there are no locks (Windows, a file system without
    them): nothing removes such a file then."""
    if _try_lock is None:
        return True
    try:
        if not _try_lock(fd):
            return False
    except OSError:  # ENOLCK, EOPNOTSUPP: this file system's cleanups cannot lock it either
        return True
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(partial))
    except FileNotFoundError:
        return False
    except OSError:  # not a cleanup's doing: the write goes on, and says what is wrong
        return True


def _remove_dead_partials(folder: str, name: str) -> None:
    """Remove the ``.NAME.RANDOM.partial`` files of ``name`` in ``folder`` that no live
    process writes: those whose lock this process can take (their writer was killed
    outright).  A partial file a writer holds, one this user cannot open, one that is
    not a regular file, and every file on a file system without locks, are left; so
    is every other name.  Nothing it meets is an error: the write it follows is done."""
    if _try_lock is None:
        return
    pattern = re.compile(rf"\.{re.escape(name[:32])}\.[0-9a-f]{{8}}\.partial")
    try:
        names = [entry for entry in os.listdir(folder) if pattern.fullmatch(entry)]
    except OSError:
        return
    for entry in names:
        partial = os.path.join(folder, entry)
        try:  # not a FIFO's wait, not a link's target
            fd = os.open(partial, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            opened = os.fstat(fd)
            # Locked: its writer is dead.  Still under this name?  (A writer that
            # finished renamed it into place: the file is the chart now.)
            if (
                stat.S_ISREG(opened.st_mode)
                and _try_lock(fd)
                and os.path.samestat(opened, os.lstat(partial))
            ):
                os.unlink(partial)
        except OSError:
            pass
        finally:
            os.close(fd)


class Parser(argparse.ArgumentParser):
    """argparse's parser, but an argument that is a number is a value, never an option:
    ``--days -inf``, ``--days -1e-3``, ``--seed -5`` give the option its value, as
    ``--days=-inf`` does, and the command refuses it by name.  argparse reads as a value
    only what its own pattern calls a negative number (``-3``, ``-.5``), and took
    ``-inf``, ``-nan`` and ``-1e3`` for unknown options: ``expected one argument``.
    A choice mistyped is refused with the nearest one (:meth:`_check_value`).  An
    argument quoted in a refusal is quoted by :func:`~lldsched.errors.shown`
    (:meth:`error`).  Every command's parser is one (``add_parser`` makes its parent's
    class), its help laid out by :class:`HelpFormatter` unless told otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._given: list[str] = []  # the arguments this parser read last (error)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """argparse's refusal, but an argument it quotes is quoted by the package's one
        rule (:func:`~lldsched.errors.shown`): ``--workers`` followed by 5,001 nines was
        quoted whole (``invalid int value: '999...'``, a line of 5 KB), as was an
        unrecognized or a mistyped one; one that reads whole (``'x'``) is as argparse
        says it (docs/decisions/checking-input.md, "A bad value is quoted by one rule")."""
        for arg in self._given:
            if (quoted := shown(arg)) != repr(arg):  # too long to read whole
                message = message.replace(repr(arg), quoted).replace(arg, quoted)
        super().error(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """argparse's end (its refusals end here), but a stderr that refused the usage or
        the message (``2>&1 | head -0``, ``2> /dev/full``) is pointed at /dev/null, so
        the status stays.  argparse drops the failed write, but a buffered stderr keeps
        the line, and the interpreter's last flush failed again: status 120 and
        "Exception ignored" (hidden where ``PYTHONUNBUFFERED`` is set)."""
        try:
            super().exit(status, message)
        finally:
            _flush_or_drop(sys.stderr)

    def _parse_optional(self, arg_string: str) -> Any:  # its shape changed in Python 3.12
        if _is_number(arg_string):  # as Python's float() reads it: no option looks so
            return None  # a value (argparse's None: not an option)
        return super()._parse_optional(arg_string)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's refusal of a value not among the choices (a command, a lab
        decision), in one wording on every Python, with the nearest choice if one is
        near: ``invalid choice: 'simulte' (choose from 'demo', 'cron', ...); did you
        mean 'simulate'?``.  argparse decides what is refused; the words
        are ours: Python 3.14's argparse lists the choices unquoted (``choose from demo,
        cron, ...``) and 3.15's adds its own ``maybe you meant`` by default
        (``suggest_on_error``)."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            choices = list(action.choices or ())
            message = f"invalid choice: {value!r} (choose from {', '.join(map(repr, choices))})"
            named = [choice for choice in choices if isinstance(choice, str)]
            near = _nearest(value, named) if isinstance(value, str) else []
            if near:
                message += f"; did you mean {near[0]!r}?"
            raise argparse.ArgumentError(action, message) from None


def _nearest(value: str, choices: list[str]) -> list[str]:
    """The choice ``value`` was meant as, if one is near: one equal but for its case
    first (``--status FAILED``: difflib's ratio counts each changed letter, and found
    none near), or else difflib's nearest."""
    same = [choice for choice in choices if choice.casefold() == value.casefold()]
    return same[:1] or difflib.get_close_matches(value, choices, n=1)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's layout of a help, but a line of a description or an epilog that starts
    with two blanks (an example: ``  %(prog)s @daily``) is kept as written, where
    argparse filled it into the text around it; a blank line still ends a paragraph."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        prose: list[str] = []  # the lines of the paragraph being read

        def fill() -> None:
            if prose:
                lines.append(super(HelpFormatter, self)._fill_text(" ".join(prose), width, indent))
                prose.clear()

        for line in text.splitlines():
            if line.startswith("  ") or not line.strip():
                fill()
                lines.append(indent + line if line.strip() else "")
            else:
                prose.append(line)
        fill()
        return "\n".join(lines)


def examples(*lines: str) -> str:
    """A command's ``examples:``, each line its arguments after the command's name (the
    epilog of its ``--help``; ``tests/test_cli_exits.py`` runs every one)."""
    return "examples:\n" + "\n".join(f"  %(prog)s {line}".rstrip() for line in lines)


def _is_number(text: str) -> bool:
    """Whether ``text`` is a number ``float()`` reads (``-inf``, ``-1e3``, ``-1_000``)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def build_parser(prog: str = "python -m lldsched") -> argparse.ArgumentParser:
    """The parser; ``prog`` is how its usage lines name the command."""
    parser = Parser(
        prog=prog,
        description="lldsched: an in-process task scheduler you can read, run and replay.",
        epilog=f"{EXIT_STATUSES} (Ctrl-C).",
    )
    parser.add_argument("--version", action="version", version=f"lldsched {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="the scheduler's behaviour in eleven lines",
        description="The scheduler's behaviour in eleven lines, on a fake clock.",
        epilog=examples(""),
    )
    demo.set_defaults(handler=_demo)
    cron = commands.add_parser(
        "cron",
        help="explain a cron expression and list its next fires",
        description="Explain a cron expression and list its next fires, with UTC alongside; "
        "with --crontab, every job of a crontab file, each with the lldsched call to write "
        "(status 1 if a line of it is bad).",
        epilog=examples(
            "'0 3 * * 1-5' --tz Europe/Berlin -n 2 --start 2026-03-27",
            "'*/15 * * * * *' -n 3",
            "@daily",
        ),
    )
    given = cron.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "expr",
        nargs="?",
        help='five fields, six with seconds first, or a macro: "0 3 * * 1-5", '
        '"*/15 * * * * *", @daily',
    )
    given.add_argument(
        "--crontab",
        metavar="FILE",
        help="read a crontab file (-: stdin) as cronie reads it, and give each job's "
        "explanation, fires and lldsched call, in --tz until a CRON_TZ line "
        "(default: none, read expr)",
    )
    cron.add_argument("--tz", help="IANA time zone (default: UTC)")  # None: not given
    cron.add_argument(
        "-n", type=int, default=5, help="how many fire times, 1 to 10,000 (default: 5)"
    )
    cron.add_argument(
        "--start",
        help="ISO date-time to list fires after, read in --tz without an offset (with "
        "--crontab: in each line's zone) (default: now)",
    )
    cron.add_argument(
        "--system",
        action="store_true",
        help="with --crontab: a system crontab (/etc/crontab, /etc/cron.d), a user name "
        "between the schedule and the command (default: a user's crontab, none)",
    )
    cron.set_defaults(handler=_cron)
    from lldsched.cli.simulate import add_parser as add_simulate

    add_simulate(commands)
    from lldsched.cli.lab import add_parser as add_lab

    add_lab(commands)
    from lldsched.cli.tasksparser import add_parser as add_tasks

    add_tasks(commands)
    for command in commands.choices.values():  # each command's --help says it too
        command.epilog = "\n\n".join(filter(None, [command.epilog, parser.epilog]))
        command.set_defaults(command_parser=command)  # main() refuses its extra arguments
    return parser


def _demo(args: argparse.Namespace) -> int:
    from lldsched.cli.demo import run_demo

    for line in run_demo():
        say(line)
    return 0


def _cron(args: argparse.Namespace) -> int:
    if args.crontab is not None:
        from lldsched.cli.crontab import run_crontab

        return run_crontab(args.crontab, tz=args.tz, n=args.n, start=args.start, system=args.system)
    if args.system:  # a single expression has no user field
        args.command_parser.error("argument --system: only with --crontab")
    from lldsched.cli.cron import run_cron

    return run_cron(args.expr, tz="UTC" if args.tz is None else args.tz, n=args.n, start=args.start)


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """While the command works, a SIGTERM or a SIGHUP raises :class:`Terminated` where it
    lands (the handler raises, as Python's own for SIGINT does), once: the first puts
    back the default action, so that a second ends the process at once.  Was: each
    ended the process where it stood, by its default action, so a ``simulate --gantt``
    stopped by ``systemctl stop``, ``docker stop`` or ``timeout`` left its
    ``.NAME.RANDOM.partial`` file behind, as a ``kill -9`` does, and the demo's and the
    lab's schedulers were not shut down.  A signal whose action is not the default
    (ignored under ``nohup``, or a program's own handler when it calls :func:`main`) is
    left to it, and so is every signal off the main thread (where Python cannot set a
    handler); the handlers in place before are put back at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken: dict[int, Any] = {}

    def stop(signum: int, frame: object) -> None:
        for number in taken:  # once: a second signal takes its default action
            signal.signal(number, signal.SIG_DFL)
        raise Terminated(signum)

    try:
        for name in STOP_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None and signal.getsignal(number) is signal.SIG_DFL:
                taken[number] = signal.signal(number, stop)
        yield
    finally:
        for number, before in taken.items():
            signal.signal(number, before)


def _end_by(signum: int) -> int:
    """End the process by ``signum``, its default action put back: a shell reads 128 +
    the signal (143 for SIGTERM) as for any command that signal ended, and systemd
    counts an end by SIGTERM or SIGHUP a clean stop (an exit status of 143 is a failed
    unit to it, unless ``SuccessExitStatus=143``).  In a program that called
    :func:`main` itself (not the command line's own process), or where the signal does
    not end the process (PID 1, which the kernel gives no default action), this returns
    128 + the signal, the status for the program to pass on."""
    if startup.COMMAND_LINE:
        _flush_or_drop(sys.stdout)
        _flush_or_drop(sys.stderr)
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)
    return 128 + signum


def main(argv: Sequence[str] | None = None, *, prog: str = "lldsched") -> int:
    """Run the command ``argv`` names (default: the process's arguments).

    ``prog`` names the command in usage and error lines: ``lldsched``, the script
    installed by pip, calls this as it is; ``python -m lldsched`` passes its own name.
    """
    try:
        args, extra = build_parser(prog).parse_known_args(argv)
        if extra:  # the command's usage, not the top level's (was argparse's own refusal)
            args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
        with _stopped_by_signals():
            status = int(args.handler(args))
        _on_stdout(lambda stream: stream.flush())  # a pipe closed early fails here
        return status
    except BrokenPipeError:  # `python -m lldsched demo | head -3`: the reader left early
        _write_nowhere(sys.stdout)
        return 0
    except OutputFailed as exc:  # `> /dev/full`, `>&-`: the output is lost
        _write_nowhere(sys.stdout)
        return to_stderr(f"error: cannot write the output: {exc}", FAILED)
    except KeyboardInterrupt:  # Ctrl-C: the user asked to stop; a traceback tells them nothing
        # The commands' schedulers stopped on the way out (``with``); what is printed stays.
        return to_stderr(INTERRUPTED_LINE, INTERRUPTED)
    except Terminated as exc:  # SIGTERM, SIGHUP: stopped as for Ctrl-C, then ended by it
        return _end_by(to_stderr(TERMINATED_LINE, exc.signum))
