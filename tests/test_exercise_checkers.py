"""The exercise checkers of notebook 07 are honest: known-wrong answers fail, each with a
message that names the mistake, and the reference answers pass every check."""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
from exercises import checks
from exercises.checks import HOLDS_THE_LOCK, Result, run_checks, timer_checks
from exercises.pause_checks import runs_after_resume_checks
from exercises.retry_checks import reference_retry_at, retry_at_checks
from exercises.schedule_checks import next_slot_checks, parse_field_checks
from exercises.solutions import TaskQueue, next_slot, parse_field, retry_at, runs_after_resume

from tests.timer_runs import timer_results_of

TimerResults = Callable[[Any], list[Result]]  # the timer_results fixture

# -- the timer: the mistakes a learner makes, each named ----------------------------------------


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


class PollsEverySecond(TaskQueue):
    """Waits until the head is due, but at most a second at a time, "to be safe": a poll
    all the same, 43,200 wake-ups before a task due in 12 h."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = due - self._clock()
                if delay <= 0:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(min(delay, 1.0))  # the mistake under test


class SleepsUntilTheHeadIsDue(TaskQueue):
    """``time.sleep(due - now)`` outside the lock: no poll, but nothing can wake it."""

    def pop_due(self) -> str:
        while True:
            with self._cond:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                delay = 0.05  # nothing queued: look again soon
                if self._heap:
                    due, _, task = self._heap[0]
                    delay = due - self._clock()
                    if delay <= 0:
                        heapq.heappop(self._heap)
                        del self._live[task]
                        return task
            time.sleep(delay)  # the mistake under test: a push cannot cut it short


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


class SleepsUnderTheLock(TaskQueue):
    """A poll loop inside ``with self._cond``: the lock is never released, so a push blocks
    (the checker must not hang on it)."""

    def pop_due(self) -> str:
        with self._cond:
            while not (self._heap and self._heap[0][0] <= self._clock()):
                time.sleep(0.01)  # the mistake under test: sleeps holding the lock
            task = heapq.heappop(self._heap)[2]
            del self._live[task]
            return task


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


class NotifiesOnlyWhenDue(TaskQueue):
    """Notifies only for an entry due already: a new head due in a moment wakes nobody."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            heapq.heappush(self._heap, (due, sequence, task))
            if due <= self._clock():
                self._cond.notify_all()


class NotifiesOnlyIntoAnEmptyQueue(TaskQueue):
    """Notifies for the first entry of an empty queue only: a new head pushed in front of
    one already queued wakes nobody."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            was_empty = not self._heap
            sequence = next(self._sequence)
            self._live[task] = sequence
            heapq.heappush(self._heap, (due, sequence, task))
            if was_empty:
                self._cond.notify_all()


class WaitsForTheOldHead(TaskQueue):
    """``wait_for`` with a timeout computed once, from the head it saw first: a notify
    re-tests the predicate, but the wait goes on toward the old head."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - self._clock()
                if delay > 0:
                    self._cond.wait_for(lambda: self._heap[0][0] <= self._clock(), delay)
                due, sequence, task = self._heap[0]
                if due <= self._clock() and self._live.get(task) == sequence:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task


class CancelForgets(TaskQueue):
    """Cancel that leaves no tombstone: the entry runs anyway."""

    def cancel(self, task: str) -> None:
        return None


class CancelAssumesQueued(TaskQueue):
    """``del self._live[task]``: a cancel that races with the run that took the task (or
    comes twice) raises KeyError."""

    def cancel(self, task: str) -> None:
        with self._cond:
            del self._live[task]


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


class LiveByDueTime(TaskQueue):
    """Remembers the due time of each task's live entry instead of a sequence: a task
    pushed twice for the same instant has two entries that both look live."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = due  # type: ignore[assignment]
            entry = (due, sequence, task)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][0]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                if due <= self._clock():
                    heapq.heappop(self._heap)
                    return task
                self._cond.wait(due - self._clock())


@dataclasses.dataclass(order=True)
class DueOnly:
    """An entry ordered by its due time alone: the sequence is kept, but not compared."""

    due: float
    sequence: int = dataclasses.field(compare=False)
    task: str = dataclasses.field(compare=False)


@dataclasses.dataclass(order=True)
class DueThenSequence:
    """An entry ordered by (due, sequence): a right entry, as a dataclass."""

    due: float
    sequence: int
    task: str = dataclasses.field(compare=False)


class TiesUnbroken(TaskQueue):
    """Entries of ``@dataclass(order=True)`` whose order is the due time alone: a tie
    compares equal, and heapq, which is not stable, takes five such entries out of
    arrival order (three come out in order by chance)."""

    entry: type[DueOnly] | type[DueThenSequence] = DueOnly

    def push(self, task: str, due: float) -> None:
        with self._cond:
            entry = self.entry(due, next(self._sequence), task)
            self._live[task] = entry.sequence
            heap: list[Any] = self._heap  # entries of the dataclass, not the tuples
            heapq.heappush(heap, entry)
            if heap[0] is entry:
                self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                heap: list[Any] = self._heap
                while heap and self._live.get(heap[0].task) != heap[0].sequence:
                    heapq.heappop(heap)
                if not heap:
                    self._cond.wait()
                    continue
                delay = heap[0].due - self._clock()
                if delay <= 0:
                    task: str = heapq.heappop(heap).task
                    del self._live[task]
                    return task
                self._cond.wait(delay)


class DataclassEntries(TiesUnbroken):
    """Right, in another shape: entries of ``@dataclass(order=True)``, ordered by (due,
    sequence), the task ``field(compare=False)``."""

    entry = DueThenSequence


class TiesOnADict(TaskQueue):
    """Entries of (due, a dict of the task and its sequence): the first tie compares two
    dicts, and heapq raises TypeError."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            heap: list[Any] = self._heap  # entries of (due, dict), not the tuples
            heapq.heappush(heap, (due, {"task": task, "sequence": sequence}))
            self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                heap: list[Any] = self._heap
                while heap and self._live.get(heap[0][1]["task"]) != heap[0][1]["sequence"]:
                    heapq.heappop(heap)
                if heap and heap[0][0] <= self._clock():
                    task: str = heapq.heappop(heap)[1]["task"]
                    del self._live[task]
                    return task
                self._cond.wait(heap[0][0] - self._clock() if heap else None)


class NotifiesOutsideTheLock(TaskQueue):
    """Pushes under the lock, then notifies after the ``with`` block: a Condition refuses
    a notify from a thread that does not hold its lock (RuntimeError)."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            heapq.heappush(self._heap, (due, sequence, task))
        self._cond.notify_all()


class WaitsOutsideTheLock(TaskQueue):
    """Looks at the head under the lock, then waits after the ``with`` block: a Condition
    refuses a wait from a thread that does not hold its lock (RuntimeError)."""

    def pop_due(self) -> str:
        while True:
            with self._cond:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                delay = self._heap[0][0] - self._clock() if self._heap else None
                if delay is not None and delay <= 0:
                    task = heapq.heappop(self._heap)[2]
                    del self._live[task]
                    return task
            self._cond.wait(delay)


class ReturnsTheEntry(TaskQueue):
    """pop_due hands back the heap entry instead of the task."""

    def pop_due(self) -> str:
        with self._cond:
            while not (self._heap and self._heap[0][0] <= self._clock()):
                self._cond.wait(None if not self._heap else self._heap[0][0] - self._clock())
            return heapq.heappop(self._heap)  # type: ignore[return-value]


class SortsOnEveryPush(TaskQueue):
    """A list sorted again on every push: right order, O(n log n) a push."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            self._heap.append((due, sequence, task))
            self._heap.sort()
            self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    self._heap.pop(0)
                if self._heap and self._heap[0][0] <= self._clock():
                    task = self._heap.pop(0)[2]
                    del self._live[task]
                    return task
                self._cond.wait(self._heap[0][0] - self._clock() if self._heap else None)


