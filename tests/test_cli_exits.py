"""How every command of ``python -m lldsched`` ends: 0 when it did its work, 2 for bad
arguments (one ``error:`` line naming the value), 1 when the work failed after it began,
130 on Ctrl-C; never a traceback (docs/decisions/command-line.md, "The command line")."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import io
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import pytest

from lldsched import errors
from lldsched.cli import build_parser, main, write_whole
from lldsched.cli import cron as cron_cli
from lldsched.cli import demo as demo_cli
from lldsched.cli import lab as lab_cli
from lldsched.cli import simulate as simulate_cli
from lldsched.sim import scenario


def interrupt(*args: object, **kwargs: object) -> NoReturn:
    raise KeyboardInterrupt


def unreached(*args: object, **kwargs: object) -> NoReturn:
    raise AssertionError("simulated before the arguments were checked")


@pytest.mark.parametrize(
    ("argv", "module", "name"),
    [
        (["demo"], demo_cli, "run_demo"),
        (["cron", "* * * * *"], cron_cli, "cron_report"),
        (["simulate", "--days", "0.01"], scenario, "build_scenario"),
        (["lab", "push"], lab_cli, "decision"),
    ],
)
def test_ctrl_c_in_any_command_exits_130_with_one_line_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    module: object,
    name: str,
) -> None:
    monkeypatch.setattr(module, name, interrupt)
    try:
        status = main(argv)
    except KeyboardInterrupt:  # escaping, it would stop the test session itself
        pytest.fail(f"{argv}: KeyboardInterrupt escaped main()")
    assert status == 130
    assert capsys.readouterr() == ("", "interrupted\n")


# A real SIGINT, raised in the command's process where it is busy: the demo inside its
# threaded scheduler (whose threads must let the process end), the simulation inside its
# loop.  signal.raise_signal delivers it at once: no sleep, no race.
SIGINT_AT = {
    "demo": "from lldsched.clock import FakeClock as patched\n"
    "original = patched.advance\n"
    "def advance(self, seconds):\n"
    "    signal.raise_signal(signal.SIGINT)\n"
    "    return original(self, seconds)\n"
    "patched.advance = advance\n",
    "simulate": "from lldsched.sim.simulation import Simulation as patched\n"
    "original = patched.run_for\n"
    "def run_for(self, seconds):\n"
    "    signal.raise_signal(signal.SIGINT)\n"
    "    return original(self, seconds)\n"
    "patched.run_for = run_for\n",
}


@pytest.mark.parametrize("command", sorted(SIGINT_AT))
def test_a_real_sigint_ends_the_process_with_130_and_no_traceback(command: str) -> None:
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive shell\n"
        + SIGINT_AT[command]
        + "from lldsched.cli import main\n"
        f"sys.exit(main([{command!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr) == (130, "interrupted\n")


# A real SIGINT while the command line starts, before main() can catch anything: a
# sitecustomize raises it as the interpreter looks for a module (the import system asks
# each finder on sys.meta_path, this one first), so it lands inside that import.  Each
# name of ``at`` is one Ctrl-C, in turn, once ``after`` was looked for; "*" is whatever
# module is looked for next.
INTERRUPTS_AT_IMPORT = """\
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive shell
for name in {evict!r}:  # not imported yet, as at a bare interpreter's start
    sys.modules.pop(name, None)


class Interrupts:
    after, at = {after!r}, {at!r}

    def find_spec(self, name, path=None, target=None):
        if self.after is not None:
            self.after = None if name == self.after else self.after
        elif self.at and self.at[0] in (name, "*"):
            del self.at[0]
            signal.raise_signal(signal.SIGINT)
        return None


sys.meta_path.insert(0, Interrupts())
"""

# The script pip installs for [project.scripts] (its first line names the interpreter).
SCRIPT = """\
import sys
from lldsched.cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""


ROOT = Path(__file__).resolve().parent.parent

ENTRY_POINTS = ["-m", "-m lldsched.__main__", "script"]
"""The ways the command line starts: ``python -m lldsched``, ``python -m
lldsched.__main__`` (the module the first runs) and the ``lldsched`` script."""


def entry_point(tmp_path: Path, how: str) -> list[str]:
    """The command line started ``how``: ``-m`` (or an interpreter's option run into it)
    of ``lldsched``, ``-m`` and another module, or ``script``."""
    if how == "script":
        (tmp_path / "lldsched").write_text(SCRIPT)
        return [sys.executable, str(tmp_path / "lldsched")]
    option, _, module = how.partition(" ")
    return [sys.executable, option, module or "lldsched"]


def start(
    tmp_path: Path, how: str, sitecustomize: str = "", **options: Any
) -> subprocess.CompletedProcess[str]:
    """``demo`` run ``how`` (:func:`entry_point`), ``sitecustomize`` run first."""
    (tmp_path / "sitecustomize.py").write_text(sitecustomize)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run(
        [*entry_point(tmp_path, how), "demo"],
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
        env=env,
        **options,
    )


def start_interrupted(
    tmp_path: Path,
    how: str,
    at: list[str],
    after: str | None = None,
    evict: tuple[str, ...] = (),
    then: str = "",
) -> subprocess.CompletedProcess[str]:
    """``demo`` run ``how`` (:func:`entry_point`), a Ctrl-C raised at each import ``at``
    names once the import of ``after`` began, ``evict`` unloaded first, ``then`` run at
    the end of the sitecustomize."""
    sitecustomize = INTERRUPTS_AT_IMPORT.format(after=after, at=at, evict=evict) + then
    return start(tmp_path, how, sitecustomize, capture_output=True)


