"""The multi-process harness: shared stores by engine, child schedulers, their claim logs.

Engine-agnostic: a test asks for the ``store_spec`` fixture and gets one
:class:`StoreSpec` per engine in :data:`FACTORIES` (a JSON-able description a
child process can open); :func:`open_store` opens a spec in any process through
:data:`OPENERS` (both in :mod:`tests.cluster_stores`, which a child imports without
pytest).  An engine is two entries: a factory (given the pytest request and a temporary
directory; it may start a server through another fixture) and an opener.  PostgreSQL
adds ``FACTORIES["postgres"]`` and ``OPENERS["postgres"]``; ``"pgbouncer"`` is the same
store through PgBouncer in transaction pooling mode (tests/pg_bouncer.py).

A child (:mod:`tests.cluster_child`) runs a started ``Scheduler`` on the spec
with ``shared=True`` and logs every run its actions start (:mod:`tests.cluster_jobs`)
to its own file, one JSON object a line (and, for ``claimed_run``, when it ends).  It
starts from a spare process that has done its imports (:class:`Spares`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from lldsched import FakeClock, ScheduledTask, Scheduler
from lldsched.coordination import CoordinatedStore
from lldsched.threaded.processes import life
from tests.cluster_stores import OPENERS as OPENERS  # re-exported: where tests import them
from tests.cluster_stores import StoreSpec as StoreSpec
from tests.cluster_stores import open_store as open_store
from tests.processes import lines_of
from tests.waits import wait_until

ROOT = Path(__file__).resolve().parent.parent


def _sqlite_spec(request: pytest.FixtureRequest, directory: Path) -> StoreSpec:
    return StoreSpec("sqlite", {"path": str(directory / "tasks.db")})


def _postgres_spec(request: pytest.FixtureRequest, directory: Path) -> StoreSpec:
    """A fresh schema on the session's throwaway server (tests/pg_server.py)."""
    server = request.getfixturevalue("postgres_server")
    return StoreSpec("postgres", {"dsn": server.create_schema()})


def _pgbouncer_spec(request: pytest.FixtureRequest, directory: Path) -> StoreSpec:
    """A fresh schema (and role: a pool of its own) behind PgBouncer in transaction
    pooling mode, in front of the session's server (tests/pg_bouncer.py)."""
    bouncer = request.getfixturevalue("pgbouncer")
    return StoreSpec("pgbouncer", {"dsn": bouncer.create_schema()})


FACTORIES: dict[str, Callable[[pytest.FixtureRequest, Path], StoreSpec]] = {
    "pgbouncer": _pgbouncer_spec,
    "postgres": _postgres_spec,
    "sqlite": _sqlite_spec,
}
"""Engine name -> a new, empty shared store for one test."""

DIRECT = ("postgres", "sqlite")
"""The engines every test of a shared store runs on (:func:`store_spec`)."""

