"""The README stays true: every Python block in it runs, and prints what it says.

A block shows what a ``print(...)`` prints as the ``# ...`` lines right under it
(under a loop's body, the lines it prints in turn); ``...`` in such a line stands for
any text (a pid, a path).  Each shown line must be printed, in the order shown.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched.logs import LOGGERS

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = [
    (README.read_text()[: match.start(1)].count("\n") + 1, match.group(1))
    for match in re.finditer(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
]


def shown_output(block: str) -> list[str]:
    """The ``# ...`` lines that follow a line calling ``print(``, in order."""
    shown: list[str] = []
    after_print = False
    for line in block.splitlines():
        if after_print and line.startswith("# "):
            shown.append(line[2:])
            continue
        after_print = "print(" in line
    return shown


def matches(pattern: str, line: str) -> bool:
    parts = [re.escape(part) for part in pattern.split("...")]
    return re.fullmatch(".*".join(parts), line) is not None


def unprinted(shown: list[str], printed: list[str]) -> list[str]:
    """The shown lines not printed in the order shown (empty when all were)."""
    missing: list[str] = []
    at = 0
    for line in shown:
        found = next((n for n in range(at, len(printed)) if matches(line, printed[n])), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


def test_the_readme_has_its_blocks_and_shows_what_they_print() -> None:
    assert len(BLOCKS) >= 10, "the README lost its API tour"
    assert sum(len(shown_output(block)) for _, block in BLOCKS) >= 10


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """A block that configures logging (the "Logging" section's dictConfig) leaves
    lldsched's loggers as it found them, for the tests that run after it."""
    names = ["lldsched", *LOGGERS]
    kept = [
        (logger, logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for logger in map(logging.getLogger, names)
    ]
    yield
    for logger, level, handlers, propagate, disabled in kept:
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate, logger.disabled = propagate, disabled


@pytest.mark.usefixtures("logging_restored")
@pytest.mark.parametrize(("line", "block"), BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_every_python_block_in_the_readme_runs_and_prints_what_it_shows(
    line: int, block: str
) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile("\n" * (line - 1) + block, str(README), "exec"), {"__name__": "readme"})
    assert unprinted(shown_output(block), out.getvalue().splitlines()) == []


def test_a_shown_line_that_is_not_printed_is_caught() -> None:
    shown = ["blocked 0.0 1200.0 -> 1200.0", "TimeoutError: killed at ... budget"]
    assert (
        unprinted(shown, ["blocked 0.0 1200.0 -> 1200.0", "TimeoutError: killed at 1 s budget"])
        == []
    )
    assert unprinted(
        shown, ["blocked 0.0 1200.0 -> 1300.0", "TimeoutError: killed at 1 s budget"]
    ) == [shown[0]]
    assert unprinted(shown, list(reversed(shown))) != []  # order counts