@pytest.mark.parametrize(
    ("how", "module"),
    [
        ("-m", "lldsched.schedules"),  # amid the package's imports, before any command's code
        ("-m", "lldsched.threaded"),  # the package's last
        ("-m", "lldsched.__main__"),  # the package imported, `python -m`'s module not yet
        ("-Bm", "lldsched.core"),  # an interpreter's option run into -m
        ("script", "lldsched.schedules"),  # the `lldsched` script
    ],
)
def test_a_sigint_while_the_command_line_imports_ends_it_as_a_later_one_does(
    tmp_path: Path, how: str, module: str
) -> None:
    """Was: KeyboardInterrupt's traceback from inside the import, and the process ended
    by the signal (docs/decisions/command-line.md, "The command line")."""
    result = start_interrupted(tmp_path, how, [module])
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "interrupted\n")


@pytest.mark.parametrize("how", ["-m", "script"])
def test_a_sigint_at_the_first_import_lldsched_startup_makes_ends_it_as_a_later_one_does(
    tmp_path: Path, how: str
) -> None:
    """The hook is in place before ``lldsched.startup`` imports anything a bare
    interpreter has not (the script's ``import re`` loads neither ``__future__`` nor
    ``contextlib``).  Was: the hook set on startup's last line, after ``from __future__``,
    ``contextlib`` and ``types``: a Ctrl-C there was a traceback, the process ended by
    the signal (-2)."""
    evict = ("__future__", "contextlib")
    result = start_interrupted(tmp_path, how, ["*"], "lldsched.startup", evict)
    assert (result.returncode, result.stdout, result.stderr) == (
        130,
        "",
        "interrupted\n",
    ), result.stderr


@pytest.mark.parametrize("how", ["-m", "script"])
def test_a_second_sigint_while_the_first_ends_the_command_line_changes_nothing(
    tmp_path: Path, how: str
) -> None:
    """A Ctrl-C pressed twice: the second lands at the next import after the first.
    Was: the hook imported ``lldsched.cli`` to print its line, which imported the whole
    package again (the first interrupt had unloaded it, 125 ms); the second Ctrl-C
    landed there: 'Error in sys.excepthook', two tracebacks, status 1."""
    result = start_interrupted(tmp_path, how, ["lldsched.schedules", "*"])
    assert (result.returncode, result.stdout, result.stderr) == (
        130,
        "",
        "interrupted\n",
    ), result.stderr


def test_a_program_that_imports_lldsched_keeps_its_own_excepthook() -> None:
    """Only the command line's process ends an uncaught Ctrl-C so
    (``lldsched.startup``): a program's, or ``python -m`` of another module, is
    Python's own, as is any other exception there."""
    from lldsched import startup
    from lldsched.startup import started_as_the_command_line as command_line

    assert sys.excepthook is sys.__excepthook__  # (this process is pytest)
    assert sys.unraisablehook is not startup._interrupted_unraisable  # (pytest's own)
    python = sys.executable
    assert command_line(["-m"], [python, "-m", "lldsched", "demo"])
    assert command_line(["-m"], [python, "-X", "importtime", "-mlldsched"])
    assert command_line(["-m"], [python, "-BIm", "lldsched"])
    assert command_line(["-m"], [python, "-m", "lldsched.__main__", "demo"])
    assert command_line(["/venv/bin/lldsched", "demo"], [python, "/venv/bin/lldsched"])
    assert command_line(["/venv/Scripts/lldsched.exe"], ["/venv/Scripts/lldsched.exe"])
    assert not command_line(["-m"], [python, "-m", "myapp"])  # myapp imports lldsched
    assert not command_line(["-m"], [python, "-m", "lldsched.sim"])
    assert not command_line(["-m"], [python, "-Xfrozen_modules=off", "-m", "pytest"])
    assert not command_line(["-c"], [python, "-c", "import lldsched"])
    assert not command_line(["app.py"], [python, "app.py"])
    assert not command_line([], [])


@pytest.mark.parametrize(
    ("tz", "start"),
    [
        ("UTC", "0001-01-01T00:00+01:00"),  # 0000-12-31 23:00 UTC
        ("Asia/Tokyo", "0001-01-01"),  # before year 1 in UTC
        ("UTC", "9999-12-31T23:00-05:00"),  # year 10000 in UTC
        ("America/New_York", "9999-12-31T23:00"),
        ("Asia/Tokyo", "9999-12-31T23:00+00:00"),  # year 10000 in Tokyo
    ],
)
def test_a_start_no_datetime_can_hold_is_refused_by_value(
    capsys: pytest.CaptureFixture[str], tz: str, start: str
) -> None:
    """Was: OverflowError's traceback, exit status 1."""
    assert main(["cron", "* * * * *", "--tz", tz, "--start", start]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"error: --start {start!r} is out of range: its instant must fall in the years "
        f"1 to 9999 both in UTC and in {tz}\n"
    )


