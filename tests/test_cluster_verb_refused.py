"""A verb refused after ``shutdown()`` on a shared store (SQLite and PostgreSQL) does no
store I/O: the refusal (``REFUSED_AFTER_SHUTDOWN``) comes before the verb's hold of the
row and its read of the change feed.  Before, ``reschedule``, ``run_now``, ``resume`` and
``redrive`` took the hold (SQLite's write lock, PostgreSQL's row lock) and read the feed,
applying other processes' changes to a scheduler that was shut down, and only then said
no.  Counted with a wrapper around every public method of the store, no timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lldsched import FakeClock, FixedRate, Scheduler, SchedulerStateError
from lldsched.coordination import CoordinatedStore
from tests import jobs
from tests.cluster import StoreSpec, open_store

T0 = 1_800_000_000.0

REFUSED: dict[str, Callable[[Scheduler], object]] = {
    "reschedule": lambda s: s.reschedule("r", FixedRate(120)),
    "run_now": lambda s: s.run_now("r"),
    "resume": lambda s: s.resume("r"),
    "redrive": lambda s: s.redrive("r"),
}


def count_calls(store: CoordinatedStore) -> list[str]:
    """Wrap every public method of ``store`` (on the instance) so that each call is
    noted, by name, in the list returned."""
    calls: list[str] = []

    def counted(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return method(*args, **kwargs)

        return call

    for name in dir(type(store)):
        method = getattr(store, name, None)
        if not name.startswith("_") and callable(method):
            setattr(store, name, counted(name, method))
    return calls


@pytest.mark.parametrize("verb", sorted(REFUSED))
def test_a_verb_refused_after_shutdown_makes_no_store_call(
    store_spec: StoreSpec, verb: str
) -> None:
    mine, other = (open_store(store_spec, poll=0.05) for _ in range(2))
    try:
        scheduler = Scheduler(store=mine, workers=1, clock=FakeClock(T0))
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        scheduler.start()
        scheduler.shutdown()
        # Another process's change waits in the feed: a verb that read it would apply it.
        elsewhere = Scheduler(store=other, workers=1, clock=FakeClock(T0))
        elsewhere.schedule("s", jobs.noop, FixedRate(60), id="s")
        calls = count_calls(mine)
        with pytest.raises(SchedulerStateError, match=verb):
            REFUSED[verb](scheduler)
        assert calls == []
        assert [task.id for task in scheduler.tasks()] == ["r"]
        assert mine.changed()  # the wrapper counts (a check): the change was there to read
        assert calls == ["changed"]
    finally:
        for store in (mine, other):
            store.close()