POOLED = (*DIRECT, "pgbouncer")
"""The engines of a module that names them (``ENGINES = POOLED``): PgBouncer too.  Behind
a pooler the store differs only in how it opens a connection (no session settings,
timeouts set in each transaction, no prepared statements, no LISTEN: docs/OPERATIONS.md,
"Behind PgBouncer"); every statement after that is the direct engine's.  So the modules
that take every kind of statement through it (claims and settles under concurrency,
verbs and the wakes between nodes, child processes, an outage) run on it, and the rest
do not: all of them through PgBouncer cost about a minute of a full run
(tests/test_store_postgres_pgbouncer.py tests what differs)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """:func:`store_spec` once per engine of the test's module: its ``ENGINES``, else
    :data:`DIRECT` (conftest.py passes this hook on)."""
    if "store_spec" in metafunc.fixturenames:
        engines = getattr(metafunc.module, "ENGINES", DIRECT)
        metafunc.parametrize("store_spec", sorted(engines), indirect=True)


class HeldStarts(NamedTuple):
    """What :func:`hold_child_starts` returns."""

    starting: threading.Event  # set as a worker starts a run's child, and waits
    let_start: threading.Event  # the test sets it: the children start


def hold_child_starts(monkeypatch: pytest.MonkeyPatch) -> HeldStarts:
    """Hold the start of every process-isolated run's child until the test lets it go:
    something (a renewal, a takeover) can then happen while a run is on its way to it."""
    held = HeldStarts(threading.Event(), threading.Event())

    def held_start() -> life.Child:
        held.starting.set()
        assert held.let_start.wait(30)
        return life.start_child()

    monkeypatch.setattr("lldsched.threaded.processes.pool.start_child", held_start)
    return held


@pytest.fixture
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    """A new, empty shared store, once per engine (:func:`pytest_generate_tests`)."""
    factory = FACTORIES[request.param]
    return factory(request, tmp_path)


@contextlib.contextmanager
def opened(
    spec: StoreSpec, count: int, *, lease: float = 30.0, poll: float = 1.0
) -> Iterator[list[CoordinatedStore]]:
    """``count`` stores on ``spec`` in this process (as many processes hold), closed at
    the end (after the schedulers on them: :func:`schedulers`)."""
    stores = [open_store(spec, lease=lease, poll=poll) for _ in range(count)]
    try:
        yield stores
    finally:
        for store in stores:
            store.close()


@pytest.fixture
def schedulers() -> Iterator[list[Scheduler]]:
    """The schedulers a test builds on shared stores, shut down after it (before the
    stores it opened with :func:`opened` close)."""
    made: list[Scheduler] = []
    yield made
    for scheduler in made:
        scheduler.shutdown()


@contextlib.contextmanager
def ahead_and_behind(spec: StoreSpec, now: float) -> Iterator[tuple[Scheduler, Scheduler]]:
    """Two schedulers on ``spec`` (two stores, as two processes hold), on fake clocks:
    the first at ``now`` and not started (register, then start it), the second started
    1,000 s behind, so that it follows the store but claims nothing until its clock
    moves (:func:`follows`).  Both shut down, then the stores closed, at the end."""
    with opened(spec, 2, poll=0.05) as (ahead_store, behind_store):
        ahead = Scheduler(store=ahead_store, clock=FakeClock(now))
        behind = Scheduler(store=behind_store, clock=FakeClock(now - 1000)).start()
        try:
            yield ahead, behind
        finally:
            ahead.shutdown()
            behind.shutdown()


def follows(scheduler: Scheduler, task_id: str, holds: Callable[[ScheduledTask], bool]) -> bool:
    """Wake ``scheduler``'s timer (its clock a ``FakeClock``: it then reads the change
    feed) and say whether it knows ``task_id`` and ``holds(task)``: a condition for
    :func:`~tests.waits.wait_until`."""
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    clock.advance(0)
    known = {task.id: task for task in scheduler.tasks()}
    return task_id in known and holds(known[task_id])


# -- children -----------------------------------------------------------------------------


@dataclass
class Child:
    """A child process running a shared scheduler; see :mod:`tests.cluster_child`."""

    process: subprocess.Popen[str]
    log: Path
    lines: queue.Queue[str]
    node: str = ""
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def expect(self, prefix: str, timeout: float) -> str:
        """The child's next line starting with ``prefix`` (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.0, remaining))
            except queue.Empty:
                raise AssertionError(f"child {self.pid}: no {prefix!r} in {timeout} s") from None
            if line.startswith(prefix):
                return line[len(prefix) :].strip()

    def _lines(self) -> list[dict[str, Any]]:
        """Every line of this child's log so far (a torn last line is skipped)."""
        if not self.log.exists():
            return []
        lines = []
        for line in self.log.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # killed mid-write
        return lines

    def runs(self) -> list[dict[str, Any]]:
        """The runs this child's actions started so far."""
        return [line for line in self._lines() if "task" in line]

    def running(self) -> list[int]:
        """The tokens of the runs of :func:`tests.cluster_jobs.claimed_run` started and not
        ended so far: in a stopped child (:meth:`wait_stopped`), runs inside their action,
        whose settles are not written yet."""
        lines = self._lines()
        ended = {line["ended"] for line in lines if "ended" in line}
        return [line["token"] for line in lines if "task" in line and line["token"] not in ended]

    def about(self, tokens: list[int]) -> list[dict[str, Any]]:
        """This child's lines about the runs holding ``tokens`` (begun, ended, stopping),
        for a failure's message."""
        keys = ("token", "ended", "stopping")
        return [line for line in self._lines() if any(line.get(k) in tokens for k in keys)]

    def stopping(self) -> list[int]:
        """The tokens of the runs that stopped this child from inside their action (the
        ``stop`` of :func:`tests.cluster_jobs.claimed_run`): one at most."""
        return [line["stopping"] for line in self._lines() if "stopping" in line]

    def signal(self, number: signal.Signals) -> None:
        """Send ``number`` to this child while it is ours: not once it was reaped, when
        its pid is free for any process to take (pid_max wraps), a PostgreSQL backend of
        another test run included.  ``Popen.send_signal`` checks first, and only this
        test's thread reaps its children, so nothing reaps between the check and the
        signal.  (The fixture's SIGCONT went to every child's pid, reaped or not.)"""
        self.process.send_signal(number)

    def wait_stopped(self, timeout: float = 10.0) -> None:
        """Wait until every thread of this child is stopped (after a SIGSTOP: ``kill``
        returns before the threads running on other cores have stopped).  Linux only."""

        threads = Path(f"/proc/{self.pid}/task")
        assert threads.is_dir(), f"no {threads}: child {self.pid} ended, or this is not Linux"

        def stopped() -> bool:
            for stat in threads.glob("*/stat"):
                try:
                    state = stat.read_text().rpartition(")")[2].split()[0]
                except (FileNotFoundError, ProcessLookupError):
                    continue  # a thread that ended meanwhile
                if state not in ("T", "t"):
                    return False
            return True

        wait_until(stopped, timeout=timeout, what=f"every thread of child {self.pid} to stop")

    def stop(self, timeout: float = 30.0) -> dict[str, Any]:
        """Ask it to shut down (close its stdin) and return its summary line."""
        self.ask_to_stop()
        return self.stopped(timeout)

    def ask_to_stop(self) -> None:
        """Close its stdin: it shuts down, prints its summary and exits (:meth:`stopped`)."""
        assert self.process.stdin is not None
        self.process.stdin.close()

    def stopped(self, timeout: float = 30.0) -> dict[str, Any]:
        """Its summary line, once it exited (after :meth:`ask_to_stop`)."""
        self.summary = json.loads(self.expect("summary", timeout))
        self.process.wait(timeout)
        return self.summary

    def kill(self) -> None:
        """Kill it (unless it ended) and reap it; its stdin is closed with it (left to the
        collector, the pipe is a ``ResourceWarning``, an error of the suite)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        assert self.process.stdin is not None
        self.process.stdin.close()


def stop_all(children: list[Child], timeout: float = 30.0) -> list[dict[str, Any]]:
    """:meth:`Child.stop` for each of ``children``, all asked at once (their shutdowns and
    exits, about half a second each, overlap); their summaries, in order."""
    for child in children:
        child.ask_to_stop()
    return [child.stopped(timeout) for child in children]


def start_child(
    spec: StoreSpec, log: Path, *, workers: int = 4, lease: float = 1.0, poll: float = 0.1
) -> Child:
    """A child scheduler on ``spec``, started; returns once it said ``ready``."""
    child = _spawn(spec, log, workers=workers, lease=lease, poll=poll)
    child.node = child.expect("ready", timeout=60)
    SPARES.fill()
    return child


def _spawn(spec: StoreSpec, log: Path, *, workers: int, lease: float, poll: float) -> Child:
    """A child scheduler on ``spec``: a spare process given its orders (not yet ``ready``)."""
    spare = SPARES.take(spec.engine)
    orders = {"spec": spec.to_json(), "log": str(log), "workers": workers, "lease": lease,
              "poll": poll}  # fmt: skip
    assert spare.process.stdin is not None
    spare.process.stdin.write(json.dumps(orders) + "\n")
    spare.process.stdin.flush()
    return Child(spare.process, log, spare.lines)


@dataclass
class Spare:
    """A process of :mod:`tests.cluster_child` waiting for its orders."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str]
    env: dict[str, str]  # the environment it was started with


