"""Every line lldsched logs at WARNING or above has its row in docs/OPERATIONS.md,
"Logging", in its logger's subsection (``### `lldsched.jobs```, ...): where an operator
looks up a line their log pipeline shows.  A new line without a row fails here, naming
its call site (``file:line``), its logger, level and opening words.  The lines are read
from the package's source (tests/logcalls.py: its syntax tree, through the helpers that
wrap a logging call).

A line has its row when a span its subsection quotes (in double quotes or backticks,
its varying parts written ``...``) holds one of the line's fixed pieces of three words
or more (the text between its ``%s`` and ``{...}``), or four words or more of one of
them, word for word; a line with no piece so long, all its pieces in order (``"task t
'import' attempt 1 of 3 failed: ..."``).  These are the words an operator greps the
document for.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest

from lldsched import logs
from tests.logcalls import EDGES, LEVELS, Line, Package, logged_lines, normal, of_format

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ROOT / "docs" / "OPERATIONS.md"


def named_by(line: Line, span: str) -> bool:
    """Whether a quoted ``span`` (normalized) names ``line``: it holds one of the
    line's pieces of three words or more, or a run of four words or more of one of
    them (between its ``...``); a line with no piece so long, all its pieces in
    order."""
    pieces = line.pieces()
    if any(len(piece.split()) >= 3 and piece in span for piece in pieces):
        return True
    quoted = [part.strip(EDGES) for part in re.split(r"\.\.\.|…", span)]
    if any(len(part.split()) >= 4 and part in piece for part in quoted for piece in pieces):
        return True
    if any(len(piece.split()) >= 3 for piece in pieces) or not pieces:
        return False
    at = 0
    for piece in pieces:
        at = span.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


SUBSECTION = re.compile(r"^### `(lldsched\.\w+)`\n(.*?)(?=^#{1,3} )", flags=re.M | re.S)


def subsections(text: str | None = None) -> dict[str, list[str]]:
    """Each logger's subsection of "Logging": the spans it quotes, normalized."""
    if text is None:
        text = OPERATIONS.read_text(encoding="utf-8")
    quoted: dict[str, list[str]] = {}
    for match in SUBSECTION.finditer(text):
        body = match.group(2)
        ticked = re.findall(r"`([^`]+)`", body)
        quotes = re.findall(r'"([^"]+)"', re.sub(r"`[^`]+`", "", body))
        quoted[match.group(1)] = [normal(span) for span in (*ticked, *quotes)]
    return quoted


def rowless(lines: list[Line], quoted: dict[str, list[str]]) -> list[str]:
    """Each WARNING+ line no span of its logger's subsection names, said for a reader."""
    missing = []
    for line in lines:
        if line.level < logging.WARNING:
            continue
        if not any(named_by(line, span) for span in quoted.get(line.logger, [])):
            why = "no row of its subsection quotes its words"
            if not line.pieces():
                why = "its words cannot be read from the source (a queue? see QUEUED)"
            missing.append(
                f"{line.where} ({line.logger}, {logging.getLevelName(line.level)}) "
                f"{line.opening()!r}: {why}"
            )
    return sorted(set(missing))


@pytest.fixture(scope="module")
def package() -> Package:
    """The package's modules, parsed once for the tests that read them (about 2 s of
    CPU a parse: every module's syntax tree and each node's parent); nothing of it is
    written after it is made."""
    return Package()


@pytest.fixture(scope="module")
def lines(package: Package) -> list[Line]:
    return logged_lines(package)


def test_every_warning_line_has_its_row_in_its_loggers_subsection(lines: list[Line]) -> None:
    quoted = subsections()
    assert set(quoted) == set(logs.LOGGERS)
    missing = rowless(lines, quoted)
    said = 'docs/OPERATIONS.md, "Logging"'
    assert not missing, (
        f"{len(missing)} lines logged at WARNING or above have no row in {said} (quote "
        "their words in their logger's subsection):\n" + "\n".join(missing)
    )


NOT_LOGGERS = {"super()", "args.command_parser"}
"""Receivers of an ``error(...)`` call in the package that are no logger: argparse's."""


def test_every_call_of_a_logging_method_is_on_one_of_lldscheds_loggers(package: Package) -> None:
    """A line said through a logger this reading cannot name (a logger kept on an
    attribute, the root logger's ``logging.warning``) would escape the check above."""
    unread = []
    for module in package.modules.values():
        for node in ast.walk(module.tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {*LEVELS, "log"}
                and node.args  # future.exception() asks, it says nothing
            ):
                continue
            receiver = node.func.value
            if ast.unparse(receiver) in NOT_LOGGERS or ast.unparse(receiver) == "math":
                continue
            if package.logger(module, module.function_of(node), receiver) is None:
                unread.append(f"{module.path}:{node.lineno} {ast.unparse(node.func)}")
    assert not unread, unread


def test_the_reading_finds_the_lines_of_every_kind_of_call(lines: list[Line]) -> None:
    """A guard on the reading itself: a line of each form is found, with its logger,
    its level and its words."""
    said = {(line.logger, line.opening()) for line in lines if line.level >= logging.WARNING}
    expected = [
        (logs.TIMER, "the wall clock jumped by … s"),  # log.warning
        (logs.JOBS, "task … …: … raised; the task fails"),  # log.exception
        (logs.CLUSTER, "…; the record of attempt … was not stored"),  # "%s" of a method
    ]
    for logger, start in expected:
        assert any(
            found == logger and opening.startswith(start.rstrip("…")) for found, opening in said
        ), (logger, start)
    openings = {line.opening() for line in lines if line.level >= logging.WARNING}
    assert any(o.startswith("task … … attempt … of … failed: …; …") for o in openings)  # queued
    assert any(o.startswith("store … failed (a …): this process starts no run") for o in openings)
    assert any(
        o.startswith("store … recovered (a … succeeded)") for o in openings
    )  # DEBUG or WARNING
    assert not any(o.startswith("task … … attempt … stopped") for o in openings)  # INFO
    # A helper's message is named where the helper is called with its words.
    (drained,) = [line for line in lines if line.opening().endswith("ran out of time draining:")]
    assert drained.where.startswith("lldsched/threaded/stopping.py:"), drained
    assert drained.logger == logs.SCHEDULER and drained.level == logging.WARNING


def test_a_line_without_its_row_is_named_by_its_call_site() -> None:
    line = Line(
        "lldsched/x.py:12", logs.TIMER, logging.WARNING, of_format("the clock %s went back by %g s")
    )
    text = '### `lldsched.timer`\n\n- A jump: WARNING, "the wall clock jumped by".\n\n## Next\n'
    (missing,) = rowless([line], subsections(text))
    assert missing.startswith(
        "lldsched/x.py:12 (lldsched.timer, WARNING) 'the clock … went back by … s'"
    )
    quoted = text.replace("wall clock jumped by", "clock ... went back by 3 s")
    assert rowless([line], subsections(quoted)) == []
    # a quote under another logger's subsection does not count
    elsewhere = quoted.replace("lldsched.timer", "lldsched.store")
    assert rowless([line], subsections(elsewhere)) != []
