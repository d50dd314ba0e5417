"""SQLite store paths as users on macOS and Windows have them: spaces and non-ASCII
letters (a user folder, ``~/Documents/Zürich 東京``), characters a URI would read as
syntax (``#``, ``?``, ``%``), a ``pathlib.Path``, a relative path (and a working
directory changed after the store opened).  Each opens, claims its file (a second
opener is refused, naming the path), keeps its tasks across a reopen, and in shared
mode shares it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lldsched import OneTime, Scheduler, SqliteTaskStore, StoreError, ValidationError
from tests import jobs

NAMES = ["tâches #1?.db", "Zürich 東京/tasks 100%.db", "plain.db"]


def _register(store: SqliteTaskStore) -> None:
    scheduler = Scheduler(store=store)
    scheduler.schedule("job", jobs.noop, OneTime(2_000_000_000.0), id="job")
    scheduler.shutdown()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("as_path", [True, False], ids=["Path", "str"])
def test_a_store_at_an_awkward_path_claims_it_and_keeps_its_tasks(
    tmp_path: Path, name: str, as_path: bool
) -> None:
    folder = tmp_path / "My Documents"
    target = folder / name
    target.parent.mkdir(parents=True)
    path: str | Path = target if as_path else str(target)
    with SqliteTaskStore(path) as store:
        _register(store)
        with pytest.raises(StoreError, match="already open in this process") as caught:
            SqliteTaskStore(path)
        assert repr(os.fspath(path)) in str(caught.value)
    assert target.exists() and Path(f"{target}.lock").exists()  # no URI reading of the name
    with SqliteTaskStore(path) as store:
        assert [snapshot.task.id for snapshot in store.load_all()] == ["job"]


@pytest.mark.parametrize("name", NAMES)
def test_shared_stores_at_an_awkward_path_share_it(tmp_path: Path, name: str) -> None:
    target = tmp_path / "My Documents" / name
    target.parent.mkdir(parents=True)
    with (
        SqliteTaskStore(target, shared=True) as first,
        SqliteTaskStore(target, shared=True) as second,
    ):
        _register(first)
        assert [snapshot.task.id for snapshot in second.load_all()] == ["job"]
        with pytest.raises(StoreError, match="already open by shared=True schedulers"):
            SqliteTaskStore(target)


def test_a_relative_path_is_the_same_file_after_the_working_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    with SqliteTaskStore(Path("Zürich tasks.db")) as store:
        monkeypatch.chdir(tmp_path / "elsewhere")
        _register(store)  # written to the file it opened, not one in the new directory
        with pytest.raises(StoreError, match="already open"):
            SqliteTaskStore(tmp_path / "here" / "Zürich tasks.db")
    assert not (tmp_path / "elsewhere" / "Zürich tasks.db").exists()
    with SqliteTaskStore(tmp_path / "here" / "Zürich tasks.db") as store:
        assert [snapshot.task.id for snapshot in store.load_all()] == ["job"]


_ASCII_LOCALE = """
import json, sys
from lldsched import SqliteTaskStore, ValidationError

assert sys.getfilesystemencoding() == "ascii", sys.getfilesystemencoding()
try:
    SqliteTaskStore(json.loads(sys.argv[1]))  # the str a program has (argv: surrogates)
except ValidationError as exc:
    print(json.dumps(str(exc)))
"""


def test_a_path_the_locales_file_system_encoding_cannot_encode_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    # A service under the C locale with UTF-8 mode off (LC_ALL=C, PYTHONUTF8=0: a
    # minimal container or a cron job's environment) encodes file names in ASCII: a
    # bare UnicodeEncodeError that named no file came out of the open before.
    path = str(tmp_path / "Zürich tasks.db")
    root = Path(__file__).resolve().parent.parent
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root)}
    child = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", _ASCII_LOCALE, json.dumps(path)],
        env={**env, "LC_ALL": "C", "PYTHONUTF8": "0"}, capture_output=True, text=True,
        encoding="utf-8", errors="backslashreplace", timeout=60, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    said = json.loads(child.stdout or "null")
    assert said is not None, "opened"
    assert repr(path) in said  # the path, as the user wrote it
    assert "file system encoding 'ascii'" in said and "PYTHONUTF8=1" in said
    assert not os.listdir(tmp_path)  # nothing created


_READ_ONLY = """
import json, os
from lldsched import Scheduler, SqliteTaskStore, StoreError

