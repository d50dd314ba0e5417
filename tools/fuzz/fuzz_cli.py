"""Fuzz target: the ``cron`` and ``tasks`` command lines, and crontab files.

``python tools/fuzz/fuzz_cli.py [atheris flags, e.g. -max_total_time=300]``

Each input is one command, run in-process through ``lldsched.cli.main`` (what
``python -m lldsched`` runs) with stdout and stderr captured, in a scratch folder:

* ``cron``: an argv drawn from the command's own options and awkward values, or
  ``cron --crontab FILE [--system] [--tz] [-n] [--start]`` with a crontab file built
  from lines of cron's tokens, variables (``CRON_TZ=``, quoted values), ``%`` and raw
  fuzzed text (not always UTF-8);
* ``tasks``: a store URL (``sqlite:``, ``sqlite://``, ``postgresql://`` text: only
  parsed, never connected to, or fuzzed text) and an argv of its verbs, ids,
  ``--status``, ``--json`` and ``--records``, against a fresh copy of a small SQLite
  store of five tasks (one paused), up to two of its rows edited past the store (a
  column set to a value no write makes: wrong types, NaN, a long text, damaged JSON).

The rule (decisions/checking-input.md, "Bad input is reviewed as a table"; the command line's: "exit
statuses"): the command ends with status 0, 1 or 2 (argparse's ``SystemExit``
counted), a refusal (1, 2) writes a line to stderr, and nothing else escapes ``main``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports(include=["lldsched"]):
    from lldsched import FixedRate, OneTime, Scheduler, SqliteTaskStore
    from lldsched.cli import crontab as _crontab  # noqa: F401  (instrumented)
    from lldsched.cli import main, storeurl
    from lldsched.cli import storetasks as _storetasks  # noqa: F401
    from lldsched.stores import peek as _peek  # noqa: F401

from _rule import run, timed

SCRATCH = Path(tempfile.mkdtemp(prefix="lldsched-fuzz-cli-"))
FIXTURE = SCRATCH / "pristine" / "fixture.db"  # copied to SCRATCH / "fixture.db" each run

CRON_ARGS = (
    "cron", "--crontab", "--system", "--tz", "-n", "--start", "-", "--", "--help",
    "0 3 * * 1-5", "*/15 * * * * *", "@daily", "@reboot", "Europe/Berlin", "UTC", "utc",
    "Europe", "Pacific/Apia", "2026-03-29", "2026-03-29T02:30", "0001-01-01", "9999-12-31",
    "9999-12-31T23:59", "2026-13-01", "nan", "inf", "-1", "0", "1", "10000", "10001",
    "99999999999999999999", "1e3", "", " ", "\x00", "tasks", "--store", "demo",
)  # fmt: skip
TASK_ARGS = (
    "tasks", "--store", "--status", "--json", "--records", "show", "redrive", "pause",
    "resume", "cancel", "run-now", "remove", "a", "b", "failed", "paused", "done",
    "scheduled", "nope", "-1", "0", "3", "99999999999999999999", "", "--", "--help",
    "sqlite:fixture.db", "sqlite://fixture.db", "sqlite:", "sqlite://", "sqlite:missing.db",
    "sqlite:fixture.db?mode=rw", "postgresql://u:secret@h/db", "fixture.db", "sqlite:.",
)  # fmt: skip
CRONTAB_LINES = (
    "0 3 * * 1-5 /bin/true", "@daily echo hi", "@reboot x", "@Daily x", "CRON_TZ=Europe/Berlin",
    "CRON_TZ=", "CRON_TZ=Nowhere", "TZ=UTC", "SHELL=/bin/zsh", "MAILTO=root", "RANDOM_DELAY=5",
    "A = 'b c'", "'A'=\"b\"", "# comment", "", "   ", "\t", "- 0 3 * * * x", "0 3 * * * -n x",
    "0 3 * * * root x", "* * * * * echo %stdin%more\\%", "~ 3 * * * x", "0 3 * * *",
    "0 3 * * * ", "60 3 * * * x", "0 0 30 2 * x", "*/0 * * * * x", "x=", "=x", "\\",
)  # fmt: skip
COMMANDS = ("cron", "tasks")
COLUMNS = (
    "definition", "status", "next_run_at", "attempt", "run_count", "failure_count",
    "last_error", "running", "failed_seq", "priority", "version", "waited", "slot",
    "slot_due", "resume_at", "grid", "name",
)  # fmt: skip
VALUES: tuple[object, ...] = (
    None, 0, 1, -1, 2**63 - 1, 1.5, 1e300, -0.0, "", "x", "scheduled", "nan", "inf",
    b"\xff", "z" * 50_000, '{"name": 5}', "[", "null", '{"type": "Nope"}',
)  # fmt: skip


def build_fixture() -> None:
    from tests import jobs

    FIXTURE.parent.mkdir()
    store = SqliteTaskStore(str(FIXTURE))
    ids = iter("abcde").__next__
    with Scheduler(store=store, ids=ids) as scheduler:
        scheduler.schedule("every minute", jobs.noop, FixedRate(60))
        scheduler.schedule("weekdays", jobs.noop, "0 3 * * 1-5")
        scheduler.schedule("once", jobs.noop, OneTime(2e9))
        scheduler.pause(scheduler.schedule("hourly", jobs.noop, FixedRate(3600)).id)
        scheduler.schedule("broken", jobs.broken, FixedRate(1))
    store.close()


def draw(fdp: atheris.FuzzedDataProvider, words: tuple[str, ...]) -> str:
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return str(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 24)))
    index: int = fdp.ConsumeIntInRange(0, len(words) - 1)
    return words[index]


def crontab(fdp: atheris.FuzzedDataProvider) -> bytes:
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return bytes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 400)))
    lines = [draw(fdp, CRONTAB_LINES) for _ in range(fdp.ConsumeIntInRange(0, 8))]
    end = "\n" if fdp.ConsumeBool() else ""
    return ("\n".join(lines) + end).encode("utf-8", "surrogateescape")


def damage(fdp: atheris.FuzzedDataProvider, path: Path) -> None:
    """One column of one task's row set to a value no write makes (or fuzzed text)."""
    column = COLUMNS[fdp.ConsumeIntInRange(0, len(COLUMNS) - 1)]
    if fdp.ConsumeBool():
        value: object = VALUES[fdp.ConsumeIntInRange(0, len(VALUES) - 1)]
    else:
        value = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 40))
    task = "abcde"[fdp.ConsumeIntInRange(0, 4)]
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(f"UPDATE tasks SET {column} = ? WHERE id = ?", (value, task))
    except sqlite3.IntegrityError:  # NOT NULL: a value no file holds
        pass
    finally:
        connection.close()