@pytest.mark.parametrize(
    "case",
    [
        "a folder",
        "in a folder this user cannot write in",
        "a name too long",
        "a file read-only for this user",
        "a link to a file whose folder does not exist",
        "a loop of links",
    ],
)
def test_a_gantt_path_that_cannot_be_written_is_refused_before_simulating(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    """Was: the week simulated, then savefig's IsADirectoryError as the exit message.
    The permission bits are the operating system's to read (root passes them all):
    ``os.access`` answers for this user, here told to say no.  A name longer than the
    file system's (255 bytes here) was OSError's traceback, from the look for a folder.
    A file read-only for this user was refused by the write (open's PermissionError);
    the chart now replaces the file, which asks only the folder's leave, so it is
    asked first.  A link is followed (the chart replaces its file): one to a file in a
    folder that is gone, or a loop of links, was the week and then ENOENT or ELOOP,
    status 1."""
    path = tmp_path / "chart.png"
    if case == "a link to a file whose folder does not exist":
        path.symlink_to(tmp_path / "gone" / "chart.png")
        why = f"it links to {str(tmp_path / 'gone' / 'chart.png')!r}, whose folder does not exist"
    elif case == "a loop of links":
        path.symlink_to(path)
        why = f"cannot write it there: {os.strerror(errno.ELOOP)}"
    elif case == "a folder":
        path.mkdir()
        why = "that is a folder; name the file to write"
    elif case == "a name too long":
        path = tmp_path / ("chart" * 60 + ".png")
        why = f"cannot write it there: {os.strerror(errno.ENAMETOOLONG)}"
    elif case == "a file read-only for this user":
        path.write_bytes(b"the old chart")
        monkeypatch.setattr(os, "access", lambda name, *args, **kwargs: Path(name) != path)
        why = "the file is read-only for this user"
    else:
        monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
        why = f"cannot write in the folder {str(tmp_path)!r}"
    monkeypatch.setattr(scenario, "build_scenario", unreached)
    assert main(["simulate", "--gantt", str(path)]) == 2
    assert capsys.readouterr() == ("", f"error: --gantt {str(path)!r}: {why}\n")


def test_a_chart_that_cannot_be_written_is_an_error_line_and_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What only the write finds out (a full disk): the summary is printed, then one
    ``error:`` line, status 1.  Was: the bare message of SystemExit, without ``error:``."""
    from matplotlib.figure import Figure

    def full(self: Figure, *args: object, **kwargs: object) -> NoReturn:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    path = tmp_path / "chart.png"
    assert main(["simulate", "--days", "0.01", "--gantt", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith("dead letter:")
    assert err == (
        f"error: --gantt {str(path)!r}: cannot write it: [Errno 28] No space left on device\n"
    )


def test_the_help_says_what_each_exit_status_means() -> None:
    text = build_parser().format_help()
    assert "exit status: 0 done, 1 failed after it began, 2 bad arguments, 130 interrupted" in (
        " ".join(text.split())
    )


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        # Python 3.14's argparse writes the group --crontab FILE | expr last in the usage
        (["cron", "@daily", "--bogus"], "cron [-h] "),
        (["demo", "--bogus"], "demo [-h]"),
        (["lab", "push", "--bogus"], "lab [-h] [decision]"),
        (["simulate", "--bogus"], "simulate [-h] [--days DAYS]"),
    ],
    ids=["cron", "demo", "lab", "simulate"],
)
def test_an_unknown_option_of_a_command_is_refused_with_the_commands_usage(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    usage: str,
) -> None:
    """Was the top level's usage (``python -m lldsched [-h] {demo,cron,...}``) and
    ``python -m lldsched: error:``, as if the option were the command line's, not the
    command's: argparse leaves a subcommand's unknown arguments to its parent."""
    monkeypatch.setattr(scenario, "build_scenario", unreached)
    with pytest.raises(SystemExit) as exited:
        main(argv, prog="python -m lldsched")
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    assert err.startswith(f"usage: python -m lldsched {usage}")
    command = command_parsers(prog="python -m lldsched")[argv[0]]
    assert err == (
        command.format_usage()
        + f"python -m lldsched {argv[0]}: error: unrecognized arguments: --bogus\n"
    )


@pytest.mark.parametrize(
    ("argv", "prog", "near"),
    [
        (["simulte"], "python -m lldsched", "simulate"),
        (["Demo"], "python -m lldsched", "demo"),
        (["lab", "wheeel"], "python -m lldsched lab", "wheel"),
        # Another case alone: difflib found none near (each letter a change).
        (["lab", "PUSH"], "python -m lldsched lab", "push"),
        (["SIMULATE"], "python -m lldsched", "simulate"),
        (["tasks", "--status", "FAILED"], "python -m lldsched tasks", "failed"),
    ],
)
def test_a_mistyped_command_or_decision_is_refused_with_the_nearest(
    capsys: pytest.CaptureFixture[str], argv: list[str], prog: str, near: str
) -> None:
    """Was argparse's list of choices alone."""
    with pytest.raises(SystemExit) as exited:
        main(argv, prog="python -m lldsched")
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    assert f"{prog}: error: argument " in err and f"invalid choice: {argv[-1]!r} (choose" in err
    assert err.endswith(f"; did you mean {near!r}?\n")


def test_a_command_near_none_is_refused_with_the_choices_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["xyz"], prog="python -m lldsched")
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "python -m lldsched: error: argument command: invalid choice: 'xyz' "
        "(choose from 'demo', 'cron', 'simulate', 'lab', 'tasks')\n"
    )


def _newer_check_value(self: argparse.ArgumentParser, action: argparse.Action, value: Any) -> None:
    """The refusal of a choice as Python 3.15's argparse words it (its documented
    behaviour, written here: no such interpreter on this machine): the choices unquoted
    (3.14's too) and ``maybe you meant`` (its ``suggest_on_error``, on by default)."""
    if action.choices is None or value in action.choices:
        return
    near = difflib.get_close_matches(value, list(action.choices), 1)
    maybe = f", maybe you meant {near[0]!r}?" if near else ""
    listed = ", ".join(map(str, action.choices))
    raise argparse.ArgumentError(action, f"invalid choice: {value!r}{maybe} (choose from {listed})")


@pytest.mark.parametrize("argparse_of", ["this Python", "Python 3.15"])
@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["simulte"], "command: invalid choice: 'simulte' COMMANDS; did you mean 'simulate'?"),
        (["xyz"], "command: invalid choice: 'xyz' COMMANDS\n"),
        (["lab", "wheeel"], "decision: invalid choice: 'wheeel' (choose from 'wait', 'push', "),
    ],
    ids=["command", "near none", "lab decision"],
)
def test_a_bad_choice_is_refused_in_the_same_words_on_every_python(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argparse_of: str,
    argv: list[str],
    said: str,
) -> None:
    """Python 3.14's argparse lists the choices unquoted, and 3.15's says ``maybe you
    meant`` by default: the refusal was argparse's words there, and now reads the same
    on 3.11 to 3.15 (a near choice: one ``did you mean``, at the end)."""
    if argparse_of != "this Python":
        monkeypatch.setattr(argparse.ArgumentParser, "_check_value", _newer_check_value)
    with pytest.raises(SystemExit) as exited:
        main(argv, prog="python -m lldsched")
    err = capsys.readouterr().err
    commands = f"(choose from {', '.join(map(repr, command_parsers()))})"  # every command
    assert exited.value.code == 2
    assert f": error: argument {said.replace('COMMANDS', commands)}" in err
    assert "maybe you meant" not in err and err.count("did you mean") == (argv[0] != "xyz")


