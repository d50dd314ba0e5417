"""tools/mutate.py: a mutant whose tests hang is stopped at its budget, with what it started."""

from __future__ import annotations

import importlib.util
import os
import select
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate", ROOT / "tools" / "mutate.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules["mutate"] = tool  # its dataclass looks its module up there
    spec.loader.exec_module(tool)
    return tool


def ended_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` is gone or has ended (a zombie), waiting up to ``seconds``."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([handle], [], [], seconds)  # readable once it ended
        return bool(readable)
    finally:
        os.close(handle)


def test_a_budget_is_a_multiple_of_the_unmutated_run_with_a_floor() -> None:
    tool = load_tool()
    assert tool.budget(0.5) == tool.FLOOR
    assert tool.budget(3 * tool.FLOOR) == tool.FACTOR * 3 * tool.FLOOR


def test_a_run_that_outlasts_its_budget_is_stopped_with_the_processes_it_started(
    tmp_path: Path,
) -> None:
    """The run starts a child and then hangs, as a mutant's tests that spin; each budget
    runs out, and the run is stopped.  A budget spent before the run had started its
    child (Python's start-up, slow on a loaded machine) shows nothing about that child:
    the run is made again with twice the budget, until one had it started."""
    tool = load_tool()
    pid_file = tmp_path / "child.pid"
    hangs = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r} + '.new', 'w').write(str(child.pid))\n"
        f"os.replace({str(pid_file)!r} + '.new', {str(pid_file)!r})\n"  # whole, or not there
        "child.wait()\n"  # never returns: the run hangs
    )
    for budget in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
        status = tool.run_to_end(
            [sys.executable, "-c", hangs], cwd=tmp_path, env=dict(os.environ), timeout=budget
        )
        assert status is None  # run_tests says 'timeout', counted as killed
        if pid_file.exists():
            break
    else:
        pytest.fail("the run never started its child, even with 32 s")
    assert ended_within(int(pid_file.read_text()), seconds=10.0)


def test_a_run_that_ends_in_its_budget_gives_its_exit_status(tmp_path: Path) -> None:
    tool = load_tool()
    command = [sys.executable, "-c", "raise SystemExit(3)"]
    assert tool.run_to_end(command, cwd=tmp_path, env=dict(os.environ), timeout=60.0) == 3
