"""Module-level actions for process-isolated tasks (a child process imports them by path).

Each runs in a worker process, so nothing here can touch the test's memory: a test
learns what happened from the run's record, or from a file the action writes (whole:
:func:`mark`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import operator
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from lldsched import RunContext


def mark(marker: str, text: str) -> None:
    """Write ``text`` to the file ``marker`` whole: written beside it, then renamed, so a
    test that sees the file sees its text.  ``Path.write_text`` creates the file empty
    first: a test that waited for it to exist read ``""`` when the child was killed, or
    had not written yet, under load (``int("")``: a flaky ValueError).  Only a regular
    file is replaced: the rename would put a file in the place of ``/dev/null`` (a test
    that passed it as a marker did, run as root, and broke every later ``initdb``)."""
    if os.path.lexists(marker) and not os.path.isfile(marker):
        raise ValueError(f"marker {marker!r} is not a regular file: not replaced")
    beside = f"{marker}.{os.getpid()}.tmp"
    Path(beside).write_text(text)
    os.replace(beside, marker)


def add(a: int, b: int) -> dict[str, int]:
    """Return the sum and the child's pid (the record keeps its repr)."""
    return {"sum": a + b, "pid": os.getpid()}


def length(text: str) -> int:
    """The length of ``text`` (a call as long as a test needs)."""
    return len(text)


def noop() -> None:
    """Does nothing (the benchmark's isolated no-op)."""


def fail(message: str) -> None:
    """Raise ValueError(message) in the child."""
    raise ValueError(message)


def sleep(seconds: float, marker: str | None = None) -> str:
    """Write our pid to ``marker`` (if given), then sleep ``seconds``."""
    if marker is not None:
        mark(marker, str(os.getpid()))
    time.sleep(seconds)
    return "slept"


def held(marker: str, release: str) -> str:
    """Write our pid to ``marker``, then wait until the file ``release`` exists (at most
    60 s, so a failing test cannot leave a child behind for long)."""
    mark(marker, str(os.getpid()))
    deadline = time.monotonic() + 60
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the polling interval of a bounded wait, not a fixed sleep
    return "released"


def note_exit(marker: str) -> int:
    """Have this worker process write ``exited`` to ``marker`` when it exits on its own
    (``atexit``: not when it is killed); return its pid."""
    atexit.register(mark, marker, "exited")
    return os.getpid()


def leave_a_thread() -> str:
    """Start a thread that never ends and is no daemon: this worker process cannot exit
    on its own any more (its interpreter waits for the thread)."""
    threading.Thread(target=threading.Event().wait, name="left-behind").start()
    return "left"


def exit_with(code: int) -> None:
    """End the child at once with ``code``, as a crash would."""
    os._exit(code)


def die_of_signal(number: int) -> None:
    """Send ourselves signal ``number`` (SIGKILL, SIGSEGV...)."""
    os.kill(os.getpid(), number)
    time.sleep(10)  # not reached for a fatal signal


def pid() -> int:
    """The child's process id."""
    return os.getpid()


def deprecated_call() -> str:
    """Warn as a deprecated call does: under ``-W error::DeprecationWarning`` this raises."""
    warnings.warn("old_api() is deprecated", DeprecationWarning, stacklevel=1)
    return "warned"


def interpreter_flags() -> dict[str, object]:
    """What this interpreter was started with: dev mode, -O, the -W options."""
    return {"dev": sys.flags.dev_mode, "optimize": sys.flags.optimize, "W": sys.warnoptions}


class Tally:
    """A class given by path (``"tests.process_jobs:Tally"``): the run calls it, and the
    record keeps the instance's repr."""

    def __init__(self, n: int) -> None:
        self.n = 2 * n

    def __repr__(self) -> str:
        return f"Tally({self.n})"

    def add(self, n: int) -> int:
        """A method: bound to an instance, it has no import path."""
        return self.n + n


async def later(n: int) -> int:
    """An async action: the child awaits it."""
    await asyncio.sleep(0)
    return 2 * n


async def later_forgotten(n: int) -> Awaitable[int]:
    """An async action that returns a coroutine, its ``await`` forgotten: the child
    awaits that too."""
    return later(n)


async def rows(n: int) -> AsyncIterator[int]:
    """An async generator function: what :func:`streamed` returns a generator of."""
    for row in range(n):
        yield row


def streamed(n: int) -> AsyncIterator[int]:
    """A plain action that returns an async generator object: its run fails, the body
    never run."""
    return rows(n)


