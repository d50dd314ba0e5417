"""What a notebook says about the code it prints is true of that code.

Notebook 01 prints ``Scheduler._timer_loop`` with ``inspect.getsource`` (so the listing
is the code, always) and maps its lines to concerns in a table: each code fragment the
table's first column quotes must still be in the loop, or the table explains lines that
are gone (a rename would leave the table pointing at nothing)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from lldsched import Scheduler

ROOT = Path(__file__).resolve().parent.parent
TIMER_TABLE = "| in `_timer_loop` | the concern it answers |"


def _quoted_in_first_column(source: str, header: str) -> list[str]:
    """The backticked fragments in the first column of the Markdown table under ``header``."""
    lines = [line.removeprefix("# ") for line in source.splitlines()]
    start = lines.index(header) + 2  # past the header and its | --- | row
    fragments: list[str] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        fragments.extend(re.findall(r"`([^`]+)`", first))
    return fragments


def test_every_fragment_notebook_01_s_table_quotes_is_in_the_timer_loop() -> None:
    source = (ROOT / "notebooks" / "src" / "01-timer-and-heap.py").read_text()
    fragments = _quoted_in_first_column(source, TIMER_TABLE)
    assert len(fragments) >= 15  # the table was found and read
    loop = inspect.getsource(Scheduler._timer_loop)
    missing = [fragment for fragment in fragments if fragment not in loop]
    assert not missing, f"notebook 01's table quotes what _timer_loop no longer has: {missing}"
