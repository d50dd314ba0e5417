"""``lldsched tasks --json`` says what the table's marks and ``show`` say of a run in flight.

The table marks ``running!`` and ``show`` says "the process that ran it is gone" for a row
an unshared process left ``running`` when it died (tests/test_cli_tasks_gone_unshared.py);
``--json`` gave that row as ``"status": "running"`` and nothing more, so a script read a run
going on where the text said there was none.  Each document now carries ``in_flight``
(``null``, ``"live"``, ``"ran_out"`` or ``"gone"``: lldsched/cli/storetasks.py ``_flight``),
its ``status`` left as stored, which existing readers read
(docs/decisions/command-line.md, "`--json` says a run in flight as the text does").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lldsched import FixedRate, Scheduler, SqliteTaskStore
from lldsched.cli import main
from lldsched.coordination import Lease
from lldsched.stores.sqlite.claim import FileClaim
from tests import jobs
from tests.cluster import StoreSpec
from tests.test_cli_tasks_in_flight import in_flight, listed, tasks
from tests.test_cluster_settle_refused_view import _expire
from tests.test_store_running_row import _crashed_mid_run

__all__ = ["in_flight"]  # the fixture, used here by name


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    """A store file as an unshared process that died during ``job``'s run leaves it (the
    row ``running``, no lease, the claim let go), and ``idle``, which never ran."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        Scheduler(store=store).schedule(
            "idle", jobs.noop, FixedRate(3600, start_delay=3600), id="idle"
        )
        _crashed_mid_run(store)
    return path


def documents(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> list[dict[str, Any]]:
    status = main(["tasks", "--store", f"sqlite:{path}", "--json", *argv])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    return [json.loads(line) for line in out.splitlines()]


def test_json_says_the_process_that_ran_it_is_gone_and_keeps_the_status_as_stored(
    crashed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_id = {document["id"]: document for document in documents(capsys, crashed)}
    assert (by_id["job"]["status"], by_id["job"]["in_flight"]) == ("running", "gone")
    assert (by_id["idle"]["status"], by_id["idle"]["in_flight"]) == ("scheduled", None)
    (shown,) = documents(capsys, crashed, "show", "job")
    assert (shown["status"], shown["in_flight"]) == ("running", "gone")


def test_json_says_live_while_an_unshared_store_holds_the_file(
    crashed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = FileClaim(str(crashed))  # a live unshared store's claim, as it holds it
    try:
        by_id = {document["id"]: document for document in documents(capsys, crashed)}
        assert by_id["job"]["in_flight"] == "live"
        (shown,) = documents(capsys, crashed, "show", "job")
        assert shown["in_flight"] == "live"
    finally:
        claim.release()


def test_json_says_a_shared_stores_lease_live_then_ran_out(
    store_spec: StoreSpec, in_flight: Lease, capsys: pytest.CaptureFixture[str]
) -> None:
    held = listed(capsys, store_spec)
    assert (held["slow"]["status"], held["slow"]["in_flight"]) == ("scheduled", "live")
    assert held["idle"]["in_flight"] is None
    _expire(store_spec)  # its expiry an hour back, as a process killed an hour ago
    ran_out = listed(capsys, store_spec)
    assert ran_out["slow"]["in_flight"] == "ran_out" and ran_out["slow"]["lease"]["ran_out"]
    shown = json.loads(tasks(capsys, store_spec, "show", "slow", "--json"))
    assert shown["in_flight"] == "ran_out"
