import heapq
import itertools
import threading
import time
from collections.abc import Callable


class TaskQueue:
    """The timer's queue: a heap of (due, sequence, task name) guarded by one Condition."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # Guards _heap and _live.  push notifies it when its entry is the new head.
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []
        self._sequence = itertools.count()  # ties keep arrival order; never compares tasks
        self._live: dict[str, int] = {}  # task -> the sequence of its one live entry

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence  # an older entry of the same task is a tombstone now
            entry = (due, sequence, task)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:  # a new head: every waiter's timeout is too long
                self._cond.notify_all()

    def cancel(self, task: str) -> None:
        with self._cond:
            self._live.pop(task, None)  # the entry stays in the heap: a tombstone

    def pop_due(self) -> str:
        with self._cond:
            while True:  # re-test after every wake-up: notify, timeout, or spurious
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)  # a tombstone reached the top: drop it
                if not self._heap:
                    self._cond.wait()  # nothing queued: only a push can change that
                    continue
                due, _, task = self._heap[0]
                delay = due - self._clock()
                if delay <= 0:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(delay)  # until the head is due, or a push notifies