class Spares:
    """Child processes started ahead of the tests that need them: each has imported what a
    child scheduler runs (:mod:`tests.cluster_child`) and waits for its orders.

    A child's start-up is mostly its imports (about half a second of CPU each, more on a
    loaded machine), and a multi-process test starts up to three children: from a spare, a
    child is ready as soon as it opened its store and started its scheduler, and the imports
    of the next test's spares run while this test waits (for a lease to expire, mostly).  A
    spare imports PostgreSQL's store (psycopg: as long again as lldsched) only where the
    child last asked for opened one (:attr:`ahead`): the next test's children are most often
    of the same engine, and a child whose spare did not import it does so as it opens its
    store.  A spare serves one child and is never reused, so each test's children are as
    fresh as before: new processes that have run nothing but imports, started with the
    environment this process has when the child is asked for (a spare started with another,
    under a test's ``monkeypatch.setenv``, say, is ended instead).  The spares left are
    killed at this process's exit (:meth:`close`); a spare also ends at the end of its
    stdin, so none outlives this process when it dies."""

    COUNT = 3  # the most children a test starts at once
    POSTGRES = ("postgres", "pgbouncer")  # the engines that open PostgreSQL's store

    def __init__(self) -> None:
        self.ahead = False  # whether the spares started now import PostgreSQL's store
        self._idle: list[Spare] = []
        self._ended: list[Spare] = []  # told to end, reaped by close()
        self._lock = threading.Lock()  # tests of one process run one at a time; cheap anyway
        self._closing = False

    def take(self, engine: str) -> Spare:
        """The oldest spare alive and started with this process's environment as it is now
        (a new one if there is none), off the list, for a child of ``engine``."""
        self.ahead = engine in self.POSTGRES
        env = _child_env()
        with self._lock:
            while self._idle:
                spare = self._idle.pop(0)
                if spare.process.poll() is None and _same(spare.env, env):
                    return spare
                self._end(spare)
        return self._start(env, self.ahead)

    def fill(self) -> None:
        """Start spares until :attr:`COUNT` wait (after a test's children are ready, so
        that their imports do not slow those children's start)."""
        env = _child_env()
        with self._lock:
            while len(self._idle) < self.COUNT and not self._closing:
                self._idle.append(self._start(env, self.ahead))

    def close(self) -> None:
        """Kill every spare left and reap them: a spare has run nothing but imports, and
        one still importing would take as long again to read the end of its stdin."""
        with self._lock:
            self._closing = True
            left, self._idle, self._ended = self._idle + self._ended, [], []
        for spare in left:
            if spare.process.poll() is None:
                spare.process.kill()
            spare.process.wait(30)
            assert spare.process.stdin is not None
            spare.process.stdin.close()

    def _end(self, spare: Spare) -> None:
        """Tell ``spare`` to end (its stdin closed); :meth:`close` reaps it."""
        assert spare.process.stdin is not None
        spare.process.stdin.close()
        self._ended.append(spare)

    @staticmethod
    def _start(env: dict[str, str], postgres: bool) -> Spare:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.cluster_child", *(["postgres"] if postgres else [])],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        return Spare(process, lines_of(process), env)


