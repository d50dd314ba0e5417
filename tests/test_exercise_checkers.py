"""The exercise checkers of notebook 07 are honest: known-wrong answers fail, each with a
message that names the mistake, and the reference answers pass every check."""

from __future__ import annotations

import heapq
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
from exercises.checks import Result, run_checks, timer_checks
from exercises.schedule_checks import next_slot_checks, parse_field_checks
from exercises.solutions import TaskQueue, next_slot, parse_field

# -- the timer: five mistakes, and one more ---------------------------------------------------


class PollsWithSleep(TaskQueue):
    """The first answer many give: look, sleep 10 ms, look again."""

    def pop_due(self) -> str:
        while True:
            with self._cond:
                if self._heap and self._heap[0][0] <= self._clock():
                    return heapq.heappop(self._heap)[2]
            time.sleep(0.01)  # the mistake under test


class PollsWithShortWaits(TaskQueue):
    """A Condition, but waited on 10 ms at a time: a poll loop all the same."""

    def pop_due(self) -> str:
        with self._cond:
            while not (self._heap and self._heap[0][0] <= self._clock()):
                self._cond.wait(0.01)
            return heapq.heappop(self._heap)[2]


class ChecksOnceWithIf(TaskQueue):
    """``if`` where ``while`` is needed: any wake-up is taken as "the head is due"."""

    def pop_due(self) -> str:
        with self._cond:
            if not self._heap:
                self._cond.wait()
            delay = self._heap[0][0] - self._clock()
            if delay > 0:
                self._cond.wait(delay)
            return heapq.heappop(self._heap)[2]


class PushWithoutNotify(TaskQueue):
    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            heapq.heappush(self._heap, (due, sequence, task))


class NotifiesOne(TaskQueue):
    """``notify()`` on a new head: one waiter re-arms, the other sleeps on."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            entry = (due, sequence, task)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify()


class CancelForgets(TaskQueue):
    """Cancel that leaves no tombstone: the entry runs anyway."""

    def cancel(self, task: str) -> None:
        return None


class CancelledForever(TaskQueue):
    """Tombstones as a set of names, never cleared: a task pushed again stays dead."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self.cancelled: set[str] = set()

    def cancel(self, task: str) -> None:
        with self._cond:
            self.cancelled.add(task)

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._heap[0][2] in self.cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - self._clock()
                if delay <= 0:
                    return heapq.heappop(self._heap)[2]
                self._cond.wait(delay)


class TiesByName(TaskQueue):
    """No sequence field: a tie on the due time compares the task names, not arrivals."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            self._live[task] = int(due * 1e6)  # the "sequence": equal for equal due times
            heapq.heappush(self._heap, (due, int(due * 1e6), task))
            self._cond.notify_all()


class RePushKeepsBoth(CancelledForever):
    """Pushing a queued task again adds a second entry: the task comes out twice."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            self.cancelled.discard(task)
            super().push(task, due)


class ReturnsTheEntry(TaskQueue):
    """pop_due hands back the heap entry instead of the task."""

    def pop_due(self) -> str:
        with self._cond:
            while not (self._heap and self._heap[0][0] <= self._clock()):
                self._cond.wait(None if not self._heap else self._heap[0][0] - self._clock())
            return heapq.heappop(self._heap)  # type: ignore[return-value]


def failure(results: list[Result], check: str) -> str:
    """The message of the check whose description contains ``check``; it must have failed."""
    (result,) = [r for r in results if check in r.description]
    assert not result.passed, f"{check!r} passed a wrong answer"
    return result.message


TIMER_MISTAKES = [
    (PollsWithSleep, "no sleep or poll loop", "sleep or poll loop"),
    (PollsWithShortWaits, "no sleep or poll loop", "sleep or poll loop"),
    (ChecksOnceWithIf, "spurious wake-up", "`while` is needed"),
    (PushWithoutNotify, "parked 12 h", "must notify the condition"),
    (NotifiesOne, "both of two waiters", "use notify_all()"),
    (CancelForgets, "cancelled entry never runs", "still ran"),
    (CancelledForever, "cancelled entry never runs", "pushed again, never came back"),
    (TiesByName, "then arrival", "a tie must keep arrival order"),
    (RePushKeepsBoth, "replaces its entry", "came out twice"),
    (ReturnsTheEntry, "then arrival", "not its heap entry"),
]