NINES = "9" * 5001  # past 4,300 digits: int() refuses it, and argparse quoted it whole
SIMULATE = "python -m lldsched simulate: error: "


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["simulate", "--workers", NINES], f"{SIMULATE}argument --workers: invalid int value: "),
        (["simulate", "--seed", NINES], f"{SIMULATE}argument --seed: invalid int value: "),
        (["simulate", "--days", f"x{NINES}"], f"{SIMULATE}argument --days: invalid float value: "),
        (
            ["cron", "@daily", "-n", NINES],
            "python -m lldsched cron: error: argument -n: invalid int value: ",
        ),
        (["simulate", NINES], f"{SIMULATE}unrecognized arguments: "),
        ([NINES], "python -m lldsched: error: argument command: invalid choice: "),
    ],
    ids=["workers", "seed", "days", "cron-n", "unrecognized", "command"],
)
def test_a_giant_argument_is_quoted_by_the_packages_one_rule(
    capsys: pytest.CaptureFixture[str], argv: list[str], refused: str
) -> None:
    """docs/decisions/checking-input.md, "A bad value is quoted by one rule": argparse quoted the
    argument whole, a line of 5 KB; its start now, and its length (``errors.shown``)."""
    with pytest.raises(SystemExit) as exited:
        main(argv, prog="python -m lldsched")
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    said = errors.shown(argv[-1])  # its start, and its length
    assert said.endswith(f"... ({len(argv[-1]):,} characters, cut)")
    assert err.splitlines()[-1].startswith(f"{refused}{said}")
    assert len(err) < 2 * len(said)  # its usage lines, and this line


def test_a_bad_argument_that_reads_whole_keeps_argparses_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--workers", "x"], prog="python -m lldsched")
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "python -m lldsched simulate: error: argument --workers: invalid int value: 'x'\n"
    )


def test_version_prints_the_packages_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version``, as a user tries first (was: ``the following arguments are required:
    command``, status 2)."""
    import lldsched

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert (exited.value.code, capsys.readouterr()) == (
        0,
        (f"lldsched {lldsched.__version__}\n", ""),
    )


@pytest.mark.parametrize("command", ["demo", "cron", "simulate", "lab"])
def test_each_commands_help_says_what_it_does(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Its usage, then a sentence (``demo --help`` and ``cron --help`` were the usage
    and their options alone)."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    paragraphs = capsys.readouterr().out.split("\n\n")
    assert paragraphs[0].startswith("usage:")
    assert not paragraphs[1].startswith(("options:", "positional arguments:")), paragraphs[1]


def help_of(command: str) -> str:
    with contextlib.redirect_stdout(io.StringIO()) as said, pytest.raises(SystemExit):
        main([command, "--help"], prog="python -m lldsched")
    return said.getvalue()


def help_examples() -> list[tuple[str, str]]:
    """(command, arguments) of every example every command's ``--help`` shows."""
    return [
        (command, line.strip().removeprefix("python -m lldsched "))
        for command in ("demo", "cron", "simulate", "lab")
        for line in help_of(command).split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    ]


@pytest.mark.parametrize(("command", "arguments"), help_examples())
def test_every_example_of_every_help_runs(
    command: str, arguments: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Each ``--help`` ends with examples (was: none), each written whole on its line,
    and each runs: status 0, output, nothing on stderr."""
    monkeypatch.chdir(tmp_path)  # simulate --gantt day.png writes here
    argv = shlex.split(arguments)
    assert argv[0] == command
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out and err == ""


def test_every_help_has_examples_and_says_every_options_default() -> None:
    commands = {command for command, _ in help_examples()}
    assert commands == {"demo", "cron", "simulate", "lab"}
    for command, command_parser in command_parsers().items():
        for action in command_parser._actions:
            if action.option_strings and action.dest != "help":
                assert "default" in (action.help or ""), f"{command} {action.option_strings}"


def test_a_year_before_1000_is_written_with_four_digits() -> None:
    """glibc's ``%Y`` writes year 1 as ``1``: the lines read ``1-01-04``, no date."""
    lines = cron_cli.cron_report("* * * * *", n=1, start="0001-01-01")
    assert lines[2:] == [
        "next fire time after 0001-01-01 00:00 UTC:",  # fires begin on 0001-01-04 (CRON.md)
        "  Thu 0001-01-04 00:00 UTC  = 0001-01-04 00:00 UTC",
    ]


# A child Python's stdout and stderr, buffered (Python's default) or not: a line a buffer
# kept after its write failed fails again at the interpreter's last flush ("Exception
# ignored", status 120), which PYTHONUNBUFFERED=1 hides (set here, and in many images).
BUFFERINGS = ["buffered", "unbuffered"]


def child_env(buffering: str) -> dict[str, str]:
    """This process's environment for a child Python, its streams ``buffering``."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    if buffering == "unbuffered":
        env["PYTHONUNBUFFERED"] = "1"
    return env


def main_with_closed(fd: int, argv: list[str], buffering: str) -> subprocess.CompletedProcess[str]:
    """``main(argv)`` in a child Python whose descriptor ``fd`` (1 or 2) was closed."""
    code = f"import os, sys\nos.close({fd})\nfrom lldsched.cli import main\n"
    code += f"sys.exit(main({argv!r}))\n"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(buffering),
        timeout=120,
        check=False,
    )


def run_into_a_closed_pipe(code: str, buffering: str) -> int:
    """The status of ``python -c code`` whose stdout and stderr are a pipe nobody reads
    (``2>&1 | head -0``): every write fails with BrokenPipeError."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-c", code],
            stdout=write_end,
            stderr=write_end,
            env=child_env(buffering),
            timeout=60,
        )
    finally:
        os.close(write_end)
    return result.returncode


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["cron", "bad"], 2),  # was 0: the error's BrokenPipeError read as a reader gone
        (["simulate", "--days", "0"], 2),  # was 0
        (["cron", "@daily", "-n", "1"], 0),
        (["lab", "nope"], 2),  # argparse's own error
    ],
)
@pytest.mark.parametrize("buffering", BUFFERINGS)
def test_the_status_survives_a_closed_pipe_on_stderr_too(
    argv: list[str], status: int, buffering: str
) -> None:
    """argparse's own error, buffered, was 120: the usage line it could not write stayed
    in stderr's buffer, and the interpreter's last flush failed."""
    code = f"import sys\nfrom lldsched.cli import main\nsys.exit(main({argv!r}))\n"
    assert run_into_a_closed_pipe(code, buffering) == status


