"""What one answer's check leaves in the learner's kernel does not judge the next answer.

A learner runs ``check_task_queue`` in one kernel, answer after answer.  A push or cancel
that loops for ever used to spin on, on the checker's daemon threads, after its check
(twenty threads a run), and the poll check read the whole process's CPU time: the next
answer, the reference one, took minutes and was told "a busy loop".  And a cancel that
loops holding the lock was told that pop_due held it.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
from exercises.checks import Result, run_checks, timer_checks
from exercises.solutions import TaskQueue

ENDS = 60.0
"""Seconds a stopped call's thread is given to end: it ends at once (a Python loop); the
bound is for a suite on a loaded machine, never reached by a passing run."""


class PushLoops(TaskQueue):
    """A push whose loop never ends (a sift-up that never moves), outside the lock."""

    def push(self, task: str, due: float) -> None:
        while True:
            pass


class CancelLoops(TaskQueue):
    """A cancel that waits, in a loop under the lock, for its task to go."""

    def cancel(self, task: str) -> None:
        with self._cond:
            while task in self._live:
                pass


def _checkers_calls() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "the checker's call"]


def test_a_push_that_loops_leaves_no_thread_running_after_its_check() -> None:
    before = set(_checkers_calls())
    results = run_checks(timer_checks(PushLoops))
    assert not any(r.passed for r in results)
    assert "push waits or loops" in results[0].message
    left = [t for t in _checkers_calls() if t not in before]
    for thread in left:
        thread.join(ENDS)
    assert not [t for t in left if t.is_alive()], "a looping push still runs after its check"


@pytest.fixture
def busy_neighbour() -> Iterator[None]:
    """Another thread of the kernel at work all along (hashing, which lets the GIL go, so
    it takes CPU without slowing the checker's threads): a Scheduler's task of an earlier
    cell, say."""
    done = threading.Event()
    data = b"x" * (1 << 20)

    def work() -> None:
        while not done.is_set():
            hashlib.sha256(data).digest()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _poll_check(answer: type[TaskQueue]) -> Result:
    (check,) = [c for c in timer_checks(answer) if c[0].startswith("no sleep or poll loop")]
    (result,) = run_checks([check])
    return result


@pytest.mark.usefixtures("busy_neighbour")
def test_a_right_pop_due_is_not_a_busy_loop_while_another_thread_works() -> None:
    result = _poll_check(TaskQueue)
    assert result.passed, result.message


class SpinsWithoutWaiting(TaskQueue):
    """A busy loop that neither reads the clock nor waits while nothing is queued."""

    def pop_due(self) -> str:
        while True:
            with self._cond:
                if self._heap:
                    return super().pop_due()


def test_a_busy_loop_of_pop_due_itself_is_still_seen() -> None:
    result = _poll_check(SpinsWithoutWaiting)
    assert not result.passed
    assert "took the lock" in result.message, result.message


def test_a_cancel_that_loops_holding_the_lock_is_told_so_not_blamed_on_pop_due() -> None:
    results = {r.description: r for r in run_checks(timer_checks(CancelLoops))}
    waiting = results["a cancelled entry never runs; pushed again, it does"]
    assert not waiting.passed
    assert "cancel itself holds the queue's lock" in waiting.message, waiting.message
    cost = results["cancel costs O(1): a tombstone, not a removal"]
    assert not cost.passed
    assert "no consumer was running" in cost.message, cost.message
    for result in results.values():
        assert "pop_due holds the lock" not in result.message, result
