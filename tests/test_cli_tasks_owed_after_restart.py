"""``lldsched tasks`` on an unshared SQLite file after a crash and a restart that never
started: the table, ``show`` and ``--json`` say the run in flight by one rule.

A process killed mid-run leaves its task's row ``running``; a scheduler built on the file
unshared afterwards and never started (a service that crashed again before ``start()``)
recovers it: the row says ``scheduled`` again, its flag of an attempt in flight kept, the
attempt owed to the next start (tests/test_crash_before_start.py).  ``show`` and
``--json`` read that flag and said the process was gone; the table read the status column
and showed a plain ``scheduled``.  All three now read the flag
(lldsched/cli/storetasks.py ``_flight``; docs/decisions/command-line.md, "The table marks
a run in flight by the flag `show` reads").
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FakeClock, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.stores.sqlite.claim import FileClaim
from tests.conftest import T0
from tests.processes import killed_mid_run
from tests.test_cli_tasks_gone_unshared import GONE, LEGEND, tasks
from tests.test_crash_before_start import CHILD, OPEN

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

HELD = "* a run of it is in flight: a process holds the store unshared"


@pytest.fixture(scope="module")
def recovered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The file a child killed during ``hourly``'s run left, then recovered by a
    scheduler built on it and never started (shut down, its claim let go)."""
    directory = tmp_path_factory.mktemp("owed")
    child = CHILD.replace("WHERE", "sys.argv[1]").replace("OPEN", OPEN["sqlite"])
    path, _ = killed_mid_run(child.replace("IMPORT", "").replace("POLICY", "SKIP"), directory, T0)
    with SqliteTaskStore(path) as store:
        assert [row.status for row in store.load_all()] == [TaskStatus.RUNNING]  # the crash's
        restart = Scheduler(clock=FakeClock(T0 + 3600 * 3.5), store=store)  # never started
        assert restart.shutdown()
        (row,) = store.load_all()
        assert (row.status, row.running) == (TaskStatus.SCHEDULED, True)  # the attempt owed
    yield path


def test_the_table_marks_the_owed_attempt_as_show_and_json_say_it(
    recovered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _header, row, legend = tasks(capsys, recovered)
    assert row.split()[:3] == ["hourly", "hourly", "scheduled!"]
    assert legend == LEGEND
    assert GONE.replace("running", "scheduled", 1) in tasks(capsys, recovered, "show", "hourly")
    (document,) = (json.loads(line) for line in tasks(capsys, recovered, "--json"))
    assert (document["status"], document["in_flight"]) == ("scheduled", "gone")


def test_while_a_process_holds_the_file_all_three_say_a_run_is_in_flight(
    recovered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = FileClaim(str(recovered))  # a live unshared store's claim, as it holds it
    try:
        _header, row, legend = tasks(capsys, recovered)
        assert (row.split()[2], legend) == ("scheduled*", HELD)
        assert "  status      scheduled  (a run is in flight)" in tasks(
            capsys, recovered, "show", "hourly"
        )
        (document,) = (json.loads(line) for line in tasks(capsys, recovered, "--json"))
        assert document["in_flight"] == "live"
    finally:
        claim.release()