@pytest.mark.parametrize("buffering", BUFFERINGS)
def test_ctrl_c_with_a_closed_pipe_on_stderr_is_still_130(buffering: str) -> None:
    code = (
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from lldsched.cli import cron\n"
        "def interrupted(*args, **kwargs):\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "cron.cron_report = interrupted\n"
        "from lldsched.cli import main\n"
        "sys.exit(main(['cron', '@daily']))\n"
    )
    assert run_into_a_closed_pipe(code, buffering) == 130  # was 1: printing 'interrupted' failed


def command_parsers(prog: str = "lldsched") -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by the command's name."""
    commands = next(
        action
        for action in build_parser(prog)._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    return dict(commands.choices)


def numeric_options() -> list[tuple[str, str]]:
    """Every (command, option) of the command line whose value is a number."""
    return [
        (command, action.option_strings[-1])
        for command, parser in command_parsers().items()
        for action in parser._actions
        if action.option_strings and action.type in (int, float)
    ]


ARGUMENTS_BEFORE = {"cron": ["@daily"]}  # what each command needs besides the option


@pytest.mark.parametrize("value", ["-1", "-inf", "-nan", "-1e3", "-1e-3", "-Infinity", "-1_0"])
@pytest.mark.parametrize(("command", "option"), numeric_options())
def test_a_negative_number_apart_from_its_option_is_its_value(
    command: str, option: str, value: str
) -> None:
    """``--days -inf`` as ``--days=-inf``: the option's value, which the command refuses
    by name (was: argparse took ``-inf``, ``-nan`` and ``-1e3`` for options, ``expected
    one argument``, and a plain ``-1`` alone for a value)."""
    parser = build_parser()
    before = ARGUMENTS_BEFORE.get(command, [])
    joined = [command, *before, f"{option}={value}"]
    apart = [command, *before, option, value]
    with contextlib.redirect_stderr(io.StringIO()) as said_joined:
        try:
            expected: object = parser.parse_args(joined)
        except SystemExit as exited:  # an int option's -1e3: refused as that int's value
            expected = exited.code
    with contextlib.redirect_stderr(io.StringIO()) as said_apart:
        try:
            given: object = parser.parse_args(apart)
        except SystemExit as exited:
            given = exited.code
    # repr: nan is not equal to itself
    assert (repr(given), said_apart.getvalue()) == (repr(expected), said_joined.getvalue())
    assert "expected one argument" not in said_apart.getvalue()


def test_numeric_options_are_found_in_every_command_that_has_them() -> None:
    assert set(numeric_options()) == {
        ("cron", "-n"),
        ("simulate", "--days"),
        ("simulate", "--workers"),
        ("simulate", "--max-coroutines"),
        ("simulate", "--seed"),
        ("tasks", "--records"),
    }


@pytest.mark.parametrize("value", ["-inf", "-1e-3", "-nan"])
def test_simulate_days_apart_from_a_negative_value_is_refused_by_that_value(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """The brief's case: ``simulate --days -inf`` says what ``--days=-inf`` says."""
    assert main(["simulate", "--days", value]) == 2
    shown = f"{float(value):g}".lstrip("-") if value == "-nan" else f"{float(value):g}"
    assert capsys.readouterr() == ("", f"error: --days must be finite and > 0, got {shown}\n")


def test_an_option_is_still_an_option_after_an_option_that_wants_a_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only a number is taken for a value: ``--days --seed 3`` is still refused."""
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--days", "--seed", "3"])
    assert exited.value.code == 2
    assert "argument --days: expected one argument" in capsys.readouterr().err


def test_each_bound_simulate_refuses_is_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    """--help says what is refused: --workers said no bound, and 100,001 was an error."""
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "virtual workers, 1 to 100,000 (default 4)" in text
    assert f"above 0 and at most {simulate_cli.MAX_DAYS}" in text
    assert main(["simulate", "--workers", "100001"]) == 2


@pytest.mark.parametrize("buffering", BUFFERINGS)
@pytest.mark.parametrize(
    "argv", [["demo"], ["cron", "@daily"], ["simulate", "--days", "0.01"], ["lab"]]
)
def test_a_stdout_that_cannot_be_written_is_an_error_line_and_status_1(
    argv: list[str], buffering: str
) -> None:
    """A stdout that refuses the output (here its descriptor closed; a full disk,
    ``> /dev/full``, is the same OSError) is work that failed after it began: one
    ``error:`` line, status 1.  Was: OSError's traceback from the command's print.
    (The interpreter's own last flush fails too unless stdout is pointed elsewhere:
    'Exception ignored', status 120; buffered, it was, for /dev/null opened as the
    closed descriptor 1, and the pointing closed it again.)"""
    result = main_with_closed(1, argv, buffering)
    assert (result.returncode, result.stderr) == (
        1,
        f"error: cannot write the output: [Errno {errno.EBADF}] {os.strerror(errno.EBADF)}\n",
    )


def test_a_command_started_with_stdout_closed_says_so_with_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lldsched cron @daily >&-``: Python gives a closed stdout as ``sys.stdout = None``.
    Was: the lines dropped by print, then AttributeError's traceback from the flush."""
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["cron", "@daily"]) == 1
    assert capsys.readouterr().err == "error: cannot write the output: stdout is closed\n"


def test_a_refusal_with_stderr_closed_prints_nothing_on_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lldsched cron bad 2>&-`` (``sys.stderr = None``): the line is lost, the status
    kept, and stdout stays the output's.  Was: ``print(file=None)`` wrote the error line
    on stdout, into whatever reads the output."""
    monkeypatch.setattr(sys, "stderr", None)
    assert main(["cron", "bad"]) == 2
    assert capsys.readouterr().out == ""


def test_a_line_stdout_cannot_encode_is_printed_with_escapes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A path (or an expression) echoed back with a character stdout's encoding has not
    (``PYTHONIOENCODING=ascii``; a file name's undecodable byte, a surrogate, under a
    strict UTF-8 stdout) is printed with that character escaped, as Python's stderr
    does.  Was: UnicodeEncodeError's traceback, after the chart was written."""
    output = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(output, encoding="ascii"))
    path = tmp_path / "caf\N{LATIN SMALL LETTER E WITH ACUTE}.png"
    assert main(["simulate", "--days", "0.01", "--gantt", str(path)]) == 0
    escaped = str(path).replace("\N{LATIN SMALL LETTER E WITH ACUTE}", "\\xe9")
    assert output.getvalue().decode("ascii").splitlines()[-1] == f"gantt chart: {escaped}"


