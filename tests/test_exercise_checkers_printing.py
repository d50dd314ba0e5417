"""What a learner's answer prints while notebook 07's checks run: its first lines are
shown, the rest counted in one line, and the verdicts follow, whatever the answer prints
or however long it loops printing (``notebooks/exercises/printed.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
from exercises.checks import check_answer, check_task_queue
from exercises.printed import SHOWN_LINES
from exercises.schedule_checks import check_next_slot, next_slot_checks
from exercises.solutions import TaskQueue

from tests.test_exercise_checkers_adversarial import SHORT


def prints_every_step(slot: float, period: float, finished: float, policy: str) -> float:
    """A right next_slot with a learner's debugging print in it, 200 lines a call."""
    for step in range(200):
        print("debug", slot, period, finished, policy, step)
    following = slot + period
    while policy == "skip" and following < finished:
        following += period
    return following


def test_an_answer_that_prints_in_every_call_shows_its_first_lines_then_the_verdicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stdout = sys.stdout
    check_next_slot(prints_every_step)
    lines = capsys.readouterr().out.splitlines()
    # 506 calls of 200 lines each: 101,200 lines above the verdicts before
    assert lines[:SHOWN_LINES] == [f"debug 0 60 5 skip {step}" for step in range(SHOWN_LINES)]
    assert lines[SHOWN_LINES].startswith(
        f"[... and {506 * 200 - SHOWN_LINES:,} more lines printed while the checks ran, not shown"
    ), lines[SHOWN_LINES]
    assert lines[-1] == "7 of 7 checks pass", lines[-8:]
    assert len(lines) == SHOWN_LINES + 1 + 8
    assert sys.stdout is stdout


def test_a_loop_that_prints_and_never_ends_is_stopped_and_its_printing_bounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def prints_in_a_loop(slot: float, period: float, finished: float, policy: str) -> float:
        following = slot + period
        while policy == "skip" and following < finished:
            print("following is", following)
            following + period  # the mistake: `+` where `+=` belongs
        return following

    check_answer(prints_in_a_loop, next_slot_checks, "check_next_slot(next_slot)", limit=SHORT)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:SHOWN_LINES] == ["following is 60"] * SHOWN_LINES
    assert "more lines printed while the checks ran, not shown" in lines[SHOWN_LINES]
    assert f"next_slot(0, 60, 150, 'skip') did not return within {SHORT:g} s" in out
    assert len(lines) <= SHOWN_LINES + 1 + 8, lines[SHOWN_LINES:]


def test_one_print_longer_than_the_budget_is_cut_and_the_notice_starts_a_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def prints_a_long_line(slot: float, period: float, finished: float, policy: str) -> float:
        print("x" * 10_000, end="")  # no newline: the notice must not join this line
        following = slot + period
        while policy == "skip" and following < finished:
            following += period
        return following

    check_next_slot(prints_a_long_line)
    lines = capsys.readouterr().out.splitlines()
    assert set(lines[0]) == {"x"} and len(lines[0]) < 10_000
    assert lines[1].startswith("[... and ") and "more characters" in lines[1], lines[1]
    assert lines[-1] == "7 of 7 checks pass"


def test_a_print_in_an_answer_is_not_taken_for_a_call_into_the_checker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The bounded stream is the checker's code, called by every print of the answer: the
    # watch that refuses an answer asking the checker passes it by.
    def prints_once(slot: float, period: float, finished: float, policy: str) -> float:
        print(f"next_slot({slot}, {period}, {finished}, {policy!r})", flush=True)
        sys.stderr.write("and on stderr\n")
        following = slot + period
        while policy == "skip" and following < finished:
            following += period
        return following

    check_next_slot(prints_once)
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "7 of 7 checks pass", captured.out[-2000:]
    assert "called into" not in captured.out
    assert captured.err.startswith("and on stderr\n")  # its first lines, on their own stream


class PrintsItsHeap(TaskQueue):
    """A right queue that prints its heap at each call of pop_due."""

    def pop_due(self) -> str:
        print("pop_due: heap", self._heap[:3])
        return super().pop_due()


def test_a_queue_that_prints_on_its_consumers_threads_passes_with_its_printing_bounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    check_task_queue(PrintsItsHeap)
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("pop_due: heap") for line in lines[:SHOWN_LINES])
    assert "more lines printed while the checks ran" in lines[SHOWN_LINES]  # 1,000 and more
    assert lines[-1] == "20 of 20 checks pass", lines[SHOWN_LINES:]
