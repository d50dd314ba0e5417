"""``python -m lldsched tasks show ID``: what a record says of a run.

A user trial (docs/decisions/command-line.md, "`tasks show` lists what a run returned, and
the slot of one that did not run") looked for a job's history and result: the store keeps
what each action returned (``ExecutionRecord.result``), and neither ``show`` nor ``--json``
said it.  After an outage the slots a fixed rate skipped were six lines of one instant,
``00:36:15  attempt 0  skipped``, the slots they stood for unsaid.  Now a record that ran
ends with its result (``ok -> 'rows: 3'``) or its error, as before; one that did not run
(skipped, missed, coalesced, blocked) starts with its slot and says when it was decided;
``--json``'s records carry ``result`` and ``token``.  On an SQLite file and the session's
PostgreSQL server, rows written through the store's own ``save`` as a run writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    ExecutionRecord,
    FixedRate,
    Outcome,
    Priority,
    RetryPolicy,
    SqliteTaskStore,
    Task,
    TaskSnapshot,
    TaskStatus,
    TaskStore,
)
from lldsched.cli import main
from tests import jobs

T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def _record(
    attempt: int, due: float, started: float, *, ok: bool = True, **more: Any
) -> ExecutionRecord:
    return ExecutionRecord.of(
        task_id="sync", name="sync", attempt=attempt, due=due, slot=due, worker=0,
        started=started, finished=started + 2.0, ok=ok, **more,
    )  # fmt: skip


RECORDS = [
    _record(1, T0, T0, result="'rows: 3'", token=7),
    _record(0, T0 + 60, T0 + 185, misfire=Outcome.SKIPPED),  # decided after an outage
    _record(0, T0 + 120, T0 + 185, misfire=Outcome.SKIPPED),
    _record(1, T0 + 180, T0 + 185, ok=False, error="RuntimeError: down", token=9),
]


def fill(store: TaskStore, *, tokens: bool) -> None:
    """The task and :data:`RECORDS`; ``tokens`` False: each record's token left out (a
    PostgreSQL store, always shared, fences a save that carries one no claim holds)."""
    task = Task("sync", "sync", jobs.noop, FixedRate(60), Priority.NORMAL, RetryPolicy(), None)
    snapshot = TaskSnapshot(task, TaskStatus.SCHEDULED, T0 + 240, 0, 2, 1, "RuntimeError: down")
    store.save(snapshot)
    for record in RECORDS:
        store.save(snapshot, record if tokens else record._replace(token=None))


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    opener: Callable[[], TaskStore]
    if request.param == "sqlite":
        path = tmp_path / "jobs.db"
        given = f"sqlite:{path}"
        opener = lambda: SqliteTaskStore(path)  # noqa: E731
    else:
        from lldsched.stores.postgres import PostgresTaskStore

        given = request.getfixturevalue("postgres_dsn")
        opener = lambda: PostgresTaskStore(given)  # noqa: E731
    with opener() as opened:
        fill(opened, tokens=request.param == "sqlite")
    return given


def shown(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status = main(["tasks", *argv])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    return out


def test_show_says_a_runs_result_and_the_slot_of_one_that_did_not_run(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = shown(capsys, "--store", store, "show", "sync")
    assert out.endswith(
        "last 4 records:\n"
        "  2027-01-15 08:00:00  attempt 1  ok -> 'rows: 3'\n"
        "  2027-01-15 08:01:00  attempt 0  skipped (its slot; decided 2027-01-15 08:03:05)\n"
        "  2027-01-15 08:02:00  attempt 0  skipped (its slot; decided 2027-01-15 08:03:05)\n"
        "  2027-01-15 08:03:05  attempt 1  failed: RuntimeError: down\n"
    ), out


def test_show_json_gives_each_records_result_and_token(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(shown(capsys, "--store", store, "show", "sync", "--json"))
    records = document["records"]
    tokens = store.startswith("sqlite:")
    assert [(r["outcome"], r["result"], r["token"]) for r in records] == [
        ("ok", "'rows: 3'", 7 if tokens else None),
        ("skipped", None, None),
        ("skipped", None, None),
        ("failed", None, 9 if tokens else None),
    ]
    assert document["last"] == records[-1]