@pytest.mark.parametrize(
    ("answer", "check", "named"), TIMER_MISTAKES, ids=[m[0].__name__ for m in TIMER_MISTAKES]
)
def test_the_timer_checker_fails_each_mistake_with_a_message_naming_it(
    answer: type[TaskQueue], check: str, named: str
) -> None:
    message = failure(run_checks(timer_checks(answer)), check)
    assert named in message


def test_the_timer_checker_passes_the_reference_queue() -> None:
    results = run_checks(timer_checks(TaskQueue))
    assert [r for r in results if not r.passed] == []


class OwnLockAndWaitFor(TaskQueue):
    """A valid answer in another form: a Lock of its own under the Condition, a push that
    always notifies, and tombstones checked inside the wait loop."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)

    def push(self, task: str, due: float) -> None:
        with self._lock:
            sequence = next(self._sequence)
            self._live[task] = sequence
            heapq.heappush(self._heap, (due, sequence, task))
            self._cond.notify_all()

    def pop_due(self) -> str:
        with self._lock:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if self._heap and self._heap[0][0] <= self._clock():
                    task = heapq.heappop(self._heap)[2]
                    del self._live[task]
                    return task
                self._cond.wait(self._heap[0][0] - self._clock() if self._heap else None)


class CancelByRemoval(TaskQueue):
    """Also valid, if slower: cancel takes the entry out of the heap."""

    def cancel(self, task: str) -> None:
        with self._cond:
            self._heap = [entry for entry in self._heap if entry[2] != task]
            heapq.heapify(self._heap)
            self._live.pop(task, None)


@pytest.mark.parametrize("answer", [OwnLockAndWaitFor, CancelByRemoval])
def test_the_timer_checker_passes_right_answers_written_another_way(
    answer: type[TaskQueue],
) -> None:
    assert [r for r in run_checks(timer_checks(answer)) if not r.passed] == []


def test_the_timer_checker_reports_a_blank_answer_without_hanging() -> None:
    class Blank(TaskQueue):
        def push(self, task: str, due: float) -> None:
            raise NotImplementedError("your turn")

        def pop_due(self) -> str:
            raise NotImplementedError("your turn")

    results = run_checks(timer_checks(Blank))
    assert all(not r.passed and "NotImplementedError" in r.message for r in results)


# -- the overrun rule ---------------------------------------------------------------------------


def seed_next_run(slot: float, period: float, finished: float, policy: str) -> float:
    """The seed's rule: a slot at the finish counts as missed."""
    following = slot + period
    if policy == "skip":
        while following <= finished:
            following += period
    return following


def floor_plus_one(slot: float, period: float, finished: float, policy: str) -> float:
    following = slot + period
    if following >= finished or policy == "catch_up":
        return following
    return slot + (math.floor((finished - slot) / period) + 1) * period


def test_the_seeds_next_run_fails_on_the_slot_at_the_finish_and_is_told_the_convention() -> None:
    results = run_checks(next_slot_checks(seed_next_run))
    assert "slot that falls exactly at the finish has not been missed" in failure(
        results, "exactly on the next slot"
    )
    assert "lldsched's convention" in failure(results, "500 runs")


def test_a_skip_with_floor_plus_one_fails_the_random_runs_too() -> None:
    results = run_checks(next_slot_checks(floor_plus_one))
    assert "lldsched's convention" in failure(results, "500 runs, boundaries included")


def from_the_finish(slot: float, period: float, finished: float, policy: str) -> float:
    return finished + period


def always_the_next_slot(slot: float, period: float, finished: float, policy: str) -> float:
    return slot + period


def skip_for_both(slot: float, period: float, finished: float, policy: str) -> float:
    return next_slot(slot, period, finished, "skip")