class ScansForTheHead(TaskQueue):
    """An unordered list and ``min()`` on every pop: right order, O(n) a pop."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            self._heap.append((due, sequence, task))
            self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                self._heap = [e for e in self._heap if self._live.get(e[2]) == e[1]]
                if not self._heap:
                    self._cond.wait()
                    continue
                head = min(self._heap)
                if head[0] <= self._clock():
                    self._heap.remove(head)
                    del self._live[head[2]]
                    return head[2]
                self._cond.wait(head[0] - self._clock())


class CancelByListRemove(TaskQueue):
    """Cancel takes the entry out with ``list.remove`` and no heapify: the list left behind
    is no longer a heap, so later pops come out of order."""

    def cancel(self, task: str) -> None:
        with self._cond:
            for entry in self._heap:
                if entry[2] == task:
                    self._heap.remove(entry)  # the mistake under test
                    break
            self._live.pop(task, None)


class CancelByRemovalAndHeapify(TaskQueue):
    """Cancel takes the entry out of the middle of the heap and heapifies what is left: a
    heap again, so every order check passes, but each cancel costs O(n), the cost the
    tombstone is there to avoid."""

    def cancel(self, task: str) -> None:
        with self._cond:
            if self._live.pop(task, None) is not None:
                self._heap = [entry for entry in self._heap if entry[2] != task]
                heapq.heapify(self._heap)  # the mistake under test


class TimeoutFromAnotherClock(TaskQueue):
    """Tests the head on ``self._clock()`` but computes the wait from ``time.monotonic()``:
    on any other clock the timeout is nonsense (here some 10 days)."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                if due <= self._clock():
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(due - time.monotonic())  # the mistake under test


class WaitsInMilliseconds(TaskQueue):
    """Computes the delay right, and waits it as if Condition.wait took milliseconds."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = due - self._clock()
                if delay <= 0:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(delay * 1000)  # the mistake under test


class WaitsWithoutATimeout(TaskQueue):
    """Waits with no timeout while the head is not due: only a push ends the wait."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if self._heap and self._heap[0][0] <= self._clock():
                    task = heapq.heappop(self._heap)[2]
                    del self._live[task]
                    return task
                self._cond.wait()  # the mistake under test


class CancelPopsTheHead(TaskQueue):
    """Cancel that pops the head, whichever task it is: right whenever the task cancelled
    is the head, and otherwise loses the head's task (the one cancelled is tombstoned)."""

    def cancel(self, task: str) -> None:
        with self._cond:
            if self._heap:
                heapq.heappop(self._heap)  # the mistake under test
            self._live.pop(task, None)


class CancelForgetsEveryTask(TaskQueue):
    """Cancel that clears every task's live entry: each queued task becomes a tombstone."""

    def cancel(self, task: str) -> None:
        with self._cond:
            self._live.clear()  # the mistake under test


class NotifiesOnlyBeforeAHead(TaskQueue):
    """Notifies when the entry is earlier than the head it finds, so a push into an empty
    queue (no head to compare with) wakes nobody."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            earlier = bool(self._heap) and due < self._heap[0][0]  # the mistake under test
            heapq.heappush(self._heap, (due, sequence, task))
            if earlier:
                self._cond.notify_all()


class TrustsAWaitThatTimedOut(TaskQueue):
    """Takes the head as soon as a wait times out, without testing it again: of two
    waiters that timed out on one head, the second takes whatever is next, due or not."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - self._clock()
                if delay <= 0 or not self._cond.wait(delay):  # the mistake under test
                    while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        continue
                    task = heapq.heappop(self._heap)[2]
                    del self._live[task]
                    return task


class PushesOutsideTheLock(TaskQueue):
    """Changes the heap before taking the lock, which it takes only to notify: a consumer
    popping at that moment works on a heap half pushed (heapq is not thread-safe)."""

    def push(self, task: str, due: float) -> None:
        sequence = next(self._sequence)
        self._live[task] = sequence
        heapq.heappush(self._heap, (due, sequence, task))  # the mistake under test
        with self._cond:
            self._cond.notify_all()


class CancelsWithoutTheLock(TaskQueue):
    """Forgets the task with no lock ("a dict.pop is atomic"): a pop_due that has tested
    the head's live entry and taken the head raises KeyError as it forgets the task."""

    def cancel(self, task: str) -> None:
        self._live.pop(task, None)  # the mistake under test


class ReturnsNoneWhenNothingIsDue(TaskQueue):
    """A pop that does not block: None when the head is not due yet."""

    def pop_due(self) -> str:
        with self._cond:
            while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                heapq.heappop(self._heap)
            if self._heap and self._heap[0][0] <= self._clock():
                task = heapq.heappop(self._heap)[2]
                del self._live[task]
                return task
            return None  # type: ignore[return-value]  # the mistake under test


class WaitsOnceThenReturnsNone(TaskQueue):
    """Waits for the head's delay once, then answers None if nothing is due: a pop that
    gives up instead of blocking (not an ``if`` for a ``while``: it returns nothing)."""

    def pop_due(self) -> str:
        with self._cond:
            while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                heapq.heappop(self._heap)
            delay = self._heap[0][0] - self._clock() if self._heap else None
            if delay is None or delay > 0:
                self._cond.wait(delay)
            if self._heap and self._heap[0][0] <= self._clock():
                task = heapq.heappop(self._heap)[2]
                del self._live[task]
                return task
            return None  # type: ignore[return-value]  # the mistake under test


class PollsAnEmptyQueue(TaskQueue):
    """Waits the whole delay toward a head, but looks again every second while nothing is
    queued, "in case": a poll loop all the same, for as long as the queue stays empty."""

    def pop_due(self) -> str:
        with self._cond:
            while not self._heap:
                self._cond.wait(1.0)  # the mistake under test
        return super().pop_due()


