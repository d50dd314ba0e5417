"""A store file this process may not write: refused at the open, naming it and why.

SQLite opens a file it may not write read-only without a word: the store restored
every task, and its scheduler then stored nothing (a registration refused with
"attempt to write a readonly database"; a service registering the same jobs again
writes nothing and so started "fine", in an outage from its first run, its records
lost).  Now :func:`~lldsched.stores.sqlite.file.refuse_read_only` refuses the file, or
its ``-wal`` or ``-shm``, before SQLite opens it.  A folder SQLite may not create the
``-shm`` in says so too, naming the folder.

The read-only files are real: as root, which writes through permission bits, a
read-only bind mount in a mount namespace of the child's own (``unshare --mount``);
otherwise the permission bits.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from lldsched import OneTime, Scheduler, SqliteTaskStore
from tests import jobs

_OPEN = """
import json, sys
from lldsched import OneTime, Scheduler, SqliteTaskStore, StoreError
from tests import jobs

try:
    with SqliteTaskStore(sys.argv[1]) as store:
        scheduler = Scheduler(store=store)
        try:
            scheduler.schedule("late", jobs.noop, OneTime(2_000_000_000.0), id="late")
            said = "registered"
        except StoreError as exc:
            said = "registration refused: " + str(exc)
        scheduler.shutdown()
except StoreError as exc:
    said = "open refused: " + str(exc)
print(json.dumps(said))
"""

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _store(folder: Path) -> Path:
    """A store holding one task, closed (no -wal, no -shm)."""
    folder.mkdir()
    path = folder / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        scheduler.schedule("job", jobs.noop, OneTime(2_000_000_000.0), id="job")
        scheduler.shutdown()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _open_in_child(path: Path, *, read_only: list[Path], writable: tuple[Path, ...] = ()) -> str:
    """What a child process says opening the store at ``path`` while each of
    ``read_only`` is read-only to it (and, as root, each of ``writable`` bind-mounted
    writable again on top: a file inside a read-only folder)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    python = [sys.executable, "-X", "dev", "-W", "error", "-c", _OPEN, str(path)]
    if ROOT:
        mounts = []
        for made in read_only:
            quoted = shlex.quote(str(made))
            mounts.append(f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted}")
        for again in writable:  # the file itself, from outside the read-only folder
            spare = shlex.quote(str(again.parent.parent / "spare"))
            quoted = shlex.quote(str(again))
            mounts.append(f"cp {quoted} {spare} && mount --bind {spare} {quoted}")
        shell = " && ".join([*mounts, 'exec "$@"'])
        command = ["unshare", "--mount", "sh", "-c", shell, "sh", *python]
    else:
        for made in read_only:
            made.chmod(0o555 if made.is_dir() else 0o444)
        command = python
    try:
        child = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        for made in read_only:
            made.chmod(0o755 if made.is_dir() else 0o644)
    assert child.returncode == 0, child.stderr
    said: str = json.loads(child.stdout)
    return said


def test_a_store_file_this_process_may_not_write_is_refused_at_the_open_naming_it(
    tmp_path: Path,
) -> None:
    path = _store(tmp_path / "store")
    before = _digest(path)
    said = _open_in_child(path, read_only=[path])
    assert said.startswith(
        f"open refused: the SQLite store {str(path)!r} cannot be written by this process ("
    )
    why = (
        f"{str(path)!r} is on a read-only file system"
        if ROOT
        else f"this process may not write {str(path)!r} (its permissions)"
    )
    assert f"cannot be written by this process ({why}): every write" in said
    assert "it was left untouched" in said
    assert _digest(path) == before
    assert sorted(os.listdir(path.parent)) == ["tasks.db", "tasks.db.lock"]


def test_a_wal_this_process_may_not_write_is_refused_naming_it(tmp_path: Path) -> None:
    # A -wal and -shm left beside the file (a process killed, or another user's still
    # open): the store cannot write through them.
    path = _store(tmp_path / "store")
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"")
    said = _open_in_child(path, read_only=[wal])
    assert said.startswith(f"open refused: the SQLite store {str(path)!r} cannot be written")
    assert repr(str(wal)) in said
    assert wal.read_bytes() == b""


def test_a_folder_sqlite_may_not_create_the_shm_in_is_named(tmp_path: Path) -> None:
    # The file is writable, its folder not: SQLite cannot create the -shm, and said
    # only "attempt to write a readonly database" (as root: the folder bind-mounted
    # read-only, the file mounted writable again on top of it).
    path = _store(tmp_path / "store")
    said = _open_in_child(path, read_only=[path.parent], writable=(path,))
    folder = str(path.parent)
    why = (
        f"the folder {folder!r} is on a read-only file system"
        if ROOT
        else f"this process may not create files in the folder {folder!r} (its permissions)"
    )
    assert said.startswith(
        f"open refused: the SQLite store {str(path)!r} failed to read its header ({why}): "
    )
