"""Two running schedulers of one process never share a name given (lldsched/threaded/naming.py;
docs/decisions/threaded.md, "Two running schedulers of one process never share a name
given").

Before, a second scheduler started with ``name=`` a running one had ran beside it: two
sets of threads called ``lldsched-<name>-...`` and log lines whose ``scheduler`` field
could not tell them apart.  Now its ``start()`` is refused, naming the running one and
what to do, before anything starts; the name is free again once the first is shut down,
and a name counted (none given) is never refused, nor refuses a name given by hand.
"""

from __future__ import annotations

import os
import threading

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Scheduler,
    SchedulerStateError,
    StoreError,
)
from lldsched.threaded import naming
from tests.conftest import T0
from tests.forking import in_child


def _threads(prefix: str) -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(prefix))


def test_a_second_scheduler_started_under_a_running_ones_name_is_refused() -> None:
    first = Scheduler(workers=1, name="reports", clock=FakeClock(T0)).start()
    second = Scheduler(workers=1, name="reports", clock=FakeClock(T0))  # built: not refused
    second.schedule("job", print, FixedRate(60), id="job")
    try:
        threads = _threads("lldsched-reports-")
        with pytest.raises(SchedulerStateError) as refused:
            second.start()
        said = str(refused.value)
        assert said.startswith(
            "start() of a scheduler named 'reports': the running scheduler <Scheduler "
            "'reports' running workers=1 tasks=0 "
        ), said
        assert "cannot be told apart (their log lines' `scheduler` field, their threads' " in said
        assert said.endswith(
            "Shut that one down first (a notebook's cell run again: shut down the scheduler "
            "its last run started), or give this one a name=... of its own; nothing was started"
        )
        assert not second.running and _threads("lldsched-reports-") == threads  # none started
        assert [task.id for task in second.tasks()] == ["job"]  # nothing registered lost
    finally:
        assert first.shutdown()
    second.start()  # the name let go by the first one's shutdown
    try:
        assert second.running
    finally:
        assert second.shutdown()


def test_two_running_schedulers_of_two_names_run_as_before() -> None:
    with (
        Scheduler(workers=1, name="a", clock=FakeClock(T0)) as one,
        Scheduler(workers=1, name="b", clock=FakeClock(T0)) as other,
    ):
        assert one.running and other.running


def test_the_name_is_held_from_start_to_shutdown_only() -> None:
    built = Scheduler(workers=1, name="held", clock=FakeClock(T0))
    assert not naming.taken("held")  # built, never started: holds nothing
    built.start()
    assert naming.taken("held")
    assert built.shutdown()
    assert not naming.taken("held")
    assert built.shutdown()  # a second shutdown: nothing to let go
    assert not naming.taken("held")


def test_a_scheduler_whose_store_is_refused_at_start_holds_no_name() -> None:
    store = InMemoryTaskStore()
    built = Scheduler(workers=1, name="second", store=store, clock=FakeClock(T0))
    running = Scheduler(workers=1, name="first", store=store, clock=FakeClock(T0)).start()
    try:
        with pytest.raises(StoreError):
            built.start()
        assert not naming.taken("second") and not built.running
    finally:
        assert running.shutdown()
    with built:  # the store let go: it starts, under its name
        assert naming.taken("second")


def test_a_name_counted_is_never_refused_and_skips_a_name_given() -> None:
    """A library that names none of its schedulers is not refused for another's choice:
    the count skips a name a running scheduler was given, and one counted that starts
    beside a name given by hand is not refused (the name stays the first's)."""
    unnamed = Scheduler(workers=1, clock=FakeClock(T0))
    following = str(int(unnamed.name) + 1)
    given = Scheduler(workers=1, name=following, clock=FakeClock(T0)).start()
    try:
        counted = Scheduler(workers=1, clock=FakeClock(T0))
        assert counted.name != following and int(counted.name) > int(following)
        counted.start()
        assert counted.shutdown()
        clash = Scheduler(workers=1, name=unnamed.name, clock=FakeClock(T0)).start()
        unnamed.start()  # counted: not refused, beside the one given its name by hand
        assert unnamed.running and clash.running
        assert unnamed.shutdown() and clash.shutdown()
    finally:
        assert given.shutdown()


def test_a_name_given_by_hand_is_never_refused_for_one_lldsched_counted() -> None:
    """A host naming its schedulers by shard (``name=str(shard)``) beside a library's
    unnamed one, counted ``"1"`` and started first: the host's ``"1"`` starts (before,
    it was refused for a name lldsched chose), and holds the name from then on, so a
    second given it by hand is refused, naming the first given it."""
    counted = Scheduler(workers=1, clock=FakeClock(T0)).start()
    given = Scheduler(workers=1, name=counted.name, clock=FakeClock(T0))
    again = Scheduler(workers=1, name=counted.name, clock=FakeClock(T0))
    try:
        given.start()
        assert given.running and counted.running
        with pytest.raises(SchedulerStateError) as refused:
            again.start()
        assert str(refused.value).startswith(
            f"start() of a scheduler named '{counted.name}': the running scheduler "
            f"{given!r} of this process has that name"
        ), refused.value
        assert counted.shutdown()
        assert naming.taken(given.name)  # the counted one's shutdown lets go of nothing given
    finally:
        assert counted.shutdown() and given.shutdown()
    assert not naming.taken(given.name)
    with again:  # free once the one given it by hand is shut down
        assert again.running


def test_of_two_starting_at_once_under_one_name_one_runs() -> None:
    schedulers = [Scheduler(workers=1, name="race", clock=FakeClock(T0)) for _ in range(2)]
    barrier = threading.Barrier(2)
    refused: list[BaseException] = []

    def start(scheduler: Scheduler) -> None:
        barrier.wait()
        try:
            scheduler.start()
        except SchedulerStateError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in schedulers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(refused) == 1
        assert sorted(s.running for s in schedulers) == [False, True]
    finally:
        for scheduler in schedulers:
            assert scheduler.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX: no fork elsewhere")
def test_a_forked_child_holds_no_name_of_its_parent() -> None:
    """The parent's running scheduler runs nothing in a forked child (threaded/forked.py):
    the child's own, made after the fork under the same name, starts."""

    def in_the_child() -> bool:
        own = Scheduler(workers=1, name="parent-name", clock=FakeClock(T0)).start()
        return own.running and own.shutdown()

    with Scheduler(workers=1, name="parent-name", clock=FakeClock(T0)):
        assert in_child(in_the_child) == "True"


def test_a_name_set_after_the_start_is_let_go_by_the_shutdown_all_the_same() -> None:
    scheduler = Scheduler(workers=1, name="before", clock=FakeClock(T0)).start()
    scheduler.name = "after"  # a plain attribute: a caller may set it
    assert scheduler.shutdown()
    assert not naming.taken("before") and not naming.taken("after")
