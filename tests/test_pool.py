"""WorkerPool: bounded hand-off, drain or drop at shutdown, and refusal afterwards."""

from __future__ import annotations

import threading

import pytest

from lldsched import SchedulerStateError, ValidationError
from lldsched.threaded.pool import WorkerPool


def make_pool(
    done: list[int],
    gate: threading.Event | None = None,
    capacity: int = 4,
    taken: threading.Event | None = None,
) -> WorkerPool[int, int, None]:
    lock = threading.Lock()

    def prepare(item: int, worker: int) -> int:
        if taken is not None:
            taken.set()
        return item

    def execute(item: int) -> None:
        if gate is not None:
            gate.wait(5)

    def complete(item: int, result: None) -> None:
        done.append(item)

    return WorkerPool(
        1, prepare=prepare, execute=execute, complete=complete,
        lock=lock, capacity=capacity,
    )  # fmt: skip


def test_the_pool_drains_then_refuses_new_work() -> None:
    done: list[int] = []
    gate = threading.Event()
    pool = make_pool(done, gate)
    pool.start()
    with pool._lock:
        pool.put([1, 2, 3])
    gate.set()
    assert pool.shutdown(drain=True, timeout=5) == []
    assert sorted(done) == [1, 2, 3] and pool.alive == 0
    with pool._lock, pytest.raises(SchedulerStateError, match="shut down"):
        pool.put([4])
    assert pool.room == 0


def test_drop_returns_the_queued_items_and_lets_the_running_one_finish() -> None:
    done: list[int] = []
    gate, taken = threading.Event(), threading.Event()
    pool = make_pool(done, gate, taken=taken)
    pool.start()
    with pool._lock:
        pool.put([1])
    assert taken.wait(5)  # the worker holds item 1
    with pool._lock:
        pool.put([2, 3])
    dropped: list[int] = []
    closer = threading.Thread(target=lambda: dropped.extend(pool.shutdown(drain=False, timeout=5)))
    closer.start()
    gate.set()
    closer.join(5)
    assert done == [1] and dropped == [2, 3]


def test_room_is_the_bound_of_the_hand_off_queue() -> None:
    pool = make_pool([], capacity=3)
    with pool._lock:
        assert pool.room == 3
        pool.put([1, 2])
        assert pool.room == 1 and pool.queued == 2


def test_room_is_zero_not_negative_past_the_capacity() -> None:
    # The event loop passes on entries whose tasks a replace made thread tasks without
    # asking for room (tests/test_replace_in_flight.py): the timer, which takes
    # ``room`` entries off the heap when room is truthy, must read 0, never -1.
    pool = make_pool([], capacity=2)
    with pool._lock:
        pool.put([1, 2, 3])
        assert pool.room == 0 and pool.queued == 3


def test_discard_takes_out_the_unwanted_items_and_keeps_the_others_in_order() -> None:
    # A shared store's claims given back before a worker took them: their entries go,
    # so that metrics() counts only the runs still waiting here (handoff, lag).
    done: list[int] = []
    gate, taken = threading.Event(), threading.Event()
    pool = make_pool(done, gate, capacity=8, taken=taken)
    pool.start()
    with pool._lock:
        pool.put([1])
    assert taken.wait(5)  # the worker holds item 1
    with pool._lock:
        pool.put([2, 3, 4, 5])
        assert pool.discard(lambda item: item % 2 == 0) == 2
        assert (pool.waiting, pool.count(lambda item: True)) == (2, (2, 3))
        # count: what metrics() reads of the hand-off queue (its live entries only)
        assert pool.count(lambda item: item > 3) == (1, 5)
        assert pool.count(lambda item: item > 10) == (0, None)
        assert pool.discard(lambda item: item > 10) == 0
    gate.set()
    assert pool.shutdown(drain=True, timeout=5) == []
    assert done == [1, 3, 5]


@pytest.mark.parametrize(("workers", "capacity"), [(0, None), (2, 0), (True, None)])
def test_bad_sizes_are_rejected(workers: int, capacity: int | None) -> None:
    with pytest.raises(ValidationError, match="got"):
        WorkerPool(
            workers, prepare=lambda i, w: i, execute=lambda j: j,
            complete=lambda j, r: None, capacity=capacity,
        )  # fmt: skip


@pytest.mark.parametrize("step", ["prepare", "complete"])
@pytest.mark.parametrize("raised", [RuntimeError, KeyboardInterrupt, SystemExit])
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_goes_on_when_its_own_step_raises_a_base_exception(
    step: str, raised: type[BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    """What ``prepare`` or ``complete`` raised, a ``KeyboardInterrupt`` or ``SystemExit``
    too (a logging handler's, on a run's failed line), is logged and the worker goes on,
    as it does for the user's code: it killed the only worker, and nothing ran again
    (the idle count, which claims wait on, left as it was)."""
    lock = threading.Lock()
    done: list[int] = []
    idle = threading.Event()

    def prepare(item: int, worker: int) -> int:
        if step == "prepare" and item == 1:
            raise raised("the step broke")
        return item

    def complete(item: int, result: None) -> None:
        done.append(item)
        if step == "complete" and item == 1:
            raise raised("the step broke")

    pool: WorkerPool[int, int, None] = WorkerPool(
        1, prepare=prepare, execute=lambda item: None, complete=complete, lock=lock
    )
    pool.on_idle = idle.set
    pool.start()
    assert idle.wait(5)
    with lock:
        idle.clear()
        pool.put([1, 2])
    assert idle.wait(5)  # the worker waits for work again: both taken
    with lock:
        assert pool.idle == 1 and pool.alive == 1
    assert pool.shutdown(drain=True, timeout=5) == []
    assert done == ([1, 2] if step == "complete" else [2])
    assert f"could not {'start' if step == 'prepare' else 'settle'}" in caplog.text


def test_a_worker_is_idle_until_it_takes_an_item_even_before_its_thread_first_waits() -> None:
    """``idle`` counts the workers not busy with an item: a shared store's timer claims
    only while ``idle > queued``, and its first wake may come before any worker thread
    reached its wait (it did: the first claim then came a wake later, from a later
    reading of the clock leases are trusted by)."""
    lock = threading.Lock()
    running = threading.Event()  # set when the item's execute() began
    release = threading.Event()  # set by the test: execute() returns

    def execute(item: int) -> None:
        running.set()
        release.wait(5)

    pool: WorkerPool[int, int, None] = WorkerPool(
        1, prepare=lambda item, worker: item, execute=execute,
        complete=lambda item, result: None, lock=lock,
    )  # fmt: skip
    with lock:
        assert pool.idle == 1  # not started
        pool.start()  # its thread waits for this lock: it has not reached its first wait
        assert pool.idle == 1
        pool.put([1])
    assert running.wait(5)
    with lock:
        assert pool.idle == 0  # busy with the item
    release.set()
    assert pool.shutdown(drain=True, timeout=5) == []  # its thread joined
    with lock:
        assert pool.idle == 1  # the item settled: idle again
