"""The shell commands the documents show exist as written (``tests/test_docs.py`` runs
their Python blocks; this file reads the rest).

Commands are read from README.md, docs/*.md and the notebooks' markdown
(``notebooks/src/*.py`` comments): each line of a code block that is not Python, and
each inline code span, that starts a command. Then:

* ``python -m lldsched ...`` (and the ``lldsched`` script): the subcommand and every
  option exist in the CLI's own parser. A command written out in full parses; a
  ``cron`` one also runs (it prints in milliseconds) and a ``simulate`` one passes the
  checks it makes before simulating (:func:`lldsched.cli.simulate.refusal`), without
  simulating. A mention (``python -m lldsched lab <decision>``, ``cron -n``) is held
  to its names only;
* ``benchmarks/*.py``, ``tools/*.py``, ``docs/img/*.py`` and ``python -m tests.<module>``
  (also the usage lines of the benchmarks' and tools' docstrings): the script exists,
  each option it is given is a string its source spells (so a renamed flag fails here),
  and each path it is given exists;
* ``make <target> [VAR=value]``: the Makefile has the target and the variable;
* each ``LLDSCHED_*`` environment variable named is read by the tests or the package.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lldsched.cli import build_parser, main
from lldsched.cli.simulate import refusal

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "notebooks" / "src").glob("*.py")),
]
# Scripts whose module docstring shows how to call them.
SCRIPTS = [*sorted((ROOT / "benchmarks").glob("*.py")), *sorted((ROOT / "tools").glob("*.py"))]

# Where a command starts: an interpreter (a venv's, or python on PATH) or the script,
# make, or a script path on its own (``startup.py --no-callgrind``).
START = re.compile(
    r"(?:^|(?<=[\s`(]))(?:[A-Z_]+=\S*\s+)*"
    r"(?:(?:\S*/)?python3?\s|lldsched\s+(?=demo|cron|simulate|lab)|make(?:\s|$)"
    r"|(?:benchmarks/|tools/)?\w+\.py\s)"
)
SHELL_BREAKS = {"|", "||", "&&", ";", ">", "2>", ">>"}


@dataclass(frozen=True)
class Command:
    where: str  # document:line
    text: str
    written_out: bool  # a line of a code block (run as it stands), not a mention in prose

    def words(self) -> list[str]:
        words = shlex.split(self.text, comments=True)
        for at, word in enumerate(words):
            if word in SHELL_BREAKS:
                return words[:at]
        return words


def code_lines(block: str) -> Iterator[tuple[int, str]]:
    """The lines of a shell block (a ``\\`` continuation joined), with their offsets."""
    pending, first = "", 0
    for offset, line in enumerate(block.splitlines()):
        if not pending:
            first = offset
        line = line.removeprefix("$ ")
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield first, pending + line
        pending = ""


def commands_in_markdown(text: str, name: str) -> Iterator[Command]:
    def line_of(at: int) -> str:  # the blocks blanked out of the prose keep their lines
        return f"{name}:{text[:at].count(chr(10)) + 1}"

    fences = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
    for fence in fences.finditer(text):
        if fence.group(1) in ("", "sh", "bash", "console", "shell"):
            for offset, line in code_lines(fence.group(2)):
                if (start := START.match(line.strip())) is not None:
                    at = fence.start(2) + sum(
                        len(x) + 1 for x in fence.group(2).splitlines()[:offset]
                    )
                    yield Command(line_of(at), line.strip()[start.start() :], written_out=True)
    prose = fences.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for span in re.finditer(r"`([^`\n]+)`", prose):
        if (start := START.search(span.group(1))) is not None:
            yield Command(line_of(span.start()), span.group(1)[start.start() :], written_out=False)


def commands_in_notebook_source(path: Path) -> Iterator[Command]:
    """A notebook source's markdown: its ``# `` comment lines, as one text."""
    lines = path.read_text(encoding="utf-8").splitlines()
    markdown = "\n".join(line[2:] if line.startswith("# ") else "" for line in lines)
    yield from commands_in_markdown(markdown, path.name)


def commands_in_docstring(path: Path) -> Iterator[Command]:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    for line in docstring.splitlines():
        if re.match(r"\s+(\$ )?python3? ", line):
            text = line.strip().removeprefix("$ ")
            yield Command(f"{path.name} docstring", text, written_out=True)


def all_commands() -> list[Command]:
    found: list[Command] = []
    for path in DOCUMENTS:
        if path.suffix == ".md":
            found += commands_in_markdown(path.read_text(encoding="utf-8"), path.name)
        else:
            found += commands_in_notebook_source(path)
    for path in SCRIPTS:
        found += commands_in_docstring(path)
    return found


