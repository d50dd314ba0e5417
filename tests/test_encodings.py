"""Encodings as a Windows user meets them: Python there reads and writes text files in
the locale's code page (cp1252, say) unless told otherwise, and a redirected stdout
encodes with it too.

Every text file the package and its tools open names its encoding (UTF-8), and the
command line prints ASCII only, so its output survives any console or pipe encoding.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "lldsched").rglob("*.py"), *(ROOT / "tools").rglob("*.py")])
_TEXT_CALLS = {"read_text", "write_text"}
_PROCESS_CALLS = {"run", "Popen", "check_output", "check_call", "call"}


def _keywords(call: ast.Call) -> dict[str, ast.expr]:
    return {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def text_without_encoding(source: str) -> list[int]:
    """Lines of ``source`` that open text without naming its encoding: ``open(...)`` in a
    text mode, ``Path.read_text()``/``write_text()``, a subprocess call with
    ``text=True`` or ``universal_newlines=True``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        keywords = _keywords(node)
        if "encoding" in keywords:
            continue
        function = node.func
        name = function.id if isinstance(function, ast.Name) else None
        attr = function.attr if isinstance(function, ast.Attribute) else None
        if name == "open":
            mode = node.args[1] if len(node.args) > 1 else keywords.get("mode")
            text = not (isinstance(mode, ast.Constant) and "b" in str(mode.value))
        elif attr in _PROCESS_CALLS:
            text = _is_true(keywords.get("text")) or _is_true(keywords.get("universal_newlines"))
        else:
            text = attr in _TEXT_CALLS
        if text:
            found.append(node.lineno)
    return found


def test_the_guard_finds_each_kind_of_text_without_an_encoding() -> None:
    assert text_without_encoding(
        "open(p)\nopen(p, 'a+')\nopen(p, 'rb')\nopen(p, encoding='utf-8')\n"
        "p.read_text()\np.write_text(s, encoding='utf-8')\n"
        "subprocess.run(c, text=True)\nsubprocess.run(c, text=True, encoding='utf-8')\n"
        "subprocess.run(c)\n"
    ) == [1, 2, 5, 7]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_text_file_the_package_and_its_tools_open_names_its_encoding(path: Path) -> None:
    assert text_without_encoding(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "command",
    [["demo"], ["cron", "30 2 * * *", "--tz", "Asia/Kolkata", "-n", "3"], ["simulate"], ["lab"]],
    ids=["demo", "cron", "simulate", "lab"],
)
def test_the_command_line_prints_ascii_whatever_the_output_encoding(command: list[str]) -> None:
    """As a cp1252 (or any) pipe on Windows: an output encoding of plain ASCII, strict."""
    done = subprocess.run(
        [sys.executable, "-m", "lldsched", *command],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii:strict"},
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stdout.strip() and done.stdout.isascii()
