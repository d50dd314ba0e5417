"""The trust model made true (docs/decisions/security.md, "Security and trust"): what a store
row can make a process import, hostile text in SQL, store files readable by their owner
only, and passwords kept out of messages."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import (
    SqliteTaskStore,
    StoreError,
    ValidationError,
)
from lldsched.importpath import import_callable
from lldsched.stores.sqlite.claim import sidecar_mode
from tests.test_store_sqlite import snapshot, task

HOSTILE = "x'); DROP TABLE tasks; --\"\\ \x01 lldsched"


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, whatever the test runner's: files are created 0644 under it."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_store_and_its_wal_files_are_readable_by_their_owner_only(
    tmp_path: Path, umask_022: None
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task()))
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        assert wal.exists() and shm.exists()
        assert (mode(path), mode(wal), mode(shm)) == (0o600, 0o600, 0o600)


def test_a_store_file_that_exists_keeps_the_mode_its_operator_gave_it(
    tmp_path: Path, umask_022: None
) -> None:
    path = tmp_path / "tasks.db"
    path.touch()
    path.chmod(0o660)  # a group of users sharing one store
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task()))
    assert mode(path) == 0o660


@pytest.mark.parametrize("shared", [False, True])
def test_a_stores_lock_files_are_its_owners_only_so_no_other_user_can_hold_them(
    tmp_path: Path, umask_022: None, shared: bool
) -> None:
    """flock needs only a descriptor open for reading: a lock file every user could read
    (0644, before) let any local user hold it, and the service was refused at its start
    ("already open by pid ...") for as long as they liked; a shared store's write gate
    likewise stopped every write.  An older release's 0644 lock file is set right."""
    path = tmp_path / "tasks.db"
    lock, gate = Path(f"{path}.lock"), Path(f"{path}.write")
    with SqliteTaskStore(path, shared=shared):
        assert mode(lock) == 0o600
        assert not shared or mode(gate) == 0o600
    lock.chmod(0o644)  # as an older release left it
    with SqliteTaskStore(path, shared=shared):
        assert mode(lock) == 0o600


def test_a_stores_lock_files_follow_the_mode_its_operator_gave_the_store(
    tmp_path: Path, umask_022: None
) -> None:
    """A group of users sharing one store (0660) can all claim it: its lock files are
    0660 too (the umask's 0640, before any of them wrote, made the others' open fail)."""
    path = tmp_path / "tasks.db"
    path.touch()
    path.chmod(0o660)
    with SqliteTaskStore(path, shared=True):
        assert (mode(Path(f"{path}.lock")), mode(Path(f"{path}.write"))) == (0o660, 0o660)


def test_a_store_without_read_or_write_bits_gets_lock_files_its_owner_only_may_open(
    tmp_path: Path,
) -> None:
    """A store file its operator gave no read or write bit (0100: only root opens it)
    lends its lock files none either: they are 0600, not a mode with no bit at all (which
    root alone opens too) nor one others may open.  A store open to all (0777) lends its
    read and write bits only."""
    path = tmp_path / "tasks.db"
    path.touch()
    path.chmod(0o100)
    assert sidecar_mode(str(path)) == 0o600
    assert sidecar_mode(str(tmp_path / "not-yet.db")) == 0o600  # a store not created yet
    path.chmod(0o777)
    assert sidecar_mode(str(path)) == 0o666  # read and write bits only, never execute


def test_hostile_text_in_ids_names_and_arguments_is_data_in_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    definition = task(id=HOSTILE, name=HOSTILE, args=(HOSTILE,), kwargs={HOSTILE: HOSTILE})
    with SqliteTaskStore(path) as store:
        store.save(snapshot(definition))
    with SqliteTaskStore(path) as store:
        (loaded,) = store.load_all()
    assert loaded.task == definition
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")
    assert "tasks" in {name for (name,) in tables}


@pytest.mark.parametrize(
    "path",
    [
        "tests.jobs:noop.__class__",  # would give the function type, callable
        "tests.jobs:noop.__globals__.get",
        "os:__builtins__",
        "tests.jobs:",
        "tests..jobs:noop",
        "tests.jobs:noop ",
        "tests jobs:noop",
        ":noop",
    ],
)
def test_an_import_path_beyond_the_documented_form_is_refused_naming_it(path: str) -> None:
    with pytest.raises(ValidationError, match=r"import path|dunder") as caught:
        import_callable(path)
    assert repr(path) in str(caught.value)


def test_a_store_row_whose_path_walks_into_a_dunder_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task()))
    with sqlite3.connect(path) as connection:  # someone with write access to the file
        connection.execute(
            "UPDATE tasks SET definition = replace(definition, ?, ?)",
            ("tests.jobs:noop", "tests.jobs:noop.__class__"),
        )
    with SqliteTaskStore(path) as store, pytest.raises(StoreError, match="dunder"):
        store.load_all()


def test_a_lock_file_planted_as_a_symlink_is_refused_and_its_target_left_alone(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = tmp_path / "tasks.db"
    Path(f"{path}.lock").symlink_to(victim)  # by someone who can write the folder
    with pytest.raises(StoreError, match="cannot open its lock file") as caught:
        SqliteTaskStore(path)
    assert f"{path}.lock" in str(caught.value)
    assert victim.read_text() == "precious\n"