# A Ctrl-C raised where Python cannot raise it on: in a finalizer (here as the package
# imports ``lldsched.sim``, an object whose __del__ is interrupted is dropped), or in an
# atexit callback once main() returned (this one, registered first, runs last).
UNRAISABLE = {
    "a finalizer": """
class Finalized:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)


class Drops:
    def find_spec(self, name, path=None, target=None):
        if name == "lldsched.schedules":
            sys.meta_path.remove(self)
            Finalized()
        return None


sys.meta_path.insert(0, Drops())
""",
    "an atexit callback": """
import atexit
atexit.register(signal.raise_signal, signal.SIGINT)
""",
}


@pytest.mark.parametrize("where", sorted(UNRAISABLE))
def test_a_sigint_python_cannot_raise_on_ends_the_command_line_as_any_other(
    tmp_path: Path, where: str
) -> None:
    """Was: 'Exception ignored in ...' and KeyboardInterrupt's traceback; the Ctrl-C
    lost: the demo ran on, status 0."""
    result = start_interrupted(tmp_path, "-m", [], then=UNRAISABLE[where])
    demo = "".join(line + "\n" for line in demo_cli.run_demo())
    printed = demo if where == "an atexit callback" else ""
    assert (result.returncode, result.stdout, result.stderr) == (
        130,
        printed,
        "interrupted\n",
    ), result.stderr


@pytest.mark.parametrize("buffering", BUFFERINGS)
@pytest.mark.parametrize(("argv", "status"), [(["cron", "bad"], 2), (["cron", "@daily"], 0)])
def test_a_stderr_that_cannot_be_written_keeps_the_status(
    argv: list[str], status: int, buffering: str
) -> None:
    """A stderr that refuses the line (here its descriptor closed; ``2> /dev/full`` is
    the same OSError) loses the line, not the status, as a stderr nobody reads does.
    Was: 1, the OSError raised out of main(); buffered, 120 (/dev/null, opened as the
    closed descriptor 2, was closed again)."""
    assert main_with_closed(2, argv, buffering).returncode == status


# Every way the command line starts ends the same way.  Was: ``python -m
# lldsched.__main__`` (the module ``python -m lldsched`` runs) got none of
# lldsched.startup's hooks, which knew ``-m lldsched`` alone: a Ctrl-C while it imported
# was KeyboardInterrupt's traceback and an end by the signal, one in an atexit callback
# 'Exception ignored' and status 0.
@pytest.mark.parametrize(
    "module",
    [
        "lldsched.schedules",  # while the package imports, before main()
        "lldsched.cli.demo",  # in main(), as the command's module is imported
    ],
)
@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_every_entry_point_ends_a_sigint_with_130(tmp_path: Path, how: str, module: str) -> None:
    result = start_interrupted(tmp_path, how, [module])
    assert (result.returncode, result.stdout, result.stderr) == (
        130,
        "",
        "interrupted\n",
    ), result.stderr


@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_every_entry_point_ends_a_sigint_in_an_atexit_callback_with_130(
    tmp_path: Path, how: str
) -> None:
    result = start_interrupted(tmp_path, how, [], then=UNRAISABLE["an atexit callback"])
    demo = "".join(line + "\n" for line in demo_cli.run_demo())
    assert (result.returncode, result.stdout, result.stderr) == (
        130,
        demo,
        "interrupted\n",
    ), result.stderr