def _same(started: dict[str, str], wanted: dict[str, str]) -> bool:
    """Whether a spare started with ``started`` is a child started with ``wanted``: the
    same, but for ``PYTEST_CURRENT_TEST``, which pytest sets to each test's id and phase
    (the test that started the spare's, not the one it serves)."""
    ignored = "PYTEST_CURRENT_TEST"
    return {**started, ignored: ""} == {**wanted, ignored: ""}


def _child_env() -> dict[str, str]:
    """A child's environment: this process's, with the repository on ``PYTHONPATH``."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


SPARES = Spares()
"""This process's spare children (none until a test first starts a child)."""
atexit.register(SPARES.close)


@dataclass
class Cluster:
    """Children started by one test; every one still alive is killed at the end."""

    children: list[Child] = field(default_factory=list)

    def all_runs(self) -> list[dict[str, Any]]:
        return [run for child in self.children for run in child.runs()]

    def start(
        self, spec: StoreSpec, logs: list[Path], *, lease: float = 1.0, poll: float = 0.1
    ) -> list[Child]:
        """One child scheduler on ``spec`` per log, all started at once (each process's
        start-up, mostly imports, overlaps the others'); returns once every one said
        ``ready``, as :func:`start_child` does for one.  Each is in :attr:`children` from
        its spawn, so a child that never gets ready is killed with the rest."""
        started = []
        for log in logs:
            started.append(_spawn(spec, log, workers=4, lease=lease, poll=poll))
            self.children.append(started[-1])
        for child in started:
            child.node = child.expect("ready", timeout=60)
        SPARES.fill()
        return started


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    try:
        yield started
    finally:
        for child in started.children:
            with contextlib.suppress(ProcessLookupError):
                child.signal(signal.SIGCONT)  # a stopped child gets its SIGKILL once resumed
            child.kill()