def test_each_overrun_mistake_is_named_not_blamed_on_the_convention() -> None:
    counted = run_checks(next_slot_checks(from_the_finish))
    assert "counted from the finish" in failure(counted, "a short run")
    assert "fixed *delay*" in failure(counted, "catch-up after the same run")
    never_skips = failure(run_checks(next_slot_checks(always_the_next_slot)), "two slots later")
    assert "first not before the finish" in never_skips
    assert "convention" not in never_skips
    ignores_policy = failure(run_checks(next_slot_checks(skip_for_both)), "catch-up after")
    assert "catch_up returns the slot after this one" in ignores_policy


def test_an_overrun_answer_that_returns_none_is_told_to_return_a_number() -> None:
    def none_when_on_time(slot: float, period: float, finished: float, policy: str) -> float:
        return None if finished < slot + period else next_slot(slot, period, finished, policy)  # type: ignore[return-value]

    message = failure(run_checks(next_slot_checks(none_when_on_time)), "a short run")
    assert (
        message
        == "next_slot(0, 60, 5, 'skip') returned None: return the next due instant, a number"
    )


def test_the_overrun_checker_passes_the_reference_answer() -> None:
    assert all(r.passed for r in run_checks(next_slot_checks(next_slot)))


# -- a cron field -------------------------------------------------------------------------------


def unbounded_ranges(text: str, low: int, high: int) -> set[int]:
    """Bounds-checks single numbers, never range ends: "50-70" gives minute 70."""
    values: set[int] = set()
    for item in text.split(","):
        base, slash, step = item.partition("/")
        if slash and (not step.isdigit() or int(step) == 0):
            raise ValueError(f"bad step in {item!r}")
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, stop = int(first), int(last)
            if start > stop:
                raise ValueError(f"reversed range {base!r}")
        else:
            if not base.isdigit() or not low <= int(base) <= high:
                raise ValueError(f"bad value {base!r}")
            start = int(base)
            stop = high if slash else start
        values.update(range(start, stop + 1, int(step) if slash else 1))
    return values


def accepts_a_plus_sign(text: str, low: int, high: int) -> set[int]:
    """The reference, but numbers read with int(): "+5" is taken as 5."""
    return parse_field(text.replace("+", ""), low, high)


def test_a_parser_that_never_bounds_checks_range_ends_fails() -> None:
    results = run_checks(parse_field_checks(unbounded_ranges))
    assert "'50-70' in 0-59 should raise ValueError" in failure(results, "range ends")
    failure(results, "random fields")


def test_a_parser_that_accepts_plus_five_fails() -> None:
    results = run_checks(parse_field_checks(accepts_a_plus_sign))
    assert "'+5' in 0-59 should raise ValueError" in failure(results, "rejects what cron rejects")


def test_a_parser_that_rejects_a_field_cron_accepts_is_shown_the_field() -> None:
    def refuses_lists(text: str, low: int, high: int) -> set[int]:
        if "," in text:
            raise ValueError("lists are not supported")
        return parse_field(text, low, high)

    message = failure(run_checks(parse_field_checks(refuses_lists)), "minute fields")
    assert message == (
        "'1,5,9' in 0-59 raised ValueError (lists are not supported), but cron accepts it: "
        "[1, 5, 9]"
    )


def test_the_field_checker_passes_the_reference_answer() -> None:
    assert all(r.passed for r in run_checks(parse_field_checks(parse_field)))


# -- answers on demand ------------------------------------------------------------------------


def test_notebook_07_runs_no_reference_answer_and_offers_each_one_on_demand() -> None:
    root = Path(__file__).resolve().parent.parent
    source = (root / "notebooks" / "src" / "07-interview-walkthrough.py").read_text()
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "solutions" in line], "Run All would run an answer"
    offered = re.findall(r"^# %load (exercises/solutions/\w+\.py)$", source, flags=re.MULTILINE)
    assert sorted(offered) == [
        "exercises/solutions/next_slot.py",
        "exercises/solutions/parse_field.py",
        "exercises/solutions/task_queue.py",
    ]
    assert all((root / "notebooks" / path).is_file() for path in offered)
