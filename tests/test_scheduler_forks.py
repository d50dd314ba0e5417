"""A scheduler made before a fork, used in the child (lldsched/threaded/forked.py): what a
web server that imports the application and then forks its workers does (gunicorn's
``--preload``, uWSGI without ``lazy-apps``, a ``multiprocessing`` fork).  The child has
the scheduler's tasks but none of its threads: each verb there is refused, naming the
fork and what to do, and its ``shutdown()`` stops nothing of the parent's."""

from __future__ import annotations

import logging
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lldsched import InMemoryTaskStore, OneTime, Scheduler, SchedulerStateError
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from tests import jobs
from tests.conftest import SchedulerFactory
from tests.forking import BOUND, in_child
from tests.waits import wait_until

VERBS: dict[str, Callable[[Scheduler], object]] = {
    "schedule": lambda s: s.schedule("mail", jobs.noop, OneTime(delay=0)),
    "task": lambda s: s.task("beat"),
    "tasks": lambda s: s.tasks(),
    "records": lambda s: s.records(),
    "pause": lambda s: s.pause("beat"),
    "run_now": lambda s: s.run_now("beat"),
    "remove": lambda s: s.remove("beat"),
    "wait_idle": lambda s: s.wait_idle(timeout=1),
    "metrics": lambda s: s.metrics(timeout=1),
    "add_listener": lambda s: s.add_listener(print),
    "start": lambda s: s.start(),
}


def refusal(scheduler: Scheduler) -> str:
    """The start of what each verb raises in a child forked from this process."""
    return (
        f"SchedulerStateError: the scheduler {scheduler.name!r} was made in process "
        f"{os.getpid()} and is used in process "
    )


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_scheduler_started_before_a_fork_refuses_each_verb_in_the_child(
    make_scheduler: SchedulerFactory, verb: str
) -> None:
    scheduler = make_scheduler(workers=1, name="web")
    scheduler.schedule("beat", jobs.noop, OneTime(delay=3600), id="beat")
    # Before: the child's copy said running, took the work and never ran it.
    outcome = in_child(lambda: VERBS[verb](scheduler))
    assert outcome.startswith(refusal(scheduler)), outcome
    assert "a child forked from it" in outcome
    assert "make the scheduler after the fork" in outcome
    assert "post_fork" in outcome and "lazy-apps" in outcome
    ran = threading.Event()  # the parent's scheduler is unharmed
    scheduler.schedule("here", ran.set, OneTime(delay=0))
    assert ran.wait(BOUND)
    assert scheduler.task("beat").status.value == "scheduled"