assert not os.access(".", os.W_OK)
scheduler = Scheduler().start()  # the in-memory default writes nothing
said = [scheduler.shutdown(timeout=5)]
for path in ("tasks.db", "missing/tasks.db"):
    try:
        SqliteTaskStore(path)
    except StoreError as exc:
        said.append(str(exc))
print(json.dumps(said))
"""


def test_a_store_in_a_read_only_working_directory_says_which_folder_and_why(
    tmp_path: Path,
) -> None:
    # A container with a read-only root file system and a relative STORE path: SQLite
    # says "unable to open database file", which named neither the folder nor why.
    folder = tmp_path / "read only"
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    python = [sys.executable, "-X", "dev", "-W", "error", "-c", _READ_ONLY]
    if os.geteuid() == 0:  # root writes through permission bits: a read-only bind mount
        quoted = shlex.quote(str(folder))
        mount = f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted}"
        # cd again: a working directory taken before the mount is the folder under it
        shell = f'{mount} && cd {quoted} && exec "$@"'
        command = ["unshare", "--mount", "sh", "-c", shell, "sh", *python]
    else:
        folder.chmod(0o555)
        command = python
    try:
        child = subprocess.run(
            command, cwd=folder, env=env, capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        folder.chmod(0o755)
    assert child.returncode == 0, child.stderr
    stopped, read_only, missing = json.loads(child.stdout)
    assert stopped is True
    assert read_only.startswith("the SQLite store 'tasks.db' failed to open the file")
    if os.geteuid() == 0:
        assert f"the folder {str(folder)!r} is on a read-only file system" in read_only
    else:
        assert f"may not create files in the folder {str(folder)!r}" in read_only
    assert f"the folder {str(folder / 'missing')!r} does not exist" in missing
    assert not os.listdir(folder)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("sqlite:///jobs.db", "pass the file's path: 'jobs.db'"),  # SQLAlchemy's, relative
        ("sqlite:////var/lib/app/jobs.db", "pass the file's path: '/var/lib/app/jobs.db'"),
        ("file:jobs.db?mode=rwc", "pass the file's path: 'jobs.db'"),  # SQLite's own URI
        ("file:///srv/jobs%20old.db", "pass the file's path: '/srv/jobs old.db'"),
        ("postgresql://app:s3cret@db.internal/app", "PostgresTaskStore(dsn)"),
        ("postgresql+psycopg://app:s3cret@db/app", "PostgresTaskStore(dsn)"),
        ("redis://:s3cret@cache:6379/0", "'./redis://:***@cache:6379/0'"),
    ],
)
def test_a_url_given_for_a_path_is_refused_naming_it_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, says: str
) -> None:
    """A URL where a file name goes (SQLAlchemy's ``sqlite:///jobs.sqlite`` from an
    APScheduler configuration, a PostgreSQL dsn in the wrong store) was opened as a
    relative path: ``sqlite:jobs.db`` made a file of that name, ``sqlite:///jobs.db`` was
    refused for a missing folder ``'sqlite:'`` ("create it first"), and the message
    showed a dsn's password."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError) as refused:
        SqliteTaskStore(given)
    message = str(refused.value)
    assert "is a URL" in message and says in message
    assert "s3cret" not in message
    assert not any(tmp_path.iterdir())  # no file, no folder, no lock file made


def test_a_file_whose_name_reads_as_a_url_opens_when_named_from_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match=re.escape("'./backup:2026.db'")):
        SqliteTaskStore("backup:2026.db")
    with SqliteTaskStore("./backup:2026.db") as store:  # the way the refusal names
        _register(store)
    assert (tmp_path / "backup:2026.db").exists()
    with SqliteTaskStore(tmp_path / "backup:2026.db") as store:  # a Path is never a URL
        assert [snapshot.task.id for snapshot in store.load_all()] == ["job"]