COMMANDS = all_commands()


# --- python -m lldsched ----------------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def program(words: list[str]) -> tuple[bool, list[str]]:
    """Whether a command starts with a Python interpreter, and its words after the
    interpreter and the environment assignments before it."""
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words = words[1:]
    if words and re.fullmatch(r"(\S*/)?python3?", words[0]):
        return True, words[1:]
    return False, words


def cli_words(words: list[str]) -> list[str] | None:
    """The arguments a command gives the lldsched CLI, or None if it does not call it."""
    python, words = program(words)
    if python and words[:2] == ["-m", "lldsched"]:
        return words[2:]
    return words[1:] if not python and words[:1] == ["lldsched"] else None


def parse_error(argv: list[str]) -> str | None:
    """What the CLI's parser says against ``argv`` (None: it parses)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as exit:
        return None if exit.code == 0 else err.getvalue().strip().splitlines()[-1]
    return None


def is_mention(argv: list[str]) -> bool:
    """A command named in prose, not one to run: no subcommand, alternatives
    (``demo / cron``), a placeholder (``<decision>``), a subcommand without its
    arguments (``cron``) or an option without its value (``cron -n``)."""
    if not argv or "/" in argv or any(re.search(r"[<\[]", word) for word in argv):
        return True
    return parse_error(argv) is not None and (len(argv) == 1 or argv[-1].startswith("-"))


def unknown_names(argv: list[str]) -> list[str]:
    """The subcommands and options of ``argv`` that the parser does not have."""
    parser = build_parser()
    if argv[:1] in (["-h"], ["--help"]):
        return []
    known = subcommands(parser)
    names = [word for word in argv if word != "/" and not word.startswith("-")]
    chosen = [name for name in names[: argv.count("/") + 1] if not name.startswith("<")]
    missing = [name for name in chosen if name not in known]
    if missing or not chosen:
        return missing
    options = {o for name in chosen for o in known[name]._option_string_actions}
    return [w for w in argv if w.startswith("-") and w.split("=")[0] not in options]


def cli_problem(argv: list[str], written_out: bool) -> str | None:
    """Why the lldsched command ``argv`` would not run as the document shows it."""
    if unknown := unknown_names(argv):
        return f"no such subcommand or option: {unknown}"
    if not written_out and is_mention(argv):
        return None
    if (error := parse_error(argv)) is not None:
        return error
    if argv[:1] == ["cron"]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
        return None if status == 0 else f"exit status {status}: {err.getvalue().strip()}"
    if argv[:1] == ["simulate"]:
        return refusal(build_parser().parse_args(argv))
    return None


CLI = [(command, argv) for command in COMMANDS if (argv := cli_words(command.words())) is not None]


@pytest.mark.parametrize(
    ("command", "argv"), CLI, ids=[f"{c.where} {' '.join(argv)}" for c, argv in CLI]
)
def test_each_lldsched_command_of_the_documents_is_one_the_cli_takes(
    command: Command, argv: list[str]
) -> None:
    assert cli_problem(argv, command.written_out) is None, command.text


def test_the_documents_show_the_lldsched_commands() -> None:
    shown = {argv[0] for _, argv in CLI if argv and not is_mention(argv)}
    assert shown == set(subcommands(build_parser())), "a subcommand no document shows"


@pytest.mark.parametrize(
    "line",
    [
        'python -m lldsched cron "0 3 * * *" --zone Europe/Berlin',  # the option is --tz
        "python -m lldsched simulate --day 3",
        "python -m lldsched simulate --days 400",  # refused before simulating
        "python -m lldsched cron '0 3 * *'",  # four fields
        "python -m lldsched cron '0 3 * * *' --tz Mars/Olympus",
        "python -m lldsched lab pushes",
        "python -m lldsched replay",
        "python -m lldsched cron --zone",  # a mention, of an option that is not there
    ],
)
def test_a_command_the_cli_does_not_take_is_caught(line: str) -> None:
    (command,) = commands_in_markdown(f"```sh\n{line}\n```\n", "X.md")
    argv = cli_words(command.words())
    assert argv is not None and cli_problem(argv, command.written_out) is not None


def test_mentions_are_held_to_their_names() -> None:
    text = "`python -m lldsched lab <decision>`, `python -m lldsched cron -n`, `lldsched demo`"
    mentions = [cli_words(c.words()) for c in commands_in_markdown(text, "X.md")]
    assert mentions == [["lab", "<decision>"], ["cron", "-n"], ["demo"]]
    assert [cli_problem(argv, written_out=False) for argv in mentions if argv] == [None] * 3


# --- scripts: benchmarks/, tools/, docs/img/, python -m tests.X ------------------------


def script_of(words: list[str]) -> tuple[Path, list[str]] | None:
    """The repository script a command runs and its arguments (None: not one)."""
    _, words = program(words)
    if words[:1] == ["-m"] and len(words) > 1 and words[1].startswith("tests."):
        return ROOT / (words[1].replace(".", "/") + ".py"), words[2:]
    if words[:2] == ["-m", "pytest"]:  # options of the tests' own: tests/conftest.py
        return ROOT / "tests" / "conftest.py", words[2:]
    if not words or not words[0].endswith(".py") or words[0].startswith("-"):
        return None
    name = words[0]
    for folder in ("", "benchmarks/", "tools/"):
        if "/" in name and folder:
            continue
        if (ROOT / folder / name).is_file():
            return ROOT / folder / name, words[1:]
    if name.startswith(("benchmarks/", "tools/", "docs/")) or "/" not in name:
        return ROOT / name, words[1:]  # a script the repository does not have
    return None  # another program's (gunicorn.conf.py, service.py)


def script_problems(path: Path, args: list[str]) -> list[str]:
    if not path.is_file():
        return [f"no script {path.relative_to(ROOT)}"]
    source = path.read_text(encoding="utf-8")
    problems = []
    for word in args:
        option = word.split("=")[0]
        if option.startswith("--") and f'"{option}"' not in source:
            problems.append(f"{path.name} has no option {option}")
        elif re.fullmatch(r"[\w./-]+\.(py|ipynb)", word) and not (ROOT / word).exists():
            problems.append(f"no file {word}")
    return problems


SCRIPT_CALLS = [
    (command, found) for command in COMMANDS if (found := script_of(command.words())) is not None
]


@pytest.mark.parametrize(
    ("command", "call"),
    SCRIPT_CALLS,
    ids=[f"{c.where} {' '.join(c.words())}" for c, _ in SCRIPT_CALLS],
)
def test_each_script_the_documents_call_has_the_options_they_give_it(
    command: Command, call: tuple[Path, list[str]]
) -> None:
    assert script_problems(*call) == [], command.text


def test_the_documents_call_the_benchmarks_and_tools() -> None:
    called = {path.relative_to(ROOT).parts[0] for path, _ in (call for _, call in SCRIPT_CALLS)}
    assert {"benchmarks", "tools", "tests"} <= called
    assert len(SCRIPT_CALLS) >= 20


def test_an_option_a_script_does_not_have_is_caught() -> None:
    (command,) = commands_in_markdown(
        "```sh\n.venv/bin/python benchmarks/run_all.py --fast   # smaller\n```\n", "X.md"
    )
    call = script_of(command.words())
    assert call is not None and script_problems(*call) == ["run_all.py has no option --fast"]
    missing = script_of(["python", "tools/mutate.py", "lldsched/gone.py", "tests/test_gone.py"])
    assert missing is not None and len(script_problems(*missing)) == 2


# --- make and environment variables ------------------------------------------------------


def makefile() -> tuple[set[str], set[str]]:
    """The Makefile's targets and variables."""
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w.-]+)\s*:(?!=)", text, flags=re.M))
    variables = set(re.findall(r"^(\w+)\s*[?:]?=", text, flags=re.M))
    return targets, variables


MAKE = [command for command in COMMANDS if command.words()[:1] == ["make"]]


@pytest.mark.parametrize("command", MAKE, ids=[f"{c.where} {' '.join(c.words())}" for c in MAKE])
def test_each_make_command_of_the_documents_is_a_target_of_the_makefile(
    command: Command,
) -> None:
    targets, variables = makefile()
    for word in command.words()[1:]:
        if "=" in word:
            assert word.split("=")[0] in variables, command.text
        else:
            assert word in targets, command.text


def test_the_documents_name_the_make_targets() -> None:
    named = {word for command in MAKE for word in command.words()[1:]}
    assert {"demo", "test", "bench", "bench-quick", "notebooks", "binder-check"} <= named


def test_each_lldsched_environment_variable_named_is_read() -> None:
    named = {
        name
        for path in DOCUMENTS
        for name in re.findall(r"\bLLDSCHED_[A-Z_]+\b", path.read_text(encoding="utf-8"))
    }
    sources = "".join(
        path.read_text(encoding="utf-8")
        for folder in ("lldsched", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if path != Path(__file__)
    )
    assert named and {name for name in named if f'"{name}"' not in sources} == set()
