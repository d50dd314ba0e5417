"""A backup written into a shared SQLite file under running schedulers (the same inode:
``sqlite3 tasks.db ".restore backup.db"``, or the backup API into the path).

The file's counters go back under the processes on it: the fencing tokens they were given
would be given again, and the slots run since the copy run again, with nothing said.  Each
scheduler that finds a counter behind what it was given or read claims nothing more, says
so once on ``lldsched.store`` and reads ``store_ok`` False (docs/OPERATIONS.md, "Backing up
and restoring a store")."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from lldsched import FixedRate, Scheduler
from lldsched.core.context import RunContext
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

_lock = threading.Lock()
_tokens: list[int] = []


def given(ctx: RunContext) -> None:
    """The action: notes the fencing token of each run."""
    with _lock:
        _tokens.append(ctx.fencing_token or 0)


def _copy(source: str, target: str) -> None:
    """``source`` written into ``target`` through SQLite's backup API (same inode)."""
    reading, writing = sqlite3.connect(source), sqlite3.connect(target, timeout=10)
    try:
        reading.backup(writing)
    finally:
        reading.close()
        writing.close()


def test_schedulers_on_a_file_restored_in_place_give_no_token_twice(
    tmp_path: Path, schedulers: list[Scheduler], caplog: pytest.LogCaptureFixture
) -> None:
    path, backup = str(tmp_path / "tasks.db"), str(tmp_path / "backup.db")
    spec = StoreSpec("sqlite", {"path": path})
    _tokens.clear()
    with opened(spec, 2, lease=5.0, poll=0.05) as stores:
        schedulers += [Scheduler(workers=1, store=store) for store in stores]
        for scheduler in schedulers:
            scheduler.schedule("tick", given, FixedRate(0.02), id="tick", replace_existing=True)
        _copy(path, backup)  # the task registered, nothing run yet
        for scheduler in schedulers:
            scheduler.start()
        wait_until(lambda: len(_tokens) >= 20, timeout=20, what="twenty runs")
        with caplog.at_level(logging.ERROR, logger="lldsched.store"):
            _copy(backup, path)
            wait_until(
                lambda: not any(scheduler.metrics().store_ok for scheduler in schedulers),
                timeout=20,
                what="both schedulers to find the file rewound",
            )
            for scheduler in schedulers:
                scheduler.shutdown()
    with _lock:
        tokens = list(_tokens)
    assert len(set(tokens)) == len(tokens), sorted(tokens)
    said = [str(record.exc_info[1]) for record in caplog.records if record.exc_info]
    assert any("restored or rewound in place" in text for text in said), said