def argv(fdp: atheris.FuzzedDataProvider) -> list[str]:
    command = COMMANDS[fdp.ConsumeIntInRange(0, len(COMMANDS) - 1)]
    words = CRON_ARGS if command == "cron" else TASK_ARGS
    args = [command] + [draw(fdp, words) for _ in range(fdp.ConsumeIntInRange(0, 7))]
    if command == "cron" and fdp.ConsumeBool():
        (SCRATCH / "crontab").write_bytes(crontab(fdp))
        args[1:1] = ["--crontab", "crontab"]
    if command == "tasks":
        for leftover in SCRATCH.glob("fixture.db-*"):  # a verb's WAL
            leftover.unlink()
        shutil.copyfile(FIXTURE, SCRATCH / "fixture.db")
        for _ in range(fdp.ConsumeIntInRange(0, 2)):  # a row edited past the store
            damage(fdp, SCRATCH / "fixture.db")
        for i, arg in enumerate(args):  # never a server: a dsn is parsed, not opened
            if arg.startswith(("postgresql:", "postgres:")) and args[i - 1] == "--store":
                storeurl.parse_store(arg)
                args[i] = "sqlite:missing.db"
    return args


def test_one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    args = argv(fdp)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), timed(10):
        try:
            status = main(args)
        except SystemExit as exc:  # argparse's refusal and --help
            status = exc.code if isinstance(exc.code, int) else 2
    assert status in (0, 1, 2), (args, status, err.getvalue())
    if status:
        assert err.getvalue().strip(), (args, status, "nothing on stderr")
    assert "Traceback" not in err.getvalue(), (args, err.getvalue())


if __name__ == "__main__":
    os.chdir(SCRATCH)
    build_fixture()
    try:
        run(test_one, sys.argv)
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