def test_the_child_sees_its_copy_is_not_running(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler(workers=1, name="web")
    outcome = in_child(lambda: (scheduler.running, repr(scheduler).split()[:3]))
    assert outcome == repr((False, ["<Scheduler", "'web'", "forked"]))
    assert scheduler.running


class HeldStore(InMemoryTaskStore):
    """A store whose next save waits for :attr:`gate`: the scheduler's lock is held
    meanwhile (the core writes its store under it), as a store write in progress holds
    it when a server forks."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.saving = threading.Event()
        self.gate = threading.Event()

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if self.hold:
            self.saving.set()
            self.gate.wait(BOUND)
        super().save(snapshot, record)


def test_a_lock_held_at_the_fork_does_not_hang_the_child(make_scheduler: SchedulerFactory) -> None:
    store = HeldStore()
    scheduler = make_scheduler(workers=1, store=store)
    store.hold = True
    writer = threading.Thread(
        target=scheduler.schedule, args=("slow", jobs.noop, OneTime(delay=3600))
    )
    writer.start()
    try:
        assert store.saving.wait(BOUND)
        # Before: the child's copy of the lock was held for good, and its first verb hung.
        outcome = in_child(scheduler.tasks)
    finally:
        store.hold = False
        store.gate.set()
        writer.join(BOUND)
    assert outcome.startswith(refusal(scheduler)), outcome
    assert [task.name for task in scheduler.tasks()] == ["slow"]


def test_shutdown_in_a_forked_child_stops_nothing_of_the_parents(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    scheduler = make_scheduler(workers=1)
    marker, release = tmp_path / "pid", tmp_path / "release"
    task = scheduler.schedule(
        "held",
        "tests.process_jobs:held",
        OneTime(delay=0),
        isolation="process",
        args=[str(marker), str(release)],
    )
    wait_until(lambda: marker.exists() and marker.read_text() != "", timeout=BOUND,
               what="the worker process to take the run")  # fmt: skip
    # An atexit shutdown, or a with block left in a worker: nothing of its own to stop.
    assert in_child(lambda: scheduler.shutdown(drain=False, timeout=1)) == "True"
    release.touch()
    assert scheduler.wait_idle(timeout=BOUND)
    # The parent's worker process lives on: the child's shutdown did not touch it.
    (record,) = task.history
    assert (record.ok, record.result, record.error) == (True, "'released'", None)


def test_a_scheduler_made_before_a_fork_is_not_started_in_the_child_one_made_there_is(
    make_scheduler: SchedulerFactory,
) -> None:
    made_before = make_scheduler(start=False, name="import-time")

    def in_the_child() -> tuple[str, bool]:
        try:
            made_before.start()
            refused = "started"
        except SchedulerStateError as exc:
            refused = str(exc).split(" was made")[0]
        ran = threading.Event()
        with Scheduler(workers=1, name="post-fork") as own:
            own.schedule("here", ran.set, OneTime(delay=0))
            return refused, ran.wait(BOUND)

    assert in_child(in_the_child) == repr(("the scheduler 'import-time'", True))
    assert not made_before.running  # and the parent's may still start


def test_a_forked_childs_scheduler_is_refused_again_in_its_own_child(
    make_scheduler: SchedulerFactory,
) -> None:
    scheduler = make_scheduler(workers=1)
    grandparent = os.getpid()

    def fork_again() -> Any:
        return in_child(scheduler.tasks)

    outcome = in_child(fork_again)
    assert f"was made in process {grandparent} and is used in process " in outcome


def test_a_process_forked_after_a_worker_process_started_does_not_hold_it_open(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    """A worker process exits when its pipe from the scheduler closes; a process forked
    meanwhile (a gunicorn worker, a multiprocessing child) held a copy of that pipe, so
    the worker process never saw it close: shutdown() waited out its timeout, and more,
    then killed it."""
    scheduler = make_scheduler(workers=1)
    marker = tmp_path / "exited"
    task = scheduler.schedule(
        "pid", "tests.process_jobs:note_exit", OneTime(delay=0), isolation="process",
        args=[str(marker)],
    )  # fmt: skip
    assert scheduler.wait_idle(timeout=BOUND) and task.history[0].ok  # it waits, idle
    hold, release = os.pipe()
    pid = os.fork()
    if pid == 0:  # a long-lived child that never touches the scheduler
        os.close(release)
        os.read(hold, 1)  # until the parent is done
        os._exit(0)
    os.close(hold)
    try:
        assert scheduler.shutdown(timeout=BOUND)
    finally:
        os.close(release)
        os.waitpid(pid, 0)
    # It exited on its own, at its pipe's end (killed, it writes nothing).
    assert marker.read_text() == "exited"


def test_a_process_forked_while_a_worker_process_lives_lets_it_go_without_a_warning(
    make_scheduler: SchedulerFactory,
) -> None:
    """The forked copy of the pool lets go of the parent's worker processes: their
    ``Popen`` objects, dropped there, said ``ResourceWarning: subprocess N is still
    running`` in every forked child (a gunicorn worker under ``-X dev``; "Exception
    ignored in" under ``-W error::ResourceWarning``).  They are the parent's to reap, as
    a forked copy of a store is the parent's to close (lldsched/stores/unclosed.py)."""
    scheduler = make_scheduler(workers=1)
    task = scheduler.schedule(
        "pid", "tests.process_jobs:pid", OneTime(delay=0), isolation="process"
    )
    assert scheduler.wait_idle(timeout=BOUND) and task.history[0].ok  # its process idles
    with warnings.catch_warnings(record=True) as said:  # copied into the child at the fork
        warnings.simplefilter("always", ResourceWarning)
        outcome = in_child(lambda: [str(w.message) for w in said])
    assert outcome == "[]"


@pytest.mark.parametrize(
    ("worker_id", "opt", "numproc", "warned"),
    [  # what uWSGI 2.0.31 said at import time under each command line
        (0, {"master": True, "processes": b"2"}, 2, True),  # loaded in the master, forked
        (0, {"master": True, "processes": b"1"}, 1, True),  # one worker: forked all the same
        (1, {"master": True, "processes": b"2", "lazy-apps": True}, 2, False),  # in each worker
        (0, {"master": True, "processes": b"2", "py-call-osafterfork": True}, 2, False),
        (0, {"processes": b"1"}, 1, False),  # one process and no master: no fork
    ],
)
def test_under_uwsgi_a_scheduler_made_before_a_fork_without_fork_hooks_is_warned_of(
    make_scheduler: SchedulerFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    worker_id: int,
    opt: dict[str, object],
    numproc: int,
    warned: bool,
) -> None:
    """uWSGI forks its workers without running Python's fork hooks (unless
    py-call-osafterfork is set): the refusal above never happens there, so the copy in a
    worker would take work it never runs without a word.  Said once, where it is made."""
    uwsgi = types.ModuleType("uwsgi")  # the module uWSGI's Python plugin provides
    uwsgi.worker_id = lambda: worker_id  # type: ignore[attr-defined]
    uwsgi.opt = opt  # type: ignore[attr-defined]
    uwsgi.numproc = numproc  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "uwsgi", uwsgi)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        make_scheduler(start=False, name="uw")
    said = [record.getMessage() for record in caplog.records]
    if not warned:
        assert said == []
        return
    (line,) = said
    assert line.startswith("the scheduler 'uw' is made in uWSGI's master, before it forks")
    assert "lazy-apps = true" in line and "py-call-osafterfork = true" in line