class DelayTheWrongWayRound(TaskQueue):
    """``now - due`` where ``due - now`` belongs: a task already due waits, and one not
    due yet comes out at once."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = self._clock() - due  # the mistake under test
                if delay <= 0:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(delay)


def failure(results: list[Result], check: str) -> str:
    """The message of the check whose description contains ``check``; it must have failed."""
    (result,) = [r for r in results if check in r.description]
    assert not result.passed, f"{check!r} passed a wrong answer"
    return result.message


@pytest.fixture(scope="module")
def timer_results(request: pytest.FixtureRequest) -> TimerResults:
    """Every timer check run once against an answer (the whole run, as a learner's
    ``check_task_queue`` makes it, so each check must end on every wrong answer); an answer
    with two mistakes to name is run once, not once per mistake.  The runs of every answer
    the selected tests of this file ask for are made at once (``tests/timer_runs.py``)."""
    return timer_results_of(request)


TIMER_MISTAKES = [
    (PollsWithSleep, "no sleep or poll loop", "sleep or poll loop"),
    (PollsWithShortWaits, "no sleep or poll loop", "sleep or poll loop"),
    (PollsEverySecond, "no sleep or poll loop", "wakes 43,200 times"),
    (PollsAnEmptyQueue, "no sleep or poll loop", "with nothing queued"),
    (ChecksOnceWithIf, "spurious wake-up", "`while` is needed"),
    (SleepsUnderTheLock, "parked 12 h", "holds the lock while it waits"),
    (SleepsUnderTheLock, "both of two waiters", "holds the lock while it waits"),
    (PushWithoutNotify, "parked 12 h", "must notify the condition"),
    (SleepsUntilTheHeadIsDue, "parked 12 h", "never waited on the queue's condition"),
    (SleepsUntilTheHeadIsDue, "cancelled entry never runs", "never waited on the queue's"),
    (NotifiesOne, "both of two waiters", "use notify_all()"),
    (NotifiesOnlyWhenDue, "due in 0.2 s", "due yet or not"),
    (NotifiesOnlyWhenDue, "both of two waiters", "due yet or not"),
    (NotifiesOnlyIntoAnEmptyQueue, "due in 0.2 s", "your push did not notify"),
    (NotifiesOnlyIntoAnEmptyQueue, "both of two waiters", "did not notify for a new head"),
    (WaitsForTheOldHead, "due in 0.2 s", "compute it again from the head after every wake-up"),
    (WaitsForTheOldHead, "both of two waiters", "compute it again from the head"),
    (WaitsForTheOldHead, "the other waits on", "went back to the timeout it computed"),
    (CancelForgets, "cancelled entry never runs", "still ran"),
    (CancelledForever, "cancelled entry never runs", "pushed again, never came back"),
    (CancelAssumesQueued, "not queued", "raised KeyError"),
    (CancelByListRemove, "keeps the others in order", "no longer a heap"),
    (CancelPopsTheHead, "leaves every other task queued", "lost 'backup'"),
    (CancelForgetsEveryTask, "leaves every other task queued", "lost 'backup', 'report'"),
    (CancelForgetsEveryTask, "cancelled entry never runs", "after cancel('doomed'): a cancel"),
    (CancelForgetsEveryTask, "keeps the others in order", "lost 'digest', 'report'"),
    (TimeoutFromAnotherClock, "exactly the delay", "on the clock you were given"),
    (TimeoutFromAnotherClock, "due in 0.2 s", "on the clock you were given"),
    (TimeoutFromAnotherClock, "cancelled entry never runs", "on the clock you were given"),
    (WaitsInMilliseconds, "exactly the delay", "takes seconds, not milliseconds"),
    (WaitsInMilliseconds, "due in 0.2 s", "takes seconds, not milliseconds"),
    (WaitsWithoutATimeout, "exactly the delay", "waited with no timeout while a head"),
    (WaitsWithoutATimeout, "due in 0.2 s", "waited with no timeout while a head"),
    (WaitsWithoutATimeout, "both of two waiters", "waited with no timeout while a head"),
    (WaitsWithoutATimeout, "cancelled entry never runs", "waited with no timeout while a head"),
    (WaitsWithoutATimeout, "replaces its entry", "waited with no timeout while a head"),
    (WaitsWithoutATimeout, "the other waits on", "waited with no timeout while a head"),
    (NotifiesOnlyBeforeAHead, "into an empty queue", "the first entry of an empty queue"),
    (TrustsAWaitThatTimedOut, "the other waits on", "a wait that timed out"),
    (PushesOutsideTheLock, "push reads and changes", "outside `with self._cond`"),
    (CancelsWithoutTheLock, "cancel changes the queue only under the lock", "without taking"),
    (ReturnsNoneWhenNothingIsDue, "exactly the delay", "blocks until the head is due"),
    (ReturnsNoneWhenNothingIsDue, "parked 12 h", "blocks until the head is due"),
    (WaitsOnceThenReturnsNone, "spurious wake-up", "blocks until the head is due"),
    (DelayTheWrongWayRound, "the clock it was given", "delay = due - self._clock()"),
    (DelayTheWrongWayRound, "exactly the delay", "delay = due - self._clock()"),
    (TiesByName, "then arrival", "in the order of their names: a tie compared the task names"),
    (TiesUnbroken, "then arrival", "equal on a tie (a key of the due time alone"),
    (TiesUnbroken, "then arrival", "for a heap is not stable"),
    (TiesOnADict, "then arrival", "put a sequence counter right after the due time"),
    (TiesOnADict, "both of two waiters", "two entries due at the same instant compare"),
    (NotifiesOutsideTheLock, "parked 12 h", "are called holding its lock, inside `with"),
    (WaitsOutsideTheLock, "exactly the delay", "are called holding its lock, inside `with"),
    (RePushKeepsBoth, "replaces its entry", "came out twice"),
    (LiveByDueTime, "replaces its entry", "came out twice"),
    (ReturnsTheEntry, "then arrival", "not its heap entry"),
    (SortsOnEveryPush, "O(log n)", "keep a heap"),
    (CancelByRemovalAndHeapify, "cancel costs O(1)", "leave a tombstone"),
    (CancelByListRemove, "cancel costs O(1)", "leave a tombstone"),
    (ScansForTheHead, "O(log n)", "keep a heap"),
]


@pytest.mark.parametrize(
    ("answer", "check", "named"),
    TIMER_MISTAKES,
    ids=[f"{m[0].__name__}-{m[1]}" for m in TIMER_MISTAKES],
)
def test_the_timer_checker_fails_each_mistake_with_a_message_naming_it(
    answer: type[TaskQueue], check: str, named: str, timer_results: TimerResults
) -> None:
    message = failure(timer_results(answer), check)
    assert named in message


@pytest.mark.parametrize("answer", [SleepsUnderTheLock])
def test_a_lock_held_once_is_waited_for_briefly_by_every_later_check(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """Once a consumer held the lock for HELD seconds (here in the poll check's clean-up),
    every later check that meets the held lock names it after HELD_AGAIN (0.1 s), not
    another whole second each (the run took 18 s so); a right queue never holds it that
    long (the passing tests)."""
    held = [r for r in timer_results(answer) if HOLDS_THE_LOCK in r.message]
    assert len(held) >= 7, held
    assert all(" 0.1 s: " in r.message for r in held), held


@pytest.mark.parametrize("answer", [WaitsOnceThenReturnsNone])
def test_a_pop_that_returns_none_after_a_wake_up_is_not_told_about_while(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """It waited, woke and returned None: the fault is the None, not an ``if``."""
    message = failure(timer_results(answer), "spurious wake-up")
    assert "pop_due returned None" in message and "`while` is needed" not in message


@pytest.mark.parametrize("answer", [TimeoutFromAnotherClock, WaitsWithoutATimeout])
def test_a_wait_that_never_ends_in_time_is_not_blamed_on_cancel_or_a_stale_head(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """Their cancel and push are right: a check that a cancel or a re-armed head fails on
    says what the wait did, not "a cancel marks only the entry of the task it names" or
    "went back to the timeout it computed from the old head"."""
    for result in timer_results(answer):
        assert "a cancel marks only" not in result.message, result
        assert "from the old head" not in result.message, result


@pytest.mark.parametrize("answer", [NotifiesOnlyIntoAnEmptyQueue])
def test_a_push_that_notifies_only_an_empty_queue_is_not_told_it_called_notify_all(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """Its one notify_all() was for the first entry, pushed before the waiters parked: the
    two-waiter check counts what the two new heads' pushes did, not the fill's push, so
    it does not say "your push called notify_all()" and blame the waiters' timeouts."""
    message = failure(timer_results(answer), "both of two waiters")
    assert "your push called notify_all()" not in message
    assert "went back to the timeout" not in message


@pytest.mark.parametrize("answer", [NotifiesOnlyBeforeAHead])
def test_a_push_into_an_empty_queue_that_wakes_nobody_is_not_blamed_on_cancel(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """Its cancel is right: only the check of pushes into an empty queue fails."""
    failed = [r.description for r in timer_results(answer) if not r.passed]
    assert failed == ["a push into an empty queue wakes a consumer waiting on it"]


def test_a_half_written_queue_is_told_what_is_not_written_and_no_mistake_besides() -> None:
    """A learner who wrote push and pop_due but not cancel, or push and cancel but not
    pop_due, is told which method is still to write, not blamed for `if` or a race."""

    class NoCancelYet(TaskQueue):
        def cancel(self, task: str) -> None:
            raise NotImplementedError("your turn")

    class NoPopYet(TaskQueue):
        def pop_due(self) -> str:
            raise NotImplementedError("your turn")

    for answer, method in [(NoCancelYet, "cancel"), (NoPopYet, "pop_due")]:
        failed = [r for r in run_checks(timer_checks(answer)) if not r.passed]
        assert failed
        for result in failed:
            assert result.message.endswith("raised NotImplementedError: your turn"), (
                answer.__name__,
                result,
            )
            assert method in result.message or result.message.startswith("raised"), result


@pytest.mark.parametrize("answer", [TaskQueue])
def test_the_timer_checker_passes_the_reference_queue(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    assert [r for r in timer_results(answer) if not r.passed] == []


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


class MarksTheEntryRemoved:
    """The heapq documentation's recipe: entries are lists, and a cancel marks its task's
    entry removed in place; a tombstone too, written another way."""

    REMOVED = "<removed>"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[list[Any]] = []
        self._sequence = itertools.count()
        self._entries: dict[str, list[Any]] = {}

    def push(self, task: str, due: float) -> None:
        with self._cond:
            if task in self._entries:
                self._entries.pop(task)[-1] = self.REMOVED
            entry = [due, next(self._sequence), task]
            self._entries[task] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify_all()

    def cancel(self, task: str) -> None:
        with self._cond:
            entry = self._entries.pop(task, None)
            if entry is not None:
                entry[-1] = self.REMOVED

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._heap[0][-1] is self.REMOVED:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - self._clock()
                if delay <= 0:
                    task: str = heapq.heappop(self._heap)[2]
                    del self._entries[task]
                    return task
                self._cond.wait(delay)


class BucketsOfASecond(TaskQueue):
    """A timer wheel of one-second buckets: each bucket a heap of (due, sequence, task),
    and a heap of the keys of the buckets not empty, so the next bucket is found without
    walking the empty ones."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._buckets: dict[int, list[tuple[float, int, str]]] = {}
        self._keys: list[int] = []

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            key = math.floor(due)
            if key not in self._buckets:
                self._buckets[key] = []
                heapq.heappush(self._keys, key)
            heapq.heappush(self._buckets[key], (due, sequence, task))
            self._cond.notify_all()

    def _head(self) -> list[tuple[float, int, str]] | None:
        """The bucket that holds the earliest live entry, at its top; None when empty."""
        while self._keys:
            bucket = self._buckets[self._keys[0]]
            while bucket and self._live.get(bucket[0][2]) != bucket[0][1]:
                heapq.heappop(bucket)  # a tombstone
            if bucket:
                return bucket
            del self._buckets[heapq.heappop(self._keys)]
        return None

    def pop_due(self) -> str:
        with self._cond:
            while True:
                bucket = self._head()
                if bucket is None:
                    self._cond.wait()
                    continue
                delay = bucket[0][0] - self._clock()
                if delay <= 0:
                    task = heapq.heappop(bucket)[2]
                    del self._live[task]
                    return task
                self._cond.wait(delay)


class CompactsItsTombstones(TaskQueue):
    """Tombstones, and a cancel that rebuilds the heap from its live entries once the dead
    ones outnumber them (as lldsched's queue bounds its own): O(1) a cancel, amortised."""

    def cancel(self, task: str) -> None:
        with self._cond:
            if self._live.pop(task, None) is None or len(self._heap) < 2 * len(self._live) + 8:
                return
            self._heap = [e for e in self._heap if self._live.get(e[2]) == e[1]]
            heapq.heapify(self._heap)


@pytest.mark.parametrize(
    "answer",
    [
        OwnLockAndWaitFor,
        MarksTheEntryRemoved,
        DataclassEntries,
        BucketsOfASecond,
        CompactsItsTombstones,
    ],
)
def test_the_timer_checker_passes_right_answers_written_another_way(
    answer: Callable[[Any], Any], timer_results: TimerResults
) -> None:
    assert [r for r in timer_results(answer) if not r.passed] == []


# -- a loaded machine: the checker's push (cancel, pop) comes after the task it makes is due --


def run_late(
    answer: type[TaskQueue], check: str, call: str, times: float, monkeypatch: pytest.MonkeyPatch
) -> Result:
    """The one timer check whose description holds ``check``, run against ``answer`` on a
    machine as slow as a loaded one: the ``call`` ("push:task", "cancel:task" or
    "pop_due") the check makes first finds the checker's clock 0.3 s on, its task due
    already, in each of its first ``times`` tries (a try is a fresh queue).  A cancel
    then also lets the consumer take the task it cancels first, as a slow cancel would."""
    real = checks._monotonic
    ahead = [0.0]
    monkeypatch.setattr(checks, "_monotonic", lambda: real() + ahead[0])
    method, _, task = call.partition(":")
    late = [0]

    class Late(answer):  # type: ignore[valid-type, misc]
        def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
            super().__init__(clock)
            self.first = True
            self.taken = threading.Event()

        def make_late(self, name: str, made: str) -> None:
            if made == method and name == task and self.first and late[0] < times:
                self.first = False
                late[0] += 1
                ahead[0] += 0.3
                if method == "cancel":  # the consumer, parked on it, takes it first
                    self.taken.wait(5)

        def push(self, name: str, due: float) -> None:
            self.make_late(name, "push")
            super().push(name, due)

        def cancel(self, name: str) -> None:
            self.make_late(name, "cancel")
            super().cancel(name)

        def pop_due(self) -> str:
            self.make_late("", "pop_due")
            try:
                task: str = super().pop_due()
            finally:
                self.taken.set()
            return task

    [chosen] = [(d, c) for d, c in timer_checks(Late) if check in d]
    [result] = run_checks([chosen])
    assert late[0] == times  # the machine was as slow as asked
    return result


LATE_CALLS = [
    (NotifiesOnlyWhenDue, "both of two waiters", "push:first", "due yet or not"),
    (NotifiesOnlyWhenDue, "due in 0.2 s", "push:soon", "due yet or not"),
    (TrustsAWaitThatTimedOut, "the other waits on", "push:soon", "a wait that timed out"),
    (TimeoutFromAnotherClock, "exactly the delay", "pop_due", "on the clock you were given"),
    (CancelForgets, "cancelled entry never runs", "cancel:doomed", "still ran"),
]


@pytest.mark.parametrize(
    ("answer", "check", "call", "named"),
    LATE_CALLS,
    ids=[f"{m[0].__name__}-{m[1]}" for m in LATE_CALLS],
)
def test_a_call_that_comes_after_its_task_is_due_is_tried_again_and_the_mistake_caught(
    answer: type[TaskQueue], check: str, call: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_late(answer, check, call, 1, monkeypatch)
    assert not result.passed and named in result.message, result


RIGHT_ANSWERS = [TaskQueue, OwnLockAndWaitFor, MarksTheEntryRemoved]


@pytest.mark.parametrize("answer", RIGHT_ANSWERS)
@pytest.mark.parametrize(("check", "call"), [(m[1], m[2]) for m in LATE_CALLS])
def test_a_right_answer_passes_a_check_whose_call_came_after_its_task_was_due(
    answer: type[TaskQueue], check: str, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_late(answer, check, call, 1, monkeypatch)
    assert result.passed, result


@pytest.mark.parametrize("answer", [TaskQueue, NotifiesOnlyWhenDue])
def test_a_machine_too_slow_in_every_try_is_said_to_be_too_slow_to_tell(
    answer: type[TaskQueue], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_late(answer, "both of two waiters", "push:first", checks.TRIES, monkeypatch)
    assert not result.passed and result.message.startswith("this machine was too slow to tell")
    assert "notify" not in result.message  # no blame


def test_the_timer_checker_reports_a_blank_answer_without_hanging() -> None:
    class Blank(TaskQueue):
        def push(self, task: str, due: float) -> None:
            raise NotImplementedError("your turn")

        def pop_due(self) -> str:
            raise NotImplementedError("your turn")

    results = run_checks(timer_checks(Blank))
    assert all(not r.passed and "NotImplementedError" in r.message for r in results)


# -- the overrun rule ---------------------------------------------------------------------------


def first_version_next_run(slot: float, period: float, finished: float, policy: str) -> float:
    """The first version of this design's rule: a slot at the finish counts as missed."""
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


def test_the_first_versions_next_run_fails_on_the_slot_at_the_finish_and_is_told_why() -> None:
    results = run_checks(next_slot_checks(first_version_next_run))
    assert "slot that falls exactly at the finish has not been missed" in failure(
        results, "exactly on the next slot"
    )
    told = failure(results, "500 runs")
    assert "lldsched's convention" in told
    # said so that a learner understands it without a design the repository does not hold
    assert "`while next <= finished`" in told and "seed" not in told


def test_a_skip_with_floor_plus_one_fails_the_random_runs_too() -> None:
    results = run_checks(next_slot_checks(floor_plus_one))
    assert "lldsched's convention" in failure(results, "500 runs, boundaries included")


def from_the_finish(slot: float, period: float, finished: float, policy: str) -> float:
    return finished + period


def always_the_next_slot(slot: float, period: float, finished: float, policy: str) -> float:
    return slot + period


def skip_for_both(slot: float, period: float, finished: float, policy: str) -> float:
    return next_slot(slot, period, finished, "skip")


def ceil_from_the_slot(slot: float, period: float, finished: float, policy: str) -> float:
    """Skip to the first slot not before the finish, counting from the slot served: a run
    that took no time (a fake clock's) gets its own slot back, and runs it twice."""
    if policy == "catch_up":
        return slot + period
    return slot + math.ceil((finished - slot) / period) * period


def test_an_overrun_answer_that_hands_back_the_slot_it_served_is_told_so() -> None:
    told = failure(run_checks(next_slot_checks(ceil_from_the_slot)), "a run of 0 s")
    assert told.startswith("next_slot(0, 60, 0, 'skip'): expected 60, got 0: ")
    assert "never before slot + period (60)" in told


def test_each_overrun_mistake_is_named_not_blamed_on_the_convention() -> None:
    counted = run_checks(next_slot_checks(from_the_finish))
    assert "counted from the finish" in failure(counted, "a short run")
    assert "fixed *delay*" in failure(counted, "catch-up after the same run")
    never_skips = failure(run_checks(next_slot_checks(always_the_next_slot)), "two slots later")
    assert "first not before the finish" in never_skips
    assert "convention" not in never_skips
    ignores_policy = failure(run_checks(next_slot_checks(skip_for_both)), "catch-up after")
    assert "catch_up returns the slot after this one" in ignores_policy


def steps_in_whole_seconds(slot: float, period: float, finished: float, policy: str) -> float:
    """Skip by walking the grid with range(), which takes ints: right while every slot and
    period is a whole number of seconds, wrong for a period of 1.5 s."""
    following = slot + period
    if following >= finished or policy == "catch_up":
        return following
    grid = range(int(following), int(finished) + int(period) + 1, int(period))
    return next(s for s in grid if s >= finished)


def test_an_overrun_answer_right_only_for_whole_seconds_fails() -> None:
    # FixedRate takes any period (FixedRate(1.5)); the random runs have fractional slots
    # and periods too, so an answer that truncates them to ints cannot pass them all.
    assert steps_in_whole_seconds(0, 60, 150, "skip") == 180
    told = failure(run_checks(next_slot_checks(steps_in_whole_seconds)), "500 runs")
    assert "expected" in told and "got" in told


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


# -- the retry rule -----------------------------------------------------------------------------


def never_gives_up(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """A retry with no cap on attempts: a broken task is tried for ever."""
    return finished + min(cap, initial * multiplier ** min(attempt - 1, 100))


def one_attempt_too_many(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """``>`` where ``>=`` belongs: max_attempts taken to count the retries only."""
    if attempt > max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** min(attempt - 1, 100))


def first_retry_doubled(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """The exponent one too high: the first retry waits initial * multiplier."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** min(attempt, 100))


def uncapped_wait(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """No min(cap, ...): the tenth retry waits 512 s."""
    if attempt >= max_attempts:
        return None
    return finished + initial * multiplier ** min(attempt - 1, 100)


def power_overflows(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """min(cap, initial * multiplier ** (attempt - 1)): right until the power overflows."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** (attempt - 1))


def stops_growing_at_the_default_cap(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """The exponent bounded by a fixed number, "since 2 ** 6 = 64 is past the 60 s cap":
    no overflow, and right for the defaults, but a longer cap is never reached."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** min(attempt - 1, 6))


def stops_growing_at_exponent_30(
    attempt: int, finished: float, max_attempts: int, *policy: float
) -> float | None:
    """The exponent bounded "against overflow, since 2 ** 30 s is 34 years": right for
    a doubling wait, but a slow one (multiplier 1.1) stops growing far below its cap."""
    initial, multiplier, cap = policy
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** min(attempt - 1, 30))


def the_wait_only(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """Returns how long to wait instead of when."""
    if attempt >= max_attempts:
        return None
    return min(cap, initial * multiplier ** min(attempt - 1, 100))


def linear_backoff(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """A wait that grows by a step, not a factor."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * attempt)


def constant_wait(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """A fixed retry delay: every retry waits initial, whatever the attempt (at attempt 2
    an exponent one too low gives the same instant)."""
    if attempt >= max_attempts:
        return None
    return finished + initial


def exponent_low_after_the_first(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """The first retry right, every later one a factor short: at attempt 2 it waits
    initial, as a fixed delay does, and grows from attempt 3 on."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** min(max(attempt - 2, 0), 100))


def the_cap_past_attempt_six(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """The cap from attempt 7 on, "since 2 ** 6 = 64 is past the 60 s cap": right for the
    default policy only (it was told max(cap, ...) waits at least the cap)."""
    if attempt >= max_attempts:
        return None
    return finished + (cap if attempt > 6 else min(cap, initial * multiplier ** (attempt - 1)))


def retries_for_ever_at_initial(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """Two mistakes: no cap on attempts, and a wait that never grows; where no attempt is
    left, the first is the one to name."""
    return finished + initial


RETRY_MISTAKES = [
    (never_gives_up, "the last", "without that cap a broken task is retried for ever"),
    (one_attempt_too_many, "never retries", "max_attempts counts every attempt"),
    (first_retry_doubled, "the first retry waits initial", "initial * multiplier ** (n - 1)"),
    (uncapped_wait, "the wait is capped", "the wait is capped at 60 s"),
    (power_overflows, "no overflow", "stop growing the wait once it reaches the cap"),
    (stops_growing_at_the_default_cap, "grows until the cap", "stopped growing below the cap"),
    (stops_growing_at_exponent_30, "a slow wait grows", "stopped growing below the cap"),
    (the_wait_only, "counted from the finish", "return the instant, finished + wait"),
    (linear_backoff, "the wait doubles", "by a factor (exponential backoff), not by a step"),
    (constant_wait, "the wait doubles", "every retry waits initial, 1 s: the wait never grows"),
    (constant_wait, "the wait is capped", "the wait never grows"),
    (exponent_low_after_the_first, "the wait doubles", "the exponent is one too low"),
    (the_cap_past_attempt_six, "grows until the cap", "where the wait has grown to 2048 s"),
    (the_cap_past_attempt_six, "a slow wait grows", "right only for the multiplier it was"),
    (retries_for_ever_at_initial, "the last", "a broken task is retried for ever"),
    (retries_for_ever_at_initial, "the wait doubles", "the wait never grows"),
]


@pytest.mark.parametrize(
    ("answer", "check", "named"), RETRY_MISTAKES, ids=[m[0].__name__ for m in RETRY_MISTAKES]
)
def test_the_retry_checker_fails_each_mistake_with_a_message_naming_it(
    answer: Callable[..., float | None], check: str, named: str
) -> None:
    assert named in failure(run_checks(retry_at_checks(answer)), check)


def test_a_retry_answer_that_gives_up_too_early_is_told_how_many_attempts_are_left() -> None:
    def gives_up_early(attempt: int, finished: float, *policy: float) -> None:
        return None

    message = failure(run_checks(retry_at_checks(gives_up_early)), "counted from the finish")
    assert message == (
        "retry_at(1, 100, 3, 1, 2, 60): expected 101, got None: attempt 1 of 3 failed, so 2 "
        "more may run; max_attempts counts every attempt, the first included"
    )


def jittered(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """Jitter added, as the notebook's paragraph on retries suggests for production: the
    wait is drawn from [b / 2, b], so the same failure gives a different instant."""
    if attempt >= max_attempts:
        return None
    wait = min(cap, initial * multiplier ** min(attempt - 1, 100))
    return finished + wait * (0.5 + random.random() / 2)


def test_a_jittered_retry_is_told_the_rule_is_deterministic_not_that_it_stopped_growing() -> None:
    results = run_checks(retry_at_checks(jittered))
    for check in ("the first retry waits initial", "grows until the cap", "a slow wait grows"):
        told = failure(results, check)
        assert "then" in told and "leave the jitter out" in told, told
        assert "stopped growing" not in told, told


def test_a_first_retry_that_waits_too_little_is_not_told_the_wait_stopped_growing() -> None:
    def first_wait_short(attempt: int, finished: float, max_attempts: int, *policy: float) -> Any:
        """Right but for the first retry, 0.3 s after the failure (no power of 2 from 1)."""
        if attempt == 1 and max_attempts > 1:
            return finished + 0.3
        return reference_retry_at(attempt, finished, max_attempts, *policy)

    told = failure(run_checks(retry_at_checks(first_wait_short)), "the first retry waits")
    assert told == "retry_at(1, 100, 3, 1, 2, 60): expected 101, got 100.3"


def test_the_retry_checker_passes_the_reference_answer() -> None:
    assert [r for r in run_checks(retry_at_checks(retry_at)) if not r.passed] == []


def test_the_retry_checker_passes_a_closed_form_that_caps_the_exponent() -> None:
    def closed_form(
        attempt: int,
        finished: float,
        max_attempts: int = 3,
        initial: float = 1.0,
        multiplier: float = 2.0,
        cap: float = 60.0,
    ) -> float | None:
        if attempt >= max_attempts:
            return None
        if initial == 0 or multiplier == 1:
            return finished + min(cap, initial)
        steps = math.log(cap / initial, multiplier) + 1  # past it, the wait is the cap
        return finished + min(cap, initial * float(multiplier ** min(attempt - 1, steps)))

    assert [r for r in run_checks(retry_at_checks(closed_form)) if not r.passed] == []


# -- the resume rule ----------------------------------------------------------------------------


def _waited_for(first: float, period: float, paused: float) -> float:
    """The slot a task paused at ``paused`` waited for (one at the pause instant ran)."""
    if paused < first:
        return first
    return first + (math.floor((paused - first) / period) + 1) * period


def _grid_from(start: float, period: float) -> list[float]:
    return [start + k * period for k in range(3)]


def _slept_through(
    rule: Callable[[float, float, float, str, float], list[float]],
) -> Callable[..., Any]:
    """A learner's answer, right while no slot was slept through (the old grid goes on),
    and ``rule(first, period, resumed, policy, waiting)`` once one was."""

    @functools.wraps(rule)
    def answer(first: float, period: float, paused: float, resumed: float, policy: str) -> Any:
        waiting = _waited_for(first, period, paused)
        if resumed <= waiting:
            return _grid_from(waiting, period)
        return rule(first, period, resumed, policy, waiting)

    return answer


def _next_on_the_old_grid(first: float, period: float, resumed: float) -> float:
    return first + math.ceil((resumed - first) / period) * period


def _caught_up(period: float, resumed: float, waiting: float) -> list[float]:
    """One run per slot slept through, all at the resume, then the grid from there."""
    missed = int((resumed - waiting) // period) + 1
    return ([resumed] * missed + _grid_from(resumed + period, period))[:3]


@_slept_through
def runs_every_slot_slept_through(
    first: float, period: float, resumed: float, policy: str, waiting: float
) -> list[float]:
    """A resume that catches up, whatever the policy."""
    return _caught_up(period, resumed, waiting)


@_slept_through
def policy_decides(
    first: float, period: float, resumed: float, policy: str, waiting: float
) -> list[float]:
    """The answer most learners give first: the task's policy says what a resume does.
    catch_up runs every slot slept through at the resume, skip waits for the next slot of
    the old grid, run_once runs one at once (right, by accident)."""
    if policy == "catch_up":
        return _caught_up(period, resumed, waiting)
    if policy == "skip":
        return _grid_from(_next_on_the_old_grid(first, period, resumed), period)
    return _grid_from(resumed, period)


@_slept_through
def waits_for_the_next_slot(
    first: float, period: float, resumed: float, policy: str, waiting: float
) -> list[float]:
    """The slots slept through are dropped: the task waits for the old grid's next one."""
    return _grid_from(_next_on_the_old_grid(first, period, resumed), period)


@_slept_through
def keeps_the_old_grid(
    first: float, period: float, resumed: float, policy: str, waiting: float
) -> list[float]:
    """One run at the resume, right, then back on the old grid: no re-anchoring."""
    following = first + (math.floor((resumed - first) / period) + 1) * period
    return [resumed, following, following + period]


def runs_at_the_resume(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> Any:
    """A resume taken as "run now", even when no slot was missed."""
    return _grid_from(resumed, period)


def freezes_the_countdown(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> Any:
    """A pause as on a media player: the time left to the slot resumes where it stopped."""
    waiting = _waited_for(first, period, paused)
    return _grid_from(resumed + (waiting - paused), period)


def misses_the_slot_at_the_pause(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> Any:
    """A slot exactly at the pause instant taken for not run yet (``ceil`` where the
    slot after it belongs): it "was slept through", so a run goes at the resume."""
    waiting = first if paused < first else first + math.ceil((paused - first) / period) * period
    return _grid_from(max(waiting, resumed), period)


def the_delays(first: float, period: float, paused: float, resumed: float, policy: str) -> Any:
    """Right, but as delays counted from the resume."""
    return [run - resumed for run in runs_after_resume(first, period, paused, resumed, policy)]


def counts_slots_from_zero(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> list[float]:
    """Right, on a grid k * period that forgets ``first``."""
    start = max((math.floor(paused / period) + 1) * period, resumed)
    return [start + k * period for k in range(3)]


def waits_a_period_from_the_pause(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> list[float]:
    """The slot after the pause taken as a period after it."""
    start = max(paused + period, resumed)
    return [start + k * period for k in range(3)]


RESUME_MISTAKES = [
    (
        policy_decides,
        "under catch_up",
        "runs_after_resume(0, 60, 10, 400, 'catch_up'): expected [400, 460, 520], got [400, "
        "400, 400]: the resume ran the slots slept through one by one; a pause is a "
        "deliberate stop, neither an overrun (OverrunPolicy) nor a downtime (MisfirePolicy), "
        "so no policy decides a resume: the slot slept through runs once, at the resume "
        "(400), whatever the policy (CATCH_UP and RUN_ALL catch up overruns and restarts, "
        "not pauses); your answer changes with the policy ([420, 480, 540] under 'skip')",
    ),
    (
        policy_decides,
        "under skip",
        "runs_after_resume(0, 60, 10, 400, 'skip'): expected [400, 460, 520], got [420, 480, "
        "540]: the resume does not wait for the old grid's next slot (420): a slot was slept "
        "through (from 60 on), so one run goes at once, at the resume (400), whatever the "
        "policy; your answer changes with the policy ([400, 460, 520] under 'run_once'), but "
        "a pause is a deliberate stop, neither an overrun (OverrunPolicy) nor a downtime "
        "(MisfirePolicy), so no policy decides a resume",
    ),
    (
        runs_every_slot_slept_through,
        "six slots slept through",
        "runs_after_resume(0, 60, 10, 400, 'run_once'): expected [400, 460, 520], got [400, "
        "400, 400]: the resume ran the slots slept through one by one",
    ),
    (
        waits_for_the_next_slot,
        "six slots slept through",
        "runs_after_resume(0, 60, 10, 400, 'run_once'): expected [400, 460, 520], got [420, "
        "480, 540]: the resume does not wait for the old grid's next slot (420)",
    ),
    (
        keeps_the_old_grid,
        "six slots slept through",
        "runs_after_resume(0, 60, 10, 400, 'run_once'): expected [400, 460, 520], got [400, "
        "420, 480]: the grid re-anchors at the resumed run: the next run is a period after it "
        "(460), not the old grid's next slot (420)",
    ),
    (
        runs_at_the_resume,
        "between two slots",
        "runs_after_resume(0, 60, 10, 50, 'run_once'): expected [60, 120, 180], got [50, 110, "
        "170]: resumed at 50, before the slot it waited for (60) came: nothing was missed, so "
        "that slot runs when due, on the old grid; a resume is not a run now",
    ),
    (
        freezes_the_countdown,
        "between two slots",
        "runs_after_resume(0, 60, 10, 50, 'run_once'): expected [60, 120, 180], got [100, "
        "160, 220]: the countdown was frozen at the pause (50 s left) and restarted at the "
        "resume",
    ),
    (
        misses_the_slot_at_the_pause,
        "paused exactly on a slot",
        "runs_after_resume(0, 60, 60, 100, 'run_once'): expected [120, 180, 240], got [100, "
        "160, 220]: the slot at the pause instant (60) had run (every slot up to the pause "
        "ran), so the task waited for 120, and the resume came before it",
    ),
    (
        the_delays,
        "between two slots",
        "runs_after_resume(0, 60, 10, 50, 'run_once'): expected [60, 120, 180], got [10, 70, "
        "130]: those are delays counted from the resume; return the instants of the runs",
    ),
    (
        waits_a_period_from_the_pause,
        "between two slots",
        "runs_after_resume(0, 60, 10, 50, 'run_once'): expected [60, 120, 180], got [70, 130, "
        "190]: 70 is neither a slot of the task's grid, 0 + k * 60, nor the resume (50); the "
        "slots count from first, not from 0 nor from the pause",
    ),
    (
        counts_slots_from_zero,
        "100 random pauses",
        "runs_after_resume(298, 29, 298.5, 312.75, 'skip'): expected [327, 356, 385], got "
        "[319, 348, 377]: 319 is neither a slot of the task's grid, 298 + k * 29, nor the "
        "resume (312.75)",
    ),
]


@pytest.mark.parametrize(
    ("answer", "check", "told"),
    RESUME_MISTAKES,
    ids=[f"{m[0].__name__}-{m[1].replace(' ', '_')}" for m in RESUME_MISTAKES],
)
def test_the_resume_checker_fails_each_mistake_naming_the_case_and_the_rule(
    answer: Callable[..., Any], check: str, told: str
) -> None:
    results = run_checks(runs_after_resume_checks(answer))
    assert failure(results, check).startswith(told)
    assert not failure(results, "100 random pauses").startswith("raised")


def test_a_resume_answer_of_the_wrong_shape_is_told_what_to_return() -> None:
    def the_first_run(first: float, period: float, paused: float, resumed: float, _: str) -> Any:
        return runs_after_resume(first, period, paused, resumed, "run_once")[0]

    def two_runs(first: float, period: float, paused: float, resumed: float, _: str) -> Any:
        return runs_after_resume(first, period, paused, resumed, "run_once")[:2]

    assert failure(run_checks(runs_after_resume_checks(the_first_run)), "between two slots") == (
        "runs_after_resume(0, 60, 10, 50, 'run_once') returned 60: return a list of the 3 "
        "instants the runs start at"
    )
    assert failure(run_checks(runs_after_resume_checks(two_runs)), "between two slots") == (
        "runs_after_resume(0, 60, 10, 50, 'run_once') returned 2 instants, [60, 120]: "
        "return the first 3 runs after the pause"
    )


def test_the_resume_checker_passes_the_reference_answer_and_one_written_another_way() -> None:
    def steps_along_the_grid(
        first: float, period: float, paused: float, resumed: float, policy: str
    ) -> list[float]:
        slot = first
        while slot <= paused:  # every slot up to the pause ran
            slot += period
        if resumed > slot:  # slept through: once, now, and the grid starts there
            slot = resumed
        return [slot, slot + period, slot + 2 * period]

    assert [
        r for r in run_checks(runs_after_resume_checks(runs_after_resume)) if not r.passed
    ] == []
    assert [
        r for r in run_checks(runs_after_resume_checks(steps_along_the_grid)) if not r.passed
    ] == []


def test_the_resume_checker_asks_the_scheduler_not_a_copy_of_the_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the re-anchoring taken out of the core's resume (every task's slot kept, as a
    plan's is), the checker's expectations follow the library: the reference answer fails
    where the grid is concerned, and the old-grid answer passes there."""
    from lldsched.core import control

    monkeypatch.setattr(control, "planned", lambda schedule: True)
    grid = "six slots slept through"
    assert "expected [400, 420, 480]" in failure(
        run_checks(runs_after_resume_checks(runs_after_resume)), grid
    )
    (kept,) = [
        r for r in run_checks(runs_after_resume_checks(keeps_the_old_grid)) if grid in r.description
    ]
    assert kept.passed, kept.message


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


def test_a_parser_that_accepts_plus_five_fails_and_is_told_why_int_took_it() -> None:
    results = run_checks(parse_field_checks(accepts_a_plus_sign))
    assert failure(results, "rejects what cron rejects") == (
        "'+5' in 0-59 should raise ValueError (cron rejects it), got [5]: cron takes ASCII "
        "digits only, and int() also reads a sign, spaces, underscores and other scripts' "
        "digits ('+5', ' 5', '1_0', '\uff15'); test part.isascii() and part.isdigit() "
        "before int(part)"
    )


def reads_numbers_as_the_old_hint_said(
    text: str, low: int, high: int, *, underscores: bool = True
) -> set[int]:
    """The checker's former advice followed: "test part.isdigit() before int(part)", and
    int() alone past that. isdigit() is true of a fullwidth five, which int() reads as 5,
    and int() reads "1_0" as 10 (an answer that tests the digits with the underscores
    taken out): cron takes neither. The reference, given each number as int() reads it."""

    def as_int_reads_it(number: re.Match[str]) -> str:
        digits = number.group()
        return digits if "_" in digits and not underscores else str(int(digits))

    return parse_field(re.sub(r"\d[\d_]*", as_int_reads_it, text), low, high)


@pytest.mark.parametrize(("underscores", "text", "read"), [(True, "1_0", 10), (False, "\uff15", 5)])
def test_a_parser_that_reads_what_int_reads_past_isdigit_fails_and_is_told_to_test_ascii(
    underscores: bool, text: str, read: int
) -> None:
    answer = functools.partial(reads_numbers_as_the_old_hint_said, underscores=underscores)
    assert answer(text, 0, 59) == {read}  # int() read it
    message = failure(run_checks(parse_field_checks(answer)), "rejects what cron")
    assert message.startswith(f"{text!r} in 0-59 should raise ValueError (cron rejects it)")
    assert "part.isascii() and part.isdigit()" in message


def test_a_parser_that_reads_a_range_by_its_first_two_numbers_fails() -> None:
    def first_two_numbers(text: str, low: int, high: int) -> set[int]:
        """Splits a range on every dash and keeps the first two parts: "1-5-7" is 1-5."""
        return parse_field(
            ",".join("-".join(item.split("-")[:2]) for item in text.split(",")), low, high
        )

    results = run_checks(parse_field_checks(first_two_numbers))
    assert "'1-5-7' in 0-59 should raise ValueError" in failure(results, "rejects what cron")


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


def test_a_parser_that_reads_n_slash_s_as_n_is_told_the_convention() -> None:
    def n_slash_s_is_n(text: str, low: int, high: int) -> set[int]:
        items = [
            item.split("/")[0] if item[:1].isdigit() and "-" not in item else item
            for item in text.split(",")
        ]
        return parse_field(",".join(items), low, high)

    message = failure(run_checks(parse_field_checks(n_slash_s_is_n)), "minute fields")
    assert message == (
        "'50/3' in 0-59: expected [50, 53, 56, 59], got [50]: n/s means n-high/s, as in "
        "real cron (50/3 in a minute field is 50, 53, 56 and 59)"
    )


def test_a_parser_whose_ranges_leave_out_their_end_is_told_both_ends_count() -> None:
    def end_left_out(text: str, low: int, high: int) -> set[int]:
        values = parse_field(text, low, high)
        ends = {int(item.split("/")[0].split("-")[1]) for item in text.split(",") if "-" in item}
        return values - ends

    message = failure(run_checks(parse_field_checks(end_left_out)), "minute fields")
    assert message == (
        "'5-10' in 0-59: expected [5, 6, 7, 8, 9, 10], got [5, 6, 7, 8, 9]: a range "
        "includes both its ends (a-b is range(a, b + 1))"
    )


def test_a_parser_whose_star_steps_count_from_zero_fails_on_months() -> None:
    def star_from_zero(text: str, low: int, high: int) -> set[int]:
        values: set[int] = set()
        for item in text.split(","):
            step = item.removeprefix("*/")
            if item.startswith("*/") and step.isdigit() and int(step) > 0:
                values.update(v for v in range(0, high + 1, int(step)) if v >= low)
            else:
                values.update(parse_field(item, low, high))
        return values

    results = run_checks(parse_field_checks(star_from_zero))
    assert failure(results, "month fields") == (
        "'*/2' in 1-12: expected [1, 3, 5, 7, 9, 11], got [2, 4, 6, 8, 10, 12]: a step "
        "counts from the field's first value, 1 here (*/2 is 1, 3, 5, ...), not from 0"
    )
    assert [r.description for r in results if not r.passed] == [
        "month fields start at 1: */2 -> 1, 3, 5, ...",
        "agrees with lldsched on 300 random fields, edges included",
    ]


def test_a_parser_whose_range_steps_count_from_the_field_s_start_is_told_from_where() -> None:
    """``a-b/s`` stepped from the field's first value and cut at ``a``: 10-50/20 read as
    20, 40.  It was given no hint, and in the random fields the wrong one ("a range
    includes both its ends")."""

    def steps_from_low(text: str, low: int, high: int) -> set[int]:
        values: set[int] = set()
        for item in text.split(","):
            base, _, step = item.partition("/")
            ends = parse_field(
                base if "-" in base or base == "*" or not step else f"{base}-{high}", low, high
            )
            if step.isdigit() and int(step) > 0:
                start, stop = min(ends), max(ends)
                values.update(v for v in range(low, stop + 1, int(step)) if v >= start)
            else:
                values.update(parse_field(item, low, high))
        return values

    results = run_checks(parse_field_checks(steps_from_low))
    assert failure(results, "minute fields") == (
        "'10-50/20' in 0-59: expected [10, 30, 50], got [20, 40]: a step counts from the "
        "start of its range (10-50/20 is 10, 30, 50), not from the field's first value"
    )
    random_fields = failure(results, "300 random fields")
    assert random_fields.endswith("not from the field's first value"), random_fields


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
        "exercises/solutions/retry_at.py",
        "exercises/solutions/runs_after_resume.py",
        "exercises/solutions/task_queue.py",
    ]
    assert all((root / "notebooks" / path).is_file() for path in offered)


# -- an answer passed the wrong way ---------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "given", "told"),
    [
        ("check_task_queue", TaskQueue(), "check_task_queue(TaskQueue)"),
        ("check_wakes_for_a_push", TaskQueue(), "check_wakes_for_a_push(TaskQueue)"),
        ("check_next_slot", 60.0, "check_next_slot(next_slot)"),
        ("check_retry_at", None, "check_retry_at(retry_at)"),
        ("check_runs_after_resume", [60, 120, 180], "check_runs_after_resume(runs_after_resume)"),
        ("check_parse_field", {0, 15, 30, 45}, "check_parse_field(parse_field)"),
    ],
)
def test_a_checker_given_an_instance_or_a_result_says_so_in_one_line(
    check: str, given: object, told: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check_task_queue(TaskQueue())`` or ``check_next_slot(next_slot(0, 60, 5, 'skip'))``:
    one line that says what to pass, not every check failing with "not callable"."""
    import exercises

    getattr(exercises, check)(given)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    assert told in lines[0] and "not callable" not in lines[0], lines[0]


class NoClockParameter(TaskQueue):
    """The constructor written without the clock the exercise gives it."""

    def __init__(self) -> None:
        super().__init__()


def test_a_queue_built_without_the_clock_parameter_is_told_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every check builds the queue as ``TaskQueue(clock)``: each of the 17 failed with
    the same ``TypeError``, 17 lines that did not say where the clock was to go."""
    import exercises

    answer: Any = NoClockParameter  # the wrong constructor is the point
    exercises.check_task_queue(answer)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"✗ all {len(timer_checks(TaskQueue))} checks fail the same way: the checker builds "
        "your queue as TaskQueue(clock), and NoClockParameter(clock) raised TypeError: "
        "NoClockParameter.__init__() takes 1 positional argument but 2 were given; keep "
        "the constructor's clock parameter (def __init__(self, clock=time.monotonic))"
    ]


def test_one_mistake_that_fails_every_check_is_printed_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import exercises

    def three_arguments(slot: float, period: float, finished: float) -> float:
        return slot + period

    answer: Any = three_arguments  # the missing policy parameter is the point
    exercises.check_next_slot(answer)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("✗ all 7 checks fail the same way: "), lines
    assert "takes 3 positional arguments but 4 were given" in lines[0]


@pytest.mark.parametrize("answer", [PollsWithSleep])
def test_a_mistake_that_fails_several_checks_in_a_row_is_printed_once(
    answer: type[TaskQueue], timer_results: TimerResults, capsys: pytest.CaptureFixture[str]
) -> None:
    """A poll loop fails seven timer checks, one after another, with one message of three
    lines: the first says it, and each of the others says it is the same."""
    results = timer_results(answer)
    checks.print_results(results)
    lines = capsys.readouterr().out.splitlines()
    failures = [r for r in results if not r.passed]
    failed = [line for line in lines if line.startswith("✗ ")]
    assert len(failed) == len(failures) >= 7, lines
    said = [
        line.removeprefix(f"✗ {r.description}: ") for line, r in zip(failed, failures, strict=True)
    ]
    assert set(said) == {r.message for r in failures} | {checks.SAID_ABOVE}, said
    assert said.count(checks.SAID_ABOVE) >= 6, lines
    assert lines[-1] == f"{sum(r.passed for r in results)} of {len(results)} checks pass"