def test_an_empty_path_is_refused_saying_it_would_keep_nothing() -> None:
    """``SqliteTaskStore(os.environ.get("STORE", ""))`` opened SQLite's private temporary
    database, deleted at close: a "durable" store whose tasks no restart found."""
    with pytest.raises(ValidationError, match=r"path is empty: .*deleted at close"):
        SqliteTaskStore("")
    SqliteTaskStore(":memory:").close()  # a store that keeps nothing, asked for by name


@pytest.mark.parametrize("end", ["\n", "\r\n", "\t"], ids=["LF", "CRLF", "tab"])
@pytest.mark.parametrize("as_path", [True, False], ids=["Path", "str"])
def test_a_path_holding_a_line_end_is_refused_naming_it_and_making_nothing(
    tmp_path: Path, end: str, as_path: bool
) -> None:
    """Before: a path read from a file with its line end (a mounted secret,
    ``read_text()``) made a store ``tasks.db\\n`` beside the ``tasks.db`` that backups and
    the next release without the typo read."""
    given = f"{tmp_path / 'tasks.db'}{end}"
    with pytest.raises(ValidationError) as refused:
        SqliteTaskStore(Path(given) if as_path else given)
    assert str(refused.value) == (
        f"the SQLite store path {given!r} holds the control character {end[0]!r}, which no "
        "store's file name needs: a path read with its line end? strip it (path.strip())"
    )
    assert not os.listdir(tmp_path)


def test_a_path_under_a_tilde_says_it_is_not_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "the folder '/srv/app/~' does not exist: create it first"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError) as refused:
        SqliteTaskStore("~/lldsched-no-such-folder/tasks.db")
    message = str(refused.value)
    assert "'~' is not your home here" in message and "expanduser()" in message


@pytest.mark.parametrize("missing", [True, False], ids=["folder missing", "folder there"])
def test_a_path_ending_in_a_separator_is_refused_as_a_folder_making_nothing(
    tmp_path: Path, missing: bool
) -> None:
    """Before: ``SqliteTaskStore("/srv/app/data/")`` with ``data`` missing opened a
    database *file* named ``data`` (and ``data.lock`` beside it), which the deploy that
    made the folder next found in its way; with ``data`` there, a ``StoreError`` named
    the folder."""
    folder = tmp_path / "data"
    if not missing:
        folder.mkdir()
    given = f"{folder}{os.sep}"
    with pytest.raises(ValidationError) as refused:
        SqliteTaskStore(given)
    assert repr(given) in str(refused.value) and "names a folder" in str(refused.value)
    assert sorted(tmp_path.iterdir()) == ([] if missing else [folder])
    assert not missing or not folder.exists()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_store_created_where_none_was_says_so_and_an_existing_one_does_not(
    tmp_path: Path, shared: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # A service whose volume was not mounted found an empty folder, created a new store
    # there and started with none of its tasks, paused ones running again, in silence.
    made = [tmp_path / "tasks.db", tmp_path / "touched.db"]
    made[1].touch()  # an empty file: a new store too (a deploy that creates it first)
    with caplog.at_level(logging.INFO, logger="lldsched"):
        for path in made:
            SqliteTaskStore(path, shared=shared).close()
        assert caplog.messages == [
            f"created a new, empty store at {str(path)!r}: no store was there (if one was "
            "meant to be, check the path and that its volume is mounted)"
            for path in made
        ]
        caplog.clear()
        SqliteTaskStore(made[0], shared=shared).close()
        SqliteTaskStore(":memory:").close()
    assert caplog.messages == []


def test_a_private_database_opens_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # It warned "SQLite could not use WAL mode here (got 'memory'); writes will be
    # slower" at every open: a private database has no WAL to use, and no file.
    with caplog.at_level(logging.DEBUG, logger="lldsched"):
        SqliteTaskStore(":memory:").close()
    assert caplog.messages == []
