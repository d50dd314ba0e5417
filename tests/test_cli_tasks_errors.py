"""``lldsched tasks show``: a task's last error of several lines, and an error holding a
terminal's escape sequence, as an operator reads them.

The last error was printed raw: its second line began at column 0, where it could pass for
a line of ``show``'s own ("  status      succeeded"), and an escape sequence in it (an
exception's message quoting what a service sent) recoloured or cleared the terminal.  The
table folded an error's newlines to blanks but left its escape sequences raw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lldsched import FixedRate, SqliteTaskStore, TaskStatus
from lldsched.cli import main
from tests.test_cli_tasks_listing import _record, _saved

ERROR = (
    "RuntimeError: the upstream answered 502\n"
    "  status      succeeded\n"  # a forged field of show
    "\n"
    "\x1b[2Jbody: \u202egnp.exe\tend\r\n"
    "last 1 records:"
)


@pytest.fixture
def store(tmp_path: Path) -> str:
    snapshot = _saved(40, "sync", FixedRate(60), TaskStatus.FAILED, None, 0, 1, 1, ERROR)
    with SqliteTaskStore(tmp_path / "tasks.db") as saved:
        saved.save(snapshot, None)
        saved.save(snapshot, _record(40, "sync", ok=False, error=ERROR))
        short = "OSError: \x1b[2J\x1b[31mdisk\nfull"
        snapshot = _saved(41, "disk", FixedRate(60), TaskStatus.FAILED, None, 0, 1, 1, short)
        saved.save(snapshot, None)
        saved.save(snapshot, _record(41, "disk", ok=False, error=short))
    return f"sqlite:{tmp_path / 'tasks.db'}"


def run(capsys: pytest.CaptureFixture[str], *arguments: str) -> list[str]:
    status, (out, err) = main(["tasks", *arguments]), capsys.readouterr()
    assert (status, err) == (0, ""), err
    return out.splitlines()


def test_show_writes_a_last_error_of_several_lines_under_its_first(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = run(capsys, "--store", store, "show", "t40")
    start = lines.index("  last error  RuntimeError: the upstream answered 502")
    column = " " * len("  last error  ")
    assert lines[start + 1 : start + 5] == [
        f"{column}  status      succeeded",
        "",
        f"{column}\\x1b[2Jbody: \\u202egnp.exe\\tend",
        f"{column}last 1 records:",
    ]
    assert [line for line in lines if line.startswith("  status")] == ["  status      failed"]
    assert [line for line in lines if line.startswith("last ")] == ["last 1 records:"]
    # A record keeps to its one line, its error's breaks written as escapes.
    (record,) = [line for line in lines if "attempt 1  failed: " in line]
    assert record.endswith(
        "failed: RuntimeError: the upstream answered 502\\n  status      succeeded\\n\\n"
        "\\x1b[2Jbody: \\u202egnp.exe\\tend\\r\\nlast 1 records:"
    )
    assert not any("\x1b" in line or "\u202e" in line for line in lines)


def test_the_table_writes_an_errors_escape_sequence_escaped(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for options in ((), ("--status", "failed")):
        _header, long, short = run(capsys, "--store", store, *options)
        assert long.endswith("failed: RuntimeError: the upstream answered 5...")
        # whitespace folded to a blank, as before; the escape sequence written escaped
        assert short.endswith("failed: OSError: \\x1b[2J\\x1b[31mdisk full")