def submitted(n: int) -> concurrent.futures.Future[int]:
    """A plain action that returns a thread's future: the child waits for it."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(operator.mul, 2, n)
    pool.shutdown(wait=False)
    return future


async def pid_later() -> int:
    """An async action's process id: the child's, where it is awaited."""
    await asyncio.sleep(0)
    return os.getpid()


def with_context(ctx: RunContext) -> None:
    """Takes a RunContext, which cannot reach a child process: refused when isolated."""


class UnprintableError(Exception):
    """An exception whose ``__str__`` raises (a library's bug, met at 3 a.m.)."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ broke")


class InterruptingStrError(Exception):
    """An exception whose ``__str__`` raises ``KeyboardInterrupt`` (a ``BaseException``,
    which an ``except Exception`` around it does not catch)."""

    def __str__(self) -> str:
        raise KeyboardInterrupt


class ExitingReprError(Exception):
    """An exception whose ``__repr__`` and ``__str__`` raise ``SystemExit``."""

    def __repr__(self) -> str:
        raise SystemExit(4)

    def __str__(self) -> str:
        raise SystemExit(5)


class LockedError(Exception):
    """An exception that cannot be pickled (it holds a lock)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def odd_failure(kind: str) -> None:
    """Raise the odd exception named ``kind`` (tests/test_job_failures.py)."""
    if kind == "unprintable":
        raise UnprintableError
    if kind == "huge":
        raise ValueError("y" * 10_000_000)
    if kind == "surrogate":
        raise ValueError("bad \udcff byte and a \x00 NUL")
    if kind == "unpicklable":
        raise LockedError("holds a lock")
    if kind == "str-interrupts":
        raise InterruptingStrError
    if kind == "repr-exits":
        raise ExitingReprError
    if kind == "group":
        raise ExceptionGroup("two failed", [ValueError("a"), KeyError("b")])
    if kind == "chained":
        empty: dict[str, int] = {}
        try:
            empty["missing"]
        except KeyError as exc:
            raise RuntimeError("lookup failed") from exc
    if kind == "exit":
        sys.exit(3)
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind == "generator-exit":
        raise GeneratorExit
    raise AssertionError(f"no such kind: {kind!r}")


async def odd_failure_async(kind: str) -> None:
    """:func:`odd_failure` from a coroutine, after it awaited once."""
    await asyncio.sleep(0)
    odd_failure(kind)


class _InterruptingRepr:
    """A value whose ``repr`` raises ``KeyboardInterrupt``."""

    def __repr__(self) -> str:
        raise KeyboardInterrupt


class _OddRepr:
    """A value whose own ``repr`` holds a lone surrogate and a NUL."""

    def __repr__(self) -> str:
        return "<odd \udcff \x00>"


def odd_result(kind: str) -> object:
    """Return the odd value named ``kind`` (tests/test_job_failures.py)."""
    makers: dict[str, Callable[[], object]] = {
        "lock": threading.Lock,
        "huge": lambda: "z" * 10_000_000,
        "odd-repr": _OddRepr,
        "repr-interrupts": _InterruptingRepr,
    }
    return makers[kind]()


async def odd_result_async(kind: str) -> object:
    """:func:`odd_result` from a coroutine, after it awaited once."""
    await asyncio.sleep(0)
    return odd_result(kind)


def write_on_pipe(length: int, body: str) -> str:
    """Write one message framed as the pool's pipe frames it (a 4-byte length, then the
    bytes) on the child's answering descriptor, as a hostile or careless action could:
    ``length`` as the header says it, ``body`` as the bytes that follow."""
    answering = int(sys.argv[3])  # the child's command line: -c, sys.path, reading, writing
    os.write(answering, length.to_bytes(4, "big", signed=True) + body.encode())
    return "wrote"


def write_half_then_sleep(seconds: float) -> str:
    """Write the start of a framed message (a header promising 100 bytes, then 10 of
    them) on the child's answering descriptor, then sleep ``seconds``: a child that stops
    in the middle of its answer."""
    answering = int(sys.argv[3])
    os.write(answering, (100).to_bytes(4, "big", signed=True) + b"0123456789")
    time.sleep(seconds)
    return "slept"


def write_half_then_hold(marker: str, seconds: float) -> str:
    """:func:`write_half_then_sleep`, then our pid written to ``marker`` (the half answer
    is on the pipe by then), then sleep ``seconds``."""
    answering = int(sys.argv[3])
    os.write(answering, (100).to_bytes(4, "big", signed=True) + b"0123456789")
    mark(marker, str(os.getpid()))
    time.sleep(seconds)
    return "slept"


def shell_out(marker: str, seconds: float) -> str:
    """Start a command (``sleep 60``, as a job runs ``pg_dump``), write its pid to
    ``marker``, then sleep ``seconds`` without waiting for it."""
    command = subprocess.Popen(["sleep", "60"])
    mark(marker, str(command.pid))
    time.sleep(seconds)
    return "done"


def segfault() -> None:
    """Crash as a C extension's bug does: read address 0 (SIGSEGV), leaving no core file."""
    import ctypes
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    ctypes.string_at(0)


def close_pipe_then_sleep(seconds: float) -> str:
    """Close the child's answering descriptor (its parent reads end-of-file, as at a
    crash), then sleep ``seconds``: a child that went silent and does not exit."""
    os.close(int(sys.argv[3]))  # the child's command line: -c, sys.path, reading, writing
    time.sleep(seconds)
    return "slept"


def leave_a_process_then_exit(how: str, marker: str, code: int) -> None:
    """Start a process that lives on, write its pid to ``marker``, then exit with
    ``code`` (a crash while something the job started runs): ``how`` is ``"fork"``, a
    bare ``os.fork`` (as ``multiprocessing``'s fork start method, or a daemon, makes
    one), or ``"exec"``, a command that inherits what it may (``close_fds=False``, as
    ``os.system``'s shell does).  Either waits an hour: the test kills it."""
    if how == "fork":
        holder = os.fork()
        if holder == 0:
            time.sleep(3600)
            os._exit(0)
    else:
        holder = subprocess.Popen(["sleep", "3600"], close_fds=False).pid
    mark(marker, str(holder))
    os._exit(code)


def fork_and_return() -> str:
    """Fork, and return from both processes (the copy's ``os._exit`` forgotten)."""
    return "copy" if os.fork() == 0 else "child"
