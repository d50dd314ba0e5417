"""``lldsched tasks``: its options used where they cannot apply, a record count past what
a database's ``LIMIT`` takes, the store named by the environment, and a verb on a row this
lldsched cannot read, as an operator meets them (a user trial of the command line).

Each was a wrong answer with no error, or an error saying the wrong thing:
``redrive ID --json`` printed a line of text to a script reading JSON; ``--records 3``
while listing was ignored; ``show ID --records 99999999999999999999`` was SQLite's
``OverflowError`` traceback; a bad ``LLDSCHED_STORE`` was refused as a ``--store`` the
operator never typed; a verb on a damaged row, or one a newer release wrote, told
the operator to run it where the service's code imports, which changes nothing; and
``sqlite:~/tasks.db``, a ``~`` no shell expands, was "no SQLite store file" alone.  And
``run-now`` of a failed task said "nothing to run-now" without naming ``redrive``;
``show ID --records 0 --json`` gave ``"last": null`` of a task with records.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lldsched import CronSchedule, SqliteTaskStore, TaskStatus
from lldsched.cli import main
from lldsched.stores.sqlite.peek import peek_sqlite
from tests.test_cli_tasks_listing import T0, _record, _saved

_S = TaskStatus


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Three tasks of tests/jobs.py (importable here, so a verb loads them): ``t00``
    with three records, ``t01`` and ``t02`` with none."""
    path = tmp_path / "tasks.db"
    nightly = CronSchedule("0 3 * * *")
    with SqliteTaskStore(path) as saved:
        first = _saved(0, "sync", nightly, _S.FAILED, None, 0, 3, 3, "OSError: full")
        saved.save(first, None)
        for _ in range(3):
            saved.save(first, _record(0, "sync", ok=False, error="OSError: full"))
        saved.save(_saved(1, "report", nightly, _S.SCHEDULED, T0, 0, 0, 0, None), None)
        saved.save(_saved(2, "backup", nightly, _S.SCHEDULED, T0, 0, 0, 0, None), None)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["tasks", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """argparse's refusal of ``tasks ARGV``: status 2, nothing on stdout; its last line."""
    with pytest.raises(SystemExit) as exited:
        main(["tasks", *argv])
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    return err.splitlines()[-1]


def statuses(path: Path) -> dict[str, Any]:
    reader = peek_sqlite(str(path))
    try:
        return {row.id: row.snapshot and row.snapshot.status for row in reader.tasks()}
    finally:
        reader.close()


@pytest.mark.parametrize("verb", ["redrive", "pause", "resume", "cancel", "run-now", "remove"])
def test_json_with_a_verb_that_acts_is_refused_and_nothing_changes(
    store: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the verb done, and its line of text printed to a script that asked for JSON."""
    before = statuses(store)
    said = refused(capsys, "--store", f"sqlite:{store}", verb, "t00", "--json")
    assert said.endswith(f"error: argument --json: only when listing or with show, not with {verb}")
    assert statuses(store) == before


@pytest.mark.parametrize(
    "argv", [[], ["--status", "failed"], ["pause", "t01"], ["redrive", "t00"]],
    ids=["listing", "dead letter", "pause", "redrive"],
)  # fmt: skip
def test_records_anywhere_but_show_is_refused_and_nothing_changes(
    store: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--records N``, "with show" in its help, was ignored by the table and the verbs, as
    ``--status`` with a verb was refused."""
    before = statuses(store)
    said = refused(capsys, "--store", f"sqlite:{store}", *argv, "--records", "3")
    assert said.endswith("error: argument --records: only with show")
    assert statuses(store) == before


def test_json_and_records_with_show_and_json_when_listing_still_work(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "--store", f"sqlite:{store}", "show", "t00", "--json",
                           "--records", "2")  # fmt: skip
    assert (status, err, out.count("\n")) == (0, "", 1)
    assert '"records": [{' in out and out.count('"outcome": "failed"') == 3  # last + 2
    status, out, err = run(capsys, "--store", f"sqlite:{store}", "--json")
    assert (status, err, out.count("\n")) == (0, "", 3)


@pytest.mark.parametrize("count", [2**63 - 1, 2**63, 10**20, 10**400])
def test_a_records_count_past_a_64_bit_limit_shows_every_record(
    store: Path, count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--records 99999999999999999999`` was ``OverflowError: Python int too large to
    convert to SQLite INTEGER``, a traceback and status 1: a count past any store's is
    every record, as ``head -n`` takes one."""
    status, out, err = run(capsys, "--store", f"sqlite:{store}", "show", "t00",
                           "--records", str(count))  # fmt: skip
    assert (status, err) == (0, "")
    assert "last 3 records:" in out.splitlines()


def test_a_records_count_past_a_64_bit_limit_shows_every_record_on_postgres(
    open_store: Any, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL refused it too ("bigint out of range"), as the store's error."""
    with contextlib.closing(open_store()) as saved:
        first = _saved(0, "sync", CronSchedule("0 3 * * *"), _S.FAILED, None, 0, 2, 2, "x")
        saved.save(first, None)
        for _ in range(2):
            saved.save(first, _record(0, "sync", ok=False, error="x"))
    status, out, err = run(capsys, "--store", postgres_dsn, "show", "t00",
                           "--records", str(10**20))  # fmt: skip
    assert (status, err) == (0, "")
    assert "last 2 records:" in out.splitlines()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("bogus", "error: LLDSCHED_STORE 'bogus' is no store URL: name one as "),
        ("", "error: LLDSCHED_STORE '' is no store URL: name one as "),
        ("sqlite:", "error: LLDSCHED_STORE 'sqlite:' names no file: "),
        ("mysql://u:hunter22@h/db", "error: LLDSCHED_STORE 'mysql://u:***@h/db' is no "),
    ],
)
def test_a_bad_store_of_the_environment_is_refused_naming_the_variable(
    value: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``error: --store 'bogus' is no store URL`` to an operator who typed no
    ``--store``: the value came from the service's environment file."""
    monkeypatch.setenv("LLDSCHED_STORE", value)
    status, out, err = run(capsys)
    assert (status, out) == (2, "")
    assert err.startswith(said), err
    assert "--store '" not in err and "hunter22" not in err


def test_the_store_of_the_environment_is_read_and_store_is_taken_over_it(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLDSCHED_STORE", f"sqlite:{store}")
    status, out, err = run(capsys, "--status", "failed")
    assert (status, err) == (0, "")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["t00"]
    status, out, err = run(capsys, "--store", "bogus")  # the option wins, and is named
    assert (status, out) == (2, "")
    assert err.startswith("error: --store 'bogus' is no store URL"), err


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ("UPDATE tasks SET status = 'hibernating' WHERE id = 't01'",
         "task t01: status 'hibernating' is none this release of lldsched knows"),
        ("UPDATE tasks SET definition = '{not json' WHERE id = 't01'",
         "task t01: its stored definition is invalid: JSONDecodeError("),
        ("UPDATE tasks SET next_run_at = 'x' WHERE id = 't01'",
         "task t01: its row holds a value the store cannot read: table tasks, row id='t01'"),
    ],
    ids=["newer status", "damaged definition", "damaged value"],
)  # fmt: skip
def test_a_verb_on_a_row_this_lldsched_cannot_read_says_the_row_is_the_matter(
    store: Path, damage: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was "cannot be loaded here (...): run the command where the service's code imports
    (its virtualenv, its PYTHONPATH)": the code imports here (the other tasks load), and
    no environment reads a damaged row or a status only a newer release knows."""
    with contextlib.closing(sqlite3.connect(store)) as connection, connection:
        connection.execute(damage)
    before = statuses(store)
    status, out, err = run(capsys, "--store", f"sqlite:{store}", "pause", "t01")
    assert (status, out) == (2, "")
    assert err.startswith(f"error: task 't01' cannot be read by this lldsched ({why}"), err
    assert "if a newer lldsched wrote it, run the command with that one" in err
    assert "delete the task in the store" in err and err.endswith("; nothing was changed\n")
    assert "PYTHONPATH" not in err and err.count("\n") == 1
    assert statuses(store) == before
    status, out, err = run(capsys, "--store", f"sqlite:{store}", "pause", "t02")  # the others
    assert (status, out, err) == (0, "task t02: paused\n", "")


def test_a_tilde_no_shell_expanded_is_told_the_url_it_meant(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store sqlite:~/tasks.db``: a shell expands ``~`` at a word's start only, so the
    command got it as written, and said only "there is no SQLite store file at
    '~/tasks.db'" of a file that is in the operator's home folder."""
    monkeypatch.setenv("HOME", str(store.parent))
    status, out, err = run(capsys, "--store", "sqlite:~/tasks.db")
    assert (status, out) == (2, "")
    assert err == (
        "error: there is no SQLite store file at '~/tasks.db'; no shell expanded its '~' (one "
        f"does only at the start of a word): did you mean sqlite://{store}?\n"
    )
    status, _, err = run(capsys, "--store", "sqlite:~/other.db")  # nothing there either
    assert (status, err) == (2, "error: there is no SQLite store file at '~/other.db'\n")


def test_a_verb_with_nothing_to_do_names_the_verb_meant_for_a_failed_or_paused_task(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run-now`` of a dead-lettered task said "nothing to run-now (its status is
    failed); nothing changed" and no more, to an operator who wanted it run again: the
    verb is ``redrive`` (GUIDE.md: "resume a paused task, redrive a failed one")."""
    url = f"sqlite:{store}"
    redrive = "(a failed task runs again by `tasks --store URL redrive t00`)"
    for verb in ("run-now", "resume"):
        assert run(capsys, "--store", url, verb, "t00") == (
            0, f"task t00: nothing to {verb} (its status is failed); nothing changed {redrive}\n",
            "",
        )  # fmt: skip
    assert run(capsys, "--store", url, "pause", "t01")[:2] == (0, "task t01: paused\n")
    assert run(capsys, "--store", url, "run-now", "t01") == (
        0, "task t01: nothing to run-now (its status is paused); nothing changed (a paused task "
        "runs once resumed: `tasks --store URL resume t01`)\n", "",
    )  # fmt: skip
    assert run(capsys, "--store", url, "pause", "t00") == (  # nothing meant instead
        0, "task t00: nothing to pause (its status is failed); nothing changed\n", "",
    )  # fmt: skip
    assert statuses(store) == {"t00": _S.FAILED, "t01": _S.PAUSED, "t02": _S.SCHEDULED}


def test_show_with_records_0_still_gives_the_last_record_and_says_none_were_listed(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show t00 --records 0 --json`` gave ``"last": null`` of a task with three records
    (the listing's ``--json`` gives it), and the text said "no records"."""
    url = f"sqlite:{store}"
    status, out, err = run(capsys, "--store", url, "show", "t00", "--records", "0", "--json")
    document = json.loads(out)
    assert (status, err, document["records"]) == (0, "", [])
    listed = run(capsys, "--store", url, "--json")[1].splitlines()[0]
    assert document["last"] == json.loads(listed)["last"] is not None
    status, out, err = run(capsys, "--store", url, "show", "t00", "--records", "0")
    assert (status, err, out.splitlines()[-1]) == (0, "", "records not listed (--records 0)")
    status, out, err = run(capsys, "--store", url, "show", "t01", "--records", "0")
    assert (status, err, out.splitlines()[-1]) == (0, "", "no records")  # it has none
