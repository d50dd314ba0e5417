"""A temporary folder in memory for the SQLite files of tests that check what a store
holds, not how it reaches the disk.

On ``/dev/shm`` (a tmpfs) where the machine has one, else a temporary folder on disk.
On a disk a store's file synced its new write-ahead log and the folder at its first
write, and the log and the file as it closed: the most of the wall time of a test that
opens and closes a store again and again, waiting on the disk, not on the package.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SHM = Path("/dev/shm")


def memory_folder(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder named ``prefix...``, in memory where the machine has a tmpfs
    for it; removed as its ``with`` block ends."""
    where = SHM if SHM.is_dir() and os.access(SHM, os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=where)
