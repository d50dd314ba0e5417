"""A store on a file system that is really full says so, naming the folder.

SQLite says a full disk as "database or disk is full" only where it writes a page: at
the open, a ``-shm`` it cannot make is a "disk I/O error", read as a failing disk.  The
store adds what the file system says (``no_room`` in ``lldsched/stores/sqlite/file.py``)
to each failure, at the open, at a write and in ``lldsched tasks``.

The disk is real: a 2 MiB tmpfs mounted in a mount namespace of the child's own
(``unshare --mount``; not root, in a user namespace of its own too), filled with a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import json, os, sys
from lldsched import FixedRate, Scheduler, SqliteTaskStore, StoreError
from lldsched.stores.sqlite.peek import peek_sqlite
from tests import jobs

folder = sys.argv[1]
path = os.path.join(folder, "tasks.db")
with SqliteTaskStore(path) as store:
    scheduler = Scheduler(store=store)
    scheduler.schedule("kept", jobs.noop, FixedRate(3600), id="kept")
    scheduler.shutdown()
running = SqliteTaskStore(path)  # open before the disk fills: its next write fails
scheduler = Scheduler(store=running)


def fill():
    try:
        with open(os.path.join(folder, "filler"), "wb") as filler:
            while True:
                filler.write(bytes(65536))
                filler.flush()
    except OSError:
        pass


said = {}
try:
    fill()
    try:
        scheduler.schedule("late", jobs.noop, FixedRate(3600), id="late")
    except StoreError as exc:
        said["write"] = str(exc)
    said["registered"] = sorted(t.id for t in scheduler.tasks())
    scheduler.shutdown()
    running.close()
    fill()  # what the close freed
    for what, opening in (("open", SqliteTaskStore), ("peek", peek_sqlite)):
        try:
            opening(path).close()
        except StoreError as exc:
            said[what] = str(exc)
finally:
    print(json.dumps(said))
"""


def test_a_full_file_system_is_named_at_the_open_at_a_write_and_by_the_listing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "small"
    folder.mkdir()
    quoted = str(folder).replace("'", "'\\''")
    shell = f"mount -t tmpfs -o size=2m tmpfs '{quoted}' && exec \"$@\""
    namespace = ["--mount"] if os.geteuid() == 0 else ["--user", "--map-root-user", "--mount"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        ["unshare", *namespace, "sh", "-c", shell, "sh", sys.executable, "-c", _CHILD,
         str(folder)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    said = json.loads(child.stdout)
    path = str(folder / "tasks.db")
    full = f"(the file system of the folder {str(folder)!r} is full: "
    assert said["write"].startswith(f"the SQLite store {path!r} failed to save task 'late' {full}")
    assert said["write"].endswith("OperationalError: database or disk is full")
    assert said["registered"] == ["kept"]  # nothing registered, nothing lost
    assert said["open"].startswith(f"the SQLite store {path!r} failed to read its header {full}")
    assert said["peek"].startswith(
        f"the SQLite store {path!r} failed to open the file to read {full}"
    )
    assert os.listdir(folder) == []  # the tmpfs was the child's alone
