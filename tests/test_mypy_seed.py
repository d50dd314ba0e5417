"""The user-mypy cache's start from the project's (tests/mypy_seed.py): a whole copy or
none, never the project's cache itself, never over a cache the runs already keep."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from tests.mypy_seed import seed


def project_cache(folder: Path) -> Path:
    """A cache laid out as mypy's: a tag, a folder per Python, SQLite files in WAL mode."""
    folder.mkdir()
    (folder / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    version = folder / "3.11"
    version.mkdir()
    for shard in range(2):
        with contextlib.closing(sqlite3.connect(version / f"cache.{shard}.db")) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE files (path TEXT PRIMARY KEY, data BLOB)")
            db.execute("INSERT INTO files VALUES (?, ?)", (f"pandas/{shard}.data.json", b"x"))
            db.commit()
    return folder


def rows(database: Path) -> list[tuple[str, bytes]]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        return list(db.execute("SELECT path, data FROM files"))


def test_a_cache_not_there_yet_starts_as_a_copy_of_the_projects(tmp_path: Path) -> None:
    project = project_cache(tmp_path / "project")
    cache = tmp_path / "user" / "cache"
    cache.parent.mkdir()
    # A project run writing as the copy is made: its committed write is still in the
    # write-ahead log (no checkpoint while the connection is open), and is copied.
    with contextlib.closing(sqlite3.connect(project / "3.11" / "cache.1.db")) as writer:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("INSERT INTO files VALUES ('lldsched.data.json', x'01')")
        writer.commit()
        assert (project / "3.11" / "cache.1.db-wal").stat().st_size > 0
        assert seed(cache, project=project) is True
    assert ("lldsched.data.json", b"\x01") in rows(cache / "3.11" / "cache.1.db")
    assert (cache / "CACHEDIR.TAG").read_text() == (project / "CACHEDIR.TAG").read_text()
    for shard in range(2):
        copied = cache / "3.11" / f"cache.{shard}.db"
        assert rows(copied) == rows(project / "3.11" / f"cache.{shard}.db")
        assert (f"pandas/{shard}.data.json", b"x") in rows(copied)
    assert sorted(path.name for path in cache.parent.iterdir()) == ["cache"]  # no part left
    # A copy: what the user's runs write stays out of the project's cache.
    with contextlib.closing(sqlite3.connect(cache / "3.11" / "cache.0.db")) as db:
        db.execute("DELETE FROM files")
        db.commit()
    assert rows(project / "3.11" / "cache.0.db") == [("pandas/0.data.json", b"x")]


def test_a_cache_the_runs_already_keep_is_left_as_it_is(tmp_path: Path) -> None:
    project = project_cache(tmp_path / "project")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "kept").write_text("the user's runs' own")
    assert seed(cache, project=project) is False
    assert [path.name for path in cache.iterdir()] == ["kept"]


def test_without_a_project_cache_the_run_starts_from_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert seed(cache, project=tmp_path / "no-project-cache") is False
    assert not cache.exists()


def test_a_database_that_cannot_be_read_leaves_no_cache_and_no_part(tmp_path: Path) -> None:
    project = project_cache(tmp_path / "project")
    (project / "3.11" / "cache.1.db").write_bytes(b"not a database, a file cut short")
    cache = tmp_path / "user" / "cache"
    cache.parent.mkdir()
    assert seed(cache, project=project) is False
    assert list(cache.parent.iterdir()) == []


def test_a_project_cache_named_relative_to_the_working_folder_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_cache(tmp_path / "project")
    monkeypatch.chdir(tmp_path)  # SQLite opens the copy's source by a file: URI, absolute
    assert seed(Path("cache"), project=Path("project")) is True
    assert rows(tmp_path / "cache" / "3.11" / "cache.0.db") == [("pandas/0.data.json", b"x")]
