"""Notebook 08's "Break it and watch" (section 5) says what the edit it asks for does.

The edit, ``TaskQueue.push`` with its ``self._wake.notify_all()`` replaced by ``pass``,
is made here by building every queue without a condition to notify (``wake=None``),
which leaves ``push`` doing exactly what the edited line does: nothing.  Section 3's
tests are read from the notebook's source and called as pytest would call them.
"""

from __future__ import annotations

import ast
import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import FakeClock, Scheduler
from lldsched.core.duequeue import TaskQueue

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_notebooks  # noqa: E402

SOURCE = ROOT / "notebooks" / "src" / "08-testing-a-scheduler.py"
HAND_OFF = "test_a_full_hand_off_queue_keeps_due_work_in_the_heap"
HAND_OFF_TASKS = 10  # the tasks it schedules right after `with Scheduler(...)`


def _section_3_tests() -> dict[str, Callable[[], None]]:
    """The notebook's test functions, defined under its own imports (its first code cell)."""
    cells = [cell for cell in build_notebooks.parse(SOURCE.read_text()) if cell.kind == "code"]
    namespace: dict[str, Any] = {}
    exec(cells[0].text, namespace)
    for cell in cells:
        if cell.text.startswith("def test_"):
            exec(cell.text, namespace)
    return {name: value for name, value in namespace.items() if name.startswith("test_")}


def _section_5() -> str:
    """Section 5's text, on one line."""
    source = SOURCE.read_text()
    section = source[source.index("## 5. Break it and watch") : source.index("## Check yourself")]
    return " ".join(line.removeprefix("#").strip() for line in section.splitlines())


@pytest.fixture
def silent_push(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    made = TaskQueue.__init__

    def without_wake(self: TaskQueue, wake: threading.Condition | None = None) -> None:
        made(self, None)

    monkeypatch.setattr(TaskQueue, "__init__", without_wake)
    yield


def test_the_line_section_5_asks_to_replace_is_in_the_queue_s_push() -> None:
    assert "self._wake.notify_all()" in inspect.getsource(TaskQueue.push)
    assert "replace `self._wake.notify_all()` with `pass`" in _section_5()


def test_with_push_silent_the_parked_timer_test_fails_saying_why_and_the_listener_test_passes(
    silent_push: None,
) -> None:
    tests = _section_3_tests()
    assert len(tests) == 5
    with pytest.raises(AssertionError, match="the timer slept on"):
        tests["test_an_earlier_insertion_wakes_a_timer_parked_twelve_hours_out"]()
    tests["test_a_listener_blocked_on_an_event_does_not_delay_the_next_due_task"]()


def test_with_push_silent_the_hand_off_test_fails_or_passes_as_the_race_falls(
    silent_push: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Section 5 says a test that schedules right after ``with Scheduler(...)`` fails on
    most runs but not on every one: it passes when its ``schedule()`` calls come before
    the timer thread's first look.  Each order is forced here, one after the other."""
    hand_off = _section_3_tests()[HAND_OFF]
    scheduled = threading.Semaphore(0)  # released by each schedule() call
    run_timer, schedule = Scheduler._run_timer, Scheduler.schedule

    def counted(self: Scheduler, *args: Any, **kwargs: Any) -> Any:
        task = schedule(self, *args, **kwargs)
        scheduled.release()
        return task

    def after_the_schedules(self: Scheduler) -> None:
        for _ in range(HAND_OFF_TASKS):
            assert scheduled.acquire(timeout=5)
        run_timer(self)

    monkeypatch.setattr(Scheduler, "schedule", counted)
    monkeypatch.setattr(Scheduler, "_run_timer", after_the_schedules)
    hand_off()  # the timer's first look finds the ten tasks: no wake-up needed

    parked = threading.Event()
    wait, start = FakeClock.wait, Scheduler.start

    def parking(self: FakeClock, condition: threading.Condition, deadline: float | None) -> None:
        parked.set()  # under the timer's lock: schedule() waits until it is in wait()
        wait(self, condition, deadline)

    def parked_first(self: Scheduler) -> Scheduler:
        start(self)
        assert parked.wait(5)
        return self

    monkeypatch.setattr(Scheduler, "_run_timer", run_timer)
    monkeypatch.setattr(FakeClock, "wait", parking)
    monkeypatch.setattr(Scheduler, "start", parked_first)
    with pytest.raises(AssertionError):
        hand_off()  # the timer parked first: nothing wakes it for the tasks pushed
    assert "but not on every run" in _section_5()


def _bound(cell: str) -> set[str]:
    """The names a cell binds at its top level (assignments, functions, classes)."""
    names: set[str] = set()
    for node in ast.parse(cell).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def test_each_list_of_outcomes_reads_only_what_the_run_above_it_bound() -> None:
    """Section 5 asks to run section 3's tests again, and to count the outcomes listed.
    Sections 3 and 4 each run pytest in one cell and list its outcomes in the next, and
    both lists read ``exit_code, outcomes``, which section 4's run binds again: after
    *Run All*, section 3's list run again showed section 4's one test, "pytest exit
    code: 0 (0: every test passed)", whatever section 3's tests had done.  Now each list
    reads names that only the cell above it binds."""
    cells = [cell.text for cell in build_notebooks.parse(SOURCE.read_text()) if cell.kind == "code"]
    runs = [index for index, cell in enumerate(cells) if "= run_tests(" in cell]
    assert len(runs) == 2  # section 3's and section 4's
    for index in runs:
        listing = ast.parse(cells[index + 1])
        read = {n.id for n in ast.walk(listing) if isinstance(n, ast.Name)} & _bound(cells[index])
        assert read, f"the cell after run {index} lists nothing that run bound"
        elsewhere = set().union(*(_bound(cell) for j, cell in enumerate(cells) if j != index))
        assert not read & elsewhere, f"{sorted(read & elsewhere)} are bound by another cell too"