@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_every_entry_point_exits_0_when_the_reader_of_its_output_left(
    tmp_path: Path, how: str
) -> None:
    """``demo | head -0``: a stdout nobody reads is not an error, and says nothing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = start(tmp_path, how, stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("path", ["lldsched/__main__.py", "lldsched"])
def test_the_command_line_run_by_the_path_of_its_file_is_refused_in_one_line(path: str) -> None:
    """``python lldsched/__main__.py`` (or the package's folder) puts ``lldsched/`` itself
    on sys.path and imports whichever lldsched sys.path finds: refused, status 2, before
    the package is imported.  Was: the command ran (the folder's form with the hooks,
    the file's without), or, with no lldsched installed, ModuleNotFoundError's
    traceback."""
    result = subprocess.run(
        [sys.executable, path, "demo"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "error: run the command line as 'python -m lldsched' or the 'lldsched' script, "
        f"not by the path of its file ({path!r})\n",
    )


# A chart is written whole or not at all (lldsched.cli.write_whole): the old file, or
# none, when the write stops halfway.  Was: savefig wrote the target itself, and a
# Ctrl-C, a kill or an error halfway left a chart cut short where the old one had been.
def halfway(stop: BaseException) -> Callable[..., NoReturn]:
    """A ``Figure.savefig`` that writes part of a chart, into the path or the stream it
    is given, and then raises ``stop``."""

    def savefig(self: object, fname: Any, *args: object, **kwargs: object) -> NoReturn:
        with contextlib.ExitStack() as stack:
            if isinstance(fname, (str, os.PathLike)):  # main's way: the target itself
                fname = stack.enter_context(open(fname, "wb"))
            fname.write(b"\x89PNG\r\n\x1a\nhalf a chart")
            fname.flush()
            raise stop

    return savefig


@pytest.mark.parametrize("old", [None, b"the old chart"], ids=["no old file", "an old file"])
@pytest.mark.parametrize(
    ("stop", "status", "why"),
    [
        (KeyboardInterrupt(), 130, "interrupted"),
        (
            OSError(errno.ENOSPC, "No space left on device"),
            1,
            "error: --gantt {path!r}: cannot write it: [Errno 28] No space left on device",
        ),
    ],
    ids=["Ctrl-C", "a full disk"],
)
def test_a_chart_stopped_halfway_leaves_the_old_file_and_no_part(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    old: bytes | None,
    stop: BaseException,
    status: int,
    why: str,
) -> None:
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", halfway(stop))
    path = tmp_path / "chart.png"
    if old is not None:
        path.write_bytes(old)
    assert main(["simulate", "--days", "0.01", "--gantt", str(path)]) == status
    assert capsys.readouterr().err == why.format(path=str(path)) + "\n"
    assert os.listdir(tmp_path) == ([] if old is None else ["chart.png"])
    assert old is None or path.read_bytes() == old


# The chart's writer stops halfway, its part flushed, and waits for a signal the test
# sends: SIGINT ends the wait with KeyboardInterrupt (or at once after it, when the
# signal came first: the wakeup fd holds its byte), SIGKILL ends the process.
CHART_HALFWAY = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive shell
woken, wake = os.pipe()
os.set_blocking(wake, False)
signal.set_wakeup_fd(wake)
from matplotlib.figure import Figure


def savefig(self, fname, *args, **kwargs):
    stream = open(fname, "wb") if isinstance(fname, str) else fname
    stream.write(b"half a chart")
    stream.flush()
    print("half written", flush=True)
    os.read(woken, 1)
    raise AssertionError("no signal came")


Figure.savefig = savefig
from lldsched.cli import main
sys.exit(main(["simulate", "--days", "0.01", "--gantt", sys.argv[1]]))
"""


def chart_halfway(
    code: str, path: Path, sent: list[signal.Signals]
) -> tuple[subprocess.Popen[str], str]:
    """Run ``code`` (:data:`CHART_HALFWAY`'s) on ``path``, send each of ``sent`` in turn
    once the chart is half written; the child, ended, and its stderr."""
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line == "half written\n":
                break
        for signum in sent:
            child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:  # a test that failed above: this child, no other
            child.kill()
            child.wait()
    return child, err


@pytest.mark.parametrize(
    "sent",
    [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"],
)
def test_a_signal_halfway_through_a_chart_leaves_the_old_file(
    tmp_path: Path, sent: signal.Signals
) -> None:
    """SIGKILL leaves its part behind (nothing runs to remove it), named after the chart
    and hidden; the chart is the old one all the same.  SIGTERM and SIGHUP remove it, as
    Ctrl-C does (was: their default action ended the process where it stood, and left
    the part as SIGKILL does); this process is not the command line's own (``-c``), so
    main() returns 128 + the signal, for the program to pass on."""
    path = tmp_path / "chart.png"
    path.write_bytes(b"the old chart")
    child, err = chart_halfway(CHART_HALFWAY, path, [sent])
    assert path.read_bytes() == b"the old chart"
    left = sorted(set(os.listdir(tmp_path)) - {"chart.png"})
    if sent == signal.SIGINT:
        assert (child.returncode, err, left) == (130, "interrupted\n", [])
    elif sent != signal.SIGKILL:
        assert (child.returncode, err, left) == (128 + sent, "terminated\n", [])
    else:
        assert child.returncode == -signal.SIGKILL
        assert len(left) == 1 and re.fullmatch(r"\.chart\.png\.[0-9a-f]{8}\.partial", left[0])


def test_a_sighup_nohup_ignores_stays_ignored(tmp_path: Path) -> None:
    """Under ``nohup`` SIGHUP is ignored, and main() leaves it so: the chart's writer
    waits on, and the Ctrl-C sent after it is what ends the command."""
    path = tmp_path / "chart.png"
    code = "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + CHART_HALFWAY
    # the SIGHUP is discarded as it is sent (ignored); the SIGINT then ends the command
    child, err = chart_halfway(code, path, [signal.SIGHUP, signal.SIGINT])
    assert (child.returncode, err, os.listdir(tmp_path)) == (130, "interrupted\n", [])


def test_a_sigterm_in_a_command_raises_once_and_the_handlers_are_put_back() -> None:
    """The first SIGTERM raises Terminated and puts the default action back, so that a
    second ends the process at once; the handler in place before is back at the end."""
    from lldsched.cli import Terminated, _stopped_by_signals

    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(Terminated) as raised, _stopped_by_signals():
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, before)
            signal.raise_signal(signal.SIGTERM)
        assert raised.value.signum == signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_handler_a_program_set_is_left_to_handle_the_signal() -> None:
    """A program that calls main() with a SIGTERM handler of its own keeps it."""
    from lldsched.cli import _stopped_by_signals

    seen: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with _stopped_by_signals():
            signal.raise_signal(signal.SIGTERM)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


# A SIGTERM raised as the interpreter looks for a module (the sitecustomize's finder,
# first on sys.meta_path), once: while the package imports, before main(), and in
# main(), as the demo's module is imported.
TERMINATES_AT_IMPORT = """\
import signal, sys


class Terminates:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            signal.raise_signal(signal.{sent})
        return None


sys.meta_path.insert(0, Terminates())
"""


@pytest.mark.parametrize("sent", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize(
    ("module", "said"),
    [("lldsched.schedules", ""), ("lldsched.cli.demo", "terminated\n")],
    ids=["before main()", "in main()"],
)
@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_the_command_line_ends_by_a_sigterm_or_a_sighup_after_stopping(
    tmp_path: Path, how: str, module: str, said: str, sent: str
) -> None:
    """The command line's own process ends by the signal, as it does before main() (its
    default action): a shell reads 143 (129), and systemd a clean stop, where an exit
    status of 143 is a failed unit.  In main() it stops first, as for a Ctrl-C, and says
    ``terminated``.  Was: ended by it at once, wherever it was, without a word."""
    sitecustomize = TERMINATES_AT_IMPORT.format(module=module, sent=sent)
    result = start(tmp_path, how, sitecustomize, capture_output=True)
    assert (result.returncode, result.stdout, result.stderr) == (
        -getattr(signal, sent),
        "",
        said,
    ), result.stderr


@pytest.mark.parametrize(
    ("old", "new"),
    [(0o640, 0o640), (0o4750, 0o750)],  # not set-user-ID: the new file is this user's
    ids=["rw-r-----", "rwsr-x---"],
)
def test_a_file_written_whole_replaces_the_old_one_and_keeps_its_permissions(
    tmp_path: Path, old: int, new: int
) -> None:
    path = tmp_path / "out.svg"
    path.write_bytes(b"old")
    path.chmod(old)
    write_whole(str(path), lambda stream: stream.write(b"new"))
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == (b"new", new)
    assert os.listdir(tmp_path) == ["out.svg"]


def test_a_file_written_whole_through_a_link_replaces_the_file_the_link_names(
    tmp_path: Path,
) -> None:
    """``latest.png -> charts/monday.png``: the link stays a link, as writing through it
    left it (os.replace on the link itself would have put a file in its place)."""
    (tmp_path / "charts").mkdir()
    chart = tmp_path / "charts" / "monday.png"
    chart.write_bytes(b"old")
    link = tmp_path / "latest.png"
    link.symlink_to(chart)
    write_whole(str(link), lambda stream: stream.write(b"new"))
    assert (link.is_symlink(), chart.read_bytes()) == (True, b"new")
    assert os.listdir(tmp_path / "charts") == ["monday.png"]


def test_a_writer_that_fails_halfway_leaves_the_old_file_and_its_error(tmp_path: Path) -> None:
    """Any error, not only an OSError or a Ctrl-C: the part goes, the error is raised."""
    path = tmp_path / "out.pdf"
    path.write_bytes(b"old")

    def fails(stream: BinaryIO) -> None:
        stream.write(b"half")
        raise ValueError("the figure cannot be drawn")

    with pytest.raises(ValueError, match="the figure cannot be drawn"):
        write_whole(str(path), fails)
    assert (path.read_bytes(), os.listdir(tmp_path)) == (b"old", ["out.pdf"])


@pytest.mark.parametrize("command", ["cron", "demo", "lab", "simulate"])
def test_a_command_module_run_with_dash_m_names_the_command_lines_way(command: str) -> None:
    """``python -m lldsched.cli.cron '0 3 * * *'``: was the module's definitions run, the
    command not, and status 0 without a word."""
    result = subprocess.run(
        [sys.executable, "-m", f"lldsched.cli.{command}", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        f"error: run the command as 'python -m lldsched {command}' or 'lldsched {command}'; "
        f"lldsched.cli.{command} is a module of it\n",
    )


def test_a_chart_the_file_system_refuses_is_named_as_the_user_named_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The error line names the ``--gantt`` path and the reason, not the partial file the
    refusal came from (``os.replace``'s OSError names both of its files)."""

    def read_only(source: str, target: str) -> NoReturn:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), source, None, target)

    monkeypatch.setattr(os, "replace", read_only)
    path = tmp_path / "chart.png"
    path.write_bytes(b"the old chart")
    assert main(["simulate", "--days", "0.01", "--gantt", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"error: --gantt {str(path)!r}: cannot write it: "
        f"[Errno {errno.EROFS}] {os.strerror(errno.EROFS)}\n"
    )
    assert (path.read_bytes(), os.listdir(tmp_path)) == (b"the old chart", ["chart.png"])


def test_a_file_this_user_may_not_write_is_not_replaced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A rename asks only the folder's leave: the file's own is asked first, as ``open``
    asked it (``os.access`` answers for this user; root passes every bit, so it is told
    to say no for the file)."""
    path = tmp_path / "out.png"
    path.write_bytes(b"old")
    monkeypatch.setattr(os, "access", lambda name, *args, **kwargs: Path(name) != path)
    with pytest.raises(PermissionError, match="the file is read-only for this user"):
        write_whole(str(path), lambda stream: stream.write(b"new"))
    assert (path.read_bytes(), os.listdir(tmp_path)) == (b"old", ["out.png"])
