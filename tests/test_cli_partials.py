"""What a write killed outright leaves, and who removes it (docs/decisions/command-line.md, "The
command line"): ``lldsched.cli.write_whole`` writes into ``.NAME.RANDOM.partial``
beside the target, holding an exclusive ``flock`` on it until it has replaced the
target.  A SIGKILL (a power cut) leaves that file; the next write to the same target
that succeeds removes it, and leaves the partial file of a writer still alive.

The children here write through ``write_whole`` itself and stop halfway, their part
flushed, until the test says (a line on their stdin) or kills them: no sleep."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import cli
from lldsched.cli import main, write_whole

PARTIAL = re.compile(r"\.chart\.png\.[0-9a-f]{8}\.partial")

HALFWAY = """\
import sys
from lldsched.cli import write_whole


def write(stream):
    stream.write(b"the child's ")
    stream.flush()
    print("half written", flush=True)
    sys.stdin.readline()  # the test says when to go on
    stream.write(b"chart")


write_whole(sys.argv[1], write)
"""


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child halfway through writing ``tmp_path / "chart.png"``, its partial file
    on the disk and locked."""
    child = subprocess.Popen(
        [sys.executable, "-c", HALFWAY, str(tmp_path / "chart.png")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "half written\n", child.communicate(timeout=60)
        yield child
    finally:
        if child.poll() is None:  # a test that failed: this child, no other
            child.kill()
            child.communicate()


def partials(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if PARTIAL.fullmatch(name))


def test_the_next_write_removes_the_part_a_writer_killed_outright_left(
    tmp_path: Path, writer: subprocess.Popen[str]
) -> None:
    """``simulate --gantt`` killed with SIGKILL, then run again: was the first run's
    ``.chart.png.RANDOM.partial`` left beside the chart for good, one more each kill."""
    path = tmp_path / "chart.png"
    left = partials(tmp_path)
    writer.kill()
    writer.communicate(timeout=60)
    assert (writer.returncode, os.listdir(tmp_path), len(left)) == (-9, left, 1)
    assert main(["simulate", "--days", "0.01", "--gantt", str(path)]) == 0
    assert os.listdir(tmp_path) == ["chart.png"]
    assert path.read_bytes().startswith(b"\x89PNG")


def test_the_next_write_leaves_the_part_a_live_writer_is_writing(
    tmp_path: Path, writer: subprocess.Popen[str]
) -> None:
    """Two writes of one chart at once: the one that ends first leaves the other's part
    alone, and the other then ends as it would have (its chart replaces the first's)."""
    path = tmp_path / "chart.png"
    left = partials(tmp_path)
    write_whole(str(path), lambda stream: stream.write(b"the parent's chart"))
    assert (path.read_bytes(), partials(tmp_path)) == (b"the parent's chart", left)
    _, err = writer.communicate("go on\n", timeout=60)
    assert (writer.returncode, err) == (0, "")
    assert (path.read_bytes(), os.listdir(tmp_path)) == (b"the child's chart", ["chart.png"])


def test_only_the_targets_own_dead_partial_files_are_removed(tmp_path: Path) -> None:
    """A file nobody holds named as a partial file of this chart is removed; another
    chart's, other names, a folder and a link under the name are left."""
    (tmp_path / ".chart.png.0123abcd.partial").write_bytes(b"dead")
    kept = [
        ".other.png.0123abcd.partial",
        ".chart.png.partial",
        ".chart.png.0123abcd.partial.bak",
        ".chart.png.0123ABCD.partial",
        "chart.png.0123abcd.partial",
    ]
    for name in kept:
        (tmp_path / name).write_bytes(b"not ours")
    (tmp_path / ".chart.png.deadbeef.partial").mkdir()
    (tmp_path / ".chart.png.feedface.partial").symlink_to(tmp_path / "chart.png")
    kept += [".chart.png.deadbeef.partial", ".chart.png.feedface.partial"]
    write_whole(str(tmp_path / "chart.png"), lambda stream: stream.write(b"new"))
    assert sorted(os.listdir(tmp_path)) == sorted([*kept, "chart.png"])
    assert (tmp_path / "chart.png").read_bytes() == b"new"


def test_a_partial_file_taken_before_its_writer_locked_it_is_written_under_another_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Between ``os.open`` and the lock, a new partial file is nobody's: another write's
    cleanup may lock and remove it then.  The writer finds its file gone (or locked) and
    takes another name, and the chart is written all the same."""
    lock = cli._try_lock
    assert lock is not None
    taken: list[str] = []

    def cleanup_first(fd: int) -> bool:
        assert lock is not None
        if not taken:  # the first lock, the writer's: another write's cleanup comes first
            taken.extend(partials(tmp_path))
            cli._remove_dead_partials(str(tmp_path), "chart.png")
            assert partials(tmp_path) == []
        return lock(fd)

    monkeypatch.setattr(cli, "_try_lock", cleanup_first)
    write_whole(str(tmp_path / "chart.png"), lambda stream: stream.write(b"new"))
    assert len(taken) == 1
    assert (os.listdir(tmp_path), (tmp_path / "chart.png").read_bytes()) == (["chart.png"], b"new")


def test_without_locks_a_dead_partial_file_is_left(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Windows (no ``flock``): no write can tell a dead writer's partial file from a live
    one's, so none is removed; the write itself is as elsewhere."""
    monkeypatch.setattr(cli, "_try_lock", None)
    (tmp_path / ".chart.png.0123abcd.partial").write_bytes(b"dead")
    write_whole(str(tmp_path / "chart.png"), lambda stream: stream.write(b"new"))
    assert sorted(os.listdir(tmp_path)) == [".chart.png.0123abcd.partial", "chart.png"]
    assert (tmp_path / "chart.png").read_bytes() == b"new"
