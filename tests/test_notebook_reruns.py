"""A learner runs a cell again (to see it once more, or after a change): every code cell of
the notebooks below, run twice in a row on one kernel, runs without an error.

Each notebook here once failed so: 05's redrive cell waited for the dead task's second
run (``run_count == 2``), which a second press made its third, and failed after 10 s with
a bare AssertionError; 06's recovery cell removed the store's folder at its end, so a
second run could not open the store.  The other notebooks were checked the same way by
hand (``tools/build_notebooks.py``'s ``build`` with each code cell doubled); running them
all doubled here would add minutes to every test run.

*Run All* again (every cell once more, in order, on the same kernel) is checked for 05,
the one notebook whose cells leave a scheduler running: a second one must not be left
beside it.  01, 04, 06, 09 and 10, run so by hand, kept the same threads.
"""

from __future__ import annotations

import ast
import copy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_notebooks  # noqa: E402

RERUN = ["05-live-control", "06-persistence-and-shutdown"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", RERUN)
def test_every_cell_runs_twice_in_a_row_without_an_error(name: str) -> None:
    notebook = build_notebooks.build(build_notebooks.SOURCES / f"{name}.py")
    doubled = []
    for cell in notebook.cells:
        doubled.append(cell)
        if cell.cell_type == "code":
            again = copy.deepcopy(cell)
            again.id = f"{cell.id}-again"
            doubled.append(again)
    notebook.cells = doubled
    build_notebooks.execute(notebook)  # raises CellExecutionError, naming the cell


THREADS = "import threading; print(sorted(t.name for t in threading.enumerate()))"


@pytest.mark.timeout(300)
def test_run_all_twice_on_one_kernel_leaves_one_scheduler_of_05_running() -> None:
    """*Run All* again (every cell, in order, on the same kernel) made 05's first cell
    start a second scheduler beside the first, which no one could stop any more (its
    panel closed, its button's output replaced): two timers and four workers, the old
    heartbeat climbing unseen.  The first cell now shuts the earlier one down."""
    notebook = build_notebooks.build(build_notebooks.SOURCES / "05-live-control.py")
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    again = copy.deepcopy(code)
    for cell in again:
        cell.id = f"{cell.id}-again"
    probe = copy.deepcopy(code[0])
    probe.id, probe.source = "threads", THREADS
    notebook.cells = [*code, *again, probe]
    build_notebooks.execute(notebook)
    names = ast.literal_eval(probe.outputs[0]["text"])
    schedulers = [name for name in names if name.startswith("lldsched-")]
    assert [name for name in schedulers if name.endswith("-timer")] == ["lldsched-2-timer"], names
